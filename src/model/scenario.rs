//! A validated, typed scenario: everything that shapes a run's traffic and how it is judged.
//!
//! `config::scenario` reads TOML files into it (checking every value with file, line and
//! field); `run.json` and baselines carry it as JSON, so a stored run says exactly what it
//! ran. The schema is documented in `scenarios/README.md`.

pub use super::dist::LengthDist;

use super::dataset::Dataset;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;

/// Which OpenAI-compatible route is driven.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Api {
    /// `POST {endpoint}/chat/completions` with a `messages` array.
    #[default]
    Chat,
    /// `POST {endpoint}/completions` with a `prompt` string.
    Completions,
    /// `POST {endpoint}/responses` (the Responses API) with an `input` of messages, streamed
    /// as typed events.
    Responses,
    /// `POST {endpoint}/embeddings` with an `input` text: one JSON answer, no tokens to time.
    Embeddings,
    /// `POST {endpoint}/rerank` with the prompt as `query` and `[request.extra] documents`:
    /// one JSON answer of relevance scores, no tokens to time.
    Rerank,
}

impl Api {
    pub fn route(self) -> &'static str {
        match self {
            Api::Chat => "chat/completions",
            Api::Completions => "completions",
            Api::Responses => "responses",
            Api::Embeddings => "embeddings",
            Api::Rerank => "rerank",
        }
    }

    /// Whether its answers stream tokens (every API but the pooling ones, embeddings and
    /// rerank): TTFT, TPOT and ITL exist only for those.
    pub fn streams(self) -> bool {
        !matches!(self, Api::Embeddings | Api::Rerank)
    }

    /// Whether its prompt is a messages array rendered by the server's chat template (chat and
    /// the Responses API) rather than text.
    pub fn takes_messages(self) -> bool {
        matches!(self, Api::Chat | Api::Responses)
    }

    /// As a scenario spells it (`api = "chat"`).
    pub fn name(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Responses => "responses",
            Api::Embeddings => "embeddings",
            Api::Rerank => "rerank",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkloadKind {
    Synthetic,
    SharedPrefix,
    LongShortMix,
    Dataset,
    Trace,
    Conversation,
}

/// Inter-arrival law for open-loop load.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrival {
    /// Exponential gaps with mean 1/rate.
    #[default]
    Poisson,
    /// Gaps of exactly 1/rate.
    Constant,
    /// Gamma gaps, shape = burstiness, scale = 1/(rate·burstiness) (vLLM's definition):
    /// burstiness 1 is Poisson, < 1 burstier, > 1 more regular.
    Gamma,
    /// The send times of a trace (`[workload] type = "trace"`), scaled by `time_scale`; set
    /// by the loader, never written in `[load]`.
    Trace,
}

impl Arrival {
    /// As a scenario spells it (`arrival = "poisson"`).
    pub fn name(self) -> &'static str {
        match self {
            Arrival::Poisson => "poisson",
            Arrival::Constant => "constant",
            Arrival::Gamma => "gamma",
            Arrival::Trace => "trace timestamps",
        }
    }
}

/// Whether synthetic prompts start with words unique to the run (`[workload] salt`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Salt {
    /// A few words drawn per run lead every prompt: shared prefixes stay shared within the
    /// run, but no run (repetition, candidate) is served from an earlier run's prompt cache.
    #[default]
    PerRun,
    /// Byte-identical prompts in every run with the same seed.
    None,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetOrder {
    /// Line 1, 2, 3, … wrapping around.
    #[default]
    Sequential,
    /// A seeded random line for each request.
    Shuffle,
}

/// The columns (CSV) or keys (JSONL) of a trace that is not in the Mooncake format, and the
/// unit of its timestamps (`"ms"` or `"s"`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceColumns {
    pub timestamp: String,
    pub input: String,
    pub output: String,
    pub unit: String,
}

/// How a dataset file is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetFormat {
    /// One JSON object a line with `prompt` or `messages` (and optionally `output_tokens`).
    #[default]
    Jsonl,
    /// ShareGPT: a JSON array (or JSONL) of `{"conversations": [{"from": "human" | "gpt", "value": …}]}`,
    /// sent single-turn as vLLM's `bench serve` does: the first human turn is the prompt, the
    /// reply's length the `max_tokens`.
    Sharegpt,
}

impl DatasetFormat {
    fn is_jsonl(&self) -> bool {
        *self == DatasetFormat::Jsonl
    }
}

/// A validated scenario: everything needed to build the plan.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub api: Api,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub api_key_env: Option<String>,
    pub seed: u64,
    pub request: RequestParams,
    pub workload: Workload,
    /// `[workload] salt`; in the hash only when not the default (older hashes stay valid).
    #[serde(default)]
    pub salt: Salt,
    pub load: LoadSpec,
    pub slo: Slo,
    /// `[sim]` settings (`profile` first), used when no endpoint is given; not part of the
    /// traffic hash (they configure the server, not the traffic).
    #[serde(default)]
    pub sim: Vec<(String, String)>,
    /// `[server_metrics]`; not part of the hash.
    #[serde(default)]
    pub server_metrics: ServerMetricsCfg,
    /// `[gate]` thresholds (`ttft.p95 = "10%"`); not part of the hash.
    #[serde(default)]
    pub gate: Vec<(String, String)>,
    /// `[quality]` as written; not part of the hash (the latency traffic is the same with or
    /// without it; the set's own hash is stored with the answers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<QualitySpec>,
    /// The quality set it names, loaded.
    #[serde(skip)]
    pub quality_set: Option<Arc<crate::model::quality::QualitySet>>,
    /// The file it came from (not part of the hash).
    #[serde(skip)]
    pub source: PathBuf,
    #[serde(skip)]
    pub dataset: Option<Arc<Dataset>>,
    #[serde(skip)]
    pub trace: Option<Arc<crate::model::trace::Trace>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestParams {
    /// Output length when the workload does not give one.
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
    /// Sent as `ignore_eos` so the server generates exactly `max_tokens` (default true).
    pub ignore_eos: bool,
    /// Whole-request limit, from the actual send (s).
    pub timeout_s: f64,
    /// Limit for the first content chunk, from the actual send (s).
    pub first_token_timeout_s: f64,
    /// Merged into the request body last, so it may override anything.
    #[serde(default)]
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// `--var` names that are request-body fields: `--var cache_prompt=false` then sends
    /// `"cache_prompt": false` as well as labelling the run (a default may sit in `extra`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub body_vars: Vec<String>,
}

/// Input/output lengths of one class of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lengths {
    pub input_tokens: LengthDist,
    pub output_tokens: LengthDist,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Workload {
    Synthetic {
        input_tokens: LengthDist,
        output_tokens: LengthDist,
    },
    SharedPrefix {
        prefixes: u32,
        prefix_tokens: u32,
        suffix_tokens: LengthDist,
        output_tokens: LengthDist,
    },
    LongShortMix {
        long_fraction: f64,
        short: Lengths,
        long: Lengths,
    },
    Dataset {
        /// As written in the scenario (relative paths are relative to the scenario file).
        path: String,
        /// SHA-256 of the file's bytes: part of the scenario hash.
        sha256: String,
        order: DatasetOrder,
        /// For lines that carry no `output_tokens`.
        output_tokens: LengthDist,
        /// Absent (JSONL) in scenarios written before ShareGPT, so their hash is unchanged.
        #[serde(default, skip_serializing_if = "DatasetFormat::is_jsonl")]
        format: DatasetFormat,
    },
    /// A request trace replayed at its own times (Mooncake format).
    Trace {
        /// As written in the scenario (relative paths are relative to the scenario file).
        path: String,
        /// SHA-256 of the file's bytes: part of the scenario hash.
        sha256: String,
        /// Send time = trace timestamp × this (0.5 replays twice as fast).
        time_scale: f64,
        /// Tokens per hash-id block (Mooncake's traces use 512).
        block_tokens: u32,
        /// A table of the user's own (CSV or JSONL) instead of Mooncake JSONL.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        columns: Option<TraceColumns>,
        /// Guard: the replay's peak rate (most sends in any 1 s, after `time_scale`) may not
        /// exceed this many requests/s, so a mistyped `time_scale` cannot flood a server.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        max_rate: Option<f64>,
    },
    /// Multi-turn sessions: each turn sends the whole history (earlier user messages and the
    /// assistant's replies as received) plus a new user message; `[load]` counts sessions.
    Conversation {
        /// Turns per session (ShareGPT: the conversation's own, capped by this).
        turns: LengthDist,
        /// Words of each new user message (synthetic sessions).
        user_tokens: LengthDist,
        /// `max_tokens` of each turn (synthetic sessions).
        output_tokens: LengthDist,
        /// Pause between receiving a reply and sending the next turn (ms); none when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        think_time_ms: Option<LengthDist>,
        /// Words of a system prompt every session of the run shares (0: none).
        #[serde(default)]
        system_tokens: u32,
        /// ShareGPT conversations whose human turns (and reply lengths) make the sessions,
        /// as written in the scenario; the dataset's SHA-256 is part of the hash.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sha256: Option<String>,
    },
}

impl Workload {
    pub fn is_conversation(&self) -> bool {
        matches!(self, Workload::Conversation { .. })
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadSpec {
    #[serde(flatten)]
    pub mode: LoadMode,
    /// Measured requests (warmup excluded) — or, for a conversation workload, measured
    /// sessions (written `sessions` in the scenario).
    pub requests: Option<u64>,
    /// Bound on the sending phase, warmup included (s).
    pub duration_s: Option<f64>,
    /// Requests (conversation: whole sessions) sent first and excluded from every metric.
    pub warmup: u64,
    /// A ramp from a lower load up to the target (`[load] ramp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ramp: Option<Ramp>,
}

/// A load ramp: from `from` (requests/s for an open loop, concurrent requests for a closed
/// one) to the scenario's `rate` / `concurrency` over `over_s` seconds, then held.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ramp {
    pub from: f64,
    pub over_s: f64,
    #[serde(default)]
    pub shape: RampShape,
}

/// How a ramp climbs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RampShape {
    /// By equal steps: level(t) = from + (to − from)·t / over.
    #[default]
    Linear,
    /// By equal factors: level(t) = from·(to / from)^(t / over).
    Exponential,
}

impl Ramp {
    /// The same ramp for a part `f` of the load (a shard's share of the workers): it starts at
    /// `f · from` and climbs to the part's own target.
    pub fn scaled(self, f: f64) -> Ramp {
        Ramp {
            from: self.from * f,
            ..self
        }
    }

    /// The level at `t` seconds, climbing to `to`.
    pub fn level(&self, t: f64, to: f64) -> f64 {
        let x = (t / self.over_s).clamp(0.0, 1.0);
        match self.shape {
            RampShape::Linear => self.from + (to - self.from) * x,
            RampShape::Exponential => self.from * (to / self.from).powf(x),
        }
    }

    /// When the level first reaches `level` (≤ `to`), s: the inverse of [`Self::level`].
    pub fn reaches(&self, level: f64, to: f64) -> f64 {
        if level <= self.from || to <= self.from {
            return 0.0;
        }
        let x = match self.shape {
            RampShape::Linear => (level - self.from) / (to - self.from),
            RampShape::Exponential => (level / self.from).ln() / (to / self.from).ln(),
        };
        x.clamp(0.0, 1.0) * self.over_s
    }

    /// The arrival time of the `u`-th unit of work (the integral of the rate from 0 to t
    /// equal to `u`), for a rate ramping to `to` and held there.
    pub fn time_of(&self, u: f64, to: f64) -> f64 {
        let (r0, d) = (self.from, self.over_s);
        let whole = match self.shape {
            RampShape::Linear => (r0 + to) / 2.0 * d,
            RampShape::Exponential if (to - r0).abs() < 1e-12 => r0 * d,
            RampShape::Exponential => (to - r0) * d / (to / r0).ln(),
        };
        if u >= whole {
            return d + (u - whole) / to;
        }
        match self.shape {
            RampShape::Linear => {
                let a = (to - r0) / (2.0 * d);
                if a.abs() < 1e-12 {
                    u / r0
                } else {
                    (-r0 + (r0 * r0 + 4.0 * a * u).max(0.0).sqrt()) / (2.0 * a)
                }
            }
            RampShape::Exponential if (to - r0).abs() < 1e-12 => u / r0,
            RampShape::Exponential => {
                let k = (to / r0).ln();
                d * (1.0 + u * k / (r0 * d)).ln() / k
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum LoadMode {
    /// N workers, each sending its next request when the previous one ends.
    Closed { concurrency: u32 },
    /// A precomputed arrival schedule at `rate_rps`, optionally capped in flight.
    Open {
        rate_rps: f64,
        arrival: Arrival,
        burstiness: f64,
        max_concurrency: Option<u32>,
    },
}

/// Where and how often to scrape the server's Prometheus metrics during a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerMetricsCfg {
    /// Default: the endpoint's origin + `/metrics`.
    pub url: Option<String>,
    /// A GPU node's dcgm-exporter, scraped at the same times; none by default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_url: Option<String>,
    pub interval_s: f64,
    pub enabled: bool,
}

impl Default for ServerMetricsCfg {
    fn default() -> Self {
        ServerMetricsCfg {
            url: None,
            gpu_url: None,
            interval_s: 2.0,
            enabled: true,
        }
    }
}

/// `[quality]`: the set answered after each run's load, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualitySpec {
    /// `builtin`, or a file (relative to the scenario).
    pub set: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    pub max_tokens: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<u32>,
}

/// Service-level objectives that define goodput; an unset one is not checked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl Slo {
    pub fn is_empty(&self) -> bool {
        self.ttft_ms.is_none() && self.tpot_ms.is_none() && self.e2e_ms.is_none()
    }
}

impl Scenario {
    /// The canonical JSON of everything that shapes the traffic: api, seed, request
    /// parameters, workload (with the dataset's content hash), salt (`null` at its default,
    /// so that hashes from before the salt existed stay valid), load and SLOs. The name,
    /// description, endpoint, model and key variable are left out, so the same traffic against
    /// another server or model compares. A field added to these sections changes every hash:
    /// give it a serde default that serializes as before, or accept that baselines are
    /// re-recorded (the repository's CI checks its committed baselines against their files).
    pub fn canonical(&self) -> serde_json::Value {
        canonical_of(&serde_json::to_value(self).unwrap_or_default())
    }

    /// SHA-256 over [`Scenario::canonical`] (serde_json's map is ordered by key, so its text
    /// is canonical).
    pub fn traffic_hash(&self) -> String {
        sha256_hex(self.canonical().to_string().as_bytes())
    }

    /// The traffic fields that differ between `self` (a baseline's) and `other` (a
    /// candidate's), as `load.requests: 20 → 40`, in path order; empty when the traffic is
    /// the same.
    pub fn traffic_changes(&self, other: &Scenario) -> Vec<String> {
        canonical_changes(&self.canonical(), &other.canonical())
    }
}

/// SHA-256 of `bytes` in lower-case hex: how every hash bench stores is written (traffic,
/// data files, quality sets, long answers).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A traffic hash as people read it: its first 12 hex digits.
pub fn short_hash(h: &str) -> &str {
    h.get(..12).unwrap_or(h)
}

/// The hashed part of a scenario as JSON (a typed one serialized, or one read raw from a
/// stored file): see [`Scenario::canonical`].
pub fn canonical_of(scenario: &serde_json::Value) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    for key in ["api", "seed", "request", "workload", "load", "slo"] {
        if let Some(v) = scenario.get(key) {
            m.insert(key.into(), v.clone());
        }
    }
    let salt = scenario
        .get("salt")
        .filter(|s| s.as_str() != Some("per_run"))
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    m.insert("salt".into(), salt);
    serde_json::Value::Object(m)
}

/// `path: a → b` for every field where two canonical scenarios differ, in path order.
pub fn canonical_changes(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    leaf_diff("", Some(a), Some(b), &mut out);
    out
}

/// Appends `path: a → b` for every leaf where `a` and `b` differ (objects are walked key by
/// key; arrays and scalars compared whole).
fn leaf_diff(
    path: &str,
    a: Option<&serde_json::Value>,
    b: Option<&serde_json::Value>,
    out: &mut Vec<String>,
) {
    use serde_json::Value::Object;
    match (a, b) {
        (Some(Object(x)), Some(Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                leaf_diff(&p, x.get(k), y.get(k), out);
            }
        }
        (a, b) if a != b => {
            let show = |v: Option<&serde_json::Value>| match v {
                None => "absent".to_string(),
                Some(v) => {
                    let t = v.to_string();
                    match t.char_indices().nth(60) {
                        Some((i, _)) => format!("{}…", &t[..i]),
                        None => t,
                    }
                }
            };
            out.push(format!("{path}: {} → {}", show(a), show(b)));
        }
        _ => {}
    }
}
