//! Bootstraps of a quantile's sampling noise within one run (or one pooled arm).
//!
//! **Independent requests** (an open loop, or a closed loop of one): requests are resampled one
//! by one, and a resample's order statistics are drawn directly — the k-th smallest of n values
//! resampled from the empirical distribution Fₙ is Fₙ⁻¹(U₍ₖ₎) with U₍ₖ₎ ~ Beta(k, n + 1 − k), the
//! k-th order statistic of n uniforms. That is the exact bootstrap distribution of an order
//! statistic at O(1) per replicate instead of O(n); type-7 interpolation is applied between
//! neighbouring positions.
//!
//! **Coupled requests** (a closed loop of two or more workers: each worker sends its next
//! request the moment its last one ends, so neighbours in time share the server's state and
//! their latencies move together): a moving-block bootstrap (Künsch 1989). The run's values,
//! in the order they were sent, are cut into every window of L consecutive requests; a
//! replicate concatenates ⌈n/L⌉ windows drawn with replacement and takes its type-7 quantile.
//! L = max(workers, ⌈n^⅓⌉), the usual rate for a variance and at least one round of the loop.
//! Whole-run states (a phase the loop locks into for the entire run) are not within-run noise
//! at all: they are the run-to-run variance the gate estimates from repeated runs.
//!
//! **A run that kept no records** (more than `--keep-records`, 10,000 by default) has only its
//! histograms, so no order to cut blocks from; its requests are resampled one by one. For a
//! closed loop that understates the within-run variance w. That cannot make the gate
//! over-confident where it matters: an arm's variance is τ̂² + w̄ with τ̂² = max(0, s² − w̄), i.e.
//! s² (the runs' own spread, which does not depend on w) whenever the runs differ by more than
//! w — and at ≥ 10,000 requests a run's w is far below any run-to-run spread seen in practice
//! (on llama-server, runs of 40 requests already differ by 6–12 %).
//!
//! Every function is seeded, so a verdict is reproducible.

use super::sd;
use crate::metrics::quantile::Sample;
use rand::{Rng, SeedableRng};
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

/// Type-7 p-quantile of unsorted values (reorders them).
fn type7_unsorted(v: &mut [f64], p: f64) -> f64 {
    let n = v.len();
    let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let (_, a, rest) = v.select_nth_unstable_by(lo, f64::total_cmp);
    let a = *a;
    let b = rest.iter().copied().fold(f64::INFINITY, f64::min);
    if lo + 1 >= n || !b.is_finite() {
        return a;
    }
    a + (h - lo as f64) * (b - a)
}

/// Moving-block bootstrap standard error of ln q_p for values in the order they were sent,
/// with blocks of `block` consecutive values.
pub fn se_blocks(ordered: &[f64], p: f64, block: usize, replicates: usize, seed: u64) -> f64 {
    let n = ordered.len();
    if n < 2 {
        return f64::INFINITY;
    }
    let block = block.clamp(1, n);
    let windows = n - block + 1;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xb10c);
    let mut buf = Vec::with_capacity(n + block);
    let logs: Vec<f64> = (0..replicates)
        .filter_map(|_| {
            buf.clear();
            while buf.len() < n {
                let start = rng.random_range(0..windows);
                buf.extend_from_slice(&ordered[start..start + block]);
            }
            buf.truncate(n);
            let q = type7_unsorted(&mut buf, p);
            (q > 0.0).then(|| q.ln())
        })
        .collect();
    sd(&logs).unwrap_or(f64::INFINITY)
}

/// The block length for `n` requests from a closed loop of `workers`.
pub fn block_length(n: usize, workers: u32) -> usize {
    ((n as f64).cbrt().ceil() as usize)
        .max(workers as usize)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::LogNormal;

    #[test]
    fn the_block_bootstrap_matches_the_iid_one_on_independent_values_and_widens_on_coupled_ones() {
        let d = LogNormal::new(3.0, 0.5).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let iid: Vec<f64> = (0..2000).map(|_| d.sample(&mut rng) * 1000.0).collect();
        let exact = se_one(&Sample::from_values(iid.iter().copied()), 0.5, 1000, 1);
        let blocks = se_blocks(&iid, 0.5, 13, 1000, 1);
        assert!((blocks / exact - 1.0).abs() < 0.2, "{blocks} vs {exact}");
        // The same values in runs of 20 equal neighbours: 100 distinct draws, not 2000.
        let coupled: Vec<f64> = iid[..100]
            .iter()
            .flat_map(|v| std::iter::repeat_n(*v, 20))
            .collect();
        let naive = se_one(&Sample::from_values(coupled.iter().copied()), 0.5, 1000, 1);
        let honest = se_blocks(&coupled, 0.5, 20, 1000, 1);
        assert!(honest > 2.5 * naive, "block {honest} vs iid {naive}");
    }

    #[test]
    fn type7_on_unsorted_values_matches_numpy() {
        let mut v = [4.0, 1.0, 3.0, 2.0];
        assert!((type7_unsorted(&mut v, 0.95) - 3.85).abs() < 1e-12);
        assert_eq!(type7_unsorted(&mut [7.0], 0.5), 7.0);
    }
}
