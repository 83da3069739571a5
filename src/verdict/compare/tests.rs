//! The compare's own tests: one variable at a time, models, contention, a slower host and a
//! server with more behind it named beside the verdicts they could explain.

use super::*;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::output::record;
use crate::testkit::lognormal_run as run;
use crate::verdict::baseline as store;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn cfg() -> GateConfig {
    crate::testkit::gate_config(500)
}

fn vars(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn one_variable_at_a_time() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut reps: Vec<RunResult> = (0..3).map(|_| run(300, 40.0, 0.0, &mut rng)).collect();
    for r in &mut reps {
        r.vars = vars(&[("prefix_cache", "off"), ("engine", "x")]);
    }
    let base = Baseline::new("main", reps).unwrap();
    let mut cand = run(300, 40.0, 0.0, &mut rng);
    cand.vars = vars(&[("prefix_cache", "off"), ("engine", "x")]);
    let c = compare(&base, std::slice::from_ref(&cand), false, &cfg()).unwrap();
    assert_eq!(c.change, "none (A/A)");
    assert!(!c.notes.iter().any(|n| n.starts_with("model:")));
    // Another model asked for, and no var says so: "A/A" would hide it.
    let mut other = cand.clone();
    other.model = "m-awq".into();
    let mut base_m = base.clone();
    base_m
        .repetitions
        .iter_mut()
        .for_each(|r| r.model = "m".into());
    let c = compare(&base_m, std::slice::from_ref(&other), false, &cfg()).unwrap();
    assert!(
        c.notes.iter().any(|n| n.contains(
            "`m`, the candidate's for `m-awq` — a different model is a change of its own"
        )),
        "{:?}",
        c.notes
    );
    other.vars.insert("prefix_cache".into(), "on".into());
    let c = compare(&base_m, std::slice::from_ref(&other), false, &cfg()).unwrap();
    assert!(c
        .notes
        .contains(&"model: `m` → `m-awq`, with the change the vars name".to_string()));
    cand.vars.insert("prefix_cache".into(), "on".into());
    let c = compare(&base, std::slice::from_ref(&cand), false, &cfg()).unwrap();
    assert_eq!(c.change, "prefix_cache: off → on");
    assert!(c.attributable);
    cand.vars.insert("quant".into(), "int4".into());
    let e = compare(&base, std::slice::from_ref(&cand), false, &cfg())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("more than one variable changed") && e.contains("quant: ∅ → int4"),
        "{e}"
    );
    let c = compare(&base, std::slice::from_ref(&cand), true, &cfg()).unwrap();
    assert!(!c.attributable);
    let rows = record::comparison_rows(&c, "me", "");
    assert!(rows
        .iter()
        .all(|r| r.change.starts_with("unattributable: ")));
    cand.scenario_hash = "other".into();
    assert!(compare(&base, std::slice::from_ref(&cand), true, &cfg())
        .unwrap_err()
        .to_string()
        .contains("not comparable"));
}

#[test]
fn record_appends_under_one_header_and_refuses_foreign_csv() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let base = Baseline::new(
        "main",
        (0..3).map(|_| run(200, 40.0, 0.0, &mut rng)).collect(),
    )
    .unwrap();
    let cand: Vec<_> = (0..3).map(|_| run(200, 60.0, 0.0, &mut rng)).collect();
    let c = compare(&base, &cand, false, &cfg()).unwrap();
    assert!(c.regressed);
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("records.csv");
    record::append(&p, &record::comparison_rows(&c, "=cmd", "first")).unwrap();
    record::append(&p, &record::comparison_rows(&c, "me", "second")).unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert_eq!(text.matches("date,owner,scenario").count(), 1);
    assert_eq!(text.lines().count(), 1 + 2 * c.rows.len());
    assert!(text.contains("'=cmd"), "owner cells are formula-escaped");
    let ttft = text.lines().find(|l| l.contains(",ttft.p50,")).unwrap();
    assert!(ttft.contains(",regressed,"));
    assert!(
        text.contains("ttft.p95 +"),
        "side effects name the other regressed metrics"
    );
    std::fs::write(&p, "a,b\n1,2\n").unwrap();
    assert!(record::append(&p, &record::comparison_rows(&c, "me", "")).is_err());
}

#[test]
fn corrupt_or_foreign_baselines_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("b.json");
    for (text, expect) in [
        ("{not json", "not valid JSON"),
        (
            "{\"kind\": \"bench-baseline\", \"schema_version\": 99}",
            "schema_version",
        ),
        ("{\"schema_version\": 1}", "not a bench baseline"),
    ] {
        std::fs::write(&p, text).unwrap();
        let e = store::load(&p).unwrap_err().to_string();
        assert!(e.contains(expect), "{e}");
    }
    assert!(store::load(&dir.path().join("missing.json"))
        .unwrap_err()
        .to_string()
        .contains("bench baseline SCENARIO"));
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut one = run(10, 1.0, 0.0, &mut rng);
    one.scenario_hash = one.scenario.traffic_hash();
    let b = Baseline::new("main", vec![one]).unwrap();
    store::save(&b, &p, true).unwrap();
    assert_eq!(store::load(&p).unwrap().repetitions.len(), 1);
    assert!(store::save(&b, &p, false)
        .unwrap_err()
        .to_string()
        .contains("--force"));
}

#[test]
fn a_change_of_mode_is_named_and_not_called_a_regression() {
    use crate::verdict::gate::tests::phased_run;
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    // Every baseline run in phase, every candidate run out of phase: nothing else changed.
    let base = Baseline::new(
        "main",
        (0..3).map(|_| phased_run(false, &mut rng)).collect(),
    )
    .unwrap();
    let cand: Vec<RunResult> = (0..3).map(|_| phased_run(true, &mut rng)).collect();
    let c = compare(&base, &cand, false, &cfg()).unwrap();
    assert!(!c.regressed, "{:#?}", c.rows);
    let tpot = c
        .rows
        .iter()
        .find(|r| r.metric.key() == "tpot.p50")
        .unwrap();
    assert_eq!(tpot.verdict, Verdict::Inconclusive);
    assert!(
        tpot.reason.contains("a change of mode, not of speed"),
        "{}",
        tpot.reason
    );
    assert!(
        c.notes[0].starts_with("the runs changed mode (prefill/decode phase), not speed")
            && c.notes[0].contains("baseline 6"),
        "{:?}",
        c.notes
    );
    // The same shift in TPOT alone (TTFT and E2E unmoved) is a regression.
    let slow: Vec<RunResult> = (0..3)
        .map(|_| {
            let mut r = phased_run(false, &mut rng);
            for q in &mut r.requests {
                q.tpot_us = q.tpot_us.map(|t| t * 2.0);
            }
            let data = crate::testkit::data(r.requests.clone(), 2);
            r.summary = crate::metrics::summary::summarize(&data, &r.scenario.slo, true).0;
            r
        })
        .collect();
    assert!(compare(&base, &slow, false, &cfg()).unwrap().regressed);
}

/// Runs with a recorded CPU pressure: the baseline's on a quiet machine (≈ 3 %), the
/// candidate's beside a busy neighbour (≈ 40 %), and a little slower for it.
fn pressured(pressure: f64, drift: f64, rng: &mut ChaCha8Rng) -> RunResult {
    use rand::Rng;
    let mut r = run(300, 40.0, drift, rng);
    r.run_id = format!("r{}", rng.random::<u32>());
    r.environment = Some(crate::model::environment::RunEnvironment {
        cpus: 2,
        cpu_pressure_pct: Some(pressure + rng.random_range(-1.0..1.0)),
        ..Default::default()
    });
    r
}

#[test]
fn a_slower_host_and_a_server_that_served_far_more_are_named() {
    use crate::model::server::ServerMetrics;
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    // `served`: tokens the server had processed before the run; each run serves 40,000.
    let mk = |cal: f64, served: f64, drift: f64, rng: &mut ChaCha8Rng| {
        use rand::Rng;
        let mut r = run(300, 40.0, drift, rng);
        r.run_id = format!("r{}", rng.random::<u32>());
        r.environment = Some(crate::model::environment::RunEnvironment {
            cpus: 2,
            calibration_us: Some(cal * rng.random_range(0.99..1.01)),
            ..Default::default()
        });
        r.server_metrics = Some(ServerMetrics {
            served_tokens_before: Some(served),
            prompt_tokens: Some(30_000.0),
            generation_tokens: Some(10_000.0),
            ..Default::default()
        });
        r
    };
    // A baseline of 3 runs on a fresh server and a host at 3,000 µs.
    let reps: Vec<RunResult> = (0..3)
        .map(|i| mk(3000.0, 40_000.0 * i as f64, 0.0, &mut rng))
        .collect();
    let base = Baseline::new("main", reps).unwrap();
    // The candidate on a host 20 % slower, right after the baseline.
    let slow: Vec<RunResult> = (0..3)
        .map(|i| mk(3600.0, 120_000.0 + 40_000.0 * i as f64, 0.2, &mut rng))
        .collect();
    let c = compare(&base, &slow, false, &cfg()).unwrap();
    let note = c.notes.iter().find(|n| n.contains("calibration workload"));
    assert!(
        note.is_some_and(|n| n.contains("% slower before the candidate's runs")),
        "{:?}",
        c.notes
    );
    assert!(
        !c.notes.iter().any(|n| n.starts_with("server:")),
        "{:?}",
        c.notes
    );
    let ttft = c
        .row(Metric::Latency(Latency::Ttft, Quantile::P50))
        .unwrap();
    assert!(
        ttft.reason.contains("the host was slower"),
        "{}",
        ttft.reason
    );
    // The same host, but 40× the baseline's traffic served before the candidate's runs.
    let late: Vec<RunResult> = (0..3)
        .map(|i| mk(3000.0, 4_800_000.0 + 40_000.0 * i as f64, 0.2, &mut rng))
        .collect();
    let c = compare(&base, &late, false, &cfg()).unwrap();
    let note = c.notes.iter().find(|n| n.starts_with("server:"));
    assert!(
        note.is_some_and(|n| n.contains("40× what it had") && n.contains("--interleave")),
        "{:?}",
        c.notes
    );
    assert!(
        !c.notes.iter().any(|n| n.contains("calibration")),
        "{:?}",
        c.notes
    );
    let ttft = c
        .row(Metric::Latency(Latency::Ttft, Quantile::P50))
        .unwrap();
    assert!(ttft.reason.contains("accumulated state"), "{}", ttft.reason);
    // A restarted server (counters went down): nothing said.
    let restarted: Vec<RunResult> = (0..3)
        .map(|i| mk(3000.0, 40_000.0 * i as f64, 0.0, &mut rng))
        .collect();
    let c = compare(&base, &restarted, false, &cfg()).unwrap();
    assert!(
        !c.notes.iter().any(|n| n.starts_with("server:")),
        "{:?}",
        c.notes
    );
}

#[test]
fn contention_in_one_arm_is_named_beside_the_verdicts_it_could_explain() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let reps: Vec<RunResult> = (0..3).map(|_| pressured(3.0, 0.0, &mut rng)).collect();
    let base = Baseline::new("main", reps).unwrap();
    let cand: Vec<RunResult> = (0..3).map(|_| pressured(40.0, 0.3, &mut rng)).collect();
    let c = compare(&base, &cand, false, &cfg()).unwrap();
    let note = c.notes.iter().find(|n| n.contains("more CPU contention"));
    assert!(
        note.is_some_and(|n| n.contains("candidate's runs") && n.contains("--interleave")),
        "{:?}",
        c.notes
    );
    let ttft = c
        .row(Metric::Latency(Latency::Ttft, Quantile::P50))
        .unwrap();
    assert_eq!(ttft.verdict, Verdict::Regressed);
    assert!(
        ttft.reason.contains("different CPU contention"),
        "{}",
        ttft.reason
    );
    // The same runs under the same pressure: nothing said.
    let calm: Vec<RunResult> = (0..3).map(|_| pressured(3.0, 0.3, &mut rng)).collect();
    let c = compare(&base, &calm, false, &cfg()).unwrap();
    assert!(
        !c.notes.iter().any(|n| n.contains("CPU contention")),
        "{:?}",
        c.notes
    );
}

#[test]
fn a_run_whose_client_sent_late_is_refused() {
    let records: Vec<_> = (0..50u64)
        .map(|i| crate::model::record::RequestRecord {
            send_lag_us: 9_000,
            ttft_us: Some(20_000),
            e2e_us: Some(30_000),
            sent_us: i * 1000 + 9_000,
            end_us: i * 1000 + 39_000,
            intended_us: i * 1000,
            ..crate::testkit::record(i, crate::model::record::Outcome::Ok)
        })
        .collect();
    let late = crate::testkit::run_of(records, crate::testkit::scenario(""), 4);
    let why = environment::client_bound(&late).unwrap();
    assert!(why.contains("median send lag 9.0 ms"), "{why}");
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    assert!(environment::client_bound(&run(300, 40.0, 0.0, &mut rng)).is_none());
}

#[test]
fn a_simulator_option_newer_than_the_baseline_is_no_change_at_its_default() {
    let vars = |kv: &[(&str, &str)]| -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let old = vars(&[
        ("target", "bench-sim"),
        ("profile", "small-gpu"),
        ("bw_eff", "0.8"),
    ]);
    let mut new = old.clone();
    new.insert("reasoning_tokens".into(), "0".into());
    assert!(diff_vars(&old, &new).is_empty());
    assert!(diff_vars(&new, &old).is_empty());
    new.insert("reasoning_tokens".into(), "20".into());
    let d = diff_vars(&old, &new);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].to_string(), "reasoning_tokens: ∅ → 20");
    // Against an endpoint a var is what the user named: absent and set differ.
    let ep = vars(&[("engine", "vllm")]);
    let mut ep2 = ep.clone();
    ep2.insert("reasoning_tokens".into(), "0".into());
    assert_eq!(diff_vars(&ep, &ep2).len(), 1);
}
