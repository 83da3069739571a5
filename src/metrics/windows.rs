//! A run in time windows ([`WIDTH_S`] by default, `--window`) and its steady state, gathered
//! by a [`Timeline`] as requests finish, in memory that depends on the number of windows and
//! never on the number of requests (a run past `--keep-records` has the same windows as one
//! that kept them: a stored run's are rebuilt from its records by the same code, [`of_run`]).
//!
//! Windows are `[k·w, (k+1)·w)` on the run's clock (s from its start; the first row is the
//! window of the first measured send, the last that of the last completion). A request counts
//! in the window of its intended send for what was *sent* (requests, errors, latency
//! quantiles) and in the window of its end for what was *completed* (throughput), since
//! throughput is completions over time. Requests in flight are time-weighted: each request's
//! intended-send → end interval, overlapped with the window, summed, over the width (Little's
//! law's L), computed exactly from per-window counts and sums of the sends and ends. The
//! latency quantiles come from a DDSketch per window (±1 % of the value), the server's gauges
//! are the mean of the scrapes inside each window. A run that would need more than
//! [`MAX_WINDOWS`] has its width doubled until it fits ([`super::grid`]). The steady state is
//! found by [`super::slices`]; [`steady_only`] cuts a stored run down to it (`bench compare
//! --steady-state`).

use super::grid::{Cell, Grid};
use super::slices::SteadySearch;
use crate::model::record::{Outcome, RequestRecord};
use crate::model::server::{GaugeSample, ServerMetrics};
use crate::model::values::Values;
use crate::model::windows::{Window, Windows, MAX_WINDOWS, MIN_WIDTH_S};
use sketches_ddsketch::{Config, DDSketch};

/// Default window width, s (`--window`).
pub const WIDTH_S: f64 = 10.0;

/// A latency distribution of one window, µs (empty until a value comes).
#[derive(Clone, Default)]
struct Sketch(Option<DDSketch>);

impl std::fmt::Debug for Sketch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.as_ref().map_or(0, DDSketch::count);
        write!(f, "Sketch({n} values)")
    }
}

impl Sketch {
    fn add(&mut self, v: f64) {
        self.0
            .get_or_insert_with(|| DDSketch::new(Config::defaults()))
            .add(v);
    }

    fn merge(&mut self, o: Sketch) {
        match (&mut self.0, o.0) {
            (Some(a), Some(b)) => a.merge(&b).expect("sketches of one config merge"),
            (None, b) => self.0 = b,
            (Some(_), None) => {}
        }
    }

    /// The `q` quantile, ms.
    fn quantile_ms(&self, q: f64) -> Option<f64> {
        self.0
            .as_ref()?
            .quantile(q)
            .ok()
            .flatten()
            .map(|v| v / 1000.0)
    }
}

/// What one window gathers.
#[derive(Debug, Clone, Default)]
struct WindowCell {
    /// Measured requests meant to be sent in the window, the failed ones among them, and the
    /// sum of their intended sends (µs).
    sent: u64,
    errors: u64,
    sends_sum_us: u128,
    /// Measured requests that ended in the window and the sum of their ends (µs); the
    /// successful ones among them and their output tokens.
    ended: u64,
    ends_sum_us: u128,
    done: u64,
    done_tokens: u64,
    /// The successful requests sent in the window.
    ttft: Sketch,
    tpot: Sketch,
    e2e: Sketch,
}

impl Cell for WindowCell {
    fn absorb(&mut self, o: WindowCell) {
        self.sent += o.sent;
        self.errors += o.errors;
        self.sends_sum_us += o.sends_sum_us;
        self.ended += o.ended;
        self.ends_sum_us += o.ends_sum_us;
        self.done += o.done;
        self.done_tokens += o.done_tokens;
        self.ttft.merge(o.ttft);
        self.tpot.merge(o.tpot);
        self.e2e.merge(o.e2e);
    }
}

/// A run's windows and steady-state search, fed each measured request as it finishes.
#[derive(Debug, Clone)]
pub struct Timeline {
    asked_width_s: f64,
    windows: Grid<WindowCell>,
    steady: SteadySearch,
}

impl Timeline {
    /// Windows `width_s` wide (at least [`MIN_WIDTH_S`]).
    pub fn new(width_s: f64) -> Timeline {
        let width_us = (width_s.max(MIN_WIDTH_S) * 1e6).round() as u64;
        Timeline {
            asked_width_s: width_s,
            windows: Grid::new(width_us, MAX_WINDOWS),
            steady: SteadySearch::default(),
        }
    }

    /// Counts a request; warm-up ones are left out.
    pub fn add(&mut self, r: &RequestRecord) {
        if r.warmup {
            return;
        }
        let ok = r.outcome.is_ok();
        let sent = self.windows.at(r.intended_us);
        sent.sent += 1;
        sent.errors += u64::from(!ok && r.outcome != Outcome::Aborted);
        sent.sends_sum_us += u128::from(r.intended_us);
        if ok {
            r.ttft_us.inspect(|v| sent.ttft.add(*v as f64));
            r.tpot_us.inspect(|v| sent.tpot.add(*v));
            r.e2e_us.inspect(|v| sent.e2e.add(*v as f64));
        }
        let end_us = r.end_us.max(r.intended_us);
        let ended = self.windows.at(end_us);
        ended.ended += 1;
        ended.ends_sum_us += u128::from(end_us);
        if ok {
            ended.done += 1;
            ended.done_tokens += r.output_tokens;
        }
        self.steady.add(r);
    }

    /// The windows, with the server's `gauges` placed by their time in ms from the run's
    /// start; `None` without a measured request.
    pub fn finish(self, gauges: &[(f64, &GaugeSample)]) -> Option<Windows> {
        let width_us = self.windows.width_us();
        let steady = self.steady.finish();
        let cells = self.windows.into_dense();
        if cells.is_empty() {
            return None;
        }
        // Σ over requests of their time in flight up to b: b·(sends before b) − Σ those sends
        // − b·(ends before b) + Σ those ends, so each window's overlap is G(hi) − G(lo).
        let (mut sends, mut sends_sum, mut ends, mut ends_sum) = (0i128, 0i128, 0i128, 0i128);
        let g = |b: u64, sends: i128, sends_sum: i128, ends: i128, ends_sum: i128| {
            let b = i128::from(b);
            b * sends - sends_sum - b * ends + ends_sum
        };
        let rows = cells
            .into_iter()
            .map(|(lo, c)| {
                let hi = lo + width_us;
                let before = g(lo, sends, sends_sum, ends, ends_sum);
                sends += i128::from(c.sent);
                sends_sum += c.sends_sum_us as i128;
                ends += i128::from(c.ended);
                ends_sum += c.ends_sum_us as i128;
                let overlap = g(hi, sends, sends_sum, ends, ends_sum) - before;
                row(lo, hi, &c, overlap as f64, gauges)
            })
            .collect();
        let width_s = width_us as f64 / 1e6;
        Some(Windows {
            width_s,
            asked_width_s: (width_s > self.asked_width_s.max(MIN_WIDTH_S) * 1.000_001)
                .then_some(self.asked_width_s),
            rows,
            steady: steady.as_ref().ok().cloned(),
            steady_missing: steady.err(),
        })
    }
}

/// [`of_records`] for a run whose clock started at `started_at`: the server's gauges placed
/// on the requests' clock (ms from the run's start).
pub fn of_run(
    records: &[RequestRecord],
    server: Option<&ServerMetrics>,
    started_at: chrono::DateTime<chrono::Utc>,
    width_s: f64,
) -> Option<Windows> {
    let mut t = Timeline::new(width_s);
    records.iter().for_each(|r| t.add(r));
    finish_at(t, server, started_at)
}

/// A timeline's windows, the server's gauges placed on the run's clock.
pub fn finish_at(
    t: Timeline,
    server: Option<&ServerMetrics>,
    started_at: chrono::DateTime<chrono::Utc>,
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
    t.finish(&gauges)
}

fn row(
    lo: u64,
    hi: u64,
    c: &WindowCell,
    overlap_us: f64,
    gauges: &[(f64, &GaugeSample)],
) -> Window {
    let width_s = (hi - lo) as f64 / 1e6;
    let in_window: Vec<&GaugeSample> = gauges
        .iter()
        .filter(|(at_ms, _)| (lo as f64 / 1e3..hi as f64 / 1e3).contains(at_ms))
        .map(|(_, g)| *g)
        .collect();
    let mean = |f: fn(&GaugeSample) -> Option<f64>| {
        in_window
            .iter()
            .filter_map(|g| f(g))
            .collect::<Values>()
            .mean()
    };
    Window {
        start_s: lo as f64 / 1e6,
        end_s: hi as f64 / 1e6,
        sent: c.sent,
        errors: c.errors,
        request_rps: c.done as f64 / width_s,
        output_tps: c.done_tokens as f64 / width_s,
        in_flight: overlap_us / (hi - lo) as f64,
        ttft_p50_ms: c.ttft.quantile_ms(0.5),
        ttft_p95_ms: c.ttft.quantile_ms(0.95),
        tpot_p50_ms: c.tpot.quantile_ms(0.5),
        e2e_p50_ms: c.e2e.quantile_ms(0.5),
        server_running: mean(|g| g.running),
        server_waiting: mean(|g| g.waiting),
        server_kv_usage: mean(|g| g.kv_usage),
    }
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
    let mut search = SteadySearch::default();
    let measured = run.requests.iter().filter(|r| !r.warmup);
    measured.clone().for_each(|r| search.add(r));
    if measured.clone().next().is_none() {
        return Err(format!("run {} has no measured request", run.run_id));
    }
    let s = search
        .finish()
        .map_err(|why| format!("run {}: no steady state ({why})", run.run_id))?;
    let (lo, hi) = (
        (s.start_s * 1e6).round() as u64,
        (s.end_s * 1e6).round() as u64,
    );
    let kept: Vec<RequestRecord> = measured
        .filter(|r| (lo..=hi).contains(&r.intended_us))
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
    use rand::seq::SliceRandom;
    use rand::Rng;

    /// `n` requests every 100 ms, each `e2e(i)` ms long, 10 output tokens.
    fn run(n: u64, e2e: impl Fn(u64) -> u64) -> Vec<RequestRecord> {
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
            .collect()
    }

    fn compute(records: &[RequestRecord], width_s: f64) -> Option<Windows> {
        let mut t = Timeline::new(width_s);
        records.iter().for_each(|r| t.add(r));
        t.finish(&[])
    }

    #[test]
    fn windows_count_what_was_sent_completed_and_in_flight() {
        // 100 requests over 10 s, each 200 ms: 2 in flight, 10 req/s, 100 tok/s.
        let w = compute(&run(100, |_| 200), 2.0).unwrap();
        assert_eq!(w.rows.len(), 6, "10.1 s of run in 2 s windows");
        let mid = &w.rows[2];
        assert_eq!((mid.sent, mid.errors), (20, 0));
        assert!((mid.request_rps - 10.0).abs() < 1e-9 && (mid.output_tps - 100.0).abs() < 1e-9);
        assert!((mid.in_flight - 2.0).abs() < 1e-9, "{}", mid.in_flight);
        let e2e = mid.e2e_p50_ms.unwrap();
        assert!((e2e - 200.0).abs() <= 2.0, "within the sketch's 1 %: {e2e}");
        assert_eq!(w.rows.iter().map(|r| r.sent).sum::<u64>(), 100);
    }

    /// Every window's counts and in-flight figure, request by request, as the docs define them.
    fn oracle(records: &[RequestRecord], w: &Windows) {
        let us = |s: f64| (s * 1e6).round() as u64;
        for row in &w.rows {
            let (lo, hi) = (us(row.start_s), us(row.end_s));
            let m = records.iter().filter(|r| !r.warmup);
            let sent: Vec<_> = m
                .clone()
                .filter(|r| (lo..hi).contains(&r.intended_us))
                .collect();
            assert_eq!(row.sent, sent.len() as u64);
            let errors = sent
                .iter()
                .filter(|r| !r.outcome.is_ok() && r.outcome != Outcome::Aborted)
                .count();
            assert_eq!(row.errors, errors as u64);
            let done = m
                .clone()
                .filter(|r| r.outcome.is_ok() && (lo..hi).contains(&r.end_us))
                .count();
            let width_s = (hi - lo) as f64 / 1e6;
            assert!((row.request_rps - done as f64 / width_s).abs() < 1e-9);
            let overlap: u64 = m
                .map(|r| r.end_us.min(hi).saturating_sub(r.intended_us.max(lo)))
                .sum();
            let in_flight = overlap as f64 / (hi - lo) as f64;
            assert!(
                (row.in_flight - in_flight).abs() < 1e-9,
                "{row:?} vs {in_flight}"
            );
        }
    }

    #[test]
    fn windows_from_aggregates_match_each_request_counted_by_hand_in_any_order() {
        let mut rng = crate::testkit::rng(11);
        let mut records: Vec<RequestRecord> = (0..2_000u64)
            .map(|i| {
                let intended = 3_000_000 + i * 7_000 + rng.random_range(0..5_000);
                let outcome = match rng.random_range(0..20) {
                    0 => Outcome::TimeoutTotal,
                    1 => Outcome::Aborted,
                    _ => Outcome::Ok,
                };
                RequestRecord {
                    warmup: i < 50,
                    intended_us: intended,
                    end_us: intended + rng.random_range(1_000..4_000_000),
                    e2e_us: Some(1_000),
                    ..record(i, outcome)
                }
            })
            .collect();
        let w = compute(&records, 0.5).unwrap();
        oracle(&records, &w);
        assert_eq!(w.rows.iter().map(|r| r.sent).sum::<u64>(), 1_950);
        assert_eq!(w.rows[0].start_s, 3.0, "windows lie on the run's clock");
        records.shuffle(&mut rng);
        assert_eq!(
            compute(&records, 0.5),
            Some(w),
            "the order requests finish in changes nothing"
        );
        // Widened to fit: 14 s of run in 1 ms windows is 14,000 of them.
        let narrow = compute(&records, 0.001).unwrap();
        assert!(narrow.rows.len() as u64 <= MAX_WINDOWS);
        oracle(&records, &narrow);
    }

    #[test]
    fn a_long_run_in_narrow_windows_is_cut_into_at_most_max_windows() {
        // 3,000 requests over 300 s in 10 ms windows would be 30,000 windows.
        let w = compute(&run(3000, |_| 200), MIN_WIDTH_S).unwrap();
        assert!(w.rows.len() as u64 <= MAX_WINDOWS, "{}", w.rows.len());
        assert_eq!(w.asked_width_s, Some(MIN_WIDTH_S));
        assert!(
            (w.width_s - 0.04).abs() < 1e-9,
            "a whole number of 10 ms: {}",
            w.width_s
        );
        assert_eq!(w.rows.iter().map(|r| r.sent).sum::<u64>(), 3000);
        let ok = compute(&run(100, |_| 200), 2.0).unwrap();
        assert_eq!((ok.width_s, ok.asked_width_s), (2.0, None));
    }

    #[test]
    fn a_cold_start_is_cut_and_the_drain_left_out() {
        // The first 30 requests are slow (a cold cache), the rest 200 ms.
        let records = run(300, |i| if i < 30 { 1000 - i * 25 } else { 200 });
        let w = compute(&records, 10.0).unwrap();
        let s = w.steady.unwrap();
        assert!((20..=45).contains(&s.warmup_requests), "{s:?}");
        assert!((s.end_s - 29.9).abs() < 1e-9, "ends at the last send");
        assert!(
            (s.offered_rps - 10.0).abs() < 0.2 && (s.achieved_rps - 10.0).abs() < 0.3,
            "{s:?}"
        );
        let short = compute(&run(20, |_| 200), 10.0).unwrap();
        assert!(short.steady.is_none() && short.steady_missing.unwrap().contains("MSER-5"));
    }
}
