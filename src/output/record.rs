//! The optimization record: one CSV row per metric of a comparison — the change, the baseline
//! and new values, the gain, the side effects, the date and the owner — and one per metric ×
//! combination of `bench stack`. One row type for both, written by serde, so the columns
//! cannot drift apart; one vocabulary of verdicts with the terminal, JSON and Markdown
//! (`Verdict::name`); and each row names its evidence (the baseline, the scenario hash, the
//! runs by id, n per arm, α, the bench version), so a record can be traced to its runs.

use super::csv::escape;
use super::write_atomic;
use crate::error::BenchError;
use crate::model::comparison::{Comparison, Row, Verdict};
use crate::model::scenario::short_hash;
use crate::model::stack::{Interaction, InteractionRow, Resolve};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One row of the record CSV. Text cells are formula-escaped (see [`escape`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordRow {
    /// `YYYY-MM-DD`.
    pub date: String,
    pub owner: String,
    pub scenario: String,
    /// `prefix_cache: off → on`, `unattributable: …` when several vars changed.
    pub change: String,
    /// `ttft.p95`, `output_throughput`, …
    pub metric: String,
    pub unit: String,
    pub baseline: String,
    pub candidate: String,
    /// Gain in percent (negative is faster for a latency), or pp for error rate.
    pub delta_pct: String,
    pub interval_low: String,
    pub interval_high: String,
    /// `regressed`, `improved`, `no_change`, `inconclusive`, `not_gated`; for a stack row
    /// `synergy`, `neutral`, `conflict`, `inconclusive`.
    pub verdict: String,
    /// The other metrics that regressed (a stack row: what the changes contend for).
    pub side_effects: String,
    pub note: String,
    /// The row as a sentence: `prefix_cache: off → on: ttft.p95 2.10 s → 1.20 s (−42.9 %)`.
    pub summary: String,
    /// What the server's own metrics showed (prefix hit rate, acceptance, KV peak…).
    pub server: String,
    /// The baseline judged against: its store name (or the runs given with `--against`); a
    /// stack row: the base configuration.
    pub baseline_name: String,
    /// The traffic's hash, first 12 hex digits.
    pub scenario_hash: String,
    /// Runs per arm, `baseline vs candidate` (a stack row: per configuration); for a
    /// sequential compare also why it stopped and the look that settled the row.
    pub runs: String,
    /// Values per arm behind the row (requests for a latency, runs for a rate).
    pub n: String,
    pub alpha: String,
    pub tool_version: String,
    /// The runs judged, by id: `baseline ids | candidate ids`.
    pub run_ids: String,
}

/// The header the rows are written under, in this order.
pub const RECORD_COLUMNS: &[&str] = &[
    "date",
    "owner",
    "scenario",
    "change",
    "metric",
    "unit",
    "baseline",
    "candidate",
    "delta_pct",
    "interval_low",
    "interval_high",
    "verdict",
    "side_effects",
    "note",
    "summary",
    "server",
    "baseline_name",
    "scenario_hash",
    "runs",
    "n",
    "alpha",
    "tool_version",
    "run_ids",
];

fn delta(r: &Row) -> String {
    if r.metric.in_points() {
        format!("{:+.2} pp", r.delta_pct)
    } else {
        format!("{:+.1}%", r.delta_pct)
    }
}

/// "prefix_cache: off → on: ttft.p95 2.10 s → 1.20 s (−42.9 %)", as an optimization record reads.
fn sentence(change: &str, r: &Row) -> String {
    format!("{change}: {}", figures(r))
}

/// "ttft.p95 2.10 s → 1.20 s (−42.9 %)"; agreement, a relation between the arms, as the
/// candidate's share alone ("agreement 93.00 %").
fn figures(r: &Row) -> String {
    let v = |x: f64| match r.unit.as_str() {
        "ms" if x >= 1000.0 => format!("{:.2} s", x / 1000.0),
        "ms" => format!("{} ms", super::sig4(x)),
        "%" => format!("{x:.2} %"),
        u => format!("{} {u}", super::sig4(x)),
    };
    let d = if r.metric.in_points() {
        format!("{:+.2} pp", r.delta_pct)
    } else {
        format!("{:+.1} %", r.delta_pct)
    };
    if r.metric == crate::model::metric::Metric::Agreement {
        return format!("{} {}", r.metric, v(r.candidate));
    }
    format!(
        "{} {} → {} ({})",
        r.metric,
        v(r.baseline),
        v(r.candidate),
        d.replace('-', "−")
    )
}

/// Runs per arm, and for a sequential compare why it stopped and the look that settled the
/// row: `3 vs 8 (sequential: cap 12; settled at 5)`.
fn runs(c: &Comparison, r: &Row) -> String {
    let arms = format!("{} vs {}", c.baseline_repetitions, c.candidate_repetitions);
    match &c.sequence {
        None => arms,
        Some(s) => {
            let stop = match s.stop {
                crate::model::comparison::Stop::Cap => format!("cap {}", s.max_repeat),
                other => other.name().to_string(),
            };
            let row = r
                .settled_at
                .map_or("undecided".to_string(), |n| format!("settled at {n}"));
            let row = if r.verdict == Verdict::NotGated {
                "not gated".to_string()
            } else {
                row
            };
            format!("{arms} (sequential: {stop}; {row})")
        }
    }
}

/// The rows of a comparison, one per metric.
pub fn comparison_rows(c: &Comparison, owner: &str, note: &str) -> Vec<RecordRow> {
    let date = c.created_at.format("%Y-%m-%d").to_string();
    let change = if c.attributable {
        c.change.clone()
    } else {
        format!("unattributable: {}", c.change)
    };
    let bound = |r: &Row, v: f64| {
        if r.critical.is_finite() {
            format!("{v:.2}")
        } else {
            String::new()
        }
    };
    let ids = format!(
        "{} | {}",
        c.baseline_runs.join(" "),
        c.candidate_runs.join(" ")
    );
    c.rows
        .iter()
        .map(|r| {
            let side: Vec<String> = c
                .rows
                .iter()
                .filter(|o| {
                    o.metric != r.metric
                        && matches!(o.verdict, Verdict::Regressed | Verdict::Accepted)
                })
                .map(|o| match o.verdict {
                    Verdict::Accepted => format!("{} {} (accepted)", o.metric, delta(o)),
                    _ => format!("{} {}", o.metric, delta(o)),
                })
                .collect();
            // What the change did to answers, and the acceptance of a speculative decoder,
            // follow every row's sentence, as the optimization record asks.
            let mut sentence = sentence(&change, r);
            for o in c
                .rows
                .iter()
                .filter(|o| o.metric.is_quality() && o.metric != r.metric)
            {
                sentence += &format!(", {}", figures(o));
            }
            if let Some(a) = c
                .server_effects
                .iter()
                .find(|e| e.starts_with("acceptance"))
            {
                sentence += &format!(", {a}");
            }
            RecordRow {
                date: date.clone(),
                owner: escape(owner),
                scenario: escape(&c.scenario_name),
                change: escape(&change),
                metric: r.metric.to_string(),
                unit: r.unit.clone(),
                baseline: format!("{:.3}", r.baseline),
                candidate: format!("{:.3}", r.candidate),
                delta_pct: format!("{:.2}", r.delta_pct),
                interval_low: bound(r, r.interval_low),
                interval_high: bound(r, r.interval_high),
                verdict: r.verdict.name().into(),
                side_effects: escape(&side.join("; ")),
                note: escape(&match &r.waiver {
                    Some(w) if r.verdict == Verdict::Accepted => format!(
                        "{note}{}accepted trade-off, waived by {} (expires {}): {}",
                        if note.is_empty() { "" } else { "; " },
                        w.owner,
                        w.expires,
                        w.reason
                    ),
                    _ => note.to_string(),
                }),
                summary: escape(&sentence),
                server: escape(&c.server_effects.join("; ")),
                baseline_name: escape(&c.baseline),
                scenario_hash: short_hash(&c.scenario_hash).into(),
                runs: runs(c, r),
                n: format!("{} vs {}", r.n_baseline, r.n_candidate),
                alpha: crate::model::readable::number(c.alpha),
                tool_version: c.tool_version.clone(),
                run_ids: escape(&ids),
            }
        })
        .collect()
}

/// What a factorial's rows share: where and by whom it ran, and on what evidence.
pub struct StackContext<'a> {
    /// The scenario's name.
    pub scenario: &'a str,
    pub scenario_hash: &'a str,
    /// The base configuration (`quant=none,spec=off`).
    pub base: &'a str,
    pub owner: &'a str,
    pub date: &'a str,
}

/// The rows of a factorial: `baseline` is the combined ratio independence predicts, and
/// `candidate` the measured one; `delta_pct` is measured over predicted − 1 in percent, signed
/// as compare's are (candidate over baseline: negative is lower), and so is its interval.
pub fn stack_rows(rows: &[InteractionRow], ctx: &StackContext) -> Vec<RecordRow> {
    let pct = |x: f64| format!("{:.2}", (x.exp() - 1.0) * 100.0);
    rows.iter()
        .map(|r| {
            // The interaction is signed worse-positive; a rate's worse is lower.
            let sign = if r.metric.lower_is_better() {
                1.0
            } else {
                -1.0
            };
            let (lo, hi) = if sign > 0.0 {
                (r.interval_low, r.interval_high)
            } else {
                (-r.interval_high, -r.interval_low)
            };
            let verdict = match r.verdict {
                Interaction::Synergy => "synergy",
                Interaction::Neutral => "neutral",
                Interaction::Conflict => "conflict",
                Interaction::Inconclusive => "inconclusive",
            };
            let end = |x: f64| if x.is_finite() { pct(x) } else { String::new() };
            let change = r.changes.join(" × ");
            RecordRow {
                date: ctx.date.to_string(),
                owner: escape(ctx.owner),
                scenario: escape(ctx.scenario),
                change: escape(&change),
                metric: r.metric.to_string(),
                unit: "ratio".into(),
                baseline: format!("{:.4}", r.expected),
                candidate: format!("{:.4}", r.combined),
                delta_pct: pct(sign * r.interaction),
                interval_low: end(lo),
                interval_high: end(hi),
                verdict: verdict.into(),
                side_effects: escape(r.contention.as_deref().unwrap_or("")),
                note: match r.df {
                    _ if r.metric.is_quality() => {
                        r.detail.clone().map(|d| escape(&d)).unwrap_or_default()
                    }
                    Some(df) => format!(
                        "≥ {} runs per configuration; 95 % interval, t with {df:.0} df{}",
                        r.runs,
                        r.resolve
                            .map(|x| format!("; {}", resolve_text(&x)))
                            .unwrap_or_default()
                    ),
                    None => "one run per configuration: no run-to-run noise to judge by".into(),
                },
                summary: escape(&format!(
                    "{change}: {} combined ×{:.3} vs ×{:.3} if independent ({verdict})",
                    r.metric, r.combined, r.expected
                )),
                server: String::new(),
                baseline_name: escape(ctx.base),
                scenario_hash: short_hash(ctx.scenario_hash).into(),
                runs: format!("{} a configuration", r.runs),
                n: format!("{} runs", r.runs),
                alpha: "0.05".into(),
                tool_version: env!("CARGO_PKG_VERSION").into(),
                run_ids: String::new(),
            }
        })
        .collect()
}

/// Rows as CSV text, with the header when `header`.
pub fn render(rows: &[RecordRow], header: bool) -> Result<Vec<u8>, BenchError> {
    let mut w = csv::WriterBuilder::new()
        .has_headers(header)
        .from_writer(Vec::new());
    let fail = |e: csv::Error| BenchError::Runtime(format!("cannot write CSV: {e}"));
    if header && rows.is_empty() {
        w.write_record(RECORD_COLUMNS).map_err(fail)?;
    }
    for r in rows {
        w.serialize(r).map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| BenchError::Runtime(format!("cannot write CSV: {e}")))
}

/// Appends rows to `path` (header first if the file is new), rewriting it atomically; a file
/// with other columns is refused rather than mixed.
pub fn append(path: &Path, rows: &[RecordRow]) -> Result<(), BenchError> {
    let mut existing = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(BenchError::Write {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    if !existing.is_empty() {
        let header = existing.split(|b| *b == b'\n').next().unwrap_or_default();
        if String::from_utf8_lossy(header).trim_end() != RECORD_COLUMNS.join(",") {
            return Err(BenchError::usage(format!(
                "{} has other columns than an optimization record; give another --record file",
                path.display()
            )));
        }
        if !existing.ends_with(b"\n") {
            existing.push(b'\n');
        }
    }
    let new = render(rows, existing.is_empty())?;
    existing.extend(new);
    write_atomic(path, &existing)
}

/// What would settle an inconclusive interaction, in words (the table and the record CSV).
pub fn resolve_text(r: &Resolve) -> String {
    let whatever = match r.whatever {
        Some(n) => format!("≈ {n} runs per configuration (--repeat {n}, or as many stored for --from) would narrow the interval to ±5 % whatever the interaction"),
        None => format!("even {} runs per configuration would not narrow the interval to ±5 %", Resolve::MAX_RUNS),
    };
    match r.if_it_stays {
        Some(n) => format!("{whatever}; if the interaction stays at its size, ≈ {n} would show it"),
        None => whatever,
    }
}
