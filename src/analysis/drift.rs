//! Slow drift and quiet shifts in a scenario's history: a change point in the series of one
//! metric's values over successive compares, the creep that every single gate passed (3 % a
//! step against a 10 % threshold, the baseline re-recorded each time).
//!
//! Method: least-squares change-point models on ln(value), against a constant level:
//! * a **shift** at k — one level before k, another from k on (Hawkins 1977, "Testing a
//!   sequence of observations for a shift in location", JASA 72);
//! * a **drift** from k — the level constant up to k − 1, then rising or falling linearly
//!   (the continuous two-phase regression of Hinkley 1969, "Inference about the intersection
//!   in two-phase regression", Biometrika 56), so the first drifted value is found exactly.
//!
//! The statistic is the largest relative reduction of the residual sum of squares,
//! max over k and both models of (SSE₀ − SSE₁) / SSE₁, each segment at least 3 values. Its
//! p-value is a permutation test of the max statistic (Antoch & Hušková 2001, "Permutation
//! tests in change point analysis", Statistics & Probability Letters 53): under "nothing
//! changed" the values are exchangeable, so shuffling them (seeded, 999 times) gives the
//! statistic's null distribution whatever the noise's shape or size. A change point is
//! flagged when p ≤ α (the caller divides its α over the metrics it tests) and the fitted
//! change over the history is at least a floor (5 % by default), so that a real but tiny
//! change on a very steady series is not called drift.

use crate::model::history::{ChangeKind, ChangePoint};
use crate::model::values::Values;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// Shortest segment on either side of a change point.
const MIN_SEGMENT: usize = 3;
/// Permutations of the p-value.
const PERMUTATIONS: usize = 999;

/// The least-squares hinge at k − 1: z on x = max(0, i − (k − 1)), (intercept, slope, SSE).
fn hinge(z: &[f64], k: usize) -> (f64, f64, f64) {
    let n = z.len() as f64;
    let x = |i: usize| (i as f64 - (k - 1) as f64).max(0.0);
    let (mut sx, mut sz, mut sxx, mut sxz, mut szz) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for (i, v) in z.iter().enumerate() {
        let xi = x(i);
        sx += xi;
        sz += v;
        sxx += xi * xi;
        sxz += xi * v;
        szz += v * v;
    }
    let (cxx, cxz, czz) = (sxx - sx * sx / n, sxz - sx * sz / n, szz - sz * sz / n);
    if cxx <= 0.0 {
        return (sz / n, 0.0, czz.max(0.0));
    }
    let b = cxz / cxx;
    ((sz - b * sx) / n, b, (czz - cxz * cxz / cxx).max(0.0))
}

/// Running sums over a series: Σ1, Σi, Σi², Σz, Σz², Σi·z of its first k values, so that
/// every segment's and every hinge's least-squares fit is O(1) and a scan over all onsets O(n)
/// (a permutation test of 999 scans of a 10,000-compare history in about a second).
struct Sums {
    /// `at[k]`: the sums of values 0..k.
    at: Vec<[f64; 6]>,
}

impl Sums {
    fn new(z: &[f64]) -> Sums {
        let mut at = Vec::with_capacity(z.len() + 1);
        let mut s = [0.0; 6];
        at.push(s);
        for (i, &v) in z.iter().enumerate() {
            let x = i as f64;
            s[0] += 1.0;
            s[1] += x;
            s[2] += x * x;
            s[3] += v;
            s[4] += v * v;
            s[5] += x * v;
            at.push(s);
        }
        Sums { at }
    }

    /// The sums of values lo..hi.
    fn range(&self, lo: usize, hi: usize) -> [f64; 6] {
        let (a, b) = (self.at[lo], self.at[hi]);
        std::array::from_fn(|j| b[j] - a[j])
    }

    /// Residual sum of squares of values lo..hi about their mean.
    fn sse(&self, lo: usize, hi: usize) -> f64 {
        let [n, _, _, sz, szz, _] = self.range(lo, hi);
        (szz - sz * sz / n).max(0.0)
    }

    /// [`hinge`]'s SSE at k − 1 from the sums: x = i − (k − 1) from k − 1 on, 0 before.
    fn hinge_sse(&self, k: usize) -> f64 {
        let all = self.range(0, self.at.len() - 1);
        let (n, sz, szz) = (all[0], all[3], all[4]);
        let c = (k - 1) as f64;
        let [m, si, sii, szt, _, siz] = self.range(k - 1, self.at.len() - 1);
        let sx = si - c * m;
        let sxx = sii - 2.0 * c * si + c * c * m;
        let sxz = siz - c * szt;
        let (cxx, cxz, czz) = (sxx - sx * sx / n, sxz - sx * sz / n, szz - sz * sz / n);
        if cxx <= 0.0 {
            return czz.max(0.0);
        }
        (czz - cxz * cxz / cxx).max(0.0)
    }
}

/// The best fit of either model: (statistic, kind, onset). `z` is centred first, so that the
/// running sums lose no precision to a large common level.
fn best(z: &[f64]) -> Option<(f64, ChangeKind, usize)> {
    let n = z.len();
    if n < 2 * MIN_SEGMENT {
        return None;
    }
    let mean = Values::mean_of(z)?;
    let centred: Vec<f64> = z.iter().map(|v| v - mean).collect();
    let sums = Sums::new(&centred);
    let sse0 = sums.sse(0, n);
    let mut top: Option<(f64, ChangeKind, usize)> = None;
    let mut consider = |sse1: f64, kind: ChangeKind, k: usize| {
        let stat = (sse0 - sse1) / sse1.max(sse0 * 1e-12).max(1e-300);
        if top.is_none_or(|t| stat > t.0) {
            top = Some((stat, kind, k));
        }
    };
    for k in MIN_SEGMENT..=n - MIN_SEGMENT {
        consider(sums.sse(0, k) + sums.sse(k, n), ChangeKind::Shift, k);
        // Drift from k: flat through k − 1, then a slope (the hinge at k − 1).
        consider(sums.hinge_sse(k), ChangeKind::Drift, k);
    }
    top
}

/// The best change point of `values` (> 0, in order) with its permutation p-value; `seed`
/// makes the p-value reproducible. `None` below 6 values or with a non-positive value.
pub fn change_point(values: &[f64], seed: u64) -> Option<ChangePoint> {
    if values.iter().any(|v| !v.is_finite() || *v <= 0.0) {
        return None;
    }
    let z: Vec<f64> = values.iter().map(|v| v.ln()).collect();
    let (stat, kind, onset) = best(&z)?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut shuffled = z.clone();
    let exceed = (0..PERMUTATIONS)
        .filter(|_| {
            shuffled.shuffle(&mut rng);
            best(&shuffled).is_some_and(|b| b.0 >= stat * (1.0 - 1e-12))
        })
        .count();
    let n = z.len();
    let before = Values::mean_of(&z[..onset])?;
    let (after, per_step) = match kind {
        ChangeKind::Shift => (Values::mean_of(&z[onset..])?, 0.0),
        ChangeKind::Drift => {
            let (a, b, _) = hinge(&z, onset);
            (a + b * (n - onset) as f64, b)
        }
    };
    Some(ChangePoint {
        kind,
        onset,
        p_value: (exceed + 1) as f64 / (PERMUTATIONS + 1) as f64,
        before: before.exp(),
        after: after.exp(),
        change_pct: ((after - before).exp() - 1.0) * 100.0,
        per_step_pct: (per_step.exp() - 1.0) * 100.0,
    })
}

/// Whether `cp` is flagged at `alpha` with a change of at least `floor_pct` either way.
pub fn flagged(cp: &ChangePoint, alpha: f64, floor_pct: f64) -> bool {
    cp.p_value <= alpha && cp.change_pct.abs() >= floor_pct
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_distr::{Distribution, Normal};

    fn noisy(n: usize, sd: f64, seed: u64, f: impl Fn(usize) -> f64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let e = Normal::new(0.0, sd).unwrap();
        (0..n).map(|i| f(i) * e.sample(&mut rng).exp()).collect()
    }

    #[test]
    fn a_creep_of_three_percent_a_step_is_found_where_it_starts() {
        // 30 compares: flat for 15, then 3 % slower every compare, 1.5 % noise.
        for seed in 0..20 {
            let v = noisy(30, 0.015, seed, |i| {
                100.0 * 1.03f64.powi(i.saturating_sub(14) as i32)
            });
            let cp = change_point(&v, 7).unwrap();
            assert!(flagged(&cp, 0.01, 5.0), "seed {seed}: {cp:?}");
            assert_eq!(cp.kind, ChangeKind::Drift, "seed {seed}: {cp:?}");
            assert!((14..=16).contains(&cp.onset), "seed {seed}: {cp:?}");
            assert!((2.0..4.0).contains(&cp.per_step_pct), "seed {seed}: {cp:?}");
        }
    }

    #[test]
    fn a_shift_is_a_shift() {
        let v = noisy(30, 0.01, 3, |i| if i < 20 { 50.0 } else { 54.0 });
        let cp = change_point(&v, 7).unwrap();
        assert_eq!((cp.kind, cp.onset), (ChangeKind::Shift, 20), "{cp:?}");
        assert!(flagged(&cp, 0.01, 5.0) == (cp.change_pct >= 5.0));
    }

    #[test]
    fn nothing_changed_is_flagged_at_most_at_alpha() {
        // 300 A/A histories of 30 compares with 3 % noise: the permutation test's false
        // flags stay near α = 5 %, and none passes the 5 % floor at α = 1 %.
        let mut at_5 = 0;
        let mut flagged_1 = 0;
        for seed in 0..300 {
            let v = noisy(30, 0.03, 1000 + seed, |_| 80.0);
            let cp = change_point(&v, seed).unwrap();
            at_5 += usize::from(cp.p_value <= 0.05);
            flagged_1 += usize::from(flagged(&cp, 0.01, 5.0));
        }
        assert!(at_5 <= 25, "{at_5} of 300 at α = 5 %");
        assert!(flagged_1 <= 6, "{flagged_1} of 300 flagged");
    }

    /// Residual sum of squares of `z` about its mean.
    fn sse_const(z: &[f64]) -> f64 {
        Values::new(z.iter().copied()).sum_sq()
    }

    /// The scan by direct fits at every onset, O(n²): what the running sums must reproduce.
    fn best_direct(z: &[f64]) -> Option<(f64, ChangeKind, usize)> {
        let n = z.len();
        let sse0 = sse_const(z);
        let mut top: Option<(f64, ChangeKind, usize)> = None;
        let mut consider = |sse1: f64, kind: ChangeKind, k: usize| {
            let stat = (sse0 - sse1) / sse1.max(sse0 * 1e-12).max(1e-300);
            if top.is_none_or(|t| stat > t.0) {
                top = Some((stat, kind, k));
            }
        };
        for k in MIN_SEGMENT..=n - MIN_SEGMENT {
            consider(
                sse_const(&z[..k]) + sse_const(&z[k..]),
                ChangeKind::Shift,
                k,
            );
            consider(hinge(z, k).2, ChangeKind::Drift, k);
        }
        top
    }

    #[test]
    fn the_running_sums_scan_finds_what_direct_fits_find() {
        for seed in 0..200u64 {
            let n = 6 + (seed as usize * 7) % 120;
            let v = noisy(n, 0.02 + (seed % 5) as f64 * 0.01, seed, |i| {
                if seed % 3 == 0 && i > n / 2 {
                    120.0 * 1.01f64.powi((i - n / 2) as i32)
                } else {
                    100.0
                }
            });
            let z: Vec<f64> = v.iter().map(|x| x.ln()).collect();
            let (fast, slow) = (best(&z).unwrap(), best_direct(&z).unwrap());
            assert_eq!((fast.1, fast.2), (slow.1, slow.2), "seed {seed}");
            assert!(
                (fast.0 - slow.0).abs() <= 1e-6 * slow.0.abs().max(1.0),
                "seed {seed}"
            );
        }
    }

    #[test]
    fn too_short_or_invalid_series_have_no_change_point() {
        assert!(change_point(&[1.0, 2.0, 3.0, 4.0, 5.0], 1).is_none());
        assert!(change_point(&[1.0, 2.0, 3.0, 0.0, 5.0, 6.0], 1).is_none());
    }
}
