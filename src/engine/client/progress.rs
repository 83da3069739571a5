//! The state of one stream while it is read: which chunk came when, what it carried, and —
//! once the stream has ended — what that makes of its reasoning and of its tokens a chunk.
//!
//! TTFT is the first chunk with generated text (reasoning or answer), TTFO the first with
//! answer text. Tokens a chunk come from the cumulative usage a server puts on every chunk
//! when asked (`continuous_usage_stats`); a chunk of k tokens after a gap g counts k per-token
//! gaps of g / k, so the per-token gaps of a stream sum to E2E − TTFT. A server that does not
//! say is taken at its word where output tokens = chunks (one each); otherwise every chunk
//! after the first is taken to carry (output − 1) / (chunks − 1), and the request says
//! `estimated` — unless a local tokenizer was given: then the stream's text is counted
//! ([`super::chunk_text`]) and the request says `counted`.

use super::chunk_text::{ChunkText, Counted};
use super::openai::interpret_into;
use super::responses::interpret_event;
use super::sse::SseEvent;
use crate::engine::runner::{Gaps, TokensPerChunk};
use crate::model::record::{ChunkTokens, Outcome, ServerClock, StreamDetail};
use crate::model::wire::Usage;
use crate::plan::conversation::Reply;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub(super) fn us(d: Duration) -> u64 {
    d.as_micros().min(u64::MAX as u128) as u64
}

/// Timing state of one stream while it is read.
#[derive(Default)]
pub(super) struct Progress {
    /// The first data event of any kind.
    pub(super) first_event: Option<Instant>,
    /// Data events before the first one with text.
    pub(super) preamble: u32,
    pub(super) first: Option<Instant>,
    pub(super) last: Option<Instant>,
    pub(super) itl_us: Gaps,
    pub(super) chunks: u32,
    pub(super) usage: Option<Usage>,
    /// The last server clock and cache count a chunk carried.
    pub(super) server: Option<ServerClock>,
    pub(super) cache_n: Option<u64>,
    pub(super) finish_reason: Option<String>,
    pub(super) done: bool,
    /// The reply's text, kept only when a later conversation turn needs it.
    pub(super) reply: Option<Reply>,
    /// The first chunk with answer (non-reasoning) text.
    pub(super) first_answer: Option<Instant>,
    /// Chunks with reasoning text and no answer text.
    pub(super) reasoning_chunks: u32,
    tokens: ChunkCount,
    /// The stream's text by chunk, kept only when a local tokenizer may count it.
    text: Option<ChunkText>,
    /// Its chunks' tokens as the local tokenizer counted them ([`Self::count_chunks`]).
    counted: Option<ChunkCount>,
    /// A Responses API stream: typed events, not chat chunks.
    responses: bool,
    /// The first and the last chunk that carried tool-call text.
    first_tool: Option<Instant>,
    last_tool: Option<Instant>,
}

/// The local counts replayed as if the server had put them on every chunk.
fn replay(counts: Vec<Counted>) -> ChunkCount {
    let mut c = ChunkCount {
        local: true,
        ..ChunkCount::default()
    };
    let mut cumulative = 0;
    for k in counts {
        cumulative += k.tokens;
        let got = c.chunk(k.gap_us, Some(cumulative));
        if k.reasoning {
            c.reasoning += got;
        }
    }
    c
}

/// Tokens a chunk, from the cumulative usage a server puts on every chunk when asked
/// (`continuous_usage_stats`).
#[derive(Default)]
struct ChunkCount {
    /// A text chunk came without a usage count: which chunk carried which tokens is unknown.
    unknown: bool,
    /// The cumulative completion tokens last reported.
    so_far: u64,
    /// Time since the last chunk that brought a token: a chunk of text with no new token (a
    /// detokenizer catching up) passes its gap on to the next one that brings tokens.
    carried_us: u64,
    /// Per-token gaps while every chunk's tokens are known.
    itl_token_us: Gaps,
    per_chunk: TokensPerChunk,
    /// Tokens of the reasoning chunks (one each while unknown).
    reasoning: u64,
    /// The counts are the local tokenizer's, not the server's.
    local: bool,
}

impl ChunkCount {
    /// One chunk with text arrived `gap_us` after the previous one (`None` for the first);
    /// `cumulative`: the completion tokens its usage reported, if any. Returns its tokens
    /// (1 when unknown).
    fn chunk(&mut self, gap_us: Option<u64>, cumulative: Option<u64>) -> u64 {
        let k = match cumulative {
            Some(c) if !self.unknown => {
                let k = c.saturating_sub(self.so_far);
                self.so_far = self.so_far.max(c);
                k
            }
            _ => {
                self.unknown = true;
                return 1;
            }
        };
        self.per_chunk.add(k, 1);
        if let Some(g) = gap_us {
            self.carried_us = self.carried_us.saturating_add(g);
            if let Some(each) = self.carried_us.checked_div(k) {
                self.itl_token_us.push_n(each, k);
                self.carried_us = 0;
            }
        }
        k
    }
}

impl Progress {
    /// A stream about to be read; `keep_reply`: keep its text for a later turn; `count`: keep
    /// its text by chunk for a local tokenizer; `responses`: read it as the Responses API's
    /// typed events.
    pub(super) fn new(keep_reply: bool, count: bool, responses: bool) -> Progress {
        Progress {
            reply: keep_reply.then(Reply::default),
            text: count.then(ChunkText::default),
            responses,
            ..Progress::default()
        }
    }

    /// Applies the events of one read that arrived at `at`; `Err` ends the request.
    pub(super) fn events(
        &mut self,
        events: &mut Vec<SseEvent>,
        at: Instant,
    ) -> Result<(), (Outcome, String)> {
        for ev in events.drain(..) {
            if ev.event.as_deref() == Some("error") {
                let text = String::from_utf8_lossy(&ev.data).into_owned();
                return Err((Outcome::ServerError, text));
            }
            if ev.is_done() {
                self.done = true;
                return Ok(());
            }
            let generated = self.text.as_mut().map(|t| &mut t.text);
            let info = if self.responses {
                interpret_event(&ev.data, self.reply.as_mut(), generated)
            } else {
                interpret_into(&ev.data, self.reply.as_mut(), generated)
            }
            .map_err(|m| (Outcome::MalformedChunk, m))?;
            if let Some(e) = info.error {
                return Err((Outcome::ServerError, e));
            }
            if info.usage.is_some() {
                self.usage = info.usage;
            }
            if info.server.is_some() {
                self.server = info.server;
            }
            if info.cache_n.is_some() {
                self.cache_n = info.cache_n;
            }
            if info.finish_reason.is_some() {
                self.finish_reason = info.finish_reason;
            }
            self.first_event.get_or_insert(at);
            if info.done {
                self.done = true;
                return Ok(());
            }
            if info.text_bytes == 0 {
                if self.first.is_none() {
                    self.preamble += 1;
                }
                continue;
            }
            let gap = self.last.map(|last| us(at - last));
            match gap {
                Some(g) => self.itl_us.push(g),
                None => self.first = Some(at),
            }
            self.last = Some(at);
            self.chunks += 1;
            let k = self
                .tokens
                .chunk(gap, info.usage.and_then(|u| u.completion_tokens));
            let reasoning = info.reasoning_bytes == info.text_bytes;
            if let Some(t) = self.text.as_mut() {
                t.chunk(reasoning, gap);
            }
            if reasoning {
                self.reasoning_chunks += 1;
                self.tokens.reasoning += k;
            } else {
                self.first_answer.get_or_insert(at);
            }
            if info.tool_bytes > 0 {
                self.first_tool.get_or_insert(at);
                self.last_tool = Some(at);
            }
        }
        Ok(())
    }

    /// Counts the chunks' tokens with `tok` when the server did not say them one by one and
    /// its total is not one a chunk; on a blocking thread, so a long reply's encoding holds up
    /// no other stream's reads.
    pub(super) async fn count_chunks(&mut self, tok: &Arc<tokenizers::Tokenizer>) {
        let total = self.usage.and_then(|u| u.completion_tokens);
        let needed = self.tokens.unknown && total.is_some_and(|n| n != self.chunks as u64);
        let Some(text) = self.text.take().filter(|_| needed) else {
            return;
        };
        let tok = tok.clone();
        let counts = tokio::task::spawn_blocking(move || text.count(&tok)).await;
        if let Ok(Ok(counts)) = counts {
            self.counted = Some(replay(counts)).filter(|c| c.so_far > 0);
        }
    }

    /// The stream's reasoning and tokens a chunk, now that its output tokens `n` are known;
    /// and its per-token gaps and chunks by tokens carried. `since`: µs from the intended send.
    pub(super) fn detail(
        &mut self,
        n: u64,
        e2e_us: Option<u64>,
        since: impl Fn(Instant) -> u64,
    ) -> (StreamDetail, Option<Gaps>, TokensPerChunk) {
        let chunks = self.chunks as u64;
        let mut t = std::mem::take(&mut self.tokens);
        let known = !t.unknown && t.so_far == n && chunks > 0;
        if let Some(c) = self.counted.take().filter(|_| !known && n != chunks) {
            t = c;
        }
        let (source, itl_token, per_chunk, each) = if t.local {
            // Their sum is not forced to the server's total: the table says whose count it is.
            (ChunkTokens::Counted, Some(t.itl_token_us), t.per_chunk, 1.0)
        } else if known && t.per_chunk.any_multi() {
            (
                ChunkTokens::Reported,
                Some(t.itl_token_us),
                t.per_chunk,
                1.0,
            )
        } else if n == chunks || known {
            let mut one = TokensPerChunk::default();
            one.add(1, chunks);
            (ChunkTokens::One, None, one, 1.0)
        } else {
            // More (or fewer) tokens than chunks, not said which chunk carried them: the first
            // is taken as one token, the rest share the others, so the per-token gaps' mean is
            // TPOT.
            let each = if chunks > 1 {
                (n.saturating_sub(1)) as f64 / (chunks - 1) as f64
            } else {
                n as f64
            };
            let scaled = (each > 0.0).then(|| self.itl_us.scaled(each));
            (
                ChunkTokens::Estimated,
                Some(scaled.unwrap_or_default()),
                TokensPerChunk::default(),
                each,
            )
        };
        let mut d = StreamDetail {
            chunk_tokens: source,
            ..StreamDetail::default()
        };
        if self.reasoning_chunks > 0 {
            let reported = self.usage.and_then(|u| u.vetted().0.reasoning_tokens());
            let counted = match source {
                ChunkTokens::Estimated => (self.reasoning_chunks as f64 * each).round() as u64,
                _ => t.reasoning,
            };
            let reasoning = reported.unwrap_or(counted.min(n));
            let ttfo = self.first_answer.map(&since);
            let answer = n.saturating_sub(reasoning);
            d.reasoning_chunks = self.reasoning_chunks;
            d.reasoning_tokens = Some(reasoning);
            d.reasoning_counted = reported.is_none();
            d.ttfo_us = ttfo;
            d.answer_tpot_us = match (ttfo, e2e_us) {
                (Some(t), Some(e)) if answer > 1 => Some((e - t) as f64 / (answer - 1) as f64),
                _ => None,
            };
        }
        d.tool_call_us = self.first_tool.map(&since);
        d.tool_args_us = self.last_tool.map(&since);
        (d, itl_token, per_chunk)
    }
}

#[cfg(test)]
mod tests {
    //! The stream's definitions on scripted chunks at scripted times: exact, no clock read.
    use super::*;

    /// A chat chunk: `(ms after the send, reasoning?, tokens carried, cumulative usage?)`.
    type Scripted = (u64, bool, u64, bool);

    /// Feeds `script` (plus a final usage chunk reporting `reasoning_reported`) to a
    /// [`Progress`]; returns it with the send instant.
    fn feed(script: &[Scripted], reasoning_reported: Option<u64>) -> (Progress, Instant) {
        let t0 = Instant::now();
        let mut p = Progress::new(false, true, false);
        let mut so_far = 0;
        let role = br#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#;
        let one = |p: &mut Progress, data: Vec<u8>, at: Instant| {
            let mut evs = vec![SseEvent { event: None, data }];
            p.events(&mut evs, at).unwrap();
        };
        one(&mut p, role.to_vec(), t0 + Duration::from_millis(1));
        for &(ms, reasoning, k, usage) in script {
            so_far += k;
            let field = if reasoning {
                "reasoning_content"
            } else {
                "content"
            };
            let text = " w".repeat(k.max(1) as usize);
            let mut c = serde_json::json!({"choices": [{"delta": {field: text}}]});
            if usage {
                c["usage"] = serde_json::json!({"prompt_tokens": 5, "completion_tokens": so_far});
            }
            one(
                &mut p,
                serde_json::to_vec(&c).unwrap(),
                t0 + Duration::from_millis(ms),
            );
        }
        let mut u = serde_json::json!({"prompt_tokens": 5, "completion_tokens": so_far});
        if let Some(r) = reasoning_reported {
            u["completion_tokens_details"] = serde_json::json!({ "reasoning_tokens": r });
        }
        let last = script.last().map_or(0, |s| s.0);
        let c = serde_json::json!({"choices": [], "usage": u});
        one(
            &mut p,
            serde_json::to_vec(&c).unwrap(),
            t0 + Duration::from_millis(last),
        );
        (p, t0)
    }

    fn values(g: &Option<Gaps>) -> Vec<u64> {
        let mut h = crate::model::hist::new_histogram();
        g.as_ref().unwrap().record_into(&mut h);
        h.iter_recorded()
            .flat_map(|v| std::iter::repeat_n(v.value_iterated_to(), v.count_at_value() as usize))
            .collect()
    }

    /// Equal counts, each value within the histogram's 3 significant digits.
    fn assert_close(got: &[u64], want: &[u64]) {
        let close = |a: u64, b: u64| a.abs_diff(b) <= b / 1000;
        assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
        assert!(
            got.iter().zip(want).all(|(a, b)| close(*a, *b)),
            "{got:?} vs {want:?}"
        );
    }

    fn detail(p: &mut Progress, t0: Instant) -> (StreamDetail, Option<Gaps>, TokensPerChunk) {
        let n = p.usage.unwrap().completion_tokens.unwrap();
        let e2e = p.last.map(|l| us(l - t0));
        p.detail(n, e2e, |t| us(t - t0))
    }

    #[test]
    fn reasoning_then_answer_with_one_to_five_tokens_a_chunk_reported() {
        // 3 reasoning chunks (1, 3, 2 tokens), then 4 answer chunks (5, 1, 4, 2 tokens).
        let script = [
            (40, true, 1, true),
            (60, true, 3, true),
            (80, true, 2, true),
            (100, false, 5, true),
            (110, false, 1, true),
            (130, false, 4, true),
            (150, false, 2, true),
        ];
        let (mut p, t0) = feed(&script, None);
        assert_eq!(
            us(p.first.unwrap() - t0),
            40_000,
            "TTFT: the first reasoning chunk"
        );
        let (d, itl_token, per_chunk) = detail(&mut p, t0);
        assert_eq!(d.ttfo_us, Some(100_000), "TTFO: the first answer chunk");
        assert_eq!(d.chunk_tokens, ChunkTokens::Reported);
        assert_eq!((d.reasoning_tokens, d.reasoning_counted), (Some(6), true));
        assert_eq!(d.reasoning_chunks, 3);
        // Answer: 12 tokens from 100 ms to 150 ms.
        assert_eq!(d.answer_tpot_us, Some(50_000.0 / 11.0));
        // A chunk of k tokens after a gap g: k values g / k.
        let mut want: Vec<u64> = [
            (20_000, 3),
            (20_000, 2),
            (20_000, 5),
            (10_000, 1),
            (20_000, 4),
            (20_000, 2),
        ]
        .iter()
        .flat_map(|&(g, k)| std::iter::repeat_n(g / k, k as usize))
        .collect();
        want.sort();
        assert_close(&values(&itl_token), &want);
        // Their sum is E2E − TTFT, so their mean is TPOT whenever the first chunk is one token.
        let sum: u64 = want.iter().sum();
        assert!(sum.abs_diff(110_000) < 20, "{sum}");
        let buckets: Vec<(usize, u64)> = per_chunk.buckets().collect();
        assert_eq!(buckets, [(1, 2), (2, 2), (3, 1), (4, 1), (5, 1)]);
    }

    #[test]
    fn reported_reasoning_tokens_win_over_the_count() {
        let script = [
            (40, true, 1, true),
            (50, true, 1, true),
            (60, false, 1, true),
        ];
        let (mut p, t0) = feed(&script, Some(2));
        let (d, itl_token, _) = detail(&mut p, t0);
        assert_eq!((d.reasoning_tokens, d.reasoning_counted), (Some(2), false));
        // Every chunk one token: per-token ITL is the chunk ITL (passed as None).
        assert_eq!(d.chunk_tokens, ChunkTokens::One);
        assert!(itl_token.is_none());
        assert_eq!(d.answer_tpot_us, None, "one answer token has no pace");
    }

    #[test]
    fn without_per_chunk_usage_several_tokens_a_chunk_are_estimated() {
        // 4 chunks carry 10 tokens; only the total is reported.
        let script = [
            (40, false, 1, false),
            (70, false, 3, false),
            (100, false, 3, false),
            (130, false, 3, false),
        ];
        let (mut p, t0) = feed(&script, None);
        let (d, itl_token, per_chunk) = detail(&mut p, t0);
        assert_eq!(d.chunk_tokens, ChunkTokens::Estimated);
        assert_eq!(
            per_chunk.buckets().count(),
            0,
            "unknown chunks are not bucketed"
        );
        // (10 − 1) / (4 − 1) = 3 tokens a chunk after the first: 30 ms / 3.
        assert_close(&values(&itl_token), &[10_000, 10_000, 10_000]);
        assert_eq!(d.reasoning_tokens, None);
        assert_eq!(d.ttfo_us, None, "no reasoning: TTFO is TTFT, not stored");
    }

    #[tokio::test]
    async fn without_per_chunk_usage_a_local_tokenizer_counts_each_chunk() {
        // The same 10 tokens in 4 chunks, uneven this time; only the total is reported.
        let script = [
            (40, true, 2, false),
            (70, false, 1, false),
            (100, false, 5, false),
            (130, false, 2, false),
        ];
        let (mut p, t0) = feed(&script, None);
        let words = Arc::new(crate::engine::client::chunk_text::tests::words());
        p.count_chunks(&words).await;
        let (d, itl_token, per_chunk) = detail(&mut p, t0);
        assert_eq!(d.chunk_tokens, ChunkTokens::Counted);
        assert_eq!(
            per_chunk.buckets().collect::<Vec<_>>(),
            [(1, 1), (2, 2), (5, 1)]
        );
        // 30 ms over 1 token, then 30 ms over 5, then 30 ms over 2.
        let mut want = vec![30_000, 6_000, 6_000, 6_000, 6_000, 6_000, 15_000, 15_000];
        want.sort();
        assert_close(&values(&itl_token), &want);
        assert_eq!((d.reasoning_tokens, d.reasoning_counted), (Some(2), true));
        // Without the tokenizer the same stream is estimated: 3 tokens a chunk after the first.
        let (mut p, t0) = feed(&script, None);
        let (d, itl_token, _) = detail(&mut p, t0);
        assert_eq!(d.chunk_tokens, ChunkTokens::Estimated);
        assert_close(&values(&itl_token), &[10_000, 10_000, 10_000]);
    }

    #[test]
    fn text_with_no_new_token_passes_its_gap_on() {
        // The detokenizer sends text for no new token at 60 ms; the token's gap runs 40 → 80.
        let script = [
            (40, false, 1, true),
            (60, false, 0, true),
            (80, false, 2, true),
        ];
        let (mut p, t0) = feed(&script, None);
        let (d, itl_token, per_chunk) = detail(&mut p, t0);
        assert_eq!(d.chunk_tokens, ChunkTokens::Reported);
        assert_close(&values(&itl_token), &[20_000, 20_000]);
        assert_eq!(
            per_chunk.buckets().collect::<Vec<_>>(),
            [(0, 1), (1, 1), (2, 1)]
        );
    }
}
