//! The page of `bench stack`'s factorial: an interaction plot per row — each change alone,
//! the combination expected if the changes were independent (the product of their ratios)
//! and the combination measured — on one axis of change against the base (%), coloured by the
//! verdict (synergy, neutral, conflict, inconclusive), on a log axis of the ratio to the base;
//! then the factorial table as the
//! terminal prints it. Drawn with [`super::svg`], like the effects chart.

use super::plot::{css, COLORS};
use super::{config, esc, page};
use crate::model::stack::{Interaction, InteractionRow};
use std::fmt::Write;

fn color(v: Interaction) -> &'static str {
    match v {
        Interaction::Synergy => "#070",
        Interaction::Neutral => "#555",
        Interaction::Conflict => "#b00",
        Interaction::Inconclusive => "#a60",
    }
}

/// All rows on one axis of % change against the base.
fn interaction_chart(rows: &[InteractionRow]) -> String {
    if rows.is_empty() {
        return String::new();
    }
    // A log axis of the ratio to the base: ×0.5 and ×2 are as far from ×1, and the
    // interaction (ln combined − Σ ln alone) is the distance between the two circles.
    let all: Vec<f64> = rows
        .iter()
        .flat_map(|r| {
            r.alone
                .iter()
                .copied()
                .chain([r.expected, r.combined, 1.0])
                .collect::<Vec<_>>()
        })
        .filter(|v| v.is_finite() && *v > 0.0)
        .map(f64::ln)
        .collect();
    let lo = all.iter().copied().fold(0.0f64, f64::min);
    let hi = all.iter().copied().fold(0.0f64, f64::max);
    let pad = ((hi - lo) * 0.06).max(0.05);
    let (lo, hi) = (lo - pad, hi + pad);
    let (w, left, right, row_h) = (760.0, 300.0, 24.0, 46.0);
    let h = 56.0 + row_h * rows.len() as f64;
    let x = |ratio: f64| left + (ratio.max(1e-9).ln() - lo) / (hi - lo) * (w - left - right);
    let mut s = super::svg::open(
        w,
        h,
        "each change alone, the combination expected and measured (ratio to the base)",
    );
    let axis_y = h - 34.0;
    let ticks = super::svg::log_ticks(lo, hi, 9);
    super::svg::value_grid(&mut s, &ticks, x, axis_y, 1.0, |t| format!("×{t}"));
    for (i, r) in rows.iter().enumerate() {
        let y = 30.0 + row_h * i as f64;
        let c = color(r.verdict);
        let _ = write!(
            s,
            "<text x=\"6\" y=\"{:.1}\">{}</text><text x=\"6\" y=\"{:.1}\" fill=\"{c}\">{}</text>",
            y - 4.0,
            esc(&format!("{} · {}", r.metric, r.changes.join(" + "))),
            y + 12.0,
            match r.verdict {
                Interaction::Synergy => "synergy",
                Interaction::Neutral => "neutral",
                Interaction::Conflict => "CONFLICT",
                Interaction::Inconclusive => "inconclusive",
            }
        );
        for (k, a) in r.alone.iter().enumerate() {
            let col = css(COLORS[(k + 2) % COLORS.len()]);
            let _ = write!(
                s,
                "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"8\" height=\"8\" fill=\"{col}\"><title>{} alone: ×{:.3}</title></rect>",
                x(*a) - 4.0,
                y - 4.0,
                esc(r.changes.get(k).map_or("", |s| s.as_str())),
                a
            );
        }
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"{c}\" stroke-width=\"2\"/><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"6\" fill=\"white\" stroke=\"{c}\" stroke-width=\"2\"><title>expected if independent: ×{:.3}</title></circle><circle cx=\"{:.1}\" cy=\"{y:.1}\" r=\"6\" fill=\"{c}\"><title>measured: ×{:.3}</title></circle>",
            x(r.expected),
            x(r.combined),
            x(r.expected),
            r.expected,
            x(r.combined),
            r.combined
        );
    }
    s.push_str("</svg>");
    let mut key = String::from("<div class=\"legend\">");
    let names: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in rows {
            for c in &r.changes {
                if !v.contains(c) {
                    v.push(c.clone());
                }
            }
        }
        v
    };
    for (k, n) in names.iter().enumerate() {
        let _ = write!(
            key,
            "<span><i style=\"background:{};height:8px;width:8px\"></i>{} alone</span>",
            css(COLORS[(k + 2) % COLORS.len()]),
            esc(n)
        );
    }
    key.push_str("<span>○ expected (product of each alone)</span><span>● measured</span></div>");
    super::plot::figure(
        "each change alone, and the combination expected against measured (ratio to the base, log scale; for a latency < 1 is faster, for throughput > 1 is more)",
        &key,
        &s,
        &[],
    )
}

/// The factorial's page: `scenario` and `base` name what was stacked.
pub fn stack_report(scenario: &str, base: &str, rows: &[InteractionRow]) -> String {
    let body = format!(
        "{}<h2>The factorial</h2><pre>{}</pre>",
        interaction_chart(rows),
        esc(&crate::output::stack::factorial(rows))
    );
    page(
        &format!("bench stack {scenario}"),
        &config::block(&[
            ("scenario", scenario.to_string()),
            ("base", base.to_string()),
            ("tool", format!("bench {}", env!("CARGO_PKG_VERSION"))),
        ]),
        &body,
    )
}
