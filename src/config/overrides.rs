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
    pub sessions: Option<u64>,
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
        // A conversation run is sized in sessions (its `load.requests` holds them).
        let conversation = s.workload.is_conversation();
        if self.requests.is_some() && conversation {
            return Err(BenchError::usage(
                "--requests: a conversation run counts sessions; use --sessions N",
            ));
        }
        if self.sessions.is_some() && !conversation {
            return Err(BenchError::usage(
                "--sessions applies only to a conversation workload; use --requests N",
            ));
        }
        if let Some(r) = self.requests.or(self.sessions) {
            let f = if conversation {
                "--sessions"
            } else {
                "--requests"
            };
            check_requests(r).map_err(|m| flag(f, m))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_conversation_is_sized_by_sessions_and_nothing_else_is() {
        let conv = "name = \"c\"\n[workload]\ntype = \"conversation\"\nturns = 2\nuser_tokens = 3\noutput_tokens = 2\n[load]\nconcurrency = 1\nsessions = 4\n";
        let mut s = crate::config::scenario::parse(conv, Path::new("c.toml")).unwrap();
        let o = Overrides {
            sessions: Some(9),
            ..Default::default()
        };
        o.apply(&mut s).unwrap();
        assert_eq!(s.load.requests, Some(9));
        let o = Overrides {
            requests: Some(9),
            ..Default::default()
        };
        let e = o.apply(&mut s).unwrap_err().to_string();
        assert!(e.contains("use --sessions"), "{e}");
        let mut plain = crate::testkit::scenario("");
        let o = Overrides {
            sessions: Some(9),
            ..Default::default()
        };
        let e = o.apply(&mut plain).unwrap_err().to_string();
        assert!(
            e.contains("--sessions applies only to a conversation"),
            "{e}"
        );
    }
}
