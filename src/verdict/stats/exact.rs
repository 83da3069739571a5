//! Exact tests for error counts, which a normal approximation cannot judge at small n (0
//! errors in 80 requests has no usable standard error).
//!
//! * **Fisher's exact test**, one-sided: given both arms' requests and the errors in all, how
//!   likely is a split at least as lopsided as the one seen if the error rate were the same?
//!   The candidate's errors are hypergeometric; the tail is summed in log space.
//! * **Clopper–Pearson** bounds of one proportion: the exact (conservative) interval from the
//!   Beta distribution, `Beta(x, n − x + 1)` and `Beta(x + 1, n − x)` quantiles.

use statrs::distribution::{Beta, ContinuousCDF};
use statrs::function::factorial::ln_binomial;

/// P(the candidate has ≥ `xc` of the errors) when `xc` of `nc` candidate requests and `xb` of
/// `nb` baseline requests failed and both arms share one error rate.
pub fn fisher_greater(xc: u64, nc: u64, xb: u64, nb: u64) -> f64 {
    let (n, t) = (nc + nb, xc + xb);
    let denom = ln_binomial(n, nc);
    let hi = t.min(nc);
    let p: f64 = (xc..=hi)
        .filter(|k| t - k <= nb)
        .map(|k| (ln_binomial(t, k) + ln_binomial(n - t, nc - k) - denom).exp())
        .sum();
    p.min(1.0)
}

/// The two-sided `level` Clopper–Pearson interval of a proportion with `x` of `n`.
pub fn clopper_pearson(x: u64, n: u64, level: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let tail = (1.0 - level) / 2.0;
    let (x, nf) = (x as f64, n as f64);
    let lo = if x == 0.0 {
        0.0
    } else {
        Beta::new(x, nf - x + 1.0).map_or(0.0, |b| b.inverse_cdf(tail))
    };
    let hi = if x >= nf {
        1.0
    } else {
        Beta::new(x + 1.0, nf - x).map_or(1.0, |b| b.inverse_cdf(1.0 - tail))
    };
    (lo, hi)
}

/// Requests per arm for a run with no errors to bound its error rate below `floor` at `level`:
/// the n with (1 − floor)ⁿ ≤ (1 − level) / 2.
pub fn requests_to_bound(floor: f64, level: f64) -> u64 {
    (((1.0 - level) / 2.0).ln() / (1.0 - floor).ln())
        .ceil()
        .max(1.0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fisher_matches_hand_computed_tails() {
        // 3 of 4 candidate requests failed, 0 of 4 baseline: C(3,3)·C(5,1)/C(8,4) = 5/70.
        assert!((fisher_greater(3, 4, 0, 4) - 5.0 / 70.0).abs() < 1e-12);
        // No errors anywhere: nothing is lopsided.
        assert!((fisher_greater(0, 80, 0, 240) - 1.0).abs() < 1e-12);
        // 8 of 80 against 0 of 240 is decisive.
        assert!(fisher_greater(8, 80, 0, 240) < 1e-4);
    }

    #[test]
    fn clopper_pearson_bounds_and_the_rule_of_three() {
        let (lo, hi) = clopper_pearson(0, 100, 0.95);
        assert_eq!(lo, 0.0);
        // The exact 97.5 % upper bound for 0/100 is 1 − 0.025^(1/100) ≈ 3.62 %.
        assert!((hi - (1.0 - 0.025f64.powf(0.01))).abs() < 1e-9, "{hi}");
        let (lo, hi) = clopper_pearson(5, 10, 0.95);
        assert!(lo < 0.5 && hi > 0.5 && lo > 0.15 && hi < 0.85);
        assert_eq!(requests_to_bound(0.005, 0.95), 736);
    }
}
