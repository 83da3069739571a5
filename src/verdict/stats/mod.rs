//! Statistics for the regression gate.
//!
//! **Quantiles** are the one estimator of every reported figure
//! ([`crate::metrics::quantile`]): type 7 (Hyndman & Fan 1996; numpy's and R's default) over
//! values at HDR resolution, so the p95 the gate judges is the p95 the run's table shows.
//!
//! **Effect** of a change on a quantile: d = ln(q_candidate / q_baseline) of each arm's pooled
//! quantile, so +0.095 is 10 % slower whatever the metric's scale.
//!
//! **The run is the unit of replication.** A run settles into states that last the whole run —
//! a closed loop of two clients phase-locks with a batching server in or out of phase, a batch
//! composition, cache warmth, CPU frequency, a busy neighbour — so one run's requests are not
//! independent draws, and their number says nothing about how different the next run will be.
//! Both arms are therefore sets of runs: the baseline's repetitions, and the candidate's
//! (`bench compare --repeat K`, or the control and candidate runs of `--interleave`). The
//! noise of d is what d would do if the runs were recorded again: each arm's runs are drawn
//! again with replacement and the pooled quantile of what was drawn is taken ([`runs`], a
//! cluster bootstrap: it keeps the states runs settle into and whatever couples the requests
//! inside a run, since whole runs travel together). Each arm's bootstrap variance, scaled by
//! r/(r − 1) for r runs, is r·v_arm = s²_arm, one run's share; the two are pooled over both
//! arms with their r − 1 degrees of freedom — so a state seen in *either* arm widens the
//! interval, and a candidate of one run borrows the baseline's run-to-run spread instead of
//! showing none — and Var d = s²_pooled·(1/R + 1/K), never below the sampling noise of the
//! pooled requests drawn one by one ([`bootstrap`]). Where the arms' own spreads give more,
//! s²_R/R + s²_K/K, that is used, with Satterthwaite's degrees of freedom ([`two_sample`]):
//! pooling lends the arm of fewer runs the other's spread, which is right when both were run
//! alike and too narrow when a baseline of many quiet runs meets a few busy candidate runs
//! (seeded: `a_large_quiet_baseline_does_not_lend_its_calm_to_a_busy_candidate`). Otherwise
//! the critical value is Student's t with Σ_arm (runs − 1) degrees of freedom, the runs' own,
//! also when the runs agree (Hartung–Knapp for few runs: with 3 runs a side, agreeing runs
//! are weak evidence that runs never differ, and Welch–Satterthwaite's df, which then grows
//! without bound, gives the normal quantile). With one run a side there is no run-to-run
//! information at all, and a latency is not judged (inconclusive, saying so) rather than
//! judged on within-run noise alone.
//!
//! The alternative rejected: a random-effects model of the runs' *own* quantiles. A pooled
//! quantile is not the mean of the runs' quantiles, and where runs lock into two states the
//! two part ways (too wide for a p95, too narrow for a p50); drawing runs follows the
//! statistic that is judged (`a_pooled_quantile_of_two_state_runs_gets_the_noise_it_really_has`).
//!
//! **Interleaved runs are judged in pairs.** When the arms' runs alternate in time in ABBA
//! blocks (`bench compare --interleave`; any runs whose start times pair up that way) and
//! there are at least `PAIRED_MIN_BLOCKS` (6) blocks, whole *blocks* are drawn again — each
//! with its control and its candidate run — and Var d is the variance of d over those draws,
//! scaled by k/(k − 1), with k − 1 degrees of freedom, never below the pooled requests'
//! sampling noise. What a block's two runs share — drift, a neighbour's load, a slow minute —
//! stays shared in every draw and cancels in d, where the two-sample model counts it twice as
//! run-to-run spread. A quantile that each run has too few values to bound distribution-free
//! (a p95 under 72 requests a run) is judged as two samples of runs. Below 6 blocks the
//! halved degrees of freedom cost more than pairing typically saves, so the two-sample model
//! judges; the rule is fixed in advance, not chosen by which interval is narrower.
//!
//! The A/A rounds and seeded sets these rules were chosen on are in `docs/gate-validation.md`.
//!
//! **Rates** (throughput, goodput: one figure a run, judged as the geometric mean of the runs)
//! use the runs' spread directly, s²(1/R + 1/K) with R + K − 2 degrees of freedom (or each
//! arm's own, as above, where that is larger), which is exact for a mean of runs (in pairs:
//! s_d/√k of the blocks' differences, k − 1 df); with one run a side, counting noise
//! (≈ 1/√completions) stands in.
//!
//! **Error rate** is judged exactly ([`exact`]): a regression needs the increase beyond the
//! threshold *and* Fisher's exact one-sided p below the Bonferroni level; "no change" needs
//! the Clopper–Pearson interval of the difference inside ±threshold; anything else is
//! inconclusive, saying how many requests would bound it.
//!
//! **Mann–Whitney U** (normal approximation with tie correction) is reported beside the
//! verdict as a descriptive p-value; it does not decide anything.

pub mod bootstrap;
pub mod exact;
pub mod runs;

use crate::metrics::quantile::Sample;
use crate::model::values::Values;
use statrs::distribution::{ContinuousCDF, Normal};

/// The variance of a difference of two arms' means of runs and its degrees of freedom, from
/// each arm's one-run variance s² (`None` below two runs) and its runs: the spreads pooled
/// over the arms with their r − 1 degrees of freedom, s²_p·(1/R + 1/K) at R + K − 2 df —
/// unless the arms' own spreads give a larger variance, s²_R/R + s²_K/K (Welch), when both
/// arms have two runs or more; then that, at Satterthwaite's degrees of freedom. Pooling
/// assumes both arms' runs spread alike, and a stored baseline need not have been recorded
/// under the load the candidate meets: a baseline of many quiet runs against a first look of
/// three busy ones would lend the busy arm the quiet arm's spread. `None` when neither arm
/// has two runs.
pub fn two_sample(spreads: [Option<f64>; 2], runs: [usize; 2]) -> Option<(f64, f64)> {
    let (ss, df) = spreads
        .iter()
        .zip(runs)
        .filter(|(_, r)| *r >= 2)
        .filter_map(|(s, r)| Some((s.as_ref()? * (r - 1) as f64, r - 1)))
        .fold((0.0, 0), |(a, d), (x, k)| (a + x, d + k));
    if df == 0 {
        return None;
    }
    let factor: f64 = runs.iter().map(|r| 1.0 / (*r).max(1) as f64).sum();
    let pooled = (ss / df as f64 * factor, df as f64);
    let ([Some(a), Some(b)], true) = (spreads, runs[0].min(runs[1]) >= 2) else {
        return Some(pooled);
    };
    let (a, b) = (a / runs[0] as f64, b / runs[1] as f64);
    let var = a + b;
    if var <= pooled.0 * (1.0 + 1e-9) {
        return Some(pooled);
    }
    let df = var * var / (a * a / (runs[0] - 1) as f64 + b * b / (runs[1] - 1) as f64);
    Some((var, df))
}

/// Sample standard deviation (n − 1) of a slice ([`Values::sd`]).
pub fn sd(v: &[f64]) -> Option<f64> {
    Values::new(v.iter().copied()).sd()
}

/// Two-sided Mann–Whitney U p-value, normal approximation with tie correction. Values equal at
/// HDR resolution are ties.
pub fn mann_whitney_p(a: &Sample, b: &Sample) -> Option<f64> {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return None;
    }
    // Walk both samples' distinct values in order; a value held by both is one tie group.
    let (mut ia, mut ib) = (a.counts().peekable(), b.counts().peekable());
    let (mut below, mut rank_sum_a, mut tie_term) = (0.0, 0.0, 0.0);
    loop {
        let (va, vb) = (ia.peek().map(|x| x.0), ib.peek().map(|x| x.0));
        let v = match (va, vb) {
            (Some(x), Some(y)) => x.min(y),
            (Some(x), None) => x,
            (None, Some(y)) => y,
            (None, None) => break,
        };
        let ca = if va == Some(v) {
            ia.next().map_or(0, |x| x.1)
        } else {
            0
        } as f64;
        let cb = if vb == Some(v) {
            ib.next().map_or(0, |x| x.1)
        } else {
            0
        } as f64;
        let t = ca + cb;
        // Ranks below + 1 … below + t share their mean.
        rank_sum_a += ca * (below + (t + 1.0) / 2.0);
        tie_term += t * t * t - t;
        below += t;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let mu = n1 * n2 / 2.0;
    let nn = n1 + n2;
    let var = n1 * n2 / 12.0 * ((nn + 1.0) - tie_term / (nn * (nn - 1.0)));
    if var <= 0.0 {
        return Some(1.0);
    }
    let z = (u - mu).abs() / var.sqrt();
    let norm = Normal::new(0.0, 1.0).ok()?;
    Some((2.0 * (1.0 - norm.cdf(z))).min(1.0))
}

/// Student's t quantile with `df` degrees of freedom (the normal one for very large df).
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(df.is_finite()) || df > 1e6 {
        return z(p);
    }
    statrs::distribution::StudentsT::new(0.0, 1.0, df)
        .map(|t| t.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

/// The standard normal quantile.
pub fn z(p: f64) -> f64 {
    Normal::new(0.0, 1.0)
        .map(|n| n.inverse_cdf(p))
        .unwrap_or(f64::NAN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use rand_distr::{Distribution, LogNormal};

    #[test]
    fn bootstrap_se_matches_the_real_sampling_spread() {
        // The truth: the spread of d = ln(q_b/q_a) over many independent pairs of samples.
        let d = LogNormal::new(3.0, 0.5).unwrap();
        let n = 1000;
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut draw = || Sample::from_values((0..n).map(|_| d.sample(&mut rng)));
        for p in [0.5, 0.95] {
            let effects: Vec<f64> = (0..400)
                .map(|_| {
                    let (a, b) = (draw(), draw());
                    (b.quantile(p).unwrap() / a.quantile(p).unwrap()).ln()
                })
                .collect();
            let truth = sd(&effects).unwrap();
            let boots: Vec<f64> = (0..30)
                .map(|i| bootstrap::se_two(&draw(), &draw(), p, 1000, i))
                .collect();
            let mean = boots.iter().sum::<f64>() / boots.len() as f64;
            assert!(
                (mean / truth - 1.0).abs() < 0.15,
                "p{p}: bootstrap SE {mean:.4} vs sampling spread {truth:.4}"
            );
        }
    }

    #[test]
    fn mann_whitney_detects_a_shift_and_not_noise() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        // µs values, spread wide enough that HDR resolution keeps them apart.
        let mut draw =
            |shift: f64| Sample::from_values((0..300).map(|_| (rng.random::<f64>() + shift) * 1e6));
        let (a, b, c) = (draw(0.0), draw(0.0), draw(0.2));
        assert!(mann_whitney_p(&a, &b).unwrap() > 0.01);
        assert!(mann_whitney_p(&a, &c).unwrap() < 1e-6);
    }
}
