//! The page of one run: configuration, counts and the summary table, latency by percentile,
//! the run over time by window (latency, throughput, requests in flight, the server's queue
//! and KV usage, the steady state marked), and TTFT by turn for a conversation.

use super::plot::{chart, Frame, Mark, Ref, Series};
use super::{config, esc, page, percentiles};
use crate::metrics::windows::{of_run, WIDTH_S};
use crate::model::result::RunResult;
use crate::model::scenario::Slo;
use crate::model::windows::{Window, Windows};
use crate::output::markup::{Align, Cell, Table};
use std::fmt::Write;

fn summary_table(r: &RunResult) -> String {
    let heads = [
        "metric (ms)",
        "count",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "max",
    ];
    let mut t = Table::new(heads.map(|h| (h, Align::Right)));
    for l in &r.summary.latency {
        let mut cells = vec![l.name.to_string(), l.count.to_string()];
        cells.extend([l.mean, l.p50, l.p90, l.p95, l.p99, l.max].iter().map(
            |v| match l.has_values() {
                true => format!("{v:.3}"),
                false => "—".to_string(),
            },
        ));
        t.row(cells.into_iter().map(Cell::from));
    }
    t.html()
}

fn turns(r: &RunResult) -> String {
    let t = &r.summary.turns;
    if t.is_empty() {
        return String::new();
    }
    let heads = [
        "turn",
        "sent",
        "ok",
        "TTFT p50 (ms)",
        "TTFT p95 (ms)",
        "E2E p50 (ms)",
        "mean prompt tokens",
    ];
    let mut table = Table::new(heads.map(|h| (h, Align::Right)));
    for t in t {
        let prompt = t
            .prompt_tokens_mean
            .map_or("-".to_string(), |p| format!("{p:.0}"));
        table.row(
            [
                t.turn.to_string(),
                t.sent.to_string(),
                t.ok.to_string(),
                format!("{:.3}", t.ttft_p50_ms),
                format!("{:.3}", t.ttft_p95_ms),
                format!("{:.3}", t.e2e_p50_ms),
                prompt,
            ]
            .map(Cell::from),
        );
    }
    let mut o = format!("<h2>By turn (conversation)</h2>{}", table.html());
    let line = |f: fn(&crate::model::summary::TurnSummary) -> f64| {
        t.iter()
            .map(|x| (f64::from(x.turn), f(x)))
            .collect::<Vec<_>>()
    };
    o.push_str("<div class=\"charts\">");
    o.push_str(&chart(
        &Frame {
            title: "TTFT by turn",
            x_label: "turn of the conversation",
            y_label: "TTFT (ms)",
            mark: Mark::LineDots,
            refs: r
                .scenario
                .slo
                .ttft_ms
                .map(|v| Ref {
                    value: v,
                    label: format!("TTFT SLO {} ms", super::plot::fmt_num(v)),
                    vertical: false,
                })
                .into_iter()
                .collect(),
        },
        &[
            Series {
                name: "p50",
                points: line(|x| x.ttft_p50_ms),
            },
            Series {
                name: "p95",
                points: line(|x| x.ttft_p95_ms),
            },
        ],
    ));
    o.push_str("</div>");
    o
}

/// The windows the page draws: the run's own (from every request, `--window` wide) when
/// there are at least 6 of them or the run kept no records to cut finer ones from (over
/// `--keep-records`), otherwise finer ones from its records (a 1-2-5 width giving ≥ 20
/// windows), so a short run has a curve too.
fn windows_for_page(r: &RunResult) -> Option<Windows> {
    if let Some(w) = r
        .windows
        .as_ref()
        .filter(|w| w.rows.len() >= 6 || r.requests_omitted > 0)
    {
        return Some(w.clone());
    }
    if r.requests_omitted > 0 {
        return None;
    }
    let span = r
        .requests
        .iter()
        .filter(|q| !q.warmup)
        .map(|q| q.end_us)
        .max()? as f64
        / 1e6;
    let width = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, WIDTH_S]
        .into_iter()
        .find(|w| span / w <= 40.0)
        .unwrap_or(WIDTH_S);
    of_run(&r.requests, r.server_metrics.as_ref(), r.started_at, width)
}

/// One time-series chart: its title, y axis, an SLO line and its series.
struct Panel {
    title: &'static str,
    y: &'static str,
    slo: Option<(f64, String)>,
    series: Vec<Series<'static>>,
}

/// The panels of `w`: latency, throughput, requests in flight and the server's queue, its
/// KV-cache usage — each value at its window's middle.
fn panels(w: &Windows, slo: &Slo) -> Vec<Panel> {
    let line = |f: &dyn Fn(&Window) -> Option<f64>| {
        w.rows
            .iter()
            .filter_map(|x| Some(((x.start_s + x.end_s) / 2.0, f(x)?)))
            .collect::<Vec<_>>()
    };
    let named = |name: &'static str, points| Series { name, points };
    vec![
        Panel {
            title: "TTFT by window of intended send",
            y: "TTFT (ms)",
            slo: slo
                .ttft_ms
                .map(|v| (v, format!("TTFT SLO {} ms", super::plot::fmt_num(v)))),
            series: vec![
                named("p50", line(&|x| x.ttft_p50_ms)),
                named("p95", line(&|x| x.ttft_p95_ms)),
            ],
        },
        Panel {
            title: "TPOT and E2E p50 by window of intended send",
            y: "ms",
            slo: None,
            series: vec![
                named("TPOT p50", line(&|x| x.tpot_p50_ms)),
                named("E2E p50", line(&|x| x.e2e_p50_ms)),
            ],
        },
        Panel {
            title: "output throughput by window of completion",
            y: "output tokens / s",
            slo: None,
            series: vec![named("output tok/s", line(&|x| Some(x.output_tps)))],
        },
        Panel {
            title: "requests in flight and the server's queue",
            y: "requests (window mean)",
            slo: None,
            series: vec![
                named("in flight (client)", line(&|x| Some(x.in_flight))),
                named("running (server)", line(&|x| x.server_running)),
                named("waiting (server)", line(&|x| x.server_waiting)),
            ],
        },
        Panel {
            title: "the server's KV-cache usage",
            y: "KV cache used (%)",
            slo: None,
            series: vec![named(
                "KV usage",
                line(&|x| x.server_kv_usage.map(|v| v * 100.0)),
            )],
        },
    ]
}

/// The time-series charts of `w`, with the steady state's ends marked.
fn over_time(w: &Windows, slo: &Slo) -> String {
    let steady = |s: &crate::model::windows::SteadyState| {
        [
            Ref {
                value: s.start_s,
                label: format!("steady state from {:.1} s ({})", s.start_s, s.method),
                vertical: true,
            },
            Ref {
                value: s.end_s,
                label: format!("steady state to {:.1} s", s.end_s),
                vertical: true,
            },
        ]
    };
    let x_label = format!("time from the run's start (s; {} s windows)", w.width_s);
    let mut o = String::from("<div class=\"charts\">");
    for p in panels(w, slo) {
        if p.series.iter().all(|s| s.points.is_empty()) {
            continue;
        }
        let mut refs: Vec<Ref> = w.steady.iter().flat_map(steady).collect();
        refs.extend(p.slo.map(|(value, label)| Ref {
            value,
            label,
            vertical: false,
        }));
        o.push_str(&chart(
            &Frame {
                title: p.title,
                x_label: &x_label,
                y_label: p.y,
                mark: Mark::LineDots,
                refs,
            },
            &p.series,
        ));
    }
    o.push_str("</div>");
    if let Some(s) = &w.steady {
        let _ = write!(
            o,
            "<p class=\"note\">Steady state ({}): {:.1}–{:.1} s, {} requests after {} of warm-up; offered {:.2} req/s, served {:.2} req/s, {:.1} output tok/s.</p>",
            esc(&s.method),
            s.start_s,
            s.end_s,
            s.requests,
            s.warmup_requests,
            s.offered_rps,
            s.achieved_rps,
            s.output_tps
        );
    } else if let Some(why) = &w.steady_missing {
        let _ = write!(o, "<p class=\"note\">No steady state: {}</p>", esc(why));
    }
    o
}

pub fn run_report(r: &RunResult) -> String {
    let mut b = String::new();
    let c = &r.summary.counts;
    let t = &r.summary.throughput;
    let _ = write!(
        b,
        "<p class=\"headline\">{}{} sent: {} ok, {} errors, {} aborted · {:.2} req/s, {:.1} output tok/s over {:.2} s · peak concurrency {}</p>",
        if r.complete { "" } else { "<span class=\"fail\">INCOMPLETE</span> · " },
        c.sent,
        c.ok,
        c.errors.values().sum::<u64>(),
        c.aborted,
        t.request_rps,
        t.output_tps,
        t.window_s,
        t.peak_concurrency
    );
    if let Some(m) = &r.server_metrics {
        let _ = write!(
            b,
            "<p>server ({}): {}</p>",
            esc(m.engine.as_deref().unwrap_or("?")),
            esc(&crate::output::server::describe(m))
        );
    }
    b.push_str(&summary_table(r));
    // A conversation's first question is how TTFT moves with the turn.
    b.push_str(&turns(r));
    b.push_str("<h2>Latency by percentile</h2>");
    b.push_str(&percentiles(&[("run", vec![r])], &r.scenario.slo));
    if let Some(w) = windows_for_page(r) {
        b.push_str("<h2>Over the run</h2>");
        b.push_str(&over_time(&w, &r.scenario.slo));
    }
    page(
        &format!("bench run {}", r.scenario_name),
        &config::run(r),
        &b,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{lognormal_run, rng};

    #[test]
    fn run_page_is_self_contained_with_its_charts() {
        let r = lognormal_run(300, 40.0, 0.0, &mut rng(1));
        let html = run_report(&r);
        assert!(html.starts_with("<!DOCTYPE html>"));
        assert!(html.contains("TTFT by percentile") && html.contains("E2E by percentile"));
        assert!(html.contains("traffic hash") && html.contains("seed"));
        for external in ["<script", "src=\"http", "href=\"http", "<link"] {
            assert!(!html.contains(external), "{external}");
        }
    }
    #[test]
    fn a_ten_thousand_request_run_makes_a_page_under_a_megabyte() {
        let r = lognormal_run(10_000, 40.0, 0.0, &mut rng(2));
        let html = run_report(&r);
        assert!(html.len() < 1_000_000, "{} bytes", html.len());
        assert!(html.contains("Over the run"));
    }

    #[test]
    fn a_run_past_keep_records_draws_its_own_windows() {
        let mut r = lognormal_run(300, 40.0, 0.0, &mut rng(3));
        // As a run past --keep-records stores it: windows from every request, no records.
        r.windows = of_run(&r.requests, None, r.started_at, 0.5);
        r.requests_omitted = r.requests.len() as u64;
        r.requests.clear();
        let w = windows_for_page(&r).expect("the run's own windows");
        assert_eq!(w.width_s, 0.5);
        assert!(run_report(&r).contains("Over the run"));
        r.windows = None;
        assert!(windows_for_page(&r).is_none());
    }
}
