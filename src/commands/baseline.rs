//! `bench baseline`: record a scenario's baseline (`--repeat` runs), list the store, or show
//! one baseline.

use crate::analysis::record::{from_dir, record, Recording};
use crate::cli::BaselineArgs;
use crate::config::run::RunSpec;
use crate::error::BenchError;
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
    let recording = Recording {
        name: &args.name,
        repeat: args.repeat as usize,
        path: &path,
        force: args.force,
        keep: &keep,
    };
    let (b, stem) = record(&session, &recording).await?;
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

/// `--from DIR`: runs already made, stored as the baseline.
fn from_runs(
    args: &BaselineArgs,
    spec: &RunSpec,
    dir: &std::path::Path,
    path: &std::path::Path,
) -> Result<u8, BenchError> {
    let b = from_dir(&args.name, spec, dir, path, args.force)?;
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
    let all: Vec<_> = store::list(&args.baselines)
        .into_iter()
        .map(|(scenario, name, path)| {
            (
                scenario,
                name,
                store::load(&path).map_err(|e| e.to_string()),
            )
        })
        .collect();
    crate::out_text!("{}", output::baseline::listing(&args.baselines, &all));
}
