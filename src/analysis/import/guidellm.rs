//! GuideLLM's JSON report (`guidellm run … --output kind=json,path=FILE`, report version 2)
//! as bench's request records.
//!
//! A report may hold several benchmarks (a sweep's loads); a run is one load, so a file
//! must hold one. Its requests are under `requests.successful`, `.errored` and
//! `.incomplete`, each with `info.timings` (epoch seconds): `targeted_start` (when the
//! schedule meant it to go — in a concurrent run, when its worker became free),
//! `request_start` (sent), `first_request_iteration` (the first data event, a role-only chat
//! chunk included), `first_token_iteration` (the first token), `last_token_iteration` and
//! `request_end`, and `prompt_tokens` / `output_tokens`. Mapped onto bench's records:
//!
//! * TTFT, E2E and TPOT as bench defines them: from the intended send (`targeted_start`) to
//!   the first and the last token, TPOT (E2E − TTFT)/(output − 1). GuideLLM's own
//!   `time_to_first_token_ms` starts at the actual send; the gap (its dispatch delay) is kept
//!   as the client's lateness, `send_lag_us`, as bench keeps its own.
//! * ITL: the report keeps each request's mean gap, not its gaps, so the ITL rows are absent.
//! * Errors are kept with their text (`server_error`); incomplete requests (cancelled when
//!   the benchmark stopped) are `aborted`.

use super::{Load, Parsed, Settings, GUIDELLM};
use crate::error::BenchError;
use crate::model::record::{Outcome, RequestRecord};
use serde_json::Value;

/// Reads a GuideLLM report of one benchmark, or says why it cannot.
pub fn parse(v: &Value) -> Result<Parsed, BenchError> {
    let bad = |m: String| {
        BenchError::usage(format!(
            "not a {GUIDELLM} JSON report of one benchmark: {m}"
        ))
    };
    let benchmarks = v["benchmarks"]
        .as_array()
        .ok_or_else(|| bad("no benchmarks list".into()))?;
    let b = match benchmarks.as_slice() {
        [one] => one,
        more => {
            return Err(bad(format!(
                "it holds {} benchmarks (a sweep's loads); a run is one load — export each with `guidellm run` at one rate",
                more.len()
            )))
        }
    };
    let lists = [
        ("successful", Outcome::Ok),
        ("errored", Outcome::ServerError),
        ("incomplete", Outcome::Aborted),
    ];
    let mut reqs = Vec::new();
    for (key, outcome) in lists {
        for r in b["requests"][key].as_array().into_iter().flatten() {
            reqs.push((r, outcome));
        }
    }
    if reqs.is_empty() {
        return Err(bad("no requests in it".into()));
    }
    let t = |r: &Value, k: &str| r["info"]["timings"][k].as_f64();
    let t0 = reqs
        .iter()
        .filter_map(|(r, _)| t(r, "targeted_start").or_else(|| t(r, "request_start")))
        .fold(f64::INFINITY, f64::min);
    if !t0.is_finite() {
        return Err(bad("no request has info.timings".into()));
    }
    reqs.sort_by(|a, b| {
        let at = |r: &Value| t(r, "request_start").unwrap_or(f64::MAX);
        at(a.0).total_cmp(&at(b.0))
    });
    let records = reqs
        .iter()
        .enumerate()
        .map(|(i, (r, o))| record(i as u64, r, *o, t0))
        .collect::<Result<Vec<_>, String>>()
        .map_err(bad)?;
    let n = records.len() as u64;
    let mean = |k: &str| {
        let s: u64 = reqs.iter().filter_map(|(r, _)| r[k].as_u64()).sum();
        (s as f64 / n as f64).round().max(1.0) as u64
    };
    let strategy = &b["config"]["strategy"];
    let load = match strategy["type_"].as_str() {
        Some("constant") | Some("poisson") => Load::Open {
            rate: strategy["rate"]
                .as_f64()
                .ok_or_else(|| bad("a rate strategy without a rate".into()))?,
            poisson: strategy["type_"] == "poisson",
            cap: strategy["max_concurrency"].as_u64(),
        },
        Some("synchronous") => Load::Closed(1),
        Some("concurrent") | Some("throughput") => Load::Closed(
            strategy["streams"]
                .as_u64()
                .or_else(|| strategy["max_concurrency"].as_u64())
                .ok_or_else(|| bad("a concurrent strategy without streams".into()))?,
        ),
        other => {
            return Err(bad(format!(
                "strategy {other:?} is not one bench can state as a load"
            )))
        }
    };
    let backend = &b["config"]["backend"];
    Ok(Parsed {
        tool: GUIDELLM,
        version: v["metadata"]["guidellm_version"].as_str().map(String::from),
        settings: Settings {
            chat: backend["request_format"].as_str().is_none_or(|f| f.contains("chat")),
            load,
            requests: n,
            input_tokens: mean("prompt_tokens"),
            output_tokens: mean("output_tokens"),
        },
        records,
        gaps: Vec::new(),
        started_at: chrono::DateTime::from_timestamp_micros((t0 * 1e6) as i64),
        model: backend["model"].as_str().unwrap_or_default().to_string(),
        differences: vec![
            "ITL is absent: the report keeps each request's mean gap, not its gaps".into(),
            "token counts are GuideLLM's (the server's usage, else its tokenizer); max_tokens and ignore_eos are not in the report".into(),
        ],
    })
}

/// One request, times in µs from `t0` (the first intended send).
fn record(i: u64, r: &Value, outcome: Outcome, t0: f64) -> Result<RequestRecord, String> {
    let t = |k: &str| r["info"]["timings"][k].as_f64();
    let us = |s: f64| ((s - t0).max(0.0) * 1e6).round() as u64;
    let sent_s = t("request_start").ok_or_else(|| format!("request {i} has no request_start"))?;
    let intended_s = t("targeted_start").unwrap_or(sent_s).min(sent_s);
    let (intended, sent) = (us(intended_s), us(sent_s));
    let end = t("request_end").map_or(sent, us);
    let ok = outcome.is_ok();
    let from_intended = |k: &str| t(k).filter(|_| ok).map(|x| us(x) - intended);
    let ttft = from_intended("first_token_iteration");
    let e2e = from_intended("last_token_iteration");
    let out = r["output_tokens"].as_u64().unwrap_or(0);
    let tpot = match (ttft, e2e) {
        (Some(a), Some(b)) if out > 1 => Some(b.saturating_sub(a) as f64 / (out - 1) as f64),
        _ => None,
    };
    let chunks = r["info"]["timings"]["token_iterations"]
        .as_u64()
        .unwrap_or(0) as u32;
    Ok(RequestRecord {
        index: i,
        warmup: false,
        session: None,
        turn: None,
        class: String::new(),
        outcome,
        intended_us: intended,
        sent_us: sent,
        end_us: end.max(sent),
        retried: false,
        queue_us: 0,
        send_lag_us: sent - intended,
        ttft_us: ttft,
        e2e_us: e2e,
        tpot_us: tpot,
        prompt_tokens: r["prompt_tokens"].as_u64(),
        output_tokens: if ok { out } else { 0 },
        output_tokens_from_usage: true,
        usage_rejected: false,
        max_tokens: 0,
        input_tokens_target: None,
        content_chunks: if ok { chunks } else { 0 },
        preamble_chunks: 0,
        first_event_us: from_intended("first_request_iteration"),
        cached_tokens: None,
        images: None,
        server: None,
        stream: Default::default(),
        finish_reason: None,
        error: r["info"]["error"]
            .as_str()
            .map(|e| e.chars().take(300).collect()),
    })
}
