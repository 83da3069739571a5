//! Trace files (`[workload] type = "trace"`), one request a row.
//!
//! * **Mooncake** (the default): JSONL,
//!   `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}`.
//!   `timestamp` is the send time in ms from the trace's start (non-decreasing);
//!   `input_length` / `output_length` (aliases `input_tokens` / `output_tokens`) the prompt and
//!   output lengths in tokens; `hash_ids` (optional) the ids of the prompt's blocks of
//!   `block_tokens` tokens, so requests sharing leading ids share that prefix.
//! * **A table of your own** (`columns = { timestamp = "…", input = "…", output = "…",
//!   unit = "ms" | "s" }`): a CSV file with a header row (a `.csv` path) or JSONL with those
//!   keys; timestamps in `unit` (default ms); no prefix structure unless a JSONL row also has
//!   `hash_ids`.
//!
//! * **Sessions** (either shape, as AIPerf reads Mooncake traces): rows with the same
//!   `session_id` are the turns of one session, in file order. Its first row is sent at its
//!   `timestamp`; every later one takes no `timestamp` but an optional `delay` (ms, default
//!   0) and is sent that long after the previous turn's reply ended. Each row's prompt is its
//!   own (its `hash_ids` already hold the history), and a failed turn ends the session.
//!
//! Other keys and columns are ignored. Every error names the file, the line and the field,
//! before anything is sent.

use crate::error::ScenarioError;
use crate::model::scenario::TraceColumns;
use crate::model::trace::{Trace, TraceRow};
use serde_json::Value;
use std::path::Path;

/// The names a row's fields go by, and the timestamps' unit in ms.
struct Names<'a> {
    timestamp: &'a str,
    input: Vec<&'a str>,
    output: Vec<&'a str>,
    ms_per_unit: f64,
    unit: &'a str,
}

/// Reads and checks a trace: Mooncake JSONL, or a table with `columns`.
pub fn load(path: &Path, columns: Option<&TraceColumns>) -> Result<Trace, ScenarioError> {
    let (text, sha256) = super::read_hashed(path)?;
    let names = match columns {
        None => Names {
            timestamp: "timestamp",
            input: vec!["input_length", "input_tokens"],
            output: vec!["output_length", "output_tokens"],
            ms_per_unit: 1.0,
            unit: "ms",
        },
        Some(c) => Names {
            timestamp: &c.timestamp,
            input: vec![c.input.as_str()],
            output: vec![c.output.as_str()],
            ms_per_unit: if c.unit == "s" { 1000.0 } else { 1.0 },
            unit: &c.unit,
        },
    };
    let is_csv = columns.is_some()
        && path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let rows = if is_csv {
        csv_rows(path, &text, &names)?
    } else {
        jsonl_rows(path, &text, &names)?
    };
    if rows.is_empty() {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: "the trace has no requests".into(),
        });
    }
    let (rows, units) = sessions(path, &names, rows)?;
    Ok(Trace {
        rows: rows.into_iter().map(|r| r.row).collect(),
        units,
        sha256,
    })
}

/// A row as read, before sessions are resolved.
struct Parsed {
    row: TraceRow,
    timestamp_ms: Option<f64>,
    session: Option<String>,
}

/// Groups rows into units (sessions, or single rows) and checks the timing rules: a unit's
/// first row has a `timestamp`, not earlier than the previous unit's; a later turn has none
/// but may have a `delay`.
fn sessions(
    path: &Path,
    names: &Names,
    mut rows: Vec<Parsed>,
) -> Result<(Vec<Parsed>, Vec<Vec<usize>>), ScenarioError> {
    let mut units: Vec<Vec<usize>> = Vec::new();
    let mut open: std::collections::HashMap<String, usize> = Default::default();
    let mut last_start: Option<(f64, usize)> = None;
    let ts = names.timestamp;
    for i in 0..rows.len() {
        let line = rows[i].row.line;
        let bad = |field: &str, message: String| invalid(path, line, Some(field), message);
        let later = rows[i].session.as_ref().and_then(|s| open.get(s).copied());
        match later {
            Some(u) => {
                if rows[i].timestamp_ms.is_some() {
                    return Err(bad(
                        ts,
                        format!(
                            "is not used on a later turn of session `{}`: it is sent `delay` ms after the previous turn's reply",
                            rows[i].session.as_deref().unwrap_or_default()
                        ),
                    ));
                }
                rows[i].row.timestamp_ms = rows[units[u][0]].row.timestamp_ms;
                units[u].push(i);
            }
            None => {
                if rows[i].row.delay_ms.is_some() {
                    return Err(bad(
                        "delay",
                        "applies only to a later turn of a session (a row whose `session_id` an earlier row has); this row is sent at its `timestamp`".into(),
                    ));
                }
                let t = rows[i].timestamp_ms.ok_or_else(|| {
                    bad(
                        ts,
                        format!(
                            "is required (the send time, {} from the trace's start)",
                            names.unit
                        ),
                    )
                })?;
                if let Some((prev, prev_line)) = last_start {
                    if t < prev {
                        return Err(bad(
                            ts,
                            format!(
                                "goes back in time ({t} ms after {prev} ms on line {prev_line}); sort the trace by timestamp"
                            ),
                        ));
                    }
                }
                last_start = Some((t, line));
                rows[i].row.timestamp_ms = t;
                if let Some(s) = &rows[i].session {
                    open.insert(s.clone(), units.len());
                }
                units.push(vec![i]);
            }
        }
    }
    Ok((rows, units))
}

fn invalid(path: &Path, line: usize, field: Option<&str>, message: String) -> ScenarioError {
    ScenarioError::Invalid {
        path: path.to_path_buf(),
        line,
        column: 1,
        field: field.map(str::to_string),
        message,
    }
}

fn jsonl_rows(path: &Path, text: &str, names: &Names) -> Result<Vec<Parsed>, ScenarioError> {
    let mut rows: Vec<Parsed> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(m) = super::values::line_too_long(line) {
            return Err(invalid(path, i + 1, None, m));
        }
        let v: Value = serde_json::from_str(line)
            .map_err(|e| invalid(path, i + 1, None, format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| invalid(path, i + 1, None, "each line must be a JSON object".into()))?;
        rows.push(parse_row(path, i + 1, |k| obj.get(k).cloned(), names)?);
    }
    Ok(rows)
}

fn csv_rows(path: &Path, text: &str, names: &Names) -> Result<Vec<Parsed>, ScenarioError> {
    let mut r = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_reader(text.as_bytes());
    let header = r
        .headers()
        .map_err(|e| invalid(path, 1, None, format!("not CSV: {e}")))?
        .clone();
    let wanted = [names.timestamp]
        .into_iter()
        .chain(names.input.iter().copied())
        .chain(names.output.iter().copied());
    for w in wanted {
        if !header.iter().any(|h| h == w) {
            return Err(invalid(
                path,
                1,
                Some(w),
                format!(
                    "no such column in the header (it has: {})",
                    header.iter().collect::<Vec<_>>().join(", ")
                ),
            ));
        }
    }
    let mut rows: Vec<Parsed> = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| {
            let line = e.position().map_or(0, |p| p.line() as usize);
            invalid(path, line, None, format!("not CSV: {e}"))
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        let get = |k: &str| -> Option<Value> {
            let cell = header
                .iter()
                .position(|h| h == k)
                .and_then(|i| rec.get(i))?;
            if cell.is_empty() {
                return None;
            }
            Some(match (cell.parse::<u64>(), cell.parse::<f64>()) {
                (Ok(n), _) => Value::from(n),
                (_, Ok(f)) => Value::from(f),
                _ => Value::String(cell.to_string()),
            })
        };
        rows.push(parse_row(path, line, get, names)?);
    }
    Ok(rows)
}

/// One row from its fields (`get` by name); the timing rules that involve other rows are
/// [`sessions`]'.
fn parse_row(
    path: &Path,
    line: usize,
    get: impl Fn(&str) -> Option<Value>,
    names: &Names,
) -> Result<Parsed, ScenarioError> {
    let bad = |field: &str, message: String| invalid(path, line, Some(field), message);
    let ts = names.timestamp;
    let timestamp_ms = match get(ts) {
        Some(t) => Some(
            t.as_f64()
                .map(|t| t * names.ms_per_unit)
                .filter(|t| t.is_finite() && *t >= 0.0 && *t <= 1e12)
                .ok_or_else(|| {
                    bad(
                        ts,
                        format!(
                            "must be a time in {} from the trace's start, up to 1e12 ms (got {t})",
                            names.unit
                        ),
                    )
                })?,
        ),
        None => None,
    };
    let session = match get("session_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(other) => {
            return Err(bad(
                "session_id",
                format!("must be a string or a number (got {other})"),
            ))
        }
    };
    let delay_ms = match get("delay") {
        None | Some(Value::Null) => None,
        Some(d) => Some(
            d.as_f64()
                .filter(|d| d.is_finite() && (0.0..=limits_delay_ms()).contains(d))
                .ok_or_else(|| {
                    bad(
                        "delay",
                        format!("must be ms from 0 to {} (got {d})", limits_delay_ms()),
                    )
                })?,
        ),
    };
    let length = |keys: &[&str]| -> Result<u32, ScenarioError> {
        let (key, v) = keys
            .iter()
            .find_map(|k| get(k).map(|v| (*k, v)))
            .ok_or_else(|| {
                let also = keys[1..]
                    .iter()
                    .map(|k| format!(" (or `{k}`)"))
                    .collect::<String>();
                bad(keys[0], format!("is required{also}"))
            })?;
        v.as_u64()
            .filter(|n| (1..=1_000_000).contains(n))
            .map(|n| n as u32)
            .ok_or_else(|| {
                bad(
                    key,
                    format!("must be a number of tokens from 1 to 1000000 (got {v})"),
                )
            })
    };
    let input_tokens = length(&names.input)?;
    let output_tokens = length(&names.output)?;
    let hash_ids = match get("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| {
                x.as_u64().ok_or_else(|| {
                    bad(
                        "hash_ids",
                        format!("must be non-negative integers (got {x})"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(bad(
                "hash_ids",
                format!("must be an array of block ids (got {other})"),
            ))
        }
    };
    Ok(Parsed {
        row: TraceRow {
            timestamp_ms: 0.0,
            delay_ms,
            input_tokens,
            output_tokens,
            hash_ids,
            line,
        },
        timestamp_ms,
        session,
    })
}

/// The longest `delay` between turns, ms (a day).
fn limits_delay_ms() -> f64 {
    86_400_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Trace, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, text).unwrap();
        super::load(&p, None)
    }

    fn table(name: &str, text: &str, unit: &str) -> Result<Trace, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        let c = TraceColumns {
            timestamp: "t".into(),
            input: "in".into(),
            output: "out".into(),
            unit: unit.into(),
        };
        super::load(&p, Some(&c))
    }

    #[test]
    fn reads_csv_and_jsonl_tables_with_named_columns() {
        let t = table(
            "x.csv",
            "id, t, in, out\na, 0.5, 100, 7\nb, 1.25, 40, 3\n",
            "s",
        )
        .unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(
            (
                t.rows[1].timestamp_ms,
                t.rows[1].input_tokens,
                t.rows[1].output_tokens,
                t.rows[1].line
            ),
            (1250.0, 40, 3, 3)
        );
        assert!(t.rows[0].hash_ids.is_empty());
        let t = table("x.jsonl", "{\"t\": 5, \"in\": 9, \"out\": 2}\n", "ms").unwrap();
        assert_eq!((t.rows[0].timestamp_ms, t.rows[0].input_tokens), (5.0, 9));
        let e = table("x.csv", "time, in, out\n1, 2, 3\n", "ms")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("x.csv:1:1: field `t`") && e.contains("time, in, out"),
            "{e}"
        );
        let e = table("x.csv", "t, in, out\n1, 2, 3\n2, lots, 3\n", "ms")
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.csv:3:1: field `in`"), "{e}");
    }

    #[test]
    fn sessions_group_rows_and_later_turns_take_a_delay() {
        let t = load(concat!(
            "{\"session_id\": \"a\", \"timestamp\": 0, \"input_length\": 10, \"output_length\": 2, \"hash_ids\": [1]}\n",
            "{\"timestamp\": 100, \"input_length\": 5, \"output_length\": 2}\n",
            "{\"session_id\": \"a\", \"delay\": 250, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": [1, 2]}\n",
            "{\"session_id\": 7, \"timestamp\": 150, \"input_length\": 8, \"output_length\": 2}\n",
            "{\"session_id\": \"a\", \"input_length\": 30, \"output_length\": 2}\n",
        ))
        .unwrap();
        assert!(t.has_sessions());
        assert_eq!(t.units, vec![vec![0, 2, 4], vec![1], vec![3]]);
        assert_eq!(
            (t.rows[2].delay_ms, t.rows[4].delay_ms),
            (Some(250.0), None)
        );
        assert_eq!(
            t.rows[4].timestamp_ms, 0.0,
            "a later turn carries its session's start"
        );
        assert_eq!(t.unit_start_ms(2), 150.0);
        // Units start in order even though a session's later turns come after other rows.
        let reuse = t.reuse(1);
        assert_eq!((reuse.rows, reuse.blocks, reuse.reused_blocks), (3, 3, 1));
        for (text, want) in [
            (
                "{\"session_id\": \"a\", \"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"session_id\": \"a\", \"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n",
                "t.jsonl:2:1: field `timestamp`: is not used on a later turn of session `a`",
            ),
            (
                "{\"timestamp\": 0, \"delay\": 5, \"input_length\": 1, \"output_length\": 1}\n",
                "t.jsonl:1:1: field `delay`: applies only to a later turn of a session",
            ),
            (
                "{\"session_id\": \"a\", \"input_length\": 1, \"output_length\": 1}\n",
                "t.jsonl:1:1: field `timestamp`: is required",
            ),
            (
                "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1}\n{\"session_id\": \"b\", \"delay\": -1, \"input_length\": 1, \"output_length\": 1}\n",
                "t.jsonl:2:1: field `delay`: must be ms from 0",
            ),
            (
                "{\"timestamp\": 0, \"session_id\": [1], \"input_length\": 1, \"output_length\": 1}\n",
                "t.jsonl:1:1: field `session_id`: must be a string or a number",
            ),
        ] {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(want), "{e}\nwant: {want}");
        }
    }

    #[test]
    fn reads_mooncake_rows_and_aliases() {
        let t = load("{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 20, \"hash_ids\": [1, 2]}\n\n{\"timestamp\": 250.5, \"input_tokens\": 600, \"output_tokens\": 9, \"extra\": 1}\n").unwrap();
        assert_eq!(t.rows.len(), 2);
        assert_eq!(t.rows[0].hash_ids, vec![1, 2]);
        assert_eq!(
            (
                t.rows[1].timestamp_ms,
                t.rows[1].input_tokens,
                t.rows[1].line
            ),
            (250.5, 600, 3)
        );
        assert!(t.rows[1].hash_ids.is_empty());
    }

    #[test]
    fn bad_rows_name_line_and_field() {
        for (text, want) in [
            ("{\"input_length\": 1, \"output_length\": 1}", "t.jsonl:1:1: field `timestamp`"),
            ("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1}", "t.jsonl:2:1: field `timestamp`: goes back"),
            ("{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 1}", "field `input_length`"),
            ("{\"timestamp\": 0, \"input_length\": 3}", "field `output_length`"),
            ("{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1, -2]}", "field `hash_ids`"),
            ("{\"timestamp\": -1, \"input_length\": 3, \"output_length\": 1}", "field `timestamp`"),
            ("[1]", "t.jsonl:1:1: each line"),
            ("{oops", "t.jsonl:1:1: not JSON"),
        ] {
            let e = load(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(load("\n").is_err());
    }
}
