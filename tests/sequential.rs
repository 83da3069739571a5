//! Sequential compares end to end on the embedded simulator: runs added to a look, the
//! headline naming what is undecided, the exit code an undecided row gets, a plan without
//! traffic, and stored runs replayed to the very same verdicts.

mod common;
use common::read_json;

use std::path::Path;
use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The smoke scenario (20 requests a run on the simulator) with the error rate gated at
/// +0.5 pp — a row 20-request runs can never settle, which these tests need undecided — and
/// a 3-run baseline of it in `store`: (store, scenario path).
fn recorded(dir: &Path) -> (std::path::PathBuf, String) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scenario = dir.join("smoke.toml");
    let shipped = std::fs::read_to_string(root.join("scenarios/smoke.toml")).unwrap();
    std::fs::write(
        &scenario,
        format!("{shipped}\n[gate]\n\"error_rate\" = \"+0.5pp\"\n"),
    )
    .unwrap();
    let store = dir.join("store");
    let o = common::bench()
        .arg("baseline")
        .arg(&scenario)
        .args(["--repeat", "3", "--baselines"])
        .arg(&store)
        .arg("--out")
        .arg(dir.join("b"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    // What a compare against it can decide is said as it is recorded.
    assert!(t.contains("plan: looks at 3, 5, 8, 12 runs a side"), "{t}");
    assert!(t.contains("error_rate: with no errors"), "{t}");
    (store, scenario.to_str().unwrap().to_string())
}

#[test]
fn a_sequential_compare_stops_at_a_look_says_why_and_is_replayed_from_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, s) = recorded(dir.path());
    let s = s.as_str();
    let (out, json, again) = (
        dir.path().join("c"),
        dir.path().join("c.json"),
        dir.path().join("again.json"),
    );
    let record = dir.path().join("record.csv");
    // α = 0.001: an A/A that fails by chance would make the exit code assertion flaky.
    let o = common::bench()
        .args(["compare", s, "--max-repeat", "5", "--alpha", "0.001"])
        .arg("--baselines")
        .arg(&store)
        .arg("--out")
        .arg(&out)
        .arg("--json")
        .arg(&json)
        .arg("--record")
        .arg(&record)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    let c = read_json(&json);
    let seq = &c["sequence"];
    let used = seq["used"].as_u64().unwrap();
    assert!([3, 5].contains(&used), "{seq}");
    assert_eq!(c["candidate_repetitions"].as_u64(), Some(used));
    assert!(
        t.contains(&format!("sequential: {used} runs a side used")),
        "{t}"
    );
    // The error rate cannot be bounded at 20 requests a run: named as undecided.
    assert!(t.contains("undecided: ") && t.contains("error_rate"), "{t}");
    assert!(out.join("sequence.json").is_file() && out.join("rep1/run.json").is_file());
    let csv = std::fs::read_to_string(&record).unwrap();
    assert!(csv.contains("(sequential: "), "{csv}");
    // The same runs judged again: the same looks, rows and stop.
    let o = common::bench()
        .args([
            "compare",
            s,
            "--alpha",
            "0.001",
            "--max-repeat",
            "5",
            "--candidate",
        ])
        .arg(&out)
        .arg("--baselines")
        .arg(&store)
        .arg("--json")
        .arg(&again)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let d = read_json(&again);
    assert_eq!(d["rows"], c["rows"]);
    assert_eq!(d["sequence"], c["sequence"]);

    // Undecided rows fail the compare on request; nothing else changes.
    let o = common::bench()
        .args([
            "compare",
            s,
            "--alpha",
            "0.001",
            "--max-repeat",
            "5",
            "--undecided",
            "fail",
        ])
        .arg("--candidate")
        .arg(&out)
        .arg("--baselines")
        .arg(&store)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    assert!(t.contains("— FAIL — "), "{t}");

    tampered_designs_are_refused(s, &out, &store);
    cut_runs_say_where_they_end(s, &out, &store, used);
}

/// The stored candidate runs under `out` judged again, with the flags they were made with.
fn replay(s: &str, out: &Path, store: &Path) -> Output {
    common::bench()
        .args(["compare", s, "--alpha", "0.001"])
        .args(["--max-repeat", "5", "--candidate"])
        .arg(out)
        .arg("--baselines")
        .arg(store)
        .output()
        .unwrap()
}

/// An edited design beside stored runs is refused naming the file, never used.
fn tampered_designs_are_refused(s: &str, out: &Path, store: &Path) {
    // An edited design never judges the runs: α = 0 or a tiny α (every critical value
    // infinite), one look, or another α than the flags' are refused, naming the file.
    let design = out.join("sequence.json");
    let original = std::fs::read_to_string(&design).unwrap();
    for edit in [
        r#"{"looks":[3,5],"alpha":0}"#,
        r#"{"looks":[3,5],"alpha":1e-300}"#,
        r#"{"looks":[1],"alpha":0.001}"#,
        r#"{"looks":[3,5],"alpha":0.45}"#,
        r#"{"looks":[3,4,5],"alpha":0.001}"#,
    ] {
        std::fs::write(&design, edit).unwrap();
        let o = replay(s, out, store);
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{edit}: {t}");
        assert!(t.contains("sequence.json"), "{edit}: {t}");
        assert!(!t.contains("PASS"), "{edit}: {t}");
    }
    std::fs::write(&design, original).unwrap();
}

/// Stored runs that end before their design stopped are judged where they end, and say so.
fn cut_runs_say_where_they_end(s: &str, out: &Path, store: &Path, used: u64) {
    // The last run removed, as a compare interrupted in it leaves them: replayed, the stop
    // says where the runs end, not that the cap was reached.
    std::fs::remove_dir_all(out.join(format!("rep{used}"))).unwrap();
    let o = replay(s, out, store);
    let t = text(&o);
    assert!(o.status.code().is_some_and(|c| c <= 1), "{t}");
    let want = format!(
        "stopped by the stored runs ending at {} of the cap's 5",
        used - 1
    );
    assert!(t.contains(&want), "{t}");
    assert!(!t.contains("stopped by the cap"), "{t}");
}

#[test]
fn a_settled_regression_ends_the_compare_at_its_look() {
    let dir = tempfile::tempdir().unwrap();
    let (store, s) = recorded(dir.path());
    let s = s.as_str();
    let json = dir.path().join("c.json");
    // Decode 30 % slower: TPOT regresses at the first look, while the error rate can never
    // be settled at 20 requests a run — the compare fails there instead of running to the cap.
    let o = common::bench()
        .args(["compare", s, "--opt", "bw_eff=0.615"])
        .arg("--baselines")
        .arg(&store)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(1), "{t}");
    let c = read_json(&json);
    assert_eq!(c["sequence"]["stop"], "regressed", "{t}");
    assert_eq!(c["sequence"]["used"], 3, "{t}");
    assert!(t.contains("stopped by a settled regression"), "{t}");
    assert!(
        t.contains("REGRESSION — ") && t.contains("error_rate"),
        "{t}"
    );
}

#[test]
fn a_plan_sends_nothing_and_says_what_each_row_needs() {
    let dir = tempfile::tempdir().unwrap();
    let (store, s) = recorded(dir.path());
    let s = s.as_str();
    let o = common::bench()
        .args(["compare", s, "--plan", "--max-repeat", "8"])
        .args(["--endpoint", "http://127.0.0.1:9/v1"]) // nothing listens: a request would fail
        .arg("--baselines")
        .arg(&store)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(0), "{t}");
    assert!(
        t.contains("plan: looks at 3, 5, 8 runs a side, cap 8"),
        "{t}"
    );
    for row in ["tpot.p50", "output_throughput", "error_rate"] {
        assert!(
            t.lines().any(|l| l.trim_start().starts_with(row)),
            "{row}: {t}"
        );
    }
}
