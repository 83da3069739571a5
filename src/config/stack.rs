//! `bench stack`'s flags as a checked [`StackConfig`]: the base, the changes to try (in the
//! recommended order with `--recommended`), the runs per configuration and where they come
//! from, refused with the flag named before the first run.

use super::flags::Flags;
use super::kv;
use crate::cli::StackArgs;
use crate::error::BenchError;
use crate::model::stack::recommended_rank;
use std::path::PathBuf;

/// A change: `(key, value)`.
pub type Change = (String, String);

/// What to stack, as the flags give it.
#[derive(Debug, Clone)]
pub struct StackConfig {
    pub scenario: PathBuf,
    pub flags: Flags,
    pub base: Vec<Change>,
    /// In the order they are applied.
    pub tries: Vec<Change>,
    pub repeat: usize,
    pub keep_going: bool,
    /// Where the runs are read from (`--from`), else measured now under `out`.
    pub from: Option<PathBuf>,
    pub out: PathBuf,
}

impl StackConfig {
    pub fn from_args(args: &StackArgs) -> Result<StackConfig, BenchError> {
        let base = kv::list("--base", args.base.as_deref().unwrap_or(""))?;
        let mut tries: Vec<Change> = Vec::new();
        for t in &args.tries {
            tries.extend(kv::list("--try", t)?);
        }
        if tries.is_empty() {
            return Err(BenchError::usage("give at least one --try KEY=VALUE"));
        }
        if !args.ladder && tries.len() > 3 {
            return Err(BenchError::usage(
                "the factorial takes at most 3 changes (8 configurations); use --ladder for longer stacks",
            ));
        }
        if args.recommended {
            tries.sort_by_key(|(k, _)| recommended_rank(k));
        }
        Ok(StackConfig {
            scenario: args.scenario.clone(),
            flags: Flags::from(&args.opts),
            base,
            tries,
            repeat: super::values::repeats(args.repeat)?,
            keep_going: args.keep_going,
            from: args.from.clone(),
            out: args
                .opts
                .out
                .clone()
                .unwrap_or_else(|| super::run::default_out_dir("stack")),
        })
    }
}
