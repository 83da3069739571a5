//! Where a run's warm-up ends: MSER-5, the marginal standard error rule on batch means of 5
//! (White, "An effective truncation heuristic for bias reduction in simulation output",
//! *Simulation* 69(6), 1997; White, Cobb & Spratt, WSC 2000, for the batch size 5).
//!
//! The series is one value per request in the order the requests were meant to go (E2E of
//! the successful measured requests, by intended send). It is cut into batches of 5 and their
//! means b₁…b_m; for each candidate cut d (in batches, over the first half of the series
//! only — a cut past half leaves too little to judge, as White advises),
//!
//! MSER(d) = Σ_{j>d} (b_j − b̄_d)² / (m − d)²,  b̄_d the mean of the batches after d,
//!
//! and the warm-up is the d that minimizes it: dropping the first batches lowers the
//! statistic while they are biased (their squared deviations leave the sum) and raises it once
//! they are not (the denominator shrinks faster than the sum). The end of a run needs no such
//! rule: once the last request has been sent no new arrival comes, so the drain begins at the
//! last intended send.

/// Batch size of MSER-5.
pub const BATCH: usize = 5;

/// Fewest batches MSER-5 is asked to judge: with fewer, a cut is noise.
pub const MIN_BATCHES: usize = 10;

/// How many leading values of `series` MSER-5 truncates as warm-up (a multiple of
/// [`BATCH`]); `None` with fewer than [`MIN_BATCHES`] batches. Values after the last whole
/// batch are left out of the statistic, as the method does.
pub fn mser5(series: &[f64]) -> Option<usize> {
    let means: Vec<f64> = series
        .chunks_exact(BATCH)
        .filter_map(crate::model::values::Values::mean_of)
        .collect();
    mser_cut(&means).map(|d| d * BATCH)
}

/// The MSER cut over batch means: how many leading batches are warm-up; `None` with fewer
/// than [`MIN_BATCHES`].
pub fn mser_cut(means: &[f64]) -> Option<usize> {
    let m = means.len();
    if m < MIN_BATCHES {
        return None;
    }
    // Suffix sums, so every candidate cut costs O(1).
    let (mut sum, mut sq) = (vec![0.0; m + 1], vec![0.0; m + 1]);
    for j in (0..m).rev() {
        sum[j] = sum[j + 1] + means[j];
        sq[j] = sq[j + 1] + means[j] * means[j];
    }
    let stat = |d: usize| {
        let n = (m - d) as f64;
        let mean = sum[d] / n;
        (sq[d] - n * mean * mean).max(0.0) / (n * n)
    };
    Some(
        (0..=m / 2)
            .min_by(|a, b| stat(*a).total_cmp(&stat(*b)))
            .unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn a_slow_start_is_cut_and_a_flat_series_is_not() {
        let mut rng = crate::testkit::rng(3);
        let noise = |rng: &mut rand_chacha::ChaCha8Rng| rng.random_range(-1.0..1.0);
        // 40 values decaying from +20 to 0, then 260 flat.
        let warm: Vec<f64> = (0..300)
            .map(|i| {
                100.0
                    + if i < 40 {
                        20.0 * (1.0 - i as f64 / 40.0)
                    } else {
                        0.0
                    }
            })
            .map(|v| v + noise(&mut rng))
            .collect();
        let cut = mser5(&warm).unwrap();
        assert!((25..=50).contains(&cut), "cut {cut}");
        let flat: Vec<f64> = (0..300).map(|_| 100.0 + noise(&mut rng)).collect();
        assert!(mser5(&flat).unwrap() <= 25, "{:?}", mser5(&flat));
        assert_eq!(mser5(&flat[..45]), None, "9 batches are too few");
    }

    #[test]
    fn the_cut_never_passes_half_the_series() {
        // A series that only rises: the statistic keeps falling, but the cut stops at half.
        let rising: Vec<f64> = (0..100).map(|i| i as f64).collect();
        assert!(mser5(&rising).unwrap() <= 50);
    }
}
