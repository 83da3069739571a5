//! JSONL datasets: one request per line.
//!
//! Each non-blank line is a JSON object with either `prompt` (a string) or `messages` (an
//! OpenAI chat messages array), and optionally `output_tokens` (the `max_tokens` to ask for).
//! Other keys are ignored so converted public datasets load as they are. Errors name the file
//! and line.

use crate::error::ScenarioError;
use crate::model::dataset::{Dataset, DatasetEntry, DatasetPrompt};
use sha2::{Digest, Sha256};
use std::path::Path;

/// Reads and checks a dataset file; errors name the file and line.
pub fn load(path: &Path) -> Result<Dataset, ScenarioError> {
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
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            line: i + 1,
            column: 1,
            field: None,
            message,
        };
        let v: serde_json::Value =
            serde_json::from_str(line).map_err(|e| bad(format!("not JSON: {e}")))?;
        let obj = v
            .as_object()
            .ok_or_else(|| bad("each line must be a JSON object".into()))?;
        let prompt = match (obj.get("prompt"), obj.get("messages")) {
            (Some(serde_json::Value::String(p)), None) => DatasetPrompt::Text(p.clone()),
            (None, Some(m @ serde_json::Value::Array(a))) if !a.is_empty() => {
                DatasetPrompt::Messages(m.clone())
            }
            (Some(_), Some(_)) => {
                return Err(bad("has both `prompt` and `messages`; keep one".into()))
            }
            _ => {
                return Err(bad(
                    "needs `prompt` (a string) or `messages` (a non-empty array)".into(),
                ))
            }
        };
        let output_tokens = match obj.get("output_tokens") {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => match v.as_u64() {
                Some(n) if n >= 1 && n <= u32::MAX as u64 => Some(n as u32),
                _ => {
                    return Err(bad(format!(
                        "`output_tokens` must be an integer ≥ 1 (got {v})"
                    )))
                }
            },
        };
        entries.push(DatasetEntry {
            prompt,
            output_tokens,
            line: i + 1,
        });
    }
    if entries.is_empty() {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: "the dataset has no requests".into(),
        });
    }
    Ok(Dataset {
        path: path.to_path_buf(),
        entries,
        sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Dataset, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(&p, text).unwrap();
        super::load(&p)
    }

    #[test]
    fn reads_prompts_messages_and_lengths() {
        let d = load("{\"prompt\":\"hi\",\"output_tokens\":5}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"id\":3}\n").unwrap();
        assert_eq!(d.entries.len(), 2);
        assert_eq!(d.entries[0].output_tokens, Some(5));
        assert_eq!(d.entries[1].line, 3);
        assert_eq!(d.first_messages_line(), Some(3));
        assert!(!d.all_have_output_tokens());
    }

    #[test]
    fn errors_name_the_line() {
        let e = load("{\"prompt\":\"a\"}\n{\"prompt\":1}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("d.jsonl:2:1"), "{e}");
        let e = load("{\"prompt\":\"a\",\"output_tokens\":0}\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains(":1:1") && e.contains("output_tokens"), "{e}");
        assert!(load("\n\n").is_err());
    }
}
