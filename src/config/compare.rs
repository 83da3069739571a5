//! `bench compare`'s flags as a checked [`CompareConfig`]: the scenario and its run flags, the
//! gate, the stored reference, how many runs (a fixed number, or a sequential design's cap
//! and budget) and where the candidate comes from ([`Arms`]) — and the command that judges
//! the runs of a compare stopped part-way again.

use super::flags::Flags;
use crate::cli::{CompareArgs, Undecided};
use std::path::{Path, PathBuf};

/// Where the candidate's runs come from, and what they are judged against.
#[derive(Debug, Clone)]
pub enum Arms {
    /// Measured now, against the stored reference.
    Measured,
    /// Stored runs (`--candidate`), against the reference or stored control runs (`--control`).
    Stored {
        candidate: Vec<PathBuf>,
        control: Vec<PathBuf>,
    },
    /// Measured now in ABBA blocks with the baseline's configuration (`--interleave`), reached
    /// by its vars, `--baseline-endpoint` or `--switch`.
    Interleaved {
        baseline_endpoint: Option<String>,
        switch: Option<String>,
    },
}

/// A compare, as the flags give it.
#[derive(Debug, Clone)]
pub struct CompareConfig {
    pub scenario: PathBuf,
    pub flags: Flags,
    /// `--gate FILE`; the defaults (and `ci/gate.toml`) when none.
    pub gate: Option<PathBuf>,
    pub alpha: f64,
    /// `--repeat`: a fixed number of runs; else sequential to `max_repeat` within `budget`.
    pub repeat: Option<u32>,
    pub max_repeat: Option<u32>,
    pub budget: Option<String>,
    pub allow_multi: bool,
    pub steady_state: bool,
    pub settle_all: bool,
    /// `--against` runs instead of the stored baseline `baselines/<scenario>/<name>.json`.
    pub against: Vec<PathBuf>,
    pub baselines: PathBuf,
    pub name: String,
    pub arms: Arms,
    /// An undecided gated row fails the compare (`--undecided fail`, `--strict`).
    pub undecided_fails: bool,
}

impl CompareConfig {
    pub fn from_args(args: &CompareArgs) -> CompareConfig {
        let arms = if args.interleave {
            Arms::Interleaved {
                baseline_endpoint: args.baseline_endpoint.clone(),
                switch: args.switch.clone(),
            }
        } else if !args.candidate.is_empty() {
            Arms::Stored {
                candidate: args.candidate.clone(),
                control: args.control.clone(),
            }
        } else {
            Arms::Measured
        };
        CompareConfig {
            scenario: args.scenario.clone(),
            flags: Flags::from(&args.opts),
            gate: args.gate.clone(),
            alpha: args.alpha,
            repeat: args.repeat,
            max_repeat: args.max_repeat,
            budget: args.budget.clone(),
            allow_multi: args.allow_multi,
            steady_state: args.steady_state,
            settle_all: args.settle_all,
            against: args.against.clone(),
            baselines: args.baselines.clone(),
            name: args.name.clone(),
            arms,
            undecided_fails: args.strict || args.undecided == Undecided::Fail,
        }
    }

    /// `bench compare` with the scenario, the baseline's store and name, and the flags the
    /// judgement depends on (`--gate`, `--alpha`, `--max-repeat`) as given: how to judge
    /// stored runs of this comparison again to the same judgement (a sequential design is
    /// checked against those flags).
    pub fn rejudge_command(&self) -> String {
        let mut c = format!("bench compare {}", self.scenario.display());
        if self.baselines != Path::new("baselines") {
            c += &format!(" --baselines {}", self.baselines.display());
        }
        if self.name != "main" {
            c += &format!(" --name {}", self.name);
        }
        if let Some(g) = &self.gate {
            c += &format!(" --gate {}", g.display());
        }
        if self.alpha != super::thresholds::DEFAULT_ALPHA {
            c += &format!(" --alpha {}", crate::model::readable::number(self.alpha));
        }
        if let Some(m) = self.max_repeat {
            c += &format!(" --max-repeat {m}");
        }
        c
    }
}
