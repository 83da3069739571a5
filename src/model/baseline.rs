//! A baseline: several repetitions of one run of a scenario, stored and compared against
//! (the store is `verdict::baseline`).

use super::result::RunResult;
use crate::error::BenchError;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const BASELINE_SCHEMA: u32 = 1;
pub const KIND: &str = "bench-baseline";

/// Where and when a baseline was recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub tool_version: String,
    pub host: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Baseline {
    pub schema_version: u32,
    pub kind: String,
    pub name: String,
    pub scenario_name: String,
    pub scenario_hash: String,
    pub vars: BTreeMap<String, String>,
    pub environment: Environment,
    pub repetitions: Vec<RunResult>,
}

impl Baseline {
    pub fn new(name: &str, reps: Vec<RunResult>) -> Result<Baseline, BenchError> {
        let first = reps
            .first()
            .ok_or_else(|| BenchError::Runtime("a baseline needs at least one run".into()))?;
        Ok(Baseline {
            schema_version: BASELINE_SCHEMA,
            kind: KIND.into(),
            name: name.into(),
            scenario_name: first.scenario_name.clone(),
            scenario_hash: first.scenario_hash.clone(),
            vars: first.vars.clone(),
            environment: Environment {
                tool_version: env!("CARGO_PKG_VERSION").into(),
                host: host(),
                created_at: Utc::now(),
            },
            repetitions: reps,
        })
    }

    /// Stored runs used as the baseline (`bench compare --against RUN.json|DIR …`), dated
    /// by their first run.
    pub fn from_runs(name: &str, runs: Vec<RunResult>) -> Result<Baseline, BenchError> {
        if let (Some(first), Some(other)) = (
            runs.first(),
            runs.iter()
                .find(|r| r.scenario_hash != runs[0].scenario_hash || r.vars != runs[0].vars),
        ) {
            return Err(BenchError::usage(format!(
                "--against: runs {} and {} ran other traffic or another configuration; one baseline is one configuration",
                first.run_id, other.run_id
            )));
        }
        let mut b = Baseline::new(name, runs)?;
        b.environment.created_at = b.repetitions[0].started_at;
        Ok(b)
    }
}

/// This machine's name (`$HOSTNAME`, else /etc/hostname).
pub fn host() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| {
            std::fs::read_to_string("/etc/hostname")
                .ok()
                .map(|s| s.trim().to_string())
        })
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "unknown".into())
}
