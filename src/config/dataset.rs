//! Dataset files: one request per entry; errors name the file and line.
//!
//! * **JSONL** (`format = "jsonl"`, the default): each non-blank line is a JSON object with
//!   either `prompt` (a string) or `messages` (an OpenAI chat messages array), and optionally
//!   `output_tokens` (the `max_tokens` to ask for). Other keys are ignored so converted public
//!   datasets load as they are.
//! * **ShareGPT** (`format = "sharegpt"`): a JSON array — or JSONL — of objects with
//!   `conversations: [{"from": "human" | "gpt", "value": "…"}, …]` (`user` / `assistant` /
//!   `chatgpt` / `bard` accepted as the usual aliases). Sent single-turn, as vLLM's
//!   `bench serve --dataset-name sharegpt` does: the first human turn is the prompt, and the
//!   turn that answers it sets `output_tokens` — its whitespace-separated word count, an
//!   approximation of its tokens (vLLM counts them with the model's tokenizer; a word is ≈ 1.3
//!   tokens of English for Llama-family tokenizers, so these requests ask for somewhat fewer).
//!   A conversation with no human turn followed by a reply makes no request and is counted as
//!   skipped (vLLM drops them too); an entry that is not such an object is an error. A
//!   conversation workload sends every human turn that a reply answers, in order, as one
//!   session (each reply's word count its turn's `max_tokens`).

use crate::error::ScenarioError;
use crate::model::dataset::{Dataset, DatasetEntry, DatasetPrompt};
use crate::model::scenario::DatasetFormat;
use serde_json::value::RawValue;
use serde_json::Value;
use std::path::Path;

/// Reads and checks a dataset file; errors name the file and line.
pub fn load(path: &Path, format: DatasetFormat) -> Result<Dataset, ScenarioError> {
    let (text, sha256) = super::read_hashed(path)?;
    let (entries, skipped) = match format {
        DatasetFormat::Jsonl => (jsonl(path, &text)?, 0),
        DatasetFormat::Sharegpt => sharegpt(path, &text)?,
    };
    if entries.is_empty() {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: if skipped > 0 {
                format!("the dataset has no requests ({skipped} conversations without a human turn followed by a reply)")
            } else {
                "the dataset has no requests".into()
            },
        });
    }
    Ok(Dataset {
        path: path.to_path_buf(),
        entries,
        sha256,
        skipped,
    })
}

fn invalid(path: &Path, line: usize, message: String) -> ScenarioError {
    ScenarioError::Invalid {
        path: path.to_path_buf(),
        line,
        column: 1,
        field: None,
        message,
    }
}

/// JSONL of `prompt` / `messages` objects.
fn jsonl(path: &Path, text: &str) -> Result<Vec<DatasetEntry>, ScenarioError> {
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
        if let Some(m) = super::values::line_too_long(line) {
            return Err(bad(m));
        }
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
            turns: Vec::new(),
        });
    }
    Ok(entries)
}

/// ShareGPT: the entries (each with the line it starts on) and how many were skipped.
fn sharegpt(path: &Path, text: &str) -> Result<(Vec<DatasetEntry>, usize), ScenarioError> {
    let line_of = |raw: &RawValue| {
        let at = (raw.get().as_ptr() as usize).saturating_sub(text.as_ptr() as usize);
        text[..at.min(text.len())].matches('\n').count() + 1
    };
    let items: Vec<(usize, Value)> = if text.trim_start().starts_with('[') {
        let raws: Vec<&RawValue> = serde_json::from_str(text).map_err(|e| {
            invalid(
                path,
                e.line(),
                format!("not a JSON array of conversations: {e}"),
            )
        })?;
        raws.into_iter()
            .map(|r| {
                let line = line_of(r);
                serde_json::from_str(r.get())
                    .map(|v| (line, v))
                    .map_err(|e| invalid(path, line, format!("not JSON: {e}")))
            })
            .collect::<Result<_, _>>()?
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| {
                serde_json::from_str(l)
                    .map(|v| (i + 1, v))
                    .map_err(|e| invalid(path, i + 1, format!("not JSON: {e}")))
            })
            .collect::<Result<_, _>>()?
    };
    let mut entries = Vec::new();
    let mut skipped = 0;
    for (line, v) in items {
        let turns = v
            .get("conversations")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                invalid(
                    path,
                    line,
                    "a ShareGPT entry needs `conversations`: an array of {\"from\", \"value\"} turns".into(),
                )
            })?;
        let mut parsed = Vec::with_capacity(turns.len());
        for t in turns {
            let (Some(from), Some(value)) = (
                t.get("from").and_then(Value::as_str),
                t.get("value").and_then(Value::as_str),
            ) else {
                return Err(invalid(
                    path,
                    line,
                    format!("a turn needs `from` and `value` strings (got {t})"),
                ));
            };
            parsed.push((from, value));
        }
        let human = |f: &str| matches!(f, "human" | "user");
        let reply = |f: &str| matches!(f, "gpt" | "assistant" | "chatgpt" | "bard" | "bing");
        let words = |t: &str| t.split_whitespace().count().clamp(1, u32::MAX as usize) as u32;
        let pairs: Vec<(String, u32)> = parsed
            .windows(2)
            .filter(|w| {
                human(w[0].0)
                    && reply(w[1].0)
                    && !w[0].1.trim().is_empty()
                    && !w[1].1.trim().is_empty()
            })
            .map(|w| (w[0].1.to_string(), words(w[1].1)))
            .collect();
        match pairs.first() {
            Some((prompt, out)) => entries.push(DatasetEntry {
                prompt: DatasetPrompt::Text(prompt.clone()),
                output_tokens: Some(*out),
                line,
                turns: pairs,
            }),
            None => skipped += 1,
        }
    }
    Ok((entries, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<Dataset, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d.jsonl");
        std::fs::write(&p, text).unwrap();
        super::load(&p, DatasetFormat::Jsonl)
    }

    fn sharegpt(text: &str) -> Result<Dataset, ScenarioError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.json");
        std::fs::write(&p, text).unwrap();
        super::load(&p, DatasetFormat::Sharegpt)
    }

    #[test]
    fn a_device_or_directory_named_as_a_dataset_is_refused_not_read() {
        let dir = tempfile::tempdir().unwrap();
        for p in [std::path::Path::new("/dev/zero"), dir.path()] {
            let e = super::load(p, DatasetFormat::Jsonl)
                .unwrap_err()
                .to_string();
            assert!(e.contains(&p.display().to_string()), "{e}");
            assert!(e.contains("not a regular file"), "{e}");
        }
    }

    #[test]
    fn sharegpt_first_human_turn_is_the_prompt_and_its_reply_the_length() {
        let text = r#"[
  {"id": "a", "conversations": [
    {"from": "human", "value": "Write a haiku about rust"},
    {"from": "gpt", "value": "Metal turns to red, slowly the bridge gives its weight to the patient rain"},
    {"from": "human", "value": "another"}]},
  {"id": "b", "conversations": [{"from": "gpt", "value": "hello"}]},
  {"id": "c", "conversations": [
    {"from": "system", "value": "be brief"},
    {"from": "user", "value": "What is 2+2?"},
    {"from": "assistant", "value": "4"}]}
]"#;
        let d = sharegpt(text).unwrap();
        assert_eq!(d.entries.len(), 2);
        assert_eq!(d.skipped, 1, "a conversation with no human turn answered");
        assert_eq!(
            d.entries[0].prompt,
            DatasetPrompt::Text("Write a haiku about rust".into())
        );
        assert_eq!(d.entries[0].output_tokens, Some(14));
        assert_eq!(d.entries[0].line, 2);
        assert_eq!(d.entries[1].output_tokens, Some(1));
        assert_eq!(d.entries[1].line, 7);
        // JSONL works too, and lines are the file's lines.
        let d = sharegpt(
            "\n{\"conversations\":[{\"from\":\"human\",\"value\":\"hi there\"},{\"from\":\"gpt\",\"value\":\"hello you\"}]}\n",
        )
        .unwrap();
        assert_eq!(
            (d.entries[0].line, d.entries[0].output_tokens),
            (2, Some(2))
        );
    }

    #[test]
    fn sharegpt_errors_name_the_line() {
        let e = sharegpt("[\n {\"conversations\": []},\n {\"id\": 3}\n]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s.json:3:1") && e.contains("conversations"),
            "{e}"
        );
        let e = sharegpt("[\n {\"conversations\": [{\"from\": \"human\"}]}\n]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("s.json:2:1") && e.contains("`from` and `value`"),
            "{e}"
        );
        let e = sharegpt("[\n {\"conversations\": [}\n]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("s.json:2:"), "{e}");
        let e = sharegpt("[{\"conversations\": [{\"from\": \"gpt\", \"value\": \"x\"}]}]")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no requests") && e.contains("1 conversations"),
            "{e}"
        );
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
