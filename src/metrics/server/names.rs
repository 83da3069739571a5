//! Engine metric names → the stable names `bench` reports.
//!
//! Sources (each engine's own documentation of its Prometheus endpoint):
//! * vLLM — "Production Metrics" in the vLLM docs (V1 engine; `vllm/v1/metrics/loggers.py`):
//!   `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc`
//!   (`vllm:gpu_cache_usage_perc` before V1), `vllm:prefix_cache_queries_total`,
//!   `vllm:prefix_cache_hits_total`, `vllm:num_preemptions_total`,
//!   `vllm:request_queue_time_seconds`, `vllm:request_prefill_time_seconds`,
//!   `vllm:request_decode_time_seconds`, `vllm:prompt_tokens_cached_total`,
//!   `vllm:spec_decode_num_draft_tokens_total`, `vllm:spec_decode_num_accepted_tokens_total`,
//!   `vllm:prompt_tokens_total`, `vllm:generation_tokens_total`,
//!   `vllm:admission_rejections_total` (requests refused by a queue limit),
//!   `vllm:num_requests_waiting_by_reason` (its `reason="deferred"` series). The embedded
//!   simulator serves the same names.
//! * SGLang — docs.sglang.io "Production Metrics" (`--enable-metrics`): `sglang:num_running_reqs`,
//!   `sglang:num_queue_reqs`, `sglang:token_usage` (KV occupancy 0–1), `sglang:cache_hit_rate`
//!   (a recent-interval gauge) and `sglang:cached_tokens_total`, `sglang:spec_accept_length`
//!   (mean tokens per verify step, a gauge), `sglang:queue_time_seconds`,
//!   `sglang:prompt_tokens_total`, `sglang:generation_tokens_total`. SGLang exports no
//!   preemption (retraction) counter and no prefill-time histogram.
//! * llama.cpp — `tools/server/README.md` (`--metrics`): `llamacpp:requests_processing`,
//!   `llamacpp:requests_deferred`, `llamacpp:kv_cache_usage_ratio` (absent in newer builds),
//!   `llamacpp:prompt_tokens_total`, `llamacpp:tokens_predicted_total`,
//!   `llamacpp:tokens_drafted_total`, `llamacpp:tokens_drafted_accepted_total`, and in recent
//!   builds `llamacpp:prompt_tokens_cached_total` (prompt tokens served from the prompt cache).
//!   No queue-time, prefill-time or preemption metrics.
//!
//! Each stable name lists the families that can carry it, first match wins.

/// Families (without `_total`) that carry each stable figure, for one engine.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    pub engine: &'static str,
    pub running: &'static [&'static str],
    pub waiting: &'static [&'static str],
    /// A 0–1 gauge.
    pub kv_usage: &'static [&'static str],
    /// Counters of prompt tokens looked up / found in the prefix cache.
    pub prefix_queries: &'static [&'static str],
    pub prefix_hits: &'static [&'static str],
    /// A 0–1 gauge, where the engine has no counters.
    pub prefix_hit_rate_gauge: &'static [&'static str],
    pub preemptions: &'static [&'static str],
    pub queue_time: &'static [&'static str],
    pub prefill_time: &'static [&'static str],
    pub decode_time: &'static [&'static str],
    /// A counter of prompt tokens served from the prefix cache.
    pub cached_prompt_tokens: &'static [&'static str],
    pub spec_draft: &'static [&'static str],
    pub spec_accepted: &'static [&'static str],
    /// Mean tokens per verification step (a gauge), where there are no counters.
    pub spec_accept_length_gauge: &'static [&'static str],
    /// A counter of requests refused by a queue limit (vLLM's `--max-num-queued-*`).
    pub admission_rejections: &'static [&'static str],
    /// A gauge of waiting requests by `reason`: those with `reason="deferred"` wait on a
    /// transient constraint (KV transfer, LoRA budget, a blocked request), not on capacity.
    pub waiting_by_reason: &'static [&'static str],
    pub prompt_tokens: &'static [&'static str],
    pub generation_tokens: &'static [&'static str],
    /// llama.cpp counts cached prompt tokens apart from `prompt_tokens_total`, so the tokens
    /// looked up are the two added.
    pub queries_exclude_hits: bool,
}

const VLLM: Names = Names {
    engine: "vllm",
    running: &["vllm:num_requests_running"],
    waiting: &["vllm:num_requests_waiting"],
    kv_usage: &["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"],
    prefix_queries: &["vllm:prefix_cache_queries", "vllm:gpu_prefix_cache_queries"],
    prefix_hits: &["vllm:prefix_cache_hits", "vllm:gpu_prefix_cache_hits"],
    prefix_hit_rate_gauge: &["vllm:gpu_prefix_cache_hit_rate"],
    preemptions: &["vllm:num_preemptions"],
    queue_time: &["vllm:request_queue_time_seconds"],
    prefill_time: &["vllm:request_prefill_time_seconds"],
    decode_time: &["vllm:request_decode_time_seconds"],
    cached_prompt_tokens: &["vllm:prompt_tokens_cached"],
    spec_draft: &["vllm:spec_decode_num_draft_tokens"],
    spec_accepted: &["vllm:spec_decode_num_accepted_tokens"],
    spec_accept_length_gauge: &[],
    admission_rejections: &["vllm:admission_rejections"],
    waiting_by_reason: &["vllm:num_requests_waiting_by_reason"],
    prompt_tokens: &["vllm:prompt_tokens"],
    generation_tokens: &["vllm:generation_tokens"],
    queries_exclude_hits: false,
};

const SGLANG: Names = Names {
    engine: "sglang",
    running: &["sglang:num_running_reqs"],
    waiting: &["sglang:num_queue_reqs"],
    kv_usage: &["sglang:token_usage"],
    prefix_queries: &["sglang:prompt_tokens"],
    prefix_hits: &["sglang:cached_tokens"],
    prefix_hit_rate_gauge: &["sglang:cache_hit_rate"],
    preemptions: &[],
    queue_time: &["sglang:queue_time_seconds"],
    prefill_time: &[],
    decode_time: &[],
    cached_prompt_tokens: &["sglang:cached_tokens"],
    spec_draft: &[],
    spec_accepted: &[],
    spec_accept_length_gauge: &["sglang:spec_accept_length"],
    admission_rejections: &[],
    waiting_by_reason: &[],
    prompt_tokens: &["sglang:prompt_tokens"],
    generation_tokens: &["sglang:generation_tokens"],
    queries_exclude_hits: false,
};

const LLAMACPP: Names = Names {
    engine: "llama.cpp",
    running: &["llamacpp:requests_processing"],
    waiting: &["llamacpp:requests_deferred"],
    kv_usage: &["llamacpp:kv_cache_usage_ratio"],
    prefix_queries: &["llamacpp:prompt_tokens"],
    prefix_hits: &["llamacpp:prompt_tokens_cached"],
    prefix_hit_rate_gauge: &[],
    preemptions: &[],
    queue_time: &[],
    prefill_time: &[],
    decode_time: &[],
    cached_prompt_tokens: &["llamacpp:prompt_tokens_cached"],
    spec_draft: &[
        "llamacpp:tokens_drafted",
        "llamacpp:spec_decode_num_draft_tokens",
    ],
    spec_accepted: &[
        "llamacpp:tokens_drafted_accepted",
        "llamacpp:spec_decode_num_accepted_tokens",
    ],
    spec_accept_length_gauge: &[],
    admission_rejections: &[],
    waiting_by_reason: &[],
    prompt_tokens: &["llamacpp:prompt_tokens"],
    generation_tokens: &["llamacpp:tokens_predicted"],
    queries_exclude_hits: true,
};

impl Names {
    /// Every stable figure with the families that carry it, and whether a running engine of
    /// this kind must serve one of them (speculative-decoding counters appear only with
    /// speculation on; a hit-rate gauge is the fallback for engines without counters).
    pub fn figures(&self) -> Vec<(&'static str, &'static [&'static str], bool)> {
        let all = [
            ("running", self.running, true),
            ("waiting", self.waiting, true),
            ("kv_usage", self.kv_usage, true),
            ("prefix_queries", self.prefix_queries, true),
            ("prefix_hits", self.prefix_hits, true),
            ("prefix_hit_rate_gauge", self.prefix_hit_rate_gauge, false),
            ("preemptions", self.preemptions, true),
            ("queue_time", self.queue_time, true),
            ("prefill_time", self.prefill_time, true),
            ("decode_time", self.decode_time, true),
            ("cached_prompt_tokens", self.cached_prompt_tokens, true),
            ("admission_rejections", self.admission_rejections, true),
            ("waiting_by_reason", self.waiting_by_reason, true),
            ("spec_draft", self.spec_draft, false),
            ("spec_accepted", self.spec_accepted, false),
            (
                "spec_accept_length_gauge",
                self.spec_accept_length_gauge,
                false,
            ),
            ("prompt_tokens", self.prompt_tokens, true),
            ("generation_tokens", self.generation_tokens, true),
        ];
        all.into_iter().filter(|(_, f, _)| !f.is_empty()).collect()
    }
}

/// The engine whose prefix the scrape's families carry.
pub fn detect(families: impl IntoIterator<Item = impl AsRef<str>>) -> Option<Names> {
    for f in families {
        let f = f.as_ref();
        if f.starts_with("vllm:") {
            return Some(VLLM);
        }
        if f.starts_with("sglang:") {
            return Some(SGLANG);
        }
        if f.starts_with("llamacpp:") {
            return Some(LLAMACPP);
        }
    }
    None
}
