//! The client's side of the OpenAI-compatible wire format ([`crate::model::wire`]): what each
//! stream chunk means to the measurement (the body it sends is [`super::body`]'s).
//!
//! A chunk "carries generated text" when `choices[0].delta.content`, `.reasoning_content` or
//! `.reasoning` (chat) or `choices[0].text` (completions) is a non-empty string. Role-only
//! chat chunks, usage-only chunks and empty deltas do not count: TTFT and ITL are timed on text,
//! not on the first byte the server sends. Reasoning text (`reasoning_content`, `reasoning`)
//! is generated text too, but not answer: TTFO is timed on the first answer text.

use crate::model::record::{ClockSource, ServerClock};
use crate::model::wire::{Choice, Chunk, Usage};
use crate::plan::conversation::{Reply, ToolCall};
use serde_json::Value;

/// What one `data:` payload means to the benchmark.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ChunkInfo {
    /// Bytes of generated text (content + reasoning) in this chunk.
    pub text_bytes: usize,
    /// Of those, bytes of reasoning text.
    pub reasoning_bytes: usize,
    pub usage: Option<Usage>,
    pub finish_reason: Option<String>,
    /// An error reported inside the stream.
    pub error: Option<String>,
    /// The server's own clock for the request (llama.cpp `timings`, vLLM `metrics`).
    pub server: Option<ServerClock>,
    /// llama.cpp's `timings.cache_n`: prompt tokens its cache served.
    pub cache_n: Option<u64>,
    /// The event that ends a stream without `[DONE]` (the Responses API's
    /// `response.completed`).
    pub done: bool,
    /// Of `text_bytes`, bytes of tool-call text (function names and arguments).
    pub tool_bytes: usize,
}

/// A reply's server clock: llama.cpp's `timings` or vLLM's `metrics`, ms → µs. `None` when
/// neither is there or neither carries a time (vLLM writes nulls it could not measure).
pub(super) fn server_clock(c: &Chunk) -> Option<ServerClock> {
    let us = |ms: Option<f64>| {
        ms.filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| (v * 1000.0).round() as u64)
    };
    let clock = if let Some(t) = c.timings {
        ServerClock {
            source: ClockSource::LlamaCpp,
            queue_us: None,
            prefill_us: us(t.prompt_ms),
            decode_us: us(t.predicted_ms),
        }
    } else {
        let m = c.metrics?;
        ServerClock {
            source: ClockSource::Vllm,
            queue_us: us(m.queue_time_ms),
            prefill_us: us(m.time_to_first_token_ms),
            decode_us: us(m.generation_time_ms),
        }
    };
    (clock.queue_us.is_some() || clock.prefill_us.is_some() || clock.decode_us.is_some())
        .then_some(clock)
}

/// Adds a chunk's answer text and tool-call pieces to the reply kept for a later turn. Past a
/// prompt's bound the history could not be sent, so a server that streams without end does
/// not grow it further; a call's index past [`TOOL_CALLS_MAX`] is not kept.
fn keep(out: &mut Reply, ch: &Choice) {
    let room = |out: &Reply, more: usize| {
        let held = out.text.len()
            + out
                .tool_calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len())
                .sum::<usize>();
        held + more <= crate::config::values::limits::LINE_BYTES_MAX
    };
    let delta = ch.delta.as_ref();
    for t in [ch.text.as_deref(), delta.and_then(|d| d.content.as_deref())]
        .into_iter()
        .flatten()
    {
        if room(out, t.len()) {
            out.text.push_str(t);
        }
    }
    for piece in delta
        .and_then(|d| d.tool_calls.as_ref())
        .into_iter()
        .flatten()
    {
        let i = piece.index as usize;
        if i >= TOOL_CALLS_MAX {
            continue;
        }
        let f = piece.function.as_ref();
        let name = f.and_then(|f| f.name.as_deref()).unwrap_or("");
        let args = f.and_then(|f| f.arguments.as_deref()).unwrap_or("");
        if !room(out, name.len() + args.len()) {
            continue;
        }
        if out.tool_calls.len() <= i {
            out.tool_calls.resize(i + 1, ToolCall::default());
        }
        let call = &mut out.tool_calls[i];
        if let Some(id) = piece.id.as_deref() {
            call.id = id.to_string();
        }
        call.name.push_str(name);
        call.arguments.push_str(args);
    }
}

/// The most tool calls one reply keeps for the next turn.
const TOOL_CALLS_MAX: usize = 64;

/// Interprets one JSON payload (`Err`: not a JSON object we can read), also appending the chunk's reply text (chat `content`, or completions
/// `text`; reasoning is not part of the reply a client sends back) to `reply` when given —
/// what a conversation's next turn carries as the assistant's message; and all its generated
/// text (reasoning, then answer) to `generated` when given, for a local token count.
pub fn interpret_into(
    data: &[u8],
    reply: Option<&mut Reply>,
    generated: Option<&mut String>,
) -> Result<ChunkInfo, String> {
    let c: Chunk = serde_json::from_slice(data).map_err(|e| {
        let shown = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
        format!("unreadable chunk ({e}): {shown}")
    })?;
    let mut info = ChunkInfo {
        usage: c.usage,
        server: server_clock(&c),
        cache_n: c.timings.and_then(|t| t.cache_n),
        ..Default::default()
    };
    if let Some(e) = &c.error {
        info.error = Some(error_text(e));
        return Ok(info);
    }
    if c.object.as_deref() == Some("error") {
        info.error = Some(
            c.message
                .as_ref()
                .map(error_text)
                .unwrap_or_else(|| "error".into()),
        );
        return Ok(info);
    }
    let (answer, reasoning) = c.text_split();
    info.tool_bytes = c.tool_bytes();
    info.text_bytes = answer + reasoning + info.tool_bytes;
    info.reasoning_bytes = reasoning;
    if let (Some(out), Some(ch)) = (reply, c.choices.first()) {
        keep(out, ch);
    }
    if let (Some(out), Some(ch)) = (generated, c.choices.first()) {
        let d = ch.delta.as_ref();
        for t in [
            d.and_then(|d| d.reasoning_content.as_deref()),
            d.and_then(|d| d.reasoning.as_deref()),
            ch.text.as_deref(),
            d.and_then(|d| d.content.as_deref()),
        ]
        .into_iter()
        .flatten()
        {
            out.push_str(t);
        }
    }
    info.finish_reason = c
        .choices
        .first()
        .and_then(|ch| ch.finish_reason.as_deref())
        .map(str::to_string);
    Ok(info)
}

/// A human message from an error value (`{"message": …}`, a string, or the JSON); uncut, so
/// it can be redacted before it is shortened.
pub fn error_text(v: &Value) -> String {
    let s = match v {
        Value::String(s) => s.clone(),
        Value::Object(o) => match o.get("message") {
            Some(Value::String(m)) => m.clone(),
            _ => v.to_string(),
        },
        other => other.to_string(),
    };
    s
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

    /// Interprets one JSON payload; `Err` means it is not a JSON object we can read.
    fn interpret(data: &[u8]) -> Result<ChunkInfo, String> {
        interpret_into(data, None, None)
    }

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
    fn reply_text_is_the_content_without_reasoning() {
        let mut reply = Reply::default();
        for c in [
            &br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#[..],
            br#"{"choices":[{"delta":{"reasoning_content":"hmm"}}]}"#,
            br#"{"choices":[{"delta":{"content":"Hello"}}]}"#,
            br#"{"choices":[{"delta":{"content":" world"},"finish_reason":"stop"}]}"#,
        ] {
            interpret_into(c, Some(&mut reply), None).unwrap();
        }
        assert_eq!(reply.text, "Hello world");
        assert!(reply.tool_calls.is_empty());
    }

    #[test]
    fn reply_keeps_each_tool_call_built_from_its_pieces() {
        let mut reply = Reply::default();
        for c in [
            &br#"{"choices":[{"delta":{"role":"assistant","content":null}}]}"#[..],
            br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c0","type":"function","function":{"name":"search","arguments":"{\""}}]}}]}"#,
            br#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"q\": 1}"}}]}}]}"#,
            br#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"name":"fetch","arguments":"{}"}}]}}]}"#,
            br#"{"choices":[{"delta":{"tool_calls":[{"index":9000,"function":{"name":"x"}}]}}]}"#,
        ] {
            interpret_into(c, Some(&mut reply), None).unwrap();
        }
        assert_eq!(reply.text, "");
        let calls: Vec<(&str, &str, &str)> = reply
            .tool_calls
            .iter()
            .map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.as_str()))
            .collect();
        assert_eq!(calls, [("c0", "search", "{\"q\": 1}"), ("", "fetch", "{}")]);
    }
}
