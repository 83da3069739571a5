//! `bench history PATH…`: the compares CI accumulated — directories of compare JSON outputs
//! (`bench compare --json`), single files, or optimization-record CSVs (`--record`) — as one
//! history per scenario: a terminal table, optionally an HTML page and a JSON file, and the
//! change points of each gated metric. Exit 1 when a metric drifted or shifted the bad way.

use crate::analysis::history::history;
use crate::cli::HistoryArgs;
use crate::error::BenchError;
use crate::model::comparison::{Comparison, Verdict};
use crate::model::history::{Entry, History, Value};
use crate::output::record::RecordRow;
use crate::output::{self, html};
use crate::{EXIT_OK, EXIT_REGRESSION};
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn run(args: &HistoryArgs) -> Result<u8, BenchError> {
    let floor_pct = parse_pct(&args.min_change)?;
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(BenchError::usage(format!(
            "--alpha {}: give a probability between 0 and 1, e.g. 0.05",
            args.alpha
        )));
    }
    let mut skipped = Vec::new();
    let mut entries = Vec::new();
    for p in &args.paths {
        read_path(p, &mut entries, &mut skipped)?;
    }
    if !skipped.is_empty() {
        crate::say!(
            "history: {} file(s) are not compare outputs and were not read: {}",
            skipped.len(),
            skipped
                .iter()
                .take(5)
                .map(|p: &PathBuf| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut by_scenario: BTreeMap<String, Vec<Entry>> = BTreeMap::new();
    for e in entries {
        by_scenario.entry(e.scenario.clone()).or_default().push(e);
    }
    if let Some(s) = &args.scenario {
        by_scenario.retain(|k, _| k == s);
    }
    if by_scenario.is_empty() {
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
    let histories: Vec<History> = by_scenario
        .into_iter()
        .map(|(s, e)| history(&s, e, args.alpha, floor_pct))
        .collect();
    for h in &histories {
        crate::out_text!("{}", output::history::render(h));
    }
    if let Some(p) = &args.html {
        let page = html::history_report(&histories);
        output::write_atomic(p, page.as_bytes())?;
        crate::out!("wrote {}", p.display());
    }
    if let Some(p) = &args.json {
        output::write_atomic(p, &output::json(&histories)?)?;
        crate::out!("wrote {}", p.display());
    }
    Ok(if histories.iter().any(|h| !h.worse().is_empty()) {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    })
}

/// `5%` or `5` → 5.0.
fn parse_pct(s: &str) -> Result<f64, BenchError> {
    s.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| BenchError::usage(format!("--min-change {s}: give a percentage such as 5%")))
}

/// Reads one path: a directory (its JSON and CSV files, three levels deep), a compare JSON,
/// or a record CSV.
fn read_path(p: &Path, out: &mut Vec<Entry>, skipped: &mut Vec<PathBuf>) -> Result<(), BenchError> {
    if p.is_dir() {
        let mut files = Vec::new();
        walk(p, 3, &mut files);
        files.sort();
        for f in files {
            read_file(&f, out, skipped)?;
        }
        return Ok(());
    }
    if !p.exists() {
        return Err(BenchError::usage(format!(
            "{}: no such file or directory",
            p.display()
        )));
    }
    read_file(p, out, skipped)
}

fn walk(dir: &Path, depth: usize, files: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() && depth > 1 {
            walk(&p, depth - 1, files);
        } else if matches!(p.extension().and_then(|x| x.to_str()), Some("json" | "csv")) {
            files.push(p);
        }
    }
}

fn read_file(f: &Path, out: &mut Vec<Entry>, skipped: &mut Vec<PathBuf>) -> Result<(), BenchError> {
    let text = std::fs::read_to_string(f)
        .map_err(|e| BenchError::Runtime(format!("cannot read {}: {e}", f.display())))?;
    if f.extension().and_then(|x| x.to_str()) == Some("csv") {
        let header = text.lines().next().unwrap_or_default();
        if header.trim_end() != output::record::RECORD_COLUMNS.join(",") {
            skipped.push(f.to_path_buf());
            return Ok(());
        }
        out.extend(from_record(f, &text)?);
        return Ok(());
    }
    let v: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(_) => {
            skipped.push(f.to_path_buf());
            return Ok(());
        }
    };
    if v.get("rows").is_none() || v.get("change").is_none() {
        skipped.push(f.to_path_buf());
        return Ok(());
    }
    // A file that looks like a comparison and does not read as one is an error, not a gap.
    let c: Comparison = serde_json::from_value(v).map_err(|e| {
        BenchError::Runtime(format!(
            "{}: looks like a compare output but does not read as one ({e})",
            f.display()
        ))
    })?;
    out.push(from_comparison(&c, f));
    Ok(())
}

/// The baseline a compare was judged against: the store name and, unless the baseline arm
/// was run alongside (`--interleave`), its runs.
fn from_comparison(c: &Comparison, f: &Path) -> Entry {
    let baseline = if c.interleaved {
        c.baseline.clone()
    } else {
        format!("{} [{}]", c.baseline, c.baseline_runs.join(" "))
    };
    let values = c
        .rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotGated && r.candidate.is_finite())
        .map(|r| {
            (
                r.metric.to_string(),
                Value {
                    unit: r.unit.clone(),
                    baseline: r.baseline,
                    candidate: r.candidate,
                    verdict: r.verdict.name().into(),
                },
            )
        })
        .collect();
    Entry {
        when: c.created_at,
        label: c
            .revision
            .as_deref()
            .map(|r| r.chars().take(10).collect())
            .unwrap_or_else(|| c.created_at.format("%Y-%m-%d %H:%M").to_string()),
        scenario: c.scenario_name.clone(),
        baseline,
        values,
        source: f.display().to_string(),
    }
}

/// A record cell as written, without the formula guard (`'=x` → `=x`).
fn unescape(s: &str) -> String {
    match s.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest.to_string(),
        _ => s.to_string(),
    }
}

/// The compares of a record CSV: its rows grouped by the runs they name (one compare), in
/// file order within a date; stack rows and rows not gated are left out.
fn from_record(f: &Path, text: &str) -> Result<Vec<Entry>, BenchError> {
    let mut rd = csv::Reader::from_reader(text.as_bytes());
    let mut out: Vec<Entry> = Vec::new();
    for (i, row) in rd.deserialize::<RecordRow>().enumerate() {
        let row = row.map_err(|e| {
            BenchError::Runtime(format!("{}: record row {}: {e}", f.display(), i + 2))
        })?;
        let gate_verdicts = ["regressed", "improved", "no_change", "inconclusive"];
        if !gate_verdicts.contains(&row.verdict.as_str()) || row.run_ids.is_empty() {
            continue;
        }
        let (Ok(b), Ok(c)) = (row.baseline.parse::<f64>(), row.candidate.parse::<f64>()) else {
            continue;
        };
        let date = NaiveDate::parse_from_str(&row.date, "%Y-%m-%d").map_err(|e| {
            BenchError::Runtime(format!(
                "{}: record row {}: date `{}` ({e})",
                f.display(),
                i + 2,
                row.date
            ))
        })?;
        let when: DateTime<Utc> = date.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc();
        let ids = unescape(&row.run_ids);
        let base_ids = ids.split('|').next().unwrap_or_default().trim().to_string();
        let key = format!("{} [{base_ids}]", unescape(&row.baseline_name));
        let value = Value {
            unit: row.unit.clone(),
            baseline: b,
            candidate: c,
            verdict: row.verdict.clone(),
        };
        match out
            .iter_mut()
            .rev()
            .find(|e| e.source.ends_with(&format!("#{ids}")))
        {
            Some(e) => {
                e.values.insert(row.metric.clone(), value);
            }
            None => out.push(Entry {
                when,
                label: row.date.clone(),
                scenario: unescape(&row.scenario),
                baseline: key,
                values: BTreeMap::from([(row.metric.clone(), value)]),
                source: format!("{}#{ids}", f.display()),
            }),
        }
    }
    Ok(out)
}
