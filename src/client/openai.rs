//! The OpenAI-compatible wire format: request bodies and the meaning of each stream chunk.
//!
//! A chunk "carries generated text" when `choices[0].delta.content`, `.reasoning_content` or
//! `.reasoning` (chat) or `choices[0].text` (completions) is a non-empty string. Role-only
//! chat chunks, usage-only chunks and empty deltas do not count: TTFT and ITL are timed on text,
//! not on the first byte the server sends.

use crate::scenario::{Api, RequestParams};
use crate::workload::{Prompt, RequestSpec};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// The JSON body for one request.
pub fn request_body(api: Api, model: &str, params: &RequestParams, spec: &RequestSpec) -> Value {
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    match (api, &spec.prompt) {
        (Api::Chat, Prompt::Text(t)) => {
            body.insert("messages".into(), json!([{ "role": "user", "content": t }]));
        }
        (Api::Chat, Prompt::Messages(m)) => {
            body.insert("messages".into(), m.clone());
        }
        (Api::Completions, Prompt::Text(t)) => {
            body.insert("prompt".into(), json!(t));
        }
        // Rejected at load time (a `messages` dataset needs the chat API); send the last
        // message's text rather than nothing if it ever gets here.
        (Api::Completions, Prompt::Messages(m)) => {
            let text = m
                .as_array()
                .and_then(|a| a.last())
                .and_then(|l| l.get("content"))
                .cloned()
                .unwrap_or(Value::Null);
            body.insert("prompt".into(), text);
        }
    }
    body.insert("max_tokens".into(), json!(spec.max_tokens));
    if let Some(t) = params.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if params.ignore_eos {
        body.insert("ignore_eos".into(), json!(true));
    }
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({ "include_usage": true }));
    for (k, v) in &params.extra {
        body.insert(k.clone(), v.clone());
    }
    Value::Object(body)
}

// Borrowed where possible: a chunk is parsed on the hot path and only text lengths are kept.
#[derive(Debug, Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
    usage: Option<Usage>,
    error: Option<Value>,
    #[serde(borrow)]
    object: Option<Cow<'a, str>>,
    message: Option<Value>,
}

#[derive(Debug, Deserialize)]
struct Choice<'a> {
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Delta<'a> {
    #[serde(borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning_content: Option<Cow<'a, str>>,
    #[serde(borrow)]
    reasoning: Option<Cow<'a, str>>,
}

/// Token counts from a `usage` object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// What one `data:` payload means to the benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkInfo {
    /// Bytes of generated text (content + reasoning) in this chunk.
    pub text_bytes: usize,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// An error reported inside the stream.
    pub error: Option<String>,
}

/// Interprets one JSON payload; `Err` means it is not a JSON object we can read.
pub fn interpret(data: &[u8]) -> Result<ChunkInfo, String> {
    let c: Chunk = serde_json::from_slice(data).map_err(|e| {
        let shown = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
        format!("unreadable chunk ({e}): {shown}")
    })?;
    let mut info = ChunkInfo {
        usage: c.usage,
        ..Default::default()
    };
    if let Some(e) = c.error {
        info.error = Some(error_text(&e));
        return Ok(info);
    }
    if c.object.as_deref() == Some("error") {
        info.error = Some(
            c.message
                .map(|m| error_text(&m))
                .unwrap_or_else(|| "error".into()),
        );
        return Ok(info);
    }
    if let Some(ch) = c.choices.into_iter().next() {
        let mut n = ch.text.map_or(0, |t| t.len());
        if let Some(d) = ch.delta {
            n += d.content.map_or(0, |t| t.len());
            n += d.reasoning_content.map_or(0, |t| t.len());
            n += d.reasoning.map_or(0, |t| t.len());
        }
        info.text_bytes = n;
        info.finish_reason = ch.finish_reason;
    }
    Ok(info)
}

/// A short human message from an error value (`{"message": …}`, a string, or the JSON).
pub fn error_text(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(m)) => m.clone(),
            _ => v.to_string(),
        },
        other => other.to_string(),
    };
    truncate(&s, 300)
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn role_only_and_usage_only_chunks_carry_no_text() {
        let role = br#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;
        assert_eq!(interpret(role).unwrap().text_bytes, 0);
        let usage = br#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}"#;
        let u = interpret(usage).unwrap();
        assert_eq!(u.text_bytes, 0);
        assert_eq!(u.usage.unwrap().completion_tokens, Some(5));
    }

    #[test]
    fn content_reasoning_and_completions_text_count() {
        let c = br#"{"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}"#;
        assert_eq!(interpret(c).unwrap().text_bytes, 2);
        let r = br#"{"choices":[{"delta":{"reasoning_content":"abc"}}]}"#;
        assert_eq!(interpret(r).unwrap().text_bytes, 3);
        let r2 = br#"{"choices":[{"delta":{"reasoning":"abcd"}}]}"#;
        assert_eq!(interpret(r2).unwrap().text_bytes, 4);
        let t = br#"{"choices":[{"text":" x","finish_reason":"length"}]}"#;
        let i = interpret(t).unwrap();
        assert_eq!(
            (i.text_bytes, i.finish_reason.as_deref()),
            (2, Some("length"))
        );
    }

    #[test]
    fn errors_in_stream_both_shapes() {
        let a = br#"{"error":{"message":"KV cache exhausted","code":500}}"#;
        assert_eq!(
            interpret(a).unwrap().error.as_deref(),
            Some("KV cache exhausted")
        );
        let b = br#"{"object":"error","message":"bad","type":"BadRequestError"}"#;
        assert_eq!(interpret(b).unwrap().error.as_deref(), Some("bad"));
        assert!(interpret(b"not json").is_err());
    }

    #[test]
    fn body_asks_for_usage_and_honours_extra() {
        let spec = RequestSpec {
            index: 0,
            warmup: false,
            prompt: Prompt::Text("hello".into()),
            input_tokens_target: Some(1),
            max_tokens: 9,
            class: String::new(),
        };
        let mut params = RequestParams {
            max_tokens: None,
            temperature: Some(0.0),
            ignore_eos: true,
            timeout_s: 1.0,
            first_token_timeout_s: 1.0,
            extra: Map::new(),
            body_vars: Vec::new(),
        };
        params.extra.insert("top_p".into(), json!(0.5));
        let b = request_body(Api::Chat, "m", &params, &spec);
        assert_eq!(b["stream_options"]["include_usage"], json!(true));
        assert_eq!(b["ignore_eos"], json!(true));
        assert_eq!(b["max_tokens"], json!(9));
        assert_eq!(b["top_p"], json!(0.5));
        assert_eq!(b["messages"][0]["content"], json!("hello"));
        let c = request_body(Api::Completions, "m", &params, &spec);
        assert_eq!(c["prompt"], json!("hello"));
    }
}
