//! The decision rule of the gate.
//!
//! Every metric's effect is signed so that positive means *worse* (slower latency, lower
//! throughput, more errors). With standard error `se`, the Bonferroni-corrected critical value
//! is c = q₁₋α/m · se for m gated metrics — one-sided in each direction: a regression is
//! tested on its own, and an improvement on its own — the bound on worse is b = effect +
//! q₁₋α · se (one-sided, each metric at α), and the floor f is the threshold on the effect's
//! scale (ln(1 + 10 %) for a "10%" latency threshold):
//!
//! * **regressed** — effect > max(c, f): beyond the threshold *and* beyond noise;
//! * **improved** — −effect > max(c, f);
//! * **no change** — neither, and b ≤ f: the one-sided 1 − α upper bound of how much worse
//!   the candidate is stays inside the threshold, so a regression of the threshold's size is
//!   excluded — a non-inferiority test — even where noise hides a change the other way;
//! * **inconclusive** — neither: a regression of the threshold's size can be neither seen nor
//!   excluded; the runs are too few.
//!
//! A regression needs both conditions, so the false-FAIL rate (against no difference) is at
//! most α over the whole gated set (Bonferroni), as `--alpha` says, and so is the rate of a
//! false "improved"; a small but significant change inside the threshold passes. "No change"
//! is wrong — a regression of at least the threshold called no change — with probability at
//! most α for each metric, since then b ≤ f needs the estimate to fall q₁₋α · se below the
//! true effect. A small critical value alone (c ≤ f) is not enough: with the estimate just
//! under the threshold, a regression of the threshold's size is as likely as not, and the
//! rows that rule let through could not keep that bound over the looks of a sequential
//! compare. The bound needs no Bonferroni share: "no regression on any metric" is the
//! intersection of the metrics' claims, and an intersection–union test that rejects "some
//! metric is worse by its threshold" only when every metric's own level-α test does is
//! itself of level α (Berger 1982) — splitting α is for a union like "some metric
//! regressed", the FAIL side. The FAIL test is one-sided at α/m: a two-sided test at α/2m
//! would spend only α/2 on false FAILs, stricter than the `--alpha` it prints. effect ± c is
//! the two-sided 1 − 2α/m interval whose ends are the two one-sided bounds.

pub use crate::model::comparison::Verdict;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Decision {
    pub verdict: Verdict,
    pub critical: f64,
    /// The one-sided 1 − α upper bound of the effect: how much worse the candidate may be.
    pub bound: f64,
}

/// `q_fail`: the quantile of the FAIL test (1 − α/m); `q_bound`: of the bound on worse (1 − α).
pub fn decide(effect_worse: f64, se: f64, floor: f64, q_fail: f64, q_bound: f64) -> Decision {
    let (critical, bound) = if se.is_finite() {
        (q_fail * se, effect_worse + q_bound * se)
    } else {
        (f64::INFINITY, f64::INFINITY)
    };
    let bar = critical.max(floor);
    let verdict = if effect_worse > bar {
        Verdict::Regressed
    } else if -effect_worse > bar {
        Verdict::Improved
    } else if bound > floor {
        Verdict::Inconclusive
    } else {
        Verdict::NoChange
    };
    Decision {
        verdict,
        critical,
        bound,
    }
}

/// Requests per arm needed for the critical value to fall to the floor, when the within-run
/// (bootstrap) noise is what is too large: SE shrinks as 1/√n.
pub fn needed_n(n: usize, critical: f64, floor: f64) -> Option<u64> {
    (critical.is_finite() && floor > 0.0 && n > 0)
        .then(|| (n as f64 * (critical / floor).powi(2) * 1.1).ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_conditions_are_needed() {
        let f = 1.1f64.ln();
        assert_eq!(
            decide(0.133, 0.02, f, 2.6, 1.645).verdict,
            Verdict::Regressed
        );
        assert_eq!(
            decide(0.05, 0.01, f, 2.6, 1.645).verdict,
            Verdict::NoChange,
            "significant but inside the threshold"
        );
        assert_eq!(
            decide(0.2, 0.1, f, 2.6, 1.645).verdict,
            Verdict::Inconclusive,
            "beyond the threshold but within noise"
        );
        assert_eq!(
            decide(-0.05, 0.05, f, 2.6, 1.645).verdict,
            Verdict::NoChange,
            "noisier than the threshold, but the bound on worse (0.03) excludes it"
        );
        assert_eq!(
            decide(0.05, 0.05, f, 2.6, 1.645).verdict,
            Verdict::Inconclusive,
            "the same noise leaning worse: the bound (0.13) reaches past the threshold"
        );
        let even = decide(0.0, 0.05, f, 2.6, 1.645);
        assert_eq!(
            even.verdict,
            Verdict::NoChange,
            "no lean: c (0.13) > f, but the bound at α (0.082), not at α/m, is inside f"
        );
        assert!((even.critical - 0.13).abs() < 1e-12 && (even.bound - 0.08225).abs() < 1e-12);
        assert_eq!(decide(-0.3, 0.02, f, 2.6, 1.645).verdict, Verdict::Improved);
        assert_eq!(
            decide(0.0, f64::INFINITY, f, 2.6, 1.645).verdict,
            Verdict::Inconclusive
        );
        assert!(matches!(needed_n(100, 2.0 * f, f), Some(440..=441)));
    }
}
