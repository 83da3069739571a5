//! The reference server of `bench selftest`: every chat request is answered with a role-only
//! chunk, `tokens` content chunks shaped like vLLM's, a finish chunk, a usage chunk and
//! `[DONE]` — all ready at once (flat out) or one content chunk every `pace` — so the client is
//! the bottleneck. It stamps the moment it hands the first content chunk to hyper, as
//! microseconds since the Unix epoch (a clock both processes share), keyed by the request
//! index the `x-request-id` header carries (`model::request_id`).
//!
//! It runs on a thread of its own with a one-worker runtime, and `bench selftest --serve ADDR`
//! runs it alone in a process of its own, which is how `bench selftest` measures the client
//! by itself. Routes: `POST /v1/chat/completions`, `GET /v1/models`, and `GET /stamps` (the
//! stamps since the last call, as a JSON object index → µs, then forgotten).

use crate::error::BenchError;
use crate::model::wire::{sse, StreamHeader, Usage, DONE};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::{get, post};
use axum::{Json, Router};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// First-content stamps: request index → µs since the Unix epoch.
pub type Stamps = Arc<Mutex<HashMap<u64, u64>>>;

/// Now, in µs since the Unix epoch.
pub fn unix_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// A running reference server.
pub struct FastServer {
    pub addr: SocketAddr,
    pub stamps: Stamps,
    /// Dropping it stops the server.
    _stop: tokio::sync::oneshot::Sender<()>,
}

#[derive(Clone)]
struct ServerState {
    chunks: Arc<Vec<Bytes>>,
    stamps: Stamps,
    /// Gap between content chunks (zero: flat out).
    pace: Duration,
}

impl FastServer {
    /// Listens on `addr` (`127.0.0.1:0` for any free port); responses carry `tokens` content
    /// chunks, `pace` apart (zero: at once).
    pub fn start(addr: &str, tokens: u32, pace: Duration) -> Result<FastServer, BenchError> {
        let bind: SocketAddr = addr.parse().map_err(|_| {
            BenchError::usage(format!(
                "--serve: `{addr}` is not an address to listen on, e.g. 127.0.0.1:8123"
            ))
        })?;
        let h = StreamHeader {
            chat: true,
            id: Some("chatcmpl-selftest".into()),
            created: Some(0),
            model: Some("selftest".into()),
        };
        let mut chunks = vec![Bytes::from(sse(&h.role()))];
        for _ in 0..tokens {
            chunks.push(Bytes::from(sse(&h.text(" tok"))));
        }
        chunks.push(Bytes::from(sse(&h.finish("length"))));
        chunks.push(Bytes::from(sse(&h.usage(Usage::new(8, tokens as u64)))));
        chunks.push(Bytes::from_static(DONE.as_bytes()));
        let stamps: Stamps = Arc::default();
        let state = ServerState {
            chunks: Arc::new(chunks),
            stamps: stamps.clone(),
            pace,
        };
        let (addr, stop, _thread) = crate::sim::http::on_own_thread(
            "selftest-server",
            move |ready, shutdown| async move {
                use axum::serve::ListenerExt;
                let listener = tokio::net::TcpListener::bind(bind)
                    .await
                    .map_err(|e| BenchError::Runtime(format!("--serve {bind}: {e}")))?;
                ready(
                    listener
                        .local_addr()
                        .map_err(|e| BenchError::Runtime(e.to_string()))?,
                );
                let listener = listener.tap_io(|t| {
                    let _ = t.set_nodelay(true);
                });
                let app = Router::new()
                    .route("/v1/chat/completions", post(stream))
                    .route("/v1/models", get(models))
                    .route("/stamps", get(take_stamps))
                    .with_state(state);
                axum::serve(listener, app)
                    .with_graceful_shutdown(shutdown)
                    .await
                    .map_err(|e| BenchError::Runtime(e.to_string()))
            },
        )?;
        Ok(FastServer {
            addr,
            stamps,
            _stop: stop,
        })
    }
}

async fn models() -> Json<serde_json::Value> {
    Json(serde_json::json!({"object": "list", "data": [{"id": "selftest", "object": "model"}]}))
}

async fn take_stamps(State(s): State<ServerState>) -> Json<HashMap<u64, u64>> {
    Json(
        s.stamps
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default(),
    )
}

async fn stream(State(s): State<ServerState>, headers: HeaderMap) -> Response {
    let index = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .and_then(crate::model::request_id::index);
    let chunks = s.chunks.clone();
    let stamps = s.stamps.clone();
    let pace = s.pace;
    let body = futures_util::stream::unfold(0usize, move |i| {
        let chunks = chunks.clone();
        let stamps = stamps.clone();
        async move {
            let c = chunks.get(i)?.clone();
            if i == 2 {
                // Let hyper flush the role chunk and the first token before producing the rest;
                // otherwise it buffers the whole response and the first token leaves last.
                tokio::task::yield_now().await;
            }
            if i >= 2 && !pace.is_zero() {
                tokio::time::sleep(pace).await;
            }
            if i == 1 {
                if let (Some(ix), Ok(mut m)) = (index, stamps.lock()) {
                    m.insert(ix, unix_us());
                }
            }
            Some((Ok::<_, std::convert::Infallible>(c), i + 1))
        }
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(body))
        .unwrap_or_default()
}
