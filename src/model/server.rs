//! What the server's own Prometheus metrics said about a run, under engine-independent names
//! (derived by `metrics::server`).

use serde::{Deserialize, Serialize};

/// Figures derived from the server's own metrics over the run. `None` = the engine does not
/// export it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// Where they came from (no credentials) and which name set matched.
    pub url: String,
    pub engine: Option<String>,
    pub scrapes: u32,
    /// Why figures are missing, when they are.
    pub warning: Option<String>,
    /// Δhits / Δqueries over the run (0–1).
    pub prefix_cache_hit_rate: Option<f64>,
    /// Δaccepted / Δdraft tokens over the run (0–1).
    pub spec_acceptance_rate: Option<f64>,
    /// Mean tokens per verification step (SGLang's gauge).
    pub spec_mean_accept_length: Option<f64>,
    pub preemptions: Option<f64>,
    pub queue_time_mean_s: Option<f64>,
    pub queue_time_p50_s: Option<f64>,
    pub queue_time_p95_s: Option<f64>,
    pub prefill_time_mean_s: Option<f64>,
    pub prefill_time_p95_s: Option<f64>,
    /// Mean and p95 of the server's per-request decode time (first to last token).
    #[serde(default)]
    pub decode_time_mean_s: Option<f64>,
    #[serde(default)]
    pub decode_time_p95_s: Option<f64>,
    /// Δ prompt tokens served from the prefix cache.
    #[serde(default)]
    pub cached_prompt_tokens: Option<f64>,
    /// Δ requests the server refused at admission (a queue limit), all reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission_rejections: Option<f64>,
    /// Peak of the 0–1 KV usage gauge over the scrapes.
    pub kv_usage_peak: Option<f64>,
    pub running_peak: Option<f64>,
    pub waiting_peak: Option<f64>,
    /// Peak of the waiting requests deferred by a transient constraint (vLLM's
    /// `num_requests_waiting_by_reason{reason="deferred"}`: KV transfer, LoRA budget, a
    /// blocked request) rather than waiting for capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting_deferred_peak: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    /// Prompt plus generated tokens the server had processed since it started, at the run's
    /// first scrape (before its first request): how much state a long-lived server had
    /// accumulated before the run (caches, fragmentation, memory). `None` where the engine
    /// exports no token counters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_tokens_before: Option<f64>,
    /// Every scrape's gauges, in time order: what a run's time windows show of the server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gauges: Vec<GaugeSample>,
    /// Quantiles above that fell in a histogram bucket wider than the value itself (the first
    /// bucket, from 0, always): field name → the bucket's (lower, upper] edges in s. The field
    /// then holds the upper edge — a bound, not an estimate — and reports say "≤ upper" (or
    /// "lower–upper").
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub bucket_bounds: std::collections::BTreeMap<String, (f64, f64)>,
}

/// Which of the families `bench` maps one scrape serves (`bench metrics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub engine: String,
    pub rows: Vec<CoverageRow>,
}

/// One stable figure: the families that may carry it and the one found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageRow {
    pub figure: String,
    pub families: Vec<String>,
    pub found: Option<String>,
    /// A running engine of this kind serves it (so its absence is a rename, not a feature
    /// switched off).
    pub required: bool,
}

impl Coverage {
    /// Required figures the scrape lacks.
    pub fn missing(&self) -> Vec<&CoverageRow> {
        self.rows
            .iter()
            .filter(|r| r.required && r.found.is_none())
            .collect()
    }
}

/// The server's gauges at one scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GaugeSample {
    /// When it was taken, ms since the Unix epoch.
    pub at_ms: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// KV-cache usage, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<f64>,
}
