//! The Responses API (`api = "responses"`) against the simulator's `/v1/responses`, which
//! streams vLLM's typed events: the client's TTFT, TTFO, output and reasoning tokens against
//! the simulator's own record of when it handed each token over (`--sim-truth-log`), as the
//! chat path is checked in `sim_reasoning.rs`.

mod common;

#[test]
fn a_responses_stream_is_timed_at_its_first_text_delta_against_the_servers_truth() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("r.toml");
    std::fs::write(
        &s,
        "name = \"responses\"\napi = \"responses\"\nseed = 4\n[request]\nignore_eos = true\n[workload]\ntype = \"synthetic\"\ninput_tokens = 32\noutput_tokens = 24\n[load]\nconcurrency = 2\nrequests = 10\n[sim]\nreasoning_tokens = 6\nreply_clock = \"vllm\"\n",
    )
    .unwrap();
    let (run, truth) = common::run_with_truth(&s, &[]);
    assert_eq!(run["api"], "responses");
    for r in run["requests"].as_array().unwrap() {
        let t = &truth[&r["index"].as_u64().unwrap()];
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["output_tokens"], t["output_tokens"]);
        assert_eq!(
            r["output_tokens"], 24,
            "ignore_eos and max_output_tokens honoured"
        );
        assert_eq!(r["stream"]["reasoning_tokens"], t["reasoning_tokens"]);
        // `response.created` opens the stream: a text-less event, not the first token.
        assert!(r["preamble_chunks"].as_u64().unwrap() >= 1, "{r}");
        let at = |k: &str| t[k].as_i64().unwrap() - t["arrival_us"].as_i64().unwrap();
        assert!(
            r["ttft_us"].as_i64().unwrap() >= at("first_token_us"),
            "{r}\n{t}"
        );
        assert!(r["stream"]["ttfo_us"].as_i64().unwrap() >= at("first_answer_us"));
        // vLLM's per-request metrics ride on `response.completed`.
        let prefill = r["server"]["prefill_us"].as_i64().unwrap();
        assert!((prefill - t["server_prefill_us"].as_i64().unwrap()).abs() <= 1);
        assert_eq!(r["finish_reason"], "stop");
    }
    assert_eq!(run["summary"]["counts"]["ok"], 10);
}
