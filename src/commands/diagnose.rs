//! `bench diagnose`: the decision tree applied to a stored run.

use crate::error::BenchError;
use crate::model::result::RunResult;
use crate::{analysis, output, EXIT_OK};
use std::path::Path;

pub fn run(path: &Path) -> Result<u8, BenchError> {
    let r = RunResult::load(path)?;
    let findings = analysis::diagnose::diagnose(&r);
    crate::out_text!("{}", output::diagnose::render(&r, &findings));
    Ok(EXIT_OK)
}
