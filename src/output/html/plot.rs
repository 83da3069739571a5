//! SVG charts drawn with plotters' SVG backend (no fonts or files needed). Each function
//! returns one `<figure>`: a legend in HTML (its text sized by the page's CSS, never squeezed
//! into the plot), the `<svg>`, and a caption naming any reference line (an SLO) that lies
//! outside the data and so is not drawn.
//!
//! One look for every page: 580 × 320 px plots (two side by side at 1280 px), axes scaled to the data (a reference line
//! never stretches an axis: an SLO ten times the data would flatten it against zero), tick
//! text of 13 px and axis titles of 14 px. plotters writes a font's size ÷ 1.24 into the SVG,
//! so the sizes asked of it below are those × 1.24.

use super::esc;
use plotters::coord::ranged1d::{
    DefaultFormatting, KeyPointHint, KeyPointWeight, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::fmt::Write;

const WIDTH: u32 = 580;
const HEIGHT: u32 = 320;
/// Tick labels, axis titles (px in the SVG).
const TICK_PX: f64 = 13.0;
const DESC_PX: f64 = 14.0;
/// plotters' font size for `px` pixels of SVG text.
fn font(px: f64) -> f64 {
    px * 1.24
}

/// One named series of (x, y) points.
pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

/// The palette, in series order (baseline blue, candidate red): twelve colours, so that a
/// baseline's default 12 repetitions are told apart on its page.
pub const COLORS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(23, 190, 207),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(57, 59, 121),
    RGBColor(0, 104, 55),
];

pub fn css(c: RGBColor) -> String {
    format!("#{:02x}{:02x}{:02x}", c.0, c.1, c.2)
}

/// How a series is drawn.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    Line,
    Dots,
    /// A line with a marker at each point (few points: a sweep's loads).
    LineDots,
}

/// A horizontal (`vertical: false`) or vertical reference line, e.g. an SLO or a knee.
pub struct Ref {
    pub value: f64,
    pub label: String,
    pub vertical: bool,
}

/// How a chart looks: its title and axis titles, the marks, reference lines.
pub struct Frame<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub mark: Mark,
    pub refs: Vec<Ref>,
}

/// The data's extent, padded by 5 % at the top; the y axis starts at 0 unless the data sit
/// far from it (lowest value above 40 % of the highest), where the axis starts near the
/// data so that their differences show.
pub fn bounds(points: impl Iterator<Item = (f64, f64)>) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in points.filter(|(x, y)| x.is_finite() && y.is_finite()) {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if !x0.is_finite() {
        return (0.0, 1.0, 0.0, 1.0);
    }
    let widen = |a: f64, b: f64| {
        if (b - a).abs() < 1e-12 {
            let d = (a.abs() * 0.1).max(0.5);
            (a - d, b + d)
        } else {
            (a, b)
        }
    };
    let (x0, x1) = widen(x0, x1);
    let y0 = if y0 >= 0.0 && y0 <= 0.4 * y1 { 0.0 } else { y0 };
    let (y0, y1) = widen(y0, y1);
    let pad = (y1 - y0) * 0.05;
    let y0 = if y0 == 0.0 { 0.0 } else { y0 - pad };
    (x0, x1, y0, y1 + pad)
}

/// The HTML legend: a swatch per series when there are two or more (a single series is
/// named by the title), and a dashed black swatch per reference line, as they are drawn.
/// Empty when there is nothing to name.
fn legend_with_refs(names: &[&str], refs: &[&str]) -> String {
    let mut spans = String::new();
    if names.len() >= 2 {
        for (i, n) in names.iter().enumerate() {
            let _ = write!(
                spans,
                "<span><i style=\"background:{}\"></i>{}</span>",
                css(COLORS[i % COLORS.len()]),
                esc(n)
            );
        }
    }
    for r in refs {
        let _ = write!(
            spans,
            "<span><i style=\"height:0;border-top:2px dashed #000\"></i>{}</span>",
            esc(r)
        );
    }
    if spans.is_empty() {
        return spans;
    }
    format!("<div class=\"legend\">{spans}</div>")
}

/// `<figure>` around an SVG: title, legend, the plot, and the reference lines not drawn.
pub fn figure(title: &str, legend_html: &str, svg: &str, hidden: &[String]) -> String {
    let caption = if hidden.is_empty() {
        String::new()
    } else {
        format!("<figcaption>{}</figcaption>", esc(&hidden.join("; ")))
    };
    format!(
        "<figure><div class=\"ftitle\">{}</div>{legend_html}{svg}{caption}</figure>",
        esc(title)
    )
}

/// Splits `refs` into those inside the plotted range and a note for each outside it.
fn in_range(refs: &[Ref], x: (f64, f64), y: (f64, f64)) -> (Vec<&Ref>, Vec<String>) {
    let mut shown = Vec::new();
    let mut hidden = Vec::new();
    for r in refs {
        let (lo, hi) = if r.vertical { x } else { y };
        if (lo..=hi).contains(&r.value) {
            shown.push(r);
        } else {
            let side = match (r.vertical, r.value > hi) {
                (false, true) => "above every value shown",
                (false, false) => "below every value shown",
                (true, true) => "right of the plotted range",
                (true, false) => "left of the plotted range",
            };
            hidden.push(format!("{} is {side}", r.label));
        }
    }
    (shown, hidden)
}

/// A number as the axes print it: at most 3 significant digits after the point, trailing
/// zeros dropped (`2`, `12.5`, `0.25`), no exponent for everyday values.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    let s = if a == 0.0 {
        return "0".into();
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Draws the series of `frame` on `chart`'s coordinates (shared by the linear and the
/// percentile chart).
fn draw<'a, DB: DrawingBackend, X, Y>(
    chart: &mut ChartContext<'a, DB, Cartesian2d<X, Y>>,
    mark: Mark,
    series: &[Series],
    refs: &[&Ref],
    (x0, x1, y0, y1): (f64, f64, f64, f64),
) where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, s) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts = s.points.iter().copied();
        if mark != Mark::Dots {
            let _ = chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)));
        }
        if mark != Mark::Line {
            let r = if mark == Mark::Dots { 2 } else { 4 };
            let _ = chart.draw_series(pts.map(|p| Circle::new(p, r, color.filled())));
        }
    }
    for r in refs {
        let line = if r.vertical {
            vec![(r.value, y0), (r.value, y1)]
        } else {
            vec![(x0, r.value), (x1, r.value)]
        };
        let _ = chart.draw_series(DashedLineSeries::new(line, 6, 4, BLACK.stroke_width(1)));
    }
}

/// Lines (or dots) for each series in `frame`, on linear axes scaled to the data.
pub fn chart(frame: &Frame, series: &[Series]) -> String {
    chart_noted(frame, series, None)
}

/// [`chart`] with a `note` in its caption.
pub fn chart_noted(frame: &Frame, series: &[Series], note: Option<String>) -> String {
    let b = bounds(series.iter().flat_map(|s| s.points.iter().copied()));
    let (refs, mut hidden) = in_range(&frame.refs, (b.0, b.1), (b.2, b.3));
    hidden.extend(note);
    let svg = svg_of::<RangedCoordf64>(frame, series, &refs, b.0..b.1, &fmt_num, b, 225);
    let names: Vec<&str> = series.iter().map(|s| s.name).collect();
    let labels: Vec<&str> = refs.iter().map(|r| r.label.as_str()).collect();
    let legend_html = legend_with_refs(&names, &labels);
    figure(frame.title, &legend_html, &svg, &hidden)
}

/// The `<svg>` of one chart: x on `x` (labelled by `x_label`), y over `extent`'s y range,
/// the mesh's grid lines in grey `grid`, the series and the reference lines in range drawn by
/// [`draw`] over `extent`.
fn svg_of<X: Ranged<ValueType = f64> + ValueFormatter<f64>>(
    frame: &Frame,
    series: &[Series],
    refs: &[&Ref],
    x: impl Into<X>,
    x_label: &dyn Fn(f64) -> String,
    extent: (f64, f64, f64, f64),
    grid: u8,
) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        let _ = root.fill(&WHITE);
        if let Ok(mut c) = ChartBuilder::on(&root)
            .margin(14)
            .x_label_area_size(44)
            .y_label_area_size(70)
            .build_cartesian_2d(x.into(), extent.2..extent.3)
        {
            let xf = |v: &f64| x_label(*v);
            let yf = |v: &f64| fmt_num(*v);
            let _ = c
                .configure_mesh()
                .x_desc(frame.x_label)
                .y_desc(frame.y_label)
                .x_labels(7)
                .y_labels(6)
                .x_label_formatter(&xf)
                .y_label_formatter(&yf)
                .label_style(("sans-serif", font(TICK_PX)))
                .axis_desc_style(("sans-serif", font(DESC_PX)))
                .max_light_lines(0)
                .bold_line_style(RGBColor(grid, grid, grid))
                .draw();
            draw(&mut c, frame.mark, series, refs, extent);
        }
        let _ = root.present();
    }
    svg
}

/// The x position of quantile `p` on the percentile axis: log10(1 / (1 − p)).
fn pct_x(p: f64) -> f64 {
    (1.0 / (1.0 - p).max(1e-12)).log10()
}

/// A sorted sample's latency-by-percentile points for [`percentile_chart`]: the value at each
/// rank i (0-based) drawn at p = i / n, thinned to ≈ 300 points evenly spaced on the log axis
/// (the first and the highest value always kept). `values` ascending.
pub fn percentile_points(values: &[f64]) -> Vec<(f64, f64)> {
    let n = values.len();
    if n == 0 {
        return Vec::new();
    }
    let top = pct_x((n - 1) as f64 / n as f64);
    let steps = 300;
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(steps + 2);
    let mut last = usize::MAX;
    for s in 0..=steps {
        let x = top * s as f64 / steps as f64;
        let i = (((1.0 - 10f64.powf(-x)) * n as f64).floor() as usize).min(n - 1);
        if i != last {
            out.push((pct_x(i as f64 / n as f64), values[i]));
            last = i;
        }
    }
    if last != n - 1 {
        out.push((pct_x((n - 1) as f64 / n as f64), values[n - 1]));
    }
    out
}

/// The percentile axis: linear in log10(1/(1−p)), its ticks and grid lines at the given
/// decades (0 %, 50 %, 90 %, 99 % …) rather than at round values of x.
struct PctAxis {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl Ranged for PctAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(v, limit)
    }
    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        match hint.weight() {
            KeyPointWeight::Bold if hint.max_num_points() > 0 => self.keys.clone(),
            _ => Vec::new(),
        }
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// "99.9%" for the tick at `x` on the percentile axis.
fn pct_label(x: f64) -> String {
    let p = (1.0 - 10f64.powf(-x)) * 100.0;
    let s = format!("{p:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// Latency by percentile on HdrHistogram's log "1/(1−p)" axis: 0 %, 50 %, 90 %, 99 %, 99.9 % …
/// equally spaced decades, so the tail gets the room a linear CDF gives the median.
/// `series`: each arm's points from [`percentile_points`].
pub fn percentile_chart(frame: &Frame, series: &[Series]) -> String {
    let b = bounds(series.iter().flat_map(|s| s.points.iter().copied()));
    let x1 = b.1.max(1.0);
    let (refs, hidden) = in_range(&frame.refs, (0.0, x1), (b.2, b.3));
    let mut keys = vec![0.0, 2f64.log10()];
    keys.extend((1..=6).map(f64::from).take_while(|k| *k <= x1 + 1e-9));
    let axis = PctAxis {
        inner: (0.0..x1 * 1.02).into(),
        keys,
    };
    let extent = (0.0, x1 * 1.02, b.2, b.3);
    let svg = svg_of::<PctAxis>(frame, series, &refs, axis, &pct_label, extent, 215);
    let names: Vec<&str> = series.iter().map(|s| s.name).collect();
    figure(frame.title, &legend_with_refs(&names, &[]), &svg, &hidden)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_places_decades_evenly() {
        assert_eq!(pct_x(0.0), 0.0);
        assert!((pct_x(0.9) - 1.0).abs() < 1e-9 && (pct_x(0.999) - 3.0).abs() < 1e-9);
        assert_eq!(pct_label(0.0), "0%");
        assert_eq!(pct_label(2f64.log10()), "50%");
        assert_eq!(pct_label(3.0), "99.9%");
    }

    #[test]
    fn percentile_points_keep_the_ends_and_stay_small() {
        let v: Vec<f64> = (0..100_000).map(f64::from).collect();
        let p = percentile_points(&v);
        assert!(p.len() <= 302, "{}", p.len());
        assert_eq!(p[0], (0.0, 0.0));
        assert_eq!(p.last().unwrap().1, 99_999.0);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }

    #[test]
    fn axes_follow_the_data_and_a_far_slo_is_named_not_drawn() {
        let b = bounds([(0.0, 18.0), (10.0, 25.0)].into_iter());
        assert!(b.2 > 10.0 && b.3 < 30.0, "{b:?}");
        let refs = [Ref {
            value: 500.0,
            label: "TTFT SLO".into(),
            vertical: false,
        }];
        let (shown, hidden) = in_range(&refs, (b.0, b.1), (b.2, b.3));
        assert!(shown.is_empty());
        assert_eq!(hidden, ["TTFT SLO is above every value shown"]);
        assert_eq!(bounds([(0.0, 2.0), (1.0, 20.0)].into_iter()).2, 0.0);
    }
}
