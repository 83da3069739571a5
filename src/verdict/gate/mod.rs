//! The gate: one candidate run judged against a baseline's repetitions, metric by metric, in
//! three steps — [`estimate`] (values, effect, standard error), [`crate::verdict::decide`]
//! (regressed / improved / no change / inconclusive against the threshold and the
//! Bonferroni-corrected one-sided critical value), and the [`Row`] a report shows, with its reason.
//!
//! Thresholds come from [`crate::config::thresholds`]. A p99 is gated only when both arms have
//! at least [`P99_MIN_N`] successful requests, and any quantile only when both arms have enough
//! values to bound it distribution-free ([`min_n_for_quantile`]: p50 6, p95 72); below that it
//! is reported as not gated, saying why. Runs that alternate with the control's in ABBA
//! blocks ([`blocks`]), at least [`PAIRED_MIN_BLOCKS`] of them, are judged in pairs. Methods:
//! [`crate::verdict::stats`].

pub mod estimate;

use crate::config::thresholds::{GateConfig, Threshold};
use crate::model::comparison::{Row, Verdict};
use crate::model::result::RunResult;
use crate::verdict::decide::{decide, needed_n};
use crate::verdict::stats::exact::requests_to_bound;
use crate::verdict::stats::{t_quantile, z};
use chrono::{DateTime, Utc};
use estimate::{estimate, Arms, ErrorCounts, Estimate, Estimated, Noise};

/// Below this many successful requests per arm a p99 is reported but not gated.
pub const P99_MIN_N: usize = 1000;

/// The fewest values from which the p-quantile can be bounded without assuming a shape: the
/// smallest n with pⁿ ≤ α/2, so that a distribution-free (order-statistic) two-sided 1 − α
/// interval for it has an upper end below the largest value. With fewer, the quantile is
/// the top few samples and a bootstrap of them is too narrow. α = 0.05: p50 6, p90 36, p95 72.
pub fn min_n_for_quantile(p: f64, alpha: f64) -> usize {
    if !(0.0..1.0).contains(&p) {
        return usize::MAX;
    }
    let q = p.max(1.0 - p);
    ((alpha / 2.0).ln() / q.ln()).ceil().max(1.0) as usize
}

/// The fewest ABBA blocks at which the gate judges the pairs. A paired test has k − 1
/// degrees of freedom where two samples of runs have 2k − 2, so it wins only when the blocks
/// share enough (drift, a neighbour's load): at k = 6 the one-sided t quantiles at
/// α/m = 0.01 are 3.36 against 2.76, so pairing wins once a block's two runs correlate
/// beyond ≈ 0.33; at k = 3 (6.96 against 3.75) only beyond ≈ 0.71 (the correlation measured
/// on llama-server is in docs/gate-validation.md). Fixed in advance, not chosen by which
/// verdict is narrower, so α holds.
pub const PAIRED_MIN_BLOCKS: usize = 6;

/// When the two arms' runs alternate in time as `--interleave` runs them (ABBA… or ABAB…:
/// in start order, every two consecutive runs are one of each arm), the (baseline run,
/// candidate run) index of each block, in time order.
pub fn blocks(base: &[RunResult], cand: &[RunResult]) -> Option<Vec<(usize, usize)>> {
    if base.len() != cand.len() || base.is_empty() {
        return None;
    }
    let mut all: Vec<(DateTime<Utc>, bool, usize)> = base
        .iter()
        .enumerate()
        .map(|(i, r)| (r.started_at, false, i))
        .chain(
            cand.iter()
                .enumerate()
                .map(|(i, r)| (r.started_at, true, i)),
        )
        .collect();
    all.sort_by_key(|x| x.0);
    all.chunks(2)
        .map(|two| match (two[0], two[1]) {
            ((_, false, i), (_, true, j)) | ((_, true, j), (_, false, i)) => Some((i, j)),
            _ => None,
        })
        .collect()
}

/// Whether the arms' runs were interleaved: [`blocks`] of two or more — one run an arm
/// alternates with anything, so alone it says nothing of how the runs were made.
pub fn interleaved(base: &[RunResult], cand: &[RunResult]) -> bool {
    blocks(base, cand).is_some_and(|b| b.len() >= 2)
}

/// The blocks the gate judges in pairs: [`blocks`], when there are enough of them.
pub fn judged_blocks(base: &[RunResult], cand: &[RunResult]) -> Option<Vec<(usize, usize)>> {
    blocks(base, cand).filter(|b| b.len() >= PAIRED_MIN_BLOCKS)
}

/// The α a judgement spends on each side: on a false regression or improvement (split over
/// the gated metrics) and on a false "no change" (each metric's own). A fixed-size compare
/// spends `--alpha` on both at its one look; a sequential one a share at each look
/// ([`crate::verdict::sequential`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spend {
    pub fail: f64,
    pub bound: f64,
}

impl Spend {
    /// All of `alpha` on both sides: one look.
    pub fn all(alpha: f64) -> Spend {
        Spend {
            fail: alpha,
            bound: alpha,
        }
    }
}

/// Compares the candidate's runs with the baseline's: one row per threshold (goodput only
/// when the scenario has SLOs).
pub fn evaluate(base: &[RunResult], cand: &[RunResult], cfg: &GateConfig) -> Vec<Row> {
    evaluate_at(base, cand, cfg, Spend::all(cfg.alpha))
}

/// [`evaluate`] spending `spend` rather than all of `--alpha`.
pub fn evaluate_at(
    base: &[RunResult],
    cand: &[RunResult],
    cfg: &GateConfig,
    spend: Spend,
) -> Vec<Row> {
    // Interleaved runs (even too few blocks to pair) are resolved by more blocks, not by
    // re-recording the baseline.
    let interleaved = interleaved(base, cand);
    let pairs = judged_blocks(base, cand);
    let arms = Arms {
        base,
        cand,
        pairs: pairs.as_deref(),
    };
    let estimates: Vec<(&Threshold, Estimated)> = cfg
        .thresholds
        .iter()
        .map(|t| (t, estimate(arms, t.metric, cfg)))
        .filter(|(_, e)| *e != Estimated::Absent)
        .collect();
    let gated = estimates
        .iter()
        .filter(|(t, e)| not_gated(t, e).is_none())
        .count();
    // Bonferroni over the gated set, one-sided in each direction: a false FAIL has
    // probability ≤ α over all gated metrics, and so has a false "improved". The bound on
    // worse is each metric's own at α (an intersection–union test: `decide`).
    let levels = Levels {
        fail: 1.0 - spend.fail / gated.max(1) as f64,
        bound: 1.0 - spend.bound,
    };
    // A quality row's data is fixed by the arms' first passes: judging the same items again
    // at every look is one event, not one a look, so it is judged at the whole α (its
    // Bonferroni share α/m on the FAIL side) without spending the latency rows' looks.
    let whole = Levels {
        fail: 1.0 - cfg.alpha / gated.max(1) as f64,
        bound: 1.0 - cfg.alpha,
    };
    estimates
        .into_iter()
        .map(|(t, e)| {
            let at = if t.metric.is_quality() { whole } else { levels };
            row(t, e, at, interleaved)
        })
        .collect()
}

/// The one-sided confidence levels of the two tests: FAIL (and improved) at 1 − α/m, the bound
/// on worse at 1 − α.
#[derive(Debug, Clone, Copy)]
struct Levels {
    fail: f64,
    bound: f64,
}

/// Why a metric is reported but not judged, if it is not.
fn not_gated(t: &Threshold, e: &Estimated) -> Option<String> {
    match e {
        Estimated::NoData {
            n_baseline,
            n_candidate,
        } => Some(format!("not_gated: no data (n={n_baseline}/{n_candidate})")),
        Estimated::Absent => Some("not_gated: not applicable".into()),
        Estimated::Measured(_) if t.floor.is_none() => Some("not_gated: threshold is off".into()),
        Estimated::Measured(m) => m.not_gated.clone(),
    }
}

/// Decides one metric and writes its row; `interleaved`: the arms' runs alternate in blocks.
fn row(t: &Threshold, e: Estimated, levels: Levels, interleaved: bool) -> Row {
    let skip = not_gated(t, &e);
    let m = match e {
        Estimated::Measured(m) => *m,
        Estimated::NoData {
            n_baseline,
            n_candidate,
        } => Estimate::nothing(n_baseline, n_candidate),
        Estimated::Absent => Estimate::nothing(0, 0),
    };
    let metric = t.metric;
    let floor = t.floor.unwrap_or(0.0);
    let mut row = Row {
        metric,
        unit: metric.unit().into(),
        lower_is_better: metric.lower_is_better(),
        baseline: m.baseline,
        candidate: m.candidate,
        delta_pct: m.delta,
        interval_low: f64::NEG_INFINITY,
        interval_high: f64::INFINITY,
        effect: m.effect,
        se: m.se,
        critical: f64::INFINITY,
        bound: f64::INFINITY,
        floor,
        threshold: t.text.clone(),
        verdict: Verdict::NotGated,
        reason: String::new(),
        n_baseline: m.n_baseline,
        n_candidate: m.n_candidate,
        mann_whitney_p: m.mann_whitney_p,
        df: m.df,
        settled_at: None,
        needs_requests: None,
        baseline_values: Vec::new(),
        candidate_values: Vec::new(),
        waiver: None,
    };
    let verdict = match (&m.counts, &m.unjudgeable) {
        _ if m.paired.is_some() => m.paired.map_or(Verdict::Inconclusive, |p| {
            super::quality::decide(&mut row, &p, levels.fail, levels.bound)
        }),
        (Some(counts), _) => exact(&mut row, counts, levels),
        (None, Some(_)) => Verdict::Inconclusive,
        (None, None) => by_noise(&mut row, levels),
    };
    match skip {
        Some(why) => {
            row.reason = why;
            if t.floor.is_some() {
                row.needs_requests = m.min_requests;
            }
        }
        None => {
            row.verdict = verdict;
            row.reason = match (&m.counts, &m.unjudgeable) {
                _ if m.paired.is_some() => m.paired.map_or_else(String::new, |p| {
                    super::quality::reason(&row, &p, levels.fail, levels.bound)
                }),
                (Some(c), _) => exact_reason(&row, c, levels),
                (None, Some(why)) => {
                    format!("inconclusive {} {:+.1}% ({why})", row.metric, row.delta_pct)
                }
                (None, None) => reason(&row, verdict, m.noise, levels, interleaved),
            };
        }
    }
    row
}

/// The decision by the effect's noise (`verdict::decide`), with its interval on the delta's
/// own scale (for higher-is-better metrics "worse" is a drop).
fn by_noise(row: &mut Row, levels: Levels) -> Verdict {
    let q = |level| match row.df {
        Some(df) => t_quantile(level, df),
        None => z(level),
    };
    let d = decide(
        row.effect,
        row.se,
        row.floor,
        q(levels.fail),
        q(levels.bound),
    );
    row.critical = d.critical;
    row.bound = d.bound;
    let (lo, hi) = (row.effect - d.critical, row.effect + d.critical);
    (row.interval_low, row.interval_high) = if row.lower_is_better {
        ((lo.exp() - 1.0) * 100.0, (hi.exp() - 1.0) * 100.0)
    } else {
        (((-hi).exp() - 1.0) * 100.0, ((-lo).exp() - 1.0) * 100.0)
    };
    d.verdict
}

/// The exact decision on error counts: a regression needs the increase beyond the threshold
/// and Fisher's one-sided p below the Bonferroni tail; "no change" needs the Clopper–Pearson
/// upper bound on the increase, at 1 − α, inside the threshold (as `decide`'s bound on worse).
fn exact(row: &mut Row, c: &ErrorCounts, levels: Levels) -> Verdict {
    let tail = 1.0 - levels.fail;
    let (p_worse, p_better) = c.p_worse_better();
    let (lo, hi) = c.interval(1.0 - 2.0 * tail);
    (row.interval_low, row.interval_high) = (lo * 100.0, hi * 100.0);
    row.critical = (hi - lo) / 2.0;
    // The increase's upper end is the candidate's upper bound less the baseline's lower one:
    // each at α/2, so that it is below the true increase with probability ≤ α.
    row.bound = c.interval(levels.bound).1;
    exact_verdict(row, p_worse, p_better, tail)
}

/// The verdict of an exactly tested row (error counts, paired quality items), its effect,
/// floor and bound set: a regression (an improvement) needs the effect beyond the floor and
/// its exact one-sided p below `tail`; no change needs the bound inside the floor.
pub(crate) fn exact_verdict(row: &Row, p_worse: f64, p_better: f64, tail: f64) -> Verdict {
    let f = row.floor;
    if row.effect > f && p_worse < tail {
        Verdict::Regressed
    } else if -row.effect > f && p_better < tail {
        Verdict::Improved
    } else if row.bound <= f {
        Verdict::NoChange
    } else {
        Verdict::Inconclusive
    }
}

fn exact_reason(r: &Row, c: &ErrorCounts, levels: Levels) -> String {
    let ((xb, nb), (xc, nc)) = (c.baseline, c.candidate);
    let counts = format!("{xc}/{nc} vs {xb}/{nb} errors");
    let (p_worse, p_better) = c.p_worse_better();
    let tail = 1.0 - levels.fail;
    let floor_pp = r.floor * 100.0;
    // 1 − α in percent as written: 95, 99, 99.9 (not rounded to 100).
    let level = (levels.bound * 1e5).round() / 1e3;
    let bound = format!(
        "the exact {level} % upper bound on the increase, {:+.2}pp,",
        r.bound * 100.0
    );
    match r.verdict {
        Verdict::Regressed => format!(
            "REGRESSED error_rate {:+.2}pp ({counts}; beyond +{floor_pp}pp and Fisher's exact p {p_worse:.2e} < {tail:.4})",
            r.delta_pct
        ),
        Verdict::Improved => format!(
            "improved error_rate {:+.2}pp ({counts}; Fisher's exact p {p_better:.2e} < {tail:.4})",
            r.delta_pct
        ),
        Verdict::NoChange => format!(
            "no_change error_rate {:+.2}pp ({counts}; {bound} stays below +{floor_pp}pp)",
            r.delta_pct
        ),
        _ => format!(
            "inconclusive error_rate {:+.2}pp ({counts}: {bound} reaches past +{floor_pp}pp; with no errors, bounding it needs ≈ {} requests per arm)",
            r.delta_pct,
            crate::model::readable::count(requests_to_bound(r.floor, levels.bound))
        ),
    }
}

/// Runs per arm (both arms alike) at which `decided(se, df)` first holds, given the run-to-run
/// variance and one run's within-run variance — or, in pairs, blocks, given one block's
/// difference variance; `None` past 50.
fn runs_needed(noise: Noise, decided: impl Fn(f64, f64) -> bool) -> Option<usize> {
    (2..=50).find(|&n| {
        let (var, df) = match noise.blocks {
            Some(v) => (v.max(2.0 * noise.within), n - 1),
            None => ((noise.between + noise.within) * 2.0, 2 * n - 2),
        };
        decided((var / n as f64).sqrt(), df as f64)
    })
}

/// What decides the difference seen first, if it stays: the bound on worse getting inside the
/// threshold when the difference lies inside it, the FAIL test when it lies beyond.
#[derive(Debug, Clone, Copy)]
enum Sooner {
    Inside,
    Regression,
}

impl Sooner {
    fn of(r: &Row) -> Sooner {
        if r.effect <= r.floor {
            Sooner::Inside
        } else {
            Sooner::Regression
        }
    }

    /// Whether an SE of `se` with `df` degrees of freedom decides the difference seen.
    fn decided(self, r: &Row, levels: Levels, se: f64, df: f64) -> bool {
        match self {
            Sooner::Inside => r.effect + t_quantile(levels.bound, df) * se <= r.floor,
            Sooner::Regression => r.effect > t_quantile(levels.fail, df) * se,
        }
    }

    /// "; if it stays at +2.2%, ≈ 15 blocks would bound it inside 10%" when `n` (runs, blocks
    /// or requests that decide it) is fewer than `whatever`, the count that decides any
    /// difference (`usize::MAX` when none does); empty otherwise.
    fn text(self, r: &Row, n: Option<usize>, whatever: usize, unit: &str) -> String {
        let what = match self {
            Sooner::Inside => format!("bound it inside {}", r.threshold),
            Sooner::Regression => "show it as a regression".to_string(),
        };
        match n {
            Some(n) if n < whatever => format!(
                "; if it stays at {:+.1}%, ≈ {n} {unit} would {what}",
                r.delta_pct
            ),
            _ => String::new(),
        }
    }
}

/// What would resolve an inconclusive verdict: more runs (in an interleaved compare, more
/// blocks) when the runs' spread is what is too large, more requests when the sampling within
/// runs is — the count that decides whatever the difference, and, when fewer would do, the
/// count that decides the difference seen if it stays.
fn resolve(r: &Row, noise: Option<Noise>, levels: Levels, interleaved: bool) -> String {
    let runs_dominate = noise.is_some_and(|n| match n.blocks {
        Some(v) => v > 2.0 * n.within,
        None => n.between > n.within,
    });
    match noise {
        Some(n) if runs_dominate => {
            // In pairs the blocks' differences are what vary; otherwise the runs themselves.
            let (spread, few) = match n.blocks {
                Some(v) => (
                    format!(
                        "the candidate − control difference varies by ≈ {:.0} % from block to block",
                        v.sqrt() * 100.0
                    ),
                    "blocks",
                ),
                None => (
                    format!(
                        "runs differ by ≈ {:.0} % from one another",
                        n.between.sqrt() * 100.0
                    ),
                    "runs",
                ),
            };
            let t = &r.threshold;
            let whatever = runs_needed(n, |se, df| t_quantile(levels.fail, df) * se <= r.floor);
            let unit = if interleaved { "blocks" } else { "runs a side" };
            let sooner = Sooner::of(r);
            let fewer = runs_needed(n, |se, df| sooner.decided(r, levels, se, df));
            let stays = sooner.text(r, fewer, whatever.unwrap_or(usize::MAX), unit);
            match (whatever, interleaved) {
                (Some(k), true) => format!(
                    "{spread}, so the {few}, not the requests, are too few: ≈ {k} blocks (--interleave --repeat {k}) would resolve {t} whatever the difference{stays}"
                ),
                (Some(k), false) => format!(
                    "{spread}, so the {few}, not the requests, are too few: ≈ {k} runs a side (--repeat {k} for baseline and compare) would resolve {t} whatever the difference{stays}"
                ),
                (None, true) => format!(
                    "{spread}, too much to resolve {t} whatever the difference with any practical number of blocks: make the runs steadier (longer runs, warmup, a quieter machine){stays}"
                ),
                (None, false) => format!(
                    "{spread}, too much to resolve {t} whatever the difference with any practical number of runs: make the runs steadier (longer runs, warmup, a quieter machine) or use --interleave{stays}"
                ),
            }
        }
        _ if r.metric.latency().is_some() => {
            let n = r.n_baseline.min(r.n_candidate);
            match needed_n(n, r.critical, r.floor) {
                Some(k) => {
                    // The SE shrinks as 1/√n: the bound's margin and the critical value with it.
                    let (d, f) = (r.effect, r.floor);
                    let sooner = Sooner::of(r);
                    let fewer = match sooner {
                        Sooner::Inside => needed_n(n, r.bound - d, f - d),
                        Sooner::Regression => needed_n(n, r.critical, d),
                    };
                    let stays =
                        sooner.text(r, fewer.map(|k| k as usize), k as usize, "requests per arm");
                    format!(
                        "the requests are too few: ≈ {k} successful requests per arm would resolve {} whatever the difference{stays}",
                        r.threshold
                    )
                }
                None => "needs more requests".into(),
            }
        }
        _ => "needs more runs a side".into(),
    }
}

/// Why a quantile in a jump of an arm's values (see [`crate::verdict::mode`]) is slow to settle.
fn jump(r: &Row, (arm, lo, hi): (&str, f64, f64)) -> String {
    let crate::model::metric::Metric::Latency(l, q) = r.metric else {
        return String::new();
    };
    let p = q.p() * 100.0;
    format!(
        "; the {} lies where the {arm}'s values jump (its p{:.0}–p{:.0} run from {:.1} to {:.1} ms): it moves with how many requests land above the jump more than with their speed, so more requests settle it slowly — an SLO between the two ([slo] {}_ms = {:.0}, say, judged as goodput) judges that share directly",
        r.metric,
        p - 2.0,
        p + 2.0,
        lo / 1000.0,
        hi / 1000.0,
        l.name(),
        // The geometric middle of the jump: as far, in ratio, from either cluster's edge.
        (lo * hi).sqrt() / 1000.0
    )
}

fn reason(r: &Row, v: Verdict, noise: Option<Noise>, levels: Levels, interleaved: bool) -> String {
    let delta = format!("{:+.1}%", r.delta_pct);
    let n = match r.df {
        Some(df) => format!("n={}/{}, t df {df:.1}", r.n_baseline, r.n_candidate),
        None => format!("n={}/{}", r.n_baseline, r.n_candidate),
    };
    match v {
        Verdict::Regressed => format!(
            "REGRESSED {} {delta} (effect {:.3} > max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::Improved => format!(
            "improved {} {delta} (effect {:.3} < −max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::NoChange if r.critical <= r.floor => format!(
            "no_change {} {delta} (|effect| {:.3} ≤ max(critical {:.3}, floor {:.3}) and the bound on worse {:.3} ≤ floor; {n})",
            r.metric,
            r.effect.abs(),
            r.critical,
            r.floor,
            r.bound
        ),
        Verdict::NoChange => format!(
            "no_change {} {delta} (no regression of {}: the bound on worse, effect + q(1 − α)·SE = {:.3}, ≤ floor {:.3}; critical {:.3} > floor, so a change of that size the other way could not be seen; {n})",
            r.metric,
            r.threshold,
            r.bound,
            r.floor,
            r.critical
        ),
        Verdict::Inconclusive => format!(
            "inconclusive {} {delta} (critical {:.3} > floor {:.3} and the bound on worse {:.3} > floor: a regression of the threshold's size can be neither seen nor excluded; {}{}; {n})",
            r.metric,
            r.critical,
            r.floor,
            r.bound,
            resolve(r, noise, levels, interleaved),
            noise.and_then(|n| n.jump).map_or(String::new(), |j| jump(r, j))
        ),
        // Waivers are applied to the final comparison, never while judging.
        Verdict::NotGated | Verdict::Accepted => r.reason.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
#[cfg(test)]
mod tests_blocks;
