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

/// The prompt tokens one image costs: a fixed number, as for a vision encoder that gives
/// every image the same number of patches; the tokens derive from the image's URL, so the
/// same image is the same prefix.
const IMAGE_TOKENS: u64 = 64;

/// An image part's URL or data URI (`{"type": "image_url", "image_url": {"url": …}}`, or the
/// Responses API's `{"type": "input_image", "image_url": …}`).
fn image_url(part: &serde_json::Value) -> Option<&str> {
    let kind = part.get("type")?.as_str()?;
    if !matches!(kind, "image_url" | "input_image") {
        return None;
    }
    let u = part.get("image_url")?;
    u.as_str().or_else(|| u.get("url")?.as_str())
}

/// The prompt tokens the images of `messages` cost.
pub fn image_tokens(messages: &serde_json::Value) -> u64 {
    let parts = messages
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("content")?.as_array())
        .flatten();
    parts.filter(|p| image_url(p).is_some()).count() as u64 * IMAGE_TOKENS
}

/// A chat template: `<bos>`, then per message a role header (3 tokens), the content's words
/// ([`IMAGE_TOKENS`] for each image part),
/// an assistant message's tool calls (each call's name and its arguments' words) and an end
/// token, then the assistant header the reply continues from. A `tool` message must answer a
/// call an earlier assistant message made (its `tool_call_id`), as OpenAI's API requires.
pub fn chat(messages: &serde_json::Value) -> Result<Vec<u64>, String> {
    let arr = messages.as_array().ok_or("`messages` must be an array")?;
    if arr.is_empty() {
        return Err("`messages` must not be empty".into());
    }
    let mut out = vec![id("<|begin_of_text|>")];
    let mut calls: Vec<&str> = Vec::new();
    for m in arr {
        let role = m
            .get("role")
            .and_then(|r| r.as_str())
            .ok_or("every message needs a string `role`")?;
        out.extend([id("<|start_header_id|>"), id(role), id("<|end_header_id|>")]);
        if role == "tool" {
            let answered = m.get("tool_call_id").and_then(|i| i.as_str());
            if !answered.is_some_and(|i| calls.contains(&i)) {
                return Err(format!(
                    "a `tool` message must answer an earlier assistant tool call: tool_call_id {} names none",
                    answered.unwrap_or("(missing)")
                ));
            }
        }
        for c in m
            .get("tool_calls")
            .and_then(|c| c.as_array())
            .into_iter()
            .flatten()
        {
            calls.extend(c.get("id").and_then(|i| i.as_str()));
            let f = c.get("function");
            let field = |k: &str| f.and_then(|f| f.get(k)).and_then(|v| v.as_str());
            out.extend(field("name").map(id));
            out.extend(field("arguments").unwrap_or("").split_whitespace().map(id));
        }
        match m.get("content") {
            Some(serde_json::Value::String(s)) => out.extend(s.split_whitespace().map(id)),
            Some(serde_json::Value::Array(parts)) => {
                for p in parts {
                    if let Some(t) = p.get("text").and_then(|t| t.as_str()) {
                        out.extend(t.split_whitespace().map(id));
                    }
                    if let Some(url) = image_url(p) {
                        out.extend((0..IMAGE_TOKENS).map(|i| id(&format!("<|image|>{i}{url}"))));
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

    #[test]
    fn a_tool_result_must_answer_an_earlier_call() {
        let call = serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{\"q\": \"a b\"}"}}]});
        let user = serde_json::json!({"role": "user", "content": "find it"});
        let result =
            |id: &str| serde_json::json!({"role": "tool", "tool_call_id": id, "content": "found"});
        let ok = chat(&serde_json::json!([user, call, result("c1")])).unwrap();
        // The call is in the prompt: its name and its arguments' words.
        assert_eq!(
            ok.len(),
            1 + (3 + 2 + 1) + (3 + 1 + 3 + 1) + (3 + 1 + 1) + 3
        );
        let e = chat(&serde_json::json!([user, call, result("c2")])).unwrap_err();
        assert!(e.contains("tool_call_id c2 names none"), "{e}");
        assert!(chat(&serde_json::json!([user, result("c1")])).is_err());
    }
}
