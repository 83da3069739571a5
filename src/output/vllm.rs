//! `--export vllm-json FILE`: the keys `vllm bench serve --save-result` writes, so dashboards
//! built for vLLM's result files read our runs.
//!
//! Mapping and definition differences (also in docs/commands.md):
//! * `duration` — our measured window (earliest intended send → latest end), not vLLM's wall
//!   time from the first send; `request_throughput`, `output_throughput`,
//!   `total_token_throughput`, `request_goodput` divide by it.
//! * `ttfts` (s), `input_lens`, `output_lens`, `errors`, `generated_texts` — one entry per
//!   measured request in index order; failed requests have TTFT 0 and their error text, as in
//!   vLLM. `generated_texts` are empty strings: we do not keep the text.
//! * `itls` — empty lists: we keep inter-token gaps as a histogram, not per request; the ITL
//!   statistics below come from that histogram.
//! * `mean_/median_/std_/p99_{ttft,tpot,itl,e2el}_ms` — from our HDR histograms, over
//!   successful requests; our TTFT and E2E count from the *intended* send time (vLLM's from
//!   the actual send), which matters only when the client was late or queued.
//! * `max_concurrent_requests` — our peak concurrency. `max_output_tokens_per_s` is not
//!   computed (null).

use crate::model::hist;
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::scenario::{Api, LoadMode};
use serde_json::{json, Map, Value};

pub fn render(run: &RunResult) -> Value {
    let s = &run.summary;
    let measured: Vec<_> = {
        let mut v: Vec<_> = run.requests.iter().filter(|r| !r.warmup).collect();
        v.sort_by_key(|r| r.index);
        v
    };
    let (rate, burstiness, max_concurrency) = match &run.scenario.load.mode {
        LoadMode::Open {
            rate_rps,
            burstiness,
            max_concurrency,
            ..
        } => (json!(rate_rps), json!(burstiness), json!(max_concurrency)),
        LoadMode::Closed { concurrency } => (json!("inf"), json!(1.0), json!(concurrency)),
    };
    let mut o = Map::new();
    o.insert(
        "date".into(),
        json!(run.started_at.format("%Y%m%d-%H%M%S").to_string()),
    );
    let backend = if run.api == Api::Chat {
        "openai-chat"
    } else {
        "openai"
    };
    o.insert("endpoint_type".into(), json!(backend));
    o.insert("backend".into(), json!(backend));
    o.insert("label".into(), json!(run.run_id));
    o.insert("model_id".into(), json!(run.model));
    o.insert("tokenizer_id".into(), json!(run.model));
    o.insert("num_prompts".into(), json!(measured.len()));
    o.insert("request_rate".into(), rate);
    o.insert("burstiness".into(), burstiness);
    o.insert("max_concurrency".into(), max_concurrency);
    o.insert("duration".into(), json!(s.throughput.window_s));
    o.insert("completed".into(), json!(s.counts.ok));
    o.insert("failed".into(), json!(s.counts.sent - s.counts.ok));
    o.insert("total_input_tokens".into(), json!(s.tokens.prompt_tokens));
    o.insert("total_output_tokens".into(), json!(s.tokens.output_tokens));
    o.insert("request_throughput".into(), json!(s.throughput.request_rps));
    o.insert("request_goodput".into(), json!(s.throughput.goodput_rps));
    o.insert("output_throughput".into(), json!(s.throughput.output_tps));
    o.insert(
        "total_token_throughput".into(),
        json!(s.throughput.total_tps),
    );
    o.insert(
        "input_lens".into(),
        json!(measured
            .iter()
            .map(|r| r.prompt_tokens.unwrap_or(0))
            .collect::<Vec<_>>()),
    );
    o.insert(
        "output_lens".into(),
        json!(measured
            .iter()
            .map(|r| if r.outcome.is_ok() {
                r.output_tokens
            } else {
                0
            })
            .collect::<Vec<_>>()),
    );
    o.insert(
        "ttfts".into(),
        json!(measured
            .iter()
            .map(|r| if r.outcome.is_ok() {
                r.ttft_us.unwrap_or(0) as f64 / 1e6
            } else {
                0.0
            })
            .collect::<Vec<_>>()),
    );
    o.insert(
        "itls".into(),
        json!(measured
            .iter()
            .map(|_| Vec::<f64>::new())
            .collect::<Vec<_>>()),
    );
    o.insert(
        "generated_texts".into(),
        json!(measured.iter().map(|_| "").collect::<Vec<_>>()),
    );
    o.insert(
        "errors".into(),
        json!(measured
            .iter()
            .map(|r| if r.outcome.is_ok() {
                String::new()
            } else {
                r.error.clone().unwrap_or_else(|| r.outcome.name())
            })
            .collect::<Vec<_>>()),
    );
    o.insert("max_output_tokens_per_s".into(), Value::Null);
    o.insert(
        "max_concurrent_requests".into(),
        json!(s.throughput.peak_concurrency),
    );
    latency_keys(run, &mut o);
    Value::Object(o)
}

/// vLLM's mean, median, std and p99 keys of TTFT, TPOT, ITL and E2E (`null` without values).
fn latency_keys(run: &RunResult, o: &mut Map<String, Value>) {
    let s = &run.summary;
    for (ours, theirs) in [
        (Latency::Ttft, "ttft"),
        (Latency::Tpot, "tpot"),
        (Latency::Itl, "itl"),
        (Latency::E2e, "e2el"),
    ] {
        let h = run
            .histograms
            .get(ours.hist_key())
            .and_then(|t| hist::decode(t).ok());
        let l = s.latency(ours).filter(|l| l.has_values());
        o.insert(format!("mean_{theirs}_ms"), json!(l.map(|l| l.mean)));
        o.insert(format!("median_{theirs}_ms"), json!(l.map(|l| l.p50)));
        o.insert(
            format!("std_{theirs}_ms"),
            json!(h
                .as_ref()
                .filter(|h| !h.is_empty())
                .map(|h| h.stdev() / 1000.0)),
        );
        o.insert(format!("p99_{theirs}_ms"), json!(l.map(|l| l.p99)));
    }
}

/// A run in vLLM's format (`bench run --export vllm-json FILE`), the one file it writes.
pub struct Export<'a>(pub &'a RunResult);

impl super::export::Exporter for Export<'_> {
    const COMMAND: &'static str = "bench run --export";
    const FORMATS: &'static [super::export::Format] = &[super::export::Format::Json];

    fn render(&self, _: super::export::Format) -> Result<Vec<u8>, crate::error::BenchError> {
        super::json(&render(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{lognormal_run, rng};

    #[test]
    fn has_vllms_keys_and_our_values() {
        let mut run = lognormal_run(50, 40.0, 0.0, &mut rng(1));
        run.requests[3].outcome = crate::model::record::Outcome::Http(500);
        run.requests[3].error = Some("boom".into());
        let v = render(&run);
        for k in [
            "duration",
            "completed",
            "failed",
            "total_input_tokens",
            "request_throughput",
            "ttfts",
            "itls",
            "errors",
            "median_ttft_ms",
            "p99_e2el_ms",
            "std_tpot_ms",
        ] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["ttfts"].as_array().unwrap().len(), 50);
        assert_eq!(v["errors"][3], "boom");
        assert_eq!(v["ttfts"][3], 0.0);
        assert_eq!(
            v["ttfts"][0].as_f64().unwrap(),
            run.requests[0].ttft_us.unwrap() as f64 / 1e6
        );
        assert_eq!(v["request_rate"], "inf", "a closed loop has no rate");
    }
}
