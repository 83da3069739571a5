//! The simulator's Responses API: a request's `input` and `max_output_tokens` read as a chat
//! request's `messages` and `max_tokens`, and the chat stream's chunks written as the typed
//! events vLLM sends — `response.created` where chat opens with a role-only delta,
//! `response.output_text.delta` / `response.reasoning_text.delta` for text,
//! `response.output_text.done` at the finish, and `response.completed` carrying the usage
//! (`input_tokens`, `output_tokens`, their details) and the per-request `metrics` where the
//! usage chunk carried them. No `[DONE]` follows.

use crate::model::wire::Chunk;
use axum::body::Bytes;
use serde_json::{json, Value};

/// The Responses request as the chat route's body.
pub(super) fn as_chat(body: &[u8]) -> Result<Bytes, String> {
    let mut v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let o = v.as_object_mut().ok_or("the body must be a JSON object")?;
    let messages = match o.remove("input") {
        Some(Value::String(t)) => json!([{ "role": "user", "content": t }]),
        Some(m @ Value::Array(_)) => m,
        Some(_) => return Err("`input` must be a string or a list of messages".into()),
        None => return Err("`input` is required".into()),
    };
    if o.get("stream") != Some(&Value::Bool(true)) {
        return Err("the simulator serves the Responses API streamed only (`stream: true`)".into());
    }
    o.insert("messages".into(), messages);
    if let Some(n) = o.remove("max_output_tokens") {
        o.insert("max_tokens".into(), n);
    }
    Ok(Bytes::from(v.to_string()))
}

/// One chat chunk as the Responses API event that says the same.
pub(super) fn event(c: &Chunk) -> Bytes {
    let choice = c.choices.first();
    let delta = choice.and_then(|ch| ch.delta.as_ref());
    let id = c.id.as_deref().unwrap_or("resp-sim");
    let (kind, body) = if let Some(u) = &c.usage {
        let mut response = json!({
            "id": id,
            "object": "response",
            "status": "completed",
            "usage": {
                "input_tokens": u.prompt_tokens,
                "output_tokens": u.completion_tokens,
                "total_tokens": u.total_tokens,
                "input_tokens_details": {"cached_tokens": u.cached_tokens().unwrap_or(0)},
                "output_tokens_details": {"reasoning_tokens": u.reasoning_tokens().unwrap_or(0)},
            },
        });
        if let Some(m) = c.metrics {
            response["metrics"] = json!(m);
        }
        ("response.completed", json!({ "response": response }))
    } else if let Some(args) = delta
        .and_then(|d| d.tool_calls.as_ref())
        .and_then(|t| t.first())
        .and_then(|t| t.function.as_ref())
        .and_then(|f| f.arguments.as_deref())
    {
        (
            "response.function_call_arguments.delta",
            json!({ "delta": args }),
        )
    } else if let Some(t) = delta.and_then(|d| d.reasoning_content.as_deref()) {
        ("response.reasoning_text.delta", json!({ "delta": t }))
    } else if let Some(t) = delta
        .and_then(|d| d.content.as_deref())
        .filter(|t| !t.is_empty())
    {
        ("response.output_text.delta", json!({ "delta": t }))
    } else if choice.is_some_and(|ch| ch.finish_reason.is_some()) {
        ("response.output_text.done", json!({}))
    } else {
        (
            "response.created",
            json!({ "response": {"id": id, "object": "response", "status": "in_progress"} }),
        )
    };
    let mut body = body;
    body["type"] = json!(kind);
    Bytes::from(format!("event: {kind}\ndata: {body}\n\n"))
}
