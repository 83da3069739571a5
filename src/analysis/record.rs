//! `bench baseline`'s recording: the scenario's repetitions, each refused as it is recorded
//! when it is no baseline (a server that was down), stored once every one is whole; or runs
//! already made (`--from DIR`), checked the same way and stored without running them again.
//! An interrupted or failed recording keeps its finished runs and says how to store them.

use crate::config::run::RunSpec;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::session::repeat::{repeat, Halt, Layout};
use crate::session::Session;
use crate::verdict::baseline as store;
use std::path::{Path, PathBuf};

/// A recording: the baseline's name, its repetitions, where it is stored and whether it
/// replaces one there; `keep(dir)` is the command that stores runs kept under `dir`.
pub struct Recording<'a> {
    pub name: &'a str,
    pub repeat: usize,
    pub path: &'a Path,
    pub force: bool,
    pub keep: &'a dyn Fn(&Path) -> String,
}

/// Records and stores the baseline; returns it and the directory of its runs.
pub async fn record(
    session: &Session,
    r: &Recording<'_>,
) -> Result<(Baseline, PathBuf), BenchError> {
    let stem = session.out_dir(&format!("{}-baseline", session.spec().scenario.name));
    crate::output::check_fresh(&stem)?;
    let label = format!("baseline {}", r.name);
    let layout = Layout {
        out: &stem,
        numbered: true,
        label: &label,
        at_most: false,
    };
    let done = repeat(session, r.repeat, &layout, |runs| {
        let (i, run) = (runs.len(), &runs[runs.len() - 1]);
        store::check_recorded(run).map(|()| true).map_err(|m| {
            BenchError::Runtime(format!(
                "baseline {} not stored: repetition {i} {m}; its runs are under {} — fix the endpoint or the scenario and record again",
                r.name,
                stem.display()
            ))
        })
    })
    .await?;
    let reps = match done.stopped {
        None => done.runs,
        Some(Halt::Interrupted) => {
            let whole = done.runs.iter().filter(|r| r.complete).count();
            return Err(BenchError::Incomplete(match whole {
                0 => String::new(),
                _ => format!(
                    "baseline {} not stored: interrupted; the {whole} finished repetitions are kept under {} — {}",
                    r.name,
                    stem.display(),
                    (r.keep)(&stem)
                ),
            }));
        }
        Some(Halt::Failed(e)) => return Err(e),
    };
    let b = Baseline::new(r.name, reps)?;
    store::save(&b, r.path, r.force).map_err(|e| {
        BenchError::Runtime(format!(
            "{e}\nthe {} repetitions are kept under {}; {}",
            b.repetitions.len(),
            stem.display(),
            (r.keep)(&stem)
        ))
    })?;
    Ok((b, stem))
}

/// `--from DIR`: runs already made, stored as the baseline `name` at `path` once each is
/// checked as a recorded repetition is, and all are of `spec`'s traffic and one configuration.
pub fn from_dir(
    name: &str,
    spec: &RunSpec,
    dir: &Path,
    path: &Path,
    force: bool,
) -> Result<Baseline, BenchError> {
    use crate::verdict::stored::{load, Role};
    let arm = load(&[dir.to_path_buf()], Role::Against)?;
    if arm.runs.is_empty() {
        return Err(BenchError::usage(format!(
            "--from {}: no finished run there",
            dir.display()
        )));
    }
    let hash = spec.scenario.traffic_hash();
    for (run, file) in arm.runs.iter().zip(&arm.files) {
        store::check_recorded(run)
            .map_err(|m| BenchError::usage(format!("--from {}: the run {m}", file.display())))?;
        if run.scenario_hash != hash {
            return Err(BenchError::usage(format!(
                "--from {}: the run is of other traffic than {} (its scenario hash differs); store runs of this scenario",
                file.display(),
                spec.scenario_file.display()
            )));
        }
    }
    let b = Baseline::from_runs(name, arm.runs)?;
    store::save(&b, path, force)?;
    Ok(b)
}
