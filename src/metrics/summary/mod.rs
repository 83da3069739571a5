//! Records → the numbers a report shows: counts, tokens, throughput and latency summaries.
//!
//! Definitions are [`Latency::definition`] (`docs/measurement.md` maps peers' names
//! onto them). Latencies use successful measured requests only (warmup and errors excluded;
//! errors are counted by kind instead); send lag and queue use every measured request. Each
//! latency is an HDR histogram in µs (3 significant digits), and every figure shown — mean,
//! min, max, percentiles — comes from it through the one estimator of
//! [`super::quantile`] (type 7 at HDR resolution), the same the gate uses. Raw per-request
//! values stay in `run.json`. Throughputs divide by the measured window: from the earliest
//! intended send to the latest end among measured requests.

mod accumulate;

pub use accumulate::{Accumulator, RunCounts};

use super::quantile::Sample;
use crate::engine::runner::RunData;
use crate::error::BenchError;
use crate::model::hist::{self, new_histogram, record_us};
use crate::model::metric::{Latency, Turns};
use crate::model::record::RequestRecord;
use crate::model::result::RunResult;
use crate::model::scenario::Slo;
use crate::model::summary::*;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The histograms behind a summary, µs.
pub struct Histograms {
    pub by_metric: BTreeMap<Latency, Histogram<u64>>,
    /// A conversation run's gated latencies by (latency, turn): what gates a turn scope
    /// (`ttft.p50@turn2+`) on a run that kept no records.
    pub by_turn: BTreeMap<(Latency, u32), Histogram<u64>>,
}

impl Histograms {
    /// As `run.json` stores them: by [`Latency::hist_key`] (`ttft_us`, and `ttft_us@turn2`
    /// for a turn), V2 + deflate, base64.
    pub fn encode(&self) -> Result<BTreeMap<String, String>, BenchError> {
        let keyed = self
            .by_metric
            .iter()
            .map(|(m, h)| (m.hist_key().to_string(), h))
            .chain(
                self.by_turn
                    .iter()
                    .map(|((m, t), h)| (turn_hist_key(*m, *t), h)),
            );
        keyed
            .map(|(k, h)| hist::encode(h).map(|s| (k, s)).map_err(BenchError::Runtime))
            .collect()
    }
}

/// The key of turn `t`'s histogram of `m` in `run.json` (`ttft_us@turn2`).
fn turn_hist_key(m: Latency, t: u32) -> String {
    format!("{}@turn{t}", m.hist_key())
}

/// A request's value of a per-request latency, µs (`None` for ITL, which has one per gap,
/// and for a value the request does not have).
pub fn per_request_us(r: &RequestRecord, m: Latency) -> Option<u64> {
    match m {
        Latency::Ttft => r.ttft_us,
        Latency::Tpot => r.tpot_us.map(|t| t.round() as u64),
        Latency::E2e => r.e2e_us,
        Latency::SendLag => Some(r.send_lag_us),
        Latency::Queue => Some(r.queue_us),
        Latency::Ttfo if r.stream.reasoning_chunks > 0 => r.stream.ttfo_us,
        Latency::Ttfo => r.ttft_us,
        Latency::AnswerTpot if r.stream.reasoning_chunks > 0 => {
            r.stream.answer_tpot_us.map(|t| t.round() as u64)
        }
        Latency::AnswerTpot => r.tpot_us.map(|t| t.round() as u64),
        Latency::Prefill => r.server.and_then(|s| s.prefill_us),
        Latency::ToolCall => r.stream.tool_call_us,
        Latency::ToolArgs => r.stream.tool_args_us,
        // A prefill longer than the TTFT timed here (clocks that disagree) has no rest; the
        // summary counts such requests (`server_clock.prefill_over_ttft`).
        Latency::TtftRest => r.ttft_us?.checked_sub(r.server?.prefill_us?),
        Latency::Itl | Latency::ItlToken => None,
    }
}

/// Whether a record's value counts for `m`: measured requests, and only successful ones for
/// what the server produced (a failed request's TTFT is not a TTFT).
fn counts_for(r: &RequestRecord, m: Latency) -> bool {
    !r.warmup && (matches!(m, Latency::SendLag | Latency::Queue) || r.outcome.is_ok())
}

/// The histogram of a per-request latency over `records`.
pub fn histogram(records: &[RequestRecord], m: Latency) -> Histogram<u64> {
    histogram_in(records, m, None)
}

/// [`histogram`] over the records of some turns (all of them when `turns` is `None`).
fn histogram_in(records: &[RequestRecord], m: Latency, turns: Option<Turns>) -> Histogram<u64> {
    let mut h = new_histogram();
    for r in records
        .iter()
        .filter(|r| counts_for(r, m) && in_turns(r, turns))
    {
        if let Some(v) = per_request_us(r, m) {
            record_us(&mut h, v);
        }
    }
    h
}

/// A stored run's values of `m` at HDR resolution: from its records, or from its stored
/// histogram for ITL and for a run that kept no records (over `--keep-records`; the same
/// values, since the histograms are built from every record). The gate, `bench stack` and
/// the reports read runs through this, so they see the numbers the run's own summary was
/// made from.
pub fn sample(run: &RunResult, m: Latency) -> Sample {
    sample_in(run, m, None)
}

/// [`sample`] over some turns of a conversation run (all requests when `turns` is `None`;
/// none for a run that is not a conversation).
pub fn sample_in(run: &RunResult, m: Latency, turns: Option<Turns>) -> Sample {
    if m.per_gap() || run.requests_omitted > 0 {
        let stored = |key: &str| run.histograms.get(key).and_then(|h| hist::decode(h).ok());
        let Some(t) = turns else {
            return stored(m.hist_key())
                .map(|h| Sample::from_hist(&h))
                .unwrap_or_default();
        };
        let mut all = new_histogram();
        for (key, text) in &run.histograms {
            let turn = key
                .strip_prefix(m.hist_key())
                .and_then(|k| k.strip_prefix("@turn"))
                .and_then(|n| n.parse::<u32>().ok());
            if let (Some(n), Ok(h)) = (turn, hist::decode(text)) {
                if t.contains(n) {
                    // Same bounds and precision: adding cannot fail.
                    let _ = all.add(&h);
                }
            }
        }
        return Sample::from_hist(&all);
    }
    Sample::from_hist(&histogram_in(&run.requests, m, turns))
}

/// Whether a record is in the turn scope (every record when there is none).
fn in_turns(r: &RequestRecord, turns: Option<Turns>) -> bool {
    turns.is_none_or(|t| r.turn.is_some_and(|n| t.contains(n)))
}

/// A stored run's values of a per-request latency `m` (not ITL) at HDR resolution, in the
/// order the requests were planned — what `verdict::mode` reads a run's split from.
pub fn ordered(run: &RunResult, m: Latency) -> Vec<f64> {
    ordered_in(run, m, None)
}

/// [`ordered`] over some turns of a conversation run.
fn ordered_in(run: &RunResult, m: Latency, turns: Option<Turns>) -> Vec<f64> {
    let h = new_histogram();
    let mut rs: Vec<&RequestRecord> = run
        .requests
        .iter()
        .filter(|r| counts_for(r, m) && in_turns(r, turns))
        .collect();
    rs.sort_by_key(|r| r.index);
    rs.into_iter()
        .filter_map(|r| per_request_us(r, m))
        .map(|v| h.median_equivalent(v) as f64)
        .collect()
}

/// Builds the histograms and the summary of a run from its records.
pub fn summarize(data: &RunData, slo: &Slo, ignore_eos: bool) -> (Summary, Histograms) {
    let mut acc = Accumulator::new(slo, ignore_eos);
    data.records.iter().for_each(|r| acc.add(r));
    acc.finish(RunCounts::of(data))
}

/// Whether a successful request met every SLO that is set (TPOT is not checked for a
/// one-token output, which has none).
pub fn meets_slo(r: &RequestRecord, slo: &Slo) -> bool {
    let within = |v: Option<f64>, limit_ms: Option<f64>| match (v, limit_ms) {
        (_, None) => true,
        (Some(us), Some(ms)) => us <= ms * 1000.0,
        (None, Some(_)) => false,
    };
    within(r.ttft_us.map(|v| v as f64), slo.ttft_ms)
        && within(r.e2e_us.map(|v| v as f64), slo.e2e_ms)
        && (r.tpot_us.is_none() || within(r.tpot_us, slo.tpot_ms))
}

/// A latency's summary in ms, every figure from `sample` (zeros when it is empty).
pub fn latency_summary(m: Latency, sample: &Sample) -> LatencySummary {
    let ms = |v: Option<f64>| v.unwrap_or(0.0) / 1000.0;
    let q = |p: f64| ms(sample.quantile(p));
    LatencySummary {
        name: m,
        unit: "ms".into(),
        definition: m.definition().to_string(),
        count: sample.len() as u64,
        mean: ms(sample.mean()),
        min: ms(sample.min()),
        p50: q(0.50),
        p90: q(0.90),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: ms(sample.max()),
    }
}

#[cfg(test)]
mod tests;
