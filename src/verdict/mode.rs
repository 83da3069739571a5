//! Naming what is not a regression.
//!
//! **A change of mode, not of speed.** A closed loop of clients against a batching server
//! settles for a whole run into one of a few states: two clients whose prompts are prefilled
//! in one batch (long TTFT, short TPOT) or one after the other, each prefill stalling the
//! other's decode (short TTFT, long TPOT). The user-visible total — E2E and throughput — is
//! the same in both. So when TTFT p50 and TPOT p50 moved beyond their thresholds in opposite
//! directions while E2E p50 and output throughput stayed inside theirs, the comparison says
//! the run changed mode, shows each run's medians, and does not call it a regression: those
//! two rows become inconclusive (exit 0; `--strict` still fails on them).
//!
//! **Runs that split into two clusters.** Each run's TTFT and TPOT values are split in two by
//! exact 1-D 2-means on their logarithms; the split is flagged when both clusters hold at
//! least 10 % of the requests, Ashman's D = √2·|μ₁ − μ₂| / √(σ₁² + σ₂²) exceeds 2, the empty
//! gap between the clusters is wider than either cluster's spread (D alone would call a flat,
//! uniform spread bimodal) and the clusters' centres differ by at least 25 % (an engine's step
//! quantization splits values a few percent apart cleanly, and that is no state) — from 10
//! requests up. A split means the run's requests met the server in two different states; the
//! run's quantiles then depend on how many fell in each, which is why such runs vary.
//!
//! **A quantile in a jump.** A tail quantile can sit where an arm's pooled values jump from one
//! cluster to a small slower one (on llama-server, TPOT p95 between ≈ 23 ms and ≈ 40 ms: the
//! decode steps that waited for the other client's prefill, 3–8 % of requests). Such a
//! quantile moves with the slower cluster's share, not with either cluster's speed, and more
//! requests settle it only slowly. Flagged when, across the 4 % of values around p, they rise
//! by ≥ 20 % and by ≥ 4× the log-rise of the 4 % just below (a smooth tail rises gradually:
//! 1.6× for any log-normal at p95, 1.5× for an exponential, 1.9× for a Pareto), from 50 values.

use crate::metrics::quantile::Sample;
use crate::metrics::summary::ordered;
use crate::model::comparison::{Row, Verdict};
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::result::RunResult;

/// Two clusters of one run's values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Share of the values in the lower cluster.
    pub low_share: f64,
    /// Geometric means of the clusters (the values' unit).
    pub low: f64,
    pub high: f64,
    pub ashman_d: f64,
}

/// The 2-means split of `values` (> 0), when it separates two real clusters.
pub fn split(values: &[f64]) -> Option<Split> {
    let mut x: Vec<f64> = values
        .iter()
        .filter(|v| **v > 0.0)
        .map(|v| v.ln())
        .collect();
    let n = x.len();
    if n < 10 {
        return None;
    }
    x.sort_by(f64::total_cmp);
    // Prefix sums make every split point's within-cluster sum of squares O(1).
    let (mut s, mut s2) = (vec![0.0; n + 1], vec![0.0; n + 1]);
    for (i, v) in x.iter().enumerate() {
        s[i + 1] = s[i] + v;
        s2[i + 1] = s2[i] + v * v;
    }
    let ss = |a: usize, b: usize| {
        let k = (b - a) as f64;
        (s2[b] - s2[a]) - (s[b] - s[a]).powi(2) / k
    };
    let k = (1..n).min_by(|&a, &b| (ss(0, a) + ss(a, n)).total_cmp(&(ss(0, b) + ss(b, n))))?;
    let (m1, m2) = (s[k] / k as f64, (s[n] - s[k]) / (n - k) as f64);
    let (v1, v2) = (ss(0, k) / k as f64, ss(k, n) / (n - k) as f64);
    let d = std::f64::consts::SQRT_2 * (m2 - m1).abs() / (v1 + v2).sqrt().max(1e-12);
    let share = k as f64 / n as f64;
    let gap = x[k] - x[k - 1];
    let clean = gap > v1.sqrt().max(v2.sqrt());
    let material = m2 - m1 >= 1.25f64.ln();
    (d > 2.0 && clean && material && (0.1..=0.9).contains(&share)).then_some(Split {
        low_share: share,
        low: m1.exp(),
        high: m2.exp(),
        ashman_d: d,
    })
}

/// Where the p-quantile of `s` lies in a jump between clusters: the values at p − 2 % and
/// p + 2 % (the sample's unit), when it does (see the module header).
pub fn quantile_in_jump(s: &Sample, p: f64) -> Option<(f64, f64)> {
    if s.len() < 50 || !(0.06..=0.98).contains(&p) {
        return None;
    }
    let ln_q = |p: f64| s.quantile(p).filter(|v| *v > 0.0).map(f64::ln);
    let (below, lo, hi) = (ln_q(p - 0.06)?, ln_q(p - 0.02)?, ln_q(p + 0.02)?);
    let rise = hi - lo;
    (rise >= 1.2f64.ln() && rise >= 4.0 * (lo - below)).then(|| (lo.exp(), hi.exp()))
}

fn p50(metric: Latency) -> Metric {
    Metric::Latency(metric, Quantile::P50)
}

/// Whether the rows show a change of mode: TTFT and TPOT medians beyond their thresholds in
/// opposite directions, E2E median and output throughput (when judged) inside theirs.
fn changed_mode(rows: &[Row]) -> bool {
    let get = |m: Metric| rows.iter().find(|r| r.metric == m);
    let (Some(ttft), Some(tpot), Some(e2e)) = (
        get(p50(Latency::Ttft)),
        get(p50(Latency::Tpot)),
        get(p50(Latency::E2e)),
    ) else {
        return false;
    };
    let beyond = |r: &Row| r.floor > 0.0 && r.effect.abs() > r.floor;
    let inside = |r: &Row| r.effect.abs() <= r.floor.max(1e-12);
    let throughput_flat = get(Metric::OutputThroughput).is_none_or(inside);
    beyond(ttft)
        && beyond(tpot)
        && ttft.effect.signum() != tpot.effect.signum()
        && inside(e2e)
        && throughput_flat
}

/// Each run's TTFT and TPOT medians (ms), for the evidence.
fn medians(runs: &[RunResult]) -> String {
    runs.iter()
        .map(|r| {
            let m = |l: Latency| r.summary.latency(l).map_or(0.0, |s| s.p50);
            format!("{:.1}/{:.1}", m(Latency::Ttft), m(Latency::Tpot))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Demotes a mode change's TTFT and TPOT verdicts to inconclusive (saying why), and returns
/// the notes the comparison shows: the mode change with its evidence, and every run whose
/// TTFT or TPOT splits into two clusters.
pub fn name(rows: &mut [Row], base: &[RunResult], cand: &[RunResult]) -> Vec<String> {
    let mut notes = Vec::new();
    if changed_mode(rows) {
        let d = |m: Metric| {
            rows.iter()
                .find(|r| r.metric == m)
                .map_or(0.0, |r| r.delta_pct)
        };
        let summary = format!(
            "the runs changed mode (prefill/decode phase), not speed — TTFT p50 {:+.0} % and TPOT p50 {:+.0} % moved in opposite directions while E2E p50 ({:+.1} %) and output throughput ({:+.1} %) did not. Per-run TTFT/TPOT medians (ms): baseline {}; candidate {}",
            d(p50(Latency::Ttft)),
            d(p50(Latency::Tpot)),
            d(p50(Latency::E2e)),
            d(Metric::OutputThroughput),
            medians(base),
            medians(cand)
        );
        for r in rows.iter_mut().filter(|r| {
            matches!(r.metric, Metric::Latency(Latency::Ttft | Latency::Tpot, _))
                && matches!(r.verdict, Verdict::Regressed | Verdict::Improved)
        }) {
            r.verdict = Verdict::Inconclusive;
            r.reason = format!(
                "inconclusive {} {:+.1}% (a change of mode, not of speed: see the note; more runs or --interleave tell the two apart)",
                r.metric, r.delta_pct
            );
        }
        notes.push(summary);
    }
    for l in [Latency::Ttft, Latency::Tpot] {
        let mut split_runs = Vec::new();
        for (arm, runs) in [("baseline", base), ("candidate", cand)] {
            for (i, r) in runs.iter().enumerate() {
                if let Some(s) = split(&ordered(r, l)) {
                    split_runs.push(format!(
                        "{arm} run {} ({:.0} % near {:.1} ms, {:.0} % near {:.1} ms)",
                        i + 1,
                        s.low_share * 100.0,
                        s.low / 1000.0,
                        (1.0 - s.low_share) * 100.0,
                        s.high / 1000.0
                    ));
                }
            }
        }
        if !split_runs.is_empty() {
            notes.push(format!(
                "{l}: two server states in {} of {} runs — {l} splits into two clusters within {}: the requests met the server in two states, so such runs' quantiles vary with the mix",
                split_runs.len(),
                base.len() + cand.len(),
                split_runs.join(", ")
            ));
        }
    }
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quantile_between_a_cluster_and_a_small_slower_one_is_in_a_jump() {
        use rand::SeedableRng;
        use rand_distr::{Distribution, LogNormal};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (fast, slow) = (
            LogNormal::new(23f64.ln(), 0.04).unwrap(),
            LogNormal::new(40f64.ln(), 0.04).unwrap(),
        );
        // 5 % slower: the p95 is between the two; the p50 is not.
        let two: Vec<f64> = (0..480)
            .map(|i| {
                if i % 20 == 0 {
                    slow.sample(&mut rng)
                } else {
                    fast.sample(&mut rng)
                }
            })
            .collect();
        let s = Sample::from_values(two);
        let (lo, hi) = quantile_in_jump(&s, 0.95).unwrap();
        assert!(lo < 26.0 && hi > 36.0, "{lo} {hi}");
        assert_eq!(quantile_in_jump(&s, 0.5), None);
        // Smooth tails, however long, are no jump.
        for sigma in [0.3, 0.7, 1.2] {
            let d = LogNormal::new(23f64.ln(), sigma).unwrap();
            let s = Sample::from_values((0..480).map(|_| d.sample(&mut rng)));
            assert_eq!(quantile_in_jump(&s, 0.95), None, "σ {sigma}");
        }
        assert_eq!(
            quantile_in_jump(&Sample::from_values([1.0; 40]), 0.95),
            None
        );
    }

    #[test]
    fn two_clusters_are_found_and_one_is_not() {
        let mut two: Vec<f64> = (0..30).map(|i| 21_000.0 + i as f64 * 40.0).collect();
        two.extend((0..20).map(|i| 43_000.0 + i as f64 * 60.0));
        let s = split(&two).unwrap();
        assert!((s.low_share - 0.6).abs() < 1e-9);
        assert!((s.low / 1000.0 - 21.6).abs() < 0.2 && (s.high / 1000.0 - 43.6).abs() < 0.2);
        let one: Vec<f64> = (0..50)
            .map(|i| 20_000.0 * (1.0 + 0.01 * i as f64))
            .collect();
        assert_eq!(split(&one), None);
        assert_eq!(split(&two[..5]), None, "too few to say");
    }
}
