//! The baseline store: `baselines/<scenario>/<name>.json`, committed to the repository.
//!
//! A baseline holds several repetitions of the same run (each a complete `run.json` with raw
//! per-request values and histograms), so the gate can measure run-to-run noise and not only
//! the noise within one run. The file is pretty-printed JSON with a `schema_version`; it is
//! written atomically and never overwritten without `--force`. A file that does not parse, has
//! another schema version or is not a baseline is an error (exit 2), never an empty pass; so
//! is one whose repetitions are partial or inconsistent ([`check_reference`]).

use crate::error::BenchError;
use crate::metrics::consistency;
use crate::model::baseline::{Baseline, BASELINE_SCHEMA, KIND};
use crate::model::result::RunResult;
use crate::model::result::RECORDS_KEPT;
use crate::model::scenario::{canonical_changes, canonical_of, short_hash};
use crate::output::write_atomic_with;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// Reads a baseline; anything but a whole, known baseline is an error naming the fix.
pub fn load(path: &Path) -> Result<Baseline, BenchError> {
    let bad = |m: String| BenchError::Runtime(format!("baseline {}: {m}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => bad("does not exist; record one with `bench baseline SCENARIO` (or name another with --name)".into()),
        _ => bad(format!("cannot be read: {e}")),
    })?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "is not valid JSON ({e}); it is corrupt — re-record it with `bench baseline --force`"
        ))
    })?;
    if v.get("kind").and_then(|k| k.as_str()) != Some(KIND) {
        return Err(bad(
            "is not a bench baseline (no \"kind\": \"bench-baseline\")".into(),
        ));
    }
    match v.get("schema_version") {
        Some(n) if n.as_u64() == Some(BASELINE_SCHEMA as u64) => {}
        Some(n) => {
            return Err(bad(format!(
                "has schema_version {n}; this bench reads {BASELINE_SCHEMA} — re-record it with this bench (`bench baseline --force`)"
            )))
        }
        None => {
            return Err(bad(format!(
                "has no schema_version; this bench reads {BASELINE_SCHEMA} — re-record it with `bench baseline --force`"
            )))
        }
    }
    let b: Baseline = Baseline::deserialize(&v)
        .map_err(|e| bad(format!("does not match the baseline schema ({e})")))?;
    if b.repetitions.is_empty() {
        return Err(bad("holds no repetitions".into()));
    }
    if let Some(p) = repetition_problems(&b, &v).into_iter().next() {
        return Err(bad(p));
    }
    for (i, r) in b.repetitions.iter().enumerate() {
        check_reference(r)
            .map_err(|m| bad(format!("repetition {} (run {}) {m}", i + 1, r.run_id)))?;
    }
    Ok(b)
}

/// What ties a baseline's repetitions together: one scenario, whose traffic hash recomputed
/// from the stored scenario is the stored hash (so neither can be edited apart from the
/// other); one configuration; one run each (distinct run ids). The first problem found, each
/// naming the repetition and the fix.
fn repetition_problems(b: &Baseline, raw: &serde_json::Value) -> Vec<String> {
    let mut p = Vec::new();
    let mut ids = std::collections::BTreeSet::new();
    for (i, r) in b.repetitions.iter().enumerate() {
        let rep = format!("repetition {} (run {})", i + 1, r.run_id);
        let recomputed = r.scenario.traffic_hash();
        if r.scenario_hash != b.scenario_hash {
            p.push(format!(
                "{rep} has another scenario hash than the baseline's"
            ));
        } else if recomputed != r.scenario_hash {
            let stored = canonical_of(&raw["repetitions"][i]["scenario"]);
            let read = canonical_changes(&stored, &r.scenario.canonical());
            let why = if read.is_empty() {
                "its hash was edited, or computed by a bench that hashed the scenario otherwise"
                    .to_string()
            } else {
                format!(
                    "this bench reads fields the file does not hold as written ({}): a bench with other defaults recorded it",
                    read.join("; ")
                )
            };
            p.push(format!(
                "{rep}: its stored scenario hashes to {}, not to its recorded scenario hash {} — {why}; re-record it with `bench baseline {} --force`",
                short_hash(&recomputed),
                short_hash(&r.scenario_hash),
                r.scenario_file
            ));
        }
        if r.vars != b.vars {
            let diffs = super::compare::diff_vars(&b.vars, &r.vars);
            p.push(format!(
                "{rep} ran another configuration than the baseline's ({})",
                super::compare::describe_change(&diffs)
            ));
        }
        if r.scenario_name != b.scenario_name {
            p.push(format!(
                "{rep} is of scenario `{}`, the baseline of `{}`",
                r.scenario_name, b.scenario_name
            ));
        }
        if !ids.insert(r.run_id.as_str()) {
            p.push(format!(
                "{rep} repeats an earlier repetition's run id: one run counted twice would narrow the gate's interval"
            ));
        }
    }
    p
}

/// A run taken as a reference (a baseline repetition, `compare --against RUN.json`) must be
/// whole and self-consistent ([`consistency::problems`]); otherwise the error names what is
/// wrong and the fix.
fn check_reference(r: &RunResult) -> Result<(), String> {
    let p = consistency::problems(r);
    if p.is_empty() {
        return Ok(());
    }
    Err(format!(
        "{}; a corrupt or partial reference cannot be judged against — re-record it with `bench baseline --force` (or restore the file from version control)",
        p.join("; ")
    ))
}

/// A run just recorded to be a reference (a baseline's repetition, an interleave's control
/// run) that could not be one — every request failed, a server down — is refused then, not at
/// the first compare; the message says what it found and the outcomes of its requests.
pub fn check_recorded(r: &RunResult) -> Result<(), String> {
    let p = consistency::problems(r);
    if p.is_empty() {
        return Ok(());
    }
    let c = &r.summary.counts;
    let errors: Vec<String> = c.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
    Err(format!(
        "{} ({} sent, {} ok, errors: {})",
        p.join("; "),
        c.sent,
        c.ok,
        if errors.is_empty() {
            "none".into()
        } else {
            errors.join(", ")
        }
    ))
}

/// Writes `b` atomically; an existing file is replaced only with `force`.
pub fn save(b: &Baseline, path: &Path, force: bool) -> Result<(), BenchError> {
    if path.exists() && !force {
        return Err(BenchError::usage(format!(
            "{} exists; pass --force to replace it or --name to keep both",
            path.display()
        )));
    }
    let bounded = bounded(b);
    let fill = |w: &mut std::io::BufWriter<std::fs::File>| {
        serde_json::to_writer_pretty(&mut *w, bounded.as_ref().unwrap_or(b))
            .map_err(std::io::Error::other)
    };
    if force {
        return write_atomic_with(path, fill);
    }
    // Created exclusively: another process that stored the same name meanwhile keeps its
    // baseline, and this one says so rather than replacing it.
    match crate::output::write_new_with(path, fill) {
        Err(BenchError::Write { source, .. })
            if source.kind() == std::io::ErrorKind::AlreadyExists =>
        {
            Err(BenchError::usage(format!(
                "{} was stored by another process while this baseline ran; pass --force to replace it or --name to keep both",
                path.display()
            )))
        }
        other => other,
    }
}

/// Whether a baseline can be stored at `path`: its directory made, and a file written and
/// removed there. Checked before the runs, so that a read-only or full store is refused
/// before minutes of runs rather than after them.
pub fn check_writable(path: &Path) -> Result<(), BenchError> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    // The directories this check makes are removed again: it leaves the store as it was.
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .collect();
    let probe = dir.join(format!(".bench-probe-{}", std::process::id()));
    let tried = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&probe, b"probe"));
    let _ = std::fs::remove_file(&probe);
    for d in missing {
        let _ = std::fs::remove_dir(d);
    }
    tried.map_err(|e| {
        BenchError::usage(format!(
            "cannot store a baseline in {}: {e}; make it writable or pass --baselines DIR",
            dir.display()
        ))
    })
}

/// A baseline's size must not grow with the request count: a repetition with more than
/// [`RECORDS_KEPT`] records is stored by its summary and histograms alone (HDR, 3 significant
/// digits: every quantile within 0.1 %, which the gate then reads; see `sample`). None when
/// every repetition is within the limit already.
fn bounded(b: &Baseline) -> Option<Baseline> {
    let over = |r: &RunResult| r.requests.len() as u64 > RECORDS_KEPT;
    b.repetitions.iter().any(over).then(|| {
        let mut b = b.clone();
        for r in b.repetitions.iter_mut().filter(|r| over(r)) {
            r.requests_omitted = r.requests.len() as u64;
            r.requests = Vec::new();
        }
        b
    })
}

/// `DIR/<scenario>/<name>.json`; both must be plain names (one path component: no `/`, `..`
/// or absolute path), so a baseline is never read or written outside the store.
pub fn path(dir: &Path, scenario: &str, name: &str) -> Result<PathBuf, BenchError> {
    crate::config::scenario::check_name(name)
        .map_err(|m| BenchError::usage(format!("--name: {m}")))?;
    crate::config::scenario::check_name(scenario)
        .map_err(|m| BenchError::usage(format!("scenario name: {m}")))?;
    Ok(dir.join(scenario).join(format!("{name}.json")))
}

/// `(scenario, name, path)` of every stored baseline.
pub fn list(dir: &Path) -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    let Ok(scenarios) = std::fs::read_dir(dir) else {
        return out;
    };
    for s in scenarios.flatten() {
        let Ok(files) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().is_some_and(|e| e == "json") {
                let name = p
                    .file_stem()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                out.push((s.file_name().to_string_lossy().into_owned(), name, p));
            }
        }
    }
    out.sort();
    out
}

/// `(scenario, name, baseline)` of every stored baseline, each read as the gate reads it:
/// one that would not be judged carries its error's text.
pub fn list_loaded(dir: &Path) -> Vec<(String, String, Result<Baseline, String>)> {
    list(dir)
        .into_iter()
        .map(|(scenario, name, path)| (scenario, name, load(&path).map_err(|e| e.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::scenario::{LoadMode, Workload};

    #[test]
    fn the_committed_baseline_reads_with_its_typed_scenario() {
        // Recorded before run.json carried a typed scenario (and before `salt`): the JSON it
        // holds must still read as one.
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines/smoke/main.json");
        let b = load(&p).unwrap();
        let s = &b.repetitions[0].scenario;
        assert_eq!(s.name, "smoke");
        assert!(matches!(s.load.mode, LoadMode::Closed { .. }));
        assert!(matches!(s.workload, Workload::Synthetic { .. }));
    }
}

#[cfg(test)]
mod bounded_tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::{record, run_of, scenario};

    #[test]
    fn a_long_repetition_is_stored_by_its_histograms_alone() {
        let long = run_of(
            (0..RECORDS_KEPT + 1)
                .map(|i| crate::model::record::RequestRecord {
                    ttft_us: Some(1000 + i % 500),
                    e2e_us: Some(5000 + i % 500),
                    end_us: i * 10 + 5000,
                    ..record(i, Outcome::Ok)
                })
                .collect(),
            scenario(""),
            1,
        );
        let mut short = run_of(vec![record(0, Outcome::Ok)], scenario(""), 1);
        short.run_id = "r2".into();
        let mut b = Baseline::new("x", vec![long.clone(), short.clone()]).unwrap();
        b.scenario_hash = short.scenario.traffic_hash();
        for r in &mut b.repetitions {
            r.scenario_hash = b.scenario_hash.clone();
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        save(&b, &p, false).unwrap();
        let size = std::fs::metadata(&p).unwrap().len();
        let back = load(&p).unwrap();
        assert_eq!(back.repetitions[0].requests_omitted, RECORDS_KEPT + 1);
        assert!(back.repetitions[0].requests.is_empty());
        // (Floats only to JSON's round trip: serde_json parses the last digit loosely.)
        assert_eq!(back.repetitions[0].summary.counts, long.summary.counts);
        assert_eq!(back.repetitions[0].histograms, long.histograms);
        assert_eq!(
            back.repetitions[1].requests.len(),
            1,
            "a short one keeps its records"
        );
        assert!(size < 100_000, "{size} bytes");
    }
}
