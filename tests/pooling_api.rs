//! The pooling APIs against the simulator: embeddings (`api = "embeddings"`, `/v1/embeddings`)
//! and rerank (`api = "rerank"`, `/v1/rerank`), one unstreamed answer a request, sent when the
//! engine has prefilled the input. E2E is the only latency (no TTFT, TPOT or ITL rows), never
//! shorter than the server's own prefill end (`--sim-truth-log`); prompt tokens come from
//! usage; and a stored baseline of such runs is accepted and judged by `bench compare` on its
//! E2E rows.

mod common;

fn scenario(dir: &std::path::Path) -> std::path::PathBuf {
    let s = dir.join("e.toml");
    std::fs::write(
        &s,
        "name = \"emb\"\napi = \"embeddings\"\nseed = 5\n[workload]\ntype = \"synthetic\"\ninput_tokens = 96\noutput_tokens = 1\n[load]\nconcurrency = 2\nrequests = 20\nwarmup = 1\n",
    )
    .unwrap();
    s
}

#[test]
fn an_embeddings_run_is_timed_to_the_whole_answer_against_the_servers_truth() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path());
    check_pooling_run(&s, 96);
}

/// A rerank query of 24 words with three documents: the server's usage counts every
/// query–document pair (3 × the query's words, plus the documents' 2 + 3 + 4).
#[test]
fn a_rerank_run_is_timed_to_the_whole_answer_against_the_servers_truth() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("r.toml");
    std::fs::write(
        &s,
        "name = \"rerank\"\napi = \"rerank\"\nseed = 5\n[request.extra]\ndocuments = [\"first passage\", \"a second passage\", \"the third passage here\"]\n[workload]\ntype = \"synthetic\"\ninput_tokens = 24\noutput_tokens = 1\n[load]\nconcurrency = 2\nrequests = 12\nwarmup = 1\n",
    )
    .unwrap();
    check_pooling_run(&s, 3 * 24 + 9);
    // Without documents there is nothing to rank: an error naming the field, before any send.
    std::fs::write(
        &s,
        "name = \"rerank\"\napi = \"rerank\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 24\noutput_tokens = 1\n[load]\nconcurrency = 1\nrequests = 2\n",
    )
    .unwrap();
    let (code, text) = common::bench_text(&["run", s.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("request.extra.documents"), "{text}");
}

/// Runs `s` on the simulator and checks what every pooling run holds: each request ok with
/// an E2E no shorter than the server's prefill, no TTFT, at least `prompt` prompt tokens.
fn check_pooling_run(s: &std::path::Path, prompt: u64) {
    let (run, truth) = common::run_with_truth(s, &[]);
    for r in run["requests"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert!(r["ttft_us"].is_null() && r["tpot_us"].is_null(), "{r}");
        assert_eq!(r["output_tokens"], 0);
        assert!(r["prompt_tokens"].as_u64().unwrap() >= prompt, "{r}");
        let t = &truth[&r["index"].as_u64().unwrap()];
        let prefilled = t["first_token_us"].as_i64().unwrap() - t["arrival_us"].as_i64().unwrap();
        assert!(r["e2e_us"].as_i64().unwrap() >= prefilled, "{r}\n{t}");
    }
    let summary = &run["summary"];
    let names = common::latency_names(&run);
    assert_eq!(names, ["e2e", "send_lag", "queue"]);
    assert_eq!(summary["tokens"]["output_len_mismatch"], 0);
    assert_eq!(summary["tokens"]["usage_missing"], 0);
    assert!(summary["throughput"]["request_rps"].as_f64().unwrap() > 0.0);
}

#[test]
fn an_embeddings_baseline_is_stored_and_an_a_a_compare_passes_on_e2e() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path());
    let (s, b) = (s.to_str().unwrap(), dir.path().join("b"));
    let base = common::bench_text(&[
        "baseline",
        s,
        "--repeat",
        "2",
        "--baselines",
        b.to_str().unwrap(),
        "--out",
        dir.path().join("r").to_str().unwrap(),
        "-q",
    ]);
    assert_eq!(base.0, Some(0), "{}", base.1);
    let (code, text) = common::bench_text(&[
        "compare",
        s,
        "--baselines",
        b.to_str().unwrap(),
        "--out",
        dir.path().join("c").to_str().unwrap(),
        "--alpha",
        "0.001",
        "--max-repeat",
        "5",
    ]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("e2e.p50"), "{text}");
}
