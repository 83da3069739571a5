//! The factorial's quality rows: what stacked changes did to the answers.
//!
//! A configuration's **accuracy** is the share of the set's labelled items its first quality
//! pass answered right; its **agreement**, the share answered as the base configuration's first
//! pass answered them (the base's own: its second pass against its first, 1 without one). Both
//! are "higher is better" shares, so a row reads like throughput's: each configuration's share
//! as a ratio to the base's, and the interaction I = Σ w_c ln p_c with the same weights and the
//! same verdicts and floor (ln 1.05) as the latency rows.
//!
//! **Noise: the items are the unit, paired.** Every configuration answers the same items, so
//! the interval comes from the items themselves: with x_ci ∈ {0, 1} configuration c's result on
//! item i and p_c its share, ln p̂_c ≈ ln p_c + (p̂_c − p_c)/p_c (the delta method), so
//! I − E I ≈ (1/n) Σ_i u_i with u_i = Σ_c w_c·x_ci/p_c, and Var I = s²(u)/n, judged with the
//! normal 97.5 % quantile. A change that alters no answer of any item (lossless speculation)
//! contributes nothing to any u_i, so its interaction with a quantization is exactly 0 with no
//! spread: neutral. Only items every configuration answered count (labelled ones, for
//! accuracy); a share of 0 has no logarithm, and the row is left out.

use super::{verdict, Arm};
use crate::model::metric::Metric;
use crate::model::stack::InteractionRow;
use crate::model::values::Values;
use crate::verdict::stats::{sd, z};

/// The quality rows the factorial adds when every configuration made a quality pass.
pub const METRICS: [Metric; 2] = [Metric::Accuracy, Metric::Agreement];

/// A configuration's result on each item for `metric`: right (accuracy), or answered as the
/// base's first pass answered it (agreement; the base's own: its second pass, all agreeing
/// without one). `None` for an item that does not count.
fn results(arm: &Arm, base: &Arm, metric: Metric) -> Option<Vec<Option<bool>>> {
    let first = arm.quality.first()?;
    match metric {
        Metric::Accuracy => Some(first.answers.iter().map(|a| a.correct).collect()),
        Metric::Agreement => {
            let reference = base.quality.first()?;
            let answers = match (arm.changes.is_empty(), arm.quality.get(1)) {
                (false, _) => first,
                (true, Some(second)) => second,
                (true, None) => return Some(vec![Some(true); reference.answers.len()]),
            };
            if reference.set_sha256 != answers.set_sha256
                || reference.answers.len() != answers.answers.len()
            {
                return None;
            }
            Some(
                reference
                    .answers
                    .iter()
                    .zip(&answers.answers)
                    .map(|(x, y)| Some(y.agrees_with(x)))
                    .collect(),
            )
        }
        _ => None,
    }
}

/// The row of `metric` for a set whose configurations are `found` (combination, singles,
/// base) with `weights` and names `labels`; `None` when a configuration made no quality
/// pass, or scored 0.
pub fn row(
    metric: Metric,
    found: &[&Arm],
    weights: &[f64],
    changes: Vec<String>,
    labels: &[String],
) -> Option<InteractionRow> {
    let base = *found.last()?;
    let each = found
        .iter()
        .map(|a| results(a, base, metric))
        .collect::<Option<Vec<Vec<Option<bool>>>>>()?;
    let items = each.iter().map(Vec::len).min()?;
    // The items every configuration has a result for, as 0/1 per configuration.
    let rows: Vec<Vec<f64>> = (0..items)
        .filter_map(|i| {
            each.iter()
                .map(|r| r[i].map(|b| f64::from(u8::from(b))))
                .collect::<Option<Vec<f64>>>()
        })
        .collect();
    let n = rows.len();
    if n < 2 {
        return None;
    }
    let shares: Vec<f64> = (0..found.len())
        .map(|c| Values::new(rows.iter().map(|r| r[c])).mean().unwrap_or(0.0))
        .collect();
    if shares.iter().any(|p| *p <= 0.0) {
        return None;
    }
    let ln_base = shares.last()?.ln();
    let ratio = |p: f64| (p.ln() - ln_base).exp();
    let raw: f64 = shares.iter().zip(weights).map(|(p, w)| w * p.ln()).sum();
    let u: Vec<f64> = rows
        .iter()
        .map(|r| {
            r.iter()
                .zip(&shares)
                .zip(weights)
                .map(|((x, p), w)| w * x / p)
                .sum()
        })
        .collect();
    let var = sd(&u).map_or(0.0, |s| s * s) / n as f64;
    let critical = z(0.975) * var.sqrt();
    // Higher is better: a combination that keeps less than independence predicts is worse.
    let worse = -raw + 0.0; // never −0
    let alone: Vec<f64> = shares[1..shares.len() - 1]
        .iter()
        .map(|p| ratio(*p))
        .collect();
    let described: Vec<String> = labels
        .iter()
        .zip(&shares)
        .map(|(l, p)| format!("{l} {:.1} %", p * 100.0))
        .collect();
    Some(InteractionRow {
        metric,
        expected: alone.iter().product(),
        alone,
        combined: ratio(shares[0]),
        interaction: worse,
        interval_low: worse - critical,
        interval_high: worse + critical,
        df: None,
        runs: found.iter().map(|a| a.runs()).min().unwrap_or(0),
        verdict: verdict(worse, critical),
        resolve: None,
        contention: None,
        detail: Some(format!("{metric} of {n} items: {}", described.join("; "))),
        changes,
    })
}
