//! SIGTERM (what CI runners and Kubernetes send on cancel) stops a run like Ctrl-C: the
//! partial run is written, marked incomplete, exit 2; a second signal ends the grace at once.
//! Before the fix SIGTERM killed `bench` with no run.json at all.
#![cfg(unix)]

mod common;

use common::{Config, Fault, Log};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
}

/// Waits for the child (killing it after a minute, which fails the test rather than hang it).
fn finish(mut child: Child) -> (Option<i32>, String) {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code(), err);
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("bench did not end within a minute of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn run_json(out: &Path) -> serde_json::Value {
    let bytes = std::fs::read(out.join("run.json")).expect("a partial run.json is written");
    serde_json::from_slice(&bytes).unwrap()
}

#[test]
fn sigterm_keeps_the_partial_run_like_ctrl_c() {
    let cfg = Config {
        token_gap: Duration::from_millis(30),
        ..Config::default()
    };
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = common::start_run(dir.path(), addr, "concurrency = 2\nrequests = 200", "30");
    common::wait_for_requests(&log, 4);
    sigterm(&child);
    let (code, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("terminated (SIGTERM)"), "{err}");
    let run = run_json(&out);
    assert_eq!(run["complete"], false);
    let c = &run["summary"]["counts"];
    let errors = common::errors_total(c);
    let (sent, ok, aborted) = (
        c["sent"].as_u64().unwrap(),
        c["ok"].as_u64().unwrap(),
        c["aborted"].as_u64().unwrap(),
    );
    assert_eq!(sent, ok + errors + aborted, "{c}");
    assert!(ok >= 2, "requests in flight finished within the grace: {c}");
    assert!(c["not_sent"].as_u64().unwrap() > 0, "{c}");
}

#[test]
fn a_second_signal_ends_the_grace_at_once() {
    // Every request stalls (30 s before its first token) and the grace is 10 minutes: only
    // the second signal can end this run within the test's minute.
    let mut cfg = Config::default();
    for i in 0..4 {
        cfg.faults.insert(i, Fault::Stall);
    }
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let (child, out) = common::start_run(dir.path(), addr, "concurrency = 2\nrequests = 4", "600");
    common::wait_for_requests(&log, 2);
    sigterm(&child);
    std::thread::sleep(Duration::from_millis(300));
    sigterm(&child);
    let (code, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("SIGTERM) again"), "{err}");
    let run = run_json(&out);
    assert_eq!(run["complete"], false);
    assert_eq!(
        run["summary"]["counts"]["aborted"], 2,
        "{}",
        run["summary"]["counts"]
    );
}

/// A server whose answers take ≈ 3.2 s (8 tokens, 400 ms apart) and a scenario of 2 requests
/// at concurrency 2, so both go out at once: a signal once the server has both comes when a
/// repetition has nothing left to send. (The server's log, the directory, the scenario.)
fn two_slow_requests() -> (std::sync::Arc<Log>, tempfile::TempDir, std::path::PathBuf) {
    let cfg = Config {
        token_gap: Duration::from_millis(400),
        ..Config::default()
    };
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 2\nrequests = 2");
    (log, dir, scenario)
}

#[test]
fn a_signal_after_the_last_request_was_sent_stops_the_next_repetition() {
    // SIGTERM once the server has repetition 1's two requests: repetition 1 finishes whole,
    // and `baseline --repeat 3` must not carry on with 2 and 3 as if no one had asked it to
    // stop (it did before: the signal was spent on a run that had no more to stop).
    let (log, dir, scenario) = two_slow_requests();
    let child = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("baseline")
        .arg(&scenario)
        .arg("--baselines")
        .arg(dir.path().join("store"))
        .args(["--repeat", "3", "-q"])
        .current_dir(dir.path())
        .env("CI", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    common::wait_for_requests(&log, 2);
    sigterm(&child);
    let (code, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no further run started"), "{err}");
    let completions = |log: &Log| {
        log.received
            .lock()
            .unwrap()
            .iter()
            .filter(|r| r.path.contains("completions"))
            .count()
    };
    assert_eq!(completions(&log), 2, "no request of repetition 2 was sent");
    assert!(
        !dir.path().join("store").exists(),
        "no baseline is saved from a stopped command"
    );
    let reps: Vec<_> = std::fs::read_dir(dir.path().join("results"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|r| r.unwrap().path())
        .collect();
    assert_eq!(reps.len(), 1, "only repetition 1 ran: {reps:?}");
    assert!(reps[0].ends_with("rep1"), "{reps:?}");
    assert_eq!(run_json(&reps[0])["complete"], true, "and it is whole");
    // Said as it is: between runs, repetition 2 never announced; and how to keep repetition 1.
    assert!(
        err.contains("between runs: no further run started (repetition 2 was not)"),
        "{err}"
    );
    assert!(!err.contains("repetition 2 of 3"), "{err}");
    assert!(
        err.contains("the 1 finished repetitions are kept under") && err.contains(" --from "),
        "{err}"
    );
}

#[test]
fn a_stopped_compare_says_how_to_judge_the_runs_it_kept() {
    // The same late signal during repetition 2 of `compare --repeat 3`: repetitions 1 and 2
    // are whole, 3 never starts, and the error names the command that judges the two.
    let (log, dir, scenario) = two_slow_requests();
    let store = dir.path().join("store");
    let bench = |args: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_bench"));
        c.args(args)
            .arg(&scenario)
            .arg("--baselines")
            .arg(&store)
            .current_dir(dir.path())
            .env("CI", "1")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        c
    };
    let ok = bench(&["baseline", "--repeat", "1", "-q"])
        .status()
        .unwrap();
    assert!(ok.success());
    let out = dir.path().join("cand");
    let child = bench(&[
        "compare",
        "--repeat",
        "3",
        "-q",
        "--out",
        out.to_str().unwrap(),
    ])
    .spawn()
    .unwrap();
    common::wait_for_requests(&log, 6); // the baseline's 2, repetition 1's 2, repetition 2's 2
    sigterm(&child);
    let (code, err) = finish(child);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no further run started"), "{err}");
    assert!(
        err.contains("the 2 candidate runs finished are kept under")
            && err.contains(&format!("--candidate {}", out.display())),
        "{err}"
    );
    assert_eq!(run_json(&out.join("rep2"))["complete"], true);
    assert!(!out.join("rep3").exists());
}
