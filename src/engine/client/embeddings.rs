//! The embeddings API (`POST /v1/embeddings`): one unstreamed JSON answer a request, so there
//! is no token to time — a request's latency is its E2E, intended send → the whole body read,
//! and its size the prompt tokens the server's `usage.prompt_tokens` counted. TTFT, TPOT and
//! ITL do not exist for it; throughput is requests (inputs) and prompt tokens a second.

use super::openai::{error_text, merged};
use super::progress::Progress;
use crate::model::record::Outcome;
use crate::model::scenario::RequestParams;
use crate::model::wire::Usage;
use crate::plan::prompts::{Prompt, RequestSpec};
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The largest embeddings answer read (a few thousand floats a vector, a few vectors).
const MAX_BODY: usize = 64 << 20;

/// The request: the prompt's text as `input` (a messages prompt: its last message's text).
pub fn body(model: &str, params: &RequestParams, spec: &RequestSpec) -> Value {
    let input = match &spec.prompt {
        Prompt::Text(t) => json!(t),
        Prompt::Messages(m) => m
            .as_array()
            .and_then(|a| a.last())
            .and_then(|l| l.get("content"))
            .cloned()
            .unwrap_or(Value::Null),
    };
    merged(
        json!({"model": model, "input": input, "encoding_format": "float"}),
        params,
    )
}

#[derive(Deserialize)]
struct Answer {
    #[serde(default)]
    data: Vec<Value>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

/// Reads the whole answer (by `deadline`, unless `abort`), and records its end as the
/// request's last moment, its usage, and whether it held an embedding.
pub(super) async fn read(
    resp: reqwest::Response,
    p: &mut Progress,
    abort: &CancellationToken,
    deadline: Instant,
) -> (Outcome, Option<String>) {
    let mut body = Vec::new();
    let mut stream = resp.bytes_stream();
    loop {
        let item = tokio::select! {
            biased;
            _ = abort.cancelled() => return (Outcome::Aborted, None),
            _ = tokio::time::sleep_until(deadline) => return (Outcome::TimeoutTotal, None),
            item = stream.next() => item,
        };
        match item {
            None => break,
            Some(Err(e)) => {
                return (
                    Outcome::StreamBroken,
                    Some(super::error_chain(&e.without_url())),
                )
            }
            Some(Ok(b)) if body.len() + b.len() > MAX_BODY => {
                return (
                    Outcome::MalformedChunk,
                    Some(format!("an embeddings answer over {} MiB", MAX_BODY >> 20)),
                )
            }
            Some(Ok(b)) => body.extend_from_slice(&b),
        }
    }
    let at = Instant::now();
    let a: Answer = match serde_json::from_slice(&body) {
        Ok(a) => a,
        Err(e) => {
            let shown = String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned();
            return (
                Outcome::MalformedChunk,
                Some(format!("not an embeddings answer ({e}): {shown}")),
            );
        }
    };
    if let Some(e) = &a.error {
        return (Outcome::ServerError, Some(error_text(e)));
    }
    p.last = Some(at);
    p.first_event = Some(at);
    p.usage = a.usage;
    p.done = true;
    if a.data.is_empty() {
        return (
            Outcome::EmptyOutput,
            Some("no embedding in the answer".into()),
        );
    }
    (Outcome::Ok, None)
}
