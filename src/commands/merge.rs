//! `bench merge`: the shards of one distributed run → one run directory.

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
    Ok(EXIT_OK)
}
