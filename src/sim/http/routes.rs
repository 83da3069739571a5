//! The routes that do not generate: `/metrics` (vLLM's names), `/tokenize` (vLLM's and
//! llama-server's shapes) and `/v1/models`.

use super::{error, AppState};
use crate::model::wire::{ModelCard, ModelList};
use crate::sim::prom::PromWriter;
use crate::sim::tokenize;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use std::sync::Arc;

pub(super) async fn metrics_text(State(s): State<Arc<AppState>>) -> Response {
    let Ok(m) = s.metrics.lock() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "metrics unavailable");
    };
    let mut w = PromWriter::new(&s.model);
    w.gauge(
        "vllm:num_requests_running",
        "Number of requests in model execution batches.",
        m.running as f64,
    );
    w.gauge(
        "vllm:num_requests_waiting",
        "Number of requests waiting to be processed.",
        m.waiting as f64,
    );
    // The simulator has no transient constraints: every waiting request waits for capacity.
    w.gauge_by(
        "vllm:num_requests_waiting_by_reason",
        "Number of waiting requests by reason.",
        "reason",
        &[("capacity", m.waiting as f64), ("deferred", 0.0)],
    );
    w.gauge(
        "vllm:kv_cache_usage_perc",
        "KV-cache usage. 1 means 100 percent usage.",
        m.kv_usage,
    );
    let c = &m.counters;
    w.counter(
        "vllm:prefix_cache_queries",
        "Prefix cache queries, in terms of number of queried tokens.",
        c.prefix_queries,
    );
    w.counter(
        "vllm:prefix_cache_hits",
        "Prefix cache hits, in terms of number of cached tokens.",
        c.prefix_hits,
    );
    w.counter(
        "vllm:num_preemptions",
        "Cumulative number of preemption from the engine.",
        c.preemptions,
    );
    w.counter(
        "vllm:prompt_tokens",
        "Number of prefill tokens processed.",
        c.prompt_tokens,
    );
    w.counter(
        "vllm:generation_tokens",
        "Number of generation tokens processed.",
        c.generation_tokens,
    );
    w.counter(
        "vllm:prompt_tokens_cached",
        "Number of prompt tokens served from the prefix cache.",
        c.prefix_hits,
    );
    w.counter(
        "vllm:admission_rejections",
        "Number of admission attempts rejected by a queue limit, by reason.",
        s.rejected.load(std::sync::atomic::Ordering::SeqCst),
    );
    w.counter(
        "vllm:request_success",
        "Count of successfully processed requests.",
        c.requests_finished,
    );
    w.counter(
        "vllm:spec_decode_num_draft_tokens",
        "Number of draft tokens.",
        c.spec_draft_tokens,
    );
    w.counter(
        "vllm:spec_decode_num_accepted_tokens",
        "Number of accepted tokens.",
        c.spec_accepted_tokens,
    );
    if let Some(h) = &m.hist {
        w.histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            &h[0],
        );
        w.histogram(
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            &h[1],
        );
        w.histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            &h[2],
        );
        w.histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            &h[3],
        );
        w.histogram(
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            &h[4],
        );
    }
    (
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        w.finish(),
    )
        .into_response()
}

/// `POST /reset_prefix_cache`, as vLLM serves it: the engine drops every cached block no
/// running request holds, so the next request finds nothing of earlier prompts.
pub(super) async fn reset_prefix_cache(State(s): State<Arc<AppState>>) -> Response {
    let (done, dropped) = tokio::sync::oneshot::channel();
    if s.cmd
        .send(super::driver::Cmd::ResetPrefixCache { done })
        .is_err()
    {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    }
    match dropped.await {
        Ok(n) => Json(json!({"reset": true, "blocks_dropped": n})).into_response(),
        Err(_) => error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped"),
    }
}

/// `POST /tokenize`, in vLLM's shape (`prompt` or `messages` → `tokens`, `count`) and
/// llama-server's (`content` → `tokens`), with the tokenizer the engine counts usage with.
pub(super) async fn tokenize_route(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
    let v: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return error(
                StatusCode::BAD_REQUEST,
                &format!("the body is not valid JSON: {e}"),
            )
        }
    };
    let tokens = if let Some(m) = v.get("messages") {
        tokenize::chat(m)
    } else if let Some(t) = v
        .get("prompt")
        .or_else(|| v.get("content"))
        .and_then(Value::as_str)
    {
        Ok(tokenize::text(t))
    } else {
        Err("give `prompt`, `content` or `messages`".to_string())
    };
    match tokens {
        Ok(t) => {
            Json(json!({"tokens": t, "count": t.len(), "max_model_len": s.opts.max_model_len}))
                .into_response()
        }
        Err(m) => error(StatusCode::BAD_REQUEST, &m),
    }
}

pub(super) async fn models(State(s): State<Arc<AppState>>) -> Json<ModelList> {
    Json(ModelList::one(ModelCard {
        id: s.model.clone(),
        object: "model".into(),
        owned_by: Some("bench-sim".into()),
        max_model_len: Some(s.opts.max_model_len as u64),
    }))
}
