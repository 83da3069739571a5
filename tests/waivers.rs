//! Accepted trade-offs end to end on the embedded simulator: a decode made slower regresses
//! TPOT; judged again with a gate file whose waiver names that metric and change it reads
//! `accepted` and exits 0 (headline, record and history say so); with the waiver expired, or
//! naming another metric, it fails as before, the expired one saying its date.

mod common;
use common::{bench, read_json};
use std::path::Path;

fn run(args: &[&str]) -> (i32, String) {
    let o = bench().args(args).env("CI", "1").output().unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code().unwrap_or(-1), text)
}

/// A gate file gating TPOT p50 at 10 %, with one waiver.
fn gate(dir: &Path, name: &str, metric: &str, expires: &str) -> String {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "[gate]\n\"tpot.p50\" = \"10%\"\n\n[[waiver]]\nmetric = \"{metric}\"\nchange = \"bw_eff\"\nreason = \"a smaller batch budget, chosen for memory (PR 7)\"\nowner = \"alice\"\nexpires = \"{expires}\"\n"
        ),
    )
    .unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn a_waiver_accepts_its_trade_off_until_it_expires() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let scenario = d.join("w.toml");
    std::fs::write(
        &scenario,
        "name = \"w\"\nseed = 5\n[request]\nignore_eos = true\n[workload]\ntype = \"synthetic\"\ninput_tokens = 32\noutput_tokens = 16\n[load]\nconcurrency = 2\nrequests = 24\n[gate]\n\"ttft.p50\" = \"off\"\n\"ttft.p95\" = \"off\"\n\"ttft.p99\" = \"off\"\n\"tpot.p95\" = \"off\"\n\"tpot.p99\" = \"off\"\n\"e2e.p50\" = \"off\"\n\"e2e.p95\" = \"off\"\n\"output_throughput\" = \"off\"\n\"error_rate\" = \"off\"\n",
    )
    .unwrap();
    let (s, store) = (scenario.to_str().unwrap(), d.join("b"));
    let store = store.to_str().unwrap();
    let (rc, text) = run(&[
        "baseline",
        s,
        "--repeat",
        "3",
        "--baselines",
        store,
        "-q",
        "--out",
        d.join("base").to_str().unwrap(),
    ]);
    assert_eq!(rc, 0, "{text}");
    let cand = d.join("cand");
    let (rc, text) = run(&[
        "compare",
        s,
        "--baselines",
        store,
        "--opt",
        "bw_eff=0.4",
        "--repeat",
        "3",
        "-q",
        "--out",
        cand.to_str().unwrap(),
    ]);
    assert_eq!(rc, 1, "a decode 2x slower regresses TPOT: {text}");
    let judge = |gate: &str, json: &Path, record: &Path| {
        run(&[
            "compare",
            s,
            "--baselines",
            store,
            "--candidate",
            cand.to_str().unwrap(),
            "--gate",
            gate,
            "--json",
            json.to_str().unwrap(),
            "--record",
            record.to_str().unwrap(),
        ])
    };

    let (json, record) = (d.join("accepted.json"), d.join("record.csv"));
    let (rc, text) = judge(
        &gate(d, "ok.toml", "tpot.p50", "2099-12-31"),
        &json,
        &record,
    );
    assert_eq!(rc, 0, "{text}");
    assert!(
        text.contains("PASS — 1 accepted trade-off: tpot.p50 (waiver expires 2099-12-31)"),
        "{text}"
    );
    assert!(text.contains("ACCEPTED tpot.p50"), "{text}");
    let c = read_json(&json);
    let row = c["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "tpot.p50")
        .unwrap()
        .clone();
    assert_eq!(row["verdict"], "accepted");
    assert_eq!(row["waiver"]["owner"], "alice");
    let csv = std::fs::read_to_string(&record).unwrap();
    let line = csv.lines().find(|l| l.contains(",tpot.p50,")).unwrap();
    assert!(
        line.contains(",accepted,") && line.contains("waived by alice (expires 2099-12-31)"),
        "{line}"
    );
    let (rc, text) = run(&["history", json.to_str().unwrap()]);
    assert_eq!(rc, 0, "{text}");
    assert!(text.contains('A'), "{text}");

    let expired = d.join("expired.json");
    let (rc, text) = judge(
        &gate(d, "old.toml", "tpot.p50", "2020-01-31"),
        &expired,
        &record,
    );
    assert_eq!(rc, 1, "{text}");
    assert!(
        text.contains("tpot.p50: its waiver by alice expired on 2020-01-31"),
        "{text}"
    );
    assert_eq!(read_json(&expired)["regressed"], true);

    let other = d.join("other.json");
    let (rc, text) = judge(
        &gate(d, "other.toml", "ttft.p50", "2099-12-31"),
        &other,
        &record,
    );
    assert_eq!(rc, 1, "{text}");
    assert!(!text.contains("accepted"), "{text}");

    let (rc, text) = judge(
        &gate(d, "bad.toml", "tpot.p5O", "2099-12-31"),
        &other,
        &record,
    );
    assert_eq!(rc, 2, "{text}");
    assert!(
        text.contains("bad.toml: waiver 1: `metric` = \"tpot.p5O\""),
        "{text}"
    );
}
