use super::*;
use crate::model::record::RequestRecord;
use crate::output::diagnose::render;
use crate::testkit::{lognormal_run, rng};

fn base(median_ms: f64) -> RunResult {
    lognormal_run(400, median_ms, 0.0, &mut rng(1))
}

/// A slow-TTFT run whose replies carried the server's clock: `prefill_share` of each
/// request's TTFT was prefill, and a quarter of its prompt was cached.
fn clocked(prefill_share: f64) -> RunResult {
    let prefill = move |t: u64| (t as f64 * prefill_share) as u64;
    crate::testkit::clocked(base(900.0), prefill, Some(0), |r| RequestRecord {
        cached_tokens: Some(25),
        prompt_tokens: Some(100),
        ..r
    })
}

#[test]
fn the_replies_own_clock_splits_ttft_without_server_metrics() {
    let f = diagnose(&clocked(0.8));
    assert_eq!(f[0].title, "TTFT high — prefill compute");
    assert!(
        f[0].evidence[1]
            .contains("per request: the server's prefill, from llama.cpp timings on 400 replies"),
        "{:?}",
        f[0].evidence
    );
    let f = diagnose(&clocked(0.1));
    assert_eq!(f[0].title, "TTFT high — queueing");
    let mut r = clocked(0.1);
    r.scenario.workload = Workload::SharedPrefix {
        prefixes: 2,
        prefix_tokens: 8,
        suffix_tokens: crate::model::dist::LengthDist::Fixed { value: 4 },
        output_tokens: crate::model::dist::LengthDist::Fixed { value: 4 },
    };
    r.vars.insert("prefix_cache".into(), "on".into());
    let f = diagnose(&r);
    assert_eq!(f[0].title, "TTFT high — repeated prefixes, cache off");
    assert!(f[0].evidence[1]
        .starts_with("prefix-cache hit rate 25 % on a workload of repeated prefixes (this run's"));
}

#[test]
fn queueing_prefill_and_cache_split_ttft() {
    let mut r = base(900.0);
    r.server_metrics = Some(ServerMetrics {
        engine: Some("vllm".into()),
        queue_time_mean_s: Some(0.7),
        prefill_time_mean_s: Some(0.1),
        waiting_peak: Some(40.0),
        ..Default::default()
    });
    let f = diagnose(&r);
    assert_eq!(f[0].title, "TTFT high — queueing");
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("queue time mean 700 ms")));
    assert!(!f[0].evidence.iter().any(|e| e.contains("deferred")));
    r.server_metrics.as_mut().unwrap().waiting_deferred_peak = Some(12.0);
    let f = diagnose(&r);
    assert!(
        f[0].evidence
            .iter()
            .any(|e| e.contains("12 of the waiting requests were deferred")),
        "{:?}",
        f[0].evidence
    );
    r.server_metrics.as_mut().unwrap().queue_time_mean_s = Some(0.05);
    r.server_metrics.as_mut().unwrap().prefill_time_mean_s = Some(0.8);
    assert_eq!(diagnose(&r)[0].title, "TTFT high — prefill compute");
    r.scenario.workload = Workload::SharedPrefix {
        prefixes: 2,
        prefix_tokens: 8,
        suffix_tokens: crate::model::dist::LengthDist::Fixed { value: 4 },
        output_tokens: crate::model::dist::LengthDist::Fixed { value: 4 },
    };
    r.vars.insert("prefix_cache".into(), "off".into());
    let f = diagnose(&r);
    // The cache that is off is named, and so is the prefill that takes most of
    // the TTFT (a real vLLM run: TTFT p50 28.5 s, prefill mean 23 s, only the cache named).
    assert_eq!(
        f[0].title,
        "TTFT high — repeated prefixes, cache off, and prefill compute"
    );
    assert!(f[0]
        .evidence
        .iter()
        .any(|e| e.contains("prefill time mean 800 ms")));
    assert_eq!(f[0].techniques[0], "prefix caching (a flag)");
    r.server_metrics.as_mut().unwrap().prefill_time_mean_s = Some(0.05);
    assert_eq!(
        diagnose(&r)[0].title,
        "TTFT high — repeated prefixes, cache off"
    );
}

#[test]
fn speculation_with_int4_and_low_acceptance_is_flagged() {
    let mut r = base(10.0);
    r.requests.iter_mut().for_each(|q| {
        q.tpot_us = Some(80_000.0);
    });
    let (summary, _) = resummarize(&r);
    r.summary = summary;
    r.vars.insert("spec".into(), "3".into());
    r.vars.insert("quant".into(), "int4".into());
    r.server_metrics = Some(ServerMetrics {
        engine: Some("vllm".into()),
        spec_acceptance_rate: Some(0.44),
        ..Default::default()
    });
    let f = diagnose(&r);
    let tpot = f.iter().find(|f| f.area == Area::Tpot).unwrap();
    assert!(
        tpot.conflicts.iter().any(|c| c.contains("acceptance 0.44")
            && c.contains("speculation no longer pays")
            && c.contains("draft")),
        "{:?}",
        tpot.conflicts
    );
}

#[test]
fn preemptions_explain_a_tail_and_errors_come_first() {
    let mut r = base(20.0);
    for (i, q) in r.requests.iter_mut().enumerate() {
        if i % 20 == 0 {
            q.e2e_us = Some(2_000_000);
            q.ttft_us = Some(1_500_000);
        }
        if i % 25 == 0 {
            q.outcome = crate::model::record::Outcome::Http(500);
        }
    }
    let (summary, _) = resummarize(&r);
    r.summary = summary;
    r.server_metrics = Some(ServerMetrics {
        engine: Some("vllm".into()),
        preemptions: Some(37.0),
        kv_usage_peak: Some(0.99),
        ..Default::default()
    });
    let f = diagnose(&r);
    assert_eq!(f[0].area, Area::Stability);
    let tail = f.iter().find(|f| f.area == Area::Tail).unwrap();
    assert_eq!(tail.title, "tail latency — preemptions");
    assert!(tail.evidence.iter().any(|e| e.contains("37 preemptions")));
    assert!(render(&r, &f).contains("try, cheapest first"));
}

/// An open-loop run of 40 requests arriving every `gap_ms`, each taking `e2e_ms(i)`.
fn open_run(gap_ms: u64, e2e_ms: impl Fn(u64) -> u64) -> RunResult {
    let records = (0..40)
        .map(|i| crate::model::record::RequestRecord {
            intended_us: i * gap_ms * 1000,
            sent_us: i * gap_ms * 1000,
            ttft_us: Some(10_000),
            e2e_us: Some(e2e_ms(i) * 1000),
            end_us: i * gap_ms * 1000 + e2e_ms(i) * 1000,
            ..crate::testkit::record(i, crate::model::record::Outcome::Ok)
        })
        .collect();
    let open = crate::config::scenario::parse(
        "name = \"open\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n[load]\nrate = 4\nrequests = 40\n",
        std::path::Path::new("open.toml"),
    )
    .unwrap();
    crate::testkit::run_of(records, open, 4)
}

#[test]
fn an_idle_servers_drain_is_no_capacity_shortfall_and_a_queue_is() {
    // Arrivals every 294 ms (3.40 req/s where the scenario says 4), answered in 700 ms:
    // the whole-run window with its drain reads 3.29 req/s, under 90 % of 4, yet the
    // server kept up.
    let idle = open_run(294, |_| 700);
    assert!(idle.summary.throughput.request_rps < 0.9 * 4.0);
    let f = diagnose(&idle);
    assert!(f.iter().all(|f| f.area != Area::Capacity), "{f:?}");
    // Each request waits 150 ms more than the one before: completions fall behind.
    let queued = open_run(294, |i| 700 + 150 * i);
    let f = diagnose(&queued);
    let c = f.iter().find(|f| f.area == Area::Capacity).unwrap();
    assert!(
        c.evidence[0].contains("arrived at 3.40 req/s"),
        "{:?}",
        c.evidence
    );
}

fn resummarize(
    r: &RunResult,
) -> (
    crate::model::summary::Summary,
    crate::metrics::summary::Histograms,
) {
    let data = crate::testkit::data(r.requests.clone(), 1);
    crate::metrics::summary::summarize(&data, &Default::default(), true)
}

/// The idle round trip measured before the run is the network and client, not queue: taken
/// off TTFT − prefill, a slow TTFT whose rest is mostly that floor names no queue.
#[test]
fn the_idle_round_trip_is_not_queue() {
    let idle = |ms: f64| crate::model::result::IdleRoundTrip {
        route: "/v1/models".into(),
        samples: 5,
        median_ms: ms,
        min_ms: ms,
        max_ms: ms,
    };
    let mut r = clocked(0.1);
    r.idle_round_trip = Some(idle(5.0));
    let f = diagnose(&r);
    assert_eq!(f[0].title, "TTFT high — queueing");
    assert!(
        f[0].evidence[1].contains("TTFT − the server's prefill − the idle round trip"),
        "{:?}",
        f[0].evidence
    );
    r.idle_round_trip = Some(idle(700.0));
    assert_ne!(diagnose(&r)[0].title, "TTFT high — queueing");
}
