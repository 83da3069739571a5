//! End to end: the `bench` binary against the in-process test server.

mod common;
use common::read_json;

use bench::model::metric::Latency;
use bench::model::record::Outcome;
use bench::model::result::RunResult;
use common::{Config, Fault};

use common::bench;

#[test]
fn run_counts_every_outcome_and_writes_three_files() {
    let mut cfg = Config::default();
    cfg.faults.insert(3, Fault::Status(500));
    cfg.faults.insert(4, Fault::Status(429));
    cfg.faults.insert(5, Fault::Disconnect(2));
    cfg.faults.insert(6, Fault::Stall);
    cfg.faults.insert(7, Fault::Malformed);
    cfg.faults.insert(8, Fault::ErrorEvent);
    cfg.faults.insert(9, Fault::Empty);
    cfg.faults.insert(10, Fault::NoUsage);
    cfg.faults.insert(11, Fault::ShortOutput(3));
    cfg.faults.insert(12, Fault::EchoAuth);
    cfg.faults.insert(1, Fault::Status(500)); // a warmup request: excluded from counts
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        addr,
        "",
        "concurrency = 4\nrequests = 20\nwarmup = 2",
    );
    let out = dir.path().join("out");
    let secret = "sk-test-SECRET-0123456789";
    let o = bench()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--var",
            "engine=test",
        ])
        .env("OPENAI_API_KEY", secret)
        .env("CI", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    assert!(
        stdout.contains("ttft") && stdout.contains("requests: 20 sent"),
        "{stdout}"
    );

    let run = common::run_result(&out);
    assert!(run.complete);
    assert_eq!(run.vars["engine"], "test");
    every_outcome_counted(&run);
    ttft_on_the_first_text(&run);
    // The requests asked for what the scenario says, with the key as a bearer token.
    let received = log.received.lock().unwrap().clone();
    assert_eq!(received.len(), 22);
    for r in &received {
        assert_eq!(r.body["ignore_eos"], true);
        assert_eq!(r.body["stream_options"]["include_usage"], true);
        assert_eq!(r.body["max_tokens"], 8);
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {secret}").as_str())
        );
    }

    // requests.csv: a header and one row per request; summary.csv: one row per metric.
    let csv = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    assert_eq!(csv.lines().count(), 23);
    assert!(csv
        .lines()
        .next()
        .unwrap()
        .starts_with("index,warmup,class,session,turn,outcome,intended_ms"));
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    assert!(summary.lines().any(|l| l.starts_with("ttft,ms,")));
    assert!(summary
        .lines()
        .any(|l| l.starts_with("request_throughput,req/s,")));

    // The key reaches no file and no output, even when the server echoes it back.
    for f in ["run.json", "requests.csv", "summary.csv"] {
        let text = std::fs::read_to_string(out.join(f)).unwrap();
        assert!(!text.contains(secret), "{f} leaks the API key");
    }
    assert!(!stdout.contains(secret) && !stderr.contains(secret));
    assert!(std::fs::read_to_string(out.join("run.json"))
        .unwrap()
        .contains("invalid credentials: Bearer <redacted>"));
}

/// Every outcome of `run_counts_every_outcome_and_writes_three_files`'s faults counted once,
/// and tokens from usage or, without it, from the chunks.
fn every_outcome_counted(run: &RunResult) {
    let c = &run.summary.counts;
    assert_eq!((c.sent, c.warmup), (20, 2));
    for (kind, n) in [
        ("http_500", 1),
        ("http_429", 1),
        ("http_401", 1),
        ("stream_broken", 1),
        ("timeout_first_token", 1),
        ("malformed_chunk", 1),
        ("server_error", 1),
        ("empty_output", 1),
    ] {
        assert_eq!(c.errors.get(kind), Some(&n), "{kind}: {:?}", c.errors);
    }
    assert_eq!(c.ok, 12, "{c:?}");
    assert_eq!(c.ok + c.errors.values().sum::<u64>() + c.aborted, 20);
    let tokens = &run.summary.tokens;
    assert_eq!(tokens.usage_missing, 1, "{tokens:?}");
    assert_eq!(tokens.output_len_mismatch, 1, "{tokens:?}");
    // 12 ok: 10 × 8 tokens from usage, 1 × 8 counted as chunks, 1 × 3 (short).
    assert_eq!(tokens.output_tokens, 10 * 8 + 8 + 3, "{tokens:?}");
}

/// TTFT is timed on the first chunk with text, not the role-only chunk sent at once: the
/// server holds the first token back 20 ms.
fn ttft_on_the_first_text(run: &RunResult) {
    assert_eq!(run.requests.len(), 22);
    for r in run.requests.iter().filter(|r| r.outcome == Outcome::Ok) {
        let ttft = r.ttft_us.unwrap();
        assert!(
            ttft >= 20_000,
            "ttft {ttft} µs is below the server's first-token delay"
        );
        assert!(r.e2e_us.unwrap() >= ttft);
        // The role-only chunk is seen and counted, and TTFT is not taken on it.
        assert_eq!(r.preamble_chunks, 1, "{r:?}");
        let first_event = r.first_event_us.unwrap();
        assert!(first_event <= ttft, "{first_event} vs {ttft}");
    }
    let ttft = run.summary.latency(Latency::Ttft).unwrap();
    assert!(ttft.p50 >= 20.0, "{ttft:?}");
    assert_eq!(ttft.count, 12);
    for h in [
        "ttft_us",
        "tpot_us",
        "itl_us",
        "e2e_us",
        "send_lag_us",
        "queue_us",
    ] {
        assert!(run.histograms.contains_key(h), "{h}");
    }
}

#[test]
fn completions_api_and_open_loop() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        addr,
        "",
        "rate = 200\narrival = \"constant\"\nrequests = 10\nmax_concurrency = 2",
    );
    std::fs::write(
        &scenario,
        std::fs::read_to_string(&scenario)
            .unwrap()
            .replace("api = \"chat\"", "api = \"completions\""),
    )
    .unwrap();
    let out = dir.path().join("o");
    let o = bench()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.stdout.is_empty(), "--quiet prints nothing");
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["summary"]["counts"]["ok"], 10);
    assert!(
        run["summary"]["throughput"]["peak_concurrency"]
            .as_u64()
            .unwrap()
            <= 2
    );
    // 5 ms apart but each takes ≥ 27 ms with 2 slots: later requests queue, and that shows.
    let queued = run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["queue_us"].as_u64().unwrap() > 0)
        .count();
    assert!(queued > 0);
    let received = log.received.lock().unwrap();
    assert!(received
        .iter()
        .all(|r| r.path == "/v1/completions" && r.body["prompt"].is_string()));
}

#[test]
fn model_is_discovered_when_not_configured() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    std::fs::write(
        &scenario,
        std::fs::read_to_string(&scenario)
            .unwrap()
            .replace("model = \"test-model\"\n", ""),
    )
    .unwrap();
    let out = dir.path().join("o");
    let o = bench()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(log
        .received
        .lock()
        .unwrap()
        .iter()
        .all(|r| r.body["model"] == "test-model"));
}

#[test]
fn usage_errors_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.toml");
    std::fs::write(&p, "name = \"x\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 5\noutput_tokens = 5\n[load]\nconcurrency = 0\nrequests = 1\n").unwrap();
    let o = bench().args(["run", p.to_str().unwrap()]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.toml:7:15: field `load.concurrency`: must be at least 1"),
        "{err}"
    );

    std::fs::write(&p, "name = \"x\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 5\noutput_tokens = 5\n[load]\nconcurrency = 1\nrequests = 1\n").unwrap();
    let o = bench()
        .args([
            "run",
            p.to_str().unwrap(),
            "--rate",
            "3",
            "--concurrency",
            "2",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--rate and --concurrency are exclusive"));

    let o = bench()
        .args([
            "run",
            p.to_str().unwrap(),
            "--var",
            "novalue",
            "--endpoint",
            "http://127.0.0.1:9/v1",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--var `novalue`: write it as KEY=VALUE"));
}

#[test]
fn a_schedule_that_cannot_be_made_fails_before_the_first_request() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "rate = 1e5\nduration = \"1000s\"");
    let o = bench()
        .args(["run", scenario.to_str().unwrap(), "--out"])
        .arg(dir.path().join("out"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("the plan would hold more than"), "{err}");
    assert!(
        log.received.lock().unwrap().is_empty(),
        "nothing may be sent"
    );
    let v = bench()
        .args(["validate", scenario.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(v.status.code(), Some(2), "validate builds the same plan");
}

#[test]
fn connection_refused_is_counted_not_fatal() {
    // Bind then drop a listener to get a port with nothing behind it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 2\nrequests = 4");
    let out = dir.path().join("o");
    let o = bench()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "-q",
        ])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["summary"]["counts"]["errors"]["connect"], 4);
}

#[test]
fn params_reach_every_request_as_vars_without_changing_the_traffic_hash() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    let run = |extra: &[&str], out: &str| common::run_ok(&scenario, &dir.path().join(out), extra);
    let plain = run(&[], "a");
    let with = run(
        &["--param", "cache_prompt=false", "--param", "top_k=5"],
        "b",
    );
    assert_eq!(
        plain["scenario_hash"], with["scenario_hash"],
        "a --param is a variable under test, not other traffic"
    );
    assert_eq!(with["vars"]["param.cache_prompt"], "false");
    assert_eq!(with["vars"]["param.top_k"], "5");
    let received = log.received.lock().unwrap();
    let last = received.last().unwrap();
    assert_eq!(last.body["cache_prompt"], false);
    assert_eq!(last.body["top_k"], 5);
}

#[test]
fn declared_body_vars_are_sent_labelled_and_defaulted_from_extra() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        addr,
        "body_vars = [\"cache_prompt\", \"top_k\"]\nextra = { cache_prompt = true }",
        "concurrency = 1\nrequests = 2",
    );
    let run = |extra: &[&str], out: &str| -> (serde_json::Value, serde_json::Value) {
        let run = common::run_ok(&scenario, &dir.path().join(out), extra);
        let body = log.received.lock().unwrap().last().unwrap().body.clone();
        (run, body)
    };
    // No flag: the [request.extra] default is sent and named in vars.
    let (plain, body) = run(&[], "a");
    assert_eq!(plain["vars"]["cache_prompt"], "true");
    assert_eq!(body["cache_prompt"], true);
    assert!(body.get("top_k").is_none(), "an unset body var is not sent");
    // --var overrides it, in the body and in vars; the traffic hash does not move.
    let (with, body) = run(&["--var", "cache_prompt=false", "--var", "top_k=5"], "b");
    assert_eq!(with["vars"]["cache_prompt"], "false");
    assert_eq!(with["vars"]["top_k"], "5");
    assert_eq!(body["cache_prompt"], false);
    assert_eq!(body["top_k"], 5);
    assert_eq!(plain["scenario_hash"], with["scenario_hash"]);
    // An ordinary --var stays a label.
    let (_, body) = run(&["--var", "engine=x"], "c");
    assert!(body.get("engine").is_none());
    // --param on a declared body var is refused with the flag to use instead.
    let o = bench()
        .args([
            "run",
            scenario.to_str().unwrap(),
            "-q",
            "--param",
            "cache_prompt=false",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--var cache_prompt=false"), "{err}");
}

#[test]
fn every_run_salts_its_prompts_so_no_run_is_served_from_anothers_cache() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let prompts = |scenario: &std::path::Path, out: &str| -> (Vec<String>, serde_json::Value) {
        let before = log.received.lock().unwrap().len();
        let out = dir.path().join(out);
        let o = bench()
            .args(["run", scenario.to_str().unwrap(), "-q", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let got = log.received.lock().unwrap()[before..]
            .iter()
            .map(|r| {
                r.body["messages"][0]["content"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        (got, read_json(&out.join("run.json")))
    };
    let salted = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 3");
    let (a, run_a) = prompts(&salted, "a");
    let (b, run_b) = prompts(&salted, "b");
    let (sa, sb) = (
        run_a["prompt_salt"].as_str().unwrap(),
        run_b["prompt_salt"].as_str().unwrap(),
    );
    assert_ne!(sa, sb, "each run draws its own salt");
    assert!(a.iter().all(|p| p.starts_with(&format!("{sa} "))));
    assert!(b.iter().all(|p| p.starts_with(&format!("{sb} "))));
    // Past the salt the traffic is the seeded one, word for word, and the hash is the same.
    let rest = |v: &[String], s: &str| -> Vec<String> {
        v.iter().map(|p| p[s.len() + 1..].to_string()).collect()
    };
    assert_eq!(rest(&a, sa), rest(&b, sb));
    assert_eq!(run_a["scenario_hash"], run_b["scenario_hash"]);
    // salt = "none": byte-identical prompts, nothing recorded.
    let text = std::fs::read_to_string(&salted).unwrap().replace(
        "type = \"synthetic\"",
        "type = \"synthetic\"\nsalt = \"none\"",
    );
    let plain = dir.path().join("plain.toml");
    std::fs::write(&plain, text).unwrap();
    let (c, run_c) = prompts(&plain, "c");
    let (d, _) = prompts(&plain, "d");
    assert_eq!(c, d);
    assert!(run_c.get("prompt_salt").is_none());
}
