//! Stored runs named on `bench compare`'s command line: `--candidate` (runs to judge) and
//! `--control` (the control arm of an earlier `--interleave`, judged again with other
//! thresholds, another `--alpha`, or after an interruption); [`load_file`] also reads
//! `bench stack --from DIR`'s.
//!
//! A path is a `run.json`, or a directory holding one, or a directory of repetitions
//! (`rep1/run.json`, `rep2/…`, taken in repetition order) — what `bench compare --repeat` and
//! `--interleave` write (`OUT/candidate`, `OUT/control`). A run the gate cannot judge is an
//! error (exit 2) naming the file: corrupt or self-contradictory, without a successful request
//! when it is a control run (judged against, as a baseline's repetition is), or cut short — except that
//! in a directory of repetitions a run marked interrupted is left out, said on stderr, since
//! that is how an interrupted `--interleave` leaves its last run. When the two arms then hold
//! different numbers of runs, the blocks both arms finished are judged (the repetitions of one
//! block share a number), so an interrupted interleave is still judged in pairs.

use crate::error::BenchError;
use crate::metrics::consistency;
use crate::model::baseline::Baseline;
use crate::model::result::RunResult;
use std::path::{Path, PathBuf};

/// The runs of one arm, each with the file it came from, in the order given.
#[derive(Debug)]
pub struct Arm {
    pub runs: Vec<RunResult>,
    pub files: Vec<PathBuf>,
}

/// What stored runs are read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Judged: a run whose every request failed is a result (its error rate).
    Candidate,
    /// Judged against: it needs a latency to compare with, as a baseline's repetition does.
    Control,
    /// `bench stack --from`: read as candidates are.
    Pool,
    /// `bench compare --against`: judged against, as control runs are.
    Against,
}

impl Role {
    /// The option that names such runs, for messages.
    pub fn flag(self) -> &'static str {
        match self {
            Role::Candidate => "--candidate",
            Role::Control => "--control",
            Role::Pool => "--from",
            Role::Against => "--against",
        }
    }
}

/// Loads the runs `paths` name.
pub fn load(paths: &[PathBuf], role: Role) -> Result<Arm, BenchError> {
    let flag = role.flag();
    let mut arm = Arm {
        runs: Vec::new(),
        files: Vec::new(),
    };
    for path in paths {
        let (files, in_dir) = files(path, flag)?;
        for file in files {
            if let Some(run) = load_file(&file, role, in_dir)? {
                arm.runs.push(run);
                arm.files.push(file);
            }
        }
    }
    Ok(arm)
}

/// One stored run to judge: an error naming `file` if it is corrupt or self-contradictory, or
/// cut short when named on its own; `None` (said on stderr) when it was interrupted and
/// `found` — met in a directory rather than named — so that it is left out.
pub fn load_file(file: &Path, role: Role, found: bool) -> Result<Option<RunResult>, BenchError> {
    let flag = role.flag();
    let run = RunResult::load(file)?;
    if found && !run.complete {
        crate::say!(
            "{flag}: left out {} (the run was interrupted)",
            file.display()
        );
        return Ok(None);
    }
    let problems = if matches!(role, Role::Control | Role::Against) {
        consistency::problems(&run)
    } else {
        consistency::candidate_problems(&run)
    };
    if !problems.is_empty() {
        return Err(BenchError::Runtime(format!(
            "{flag} {}: the run {}; a partial or corrupt run cannot be judged — leave it out or run it again",
            file.display(),
            problems.join("; ")
        )));
    }
    Ok(Some(run))
}

/// The run files a path names, and whether it was a directory of repetitions.
fn files(path: &Path, flag: &str) -> Result<(Vec<PathBuf>, bool), BenchError> {
    if !path.is_dir() {
        return Ok((vec![path.to_path_buf()], false));
    }
    if path.join("run.json").is_file() {
        return Ok((vec![path.join("run.json")], false));
    }
    let read = std::fs::read_dir(path)
        .map_err(|e| BenchError::Runtime(format!("{flag} {}: {e}", path.display())))?;
    let mut reps: Vec<(u64, PathBuf)> = read
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().to_str()?.strip_prefix("rep")?.parse().ok()?;
            let f = e.path().join("run.json");
            f.is_file().then_some((n, f))
        })
        .collect();
    if reps.is_empty() {
        let hint = if path.join("candidate").is_dir() && path.join("control").is_dir() {
            format!(
                " (an --interleave's output: give --control {0}/control --candidate {0}/candidate)",
                path.display()
            )
        } else {
            String::new()
        };
        return Err(BenchError::usage(format!(
            "{flag} {}: no run.json and no rep*/run.json in this directory{hint}",
            path.display()
        )));
    }
    reps.sort();
    Ok((reps.into_iter().map(|(_, f)| f).collect(), true))
}

/// When the arms hold different numbers of runs but their first runs alternate in blocks (an
/// interleave stopped in its last block), keeps only the blocks both arms finished and says
/// which runs are left out.
pub fn whole_blocks(control: &mut Arm, candidate: &mut Arm) {
    let n = control.runs.len().min(candidate.runs.len());
    if control.runs.len() == candidate.runs.len()
        || crate::verdict::gate::blocks(&control.runs[..n], &candidate.runs[..n]).is_none()
    {
        return;
    }
    let judged = match n {
        1 => "the block".to_string(),
        n => format!("the {n} blocks"),
    };
    for (flag, arm) in [("--control", control), ("--candidate", candidate)] {
        for f in arm.files.drain(n..) {
            crate::say!(
                "{flag}: left out {} (its block's other run is missing; judging {judged} both arms finished)",
                f.display()
            );
        }
        arm.runs.truncate(n);
    }
}

/// Stored control runs must be of the stored baseline's traffic and configuration: the
/// baseline is the record of what the control reproduces.
pub fn check_control(base: &Baseline, control: &Arm) -> Result<(), BenchError> {
    for (run, file) in control.runs.iter().zip(&control.files) {
        if run.scenario_hash != base.scenario_hash {
            return Err(BenchError::usage(format!(
                "--control {}: another scenario hash than baseline {}'s — other traffic",
                file.display(),
                base.name
            )));
        }
        if run.vars != base.vars {
            let diffs = crate::verdict::compare::diff_vars(&base.vars, &run.vars);
            return Err(BenchError::usage(format!(
                "--control {}: ran {} instead of baseline {}'s configuration",
                file.display(),
                crate::verdict::compare::describe_change(&diffs),
                base.name
            )));
        }
    }
    Ok(())
}

/// What a compare judges against: the stored baseline `name` of `scenario` under `baselines`,
/// or the `--against` runs standing in for one.
pub fn reference(
    against: &[PathBuf],
    baselines: &Path,
    scenario: &str,
    name: &str,
) -> Result<Baseline, BenchError> {
    use crate::verdict::baseline as store;
    if against.is_empty() {
        return store::load(&store::path(baselines, scenario, name)?);
    }
    let arm = load(against, Role::Against)?;
    let name = match against {
        [one] => one.display().to_string(),
        more => format!("{} stored runs ({})", arm.runs.len(), more.len()),
    };
    Baseline::from_runs(&name, arm.runs)
}
