//! The pieces of the charts drawn as plain SVG — a comparison's strip of runs ([`super::runs`]),
//! the effects chart ([`super::baseline`]), the stack's interaction chart ([`super::stack`]),
//! charts of rows and intervals that a plotting library's line and scatter series do not
//! draw: one `<svg>` opening, one tick algorithm (round values 1, 2 or 5 × 10^k apart, on a
//! linear axis or as the ratios marked on a log axis) and the vertical grid of a horizontal
//! value axis. Line and scatter charts are plotters' ([`super::plot`]); both share its
//! palette and number format.

use super::plot::fmt_num;
use std::fmt::Write;

/// The opening of a `w` × `h` chart with its accessible title (already escaped).
pub fn open(w: f64, h: f64, title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" font-family=\"sans-serif\" font-size=\"13\" role=\"img\"><title>{title}</title>"
    )
}

/// About `n` round tick values (1, 2 or 5 × 10^k apart) covering [lo, hi].
pub fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / n.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// The ratios to mark on a log axis from e^`lo_ln` to e^`hi_ln`, at most `max` of them: the
/// round values [`ticks`] gives over the ratios when the axis spans less than a decade (a
/// change of a few tens of percent gets a tick every 10 %), else 1, 2 and 5 × 10^k (or only
/// the powers of ten, when those are too many).
pub fn log_ticks(lo_ln: f64, hi_ln: f64, max: usize) -> Vec<f64> {
    let (lo, hi) = (lo_ln.exp(), hi_ln.exp());
    if hi / lo < 10.0 {
        let t = ticks(lo, hi, max.saturating_sub(1).max(1));
        if t.len() <= max {
            return t.into_iter().filter(|v| *v > 0.0).collect();
        }
    }
    let decades = (lo.log10().floor() as i32)..=(hi.log10().ceil() as i32);
    for mantissas in [&[1.0, 2.0, 5.0][..], &[1.0]] {
        let t: Vec<f64> = decades
            .clone()
            .flat_map(|k| mantissas.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|v| (lo..=hi).contains(v))
            .collect();
        if t.len() <= max {
            return t;
        }
    }
    Vec::new()
}

/// The vertical grid of a horizontal value axis: a line from the top to `axis_y` at each tick
/// (darker at `origin`, the no-change value), labelled under the axis by `label`.
pub fn value_grid(
    s: &mut String,
    ticks: &[f64],
    x: impl Fn(f64) -> f64,
    axis_y: f64,
    origin: f64,
    label: impl Fn(&str) -> String,
) {
    for &t in ticks {
        let _ = write!(
            s,
            "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"8\" y2=\"{axis_y:.1}\" stroke=\"{1}\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>",
            x(t),
            if t == origin { "#888" } else { "#eee" },
            axis_y + 18.0,
            label(&fmt_num(t))
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        let t = ticks(27.3, 31.9, 5);
        assert_eq!(t, vec![28.0, 29.0, 30.0, 31.0]);
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (a, b) in got.iter().zip(want) {
            assert!((a / b - 1.0).abs() < 1e-9, "{got:?}");
        }
    }

    #[test]
    fn a_log_axis_of_a_few_tens_of_percent_gets_a_tick_every_ten() {
        let t = log_ticks(0.55f64.ln(), 1.25f64.ln(), 9);
        close(&t, &[0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2]);
    }

    #[test]
    fn a_log_axis_over_decades_marks_one_two_five() {
        let t = log_ticks(0.04f64.ln(), 30f64.ln(), 9);
        close(&t, &[0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]);
        let t = log_ticks(0.9e-4f64.ln(), 1.1e4f64.ln(), 9);
        close(&t, &[1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4]);
    }
}
