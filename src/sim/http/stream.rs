//! `POST /v1/chat/completions` and `/v1/completions`: a request is parsed, checked against the
//! model's limits, given its faults, handed to the engine, and answered — streamed in vLLM's
//! shapes (a role-only first chat chunk, text chunks as the engine emits tokens — reasoning
//! chunks first for a reasoning model, a speculative step's tokens in one chunk, the
//! cumulative usage on each when asked — the finish chunk, usage, `[DONE]`) or as one body.

use super::driver::Cmd;
use super::truth::{Clocked, TruthWriter};
use super::{error, AppState};
use crate::model::text::{stream_rng, vocab_word};
use crate::model::wire::{
    self, Completion, CompletionChoice, Message, Request, StreamHeader, Usage,
};
use crate::sim::answer::{self, Greedy};
use crate::sim::engine::NewRequest;
use crate::sim::profile::SimOptions;
use crate::sim::tokenize;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use rand::Rng;
use serde_json::Value;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

pub(super) async fn chat(s: State<Arc<AppState>>, headers: HeaderMap, body: Bytes) -> Response {
    respond(s.0, headers, body, Route::Chat).await
}

/// `POST /v1/responses`: the Responses API, answered as the chat route would be (its `input`
/// read as `messages`, `max_output_tokens` as `max_tokens`) and streamed as its typed events
/// ([`super::responses`]).
pub(super) async fn responses(
    s: State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    match super::responses::as_chat(&body) {
        Ok(chat) => respond(s.0, headers, chat, Route::Responses).await,
        Err(m) => error(StatusCode::BAD_REQUEST, &m),
    }
}

/// Which API a request came in on, and so how its answer is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Route {
    Chat,
    Completions,
    Responses,
}

impl Route {
    /// Whether the request is read as a chat one (`messages`): chat and the Responses API.
    fn chat(self) -> bool {
        self != Route::Completions
    }

    /// One chunk as this API streams it: a chat or completions `data:` line, or the
    /// Responses API's typed event that says the same ([`super::responses::event`]).
    fn frame(self, c: &wire::Chunk) -> Bytes {
        match self {
            Route::Responses => super::responses::event(c),
            Route::Chat | Route::Completions => Bytes::from(wire::sse(c)),
        }
    }
}

pub(super) async fn completions(
    s: State<Arc<AppState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    respond(s.0, headers, body, Route::Completions).await
}

/// A parsed, validated request.
struct Parsed {
    tokens: Vec<u64>,
    max_tokens: u32,
    ignore_eos: bool,
    stream: bool,
    include_usage: bool,
    /// Usage on every chunk (`stream_options.continuous_usage_stats`).
    continuous_usage: bool,
    model: String,
    /// The prompt's text (the last message's, for chat) and the temperature asked for.
    text: String,
    temperature: Option<f64>,
    /// The first function of a chat request's `tools`: the answer calls it.
    tool: Option<String>,
    /// The prompt tokens its images cost.
    image_tokens: u64,
}

fn parse(body: &[u8], chat: bool, default_model: &str) -> Result<Parsed, String> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not valid JSON: {e}"))?;
    if !v.is_object() {
        return Err("the body must be a JSON object".into());
    }
    let r: Request =
        serde_json::from_value(v).map_err(|e| format!("the body is not a request: {e}"))?;
    let tokens = if chat {
        tokenize::chat(r.messages.as_ref().ok_or("`messages` is required")?)?
    } else {
        match &r.prompt {
            Some(Value::String(p)) => tokenize::text(p),
            Some(Value::Array(a)) if a.len() == 1 && a[0].is_string() => {
                tokenize::text(a[0].as_str().unwrap_or_default())
            }
            Some(_) => return Err("`prompt` must be a string".into()),
            None => return Err("`prompt` is required".into()),
        }
    };
    let text = match (chat, &r.messages, &r.prompt) {
        (true, Some(m), _) => m
            .as_array()
            .and_then(|a| a.last())
            .and_then(|l| l.get("content"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
        (false, _, Some(Value::String(p))) => p.clone(),
        _ => String::new(),
    };
    // OpenAI's defaults when the limit is absent.
    let max_tokens = r.output_limit()?.unwrap_or(if chat { 256 } else { 16 });
    Ok(Parsed {
        tokens,
        max_tokens,
        ignore_eos: r.ignore_eos.unwrap_or(false),
        stream: r.stream.unwrap_or(false),
        include_usage: r.include_usage(),
        continuous_usage: r.continuous_usage(),
        model: r.model.clone().unwrap_or_else(|| default_model.to_string()),
        text,
        temperature: r.temperature,
        // A request that returns a tool's result is answered in text, as a model reads it.
        image_tokens: r.messages.as_ref().map_or(0, tokenize::image_tokens),
        tool: chat
            .then(|| tool_name(body))
            .flatten()
            .filter(|_| last_role(&r.messages) != Some("tool")),
    })
}

/// The role of a chat request's last message.
fn last_role(messages: &Option<Value>) -> Option<&str> {
    messages.as_ref()?.as_array()?.last()?.get("role")?.as_str()
}

/// The name of the first function in a request's `tools`, if it has any.
fn tool_name(body: &[u8]) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    let name = v
        .get("tools")?
        .as_array()?
        .first()?
        .get("function")?
        .get("name")?;
    Some(name.as_str()?.to_string())
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

async fn respond(s: Arc<AppState>, headers: HeaderMap, body: Bytes, route: Route) -> Response {
    let chat = route.chat();
    let arrival = Instant::now();
    let n = s.requests.fetch_add(1, Ordering::SeqCst);
    let request_id = headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let mut p = match parse(&body, chat, &s.model).and_then(|p| fits(&s, p)) {
        Ok(p) => p,
        Err(m) => return error(StatusCode::BAD_REQUEST, &m),
    };
    let faults = draw_faults(&s.opts, n, p.max_tokens);
    if s.opts.header_delay_ms > 0.0 {
        tokio::time::sleep(Duration::from_secs_f64(s.opts.header_delay_ms / 1000.0)).await;
    }
    if let Some(status) = faults.status {
        if status != StatusCode::INTERNAL_SERVER_ERROR {
            s.rejected.fetch_add(1, Ordering::SeqCst);
        }
        return error(status, &format!("injected fault: {}", status.as_u16()));
    }
    let prompt_tokens = p.tokens.len() as u64;
    let who = request_id.clone().unwrap_or_else(|| n.to_string());
    let greedy = (p.temperature == Some(0.0)).then(|| answer::greedy(&p.text, &s.opts, &who));
    let (words, answer_len) = match &greedy {
        Some(Greedy::Answer(w)) => (Some(Arc::new(w.clone())), Some(w.len() as u32)),
        _ => (None, None),
    };
    let offset = match greedy {
        Some(Greedy::From(at)) => at,
        _ => n,
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let req = NewRequest {
        id: n,
        tokens: std::mem::take(&mut p.tokens),
        output_tokens: p.max_tokens,
        arrival: 0.0,
    };
    let cmd = Cmd::Add {
        req,
        max_tokens: p.max_tokens,
        ignore_eos: p.ignore_eos,
        answer_len,
        tx,
    };
    if s.cmd.send(cmd).is_err() {
        return error(StatusCode::SERVICE_UNAVAILABLE, "the engine has stopped");
    }
    let created = chrono::Utc::now().timestamp();
    let reply = Reply {
        offset,
        words,
        route,
        created,
        prompt_tokens,
        image_tokens: p.image_tokens,
        header: StreamHeader {
            chat,
            id: Some(format!(
                "{}-sim-{n}",
                if chat { "chatcmpl" } else { "cmpl" }
            )),
            created: Some(created),
            model: Some(p.model.clone()),
        },
        truth: TruthWriter {
            state: s.clone(),
            request_id,
            arrival,
        },
        reasoning: s.opts.reasoning_tokens,
        tool: p.tool.clone(),
        clock_style: s.opts.reply_clock.clone(),
    };
    if !p.stream {
        return reply.whole(p, rx).await;
    }
    let stall = if faults.stall {
        Duration::from_secs_f64(s.opts.stall_ms / 1000.0)
    } else {
        Duration::ZERO
    };
    reply.streamed(p, rx, faults, stall)
}

/// The request refused when it cannot fit the model's context or the KV cache.
fn fits(s: &AppState, p: Parsed) -> Result<Parsed, String> {
    let prompt = p.tokens.len() as u64;
    if prompt > s.opts.max_model_len as u64 {
        return Err(format!(
            "the prompt has {prompt} tokens; this model's maximum context length is {}",
            s.opts.max_model_len
        ));
    }
    if prompt + p.max_tokens as u64 + s.opts.block_size as u64 > s.kv_capacity_tokens {
        return Err(format!(
            "prompt ({prompt}) + max_tokens ({}) exceed the KV cache ({} tokens)",
            p.max_tokens, s.kv_capacity_tokens
        ));
    }
    Ok(p)
}

/// What an admitted request's answer is built from.
struct Reply {
    /// Where in the vocabulary the reply's words start (the request's number, or the
    /// prompt's place for a greedy one), unless it is a greedy answer's own `words`.
    offset: u64,
    words: Option<Arc<Vec<String>>>,
    route: Route,
    created: i64,
    prompt_tokens: u64,
    /// Of those, the tokens its images cost.
    image_tokens: u64,
    header: StreamHeader,
    truth: TruthWriter,
    /// Leading tokens of the answer that are reasoning.
    reasoning: u32,
    /// [`SimOptions::reply_clock`](crate::sim::profile::SimOptions::reply_clock).
    clock_style: String,
    /// The function the answer calls (`tools` in the request).
    tool: Option<String>,
}

type Events = mpsc::UnboundedReceiver<super::driver::Ev>;

impl Reply {
    /// The usage of a reply of `out` tokens, with its cached prompt tokens when the server
    /// reports its clock.
    fn usage_with(&self, out: u64, clock: Option<&Clocked>) -> Usage {
        let mut u = self.usage(out);
        let cached = clock
            .filter(|_| self.clock_style != "none")
            .map(|c| c.first.cached as u64);
        let images = (self.image_tokens > 0).then_some(self.image_tokens);
        if cached.is_some() || images.is_some() {
            u.prompt_tokens_details = Some(wire::PromptDetails {
                cached_tokens: cached,
                image_tokens: images,
            });
        }
        u
    }

    /// The chunk `c` with the server's clock in the configured shape, if `here` is where
    /// that shape puts it (`usage`: the usage chunk; else the finish chunk).
    fn clocked(
        &self,
        mut c: wire::Chunk<'static>,
        clock: Option<&Clocked>,
        usage: bool,
        include_usage: bool,
    ) -> wire::Chunk<'static> {
        let Some(k) = clock else { return c };
        let ms = |d: Duration| Some(d.as_secs_f64() * 1000.0);
        match self.clock_style.as_str() {
            "llama.cpp" if usage == include_usage => {
                let cached = k.first.cached as u64;
                c.timings = Some(wire::LlamaTimings {
                    cache_n: Some(cached),
                    prompt_n: Some(self.prompt_tokens.saturating_sub(cached)),
                    prompt_ms: ms(k.first.prefill),
                    predicted_n: None,
                    predicted_ms: ms(k.decode),
                });
            }
            "vllm" if usage => {
                c.metrics = Some(wire::ReplyMetrics {
                    queue_time_ms: ms(k.first.queue),
                    time_to_first_token_ms: ms(k.first.prefill),
                    generation_time_ms: ms(k.decode),
                });
            }
            _ => {}
        }
        c
    }

    fn usage(&self, out: u64) -> Usage {
        let mut u = Usage::new(self.prompt_tokens, out);
        let reasoning = (self.reasoning as u64).min(out);
        if reasoning > 0 {
            u.completion_tokens_details = Some(wire::CompletionDetails {
                reasoning_tokens: Some(reasoning),
            });
        }
        u
    }

    /// The chunks that carry tokens `from..to`: reasoning up to [`Reply::reasoning`], the
    /// answer after it (a step that crosses the boundary sends one chunk of each), each with
    /// the cumulative usage when `continuous`.
    /// With a tool to call, the answer is that call: its arguments `{"query": "<words>"}` in
    /// pieces, one a step, the closing `"}` with the last token.
    fn chunks(
        &self,
        from: usize,
        to: usize,
        continuous: bool,
        last: bool,
    ) -> Vec<wire::Chunk<'static>> {
        let cut = (self.reasoning as usize).clamp(from, to);
        let with = |c: wire::Chunk<'static>, upto: usize| wire::Chunk {
            usage: continuous.then(|| self.usage(upto as u64)),
            ..c
        };
        let mut out = Vec::with_capacity(2);
        if cut > from {
            out.push(with(self.header.reasoning(&self.text(from, cut)), cut));
        }
        if to > cut {
            let c = match &self.tool {
                Some(name) => {
                    let first = cut == self.reasoning as usize;
                    let text = self.text(cut, to);
                    let piece = match first {
                        true => format!("{{\"query\": \"{}", text.trim_start()),
                        false => text,
                    } + if last { "\"}" } else { "" };
                    self.header
                        .tool_call(first.then_some(name.as_str()), &piece)
                }
                None => self.header.text(&self.text(cut, to)),
            };
            out.push(with(c, to));
        }
        out
    }

    fn text(&self, from: usize, to: usize) -> String {
        (from..to)
            .map(|i| match self.words.as_deref().and_then(|w| w.get(i)) {
                Some(w) => format!("{}{w}", if i == 0 { "" } else { " " }),
                None => format!(" {}", vocab_word((self.offset as usize).wrapping_add(i))),
            })
            .collect()
    }

    /// The whole answer as one body, once the engine has finished the request.
    async fn whole(self, p: Parsed, mut rx: Events) -> Response {
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
        self.truth.write(&token_at, self.reasoning, None);
        let text = self.text(0, token_at.len());
        let finish = finish_reason(token_at.len(), p.max_tokens);
        let (message, text) = if self.route.chat() {
            let role = "assistant".into();
            (
                Some(Message {
                    role,
                    content: text,
                }),
                None,
            )
        } else {
            (None, Some(text))
        };
        let object = if self.route.chat() {
            "chat.completion"
        } else {
            "text_completion"
        };
        let body = Completion {
            id: self.header.id.clone().unwrap_or_default(),
            object: object.into(),
            created: self.created,
            model: p.model.clone(),
            choices: vec![CompletionChoice {
                index: 0,
                message,
                text,
                finish_reason: Some(finish.into()),
            }],
            usage: Some(self.usage(token_at.len() as u64)),
        };
        Json(body).into_response()
    }

    /// The answer streamed as the engine emits tokens, with the drawn faults applied: a stall
    /// before the first token, a disconnect part-way, a malformed chunk after the first.
    fn streamed(self, p: Parsed, mut rx: Events, faults: Faults, stall: Duration) -> Response {
        let (out_tx, out_rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(256);
        let route = self.route;
        // The Responses API always ends with `response.completed`, which carries the usage.
        let include_usage = p.include_usage || route == Route::Responses;
        tokio::spawn(async move {
            let sse = |c: wire::Chunk| route.frame(&c);
            let send = |b: Bytes| {
                let out_tx = out_tx.clone();
                async move { out_tx.send(Ok(b)).await.is_ok() }
            };
            if route.chat() && !send(sse(self.header.role())).await {
                return;
            }
            let mut token_at: Vec<Instant> = Vec::new();
            let mut first = true;
            let mut first_clock = None;
            while let Some(ev) = rx.recv().await {
                if first && !stall.is_zero() {
                    tokio::time::sleep(stall).await;
                }
                first_clock = first_clock.or(ev.clock);
                let start = token_at.len();
                token_at.extend(std::iter::repeat_n(ev.at, ev.tokens as usize));
                if faults
                    .disconnect_after
                    .is_some_and(|k| token_at.len() as u32 > k)
                {
                    let _ = out_tx
                        .send(Err(std::io::Error::other("injected disconnect")))
                        .await;
                    return;
                }
                for c in self.chunks(start, token_at.len(), p.continuous_usage, ev.finished) {
                    if !send(sse(c)).await {
                        return; // client gone; dropping `rx` tells the engine
                    }
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
                let refused = wire::ErrorBody::new("the engine refused the request", 500);
                let _ = send(Bytes::from(wire::sse(&refused))).await;
                return;
            }
            let clock = first_clock.map(|first| Clocked {
                first,
                decode: token_at[token_at.len() - 1].saturating_duration_since(token_at[0]),
            });
            self.truth.write(&token_at, self.reasoning, clock.as_ref());
            let finish = match self.tool {
                Some(_) => "tool_calls",
                None => finish_reason(token_at.len(), p.max_tokens),
            };
            let finish_chunk = self.clocked(
                self.header.finish(finish),
                clock.as_ref(),
                false,
                include_usage,
            );
            let _ = send(sse(finish_chunk)).await;
            if include_usage {
                let u = self.usage_with(token_at.len() as u64, clock.as_ref());
                let c = self.clocked(self.header.usage(u), clock.as_ref(), true, true);
                let _ = send(sse(c)).await;
            }
            if route != Route::Responses {
                let _ = send(Bytes::from_static(wire::DONE.as_bytes())).await;
            }
        });
        let body = futures_util::stream::unfold(out_rx, |mut rx| async move {
            rx.recv().await.map(|v| (v, rx))
        });
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
}

/// `length` when the engine stopped at the limit, else `stop`.
fn finish_reason(tokens: usize, max_tokens: u32) -> &'static str {
    if tokens as u32 >= max_tokens {
        "length"
    } else {
        "stop"
    }
}
