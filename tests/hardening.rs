//! Regression tests for the hardening defects, each named after the defect: run the
//! real binary against the in-process test server, then look for what must not be there.

mod common;

use common::{Config, Fault};
use std::path::Path;

use common::bench;

/// Every file under `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// `bench baseline` (one repetition) of a 6-request scenario against `cfg`'s server at
/// `endpoint` (`{addr}` is filled in), with `key` as the API key; every file it wrote and its
/// output, as one text.
fn baseline_text(cfg: Config, endpoint: &str, key: &str, extra: &[String]) -> String {
    let (addr, _log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 6");
    let endpoint = endpoint.replace("{addr}", &addr.to_string());
    let o = bench()
        .args([
            "baseline",
            scenario.to_str().unwrap(),
            "--repeat",
            "1",
            "--endpoint",
            &endpoint,
        ])
        .arg("--baselines")
        .arg(dir.path().join("baselines"))
        .arg("--out")
        .arg(dir.path().join("runs"))
        .args(extra.iter().map(|e| e.replace("{addr}", &addr.to_string())))
        .env("OPENAI_API_KEY", key)
        .env("CI", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    all_text(dir.path()) + &stderr + &String::from_utf8_lossy(&o.stdout)
}

#[test]
fn a_key_echoed_near_the_cut_leaks_no_prefix() {
    let key = "sk-TESTSECRET-0123456789abcdef";
    let mut cfg = Config::default();
    // The key starts 291–297 characters into the message: the 300-character cut falls inside
    // it (before the fix, the cut came first and left `sk-TESTSEC…` in every file).
    for i in 1..=4u64 {
        cfg.faults
            .insert(i, Fault::EchoAuthAfter(260 + i as usize * 2));
    }
    let written = baseline_text(cfg, "http://{addr}/v1", key, &[]);
    assert!(
        written.contains("invalid credentials: Bearer <redac"),
        "the echoed key was recorded, redacted"
    );
    for fragment in ["TESTSEC", "SECRET-0", "0123456789"] {
        assert!(
            !written.contains(fragment),
            "`{fragment}` reached a file or the log"
        );
    }
}

#[test]
fn credentials_in_the_endpoint_url_are_never_stored() {
    let mut cfg = Config::default();
    cfg.faults.insert(2, Fault::EchoAuth);
    let written = baseline_text(
        cfg,
        "http://user:PW-HUNTER2@{addr}/v1?api_key=QUERYSECRET",
        "sk-unused-key-0000",
        &[
            "--metrics-url".into(),
            "http://m:PW-METRICS@{addr}/metrics?token=T0KEN".into(),
        ],
    );
    // base64("user:PW-HUNTER2"): the Basic header the URL's credentials travel in.
    for secret in [
        "PW-HUNTER2",
        "QUERYSECRET",
        "PW-METRICS",
        "T0KEN",
        "dXNlcjpQVy1IVU5URVIy",
        "user:",
    ] {
        assert!(
            !written.contains(secret),
            "`{secret}` reached a file or the log"
        );
    }
}

/// `bench run` of `load` against `cfg`'s server; exit code, stderr and run.json (if written).
fn run(
    cfg: Config,
    load: &str,
    extra: &[&str],
) -> (Option<i32>, String, Option<serde_json::Value>) {
    let (addr, _log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", load);
    let out = dir.path().join("out");
    let o = bench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .env("CI", "1")
        .output()
        .unwrap();
    let run = std::fs::read(out.join("run.json"))
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap());
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        run,
    )
}

#[test]
fn a_server_reporting_u64_max_tokens_is_an_anomaly_not_a_sum() {
    let mut cfg = Config::default();
    cfg.faults.insert(1, Fault::AbsurdUsage);
    cfg.faults.insert(3, Fault::AbsurdUsage);
    let (code, stderr, run) = run(cfg, "concurrency = 1\nrequests = 6", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let t = &run.unwrap()["summary"]["tokens"];
    // Before the fix, u64::MAX + u64::MAX + … wrapped (or panicked in a debug build).
    assert_eq!(t["usage_rejected"], 2, "{t}");
    assert_eq!(
        t["output_tokens"],
        6 * 8,
        "absurd counts fall back to the 8 chunks: {t}"
    );
    assert_eq!(t["usage_missing"], 2, "{t}");
}

#[test]
fn a_request_count_near_u64_max_is_refused_not_wrapped() {
    // Before the fix, u64::MAX requests + 2 warmup wrapped to 1 request and exited 0.
    let (code, stderr, run) = run(
        Config::default(),
        "concurrency = 1\nrequests = 3\nwarmup = 2",
        &["--requests", "18446744073709551615"],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--requests"), "{stderr}");
    assert!(run.is_none(), "nothing is run");
}

#[test]
fn a_well_typed_but_corrupt_baseline_is_an_error_not_a_verdict() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 4");
    let baselines = dir.path().join("baselines");
    let o = bench()
        .arg("baseline")
        .arg(&scenario)
        .args(["--repeat", "2", "--baselines"])
        .arg(&baselines)
        .arg("--out")
        .arg(dir.path().join("runs"))
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let file = baselines.join("e2e/main.json");
    let pristine: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let sent_before = log.received.lock().unwrap().len();

    type Corrupt = fn(&mut serde_json::Value);
    let cases: [(&str, Corrupt); 8] = [
        ("TTFT of 0 µs", |b| {
            for r in b["repetitions"][1]["requests"].as_array_mut().unwrap() {
                r["ttft_us"] = 0.into();
            }
        }),
        ("latency above a day", |b| {
            b["repetitions"][0]["requests"][1]["ttft_us"] = u64::MAX.into();
        }),
        ("holds no measured requests", |b| {
            b["repetitions"][1]["requests"] = serde_json::json!([]);
        }),
        ("`e2e_us` histogram that is corrupt", |b| {
            b["repetitions"][0]["histograms"]["e2e_us"] = "not base64!".into();
        }),
        ("is incomplete", |b| {
            b["repetitions"][1]["complete"] = false.into();
        }),
        ("says ok = 4 but holds 3", |b| {
            b["repetitions"][0]["requests"]
                .as_array_mut()
                .unwrap()
                .pop();
        }),
        ("time window of 0 s", |b| {
            b["repetitions"][0]["summary"]["throughput"]["window_s"] = 0.0.into();
        }),
        ("has schema_version \"1\"", |b| {
            b["schema_version"] = "1".into();
        }),
    ];
    for (want, corrupt) in cases {
        let mut b = pristine.clone();
        corrupt(&mut b);
        std::fs::write(&file, serde_json::to_vec(&b).unwrap()).unwrap();
        let o = bench()
            .arg("compare")
            .arg(&scenario)
            .args(["--repeat", "1", "--baselines"])
            .arg(&baselines)
            .arg("--out")
            .arg(dir.path().join("cmp"))
            .env("CI", "1")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{want}: {err}");
        assert!(err.contains(want), "`{want}` not named: {err}");
        assert!(err.contains("--force"), "the fix is named: {err}");
        assert!(!err.contains("Some(") && !err.contains("None"), "{err}");
    }
    assert_eq!(
        log.received.lock().unwrap().len(),
        sent_before,
        "a corrupt baseline stops compare before it sends anything"
    );
}

#[test]
fn a_json_reply_and_an_oversized_event_are_named_not_called_broken_streams() {
    let mut cfg = Config::default();
    cfg.faults.insert(1, Fault::JsonReply);
    cfg.faults.insert(3, Fault::HugeEvent(6 << 20));
    let (code, stderr, run) = run(cfg, "concurrency = 1\nrequests = 5", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = run.unwrap();
    let c = &run["summary"]["counts"];
    assert_eq!(c["ok"], 3, "{c}");
    assert_eq!(c["errors"]["not_streamed"], 1, "{c}");
    assert_eq!(c["errors"]["malformed_chunk"], 1, "{c}");
    let errors: Vec<&str> = run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["error"].as_str())
        .collect();
    // Before the fix: "the stream ended without [DONE] or a finish reason".
    assert!(
        errors
            .iter()
            .any(|e| e.contains("`application/json`, not an event stream")),
        "{errors:?}"
    );
    assert!(
        errors.iter().any(|e| e.contains("exceeded 4 MiB")),
        "{errors:?}"
    );
}

#[test]
fn a_429s_retry_after_is_recorded() {
    let mut cfg = Config::default();
    cfg.faults.insert(2, Fault::Status(429));
    let (code, stderr, run) = run(cfg, "concurrency = 1\nrequests = 3", &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let run = run.unwrap();
    let r = run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["outcome"] == "http_429")
        .expect("the 429 is recorded");
    assert_eq!(
        r["error"], "Retry-After: 7; injected 429 Too Many Requests",
        "{r}"
    );
}

#[test]
fn sweep_loads_out_of_range_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        "127.0.0.1:9".parse().unwrap(),
        "",
        "concurrency = 1\nrequests = 2",
    );
    for (flag, value, want) in [
        (
            "--rates",
            "1,1e-310",
            "--rates: a rate must be a positive number",
        ),
        (
            "--rates",
            "5e9",
            "--rates: a rate must be a positive number",
        ),
        (
            "--concurrencies",
            "1,0",
            "--concurrencies: a concurrency must be at least 1",
        ),
        ("--auto", "4000000000", "at most 1000 load points"),
    ] {
        let o = bench()
            .arg("sweep")
            .arg(&scenario)
            .args([flag, value])
            .arg("--out")
            .arg(dir.path().join("sweep"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {value}: {err}");
        assert!(err.contains(want), "{flag} {value}: {err}");
    }
}

#[test]
fn a_named_key_variable_that_is_unset_is_warned_of() {
    // --api-key-env names a variable on purpose; when it is unset the run goes out without a
    // key (a local server may need none), but not without a word.
    let var = "BENCH_TEST_KEY_THAT_IS_NOT_SET";
    let (code, err, _) = run(
        Config::default(),
        "concurrency = 1\nrequests = 2",
        &["--api-key-env", var],
    );
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains(&format!("warning: the API key variable {var}")),
        "{err}"
    );
    let (_, err, _) = run(Config::default(), "concurrency = 1\nrequests = 2", &[]);
    assert!(
        !err.contains("API key variable"),
        "the default variable is optional: {err}"
    );
}

#[test]
fn a_baseline_whose_requests_all_failed_is_not_stored() {
    // Every request answered 401 (a key left unset): the repetition is no reference, so the
    // baseline is refused as it is recorded — before, it was stored with exit 0 and every
    // later compare refused it as corrupt.
    let mut cfg = Config::default();
    for i in 0..4 {
        cfg.faults.insert(i, Fault::Status(401));
    }
    let (addr, _log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 4");
    let store = dir.path().join("store");
    let o = bench()
        .arg("baseline")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .args(["--repeat", "2", "-q", "--out"])
        .arg(dir.path().join("b"))
        .env("CI", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("baseline main not stored: repetition 1 has no successful measured request")
            && err.contains("4 sent, 0 ok, errors: http_401 4"),
        "{err}"
    );
    assert!(!store.exists());
    assert!(
        !dir.path().join("b/rep2").exists(),
        "repetition 2 was not run"
    );
}

#[test]
fn an_interleave_whose_control_arm_measured_nothing_stops() {
    // The baseline's endpoint down: every control request a connect error. Judged anyway, the
    // candidate passed with its error rate "improved"; the control arm is the reference, so
    // the compare stops, exit 2.
    let (addr, _log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 4");
    let store = dir.path().join("store");
    let bench_in = |args: &[&str]| {
        bench()
            .args(args)
            .arg(&scenario)
            .arg("--baselines")
            .arg(&store)
            .args(["--no-server-metrics", "-q"])
            .env("CI", "1")
            .output()
            .unwrap()
    };
    let o = bench_in(&[
        "baseline",
        "--repeat",
        "2",
        "--out",
        dir.path().join("b").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = bench_in(&[
        "compare",
        "--interleave",
        "--repeat",
        "1",
        "--baseline-endpoint",
        "http://127.0.0.1:1/v1",
        "--out",
        dir.path().join("c").to_str().unwrap(),
    ]);
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(2), "{out}\n{err}");
    assert!(
        err.contains(
            "the control run of block 1 (the baseline's configuration) cannot be judged against"
        ) && err.contains("errors: connect"),
        "{err}"
    );
    assert!(!out.contains("PASS"), "{out}");
}
