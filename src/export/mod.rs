//! Writing results: pure renderers (`results → bytes`) and one atomic writer.
//!
//! Every file is written to a temporary file in the same directory, flushed to disk and then
//! renamed over the target, so a reader never sees half a file and a crash leaves either the
//! old file or the new one.

pub mod compare;
pub mod csv;
pub mod table;
pub mod vllm;

use crate::error::BenchError;
use crate::result::RunResult;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` atomically (temp file + fsync + rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BenchError> {
    let err = |source| BenchError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// Writes `run.json`, `requests.csv` and `summary.csv` into `dir`.
pub fn write_run_dir(dir: &Path, run: &RunResult) -> Result<Vec<PathBuf>, BenchError> {
    let json = serde_json::to_vec_pretty(run)
        .map_err(|e| BenchError::Runtime(format!("cannot encode run.json: {e}")))?;
    let files = [
        ("requests.csv", csv::requests(&run.requests)?),
        ("summary.csv", csv::summary(&run.summary)?),
        // run.json last: its presence means the directory is whole.
        ("run.json", json),
    ];
    let mut written = Vec::new();
    for (name, bytes) in files {
        let p = dir.join(name);
        write_atomic(&p, &bytes)?;
        written.push(p);
    }
    Ok(written)
}
