//! `bench diagnose`: the decision tree applied to a stored run.

use crate::error::BenchError;
use crate::model::result::RunResult;
use crate::{analysis, output, EXIT_OK};
use std::path::Path;

/// `path`: a run.json, or the run directory that holds one (as `bench report` takes).
pub fn run(path: &Path) -> Result<u8, BenchError> {
    let file = if path.is_dir() {
        path.join("run.json")
    } else {
        path.to_path_buf()
    };
    let r = RunResult::load(&file)?;
    let findings = analysis::diagnose::diagnose(&r);
    crate::out_text!("{}", output::diagnose::render(&r, &findings));
    Ok(EXIT_OK)
}
