//! The pooling APIs, embeddings (`POST /v1/embeddings`) and rerank (`POST /v1/rerank`): one
//! unstreamed JSON answer a request, so there is no token to time — a request's latency is
//! its E2E, intended send → the whole body read, and its size the prompt tokens the server's
//! usage counted (`prompt_tokens`, else `total_tokens`, which is all vLLM's rerank usage
//! says). TTFT, TPOT and ITL do not exist for them; throughput is requests (inputs, queries)
//! and prompt tokens a second. A rerank request sends the prompt as its `query` and the
//! scenario's `[request.extra] documents` (merged into the body like every extra field), in
//! the shape vLLM, llama-server and the Jina/Cohere APIs share.

use super::openai::error_text;
use super::progress::Progress;
use crate::model::record::Outcome;
use crate::model::scenario::Api;
use crate::model::wire::Usage;
use crate::plan::prompts::RequestSpec;
use futures_util::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The largest embeddings answer read (a few thousand floats a vector, a few vectors).
const MAX_BODY: usize = 64 << 20;

/// An embeddings request: the prompt's text as `input`.
pub fn body(model: &str, spec: &RequestSpec) -> Value {
    json!({"model": model, "input": spec.prompt.text(), "encoding_format": "float"})
}

/// A rerank request: the prompt's text as `query`; the documents come from `[request.extra]`.
pub fn rerank_body(model: &str, spec: &RequestSpec) -> Value {
    json!({"model": model, "query": spec.prompt.text()})
}

#[derive(Deserialize)]
struct Answer {
    /// Embeddings: one vector an input.
    #[serde(default)]
    data: Vec<Value>,
    /// Rerank: one relevance score a document.
    #[serde(default)]
    results: Vec<Value>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(default)]
    error: Option<Value>,
}

/// Reads the whole answer (by `deadline`, unless `abort`), and records its end as the
/// request's last moment, its usage, and whether it held what `api` answers.
pub(super) async fn read(
    resp: reqwest::Response,
    api: Api,
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
                    Some(format!(
                        "an answer over {} MiB ({} API)",
                        MAX_BODY >> 20,
                        api.name()
                    )),
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
                Some(format!("not a {} API answer ({e}): {shown}", api.name())),
            );
        }
    };
    if let Some(e) = &a.error {
        return (Outcome::ServerError, Some(error_text(e)));
    }
    p.last = Some(at);
    p.first_event = Some(at);
    p.usage = a.usage.map(|mut u| {
        u.prompt_tokens = u.prompt_tokens.or(u.total_tokens);
        u
    });
    p.done = true;
    let (held, what) = match api {
        Api::Rerank => (&a.results, "no relevance score in the answer"),
        _ => (&a.data, "no embedding in the answer"),
    };
    if held.is_empty() {
        return (Outcome::EmptyOutput, Some(what.into()));
    }
    (Outcome::Ok, None)
}
