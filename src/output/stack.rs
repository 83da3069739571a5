//! `bench stack`'s tables: the factorial's interactions, and the ladder's steps.

use super::export::{Exporter, Format};
use super::record::{resolve_text, RecordRow, StackContext};
use crate::error::BenchError;
use crate::model::comparison::Verdict;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::stack::{Interaction, InteractionRow, Ladder};
use std::fmt::Write;

pub fn factorial(rows: &[InteractionRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "bench stack — factorial (ratios to the base; for latency < 1 is faster, for throughput, accuracy and agreement > 1 is more)\n");
    let _ = writeln!(
        o,
        "  {:<28} {:<18} {:>20} {:>9} {:>9} {:>22}  verdict",
        "changes", "metric", "alone", "combined", "expected", "interaction [95 %]"
    );
    for r in rows {
        let alone: Vec<String> = r.alone.iter().map(|a| format!("{a:.3}")).collect();
        let interval = if r.interval_high.is_finite() {
            format!(
                "{:+.3} [{:+.3}, {:+.3}]",
                r.interaction, r.interval_low, r.interval_high
            )
        } else {
            format!("{:+.3} [—]", r.interaction)
        };
        let _ = writeln!(
            o,
            "  {:<28} {:<18} {:>20} {:>9.3} {:>9.3} {:>22}  {}",
            r.changes.join(" × "),
            r.metric,
            alone.join(", "),
            r.combined,
            r.expected,
            interval,
            match r.verdict {
                Interaction::Synergy => "synergy (1+1>2)",
                Interaction::Neutral => "neutral (≈2)",
                Interaction::Conflict => "CONFLICT (1+1<2)",
                Interaction::Inconclusive => "inconclusive",
            }
        );
        if let Some(d) = &r.detail {
            let _ = writeln!(o, "  {:<28} {d}", "");
        }
        if let Some(c) = &r.contention {
            let _ = writeln!(o, "  {:<28} contends for: {c}", "");
        }
        if let Some(r) = &r.resolve {
            let _ = writeln!(o, "  {:<28} {}", "", resolve_text(r));
        }
    }
    let _ = writeln!(o, "\n  interaction = ln(combined) − Σ ln(alone), positive = worse than independent; latency values are each configuration's pooled p50 over its runs, throughput the geometric mean of its runs.");
    let _ = writeln!(o, "  95 % interval: the configurations' runs drawn again (the run is the unit), t with Σ(runs − 1) df; conflict/synergy when |interaction| > max(interval half-width, ln 1.05); neutral when the half-width ≤ ln 1.05 or the interval lies within ±ln 1.05; else inconclusive.");
    if rows.iter().any(|r| r.metric.is_quality()) {
        let _ = writeln!(o, "  accuracy and agreement (the [quality] pass): each configuration's share of items answered right, or as the base answered them, as a ratio to the base's; the items are the unit, paired across the configurations (the delta method on ln share, normal 95 %; no runs needed), same verdicts and floor.");
    }
    match rows.iter().map(|r| r.runs).min() {
        Some(1) => {
            let _ = writeln!(o, "  one run per configuration shows no run-to-run variation, which a run's requests cannot stand in for: every row is inconclusive; measure each configuration at least twice (--repeat 2, or record more runs for --from){}.", if rows.iter().any(|r| r.metric.is_quality()) { " (the quality rows are judged by their items)" } else { "" });
        }
        Some(fewest) => {
            let _ = writeln!(o, "  runs per configuration: at least {fewest}");
        }
        None => {}
    }
    o
}

pub fn ladder(l: &Ladder) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "bench stack — ladder ({} step{}, each judged against the one before)\n",
        l.planned,
        if l.planned == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "  {:<4} {:<24} {:>12} {:>12} {:>12} {:>12}  verdict",
        "step", "change", "tpot.p50", "ttft.p50", "throughput", "cum. tpot"
    );
    for (i, s) in l.steps.iter().enumerate() {
        let c = &s.comparison;
        let d = |m: Metric| {
            c.row(m)
                .map_or("—".to_string(), |r| format!("{:+.1}%", r.delta_pct))
        };
        // The step's worst row verdict, in the words every other output uses.
        let with = |v: Verdict| -> Vec<String> {
            c.rows
                .iter()
                .filter(|r| r.verdict == v)
                .map(|r| r.metric.to_string())
                .collect()
        };
        let verdict = [Verdict::Regressed, Verdict::Inconclusive, Verdict::Improved]
            .into_iter()
            .map(|v| (v, with(v)))
            .find(|(_, m)| !m.is_empty())
            .map_or(Verdict::NoChange.label().to_string(), |(v, m)| {
                format!("{}: {}", v.label(), m.join(", "))
            });
        let _ = writeln!(
            o,
            "  {:<4} {:<24} {:>12} {:>12} {:>12} {:>12}  {verdict}",
            i + 1,
            s.change,
            d(Metric::Latency(Latency::Tpot, Quantile::P50)),
            d(Metric::Latency(Latency::Ttft, Quantile::P50)),
            d(Metric::OutputThroughput),
            s.cumulative_tpot_pct
                .map_or("—".to_string(), |p| format!("{p:+.1}%"))
        );
    }
    if let Some(step) = l.stopped_at {
        let _ = writeln!(
            o,
            "\n  stopped: step {step} regressed (--keep-going to continue)"
        );
    }
    o
}

/// A factorial as report files: its table as Markdown, the HTML page, the JSON rows, and
/// its optimization-record rows.
pub struct FactorialReport<'a> {
    pub rows: &'a [InteractionRow],
    pub ctx: StackContext<'a>,
}

impl Exporter for FactorialReport<'_> {
    const COMMAND: &'static str = "bench stack";
    const FORMATS: &'static [Format] = &[Format::Markdown, Format::Html, Format::Json, Format::Csv];

    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
        match format {
            Format::Html => {
                let base = if self.ctx.base.is_empty() {
                    "the scenario as written"
                } else {
                    self.ctx.base
                };
                Ok(super::html::stack_report(self.ctx.scenario, base, self.rows).into_bytes())
            }
            Format::Json => super::json(&self.rows),
            Format::Csv => super::export::record_csv(self),
            _ => Ok(crate::model::escape::fenced(&factorial(self.rows)).into_bytes()),
        }
    }

    fn rows(&self) -> Vec<RecordRow> {
        super::record::stack_rows(self.rows, &self.ctx)
    }
}

/// A ladder as report files: its table as Markdown, the JSON steps, and each step's
/// optimization-record rows.
pub struct LadderReport<'a> {
    pub ladder: &'a Ladder,
    pub owner: &'a str,
}

impl Exporter for LadderReport<'_> {
    const COMMAND: &'static str = "bench stack --ladder";
    const FORMATS: &'static [Format] = &[Format::Markdown, Format::Json, Format::Csv];

    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
        match format {
            Format::Json => super::json(self.ladder),
            Format::Csv => super::export::record_csv(self),
            _ => Ok(crate::model::escape::fenced(&ladder(self.ladder)).into_bytes()),
        }
    }

    fn rows(&self) -> Vec<RecordRow> {
        self.ladder
            .steps
            .iter()
            .flat_map(|s| super::record::comparison_rows(&s.comparison, self.owner, "ladder step"))
            .collect()
    }
}
