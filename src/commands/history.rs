//! `bench history PATH…`: the compares CI accumulated — directories of compare JSON outputs
//! (`bench compare --json`), single files, or optimization-record CSVs (`--record`) — as one
//! history per scenario: a terminal table, optionally an HTML page and a JSON file, and the
//! change points of each gated metric. Exit 1 when a metric drifted or shifted the bad way.

use crate::analysis::history::by_scenario;
use crate::analysis::history::load::{load, Loaded};
use crate::cli::HistoryArgs;
use crate::error::BenchError;
use crate::output::{self, history::Report};
use crate::{EXIT_OK, EXIT_REGRESSION};
use std::path::PathBuf;

pub fn run(args: &HistoryArgs) -> Result<u8, BenchError> {
    let floor_pct = crate::config::thresholds::min_change_pct(&args.min_change)?;
    crate::config::thresholds::check_alpha(args.alpha)?;
    let files = super::requested(&args.output, None);
    files.check::<Report>()?;
    let Loaded {
        entries,
        skipped,
        twice,
    } = load(&args.paths)?;
    if !skipped.is_empty() {
        crate::say!(
            "history: {} path(s) not read — not compare outputs, links to directories, FIFOs or devices: {}",
            skipped.len(),
            skipped
                .iter()
                .take(5)
                .map(|p: &PathBuf| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if twice > 0 {
        crate::say!(
            "history: {twice} compare(s) read more than once (a JSON output and its record rows, or the same file twice) were counted once"
        );
    }
    let histories = by_scenario(entries, args.scenario.as_deref(), args.alpha, floor_pct);
    if histories.is_empty() {
        return Err(BenchError::usage(format!(
            "no compares{} found in {}: give directories of `bench compare --json` outputs or `--record` CSVs",
            args.scenario
                .as_deref()
                .map(|s| format!(" of scenario {s}"))
                .unwrap_or_default(),
            args.paths
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    for h in &histories {
        crate::out_text!("{}", output::history::render(h));
    }
    files.write(&Report(&histories))?;
    Ok(if histories.iter().any(|h| !h.worse().is_empty()) {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    })
}
