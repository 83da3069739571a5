//! `bench baseline`: record a scenario's baseline (`--repeat` runs), list the store, or show
//! one baseline.

use crate::cli::BaselineArgs;
use crate::config::run::RunSpec;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::session::repeat::{repeat, Halt, Layout};
use crate::session::Session;
use crate::verdict::baseline as store;
use crate::{output, EXIT_OK};

pub async fn run(args: BaselineArgs) -> Result<u8, BenchError> {
    if args.list {
        list(&args);
        return Ok(EXIT_OK);
    }
    let scenario = args
        .scenario
        .clone()
        .ok_or_else(|| BenchError::usage("a scenario file is required"))?;
    let spec = RunSpec::from_args(&scenario, &args.opts)?;
    let name = args.show.as_deref().unwrap_or(&args.name);
    let path = store::path(&args.baselines, &spec.scenario.name, name)?;
    if args.show.is_some() {
        crate::out_text!("{}", output::baseline::summary(&store::load(&path)?));
        return Ok(EXIT_OK);
    }
    if let Some(dir) = &args.from {
        return from_runs(&args, &spec, dir, &path);
    }
    crate::config::values::repeats(args.repeat)?;
    if path.exists() && !args.force {
        return Err(BenchError::usage(format!(
            "{} exists; pass --force to replace it or --name to keep both",
            path.display()
        )));
    }
    // A store that cannot be written is refused before the runs, not after them.
    store::check_writable(&path)?;
    let keep = |stem: &std::path::Path| {
        format!(
            "store them as the baseline without running them again: bench baseline {} --from {}{}{}",
            scenario.display(),
            stem.display(),
            if args.name == "main" { String::new() } else { format!(" --name {}", args.name) },
            if args.baselines == std::path::Path::new("baselines") {
                String::new()
            } else {
                format!(" --baselines {}", args.baselines.display())
            }
        )
    };
    // What a compare against it can decide, from the gate that will judge it.
    let cfg = crate::config::thresholds::GateConfig::for_scenario(
        None,
        &spec.scenario,
        crate::config::thresholds::DEFAULT_ALPHA,
    )?;
    let session = Session::new(spec)?;
    let stem = session.out_dir(&format!("{}-baseline", session.spec().scenario.name));
    output::check_fresh(&stem)?;
    let label = format!("baseline {}", args.name);
    let layout = Layout {
        out: &stem,
        numbered: true,
        label: &label,
        at_most: false,
    };
    let done = repeat(&session, args.repeat as usize, &layout, |runs| {
        // Refused as it is recorded, not at the first compare: a baseline of a server that
        // was down is no baseline.
        let (i, run) = (runs.len(), &runs[runs.len() - 1]);
        store::check_recorded(run).map(|()| true).map_err(|m| {
            BenchError::Runtime(format!(
                "baseline {} not stored: repetition {i} {m}; its runs are under {} — fix the endpoint or the scenario and record again",
                args.name,
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
                    args.name,
                    stem.display(),
                    keep(&stem)
                ),
            }));
        }
        Some(Halt::Failed(e)) => return Err(e),
    };
    let b = Baseline::new(&args.name, reps)?;
    store::save(&b, &path, args.force).map_err(|e| {
        BenchError::Runtime(format!(
            "{e}\nthe {} repetitions are kept under {}; {}",
            b.repetitions.len(),
            stem.display(),
            keep(&stem)
        ))
    })?;
    crate::out_text!("{}", output::baseline::summary(&b));
    if b.repetitions.len() >= 2 {
        let design = crate::verdict::sequential::Design::new(
            crate::verdict::sequential::FIRST_LOOK,
            crate::verdict::sequential::DEFAULT_MAX,
            crate::config::thresholds::DEFAULT_ALPHA,
        );
        crate::out!("what `bench compare` against it can decide (`bench compare --plan` for other settings):");
        crate::out_text!(
            "{}",
            crate::verdict::forecast::text(&b, &cfg, &design, false)
        );
    }
    crate::out!(
        "wrote {} (run directories under {})",
        path.display(),
        stem.display()
    );
    Ok(EXIT_OK)
}

/// `--from DIR`: runs already made, stored as the baseline once each is checked as a
/// recorded repetition is, and all are of this scenario's traffic and one configuration.
fn from_runs(
    args: &BaselineArgs,
    spec: &RunSpec,
    dir: &std::path::Path,
    path: &std::path::Path,
) -> Result<u8, BenchError> {
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
    let b = Baseline::from_runs(&args.name, arm.runs)?;
    store::save(&b, path, args.force)?;
    crate::out_text!("{}", output::baseline::summary(&b));
    crate::out!(
        "wrote {} from the {} runs under {}",
        path.display(),
        b.repetitions.len(),
        dir.display()
    );
    Ok(EXIT_OK)
}

fn list(args: &BaselineArgs) {
    let all = store::list(&args.baselines);
    if all.is_empty() {
        crate::out!("no baselines under {}", args.baselines.display());
    }
    for (scenario, name, path) in all {
        match store::load(&path) {
            Ok(b) => crate::out!(
                "{scenario}/{name}: {} repetitions, created {} on {}, {} vars",
                b.repetitions.len(),
                b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
                b.environment.host,
                b.vars.len()
            ),
            Err(e) => crate::out!("{scenario}/{name}: unreadable — {e}"),
        }
    }
}
