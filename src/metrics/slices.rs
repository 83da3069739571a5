//! A run's steady state, found from per-slice aggregates gathered as requests finish (memory
//! bounded by [`MAX_SLICES`], never by the run's length).
//!
//! The run's clock is cut into slices ([`SLICE_US`] wide, widened by [`super::grid`] to at
//! most [`MAX_SLICES`]); each measured request counts in the slice of its intended send. The
//! successful requests' E2E, slice by slice in time order, are gathered into batches of at
//! least [`BATCH`] (whole slices, the first slice of each batch remembered), and MSER
//! ([`super::steady::mser_cut`]) over the batch means cuts the warm-up: with slices of at most
//! one request this is MSER-5 over the requests in intended-send order; a run so dense that a
//! slice holds more gets batches of one slice each (MSER over slice means). The steady state
//! starts at the start of the cut batch's first slice and ends at the last intended send
//! (after it no request arrives and the run only drains). Inside it — the measured requests
//! whose intended send is at or after its start — the offered load is (n − 1) over the span
//! of their intended sends and the served load (n − 1) over the span of the successful ones'
//! completions.

use super::grid::{Cell, Grid};
use super::steady::{mser_cut, BATCH, MIN_BATCHES};
use crate::model::record::RequestRecord;
use crate::model::windows::SteadyState;

/// Width of a slice before any widening, µs: 1 ms, so that at up to a thousand requests a
/// second a slice holds at most about one.
const SLICE_US: u64 = 1_000;

/// The most slices a run is cut into (≈ 0.5 MB however long the run).
const MAX_SLICES: u64 = 8_192;

/// How the steady state is found, as a result states it.
const METHOD: &str =
    "MSER-5 on E2E in intended-send order (warm-up); the last intended send (drain)";

/// What the search keeps of the measured requests meant to be sent in one slice.
#[derive(Debug, Clone)]
struct Slice {
    sent: u64,
    first_intended_us: u64,
    last_intended_us: u64,
    /// The successful ones: their count, E2E (count and sum, µs), completion span and tokens.
    ok: u64,
    e2e_n: u64,
    e2e_sum_us: u64,
    ok_first_end_us: u64,
    ok_last_end_us: u64,
    ok_tokens: u64,
}

impl Default for Slice {
    fn default() -> Slice {
        Slice {
            sent: 0,
            first_intended_us: u64::MAX,
            last_intended_us: 0,
            ok: 0,
            e2e_n: 0,
            e2e_sum_us: 0,
            ok_first_end_us: u64::MAX,
            ok_last_end_us: 0,
            ok_tokens: 0,
        }
    }
}

impl Cell for Slice {
    fn absorb(&mut self, o: Slice) {
        self.sent += o.sent;
        self.first_intended_us = self.first_intended_us.min(o.first_intended_us);
        self.last_intended_us = self.last_intended_us.max(o.last_intended_us);
        self.ok += o.ok;
        self.e2e_n += o.e2e_n;
        self.e2e_sum_us += o.e2e_sum_us;
        self.ok_first_end_us = self.ok_first_end_us.min(o.ok_first_end_us);
        self.ok_last_end_us = self.ok_last_end_us.max(o.ok_last_end_us);
        self.ok_tokens += o.ok_tokens;
    }
}

/// The steady-state search of one run, fed its measured requests in any order.
#[derive(Debug, Clone)]
pub struct SteadySearch {
    grid: Grid<Slice>,
}

impl Default for SteadySearch {
    fn default() -> SteadySearch {
        SteadySearch {
            grid: Grid::new(SLICE_US, MAX_SLICES),
        }
    }
}

impl SteadySearch {
    /// Counts one measured (not warm-up) request.
    pub fn add(&mut self, r: &RequestRecord) {
        let s = self.grid.at(r.intended_us);
        s.sent += 1;
        s.first_intended_us = s.first_intended_us.min(r.intended_us);
        s.last_intended_us = s.last_intended_us.max(r.intended_us);
        if r.outcome.is_ok() {
            s.ok += 1;
            s.ok_first_end_us = s.ok_first_end_us.min(r.end_us);
            s.ok_last_end_us = s.ok_last_end_us.max(r.end_us);
            s.ok_tokens += r.output_tokens;
            if let Some(e2e) = r.e2e_us {
                s.e2e_n += 1;
                s.e2e_sum_us += e2e;
            }
        }
    }

    /// The steady state, or why there is none.
    pub fn finish(&self) -> Result<SteadyState, String> {
        let slices: Vec<(u64, &Slice)> = self.grid.cells().collect();
        // Batches of at least BATCH successful requests, whole slices each: (mean E2E, index
        // of the batch's first slice).
        let mut batches: Vec<(f64, usize)> = Vec::new();
        let (mut n, mut sum, mut first) = (0u64, 0u64, 0usize);
        for (i, (_, s)) in slices.iter().enumerate() {
            if n == 0 {
                first = i;
            }
            n += s.e2e_n;
            sum += s.e2e_sum_us;
            if n >= BATCH as u64 {
                batches.push((sum as f64 / n as f64, first));
                (n, sum) = (0, 0);
            }
        }
        let means: Vec<f64> = batches.iter().map(|b| b.0).collect();
        let successes: u64 = slices.iter().map(|(_, s)| s.e2e_n).sum();
        let cut = mser_cut(&means).ok_or_else(|| {
            format!(
                "{successes} successful requests in {} batches: MSER-5 needs at least {} batches of {BATCH}",
                batches.len(),
                MIN_BATCHES
            )
        })?;
        let from = batches[cut].1;
        let start = slices[from].0;
        let end = slices
            .iter()
            .map(|(_, s)| s.last_intended_us)
            .max()
            .unwrap_or(start);
        if end <= start {
            return Err("the warm-up MSER-5 found lasts to the last send: no steady part".into());
        }
        let (before, inside) = slices.split_at(from);
        let sum = |f: fn(&Slice) -> u64| inside.iter().map(|(_, s)| f(s)).sum::<u64>();
        let (requests, done, tokens) = (sum(|s| s.sent), sum(|s| s.ok), sum(|s| s.ok_tokens));
        let s_lo = inside.iter().map(|(_, s)| s.first_intended_us).min();
        let e_lo = inside.iter().map(|(_, s)| s.ok_first_end_us).min();
        let e_hi = inside.iter().map(|(_, s)| s.ok_last_end_us).max();
        // Rates as (n − 1) over the span from the first to the last event: arrivals over their
        // sends, the same requests' completions over their ends. A server that keeps up
        // completes requests as they arrive, about one latency later, so the two spans match.
        let span_s = |lo: Option<u64>, hi: Option<u64>| match (lo, hi) {
            (Some(lo), Some(hi)) if hi > lo && lo != u64::MAX => Some((hi - lo) as f64 / 1e6),
            _ => None,
        };
        let rate = |n: u64, span: Option<f64>| match span {
            Some(s) if n >= 2 => (n - 1) as f64 / s,
            _ => 0.0,
        };
        let completions = span_s(e_lo, e_hi);
        Ok(SteadyState {
            method: METHOD.into(),
            start_s: start as f64 / 1e6,
            end_s: end as f64 / 1e6,
            warmup_requests: before.iter().map(|(_, s)| s.sent).sum(),
            requests,
            offered_rps: rate(requests, span_s(s_lo, Some(end))),
            achieved_rps: rate(done, completions),
            // The completions' tokens over the completions' span, as throughput is counted.
            output_tps: match completions {
                Some(s) if done >= 2 => tokens as f64 * (done - 1) as f64 / done as f64 / s,
                _ => 0.0,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::record;
    use rand::Rng;

    fn req(i: u64, intended_us: u64, e2e_us: u64) -> RequestRecord {
        RequestRecord {
            intended_us,
            end_us: intended_us + e2e_us,
            e2e_us: Some(e2e_us),
            output_tokens: 4,
            ..record(i, Outcome::Ok)
        }
    }

    #[test]
    fn with_a_request_a_slice_the_cut_is_mser5_over_the_requests_in_send_order() {
        let mut rng = crate::testkit::rng(5);
        // 400 requests 20 ms apart, the first 60 slower and slower to settle.
        let e2e: Vec<u64> = (0..400u64)
            .map(|i| 100_000 + 3_000 * 60u64.saturating_sub(i) + rng.random_range(0..5_000))
            .collect();
        let mut search = SteadySearch::default();
        // Handed over in the order they finished, not the order they were sent.
        let mut order: Vec<u64> = (0..400).collect();
        order.sort_by_key(|&i| i * 20_000 + e2e[i as usize]);
        order
            .iter()
            .for_each(|&i| search.add(&req(i, i * 20_000, e2e[i as usize])));
        let s = search.finish().unwrap();
        let series: Vec<f64> = e2e.iter().map(|&v| v as f64).collect();
        let cut = super::super::steady::mser5(&series).unwrap() as u64;
        assert_eq!(s.warmup_requests, cut);
        assert_eq!(s.start_s, (cut * 20_000) as f64 / 1e6);
        assert_eq!(s.requests, 400 - cut);
        assert!((s.offered_rps - 50.0).abs() < 1e-9, "{s:?}");
        assert_eq!(s.end_s, 399.0 * 0.02);
    }

    #[test]
    fn a_dense_run_is_searched_in_bounded_slices() {
        // 200,000 requests over 100 s, 2 a millisecond; the first 10 s slow (a cold cache).
        let mut search = SteadySearch::default();
        for i in 0..200_000u64 {
            let t = i * 500;
            search.add(&req(i, t, if t < 10_000_000 { 400_000 } else { 100_000 }));
        }
        assert!(search.grid.cells().count() as u64 <= MAX_SLICES);
        let s = search.finish().unwrap();
        assert!((9.9..=10.1).contains(&s.start_s), "{s:?}");
        assert!((s.offered_rps - 2000.0).abs() < 1.0, "{s:?}");
        assert_eq!(s.warmup_requests + s.requests, 200_000);
    }
}
