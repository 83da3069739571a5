//! Files and flags → typed configuration, checked before any work starts: scenario files
//! ([`scenario`], with their [`dataset`]s and [`trace`]s), the flags that override them
//! ([`overrides`], [`kv`]), one run's whole specification ([`run::RunSpec`]) and the gate's
//! thresholds ([`thresholds`]). Every error names the file (with line and field) or the flag,
//! and the fix.

pub mod dataset;
pub mod kv;
pub mod overrides;
pub mod run;
pub mod scenario;
pub mod thresholds;
pub mod trace;
pub mod values;

/// A data file a scenario names (dataset, trace): its text and the SHA-256 of its bytes (part
/// of the scenario hash). Not UTF-8 is an error naming the file.
pub fn read_hashed(
    path: &std::path::Path,
) -> Result<(String, String), crate::error::ScenarioError> {
    use sha2::{Digest, Sha256};
    let max = values::limits::DATA_FILE_BYTES_MAX;
    if let Ok(m) = std::fs::metadata(path) {
        if m.len() > max {
            return Err(crate::error::ScenarioError::Other {
                path: path.to_path_buf(),
                message: format!(
                    "{:.1} GB, over the {} GB a dataset or trace file may be (it is read whole); use a sample of it",
                    m.len() as f64 / 1e9,
                    max >> 30
                ),
            });
        }
    }
    let bytes = std::fs::read(path).map_err(|source| crate::error::ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let sha256 = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = String::from_utf8(bytes).map_err(|e| crate::error::ScenarioError::Other {
        path: path.to_path_buf(),
        message: format!("not UTF-8 text ({e})"),
    })?;
    Ok((text, sha256))
}
