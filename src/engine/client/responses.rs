//! The Responses API (`POST /v1/responses`, `stream: true`): the body sent, and what each
//! typed event of its stream means to the measurement.
//!
//! Generated text arrives as `response.output_text.delta` (answer) and
//! `response.reasoning_text.delta` / `response.reasoning_summary_text.delta` (reasoning, kept
//! apart as the chat API's `reasoning_content` is): TTFT is the first of either, TTFO the
//! first answer delta. Lifecycle events (`response.created`, `…output_item.added`,
//! `…content_part.added`, the `….done` events) carry no text and are counted as the
//! preamble. The stream ends at `response.completed` (or `response.incomplete`), whose
//! `response.usage` gives `input_tokens`, `output_tokens` and their details; `response.failed`
//! and `error` are server errors. Tool-call argument deltas are not text here.

use super::openai::{error_text, server_clock, ChunkInfo};
use crate::model::scenario::RequestParams;
use crate::model::wire::{Chunk, CompletionDetails, PromptDetails, ReplyMetrics, Usage};
use crate::plan::conversation::Reply;
use crate::plan::prompts::RequestSpec;
use serde::Deserialize;
use serde_json::{json, Value};
use std::borrow::Cow;

/// The request: the prompt as `input` messages, the output cap as `max_output_tokens`.
pub fn body(model: &str, params: &RequestParams, spec: &RequestSpec) -> Value {
    let mut b = json!({
        "model": model,
        "input": spec.prompt.messages(),
        "max_output_tokens": spec.max_tokens,
        "stream": true,
    });
    if let Some(t) = params.temperature {
        b["temperature"] = json!(t);
    }
    if params.ignore_eos {
        b["ignore_eos"] = json!(true);
    }
    b
}

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(borrow, rename = "type")]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default)]
    message: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    usage: Option<ResponseUsage>,
    #[serde(default)]
    incomplete_details: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    /// vLLM's per-request clock (`--enable-per-request-metrics`).
    #[serde(default)]
    metrics: Option<ReplyMetrics>,
}

#[derive(Deserialize)]
struct ResponseUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    output_tokens_details: Option<CompletionDetails>,
}

/// Interprets one event's JSON (`Err`: not an event we can read), appending answer text to
/// `reply` and all generated text to `generated` when given.
pub fn interpret_event(
    data: &[u8],
    reply: Option<&mut Reply>,
    generated: Option<&mut String>,
) -> Result<ChunkInfo, String> {
    let e: Event = serde_json::from_slice(data).map_err(|err| {
        let shown = String::from_utf8_lossy(&data[..data.len().min(120)]).into_owned();
        format!("unreadable Responses API event ({err}): {shown}")
    })?;
    let mut info = ChunkInfo::default();
    let delta = e.delta.as_deref().unwrap_or("");
    match e.kind.as_ref() {
        "response.output_text.delta" => {
            info.text_bytes = delta.len();
            if let Some(out) = reply {
                out.text.push_str(delta);
            }
        }
        "response.reasoning_text.delta" | "response.reasoning_summary_text.delta" => {
            info.text_bytes = delta.len();
            info.reasoning_bytes = delta.len();
        }
        "response.completed" | "response.incomplete" => {
            let r = e.response.as_ref();
            info.done = true;
            info.usage = r.and_then(|r| r.usage.as_ref()).map(|u| Usage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
                total_tokens: None,
                completion_tokens_details: u.output_tokens_details,
                prompt_tokens_details: u.input_tokens_details,
            });
            let capped = r
                .and_then(|r| r.incomplete_details.as_ref())
                .and_then(|d| d.get("reason"))
                .is_some_and(|v| v == "max_output_tokens");
            info.finish_reason = Some(if capped { "length" } else { "stop" }.into());
            info.server = server_clock(&Chunk {
                metrics: r.and_then(|r| r.metrics),
                ..Chunk::default()
            });
        }
        "response.failed" | "error" => {
            let why = e
                .response
                .as_ref()
                .and_then(|r| r.error.as_ref())
                .or(e.error.as_ref())
                .or(e.message.as_ref());
            info.error = Some(why.map_or_else(|| e.kind.to_string(), error_text));
        }
        _ => {}
    }
    if let Some(out) = generated {
        if info.text_bytes > 0 {
            out.push_str(delta);
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_are_text_lifecycle_events_are_not_and_completed_ends_the_stream() {
        let ev = |j: Value| interpret_event(j.to_string().as_bytes(), None, None).unwrap();
        let created = ev(json!({"type": "response.created", "response": {"id": "r"}}));
        assert_eq!((created.text_bytes, created.done), (0, false));
        let a = ev(json!({"type": "response.output_text.delta", "delta": "Hello"}));
        assert_eq!((a.text_bytes, a.reasoning_bytes), (5, 0));
        let r = ev(json!({"type": "response.reasoning_text.delta", "delta": "hmm"}));
        assert_eq!((r.text_bytes, r.reasoning_bytes), (3, 3));
        let done = ev(
            json!({"type": "response.completed", "response": {"status": "completed",
            "usage": {"input_tokens": 12, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 4},
                      "output_tokens_details": {"reasoning_tokens": 2}},
            "metrics": {"queue_time_ms": 1.5, "time_to_first_token_ms": 20.25}}}),
        );
        assert!(done.done);
        let u = done.usage.unwrap();
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(7)));
        assert_eq!(
            (u.cached_tokens(), u.reasoning_tokens()),
            (Some(4), Some(2))
        );
        assert_eq!(done.finish_reason.as_deref(), Some("stop"));
        assert_eq!(done.server.unwrap().prefill_us, Some(20_250));
        let capped = ev(
            json!({"type": "response.incomplete", "response": {"incomplete_details": {"reason": "max_output_tokens"}}}),
        );
        assert_eq!(capped.finish_reason.as_deref(), Some("length"));
        let failed = ev(
            json!({"type": "response.failed", "response": {"error": {"message": "out of memory"}}}),
        );
        assert_eq!(failed.error.as_deref(), Some("out of memory"));
    }
}
