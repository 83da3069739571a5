//! `bench baseline` and `bench compare`: record a baseline, then judge a candidate against it
//! one variable at a time.
//!
//! Comparability first: the candidate's scenario hash must equal the baseline's (same traffic),
//! and its `vars` may differ in at most one key (the change under test) — none is an A/A check,
//! more than one is refused unless `--allow-multi`, which marks every result unattributable.
//! Then [`super::gate::evaluate`] decides each metric.

use super::{environment, figure, gate, mode};
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::comparison::{Comparison, VarChange, Verdict, COMPARE_SCHEMA};
use crate::model::result::RunResult;
use crate::model::scenario::short_hash;
use crate::model::server::ServerMetrics;
use chrono::Utc;
use std::collections::BTreeMap;

/// Server-side figures of the candidate, beside the baseline's where it has them.
pub fn server_effects(base: &Baseline, cand: &RunResult) -> Vec<String> {
    let Some(c) = &cand.server_metrics else {
        return Vec::new();
    };
    let b: Option<&ServerMetrics> = base
        .repetitions
        .first()
        .and_then(|r| r.server_metrics.as_ref());
    type Get = fn(&ServerMetrics) -> Option<f64>;
    type Fmt = fn(f64) -> String;
    let figures: [(&str, Get, Fmt); 5] = [
        (
            "prefix hit rate",
            |m| m.prefix_cache_hit_rate,
            |v| format!("{:.0} %", v * 100.0),
        ),
        (
            "acceptance",
            |m| m.spec_acceptance_rate,
            |v| format!("{v:.2}"),
        ),
        ("preemptions", |m| m.preemptions, |v| format!("{v:.0}")),
        (
            "queue time mean",
            |m| m.queue_time_mean_s,
            |v| format!("{:.1} ms", v * 1e3),
        ),
        (
            "KV peak",
            |m| m.kv_usage_peak,
            |v| format!("{:.0} %", v * 100.0),
        ),
    ];
    figures
        .iter()
        .filter_map(|(name, get, fmt)| {
            let cv = get(c)?;
            Some(match (b, b.and_then(get)) {
                (_, Some(bv)) if fmt(bv) != fmt(cv) => {
                    format!("{name} {} → {}", fmt(bv), fmt(cv))
                }
                (_, Some(_)) | (None, _) => format!("{name} {}", fmt(cv)),
                // The baseline's server was scraped but had no such figure: a prefix cache that
                // was off saw no lookups. That is a change, not the candidate's figure alone.
                (Some(_), None) if *name == "prefix hit rate" => {
                    format!("{name} none (no cache lookups) → {}", fmt(cv))
                }
                (Some(_), None) => format!("{name} not reported → {}", fmt(cv)),
            })
        })
        .collect()
}

/// The vars whose values differ, in key order. Between two simulator runs, an option one
/// side does not name and the other has at its profile's default is no change: a baseline
/// recorded before the option existed ran with that default.
pub fn diff_vars(
    base: &BTreeMap<String, String>,
    cand: &BTreeMap<String, String>,
) -> Vec<VarChange> {
    let sim = |v: &BTreeMap<String, String>| v.get("target").is_some_and(|t| t == "bench-sim");
    let profile = base
        .get("profile")
        .or(cand.get("profile"))
        .map_or("small-gpu", String::as_str);
    let changed = |k: &String| match (base.get(k), cand.get(k)) {
        (None, Some(v)) | (Some(v), None) if sim(base) && sim(cand) => {
            crate::sim::profile::SimOptions::default_entry(profile, k).as_ref() != Some(v)
        }
        (b, c) => b != c,
    };
    let mut keys: Vec<&String> = base.keys().chain(cand.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| changed(k))
        .map(|k| VarChange {
            key: k.clone(),
            baseline: base.get(k).cloned(),
            candidate: cand.get(k).cloned(),
        })
        .collect()
}

/// `prefix_cache: off → on`, `none (A/A)`, or the changes joined by commas.
pub fn describe_change(diffs: &[VarChange]) -> String {
    match diffs {
        [] => "none (A/A)".into(),
        d => d
            .iter()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Whether a candidate of `scenario` (traffic hash `hash`) with `vars` may be judged against
/// `base`: the same traffic, and at most one var changed (unless `allow_multi`). Checked before
/// any request is sent (from the run's spec) and again on the runs themselves; the refusal
/// names the fields or vars that differ and the fix. Returns the vars that changed.
pub fn comparable(
    base: &Baseline,
    hash: &str,
    scenario: &crate::model::scenario::Scenario,
    vars: &BTreeMap<String, String>,
    allow_multi: bool,
) -> Result<Vec<VarChange>, BenchError> {
    if base.scenario_hash != hash {
        let fields = base
            .repetitions
            .first()
            .map(|r| r.scenario.traffic_changes(scenario))
            .unwrap_or_default();
        let what = if fields.is_empty() {
            String::new()
        } else {
            format!(": {}", fields.join("; "))
        };
        return Err(BenchError::usage(format!(
            "not comparable: the candidate's traffic differs from baseline {}'s (scenario hash {} vs {}){what}. Judge the same traffic, or record a new baseline of this scenario: `bench baseline {} --force`",
            base.name,
            short_hash(hash),
            short_hash(&base.scenario_hash),
            base.repetitions
                .first()
                .map_or("SCENARIO", |r| r.scenario_file.as_str()),
        )));
    }
    let sim = |v: &BTreeMap<String, String>| v.get("target").is_some_and(|t| t == "bench-sim");
    match (sim(&base.vars), sim(vars)) {
        (true, false) => return Err(BenchError::usage(format!(
            "not comparable: baseline {} was recorded on the embedded simulator and the candidate runs against an endpoint; record a baseline of the endpoint first (`bench baseline SCENARIO --endpoint URL --name NAME`)",
            base.name
        ))),
        (false, true) => return Err(BenchError::usage(format!(
            "not comparable: baseline {} was recorded against an endpoint and the candidate runs on the embedded simulator; give the candidate --endpoint URL",
            base.name
        ))),
        _ => {}
    }
    let diffs = diff_vars(&base.vars, vars);
    if diffs.len() > 1 && !allow_multi {
        return Err(BenchError::usage(format!(
            "more than one variable changed ({}); change one at a time, or pass --allow-multi (results are then unattributable)",
            describe_change(&diffs)
        )));
    }
    Ok(diffs)
}

/// Builds the comparison of the candidate's runs with a baseline, refusing what is not
/// comparable.
pub fn compare(
    base: &Baseline,
    cands: &[RunResult],
    allow_multi: bool,
    cfg: &GateConfig,
) -> Result<Comparison, BenchError> {
    compare_at(base, cands, allow_multi, cfg, gate::Spend::all(cfg.alpha))
}

/// [`compare`] at one look of a sequential compare, spending `spend`.
pub fn compare_at(
    base: &Baseline,
    cands: &[RunResult],
    allow_multi: bool,
    cfg: &GateConfig,
    spend: gate::Spend,
) -> Result<Comparison, BenchError> {
    let cand = cands.first().ok_or_else(|| {
        BenchError::Runtime("a comparison needs at least one candidate run".into())
    })?;
    if let Some(other) = cands
        .iter()
        .find(|c| c.scenario_hash != cand.scenario_hash || c.vars != cand.vars)
    {
        return Err(BenchError::usage(format!(
            "the candidate runs {} and {} ran other traffic or another configuration",
            cand.run_id, other.run_id
        )));
    }
    let diffs = comparable(
        base,
        &cand.scenario_hash,
        &cand.scenario,
        &cand.vars,
        allow_multi,
    )?;
    if let Some(why) = base
        .repetitions
        .iter()
        .chain(cands)
        .find_map(environment::client_bound)
    {
        return Err(BenchError::Runtime(why));
    }
    let mut rows = gate::evaluate_at(&base.repetitions, cands, cfg, spend);
    for r in &mut rows {
        r.baseline_values = figure::of_runs(&base.repetitions, r.metric);
        r.candidate_values = figure::of_runs(cands, r.metric);
    }
    let mut notes = mode::name(&mut rows, &base.repetitions, cands);
    // What differs between the arms besides the change, named beside every speed row it could
    // explain (rates too: a busier or slower host, or a server's accumulated state, slows its
    // steps as much as a change does).
    let explanations = [
        (
            environment::contention(&base.repetitions, cands),
            "the arms ran under different CPU contention (see the note): this may be the machine's",
        ),
        (
            environment::host_speed(&base.repetitions, cands),
            "the host was slower during one arm (see the note): this may be the host's",
        ),
        (
            environment::server_history(&base.repetitions, cands),
            "the server had served far more before the candidate (see the note): this may be its accumulated state",
        ),
    ];
    for (note, why) in explanations {
        let Some(note) = note else { continue };
        for r in rows.iter_mut().filter(|r| {
            r.metric != crate::model::metric::Metric::ErrorRate
                && matches!(
                    r.verdict,
                    Verdict::Regressed | Verdict::Improved | Verdict::Inconclusive
                )
        }) {
            r.reason += &format!(" — {why}");
        }
        notes.push(note);
    }
    notes.extend(environment::differences(
        &base.repetitions,
        cands,
        !diffs.is_empty(),
    ));
    Ok(Comparison {
        schema_version: COMPARE_SCHEMA,
        scenario_name: cand.scenario_name.clone(),
        scenario_hash: cand.scenario_hash.clone(),
        baseline: base.name.clone(),
        baseline_repetitions: base.repetitions.len(),
        candidate_run: cand.run_id.clone(),
        baseline_runs: base.repetitions.iter().map(|r| r.run_id.clone()).collect(),
        candidate_runs: cands.iter().map(|r| r.run_id.clone()).collect(),
        tool_version: env!("CARGO_PKG_VERSION").into(),
        candidate_repetitions: cands.len(),
        interleaved: false,
        paired_blocks: gate::judged_blocks(&base.repetitions, cands).map(|b| b.len()),
        change: describe_change(&diffs),
        attributable: diffs.len() <= 1,
        diffs,
        alpha: cfg.alpha,
        regressed: rows.iter().any(|r| r.verdict == Verdict::Regressed),
        server_effects: server_effects(base, cand),
        notes,
        rows,
        undecided_fails: false,
        sequence: None,
        created_at: Utc::now(),
        revision: None,
    })
}

#[cfg(test)]
mod tests {
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
}
