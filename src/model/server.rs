//! What the server's own Prometheus metrics said about a run, under engine-independent names
//! (derived by `metrics::server`).

use serde::{Deserialize, Serialize};

/// Figures derived from the server's own metrics over the run. `None` = the engine does not
/// export it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerMetrics {
    /// The GPU node's telemetry (dcgm-exporter), when `server_metrics.gpu_url` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuMetrics>,
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

/// A run's accelerator telemetry from dcgm-exporter's Prometheus text, every figure summed
/// over the node's GPUs (`metrics::gpu` says how each is read).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuMetrics {
    pub url: String,
    pub scrapes: u32,
    /// GPUs the exporter reported (distinct `gpu` labels).
    pub gpus: u32,
    /// Why figures are missing, when they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// First → last scrape, s: the span the energy covers (the whole run, warm-up included).
    pub span_s: f64,
    /// Energy over the span, J.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_j: Option<f64>,
    /// Where the energy came from: the exporter's energy counter, or ∫ power dt over the
    /// scrapes (trapezoids) where it has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy_source: Option<String>,
    /// energy / span, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_mean_w: Option<f64>,
    /// Highest power of one scrape, W.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub power_peak_w: Option<f64>,
    /// energy / every output token the run's successful requests produced (warm-up included:
    /// the energy spans it), J/token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub joules_per_output_token: Option<f64>,
    /// Mean over scrapes of the mean GPU utilisation, %.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub util_mean_pct: Option<f64>,
    /// Highest framebuffer memory in use, MiB (summed over GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fb_used_peak_mib: Option<f64>,
    /// Mean over scrapes of the mean SM and DRAM activity (0–1; profiling fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_active_mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dram_active_mean: Option<f64>,
}
