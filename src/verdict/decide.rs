//! The decision rule of the gate, on an effect signed so that positive is worse, its standard
//! error and the threshold's floor f: **regressed** when effect > max(c, f) with
//! c = q₁₋α/m·se (Bonferroni over the m gated rows, one-sided each way); **improved**
//! symmetrically; **no change** when neither and the one-sided 1 − α bound on worse,
//! effect + q₁₋α·se, is within f (a non-inferiority test, needing no Bonferroni share:
//! an intersection–union test, Berger 1982); **inconclusive** otherwise. A false FAIL has
//! probability ≤ α over the gated set, and so has a false "improved"; a regression of the
//! threshold's size is called no change with probability ≤ α for each row.
//!
//! Why a small critical value alone is not enough, and the rest of the method:
//! `docs/gate.md` ("The decision").

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
