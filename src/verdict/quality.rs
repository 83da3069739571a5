//! Quality rows (`accuracy`, `agreement`): the quality pass's answers judged item by item,
//! paired across the arms (same set, same SHA-256), with the verdict words, thresholds and α
//! of every row. `accuracy` is each arm's share right on the labelled items; `agreement` is
//! the share of answers equal to the baseline's first pass — the baseline's own second pass
//! against its first (how often an answer flips with nothing changed), the candidate's first
//! against it — so an engine that flips flips alike in both arms and cancels in the test.
//!
//! Test: McNemar's exact test on the discordant items for a regression (beyond the threshold
//! *and* p below the Bonferroni share α/m); the exact Clopper–Pearson bound on the drop inside
//! the threshold for no change. The design, its assumptions and measured error rates:
//! `docs/quality.md`. References: McNemar (1947); Fay (2010), R Journal 2(1).

use crate::model::comparison::{Row, Verdict};
use crate::model::metric::Metric;
use crate::model::quality::QualityRun;
use crate::model::result::RunResult;
use crate::verdict::stats::exact::clopper_pearson;
use statrs::distribution::{Binomial, DiscreteCDF};
use std::collections::HashMap;

/// The paired items of a quality row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairedCounts {
    /// Items paired (answered in both arms' passes).
    pub n: u64,
    /// Items that went from 1 (right, or agreeing) to 0, and from 0 to 1.
    pub worse: u64,
    pub better: u64,
    /// Items at 1 in the baseline and in the candidate.
    pub base_ones: u64,
    pub cand_ones: u64,
    /// `agreement` on a baseline with one pass: its flip rate was not measured.
    pub flips_unmeasured: bool,
}

impl PairedCounts {
    /// McNemar's exact one-sided p of the candidate being worse, and of it being better.
    pub fn p_worse_better(&self) -> (f64, f64) {
        let k = self.worse + self.better;
        if k == 0 {
            return (1.0, 1.0);
        }
        let Ok(b) = Binomial::new(0.5, k) else {
            return (1.0, 1.0);
        };
        let at_least = |x: u64| if x == 0 { 1.0 } else { b.sf(x - 1) };
        (at_least(self.worse), at_least(self.better))
    }

    /// Bounds of the drop (worse − better) / n: the upper end the Clopper–Pearson upper bound
    /// of P(worse) less the lower bound of P(better), the lower end the reverse, each
    /// proportion's bound two-sided at `level` (so each end is one-sided at (1 − level)).
    pub fn interval(&self, level: f64) -> (f64, f64) {
        let (wl, wh) = clopper_pearson(self.worse, self.n, level);
        let (bl, bh) = clopper_pearson(self.better, self.n, level);
        (wl - bh, wh - bl)
    }

    /// The effect: the drop, positive = worse.
    pub fn effect(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        (self.worse as f64 - self.better as f64) / self.n as f64
    }
}

/// The first and second quality passes of an arm's runs, in run order.
fn passes(runs: &[RunResult]) -> Vec<&QualityRun> {
    runs.iter()
        .filter_map(|r| r.quality.as_ref())
        .take(2)
        .collect()
}

/// Why a quality row cannot be judged, or its paired counts; `None` when neither arm made a
/// quality pass (the row is left out, as goodput without SLOs).
pub fn paired(
    metric: Metric,
    base: &[RunResult],
    cand: &[RunResult],
) -> Option<Result<PairedCounts, String>> {
    let (b, c) = (passes(base), passes(cand));
    if b.is_empty() && c.is_empty() {
        return None;
    }
    let (Some(b1), Some(c1)) = (b.first(), c.first()) else {
        let side = if b.is_empty() {
            "the baseline"
        } else {
            "the candidate"
        };
        return Some(Err(format!("{side} made no quality pass")));
    };
    if b1.set_sha256 != c1.set_sha256 {
        return Some(Err(format!(
            "the arms answered different quality sets ({} vs {})",
            b1.set, c1.set
        )));
    }
    let cand_of: HashMap<&str, _> = c1.answers.iter().map(|a| (a.id.as_str(), a)).collect();
    let mut counts = PairedCounts {
        n: 0,
        worse: 0,
        better: 0,
        base_ones: 0,
        cand_ones: 0,
        flips_unmeasured: false,
    };
    let b2: Option<HashMap<&str, _>> = b
        .get(1)
        .map(|p| p.answers.iter().map(|a| (a.id.as_str(), a)).collect());
    for a in &b1.answers {
        let Some(ca) = cand_of.get(a.id.as_str()) else {
            continue;
        };
        let (x, y) = match metric {
            Metric::Accuracy => match (a.correct, ca.correct) {
                (Some(x), Some(y)) => (x, y),
                _ => continue,
            },
            _ => {
                let base = match &b2 {
                    Some(m) => match m.get(a.id.as_str()) {
                        Some(a2) => a2.agrees_with(a),
                        None => continue,
                    },
                    None => a.key().is_some(),
                };
                (base, ca.agrees_with(a))
            }
        };
        counts.n += 1;
        counts.base_ones += u64::from(x);
        counts.cand_ones += u64::from(y);
        counts.worse += u64::from(x && !y);
        counts.better += u64::from(!x && y);
    }
    counts.flips_unmeasured = metric == Metric::Agreement && b2.is_none();
    if counts.n == 0 {
        return Some(Err(match metric {
            Metric::Accuracy => "no labelled item answered in both arms".into(),
            _ => "no item answered in both arms".into(),
        }));
    }
    Some(Ok(counts))
}

/// The exact decision of a quality row, as the error rate's (`gate::exact`): a regression
/// needs the drop beyond the threshold and McNemar's one-sided p below 1 − `fail`; "no
/// change" needs the exact upper bound on the drop, at `bound`, inside the threshold. Fills
/// the row's interval (the drop's bounds at 1 − 2(1 − `fail`), in pp of the metric: a drop is
/// negative) and bound.
pub fn decide(row: &mut Row, c: &PairedCounts, fail: f64, bound: f64) -> Verdict {
    let tail = 1.0 - fail;
    let (p_worse, p_better) = c.p_worse_better();
    let (lo, hi) = c.interval(1.0 - 2.0 * tail);
    (row.interval_low, row.interval_high) = (-hi * 100.0, -lo * 100.0);
    row.critical = (hi - lo) / 2.0;
    row.bound = c.interval(bound).1;
    super::gate::exact_verdict(row, p_worse, p_better, tail)
}

/// Why, in words: the counts, the test and the bound.
pub fn reason(r: &Row, c: &PairedCounts, fail: f64, bound: f64) -> String {
    let (p_worse, p_better) = c.p_worse_better();
    let tail = 1.0 - fail;
    let level = (bound * 1e5).round() / 1e3;
    let what = match r.metric {
        Metric::Accuracy => "right",
        _ => "agreeing",
    };
    let counts = format!(
        "{} of {} items {what} → {}; {} lost, {} gained",
        c.base_ones, c.n, c.cand_ones, c.worse, c.better
    );
    let flips = if c.flips_unmeasured {
        " (the baseline made one quality pass, so its flip rate was taken as 0)"
    } else {
        ""
    };
    let floor_pp = r.floor * 100.0;
    let drop_bound = format!(
        "the exact {level} % bound on the drop, {:.2} pp,",
        r.bound * 100.0
    );
    let word = r.verdict.label();
    match r.verdict {
        Verdict::Regressed => format!(
            "{word} {} {:+.2}pp ({counts}; beyond −{floor_pp}pp and McNemar's exact p {p_worse:.2e} < {tail:.4}){flips}",
            r.metric, r.delta_pct
        ),
        Verdict::Improved => format!(
            "{word} {} {:+.2}pp ({counts}; McNemar's exact p {p_better:.2e} < {tail:.4}){flips}",
            r.metric, r.delta_pct
        ),
        Verdict::NoChange => format!(
            "{word} {} {:+.2}pp ({counts}; {drop_bound} stays within −{floor_pp}pp){flips}",
            r.metric, r.delta_pct
        ),
        _ => format!(
            "{word} {} {:+.2}pp ({counts}: {drop_bound} reaches past −{floor_pp}pp; a larger quality set narrows it){flips}",
            r.metric, r.delta_pct
        ),
    }
}

#[cfg(test)]
mod tests;
