//! Time windows and the steady state of a real run (the simulator over a socket), and a
//! compare judged on the steady state alone.

mod common;

use common::bench;

fn scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let p = dir.join("w.toml");
    std::fs::write(
        &p,
        "name = \"win\"\nseed = 7\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 8\n[load]\nrate = 100.0\nrequests = 120\n[server_metrics]\ninterval_s = 0.1\n[sim]\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n",
    )
    .unwrap();
    p
}

#[test]
fn a_run_has_windows_a_steady_state_and_windows_csv() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("o");
    let run = common::run_ok(&scenario(dir.path()), &out, &[]);
    let w = &run["windows"];
    let rows = w["rows"].as_array().unwrap();
    assert!(!rows.is_empty());
    // Every measured request is in the window of its intended send.
    let sent: u64 = rows.iter().map(|r| r["sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, run["summary"]["counts"]["sent"].as_u64().unwrap());
    let s = &w["steady"];
    assert!(s["requests"].as_u64().unwrap() >= 50, "{s}");
    assert!(s["end_s"].as_f64() > s["start_s"].as_f64());
    // The simulator keeps up with 100 req/s of 8-token answers: served ≈ offered.
    let (off, got) = (
        s["offered_rps"].as_f64().unwrap(),
        s["achieved_rps"].as_f64().unwrap(),
    );
    assert!(got > 0.8 * off, "offered {off}, served {got}");
    let csv = std::fs::read_to_string(out.join("windows.csv")).unwrap();
    assert!(
        csv.starts_with("window,start_s,end_s,sent,errors,"),
        "{csv}"
    );
    assert_eq!(
        csv.lines().count(),
        rows.len() + 2,
        "header, windows, steady"
    );
    // The run gathered its windows as requests finished, in aggregates; rebuilt from the
    // records it kept, they are the same, steady state included.
    let stored: bench::model::result::RunResult =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let rebuilt = bench::metrics::windows::of_run(
        &stored.requests,
        stored.server_metrics.as_ref(),
        stored.started_at,
        stored.windows.as_ref().unwrap().width_s,
    );
    assert_eq!(rebuilt, stored.windows);
}

#[test]
fn compare_steady_state_judges_the_steady_part_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path());
    let b = dir.path().join("b");
    let base = bench()
        .args([
            "baseline",
            s.to_str().unwrap(),
            "--repeat",
            "2",
            "-q",
            "--baselines",
        ])
        .arg(&b)
        .arg("--out")
        .arg(dir.path().join("base"))
        .output()
        .unwrap();
    assert_eq!(
        base.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&base.stderr)
    );
    let json = dir.path().join("c.json");
    let c = bench()
        .args([
            "compare",
            s.to_str().unwrap(),
            "--repeat",
            "2",
            "--steady-state",
            "-q",
            "--baselines",
        ])
        .arg(&b)
        .arg("--out")
        .arg(dir.path().join("cand"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        c.status.code().is_some_and(|c| c <= 1),
        "{}",
        String::from_utf8_lossy(&c.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let notes = v["notes"].to_string();
    assert!(
        notes.contains("--steady-state: judged each run's steady state only"),
        "{notes}"
    );
}

#[test]
fn a_sweep_stops_at_the_first_over_saturated_rate_and_names_the_last_sustainable_one() {
    // One sequence at a time on a fast device: the server serves about 200 req/s.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("sat.toml");
    std::fs::write(
        &p,
        "name = \"sat\"\nseed = 3\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 16\n[load]\nrate = 10.0\nrequests = 150\n[server_metrics]\nenabled = false\n[sim]\nmax_num_seqs = 1\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n",
    )
    .unwrap();
    let out = dir.path().join("o");
    let o = bench()
        .args([
            "sweep",
            p.to_str().unwrap(),
            "--rates",
            "50,100,800,1600",
            "-q",
            "--out",
        ])
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("sweep.json")).unwrap()).unwrap();
    let points = s["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "stopped at 800, never ran 1600: {s}");
    assert_eq!(points[2]["saturation"]["over"], true, "{}", points[2]);
    assert_eq!(points[1]["saturation"]["over"], false, "{}", points[1]);
    assert_eq!(s["last_sustainable_rps"], 100.0);
    assert!(s["stopped_early"]
        .as_str()
        .unwrap()
        .contains("over-saturated at rate=800"));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("last sustainable rate: 100.000 req/s"),
        "{text}"
    );
}
