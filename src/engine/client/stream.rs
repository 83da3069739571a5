//! One request over HTTP: send it, read its event stream, time every read as it arrives, and
//! end in exactly one [`RequestRecord`] — ok, or the kind of failure — whatever the server
//! does. TTFT, E2E and TPOT are computed here from the *intended* send time.

use super::body::request_body;
use super::openai::truncate;
use super::sse::{SseDecoder, MAX_EVENT_BYTES};
use super::{counted_http_client, error_chain, ConnectCounter, Target};
use crate::engine::runner::{SendCtx, Sender, Sent};
use crate::error::BenchError;
use crate::model::record::{Images, Outcome, RequestRecord};
use crate::model::request_id;
use crate::model::scenario::{Api, RequestParams};
use crate::model::wire::Usage;
use crate::plan::prompts::RequestSpec;
use futures_util::StreamExt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{timeout_at, Instant};
use tokio_util::sync::CancellationToken;
use url::Url;

/// Sends plan requests over HTTP.
pub struct HttpSender {
    http: reqwest::Client,
    /// Keeps no idle connection: a retry after a stale one goes out on a new connection.
    fresh: reqwest::Client,
    /// Connections both clients opened.
    connections: ConnectCounter,
    /// Whether requests still take kept-alive connections from the pool.
    reuse: Reuse,
    target: Arc<Target>,
    params: RequestParams,
    /// What the `X-Request-Id` header names with each index ([`request_id::of`]).
    run_id: String,
    url: Url,
    /// Counts the tokens of chunks the server did not count one by one (`--tokenizer`).
    chunk_tokenizer: Option<Arc<tokenizers::Tokenizer>>,
}

impl HttpSender {
    /// Connections opened so far for this sender's requests (retries included).
    pub fn connections_opened(&self) -> u64 {
        self.connections.get()
    }

    /// The request whose stale connection made this sender stop reusing connections, if one
    /// did ([`Reuse`]).
    pub fn reuse_stopped_at(&self) -> Option<u64> {
        self.reuse.stopped_at()
    }

    pub fn new(target: Target, params: RequestParams, run_id: String) -> Result<Self, BenchError> {
        let connections = ConnectCounter::default();
        let http = counted_http_client(&connections, true)?;
        let fresh = counted_http_client(&connections, false)?;
        let url = target.url(target.api.route());
        Ok(HttpSender {
            http,
            fresh,
            connections,
            reuse: Reuse::default(),
            target: Arc::new(target),
            params,
            run_id,
            url,
            chunk_tokenizer: None,
        })
    }

    /// Counts with `tok` the tokens of each chunk of a stream whose server reported its output
    /// tokens only in total ([`ChunkTokens::Counted`]).
    ///
    /// [`ChunkTokens::Counted`]: crate::model::record::ChunkTokens::Counted
    pub fn counting_chunks_with(mut self, tok: Option<Arc<tokenizers::Tokenizer>>) -> Self {
        self.chunk_tokenizer = tok;
        self
    }
}

/// Whether requests still go out on pooled keep-alive connections, or each on a new one.
///
/// A server that closes every connection right after its answer while its headers promise
/// keep-alive (llama-server after a streamed answer) gains nothing from a pool — every request
/// needs a new connection anyway — and the pool races each close: a request that takes a
/// connection whose close is still on its way is answered with a reset or an early EOF and
/// sent again ([`stale_connection`]), and about one in 8 000–30 000 such requests was never
/// sent at all, waiting inside hyper-util's pool for its whole first-token timeout with no
/// socket (llama-server, and a raw server closing the same way; with no pool, none in 72 000).
/// So once a pooled connection turns out to have been closed *and* at least half the requests
/// sent so far have needed a connection of their own, the sender stops reusing connections
/// for the rest of the run and says so (`counts.reuse_stopped_at`). A server that keeps its
/// connections (about one a worker) and only rarely closes one as a keep-alive timeout ends
/// keeps the pool: stopping there would add a (TLS) handshake to every later request.
#[derive(Default)]
struct Reuse {
    sent: AtomicU64,
    /// One more than the index of the request that stopped reuse; 0 while reuse goes on.
    stopped: AtomicU64,
}

impl Reuse {
    fn on(&self) -> bool {
        self.stopped.load(Ordering::Relaxed) == 0
    }

    fn stopped_at(&self) -> Option<u64> {
        self.stopped.load(Ordering::Relaxed).checked_sub(1)
    }

    /// A pooled connection of request `index` had been closed by the server; `connections`:
    /// opened so far.
    fn stale(&self, index: u64, connections: u64) {
        if connections.saturating_mul(2) >= self.sent.load(Ordering::Relaxed) {
            let _ =
                self.stopped
                    .compare_exchange(0, index + 1, Ordering::Relaxed, Ordering::Relaxed);
        }
    }
}

/// Result of racing one step against the abort signal and a deadline.
enum Step<T> {
    Done(T),
    TimedOut,
    Aborted,
}

async fn step<T>(
    abort: &CancellationToken,
    deadline: Instant,
    fut: impl Future<Output = T>,
) -> Step<T> {
    tokio::select! {
        biased;
        _ = abort.cancelled() => Step::Aborted,
        r = timeout_at(deadline, fut) => match r {
            Ok(v) => Step::Done(v),
            Err(_) => Step::TimedOut,
        },
    }
}

/// How long a stream's body may take to end after its `[DONE]` event before the connection
/// is given up. A server writes the end right after `[DONE]` (HTTP/1.1 chunked: the empty
/// last chunk, often a TCP segment of its own), so this is a bound for one that keeps the
/// stream open, not a wait a well-behaved server causes.
const BODY_END_GRACE: Duration = Duration::from_millis(100);

/// Reads a stream after its `[DONE]` to the body's end, discarding what comes, for at most
/// [`BODY_END_GRACE`] (and never past `deadline` or an abort). hyper returns a connection to
/// the pool only when its response body was read to the end; dropped one segment short, the
/// connection is closed and the next request opens a new one, paying a TCP (and, to a remote
/// endpoint, TLS) handshake inside its TTFT — against vLLM, 67–86 connections for 201
/// requests, 6 with this read. Timing is unaffected: the request's times were taken.
async fn finish_body<S, B, E>(stream: &mut S, abort: &CancellationToken, deadline: Instant)
where
    S: futures_util::Stream<Item = Result<B, E>> + Unpin,
{
    let until = deadline.min(Instant::now() + BODY_END_GRACE);
    let _ = step(abort, until, async {
        while let Some(Ok(_)) = stream.next().await {}
    })
    .await;
}

use super::progress::{us, Progress};

impl Sender for HttpSender {
    fn send(&self, spec: RequestSpec, ctx: SendCtx) -> impl Future<Output = Sent> + Send {
        self.execute(spec, ctx)
    }
}

/// How a request ended: its outcome and, for a failure, what was seen.
type Ended = (Outcome, Option<String>);

/// When a request gives up: no first token by `first`, no end by `total`.
#[derive(Clone, Copy)]
struct Deadlines {
    first: Instant,
    total: Instant,
}

impl HttpSender {
    async fn execute(&self, spec: RequestSpec, ctx: SendCtx) -> Sent {
        let api = self.target.api;
        let body = request_body(api, &self.target.model, &self.params, &spec);
        let body = serde_json::to_vec(&body).unwrap_or_default();
        let sent = Instant::now();
        let by = Deadlines {
            first: sent + Duration::from_secs_f64(self.params.first_token_timeout_s),
            total: sent + Duration::from_secs_f64(self.params.timeout_s),
        };
        let counted = self.chunk_tokenizer.is_some();
        let mut p = Progress::new(spec.keep_reply, counted, api == Api::Responses);
        let mut retried = false;
        let mut done_at = None;
        let ended = match self.response(&spec, body, &ctx, by, &mut retried).await {
            Err(ended) => ended,
            Ok(resp) if !resp.status().is_success() => refused(resp, &ctx, by).await,
            Ok(resp) if !api.streams() => {
                let ended = super::pooling::read(resp, api, &mut p, &ctx.abort, by.total).await;
                done_at = p.last;
                ended
            }
            Ok(resp) => match not_streamed(&resp) {
                Some(ended) => ended,
                None => read_stream(resp, &mut p, &ctx, by, &mut done_at).await,
            },
        };
        if let Some(tok) = &self.chunk_tokenizer {
            p.count_chunks(tok).await;
        }
        let at = Timing {
            sent,
            done_at,
            retried,
        };
        self.record(spec, &ctx, at, p, ended)
    }

    /// The response's head: the request sent, and sent once more on a new connection when a
    /// pooled one turns out closed.
    async fn response(
        &self,
        spec: &RequestSpec,
        body: Vec<u8>,
        ctx: &SendCtx,
        by: Deadlines,
        retried: &mut bool,
    ) -> Result<reqwest::Response, Ended> {
        self.reuse.sent.fetch_add(1, Ordering::Relaxed);
        let pooled = self.reuse.on();
        let client = if pooled { &self.http } else { &self.fresh };
        let mut req = client
            .post(self.url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .header("x-request-id", request_id::of(&self.run_id, spec.index))
            .body(body);
        if let Some(k) = self.target.api_key() {
            req = req.bearer_auth(k);
        }
        let request = req
            .build()
            .map_err(|e| (Outcome::StreamBroken, Some(error_chain(&e.without_url()))))?;
        // A pooled keep-alive connection the server has just closed fails before the
        // request is read: its keep-alive timeout ran out as the request went, or it
        // closes every connection after a streamed answer without saying so (llama-server
        // does), and the close was still on its way. That is the client's race, not the
        // server's error, so the request is sent again once, on a new connection (not
        // another pooled one, which may be closing too), and the record says so. The
        // retry's time stays in the latency.
        let retry = request.try_clone();
        let mut first = step(&ctx.abort, by.first, client.execute(request)).await;
        if let (Step::Done(Err(e)), Some(again)) = (&first, retry) {
            if stale_connection(e) {
                if pooled {
                    self.reuse.stale(spec.index, self.connections.get());
                }
                *retried = true;
                first = step(&ctx.abort, by.first, self.fresh.execute(again)).await;
            }
        }
        match first {
            Step::Aborted => Err((Outcome::Aborted, None)),
            Step::TimedOut => Err((
                Outcome::TimeoutFirstToken,
                Some("no response headers in time".into()),
            )),
            Step::Done(Err(e)) => {
                let kind = if e.is_connect() {
                    Outcome::Connect
                } else {
                    Outcome::StreamBroken
                };
                Err((kind, Some(error_chain(&e.without_url()))))
            }
            Step::Done(Ok(r)) => Ok(r),
        }
    }

    /// The request's one record, its times from the intended send.
    fn record(
        &self,
        spec: RequestSpec,
        ctx: &SendCtx,
        at: Timing,
        mut p: Progress,
        ended: Ended,
    ) -> Sent {
        let (outcome, detail) = ended;
        let since = |t: Instant| us(t.saturating_duration_since(ctx.intended));
        let (usage, usage_rejected) = match p.usage.map(Usage::vetted) {
            Some((u, rejected)) => (Some(u), rejected),
            None => (None, false),
        };
        let (out_tokens, from_usage) = match usage.and_then(|u| u.completion_tokens) {
            Some(n) => (n, true),
            // An embeddings or rerank answer: usage counts the input only, no output.
            None if !self.target.api.streams() && usage.is_some() => (0, true),
            None => (p.chunks as u64, false),
        };
        let ttft_us = p.first.map(since);
        let e2e_us = p.last.map(since);
        let (stream, itl_token, chunk_tokens) = p.detail(out_tokens, e2e_us, since);
        let tpot_us = match (ttft_us, e2e_us) {
            (Some(t), Some(e)) if out_tokens > 1 => Some((e - t) as f64 / (out_tokens - 1) as f64),
            _ => None,
        };
        let lag = at
            .sent
            .saturating_duration_since(ctx.intended)
            .saturating_sub(ctx.queue);
        let record = RequestRecord {
            index: spec.index,
            warmup: spec.warmup,
            session: spec.session.map(|s| s.0),
            turn: spec.session.map(|s| s.1),
            class: spec.class,
            outcome,
            intended_us: us(ctx.intended.saturating_duration_since(ctx.run_start)),
            sent_us: us(at.sent.saturating_duration_since(ctx.run_start)),
            end_us: us(at
                .done_at
                .unwrap_or_else(Instant::now)
                .saturating_duration_since(ctx.run_start)),
            retried: at.retried,
            queue_us: us(ctx.queue),
            send_lag_us: us(lag),
            ttft_us,
            e2e_us,
            tpot_us,
            prompt_tokens: usage.and_then(|u| u.prompt_tokens),
            output_tokens: out_tokens,
            output_tokens_from_usage: from_usage,
            usage_rejected,
            // An embeddings or rerank request asks for no output.
            max_tokens: if !self.target.api.streams() {
                0
            } else {
                spec.max_tokens
            },
            // A rerank prompt is the query; the server counts it with every document.
            input_tokens_target: spec
                .input_tokens_target
                .filter(|_| self.target.api != Api::Rerank),
            content_chunks: p.chunks,
            preamble_chunks: p.preamble,
            first_event_us: p.first_event.map(since),
            cached_tokens: usage.and_then(|u| u.cached_tokens()).or(p
                .cache_n
                .filter(|n| *n <= crate::model::wire::USAGE_TOKENS_MAX)),
            images: Some(spec.prompt.images())
                .filter(|n| *n > 0)
                .map(|sent| Images {
                    sent,
                    tokens: usage.and_then(|u| u.image_tokens()),
                }),
            server: p.server,
            stream,
            finish_reason: p.finish_reason,
            // Redacted before it is cut, so a cut inside the key cannot leave a prefix of it.
            error: detail.map(|d| truncate(&self.target.redact(&d), 300)),
        };
        Sent {
            record,
            itl_token_us: itl_token,
            itl_us: p.itl_us,
            chunk_tokens,
            reply: p.reply,
        }
    }
}

/// When the request went, when its `[DONE]` came (if it did), and whether it was sent again.
struct Timing {
    sent: Instant,
    done_at: Option<Instant>,
    retried: bool,
}

/// A non-success answer: its status and the server's message (a 429's or 503's Retry-After
/// first, so the cut at 300 characters cannot drop it).
async fn refused(resp: reqwest::Response, ctx: &SendCtx, by: Deadlines) -> Ended {
    let status = resp.status();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(|v| format!("Retry-After: {}; ", v.trim()));
    let text = match step(&ctx.abort, by.total, resp.text()).await {
        Step::Done(Ok(t)) => t,
        _ => String::new(),
    };
    let msg = serde_json::from_str::<serde_json::Value>(&text)
        .ok()
        .and_then(|v| {
            v.get("error")
                .map(super::openai::error_text)
                .or_else(|| v.get("message").map(super::openai::error_text))
        })
        .unwrap_or_else(|| text.trim().to_string());
    let msg = retry_after.unwrap_or_default() + &msg;
    (Outcome::Http(status.as_u16()), Some(msg))
}

/// A success answered as one JSON body: no token of it can be timed.
fn not_streamed(resp: &reqwest::Response) -> Option<Ended> {
    let json = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    json.then(|| {
        (
            Outcome::NotStreamed,
            Some(format!(
                "the server answered {} with `application/json`, not an event stream: it sent the whole completion at once (ignoring `stream: true`), so no token can be timed; check the endpoint and that the server supports streaming",
                resp.status()
            )),
        )
    })
}

/// Reads the event stream, timing each read as it arrives, to `[DONE]`, the body's end, a
/// deadline or an abort.
async fn read_stream(
    resp: reqwest::Response,
    p: &mut Progress,
    ctx: &SendCtx,
    by: Deadlines,
    done_at: &mut Option<Instant>,
) -> Ended {
    let mut stream = resp.bytes_stream();
    let mut decoder = SseDecoder::new();
    let mut events = Vec::new();
    // One cancellation waiter and one timer for the whole stream, re-armed rather than
    // re-created per read: with a thousand streams a fresh waiter (a lock on the shared
    // token) and a fresh timer entry per chunk cost more than parsing the chunk.
    let cancelled = ctx.abort.cancelled();
    tokio::pin!(cancelled);
    let timer = tokio::time::sleep_until(by.first);
    tokio::pin!(timer);
    loop {
        let had_first = p.first.is_some();
        let item = tokio::select! {
            biased;
            _ = &mut cancelled => return (Outcome::Aborted, None),
            _ = &mut timer => {
                let kind = if had_first { Outcome::TimeoutTotal } else { Outcome::TimeoutFirstToken };
                return (kind, None);
            }
            item = stream.next() => item,
        };
        let at = Instant::now();
        let ended = item.is_none();
        match item {
            Some(Err(e)) => return (Outcome::StreamBroken, Some(error_chain(&e.without_url()))),
            Some(Ok(bytes)) => decoder.feed(&bytes, &mut events),
            None => decoder.finish(&mut events),
        }
        if decoder.oversized() {
            return (
                Outcome::MalformedChunk,
                Some(format!(
                    "an event of the stream exceeded {} MiB (a token stream's events are a few hundred bytes)",
                    MAX_EVENT_BYTES >> 20
                )),
            );
        }
        if let Err((o, m)) = p.events(&mut events, at) {
            return (o, Some(m));
        }
        if ended {
            break;
        }
        if p.done {
            // `[DONE]` is the last event, but not yet the body's end: read to it, so the
            // connection goes back to the pool (see `finish_body`). The request ended here;
            // the wait is not its time.
            *done_at = Some(at);
            finish_body(&mut stream, &ctx.abort, by.total).await;
            break;
        }
        if !had_first && p.first.is_some() {
            timer.as_mut().reset(by.total);
        }
    }
    if !p.done && p.finish_reason.is_none() && p.usage.is_none() {
        return (
            Outcome::StreamBroken,
            Some("the stream ended without [DONE] or a finish reason".into()),
        );
    }
    if p.chunks == 0 {
        return (Outcome::EmptyOutput, None);
    }
    (Outcome::Ok, None)
}

/// The error of a request sent on a pooled connection the server had already closed, before
/// any of the response came: an EOF where the response should start, or — when the request
/// reached a socket the server had closed — a reset or a broken pipe. (A raw server that
/// closes right after each answer, as llama-server does, made every fifth request fail with a
/// reset, had it been counted `stream_broken`.) A connect error is not one: no
/// connection was had.
fn stale_connection(e: &reqwest::Error) -> bool {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
    if e.is_connect() || e.is_timeout() {
        return false;
    }
    let first: &(dyn std::error::Error + 'static) = e;
    std::iter::successors(Some(first), |err| err.source())
        .filter_map(|err| err.downcast_ref::<std::io::Error>())
        .any(|io| matches!(io.kind(), ConnectionReset | BrokenPipe | ConnectionAborted))
        || error_chain(e).contains("connection closed before message completed")
}
