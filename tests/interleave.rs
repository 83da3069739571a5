//! `bench compare --interleave` and `--repeat` on the embedded simulator: control and
//! candidate runs alternate (ABBA), a real change is still caught, nothing changed passes,
//! a configuration bench cannot reach is refused before anything runs, and the stored runs
//! are judged again (`--control`, `--candidate`) to the same comparison.

mod common;
use common::read_json;

use std::path::Path;
use std::process::Command;

use common::bench;

/// A small simulator scenario (a closed loop of 4: the runs couple their requests).
fn scenario(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("il.toml");
    std::fs::write(
        &p,
        "name = \"il\"\nseed = 3\n[request]\nignore_eos = true\n[workload]\ntype = \"synthetic\"\ninput_tokens = 32\noutput_tokens = 16\n[load]\nconcurrency = 4\nrequests = 40\nwarmup = 2\n[gate]\n\"ttft.p50\" = \"30%\"\n\"ttft.p95\" = \"off\"\n\"e2e.p50\" = \"25%\"\n\"e2e.p95\" = \"off\"\n\"tpot.p95\" = \"off\"\n\"output_throughput\" = \"-20%\"\n",
    )
    .unwrap();
    p
}

fn run(args: &[&str]) -> (i32, String, String) {
    let o = bench().args(args).env("CI", "1").output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `bench compare SCENARIO --baselines STORE EXTRA…`: (exit code, stdout, stderr).
fn compare(scenario: &str, store: &str, extra: &[&str]) -> (i32, String, String) {
    let args: Vec<&str> = ["compare", scenario, "--baselines", store]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    run(&args)
}

/// `compare --control OUT/control --candidate OUT/candidate --json JSON`: (exit code, stderr).
fn rejudge(scenario: &str, store: &str, out: &Path, json: &Path) -> (i32, String) {
    rejudge_with(scenario, store, out, json, &[])
}

/// [`rejudge`] with more flags (a sequential compare's `--max-repeat`).
fn rejudge_with(
    scenario: &str,
    store: &str,
    out: &Path,
    json: &Path,
    flags: &[&str],
) -> (i32, String) {
    let (control, candidate) = (out.join("control"), out.join("candidate"));
    let mut args = vec![
        "--control",
        control.to_str().unwrap(),
        "--candidate",
        candidate.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ];
    args.extend_from_slice(flags);
    let (rc, _, err) = compare(scenario, store, &args);
    (rc, err)
}

fn c_has_no_sequence(json: &Path) -> bool {
    read_json(json).get("sequence").is_none()
}

/// Without `--repeat` an interleave is sequential: blocks are added to a look (3, 5 with
/// `--max-repeat 5`), the JSON says where it stopped and why, and the runs judged again from
/// their directories replay the same looks to the very same rows.
#[test]
fn a_sequential_interleave_stops_at_a_look_and_is_replayed_from_its_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let (s, store) = (s.as_str(), store.as_str());
    let json = dir.path().join("seq.json");
    let out = dir.path().join("seq");
    let (rc, stdout, err) = compare(
        s,
        store,
        &[
            "--interleave",
            "--max-repeat",
            "5",
            "--out",
            out.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(rc == 0 || rc == 1, "exit {rc}\n{stdout}\n{err}");
    let c = read_json(&json);
    let seq = &c["sequence"];
    let used = seq["used"].as_u64().unwrap();
    assert!(used == 3 || used == 5, "{seq}");
    assert_eq!(c["candidate_repetitions"].as_u64(), Some(used));
    let stop = seq["stop"].as_str().unwrap();
    assert!(
        ["settled", "out_of_reach"].contains(&stop) || (stop == "cap" && used == 5),
        "{seq}"
    );
    assert!(stdout.contains("sequential: "), "{stdout}");
    assert!(out.join("candidate/sequence.json").is_file());
    let again = dir.path().join("again.json");
    let (rc2, err) = rejudge_with(s, store, &out, &again, &["--max-repeat", "5"]);
    assert_eq!(rc2, rc, "{err}");
    let d = read_json(&again);
    assert_eq!(d["rows"], c["rows"]);
    assert_eq!(d["sequence"], c["sequence"]);
    // The design comes from the flags: without the cap the runs were made with, the replay
    // is refused, naming the file, rather than judged at another design.
    let (rc3, err) = rejudge(s, store, &out, &again);
    assert_eq!(rc3, 2, "{err}");
    assert!(
        err.contains("sequence.json") && err.contains("--max-repeat 5"),
        "{err}"
    );
}

/// The scenario, with a baseline of 2 repetitions recorded: (scenario path, store path).
fn recorded(dir: &Path) -> (String, String) {
    let s = scenario(dir).to_str().unwrap().to_string();
    let store = dir.join("baselines").to_str().unwrap().to_string();
    let out = dir.join("b");
    let (rc, _, err) = run(&[
        "baseline",
        &s,
        "--repeat",
        "2",
        "--baselines",
        &store,
        "-q",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{err}");
    (s, store)
}

#[test]
fn interleaved_arms_alternate_and_judge_the_change() {
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let (s, store) = (s.as_str(), store.as_str());

    // Decode twice as slow, interleaved with the baseline's configuration: a change far past
    // the threshold, so that a loaded machine (whose scheduling jitter lands on both arms and
    // squeezed a +30 % decode change to +21 % once, inconclusive at 2 blocks) cannot hide it.
    let out = dir.path().join("slow");
    let json = dir.path().join("slow.json");
    let (rc, stdout, err) = compare(
        s,
        store,
        &[
            "--explain",
            "--interleave",
            "--repeat",
            "2",
            "--opt",
            "bw_eff=0.4",
            "--out",
            out.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert_eq!(rc, 1, "{stdout}\n{err}");
    assert!(stdout.contains("REGRESSED tpot.p50"), "{stdout}");
    assert!(
        stdout.contains("alternating with the baseline's configuration"),
        "{stdout}"
    );
    // ABBA: control, candidate, candidate, control — each arm's runs in its own directory.
    let order: Vec<&str> = err
        .lines()
        .filter_map(|l| l.strip_prefix("interleave: block "))
        .collect();
    assert_eq!(
        order,
        [
            "1 of 2, baseline",
            "1 of 2, candidate",
            "2 of 2, candidate",
            "2 of 2, baseline"
        ]
    );
    for arm in ["control", "candidate"] {
        for rep in ["rep1", "rep2"] {
            assert!(
                out.join(arm).join(rep).join("run.json").exists(),
                "{arm}/{rep}"
            );
        }
    }
    let c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(c["interleaved"], true);
    assert_eq!(c["candidate_repetitions"], 2);
    // Two blocks are too few to judge in pairs: two samples of runs, and the method says so.
    assert!(c.get("paired_blocks").is_none());
    assert!(
        stdout.contains("SE from drawing each arm's runs again"),
        "{stdout}"
    );
    assert_eq!(c["change"], "bw_eff: 0.8 → 0.4");
    // The control arm ran the baseline's configuration.
    let control: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("control/rep1/run.json")).unwrap())
            .unwrap();
    assert_eq!(control["vars"]["bw_eff"], "0.8");
    assert!(control["environment"]["cpus"].as_u64().unwrap() >= 1);

    // A label the simulator does not know cannot be reached without a second endpoint.
    let (rc, _, err) = compare(
        s,
        store,
        &[
            "--interleave",
            "--var",
            "engine=v2",
            "--out",
            dir.path().join("x").to_str().unwrap(),
        ],
    );
    assert_eq!(rc, 2);
    assert!(
        err.contains("--interleave cannot reach the baseline's configuration: `engine`"),
        "{err}"
    );

    // Stored control runs must be of the baseline's configuration: the candidate's are not.
    let (rc, _, err) = compare(
        s,
        store,
        &[
            "--control",
            out.join("candidate").to_str().unwrap(),
            "--candidate",
            out.join("candidate").to_str().unwrap(),
        ],
    );
    assert_eq!(rc, 2);
    assert!(
        err.contains("ran bw_eff: 0.8 → 0.4 instead of baseline main's configuration"),
        "{err}"
    );
}

/// `--interleave --repeat 6` runs 6 blocks, the fewest the gate judges in pairs, and the
/// comparison says it did (method line, JSON). The verdict itself is not asserted: an A/A on
/// a shared machine may be inconclusive or, at most α of the time, fail.
#[test]
fn six_interleaved_blocks_are_judged_in_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let (s, store) = (s.as_str(), store.as_str());
    let json = dir.path().join("aa.json");
    let (rc, stdout, err) = compare(
        s,
        store,
        &[
            "--explain",
            "--interleave",
            "--repeat",
            "6",
            "--out",
            dir.path().join("aa").to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
    );
    assert!(rc == 0 || rc == 1, "exit {rc}\n{stdout}\n{err}");
    assert!(err.contains("interleave: block 6 of 6, baseline"), "{err}");
    assert!(c_has_no_sequence(&json));
    assert!(
        stdout.contains("SE from the 6 ABBA blocks in pairs"),
        "{stdout}"
    );
    assert!(stdout.contains("t df 5.0"), "{stdout}");
    let c = read_json(&json);
    assert_eq!(c["paired_blocks"], 6);
    assert_eq!(c["candidate_repetitions"], 6);

    // The same runs judged again from their directories: the very same comparison.
    let aa = dir.path().join("aa");
    let again = dir.path().join("again.json");
    let (rc2, err) = rejudge(s, store, &aa, &again);
    assert_eq!(rc2, rc, "{err}");
    let d = read_json(&again);
    assert_eq!(d["rows"], c["rows"]);
    assert_eq!(d["paired_blocks"], 6);
    assert_eq!(d["interleaved"], true);

    // Interrupted in its last block (the candidate's run cut short): the five blocks both
    // arms finished are judged, and what is left out is said.
    let last = aa.join("candidate/rep6/run.json");
    let mut cut = read_json(&last);
    cut["complete"] = false.into();
    std::fs::write(&last, cut.to_string()).unwrap();
    let (rc, err) = rejudge(s, store, &aa, &again);
    assert!(rc == 0 || rc == 1, "exit {rc}\n{err}");
    assert!(
        err.contains("left out")
            && err.contains("candidate/rep6/run.json (the run was interrupted)"),
        "{err}"
    );
    assert!(
        err.contains(
            "control/rep6/run.json (its block's other run is missing; judging the 5 blocks"
        ),
        "{err}"
    );
    let d = read_json(&again);
    assert_eq!(d["candidate_repetitions"], 5);
    assert_eq!(d["baseline_repetitions"], 5);
    // The interleave's own directory given as the candidate: told which two to give.
    let (rc, _, err) = compare(s, store, &["--candidate", aa.to_str().unwrap()]);
    assert_eq!(rc, 2);
    assert!(
        err.contains("an --interleave's output: give --control"),
        "{err}"
    );
    // Named as a file, the cut run is refused rather than judged.
    let (rc, _, err) = compare(s, store, &["--candidate", last.to_str().unwrap()]);
    assert_eq!(rc, 2);
    assert!(err.contains("the run is incomplete"), "{err}");
}

/// An interleave that stops part-way (here `--switch` fails on its third call, after block 2's
/// candidate run) keeps its runs and says how to judge the blocks both arms finished; that
/// command judges block 1 and leaves out the unmatched run.
#[test]
fn a_stopped_interleave_says_how_to_judge_what_it_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let count = dir.path().join("switches");
    let switch = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {0}; [ $n -lt 3 ]",
        count.display()
    );
    let out = dir.path().join("cut");
    let (rc, _, err) = compare(
        &s,
        &store,
        &[
            "--interleave",
            "--switch",
            &switch,
            "--out",
            out.to_str().unwrap(),
            "-q",
        ],
    );
    assert_eq!(rc, 2, "{err}");
    assert!(err.contains("exited with exit status: 1"), "{err}");
    let hint = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("bench compare "))
        .unwrap_or_else(|| panic!("no command to judge the kept runs in: {err}"));
    let args: Vec<&str> = std::iter::once("compare")
        .chain(hint.split(' '))
        .chain(["-q"])
        .collect();
    assert!(
        args.contains(&"--control") && args.contains(&"--baselines"),
        "{args:?}"
    );
    let (rc, _, err) = run(&args);
    assert!(rc == 0 || rc == 1, "exit {rc}\n{err}");
    assert!(
        err.contains(
            "candidate/rep2/run.json (its block's other run is missing; judging the block both"
        ),
        "{err}"
    );
    // Another compare into the same --out would mix its runs with these: refused first.
    let (rc, _, err) = compare(
        &s,
        &store,
        &["--interleave", "--out", out.to_str().unwrap(), "-q"],
    );
    assert_eq!(rc, 2);
    assert!(
        err.contains("already holds runs of an earlier command"),
        "{err}"
    );
    assert!(!err.contains("interleave: block"), "nothing ran: {err}");
}

/// What bench prints of a `--switch` command never holds the API key, should the command
/// (against advice) carry it.
#[test]
fn a_switch_command_is_printed_without_the_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let key = "sk-test-0123456789abcdef";
    let o = bench()
        .args([
            "compare",
            &s,
            "--baselines",
            &store,
            "--interleave",
            "--repeat",
            "1",
        ])
        .args(["--switch", &format!("test {key} = {key}")])
        .args(["--out", dir.path().join("k").to_str().unwrap(), "-q"])
        .env("CI", "1")
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("switching the server to the baseline (test <redacted>"),
        "{err}"
    );
    assert!(!err.contains("0123456789"), "{err}");
}

/// A signal while the interleave waits for its `--switch` command (here the third call, after
/// block 2's candidate run, which sleeps) finds no run under way and ends the process at once;
/// it still says where the finished runs are and how to judge them, not only "no run under
/// way; exiting".
#[cfg(unix)]
#[test]
fn a_signal_during_a_switch_says_how_to_judge_what_was_kept() {
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let (s, store) = recorded(dir.path());
    let (count, waiting) = (dir.path().join("switches"), dir.path().join("waiting"));
    let switch = format!(
        "n=$(cat {0} 2>/dev/null || echo 0); n=$((n + 1)); echo $n > {0}; if [ $n -ge 3 ]; then touch {1}; exec sleep 20 >/dev/null 2>&1; fi",
        count.display(),
        waiting.display()
    );
    let out = dir.path().join("sig");
    let child = bench()
        .args(["compare", &s, "--baselines", &store, "--interleave"])
        .args(["--switch", &switch, "--out", out.to_str().unwrap(), "-q"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(120);
    while !waiting.exists() {
        assert!(Instant::now() < until, "the third switch never came");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let done = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(
        err.contains("terminated (SIGTERM): no run under way; exiting")
            && err.contains("the runs finished so far are kept under")
            && err.contains(&format!(
                "--control {0}/control --candidate {0}/candidate",
                out.display()
            )),
        "{err}"
    );
    assert!(out.join("candidate/rep2/run.json").is_file());
}
