//! Reading a history's compares: `bench compare --json` outputs and `--record` CSV rows from
//! files and directories (three levels deep, regular files only, each bounded in size), each
//! compare counted once however many times it is reached.

use crate::error::BenchError;
use crate::model::comparison::{Verdict, COMPARE_SCHEMA};
use crate::model::history::{Entry, Value};
use crate::output::record::RecordRow;
use chrono::{DateTime, NaiveDate, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// What [`load`] read: the entries (each compare once), the paths it passed over, and how
/// many compares it read more than once.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    pub skipped: Vec<PathBuf>,
    pub twice: usize,
}

/// Reads every path (see [`read_path`]) and keeps each compare once.
pub fn load(paths: &[PathBuf]) -> Result<Loaded, BenchError> {
    let mut skipped = Vec::new();
    let mut entries = Vec::new();
    for p in paths {
        read_path(p, &mut entries, &mut skipped)?;
    }
    let (entries, twice) = once_each(entries);
    Ok(Loaded {
        entries,
        skipped,
        twice,
    })
}

/// Each compare once: entries of the same scenario that judged the same runs are one compare
/// read twice (its JSON and its record rows, a file reached by two paths). The JSON is kept,
/// which holds its time to the second. Entries without their runs are kept as they are.
/// Returns the entries and how many were dropped.
fn once_each(entries: Vec<Entry>) -> (Vec<Entry>, usize) {
    let mut seen: std::collections::HashMap<(String, String), usize> = Default::default();
    let mut kept: Vec<Entry> = Vec::with_capacity(entries.len());
    let mut twice = 0;
    for e in entries {
        if e.runs.is_empty() {
            kept.push(e);
            continue;
        }
        let key = (e.scenario.clone(), e.runs.clone());
        match seen.get(&key) {
            Some(&i) => {
                twice += 1;
                let from_record = |e: &Entry| e.source.contains('#');
                if from_record(&kept[i]) && !from_record(&e) {
                    kept[i] = e;
                }
            }
            None => {
                seen.insert(key, kept.len());
                kept.push(e);
            }
        }
    }
    (kept, twice)
}

/// The largest file `bench history` reads: a compare JSON is tens of kilobytes and a year
/// of a CI's record CSV a few megabytes; anything past this is refused, naming the file,
/// rather than read into memory whole.
const FILE_BYTES_MAX: u64 = 256 << 20;

/// Reads one path: a directory (its JSON and CSV files, three levels deep, symbolic links to
/// directories not followed), a compare JSON, or a record CSV. Only regular files are read:
/// a FIFO or a device (`/dev/zero`) named on the command line is an error, one met in a
/// directory is skipped and said.
fn read_path(p: &Path, out: &mut Vec<Entry>, skipped: &mut Vec<PathBuf>) -> Result<(), BenchError> {
    let meta = std::fs::metadata(p).map_err(|e| {
        BenchError::usage(format!(
            "{}: {}",
            p.display(),
            match e.kind() {
                std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                _ => e.to_string(),
            }
        ))
    })?;
    if meta.is_dir() {
        let mut files = Vec::new();
        walk(p, 3, &mut files, skipped);
        files.sort();
        for f in files {
            read_file(&f, out, skipped)?;
        }
        return Ok(());
    }
    if !meta.is_file() {
        return Err(BenchError::usage(format!(
            "{}: not a regular file (a FIFO or a device); give compare JSON files, record CSVs or directories of them",
            p.display()
        )));
    }
    read_file(p, out, skipped)
}

/// The JSON and CSV files under `dir`, `depth` levels deep. Entries are taken by their own
/// type, not what a link points to: a symbolic link to a directory is skipped (said), so a
/// `loop -> ..` link cannot read one file many times; a link to a regular file is read.
fn walk(dir: &Path, depth: usize, files: &mut Vec<PathBuf>, skipped: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let Ok(kind) = e.file_type() else { continue };
        let named = matches!(p.extension().and_then(|x| x.to_str()), Some("json" | "csv"));
        if kind.is_dir() {
            if depth > 1 {
                walk(&p, depth - 1, files, skipped);
            }
        } else if kind.is_symlink() {
            match std::fs::metadata(&p) {
                Ok(m) if m.is_file() && named => files.push(p),
                Ok(m) if m.is_dir() => skipped.push(p),
                _ => {}
            }
        } else if named {
            if kind.is_file() {
                files.push(p);
            } else {
                skipped.push(p);
            }
        }
    }
}

/// What history reads of a compare output: the fields it shows, typed as `Comparison` types
/// them (a field of the wrong type is an error naming it), the rest skipped unread — a
/// compare's notes, reasons and per-run values can be large, and are not kept.
#[derive(serde::Deserialize)]
struct Read {
    scenario_name: String,
    created_at: DateTime<Utc>,
    #[serde(default)]
    revision: Option<String>,
    #[serde(default)]
    interleaved: bool,
    baseline: String,
    #[serde(default)]
    baseline_runs: Vec<String>,
    #[serde(default)]
    candidate_runs: Vec<String>,
    // Read to be checked (a compare output carries them), not shown.
    #[serde(rename = "alpha")]
    _alpha: f64,
    #[serde(rename = "change")]
    _change: String,
    rows: Vec<ReadRow>,
}

/// What history reads of one row.
#[derive(serde::Deserialize)]
struct ReadRow {
    metric: crate::model::metric::Metric,
    unit: String,
    baseline: f64,
    candidate: f64,
    verdict: Verdict,
}

/// What tells a compare output from another JSON, read without building the whole value.
#[derive(serde::Deserialize)]
struct Probe {
    rows: Option<serde::de::IgnoredAny>,
    change: Option<serde::de::IgnoredAny>,
    schema_version: Option<u64>,
}

fn read_file(f: &Path, out: &mut Vec<Entry>, skipped: &mut Vec<PathBuf>) -> Result<(), BenchError> {
    use crate::config::{bounded_file, Unreadable};
    match bounded_file(f, FILE_BYTES_MAX) {
        Ok(_) => {}
        Err(Unreadable::NotRegular) => {
            skipped.push(f.to_path_buf());
            return Ok(());
        }
        Err(Unreadable::TooLarge(len)) => {
            return Err(BenchError::usage(format!(
                "{}: {} MiB is more than bench history reads from one file ({} MiB); a compare output is kilobytes — leave the file out",
                f.display(),
                len >> 20,
                FILE_BYTES_MAX >> 20
            )))
        }
        Err(Unreadable::Io(e)) => {
            return Err(BenchError::Runtime(format!(
                "cannot read {}: {e}",
                f.display()
            )))
        }
    }
    let cannot =
        |e: std::io::Error| BenchError::Runtime(format!("cannot read {}: {e}", f.display()));
    if f.extension().and_then(|x| x.to_str()) == Some("csv") {
        let bytes = std::fs::read(f).map_err(cannot)?;
        let Ok(text) = std::str::from_utf8(&bytes) else {
            skipped.push(f.to_path_buf());
            return Ok(());
        };
        let header = text.lines().next().unwrap_or_default();
        if header.trim_end() != crate::output::record::RECORD_COLUMNS.join(",") {
            skipped.push(f.to_path_buf());
            return Ok(());
        }
        out.extend(from_record(f, text)?);
        return Ok(());
    }
    // Streamed twice from the file, never held whole: first what kind of JSON it is, then
    // what history reads of it.
    let open = || {
        std::fs::File::open(f)
            .map(|h| std::io::BufReader::with_capacity(1 << 16, h))
            .map_err(cannot)
    };
    // Not JSON, or JSON of something else: not a compare output, skipped and said.
    let probe: Probe = match serde_json::from_reader(open()?) {
        Ok(p) => p,
        Err(_) => {
            skipped.push(f.to_path_buf());
            return Ok(());
        }
    };
    if probe.rows.is_none() || probe.change.is_none() {
        skipped.push(f.to_path_buf());
        return Ok(());
    }
    // A compare output that does not read as one is an error naming the file and the field.
    if probe.schema_version != Some(u64::from(COMPARE_SCHEMA)) {
        return Err(BenchError::Runtime(format!(
            "{}: compare schema_version {}, this bench reads {COMPARE_SCHEMA}; read it with the bench that wrote it, or judge its runs again with this one",
            f.display(),
            probe
                .schema_version
                .map_or("missing".to_string(), |v| v.to_string())
        )));
    }
    let de = &mut serde_json::Deserializer::from_reader(open()?);
    let c: Read = serde_path_to_error::deserialize(de).map_err(|e| {
        BenchError::Runtime(format!(
            "{}: a compare output whose `{}` does not read ({})",
            f.display(),
            e.path(),
            e.inner()
        ))
    })?;
    out.push(from_comparison(&c, f));
    Ok(())
}

/// The baseline a compare was judged against: the store name and, unless the baseline arm
/// was run alongside (`--interleave`), its runs.
fn from_comparison(c: &Read, f: &Path) -> Entry {
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
        runs: if c.candidate_runs.is_empty() {
            String::new()
        } else {
            format!(
                "{} | {}",
                c.baseline_runs.join(" "),
                c.candidate_runs.join(" ")
            )
        },
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
        let gate_verdicts = [
            "regressed",
            "improved",
            "no_change",
            "inconclusive",
            "accepted",
        ];
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
        let ids = crate::output::csv::unescape(&row.run_ids);
        let base_ids = ids.split('|').next().unwrap_or_default().trim().to_string();
        let key = format!(
            "{} [{base_ids}]",
            crate::output::csv::unescape(&row.baseline_name)
        );
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
                scenario: crate::output::csv::unescape(&row.scenario),
                baseline: key,
                values: BTreeMap::from([(row.metric.clone(), value)]),
                source: format!("{}#{ids}", f.display()),
                runs: ids.clone(),
            }),
        }
    }
    Ok(out)
}
