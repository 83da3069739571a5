//! `bench diagnose`: the symptom → technique decision tree (docs/optimization.md) applied to one run, in the
//! recommended order (11.2): stability → TTFT → TPOT → tail latency → capacity.
//!
//! Each rule below is one row of that table: the symptom and its threshold, the server
//! metric that splits it into causes, and the techniques to try, cheapest first. What counts as
//! "high" is the scenario's SLO where one is set, else the defaults in [`Limits`]. Known
//! conflicts (11.2) are checked against what the run's `vars` already enable; vars use the
//! simulator's keys (`quant`, `spec`, `draft_quant`, `prefix_cache`, `tp`, …), which real-engine
//! runs can set with `--var`.

use crate::model::diagnosis::{Area, Finding, Limits};
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::scenario::{LoadMode, Workload};
use crate::model::server::ServerMetrics;

mod ttft;

use ttft::ttft;

fn var<'a>(run: &'a RunResult, k: &str) -> Option<&'a str> {
    run.vars.get(k).map(String::as_str)
}

fn on(run: &RunResult, k: &str) -> bool {
    matches!(var(run, k), Some(v) if v != "off" && v != "none" && v != "0" && v != "false")
}

fn list(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Conflicts of 11.2 against the enabled techniques.
fn conflicts(run: &RunResult, sm: Option<&ServerMetrics>) -> Vec<String> {
    let mut out = Vec::new();
    let quantized = matches!(var(run, "quant"), Some("int4" | "int8" | "fp8"));
    let draft_quantized = var(run, "draft_quant").is_none_or(|d| d == "same");
    let acceptance = sm.and_then(|m| m.spec_acceptance_rate);
    if on(run, "spec") {
        if let Some(a) = acceptance.filter(|a| *a < Limits::MIN_ACCEPTANCE) {
            let why = if quantized && draft_quantized {
                format!(
                    " (quant={} applies to the draft)",
                    var(run, "quant").unwrap_or("")
                )
            } else {
                String::new()
            };
            out.push(format!("speculation × quantization: acceptance {a:.2} < {}{why} — speculation no longer pays; keep the draft in high precision (draft_quant=none) or turn speculation off", Limits::MIN_ACCEPTANCE));
        } else if quantized && draft_quantized {
            out.push(format!("speculation × quantization: the draft is quantized ({}) — re-measure acceptance; below 0.5 speculation no longer pays", var(run, "quant").unwrap_or("")));
        }
        if run.summary.throughput.peak_concurrency >= 32 {
            out.push(format!("speculation × continuous batching: at concurrency {} verification competes with new requests for scheduler slots; speculation pays at low concurrency", run.summary.throughput.peak_concurrency));
        }
    }
    if on(run, "pd") && on(run, "prefix_cache") {
        out.push("PD disaggregation × prefix caching: cached KV lives on the prefill instance; without a shared KV connector or prefix-aware routing decode cannot reuse it".into());
    }
    if var(run, "tp")
        .and_then(|t| t.parse::<u32>().ok())
        .unwrap_or(1)
        > 1
        && matches!(var(run, "quant"), Some("int4" | "int8"))
    {
        out.push("TP × quantization: de/re-quantization around all-reduce and small per-GPU tiles — quantize first, then shard, and prefer FP8".into());
    }
    out
}

/// A latency's p50, p95 and p99 (ms), when it has values.
fn quantiles(run: &RunResult, m: Latency) -> Option<(f64, f64, f64)> {
    let l = run.summary.latency(m)?;
    (l.count > 0).then_some((l.p50, l.p95, l.p99))
}

pub fn diagnose(run: &RunResult) -> Vec<Finding> {
    let sm = run.server_metrics.as_ref().filter(|m| m.engine.is_some());
    let known_conflicts = conflicts(run, sm);
    let mut out = Vec::new();

    stability(run, sm, &mut out);
    ttft(run, sm, &known_conflicts, &mut out);
    tpot(run, sm, &known_conflicts, &mut out);
    tail(run, sm, &mut out);
    capacity(run, &mut out);
    out.sort_by_key(|f| f.area);
    out
}

/// The stability row of the decision tree (first: an OOM or an error storm erases every gain).
fn stability(run: &RunResult, sm: Option<&ServerMetrics>, out: &mut Vec<Finding>) {
    let c = &run.summary.counts;
    // 1. Stability first: an OOM or error storm destroys every gain.
    let errors: u64 = c.errors.values().sum();
    if c.sent > 0 && errors as f64 / c.sent as f64 > Limits::ERROR_RATE {
        let kinds: Vec<String> = c.errors.iter().map(|(k, n)| format!("{k} {n}")).collect();
        let mut evidence = vec![format!(
            "{errors} of {} requests failed ({:.1} %): {}",
            c.sent,
            errors as f64 / c.sent as f64 * 100.0,
            kinds.join(", ")
        )];
        if let Some(r) = sm.and_then(|m| m.admission_rejections).filter(|r| *r > 0.0) {
            evidence.push(format!("the server refused {r:.0} requests at admission (a queue limit such as vLLM's --max-num-queued-requests), not a crash"));
        }
        out.push(Finding {
            area: Area::Stability,
            title: "errors — fix stability before tuning anything".into(),
            evidence,
            techniques: list(&["check the server log for out-of-memory; if so: weight quantization → KV quantization → TP (turns memory into communication); chunked prefill for activation peaks", "for 429/503: admission limits or capacity (replicas)"]),
            conflicts: vec![],
        });
    }
}

/// The TPOT row of the decision tree.
fn tpot(
    run: &RunResult,
    sm: Option<&ServerMetrics>,
    known_conflicts: &[String],
    out: &mut Vec<Finding>,
) {
    let slo = &run.scenario.slo;
    // 3. TPOT.
    let tpot_limit = slo.tpot_ms.unwrap_or(Limits::TPOT_P95_MS);
    let tpot_p95 = quantiles(run, Latency::Tpot).map(|q| q.1);
    if let Some(t95) = tpot_p95.filter(|v| *v > tpot_limit) {
        let mut evidence = vec![format!("TPOT p95 {t95:.1} ms > {tpot_limit:.0} ms")];
        if let Some(a) = sm.and_then(|m| m.spec_acceptance_rate) {
            evidence.push(format!("spec-decode acceptance {a:.2}"));
        }
        out.push(Finding {
            area: Area::Tpot,
            title: "TPOT high — decode is memory-bandwidth bound".into(),
            evidence,
            techniques: list(&[
                "weight quantization (4-bit)",
                "KV quantization / compression",
                "speculative decoding (EAGLE-3, 2–3× tok/s; best at low concurrency)",
                "preemption / max_num_seqs tuning",
                "tensor parallelism",
            ]),
            conflicts: known_conflicts.to_vec(),
        });
    }
}

/// The tail-latency row of the decision tree.
fn tail(run: &RunResult, sm: Option<&ServerMetrics>, out: &mut Vec<Finding>) {
    // 4. Tail latency.
    let ratio = |m: Latency| {
        let (p50, _, p99) = quantiles(run, m)?;
        (p50 > 0.0).then(|| p99 / p50)
    };
    let worst = [
        (Latency::Ttft, ratio(Latency::Ttft)),
        (Latency::E2e, ratio(Latency::E2e)),
        (Latency::Itl, ratio(Latency::Itl)),
    ]
    .into_iter()
    .filter_map(|(m, r)| r.map(|r| (m, r)))
    .max_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((metric, r)) = worst.filter(|(_, r)| *r > Limits::TAIL_RATIO) {
        let mut evidence = vec![format!(
            "{metric} p99/p50 = {r:.1} (> {})",
            Limits::TAIL_RATIO
        )];
        let preempt = sm.and_then(|m| m.preemptions).filter(|p| *p > 0.0);
        let long = matches!(run.scenario.workload, Workload::LongShortMix { .. })
            || run.requests.iter().any(|q| q.class == "long");
        let (cause, techniques): (&str, &[&str]) = if let Some(p) = preempt {
            evidence.push(format!("{p:.0} preemptions during the run"));
            if let Some(k) = sm.and_then(|m| m.kv_usage_peak) {
                evidence.push(format!("KV usage peak {:.0} %", k * 100.0));
            }
            (
                "preemptions",
                &[
                    "reserve KV budget / lower max_num_seqs",
                    "weight or KV quantization for more KV room",
                    "request length caps and timeouts",
                    "PD disaggregation",
                ],
            )
        } else if long {
            evidence.push("very long requests are mixed into the traffic".into());
            (
                "long requests in the mix",
                &[
                    "chunked prefill",
                    "request length caps (max_model_len) and timeouts",
                    "SLO-aware scheduling",
                    "PD disaggregation (structural)",
                ],
            )
        } else {
            (
                "cause not identified",
                &[
                    "check whether it happens only at peak load",
                    "SLO-aware scheduling",
                    "reserved KV budget / lower max_num_seqs",
                ],
            )
        };
        out.push(Finding {
            area: Area::Tail,
            title: format!("tail latency — {cause}"),
            evidence,
            techniques: list(techniques),
            conflicts: vec![],
        });
    }
}

/// The capacity row: an open loop the server cannot keep up with.
fn capacity(run: &RunResult, out: &mut Vec<Finding>) {
    // 5. Capacity: an open loop the server cannot keep up with.
    if let Some((offered, achieved, within)) = keep_up(run) {
        if achieved < Limits::KEEP_UP * offered {
            let nominal = match run.scenario.load.mode {
                LoadMode::Open { rate_rps, .. } => format!(" (the scenario's rate {rate_rps:.2})"),
                LoadMode::Closed { .. } => String::new(),
            };
            out.push(Finding {
                area: Area::Capacity,
                title: "throughput below the offered load".into(),
                evidence: vec![format!(
                    "requests completed at {achieved:.2} req/s while they arrived at {offered:.2} req/s{nominal} ({:.0} %){within}: completions spread out longer than the arrivals, so requests queued",
                    achieved / offered * 100.0
                )],
                techniques: list(&[
                    "continuous-batching parameters (max_num_seqs, max_num_batched_tokens)",
                    "prefix cache + prefix-aware routing",
                    "quantization / speculative decoding",
                    "TP / PP / EP",
                    "PD disaggregation for long-sequence mixes",
                ]),
                conflicts: vec![],
            });
        }
    }
}

/// An open loop's arrival rate as sent — (n − 1) over the span from the first to the last
/// intended send of the measured requests — and its completion rate over the span from the
/// first to the last successful completion (req/s), and where they were taken. A server that
/// keeps up completes requests as they arrive, each about one latency later, so the two spans
/// match; the drain after the last arrival, which a whole-run window counts, is in neither.
/// Inside the run's steady state when it has one (the warm-up cut off too), else over every
/// measured request. `None` for a closed loop or a run without records or with fewer than 3
/// successful requests.
fn keep_up(run: &RunResult) -> Option<(f64, f64, String)> {
    if !matches!(run.scenario.load.mode, LoadMode::Open { .. }) {
        return None;
    }
    if let Some(s) = run.windows.as_ref().and_then(|w| w.steady.as_ref()) {
        if s.offered_rps > 0.0 && s.requests >= 3 {
            let within = format!(
                " in the steady state ({:.1}–{:.1} s, {} requests)",
                s.start_s, s.end_s, s.requests
            );
            return Some((s.offered_rps, s.achieved_rps, within));
        }
    }
    let measured: Vec<_> = run.requests.iter().filter(|r| !r.warmup).collect();
    let span = |v: &mut dyn Iterator<Item = u64>| {
        let (lo, hi, n) = v.fold((u64::MAX, 0, 0u64), |(lo, hi, n), t| {
            (lo.min(t), hi.max(t), n + 1)
        });
        (n >= 3 && hi > lo).then(|| (n - 1) as f64 / ((hi - lo) as f64 / 1e6))
    };
    let offered = span(&mut measured.iter().map(|r| r.intended_us))?;
    let achieved = span(
        &mut measured
            .iter()
            .filter(|r| r.outcome.is_ok())
            .map(|r| r.end_us),
    )?;
    Some((offered, achieved, String::new()))
}

#[cfg(test)]
mod tests;
