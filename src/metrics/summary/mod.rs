//! Records → the numbers a report shows: counts, tokens, throughput and latency summaries.
//!
//! Definitions are [`Latency::definition`] (DOMAIN.md; `docs/metrics.md` maps peers' names
//! onto them). Latencies use successful measured requests only (warmup and errors excluded;
//! errors are counted by kind instead); send lag and queue use every measured request. Each
//! latency is an HDR histogram in µs (3 significant digits), and every figure shown — mean,
//! min, max, percentiles — comes from it through the one estimator of
//! [`super::quantile`] (type 7 at HDR resolution), the same the gate uses. Raw per-request
//! values stay in `run.json`. Throughputs divide by the measured window: from the earliest
//! intended send to the latest end among measured requests.

use super::quantile::Sample;
use crate::engine::runner::RunData;
use crate::error::BenchError;
use crate::model::hist::{self, new_histogram, record_us};
use crate::model::metric::Latency;
use crate::model::record::{Outcome, RequestRecord};
use crate::model::result::RunResult;
use crate::model::scenario::Slo;
use crate::model::summary::*;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// The histograms behind a summary, µs.
pub struct Histograms {
    pub by_metric: BTreeMap<Latency, Histogram<u64>>,
}

impl Histograms {
    /// As `run.json` stores them: by [`Latency::hist_key`], V2 + deflate, base64.
    pub fn encode(&self) -> Result<BTreeMap<String, String>, BenchError> {
        self.by_metric
            .iter()
            .map(|(m, h)| {
                hist::encode(h)
                    .map(|s| (m.hist_key().to_string(), s))
                    .map_err(BenchError::Runtime)
            })
            .collect()
    }
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
        Latency::Itl => None,
    }
}

/// Whether a record's value counts for `m`: measured requests, and only successful ones for
/// what the server produced (a failed request's TTFT is not a TTFT).
fn counts_for(r: &RequestRecord, m: Latency) -> bool {
    !r.warmup && (matches!(m, Latency::SendLag | Latency::Queue) || r.outcome.is_ok())
}

/// The histogram of a per-request latency over `records`.
pub fn histogram(records: &[RequestRecord], m: Latency) -> Histogram<u64> {
    let mut h = new_histogram();
    for r in records.iter().filter(|r| counts_for(r, m)) {
        if let Some(v) = per_request_us(r, m) {
            record_us(&mut h, v);
        }
    }
    h
}

/// A stored run's values of `m` at HDR resolution: from its records, or for ITL from its
/// stored histogram. The gate, `bench stack` and the reports read runs through this, so they
/// see the numbers the run's own summary was made from.
pub fn sample(run: &RunResult, m: Latency) -> Sample {
    if m == Latency::Itl {
        return run
            .histograms
            .get(m.hist_key())
            .and_then(|h| hist::decode(h).ok())
            .map(|h| Sample::from_hist(&h))
            .unwrap_or_default();
    }
    Sample::from_hist(&histogram(&run.requests, m))
}

/// A stored run's values of a per-request latency `m` (not ITL) at HDR resolution, in the
/// order the requests were planned — what a block bootstrap needs.
pub fn ordered(run: &RunResult, m: Latency) -> Vec<f64> {
    let h = new_histogram();
    let mut rs: Vec<&RequestRecord> = run.requests.iter().filter(|r| counts_for(r, m)).collect();
    rs.sort_by_key(|r| r.index);
    rs.into_iter()
        .filter_map(|r| per_request_us(r, m))
        .map(|v| h.median_equivalent(v) as f64)
        .collect()
}

fn textless_first(ok: &[&RequestRecord]) -> Option<TextlessFirst> {
    let gaps = Sample::from_values(
        ok.iter()
            .filter(|r| r.preamble_chunks > 0)
            .filter_map(|r| Some(r.ttft_us?.saturating_sub(r.first_event_us?) as f64)),
    );
    Some(TextlessFirst {
        requests: gaps.len() as u64,
        gap_p50_ms: gaps.quantile(0.5)? / 1000.0,
    })
}

/// Builds the histograms and the summary of a run.
pub fn summarize(data: &RunData, slo: &Slo, ignore_eos: bool) -> (Summary, Histograms) {
    let measured: Vec<&RequestRecord> = data.records.iter().filter(|r| !r.warmup).collect();
    let ok: Vec<&RequestRecord> = measured
        .iter()
        .copied()
        .filter(|r| r.outcome.is_ok())
        .collect();
    let mut h: BTreeMap<Latency, Histogram<u64>> = Latency::ALL
        .into_iter()
        .filter(|m| *m != Latency::Itl)
        .map(|m| (m, histogram(&data.records, m)))
        .collect();
    h.insert(Latency::Itl, data.itl_us.clone());

    let mut errors = BTreeMap::new();
    let mut aborted = 0;
    for r in &measured {
        match r.outcome {
            Outcome::Ok => {}
            Outcome::Aborted => aborted += 1,
            o => *errors.entry(o.name()).or_insert(0) += 1,
        }
    }
    let counts = Counts {
        planned: data.planned,
        sent: measured.len() as u64,
        warmup: data.records.len() as u64 - measured.len() as u64,
        ok: ok.len() as u64,
        errors,
        aborted,
        not_sent: data.planned.map_or(data.not_sent, |p| {
            p.saturating_sub(data.records.len() as u64)
        }),
        retried: measured.iter().filter(|r| r.retried).count() as u64,
        textless_first_chunk: textless_first(&ok),
    };

    let tokens = Tokens {
        prompt_tokens: saturating_sum(ok.iter().filter_map(|r| r.prompt_tokens)),
        output_tokens: saturating_sum(ok.iter().map(|r| r.output_tokens)),
        usage_missing: ok.iter().filter(|r| !r.output_tokens_from_usage).count() as u64,
        usage_rejected: ok.iter().filter(|r| r.usage_rejected).count() as u64,
        prompt_length_error_pct: {
            let e: Vec<f64> = ok
                .iter()
                .filter_map(|r| {
                    Some(
                        r.prompt_tokens? as f64 / r.input_tokens_target.filter(|t| *t > 0)? as f64
                            - 1.0,
                    )
                })
                .collect();
            (!e.is_empty()).then(|| e.iter().sum::<f64>() / e.len() as f64 * 100.0)
        },
        output_len_mismatch: if ignore_eos {
            ok.iter()
                .filter(|r| r.output_tokens_from_usage && r.output_tokens != r.max_tokens as u64)
                .count() as u64
        } else {
            0
        },
    };

    let start = measured.iter().map(|r| r.intended_us).min().unwrap_or(0);
    let end = measured.iter().map(|r| r.end_us).max().unwrap_or(start);
    let window_s = (end.saturating_sub(start)) as f64 / 1e6;
    let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
    let good = (!slo.is_empty()).then(|| ok.iter().filter(|r| meets_slo(r, slo)).count() as u64);
    let throughput = Throughput {
        window_s,
        request_rps: per_s(ok.len() as f64),
        output_tps: per_s(tokens.output_tokens as f64),
        total_tps: per_s(tokens.output_tokens.saturating_add(tokens.prompt_tokens) as f64),
        goodput_rps: good.map(|g| per_s(g as f64)),
        goodput_requests: good,
        peak_concurrency: data.peak_concurrency,
    };
    let latency = Latency::ALL
        .into_iter()
        .map(|m| latency_summary(m, &Sample::from_hist(&h[&m])))
        .collect();
    (
        Summary {
            counts,
            tokens,
            throughput,
            latency,
        },
        Histograms { by_metric: h },
    )
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

/// Token sums cannot wrap: counts are vetted at the client, and a sum saturates regardless.
fn saturating_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::saturating_add)
}
