//! A reasoning model with speculative decoding, served by the simulator over a real socket:
//! reasoning then answer, several tokens a chunk, usage on every chunk. The client's TTFT,
//! TTFO, reasoning tokens, TPOT and per-token ITL against the simulator's own record of when
//! it handed each token to HTTP (`--sim-truth-log`).
//!
//! The counts are compared exactly. The times are compared the only way a socket allows: the
//! client can never see a token before the server sent it, and what it measured beyond the
//! server's figure is printed (the closing figures quoted in docs come from these lines); the
//! bounds asserted are loose enough that a busy machine cannot break them.

mod common;

use serde_json::Value;

/// `extra`: lines of `[request.extra]`.
fn scenario(dir: &std::path::Path, extra: &str) -> std::path::PathBuf {
    let p = dir.join("r.toml");
    std::fs::write(
        &p,
        "name = \"reasoning\"\nseed = 4\n[request]\nfirst_token_timeout_s = 5\ntimeout_s = 20\n[request.extra]\n".to_string() + extra + "\n[workload]\ntype = \"synthetic\"\ninput_tokens = 32\noutput_tokens = 48\n[load]\nconcurrency = 2\nrequests = 12\n[sim]\nreasoning_tokens = 20\nspec = 4\nspec_alpha = 0.8\nbandwidth_gbs = 3000\ntflops = 1210\nstep_overhead_ms = 2\n",
    )
    .unwrap();
    p
}

#[test]
fn reasoning_and_multi_token_chunks_match_the_servers_truth() {
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "");
    let (run, truth) = common::run_with_truth(&s, &[]);
    let (mut ttft_extra, mut ttfo_extra, mut tpot_rel) = (Vec::new(), Vec::new(), Vec::new());
    let mut multi = 0;
    // The server's per-token gaps, defined as the client's: the tokens handed over at one
    // instant are one chunk, and a chunk of k tokens after a gap g counts k values g / k.
    let (mut truth_sum, mut truth_n) = (0.0, 0.0);
    for r in run["requests"].as_array().unwrap() {
        let t = &truth[&r["index"].as_u64().unwrap()];
        let d = &r["stream"];
        // Counts: exactly the server's.
        assert_eq!(r["output_tokens"], t["output_tokens"]);
        assert_eq!(d["reasoning_tokens"], t["reasoning_tokens"], "{r}");
        assert!(
            d.get("reasoning_counted").is_none(),
            "the simulator reports them: {r}"
        );
        if d["chunk_tokens"] == "reported" {
            multi += 1;
        }
        // Times: never before the server sent the token.
        let at = |k: &str| t[k].as_u64().unwrap() as i64 - t["arrival_us"].as_i64().unwrap();
        let (ttft, ttfo) = (
            r["ttft_us"].as_i64().unwrap(),
            d["ttfo_us"].as_i64().unwrap(),
        );
        assert!(
            ttft >= at("first_token_us") && ttfo >= at("first_answer_us"),
            "{r}\n{t}"
        );
        assert!(ttfo > ttft);
        ttft_extra.push(ttft - at("first_token_us"));
        ttfo_extra.push(ttfo - at("first_answer_us"));
        // TPOT against the server's pace over the same tokens.
        let tokens = t["token_us"].as_array().unwrap();
        let at_us: Vec<u64> = tokens.iter().map(|v| v.as_u64().unwrap()).collect();
        let mut chunks: Vec<(u64, u64)> = Vec::new(); // (time, tokens)
        for &u in &at_us {
            match chunks.last_mut() {
                Some((t, k)) if *t == u => *k += 1,
                _ => chunks.push((u, 1)),
            }
        }
        for w in chunks.windows(2) {
            truth_sum += (w[1].0 - w[0].0) as f64 / 1000.0;
            truth_n += w[1].1 as f64;
        }
        let n = tokens.len() as f64;
        let span = tokens.last().unwrap().as_f64().unwrap() - tokens[0].as_f64().unwrap();
        tpot_rel.push(r["tpot_us"].as_f64().unwrap() / (span / (n - 1.0)) - 1.0);
    }
    assert!(
        multi > 0,
        "speculative decoding sent several tokens in some chunk"
    );
    let summary = &run["summary"];
    assert_eq!(
        summary["tokens"]["reasoning"]["tokens"].as_u64().unwrap(),
        truth
            .values()
            .map(|t| t["reasoning_tokens"].as_u64().unwrap())
            .sum::<u64>()
    );
    let chunks = &summary["tokens"]["chunks"];
    assert!(chunks["mean_tokens"].as_f64().unwrap() > 1.0, "{chunks}");
    // The per-token ITL's mean is TPOT's over the same requests (one first-chunk token each).
    let lat = |name: &str| {
        summary["latency"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row"))
            .clone()
    };
    let (itl_token, itl) = (lat("itl_token"), lat("itl"));
    assert!(itl_token["count"].as_u64() > itl["count"].as_u64());
    lat("ttfo");
    lat("answer_tpot");
    let truth_itl_token = truth_sum / truth_n;
    let itl_token_rel = itl_token["mean"].as_f64().unwrap() / truth_itl_token - 1.0;
    let max = |v: &[i64]| *v.iter().max().unwrap();
    let median = |v: &[i64]| {
        let mut v = v.to_vec();
        v.sort();
        v[v.len() / 2]
    };
    let worst = tpot_rel.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    println!(
        "client beyond the server: TTFT median {} µs, max {} µs; TTFO median {} µs, max {} µs; TPOT within {:.3} % of the server's pace (worst request); itl_token mean {:.3} ms ({:+.3} % from the server's {:.3} ms), tpot mean {:.3} ms, itl (per chunk) mean {:.3} ms",
        median(&ttft_extra),
        max(&ttft_extra),
        median(&ttfo_extra),
        max(&ttfo_extra),
        worst * 100.0,
        itl_token["mean"].as_f64().unwrap(),
        itl_token_rel * 100.0,
        truth_itl_token,
        lat("tpot")["mean"].as_f64().unwrap(),
        itl["mean"].as_f64().unwrap()
    );
    assert!(max(&ttft_extra) < 200_000 && max(&ttfo_extra) < 200_000);
    assert!(worst < 0.5, "TPOT {worst}");
    assert!(itl_token_rel.abs() < 0.5, "per-token ITL {itl_token_rel}");
}

/// The server's chunks of one request by tokens carried, as it sent them: the tokens handed
/// over at one instant, split where reasoning gives way to answer (the simulator sends each
/// part as its own chunk). Returns the per-token gaps' sum (ms) and count: a chunk of k
/// tokens after a gap g counts k gaps of g / k.
fn truth_chunks(t: &Value, into: &mut std::collections::BTreeMap<u64, u64>) -> (f64, f64) {
    let reasoning = t["reasoning_tokens"].as_u64().unwrap() as usize;
    let at: Vec<u64> = t["token_us"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let mut chunks: Vec<((u64, bool), u64)> = Vec::new();
    for (i, &u) in at.iter().enumerate() {
        let key = (u, i < reasoning);
        match chunks.last_mut() {
            Some((k, n)) if *k == key => *n += 1,
            _ => chunks.push((key, 1)),
        }
    }
    for (_, n) in &chunks {
        *into.entry(*n).or_default() += 1;
    }
    chunks.windows(2).fold((0.0, 0.0), |(s, n), w| {
        (
            s + (w[1].0 .0 - w[0].0 .0) as f64 / 1000.0,
            n + w[1].1 as f64,
        )
    })
}

#[test]
fn without_per_chunk_usage_the_local_tokenizer_counts_each_chunk_as_the_server_sent_it() {
    // Usage only at the end, as llama-server sends it: several tokens a chunk, not said which.
    let dir = tempfile::tempdir().unwrap();
    let s = scenario(dir.path(), "stream_options = { include_usage = true }");
    let tok = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tokenizer-words.json"
    );
    let (run, truth) = common::run_with_truth(&s, &["--tokenizer", tok]);
    let mut want = std::collections::BTreeMap::new();
    let (mut truth_sum, mut truth_n) = (0.0, 0.0);
    for r in run["requests"].as_array().unwrap() {
        let t = &truth[&r["index"].as_u64().unwrap()];
        assert_eq!(r["output_tokens"], t["output_tokens"]);
        assert_eq!(r["stream"]["chunk_tokens"], "counted", "{r}");
        let (sum, n) = truth_chunks(t, &mut want);
        truth_sum += sum;
        truth_n += n;
    }
    let chunks = &run["summary"]["tokens"]["chunks"];
    assert_eq!(chunks["requests_counted"], 12, "{chunks}");
    assert_eq!(chunks["requests_estimated"], 0, "{chunks}");
    let got: std::collections::BTreeMap<u64, u64> = chunks["by_tokens"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), v.as_u64().unwrap()))
        .collect();
    assert_eq!(
        got, want,
        "chunks by tokens: the client's count vs the server's"
    );
    assert!(want.keys().any(|&k| k > 1), "several tokens in some chunk");
    // The per-token gaps now cover every token after each stream's first chunk.
    let itl_token = run["summary"]["latency"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "itl_token")
        .unwrap()
        .clone();
    let server = truth_sum / truth_n;
    let rel = itl_token["mean"].as_f64().unwrap() / server - 1.0;
    println!(
        "counted chunks: itl_token mean {:.3} ms over {} gaps ({:+.3} % from the server's {:.3} ms)",
        itl_token["mean"].as_f64().unwrap(),
        itl_token["count"],
        rel * 100.0,
        server
    );
    assert_eq!(itl_token["count"].as_f64().unwrap(), truth_n);
    assert!(rel.abs() < 0.5, "per-token ITL {rel}");
}
