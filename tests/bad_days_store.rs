//! The baseline store on bad days: two processes storing the same new name at once (exactly
//! one wins, the other says so, nothing is replaced), an interrupted or unwritable
//! `bench baseline` that says where its runs are and how to store them without running them
//! again (`--from`), and a read-only store refused before the first run.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A tiny chat scenario on the simulator: 8 requests, 16 tokens in, 8 out.
fn scenario(dir: &Path) -> PathBuf {
    let p = dir.join("t.toml");
    std::fs::write(
        &p,
        "name = \"t\"\nseed = 5\n[request]\nignore_eos = true\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 8\n[load]\nconcurrency = 2\nrequests = 8\n",
    )
    .unwrap();
    p
}

/// One run of the scenario under `out`.
fn one_run(s: &Path, out: &Path) {
    let o = common::bench()
        .arg("run")
        .arg(s)
        .arg("--out")
        .arg(out)
        .arg("-q")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
}

fn run_id(dir: &Path) -> String {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap();
    v["run_id"].as_str().unwrap().to_string()
}

/// Two `bench baseline --from` processes started together for the same new name, 50 times:
/// never both succeed, and the stored file is the winner's, whole.
#[test]
fn two_processes_storing_one_new_name_never_both_succeed() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    one_run(&s, &a);
    one_run(&s, &b);
    let ids = [run_id(&a), run_id(&b)];
    let mut wins = [0, 0];
    for round in 0..50 {
        let store = dir.path().join(format!("store{round}"));
        let spawn = |from: &Path| {
            common::bench()
                .arg("baseline")
                .arg(&s)
                .arg("--from")
                .arg(from)
                .arg("--baselines")
                .arg(&store)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (pa, pb) = (spawn(&a), spawn(&b));
        let (oa, ob) = (
            pa.wait_with_output().unwrap(),
            pb.wait_with_output().unwrap(),
        );
        let codes = [oa.status.code(), ob.status.code()];
        let winner = match codes {
            [Some(0), Some(2)] => 0,
            [Some(2), Some(0)] => 1,
            _ => panic!(
                "round {round}: exits {codes:?}\n{}\n{}",
                text(&oa),
                text(&ob)
            ),
        };
        let loser = [&oa, &ob][1 - winner];
        let said = text(loser);
        assert!(
            said.contains("stored by another process") || said.contains("exists"),
            "round {round}: {said}"
        );
        let stored: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(store.join("t/main.json")).unwrap())
                .unwrap();
        assert_eq!(
            stored["repetitions"][0]["run_id"].as_str().unwrap(),
            ids[winner],
            "round {round}: the loser's runs replaced the winner's"
        );
        wins[winner] += 1;
    }
    println!("winners: {wins:?}");
}

/// An unwritable store is refused before any run; `--from` stores runs already made and
/// refuses runs of other traffic.
#[test]
fn an_unwritable_store_is_refused_before_the_runs_and_from_stores_what_was_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path());
    // A file where the store's directory would be: nothing can be written under it.
    let blocked = dir.path().join("blocked");
    std::fs::write(&blocked, "not a directory").unwrap();
    let out = dir.path().join("runs");
    let o = common::bench()
        .arg("baseline")
        .arg(&s)
        .arg("--baselines")
        .arg(&blocked)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("cannot store a baseline in"), "{t}");
    assert!(!out.exists(), "a run was made before the store was checked");

    let a = dir.path().join("a");
    one_run(&s, &a);
    let store = dir.path().join("store");
    let o = common::bench()
        .arg("baseline")
        .arg(&s)
        .arg("--from")
        .arg(&a)
        .arg("--baselines")
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(store.join("t/main.json").is_file());
    // Runs of other traffic are not this scenario's baseline.
    let other = dir.path().join("other.toml");
    std::fs::write(
        &other,
        std::fs::read_to_string(&s)
            .unwrap()
            .replace("requests = 8", "requests = 9"),
    )
    .unwrap();
    let o = common::bench()
        .arg("baseline")
        .arg(&other)
        .arg("--from")
        .arg(&a)
        .arg("--baselines")
        .arg(&store)
        .arg("--name")
        .arg("x")
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("other traffic"), "{t}");
}
