//! `requests.csv` (one row per request) and `summary.csv` (one row per metric).
//!
//! Times are milliseconds with µs resolution and say so in the column name. Text cells that
//! begin with `=`, `+`, `-` or `@` are prefixed with `'` so spreadsheets do not run them as
//! formulas (CSV injection), and control characters in them are stored as `\u{..}` escapes.

use crate::error::BenchError;
use crate::model::record::RequestRecord;
use crate::model::summary::Summary;

/// A text cell as stored: control characters as `\u{..}` escapes (a server's error body
/// must not clear the screen of whoever `cat`s the file), and a leading formula character
/// prefixed with `'`.
pub fn escape(s: &str) -> String {
    let s = crate::model::escape::printable(s);
    match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => format!("'{s}"),
        _ => s,
    }
}

/// A cell without [`escape`]'s formula guard (`'=x` → `=x`); the control-character escapes
/// stay as stored.
pub fn unescape(s: &str) -> String {
    match s.strip_prefix('\'') {
        Some(rest) if rest.starts_with(['=', '+', '-', '@', '\t', '\r']) => rest.to_string(),
        _ => s.to_string(),
    }
}

fn ms(us: u64) -> String {
    format!("{:.3}", us as f64 / 1000.0)
}

fn opt_ms(us: Option<u64>) -> String {
    us.map(ms).unwrap_or_default()
}

fn finish(w: csv::Writer<Vec<u8>>) -> Result<Vec<u8>, BenchError> {
    w.into_inner()
        .map_err(|e| BenchError::Runtime(format!("cannot write CSV: {e}")))
}

fn row_err(e: csv::Error) -> BenchError {
    BenchError::Runtime(format!("cannot write CSV: {e}"))
}

const REQUEST_COLUMNS: &[&str] = &[
    "index",
    "warmup",
    "class",
    "session",
    "turn",
    "outcome",
    "intended_ms",
    "sent_ms",
    "end_ms",
    "queue_ms",
    "send_lag_ms",
    "ttft_ms",
    "tpot_ms",
    "e2e_ms",
    "prompt_tokens",
    "output_tokens",
    "output_tokens_source",
    "max_tokens",
    "content_chunks",
    "preamble_chunks",
    "first_event_ms",
    "finish_reason",
    "error",
    "ttfo_ms",
    "answer_tpot_ms",
    "reasoning_tokens",
    "reasoning_tokens_source",
    "chunk_tokens",
];

/// `requests.csv` of `records`, sorted by index.
pub fn requests(records: &[RequestRecord]) -> Result<Vec<u8>, BenchError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(REQUEST_COLUMNS).map_err(row_err)?;
    let mut sorted: Vec<&RequestRecord> = records.iter().collect();
    sorted.sort_by_key(|r| r.index);
    for r in sorted {
        w.write_record(request_row(r)).map_err(row_err)?;
    }
    finish(w)
}

/// One record as a `requests.csv` row.
fn request_row(r: &RequestRecord) -> [String; 28] {
    let d = &r.stream;
    [
        r.index.to_string(),
        r.warmup.to_string(),
        escape(&r.class),
        r.session.map(|s| s.to_string()).unwrap_or_default(),
        r.turn.map(|t| t.to_string()).unwrap_or_default(),
        r.outcome.name(),
        ms(r.intended_us),
        ms(r.sent_us),
        ms(r.end_us),
        ms(r.queue_us),
        ms(r.send_lag_us),
        opt_ms(r.ttft_us),
        r.tpot_us
            .map(|t| format!("{:.3}", t / 1000.0))
            .unwrap_or_default(),
        opt_ms(r.e2e_us),
        r.prompt_tokens.map(|t| t.to_string()).unwrap_or_default(),
        r.output_tokens.to_string(),
        if r.output_tokens_from_usage {
            "usage"
        } else if r.usage_rejected {
            "chunks_usage_rejected"
        } else {
            "chunks"
        }
        .to_string(),
        r.max_tokens.to_string(),
        r.content_chunks.to_string(),
        r.preamble_chunks.to_string(),
        opt_ms(r.first_event_us),
        escape(r.finish_reason.as_deref().unwrap_or("")),
        escape(r.error.as_deref().unwrap_or("")),
        opt_ms(d.ttfo_us),
        d.answer_tpot_us
            .map(|t| format!("{:.3}", t / 1000.0))
            .unwrap_or_default(),
        d.reasoning_tokens
            .map(|t| t.to_string())
            .unwrap_or_default(),
        match (d.reasoning_tokens, d.reasoning_counted) {
            (None, _) => "",
            (Some(_), true) => "counted",
            (Some(_), false) => "usage",
        }
        .to_string(),
        d.chunk_tokens.name().to_string(),
    ]
}

/// `requests.csv` written as requests finish (completion order; `index` gives the plan's
/// order), so a crash keeps what was measured — at most the last 64 KiB buffered is lost.
pub struct RequestsWriter {
    path: std::path::PathBuf,
    w: csv::Writer<std::io::BufWriter<std::fs::File>>,
    error: Option<String>,
}

impl RequestsWriter {
    /// Creates (or truncates) `path` and writes the header.
    pub fn create(path: &std::path::Path) -> Result<RequestsWriter, BenchError> {
        let err = |source| BenchError::Write {
            path: path.to_path_buf(),
            source,
        };
        if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(err)?;
        }
        let f = std::fs::File::create(path).map_err(err)?;
        let mut w = csv::Writer::from_writer(std::io::BufWriter::with_capacity(1 << 16, f));
        w.write_record(REQUEST_COLUMNS).map_err(row_err)?;
        Ok(RequestsWriter {
            path: path.to_path_buf(),
            w,
            error: None,
        })
    }

    /// Appends one record; the first failure is kept for [`RequestsWriter::finish`].
    pub fn write(&mut self, r: &RequestRecord) {
        if self.error.is_none() {
            if let Err(e) = self.w.write_record(request_row(r)) {
                self.error = Some(e.to_string());
            }
        }
    }

    /// Flushes to disk; the error of any write that failed.
    pub fn finish(mut self) -> Result<(), BenchError> {
        let err =
            |m: String| BenchError::Runtime(format!("cannot write {}: {m}", self.path.display()));
        if let Some(e) = self.error.take() {
            return Err(err(e));
        }
        self.w.flush().map_err(|e| err(e.to_string()))?;
        let f = self.w.get_ref().get_ref();
        f.sync_all().map_err(|e| err(e.to_string()))
    }
}

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

/// `windows.csv`: one row per time window (times in s from the run's start, latencies
/// in ms, KV usage 0–1; a blank cell has no value), then the steady state's bounds as a
/// `steady` row (its rates in the throughput columns).
pub fn windows(w: &crate::model::windows::Windows) -> Result<Vec<u8>, BenchError> {
    let mut out = csv::Writer::from_writer(Vec::new());
    out.write_record([
        "window",
        "start_s",
        "end_s",
        "sent",
        "errors",
        "request_rps",
        "output_tps",
        "in_flight",
        "ttft_p50_ms",
        "ttft_p95_ms",
        "tpot_p50_ms",
        "e2e_p50_ms",
        "server_running",
        "server_waiting",
        "server_kv_usage",
    ])
    .map_err(row_err)?;
    let o = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for (i, r) in w.rows.iter().enumerate() {
        out.write_record([
            i.to_string(),
            format!("{:.3}", r.start_s),
            format!("{:.3}", r.end_s),
            r.sent.to_string(),
            r.errors.to_string(),
            format!("{:.3}", r.request_rps),
            format!("{:.3}", r.output_tps),
            format!("{:.3}", r.in_flight),
            o(r.ttft_p50_ms),
            o(r.ttft_p95_ms),
            o(r.tpot_p50_ms),
            o(r.e2e_p50_ms),
            o(r.server_running),
            o(r.server_waiting),
            o(r.server_kv_usage),
        ])
        .map_err(row_err)?;
    }
    if let Some(s) = &w.steady {
        let mut row = vec![
            "steady".to_string(),
            format!("{:.3}", s.start_s),
            format!("{:.3}", s.end_s),
            s.requests.to_string(),
            String::new(),
            format!("{:.3}", s.achieved_rps),
            format!("{:.3}", s.output_tps),
        ];
        row.extend(std::iter::repeat_n(String::new(), 8));
        out.write_record(&row).map_err(row_err)?;
    }
    finish(out)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::record;

    #[test]
    fn unescape_undoes_the_formula_guard_and_nothing_else() {
        for s in ["=SUM(A1)", "+1", "-2 ms", "@x", "plain", "'quoted", ""] {
            assert_eq!(unescape(&escape(s)), s);
        }
        assert_eq!(unescape("'x"), "'x");
    }

    #[test]
    fn formula_cells_are_escaped_and_units_named() {
        let mut r = record(0, Outcome::Http(500));
        r.error = Some("=HYPERLINK(\"x\")".into());
        r.class = "-long".into();
        let text = String::from_utf8(requests(&[r]).unwrap()).unwrap();
        assert!(
            text.contains("'=HYPERLINK") && text.contains("'-long"),
            "{text}"
        );
        assert!(text.lines().next().unwrap().contains("ttft_ms"));
        assert!(text.contains(",http_500,"));
    }
}
