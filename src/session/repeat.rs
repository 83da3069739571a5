//! Repeated runs of one session — `bench baseline`'s repetitions and `bench compare
//! --repeat`'s candidate runs: the one place that numbers them (`rep1`, `rep2`, … under one
//! directory), says which is under way, and stops at the first run that was cut short or
//! failed, keeping the runs finished so the caller can say how to judge them.

use super::Session;
use crate::error::BenchError;
use crate::model::result::RunResult;
use std::path::{Path, PathBuf};

/// Why repeated runs halted before the last.
#[derive(Debug)]
pub enum Halt {
    /// A run was interrupted (a signal): it is written, marked incomplete.
    Interrupted,
    /// A run failed with this error after earlier runs had finished.
    Failed(BenchError),
}

/// The runs that finished whole, in order, and why the rest were not run.
#[derive(Debug)]
pub struct Repeated {
    pub runs: Vec<RunResult>,
    pub stopped: Option<Halt>,
}

/// How repeated runs are laid out and announced.
pub struct Layout<'a> {
    /// Where the runs go: `out/repN`, or `out` itself for a single run unless `numbered`.
    pub out: &'a Path,
    pub numbered: bool,
    /// The line before each run (`baseline main`, `candidate`), unless quiet.
    pub label: &'a str,
    /// `k` is a cap (a sequential compare), not the count: "repetition 2 of at most 12".
    pub at_most: bool,
}

impl Layout<'_> {
    fn dir(&self, i: usize, k: usize) -> PathBuf {
        if k == 1 && !self.numbered {
            self.out.to_path_buf()
        } else {
            self.out.join(format!("rep{i}"))
        }
    }
}

/// Runs `session` up to `k` times as `layout` says; `accept` sees the whole runs so far after
/// each one and says whether to go on (`false`: enough) or refuses the last (the error ends
/// the repetitions). A first run that fails is the error itself; a later one ends the
/// repetitions with the runs kept.
pub async fn repeat(
    session: &Session,
    k: usize,
    layout: &Layout<'_>,
    mut accept: impl FnMut(&[RunResult]) -> Result<bool, BenchError>,
) -> Result<Repeated, BenchError> {
    let mut runs = Vec::new();
    for i in 1..=k {
        // A signal that came between runs: the next one is not started, nor announced.
        if let Some(name) = super::signals::received() {
            crate::say!(
                "{name} between runs: no further run started (repetition {i} was not); the {} run(s) finished are whole and written",
                runs.len()
            );
            return Ok(Repeated {
                runs,
                stopped: Some(Halt::Interrupted),
            });
        }
        if k > 1 && !session.spec().quiet {
            let of = if layout.at_most { "at most " } else { "" };
            crate::say!("{}: repetition {i} of {of}{k}", layout.label);
        }
        let stopped = match session.run_to(&layout.dir(i, k), false).await {
            Err(e) if runs.is_empty() => return Err(e),
            Err(e) => Some(Halt::Failed(e)),
            Ok(run) if !run.complete => Some(Halt::Interrupted),
            Ok(run) => {
                runs.push(run);
                if !accept(&runs)? {
                    break;
                }
                None
            }
        };
        if stopped.is_some() {
            return Ok(Repeated { runs, stopped });
        }
    }
    Ok(Repeated {
        runs,
        stopped: None,
    })
}
