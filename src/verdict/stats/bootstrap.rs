//! Bootstraps of a quantile's sampling noise over requests drawn one by one — within one
//! sample, or two arms' pooled samples — as if requests were independent.
//!
//! A resample's order statistics are drawn directly: the k-th smallest of n values resampled
//! from the empirical distribution Fₙ is Fₙ⁻¹(U₍ₖ₎) with U₍ₖ₎ ~ Beta(k, n + 1 − k), the k-th
//! order statistic of n uniforms. That is the exact bootstrap distribution of an order
//! statistic at O(1) per replicate instead of O(n); type-7 interpolation is applied between
//! neighbouring positions.
//!
//! The gate uses [`se_two`] only as a floor: the least noise the effect of two pooled arms can
//! carry. Its noise proper comes from drawing whole runs ([`super::runs`]), which keeps
//! whatever couples the requests of one run (a closed loop's neighbours share the server's
//! state) and the states runs settle into. `bench stack` uses [`se_one`] for single runs.
//!
//! Every function is seeded, so a verdict is reproducible.

use super::sd;
use crate::metrics::quantile::Sample;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Beta, Distribution};

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
pub fn se_two(a: &Sample, b: &Sample, p: f64, replicates: usize, seed: u64) -> f64 {
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
pub fn se_one(a: &Sample, p: f64, replicates: usize, seed: u64) -> f64 {
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
