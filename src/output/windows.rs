//! The time-resolved part of a run's summary: its steady state and, for a run of at most
//! [`SHOWN`] windows, the windows themselves (all of them are in `windows.csv`). Pure.

use super::sig4;
use crate::model::windows::Windows;
use std::fmt::Write;

/// Most windows printed; a longer run's are in `windows.csv` only.
pub const SHOWN: usize = 12;

pub fn render_into(o: &mut String, w: &Windows) {
    match (&w.steady, &w.steady_missing) {
        (Some(s), _) => {
            let _ = writeln!(
                o,
                "  steady state: {:.1} s → {:.1} s after the run's start ({} requests; {} warm-up before it, cut by MSER-5 on E2E; the drain after the last send left out): offered {:.2} req/s, served {:.2} req/s, {:.1} output tok/s",
                s.start_s, s.end_s, s.requests, s.warmup_requests, s.offered_rps, s.achieved_rps, s.output_tps
            );
        }
        (None, Some(why)) => {
            let _ = writeln!(o, "  steady state: not found ({why})");
        }
        (None, None) => {}
    }
    if w.rows.len() < 2 {
        return; // one window is the whole run, already in the table below
    }
    if w.rows.len() > SHOWN {
        let _ = writeln!(
            o,
            "  windows: {} of {} s in windows.csv",
            w.rows.len(),
            w.width_s
        );
        return;
    }
    let _ = writeln!(
        o,
        "  {:<11} {:>5} {:>4} {:>7} {:>8} {:>9} {:>9} {:>9} {:>7}",
        "window (s)", "sent", "err", "req/s", "tok/s", "in-flight", "ttft p50", "e2e p50", "kv use"
    );
    let ms = |v: Option<f64>| v.map_or("—".to_string(), sig4);
    for r in &w.rows {
        let _ = writeln!(
            o,
            "  {:<11} {:>5} {:>4} {:>7.2} {:>8.1} {:>9.2} {:>9} {:>9} {:>7}",
            format!("{:.0}–{:.0}", r.start_s, r.end_s),
            r.sent,
            r.errors,
            r.request_rps,
            r.output_tps,
            r.in_flight,
            ms(r.ttft_p50_ms),
            ms(r.e2e_p50_ms),
            r.server_kv_usage
                .map_or("—".to_string(), |k| format!("{:.0} %", k * 100.0))
        );
    }
    let _ = writeln!(
        o,
        "  windows: sent, errors and latencies (ms) by intended send; req/s and tok/s by completion; in-flight time-weighted; kv use the server's gauge"
    );
}
