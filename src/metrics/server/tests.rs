//! The name mappings on exposition text shaped like each engine's documentation
//! (`tests/fixtures/metrics/`), before and after a run.

use super::*;
use crate::output::server::describe;

fn fixture(name: &str) -> Scrape {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/metrics")
        .join(name);
    promtext::parse(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn pair(engine: &str) -> ServerMetrics {
    summarize(
        "http://x/metrics",
        &[
            fixture(&format!("{engine}-before.txt")),
            fixture(&format!("{engine}-after.txt")),
        ],
        None,
    )
}

#[test]
fn vllm_deltas_rates_and_histogram_quantiles() {
    let m = pair("vllm");
    assert_eq!(m.engine.as_deref(), Some("vllm"));
    assert!(
        (m.prefix_cache_hit_rate.unwrap() - 0.61).abs() < 1e-9,
        "Δhits 6100 / Δqueries 10000"
    );
    assert!((m.spec_acceptance_rate.unwrap() - 0.71).abs() < 1e-9);
    assert_eq!(m.preemptions, Some(3.0));
    assert!((m.queue_time_mean_s.unwrap() - 0.035).abs() < 1e-9);
    // 50 of 100 at ≤ 10 ms: the median is in the first bucket, so all that is known is
    // "≤ 10 ms"; p95 lies in (0.1, 1], a bucket wider than the 0.55 interpolation would
    // invent, so it is reported as the bucket (no made-up figures).
    assert!((m.queue_time_p50_s.unwrap() - 0.01).abs() < 1e-9);
    assert_eq!(m.bucket_bounds.get("queue_time_p50_s"), Some(&(0.0, 0.01)));
    assert!((m.queue_time_p95_s.unwrap() - 1.0).abs() < 1e-9);
    assert_eq!(m.bucket_bounds.get("queue_time_p95_s"), Some(&(0.1, 1.0)));
    assert!(
        describe(&m).contains("queue time mean 35.0 ms p95 100.0–1000 ms (one histogram bucket)"),
        "{}",
        describe(&m)
    );
    assert_eq!(
        (m.kv_usage_peak, m.running_peak, m.waiting_peak),
        (Some(0.42), Some(3.0), Some(1.0))
    );
    assert_eq!(m.prompt_tokens, Some(10000.0));
    // Decode time: Δsum 40 s / Δcount 100; p95 (rank 95 of Δbuckets 10, 98, 100) in
    // (0.3, 0.5], a bucket narrower than the value, so an estimate: 0.3 + 0.2 × 85/88.
    assert!((m.decode_time_mean_s.unwrap() - 0.4).abs() < 1e-9);
    assert!((m.decode_time_p95_s.unwrap() - (0.3 + 0.2 * 85.0 / 88.0)).abs() < 1e-9);
    assert!(!m.bucket_bounds.contains_key("decode_time_p95_s"));
    assert_eq!(m.cached_prompt_tokens, Some(6100.0));
    assert!(
        describe(&m)
            .contains("decode time mean 400.0 ms, 6100 of 10000 prompt tokens from cache (61 %)"),
        "{}",
        describe(&m)
    );
    assert_eq!(
        describe(&m).split(", ").next(),
        Some("prefix hit rate 61 %")
    );
}

#[test]
fn sglang_uses_its_gauges() {
    let m = pair("sglang");
    assert_eq!(m.engine.as_deref(), Some("sglang"));
    assert_eq!(m.kv_usage_peak, Some(0.61));
    assert_eq!(m.running_peak, Some(28.0));
    assert!((m.spec_mean_accept_length.unwrap() - 2.5).abs() < 1e-9);
    assert_eq!(m.preemptions, None, "SGLang exports no preemption counter");
    assert_eq!(m.prompt_tokens, Some(100000.0));
}

#[test]
fn llamacpp_counts_cached_prompt_tokens_apart() {
    let m = pair("llamacpp");
    assert_eq!(m.engine.as_deref(), Some("llama.cpp"));
    assert_eq!(
        (m.running_peak, m.waiting_peak, m.kv_usage_peak),
        (Some(8.0), Some(2.0), Some(0.55))
    );
    assert_eq!(m.generation_tokens, Some(1024.0));
    // prompt_tokens_total excludes cached tokens: 15000 cached of 5000 + 15000 looked up, and
    // the prompt tokens the requests carried are the two added, as vLLM counts them.
    assert!((m.prefix_cache_hit_rate.unwrap() - 0.75).abs() < 1e-9);
    assert_eq!(m.prompt_tokens, Some(20000.0));
    assert!(
        describe(&m).contains("15000 of 20000 prompt tokens from cache (75 %)"),
        "{}",
        describe(&m)
    );
    assert_eq!((m.queue_time_mean_s, m.preemptions), (None, None));
}

#[test]
fn nothing_scraped_is_a_warning_not_a_failure() {
    let m = summarize("http://x/metrics", &[], None);
    assert!(m.warning.is_some() && m.engine.is_none());
    let other = promtext::parse("process_cpu_seconds_total 1\n").unwrap();
    assert!(summarize("u", &[other], None)
        .warning
        .unwrap()
        .contains("no vLLM"));
}

#[test]
fn coverage_names_a_renamed_family_and_tolerates_switched_off_features() {
    // A vLLM scrape where `kv_cache_usage_perc` is still the pre-V1 name (accepted) and
    // `num_preemptions` was renamed (missing); no speculative decoding (absent, not missing).
    let text = "\
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running 0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting 0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc 0
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total 0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total 0
# TYPE vllm:num_preempted_requests_total counter
vllm:num_preempted_requests_total 0
";
    let c = coverage(&promtext::parse(text).unwrap()).unwrap();
    assert_eq!(c.engine, "vllm");
    let row = |f: &str| c.rows.iter().find(|r| r.figure == f).unwrap();
    assert_eq!(
        row("kv_usage").found.as_deref(),
        Some("vllm:gpu_cache_usage_perc")
    );
    assert_eq!(
        row("prefix_queries").found.as_deref(),
        Some("vllm:prefix_cache_queries")
    );
    assert!(row("preemptions").found.is_none() && row("preemptions").required);
    assert!(row("spec_draft").found.is_none() && !row("spec_draft").required);
    let missing: Vec<&str> = c.missing().iter().map(|r| r.figure.as_str()).collect();
    assert!(missing.contains(&"preemptions") && !missing.contains(&"spec_draft"));
    let text = crate::output::server::coverage(&c, "http://x/metrics");
    assert!(text.contains("MISSING  vllm:num_preemptions"), "{text}");
    assert!(coverage(&promtext::parse("# TYPE up gauge\nup 1\n").unwrap()).is_none());
}

#[test]
fn deferred_waiting_is_told_from_waiting_for_capacity() {
    let scrape = |deferred: f64| {
        promtext::parse(&format!(
            "# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 5\n# TYPE vllm:num_requests_waiting_by_reason gauge\nvllm:num_requests_waiting_by_reason{{reason=\"capacity\"}} {}\nvllm:num_requests_waiting_by_reason{{reason=\"deferred\"}} {deferred}\n",
            5.0 - deferred
        ))
        .unwrap()
    };
    let m = summarize(
        "http://x/metrics",
        &[scrape(0.0), scrape(3.0), scrape(1.0)],
        None,
    );
    assert_eq!(
        (m.waiting_peak, m.waiting_deferred_peak),
        (Some(5.0), Some(3.0))
    );
    assert!(describe(&m).contains("deferred peak 3"), "{}", describe(&m));
}

#[test]
fn an_interpolated_quantile_no_request_could_have_had_is_a_bound() {
    // 100 requests queued: 90 under 240 s, 10 in the 480–960 s bucket. Interpolated, the p95
    // is 720 s; in a run whose scrapes spanned 348 s no request queued that long, so what the
    // buckets support is the bound "≤ 960 s".
    let text = |n: f64| {
        format!(
            "# TYPE vllm:request_queue_time_seconds histogram\n\
vllm:request_queue_time_seconds_bucket{{le=\"240.0\"}} {a}\n\
vllm:request_queue_time_seconds_bucket{{le=\"480.0\"}} {a}\n\
vllm:request_queue_time_seconds_bucket{{le=\"960.0\"}} {n}\n\
vllm:request_queue_time_seconds_bucket{{le=\"+Inf\"}} {n}\n\
vllm:request_queue_time_seconds_sum {s}\n\
vllm:request_queue_time_seconds_count {n}\n\
# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n",
            a = n * 0.9,
            s = n * 100.0
        )
    };
    let scrapes = [
        promtext::parse(&text(0.0)).unwrap(),
        promtext::parse(&text(100.0)).unwrap(),
    ];
    let free = summarize("u", &scrapes, None);
    assert!(
        (free.queue_time_p95_s.unwrap() - 720.0).abs() < 1e-6,
        "{free:?}"
    );
    let m = summarize("u", &scrapes, Some(348.0));
    assert_eq!(m.queue_time_p95_s, Some(960.0), "{m:?}");
    assert_eq!(
        m.bucket_bounds.get("queue_time_p95_s"),
        Some(&(480.0, 960.0))
    );
}
