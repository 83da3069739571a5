//! `bench history` on directories of compare outputs, as CI accumulates them: 30 compares in
//! which TPOT and E2E creep 3 % a compare from the 16th on — the baseline recorded again
//! after every one, so every single compare passed — are flagged as a drift from the 16th,
//! exit 1; 30 compares of nothing changed are flagged nowhere, exit 0. Seeded noise (1.5 %
//! a compare on every metric), so each run of the test sees the same series.

mod common;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;

const METRICS: [(&str, &str, f64); 4] = [
    ("ttft.p50", "ms", 22.0),
    ("tpot.p50", "ms", 11.4),
    ("e2e.p50", "ms", 375.0),
    ("output_throughput", "tok/s", 284.0),
];

/// One compare's JSON: each metric at `values`, judged against `baseline`, no change.
fn compare(i: usize, values: &[f64], baseline: &[f64]) -> Value {
    let rows: Vec<Value> = METRICS
        .iter()
        .zip(values.iter().zip(baseline))
        .map(|((m, unit, _), (c, b))| {
            json!({
                "metric": m, "unit": unit, "lower_is_better": *unit == "ms",
                "baseline": b, "candidate": c, "delta_pct": (c / b - 1.0) * 100.0,
                "interval_low": -5.0, "interval_high": 5.0, "effect": (c / b).ln(), "se": 0.01,
                "critical": 0.03, "floor": 0.0953, "threshold": "10%", "verdict": "no_change",
                "reason": "no_change", "n_baseline": 60, "n_candidate": 60, "mann_whitney_p": null
            })
        })
        .collect();
    json!({
        "schema_version": 2, "scenario_name": "smoke", "scenario_hash": "h", "baseline": "main",
        "baseline_repetitions": 3, "candidate_run": format!("c{i}"),
        "baseline_runs": [format!("b{i}")], "candidate_runs": [format!("c{i}")],
        "diffs": [], "change": "none (A/A)", "attributable": true, "alpha": 0.05,
        "rows": rows, "regressed": false,
        "created_at": format!("2026-10-{:02}T09:00:00Z", i + 1),
        "revision": format!("{:040x}", 0xabc000 + i)
    })
}

/// 30 compares under `dir`; `creep`: TPOT and E2E 3 % slower a compare from the 16th, the
/// throughput following them down.
fn history(dir: &Path, creep: bool, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let noise = LogNormal::new(0.0, 0.015).unwrap();
    let mut prev: Vec<f64> = METRICS.iter().map(|m| m.2).collect();
    std::fs::create_dir_all(dir).unwrap();
    for i in 0..30usize {
        let steps = if creep {
            i.saturating_sub(14) as i32
        } else {
            0
        };
        let values: Vec<f64> = METRICS
            .iter()
            .map(|(m, _, v)| {
                let f = match *m {
                    "tpot.p50" | "e2e.p50" => 1.03f64.powi(steps),
                    "output_throughput" => 1.03f64.powi(-steps),
                    _ => 1.0,
                };
                v * f * noise.sample(&mut rng)
            })
            .collect();
        let c = compare(i, &values, &prev);
        std::fs::write(
            dir.join(format!("compare-{i:02}.json")),
            serde_json::to_vec_pretty(&c).unwrap(),
        )
        .unwrap();
        prev = values;
    }
}

fn run(dir: &Path) -> (i32, Value, String) {
    let out = dir.join("history.json");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "history",
            dir.to_str().unwrap(),
            "--json",
            out.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    (o.status.code().unwrap(), v, text)
}

/// The record CSV rows of `n` compares of nothing changed, run ids `b{i} | c{i}` as
/// [`compare`] names them.
fn record_csv(n: usize) -> String {
    let header = "date,owner,scenario,change,metric,unit,baseline,candidate,delta_pct,interval_low,interval_high,verdict,side_effects,note,summary,server,baseline_name,scenario_hash,runs,n,alpha,tool_version,run_ids";
    let mut csv = format!("{header}\n");
    for i in 0..n {
        for (m, unit, v) in METRICS {
            csv += &format!(
                "2026-10-{:02},ci,smoke,none (A/A),{m},{unit},{v:.3},{v:.3},0.00,-5,5,no_change,,,,,main,h,3 vs 3,60 vs 60,0.05,0.1.0,b{i} | c{i}\n",
                i + 1
            );
        }
    }
    csv
}

fn series<'a>(v: &'a Value, metric: &str) -> &'a Value {
    v[0]["series"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["metric"] == metric)
        .unwrap()
}

#[test]
fn a_creep_every_gate_passed_is_flagged_where_it_began() {
    let dir = tempfile::tempdir().unwrap();
    history(dir.path(), true, 11);
    let (code, v, text) = run(dir.path());
    assert_eq!(code, 1, "{text}");
    for m in ["tpot.p50", "e2e.p50", "output_throughput"] {
        let s = series(&v, m);
        assert_eq!(s["flagged"], true, "{m}: {s}");
        assert_eq!(s["worse"], true, "{m}: {s}");
        assert_eq!(s["change"]["kind"], "drift", "{m}: {s}");
        assert_eq!(s["change"]["onset"], 15, "{m}: the 16th compare: {s}");
    }
    assert_eq!(series(&v, "ttft.p50")["flagged"], false);
    assert!(text.contains("drift from #16"), "{text}");
    assert!(text.contains("DRIFT: "), "{text}");
}

#[test]
fn thirty_compares_of_nothing_changed_flag_nothing() {
    for seed in [21, 22, 23] {
        let dir = tempfile::tempdir().unwrap();
        history(dir.path(), false, seed);
        let (code, v, text) = run(dir.path());
        assert_eq!(code, 0, "seed {seed}: {text}");
        for s in v[0]["series"].as_array().unwrap() {
            assert_eq!(s["flagged"], false, "seed {seed}: {s}");
        }
        assert!(text.contains("no metric drifted or shifted the bad way"));
    }
}

#[test]
fn the_record_csv_reads_as_the_same_history() {
    // The record CSV's rows of one compare share their run ids; a history read from it has
    // one entry per compare.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("records.csv"), record_csv(8)).unwrap();
    let (code, v, text) = run(dir.path());
    assert_eq!(code, 0, "{text}");
    assert_eq!(v[0]["entries"].as_array().unwrap().len(), 8, "{text}");
    assert_eq!(v[0]["series"].as_array().unwrap().len(), 4);
}

/// `bench history ARGS…`: (exit code, stdout and stderr).
fn bench_history(args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["history"];
    all.extend_from_slice(args);
    common::bench_text(&all)
}

/// A directory holding both the JSON outputs and the record rows of the same compares, and a
/// `loop -> ..` link back into itself: each compare is counted once, and what was skipped
/// is said.
#[cfg(unix)]
#[test]
fn each_compare_counts_once_whatever_reaches_it_twice() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("h");
    history(&d, false, 5);
    // The record rows of the first 10 of those compares (same run ids).
    std::fs::write(d.join("records.csv"), record_csv(10)).unwrap();
    std::os::unix::fs::symlink("..", d.join("loop")).unwrap();
    let out = dir.path().join("h.json");
    let (rc, t) = bench_history(&[d.to_str().unwrap(), "--json", out.to_str().unwrap()]);
    assert_eq!(rc, Some(0), "{t}");
    let v: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(v[0]["entries"].as_array().unwrap().len(), 30, "{t}");
    assert!(t.contains("10 compare(s) read more than once"), "{t}");
    assert!(t.contains("loop"), "the skipped link is named: {t}");
}

/// A FIFO named like a compare output in the directory is skipped, never waited on; a FIFO
/// or a device named on the command line is refused.
#[cfg(unix)]
#[test]
fn fifos_and_devices_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("h");
    history(&d, false, 6);
    let fifo = d.join("stuck.json");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if !made.is_ok_and(|s| s.success()) {
        println!("skipped the FIFO case: mkfifo is not available");
        return;
    }
    let (rc, t) = bench_history(&[d.to_str().unwrap()]);
    assert_eq!(rc, Some(0), "{t}");
    assert!(t.contains("stuck.json"), "{t}");
    for p in [fifo.to_str().unwrap(), "/dev/zero"] {
        let (rc, t) = bench_history(&[p]);
        assert_eq!(rc, Some(2), "{p}: {t}");
        assert!(t.contains("not a regular file"), "{t}");
    }
}

/// One rule for files that are not right: not a compare output → skipped and said, exit as
/// the history says; a compare output that does not read (another schema version, a field
/// of the wrong type, a bad date) → exit 2 naming the file and the field.
#[test]
fn a_compare_output_that_does_not_read_is_an_error_naming_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("h");
    history(&d, false, 7);
    std::fs::write(d.join("notes.json"), r#"{"hello": 1}"#).unwrap();
    std::fs::write(d.join("broken.json"), "{ not json").unwrap();
    let (rc, t) = bench_history(&[d.to_str().unwrap()]);
    assert_eq!(rc, Some(0), "{t}");
    assert!(t.contains("notes.json") && t.contains("broken.json"), "{t}");
    let good: Value =
        serde_json::from_slice(&std::fs::read(d.join("compare-00.json")).unwrap()).unwrap();
    for (what, edit, want) in [
        ("schema 1", json!({"schema_version": 1}), "schema_version 1"),
        ("schema 3", json!({"schema_version": 3}), "schema_version 3"),
        (
            "schema 999",
            json!({"schema_version": 999}),
            "schema_version 999",
        ),
        ("bad date", json!({"created_at": "yesterday"}), "created_at"),
        ("alpha a string", json!({"alpha": "x"}), "alpha"),
    ] {
        let mut c = good.clone();
        for (k, v) in edit.as_object().unwrap() {
            c[k] = v.clone();
        }
        let f = d.join("compare-bad.json");
        std::fs::write(&f, serde_json::to_vec(&c).unwrap()).unwrap();
        let (rc, t) = bench_history(&[d.to_str().unwrap()]);
        assert_eq!(rc, Some(2), "{what}: {t}");
        assert!(
            t.contains("compare-bad.json") && t.contains(want),
            "{what}: {t}"
        );
        std::fs::remove_file(&f).unwrap();
    }
}

/// A scenario name with ESC and OSC sequences (a screen clear, a window title) reaches the
/// terminal as escapes, not as commands.
#[test]
fn terminal_escapes_in_a_compare_never_reach_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("h");
    std::fs::create_dir_all(&d).unwrap();
    for i in 0..8 {
        let mut c = compare(i, &[22.0, 11.4, 375.0, 284.0], &[22.0, 11.4, 375.0, 284.0]);
        c["scenario_name"] = json!("smoke\u{1b}]0;pwned\u{7}\u{1b}[2J");
        std::fs::write(d.join(format!("c{i}.json")), c.to_string()).unwrap();
    }
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("history")
        .arg(&d)
        .output()
        .unwrap();
    assert!(o.status.code() == Some(0), "{o:?}");
    for stream in [&o.stdout, &o.stderr] {
        assert!(!stream.contains(&0x1b) && !stream.contains(&0x07), "{o:?}");
    }
    assert!(String::from_utf8_lossy(&o.stdout).contains("\\u{1b}"));
}
