//! `requests.csv` (one row per request) and `summary.csv` (one row per metric).
//!
//! Times are milliseconds with µs resolution and say so in the column name. Text cells that
//! begin with `=`, `+`, `-` or `@` are prefixed with `'` so spreadsheets do not run them as
//! formulas (CSV injection), and control characters in them are stored as `\u{..}` escapes.

use crate::error::BenchError;
use crate::model::metric::Latency;
use crate::model::record::RequestRecord;

mod summary;

pub use summary::summary;

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
    "cached_tokens",
    "server_clock",
    "server_queue_ms",
    "server_prefill_ms",
    "server_decode_ms",
    "ttft_rest_ms",
    "tool_call_ms",
    "tool_args_ms",
    "images",
    "image_tokens",
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
fn request_row(r: &RequestRecord) -> [String; 38] {
    let d = &r.stream;
    let k = r.server.as_ref();
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
        r.cached_tokens.map(|t| t.to_string()).unwrap_or_default(),
        k.map(|k| k.source.name().to_string()).unwrap_or_default(),
        opt_ms(k.and_then(|k| k.queue_us)),
        opt_ms(k.and_then(|k| k.prefill_us)),
        opt_ms(k.and_then(|k| k.decode_us)),
        opt_ms(crate::metrics::summary::per_request_us(
            r,
            Latency::TtftRest,
        )),
        opt_ms(d.tool_call_us),
        opt_ms(d.tool_args_us),
        r.images.map(|i| i.sent.to_string()).unwrap_or_default(),
        r.images
            .and_then(|i| i.tokens)
            .map(|t| t.to_string())
            .unwrap_or_default(),
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
