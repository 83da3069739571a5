//! The simulator's pooling routes, `POST /v1/embeddings` and `POST /v1/rerank`: the input's
//! tokens go through the engine as a prefill (one step that yields no decode: a pooling
//! model's work), and the answer — one vector a request derived from its tokens, or the
//! documents' relevance scores, with `usage.prompt_tokens` — is sent when that prefill ends.
//! The truth log records when (`first_token_us`).

use super::driver::Cmd;
use super::truth::TruthWriter;
use super::{error, AppState};
use crate::sim::engine::NewRequest;
use crate::sim::tokenize;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Dimensions of the vectors answered.
const DIMS: usize = 16;

pub(super) async fn embeddings(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    let text = match input(&body) {
        Ok(t) => t,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    let tokens = tokenize::text(&text);
    let prompt_tokens = tokens.len() as u64;
    let vector = vector(&tokens);
    if let Err(r) = prefill(&s, &headers, tokens, arrival).await {
        return r;
    }
    Json(json!({
        "object": "list",
        "data": [{"object": "embedding", "index": 0, "embedding": vector}],
        "model": s.model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }))
    .into_response()
}

/// `POST /v1/rerank` (and `/rerank`): each document is scored with the query, as a
/// cross-encoder reads `query + document`; all the pairs go through the engine as one prefill
/// of their tokens together, and the answer — the documents by score, highest first, with
/// `usage` counting every pair's tokens as llama-server's does — is sent when it ends.
pub(super) async fn rerank(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let arrival = Instant::now();
    let (query, documents) = match rerank_input(&body) {
        Ok(q) => q,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    let q = tokenize::text(&query);
    let mut tokens = Vec::new();
    let mut results: Vec<(usize, f64)> = Vec::new();
    for (i, d) in documents.iter().enumerate() {
        let pair = tokenize::text(&format!("{query} {d}"));
        let doc = &pair[q.len()..];
        // The share of the document's words that are in the query: a score in [0, 1].
        let shared = doc.iter().filter(|t| q.contains(t)).count();
        results.push((i, shared as f64 / doc.len().max(1) as f64));
        tokens.extend(pair);
    }
    results.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    let prompt_tokens = tokens.len() as u64;
    if let Err(r) = prefill(&s, &headers, tokens, arrival).await {
        return r;
    }
    let results: Vec<Value> = results
        .iter()
        .map(|(i, score)| json!({"index": i, "relevance_score": score}))
        .collect();
    Json(json!({
        "object": "list",
        "model": s.model,
        "results": results,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
    }))
    .into_response()
}

/// Puts `tokens` through the engine as one prefill that yields no decode (a pooling model's
/// work) and writes the truth line when it ends; `Err`: the answer to send instead.
async fn prefill(
    s: &Arc<AppState>,
    headers: &HeaderMap,
    tokens: Vec<u64>,
    arrival: Instant,
) -> Result<(), Response> {
    let n = s.requests.fetch_add(1, Ordering::SeqCst);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let cmd = Cmd::Add {
        req: NewRequest {
            id: n,
            tokens,
            output_tokens: 1,
            arrival: 0.0,
        },
        max_tokens: 1,
        ignore_eos: true,
        answer_len: None,
        tx,
    };
    if s.cmd.send(cmd).is_err() {
        return Err(error(
            StatusCode::SERVICE_UNAVAILABLE,
            "the engine has stopped",
        ));
    }
    let Some(ev) = rx.recv().await else {
        return Err(error(
            StatusCode::BAD_REQUEST,
            "the engine refused the request (longer than max_model_len or the KV cache)",
        ));
    };
    let truth = TruthWriter {
        state: s.clone(),
        request_id: headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        arrival,
    };
    truth.write(&[ev.at], 0, None);
    Ok(())
}

/// A rerank request's `query` and `documents` (strings, or `{"text": …}` objects).
fn rerank_input(body: &[u8]) -> Result<(String, Vec<String>), String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let query = v
        .get("query")
        .and_then(Value::as_str)
        .ok_or("`query` (a string) is required")?;
    let docs = v
        .get("documents")
        .and_then(Value::as_array)
        .filter(|d| !d.is_empty())
        .ok_or("`documents` (a non-empty list) is required")?;
    let documents = docs
        .iter()
        .map(|d| {
            d.as_str()
                .or_else(|| d.get("text").and_then(Value::as_str))
                .map(str::to_string)
                .ok_or_else(|| "every document must be a string or {\"text\": …}".to_string())
        })
        .collect::<Result<_, _>>()?;
    Ok((query.to_string(), documents))
}

/// The request's `input`: a string, or a list of one string.
fn input(body: &[u8]) -> Result<String, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    match v.get("input") {
        Some(Value::String(t)) => Ok(t.clone()),
        Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
            Ok(a[0].as_str().unwrap_or_default().to_string())
        }
        Some(_) => Err("`input` must be a string (or a list of one string)".into()),
        None => Err("`input` is required".into()),
    }
}

/// A unit vector that depends only on the tokens: the same input, the same embedding.
fn vector(tokens: &[u64]) -> Vec<f64> {
    let mut v = [0.0; DIMS];
    for (i, t) in tokens.iter().enumerate() {
        v[(*t as usize + i) % DIMS] += 1.0;
    }
    let norm = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
    v.iter().map(|x| x / norm).collect()
}
