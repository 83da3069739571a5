//! The server's own per-request clock, read from its replies: the simulator reports it in
//! llama.cpp's shape (`timings` on the last chunk) and in vLLM's (`metrics` on the usage
//! chunk), and writes the same figures to its truth log (`--sim-truth-log`). The client must
//! record each request's prefill and cached prompt tokens exactly as sent, split TTFT into
//! prefill and the rest without a negative rest, and sum the run's own prefix-cache hit rate
//! from the replies.

mod common;

/// A shared-prefix workload with the prefix cache on, so cached tokens vary by request.
fn scenario(dir: &std::path::Path, clock: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{clock}.toml"));
    std::fs::write(
        &p,
        format!(
            "name = \"clock\"\nseed = 3\n[request]\nfirst_token_timeout_s = 5\ntimeout_s = 20\n[workload]\ntype = \"shared_prefix\"\nprefixes = 2\nprefix_tokens = 256\nsuffix_tokens = 32\noutput_tokens = 8\n[load]\nconcurrency = 2\nrequests = 16\nwarmup = 2\n[sim]\nprefix_cache = true\nreply_clock = \"{clock}\"\n"
        ),
    )
    .unwrap();
    p
}

fn check(clock: &str, source: &str, named: &str) {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), clock);
    let (run, truth) = common::run_with_truth(&s, &[]);
    let (mut cached, mut prompt, mut some_cached) = (0, 0, false);
    for r in run["requests"].as_array().unwrap() {
        let t = &truth[&r["index"].as_u64().unwrap()];
        let k = &r["server"];
        assert_eq!(k["source"], source, "{r}");
        // Exactly what the server sent (ms with µs digits, back to µs).
        let prefill = k["prefill_us"].as_i64().unwrap();
        assert!(
            (prefill - t["server_prefill_us"].as_i64().unwrap()).abs() <= 1,
            "{r}\n{t}"
        );
        if clock == "vllm" {
            let q = k["queue_us"].as_i64().unwrap();
            assert!((q - t["server_queue_us"].as_i64().unwrap()).abs() <= 1);
        }
        assert_eq!(r["cached_tokens"], t["cached_tokens"], "{r}");
        // The server's prefill lies inside the TTFT the client timed.
        assert!(r["ttft_us"].as_i64().unwrap() >= prefill, "{r}\n{t}");
        if r["warmup"] == false {
            cached += r["cached_tokens"].as_u64().unwrap();
            prompt += r["prompt_tokens"].as_u64().unwrap();
            some_cached |= r["cached_tokens"].as_u64().unwrap() > 0;
        }
    }
    assert!(
        some_cached,
        "the shared prefixes were served from the cache"
    );
    let summary = &run["summary"];
    let c = &summary["tokens"]["cached"];
    assert_eq!(c["cached_tokens"].as_u64().unwrap(), cached);
    assert_eq!(c["prompt_tokens"].as_u64().unwrap(), prompt);
    assert_eq!(
        c["hit_rate"].as_f64().unwrap(),
        cached as f64 / prompt as f64
    );
    let k = &summary["server_clock"];
    assert_eq!(k["source"], named);
    assert_eq!(k["requests"], summary["counts"]["ok"]);
    assert_eq!(k["prefill_over_ttft"], 0);
    let names = common::latency_names(&run);
    assert!(names.iter().any(|n| n == "prefill") && names.iter().any(|n| n == "ttft_rest"));
    // The floor beside the split: idle round trips taken before the run.
    let i = &run["idle_round_trip"];
    assert_eq!(i["route"], "/v1/models");
    assert_eq!(i["samples"], 5);
    let ms = |k: &str| i[k].as_f64().unwrap();
    assert!(
        0.0 < ms("min_ms") && ms("min_ms") <= ms("median_ms") && ms("median_ms") <= ms("max_ms")
    );
    let csv = std::fs::read_to_string(dir.path().join("o/requests.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.contains(
        "cached_tokens,server_clock,server_queue_ms,server_prefill_ms,server_decode_ms,ttft_rest_ms"
    ));
}

#[test]
fn llama_cpp_timings_are_recorded_as_sent_and_split_ttft() {
    check("llama.cpp", "llama_cpp", "llama.cpp timings");
}

#[test]
fn vllm_metrics_are_recorded_as_sent_and_split_ttft() {
    check("vllm", "vllm", "vLLM metrics");
}

#[test]
fn without_a_server_clock_there_is_no_split_and_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "none");
    let run = common::run_ok(&s, &dir.path().join("o"), &[]);
    let summary = &run["summary"];
    assert!(summary.get("server_clock").is_none());
    assert!(summary["tokens"].get("cached").is_none());
    assert!(summary["latency"]
        .as_array()
        .unwrap()
        .iter()
        .all(|l| l["name"] != "prefill" && l["name"] != "ttft_rest"));
    assert!(run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("server").is_none()));
}
