//! `bench baseline`: record a scenario's baseline (`--repeat` runs), list the store, or show
//! one baseline.

use crate::analysis::record::{forecast, from_dir, record, Recording};
use crate::cli::BaselineArgs;
use crate::config::run::RunSpec;
use crate::error::BenchError;
use crate::session::Session;
use crate::verdict::baseline as store;
use crate::{output, EXIT_OK};

pub async fn run(args: BaselineArgs) -> Result<u8, BenchError> {
    if args.list {
        let all = store::list_loaded(&args.baselines);
        crate::out_text!("{}", output::baseline::listing(&args.baselines, &all));
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
    let recording = Recording {
        name: &args.name,
        repeat: crate::config::values::repeats(args.repeat)?,
        path: &path,
        force: args.force,
        scenario: &scenario,
        baselines: &args.baselines,
    };
    recording.check()?;
    let gate = crate::analysis::record::gate(&spec.scenario)?;
    let (b, stem) = record(&Session::new(spec)?, &recording).await?;
    crate::out_text!("{}", output::baseline::summary(&b));
    if let Some(text) = forecast(&b, &gate) {
        crate::out!("what `bench compare` against it can decide (`bench compare --plan` for other settings):");
        crate::out_text!("{text}");
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
