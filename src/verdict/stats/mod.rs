//! The gate's statistics: the effect of a change on a quantile, d = ln(q_candidate /
//! q_baseline) of each arm's pooled type-7 quantile (the estimator every report uses), and its
//! noise with **the run as the unit of replication** — each arm's runs drawn again with
//! replacement ([`runs`], a cluster bootstrap), one run's share pooled over both arms, or each
//! arm's own with Satterthwaite's degrees of freedom where that is larger ([`two_sample`]),
//! never below the pooled requests' sampling noise ([`bootstrap`]); interleaved ABBA blocks
//! (at least `PAIRED_MIN_BLOCKS`) drawn as pairs; Student's t on the runs' degrees of freedom
//! (Hartung–Knapp). Rates use the runs' spread directly; error rates are judged exactly
//! ([`exact`]: Fisher, Clopper–Pearson). Mann–Whitney U is reported and decides nothing.
//!
//! The method and why: `docs/gate.md` ("The run is the unit of replication", "The decision");
//! the rounds the rules were chosen on: `docs/gate-validation.md`. References: Hyndman & Fan
//! (1996), Hartung & Knapp (2001), Clopper & Pearson (1934).

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
            let mean = crate::model::values::Values::mean_of(&boots).unwrap();
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
