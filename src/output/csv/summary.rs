//! `summary.csv`: one row per single-number figure of a run (metric, unit, value,
//! definition), then one per latency percentile.

use super::{finish, row_err};
use crate::error::BenchError;
use crate::model::summary::Summary;

const SUMMARY_COLUMNS: &[&str] = &[
    "metric",
    "unit",
    "value",
    "count",
    "mean",
    "min",
    "p50",
    "p90",
    "p95",
    "p99",
    "p99.9",
    "max",
    "definition",
];

pub fn summary(s: &Summary) -> Result<Vec<u8>, BenchError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(SUMMARY_COLUMNS).map_err(row_err)?;
    for l in &s.latency {
        let f = |x: f64| match l.has_values() {
            true => format!("{x:.3}"),
            false => String::new(),
        };
        w.write_record([
            l.name.to_string(),
            l.unit.clone(),
            String::new(),
            l.count.to_string(),
            f(l.mean),
            f(l.min),
            f(l.p50),
            f(l.p90),
            f(l.p95),
            f(l.p99),
            f(l.p999),
            f(l.max),
            l.definition.clone(),
        ])
        .map_err(row_err)?;
    }
    for (metric, unit, value, def) in scalar_rows(s) {
        let mut row = vec![metric, unit, value];
        row.extend(std::iter::repeat_n(String::new(), 9));
        row.push(def);
        w.write_record(&row).map_err(row_err)?;
    }
    finish(w)
}

/// (metric, unit, value, definition) for every single-number figure of a summary.
fn scalar_rows(s: &Summary) -> Vec<(String, String, String, String)> {
    let t = &s.throughput;
    let c = &s.counts;
    let mut rows = vec![
        (
            "request_throughput",
            "req/s",
            format!("{:.3}", t.request_rps),
            "successful requests / measured window",
        ),
        (
            "output_token_throughput",
            "tok/s",
            format!("{:.3}", t.output_tps),
            "output tokens of successful requests / measured window",
        ),
        (
            "total_token_throughput",
            "tok/s",
            format!("{:.3}", t.total_tps),
            "(prompt + output tokens) / measured window",
        ),
        (
            "window",
            "s",
            format!("{:.3}", t.window_s),
            "earliest intended send → latest end, measured requests",
        ),
        (
            "peak_concurrency",
            "requests",
            t.peak_concurrency.to_string(),
            "most requests in flight at once",
        ),
        (
            "sent",
            "requests",
            c.sent.to_string(),
            "measured requests sent (warmup excluded)",
        ),
        (
            "ok",
            "requests",
            c.ok.to_string(),
            "measured requests that succeeded",
        ),
        (
            "aborted",
            "requests",
            c.aborted.to_string(),
            "in flight when the run was stopped",
        ),
        (
            "not_sent",
            "requests",
            c.not_sent.to_string(),
            "planned but never sent",
        ),
        (
            "warmup",
            "requests",
            c.warmup.to_string(),
            "sent first and excluded from every metric",
        ),
        (
            "prompt_tokens",
            "tokens",
            s.tokens.prompt_tokens.to_string(),
            "Σ usage.prompt_tokens, successful requests",
        ),
        (
            "output_tokens",
            "tokens",
            s.tokens.output_tokens.to_string(),
            "Σ output tokens (usage, else chunks), successful requests",
        ),
        (
            "output_len_mismatch",
            "requests",
            s.tokens.output_len_mismatch.to_string(),
            "output ≠ max_tokens although ignore_eos was asked",
        ),
        (
            "usage_missing",
            "requests",
            s.tokens.usage_missing.to_string(),
            "no usage from the server: output counted as chunks",
        ),
        (
            "usage_rejected",
            "requests",
            s.tokens.usage_rejected.to_string(),
            "absurd usage count (> 1e8 tokens) dropped: output counted as chunks",
        ),
    ]
    .into_iter()
    .map(|(a, b, c, d)| (a.to_string(), b.to_string(), c, d.to_string()))
    .collect::<Vec<_>>();
    optional_rows(s, &mut rows);
    conversation_rows(s, &mut rows);
    rows
}

/// Reasoning tokens and tokens a chunk, when the streams had them.
fn stream_rows(s: &Summary, rows: &mut Vec<(String, String, String, String)>) {
    let mut row = |m: &str, unit: &str, v: String, def: &str| {
        rows.push((m.into(), unit.into(), v, def.into()))
    };
    if let Some(r) = &s.tokens.reasoning {
        row(
            "reasoning_tokens",
            "tokens",
            r.tokens.to_string(),
            "Σ reasoning tokens (part of output_tokens), successful requests",
        );
        row(
            "reasoning_requests",
            "requests",
            r.requests.to_string(),
            "successful requests whose stream carried reasoning",
        );
        row("reasoning_counted", "requests", r.counted.to_string(), "of those, reasoning tokens counted from the chunks (the server did not report completion_tokens_details.reasoning_tokens)");
    }
    if let Some(c) = &s.tokens.chunks {
        row(
            "tokens_per_chunk",
            "tokens",
            format!("{:.3}", c.mean_tokens),
            "output tokens / chunks with text, successful requests",
        );
        for (k, n) in &c.by_tokens {
            row(
                &format!("chunks_with_{k}_tokens"),
                "chunks",
                n.to_string(),
                "chunks carrying that many tokens, requests whose chunks' tokens are known",
            );
        }
        row("chunk_tokens_estimated", "requests", c.requests_estimated.to_string(), "several tokens a chunk but no per-chunk usage: (output − 1) / (chunks − 1) a chunk assumed");
        if c.requests_counted > 0 {
            row("chunk_tokens_counted", "requests", c.requests_counted.to_string(), "several tokens a chunk but no per-chunk usage: the local tokenizer counted each chunk's tokens");
        }
    }
}

/// Rows present only when the run has them: prompt-length error, goodput (after the
/// throughputs), and one per error kind.
fn optional_rows(s: &Summary, rows: &mut Vec<(String, String, String, String)>) {
    let (t, c) = (&s.throughput, &s.counts);
    stream_rows(s, rows);
    if let Some(e) = s.tokens.prompt_length_error_pct {
        rows.push((
            "prompt_length_error".into(),
            "%".into(),
            format!("{e:.2}"),
            "mean server prompt_tokens / synthetic target − 1".into(),
        ));
    }
    if let Some(k) = &s.tokens.cached {
        rows.push((
            "reply_prefix_hit_rate".into(),
            "%".into(),
            format!("{:.2}", k.hit_rate * 100.0),
            format!(
                "Σ cached / Σ prompt tokens as {} replies reported them ({} / {})",
                k.requests, k.cached_tokens, k.prompt_tokens
            ),
        ));
    }
    if let Some(k) = &s.server_clock {
        rows.push((
            "server_clock_requests".into(),
            "requests".into(),
            k.requests.to_string(),
            format!(
                "successful requests whose reply carried the server's prefill time ({}); {} of them longer than the TTFT measured here",
                k.source, k.prefill_over_ttft
            ),
        ));
    }
    if let (Some(g), Some(n)) = (t.goodput_rps, t.goodput_requests) {
        rows.insert(
            3,
            (
                "goodput".into(),
                "req/s".into(),
                format!("{g:.3}"),
                format!("requests meeting every SLO ({n}) / measured window"),
            ),
        );
    }
    for (kind, n) in &c.errors {
        rows.push((
            format!("error.{kind}"),
            "requests".into(),
            n.to_string(),
            "measured requests that ended in this error".into(),
        ));
    }
}

/// A conversation run's rows: its sessions, and TTFT/E2E by turn.
fn conversation_rows(s: &Summary, rows: &mut Vec<(String, String, String, String)>) {
    let c = &s.counts;
    if let Some(ss) = &c.sessions {
        for (name, unit, v, def) in [
            (
                "sessions.started",
                "sessions",
                ss.started,
                "sessions that sent their first turn, warmup included",
            ),
            (
                "sessions.completed",
                "sessions",
                ss.completed,
                "sessions whose every turn succeeded",
            ),
            (
                "sessions.ended_early",
                "sessions",
                ss.ended_early,
                "sessions ended by a failed turn",
            ),
            (
                "sessions.turns_skipped",
                "requests",
                ss.turns_skipped,
                "turns never sent: their session had ended at a failed turn",
            ),
        ] {
            rows.push((name.into(), unit.into(), v.to_string(), def.into()));
        }
    }
    for t in &s.turns {
        for (what, v, def) in [
            (
                "ttft.p50",
                t.ttft_p50_ms,
                "TTFT p50 of this turn's successful measured requests",
            ),
            (
                "ttft.p95",
                t.ttft_p95_ms,
                "TTFT p95 of this turn's successful measured requests",
            ),
            (
                "e2e.p50",
                t.e2e_p50_ms,
                "E2E p50 of this turn's successful measured requests",
            ),
        ] {
            rows.push((
                format!("{what}@turn{}", t.turn),
                "ms".into(),
                format!("{v:.3}"),
                def.into(),
            ));
        }
    }
}
