//! Fixtures for unit tests, shared so every test builds runs the same way: hand-made records, a
//! minimal scenario, and whole runs summarized from records exactly as a session does (no
//! servers, no clock).

use crate::engine::runner::RunData;
use crate::metrics::summary::summarize;
use crate::model::record::{Outcome, RequestRecord};
use crate::model::result::{RunResult, ToolInfo, SCHEMA_VERSION};
use crate::model::scenario::Scenario;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, LogNormal};
use std::time::Duration;

/// Request `index`: ok, intended at `index` ms, TTFT 20 ms, E2E 50 ms, 10 output tokens.
pub fn record(index: u64, outcome: Outcome) -> RequestRecord {
    RequestRecord {
        index,
        warmup: false,
        session: None,
        turn: None,
        class: String::new(),
        outcome,
        intended_us: index * 1000,
        sent_us: index * 1000 + 10,
        end_us: index * 1000 + 50_000,
        retried: false,
        queue_us: 0,
        send_lag_us: 10,
        ttft_us: Some(20_000),
        e2e_us: Some(50_000),
        tpot_us: Some(30_000.0 / 9.0),
        prompt_tokens: Some(100),
        output_tokens: 10,
        output_tokens_from_usage: true,
        usage_rejected: false,
        max_tokens: 10,
        input_tokens_target: None,
        content_chunks: 10,
        preamble_chunks: 0,
        first_event_us: None,
        cached_tokens: None,
        images: None,
        server: None,
        stream: Default::default(),
        finish_reason: Some("length".into()),
        error: None,
    }
}

/// A one-line synthetic scenario, with `extra` TOML appended (e.g. an `[slo]` table).
pub fn scenario(extra: &str) -> Scenario {
    let text = format!(
        "name = \"synthetic\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 4\n[load]\nconcurrency = 1\nrequests = 10\n{extra}\n"
    );
    crate::config::scenario::parse(&text, std::path::Path::new("synthetic.toml"))
        .expect("the fixture scenario is valid")
}

/// What a runner would have returned for `records`.
pub fn data(records: Vec<RequestRecord>, peak_concurrency: u64) -> RunData {
    RunData {
        sessions: None,
        omitted: 0,
        planned: Some(records.len() as u64),
        records,
        streams: Default::default(),
        not_sent: 0,
        peak_concurrency,
        interrupted: false,
        failure: None,
        run_start: tokio::time::Instant::now(),
        wall: Duration::from_secs(1),
    }
}

/// A whole run of `records` under `scenario`, summarized (with its histograms) as a session
/// would; ids and times are fixed so renderings are stable.
pub fn run_of(records: Vec<RequestRecord>, scenario: Scenario, peak_concurrency: u64) -> RunResult {
    let data = data(records, peak_concurrency);
    let (summary, hists) = summarize(&data, &scenario.slo, scenario.request.ignore_eos);
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: "bench".into(),
            version: "0".into(),
        },
        run_id: "r".into(),
        scenario_name: scenario.name.clone(),
        scenario_file: format!("{}.toml", scenario.name),
        // A stand-in, so snapshots stay short; a fixture saved as a baseline sets the real
        // one (`Scenario::traffic_hash`), which the store checks.
        scenario_hash: "h".into(),
        vars: Default::default(),
        endpoint: "http://127.0.0.1:1/v1".into(),
        model: "m".into(),
        api: scenario.api,
        scenario,
        prompt_lengths: "approximate".into(),
        prompt_salt: None,
        trace_reuse: None,
        started_at: chrono::DateTime::UNIX_EPOCH,
        ended_at: chrono::DateTime::UNIX_EPOCH,
        complete: true,
        failure: None,
        summary,
        server_metrics: None,
        histograms: hists.encode().expect("histograms encode"),
        requests: data.records,
        requests_omitted: 0,
        shard: None,
        windows: None,
        environment: None,
        quality: None,
        reset: None,
        idle_round_trip: None,
        imported: None,
    }
}

/// `run` again, each successful reply carrying llama.cpp's clock: prefill `prefill(ttft_us)`,
/// decode `decode_us`, and the rest of each record as `with` leaves it.
pub fn clocked(
    run: RunResult,
    prefill: impl Fn(u64) -> u64,
    decode_us: Option<u64>,
    with: impl Fn(RequestRecord) -> RequestRecord,
) -> RunResult {
    let records = run
        .requests
        .iter()
        .map(|r| {
            with(RequestRecord {
                server: Some(crate::model::record::ServerClock {
                    source: crate::model::record::ClockSource::LlamaCpp,
                    queue_us: None,
                    prefill_us: r.ttft_us.map(&prefill),
                    decode_us,
                }),
                ..r.clone()
            })
        })
        .collect();
    run_of(records, run.scenario, 1)
}

/// A run of `n` requests whose TTFT (and E2E) is log-normal with median `median_ms` and σ 0.5,
/// times a run-level drift factor e^`drift`.
pub fn lognormal_run(n: usize, median_ms: f64, drift: f64, rng: &mut ChaCha8Rng) -> RunResult {
    let d = LogNormal::new((median_ms * 1000.0).ln() + drift, 0.5).expect("valid log-normal");
    let records = (0..n as u64)
        .map(|i| {
            let t = d.sample(rng) as u64;
            RequestRecord {
                end_us: i * 1000 + t,
                sent_us: i * 1000,
                send_lag_us: 0,
                ttft_us: Some(t),
                e2e_us: Some(t),
                tpot_us: None,
                prompt_tokens: Some(10),
                output_tokens: 1,
                max_tokens: 1,
                content_chunks: 1,
                finish_reason: None,
                ..record(i, Outcome::Ok)
            }
        })
        .collect();
    let mut run = run_of(records, scenario(""), 1);
    run.run_id = String::new();
    run.endpoint = String::new();
    run.model = String::new();
    run
}

/// A seeded generator for fixtures.
pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// The default thresholds at α = 0.05 with `replicates` bootstrap draws, seed 1.
pub fn gate_config(replicates: usize) -> crate::config::thresholds::GateConfig {
    crate::config::thresholds::GateConfig {
        thresholds: crate::config::thresholds::thresholds(&[]).expect("the defaults parse"),
        alpha: 0.05,
        replicates,
        seed: 1,
    }
}

/// A comparison of two arms of three log-normal runs (median 40 ms against 52 ms, the
/// candidate's `quant: ∅ → int8`), judged with the default thresholds; with its arms.
pub fn comparison_of_arms() -> (
    crate::model::baseline::Baseline,
    Vec<RunResult>,
    crate::model::comparison::Comparison,
) {
    let mut g = rng(7);
    let reps: Vec<RunResult> = (0..3)
        .map(|_| lognormal_run(300, 40.0, 0.0, &mut g))
        .collect();
    let base = crate::model::baseline::Baseline::new("main", reps).expect("three runs");
    let cand: Vec<RunResult> = (1..=3)
        .map(|i| {
            let mut r = lognormal_run(300, 52.0, 0.0, &mut g);
            r.run_id = format!("candidate-{i}");
            r.vars.insert("quant".into(), "int8".into());
            r
        })
        .collect();
    let c = crate::verdict::compare::compare(&base, &cand, false, &gate_config(200))
        .expect("comparable");
    (base, cand, c)
}

/// [`comparison_of_arms`]'s comparison.
pub fn comparison() -> crate::model::comparison::Comparison {
    comparison_of_arms().2
}
