//! The summary built one record at a time, so a run of any length is summarized in constant
//! memory: every figure of [`Summary`] is a count, a saturating sum, a min/max or an HDR
//! histogram, all of which can take records as they finish and forget them.
//! [`super::summarize`] is this fed with a stored run's records, so the two cannot disagree.

use super::{counts_for, meets_slo, per_request_us, Histograms};
use crate::metrics::quantile::Sample;
use crate::model::hist::{new_histogram, record_us};
use crate::model::metric::Latency;
use crate::model::record::{ChunkTokens, ClockSource, Outcome, RequestRecord};
use crate::model::scenario::Slo;
use crate::model::summary::*;
use hdrhistogram::Histogram;
use std::collections::BTreeMap;

/// E2E's definition for a run whose answers did not stream (embeddings, rerank).
const UNSTREAMED_E2E: &str = "intended send → the whole answer read (an unstreamed answer)";

/// What the run was, beyond its records: the runner's own counts.
pub struct RunCounts<'a> {
    /// Requests the plan held (None for an unbounded closed loop).
    pub planned: Option<u64>,
    /// Dispatched but never sent.
    pub not_sent: u64,
    pub peak_concurrency: u64,
    /// Inter-token gaps and tokens a chunk of measured, successful requests.
    pub streams: &'a crate::engine::runner::StreamStats,
    /// A conversation run's sessions.
    pub sessions: Option<SessionCounts>,
}

impl<'a> RunCounts<'a> {
    /// The runner's counts of `data`.
    pub fn of(data: &'a crate::engine::runner::RunData) -> RunCounts<'a> {
        RunCounts {
            planned: data.planned,
            not_sent: data.not_sent,
            peak_concurrency: data.peak_concurrency,
            streams: &data.streams,
            sessions: data.sessions.clone(),
        }
    }
}

/// A summary under construction.
pub struct Accumulator {
    slo: Slo,
    ignore_eos: bool,
    hists: BTreeMap<Latency, Histogram<u64>>,
    records: u64,
    warmup: u64,
    ok: u64,
    errors: BTreeMap<String, u64>,
    aborted: u64,
    retried: u64,
    textless: Histogram<u64>,
    prompt_tokens: u64,
    output_tokens: u64,
    usage_missing: u64,
    usage_rejected: u64,
    length_error_sum: f64,
    length_error_n: u64,
    mismatch: u64,
    good: u64,
    start: Option<u64>,
    end: Option<u64>,
    /// Conversation runs: measured requests by turn index.
    turns: BTreeMap<u32, TurnAcc>,
    reasoning: ReasoningTokens,
    chunks: u64,
    chunks_reported: u64,
    chunks_estimated: u64,
    chunks_counted: u64,
    warmup_output_tokens: u64,
    /// Requests whose reply called a tool.
    tool_calls: u64,
    /// (requests, Σ cached, Σ prompt) over replies that reported both.
    cached: (u64, u64, u64),
    /// (requests with images, Σ images, replies that said their tokens, Σ those tokens).
    images: (u64, u64, u64, u64),
    /// (requests with a server prefill, of those longer than TTFT, the source).
    clock: (u64, u64, Option<ClockSource>),
}

/// One turn index's figures under construction.
struct TurnAcc {
    sent: u64,
    ok: u64,
    hists: BTreeMap<Latency, Histogram<u64>>,
    prompt_tokens: u64,
    prompt_n: u64,
}

impl TurnAcc {
    fn new() -> TurnAcc {
        TurnAcc {
            sent: 0,
            ok: 0,
            hists: Latency::GATED
                .into_iter()
                .map(|m| (m, new_histogram()))
                .collect(),
            prompt_tokens: 0,
            prompt_n: 0,
        }
    }

    fn add(&mut self, r: &RequestRecord) {
        self.sent += 1;
        if !r.outcome.is_ok() {
            return;
        }
        self.ok += 1;
        for (m, h) in self.hists.iter_mut() {
            if let Some(v) = per_request_us(r, *m) {
                record_us(h, v);
            }
        }
        if let Some(p) = r.prompt_tokens {
            self.prompt_tokens = self.prompt_tokens.saturating_add(p);
            self.prompt_n += 1;
        }
    }

    fn summary(&self, turn: u32) -> TurnSummary {
        let (ttft, e2e) = (
            Sample::from_hist(&self.hists[&Latency::Ttft]),
            Sample::from_hist(&self.hists[&Latency::E2e]),
        );
        let ms = |s: &Sample, p: f64| s.quantile(p).unwrap_or(0.0) / 1000.0;
        TurnSummary {
            turn,
            sent: self.sent,
            ok: self.ok,
            ttft_p50_ms: ms(&ttft, 0.5),
            ttft_p95_ms: ms(&ttft, 0.95),
            e2e_p50_ms: ms(&e2e, 0.5),
            prompt_tokens_mean: (self.prompt_n > 0)
                .then(|| self.prompt_tokens as f64 / self.prompt_n as f64),
        }
    }
}

impl Accumulator {
    pub fn new(slo: &Slo, ignore_eos: bool) -> Accumulator {
        Accumulator {
            slo: slo.clone(),
            ignore_eos,
            hists: Latency::ALL
                .into_iter()
                .filter(|m| !m.per_gap())
                .map(|m| (m, new_histogram()))
                .collect(),
            records: 0,
            warmup: 0,
            ok: 0,
            errors: BTreeMap::new(),
            aborted: 0,
            retried: 0,
            textless: new_histogram(),
            prompt_tokens: 0,
            output_tokens: 0,
            usage_missing: 0,
            usage_rejected: 0,
            length_error_sum: 0.0,
            length_error_n: 0,
            mismatch: 0,
            good: 0,
            start: None,
            end: None,
            turns: BTreeMap::new(),
            reasoning: ReasoningTokens {
                tokens: 0,
                requests: 0,
                counted: 0,
            },
            chunks: 0,
            chunks_reported: 0,
            chunks_estimated: 0,
            chunks_counted: 0,
            warmup_output_tokens: 0,
            tool_calls: 0,
            cached: (0, 0, 0),
            images: (0, 0, 0, 0),
            clock: (0, 0, None),
        }
    }

    /// Records sent so far, warmup included.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Takes one finished request.
    pub fn add(&mut self, r: &RequestRecord) {
        self.records += 1;
        for (m, h) in self.hists.iter_mut() {
            if counts_for(r, *m) {
                if let Some(v) = per_request_us(r, *m) {
                    record_us(h, v);
                }
            }
        }
        if r.warmup {
            self.warmup += 1;
            if r.outcome.is_ok() {
                self.warmup_output_tokens += r.output_tokens;
            }
            return;
        }
        self.start = Some(self.start.map_or(r.intended_us, |s| s.min(r.intended_us)));
        self.end = Some(self.end.map_or(r.end_us, |e| e.max(r.end_us)));
        self.retried += r.retried as u64;
        if let Some(t) = r.turn {
            self.turns.entry(t).or_insert_with(TurnAcc::new).add(r);
        }
        match r.outcome {
            Outcome::Ok => {}
            Outcome::Aborted => self.aborted += 1,
            o => *self.errors.entry(o.name()).or_insert(0) += 1,
        }
        if !r.outcome.is_ok() {
            return;
        }
        self.ok += 1;
        if r.preamble_chunks > 0 {
            if let (Some(t), Some(f)) = (r.ttft_us, r.first_event_us) {
                record_us(&mut self.textless, t.saturating_sub(f));
            }
        }
        if let Some(p) = r.prompt_tokens {
            self.prompt_tokens = self.prompt_tokens.saturating_add(p);
        }
        self.output_tokens = self.output_tokens.saturating_add(r.output_tokens);
        self.usage_missing += !r.output_tokens_from_usage as u64;
        self.usage_rejected += r.usage_rejected as u64;
        if let (Some(p), Some(t)) = (r.prompt_tokens, r.input_tokens_target.filter(|t| *t > 0)) {
            self.length_error_sum += p as f64 / t as f64 - 1.0;
            self.length_error_n += 1;
        }
        if self.ignore_eos && r.output_tokens_from_usage && r.output_tokens != r.max_tokens as u64 {
            self.mismatch += 1;
        }
        if !self.slo.is_empty() && meets_slo(r, &self.slo) {
            self.good += 1;
        }
        let d = &r.stream;
        if d.reasoning_chunks > 0 {
            self.reasoning.requests += 1;
            self.reasoning.counted += d.reasoning_counted as u64;
            self.reasoning.tokens = self
                .reasoning
                .tokens
                .saturating_add(d.reasoning_tokens.unwrap_or(0));
        }
        if let (Some(c), Some(p)) = (r.cached_tokens, r.prompt_tokens) {
            let (n, cached, prompt) = &mut self.cached;
            *n += 1;
            *cached = cached.saturating_add(c);
            *prompt = prompt.saturating_add(p);
        }
        if let Some(s) = r.server.filter(|s| s.prefill_us.is_some()) {
            let (n, over, source) = &mut self.clock;
            *n += 1;
            *over += (per_request_us(r, Latency::TtftRest).is_none()) as u64;
            *source = Some(source.map_or(s.source, |was| was.max(s.source)));
        }
        self.tool_calls += d.tool_call_us.is_some() as u64;
        if let Some(i) = r.images {
            let (n, sent, said, tokens) = &mut self.images;
            *n += 1;
            *sent += i.sent as u64;
            *said += i.tokens.is_some() as u64;
            *tokens = tokens.saturating_add(i.tokens.unwrap_or(0));
        }
        self.chunks += r.content_chunks as u64;
        match d.chunk_tokens {
            ChunkTokens::One => {}
            ChunkTokens::Reported => self.chunks_reported += 1,
            ChunkTokens::Estimated => self.chunks_estimated += 1,
            ChunkTokens::Counted => self.chunks_counted += 1,
        }
    }

    /// Tokens a chunk, unless every chunk carried one.
    fn chunk_summary(&self, per_chunk: &TokensPerChunk) -> Option<ChunkSummary> {
        if !per_chunk.any_multi() && self.chunks_estimated == 0 {
            return None;
        }
        let by_tokens = per_chunk
            .buckets()
            .map(|(k, n)| {
                let key = if k == TokensPerChunk::OPEN {
                    format!("{k}+")
                } else {
                    k.to_string()
                };
                (key, n)
            })
            .collect();
        Some(ChunkSummary {
            chunks: self.chunks,
            mean_tokens: if self.chunks > 0 {
                self.output_tokens as f64 / self.chunks as f64
            } else {
                0.0
            },
            by_tokens,
            requests_reported: self.chunks_reported,
            requests_estimated: self.chunks_estimated,
            requests_counted: self.chunks_counted,
        })
    }

    /// This run's own hit rate from the replies that said their cached tokens.
    fn cached_prompt(&self) -> Option<CachedPrompt> {
        let (requests, cached_tokens, prompt_tokens) = self.cached;
        (requests > 0 && prompt_tokens > 0).then(|| CachedPrompt {
            requests,
            cached_tokens,
            prompt_tokens,
            hit_rate: cached_tokens as f64 / prompt_tokens as f64,
        })
    }

    /// The images the prompts carried, and their tokens where the replies said.
    fn image_summary(&self) -> Option<ImageSummary> {
        let (requests, images, reported, tokens) = self.images;
        (requests > 0).then_some(ImageSummary {
            requests,
            images,
            image_tokens: (reported > 0).then_some(tokens),
            reported,
        })
    }

    /// The summary and its histograms.
    pub fn finish(self, run: RunCounts) -> (Summary, Histograms) {
        let (cached, images) = (self.cached_prompt(), self.image_summary());
        let chunks = self.chunk_summary(&run.streams.chunk_tokens);
        let reasoning = (self.reasoning.requests > 0).then(|| self.reasoning.clone());
        let mut h = self.hists;
        h.insert(Latency::Itl, run.streams.itl_us.clone());
        if chunks.is_some() {
            h.insert(Latency::ItlToken, run.streams.per_token().clone());
        }
        let clocked = self.clock.0 > 0;
        let tools = self.tool_calls > 0;
        // Successful requests without a TTFT were unstreamed answers (embeddings).
        let streamed = self.ok == 0 || h.get(&Latency::Ttft).is_some_and(|t| !t.is_empty());
        let keep = |m: &Latency| {
            (reasoning.is_some() || !m.reasoning_only())
                && (clocked || !m.server_reported())
                && (streamed || !m.token_timed())
                && (tools || !m.tool_only())
        };
        h.retain(|m, _| keep(m));
        let mut turn_accs = self.turns;
        for a in turn_accs.values_mut() {
            a.hists.retain(|m, _| keep(m));
        }
        let sent = self.records - self.warmup;
        let textless = Sample::from_hist(&self.textless);
        let counts = Counts {
            planned: run.planned,
            sent,
            warmup: self.warmup,
            ok: self.ok,
            errors: self.errors,
            aborted: self.aborted,
            not_sent: run.planned.map_or(run.not_sent, |p| {
                let skipped = run.sessions.as_ref().map_or(0, |s| s.turns_skipped);
                p.saturating_sub(self.records.saturating_add(skipped))
            }),
            retried: self.retried,
            connections: None,
            reuse_stopped_at: None,
            textless_first_chunk: textless.quantile(0.5).map(|p50| TextlessFirst {
                requests: textless.len() as u64,
                gap_p50_ms: p50 / 1000.0,
            }),
            sessions: run.sessions,
        };
        let tokens = Tokens {
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.output_tokens,
            warmup_output_tokens: self.warmup_output_tokens,
            usage_missing: self.usage_missing,
            usage_rejected: self.usage_rejected,
            prompt_length_error_pct: (self.length_error_n > 0)
                .then(|| self.length_error_sum / self.length_error_n as f64 * 100.0),
            output_len_mismatch: self.mismatch,
            reasoning,
            chunks,
            tool_calls: tools.then_some(self.tool_calls),
            cached,
            images,
        };
        let start = self.start.unwrap_or(0);
        let end = self.end.unwrap_or(start);
        let window_s = end.saturating_sub(start) as f64 / 1e6;
        let per_s = |x: f64| if window_s > 0.0 { x / window_s } else { 0.0 };
        let good = (!self.slo.is_empty()).then_some(self.good);
        let throughput = Throughput {
            window_s,
            request_rps: per_s(self.ok as f64),
            output_tps: per_s(tokens.output_tokens as f64),
            total_tps: per_s(tokens.output_tokens.saturating_add(tokens.prompt_tokens) as f64),
            goodput_rps: good.map(|g| per_s(g as f64)),
            goodput_requests: good,
            peak_concurrency: run.peak_concurrency,
        };
        let latency = Latency::ALL
            .into_iter()
            .filter_map(|m| {
                let mut l = super::latency_summary(m, &Sample::from_hist(h.get(&m)?));
                if m == Latency::E2e && !streamed {
                    l.definition = UNSTREAMED_E2E.into();
                }
                Some(l)
            })
            .collect();
        let turns = turn_accs.iter().map(|(t, a)| a.summary(*t)).collect();
        let by_turn = turn_accs
            .into_iter()
            .flat_map(|(t, a)| a.hists.into_iter().map(move |(m, h)| ((m, t), h)))
            .collect();
        (
            Summary {
                counts,
                tokens,
                throughput,
                latency,
                turns,
                server_clock: self.clock.2.map(|s| ServerClockSummary {
                    source: s.name().to_string(),
                    requests: self.clock.0,
                    prefill_over_ttft: self.clock.1,
                }),
            },
            Histograms {
                by_metric: h,
                by_turn,
            },
        )
    }
}
