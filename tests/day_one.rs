//! A new user's first day and an attacker's bad day: refusals that are knowable before any
//! traffic come before it, and files that lie are errors.

mod common;

use common::Config;
use std::path::Path;
use std::process::{Command, Output};

fn bench() -> Command {
    common::bench_ci()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `bench validate` of a scenario file written from `toml` (as `name` in `dir`): asserts exit 2
/// and returns what it printed.
fn refused_at_validate(dir: &Path, name: &str, toml: &str) -> String {
    let s = dir.join(name);
    std::fs::write(&s, toml).unwrap();
    let o = bench().arg("validate").arg(&s).output().unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    t
}

/// Records a 2-repetition baseline of `scenario` into `store`; the server's request count after.
fn record(scenario: &Path, store: &Path, out: &Path, log: &common::Log) -> usize {
    let o = bench()
        .arg("baseline")
        .arg(scenario)
        .arg("--baselines")
        .arg(store)
        .args(["--repeat", "2", "-q", "--out"])
        .arg(out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    log.received.lock().unwrap().len()
}

#[test]
fn a_compare_that_cannot_be_judged_is_refused_before_any_request() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 4");
    let store = dir.path().join("store");
    let sent = record(&scenario, &store, &dir.path().join("b"), &log);
    let cases: [(&[&str], &str); 3] = [
        (
            &["--requests", "6"],
            "differs from baseline main's (scenario hash",
        ),
        (
            &["--var", "quant=int8", "--var", "spec=3"],
            "more than one variable changed (quant: ∅ → int8, spec: ∅ → 3)",
        ),
        (&["--seed", "9"], "seed: 5 → 9"),
    ];
    for (i, (flags, want)) in cases.into_iter().enumerate() {
        let o = bench()
            .arg("compare")
            .arg(&scenario)
            .arg("--baselines")
            .arg(&store)
            .args(flags)
            .args(["-q", "--out"])
            .arg(dir.path().join(format!("c{i}")))
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{flags:?}: {t}");
        assert!(t.contains(want), "{flags:?}: `{want}` not in {t}");
        assert_eq!(
            log.received.lock().unwrap().len(),
            sent,
            "{flags:?} sent requests before refusing"
        );
    }
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .args(["--requests", "6", "-q"])
        .output()
        .unwrap();
    assert!(text(&o).contains("load.requests: 4 → 6"), "{}", text(&o));
}

#[test]
fn a_simulator_baseline_against_an_endpoint_is_refused_before_any_request() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"s\"\nseed = 1\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 4\n",
    )
    .unwrap();
    let store = dir.path().join("store");
    let o = bench()
        .arg("baseline")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .args(["--repeat", "2", "-q", "--out"])
        .arg(dir.path().join("b"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .arg("--endpoint")
        .arg(format!("http://{addr}/v1"))
        .args(["--model", "test-model", "-q", "--out"])
        .arg(dir.path().join("c"))
        .output()
        .unwrap();
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("recorded on the embedded simulator"), "{t}");
    assert_eq!(log.received.lock().unwrap().len(), 0);
}

#[test]
fn a_model_id_from_the_server_is_scrubbed_of_the_key_and_escapes() {
    let key = "sk-day-one-0123456789abcdef";
    let cfg = Config {
        model_id: Some("m-{key}\u{1b}[31m-red".into()),
        ..Config::default()
    };
    let (addr, log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    // The scenario names a model; this run must discover it instead.
    let toml = std::fs::read_to_string(&scenario)
        .unwrap()
        .replace("model = \"test-model\"\n", "");
    std::fs::write(&scenario, toml).unwrap();
    let out = dir.path().join("out");
    let o = bench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    let mut all = text(&o);
    for e in std::fs::read_dir(&out).unwrap() {
        all += &std::fs::read_to_string(e.unwrap().path()).unwrap_or_default();
    }
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(!all.contains("0123456789abcdef"), "the key leaked: {all}");
    assert!(!all.contains('\u{1b}'), "a raw ESC reached the output");
    assert!(all.contains("m-<redacted>"), "{all}");
    // The requests still name the model as served.
    let sent = log.received.lock().unwrap();
    let chat = sent.iter().find(|r| r.path.contains("chat")).unwrap();
    assert_eq!(chat.body["model"], format!("m-{key}\u{1b}[31m-red"));
}

#[test]
fn a_baseline_name_must_be_a_plain_name() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        "name = \"s\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 2\n",
    )
    .unwrap();
    let store = dir.path().join("a/b/store");
    for name in ["../../../victim", "/abs", "a/b", "..", ""] {
        for cmd in [&["baseline", "--force"][..], &["compare"]] {
            let o = bench()
                .arg(cmd[0])
                .arg(&scenario)
                .arg("--baselines")
                .arg(&store)
                .args(&cmd[1..])
                .args(["-q", "--name", name])
                .current_dir(dir.path())
                .output()
                .unwrap();
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{cmd:?} --name {name:?}: {t}");
            assert!(t.contains("--name"), "{cmd:?} --name {name:?}: {t}");
        }
    }
    assert!(!dir.path().join("victim.json").exists());
    assert!(!dir.path().join("a").exists(), "nothing was written");
}

#[test]
fn simulator_options_no_device_has_are_refused_not_panicked_on() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for opt in [
        "bw_eff=1e-300",
        "mfu=1e-300",
        "tflops=1e-300",
        "bandwidth_gbs=1e-300",
        "link_gbs=1e300",
        "params_b=1e300",
    ] {
        let o = bench()
            .arg("run")
            .arg(root.join("scenarios/smoke.toml"))
            .args(["--opt", opt, "-q", "--requests", "1"])
            .arg("--out")
            .arg(tempfile::tempdir().unwrap().path().join("x"))
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "--opt {opt}: {t}");
        let key = opt.split('=').next().unwrap();
        assert!(t.contains(&format!("`{key}` must be between")), "{t}");
        assert!(!t.contains("panicked"), "{t}");
    }
}

#[test]
fn a_run_whose_every_request_failed_shows_no_latency_and_no_connection() {
    // A port nobody listens on: every connect is refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), port, "", "concurrency = 2\nrequests = 6");
    let out = dir.path().join("out");
    let o = bench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let t = text(&o);
    assert!(t.contains("0 ok"), "{t}");
    assert!(t.contains("no connection could be opened"), "{t}");
    assert!(!t.contains("connections opened"), "{t}");
    let ttft_row = t
        .lines()
        .find(|l| l.trim_start().starts_with("ttft "))
        .unwrap();
    assert!(
        ttft_row.contains('—') && !ttft_row.contains("0.000"),
        "{ttft_row}"
    );
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    let ttft = run["summary"]["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "ttft")
        .unwrap();
    assert_eq!(ttft["count"], 0);
    assert!(ttft["p50"].is_null(), "{ttft}");
    let csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let row = csv.lines().find(|l| l.starts_with("ttft,")).unwrap();
    assert!(!row.contains("0.000"), "{row}");
}

#[test]
fn quiet_silences_repetition_lines_and_a_log_gets_progress_lines() {
    let (addr, log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    let store = dir.path().join("store");
    record(&scenario, &store, &dir.path().join("b"), &log);
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .args(["--repeat", "2", "-q", "--out"])
        .arg(dir.path().join("c"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("repetition"), "{err}");
    // Without -q and without a terminal (CI), the first finished request writes a line.
    let o = bench()
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.path().join("r"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("progress: 1/2 requests in"), "{err}");
}

#[test]
fn against_takes_the_previous_steps_repetitions_and_one_run_each_is_no_abba() {
    let (addr, _log) = common::spawn_background(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 2\nrequests = 24");
    let step = |out: &str, extra: &[&str]| {
        let o = bench()
            .arg("run")
            .arg(&scenario)
            .args(["-q", "--out"])
            .arg(dir.path().join(out))
            .args(extra)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    };
    for i in 1..=3 {
        step(&format!("step1/rep{i}"), &[]);
    }
    step("step2-one", &["--var", "x=1"]);
    step("step1-one", &[]);
    // Three runs of the previous step: latency rows are judged (not left to one run).
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--against")
        .arg(dir.path().join("step1"))
        .args(["--repeat", "3", "-q", "--out"])
        .arg(dir.path().join("cmp"))
        .output()
        .unwrap();
    let t = text(&o);
    assert!(t.contains("3 stored runs") || t.contains("3 runs"), "{t}");
    assert!(!t.contains("one run a side"), "{t}");
    // One stored run against one other: no claim that they alternated.
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--against")
        .arg(dir.path().join("step1-one"))
        .arg("--candidate")
        .arg(dir.path().join("step2-one"))
        .output()
        .unwrap();
    let t = text(&o);
    assert!(!t.contains("ABBA"), "{t}");
}

#[test]
fn report_draws_a_baseline_and_a_stored_comparison() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("b.html");
    let o = bench()
        .arg("report")
        .arg(root.join("baselines/smoke/main.json"))
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("repetition 3") && html.contains("<svg"),
        "{html}"
    );
    // Without --out a baseline's page goes under results/, never into the store beside it.
    let o = bench()
        .current_dir(dir.path())
        .arg("report")
        .arg(root.join("baselines/smoke/main.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(dir
        .path()
        .join("results/baseline-smoke-main-report.html")
        .exists());
    assert!(!root.join("baselines/smoke/report.html").exists());

    let (addr, log) = common::spawn_background(Config::default());
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 2\nrequests = 20");
    let store = dir.path().join("store");
    record(&scenario, &store, &dir.path().join("b"), &log);
    let json = dir.path().join("cmp.json");
    let o = bench()
        .arg("compare")
        .arg(&scenario)
        .arg("--baselines")
        .arg(&store)
        .args(["--repeat", "2", "-q", "--out"])
        .arg(dir.path().join("c"))
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(o.status.code().unwrap() <= 1, "{}", text(&o));
    let o = bench().arg("report").arg(&json).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
    assert!(
        html.contains("<svg") && html.contains("with its interval"),
        "{html}"
    );
}

#[test]
fn a_float_json_cannot_carry_and_an_occupied_out_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let t = refused_at_validate(
        dir.path(),
        "nan.toml",
        "name = \"n\"\n[request.extra]\ntop_p = nan\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 2\n",
    );
    assert!(
        t.contains("request.extra.top_p") && t.contains("nan.toml:"),
        "{t}"
    );

    let (addr, log) = common::spawn_background(Config::default());
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 1\nrequests = 2");
    let out = dir.path().join("out");
    let run = |out: &Path| {
        bench()
            .arg("run")
            .arg(&scenario)
            .args(["-q", "--out"])
            .arg(out)
            .output()
            .unwrap()
    };
    assert_eq!(run(&out).status.code(), Some(0));
    let sent = log.received.lock().unwrap().len();
    let before = std::fs::read(out.join("run.json")).unwrap();
    let o = run(&out);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("already holds a run"), "{}", text(&o));
    assert_eq!(std::fs::read(out.join("run.json")).unwrap(), before);
    assert_eq!(log.received.lock().unwrap().len(), sent, "nothing was sent");
}

#[test]
fn inputs_that_would_exhaust_memory_are_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let t = refused_at_validate(
        dir.path(),
        "conv.toml",
        "name = \"c\"\n[workload]\ntype = \"conversation\"\nturns = 999\nuser_tokens = 2000000\noutput_tokens = 32\n[load]\nconcurrency = 1\nsessions = 2\n",
    );
    assert!(
        t.contains("workload.user_tokens") && t.contains("history"),
        "{t}"
    );

    // A JSONL dataset whose second line is 33 MB.
    let data = dir.path().join("d.jsonl");
    let long = format!("{{\"prompt\": \"{}\"}}", "a".repeat(33 << 20));
    std::fs::write(&data, format!("{{\"prompt\": \"hi\"}}\n{long}\n")).unwrap();
    let t = refused_at_validate(
        dir.path(),
        "d.toml",
        "name = \"d\"\n[workload]\ntype = \"dataset\"\npath = \"d.jsonl\"\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 2\n",
    );
    assert!(t.contains("d.jsonl:2") && t.contains("MB"), "{t}");
}

#[test]
fn repeat_zero_is_refused_alike_by_every_command() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = root.join("scenarios/smoke.toml");
    for args in [
        vec!["baseline", "--repeat", "0"],
        vec!["compare", "--repeat", "0"],
        vec!["stack", "--try", "spec=3", "--repeat", "0"],
    ] {
        let o = bench()
            .arg(args[0])
            .arg(&s)
            .args(&args[1..])
            .output()
            .unwrap();
        let t = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {t}");
        assert!(
            t.contains("--repeat must be between 1 and"),
            "{args:?}: {t}"
        );
    }
}
