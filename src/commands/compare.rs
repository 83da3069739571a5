//! `bench compare`: judge a candidate — runs now (sequential by default, `--repeat` for a fixed
//! number), stored runs (`--candidate`), or runs interleaved with the baseline's configuration
//! (`--interleave`) — against a stored baseline (or `--against RUN.json`, or stored control
//! runs: `--control`); exit 1 on a regression, or on an undecided row with `--undecided fail`.

use crate::analysis::compare::Compare;
use crate::cli::CompareArgs;
use crate::config::compare::CompareConfig;
use crate::error::BenchError;
use crate::output::compare::Report;
use crate::output::export::PlanDesign;
use crate::{output, EXIT_OK, EXIT_REGRESSION};

pub async fn run(args: CompareArgs) -> Result<u8, BenchError> {
    let compare = Compare::new(CompareConfig::from_args(&args))?;
    let files = super::requested(&args.output, args.record.as_deref());
    if args.plan {
        files.check::<PlanDesign>()?;
        let (text, design) = compare.plan();
        crate::out_text!("{text}");
        // The design these flags give, as a sequential compare writes it beside its runs.
        return files
            .write(&PlanDesign(serde_json::json!(design)))
            .map(|()| EXIT_OK);
    }
    files.check::<Report>()?;
    let j = compare.judge().await?;
    let report = Report {
        c: &j.comparison,
        arms: (&j.base.repetitions, &j.cand),
        owner: args
            .owner
            .clone()
            .unwrap_or_else(crate::config::provenance::owner),
        note: args.note.as_deref().unwrap_or(""),
    };
    output::brief::write_all(&report, &files, args.explain)?;
    Ok(match j.comparison.fails() {
        true => EXIT_REGRESSION,
        false => EXIT_OK,
    })
}
