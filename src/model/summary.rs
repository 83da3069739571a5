//! A run's summary: counts, tokens, throughput and latency distributions (computed by
//! `metrics::summary`; every field says its unit).

use super::metric::Latency;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One latency metric's distribution, in milliseconds. With no values (`count` 0: a run whose
/// every request failed has no TTFT) the figures are 0 in memory, `null` in JSON and blank in
/// every rendering: a spreadsheet must not read "TTFT 0 ms".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "LatencyWire", from = "LatencyWire")]
pub struct LatencySummary {
    pub name: Latency,
    pub unit: String,
    pub definition: String,
    pub count: u64,
    pub mean: f64,
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl LatencySummary {
    /// Whether there is any value to show (`count` > 0).
    pub fn has_values(&self) -> bool {
        self.count > 0
    }
}

/// [`LatencySummary`] as written: the figures `null` when there are no values.
#[derive(Clone, Serialize, Deserialize)]
struct LatencyWire {
    name: Latency,
    unit: String,
    definition: String,
    count: u64,
    mean: Option<f64>,
    min: Option<f64>,
    p50: Option<f64>,
    p90: Option<f64>,
    p95: Option<f64>,
    p99: Option<f64>,
    p999: Option<f64>,
    max: Option<f64>,
}

impl From<LatencySummary> for LatencyWire {
    fn from(l: LatencySummary) -> Self {
        let v = |x: f64| (l.count > 0).then_some(x);
        LatencyWire {
            mean: v(l.mean),
            min: v(l.min),
            p50: v(l.p50),
            p90: v(l.p90),
            p95: v(l.p95),
            p99: v(l.p99),
            p999: v(l.p999),
            max: v(l.max),
            name: l.name,
            unit: l.unit,
            definition: l.definition,
            count: l.count,
        }
    }
}

impl From<LatencyWire> for LatencySummary {
    fn from(l: LatencyWire) -> Self {
        let v = |x: Option<f64>| x.unwrap_or(0.0);
        LatencySummary {
            name: l.name,
            unit: l.unit,
            definition: l.definition,
            count: l.count,
            mean: v(l.mean),
            min: v(l.min),
            p50: v(l.p50),
            p90: v(l.p90),
            p95: v(l.p95),
            p99: v(l.p99),
            p999: v(l.p999),
            max: v(l.max),
        }
    }
}

/// Request counts: `sent = ok + Σ errors + aborted`, for measured requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    /// Requests in the plan, warmup included (absent for an unbounded closed loop).
    pub planned: Option<u64>,
    /// Measured requests sent (warmup excluded).
    pub sent: u64,
    pub warmup: u64,
    pub ok: u64,
    /// Per error kind (`http_500`, `timeout_first_token`, …).
    pub errors: BTreeMap<String, u64>,
    pub aborted: u64,
    /// Planned requests never sent (stopped first, or the duration ran out).
    pub not_sent: u64,
    /// Measured requests sent twice because a kept-alive connection had been closed by the
    /// server before it read the first try.
    #[serde(default)]
    pub retried: u64,
    /// Connections the load client opened, retries' included: about one a worker where the
    /// server keeps them alive, one a request where it closes them. Absent in runs recorded without the count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// The request (index) after whose stale kept-alive connection the load client stopped
    /// reusing connections, because the server was closing them after each answer: later
    /// requests each went out on a new connection, as they would have anyway. Absent while
    /// connections were reused to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reuse_stopped_at: Option<u64>,
    /// Successful measured requests whose stream opened with data chunks carrying no text (a
    /// role-only chat delta): TTFT is timed at the first chunk with text, not at these.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub textless_first_chunk: Option<TextlessFirst>,
    /// Sessions of a conversation run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<SessionCounts>,
}

/// A conversation run's sessions (`[workload] type = "conversation"`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCounts {
    /// Sessions in the plan, warmup included (absent for an unbounded closed loop).
    pub planned: Option<u64>,
    /// Sessions that sent their first turn, warmup included.
    pub started: u64,
    /// Sessions whose every turn succeeded.
    pub completed: u64,
    /// Sessions ended by a failed turn.
    pub ended_early: u64,
    /// Turns never sent because their session had ended at a failed turn (not counted in
    /// `not_sent`, which is for a stop).
    pub turns_skipped: u64,
}

/// One turn index of a conversation run, over its successful measured requests (ms).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    /// 1-based turn within its session.
    pub turn: u32,
    /// Measured requests sent at this turn.
    pub sent: u64,
    pub ok: u64,
    pub ttft_p50_ms: f64,
    pub ttft_p95_ms: f64,
    pub e2e_p50_ms: f64,
    /// Mean `usage.prompt_tokens`: the history grows turn by turn.
    pub prompt_tokens_mean: Option<f64>,
}

/// How many streams opened with a chunk carrying no text, and how much earlier it came.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TextlessFirst {
    pub requests: u64,
    /// Median of (TTFT − time to that first chunk), ms: what timing the first chunk as TTFT
    /// would have taken off.
    pub gap_p50_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Σ usage.prompt_tokens over successful measured requests.
    pub prompt_tokens: u64,
    /// Σ output tokens (usage, else chunk count) over successful measured requests.
    pub output_tokens: u64,
    /// Σ output tokens of the successful warm-up requests (not in `output_tokens`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup_output_tokens: u64,
    /// Successful requests whose server sent no usage (output counted as chunks).
    pub usage_missing: u64,
    /// Successful requests whose server sent an absurd usage count (> 10⁸ tokens): dropped,
    /// output counted as chunks. Included in `usage_missing`.
    #[serde(default)]
    pub usage_rejected: u64,
    /// Successful requests with usage whose output length ≠ max_tokens although ignore_eos
    /// was asked (0 when ignore_eos is off: lengths are then the model's choice).
    pub output_len_mismatch: u64,
    /// Synthetic prompts: mean of (server's prompt_tokens / tokens targeted − 1), in %, over
    /// successful requests with both; shows how far words ≈ tokens (plus the chat template) is
    /// from the server's tokenizer. Absent for datasets.
    #[serde(default)]
    pub prompt_length_error_pct: Option<f64>,
    /// Streams with reasoning: their reasoning tokens; absent when no stream had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<ReasoningTokens>,
    /// Tokens a chunk; absent when every chunk carried one token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<ChunkSummary>,
    /// Successful measured requests whose reply called a tool; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<u64>,
    /// The prompt tokens the server's prefix cache served, as the replies said; absent when
    /// none said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached: Option<CachedPrompt>,
    /// The images the prompts carried; absent when none did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub images: Option<ImageSummary>,
}

/// Image inputs over the successful measured requests whose prompts carried any.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageSummary {
    /// Requests with at least one image.
    pub requests: u64,
    /// Σ images sent.
    pub images: u64,
    /// Σ the prompt tokens the images cost (`usage.prompt_tokens_details.image_tokens`), over
    /// the requests whose reply said; absent when none said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tokens: Option<u64>,
    /// How many replies said it.
    #[serde(default)]
    pub reported: u64,
}

/// This run's own prefix-cache hit rate, summed from the replies of its successful measured
/// requests that reported their cached prompt tokens (`usage.prompt_tokens_details.cached_tokens`,
/// else llama.cpp's `timings.cache_n`) and their prompt tokens: exact for this run, whatever
/// the server served before it, unlike a rate from cumulative Prometheus counters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CachedPrompt {
    /// Requests whose reply reported both counts.
    pub requests: u64,
    /// Σ cached prompt tokens.
    pub cached_tokens: u64,
    /// Σ `usage.prompt_tokens` of the same requests.
    pub prompt_tokens: u64,
    /// cached_tokens / prompt_tokens (0–1).
    pub hit_rate: f64,
}

/// How many replies carried the server's own per-request clock (the `prefill` and
/// `ttft_rest` latencies are read from it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerClockSummary {
    /// Where it came from (`llama.cpp timings`, `vLLM metrics`).
    pub source: String,
    /// Successful measured requests whose reply carried a prefill time.
    pub requests: u64,
    /// Of those, how many reported a prefill longer than the TTFT measured here: the two
    /// clocks disagree, and those requests have no `ttft_rest`.
    pub prefill_over_ttft: u64,
}

/// How many chunks of a stream carried 1, 2, … tokens; the last bucket is
/// [`TokensPerChunk::OPEN`] or more. Only chunks whose tokens are known (reported, or one
/// each) are counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TokensPerChunk([u64; TokensPerChunk::OPEN + 1]);

impl TokensPerChunk {
    /// The open-ended last bucket: this many tokens a chunk or more.
    pub const OPEN: usize = 16;

    pub fn add(&mut self, tokens: u64, chunks: u64) {
        let i = (tokens as usize).min(Self::OPEN);
        self.0[i] = self.0[i].saturating_add(chunks);
    }

    pub fn merge(&mut self, other: &TokensPerChunk) {
        for (i, n) in other.0.iter().enumerate() {
            self.0[i] = self.0[i].saturating_add(*n);
        }
    }

    /// Chunks by tokens carried (0 = text with no new token), zero buckets left out.
    pub fn buckets(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.0.iter().copied().enumerate().filter(|(_, n)| *n > 0)
    }

    /// Whether some chunk carried other than exactly one token.
    pub fn any_multi(&self) -> bool {
        self.buckets().any(|(k, _)| k != 1)
    }
}

/// Reasoning tokens of the successful measured requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasoningTokens {
    /// Σ reasoning tokens (included in `output_tokens`).
    pub tokens: u64,
    /// Requests whose stream carried reasoning.
    pub requests: u64,
    /// Of those, how many the client counted from the chunks because the server did not
    /// report `usage.completion_tokens_details.reasoning_tokens`.
    pub counted: u64,
}

/// How many tokens the chunks of the successful measured requests carried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkSummary {
    /// Chunks with text.
    pub chunks: u64,
    /// Output tokens / chunks with text.
    pub mean_tokens: f64,
    /// Chunks by tokens carried (`"1"`, `"2"`, …, `"16+"`; `"0"`: text with no new token),
    /// over the requests whose chunks' tokens are known.
    pub by_tokens: BTreeMap<String, u64>,
    /// Requests whose chunks' tokens the server reported (usage on every chunk).
    pub requests_reported: u64,
    /// Requests with more tokens than chunks and no per-chunk usage: their per-token gaps
    /// take each chunk after the first to carry (output − 1) / (chunks − 1) tokens.
    pub requests_estimated: u64,
    /// Requests with more tokens than chunks and no per-chunk usage whose chunks the local
    /// tokenizer (`--tokenizer`) counted.
    #[serde(default)]
    pub requests_counted: u64,
}

impl ChunkSummary {
    /// The buckets as the runner counts them.
    pub fn tokens_per_chunk(&self) -> TokensPerChunk {
        let mut t = TokensPerChunk::default();
        for (k, n) in &self.by_tokens {
            if let Ok(k) = k.trim_end_matches('+').parse::<u64>() {
                t.add(k, *n);
            }
        }
        t
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Measured window: earliest intended send → latest end (s).
    pub window_s: f64,
    /// Successful requests / window (req/s).
    pub request_rps: f64,
    /// Output tokens / window (tok/s).
    pub output_tps: f64,
    /// (Prompt + output tokens) / window (tok/s).
    pub total_tps: f64,
    /// Successful requests meeting every set SLO / window (req/s); absent without SLOs.
    pub goodput_rps: Option<f64>,
    /// How many requests met every SLO.
    pub goodput_requests: Option<u64>,
    /// Most requests in flight at once.
    pub peak_concurrency: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub counts: Counts,
    pub tokens: Tokens,
    pub throughput: Throughput,
    pub latency: Vec<LatencySummary>,
    /// A conversation run's figures by turn index (TTFT of later turns is where a prefix
    /// cache shows); empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<TurnSummary>,
    /// The server's own per-request clock, when its replies carried one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_clock: Option<ServerClockSummary>,
}

impl Summary {
    pub fn latency(&self, m: Latency) -> Option<&LatencySummary> {
        self.latency.iter().find(|l| l.name == m)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}
