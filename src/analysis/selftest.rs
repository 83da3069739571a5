//! `bench selftest`: what the harness itself costs, measured against a server that streams as
//! fast as it can.
//!
//! An axum server on 127.0.0.1:0 (its own one-thread runtime) answers every chat request with a
//! role-only chunk, `--tokens` content chunks shaped like vLLM's, a usage chunk and `[DONE]`,
//! all ready at once, so the client is the bottleneck. It stamps the moment it hands the first
//! content chunk to hyper. The real client and runner (closed loop, concurrency = streams,
//! one warmup round to open the connections) then measure TTFT as usual, and
//!
//! * *chunks/s handled* = content chunks of measured requests / measured window;
//! * *added TTFT* = client's first-content timestamp − server's first-content timestamp, per
//!   request (both from the same process's monotonic clock), reported as p50/p99/max.
//!
//! Both sides share the machine's cores, so on a small machine the figures include the server's
//! own CPU use; they are an upper bound on the client's cost.

/// The two tables: (gap between chunks, chunks per response, title).
pub fn tables(args: &SelftestArgs) -> Result<Vec<(Duration, u32, String)>, BenchError> {
    if args.streams.is_empty() || args.streams.contains(&0) {
        return Err(BenchError::usage(
            "--streams: give one or more positive counts, e.g. 1,64,1024",
        ));
    }
    if !(args.pace_ms.is_finite() && args.pace_ms > 0.0) {
        return Err(BenchError::usage("--pace-ms: must be > 0"));
    }
    let paced = Duration::from_secs_f64(args.pace_ms / 1000.0);
    Ok(vec![
        (Duration::ZERO, args.tokens, "flat out: the server sends every chunk at once; closed loop, concurrency = streams".to_string()),
        (paced, args.paced_tokens, format!("paced: one chunk every {} ms per stream; open loop (Poisson) at the rate that keeps `streams` in flight", args.pace_ms)),
    ])
}

use crate::cli::SelftestArgs;
use crate::engine::client::{HttpSender, Target};
use crate::engine::runner;
use crate::error::BenchError;
use crate::metrics::quantile::Sample;
use crate::metrics::summary::summarize;
use crate::model::scenario::{Api, Arrival, LoadMode};
use crate::model::selftest::Level;
use crate::model::wire::{sse, StreamHeader, Usage, DONE};
use crate::plan::Plan;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

type Stamps = Arc<Mutex<HashMap<u64, Instant>>>;

/// The reference server: every response ready at once (or paced), stamped at its first token.
pub struct FastServer {
    addr: SocketAddr,
    stamps: Stamps,
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
    /// A server whose responses carry `tokens` content chunks, `pace` apart (zero: at once).
    pub fn start(tokens: u32, pace: Duration) -> Result<FastServer, BenchError> {
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
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .map_err(|e| BenchError::Runtime(e.to_string()))?;
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

async fn stream(State(s): State<ServerState>, headers: HeaderMap) -> Response {
    let index = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.rsplit('-').next())
        .and_then(|v| v.parse::<u64>().ok());
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
                    m.insert(ix, Instant::now());
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

/// One level: `streams` concurrent streams, measured as the module header says.
pub async fn level(
    server: &FastServer,
    streams: u32,
    tokens: u32,
    rounds: u32,
    pace: Duration,
) -> Result<Level, BenchError> {
    if let Ok(mut m) = server.stamps.lock() {
        m.clear();
    }
    // Flat out, a level takes a fraction of a second, so 200 requests are cheap; paced, one
    // response lasts tokens × pace and the open loop runs at streams / that, so keep it short.
    let floor = if pace.is_zero() { 200 } else { 20 };
    let requests = (streams as u64 * rounds as u64).max(floor);
    let text = format!(
        "name = \"selftest\"\n[request]\ntimeout_s = 120\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = {tokens}\n[load]\nconcurrency = {streams}\nrequests = {requests}\nwarmup = {streams}\n"
    );
    let mut s = crate::config::scenario::parse(&text, Path::new("<selftest>"))?;
    let target = Target::new(
        &format!("http://{}/v1", server.addr),
        Api::Chat,
        "selftest".into(),
        None,
    )?;
    let sender = Arc::new(HttpSender::new(
        target,
        s.request.clone(),
        format!("selftest{streams}"),
    )?);
    s.load.mode = if pace.is_zero() {
        LoadMode::Closed {
            concurrency: streams,
        }
    } else {
        // Poisson arrivals at the rate that keeps `streams` requests in flight on average
        // (Little's law: rate = concurrency / duration of one response).
        let per_request_s = pace.as_secs_f64() * tokens as f64;
        LoadMode::Open {
            rate_rps: streams as f64 / per_request_s,
            arrival: Arrival::Poisson,
            burstiness: 1.0,
            max_concurrency: None,
        }
    };
    let plan = Plan::new(&s, None)?;
    let data = runner::run(
        sender,
        &plan,
        Duration::from_secs(1),
        CancellationToken::new(),
        |_| {},
    )
    .await?;
    let (summary, _) = summarize(&data, &s.slo, true);
    let stamps = server.stamps.lock().map(|m| m.clone()).unwrap_or_default();
    let start = data.run_start.into_std();
    let mut added = Vec::new();
    let mut chunks = 0u64;
    for r in data
        .records
        .iter()
        .filter(|r| !r.warmup && r.outcome.is_ok())
    {
        chunks += r.content_chunks as u64;
        let (Some(ttft), Some(server_first)) = (r.ttft_us, stamps.get(&r.index)) else {
            continue;
        };
        let client_first = start + Duration::from_micros(r.intended_us + ttft);
        added.push(
            client_first
                .saturating_duration_since(*server_first)
                .as_micros() as f64,
        );
    }
    let added = Sample::from_values(added);
    let window = summary.throughput.window_s;
    Ok(Level {
        streams,
        requests,
        ok: summary.counts.ok,
        chunks_per_s: if window > 0.0 {
            chunks as f64 / window
        } else {
            0.0
        },
        added_ttft_p50_us: added.quantile(0.5).unwrap_or(0.0),
        added_ttft_p99_us: added.quantile(0.99).unwrap_or(0.0),
        added_ttft_max_us: added.max().unwrap_or(0.0),
        peak: summary.throughput.peak_concurrency,
    })
}
