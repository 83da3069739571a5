//! Signals on bad days: stderr a closed pipe, a `--start-at` wait, the first `--switch`
//! command, two signals back to back. Each must act — the partial run kept, or the process
//! ended saying why — never be ignored or meet the default disposition.
#![cfg(unix)]

mod common;

use common::{Config, Fault};
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

fn bench() -> Command {
    let mut c = common::bench_ci();
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

/// The child's stderr, line by line, on a channel (and every line kept for the report).
fn lines(child: &mut Child) -> Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(err).lines() {
            let Ok(l) = l else { return };
            if tx.send(l).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits for a stderr line containing `want`; every line seen so far.
fn wait_for_line(rx: &Receiver<String>, want: &str, seen: &mut String) {
    let until = Instant::now() + Duration::from_secs(60);
    while Instant::now() < until {
        if let Ok(l) = rx.recv_timeout(Duration::from_millis(50)) {
            seen.push_str(&l);
            seen.push('\n');
            if l.contains(want) {
                return;
            }
        }
    }
    panic!("no line with `{want}` within a minute: {seen}");
}

/// Sends `signal` `times` times, 20 ms apart (closer, the kernel itself keeps one pending
/// standard signal and drops the next).
fn kill(child: &Child, signal: &str, times: usize) {
    let pid = child.id().to_string();
    let script = vec![format!("kill -{signal} {pid}"); times].join("; sleep 0.02; ");
    assert!(Command::new("sh")
        .args(["-c", &script])
        .status()
        .unwrap()
        .success());
}

/// The exit code, within a minute (the test fails rather than hang).
fn exit_code(mut child: Child) -> Option<i32> {
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            use std::os::unix::process::ExitStatusExt;
            return status.code().or(status.signal().map(|s| 128 + s));
        }
        if Instant::now() > until {
            let _ = child.kill();
            panic!("bench did not end within a minute of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn drain(rx: &Receiver<String>, seen: &mut String) {
    while let Ok(l) = rx.recv_timeout(Duration::from_millis(200)) {
        seen.push_str(&l);
        seen.push('\n');
    }
}

#[test]
fn sigterm_with_stderr_a_closed_pipe_still_keeps_the_partial_run() {
    let cfg = Config {
        token_gap: Duration::from_millis(30),
        ..Config::default()
    };
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, out) =
        common::start_run(dir.path(), addr, "concurrency = 2\nrequests = 200", "30");
    // Nobody reads stderr any more: every write to it fails (EPIPE).
    drop(child.stderr.take());
    common::wait_for_requests(&log, 4);
    kill(&child, "TERM", 1);
    assert_eq!(exit_code(child), Some(2));
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], false);
}

#[test]
fn a_signal_during_a_start_at_wait_stops_the_run_before_it_sends() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let s = common::patient_scenario(dir.path(), addr, "concurrency = 1\nrequests = 4");
    let out = dir.path().join("out");
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 300;
    let mut child = bench()
        .arg("run")
        .arg(&s)
        .arg("--out")
        .arg(&out)
        .arg("--start-at")
        .arg(at.to_string())
        .spawn()
        .unwrap();
    let rx = lines(&mut child);
    let mut seen = String::new();
    wait_for_line(&rx, "waiting", &mut seen);
    kill(&child, "TERM", 1);
    assert_eq!(exit_code(child), Some(2), "{seen}");
    drain(&rx, &mut seen);
    assert!(seen.contains("terminated (SIGTERM)"), "{seen}");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["complete"], false);
    assert_eq!(log.received.lock().unwrap().len(), 0, "a request was sent");
}

#[test]
fn a_signal_during_the_first_switch_command_ends_the_compare_saying_so() {
    let (addr, _log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let s = common::patient_scenario(dir.path(), addr, "concurrency = 1\nrequests = 2");
    let store = dir.path().join("store");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("baseline")
        .arg(&s)
        .arg("--baselines")
        .arg(&store)
        .args(["--repeat", "2", "-q", "--var", "cfg=a", "--out"])
        .arg(dir.path().join("b"))
        .env("CI", "1")
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    for signal in ["TERM", "INT"] {
        let mut child = bench()
            .arg("compare")
            .arg(&s)
            .arg("--baselines")
            .arg(&store)
            .args(["--var", "cfg=b", "--interleave", "--repeat", "2"])
            .args(["--switch", "sleep 30 # {arm}", "--out"])
            .arg(dir.path().join(format!("c-{signal}")))
            .spawn()
            .unwrap();
        let rx = lines(&mut child);
        let mut seen = String::new();
        wait_for_line(&rx, "switching the server", &mut seen);
        let t0 = Instant::now();
        kill(&child, signal, 1);
        let code = exit_code(child);
        drain(&rx, &mut seen);
        assert_eq!(code, Some(2), "SIG{signal}: {seen}");
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "SIG{signal} waited for the command"
        );
        assert!(
            seen.contains("no run under way; exiting"),
            "SIG{signal}: {seen}"
        );
        assert!(!seen.contains("10 minutes"), "SIG{signal}: {seen}");
    }
}

#[test]
fn two_signals_back_to_back_count_as_two() {
    // Every request stalls and the grace is 10 minutes: only a second signal ends this run
    // before the stall (30 s) does, and both are sent within 20 ms.
    let mut cfg = Config::default();
    for i in 0..4 {
        cfg.faults.insert(i, Fault::Stall);
    }
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, _out) =
        common::start_run(dir.path(), addr, "concurrency = 2\nrequests = 4", "600");
    let rx = lines(&mut child);
    common::wait_for_requests(&log, 2);
    let t0 = Instant::now();
    kill(&child, "TERM", 2);
    let code = exit_code(child);
    assert!(
        t0.elapsed() < Duration::from_secs(20),
        "the second signal was lost"
    );
    let mut seen = String::new();
    drain(&rx, &mut seen);
    assert_eq!(code, Some(2), "{seen}");
    assert!(seen.contains("SIGTERM) again"), "{seen}");
}
