//! Pages of stored files that hold no single run: a baseline (its repetitions side by side:
//! a table of each run's figures and their CDFs overlaid, the run-to-run spread the gate
//! judges by), and a comparison read back from its JSON, which keeps no per-request values —
//! its chart is each gated row's effect with its interval against the threshold (a forest
//! plot), drawn from the row figures the JSON holds.

use super::{cdfs, esc, page};
use crate::model::baseline::Baseline;
use crate::model::comparison::{Comparison, Verdict};
use crate::model::metric::Latency;
use std::fmt::Write;

/// A baseline: what it is of, each repetition's figures, and their CDFs overlaid.
pub fn baseline_report(b: &Baseline) -> String {
    let mut o = String::new();
    let vars: Vec<String> = b.vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = write!(
        o,
        "<p>scenario <b>{}</b> · traffic hash <code>{}</code> · recorded {} on {} by bench {} · {} repetitions</p><p class=\"note\">vars: {}</p>",
        esc(&b.scenario_name),
        esc(&b.scenario_hash),
        b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
        esc(&b.environment.host),
        esc(&b.environment.tool_version),
        b.repetitions.len(),
        esc(&vars.join(" "))
    );
    o.push_str("<table><tr><th>repetition</th><th>run</th><th>ok / sent</th><th>TTFT p50 (ms)</th><th>TTFT p95 (ms)</th><th>TPOT p50 (ms)</th><th>TPOT p95 (ms)</th><th>E2E p50 (ms)</th><th>output tok/s</th></tr>");
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
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{} / {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td></tr>",
            i + 1,
            esc(&r.run_id),
            c.ok,
            c.sent,
            q(Latency::Ttft, false),
            q(Latency::Ttft, true),
            q(Latency::Tpot, false),
            q(Latency::Tpot, true),
            q(Latency::E2e, false),
            r.summary.throughput.output_tps
        );
    }
    o.push_str("</table>");
    let names: Vec<String> = (1..=b.repetitions.len())
        .map(|i| format!("repetition {i}"))
        .collect();
    let arms: Vec<(&str, Vec<&crate::model::result::RunResult>)> = names
        .iter()
        .zip(&b.repetitions)
        .map(|(n, r)| (n.as_str(), vec![r]))
        .collect();
    o.push_str(&cdfs(&arms));
    page(
        &format!("bench baseline {} / {}", b.scenario_name, b.name),
        &o,
    )
}

/// Each row with an interval, as a horizontal bar (the interval, in % change) with a dot (the
/// change) and the threshold marked: what the verdict was decided from.
pub fn effects_chart(c: &Comparison) -> String {
    let rows: Vec<_> = c
        .rows
        .iter()
        .filter(|r| r.interval_low.is_finite() && r.interval_high.is_finite())
        // Percent changes share one axis; an error rate's points (pp) would not.
        .filter(|r| !r.metric.in_points())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let lo = rows
        .iter()
        .map(|r| r.interval_low.min(r.delta_pct))
        .fold(0.0f64, f64::min);
    let hi = rows
        .iter()
        .map(|r| r.interval_high.max(r.delta_pct))
        .fold(0.0f64, f64::max);
    let (lo, hi) = (lo - 0.05 * (hi - lo + 1.0), hi + 0.05 * (hi - lo + 1.0));
    let (w, left, row_h) = (720.0, 150.0, 28.0);
    let h = 40.0 + row_h * rows.len() as f64;
    let x = |v: f64| left + (v - lo) / (hi - lo) * (w - left - 20.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-size=\"13\" role=\"img\"><title>change of each gated metric with its interval (%)</title>"
    );
    let _ = write!(
        s,
        "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"10\" y2=\"{1:.1}\" stroke=\"#999\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">0 %</text>",
        x(0.0),
        h - 24.0,
        h - 8.0
    );
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
        // The threshold on the worse side, where it is a percentage within the plot.
        if let Some(t) = r
            .threshold
            .trim()
            .strip_suffix('%')
            .and_then(|t| t.trim().parse::<f64>().ok())
        {
            if (lo..=hi).contains(&t) {
                let _ = write!(
                    s,
                    "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1:.1}\" y2=\"{2:.1}\" stroke=\"#b00\" stroke-dasharray=\"3,2\"/>",
                    x(t),
                    y - 9.0,
                    y + 9.0
                );
            }
        }
    }
    s.push_str("</svg>");
    format!("<h2>Change of each metric with its interval (%; dashed: the threshold)</h2>{s}")
}
