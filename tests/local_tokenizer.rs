//! `--tokenizer FILE` end to end on the embedded simulator, whose tokenizer is one token per
//! whitespace word plus a chat template (BOS, role headers): the fixture `tokenizer-words.json`
//! counts the words, the probe request measures the template, and together they must give
//! every prompt exactly its targeted length — which the uncalibrated run does not.

mod common;

use std::path::Path;

use common::bench;

fn scenario(dir: &Path, api: &str) -> std::path::PathBuf {
    let p = dir.join(format!("{api}.toml"));
    std::fs::write(
        &p,
        format!(
            r#"name = "tok-{api}"
api = "{api}"
seed = 9
[workload]
type = "synthetic"
input_tokens = {{ dist = "uniform", min = 20, max = 60 }}
output_tokens = 2
[load]
concurrency = 2
requests = 6
"#
        ),
    )
    .unwrap();
    p
}

fn run(scenario: &Path, out: &Path, extra: &[&str]) -> serde_json::Value {
    common::run_ok(scenario, out, extra)
}

fn lengths(run: &serde_json::Value) -> Vec<(u64, u64)> {
    run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["outcome"] == "ok")
        .map(|r| {
            (
                r["prompt_tokens"].as_u64().unwrap(),
                r["input_tokens_target"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_local_tokenizer_plus_the_probed_overhead_gives_exact_lengths() {
    let dir = tempfile::tempdir().unwrap();
    let tok = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tokenizer-words.json");
    for api in ["chat", "completions"] {
        let s = scenario(dir.path(), api);
        let plain = run(&s, &dir.path().join(format!("{api}-plain")), &[]);
        assert!(
            lengths(&plain).iter().any(|(got, want)| got != want),
            "{api}: without calibration the template makes lengths differ"
        );
        let cal = run(
            &s,
            &dir.path().join(format!("{api}-cal")),
            &["--tokenizer", tok.to_str().unwrap()],
        );
        let how = cal["prompt_lengths"].as_str().unwrap();
        assert!(
            how.starts_with("calibrated with the local tokenizer") && how.contains("probe"),
            "{how}"
        );
        let l = lengths(&cal);
        assert_eq!(l.len(), 6);
        assert!(l.iter().all(|(got, want)| got == want), "{api}: {l:?}");
    }
}

#[test]
fn a_bad_tokenizer_file_is_a_usage_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "chat");
    let bad = dir.path().join("broken-tokenizer.json");
    std::fs::write(&bad, "{\"model\": 3}").unwrap();
    let o = bench()
        .args([
            "run",
            s.to_str().unwrap(),
            "-q",
            "--tokenizer",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("broken-tokenizer.json"), "{err}");
}
