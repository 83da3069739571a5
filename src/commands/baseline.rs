//! `bench baseline`: record a scenario's baseline (`--repeat` runs), list the store, or show
//! one baseline.

use crate::cli::BaselineArgs;
use crate::config::run::RunSpec;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::session::repeat::{repeat, Layout, Stopped};
use crate::session::Session;
use crate::verdict::baseline as store;
use crate::{output, EXIT_ERROR, EXIT_OK};

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
    crate::config::values::repeats(args.repeat)?;
    if path.exists() && !args.force {
        return Err(BenchError::usage(format!(
            "{} exists; pass --force to replace it or --name to keep both",
            path.display()
        )));
    }
    // What a compare against it can decide, from the gate that will judge it.
    let cfg = crate::config::thresholds::GateConfig::for_scenario(None, &spec.scenario, 0.05)?;
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
        Some(Stopped::Interrupted) => return Ok(EXIT_ERROR),
        Some(Stopped::Failed(e)) => return Err(e),
    };
    let b = Baseline::new(&args.name, reps)?;
    store::save(&b, &path, args.force)?;
    crate::out_text!("{}", output::baseline::summary(&b));
    if b.repetitions.len() >= 2 {
        let design = crate::verdict::sequential::Design::new(
            crate::verdict::sequential::FIRST_LOOK,
            crate::verdict::sequential::DEFAULT_MAX,
            0.05,
        );
        crate::out!("what `bench compare` against it can decide (`bench compare --plan` for other settings):");
        crate::out_text!("{}", crate::verdict::plan::text(&b, &cfg, &design, false));
    }
    crate::out!(
        "wrote {} (run directories under {})",
        path.display(),
        stem.display()
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
