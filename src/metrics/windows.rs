//! A run in time windows ([`WIDTH_S`] by default, `--window`) and its steady state, from a
//! compact [`Point`] of every measured request (kept also for a run past `--keep-records`).
//!
//! A request counts in the window of its intended send for what was *sent* (requests,
//! errors, latency quantiles) and in the window of its end for what was *completed*
//! (throughput), since throughput is completions over time; requests in flight are
//! time-weighted (each request's intended-send → end interval, overlapped with the window,
//! summed, over the width — Little's law's L). The server's gauges are the mean of the scrapes
//! inside each window.
//!
//! The steady state starts where MSER-5 ([`super::steady`]) cuts the warm-up off the E2E
//! series of the successful requests in intended-send order, and ends at the last intended
//! send: after it no request arrives and the run only drains. Inside it, the offered load is
//! (n − 1) over the span of the requests' intended sends and the served load (n − 1) over the
//! span of the same requests' completions. [`steady_only`] cuts a stored run down to that part
//! (`bench compare --steady-state`).

use super::quantile::Sample;
use super::steady::{mser5, BATCH, MIN_BATCHES};
use crate::model::hist::{new_histogram, record_us};
use crate::model::record::{Outcome, RequestRecord};
use crate::model::server::{GaugeSample, ServerMetrics};
use crate::model::windows::{SteadyState, Window, Windows, MAX_WINDOWS, MIN_WIDTH_S};

/// Default window width, s (`--window`).
pub const WIDTH_S: f64 = 10.0;

/// What the windows and the steady state read of one measured request (56 bytes). A run
/// keeps one for every request, also past `--keep-records`, so a long run has its windows.
/// Latencies are held as µs in 32 bits: one past 71 minutes is held as 71 minutes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub intended_us: u64,
    pub end_us: u64,
    /// The request's index, the tie-break of equal intended sends.
    pub index: u32,
    pub output_tokens: u32,
    pub ttft_us: Option<u32>,
    /// Rounded to the µs, as the histograms hold it.
    pub tpot_us: Option<u32>,
    pub e2e_us: Option<u32>,
    pub ok: bool,
    /// Failed: every outcome but ok and aborted.
    pub error: bool,
}

impl Point {
    /// The point of a measured request; `None` for a warm-up one.
    pub fn of(r: &RequestRecord) -> Option<Point> {
        let small = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        (!r.warmup).then(|| Point {
            intended_us: r.intended_us,
            end_us: r.end_us,
            index: small(r.index),
            output_tokens: small(r.output_tokens),
            ttft_us: r.ttft_us.map(small),
            tpot_us: r.tpot_us.map(|t| small(t.round() as u64)),
            e2e_us: r.e2e_us.map(small),
            ok: r.outcome.is_ok(),
            error: !r.outcome.is_ok() && r.outcome != Outcome::Aborted,
        })
    }
}

/// The windows of a run from its measured requests' points; `gauges` with their times as ms
/// from the run's start. `None` without a measured request.
pub fn compute(points: &[Point], width_s: f64, gauges: &[(f64, &GaugeSample)]) -> Option<Windows> {
    let t0 = points.iter().map(|r| r.intended_us).min()?;
    let end = points.iter().map(|r| r.end_us).max()?.max(t0 + 1);
    let asked_us = (width_s.max(MIN_WIDTH_S) * 1e6) as u64;
    let widen = (end - t0).div_ceil(asked_us).div_ceil(MAX_WINDOWS).max(1);
    let width_us = asked_us * widen;
    let n = (end - t0).div_ceil(width_us).max(1) as usize;
    let rows = (0..n)
        .map(|i| {
            let (lo, hi) = (t0 + i as u64 * width_us, t0 + (i as u64 + 1) * width_us);
            window(points, lo, hi, t0, gauges)
        })
        .collect();
    let (steady, steady_missing) = match steady(points, t0) {
        Ok(s) => (Some(s), None),
        Err(why) => (None, Some(why)),
    };
    Some(Windows {
        width_s: width_us as f64 / 1e6,
        asked_width_s: (widen > 1).then_some(width_s),
        rows,
        steady,
        steady_missing,
    })
}

/// [`of_points`] from a run's records (warm-up ones left out).
pub fn of_run(
    records: &[RequestRecord],
    server: Option<&ServerMetrics>,
    started_at: chrono::DateTime<chrono::Utc>,
    width_s: f64,
) -> Option<Windows> {
    let points: Vec<Point> = records.iter().filter_map(Point::of).collect();
    of_points(&points, server, started_at, width_s)
}

/// [`compute`] for a run whose clock started at `started_at`: the server's gauges placed on
/// the requests' clock (ms from the run's start).
pub fn of_points(
    points: &[Point],
    server: Option<&ServerMetrics>,
    started_at: chrono::DateTime<chrono::Utc>,
    width_s: f64,
) -> Option<Windows> {
    let origin = started_at.timestamp_millis();
    let gauges: Vec<(f64, &GaugeSample)> = server
        .map(|m| {
            m.gauges
                .iter()
                .map(|g| ((g.at_ms - origin) as f64, g))
                .collect()
        })
        .unwrap_or_default();
    compute(points, width_s, &gauges)
}

fn window(points: &[Point], lo: u64, hi: u64, t0: u64, gauges: &[(f64, &GaugeSample)]) -> Window {
    let width_s = (hi - lo) as f64 / 1e6;
    let sent: Vec<&Point> = points
        .iter()
        .filter(|r| (lo..hi).contains(&r.intended_us))
        .collect();
    let done: Vec<&Point> = points
        .iter()
        .filter(|r| r.ok && (lo..hi).contains(&r.end_us))
        .collect();
    let overlap: u64 = points
        .iter()
        .map(|r| r.end_us.min(hi).saturating_sub(r.intended_us.max(lo)))
        .sum();
    let quantile = |f: fn(&Point) -> Option<u32>, p: f64| {
        let mut h = new_histogram();
        sent.iter()
            .filter(|r| r.ok)
            .filter_map(|r| f(r))
            .for_each(|v| record_us(&mut h, u64::from(v)));
        Sample::from_hist(&h).quantile(p).map(|v| v / 1000.0)
    };
    let in_window: Vec<&GaugeSample> = gauges
        .iter()
        .filter(|(at_ms, _)| (lo as f64 / 1e3..hi as f64 / 1e3).contains(at_ms))
        .map(|(_, g)| *g)
        .collect();
    let mean = |f: fn(&GaugeSample) -> Option<f64>| {
        let v: Vec<f64> = in_window.iter().filter_map(|g| f(g)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    Window {
        start_s: (lo - t0) as f64 / 1e6,
        end_s: (hi - t0) as f64 / 1e6,
        sent: sent.len() as u64,
        errors: sent.iter().filter(|r| r.error).count() as u64,
        request_rps: done.len() as f64 / width_s,
        output_tps: done.iter().map(|r| u64::from(r.output_tokens)).sum::<u64>() as f64 / width_s,
        in_flight: overlap as f64 / (hi - lo) as f64,
        ttft_p50_ms: quantile(|r| r.ttft_us, 0.5),
        ttft_p95_ms: quantile(|r| r.ttft_us, 0.95),
        tpot_p50_ms: quantile(|r| r.tpot_us, 0.5),
        e2e_p50_ms: quantile(|r| r.e2e_us, 0.5),
        server_running: mean(|g| g.running),
        server_waiting: mean(|g| g.waiting),
        server_kv_usage: mean(|g| g.kv_usage),
    }
}

/// The steady state, or why there is none.
fn steady(points: &[Point], t0: u64) -> Result<SteadyState, String> {
    let mut ok: Vec<&Point> = points.iter().filter(|r| r.ok).collect();
    ok.sort_by_key(|r| (r.intended_us, r.index));
    let series: Vec<f64> = ok
        .iter()
        .filter_map(|r| r.e2e_us)
        .map(|v| v as f64)
        .collect();
    let cut = mser5(&series).ok_or_else(|| {
        format!(
            "{} successful requests: MSER-5 needs at least {}",
            series.len(),
            BATCH * MIN_BATCHES
        )
    })?;
    let start = ok[cut.min(ok.len() - 1)].intended_us;
    let end = points.iter().map(|r| r.intended_us).max().unwrap_or(start);
    if end <= start {
        return Err("the warm-up MSER-5 found lasts to the last send: no steady part".into());
    }
    let inside: Vec<&Point> = points
        .iter()
        .filter(|r| (start..=end).contains(&r.intended_us))
        .collect();
    let done: Vec<&&Point> = inside.iter().filter(|r| r.ok).collect();
    // Rates as (n − 1) over the span from the first to the last event: arrivals over their
    // sends, the same requests' completions over their ends. A server that keeps up completes
    // requests as they arrive, about one latency later, so the two spans match.
    let rate = |n: usize, lo: u64, hi: u64| {
        (n >= 2 && hi > lo).then(|| (n - 1) as f64 / ((hi - lo) as f64 / 1e6))
    };
    let span = |v: &mut dyn Iterator<Item = u64>| {
        v.fold((u64::MAX, 0), |(lo, hi), t| (lo.min(t), hi.max(t)))
    };
    let (s_lo, s_hi) = span(&mut inside.iter().map(|r| r.intended_us));
    let (e_lo, e_hi) = span(&mut done.iter().map(|r| r.end_us));
    let achieved = rate(done.len(), e_lo, e_hi).unwrap_or(0.0);
    let tokens: u64 = done.iter().map(|r| u64::from(r.output_tokens)).sum();
    Ok(SteadyState {
        method: "MSER-5 on E2E in intended-send order (warm-up); the last intended send (drain)"
            .into(),
        start_s: (start - t0) as f64 / 1e6,
        end_s: (end - t0) as f64 / 1e6,
        warmup_requests: points.iter().filter(|r| r.intended_us < start).count() as u64,
        requests: inside.len() as u64,
        offered_rps: rate(inside.len(), s_lo, s_hi).unwrap_or(0.0),
        achieved_rps: achieved,
        // The completions' tokens over the completions' span, as throughput is counted.
        output_tps: if done.len() >= 2 && e_hi > e_lo {
            tokens as f64 * (done.len() - 1) as f64
                / done.len() as f64
                / ((e_hi - e_lo) as f64 / 1e6)
        } else {
            0.0
        },
    })
}

/// The part of a stored run inside its steady state, as a run of its own: the measured
/// requests whose intended send falls in it, summarized again (the histograms from them;
/// the run's per-gap ITL is left out, which no gate judges). What `bench compare
/// --steady-state` judges. `Err` names why a run has no steady part (no records kept, too
/// few requests for MSER-5).
pub fn steady_only(
    run: &crate::model::result::RunResult,
) -> Result<crate::model::result::RunResult, String> {
    if run.requests_omitted > 0 {
        return Err(format!(
            "run {} kept no request records ({} requests, over --keep-records), and its steady state is found from them",
            run.run_id, run.requests_omitted
        ));
    }
    let measured: Vec<Point> = run.requests.iter().filter_map(Point::of).collect();
    let t0 = measured
        .iter()
        .map(|r| r.intended_us)
        .min()
        .ok_or_else(|| format!("run {} has no measured request", run.run_id))?;
    let s = steady(&measured, t0)
        .map_err(|why| format!("run {}: no steady state ({why})", run.run_id))?;
    let (lo, hi) = (
        t0 + (s.start_s * 1e6).round() as u64,
        t0 + (s.end_s * 1e6).round() as u64,
    );
    let kept: Vec<RequestRecord> = run
        .requests
        .iter()
        .filter(|r| !r.warmup && (lo..=hi).contains(&r.intended_us))
        .cloned()
        .collect();
    let sc = &run.scenario;
    let mut acc = super::summary::Accumulator::new(&sc.slo, sc.request.ignore_eos);
    kept.iter().for_each(|r| acc.add(r));
    let streams = crate::engine::runner::StreamStats::default();
    let (mut summary, hists) = acc.finish(super::summary::RunCounts {
        planned: Some(kept.len() as u64),
        not_sent: 0,
        peak_concurrency: run.summary.throughput.peak_concurrency,
        streams: &streams,
        sessions: None,
    });
    summary.latency.retain(|l| !l.name.per_gap());
    let mut histograms = hists.encode().map_err(|e| e.to_string())?;
    histograms.retain(|k, _| !k.starts_with("itl"));
    Ok(crate::model::result::RunResult {
        summary,
        histograms,
        requests: kept,
        ..run.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::record;

    /// `n` requests every 100 ms, each `e2e(i)` ms long, 10 output tokens.
    fn run(n: u64, e2e: impl Fn(u64) -> u64) -> Vec<Point> {
        (0..n)
            .map(|i| RequestRecord {
                intended_us: i * 100_000,
                sent_us: i * 100_000,
                end_us: i * 100_000 + e2e(i) * 1000,
                ttft_us: Some(e2e(i) * 500),
                e2e_us: Some(e2e(i) * 1000),
                output_tokens: 10,
                ..record(i, Outcome::Ok)
            })
            .filter_map(|r| Point::of(&r))
            .collect()
    }

    #[test]
    fn a_point_is_as_small_as_the_docs_say() {
        // docs/measurement.md and --keep-records' help quote it: a run keeps one a request.
        assert_eq!(std::mem::size_of::<Point>(), 56);
    }

    #[test]
    fn windows_count_what_was_sent_completed_and_in_flight() {
        // 100 requests over 10 s, each 200 ms: 2 in flight, 10 req/s, 100 tok/s.
        let w = compute(&run(100, |_| 200), 2.0, &[]).unwrap();
        assert_eq!(w.rows.len(), 6, "10.1 s of run in 2 s windows");
        let mid = &w.rows[2];
        assert_eq!((mid.sent, mid.errors), (20, 0));
        assert!((mid.request_rps - 10.0).abs() < 1e-9 && (mid.output_tps - 100.0).abs() < 1e-9);
        assert!((mid.in_flight - 2.0).abs() < 1e-9, "{}", mid.in_flight);
        assert_eq!(mid.e2e_p50_ms, Some(200.0));
        assert_eq!(w.rows.iter().map(|r| r.sent).sum::<u64>(), 100);
    }

    #[test]
    fn a_long_run_in_narrow_windows_is_cut_into_at_most_max_windows() {
        // 3,000 requests over 300 s in 10 ms windows would be 30,000 windows.
        let w = compute(&run(3000, |_| 200), MIN_WIDTH_S, &[]).unwrap();
        assert!(w.rows.len() as u64 <= MAX_WINDOWS, "{}", w.rows.len());
        assert_eq!(w.asked_width_s, Some(MIN_WIDTH_S));
        assert!(
            (w.width_s - 0.04).abs() < 1e-9,
            "a whole number of 10 ms: {}",
            w.width_s
        );
        assert_eq!(w.rows.iter().map(|r| r.sent).sum::<u64>(), 3000);
        let ok = compute(&run(100, |_| 200), 2.0, &[]).unwrap();
        assert_eq!((ok.width_s, ok.asked_width_s), (2.0, None));
    }

    #[test]
    fn a_cold_start_is_cut_and_the_drain_left_out() {
        // The first 30 requests are slow (a cold cache), the rest 200 ms.
        let w = compute(
            &run(300, |i| if i < 30 { 1000 - i * 25 } else { 200 }),
            10.0,
            &[],
        )
        .unwrap();
        let s = w.steady.unwrap();
        assert!((20..=45).contains(&s.warmup_requests), "{s:?}");
        assert!((s.end_s - 29.9).abs() < 1e-9, "ends at the last send");
        assert!(
            (s.offered_rps - 10.0).abs() < 0.2 && (s.achieved_rps - 10.0).abs() < 0.3,
            "{s:?}"
        );
        let short = compute(&run(20, |_| 200), 10.0, &[]).unwrap();
        assert!(short.steady.is_none() && short.steady_missing.unwrap().contains("MSER-5"));
    }
}
