//! `bench import` of real `vllm bench serve --save-detailed` files (tests/fixtures/vllm: vLLM
//! 0.32.0 against bench's simulator, as it is and with a 30 % slower decode), judged by
//! `bench compare`: an A/A passes, the slowed server fails; every figure comes from the file,
//! its definitions named; a file that is not one is refused, naming it.

mod common;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/vllm/{name}.json"))
}

fn bench(args: &[&std::ffi::OsStr]) -> (Option<i32>, String) {
    common::text_of(common::bench_ci().args(args))
}

fn import(out: &Path, files: &[&str]) -> (Option<i32>, String) {
    let mut args: Vec<std::ffi::OsString> = vec!["import".into()];
    args.extend(files.iter().map(|f| fixture(f).into_os_string()));
    args.extend([
        "--out".into(),
        out.as_os_str().to_owned(),
        "--name".into(),
        "vsim".into(),
    ]);
    let refs: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    bench(&refs)
}

fn compare(base: &Path, cand: &Path) -> (Option<i32>, String) {
    let scenario = base.join("scenario.toml");
    bench(&[
        "compare".as_ref(),
        scenario.as_os_str(),
        "--against".as_ref(),
        base.as_os_str(),
        "--candidate".as_ref(),
        cand.as_os_str(),
        "--explain".as_ref(),
    ])
}

#[test]
fn imported_vllm_runs_keep_vllms_figures_and_say_how_they_differ() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("a");
    let (code, text) = import(&out, &["a1", "a2"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("role-only chunk"), "{text}");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("rep1/run.json")).unwrap()).unwrap();
    let src: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("a1")).unwrap()).unwrap();
    assert_eq!(run["tool"]["name"], "vllm bench serve");
    assert_eq!(run["imported"]["tool"], "vllm bench serve");
    let sha = run["imported"]["sha256"].as_str().unwrap();
    assert_eq!(sha.len(), 64);
    assert_eq!(run["summary"]["counts"]["ok"], 20);
    // Each request's TTFT and E2E are vLLM's, in µs (a closed loop: no queue added).
    let reqs = run["requests"].as_array().unwrap();
    for (r, (t, l)) in reqs.iter().zip(
        src["ttfts"]
            .as_array()
            .unwrap()
            .iter()
            .zip(src["latencies"].as_array().unwrap()),
    ) {
        let want = (t.as_f64().unwrap() * 1e6).round();
        assert_eq!(r["ttft_us"].as_f64().unwrap(), want);
        assert_eq!(
            r["e2e_us"].as_f64().unwrap(),
            (l.as_f64().unwrap() * 1e6).round()
        );
    }
    // The scenario the settings describe: a closed loop of 4, 20 requests, the chat API.
    let scenario = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(
        scenario.contains("api = \"chat\"")
            && scenario.contains("concurrency = 4")
            && scenario.contains("requests = 20"),
        "{scenario}"
    );
    assert!(scenario.contains("ignore_eos = false"), "{scenario}");
}

#[test]
fn the_gate_passes_an_imported_a_a_and_fails_an_imported_slower_server() {
    let dir = tempfile::tempdir().unwrap();
    let (a, a2, s) = (
        dir.path().join("a"),
        dir.path().join("a2"),
        dir.path().join("s"),
    );
    assert_eq!(import(&a, &["a1", "a2"]).0, Some(0));
    assert_eq!(import(&a2, &["a3"]).0, Some(0));
    assert_eq!(import(&s, &["s1", "s2"]).0, Some(0));
    let (code, text) = compare(&a, &a2);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("imported from vllm bench serve (baseline 2 of 2 runs, candidate 1 of 1)"),
        "{text}"
    );
    let (code, text) = compare(&a, &s);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("REGRESSED tpot.p50"), "{text}");
}

#[test]
fn a_file_that_is_not_a_detailed_vllm_result_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("summary-only.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("a1")).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("ttfts");
    std::fs::write(&bad, v.to_string()).unwrap();
    let out = dir.path().join("out");
    let (code, text) = bench(&[
        "import".as_ref(),
        bad.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(
            "summary-only.json: not a `vllm bench serve --save-result --save-detailed` result"
        ),
        "{text}"
    );
    assert!(!out.exists(), "wrote {out:?}");
    // Two benchmarks of other settings are not one arm.
    let other = dir.path().join("other.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("a1")).unwrap()).unwrap();
    v["max_concurrency"] = 8.into();
    std::fs::write(&other, v.to_string()).unwrap();
    let f = fixture("a1");
    let (code, text) = bench(&[
        "import".as_ref(),
        f.as_os_str(),
        other.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("other.json is another benchmark"), "{text}");
}

fn guidellm_fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/guidellm/concurrent-2.json")
}

/// GuideLLM records each request's intended send (`targeted_start`) and its first token:
/// the import times TTFT from the intended send, as bench does, and keeps the client's
/// lateness as its send lag; the report holds no gaps, so ITL is absent, not guessed.
#[test]
fn a_guidellm_report_is_timed_from_the_intended_send() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("g");
    let f = guidellm_fixture();
    let (code, text) = bench(&[
        "import".as_ref(),
        f.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("ITL is absent"), "{text}");
    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("rep1/run.json")).unwrap()).unwrap();
    let src: serde_json::Value = serde_json::from_slice(&std::fs::read(&f).unwrap()).unwrap();
    assert_eq!(run["tool"]["name"], "guidellm");
    assert_eq!(run["tool"]["version"], "0.8.1");
    assert_eq!(run["summary"]["counts"]["ok"], 8);
    let mut want: Vec<(u64, u64)> = src["benchmarks"][0]["requests"]["successful"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let t = &r["info"]["timings"];
            let s = |k: &str| t[k].as_f64().unwrap();
            let us = |x: f64| (x * 1e6).round() as u64;
            (
                us(s("first_token_iteration")) - us(s("targeted_start")),
                us(s("request_start")) - us(s("targeted_start")),
            )
        })
        .collect();
    let mut got: Vec<(u64, u64)> = run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["ttft_us"].as_u64().unwrap(),
                r["send_lag_us"].as_u64().unwrap(),
            )
        })
        .collect();
    want.sort();
    got.sort();
    for ((wt, wl), (gt, gl)) in want.iter().zip(&got) {
        assert!(
            wt.abs_diff(*gt) <= 1 && wl.abs_diff(*gl) <= 1,
            "want {want:?}, got {got:?}"
        );
    }
    let latency = run["summary"]["latency"].as_array().unwrap();
    let count = |n: &str| {
        latency
            .iter()
            .find(|l| l["name"] == n)
            .map(|l| l["count"].as_u64().unwrap())
    };
    assert_eq!(
        (count("ttft"), count("itl")),
        (Some(8), Some(0)),
        "{latency:?}"
    );
    let scenario = std::fs::read_to_string(out.join("scenario.toml")).unwrap();
    assert!(
        scenario.contains("concurrency = 2") && scenario.contains("requests = 8"),
        "{scenario}"
    );
}

/// A client that sent late set the pace: the compare refuses the run, naming GuideLLM's
/// client; a sweep's several loads are not one run.
#[test]
fn a_late_guidellm_client_and_a_sweep_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(guidellm_fixture()).unwrap()).unwrap();
    for r in v["benchmarks"][0]["requests"]["successful"]
        .as_array_mut()
        .unwrap()
    {
        let t = &mut r["info"]["timings"];
        t["targeted_start"] = (t["targeted_start"].as_f64().unwrap() - 0.2).into();
    }
    let late = dir.path().join("late.json");
    std::fs::write(&late, v.to_string()).unwrap();
    let out = dir.path().join("late");
    let (code, text) = bench(&[
        "import".as_ref(),
        late.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(
        text.contains("warning: run") && text.contains("guidellm's client sent its requests late"),
        "{text}"
    );
    let scenario = out.join("scenario.toml");
    let (code, text) = bench(&[
        "compare".as_ref(),
        scenario.as_os_str(),
        "--against".as_ref(),
        out.as_os_str(),
        "--candidate".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains("guidellm's client sent its requests late"),
        "{text}"
    );
    let b = v["benchmarks"][0].clone();
    v["benchmarks"].as_array_mut().unwrap().push(b);
    let sweep = dir.path().join("sweep.json");
    std::fs::write(&sweep, v.to_string()).unwrap();
    let out = dir.path().join("sweep");
    let (code, text) = bench(&[
        "import".as_ref(),
        sweep.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
    ]);
    assert_eq!(code, Some(2), "{text}");
    assert!(
        text.contains(
            "sweep.json: not a guidellm JSON report of one benchmark: it holds 2 benchmarks"
        ),
        "{text}"
    );
}
