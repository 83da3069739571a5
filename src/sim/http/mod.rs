//! The simulator's HTTP surface, split from its engine model ([`super::engine`]): the OpenAI
//! API (chat and completions, streaming and not, in [`stream`]), `/v1/models`, `/tokenize`,
//! `/health` and `/metrics` with vLLM's metric names ([`routes`]), fault injection and a
//! ground-truth log. Every body is written with the shared wire types ([`crate::model::wire`]).
//!
//! One driver task ([`driver`]) owns the [`Engine`]: it runs a step, sleeps until the step's
//! modelled end, then hands each request its tokens. With a truth log, every request's arrival
//! and the wall-clock moment each token was handed to the HTTP layer are written as one JSON
//! line, keyed by the client's `X-Request-Id`.

mod driver;
mod inproc;
mod pooling;
mod responses;
mod routes;
mod stream;
mod truth;

use super::engine::Engine;
use super::profile::SimOptions;
use super::prom::PromHistogram;
use crate::error::BenchError;
use crate::model::wire::ErrorBody;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use driver::{drive, Cmd, MetricsState};
pub use inproc::InProcess;
use routes::{metrics_text, models, tokenize_route};
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use stream::{chat, completions, responses};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub opts: SimOptions,
    pub listen: SocketAddr,
    /// The model id served (any requested name is accepted and echoed).
    pub model: String,
    pub truth_log: Option<PathBuf>,
}

/// What every handler shares.
struct AppState {
    model: String,
    opts: SimOptions,
    kv_capacity_tokens: u64,
    cmd: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<Mutex<MetricsState>>,
    requests: AtomicU64,
    /// Requests answered 429 or 503 (injected faults): vLLM counts such refusals as
    /// `admission_rejections`.
    rejected: AtomicU64,
    epoch: Instant,
    truth: Option<Mutex<std::io::BufWriter<std::fs::File>>>,
}

/// A simulator running on its own thread and runtime (so it never shares a scheduler with a
/// client in the same process). Dropping it stops the server.
pub struct SimServer {
    pub addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimServer {
    pub fn start(cfg: ServeConfig) -> Result<SimServer, BenchError> {
        let (addr, stop, thread) = on_own_thread("bench-sim", move |ready, shutdown| {
            serve(cfg, ready, shutdown)
        })?;
        Ok(SimServer {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

/// Runs a server on a thread of its own with a one-worker tokio runtime, so it never shares
/// a scheduler with a client in the same process. `serve` gets a callback for its bound
/// address and a shutdown future (completes when the returned sender is used or dropped);
/// this returns once the address is known, or with the error the server failed with.
pub fn on_own_thread<F, Fut>(
    name: &str,
    serve: F,
) -> Result<
    (
        SocketAddr,
        tokio::sync::oneshot::Sender<()>,
        std::thread::JoinHandle<()>,
    ),
    BenchError,
>
where
    F: FnOnce(
            Box<dyn FnOnce(SocketAddr) + Send>,
            std::pin::Pin<Box<dyn Future<Output = ()> + Send>>,
        ) -> Fut
        + Send
        + 'static,
    Fut: Future<Output = Result<(), BenchError>>,
{
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<SocketAddr, String>>();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let thread_name = name.to_string();
    let thread = std::thread::Builder::new()
        .name(thread_name.clone())
        .spawn(move || {
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            rt.block_on(async move {
                let ready = ready_tx.clone();
                let on_ready: Box<dyn FnOnce(SocketAddr) + Send> = Box::new(move |addr| {
                    let _ = ready.send(Ok(addr));
                });
                let shutdown = Box::pin(async {
                    let _ = stop_rx.await;
                });
                if let Err(e) = serve(on_ready, shutdown).await {
                    let _ = ready_tx.send(Err(e.to_string()));
                }
            });
        })
        .map_err(|e| BenchError::Runtime(format!("cannot start the {thread_name} thread: {e}")))?;
    let addr = ready_rx
        .recv()
        .map_err(|_| BenchError::Runtime(format!("the {name} server stopped before it was ready")))?
        .map_err(BenchError::Runtime)?;
    Ok((addr, stop_tx, thread))
}

impl Drop for SimServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves until `shutdown` completes; `on_ready` gets the bound address.
pub async fn serve(
    cfg: ServeConfig,
    on_ready: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), BenchError> {
    let engine = Engine::new(cfg.opts.clone()).map_err(BenchError::Usage)?;
    let truth = match &cfg.truth_log {
        Some(p) => Some(Mutex::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|source| BenchError::Write {
                path: p.clone(),
                source,
            })?,
        ))),
        None => None,
    };
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let metrics = Arc::new(Mutex::new(MetricsState {
        hist: Some(std::array::from_fn(|_| PromHistogram::latency())),
        ..Default::default()
    }));
    let epoch = Instant::now();
    let state = Arc::new(AppState {
        model: cfg.model.clone(),
        kv_capacity_tokens: engine.kv_capacity_tokens,
        opts: cfg.opts.clone(),
        cmd: cmd_tx,
        metrics: metrics.clone(),
        requests: AtomicU64::new(0),
        rejected: AtomicU64::new(0),
        epoch,
        truth,
    });
    tokio::spawn(drive(engine, cmd_rx, metrics, epoch));
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/responses", post(responses))
        .route("/v1/embeddings", post(pooling::embeddings))
        .route("/v1/rerank", post(pooling::rerank))
        .route("/rerank", post(pooling::rerank))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        .route(
            "/version",
            get(|| async {
                Json(serde_json::json!({"version": concat!("bench-sim ", env!("CARGO_PKG_VERSION"))}))
            }),
        )
        .route("/metrics", get(metrics_text))
        .route("/tokenize", post(tokenize_route))
        .route("/reset_prefix_cache", post(routes::reset_prefix_cache))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind(cfg.listen)
        .await
        .map_err(|e| BenchError::Runtime(format!("cannot listen on {}: {e}", cfg.listen)))?;
    let addr = listener
        .local_addr()
        .map_err(|e| BenchError::Runtime(e.to_string()))?;
    on_ready(addr);
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|t| {
        let _ = t.set_nodelay(true);
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
        .map_err(|e| BenchError::Runtime(format!("simulator server failed: {e}")))
}

/// An OpenAI-shaped error response.
fn error(status: StatusCode, message: &str) -> Response {
    (status, Json(ErrorBody::new(message, status.as_u16()))).into_response()
}
