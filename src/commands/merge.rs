//! `bench merge`: the shards of one distributed run → one run directory. A shard that was
//! interrupted or failed makes the merged run incomplete too; it is written, and the exit code
//! is 2, as `bench run`'s is for a partial run.

use crate::error::BenchError;
use crate::model::result::RunResult;
use crate::{analysis, output, EXIT_OK};
use std::path::{Path, PathBuf};

pub fn run(dirs: &[PathBuf], out: &Path) -> Result<u8, BenchError> {
    let runs: Vec<RunResult> = dirs
        .iter()
        .map(|d| RunResult::load(&d.join("run.json")))
        .collect::<Result<_, _>>()?;
    let merged = analysis::merge::merge(runs)?;
    let files = output::write_run_dir(out, &merged)?;
    crate::out_text!("{}", output::table::render(&merged));
    let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
    crate::out!("\nwrote {}", names.join(", "));
    if !merged.complete {
        return Err(BenchError::Incomplete("error: a shard was interrupted or failed; the merged run was written with complete: false".into()));
    }
    Ok(EXIT_OK)
}
