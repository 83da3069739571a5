//! Scale, end to end on the real binary and the in-process test server: a run over
//! `--keep-records` streams its records to requests.csv and keeps none in memory or in
//! run.json, yet its summary and its time windows cover every request; such runs make small
//! baselines that the gate reads from their histograms.

mod common;

use common::Config;
use std::path::Path;
use std::time::Duration;

use common::bench;

fn fast() -> Config {
    Config {
        first_token_delay: Duration::from_millis(2),
        token_gap: Duration::from_millis(1),
        ..Config::default()
    }
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn run_dir(addr: std::net::SocketAddr, dir: &Path, keep: &str) -> serde_json::Value {
    let scenario = common::scenario(dir, addr, "", "concurrency = 4\nrequests = 40\nwarmup = 2");
    let out = dir.join(format!("out-{keep}"));
    // Windows 10 ms wide, the narrowest: a run of 40 requests this fast lasts ≈ 100 ms.
    let mut run = common::run_ok(
        &scenario,
        &out,
        &["--keep-records", keep, "--window", "0.01"],
    );
    let csv = std::fs::read_to_string(out.join("requests.csv")).unwrap();
    run["csv_rows"] = (csv.lines().count() - 1).into();
    run
}

#[test]
fn a_run_over_keep_records_streams_them_to_csv_and_keeps_none() {
    let (addr, _log) = common::spawn_background(fast());
    let dir = tempfile::tempdir().unwrap();
    let kept = run_dir(addr, dir.path(), "all");
    let streamed = run_dir(addr, dir.path(), "10");
    assert_eq!(kept["requests"].as_array().unwrap().len(), 42);
    assert!(kept.get("requests_omitted").is_none(), "absent when 0");
    assert_eq!(streamed["requests"].as_array().unwrap().len(), 0);
    assert_eq!(streamed["requests_omitted"], 42);
    // Every request is in requests.csv either way, and the summary counts them all.
    assert_eq!(kept["csv_rows"], 42);
    assert_eq!(streamed["csv_rows"], 42);
    for k in ["sent", "warmup", "ok"] {
        assert_eq!(
            kept["summary"]["counts"][k], streamed["summary"]["counts"][k],
            "{k}"
        );
    }
    assert_eq!(streamed["summary"]["counts"]["ok"], 40);
    assert_eq!(
        kept["summary"]["tokens"]["output_tokens"],
        streamed["summary"]["tokens"]["output_tokens"]
    );
    let ttft = |r: &serde_json::Value| r["summary"]["latency"][0]["count"].clone();
    assert_eq!(ttft(&streamed), 40);
    assert_eq!(ttft(&kept), ttft(&streamed));
    // The time windows (at --window's width) count every measured request, the streamed
    // run's too: a run keeps each request's point past --keep-records.
    for r in [&kept, &streamed] {
        let w = &r["windows"];
        assert_eq!(w["width_s"], 0.01);
        let rows = w["rows"].as_array().unwrap();
        assert!(rows.len() > 1, "{w}");
        let sent: u64 = rows.iter().map(|x| x["sent"].as_u64().unwrap()).sum();
        assert_eq!(sent, 40, "{w}");
    }
}

#[test]
fn a_window_that_is_not_a_width_is_a_usage_error() {
    let (addr, _log) = common::spawn_background(fast());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    let out = bench()
        .arg("run")
        .arg(&scenario)
        .args(["--window", "0", "--out"])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--window"));
}

#[test]
fn runs_without_records_make_a_small_baseline_the_gate_reads() {
    let (addr, _log) = common::spawn_background(fast());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        addr,
        "",
        "concurrency = 1\nrequests = 30\nwarmup = 1",
    );
    let common_args = |cmd: &str| {
        let mut c = bench();
        c.arg(cmd)
            .arg(&scenario)
            .args(["--repeat", "2", "--keep-records", "5"])
            .arg("--baselines")
            .arg(dir.path().join("b"))
            .arg("--out")
            .arg(dir.path().join(cmd))
            .env("CI", "1");
        c
    };
    let o = common_args("baseline").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let b = json(&dir.path().join("b/e2e/main.json"));
    for rep in b["repetitions"].as_array().unwrap() {
        assert_eq!(rep["requests"].as_array().unwrap().len(), 0);
        assert_eq!(rep["requests_omitted"], 31);
    }
    let o = common_args("compare")
        .arg("--json")
        .arg(dir.path().join("c.json"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(matches!(o.status.code(), Some(0 | 1)), "{stderr}");
    let c = json(&dir.path().join("c.json"));
    let ttft = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "ttft.p50")
        .unwrap();
    assert_eq!(ttft["n_baseline"], 60, "{ttft}");
    assert_eq!(ttft["n_candidate"], 60, "{ttft}");
    assert!(ttft["baseline"].as_f64().unwrap() > 0.0, "{ttft}");
}
