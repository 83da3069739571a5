//! `bench sweep`: the scenario at a series of loads; writes sweep.json, sweep.csv and
//! report.html beside the points' run directories.

use crate::analysis::sweep::{sweep, SweepPlan};
use crate::cli::SweepArgs;
use crate::config::run::{default_out_dir, RunSpec};
use crate::error::BenchError;
use crate::output::export::Requested;
use crate::output::sweep::Report;
use crate::{output, EXIT_OK};

pub async fn run(args: SweepArgs) -> Result<u8, BenchError> {
    let plan = SweepPlan::from_args(&args)?;
    // Read once; each point varies this spec's load in memory (the flags' own load is the
    // points' to set).
    let mut opts = args.opts.clone();
    (opts.rate, opts.concurrency) = (None, None);
    let spec = RunSpec::from_args(&args.scenario, &opts)?;
    let out = args
        .opts
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("sweep"));
    output::check_fresh(&out)?;
    let s = sweep(&plan, spec, &out).await?;
    crate::out_text!("{}", output::sweep::render(&s, plan.attainment));
    let first = s.points.first().and_then(|p| {
        crate::model::result::RunResult::load(&std::path::Path::new(&p.run_dir).join("run.json"))
            .ok()
    });
    let (json, csv, html) = (
        out.join("sweep.json"),
        out.join("sweep.csv"),
        out.join("report.html"),
    );
    Requested::new(None, Some(&html), Some(&json), Some(&csv), None).write(&Report {
        sweep: &s,
        first: first.as_ref(),
    })?;
    Ok(EXIT_OK)
}
