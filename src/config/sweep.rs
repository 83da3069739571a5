//! `bench sweep`'s flags as a checked [`SweepPlan`]: the load points (`--rates`,
//! `--concurrencies`, `--auto N`, `--find-max-rate`) and the saturation search's settings,
//! refused with the flag named before the first run.

use super::{kv, values};
use crate::cli::SweepArgs;
use crate::error::BenchError;

/// One load of a sweep: an open-loop rate or a closed-loop concurrency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Load {
    Rate(f64),
    Concurrency(u32),
}

impl Load {
    /// `rate=2.000` or `concurrency=8`: a point's name in reports and run directories.
    pub fn label(self) -> String {
        match self {
            Load::Rate(r) => format!("rate={r:.3}"),
            Load::Concurrency(c) => format!("concurrency={c}"),
        }
    }
}

/// What to sweep, checked before the first run.
#[derive(Debug, Clone)]
pub struct SweepPlan {
    pub series: Vec<Load>,
    pub auto: Option<u32>,
    pub find_max_rate: bool,
    pub attainment: f64,
    pub tolerance: f64,
    pub probe_concurrency: u32,
    pub early_stop: bool,
}

impl SweepPlan {
    pub fn from_args(args: &SweepArgs) -> Result<SweepPlan, BenchError> {
        let series: Vec<Load> = if let Some(r) = &args.rates {
            kv::numbers::<f64>("--rates", r)?
                .into_iter()
                .map(Load::Rate)
                .collect()
        } else if let Some(c) = &args.concurrencies {
            kv::numbers::<u32>("--concurrencies", c)?
                .into_iter()
                .map(Load::Concurrency)
                .collect()
        } else {
            Vec::new()
        };
        for l in &series {
            let checked = match l {
                Load::Rate(r) => values::check_rate(*r).map_err(|m| format!("--rates: a rate {m}")),
                Load::Concurrency(c) => values::check_concurrency(*c)
                    .map_err(|m| format!("--concurrencies: a concurrency {m}")),
            };
            checked.map_err(BenchError::usage)?;
        }
        if series.len() > 1000 || args.auto.is_some_and(|n| n > 1000) {
            return Err(BenchError::usage(
                "a sweep runs at most 1000 load points (--rates, --concurrencies, --auto N)",
            ));
        }
        if !(args.attainment > 0.0 && args.attainment <= 1.0) {
            return Err(BenchError::usage(format!(
                "--attainment is a fraction in (0, 1] (got {})",
                args.attainment
            )));
        }
        if !(args.tolerance > 0.0 && args.tolerance < 1.0) {
            return Err(BenchError::usage(format!(
                "--tolerance is a fraction in (0, 1) (got {})",
                args.tolerance
            )));
        }
        values::check_concurrency(args.max_concurrency_probe)
            .map_err(|m| BenchError::usage(format!("--max-concurrency-probe {m}")))?;
        if series.is_empty() && args.auto.is_none() && !args.find_max_rate {
            return Err(BenchError::usage(
                "give --rates, --concurrencies, --auto N or --find-max-rate",
            ));
        }
        Ok(SweepPlan {
            series,
            auto: args.auto,
            find_max_rate: args.find_max_rate,
            attainment: args.attainment,
            tolerance: args.tolerance,
            probe_concurrency: args.max_concurrency_probe,
            early_stop: !args.no_early_stop,
        })
    }
}
