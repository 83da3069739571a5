//! Statistics for the regression gate.
//!
//! **Quantiles** are the one estimator of every reported figure
//! ([`crate::metrics::quantile`]): type 7 (Hyndman & Fan 1996; numpy's and R's default) over
//! values at HDR resolution, so the p95 the gate judges is the p95 the run's table shows.
//!
//! **Effect** of a change on a quantile: d = ln(q_candidate / q_baseline), so +0.095 is 10 %
//! slower whatever the metric's scale.
//!
//! **Within-run noise**: a bootstrap over requests, each arm resampled separately (B = 1000,
//! seeded). A resample's order statistics are drawn directly: the k-th smallest of n values
//! resampled from the empirical distribution Fₙ is Fₙ⁻¹(U₍ₖ₎) with U₍ₖ₎ ~ Beta(k, n + 1 − k), the
//! k-th order statistic of n uniforms. That is the exact bootstrap distribution of an order
//! statistic at O(1) per replicate instead of O(n); type-7 interpolation is applied between
//! neighbouring positions. The standard error is the standard deviation of the replicate
//! effects.
//!
//! **Run-to-run noise**: the variance of ln q across the baseline's R repetitions, less the
//! part their own sampling noise explains (each repetition's one-arm bootstrap variance), is the
//! run-level drift δ². One candidate run against the pooled baseline carries δ²·(1 + 1/R) of it.
//! The standard error is √(SE²_bootstrap + δ²·(1 + 1/R)), never below either part alone.
//! (Taking the larger of the bootstrap SE and the raw spread of the repetitions, as first
//! specified, counts sampling noise twice; on the validation below that made half of all A/A
//! comparisons inconclusive.)
//!
//! **Mann–Whitney U** (normal approximation with tie correction) is reported beside the
//! verdict as a descriptive p-value; it does not decide anything.

use crate::metrics::quantile::Sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Distribution};
use statrs::distribution::{ContinuousCDF, Normal};

/// One bootstrap replicate of the type-7 quantile p of `sample`.
fn replicate(sample: &Sample, p: f64, beta: &Option<Beta<f64>>, rng: &mut ChaCha8Rng) -> f64 {
    let n = sample.len();
    let Some(beta) = beta else {
        return sample.at(0);
    };
    // Position of the order statistic k = ⌊h⌋ + 1 of the resample, on the sample's scale.
    let u = beta.sample(rng);
    let h = (n - 1) as f64 * p;
    let g = h - h.floor();
    // Fₙ⁻¹(u) as a 0-based position; the interpolation weight g is carried over.
    let pos = (u * n as f64).ceil().max(1.0) - 1.0;
    let next = (pos + 1.0).min((n - 1) as f64);
    let a = sample.at(pos as usize);
    let b = sample.at(next as usize);
    a + g * (b - a)
}

fn beta_for(n: usize, p: f64) -> Option<Beta<f64>> {
    if n < 2 {
        return None;
    }
    let k = ((n - 1) as f64 * p).floor() + 1.0;
    Beta::new(k, n as f64 + 1.0 - k).ok()
}

/// Bootstrap standard error of d = ln(q_b / q_a), both arms resampled independently.
pub fn bootstrap_se(a: &Sample, b: &Sample, p: f64, replicates: usize, seed: u64) -> f64 {
    if a.len() < 2 || b.len() < 2 {
        return f64::INFINITY;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (ba, bb) = (beta_for(a.len(), p), beta_for(b.len(), p));
    let mut d = Vec::with_capacity(replicates);
    for _ in 0..replicates {
        let qa = replicate(a, p, &ba, &mut rng);
        let qb = replicate(b, p, &bb, &mut rng);
        if qa > 0.0 && qb > 0.0 {
            d.push((qb / qa).ln());
        }
    }
    sd(&d).unwrap_or(f64::INFINITY)
}

/// Bootstrap standard error of ln q_p for one sample.
pub fn bootstrap_se_one(a: &Sample, p: f64, replicates: usize, seed: u64) -> f64 {
    if a.len() < 2 {
        return f64::INFINITY;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x5eed);
    let beta = beta_for(a.len(), p);
    let logs: Vec<f64> = (0..replicates)
        .map(|_| replicate(a, p, &beta, &mut rng))
        .filter(|q| *q > 0.0)
        .map(f64::ln)
        .collect();
    sd(&logs).unwrap_or(f64::INFINITY)
}

/// Sample standard deviation (n − 1).
pub fn sd(v: &[f64]) -> Option<f64> {
    if v.len() < 2 {
        return None;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    Some((v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64).sqrt())
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
    use rand_distr::LogNormal;

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
                .map(|i| bootstrap_se(&draw(), &draw(), p, 1000, i))
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
