//! Each run of both arms as a dot, one small plot per gated figure: the spread the gate judges
//! (runs are its unit), the pooled value of each arm as a bar, the decision interval of the
//! change drawn on the candidate's side in the metric's own unit, and the threshold dashed.
//! Two clusters of runs, or one odd run, show here as what made a row inconclusive.
//! Hand-drawn SVG: a strip plot of two columns needs no plotting library's axes.

use super::plot::{css, fmt_num, COLORS};
use super::{esc, plot, svg};
use crate::model::comparison::{Comparison, Row, Verdict};
use std::fmt::Write;

const W: f64 = 300.0;
const H: f64 = 280.0;
const LEFT: f64 = 64.0;
const TOP: f64 = 12.0;
const BOTTOM: f64 = 52.0;
const COL: [f64; 2] = [115.0, 195.0];
const INTERVAL_X: f64 = 265.0;

/// The interval's ends in the metric's unit: the baseline's value moved by the interval's
/// percentages. `None` for a row without a finite interval.
fn interval_values(r: &Row) -> Option<(f64, f64)> {
    (r.interval_low.is_finite() && r.interval_high.is_finite() && !r.metric.in_points()).then(
        || {
            (
                r.baseline * (1.0 + r.interval_low / 100.0),
                r.baseline * (1.0 + r.interval_high / 100.0),
            )
        },
    )
}

/// The threshold in the metric's unit: where the candidate would have to be to regress.
fn threshold_value(r: &Row) -> Option<f64> {
    (r.floor > 0.0 && !r.metric.in_points()).then(|| {
        if r.lower_is_better {
            r.baseline * r.floor.exp()
        } else {
            r.baseline * (-r.floor).exp()
        }
    })
}

fn verdict_color(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "#b00",
        Verdict::Improved | Verdict::NoChange => "#070",
        _ => "#a60",
    }
}

/// The y axis of a strip: its line, round ticks with their labels and light grid lines.
fn y_axis(s: &mut String, lo: f64, hi: f64, y: &dyn Fn(f64) -> f64) {
    let _ = write!(
        s,
        "<line x1=\"{LEFT}\" x2=\"{LEFT}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#888\"/>",
        H - BOTTOM
    );
    for t in svg::ticks(lo, hi, 5) {
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{x2:.1}\" y1=\"{yt:.1}\" y2=\"{yt:.1}\" stroke=\"#eee\"/><text x=\"{tx:.1}\" y=\"{ty:.1}\" text-anchor=\"end\">{label}</text>",
            x2 = W - 4.0,
            yt = y(t),
            tx = LEFT - 6.0,
            ty = y(t) + 4.0,
            label = fmt_num(t)
        );
    }
}

/// One row's strip plot.
pub fn strip(r: &Row) -> String {
    let arms = [&r.baseline_values, &r.candidate_values];
    let iv = interval_values(r);
    let thr = threshold_value(r);
    let mut all: Vec<f64> = arms.iter().flat_map(|a| a.iter().copied()).collect();
    all.extend([r.baseline, r.candidate]);
    all.extend(thr);
    let data_lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let data_hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // The interval may reach far beyond the runs (few runs, wide t): it is clipped to twice
    // the runs' span, with an arrow where it goes on.
    let reach = (data_hi - data_lo).max(data_hi.abs() * 0.05);
    let (clip_lo, clip_hi) = (data_lo - reach, data_hi + reach);
    if let Some((a, b)) = iv {
        all.extend([a.max(clip_lo), b.min(clip_hi)]);
    }
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let pad = ((hi - lo) * 0.08).max(hi.abs() * 0.01).max(1e-9);
    let (lo, hi) = (lo - pad, hi + pad);
    let y = |v: f64| TOP + (hi - v) / (hi - lo) * (H - TOP - BOTTOM);
    let mut s = svg::open(
        W,
        H,
        &format!("{} of each run, both arms", esc(&r.metric.to_string())),
    );
    y_axis(&mut s, lo, hi, &y);
    if let Some(t) = thr {
        let _ = write!(
            s,
            "<line x1=\"{LEFT}\" x2=\"{:.1}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#b00\" stroke-dasharray=\"5,4\"/>",
            W - 4.0,
            y(t)
        );
    }
    for (k, values) in arms.iter().enumerate() {
        let color = css(COLORS[k]);
        let cx = COL[k];
        for (i, v) in values.iter().enumerate() {
            let dx = (i % 5) as f64 * 6.0 - 12.0;
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4.5\" fill=\"{color}\" fill-opacity=\"0.75\"><title>run {} of the {}: {}</title></circle>",
                cx + dx,
                y(*v),
                i + 1,
                ["baseline", "candidate"][k],
                fmt_num(*v)
            );
        }
        let pooled = [r.baseline, r.candidate][k];
        let _ = write!(
            s,
            "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{2:.1}\" y2=\"{2:.1}\" stroke=\"{color}\" stroke-width=\"3\"/>",
            cx - 24.0,
            cx + 24.0,
            y(pooled)
        );
        let _ = write!(
            s,
            "<text x=\"{cx}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text><text x=\"{cx}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{} run{}</text>",
            H - BOTTOM + 20.0,
            ["baseline", "candidate"][k],
            H - BOTTOM + 38.0,
            values.len(),
            if values.len() == 1 { "" } else { "s" }
        );
    }
    if let Some((a, b)) = iv {
        let color = verdict_color(r.verdict);
        let (ya, yb) = (y(a.max(clip_lo)), y(b.min(clip_hi)));
        let _ = write!(
            s,
            "<line x1=\"{INTERVAL_X}\" x2=\"{INTERVAL_X}\" y1=\"{ya:.1}\" y2=\"{yb:.1}\" stroke=\"{color}\" stroke-width=\"4\"><title>decision interval {}</title></line>",
            esc(&crate::output::compare::interval(r))
        );
        for (v, clipped) in [(a, a < clip_lo), (b, b > clip_hi)] {
            let yy = y(v.clamp(clip_lo, clip_hi));
            if clipped {
                let dir = if v < clip_lo { 8.0 } else { -8.0 };
                let _ = write!(
                    s,
                    "<path d=\"M{:.1} {:.1} L{INTERVAL_X} {:.1} L{:.1} {:.1}\" fill=\"none\" stroke=\"{color}\" stroke-width=\"2\"/>",
                    INTERVAL_X - 6.0,
                    yy - dir,
                    yy,
                    INTERVAL_X + 6.0,
                    yy - dir
                );
            } else {
                let _ = write!(
                    s,
                    "<line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{yy:.1}\" y2=\"{yy:.1}\" stroke=\"{color}\" stroke-width=\"2\"/>",
                    INTERVAL_X - 6.0,
                    INTERVAL_X + 6.0
                );
            }
        }
        let _ = write!(
            s,
            "<text x=\"{INTERVAL_X}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">interval</text>",
            H - BOTTOM + 20.0
        );
    }
    s.push_str("</svg>");
    s
}

/// The strip plots of every gated row that kept its runs' values, with one key for all.
pub fn section(c: &Comparison) -> String {
    let rows: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotGated)
        .filter(|r| !r.baseline_values.is_empty() && !r.candidate_values.is_empty())
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let mut o = String::from("<h2>Each run of both arms</h2><p class=\"note\">Dots: each run's own figure (what the gate's noise is estimated from); bars: each arm's pooled value, the one the verdict compares; on the right, the decision interval of the change in the metric's unit (its colour the verdict; an arrow where it runs on past the plot); dashed red: the threshold, where the candidate would regress.</p><div class=\"charts\">");
    for r in rows {
        let title = format!(
            "{} ({}) — {} {}",
            r.metric,
            r.unit,
            r.verdict.name(),
            crate::output::compare::delta(r)
        );
        let _ = write!(
            o,
            "{}",
            plot::figure(&title, "", &strip(r), &[]).replacen(
                "<figure>",
                &format!(
                    "<figure style=\"border-color:{}\">",
                    verdict_color(r.verdict)
                ),
                1
            )
        );
    }
    o.push_str("</div>");
    o
}
