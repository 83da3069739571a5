//! From records to the numbers a report shows.
//!
//! Definitions (DOMAIN.md; the README maps peers' names onto them):
//! * TTFT — intended send → first chunk carrying generated text (content or reasoning).
//! * TPOT — (E2E − TTFT) / (output_tokens − 1), only when output_tokens > 1 (vLLM's TPOT;
//!   GuideLLM and AIPerf call this ITL).
//! * ITL — every gap between consecutive text-carrying chunks (vLLM's ITL).
//! * E2E — intended send → last text-carrying chunk.
//! * send lag — actual send − intended send − queueing; queue — waiting for a
//!   `max_concurrency` slot.
//!
//! Latencies use successful measured requests only (warmup and errors excluded; errors are
//! counted by kind instead). Each metric is an HDR histogram in µs with 3 significant digits;
//! every figure shown (percentiles, mean, min, max) is read from that histogram (the midpoint
//! of the value's bucket), so it is within 0.1 % of the exact value and histograms from several
//! runs can be added. Raw per-request values stay in `run.json` for exact re-analysis. A percentile pN is
//! the smallest recorded value with at least N % of values at or below it (hdrhistogram's
//! `value_at_quantile`). Throughputs divide by the measured window: from the earliest intended
//! send to the latest end among measured requests.

pub mod hist;

use crate::record::{Outcome, RequestRecord};
use crate::runner::{new_histogram, RunData};
use crate::scenario::Slo;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Latency metrics, in the order reports show them: (name, definition).
pub const LATENCY_METRICS: &[(&str, &str)] = &[
    ("ttft", "intended send → first chunk with generated text"),
    (
        "tpot",
        "(e2e − ttft) / (output_tokens − 1), requests with > 1 output token",
    ),
    ("itl", "gap between consecutive chunks with generated text"),
    ("e2e", "intended send → last chunk with generated text"),
    (
        "send_lag",
        "actual send − intended send − queue (client lateness)",
    ),
    ("queue", "wait for a max_concurrency slot"),
];

/// One latency metric's distribution, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    pub name: String,
    pub unit: String,
    pub definition: String,
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// Request counts: `sent = ok + Σ errors + aborted`, for measured requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests in the plan, warmup included (absent for an unbounded closed loop).
    pub planned: Option<u64>,
    /// Measured requests sent (warmup excluded).
    pub sent: u64,
    pub warmup: u64,
    pub ok: u64,
    /// Per error kind (`http_500`, `timeout_first_token`, …).
    pub errors: BTreeMap<String, u64>,
    pub aborted: u64,
    /// Planned requests never sent (stopped first, or the duration ran out).
    pub not_sent: u64,
    /// Measured requests sent twice because a kept-alive connection had been closed by the
    /// server before it read the first try.
    #[serde(default)]
    pub retried: u64,
    /// Successful measured requests whose stream opened with data chunks carrying no text (a
    /// role-only chat delta): TTFT is timed at the first chunk with text, not at these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub textless_first_chunk: Option<TextlessFirst>,
}

/// How many streams opened with a chunk carrying no text, and how much earlier it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextlessFirst {
    pub requests: u64,
    /// Median of (TTFT − time to that first chunk), ms: what timing the first chunk as TTFT
    /// would have taken off.
    pub gap_p50_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Σ usage.prompt_tokens over successful measured requests.
    pub prompt_tokens: u64,
    /// Σ output tokens (usage, else chunk count) over successful measured requests.
    pub output_tokens: u64,
    /// Successful requests whose server sent no usage (output counted as chunks).
    pub usage_missing: u64,
    /// Successful requests with usage whose output length ≠ max_tokens although ignore_eos
    /// was asked (0 when ignore_eos is off: lengths are then the model's choice).
    pub output_len_mismatch: u64,
    /// Synthetic prompts: mean of (server's prompt_tokens / tokens targeted − 1), in %, over
    /// successful requests with both; shows how far words ≈ tokens (plus the chat template) is
    /// from the server's tokenizer. Absent for datasets.
    #[serde(default)]
    pub prompt_length_error_pct: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Measured window: earliest intended send → latest end (s).
    pub window_s: f64,
    /// Successful requests / window (req/s).
    pub request_rps: f64,
    /// Output tokens / window (tok/s).
    pub output_tps: f64,
    /// (Prompt + output tokens) / window (tok/s).
    pub total_tps: f64,
    /// Successful requests meeting every set SLO / window (req/s); absent without SLOs.
    pub goodput_rps: Option<f64>,
    /// How many requests met every SLO.
    pub goodput_requests: Option<u64>,
    /// Most requests in flight at once.
    pub peak_concurrency: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub counts: Counts,
    pub tokens: Tokens,
    pub throughput: Throughput,
    pub latency: Vec<LatencySummary>,
}

/// The histograms behind a summary, µs.
pub struct Histograms {
    pub by_name: BTreeMap<String, Histogram<u64>>,
}

fn textless_first(ok: &[&RequestRecord]) -> Option<TextlessFirst> {
    let mut gaps: Vec<f64> = ok
        .iter()
        .filter(|r| r.preamble_chunks > 0)
        .filter_map(|r| Some(r.ttft_us?.saturating_sub(r.first_event_us?) as f64 / 1000.0))
        .collect();
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_by(f64::total_cmp);
    Some(TextlessFirst {
        requests: gaps.len() as u64,
        gap_p50_ms: crate::stats::quantile(&gaps, 0.5)?,
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

    let mut h: BTreeMap<String, Histogram<u64>> = LATENCY_METRICS
        .iter()
        .map(|(n, _)| (format!("{n}_us"), new_histogram()))
        .collect();
    let mut rec = |name: &str, v: u64| {
        if let Some(hist) = h.get_mut(name) {
            record_us(hist, v);
        }
    };
    for r in &ok {
        if let Some(t) = r.ttft_us {
            rec("ttft_us", t);
        }
        if let Some(t) = r.tpot_us {
            rec("tpot_us", t.round() as u64);
        }
        if let Some(e) = r.e2e_us {
            rec("e2e_us", e);
        }
    }
    for r in &measured {
        rec("send_lag_us", r.send_lag_us);
        rec("queue_us", r.queue_us);
    }
    h.insert("itl_us".into(), data.itl_us.clone());

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
        prompt_tokens: ok.iter().filter_map(|r| r.prompt_tokens).sum(),
        output_tokens: ok.iter().map(|r| r.output_tokens).sum(),
        usage_missing: ok.iter().filter(|r| !r.output_tokens_from_usage).count() as u64,
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
        total_tps: per_s((tokens.output_tokens + tokens.prompt_tokens) as f64),
        goodput_rps: good.map(|g| per_s(g as f64)),
        goodput_requests: good,
        peak_concurrency: data.peak_concurrency,
    };
    let latency = LATENCY_METRICS
        .iter()
        .map(|(name, def)| latency_summary(name, def, &h[&format!("{name}_us")]))
        .collect();
    (
        Summary {
            counts,
            tokens,
            throughput,
            latency,
        },
        Histograms { by_name: h },
    )
}

/// Records one value. The histograms auto-resize, so `record` only fails past 2⁶³ µs; the
/// value is then clamped rather than lost. (`saturating_record` would clamp to the *current*
/// range — a few µs for a new histogram — and silently corrupt every large value.)
pub fn record_us(h: &mut Histogram<u64>, v: u64) {
    if h.record(v).is_err() {
        h.saturating_record(v);
    }
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

/// Reads a µs histogram as a millisecond summary. Each figure is the midpoint of its HDR bucket
/// (`median_equivalent`), so it is within ±0.05 % of the recorded value instead of biased
/// upward by up to 0.1 % as the bucket's top edge would be.
pub fn latency_summary(name: &str, definition: &str, h: &Histogram<u64>) -> LatencySummary {
    let ms = |v: u64| h.median_equivalent(v) as f64 / 1000.0;
    let empty = h.is_empty();
    let q = |q: f64| {
        if empty {
            0.0
        } else {
            ms(h.value_at_quantile(q))
        }
    };
    LatencySummary {
        name: name.to_string(),
        unit: "ms".into(),
        definition: definition.to_string(),
        count: h.len(),
        mean: if empty { 0.0 } else { h.mean() / 1000.0 },
        min: if empty { 0.0 } else { ms(h.min()) },
        p50: q(0.50),
        p90: q(0.90),
        p95: q(0.95),
        p99: q(0.99),
        p999: q(0.999),
        max: if empty { 0.0 } else { ms(h.max()) },
    }
}

impl Summary {
    pub fn latency(&self, name: &str) -> Option<&LatencySummary> {
        self.latency.iter().find(|l| l.name == name)
    }
}

#[cfg(test)]
pub(crate) mod tests;
