//! Trace files (`[workload] type = "trace"`): JSONL in the Mooncake format, one request a line:
//!
//! ```json
//! {"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 48]}
//! ```
//!
//! `timestamp` is the send time in ms from the trace's start (non-decreasing);
//! `input_length` / `output_length` (aliases `input_tokens` / `output_tokens`) the prompt and
//! output lengths in tokens; `hash_ids` (optional) the ids of the prompt's blocks of
//! `block_tokens` tokens, so requests sharing leading ids share that prefix. Other keys are
//! ignored. Every error names the file, the line and the field, before anything is sent.

use crate::error::ScenarioError;
use crate::model::trace::{Trace, TraceRow};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::Path;

/// Reads and checks a Mooncake-format trace.
pub fn load(path: &Path) -> Result<Trace, ScenarioError> {
    let bytes = std::fs::read(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let sha256 = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let text = String::from_utf8(bytes).map_err(|e| ScenarioError::Other {
        path: path.to_path_buf(),
        message: format!("not UTF-8 text ({e})"),
    })?;
    let mut rows: Vec<TraceRow> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |field: Option<&str>, message: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            line: i + 1,
            column: 1,
            field: field.map(str::to_string),
            message,
        };
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(None, format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad(None, "each line must be a JSON object".into()))?;
        let timestamp_ms = match obj.get("timestamp") {
            Some(t) => t
                .as_f64()
                .filter(|t| t.is_finite() && *t >= 0.0 && *t <= 1e12)
                .ok_or_else(|| {
                    bad(
                        Some("timestamp"),
                        format!(
                            "must be a number of ms from the trace's start, 0 to 1e12 (got {t})"
                        ),
                    )
                })?,
            None => {
                return Err(bad(
                    Some("timestamp"),
                    "is required (ms from the trace's start)".into(),
                ))
            }
        };
        if let Some(prev) = rows.last() {
            if timestamp_ms < prev.timestamp_ms {
                return Err(bad(
                    Some("timestamp"),
                    format!(
                        "goes back in time ({timestamp_ms} ms after {} ms on line {}); sort the trace by timestamp",
                        prev.timestamp_ms, prev.line
                    ),
                ));
            }
        }
        let length = |names: [&str; 2]| -> Result<u32, ScenarioError> {
            let (key, v) = names
                .iter()
                .find_map(|k| obj.get(*k).map(|v| (*k, v)))
                .ok_or_else(|| bad(Some(names[0]), format!("is required (or `{}`)", names[1])))?;
            v.as_u64()
                .filter(|n| (1..=1_000_000).contains(n))
                .map(|n| n as u32)
                .ok_or_else(|| {
                    bad(
                        Some(key),
                        format!("must be a number of tokens from 1 to 1000000 (got {v})"),
                    )
                })
        };
        let input_tokens = length(["input_length", "input_tokens"])?;
        let output_tokens = length(["output_length", "output_tokens"])?;
        let hash_ids = match obj.get("hash_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|x| {
                    x.as_u64().ok_or_else(|| {
                        bad(
                            Some("hash_ids"),
                            format!("must be non-negative integers (got {x})"),
                        )
                    })
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(bad(
                    Some("hash_ids"),
                    format!("must be an array of block ids (got {other})"),
                ))
            }
        };
        rows.push(TraceRow {
            timestamp_ms,
            input_tokens,
            output_tokens,
            hash_ids,
            line: i + 1,
        });
    }
    if rows.is_empty() {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: "the trace has no requests".into(),
        });
    }
    Ok(Trace {
        path: path.to_path_buf(),
        rows,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Trace, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, text).unwrap();
        super::load(&p)
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
