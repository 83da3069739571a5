//! Step one of the gate: for each metric, the baseline and candidate values, the effect
//! (signed so that positive is worse), its standard error and the degrees of freedom behind
//! it. One function per kind of metric; the methods are in [`crate::verdict::stats`].

use super::{min_n_for_quantile, P99_MIN_N};
use crate::config::thresholds::GateConfig;
use crate::metrics::quantile::Sample;
use crate::metrics::summary::sample;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::result::RunResult;
use crate::verdict::stats::{bootstrap_se, bootstrap_se_one, mann_whitney_p, sd};

/// What was measured for one metric, before any decision. Values are in the metric's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate / baseline − 1) × 100, or the difference in pp for error rate.
    pub delta: f64,
    /// ln(candidate / baseline), or the difference of rates; positive is worse.
    pub effect: f64,
    pub se: f64,
    /// Degrees of freedom of the SE when it carries run-to-run noise from a few repetitions.
    pub df: Option<f64>,
    pub n_baseline: usize,
    pub n_candidate: usize,
    pub mann_whitney_p: Option<f64>,
    /// Why the metric is shown but not judged (too few values for it), if so.
    pub not_gated: Option<String>,
}

impl Estimate {
    /// Nothing measured: no values, infinitely noisy.
    pub fn nothing(n_baseline: usize, n_candidate: usize) -> Estimate {
        Estimate {
            baseline: 0.0,
            candidate: 0.0,
            delta: 0.0,
            effect: 0.0,
            se: f64::INFINITY,
            df: None,
            n_baseline,
            n_candidate,
            mann_whitney_p: None,
            not_gated: None,
        }
    }
}

/// The outcome of estimating one metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimated {
    Measured(Estimate),
    /// Too few values on a side to estimate anything.
    NoData {
        n_baseline: usize,
        n_candidate: usize,
    },
    /// Not applicable: goodput without SLOs.
    Absent,
}

/// Estimates `metric` for a candidate against a baseline's repetitions.
pub fn estimate(
    base: &[RunResult],
    cand: &RunResult,
    metric: Metric,
    cfg: &GateConfig,
) -> Estimated {
    match metric {
        Metric::Latency(l, q) => latency(base, cand, l, q, cfg),
        Metric::OutputThroughput | Metric::RequestThroughput | Metric::Goodput => {
            rate(base, cand, metric)
        }
        Metric::ErrorRate => error_rate(base, cand),
    }
}

/// How many baseline repetitions one candidate run is compared with: a new run against k
/// earlier ones carries their run-to-run noise × √(1 + 1/k).
fn rr_scale(base: &[RunResult]) -> f64 {
    (1.0 + 1.0 / base.len().max(1) as f64).sqrt()
}

fn hash_seed(key: &str, seed: u64) -> u64 {
    key.bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Welch–Satterthwaite degrees of freedom of `within + between`, where `within` (a variance)
/// is known with no uncertainty worth counting and `between` is estimated with `between_df`.
fn satterthwaite(within: f64, between: f64, between_df: usize) -> Option<f64> {
    (between > 0.0 && between_df > 0)
        .then(|| (within + between).powi(2) / (between * between / between_df as f64))
}

/// A latency quantile: the pooled baseline against the candidate, the bootstrap's within-run
/// noise plus the run-to-run drift the repetitions show beyond their own sampling noise.
fn latency(
    base: &[RunResult],
    cand: &RunResult,
    l: Latency,
    q: Quantile,
    cfg: &GateConfig,
) -> Estimated {
    let reps: Vec<Sample> = base.iter().map(|r| sample(r, l)).collect();
    let pooled = Sample::merged(&reps.iter().collect::<Vec<_>>());
    let c = sample(cand, l);
    if pooled.len() < 2 || c.len() < 2 {
        return Estimated::NoData {
            n_baseline: pooled.len(),
            n_candidate: c.len(),
        };
    }
    let p = q.p();
    let (qa, qb) = (
        pooled.quantile(p).unwrap_or(0.0),
        c.quantile(p).unwrap_or(0.0),
    );
    let effect = if qa > 0.0 && qb > 0.0 {
        (qb / qa).ln()
    } else {
        0.0
    };
    let seed = hash_seed(&Metric::Latency(l, q).key(), cfg.seed);
    let se_boot = bootstrap_se(&pooled, &c, p, cfg.replicates, seed);
    // Run-to-run drift: the spread of the repetitions' quantiles beyond what their own
    // sampling noise explains (each repetition's noise from a one-arm bootstrap).
    let usable: Vec<&Sample> = reps.iter().filter(|v| v.len() >= 2).collect();
    let per_rep: Vec<f64> = usable
        .iter()
        .filter_map(|v| v.quantile(p))
        .filter(|q| *q > 0.0)
        .map(f64::ln)
        .collect();
    let within: Vec<f64> = usable
        .iter()
        .map(|v| bootstrap_se_one(v, p, cfg.replicates, seed).powi(2))
        .collect();
    let drift2 = match sd(&per_rep) {
        Some(s) => (s * s - within.iter().sum::<f64>() / within.len().max(1) as f64).max(0.0),
        None => 0.0,
    };
    let between = drift2 * rr_scale(base).powi(2);
    let (nb, nc) = (pooled.len(), c.len());
    let min_n = min_n_for_quantile(p, cfg.alpha);
    let label = Metric::Latency(l, q);
    let not_gated = if p >= 0.99 && nb.min(nc) < P99_MIN_N {
        Some(format!(
            "not gated: a p99 needs ≥ {P99_MIN_N} successful requests per arm (have {nb}/{nc})"
        ))
    } else if nb.min(nc) < min_n {
        Some(format!(
            "not gated: a {label} needs ≥ {min_n} successful requests per arm to be bounded without assuming a distribution (have {nb}/{nc})"
        ))
    } else {
        None
    };
    Estimated::Measured(Estimate {
        baseline: qa / 1000.0,
        candidate: qb / 1000.0,
        delta: percent_change(qa, qb),
        effect,
        se: (se_boot * se_boot + between).sqrt(),
        df: satterthwaite(se_boot * se_boot, between, per_rep.len().saturating_sub(1)),
        n_baseline: nb,
        n_candidate: nc,
        mann_whitney_p: mann_whitney_p(&pooled, &c),
        not_gated,
    })
}

fn percent_change(baseline: f64, candidate: f64) -> f64 {
    if baseline != 0.0 {
        (candidate / baseline - 1.0) * 100.0
    } else {
        0.0
    }
}

fn scalar(run: &RunResult, m: Metric) -> Option<f64> {
    let t = &run.summary.throughput;
    match m {
        Metric::OutputThroughput => Some(t.output_tps),
        Metric::RequestThroughput => Some(t.request_rps),
        Metric::Goodput => t.goodput_rps,
        _ => None,
    }
}

/// A rate (one figure per run): the geometric mean of the repetitions against the candidate.
fn rate(base: &[RunResult], cand: &RunResult, metric: Metric) -> Estimated {
    let bv: Vec<f64> = base
        .iter()
        .filter_map(|r| scalar(r, metric))
        .filter(|v| *v > 0.0)
        .collect();
    let Some(cv) = scalar(cand, metric).filter(|v| *v > 0.0) else {
        return no_rate(metric, bv.len());
    };
    if bv.is_empty() {
        return no_rate(metric, 0);
    }
    let logs: Vec<f64> = bv.iter().map(|v| v.ln()).collect();
    let qa = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
    // One figure per run, so its noise is the run-to-run spread of the repetitions. With a
    // single baseline run (--against) fall back to counting noise: a rate from n completions
    // carries about 1/√n relative noise. A new run against k earlier ones:
    // (x − x̄) / (s·√(1 + 1/k)) is Student's t with k − 1 degrees of freedom, not normal —
    // with 3 repetitions that matters.
    let (se, df) = match sd(&logs) {
        Some(s) => (s * rr_scale(base), Some((logs.len() - 1) as f64)),
        None => {
            let n_b = base.iter().map(|r| r.summary.counts.ok).sum::<u64>().max(1) as f64;
            let n_c = cand.summary.counts.ok.max(1) as f64;
            ((1.0 / n_b + 1.0 / n_c).sqrt(), None)
        }
    };
    Estimated::Measured(Estimate {
        baseline: qa,
        candidate: cv,
        delta: percent_change(qa, cv),
        effect: -(cv / qa).ln(),
        se,
        df,
        n_baseline: bv.len(),
        n_candidate: 1,
        mann_whitney_p: None,
        not_gated: None,
    })
}

fn no_rate(metric: Metric, n_baseline: usize) -> Estimated {
    // Goodput exists only with SLOs; say nothing rather than "no data".
    if metric == Metric::Goodput {
        Estimated::Absent
    } else {
        Estimated::NoData {
            n_baseline,
            n_candidate: 0,
        }
    }
}

/// (errors, measured requests sent) of a run.
fn errors(run: &RunResult) -> (f64, f64) {
    let c = &run.summary.counts;
    (c.errors.values().sum::<u64>() as f64, c.sent as f64)
}

/// Error rate: a difference of proportions, its SE the larger of the binomial one (with a
/// continuity-smoothed rate, so zero errors still has noise) and the repetitions' spread.
fn error_rate(base: &[RunResult], cand: &RunResult) -> Estimated {
    let (xb, nb) = base
        .iter()
        .map(errors)
        .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    let (xc, nc) = errors(cand);
    if nb == 0.0 || nc == 0.0 {
        return Estimated::NoData {
            n_baseline: nb as usize,
            n_candidate: nc as usize,
        };
    }
    let (pb, pc) = (xb / nb, xc / nc);
    let smooth = |x: f64, n: f64| (x + 0.5) / (n + 1.0);
    let (sb, sc) = (smooth(xb, nb), smooth(xc, nc));
    let se_bin = (sb * (1.0 - sb) / nb + sc * (1.0 - sc) / nc).sqrt();
    let per_rep: Vec<f64> = base
        .iter()
        .map(errors)
        .filter(|(_, n)| *n > 0.0)
        .map(|(x, n)| x / n)
        .collect();
    let se_rep = sd(&per_rep).unwrap_or(0.0) * rr_scale(base);
    Estimated::Measured(Estimate {
        baseline: pb * 100.0,
        candidate: pc * 100.0,
        delta: (pc - pb) * 100.0,
        effect: pc - pb,
        se: se_bin.max(se_rep),
        df: (se_rep > se_bin).then(|| per_rep.len().saturating_sub(1) as f64),
        n_baseline: nb as usize,
        n_candidate: nc as usize,
        mann_whitney_p: None,
        not_gated: None,
    })
}
