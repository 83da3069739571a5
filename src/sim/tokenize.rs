//! The simulator's tokenizer: one token per whitespace-separated word (ids are word hashes),
//! plus a small chat template. It only has to be deterministic and prefix-preserving — the same
//! leading words give the same leading tokens — for the prefix cache to behave as it would on
//! a real engine; it makes no claim to match any real tokenizer.

use std::hash::{Hash, Hasher};

fn id(word: &str) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    word.hash(&mut h);
    h.finish()
}

/// `<bos>` then one token per word.
pub fn text(s: &str) -> Vec<u64> {
    let mut out = vec![id("<|begin_of_text|>")];
    out.extend(s.split_whitespace().map(id));
    out
}

/// A chat template: `<bos>`, then per message a role header (3 tokens), the content's words
/// and an end token, then the assistant header the reply continues from.
pub fn chat(messages: &serde_json::Value) -> Result<Vec<u64>, String> {
    let arr = messages.as_array().ok_or("`messages` must be an array")?;
    if arr.is_empty() {
        return Err("`messages` must not be empty".into());
    }
    let mut out = vec![id("<|begin_of_text|>")];
    for m in arr {
        let role = m
            .get("role")
            .and_then(|r| r.as_str())
            .ok_or("every message needs a string `role`")?;
        out.extend([id("<|start_header_id|>"), id(role), id("<|end_header_id|>")]);
        match m.get("content") {
            Some(serde_json::Value::String(s)) => out.extend(s.split_whitespace().map(id)),
            Some(serde_json::Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(|t| t.as_str()) {
                        out.extend(t.split_whitespace().map(id));
                    }
                }
            }
            Some(serde_json::Value::Null) | None => {}
            Some(_) => return Err("message `content` must be a string or an array of parts".into()),
        }
        out.push(id("<|eot_id|>"));
    }
    out.extend([
        id("<|start_header_id|>"),
        id("assistant"),
        id("<|end_header_id|>"),
    ]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_leading_words_same_leading_tokens() {
        let a = text("the cat sat on the mat");
        let b = text("the cat sat on a hat");
        assert_eq!(a.len(), 7);
        assert_eq!(a[..5], b[..5]);
        assert_ne!(a[5], b[5]);
        let c = chat(&serde_json::json!([{"role":"user","content":"hi there"}])).unwrap();
        assert_eq!(c.len(), 1 + 3 + 2 + 1 + 3);
        assert!(chat(&serde_json::json!([])).is_err());
    }
}
