//! SVG charts (plotters' SVG backend; no fonts or files needed): CDFs, scatter over time, and
//! a throughput–latency curve. Each function returns one `<svg>` element as a string.

use crate::metrics::quantile::Sample;
use plotters::prelude::*;

/// One named series of (x, y) points.
pub struct Series<'a> {
    pub name: &'a str,
    pub points: Vec<(f64, f64)>,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn bounds(series: &[Series], hline: Option<f64>) -> (f64, f64, f64, f64) {
    let pts = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::INFINITY,
        f64::NEG_INFINITY,
    );
    for (x, y) in pts {
        x0 = x0.min(*x);
        x1 = x1.max(*x);
        y0 = y0.min(*y);
        y1 = y1.max(*y);
    }
    if let Some(h) = hline {
        y1 = y1.max(h);
        y0 = y0.min(h);
    }
    if !x0.is_finite() {
        return (0.0, 1.0, 0.0, 1.0);
    }
    let pad = |a: f64, b: f64| {
        if (b - a).abs() < 1e-12 {
            (a - 0.5, b + 0.5)
        } else {
            (a, b + (b - a) * 0.05)
        }
    };
    let (x0, x1) = pad(x0, x1);
    let (y0, y1) = pad(y0.min(0.0), y1);
    (x0, x1, y0, y1)
}

/// How a chart looks: its title and axis labels, dots or lines, and an optional horizontal
/// reference line (value, label), e.g. an SLO.
pub struct Frame<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub dots: bool,
    pub hline: Option<(f64, &'a str)>,
}

/// Lines (or dots) for each series in `frame`.
pub fn chart(frame: &Frame, series: &[Series]) -> String {
    let Frame {
        title,
        x_label,
        y_label,
        dots,
        hline,
    } = *frame;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 360)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let (x0, x1, y0, y1) = bounds(series, hline.map(|h| h.0));
        let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(x0..x1, y0..y1)
        else {
            drop(root);
            return svg;
        };
        let _ = chart
            .configure_mesh()
            .x_desc(x_label)
            .y_desc(y_label)
            .light_line_style(RGBColor(235, 235, 235))
            .draw();
        for (i, s) in series.iter().enumerate() {
            let color = COLORS[i % COLORS.len()];
            let drawn = if dots {
                chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 2, color.filled())))
            } else {
                chart.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
            };
            if let Ok(d) = drawn {
                d.label(s.name).legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            }
        }
        if let Some((y, name)) = hline {
            if let Ok(d) = chart.draw_series(LineSeries::new(
                vec![(x0, y), (x1, y)],
                BLACK.stroke_width(1),
            )) {
                let label = name.to_string();
                d.label(label)
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK));
            }
        }
        let _ = chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(RGBColor(200, 200, 200))
            .draw();
        let _ = root.present();
    }
    svg
}

/// Empirical CDF points of sorted values (x = value, y = fraction ≤ x), thinned to ≤ 400.
pub fn cdf(sample: &Sample) -> Vec<(f64, f64)> {
    let n = sample.len();
    if n == 0 {
        return Vec::new();
    }
    let step = (n / 400).max(1);
    let mut v: Vec<(f64, f64)> = (0..n)
        .step_by(step)
        .map(|i| (sample.at(i) / 1000.0, (i + 1) as f64 / n as f64))
        .collect();
    v.push((sample.at(n - 1) / 1000.0, 1.0));
    v
}
