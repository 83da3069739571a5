//! The scenario file exactly as written: serde structs that reject unknown fields and keep the
//! source span of every value that a later cross-field check may need to point at.

use crate::model::scenario::{
    Api, Arrival, DatasetFormat, DatasetOrder, LengthDist, Salt, WorkloadKind,
};
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawScenario {
    pub name: Spanned<String>,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub api: Api,
    pub model: Option<String>,
    pub endpoint: Option<Spanned<String>>,
    pub api_key_env: Option<String>,
    pub seed: Option<u64>,
    #[serde(default)]
    pub request: RawRequest,
    pub workload: Spanned<RawWorkload>,
    pub load: Spanned<RawLoad>,
    #[serde(default)]
    pub slo: RawSlo,
    /// Simulator settings used when no endpoint is given (validated by `sim::SimOptions`).
    pub sim: Option<std::collections::BTreeMap<String, Spanned<toml::Value>>>,
    pub server_metrics: Option<RawServerMetrics>,
    /// The quality pass (`config::quality`).
    pub quality: Option<RawQuality>,
    /// Regression-gate thresholds (validated by `gate::parse_threshold`).
    pub gate: Option<std::collections::BTreeMap<String, Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawQuality {
    pub set: Spanned<String>,
    pub format: Option<Spanned<String>>,
    pub max_tokens: Option<Spanned<u32>>,
    pub items: Option<Spanned<u32>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRequest {
    pub max_tokens: Option<Spanned<u32>>,
    pub temperature: Option<Spanned<f64>>,
    pub ignore_eos: Option<bool>,
    pub timeout_s: Option<Spanned<f64>>,
    pub first_token_timeout_s: Option<Spanned<f64>>,
    /// Read as TOML (not straight into JSON, which turns `nan` into `null` unseen).
    pub extra: Option<Spanned<toml::Table>>,
    pub body_vars: Option<Spanned<Vec<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWorkload {
    #[serde(rename = "type")]
    pub kind: WorkloadKind,
    pub input_tokens: Option<Spanned<LengthDist>>,
    pub output_tokens: Option<Spanned<LengthDist>>,
    pub prefixes: Option<Spanned<u32>>,
    pub prefix_tokens: Option<Spanned<u32>>,
    pub suffix_tokens: Option<Spanned<LengthDist>>,
    pub long_fraction: Option<Spanned<f64>>,
    pub short: Option<Spanned<RawLengths>>,
    pub long: Option<Spanned<RawLengths>>,
    pub path: Option<Spanned<String>>,
    pub order: Option<Spanned<DatasetOrder>>,
    pub format: Option<Spanned<DatasetFormat>>,
    pub time_scale: Option<Spanned<f64>>,
    pub block_tokens: Option<Spanned<u32>>,
    pub columns: Option<Spanned<RawColumns>>,
    pub max_rate: Option<Spanned<f64>>,
    pub turns: Option<Spanned<LengthDist>>,
    pub user_tokens: Option<Spanned<LengthDist>>,
    pub think_time_ms: Option<Spanned<LengthDist>>,
    pub system_tokens: Option<Spanned<u32>>,
    pub salt: Option<Spanned<Salt>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawColumns {
    pub timestamp: String,
    pub input: String,
    pub output: String,
    pub unit: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLengths {
    pub input_tokens: LengthDist,
    pub output_tokens: LengthDist,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLoad {
    pub concurrency: Option<Spanned<u32>>,
    pub rate: Option<Spanned<f64>>,
    pub arrival: Option<Spanned<Arrival>>,
    pub burstiness: Option<Spanned<f64>>,
    pub max_concurrency: Option<Spanned<u32>>,
    pub requests: Option<Spanned<u64>>,
    /// Conversation workloads count sessions instead of requests.
    pub sessions: Option<Spanned<u64>>,
    pub duration: Option<Spanned<String>>,
    pub warmup: Option<Spanned<u64>>,
    pub ramp: Option<Spanned<RawRamp>>,
}

/// `[load] ramp = { from = 1, over = "30s", shape = "linear" }`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRamp {
    pub from: f64,
    pub over: String,
    pub shape: Option<crate::model::scenario::RampShape>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSlo {
    pub ttft_ms: Option<Spanned<f64>>,
    pub tpot_ms: Option<Spanned<f64>>,
    pub e2e_ms: Option<Spanned<f64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawServerMetrics {
    pub url: Option<Spanned<String>>,
    pub gpu_url: Option<Spanned<String>>,
    pub interval_s: Option<Spanned<f64>>,
    pub enabled: Option<bool>,
}
