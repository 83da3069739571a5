//! `--reset`: repeated runs against one server with a prefix cache, their prompts byte-identical
//! run to run (`salt = "none"`, as a dataset or a trace replay sends them). Without a reset,
//! every run after the first finds the shared prefix cached from the run before and its first request
//! is faster; with `--reset vllm` (the simulator serves vLLM's `/reset_prefix_cache`) every
//! run's first request starts cold, alike. The simulator reports each reply's cached prompt
//! tokens and its own prefill time (`reply_clock = "llama.cpp"`), which is what is compared:
//! exact counts, and prefill times from the server's model rather than the client's clock.

mod common;

use bench::sim::http::{ServeConfig, SimServer};
use bench::sim::profile::SimOptions;

fn server() -> SimServer {
    let mut opts = SimOptions::profile("small-gpu").unwrap();
    for (k, v) in [("prefix_cache", "on"), ("reply_clock", "llama.cpp")] {
        opts.set(k, v).unwrap();
    }
    SimServer::start(ServeConfig {
        opts,
        listen: ([127, 0, 0, 1], 0).into(),
        model: "sim".into(),
        truth_log: None,
    })
    .unwrap()
}

fn scenario(dir: &std::path::Path, sim: &SimServer) -> std::path::PathBuf {
    let p = dir.join("s.toml");
    std::fs::write(
        &p,
        format!(
            "name = \"reset\"\nendpoint = \"http://{}/v1\"\nseed = 5\n[request]\nignore_eos = true\n[workload]\ntype = \"shared_prefix\"\nsalt = \"none\"\nprefixes = 1\nprefix_tokens = 1024\nsuffix_tokens = 16\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 3\nwarmup = 0\n[server_metrics]\nenabled = false\n",
            sim.addr
        ),
    )
    .unwrap();
    p
}

/// The first request of each of three runs: (cached prompt tokens, server prefill µs), and
/// what each run.json says of its reset.
fn first_requests(reset: &[&str]) -> Vec<(u64, u64, serde_json::Value)> {
    let sim = server();
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), &sim);
    (0..3)
        .map(|i| {
            let run = common::run_ok(&s, &dir.path().join(format!("r{i}")), reset);
            let first = run["requests"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["index"] == 0)
                .unwrap()
                .clone();
            (
                first["cached_tokens"].as_u64().unwrap(),
                first["server"]["prefill_us"].as_u64().unwrap(),
                run["reset"].clone(),
            )
        })
        .collect()
}

#[test]
fn a_reset_before_each_run_makes_every_runs_first_request_start_cold() {
    let with = first_requests(&["--reset", "vllm"]);
    for (cached, _, reset) in &with {
        assert_eq!(*cached, 0, "{with:?}");
        assert_eq!(reset["how"], "vllm: POST /reset_prefix_cache");
        assert!(reset["ms"].as_f64().unwrap() >= 0.0);
    }
    // Cold prefills of the same prompt: the same work each run, so within a step's jitter.
    let prefill: Vec<u64> = with.iter().map(|w| w.1).collect();
    let (lo, hi) = (prefill.iter().min().unwrap(), prefill.iter().max().unwrap());
    assert!(*hi < lo * 2, "{prefill:?}");

    let without = first_requests(&[]);
    assert_eq!(without[0].0, 0, "the first run finds an empty cache");
    for (cached, prefill, reset) in &without[1..] {
        assert!(
            *cached >= 1024,
            "later runs inherit the prefix: {without:?}"
        );
        assert!(*prefill < without[0].1, "{without:?}");
        assert!(reset.is_null());
    }
}

#[test]
fn a_failing_reset_command_ends_the_run_with_its_message() {
    let sim = server();
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), &sim);
    let (code, text) = common::bench_text(&[
        "run",
        s.to_str().unwrap(),
        "--out",
        dir.path().join("o").to_str().unwrap(),
        "--reset",
        "echo no such cache >&2; exit 3",
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("--reset command: echo no such cache >&2; exit 3: exited with exit status: 3: no such cache"),
        "{text}"
    );
}
