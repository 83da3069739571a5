//! The human summary printed after a run: counts, throughput, the latency table and the
//! definitions behind every column. Pure: `RunResult → String`.

use super::sig4;
use crate::model::result::RunResult;
use std::fmt::Write;

pub fn render(run: &RunResult) -> String {
    let s = &run.summary;
    let mut o = String::new();
    let state = if run.complete {
        "complete"
    } else {
        "INCOMPLETE (interrupted)"
    };
    let _ = writeln!(o, "bench run {} — {state}", run.scenario_name);
    let _ = writeln!(
        o,
        "  endpoint {}  model {}  api {}",
        run.endpoint,
        run.model,
        run.api.name()
    );
    for line in vars_lines(&run.vars) {
        let _ = writeln!(o, "  {line}");
    }
    counts(&mut o, run);
    figures(&mut o, run);
    if let Some(w) = &run.windows {
        super::windows::render_into(&mut o, w);
    }
    latency(&mut o, s);

    o
}

/// The `requests:`, `sessions:` and `first chunk:` lines.
fn counts(o: &mut String, run: &RunResult) {
    let c = &run.summary.counts;
    let errors: u64 = c.errors.values().sum();
    let mut line = format!("  requests: {} sent, {} ok, {errors} errors", c.sent, c.ok);
    if errors > 0 {
        let kinds: Vec<String> = c.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let _ = write!(line, " ({})", kinds.join(", "));
    }
    let _ = write!(
        line,
        ", {} aborted; {} warmup excluded",
        c.aborted, c.warmup
    );
    if c.retried > 0 {
        let _ = write!(
            line,
            "; {} retried after a closed keep-alive connection",
            c.retried
        );
    }
    match c.connections {
        Some(0) if c.sent > 0 => {
            let _ = write!(line, "; no connection could be opened");
        }
        Some(n) => {
            let _ = write!(line, "; {n} connections opened");
        }
        None => {}
    }
    if let Some(i) = c.reuse_stopped_at {
        let _ = write!(
            line,
            "; none reused after request {i} (the server closes them after each answer)"
        );
    }
    if c.not_sent > 0 {
        let _ = write!(line, "; {} planned but not sent", c.not_sent);
    }
    let _ = writeln!(o, "{line}");
    if let Some(ss) = &c.sessions {
        let planned = ss
            .planned
            .map_or(String::new(), |p| format!(" of {p} planned"));
        let _ = writeln!(
            o,
            "  sessions: {} started{planned} (warmup included), {} completed every turn, {} ended at a failed turn ({} later turns not sent)",
            ss.started, ss.completed, ss.ended_early, ss.turns_skipped
        );
    }
    if let Some(f) = &c.textless_first_chunk {
        let _ = writeln!(
            o,
            "  first chunk: {} of {} ok streams opened with a chunk carrying no text (e.g. a role-only delta); TTFT is timed at the first text chunk, p50 {:.1} ms later",
            f.requests, c.ok, f.gap_p50_ms
        );
    }
}

/// Throughput, tokens, prompt lengths, a trace's reuse and the server's own figures.
fn figures(o: &mut String, run: &RunResult) {
    let s = &run.summary;
    let (c, t) = (&s.counts, &s.throughput);
    let mut tp = format!(
        "  throughput: {:.2} req/s, {:.1} output tok/s, {:.1} total tok/s over {:.2} s; peak concurrency {}",
        t.request_rps, t.output_tps, t.total_tps, t.window_s, t.peak_concurrency
    );
    if let (Some(g), Some(n)) = (t.goodput_rps, t.goodput_requests) {
        let _ = write!(tp, "; goodput {g:.2} req/s ({n} of {} met the SLOs)", c.ok);
    }
    let _ = writeln!(o, "{tp}");
    let tk = &s.tokens;
    let _ = writeln!(
        o,
        "  tokens: {} prompt (server usage), {} output; {} with output ≠ max_tokens; {} without usage",
        tk.prompt_tokens, tk.output_tokens, tk.output_len_mismatch, tk.usage_missing
    );
    if let Some(r) = &tk.reasoning {
        let counted = match r.counted {
            0 => "reported by the server".to_string(),
            n => format!(
                "counted from the chunks in {n} (the server did not report completion_tokens_details.reasoning_tokens)"
            ),
        };
        let _ = writeln!(
            o,
            "  reasoning: {} tokens in {} streams, part of the output; {counted}. ttft is the first token of either, ttfo the first answer token",
            r.tokens, r.requests
        );
    }
    if let Some(ch) = &tk.chunks {
        let buckets: Vec<String> = ch
            .by_tokens
            .iter()
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        let _ = writeln!(
            o,
            "  tokens a chunk: mean {:.2} over {} chunks ({}); per chunk reported by the server in {} requests,{} estimated in {}. itl is per chunk, itl_token per token",
            ch.mean_tokens,
            ch.chunks,
            if buckets.is_empty() { "none known".to_string() } else { buckets.join(", ") },
            ch.requests_reported,
            match ch.requests_counted {
                0 => String::new(),
                n => format!(" counted with the local tokenizer in {n},"),
            },
            ch.requests_estimated
        );
    }
    if tk.usage_rejected > 0 {
        let _ = writeln!(
            o,
            "  usage anomaly: {} successful requests reported a usage count above 1e8 tokens; dropped, their output counted as chunks",
            tk.usage_rejected
        );
    }
    if let Some(e) = tk.prompt_length_error_pct {
        let how = if run.prompt_lengths.starts_with("calibrated") {
            "calibrated with a tokenizer"
        } else {
            "approximate: words ≈ tokens, plus the chat template; --calibrate makes them exact"
        };
        let _ = writeln!(
            o,
            "  prompt lengths: the server counted {e:+.1} % tokens vs the synthetic target ({how})"
        );
    }
    if let Some(r) = &run.trace_reuse {
        let measured = run
            .server_metrics
            .as_ref()
            .and_then(|m| m.prefix_cache_hit_rate)
            .map_or("not reported by the server".to_string(), |h| {
                format!("{:.1} %", h * 100.0)
            });
        let _ = writeln!(
            o,
            "  trace: {} rows, {} blocks; ideal prefix hit rate {:.1} % (blocks whose whole prefix an earlier request sent: an unbounded cache); server's measured hit rate {measured}",
            r.rows,
            r.blocks,
            r.ideal_hit_rate * 100.0
        );
    }
    if let Some(r) = &run.reset {
        let _ = writeln!(o, "  reset before the run: {} ({:.0} ms)", r.how, r.ms);
    }
    if let Some(i) = &run.idle_round_trip {
        let _ = writeln!(o, "  {}", super::server::idle_round_trip(i, &run.summary));
    }
    if let Some(line) = super::server::replies(&run.summary) {
        let _ = writeln!(o, "  {line}");
    }
    if let Some(m) = &run.server_metrics {
        let engine = m.engine.as_deref().unwrap_or("?");
        let text = super::server::describe(m);
        match (&m.warning, text.is_empty()) {
            (Some(w), true) => {
                let _ = writeln!(o, "  server metrics: none ({w})");
            }
            _ => {
                let _ = writeln!(
                    o,
                    "  server ({engine} metrics, {} scrapes): {text}",
                    m.scrapes
                );
            }
        }
        if let Some(g) = &m.gpu {
            let _ = writeln!(o, "  {}", super::server::gpu(g));
        }
    }
}

/// The latency table, a conversation's by-turn table, and the definitions.
fn latency(o: &mut String, s: &crate::model::summary::Summary) {
    let _ = writeln!(o);
    // Wider only when a longer name (answer_tpot) is shown.
    let w = s
        .latency
        .iter()
        .map(|l| l.name.name().len())
        .max()
        .unwrap_or(0)
        .max(10);
    let _ = writeln!(
        o,
        "  {:<w1$} {:>7} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "metric(ms)",
        "count",
        "mean",
        "p50",
        "p90",
        "p95",
        "p99",
        "p99.9",
        "max",
        w1 = w - 1
    );
    for l in &s.latency {
        let cells: Vec<String> = [l.mean, l.p50, l.p90, l.p95, l.p99, l.p999, l.max]
            .iter()
            .map(|v| match l.has_values() {
                true => format!("{:>10}", sig4(*v)),
                false => format!("{:>10}", "—"),
            })
            .collect();
        let _ = writeln!(o, "  {:<w$} {:>6} {}", l.name, l.count, cells.join(" "));
    }
    if !s.turns.is_empty() {
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "  {:<9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>14}",
            "turn", "sent", "ok", "ttft p50", "ttft p95", "e2e p50", "prompt tok"
        );
        for t in &s.turns {
            let prompt = t
                .prompt_tokens_mean
                .map_or("-".to_string(), |p| format!("{p:.0}"));
            let _ = writeln!(
                o,
                "  {:<9} {:>7} {:>7} {:>10} {:>10} {:>10} {:>14}",
                t.turn,
                t.sent,
                t.ok,
                sig4(t.ttft_p50_ms),
                sig4(t.ttft_p95_ms),
                sig4(t.e2e_p50_ms),
                prompt
            );
        }
        let _ = writeln!(o, "  by turn: ms over that turn's successful measured requests; prompt tok = mean usage.prompt_tokens (the history grows each turn). Gate a turn with `ttft.p50@turn1`, later turns with `ttft.p50@turn2+`.");
    }
    let _ = writeln!(o);
    for l in &s.latency {
        let _ = writeln!(o, "  {:<w1$} {}", l.name, l.definition, w1 = w - 1);
    }
    let _ = writeln!(o, "  All latencies in ms over successful measured requests (send_lag, queue: every measured request); percentiles are type 7 (numpy's and vLLM's) over HDR-histogram values (3 significant digits).");
}

/// The optimization switches always shown for a simulator run.
const SIM_HEADLINE: &[&str] = &[
    "profile",
    "prefix_cache",
    "chunked_prefill",
    "quant",
    "kv_quant",
    "spec",
    "tp",
];

/// `vars` for the header. A simulator run records every engine option; show the switches,
/// whatever differs from the profile's defaults, and the user's own vars.
fn vars_lines(vars: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    if vars.get("target").map(String::as_str) != Some("bench-sim") {
        if !vars.is_empty() {
            let v: Vec<String> = vars.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push(format!("vars {}", v.join(" ")));
        }
        return out;
    }
    let profile = vars.get("profile").cloned().unwrap_or_default();
    let defaults: std::collections::BTreeMap<String, String> =
        crate::sim::SimOptions::profile(&profile)
            .map(|o| o.entries().into_iter().collect())
            .unwrap_or_default();
    let mut shown = Vec::new();
    let mut user = Vec::new();
    for (k, v) in vars {
        if k == "target" {
            continue;
        }
        match defaults.get(k) {
            Some(d) if SIM_HEADLINE.contains(&k.as_str()) || d != v => {
                shown.push(format!("{k}={v}"))
            }
            Some(_) => {}
            None => user.push(format!("{k}={v}")),
        }
    }
    out.push(format!(
        "embedded simulator (a model of an engine, not a measurement): {}",
        shown.join(" ")
    ));
    if !user.is_empty() {
        out.push(format!("vars {}", user.join(" ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::{record, run_of, scenario};

    #[test]
    fn the_requests_line_says_how_connections_went() {
        let mut run = run_of(vec![record(0, Outcome::Ok)], scenario(""), 1);
        let c = &mut run.summary.counts;
        (c.retried, c.connections, c.reuse_stopped_at) = (1, Some(2), Some(2));
        let out = render(&run);
        assert!(
            out.contains("; 1 retried after a closed keep-alive connection; 2 connections opened; none reused after request 2 (the server closes them after each answer)\n"),
            "{out}"
        );
        run.summary.counts.reuse_stopped_at = None;
        assert!(!render(&run).contains("none reused"));
    }

    #[test]
    fn snapshot() {
        let mut rs: Vec<_> = (0..4).map(|i| record(i, Outcome::Ok)).collect();
        rs[3].outcome = Outcome::Http(503);
        let mut run = run_of(rs, scenario("[slo]\nttft_ms = 100"), 2);
        run.scenario_name = "demo".into();
        run.vars = [("quant".to_string(), "int8".to_string())].into();
        let expected = "\
bench run demo — complete
  endpoint http://127.0.0.1:1/v1  model m  api chat
  vars quant=int8
  requests: 4 sent, 3 ok, 1 errors (http_503 1), 0 aborted; 0 warmup excluded
  throughput: 56.60 req/s, 566.0 output tok/s, 6226.4 total tok/s over 0.05 s; peak concurrency 2; goodput 56.60 req/s (3 of 3 met the SLOs)
  tokens: 300 prompt (server usage), 30 output; 0 with output ≠ max_tokens; 0 without usage

  metric(ms)   count       mean        p50        p90        p95        p99      p99.9        max
  ttft            3      20.01      20.01      20.01      20.01      20.01      20.01      20.01
  tpot            3      3.333      3.333      3.333      3.333      3.333      3.333      3.333
  itl             0          —          —          —          —          —          —          —
  e2e             3      50.00      50.00      50.00      50.00      50.00      50.00      50.00
  send_lag        4      0.010      0.010      0.010      0.010      0.010      0.010      0.010
  queue           4      0.000      0.000      0.000      0.000      0.000      0.000      0.000

  ttft      intended send → first chunk with generated text (reasoning or answer)
  tpot      (e2e − ttft) / (output_tokens − 1), requests with > 1 output token
  itl       gap between consecutive chunks with generated text (per chunk)
  e2e       intended send → last chunk with generated text
  send_lag  actual send − intended send − queue (client lateness)
  queue     wait for a max_concurrency slot
  All latencies in ms over successful measured requests (send_lag, queue: every measured request); percentiles are type 7 (numpy's and vLLM's) over HDR-histogram values (3 significant digits).
";
        assert_eq!(render(&run), expected);
    }
}
