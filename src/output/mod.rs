//! The one output layer: every format a result is shown or stored in is a pure renderer
//! (`data → text or bytes`) in its own file, with a snapshot test (`src/output/snapshots/`), plus
//! one atomic writer.
//!
//! | what | renderer |
//! |---|---|
//! | run: terminal table | [`table`], with its windows ([`windows`]) and the server's figures ([`server`]) |
//! | run: `requests.csv`, `summary.csv` | [`csv`] |
//! | run: `--export vllm-json` | [`vllm`] |
//! | comparison: the default terminal view | [`brief`], its lines fitted by [`lines`] |
//! | comparison: everything (`--explain`), Markdown | [`compare`] |
//! | optimization record CSV (compare and stack) | [`record`] |
//! | baseline summary | [`baseline`] |
//! | sweep: table, CSV | [`sweep`] |
//! | stack: factorial and ladder tables | [`stack`] |
//! | diagnosis | [`diagnose`] |
//! | the plan (`bench validate`) | [`plan`] |
//! | `bench selftest` rows | [`selftest`] |
//! | `bench history`: the compares and their change points | [`history`] |
//! | HTML pages for a run, a comparison, a sweep, a stack, a baseline, a history | [`html`] |
//! | the report files of compare, history and stack, written by one writer | [`export`] |
//! | tables in Markdown and HTML | [`markup`] |
//!
//! Every file is written to a temporary file in the same directory, flushed to disk and then
//! renamed over the target, so a reader never sees half a file and a crash leaves either the
//! old file or the new one.

pub mod baseline;
pub mod brief;
pub mod compare;
pub mod csv;
pub mod diagnose;
pub mod export;
pub mod history;
pub mod html;
pub mod lines;
pub mod markup;
pub mod plan;
pub mod record;
pub mod selftest;
pub mod server;
pub mod stack;
pub mod sweep;
pub mod table;
pub mod vllm;
pub mod windows;

use crate::error::BenchError;
use crate::model::result::RunResult;
use std::io::Write;

/// A command that writes several runs under `out` (repetitions, blocks, sweep points, stack
/// configurations) refuses a directory that already holds runs: its own would land beside an
/// earlier command's, and whatever later reads the directory — `compare --control/--candidate
/// DIR`, `stack --from DIR` — would take both as one set.
pub fn check_fresh(out: &Path) -> Result<(), BenchError> {
    let mut dirs = vec![(out.to_path_buf(), 0)];
    while let Some((d, depth)) = dirs.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.file_name().is_some_and(|n| n == "run.json") {
                return Err(BenchError::usage(format!(
                    "--out {} already holds runs of an earlier command ({}); this one writes several runs there, and a directory read later as one set of runs would mix the two: give another --out, or remove it",
                    out.display(),
                    p.display()
                )));
            }
            if depth < 3 && p.is_dir() {
                dirs.push((p, depth + 1));
            }
        }
    }
    Ok(())
}
use std::path::{Path, PathBuf};

/// Milliseconds to 4 significant digits (µs below 1 ms): the precision the histograms hold.
pub fn sig4(ms: f64) -> String {
    let a = ms.abs();
    if a >= 1000.0 {
        format!("{ms:.0}")
    } else if a >= 100.0 {
        format!("{ms:.1}")
    } else if a >= 10.0 {
        format!("{ms:.2}")
    } else {
        format!("{ms:.3}")
    }
}

/// Pretty JSON of anything serializable, for files.
pub fn json<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, BenchError> {
    serde_json::to_vec_pretty(v)
        .map_err(|e| BenchError::Runtime(format!("cannot encode JSON: {e}")))
}

/// Writes `bytes` to `path` atomically: a temp file `.NAME.tmp-PID` beside it, fsync, rename,
/// then fsync of the directory so the rename itself survives a power cut. Temp files a killed
/// writer left for the same name (their process gone) are removed first, so `kill -9` inside
/// the write window leaves no debris that accumulates.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), BenchError> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// [`write_atomic`] with the content produced by `fill` into a buffered writer, so a large
/// file is never built in memory first.
pub fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), BenchError> {
    write_durably(path, fill, true)
}

/// [`write_atomic_with`] that never replaces a file: the finished temp file is hard-linked
/// to `path`, which the file system refuses when `path` exists — so of two writers racing
/// for the same new name exactly one wins, and the other gets an `AlreadyExists` error
/// ([`BenchError::Write`]) with nothing replaced. A check before the write cannot give that:
/// both writers may pass it.
pub fn write_new_with(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
) -> Result<(), BenchError> {
    write_durably(path, fill, false)
}

fn write_durably(
    path: &Path,
    fill: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> std::io::Result<()>,
    replace: bool,
) -> Result<(), BenchError> {
    let err = |source| BenchError::Write {
        path: path.to_path_buf(),
        source,
    };
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    create_dir_durably(dir).map_err(err)?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    remove_stale_temps(dir, &name);
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut w = std::io::BufWriter::with_capacity(1 << 16, std::fs::File::create(&tmp)?);
        fill(&mut w)?;
        let f = w.into_inner().map_err(|e| e.into_error())?;
        f.sync_all()?;
        if replace {
            std::fs::rename(&tmp, path)?;
        } else {
            std::fs::hard_link(&tmp, path)?;
            std::fs::remove_file(&tmp)?;
        }
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(err)
}

/// `create_dir_all`, then each directory it created made durable in its parent (a crash
/// after the write must not lose the new directory that holds it).
fn create_dir_durably(dir: &Path) -> std::io::Result<()> {
    let mut created = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d.filter(|p| !p.as_os_str().is_empty() && !p.exists()) {
        created.push(p.to_path_buf());
        d = p.parent();
    }
    std::fs::create_dir_all(dir)?;
    for c in created {
        let parent = c
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        sync_dir(parent)?;
    }
    Ok(())
}

/// Removes `.NAME.tmp-PID` files in `dir` whose writer is gone — of any NAME, since a kill at
/// the rename leaves one whatever file was being written — and this process's own earlier
/// temp of `name` (this process writing other files keeps theirs). A writer is alive while
/// `/proc/PID` exists; where there is no `/proc`, a temp file older than an hour is stale.
fn remove_stale_temps(dir: &Path, name: &str) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let have_proc = Path::new("/proc/self").exists();
    for e in entries.flatten() {
        let file = e.file_name();
        let Some((of, pid)) = file
            .to_str()
            .and_then(|f| f.strip_prefix('.'))
            .and_then(|f| f.rsplit_once(".tmp-"))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        let stale = if pid == std::process::id() {
            of == name
        } else if have_proc {
            !Path::new("/proc").join(pid.to_string()).exists()
        } else {
            e.metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() > 3600)
        };
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Makes a rename in `dir` durable (a no-op where directories cannot be opened, e.g. Windows).
fn sync_dir(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Appends `bytes` to a file another program owns (`$GITHUB_STEP_SUMMARY`), creating it.
pub fn append(path: &Path, bytes: &[u8]) -> Result<(), BenchError> {
    let err = |source| BenchError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(err)?;
    f.write_all(bytes).map_err(err)
}

/// Writes `run.json`, `requests.csv`, `summary.csv` and `windows.csv` into `dir`. A run that kept its records
/// gets `requests.csv` rewritten in plan order; one that did not (over `--keep-records`) keeps
/// the file its session streamed. `run.json` is serialized straight into its file.
pub fn write_run_dir(dir: &Path, run: &RunResult) -> Result<Vec<PathBuf>, BenchError> {
    let mut written = Vec::new();
    let csv_path = dir.join("requests.csv");
    if run.requests_omitted == 0 {
        write_atomic(&csv_path, &csv::requests(&run.requests)?)?;
    }
    written.push(csv_path);
    let p = dir.join("summary.csv");
    write_atomic(&p, &csv::summary(&run.summary)?)?;
    written.push(p);
    if let Some(w) = &run.windows {
        let p = dir.join("windows.csv");
        write_atomic(&p, &csv::windows(w)?)?;
        written.push(p);
    }
    // run.json last: its presence means the directory is whole.
    let p = dir.join("run.json");
    write_atomic_with(&p, |w| {
        serde_json::to_writer_pretty(&mut *w, run).map_err(std::io::Error::other)
    })?;
    written.push(p);
    Ok(written)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_history;
#[cfg(test)]
mod tests_hostile;
