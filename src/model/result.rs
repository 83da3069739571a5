//! `run.json`: the complete, re-analysable result of one run.
//!
//! It holds the scenario (and its traffic hash), the `vars` under test, where and when it ran,
//! whether it completed, the summary, every histogram (V2 + deflate, base64) and every request
//! record, so any percentile can be recomputed exactly from raw values. Readers check
//! `schema_version` and refuse what they do not know.

use super::environment::RunEnvironment;
use super::record::RequestRecord;
use super::scenario::{Api, Scenario};
use super::server::ServerMetrics;
use super::shard::Shard;
use super::summary::Summary;
use crate::error::BenchError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
}

impl ToolInfo {
    pub fn current() -> ToolInfo {
        ToolInfo {
            name: "bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    pub tool: ToolInfo,
    pub run_id: String,
    pub scenario_name: String,
    /// The scenario file as given on the command line.
    pub scenario_file: String,
    /// See `Scenario::traffic_hash`: equal hashes mean the same traffic.
    pub scenario_hash: String,
    /// The validated scenario after command-line overrides.
    pub scenario: Scenario,
    /// The configuration under test (`--var key=value`).
    pub vars: BTreeMap<String, String>,
    /// Base URL without credentials or query.
    pub endpoint: String,
    pub model: String,
    pub api: Api,
    /// How prompt lengths were produced: synthetic prompts are approximate (words ≈ tokens);
    /// `summary.tokens.prompt_tokens` holds the server's real counts.
    pub prompt_lengths: String,
    /// The words leading every synthetic prompt of this run (`[workload] salt = "per_run"`),
    /// so that no run is served from an earlier run's prompt cache; absent when unsalted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_salt: Option<String>,
    /// A trace replay's own prefix reuse (the hit rate of an ideal, unbounded prefix cache
    /// over the rows sent), to set beside the server's measured prefix hit rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_reuse: Option<crate::model::trace::TraceReuse>,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    /// False when the run was interrupted (Ctrl-C) before its plan was through, or failed.
    pub complete: bool,
    /// Why the run failed, when bench's own code did (a caught panic): the run is then
    /// incomplete, and exits 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    pub summary: Summary,
    /// Figures from the server's own Prometheus metrics (absent when not scraped).
    #[serde(default)]
    pub server_metrics: Option<ServerMetrics>,
    /// µs histograms by name (`ttft_us`, …), hdrhistogram V2 + deflate, base64.
    pub histograms: BTreeMap<String, String>,
    /// Every request's record — while a run has at most [`RECORDS_KEPT`] of them (or what
    /// `--keep-records` says). A longer run keeps none here: its records are in
    /// `requests.csv` beside `run.json`, written as they finished, and `requests_omitted`
    /// counts them; the summary and the histograms still cover every request.
    pub requests: Vec<RequestRecord>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub requests_omitted: u64,
    /// Set on one shard of a distributed run (`bench run --shard I/N`).
    #[serde(default)]
    pub shard: Option<Shard>,
    /// The run in time windows, with its steady state (absent for a run that kept no records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub windows: Option<crate::model::windows::Windows>,
    /// The machine, how busy it was, and the engine's version (absent in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<RunEnvironment>,
    /// The quality pass's answers, in a run that made one (`[quality]`, the first
    /// [`crate::model::quality::PASSES`] runs of an arm).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::model::quality::QualityRun>,
    /// Where a run another tool measured came from (`bench import`), and how its definitions
    /// differ from bench's; absent for bench's own runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// How the server was made ready before this run (`--reset`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset: Option<ResetDone>,
    /// The network and client cost of an idle server, measured just before the run's first
    /// request; absent where the server did not answer the probe (and in imported runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_round_trip: Option<IdleRoundTrip>,
}

/// Idle round trips before a run: `GET {base}/models` one at a time on a client built as the
/// load client is, each timed from its send to the end of its body (the network, the HTTP
/// stack and the client; no model work).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleRoundTrip {
    /// The path probed (`/v1/models`).
    pub route: String,
    /// Timed round trips.
    pub samples: u32,
    /// Their median, fastest and slowest, ms.
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
}

/// A reset done before a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResetDone {
    /// What was done (`vllm: POST /reset_prefix_cache`, `command: …`).
    pub how: String,
    /// How long it took, ms.
    pub ms: f64,
}

/// A run read from another tool's per-request results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Imported {
    /// The tool that measured it (`vllm bench serve`).
    pub tool: String,
    /// The file, as given, and its SHA-256.
    pub file: String,
    pub sha256: String,
    /// Each way its figures are defined otherwise than bench's, a sentence each.
    pub differences: Vec<String>,
}

/// Records a run keeps in `run.json` (and a baseline per repetition) by default: enough for
/// the gate's raw-value bootstrap on any run CI gates, small enough that memory and files do
/// not grow with a soak's length.
pub const RECORDS_KEPT: u64 = 10_000;

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl RunResult {
    /// Reads a `run.json`, refusing other schema versions.
    pub fn load(path: &Path) -> Result<RunResult, BenchError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| BenchError::Runtime(format!("cannot read {}: {e}", path.display())))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            BenchError::Runtime(format!("{}: not valid JSON ({e})", path.display()))
        })?;
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == SCHEMA_VERSION as u64 => {}
            Some(n) => {
                return Err(BenchError::Runtime(format!(
                "{}: schema_version {n} is not supported by this bench (it reads {SCHEMA_VERSION})",
                path.display()
            )))
            }
            None => {
                return Err(BenchError::Runtime(format!(
                    "{}: no schema_version; not a bench run.json",
                    path.display()
                )))
            }
        }
        serde_json::from_value(v)
            .map_err(|e| BenchError::Runtime(format!("{}: {e}", path.display())))
    }
}
