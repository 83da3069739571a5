//! Command-line overrides of scenario fields (`--rate`, `--requests`, …): each is checked
//! like the field it replaces, and its errors name the flag.

use crate::config::values::{
    check_concurrency, check_endpoint, check_rate, check_requests, check_warmup, parse_duration,
};
use crate::error::BenchError;
use crate::model::scenario::{Arrival, LoadMode, Scenario};

/// The flags that replace scenario fields; `None` keeps the scenario's value.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub seed: Option<u64>,
    pub requests: Option<u64>,
    pub duration: Option<String>,
    pub rate: Option<f64>,
    pub concurrency: Option<u32>,
    pub max_concurrency: Option<u32>,
    pub warmup: Option<u64>,
}

impl Overrides {
    pub fn apply(&self, s: &mut Scenario) -> Result<(), BenchError> {
        let flag = |f: &str, m: String| BenchError::usage(format!("{f}: {m}"));
        if let Some(e) = &self.endpoint {
            check_endpoint(e).map_err(|m| flag("--endpoint", m))?;
            s.endpoint = Some(e.clone());
        }
        if let Some(m) = &self.model {
            s.model = Some(m.clone());
        }
        if let Some(k) = &self.api_key_env {
            s.api_key_env = Some(k.clone());
        }
        if let Some(seed) = self.seed {
            s.seed = seed;
        }
        if let Some(r) = self.requests {
            check_requests(r).map_err(|m| flag("--requests", m))?;
            s.load.requests = Some(r);
        }
        if let Some(d) = &self.duration {
            s.load.duration_s = Some(parse_duration(d).map_err(|m| flag("--duration", m))?);
        }
        if let Some(w) = self.warmup {
            check_warmup(w).map_err(|m| flag("--warmup", m))?;
            s.load.warmup = w;
        }
        if self.rate.is_some() && self.concurrency.is_some() {
            return Err(BenchError::usage(
                "--rate and --concurrency are exclusive: pick open loop or closed loop",
            ));
        }
        if let Some(c) = self.concurrency {
            check_concurrency(c).map_err(|m| flag("--concurrency", m))?;
            s.load.mode = LoadMode::Closed { concurrency: c };
        }
        if let Some(r) = self.rate {
            check_rate(r).map_err(|m| flag("--rate", m))?;
            s.load.mode = match &s.load.mode {
                LoadMode::Open {
                    arrival,
                    burstiness,
                    max_concurrency,
                    ..
                } => LoadMode::Open {
                    rate_rps: r,
                    arrival: *arrival,
                    burstiness: *burstiness,
                    max_concurrency: *max_concurrency,
                },
                LoadMode::Closed { .. } => LoadMode::Open {
                    rate_rps: r,
                    arrival: Arrival::Poisson,
                    burstiness: 1.0,
                    max_concurrency: None,
                },
            };
        }
        if let Some(m) = self.max_concurrency {
            check_concurrency(m).map_err(|msg| flag("--max-concurrency", msg))?;
            match &mut s.load.mode {
                LoadMode::Open { max_concurrency, .. } => *max_concurrency = Some(m),
                LoadMode::Closed { .. } => {
                    return Err(BenchError::usage("--max-concurrency applies only to open-loop load (a scenario with `rate`, or --rate)"))
                }
            }
        }
        Ok(())
    }
}
