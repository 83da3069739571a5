//! The TTFT row of the decision tree: TTFT high → repeated prefixes with the cache off (or
//! missing) → prefix caching; the server's queue most of TTFT → scheduling and capacity; its
//! prefill most of TTFT → prefill compute.
//!
//! The split is read from the replies first — each request's own prefill from the server's
//! clock on its reply, TTFT − prefill less the run's idle round trip (the network and the
//! client, measured before the run) as its queue, and the
//! cached prompt tokens summed over this run's replies — and from the server's cumulative
//! metrics only where the replies said nothing.

use super::{on, quantiles};
use crate::model::diagnosis::{Area, Finding, Limits};
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::scenario::Workload;
use crate::model::server::ServerMetrics;

/// Where TTFT went, in ms, and the prefix-cache hit rate (0–1), each if known.
struct Split {
    queue: Option<f64>,
    prefill: Option<f64>,
    hit: Option<f64>,
    /// How the replies' clock is named in evidence (empty without one).
    clock: Option<(String, u64)>,
}

impl Split {
    fn of(run: &RunResult, sm: Option<&ServerMetrics>) -> Split {
        let mean = |m| {
            run.summary
                .latency(m)
                .filter(|l| l.count > 0)
                .map(|l| l.mean)
        };
        let server = |f: fn(&ServerMetrics) -> Option<f64>| sm.and_then(f).map(|s| s * 1000.0);
        Split {
            // TTFT − prefill less the idle round trip: the network and client are not queue.
            queue: mean(Latency::TtftRest)
                .map(|r| (r - run.idle_round_trip.as_ref().map_or(0.0, |i| i.median_ms)).max(0.0))
                .or_else(|| server(|m| m.queue_time_mean_s)),
            prefill: mean(Latency::Prefill).or_else(|| server(|m| m.prefill_time_mean_s)),
            hit: match &run.summary.tokens.cached {
                Some(c) => Some(c.hit_rate),
                None => sm.and_then(|m| m.prefix_cache_hit_rate),
            },
            clock: run
                .summary
                .server_clock
                .as_ref()
                .map(|k| (k.source.clone(), k.requests)),
        }
    }

    /// " (per request: …, from llama.cpp timings on 40 replies)", or nothing.
    fn per_request(&self, what: &str) -> String {
        self.clock.as_ref().map_or(String::new(), |(source, n)| {
            format!(" (per request: {what}, from {source} on {n} replies)")
        })
    }
}

type Cause = (&'static str, &'static [&'static str]);

pub(super) fn ttft(
    run: &RunResult,
    sm: Option<&ServerMetrics>,
    known_conflicts: &[String],
    out: &mut Vec<Finding>,
) {
    let ttft_limit = run.scenario.slo.ttft_ms.unwrap_or(Limits::TTFT_P95_MS);
    let Some(t95) = quantiles(run, Latency::Ttft)
        .map(|q| q.1)
        .filter(|v| *v > ttft_limit)
    else {
        return;
    };
    let ttft_mean = run.summary.latency(Latency::Ttft).map_or(t95, |l| l.mean);
    let mut evidence = vec![format!("TTFT p95 {t95:.0} ms > {ttft_limit:.0} ms")];
    let split = Split::of(run, sm);
    let most = |v: Option<f64>| v.filter(|v| *v > Limits::CAUSE_SHARE * ttft_mean);
    let (cause, techniques) = cause(run, sm, &split, ttft_mean, &mut evidence);
    // Prefill compute is named whenever the server's own prefill time is most of TTFT,
    // whatever the first cause was (a cache that is off *and* slow prefill are two
    // findings, and the second decides what to try after turning the cache on).
    let mut also = "";
    if cause != "prefill compute" {
        if let Some(p) = most(split.prefill) {
            evidence.push(format!(
                "server prefill time mean {p:.0} ms of TTFT mean {ttft_mean:.0} ms: prefill compute is most of it (chunked prefill, faster attention/GEMM kernels, PD disaggregation)"
            ));
            also = ", and prefill compute";
        }
    }
    out.push(Finding {
        area: Area::Ttft,
        title: format!("TTFT high — {cause}{also}"),
        evidence,
        techniques: techniques.iter().map(|s| s.to_string()).collect(),
        conflicts: known_conflicts.to_vec(),
    });
}

/// The first cause the split names, with its evidence.
fn cause(
    run: &RunResult,
    sm: Option<&ServerMetrics>,
    split: &Split,
    ttft_mean: f64,
    evidence: &mut Vec<String>,
) -> Cause {
    let most = |v: Option<f64>| v.filter(|v| *v > Limits::CAUSE_SHARE * ttft_mean);
    // Repeated prefixes: a shared-prefix workload, or a trace whose own blocks repeat.
    let shared = matches!(run.scenario.workload, Workload::SharedPrefix { .. })
        || run
            .trace_reuse
            .is_some_and(|r| r.ideal_hit_rate >= Limits::LOW_HIT_RATE);
    if shared && (!on(run, "prefix_cache") || split.hit.is_some_and(|h| h < Limits::LOW_HIT_RATE)) {
        if let Some(h) = split.hit {
            let own = match &run.summary.tokens.cached {
                Some(c) => format!(
                    " (this run's: cached/prompt tokens summed from {} replies)",
                    c.requests
                ),
                None => String::new(),
            };
            evidence.push(format!(
                "prefix-cache hit rate {:.0} % on a workload of repeated prefixes{own}",
                h * 100.0
            ));
        }
        if !on(run, "prefix_cache") {
            evidence.push("vars: prefix_cache is off".into());
        }
        return (
            "repeated prefixes, cache off",
            &[
                "prefix caching (a flag)",
                "prefix-aware routing across replicas",
                "chunked prefill",
                "PD disaggregation",
            ],
        );
    }
    if let Some(q) = most(split.queue) {
        evidence.push(format!(
            "server queue time mean {q:.0} ms of TTFT mean {ttft_mean:.0} ms{}",
            split.per_request(match &run.idle_round_trip {
                Some(_) => "TTFT − the server's prefill − the idle round trip",
                None => "TTFT − the server's prefill, its queue with the network and client",
            })
        ));
        if let Some(w) = sm.and_then(|m| m.waiting_peak) {
            evidence.push(format!("waiting peak {w:.0}"));
        }
        if let Some(d) = sm
            .and_then(|m| m.waiting_deferred_peak)
            .filter(|d| *d > 0.0)
        {
            evidence.push(format!("{d:.0} of the waiting requests were deferred (KV transfer, LoRA budget, a blocked request), not waiting for capacity: look at the KV-transfer path (PD disaggregation) or the LoRA budget before adding capacity"));
        }
        return (
            "queueing",
            &[
                "prefix caching if prompts repeat (a flag)",
                "queue/capacity check: max_num_seqs if KV allows, more replicas",
                "chunked prefill",
                "PD disaggregation",
            ],
        );
    }
    if let Some(p) = most(split.prefill) {
        evidence.push(format!(
            "server prefill time mean {p:.0} ms of TTFT mean {ttft_mean:.0} ms{}",
            split.per_request("the server's prefill")
        ));
        return (
            "prefill compute",
            &[
                "prefix caching (a flag)",
                "chunked prefill",
                "FlashAttention / faster GEMM kernels (30–60 % faster prefill)",
                "PD disaggregation",
            ],
        );
    }
    if sm.is_none() && split.clock.is_none() {
        evidence.push("no server metrics and no server clock on the replies: queueing and prefill cannot be told apart (pass --metrics-url)".into());
    }
    (
        "cause not split by server metrics",
        &[
            "prefix caching (a flag)",
            "queue/capacity check",
            "chunked prefill",
            "FlashAttention / GEMM",
            "PD disaggregation",
        ],
    )
}
