//! An in-process OpenAI-compatible SSE server for tests, with fault injection by request index.
//!
//! The index comes from the `X-Request-Id: {run_id}-{index}` header that `bench` sends. Normal
//! requests stream like vLLM's chat endpoint: a role-only first chunk at once, then the first
//! token after `first_token_delay`, then one token every `token_gap`, a usage chunk and `[DONE]`.
//! Bodies are written with `bench`'s own wire types (`bench::model::wire`), the ones the
//! simulator writes and the client reads; only the deliberately broken events are hand-made.
#![allow(dead_code)]

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use bench::model::wire::{self, ErrorBody, ModelCard, ModelList, StreamHeader, Usage};
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `bench` binary under test.
pub fn bench() -> std::process::Command {
    std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
}

/// The `bench` binary with `CI` set, as CI runs it (no progress bar).
pub fn bench_ci() -> std::process::Command {
    let mut c = bench();
    c.env("CI", "1");
    c
}

/// The embedded simulator's truth log (`--sim-truth-log`) by request index (a calibration
/// probe names none).
pub fn sim_truth(path: &std::path::Path) -> HashMap<u64, serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter_map(|l| {
            let id = bench::model::request_id::index(l["request_id"].as_str()?)?;
            Some((id, l))
        })
        .collect()
}

/// `bench run SCENARIO` on the embedded simulator with its truth log and `extra` flags, both
/// written beside the scenario (`o/`, `truth.jsonl`): the run.json and the truth by index.
pub fn run_with_truth(
    scenario: &std::path::Path,
    extra: &[&str],
) -> (serde_json::Value, HashMap<u64, serde_json::Value>) {
    let dir = scenario.parent().unwrap();
    let log = dir.join("truth.jsonl");
    let mut flags = vec!["--sim-truth-log", log.to_str().unwrap()];
    flags.extend(extra);
    let run = run_ok(scenario, &dir.join("o"), &flags);
    (run, sim_truth(&log))
}

/// The latencies a run.json's summary shows, in its order.
pub fn latency_names(run: &serde_json::Value) -> Vec<String> {
    run["summary"]["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap().to_string())
        .collect()
}

/// A JSON file bench wrote, parsed.
pub fn read_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// `bench ARGS…` run to its end (`CI` set, so no progress bar): its exit code, and its stdout
/// and stderr as one text.
pub fn bench_text(args: &[&str]) -> (Option<i32>, String) {
    text_of(bench_ci().args(args))
}

/// A command run to its end: its exit code, and its stdout and stderr as one text.
pub fn text_of(c: &mut std::process::Command) -> (Option<i32>, String) {
    let o = c.output().unwrap();
    let t = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.status.code(), t)
}

/// [`scenario`] with timeouts long enough (120 s to the first token, 240 s in all) that only
/// a signal ends a stalled request.
pub fn patient_scenario(dir: &std::path::Path, addr: SocketAddr, load: &str) -> std::path::PathBuf {
    let p = scenario(dir, addr, "", load);
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("first_token_timeout_s = 0.5", "first_token_timeout_s = 120")
        .replace("timeout_s = 5", "timeout_s = 240");
    std::fs::write(&p, text).unwrap();
    p
}

/// Starts `bench run -q --grace GRACE` of a [`patient_scenario`] of `load` (stderr piped),
/// returning the child and its output directory.
pub fn start_run(
    dir: &std::path::Path,
    addr: SocketAddr,
    load: &str,
    grace: &str,
) -> (std::process::Child, std::path::PathBuf) {
    let scenario = patient_scenario(dir, addr, load);
    let out = dir.join("out");
    let child = bench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .args(["-q", "--grace", grace])
        .env("CI", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (child, out)
}

/// Waits until the server has received `n` completion requests (the run is under way).
pub fn wait_for_requests(log: &Log, n: usize) {
    let until = std::time::Instant::now() + Duration::from_secs(60);
    while log
        .received
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.path.contains("completions"))
        .count()
        < n
    {
        assert!(
            std::time::Instant::now() < until,
            "the run never sent {n} requests"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A run directory's `run.json`, read as bench reads it (typed, schema-checked).
pub fn run_result(dir: &std::path::Path) -> bench::model::result::RunResult {
    bench::model::result::RunResult::load(&dir.join("run.json"))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fault {
    Status(u16),
    /// Close the connection after this many tokens.
    Disconnect(u32),
    /// Send the role chunk, then nothing for a long time.
    Stall,
    /// Stream normally but send no usage chunk.
    NoUsage,
    /// Report `u64::MAX` prompt and completion tokens in the usage chunk.
    AbsurdUsage,
    /// Answer 200 with `application/json` (a whole completion), ignoring `stream: true`.
    JsonReply,
    /// After the role chunk, one `data:` line of this many bytes, in 64 KiB writes.
    HugeEvent(usize),
    /// A `data:` line that is not JSON, after one token.
    Malformed,
    /// An error object inside the stream after one token.
    ErrorEvent,
    /// Finish cleanly with no text at all.
    Empty,
    /// Stop after `n` tokens although max_tokens asked for more (like an EOS).
    ShortOutput(u32),
    /// An error response that echoes the Authorization header (to test redaction).
    EchoAuth,
    /// The same after this many characters of padding, so a cut at ~300 falls inside the key.
    EchoAuthAfter(usize),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub first_token_delay: Duration,
    pub token_gap: Duration,
    pub faults: HashMap<u64, Fault>,
    /// Request index → the exact reads of its 200 `text/event-stream` body (for fuzzing the
    /// client with arbitrary bytes); shared, so a test can change them between runs.
    pub raw: Arc<Mutex<HashMap<u64, Vec<Vec<u8>>>>>,
    /// The id `GET /v1/models` lists (`{key}` becomes the bearer token it was sent, as a
    /// hostile server might); `test-model` when `None`.
    pub model_id: Option<String>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            first_token_delay: Duration::from_millis(20),
            token_gap: Duration::from_millis(1),
            faults: HashMap::new(),
            raw: Arc::default(),
            model_id: None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub index: Option<u64>,
    pub body: serde_json::Value,
    pub authorization: Option<String>,
}

#[derive(Default)]
pub struct Log {
    pub received: Mutex<Vec<Received>>,
}

struct AppState {
    cfg: Config,
    log: Arc<Log>,
}

/// Starts the server on 127.0.0.1:0 in the current runtime.
pub async fn spawn(cfg: Config) -> (SocketAddr, Arc<Log>) {
    let log = Arc::new(Log::default());
    let state = Arc::new(AppState {
        cfg,
        log: log.clone(),
    });
    let app = Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // TCP_NODELAY as real engines' servers set it: with Nagle on, small SSE writes queue
    // behind the client's delayed ACKs and arrive in bursts.
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        axum::serve(listener, app).await.unwrap();
    });
    (addr, log)
}

/// Starts the server on its own runtime thread (for tests that run the `bench` binary).
pub fn spawn_background(cfg: Config) -> (SocketAddr, Arc<Log>) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let r = spawn(cfg).await;
            tx.send(r).unwrap();
            std::future::pending::<()>().await;
        });
    });
    rx.recv().unwrap()
}

async fn models(State(s): State<Arc<AppState>>, headers: HeaderMap) -> Json<ModelList> {
    let key = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    let id = s.cfg.model_id.as_deref().unwrap_or("test-model");
    Json(ModelList::one(ModelCard {
        id: id.replace("{key}", key),
        object: "model".into(),
        owned_by: None,
        max_model_len: None,
    }))
}

async fn chat(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    respond(s, headers, body, true, "/v1/chat/completions")
}

async fn completions(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    Json(body): Json<serde_json::Value>,
) -> Response {
    respond(s, headers, body, false, "/v1/completions")
}

fn sse(c: &impl serde::Serialize) -> Bytes {
    Bytes::from(wire::sse(c))
}

/// The answer of a fault that is not a stream (an error status, a whole JSON completion).
fn whole_answer(fault: Fault, authorization: Option<String>) -> Option<Response> {
    match fault {
        Fault::Status(code) => {
            let code = StatusCode::from_u16(code).unwrap();
            let body = ErrorBody::new(format!("injected {code}"), code.as_u16());
            if code == StatusCode::TOO_MANY_REQUESTS {
                return Some((code, [("retry-after", "7")], Json(body)).into_response());
            }
            Some((code, Json(body)).into_response())
        }
        Fault::EchoAuthAfter(pad) => {
            let msg = format!(
                "{} invalid credentials: {}",
                "x".repeat(pad),
                authorization.unwrap_or_default()
            );
            Some((StatusCode::UNAUTHORIZED, Json(ErrorBody::new(msg, 401))).into_response())
        }
        Fault::JsonReply => {
            let reply = serde_json::json!({
                "id": "x", "object": "chat.completion", "model": "test-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "whole"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 7, "completion_tokens": 1, "total_tokens": 8}
            });
            Some((StatusCode::OK, Json(reply)).into_response())
        }
        Fault::EchoAuth => {
            let msg = format!("invalid credentials: {}", authorization.unwrap_or_default());
            Some((StatusCode::UNAUTHORIZED, Json(ErrorBody::new(msg, 401))).into_response())
        }
        _ => None,
    }
}

fn respond(
    s: Arc<AppState>,
    headers: HeaderMap,
    body: serde_json::Value,
    chat: bool,
    path: &str,
) -> Response {
    let index = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .and_then(bench::model::request_id::index);
    let authorization = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    s.log.received.lock().unwrap().push(Received {
        path: path.into(),
        index,
        body: body.clone(),
        authorization: authorization.clone(),
    });
    let raw = index.and_then(|i| s.cfg.raw.lock().unwrap().get(&i).cloned());
    if let Some(reads) = raw {
        let stream = async_stream(move |tx| async move {
            for r in reads {
                tx.send(Bytes::from(r)).await?;
            }
            Ok(())
        });
        return Response::builder()
            .header("content-type", "text/event-stream")
            .body(Body::from_stream(stream))
            .unwrap();
    }
    let fault = index.and_then(|i| s.cfg.faults.get(&i).copied());
    if let Some(r) = fault.and_then(|f| whole_answer(f, authorization)) {
        return r;
    }
    let max_tokens = body
        .get("max_tokens")
        .and_then(|v| v.as_u64())
        .unwrap_or(16) as u32;
    let prompt_tokens = 7u64;
    let cfg = s.cfg.clone();
    let h = StreamHeader::bare(chat);
    let stream = async_stream(move |tx| async move {
        if chat {
            tx.send(sse(&h.role())).await?;
        }
        if fault == Some(Fault::Stall) {
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
        if let Some(Fault::HugeEvent(n)) = fault {
            tx.send(Bytes::from_static(b"data: ")).await?;
            let piece = Bytes::from(vec![b'x'; 64 << 10]);
            for _ in 0..n.div_ceil(64 << 10) {
                tx.send(piece.clone()).await?;
            }
            tx.send(Bytes::from_static(b"\n\n")).await?;
        }
        tokio::time::sleep(cfg.first_token_delay).await;
        let n = match fault {
            Some(Fault::Empty) => 0,
            Some(Fault::ShortOutput(k)) => k.min(max_tokens),
            _ => max_tokens,
        };
        for i in 0..n {
            if i > 0 {
                tokio::time::sleep(cfg.token_gap).await;
            }
            match fault {
                Some(Fault::Disconnect(k)) if i == k => return Err(()),
                Some(Fault::Malformed) if i == 1 => {
                    tx.send(Bytes::from_static(b"data: {not json\n\n")).await?;
                }
                Some(Fault::ErrorEvent) if i == 1 => {
                    tx.send(sse(&ErrorBody::new("engine died", 500))).await?;
                }
                _ => {}
            }
            tx.send(sse(&h.text(" tok"))).await?;
        }
        tx.send(sse(&h.finish("length"))).await?;
        if fault == Some(Fault::AbsurdUsage) {
            tx.send(sse(&h.usage(Usage::new(u64::MAX, u64::MAX))))
                .await?;
        } else if fault != Some(Fault::NoUsage) {
            tx.send(sse(&h.usage(Usage::new(prompt_tokens, n as u64))))
                .await?;
        }
        tx.send(Bytes::from_static(wire::DONE.as_bytes())).await?;
        Ok(())
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A body stream fed by a producer task; the producer returning `Err` breaks the connection.
fn async_stream<F, Fut>(f: F) -> impl futures_util::Stream<Item = Result<Bytes, std::io::Error>>
where
    F: FnOnce(Tx) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<(), ()>> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, std::io::Error>>(64);
    let tx2 = tx.clone();
    tokio::spawn(async move {
        if f(Tx(tx)).await.is_err() {
            let _ = tx2
                .send(Err(std::io::Error::other("injected disconnect")))
                .await;
        }
    });
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|v| (v, rx)) })
}

pub struct Tx(tokio::sync::mpsc::Sender<Result<Bytes, std::io::Error>>);

impl Tx {
    pub async fn send(&self, b: Bytes) -> Result<(), ()> {
        self.0.send(Ok(b)).await.map_err(|_| ())
    }
}

#[allow(unused)]
fn _infallible(_: Infallible) {}

/// A scenario file pointing at `addr`, written into `dir`.
pub fn scenario(
    dir: &std::path::Path,
    addr: SocketAddr,
    extra_request: &str,
    load: &str,
) -> std::path::PathBuf {
    let text = format!(
        r#"name = "e2e"
api = "chat"
model = "test-model"
endpoint = "http://{addr}/v1"
seed = 5

[request]
first_token_timeout_s = 0.5
timeout_s = 5
{extra_request}

[workload]
type = "synthetic"
input_tokens = 16
output_tokens = 8

[load]
{load}
"#
    );
    let p = dir.join("e2e.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// `bench run SCENARIO --out OUT -q EXTRA…`: asserts exit 0 (showing stderr otherwise) and
/// returns the run.json it wrote.
pub fn run_ok(
    scenario: &std::path::Path,
    out: &std::path::Path,
    extra: &[&str],
) -> serde_json::Value {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("run")
        .arg(scenario)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .args(extra)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

/// Σ of a run.json `summary.counts.errors` map (every error kind).
#[allow(dead_code)]
pub fn errors_total(counts: &serde_json::Value) -> u64 {
    counts["errors"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum()
}

/// What a fake sender measured for one request: when it went out, the first and last token
/// (none for a failure), and the counts.
pub struct Faked {
    pub sent: tokio::time::Instant,
    pub outcome: bench::model::record::Outcome,
    pub tokens: Option<(tokio::time::Instant, tokio::time::Instant)>,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
}

/// The record a fake sender returns for `spec`, timed as the real client times it (from the
/// intended send), ending now.
pub fn fake_record(
    spec: &bench::plan::prompts::RequestSpec,
    ctx: &bench::engine::runner::SendCtx,
    f: Faked,
) -> bench::model::record::RequestRecord {
    let us =
        |t: tokio::time::Instant| t.saturating_duration_since(ctx.run_start).as_micros() as u64;
    let since =
        |t: tokio::time::Instant| t.saturating_duration_since(ctx.intended).as_micros() as u64;
    bench::model::record::RequestRecord {
        index: spec.index,
        warmup: spec.warmup,
        session: spec.session.map(|s| s.0),
        turn: spec.session.map(|s| s.1),
        class: spec.class.clone(),
        outcome: f.outcome,
        intended_us: us(ctx.intended),
        sent_us: us(f.sent),
        end_us: us(tokio::time::Instant::now()),
        retried: false,
        queue_us: ctx.queue.as_micros() as u64,
        send_lag_us: (f
            .sent
            .saturating_duration_since(ctx.intended)
            .saturating_sub(ctx.queue))
        .as_micros() as u64,
        ttft_us: f.tokens.map(|(first, _)| since(first)),
        e2e_us: f.tokens.map(|(_, last)| since(last)),
        tpot_us: None,
        prompt_tokens: Some(f.prompt_tokens),
        output_tokens: f.output_tokens,
        output_tokens_from_usage: true,
        usage_rejected: false,
        max_tokens: spec.max_tokens,
        input_tokens_target: spec.input_tokens_target,
        content_chunks: f.output_tokens as u32,
        preamble_chunks: 0,
        first_event_us: f.tokens.map(|(first, _)| since(first)),
        cached_tokens: None,
        images: None,
        server: None,
        stream: Default::default(),
        finish_reason: None,
        error: None,
    }
}
