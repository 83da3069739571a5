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
                && !r.metric.is_quality()
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
    notes.extend(imported(&base.repetitions, cands));
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
mod tests;

/// Runs another tool measured (`bench import`): which, in each arm, and how its figures are
/// defined otherwise than bench's.
fn imported(base: &[RunResult], cand: &[RunResult]) -> Option<String> {
    let of = |runs: &[RunResult]| runs.iter().filter(|r| r.imported.is_some()).count();
    let first = base.iter().chain(cand).find_map(|r| r.imported.as_ref())?;
    Some(format!(
        "imported from {} (baseline {} of {} runs, candidate {} of {}): {}",
        first.tool,
        of(base),
        base.len(),
        of(cand),
        cand.len(),
        first.differences.join("; ")
    ))
}
