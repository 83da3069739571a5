//! The per-request record: what happened to one request, in microseconds from the run start.
//!
//! Every request that was sent ends as exactly one [`Outcome`]. Latencies are measured from
//! the request's *intended* send time (its slot in the schedule, or the moment a closed-loop
//! worker picked it up), so a late client or a full `max_concurrency` queue shows up as
//! latency instead of silently vanishing (no coordinated omission).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// How a sent request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Outcome {
    Ok,
    /// No connection could be made (refused, DNS, TLS).
    Connect,
    /// No content chunk within `first_token_timeout_s` of the send.
    TimeoutFirstToken,
    /// Content started but the stream did not end within `timeout_s` of the send.
    TimeoutTotal,
    /// A non-2xx response status.
    Http(u16),
    /// The connection or body failed, or the stream ended with no `[DONE]` and no finish reason.
    StreamBroken,
    /// A `data:` payload that is neither JSON nor `[DONE]`, or an event larger than 4 MiB.
    MalformedChunk,
    /// A 2xx reply that was not an event stream (`application/json`: the server answered the
    /// whole completion at once, ignoring `stream: true`), so no token can be timed.
    NotStreamed,
    /// The server sent an error object (or an `event: error`) inside the stream.
    ServerError,
    /// The stream finished cleanly but carried no generated text.
    EmptyOutput,
    /// Still in flight when the run was interrupted and the grace period ran out.
    Aborted,
}

impl Outcome {
    pub fn name(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::Connect => "connect".into(),
            Outcome::TimeoutFirstToken => "timeout_first_token".into(),
            Outcome::TimeoutTotal => "timeout_total".into(),
            Outcome::Http(code) => format!("http_{code}"),
            Outcome::StreamBroken => "stream_broken".into(),
            Outcome::MalformedChunk => "malformed_chunk".into(),
            Outcome::NotStreamed => "not_streamed".into(),
            Outcome::ServerError => "server_error".into(),
            Outcome::EmptyOutput => "empty_output".into(),
            Outcome::Aborted => "aborted".into(),
        }
    }

    pub fn parse(s: &str) -> Option<Outcome> {
        Some(match s {
            "ok" => Outcome::Ok,
            "connect" => Outcome::Connect,
            "timeout_first_token" => Outcome::TimeoutFirstToken,
            "timeout_total" => Outcome::TimeoutTotal,
            "stream_broken" => Outcome::StreamBroken,
            "malformed_chunk" => Outcome::MalformedChunk,
            "not_streamed" => Outcome::NotStreamed,
            "server_error" => Outcome::ServerError,
            "empty_output" => Outcome::EmptyOutput,
            "aborted" => Outcome::Aborted,
            other => Outcome::Http(other.strip_prefix("http_")?.parse().ok()?),
        })
    }

    pub fn is_ok(&self) -> bool {
        matches!(self, Outcome::Ok)
    }
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl Serialize for Outcome {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.name())
    }
}

impl<'de> Deserialize<'de> for Outcome {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Outcome::parse(&s).ok_or_else(|| serde::de::Error::custom(format!("unknown outcome `{s}`")))
    }
}

/// A stream's reasoning and tokens a chunk ([`RequestRecord::stream`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamDetail {
    /// Chunks that carried reasoning text and no answer text (`reasoning_content`,
    /// `reasoning`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_chunks: u32,
    /// Reasoning tokens: `usage.completion_tokens_details.reasoning_tokens` when the server
    /// reported it, else counted from the reasoning chunks ([`Self::reasoning_counted`]).
    /// Absent without reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// `reasoning_tokens` was counted by the client (the chunks' tokens as
    /// [`Self::chunk_tokens`] says), not reported by the server.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reasoning_counted: bool,
    /// Intended send → first chunk with answer text; only for a stream with reasoning
    /// (without any it is `ttft_us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfo_us: Option<u64>,
    /// (E2E − TTFO) / (answer tokens − 1); only for a stream with reasoning (without any it
    /// is `tpot_us`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_tpot_us: Option<f64>,
    /// Where the tokens of each chunk came from.
    #[serde(default, skip_serializing_if = "ChunkTokens::is_one")]
    pub chunk_tokens: ChunkTokens,
    /// Intended send → first chunk carrying tool-call text (`delta.tool_calls`); only for a
    /// reply that called a tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_us: Option<u64>,
    /// Intended send → last chunk carrying tool-call text: the call's arguments complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_args_us: Option<u64>,
}

impl StreamDetail {
    /// No reasoning, one token a chunk: nothing to store.
    fn is_plain(&self) -> bool {
        *self == StreamDetail::default()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// How the client knows how many tokens each chunk of a stream carried.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChunkTokens {
    /// One token a chunk: the output tokens equal the chunks (or the server sent no usage,
    /// and the chunks are the count).
    #[default]
    One,
    /// From the cumulative usage the server put on every chunk
    /// (`stream_options.continuous_usage_stats`): exact.
    Reported,
    /// The server reported more (or fewer) tokens than chunks but not which chunk carried
    /// them: each chunk after the first is taken to carry (output − 1) / (chunks − 1).
    Estimated,
    /// As for `Estimated`, but a local tokenizer (`--tokenizer`) counted the stream's text,
    /// encoded once in whole, each token given to the chunk its text ended in.
    Counted,
}

impl ChunkTokens {
    fn is_one(&self) -> bool {
        *self == ChunkTokens::One
    }

    pub fn name(self) -> &'static str {
        match self {
            ChunkTokens::One => "one",
            ChunkTokens::Reported => "reported",
            ChunkTokens::Estimated => "estimated",
            ChunkTokens::Counted => "counted",
        }
    }
}

/// Whose per-request clock a reply carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockSource {
    /// llama.cpp's `timings` (`prompt_ms`, `predicted_ms`).
    LlamaCpp,
    /// vLLM's `metrics` (`queue_time_ms`, `time_to_first_token_ms`, `generation_time_ms`).
    Vllm,
}

impl ClockSource {
    pub fn name(self) -> &'static str {
        match self {
            ClockSource::LlamaCpp => "llama.cpp timings",
            ClockSource::Vllm => "vLLM metrics",
        }
    }
}

/// The server's own account of one request's time, µs, as its reply reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerClock {
    pub source: ClockSource,
    /// Waiting to be scheduled (vLLM `queue_time_ms`; llama.cpp does not report it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_us: Option<u64>,
    /// Prefill: the server's start on the request → its first token (llama.cpp
    /// `prompt_ms`, vLLM `time_to_first_token_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_us: Option<u64>,
    /// First → last token (llama.cpp `predicted_ms`, vLLM `generation_time_ms`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decode_us: Option<u64>,
}

/// One request, as stored in `run.json` and `requests.csv`. Times are µs from the run start;
/// latencies are µs from the intended send.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    pub index: u64,
    pub warmup: bool,
    /// Conversation runs: the session (0-based) and the turn within it (1-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Workload class (`long`, `short`, `prefix-3`, `line-12`) or empty.
    #[serde(default)]
    pub class: String,
    pub outcome: Outcome,
    /// When the schedule meant it to go.
    pub intended_us: u64,
    /// When the HTTP request was handed to the client.
    pub sent_us: u64,
    /// When it ended, whatever the outcome; a stream at its `[DONE]` (the read to the body's
    /// end after it, for the connection's sake, is not the request's time).
    pub end_us: u64,
    /// Sent a second time because the first try hit a keep-alive connection the server had
    /// just closed (before reading the request).
    #[serde(default)]
    pub retried: bool,
    /// Waiting for a `max_concurrency` slot (0 without a cap).
    pub queue_us: u64,
    /// Lateness of the client itself: sent − intended − queue.
    pub send_lag_us: u64,
    /// Intended send → first chunk carrying generated text.
    pub ttft_us: Option<u64>,
    /// Intended send → last chunk carrying generated text.
    pub e2e_us: Option<u64>,
    /// (E2E − TTFT) / (output_tokens − 1); only when output_tokens > 1.
    pub tpot_us: Option<f64>,
    /// `usage.prompt_tokens` as the server reported it.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, or the count of content chunks when the server sent no usage.
    pub output_tokens: u64,
    /// False when `output_tokens` is the chunk-count fallback.
    pub output_tokens_from_usage: bool,
    /// The server reported an absurd usage count (above [`crate::model::wire::USAGE_TOKENS_MAX`]);
    /// it was dropped, and the chunk count stands in for the output.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub usage_rejected: bool,
    /// The `max_tokens` asked for.
    pub max_tokens: u32,
    /// Prompt tokens the synthetic prompt was built to have (approximate: words ≈ tokens).
    #[serde(default)]
    pub input_tokens_target: Option<u32>,
    /// Chunks that carried generated text.
    pub content_chunks: u32,
    /// Data events before the first chunk with text — a role-only chat delta, an empty first
    /// delta. TTFT is not taken on them; a tool that times the first chunk would report
    /// `first_event_us` as its TTFT.
    #[serde(default)]
    pub preamble_chunks: u32,
    /// Intended send → first data event of any kind (role-only included).
    #[serde(default)]
    pub first_event_us: Option<u64>,
    /// Prompt tokens the server's prefix cache served (`usage.prompt_tokens_details.cached_tokens`,
    /// else llama.cpp's `timings.cache_n`); absent when the reply did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// The images the prompt carried and, where the server said, the prompt tokens they cost;
    /// absent for a prompt without images.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<Images>,
    /// The server's own clock for this request, when its reply carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerClock>,
    /// What reasoning, or several tokens a chunk, added to the stream; absent when neither.
    #[serde(default, skip_serializing_if = "StreamDetail::is_plain")]
    pub stream: StreamDetail,
    pub finish_reason: Option<String>,
    /// What went wrong, for errors (truncated; credentials redacted).
    pub error: Option<String>,
}

/// A prompt's images: how many image parts it sent, and their prompt tokens by the server's
/// usage (`usage.prompt_tokens_details.image_tokens`) where it reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Images {
    pub sent: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
}
