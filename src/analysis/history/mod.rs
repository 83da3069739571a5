//! A scenario's history: the compares CI accumulated (their JSON outputs, or the rows of the
//! optimization record), in order, as one series per gated metric — the candidate's value at
//! each compare with its verdict, the baseline re-recordings marked — and each series tested
//! for a change point ([`super::drift`]), so a creep that every single gate passed is seen.
//!
//! The series is the candidate's own value, not its change against the baseline: when the
//! baseline is re-recorded after every passing compare, each change is small while the values
//! walk away. α is shared over the metrics tested (Bonferroni), so a history of nothing
//! changed is flagged somewhere with probability ≤ α.

pub mod load;

use super::drift::{change_point, flagged};
use crate::model::history::{Entry, History, Series, Value};

/// Whether lower is better for a metric of `unit` (latencies and error rates; not rates).
pub fn lower_is_better(unit: &str) -> bool {
    !unit.ends_with("/s")
}

fn seed_of(metric: &str) -> u64 {
    metric.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// The history of one scenario's `entries` (in any order: they are sorted by time, ties kept
/// in the order given).
pub fn history(scenario: &str, mut entries: Vec<Entry>, alpha: f64, floor_pct: f64) -> History {
    entries.sort_by_key(|e| e.when);
    let rebaselined = entries
        .iter()
        .enumerate()
        .map(|(i, e)| i > 0 && entries[i - 1].baseline != e.baseline)
        .collect();
    let mut metrics: Vec<(String, String)> = Vec::new();
    for e in &entries {
        for (k, v) in &e.values {
            if !metrics.iter().any(|(m, _)| m == k) {
                metrics.push((k.clone(), v.unit.clone()));
            }
        }
    }
    let tested = metrics.len().max(1) as f64;
    let series = metrics
        .into_iter()
        .map(|(metric, unit)| {
            let values: Vec<Option<Value>> = entries
                .iter()
                .map(|e| e.values.get(&metric).cloned())
                .collect();
            let present: Vec<(usize, f64)> = values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some((i, v.as_ref()?.candidate)))
                .collect();
            let ys: Vec<f64> = present.iter().map(|p| p.1).collect();
            let change = change_point(&ys, seed_of(&metric)).map(|mut c| {
                c.onset = present[c.onset].0;
                c
            });
            let lower = lower_is_better(&unit);
            let is_flagged = change
                .as_ref()
                .is_some_and(|c| flagged(c, alpha / tested, floor_pct));
            let worse = change
                .as_ref()
                .is_some_and(|c| (c.change_pct > 0.0) == lower);
            Series {
                metric,
                unit,
                lower_is_better: lower,
                values,
                change,
                flagged: is_flagged,
                worse,
            }
        })
        .collect();
    History {
        scenario: scenario.to_string(),
        entries,
        rebaselined,
        series,
        alpha,
        floor_pct,
        method: "change point of ln(value): a shift (Hawkins 1977) or a drift (two-phase regression, Hinkley 1969), max statistic tested by 999 seeded permutations (Antoch & Hušková 2001)".into(),
    }
}

/// One history per scenario of `entries` (only `only`'s, when given), in name order.
pub fn by_scenario(
    entries: Vec<Entry>,
    only: Option<&str>,
    alpha: f64,
    floor_pct: f64,
) -> Vec<History> {
    let mut groups: std::collections::BTreeMap<String, Vec<Entry>> = Default::default();
    for e in entries {
        groups.entry(e.scenario.clone()).or_default().push(e);
    }
    groups
        .into_iter()
        .filter(|(k, _)| only.is_none_or(|s| s == k))
        .map(|(s, e)| history(&s, e, alpha, floor_pct))
        .collect()
}
