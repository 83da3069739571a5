//! `bench baseline`'s recording: the scenario's repetitions, each refused as it is recorded
//! when it is no baseline (a server that was down), stored once every one is whole; or runs
//! already made (`--from DIR`), checked the same way and stored without running them again.
//! An interrupted or failed recording keeps its finished runs and says how to store them.

use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::scenario::Scenario;
use crate::session::repeat::{repeat, Halt, Layout};
use crate::session::Session;
use crate::verdict::baseline as store;
use std::path::{Path, PathBuf};

/// A recording: the baseline's name, its repetitions, where it is stored and whether it
/// replaces one there, and the scenario and store the command that stores kept runs names.
pub struct Recording<'a> {
    pub name: &'a str,
    pub repeat: usize,
    pub path: &'a Path,
    pub force: bool,
    pub scenario: &'a Path,
    pub baselines: &'a Path,
}

impl Recording<'_> {
    /// Refuses, before the runs rather than after them, a baseline that exists (without
    /// `force`) or a store that cannot be written.
    pub fn check(&self) -> Result<(), BenchError> {
        if self.path.exists() && !self.force {
            return Err(BenchError::usage(format!(
                "{} exists; pass --force to replace it or --name to keep both",
                self.path.display()
            )));
        }
        store::check_writable(self.path)
    }

    /// The command that stores runs kept under `stem` as this baseline without running
    /// them again.
    fn keep(&self, stem: &Path) -> String {
        let mut c = format!(
            "store them as the baseline without running them again: bench baseline {} --from {}",
            self.scenario.display(),
            stem.display()
        );
        if self.name != "main" {
            c += &format!(" --name {}", self.name);
        }
        if self.baselines != Path::new("baselines") {
            c += &format!(" --baselines {}", self.baselines.display());
        }
        c
    }
}

/// The gate a compare against `scenario`'s baseline judges with (the scenario's own
/// thresholds over the defaults), read before the runs so that a bad one refuses them.
pub fn gate(scenario: &Scenario) -> Result<GateConfig, BenchError> {
    GateConfig::for_scenario(None, scenario, crate::config::thresholds::DEFAULT_ALPHA)
}

/// What a compare against `b` can decide with the default sequential design under `gate`;
/// `None` for a single repetition, which has no run-to-run spread to forecast from.
pub fn forecast(b: &Baseline, gate: &GateConfig) -> Option<String> {
    use crate::verdict::sequential::{Design, DEFAULT_MAX, FIRST_LOOK};
    if b.repetitions.len() < 2 {
        return None;
    }
    let design = Design::new(FIRST_LOOK, DEFAULT_MAX, gate.alpha);
    Some(crate::verdict::forecast::text(b, gate, &design, false))
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
                    r.keep(&stem)
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
            r.keep(&stem)
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
