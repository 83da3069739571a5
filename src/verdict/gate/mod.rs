//! The gate: one candidate run judged against a baseline's repetitions, metric by metric, in
//! three steps — [`estimate`] (values, effect, standard error), [`crate::verdict::decide`]
//! (regressed / improved / no change / inconclusive against the threshold and the
//! Bonferroni-corrected critical value), and the [`Row`] a report shows, with its reason.
//!
//! Thresholds come from [`crate::config::thresholds`]. A p99 is gated only when both arms have
//! at least [`P99_MIN_N`] successful requests, and any quantile only when both arms have enough
//! values to bound it distribution-free ([`min_n_for_quantile`]: p50 6, p95 72); below that it
//! is reported as not gated, saying why. Methods: [`crate::verdict::stats`].

pub mod estimate;

use crate::config::thresholds::{GateConfig, Threshold};
use crate::model::comparison::{Row, Verdict};
use crate::model::metric::Metric;
use crate::model::result::RunResult;
use crate::verdict::decide::{decide, needed_n};
use crate::verdict::stats::{t_quantile, z};
use estimate::{estimate, Estimate, Estimated};

/// Below this many successful requests per arm a p99 is reported but not gated.
pub const P99_MIN_N: usize = 1000;

/// The fewest values from which the p-quantile can be bounded without assuming a shape: the
/// smallest n with pⁿ ≤ α/2, so that a distribution-free (order-statistic) two-sided 1 − α
/// interval for it has an upper end below the largest value. With fewer, the quantile is
/// the top few samples and a bootstrap of them is too narrow (a real A/A on llama-server
/// with 8 requests a run failed on a p95 this way). α = 0.05: p50 6, p90 36, p95 72.
pub fn min_n_for_quantile(p: f64, alpha: f64) -> usize {
    if !(0.0..1.0).contains(&p) {
        return usize::MAX;
    }
    let q = p.max(1.0 - p);
    ((alpha / 2.0).ln() / q.ln()).ceil().max(1.0) as usize
}

/// Compares `cand` with the repetitions of a baseline: one row per threshold (goodput only
/// when the scenario has SLOs).
pub fn evaluate(base: &[RunResult], cand: &RunResult, cfg: &GateConfig) -> Vec<Row> {
    let estimates: Vec<(&Threshold, Estimated)> = cfg
        .thresholds
        .iter()
        .map(|t| (t, estimate(base, cand, t.metric, cfg)))
        .filter(|(_, e)| *e != Estimated::Absent)
        .collect();
    let gated = estimates
        .iter()
        .filter(|(t, e)| not_gated(t, e).is_none())
        .count();
    // Bonferroni over the gated set, two-sided.
    let level = 1.0 - cfg.alpha / (2.0 * gated.max(1) as f64);
    estimates
        .into_iter()
        .map(|(t, e)| row(t, e, level))
        .collect()
}

/// Why a metric is reported but not judged, if it is not.
fn not_gated(t: &Threshold, e: &Estimated) -> Option<String> {
    match e {
        Estimated::NoData {
            n_baseline,
            n_candidate,
        } => Some(format!("not gated: no data (n={n_baseline}/{n_candidate})")),
        Estimated::Absent => Some("not gated: not applicable".into()),
        Estimated::Measured(_) if t.floor.is_none() => Some("not gated: threshold is off".into()),
        Estimated::Measured(m) => m.not_gated.clone(),
    }
}

/// Decides one metric and writes its row.
fn row(t: &Threshold, e: Estimated, level: f64) -> Row {
    let skip = not_gated(t, &e);
    let m = match e {
        Estimated::Measured(m) => m,
        Estimated::NoData {
            n_baseline,
            n_candidate,
        } => Estimate::nothing(n_baseline, n_candidate),
        Estimated::Absent => Estimate::nothing(0, 0),
    };
    let metric = t.metric;
    let floor = t.floor.unwrap_or(0.0);
    let q = match m.df {
        Some(df) => t_quantile(level, df),
        None => z(level),
    };
    let d = decide(m.effect, m.se, floor, q);
    // The interval effect ± critical, back on the delta's own scale; for higher-is-better
    // metrics "worse" is a drop.
    let (lo, hi) = (m.effect - d.critical, m.effect + d.critical);
    let (interval_low, interval_high) = if metric.in_points() {
        (lo * 100.0, hi * 100.0)
    } else if metric.lower_is_better() {
        ((lo.exp() - 1.0) * 100.0, (hi.exp() - 1.0) * 100.0)
    } else {
        (((-hi).exp() - 1.0) * 100.0, ((-lo).exp() - 1.0) * 100.0)
    };
    let mut row = Row {
        metric,
        unit: metric.unit().into(),
        lower_is_better: metric.lower_is_better(),
        baseline: m.baseline,
        candidate: m.candidate,
        delta_pct: m.delta,
        interval_low,
        interval_high,
        effect: m.effect,
        se: m.se,
        critical: d.critical,
        floor,
        threshold: t.text.clone(),
        verdict: Verdict::NotGated,
        reason: String::new(),
        n_baseline: m.n_baseline,
        n_candidate: m.n_candidate,
        mann_whitney_p: m.mann_whitney_p,
        df: m.df,
    };
    match skip {
        Some(why) => row.reason = why,
        None => {
            row.verdict = d.verdict;
            row.reason = reason(&row, d.verdict);
        }
    }
    row
}

fn reason(r: &Row, v: Verdict) -> String {
    let scale = if r.metric.in_points() { "pp" } else { "%" };
    let delta = format!("{:+.1}{scale}", r.delta_pct);
    let n = match r.df {
        Some(df) => format!("n={}/{}, t df {df:.1}", r.n_baseline, r.n_candidate),
        None => format!("n={}/{}", r.n_baseline, r.n_candidate),
    };
    match v {
        Verdict::Regressed => format!(
            "FAIL {} {delta} (effect {:.3} > max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::Improved => format!(
            "improved {} {delta} (effect {:.3} < −max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::NoChange => format!(
            "ok {} {delta} (|effect| {:.3} ≤ max(critical {:.3}, floor {:.3}); {n})",
            r.metric,
            r.effect.abs(),
            r.critical,
            r.floor
        ),
        Verdict::Inconclusive => {
            // Few degrees of freedom: the repetitions' spread, not the request count, is
            // what is too large, and more requests per run would not fix it.
            let more = if r.df.is_some_and(|d| d < 10.0) {
                "run-to-run noise dominates: record the baseline with more repetitions (--repeat 5)"
                    .to_string()
            } else if matches!(r.metric, Metric::Latency(..)) {
                match needed_n(r.n_baseline.min(r.n_candidate), r.critical, r.floor) {
                    Some(k) => format!("needs ≈ {k} requests per arm, or more baseline repetitions if run-to-run noise dominates"),
                    None => "needs more requests".into(),
                }
            } else {
                "needs longer runs or more baseline repetitions".into()
            };
            format!("inconclusive {} {delta} (critical {:.3} > floor {:.3}: too noisy to see the threshold; {more}; {n})", r.metric, r.critical, r.floor)
        }
        Verdict::NotGated => r.reason.clone(),
    }
}

#[cfg(test)]
mod tests;
