//! The simulator's HTTP surface: the OpenAI API (chat and completions, streaming and not),
//! `/v1/models`, `/health` and `/metrics` with vLLM's metric names, plus fault injection and a
//! ground-truth log.
//!
//! One driver task owns the [`Engine`]. It runs a step, sleeps until the step's modelled end,
//! then hands each request its tokens. The model's clock advances by exact step durations and
//! only resynchronises with the wall clock after an idle period or when it falls more than
//! 5 ms behind, so sleep granularity jitters token times without accumulating. With a truth
//! log, every request's arrival and the wall-clock moment each token was handed to the HTTP
//! layer are written as one JSON line, keyed by the client's `X-Request-Id`.

use super::engine::{Engine, NewRequest};
use super::profile::SimOptions;
use super::prom::{PromHistogram, PromWriter};
use super::tokenize;
use crate::error::BenchError;
use crate::workload::{stream_rng, vocab_word};
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rand::Rng;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
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

struct Ev {
    tokens: u32,
    finished: bool,
    at: Instant,
}

enum Cmd {
    Add {
        req: NewRequest,
        max_tokens: u32,
        ignore_eos: bool,
        tx: mpsc::UnboundedSender<Ev>,
    },
}

#[derive(Default)]
struct MetricsState {
    running: usize,
    waiting: usize,
    kv_usage: f64,
    counters: super::engine::Counters,
    hist: Option<[PromHistogram; 4]>,
}

struct AppState {
    model: String,
    opts: SimOptions,
    kv_capacity_tokens: u64,
    cmd: mpsc::UnboundedSender<Cmd>,
    metrics: Arc<Mutex<MetricsState>>,
    requests: AtomicU64,
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
        epoch,
        truth,
    });
    tokio::spawn(drive(engine, cmd_rx, metrics, epoch));
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { "ok" }))
        .route("/metrics", get(metrics_text))
        .route("/tokenize", post(tokenize_route))
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

async fn drive(
    mut engine: Engine,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
    metrics: Arc<Mutex<MetricsState>>,
    epoch: Instant,
) {
    let mut streams: HashMap<u64, mpsc::UnboundedSender<Ev>> = HashMap::new();
    let mut vt = 0.0f64;
    let handle = |engine: &mut Engine,
                  streams: &mut HashMap<u64, mpsc::UnboundedSender<Ev>>,
                  cmd: Cmd| match cmd {
        Cmd::Add {
            mut req,
            max_tokens,
            ignore_eos,
            tx,
        } => {
            req.output_tokens = engine.output_length(max_tokens, ignore_eos);
            req.arrival = epoch.elapsed().as_secs_f64();
            let id = req.id;
            if engine.add(req).is_ok() {
                streams.insert(id, tx);
            }
            // A refused request's sender drops here: its handler reports the error.
        }
    };
    loop {
        loop {
            match rx.try_recv() {
                Ok(cmd) => handle(&mut engine, &mut streams, cmd),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        if !engine.has_work() {
            publish(&mut engine, &metrics);
            match rx.recv().await {
                Some(cmd) => handle(&mut engine, &mut streams, cmd),
                None => return,
            }
            continue;
        }
        let now = epoch.elapsed().as_secs_f64();
        if vt < now - 0.005 {
            vt = now;
        }
        let out = engine.step(vt);
        vt += out.duration_s;
        tokio::time::sleep_until(epoch + Duration::from_secs_f64(vt)).await;
        let at = Instant::now();
        for e in out.emitted {
            let gone = match streams.get(&e.id) {
                Some(tx) => tx
                    .send(Ev {
                        tokens: e.tokens,
                        finished: e.finished,
                        at,
                    })
                    .is_err(),
                None => true,
            };
            if gone {
                // The client went away: stop generating for it.
                engine.abort(e.id);
                streams.remove(&e.id);
            } else if e.finished {
                streams.remove(&e.id);
            }
        }
        publish(&mut engine, &metrics);
    }
}

fn publish(engine: &mut Engine, metrics: &Arc<Mutex<MetricsState>>) {
    let obs = engine.take_observations();
    if let Ok(mut m) = metrics.lock() {
        m.running = engine.num_running();
        m.waiting = engine.num_waiting();
        m.kv_usage = engine.kv_usage();
        m.counters = engine.counters.clone();
        if let Some(h) = m.hist.as_mut() {
            let series = [
                &obs.queue_time_s,
                &obs.prefill_time_s,
                &obs.ttft_s,
                &obs.e2e_s,
            ];
            for (hist, values) in h.iter_mut().zip(series) {
                for v in values {
                    hist.observe(*v);
                }
            }
        }
    }
}

async fn metrics_text(State(s): State<Arc<AppState>>) -> Response {
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
    }
    (
        [("content-type", "text/plain; version=0.0.4; charset=utf-8")],
        w.finish(),
    )
        .into_response()
}

/// `POST /tokenize`, in vLLM's shape (`prompt` or `messages` → `tokens`, `count`) and
/// llama-server's (`content` → `tokens`), with the tokenizer the engine counts usage with.
async fn tokenize_route(State(s): State<Arc<AppState>>, body: Bytes) -> Response {
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

async fn models(State(s): State<Arc<AppState>>) -> Json<Value> {
    Json(
        json!({"object": "list", "data": [{"id": s.model, "object": "model", "owned_by": "bench-sim", "max_model_len": s.opts.max_model_len}]}),
    )
}

fn error(status: StatusCode, message: &str) -> Response {
    let kind = if status.is_client_error() {
        "invalid_request_error"
    } else {
        "server_error"
    };
    (status, Json(json!({"error": {"message": message, "type": kind, "param": null, "code": status.as_u16()}}))).into_response()
}

async fn chat(s: State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(s.0, headers, body, true).await
}

async fn completions(s: State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(s.0, headers, body, false).await
}

/// A parsed, validated request.
struct Parsed {
    tokens: Vec<u64>,
    max_tokens: u32,
    ignore_eos: bool,
    stream: bool,
    include_usage: bool,
    model: String,
}

fn parse(body: &[u8], chat: bool, default_model: &str) -> Result<Parsed, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    let o = v.as_object().ok_or("the body must be a JSON object")?;
    let tokens = if chat {
        tokenize::chat(o.get("messages").ok_or("`messages` is required")?)?
    } else {
        match o.get("prompt") {
            Some(Value::String(p)) => tokenize::text(p),
            Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
                tokenize::text(a[0].as_str().unwrap_or_default())
            }
            Some(_) => return Err("`prompt` must be a string".into()),
            None => return Err("`prompt` is required".into()),
        }
    };
    let max_tokens = match o
        .get("max_tokens")
        .or_else(|| o.get("max_completion_tokens"))
    {
        None | Some(Value::Null) => {
            if chat {
                256
            } else {
                16
            }
        }
        Some(m) => match m.as_u64() {
            Some(n) if n >= 1 && n <= u32::MAX as u64 => n as u32,
            _ => return Err(format!("`max_tokens` must be a positive integer (got {m})")),
        },
    };
    let flag = |k: &str| o.get(k).and_then(Value::as_bool).unwrap_or(false);
    Ok(Parsed {
        tokens,
        max_tokens,
        ignore_eos: flag("ignore_eos"),
        stream: flag("stream"),
        include_usage: o
            .get("stream_options")
            .and_then(|so| so.get("include_usage"))
            .and_then(Value::as_bool)
            .unwrap_or(false),
        model: o
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or(default_model)
            .to_string(),
    })
}

/// Faults drawn for one request.
#[derive(Debug, Default)]
struct Faults {
    status: Option<StatusCode>,
    stall: bool,
    disconnect_after: Option<u32>,
    malformed: bool,
}

fn draw_faults(o: &SimOptions, n: u64, max_tokens: u32) -> Faults {
    // A stream of its own per request number, independent of the engine's.
    let mut rng = stream_rng(o.seed ^ 0xfa17, n);
    let r: f64 = rng.random();
    let status = if r < o.fault_500 {
        Some(StatusCode::INTERNAL_SERVER_ERROR)
    } else if r < o.fault_500 + o.fault_429 {
        Some(StatusCode::TOO_MANY_REQUESTS)
    } else if r < o.fault_500 + o.fault_429 + o.fault_503 {
        Some(StatusCode::SERVICE_UNAVAILABLE)
    } else {
        None
    };
    let stall = rng.random_bool(o.fault_stall);
    let disconnect_after = rng
        .random_bool(o.fault_disconnect)
        .then(|| rng.random_range(0..max_tokens.max(1)));
    let malformed = rng.random_bool(o.fault_malformed);
    Faults {
        status,
        stall,
        disconnect_after,
        malformed,
    }
}

async fn respond(s: Arc<AppState>, headers: HeaderMap, body: Bytes, chat: bool) -> Response {
    let arrival = Instant::now();
    let n = s.requests.fetch_add(1, Ordering::SeqCst);
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let p = match parse(&body, chat, &s.model) {
        Ok(p) => p,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    if p.tokens.len() as u64 > s.opts.max_model_len as u64 {
        return error(
            StatusCode::BAD_REQUEST,
            &format!(
                "the prompt has {} tokens; this model's maximum context length is {}",
                p.tokens.len(),
                s.opts.max_model_len
            ),
        );
    }
    if p.tokens.len() as u64 + p.max_tokens as u64 + s.opts.block_size as u64 > s.kv_capacity_tokens
    {
        return error(
            StatusCode::BAD_REQUEST,
            &format!(
                "prompt ({}) + max_tokens ({}) exceed the KV cache ({} tokens)",
                p.tokens.len(),
                p.max_tokens,
                s.kv_capacity_tokens
            ),
        );
    }
    let faults = draw_faults(&s.opts, n, p.max_tokens);
    if s.opts.header_delay_ms > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(s.opts.header_delay_ms / 1000.0)).await;
    }
    if let Some(status) = faults.status {
        return error(status, &format!("injected fault: {}", status.as_u16()));
    }
    let prompt_tokens = p.tokens.len() as u64;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let req = NewRequest {
        id: n,
        tokens: p.tokens,
        output_tokens: p.max_tokens,
        arrival: 0.0,
    };
    if s.cmd
        .send(Cmd::Add {
            req,
            max_tokens: p.max_tokens,
            ignore_eos: p.ignore_eos,
            tx,
        })
        .is_err()
    {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    }
    let created = chrono::Utc::now().timestamp();
    let id = if chat {
        format!("chatcmpl-sim-{n}")
    } else {
        format!("cmpl-sim-{n}")
    };
    let model = p.model.clone();
    let chunk = move |text: Option<&str>, finish: Option<&str>, role: bool| -> Value {
        if chat {
            let mut delta = serde_json::Map::new();
            if role {
                delta.insert("role".into(), json!("assistant"));
                delta.insert("content".into(), json!(""));
            } else if let Some(t) = text {
                delta.insert("content".into(), json!(t));
            }
            json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
        } else {
            json!({"id": id, "object": "text_completion", "created": created, "model": model,
                   "choices": [{"index": 0, "text": text.unwrap_or(""), "logprobs": null, "finish_reason": finish}]})
        }
    };
    let usage = move |out: u64| json!({"prompt_tokens": prompt_tokens, "completion_tokens": out, "total_tokens": prompt_tokens + out});
    let truth = TruthWriter {
        state: s.clone(),
        request_id,
        arrival,
    };

    if !p.stream {
        let mut token_at = Vec::new();
        while let Some(ev) = rx.recv().await {
            token_at.extend(std::iter::repeat_n(ev.at, ev.tokens as usize));
            if ev.finished {
                break;
            }
        }
        if token_at.is_empty() {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the engine refused the request",
            );
        }
        truth.write(&token_at);
        let text: String = (0..token_at.len())
            .map(|i| format!(" {}", vocab_word(n as usize + i)))
            .collect();
        let finish = if token_at.len() as u32 >= p.max_tokens {
            "length"
        } else {
            "stop"
        };
        let out = token_at.len() as u64;
        let body = if chat {
            json!({"id": format!("chatcmpl-sim-{n}"), "object": "chat.completion", "created": created, "model": p.model,
                   "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}], "usage": usage(out)})
        } else {
            json!({"id": format!("cmpl-sim-{n}"), "object": "text_completion", "created": created, "model": p.model,
                   "choices": [{"index": 0, "text": text, "finish_reason": finish}], "usage": usage(out)})
        };
        return Json(body).into_response();
    }

    let max_tokens = p.max_tokens;
    let include_usage = p.include_usage;
    let stall = if faults.stall {
        Duration::from_secs_f64(s.opts.stall_ms / 1000.0)
    } else {
        Duration::ZERO
    };
    let (out_tx, out_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
    tokio::spawn(async move {
        let sse = |v: Value| Bytes::from(format!("data: {v}\n\n"));
        let send = |b: Bytes| {
            let out_tx = out_tx.clone();
            async move { out_tx.send(Ok(b)).await.is_ok() }
        };
        if chat && !send(sse(chunk(None, None, true))).await {
            return;
        }
        let mut token_at: Vec<Instant> = Vec::new();
        let mut first = true;
        while let Some(ev) = rx.recv().await {
            if first && !stall.is_zero() {
                tokio::time::sleep(stall).await;
            }
            let start = token_at.len();
            token_at.extend(std::iter::repeat_n(ev.at, ev.tokens as usize));
            if let Some(k) = faults.disconnect_after {
                if token_at.len() as u32 > k {
                    let _ = out_tx
                        .send(Err(std::io::Error::other("injected disconnect")))
                        .await;
                    return;
                }
            }
            let text: String = (start..token_at.len())
                .map(|i| format!(" {}", vocab_word(n as usize + i)))
                .collect();
            if !send(sse(chunk(Some(&text), None, false))).await {
                return; // client gone; dropping `rx` tells the engine
            }
            if first
                && faults.malformed
                && !send(Bytes::from_static(b"data: {\"choices\": [\n\n")).await
            {
                return;
            }
            first = false;
            if ev.finished {
                break;
            }
        }
        if token_at.is_empty() {
            let _ = send(sse(json!({"error": {"message": "the engine refused the request", "type": "server_error", "code": 500}}))).await;
            return;
        }
        truth.write(&token_at);
        let finish = if token_at.len() as u32 >= max_tokens {
            "length"
        } else {
            "stop"
        };
        let _ = send(sse(chunk(None, Some(finish), false))).await;
        if include_usage {
            let _ = send(sse(json!({"id": format!("{}-sim-{n}", if chat { "chatcmpl" } else { "cmpl" }), "object": if chat { "chat.completion.chunk" } else { "text_completion" },
                                   "created": created, "model": p.model, "choices": [], "usage": usage(token_at.len() as u64)}))).await;
        }
        let _ = send(Bytes::from_static(b"data: [DONE]\n\n")).await;
    });
    let body =
        futures_util::stream::unfold(
            out_rx,
            |mut rx| async move { rx.recv().await.map(|v| (v, rx)) },
        );
    Response::builder()
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(body))
        .unwrap_or_else(|_| {
            error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "cannot build the response",
            )
        })
}

/// Writes one request's ground truth when it finishes.
struct TruthWriter {
    state: Arc<AppState>,
    request_id: Option<String>,
    arrival: Instant,
}

impl TruthWriter {
    fn write(&self, token_at: &[Instant]) {
        let Some(t) = &self.state.truth else { return };
        let us = |i: Instant| i.saturating_duration_since(self.state.epoch).as_micros() as u64;
        let line = json!({
            "request_id": self.request_id,
            "arrival_us": us(self.arrival),
            "first_token_us": token_at.first().map(|i| us(*i)),
            "token_us": token_at.iter().map(|i| us(*i)).collect::<Vec<_>>(),
            "output_tokens": token_at.len(),
        });
        if let Ok(mut w) = t.lock() {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}
