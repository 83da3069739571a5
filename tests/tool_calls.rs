//! A tool-calling workload (`tools` in `[request.extra]`) against the simulator, whose answer
//! to a request with tools is a call of the first one, streamed as `delta.tool_calls` pieces
//! (`{"query": "…"}`, one piece a step): the reply is generated text (not an empty output),
//! `tool_call` is timed at its first piece and `tool_args` at its last, against the
//! simulator's own token times.

mod common;

#[test]
fn a_streamed_tool_call_is_timed_from_its_first_piece_to_its_complete_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("t.toml");
    std::fs::write(
        &s,
        "name = \"tools\"\nseed = 6\n[request]\nignore_eos = true\n[request.extra]\ntools = [{ type = \"function\", function = { name = \"search\", description = \"Search the web\", parameters = { type = \"object\", properties = { query = { type = \"string\" } }, required = [\"query\"] } } }]\n[workload]\ntype = \"synthetic\"\ninput_tokens = 32\noutput_tokens = 12\n[load]\nconcurrency = 2\nrequests = 10\n",
    )
    .unwrap();
    let log = dir.path().join("truth.jsonl");
    let run = common::run_ok(
        &s,
        &dir.path().join("o"),
        &["--sim-truth-log", log.to_str().unwrap()],
    );
    let truth = common::sim_truth(&log);
    for r in run["requests"].as_array().unwrap() {
        assert_eq!(r["outcome"], "ok", "{r}");
        assert_eq!(r["finish_reason"], "tool_calls");
        assert_eq!(r["output_tokens"], 12);
        let d = &r["stream"];
        assert_eq!(
            d["tool_call_us"], r["ttft_us"],
            "the call is the first generated text: {r}"
        );
        assert_eq!(
            d["tool_args_us"], r["e2e_us"],
            "its arguments end the reply: {r}"
        );
        let t = &truth[&r["index"].as_u64().unwrap()];
        let at = |k: &str| t[k].as_i64().unwrap() - t["arrival_us"].as_i64().unwrap();
        assert!(
            d["tool_call_us"].as_i64().unwrap() >= at("first_token_us"),
            "{r}\n{t}"
        );
        let last = t["token_us"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_i64()
            .unwrap()
            - t["arrival_us"].as_i64().unwrap();
        assert!(d["tool_args_us"].as_i64().unwrap() >= last);
    }
    let summary = &run["summary"];
    assert_eq!(summary["tokens"]["tool_calls"], summary["counts"]["ok"]);
    let names: Vec<&str> = summary["latency"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"tool_call") && names.contains(&"tool_args"),
        "{names:?}"
    );
}
