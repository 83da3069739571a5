//! Files and flags → typed configuration, checked before any work starts: scenario files
//! ([`scenario`], with their [`dataset`]s, [`trace`]s and [`quality`] sets), the flags that
//! override them ([`overrides`], [`kv`]), one run's whole specification ([`run::RunSpec`])
//! and the run flags it is built from ([`flags`]), the gate's thresholds and accepted trade-offs ([`thresholds`], [`waiver`]), a
//! compare's, a sweep's, a stack's and the self-test's settings ([`compare`], [`sweep`],
//! [`stack`], [`selftest`]), who and what a record names ([`provenance`]), and the limits every value
//! is checked against ([`values`]). Every error names the file (with line and field) or the
//! flag, and the fix. Only this module and `commands/` see `cli`'s types.

pub mod compare;
pub mod dataset;
pub mod flags;
pub mod kv;
pub mod overrides;
pub mod provenance;
pub mod quality;
pub mod run;
pub mod scenario;
pub mod selftest;
pub mod stack;
pub mod sweep;
pub mod thresholds;
pub mod trace;
pub mod values;
pub mod waiver;

/// Why a file is not read: it is not a regular file (a FIFO, a device such as `/dev/zero`,
/// which would block or never end), it is larger than its kind of file ever is, or it cannot
/// be examined.
#[derive(Debug)]
pub enum Unreadable {
    NotRegular,
    /// Its size in bytes.
    TooLarge(u64),
    Io(std::io::Error),
}

/// The size of `path` when it is a regular file of at most `max_bytes` (symbolic links
/// followed); callers say in their own words why anything else is refused.
pub fn bounded_file(path: &std::path::Path, max_bytes: u64) -> Result<u64, Unreadable> {
    let meta = std::fs::metadata(path).map_err(Unreadable::Io)?;
    if !meta.is_file() {
        return Err(Unreadable::NotRegular);
    }
    match meta.len() {
        len if len > max_bytes => Err(Unreadable::TooLarge(len)),
        len => Ok(len),
    }
}

/// A data file a scenario names (dataset, trace): its text and the SHA-256 of its bytes (part
/// of the scenario hash). Not UTF-8 is an error naming the file.
pub fn read_hashed(
    path: &std::path::Path,
) -> Result<(String, String), crate::error::ScenarioError> {
    let max = values::limits::DATA_FILE_BYTES_MAX;
    let refused = |message: String| crate::error::ScenarioError::Other {
        path: path.to_path_buf(),
        message,
    };
    match bounded_file(path, max) {
        Ok(_) => {}
        Err(Unreadable::NotRegular) => {
            return Err(refused(
                "not a regular file (a directory, FIFO or device is never read as a dataset or trace); name the file itself".into(),
            ))
        }
        Err(Unreadable::TooLarge(len)) => {
            return Err(refused(format!(
                "{:.1} GB, over the {} GB a dataset or trace file may be (it is read whole); use a sample of it",
                len as f64 / 1e9,
                max >> 30
            )))
        }
        Err(Unreadable::Io(source)) => {
            return Err(crate::error::ScenarioError::Read {
                path: path.to_path_buf(),
                source,
            })
        }
    }
    let bytes = std::fs::read(path).map_err(|source| crate::error::ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let sha256 = crate::model::scenario::sha256_hex(&bytes);
    let text = String::from_utf8(bytes).map_err(|e| crate::error::ScenarioError::Other {
        path: path.to_path_buf(),
        message: format!("not UTF-8 text ({e})"),
    })?;
    Ok((text, sha256))
}
