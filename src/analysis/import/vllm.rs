//! vLLM's `vllm bench serve --save-result --save-detailed` JSON as bench's request records.
//!
//! The file holds one benchmark: its settings (`backend`, `num_prompts`, `request_rate`,
//! `max_concurrency`, `model_id`, `date`) and, per request, `start_times` (the client's
//! monotonic clock, s), `queue_times` (waiting for a `--max-concurrency` slot, s), `ttfts`,
//! `latencies` and `itls` (s), `input_lens`, `output_lens` and `errors` (empty when the
//! request succeeded). Mapped onto bench's records:
//!
//! * TTFT is vLLM's: from the send to the first data event carrying `choices` — on the
//!   chat API that is the role-only chunk most servers send before any token, not the first
//!   token bench times (the completions API's first chunk carries text). Kept as measured,
//!   and named as a difference: both arms of an import share it, so a compare of imports is
//!   consistent, but its TTFT is not bench's.
//! * E2E is `latencies` (send → the last chunk with a token); TPOT is computed as bench
//!   computes it, (E2E − TTFT) / (output − 1), so it inherits vLLM's TTFT.
//! * ITL: the `itls` gaps, chunk to chunk, as bench's ITL.
//! * Latencies run from the actual send. Under `--request-rate` the intended send is the
//!   actual one less its `queue_times` wait; the arrivals' lateness beyond that is not in the
//!   file (vLLM records no schedule), so a late client is not seen. With no rate (`inf`) and
//!   `--max-concurrency`, the run is a closed loop and the queue wait is no latency.
//! * Tokens are vLLM's counts (the server's usage where it sent it, else its tokenizer); the
//!   `max_tokens` asked for and whether `--ignore-eos` was sent are not in the file, so the
//!   imported scenario does not claim `ignore_eos`.
//! * An error is kept with its text, counted as `server_error`.

use super::{Load, Parsed, Settings, VLLM};
use crate::error::BenchError;
use crate::model::record::{Outcome, RequestRecord};
use serde::Deserialize;

/// The fields of the file bench reads (others are ignored).
#[derive(Debug, Deserialize)]
struct Detailed {
    backend: String,
    #[serde(default)]
    model_id: String,
    num_prompts: u64,
    /// A number, or the string `"inf"`.
    request_rate: serde_json::Value,
    #[serde(default)]
    max_concurrency: Option<u64>,
    #[serde(default)]
    date: String,
    /// Burstiness of the arrivals' gamma distribution: 1 is Poisson.
    #[serde(default = "one")]
    burstiness: f64,
    start_times: Vec<f64>,
    #[serde(default)]
    queue_times: Option<Vec<f64>>,
    ttfts: Vec<f64>,
    latencies: Vec<f64>,
    itls: Vec<Vec<f64>>,
    input_lens: Vec<u64>,
    output_lens: Vec<u64>,
    errors: Vec<String>,
}

fn one() -> f64 {
    1.0
}

impl Detailed {
    /// The open loop's rate, `None` for `inf`.
    fn rate(&self) -> Option<f64> {
        self.request_rate.as_f64().filter(|r| r.is_finite())
    }

    fn chat(&self) -> bool {
        self.backend.contains("chat")
    }

    /// The ways these figures are defined otherwise than bench's.
    fn differences(&self) -> Vec<String> {
        let mut d = vec![
            match self.chat() {
                true => "TTFT is vLLM's: send → the first data event with choices, on the chat API the role-only chunk before any token (bench times the first chunk with text); TPOT, (E2E − TTFT)/(output − 1), inherits it".to_string(),
                false => "TTFT is vLLM's: send → the first data event with choices (on the completions API it carries text, as bench's)".to_string(),
            },
            "latencies run from the actual send; vLLM records no schedule, so a late send is not seen (bench times from the intended send)".to_string(),
            "token counts are vLLM's (the server's usage, else its tokenizer); max_tokens and --ignore-eos are not in the file".to_string(),
        ];
        if self.rate().is_none() && self.max_concurrency.is_none() {
            d.push("all requests sent at once (rate inf, no --max-concurrency)".into());
        }
        d
    }

    /// Checks every per-request list holds one entry a request.
    fn check(&self) -> Result<usize, String> {
        let n = self.start_times.len();
        let lens = [
            ("ttfts", self.ttfts.len()),
            ("latencies", self.latencies.len()),
            ("itls", self.itls.len()),
            ("input_lens", self.input_lens.len()),
            ("output_lens", self.output_lens.len()),
            ("errors", self.errors.len()),
        ];
        if let Some((k, l)) = lens.iter().find(|(_, l)| *l != n) {
            return Err(format!(
                "{k} has {l} entries but start_times {n}: not a whole --save-detailed result"
            ));
        }
        if n == 0 {
            return Err("no requests (was it saved with --save-detailed?)".into());
        }
        Ok(n)
    }

    /// The records, with times in µs from the first send, and each successful request's
    /// inter-chunk gaps (µs).
    fn records(&self) -> (Vec<RequestRecord>, Vec<Vec<u64>>) {
        let us = |s: f64| (s.max(0.0) * 1e6).round() as u64;
        let t0 = self
            .start_times
            .iter()
            .copied()
            .fold(f64::INFINITY, f64::min);
        let open = self.rate().is_some();
        let mut gaps = Vec::new();
        let records = (0..self.start_times.len())
            .map(|i| {
                let sent = us(self.start_times[i] - t0);
                let queue = match (open, &self.queue_times) {
                    (true, Some(q)) => q.get(i).map_or(0, |&q| us(q)),
                    _ => 0,
                };
                let intended = sent.saturating_sub(queue);
                let ok = self.errors[i].is_empty();
                let out = self.output_lens[i];
                let ttft = us(self.ttfts[i]);
                let e2e = us(self.latencies[i]);
                if ok {
                    gaps.push(self.itls[i].iter().map(|&g| us(g)).collect());
                }
                RequestRecord {
                    index: i as u64,
                    warmup: false,
                    session: None,
                    turn: None,
                    class: String::new(),
                    outcome: if ok {
                        Outcome::Ok
                    } else {
                        Outcome::ServerError
                    },
                    intended_us: intended,
                    sent_us: sent,
                    end_us: sent + e2e,
                    retried: false,
                    queue_us: queue,
                    send_lag_us: 0,
                    ttft_us: ok.then_some(queue + ttft),
                    e2e_us: ok.then_some(queue + e2e),
                    tpot_us: (ok && out > 1)
                        .then(|| e2e.saturating_sub(ttft) as f64 / (out - 1) as f64),
                    prompt_tokens: Some(self.input_lens[i]),
                    output_tokens: if ok { out } else { 0 },
                    output_tokens_from_usage: true,
                    usage_rejected: false,
                    max_tokens: 0,
                    input_tokens_target: None,
                    content_chunks: if ok { self.itls[i].len() as u32 + 1 } else { 0 },
                    preamble_chunks: 0,
                    first_event_us: ok.then_some(queue + ttft),
                    cached_tokens: None,
                    images: None,
                    server: None,
                    stream: Default::default(),
                    finish_reason: None,
                    error: (!ok).then(|| self.errors[i].chars().take(300).collect()),
                }
            })
            .collect();
        (records, gaps)
    }
}

/// Reads a vLLM result as a run's records, or says why it is not one.
pub fn parse(text: &str) -> Result<Parsed, BenchError> {
    let d: Detailed = serde_json::from_str(text).map_err(|e| {
        BenchError::usage(format!(
            "not a `vllm bench serve --save-result --save-detailed` result: {e}"
        ))
    })?;
    d.check().map_err(BenchError::usage)?;
    let n = d.input_lens.len().max(1) as f64;
    let mean = |v: &[u64]| (v.iter().sum::<u64>() as f64 / n).round().max(1.0) as u64;
    let (records, gaps) = d.records();
    Ok(Parsed {
        tool: VLLM,
        version: None,
        settings: Settings {
            chat: d.chat(),
            load: match (d.rate(), d.max_concurrency) {
                (Some(rate), cap) => Load::Open {
                    rate,
                    poisson: d.burstiness == 1.0,
                    cap,
                },
                (None, c) => Load::Closed(c.unwrap_or(d.num_prompts)),
            },
            requests: d.num_prompts,
            input_tokens: mean(&d.input_lens),
            output_tokens: mean(&d.output_lens),
        },
        records,
        gaps,
        started_at: chrono::NaiveDateTime::parse_from_str(&d.date, "%Y%m%d-%H%M%S")
            .ok()
            .map(|t| t.and_utc()),
        model: d.model_id.clone(),
        differences: d.differences(),
    })
}
