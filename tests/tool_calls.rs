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
    let (run, truth) = common::run_with_truth(&s, &[]);
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
    let names = common::latency_names(&run);
    assert!(
        names.iter().any(|n| n == "tool_call") && names.iter().any(|n| n == "tool_args"),
        "{names:?}"
    );
}

/// A conversation with `tools`: the simulator calls the tool when the last message is the
/// user's and answers in text when it is the tool's result, so each session alternates a
/// call (turns 1, 3) and an answer to its result (turns 2, 4). The simulator refuses a `tool`
/// message that answers no call of an earlier assistant message (HTTP 400), so every turn ok
/// means the history carried the call with its id and the result named it.
#[test]
fn a_conversation_returns_each_calls_result_in_the_next_turn() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("agent.toml");
    std::fs::write(
        &s,
        "name = \"agent\"\nseed = 8\n[request]\nignore_eos = true\n[request.extra]\ntools = [{ type = \"function\", function = { name = \"search\", parameters = { type = \"object\", properties = { query = { type = \"string\" } } } } }]\n[workload]\ntype = \"conversation\"\nturns = 4\nuser_tokens = 5\noutput_tokens = 6\n[load]\nconcurrency = 2\nsessions = 3\n",
    )
    .unwrap();
    let (run, _) = common::run_with_truth(&s, &[]);
    let requests = run["requests"].as_array().unwrap();
    assert_eq!(requests.len(), 12);
    let mut by_turn = std::collections::BTreeMap::new();
    for r in requests {
        assert_eq!(r["outcome"], "ok", "{r}");
        let turn = r["turn"].as_u64().unwrap();
        let calls = r["stream"]["tool_call_us"].is_u64();
        assert_eq!(calls, turn % 2 == 1, "turn {turn}: {r}");
        let finish = if calls { "tool_calls" } else { "length" };
        assert_eq!(r["finish_reason"], finish, "{r}");
        by_turn.insert((r["session"].as_u64().unwrap(), turn), r.clone());
    }
    // Turn 2's prompt is turn 1's plus the call (a 3-token role header, the function's name,
    // the arguments' 7 words — `{"query":` and the reply's 6 — and an end token) and the
    // result (a header, the 5 words of turn 2, an end token).
    for s in 0..3 {
        let p = |t: u64| by_turn[&(s, t)]["prompt_tokens"].as_u64().unwrap();
        assert_eq!(p(2), p(1) + (3 + 1 + 7 + 1) + (3 + 5 + 1), "session {s}");
    }
    assert_eq!(run["summary"]["tokens"]["tool_calls"], 6);
}
