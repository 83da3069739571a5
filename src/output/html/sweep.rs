//! The page of a sweep: latency against achieved throughput with a marker at each load, the
//! SLO lines where they fall in range and the knee (the highest rate meeting the SLOs, or the
//! last sustainable one) marked; served against offered load; and the table with SLO
//! attainment and the over-saturation test.

use super::plot::{chart, Frame, Mark, Ref, Series};
use super::{config, esc, page};
use crate::model::result::RunResult;
use crate::model::sweep::{Point, Sweep};
use crate::output::markup::{Align, Cell, Table};
use std::fmt::Write;

/// The achieved throughput of the point run at offered rate `rate`, for a vertical marker.
fn achieved_at(s: &Sweep, rate: f64) -> Option<f64> {
    s.points
        .iter()
        .find(|p| p.offered_rps.is_some_and(|o| (o - rate).abs() < 1e-9))
        .map(|p| p.achieved_rps)
}

fn knees(s: &Sweep) -> Vec<Ref> {
    let mut v = Vec::new();
    if let Some(x) = s.max_rate_rps.and_then(|m| achieved_at(s, m)) {
        v.push(Ref {
            value: x,
            label: format!("highest rate meeting the SLOs ({x:.2} req/s achieved)"),
            vertical: true,
        });
    }
    if let Some(x) = s.last_sustainable_rps.and_then(|m| achieved_at(s, m)) {
        v.push(Ref {
            value: x,
            label: format!("last sustainable rate ({x:.2} req/s achieved)"),
            vertical: true,
        });
    }
    v
}

/// The points: each load once (an open loop's offered rate, or a closed loop's
/// concurrency), what was served, the latencies and whether the server was over-saturated;
/// the saturation test's evidence listed under the table, a line a point.
fn table(s: &Sweep) -> String {
    let heads = [
        "load",
        "achieved req/s",
        "output tok/s",
        "goodput req/s",
        "SLO attainment",
        "TTFT p50 (ms)",
        "TTFT p99 (ms)",
        "TPOT p50 (ms)",
        "errors / sent",
        "over-saturated",
    ];
    let load = |p: &Point| match p.offered_rps {
        Some(o) => format!("{o:.3} req/s"),
        None => p.load.replace('=', " "),
    };
    let mut t = Table::new(heads.map(|h| (h, Align::Right)));
    let mut evidence = String::new();
    for p in &s.points {
        let opt = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".to_string(), f);
        let over = p
            .saturation
            .as_ref()
            .map_or("—", |x| if x.over { "yes" } else { "no" });
        t.row(
            [
                load(p),
                format!("{:.3}", p.achieved_rps),
                format!("{:.1}", p.output_tps),
                opt(p.goodput_rps, &|v| format!("{v:.3}")),
                opt(p.slo_attainment, &|v| format!("{:.1} %", v * 100.0)),
                format!("{:.1}", p.ttft_p50_ms),
                format!("{:.1}", p.ttft_p99_ms),
                format!("{:.2}", p.tpot_p50_ms),
                format!("{} / {}", p.errors, p.sent),
                over.to_string(),
            ]
            .map(Cell::from),
        );
        if let Some(x) = &p.saturation {
            let _ = write!(
                evidence,
                "<li>{}: {over} — {}</li>",
                esc(&load(p)),
                esc(&x.evidence())
            );
        }
    }
    match evidence.is_empty() {
        true => t.html(),
        false => format!(
            "{}<p class=\"note\">Over-saturated: the server fell behind the load inside the run's steady state (the test: docs/commands.md, Sweeps).</p><ul class=\"note\">{evidence}</ul>",
            t.html()
        ),
    }
}

/// `first`: the first point's run, for the configuration block and the SLOs (absent when its
/// directory is gone).
pub fn sweep_report(s: &Sweep, first: Option<&RunResult>) -> String {
    let slo = first.map(|r| r.scenario.slo.clone()).unwrap_or_default();
    let mut b = String::new();
    let mut pts: Vec<&Point> = s.points.iter().collect();
    pts.sort_by(|a, b| a.achieved_rps.total_cmp(&b.achieved_rps));
    let line = |f: fn(&Point) -> f64| pts.iter().map(|p| (p.achieved_rps, f(p))).collect();
    let with_slo = |v: Option<f64>, label: &str| {
        let mut r = knees(s);
        if let Some(v) = v {
            r.push(Ref {
                value: v,
                label: format!("{label} {} ms", super::plot::fmt_num(v)),
                vertical: false,
            });
        }
        r
    };
    b.push_str("<div class=\"charts\">");
    b.push_str(&chart(
        &Frame {
            title: "TTFT against achieved throughput",
            x_label: "achieved throughput (req/s)",
            y_label: "TTFT (ms)",
            mark: Mark::LineDots,
            refs: with_slo(slo.ttft_ms, "TTFT SLO"),
        },
        &[
            Series {
                name: "TTFT p50",
                points: line(|p| p.ttft_p50_ms),
            },
            Series {
                name: "TTFT p99",
                points: line(|p| p.ttft_p99_ms),
            },
        ],
    ));
    b.push_str(&chart(
        &Frame {
            title: "TPOT against achieved throughput",
            x_label: "achieved throughput (req/s)",
            y_label: "TPOT (ms)",
            mark: Mark::LineDots,
            refs: with_slo(slo.tpot_ms, "TPOT SLO"),
        },
        &[
            Series {
                name: "TPOT p50",
                points: line(|p| p.tpot_p50_ms),
            },
            Series {
                name: "TPOT p95",
                points: line(|p| p.tpot_p95_ms),
            },
        ],
    ));
    let offered: Vec<(f64, f64)> = s
        .points
        .iter()
        .filter_map(|p| Some((p.offered_rps?, p.achieved_rps)))
        .collect();
    if offered.len() >= 2 {
        let diag: Vec<(f64, f64)> = offered.iter().map(|(o, _)| (*o, *o)).collect();
        b.push_str(&chart(
            &Frame {
                title: "served against offered load",
                x_label: "offered (req/s)",
                y_label: "achieved (req/s)",
                mark: Mark::LineDots,
                refs: Vec::new(),
            },
            &[
                Series {
                    name: "achieved",
                    points: offered,
                },
                Series {
                    name: "offered (all served)",
                    points: diag,
                },
            ],
        ));
    }
    b.push_str("</div>");
    b.push_str(&table(s));
    if let Some(m) = s.max_rate_rps {
        let _ = write!(b, "<p>highest rate meeting the SLOs: <b>{m:.3} req/s</b>");
        if let Some((lo, hi)) = s.max_rate_bracket {
            let _ = write!(b, " (bracket {lo:.3}–{hi:.3} req/s, both measured)");
        }
        b.push_str("</p>");
    }
    if let Some(n) = &s.max_rate_note {
        let _ = write!(b, "<p class=\"note\">{}</p>", esc(n));
    }
    if let Some(l) = s.last_sustainable_rps {
        let _ = write!(b, "<p>last sustainable rate: <b>{l:.3} req/s</b></p>");
    }
    if let Some(w) = &s.stopped_early {
        let _ = write!(b, "<p>stopped early: {}</p>", esc(w));
    }
    let cfg = match first {
        Some(r) => config::run(r),
        None => config::block(&[("scenario", s.scenario.clone())]),
    };
    page(&format!("bench sweep {}", s.scenario), &cfg, &b)
}
