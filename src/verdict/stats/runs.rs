//! The run-level (cluster) bootstrap: how much an arm's pooled quantile would move if its runs
//! were recorded again.
//!
//! The gate judges ln q_p of each arm's *pooled* requests. Its noise comes from two levels —
//! the state each run settled into, and the requests inside a run — and the one resampling
//! that reproduces both for the statistic actually judged is to draw whole runs with
//! replacement and take the pooled quantile of what was drawn (Davison & Hinkley 1997, §3.8:
//! resample the top level only; drawing the requests inside the drawn runs again as well
//! counts their sampling noise twice). Requests inside a run may be as correlated as they
//! like — a closed loop's neighbours share the server's state — since they travel together.
//!
//! Why not the spread of the runs' own quantiles (the alternative rejected): a
//! pooled quantile is not the mean of the runs' quantiles. When runs lock into one of two
//! states, a p95 that lies inside the slower state's values barely moves with how many runs
//! were fast, while each run's own p95 jumps between the states; a p50 that the mix pushes
//! across the gap moves *more* than the runs' p50s do. In the gate's two-state test (12 runs
//! a side, 30 % out of phase, 120 seeded A/A rounds:
//! `a_pooled_quantile_of_two_state_runs_gets_the_noise_it_really_has`) the per-run spread put
//! the TTFT p95's SE at 13× the real spread of its effect — inconclusive every time — and the
//! p50s' at 0.6× — over-confident; drawing runs gets all four within 1.1–1.4×.
//!
//! A bootstrap of r runs estimates the variance of a mean of r runs low by (r − 1)/r, so each
//! variance is scaled by r/(r − 1), which makes it the usual s²/r for a mean of run-level
//! values. Every function is seeded, so a verdict is reproducible.

use crate::metrics::quantile::Sample;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One arm's runs as a single ascending list, so that the pooled quantile of any multiset of
/// them is one pass, without merging samples for each replicate.
#[derive(Debug, Clone)]
pub struct Runs {
    /// (value µs, run, how many of the run's values), ascending by value.
    entries: Vec<(f64, usize, u64)>,
    /// Values in each run.
    sizes: Vec<u64>,
}

impl Runs {
    pub fn new(runs: &[&Sample]) -> Runs {
        let mut entries: Vec<(f64, usize, u64)> = runs
            .iter()
            .enumerate()
            .flat_map(|(j, s)| s.counts().map(move |(v, c)| (v, j, c)))
            .collect();
        entries.sort_by(|a, b| a.0.total_cmp(&b.0));
        Runs {
            entries,
            sizes: runs.iter().map(|s| s.len() as u64).collect(),
        }
    }

    /// How many runs.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The type-7 p-quantile of the values of run j taken `weights[j]` times over, for every
    /// j: the pooled quantile of that multiset of runs. `None` when it holds no value.
    pub fn quantile(&self, weights: &[u32], p: f64) -> Option<f64> {
        let n: u64 = self
            .sizes
            .iter()
            .zip(weights)
            .map(|(s, w)| s * *w as u64)
            .sum();
        if n == 0 {
            return None;
        }
        let h = (n - 1) as f64 * p.clamp(0.0, 1.0);
        let lo = h.floor() as u64;
        let hi = (lo + 1).min(n - 1);
        let (mut seen, mut a) = (0u64, None);
        for &(v, j, c) in &self.entries {
            seen += c * weights[j] as u64;
            if a.is_none() && seen > lo {
                a = Some(v);
            }
            if seen > hi {
                let a = a.unwrap_or(v);
                return Some(a + (h - lo as f64) * (v - a));
            }
        }
        None
    }
}

/// Variance of ln of the arm's pooled p-quantile over `replicates` draws of its runs with
/// replacement, scaled by r/(r − 1). `None` below 2 runs (one run shows no run-to-run
/// variation) or when too few replicates have a positive quantile.
pub fn arm_var(arm: &Runs, p: f64, replicates: usize, seed: u64) -> Option<f64> {
    let r = arm.len();
    if r < 2 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xc105);
    let mut w = vec![0u32; r];
    let logs: Vec<f64> = (0..replicates)
        .filter_map(|_| {
            draw(&mut w, &mut rng);
            arm.quantile(&w, p).filter(|q| *q > 0.0).map(f64::ln)
        })
        .collect();
    Some(super::sd(&logs)?.powi(2) * r as f64 / (r - 1) as f64)
}

/// Interleaved arms: variance of ln(q_candidate / q_control) of the pooled quantiles over
/// draws of whole blocks with replacement — each drawn block brings its control run
/// `pairs[b].0` and its candidate run `pairs[b].1`, so what a block's two runs shared stays
/// shared — scaled by k/(k − 1) for k blocks. `None` below 2 blocks.
pub fn paired_var(
    base: &Runs,
    cand: &Runs,
    pairs: &[(usize, usize)],
    p: f64,
    replicates: usize,
    seed: u64,
) -> Option<f64> {
    let k = pairs.len();
    if k < 2 {
        return None;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xb10c5);
    let (mut wb, mut wc, mut blocks) = (
        vec![0u32; base.len()],
        vec![0u32; cand.len()],
        vec![0u32; k],
    );
    let d: Vec<f64> = (0..replicates)
        .filter_map(|_| {
            draw(&mut blocks, &mut rng);
            wb.fill(0);
            wc.fill(0);
            for (&(i, j), &times) in pairs.iter().zip(&blocks) {
                wb[i] += times;
                wc[j] += times;
            }
            let qb = base.quantile(&wb, p).filter(|q| *q > 0.0)?;
            let qc = cand.quantile(&wc, p).filter(|q| *q > 0.0)?;
            Some((qc / qb).ln())
        })
        .collect();
    Some(super::sd(&d)?.powi(2) * k as f64 / (k - 1) as f64)
}

/// How many times each of `w.len()` items is drawn in `w.len()` draws with replacement.
fn draw(w: &mut [u32], rng: &mut ChaCha8Rng) {
    w.fill(0);
    let n = w.len();
    for _ in 0..n {
        w[rng.random_range(0..n)] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, LogNormal};

    fn sample(v: &[f64]) -> Sample {
        Sample::from_values(v.iter().copied())
    }

    #[test]
    fn weighted_runs_give_the_quantile_of_the_merged_multiset() {
        let (a, b, c) = (
            sample(&[1000.0, 4000.0, 9000.0]),
            sample(&[2000.0, 3000.0]),
            sample(&[5000.0, 6000.0, 7000.0, 8000.0]),
        );
        let runs = Runs::new(&[&a, &b, &c]);
        for (w, parts) in [
            (vec![1, 1, 1], vec![&a, &b, &c]),
            (vec![2, 0, 1], vec![&a, &a, &c]),
            (vec![0, 3, 0], vec![&b, &b, &b]),
        ] {
            let merged = Sample::merged(&parts);
            for p in [0.0, 0.1, 0.5, 0.95, 1.0] {
                assert_eq!(runs.quantile(&w, p), merged.quantile(p), "{w:?} p{p}");
            }
        }
        assert_eq!(runs.quantile(&[0, 0, 0], 0.5), None);
    }

    #[test]
    fn drawing_runs_matches_the_real_spread_of_a_pooled_quantile() {
        // Runs with states of their own (sd 10 % on the log scale) over 50 requests each: the
        // truth is the spread of ln q of 8 pooled runs over many arms recorded anew.
        let state = LogNormal::new(0.0, 0.1).unwrap();
        let within = LogNormal::new(3.0, 0.3).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut arm = || -> Vec<Sample> {
            (0..8)
                .map(|_| {
                    let s = state.sample(&mut rng);
                    Sample::from_values((0..50).map(|_| s * within.sample(&mut rng) * 1000.0))
                })
                .collect()
        };
        for p in [0.5, 0.95] {
            let arms: Vec<Vec<Sample>> = (0..300).map(|_| arm()).collect();
            let logs: Vec<f64> = arms
                .iter()
                .map(|a| {
                    let refs: Vec<&Sample> = a.iter().collect();
                    Sample::merged(&refs).quantile(p).unwrap().ln()
                })
                .collect();
            let truth = super::super::sd(&logs).unwrap().powi(2);
            let est: f64 = arms[..60]
                .iter()
                .enumerate()
                .map(|(i, a)| {
                    let refs: Vec<&Sample> = a.iter().collect();
                    arm_var(&Runs::new(&refs), p, 500, i as u64).unwrap()
                })
                .sum::<f64>()
                / 60.0;
            let ratio = (est / truth).sqrt();
            assert!(
                (0.85..1.2).contains(&ratio),
                "p{p}: bootstrap SE / real spread {ratio:.3}"
            );
        }
    }
}
