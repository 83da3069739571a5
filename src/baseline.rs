//! The baseline store: `baselines/<scenario>/<name>.json`, committed to the repository.
//!
//! A baseline holds several repetitions of the same run (each a complete `run.json` with raw
//! per-request values and histograms), so the gate can measure run-to-run noise and not only
//! the noise within one run. The file is pretty-printed JSON with a `schema_version`; it is
//! written atomically and never overwritten without `--force`. A file that does not parse, has
//! another schema version or is not a baseline is an error (exit 2), never an empty pass.

use crate::error::BenchError;
use crate::result::RunResult;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const BASELINE_SCHEMA: u32 = 1;
const KIND: &str = "bench-baseline";

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

    /// A single stored run used as the baseline (`bench compare --against RUN.json`).
    pub fn from_run(path: &Path, run: RunResult) -> Result<Baseline, BenchError> {
        let mut b = Baseline::new(&path.display().to_string(), vec![run])?;
        b.environment.created_at = b.repetitions[0].started_at;
        Ok(b)
    }

    pub fn load(path: &Path) -> Result<Baseline, BenchError> {
        let bad = |m: String| BenchError::Runtime(format!("baseline {}: {m}", path.display()));
        let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => bad("does not exist; record one with `bench baseline SCENARIO` (or name another with --name)".into()),
            _ => bad(format!("cannot be read: {e}")),
        })?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(format!("is not valid JSON ({e}); it is corrupt — re-record it with `bench baseline --force`")))?;
        if v.get("kind").and_then(|k| k.as_str()) != Some(KIND) {
            return Err(bad(
                "is not a bench baseline (no \"kind\": \"bench-baseline\")".into(),
            ));
        }
        match v.get("schema_version").and_then(|s| s.as_u64()) {
            Some(n) if n == BASELINE_SCHEMA as u64 => {}
            other => {
                return Err(bad(format!(
                    "has schema_version {other:?}; this bench reads {BASELINE_SCHEMA}"
                )))
            }
        }
        let b: Baseline = serde_json::from_value(v)
            .map_err(|e| bad(format!("does not match the baseline schema ({e})")))?;
        if b.repetitions.is_empty() {
            return Err(bad("holds no repetitions".into()));
        }
        if let Some(r) = b
            .repetitions
            .iter()
            .find(|r| r.scenario_hash != b.scenario_hash)
        {
            return Err(bad(format!(
                "repetition {} has another scenario hash",
                r.run_id
            )));
        }
        Ok(b)
    }

    pub fn save(&self, path: &Path, force: bool) -> Result<(), BenchError> {
        if path.exists() && !force {
            return Err(BenchError::usage(format!(
                "{} exists; pass --force to replace it or --name to keep both",
                path.display()
            )));
        }
        let json =
            serde_json::to_vec_pretty(self).map_err(|e| BenchError::Runtime(e.to_string()))?;
        crate::export::write_atomic(path, &json)
    }
}

pub fn path(dir: &Path, scenario: &str, name: &str) -> PathBuf {
    dir.join(scenario).join(format!("{name}.json"))
}

fn host() -> String {
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

/// `(scenario, name, path)` of every stored baseline.
pub fn list(dir: &Path) -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(scenarios) = std::fs::read_dir(dir) else {
        return out;
    };
    for s in scenarios.flatten() {
        let Ok(files) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "json") {
                let name = p
                    .file_stem()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((s.file_name().to_string_lossy().into_owned(), name, p));
            }
        }
    }
    out.sort();
    out
}
