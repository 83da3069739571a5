//! Property tests (proptest, seeded and bounded so they are deterministic in CI):
//!
//! * random scenario files — fragments of the real schema with hostile values (0, −1, 1e308,
//!   5e-324, nan, inf, u64::MAX, wrong types, unknown keys, garbage lines) — either load or fail
//!   with `file:line:column`, never panic; those that load build a plan and its first requests
//!   without panicking;
//! * random SSE byte streams — real chunk shapes mixed with broken JSON, absurd usage,
//!   error events, stray CRs, BOMs, invalid UTF-8 and random bytes, cut at random points —
//!   served to the real binary: every request ends in exactly one known outcome, the counts add
//!   up (`sent = ok + Σ errors + aborted`) and nothing panics.
//!
//! The case counts are printed (`--nocapture`).

mod common;

use bench::config::scenario::parse;
use bench::plan::Plan;
use common::Config;
use proptest::prelude::*;
use proptest::test_runner::{Config as PtConfig, RngAlgorithm, TestRng, TestRunner};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// A deterministic runner: the same cases on every machine and every run.
fn runner(cases: u32, seed: u8) -> TestRunner {
    TestRunner::new_with_rng(
        PtConfig {
            cases,
            failure_persistence: None,
            ..PtConfig::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    )
}

// ---------------------------------------------------------------- scenario files

fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("1".to_string()),
        Just("1e308".to_string()),
        Just("5e-324".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("-inf".to_string()),
        Just("18446744073709551615".to_string()),
        Just("9223372036854775807".to_string()),
        Just("1000000000".to_string()),
        Just("0.5".to_string()),
        Just("true".to_string()),
        Just("\"\"".to_string()),
        Just("\"18446744073709551615s\"".to_string()),
        Just("\"1e308s\"".to_string()),
        Just("\"10s\"".to_string()),
        Just("\"../../x\"".to_string()),
        Just("\"poisson\"".to_string()),
        Just("\"gamma\"".to_string()),
        Just("\"lognormal\"".to_string()),
        Just("[]".to_string()),
        Just("[\"a\", \"a\"]".to_string()),
        Just("{ dist = \"lognormal\", mean = 1e308, stddev = 1 }".to_string()),
        Just("{ dist = \"uniform\", min = 5, max = 1 }".to_string()),
        Just("{ dist = \"normal\", mean = 10, stddev = -3 }".to_string()),
        Just("{ dist = \"fixed\", value = 0 }".to_string()),
        (0u64..200).prop_map(|n| n.to_string()),
        (-1e3f64..1e3).prop_map(|x| format!("{x}")),
        "[a-z_]{1,8}".prop_map(|s| format!("\"{s}\"")),
    ]
}

fn line(keys: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        8 => (prop::sample::select(keys), value()).prop_map(|(k, v)| format!("{k} = {v}")),
        1 => "[ -~]{0,20}",
        1 => (prop::sample::select(keys), value()).prop_map(|(k, v)| format!("{k} = {v}\n{k} = {v}")),
    ]
}

const TOP: &[&str] = &[
    "name",
    "api",
    "model",
    "seed",
    "endpoint",
    "description",
    "bogus",
];
const REQUEST: &[&str] = &[
    "max_tokens",
    "temperature",
    "ignore_eos",
    "timeout_s",
    "first_token_timeout_s",
    "body_vars",
];
const WORKLOAD: &[&str] = &[
    "type",
    "input_tokens",
    "output_tokens",
    "prefixes",
    "prefix_tokens",
    "suffix_tokens",
    "long_fraction",
    "salt",
];
const LOAD: &[&str] = &[
    "rate",
    "concurrency",
    "requests",
    "warmup",
    "duration",
    "arrival",
    "burstiness",
    "max_concurrency",
];
const SLO: &[&str] = &["ttft_ms", "tpot_ms", "e2e_ms"];

fn scenario_text() -> impl Strategy<Value = String> {
    let section = |name: &'static str, keys: &'static [&'static str]| {
        prop::collection::vec(line(keys), 0..5)
            .prop_map(move |ls| format!("[{name}]\n{}\n", ls.join("\n")))
    };
    (
        prop::collection::vec(line(TOP), 0..2),
        prop::option::weighted(0.3, section("request", REQUEST)),
        prop_oneof![
            3 => Just(
                "[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n"
                    .to_string()
            ),
            1 => section("workload", WORKLOAD),
        ],
        prop_oneof![
            3 => Just("[load]\nconcurrency = 1\nrequests = 3\n".to_string()),
            1 => section("load", LOAD),
        ],
        prop::option::weighted(0.3, section("slo", SLO)),
    )
        .prop_map(|(top, req, wl, load, slo)| {
            format!(
                "name = \"fuzz\"\n{}\n{}{}{}{}",
                top.join("\n"),
                req.unwrap_or_default(),
                wl,
                load,
                slo.unwrap_or_default()
            )
        })
}

#[test]
fn random_scenario_files_load_or_name_the_place_never_panic() {
    let (loaded, refused, planned) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let mut r = runner(3000, 13);
    r.run(&scenario_text(), |text| {
        match parse(&text, Path::new("fuzz.toml")) {
            Err(e) => {
                refused.fetch_add(1, Ordering::Relaxed);
                let e = e.to_string();
                prop_assert!(e.starts_with("fuzz.toml:"), "no file:line: {e}\n{text}");
            }
            Ok(s) => {
                loaded.fetch_add(1, Ordering::Relaxed);
                // Plans of up to 100k requests (a bigger one is legal but slow to build here).
                let small = s.load.requests.unwrap_or(0) <= 100_000
                    && s.load.duration_s.is_none_or(|d| d <= 3600.0);
                if small {
                    if let Ok(p) = Plan::new(&s, None) {
                        planned.fetch_add(1, Ordering::Relaxed);
                        for i in 0..p.planned().unwrap_or(3).min(3) {
                            let _ = p.spec(i);
                        }
                    }
                }
            }
        }
        Ok(())
    })
    .unwrap();
    println!(
        "scenario fuzz: 3000 files, {} loaded ({} planned and generated), {} refused with file:line, 0 panics",
        loaded.into_inner(),
        planned.into_inner(),
        refused.into_inner()
    );
}

// ---------------------------------------------------------------- SSE streams

fn piece() -> impl Strategy<Value = Vec<u8>> {
    let fixed: &[&[u8]] = &[
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}}]}\n\n",
        b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n",
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":5}}\n\n",
        b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":18446744073709551615,\"completion_tokens\":18446744073709551615}}\n\n",
        b"data: {\"choices\":[],\"usage\":{\"completion_tokens\":-1}}\n\n",
        b"data: {\"choices\":[{\"delta\":{\"content\":null}}]}\n\n",
        b"data: {\"choices\":null}\n\n",
        b"data: {\"error\":{\"message\":\"boom\"}}\n\n",
        b"event: error\ndata: {\"message\":\"x\"}\n\n",
        b"data: [DONE]\n\n",
        b"data: {not json\n\n",
        b"data: 1e999\n\n",
        b": keep-alive\n\n",
        b"\r\n",
        b"\r",
        b"\n",
        b"data: ",
        b"\xEF\xBB\xBF",
        b"\xFF\xFE\xC3",
        b"data: {\"choices\":[{\"delta\":{\"content\":\"\xC3\xA9\xE4\xB8\"}}]}\n\n",
    ];
    prop_oneof![
        6 => prop::sample::select(fixed).prop_map(|b| b.to_vec()),
        1 => (1usize..200).prop_map(|n| format!("data: {}{}\n\n", "[".repeat(n), "]".repeat(n)).into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..40),
    ]
}

/// A stream: pieces joined, then cut into reads at random points.
fn stream() -> impl Strategy<Value = Vec<Vec<u8>>> {
    // Half the streams are a well-formed reply (role, tokens, finish, usage, [DONE]) with at
    // most two hostile pieces slipped in; half are pieces in any order.
    let well_formed = (
        1usize..12,
        prop::collection::vec((any::<prop::sample::Index>(), piece()), 0..3),
    )
        .prop_map(|(tokens, inserts)| {
            let mut pieces: Vec<Vec<u8>> = vec![b"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}\n\n".to_vec()];
            for _ in 0..tokens {
                pieces.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok\"}}]}\n\n".to_vec());
            }
            pieces.push(b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\n\n".to_vec());
            pieces.push(format!("data: {{\"choices\":[],\"usage\":{{\"prompt_tokens\":9,\"completion_tokens\":{tokens}}}}}\n\n").into_bytes());
            pieces.push(b"data: [DONE]\n\n".to_vec());
            for (at, p) in inserts {
                let i = at.index(pieces.len() + 1);
                pieces.insert(i, p);
            }
            pieces
        });
    let any_order = prop::collection::vec(piece(), 0..14);
    (
        prop_oneof![well_formed, any_order],
        prop::collection::vec(any::<prop::sample::Index>(), 0..8),
    )
        .prop_map(|(pieces, cuts)| {
            let all: Vec<u8> = pieces.concat();
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(all.len() + 1)).collect();
            at.sort();
            at.dedup();
            let mut reads = Vec::new();
            let mut prev = 0;
            for c in at.into_iter().chain([all.len()]) {
                if c > prev {
                    reads.push(all[prev..c].to_vec());
                    prev = c;
                }
            }
            reads
        })
}

const KNOWN: &[&str] = &[
    "ok",
    "stream_broken",
    "malformed_chunk",
    "not_streamed",
    "server_error",
    "empty_output",
    "timeout_first_token",
    "timeout_total",
];

#[test]
fn random_sse_streams_end_in_one_known_outcome_each() {
    const PER_RUN: u64 = 8;
    let cfg = Config::default();
    let raw = cfg.raw.clone();
    let (addr, _log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(
        dir.path(),
        addr,
        "",
        &format!("concurrency = 4\nrequests = {PER_RUN}"),
    );
    let outcomes = std::sync::Mutex::new(std::collections::BTreeMap::<String, u64>::new());
    let runs = AtomicU64::new(0);
    let mut r = runner(40, 29);
    r.run(
        &prop::collection::vec(stream(), PER_RUN as usize),
        |streams| {
            *raw.lock().unwrap() = streams
                .into_iter()
                .enumerate()
                .map(|(i, s)| (i as u64, s))
                .collect();
            let out = dir
                .path()
                .join(format!("run{}", runs.fetch_add(1, Ordering::Relaxed)));
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_bench"))
                .arg("run")
                .arg(&scenario)
                .arg("--out")
                .arg(&out)
                .arg("-q")
                .env("CI", "1")
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&o.stderr);
            prop_assert!(!stderr.contains("panicked"), "{stderr}");
            prop_assert_eq!(o.status.code(), Some(0), "{}", stderr);
            let run: serde_json::Value =
                serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
            let c = &run["summary"]["counts"];
            let errors = common::errors_total(c);
            prop_assert_eq!(c["sent"].as_u64(), Some(PER_RUN));
            prop_assert_eq!(
                c["ok"].as_u64().unwrap() + errors + c["aborted"].as_u64().unwrap(),
                PER_RUN
            );
            for req in run["requests"].as_array().unwrap() {
                let o = req["outcome"].as_str().unwrap().to_string();
                prop_assert!(KNOWN.contains(&o.as_str()), "unknown outcome {}", o);
                *outcomes.lock().unwrap().entry(o).or_insert(0) += 1;
            }
            Ok(())
        },
    )
    .unwrap();
    let (outcomes, runs) = (outcomes.into_inner().unwrap(), runs.into_inner());
    let total: u64 = outcomes.values().sum();
    println!("SSE fuzz: {runs} runs, {total} streams, 0 panics; outcomes {outcomes:?}");
    assert_eq!(total, runs * PER_RUN);
    assert!(
        outcomes.len() >= 4,
        "the streams exercise several outcomes: {outcomes:?}"
    );
}

#[test]
fn any_cut_of_a_stream_decodes_like_the_whole() {
    use bench::engine::client::sse::SseDecoder;
    let decode = |reads: &[Vec<u8>]| SseDecoder::decode_all(reads.iter().map(Vec::as_slice));
    let mut r = runner(5000, 7);
    r.run(&stream(), |reads| {
        let whole = vec![reads.concat()];
        prop_assert_eq!(decode(&reads), decode(&whole));
        Ok(())
    })
    .unwrap();
    println!("SSE decoder: 5000 random streams cut at random points decode as the uncut stream");
}

#[test]
fn no_fragment_of_the_key_survives_redaction_and_the_cut() {
    use bench::engine::client::openai::truncate;
    use bench::engine::client::target::redact;
    let case = (
        "[A-Za-z0-9_-]{8,60}",
        "[ -~]{0,400}",
        "[ -~]{0,40}",
        0usize..60,
        0usize..60,
    );
    let mut r = runner(2000, 3);
    r.run(&case, |(key, before, after, from, len)| {
        // The key, or a piece of it, echoed anywhere, perhaps twice.
        let from = from.min(key.len() - 1);
        let piece = &key[from..(from + len).min(key.len())];
        let text = format!("{before}{key}{after}{piece}");
        let stored = truncate(&redact(&text, &key), 300);
        let k: Vec<char> = key.chars().collect();
        for w in k.windows(8) {
            let w: String = w.iter().collect();
            prop_assert!(
                !stored.contains(&w),
                "`{}` of `{}` left in {}",
                w,
                key,
                stored
            );
        }
        Ok(())
    })
    .unwrap();
    println!(
        "secrets: 2000 random keys echoed at random places: 0 fragments of 8+ characters stored"
    );
}

// ---------------------------------------------------------------- baseline files

type Mutation = fn(&mut serde_json::Value, &mut rand_chacha::ChaCha8Rng);

/// Structure-aware corruptions of a real baseline: each changes something a verdict reads, or
/// contradicts the rest of the file, while the file stays well-typed JSON.
fn baseline_mutations() -> Vec<(&'static str, Mutation)> {
    use rand::Rng;
    use serde_json::json;
    fn rep<'a>(
        b: &'a mut serde_json::Value,
        rng: &mut rand_chacha::ChaCha8Rng,
    ) -> &'a mut serde_json::Value {
        let n = b["repetitions"].as_array().map_or(0, |a| a.len());
        &mut b["repetitions"][rng.random_range(0..n)]
    }
    vec![
        ("schema version inside a repetition", |b, rng| {
            rep(b, rng)["schema_version"] = json!(rng.random_range(2..100))
        }),
        ("repetition duplicated", |b, rng| {
            let r = rep(b, rng).clone();
            b["repetitions"].as_array_mut().unwrap().push(r);
        }),
        ("TPOT histogram replaced by E2E's", |b, rng| {
            let r = rep(b, rng);
            r["histograms"]["tpot_us"] = r["histograms"]["e2e_us"].clone();
        }),
        ("TTFT histogram replaced by E2E's", |b, rng| {
            let r = rep(b, rng);
            r["histograms"]["ttft_us"] = r["histograms"]["e2e_us"].clone();
        }),
        ("histograms of another repetition", |b, _| {
            let other = b["repetitions"][1]["histograms"].clone();
            b["repetitions"][0]["histograms"] = other;
        }),
        ("absurd rate", |b, rng| {
            let key = ["output_tps", "request_rps", "total_tps"][rng.random_range(0..3)];
            let v = [1e300, -169.0, 0.0, 1e-300][rng.random_range(0..4)];
            rep(b, rng)["summary"]["throughput"][key] = json!(v);
        }),
        ("rate scaled", |b, rng| {
            let r = rep(b, rng);
            let t = r["summary"]["throughput"]["output_tps"].as_f64().unwrap();
            r["summary"]["throughput"]["output_tps"] = json!(t * 1.5);
        }),
        ("planned below sent", |b, rng| {
            rep(b, rng)["summary"]["counts"]["planned"] = json!(1)
        }),
        ("scenario body edited, hash kept", |b, rng| {
            let r = rep(b, rng);
            let n = r["scenario"]["load"]["requests"].as_u64().unwrap();
            r["scenario"]["load"]["requests"] = json!(n + 1 + rng.random_range(0..50));
        }),
        ("seed edited, hash kept", |b, rng| {
            rep(b, rng)["scenario"]["seed"] = json!(rng.random_range(100..1000))
        }),
        ("hash edited", |b, _| {
            b["scenario_hash"] =
                json!("0000000000000000000000000000000000000000000000000000000000000000")
        }),
        ("ends before it starts", |b, rng| {
            let r = rep(b, rng);
            let s = r["started_at"].clone();
            r["started_at"] = r["ended_at"].clone();
            r["ended_at"] = s;
        }),
        ("latency summary edited", |b, rng| {
            let k = ["p50", "p95", "mean", "max", "p90"][rng.random_range(0..5)];
            let r = rep(b, rng);
            let n = r["summary"]["latency"].as_array().unwrap().len();
            let l = &mut r["summary"]["latency"][rng.random_range(0..n)];
            let v = l[k].as_f64().unwrap();
            l[k] = json!(v * 0.8 + 0.5);
        }),
        ("another configuration in one repetition", |b, rng| {
            rep(b, rng)["vars"]["quant"] = json!("int4")
        }),
        ("ok count edited", |b, rng| {
            let r = rep(b, rng);
            let n = r["summary"]["counts"]["ok"].as_u64().unwrap();
            r["summary"]["counts"]["ok"] = json!(n + 1);
        }),
        ("a record's TTFT edited", |b, rng| {
            let r = rep(b, rng);
            if let Some(q) = r["requests"].as_array_mut().filter(|a| !a.is_empty()) {
                // A measured one: a warmup record's values are read by nothing.
                let measured: Vec<usize> = (0..q.len())
                    .filter(|&i| q[i]["warmup"] == json!(false))
                    .collect();
                let i = measured[rng.random_range(0..measured.len())];
                let t = q[i]["ttft_us"].as_u64().unwrap();
                q[i]["ttft_us"] = json!(t / 2 + 1);
            } else {
                r["summary"]["counts"]["sent"] = json!(0);
            }
        }),
        ("a record removed", |b, rng| {
            let r = rep(b, rng);
            if let Some(q) = r["requests"].as_array_mut().filter(|a| !a.is_empty()) {
                q.remove(rng.random_range(0..q.len()));
            } else {
                r["histograms"].as_object_mut().unwrap().remove("e2e_us");
            }
        }),
        ("incomplete repetition", |b, rng| {
            rep(b, rng)["complete"] = json!(false)
        }),
    ]
}

/// Mutated copies of the committed baseline — as recorded, and stored by its histograms alone
/// (what a long repetition keeps) — are never judged: every one is an error naming the file.
#[test]
fn corrupted_baselines_are_errors_never_verdicts() {
    use rand::{Rng, SeedableRng};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("baselines/smoke/main.json")).unwrap();
    let recorded: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut bare = recorded.clone();
    for r in bare["repetitions"].as_array_mut().unwrap() {
        let n = r["requests"].as_array().unwrap().len();
        r["requests"] = serde_json::json!([]);
        r["requests_omitted"] = serde_json::json!(n);
    }
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("main.json");
    let load = |v: &serde_json::Value| {
        std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
        bench::verdict::baseline::load(&p)
    };
    load(&recorded).expect("the committed baseline reads");
    load(&bare).expect("the committed baseline without records reads");
    let mutations = baseline_mutations();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(33);
    let (mut cases, mut judged) = (0, Vec::new());
    for _ in 0..400 {
        let mut b = if rng.random_bool(0.5) {
            recorded.clone()
        } else {
            bare.clone()
        };
        let mut names = Vec::new();
        for _ in 0..rng.random_range(1..=2) {
            let (name, m) = &mutations[rng.random_range(0..mutations.len())];
            m(&mut b, &mut rng);
            names.push(*name);
        }
        cases += 1;
        if load(&b).is_ok() {
            judged.push(names);
        }
    }
    println!("baseline mutations: {cases} cases, {} judged", judged.len());
    assert!(
        judged.is_empty(),
        "corrupt baselines read as whole: {judged:?}"
    );
}

// ---------------------------------------------------------------- sequence.json

/// Tamperings of a sequential compare's `sequence.json`: values a verdict reads (α, the looks)
/// set to hostile ones, wrong types, extra or missing keys, broken JSON. Each is replayed as
/// `bench compare --candidate DIR` does with the design the flags give: it must come back as
/// that very design (so every verdict and exit code is the flags' own) or be an error that
/// names the file — never another design.
#[test]
fn tampered_sequence_designs_never_judge_the_runs() {
    use bench::verdict::sequential::{Design, DEFAULT_MAX, FIRST_LOOK};
    use rand::{Rng, SeedableRng};
    let want = Design::new(FIRST_LOOK, 5, 0.001);
    let good = serde_json::to_string_pretty(&want).unwrap();
    let alphas = [
        "0",
        "-0.0",
        "1e-300",
        "5e-324",
        "0.45",
        "0.5",
        "0.4999",
        "0.05",
        "0.0011",
        "0.00099",
        "1",
        "-0.001",
        "1e308",
        "\"0.001\"",
        "null",
        "true",
        "[0.001]",
        "{}",
    ];
    let looks = [
        "[]",
        "[1]",
        "[0]",
        "[3]",
        "[3,5,8]",
        "[3,5,8,12]",
        "[5,3]",
        "[3,3,5]",
        "[3,4,5]",
        "[1,2,3,4,5]",
        "[3,5,1000]",
        "[3,5,1001]",
        "[-3,5]",
        "[3.5,5]",
        "[\"3\",\"5\"]",
        "[3,5,18446744073709551616]",
        "null",
        "5",
    ];
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(47);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sequence.json");
    let (mut cases, mut errors, mut same) = (0, 0, 0);
    for i in 0..480 {
        let alpha = alphas[rng.random_range(0..alphas.len())];
        let look = looks[rng.random_range(0..looks.len())];
        let text = match i % 8 {
            0 => format!(r#"{{"looks":{look},"alpha":{alpha}}}"#),
            1 => format!(r#"{{"alpha":{alpha},"looks":[3,5]}}"#),
            2 => format!(r#"{{"looks":{look},"alpha":0.001}}"#),
            3 => format!(r#"{{"looks":[3,5],"alpha":0.001,"alpha":{alpha}}}"#),
            4 => format!(
                r#"{{"looks":[3,5],"alpha":0.001,"max_repeat":{}}}"#,
                rng.random_range(0..20)
            ),
            5 => {
                // The real file cut or with a byte changed.
                let mut b = good.clone().into_bytes();
                let k = rng.random_range(0..b.len());
                if rng.random_bool(0.5) {
                    b.truncate(k);
                } else {
                    b[k] = rng.random();
                }
                String::from_utf8_lossy(&b).into_owned()
            }
            6 => format!(r#"{{"looks":{look}}}"#),
            _ => format!("\u{feff}{}", good.replace("0.001", alpha)),
        };
        std::fs::write(&path, &text).unwrap();
        cases += 1;
        match Design::replayed(dir.path(), Some(&want)) {
            Ok(Some(d)) => {
                assert_eq!(d, want, "{text:?} replayed as another design");
                same += 1;
            }
            Ok(None) => panic!("{text:?}: a design file was ignored"),
            Err(e) => {
                let m = e.to_string();
                assert!(m.contains("sequence.json"), "{text:?}: {m}");
                errors += 1;
            }
        }
    }
    // The untouched file replays; the default cap is another design.
    std::fs::write(&path, &good).unwrap();
    assert_eq!(
        Design::replayed(dir.path(), Some(&want)).unwrap(),
        Some(want.clone())
    );
    let default = Design::new(FIRST_LOOK, DEFAULT_MAX, 0.001);
    assert!(Design::replayed(dir.path(), Some(&default)).is_err());
    assert!(Design::replayed(dir.path(), None).is_err());
    println!(
        "sequence.json tamperings: {cases} cases, {errors} refused, {same} the flags' own design"
    );
    assert!(cases >= 400 && errors > 300, "{cases} {errors}");
}
