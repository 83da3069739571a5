//! Pages of stored files that hold no single run: a baseline (its repetitions side by side —
//! a table of each run's figures and their latency by percentile overlaid, the run-to-run
//! spread the gate judges by), and the chart a comparison's JSON can always draw from its row
//! figures: each gated row's change with its interval against the threshold (a forest plot).

use super::{config, esc, page, percentiles};
use crate::model::baseline::Baseline;
use crate::model::comparison::{Comparison, Verdict};
use crate::model::metric::Latency;
use crate::output::markup::{Align, Cell, Table};
use std::fmt::Write;

/// A baseline: what it is of, each repetition's figures, and their latency by percentile overlaid.
pub fn baseline_report(b: &Baseline) -> String {
    let mut o = String::new();
    let cfg = config::block(&[
        ("scenario", b.scenario_name.clone()),
        ("traffic hash", b.scenario_hash.clone()),
        ("vars", config::vars(&b.vars)),
        (
            "recorded",
            format!(
                "{} on {} by bench {} · {} repetitions",
                b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
                b.environment.host,
                b.environment.tool_version,
                b.repetitions.len()
            ),
        ),
        (
            "environment",
            b.repetitions
                .first()
                .map(config::environment)
                .unwrap_or_default(),
        ),
    ]);
    let heads = [
        "repetition",
        "run",
        "ok / sent",
        "TTFT p50 (ms)",
        "TTFT p95 (ms)",
        "TPOT p50 (ms)",
        "TPOT p95 (ms)",
        "E2E p50 (ms)",
        "output tok/s",
    ];
    let mut t = Table::new(heads.map(|h| (h, Align::Right)));
    for (i, r) in b.repetitions.iter().enumerate() {
        let q = |m: Latency, p95: bool| {
            r.summary
                .latency(m)
                .filter(|l| l.has_values())
                .map_or("—".to_string(), |l| {
                    format!("{:.3}", if p95 { l.p95 } else { l.p50 })
                })
        };
        let c = &r.summary.counts;
        t.row(
            [
                (i + 1).to_string(),
                r.run_id.clone(),
                format!("{} / {}", c.ok, c.sent),
                q(Latency::Ttft, false),
                q(Latency::Ttft, true),
                q(Latency::Tpot, false),
                q(Latency::Tpot, true),
                q(Latency::E2e, false),
                format!("{:.1}", r.summary.throughput.output_tps),
            ]
            .map(Cell::from),
        );
    }
    o.push_str(&t.html());
    let names: Vec<String> = (1..=b.repetitions.len())
        .map(|i| format!("repetition {i}"))
        .collect();
    let arms: Vec<(&str, Vec<&crate::model::result::RunResult>)> = names
        .iter()
        .zip(&b.repetitions)
        .map(|(n, r)| (n.as_str(), vec![r]))
        .collect();
    o.push_str("<h2>Latency by percentile, each repetition</h2>");
    let slo = b
        .repetitions
        .first()
        .map(|r| r.scenario.slo.clone())
        .unwrap_or_default();
    o.push_str(&percentiles(&arms, &slo));
    page(
        &format!("bench baseline {} / {}", b.scenario_name, b.name),
        &cfg,
        &o,
    )
}

/// Each row with an interval, as a horizontal bar (the interval, in % change) with a dot (the
/// change) and the threshold marked: what the verdict was decided from. Rows whose interval is
/// unbounded (too few runs; the table says so) are named under the plot, not drawn across it.
pub fn effects_chart(c: &Comparison) -> String {
    let bounded = |r: &&crate::model::comparison::Row| {
        r.interval_low.is_finite() && r.interval_high.is_finite() && r.critical <= 10f64.ln()
    };
    let with_interval: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.interval_low.is_finite() && r.interval_high.is_finite())
        // Percent changes share one axis; an error rate's points (pp) would not.
        .filter(|r| !r.metric.in_points())
        .collect();
    let rows: Vec<_> = with_interval.iter().copied().filter(bounded).collect();
    let unbounded: Vec<String> = with_interval
        .iter()
        .filter(|r| !bounded(r))
        .map(|r| r.metric.to_string())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let threshold = |r: &crate::model::comparison::Row| {
        r.threshold
            .trim()
            .strip_suffix('%')
            .and_then(|t| t.trim().parse::<f64>().ok())
    };
    let lo = rows
        .iter()
        .map(|r| {
            r.interval_low
                .min(r.delta_pct)
                .min(threshold(r).unwrap_or(0.0))
        })
        .fold(0.0f64, f64::min);
    let hi = rows
        .iter()
        .map(|r| {
            r.interval_high
                .max(r.delta_pct)
                .max(threshold(r).unwrap_or(0.0))
        })
        .fold(0.0f64, f64::max);
    let (lo, hi) = (lo - 0.05 * (hi - lo + 1.0), hi + 0.05 * (hi - lo + 1.0));
    let (w, left, right, row_h) = (760.0, 150.0, 24.0, 28.0);
    let h = 46.0 + row_h * rows.len() as f64;
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - right);
    let axis_y = h - 30.0;
    let mut s = super::svg::open(w, h, "change of each gated metric with its interval (%)");
    let ticks = super::svg::ticks(lo, hi, 8);
    super::svg::value_grid(&mut s, &ticks, x, axis_y, 0.0, |t| format!("{t} %"));
    for (i, r) in rows.iter().enumerate() {
        let y = 24.0 + row_h * i as f64;
        let color = match r.verdict {
            Verdict::Regressed => "#b00",
            Verdict::Improved | Verdict::NoChange => "#070",
            _ => "#666",
        };
        let _ = write!(
            s,
            "<text x=\"4\" y=\"{:.1}\">{}</text><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{color}\" stroke-width=\"3\"/><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"4\" fill=\"{color}\"><title>{} {:+.1} % [{:+.1}, {:+.1}] — {}</title></circle>",
            y + 4.0,
            esc(&r.metric.to_string()),
            x(r.interval_low),
            x(r.interval_high),
            x(r.delta_pct),
            esc(&r.metric.to_string()),
            r.delta_pct,
            r.interval_low,
            r.interval_high,
            r.verdict.name()
        );
        if let Some(t) = threshold(r) {
            let _ = write!(
                s,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#b00\" stroke-dasharray=\"3,2\"/>",
                x(t),
                y - 9.0,
                y + 9.0
            );
        }
    }
    s.push_str("</svg>");
    let hidden = if unbounded.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "not drawn, their intervals unbounded at the runs judged: {}",
            unbounded.join(", ")
        )]
    };
    format!(
        "<h2>Change of each metric with its interval</h2>{}",
        super::plot::figure(
            "change against the baseline (%): the interval as a bar, the change as a dot (colour: the verdict), the threshold dashed red",
            "",
            &s,
            &hidden
        )
    )
}
