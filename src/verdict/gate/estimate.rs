//! Step one of the gate: for each metric, the baseline and candidate values, the effect
//! (signed so that positive is worse), its standard error and the degrees of freedom behind
//! it — from both arms' runs, as [`crate::verdict::stats`] describes: two samples of runs
//! drawn again, or, when the runs were interleaved in enough ABBA blocks, the blocks drawn
//! again in pairs. One function per kind of metric.

use super::{min_n_for_quantile, P99_MIN_N};
use crate::config::thresholds::GateConfig;
use crate::metrics::quantile::Sample;
use crate::metrics::summary::sample_in;
use crate::model::metric::{Latency, Metric, Quantile, Turns};
use crate::model::result::RunResult;
use crate::model::values::Values;
use crate::verdict::figure::of_run;
use crate::verdict::mode::quantile_in_jump;
use crate::verdict::quality::PairedCounts;
use crate::verdict::stats::bootstrap::se_two;
use crate::verdict::stats::exact::{clopper_pearson, fisher_greater};
use crate::verdict::stats::runs::{arm_var, paired_var, Runs};
use crate::verdict::stats::{mann_whitney_p, sd, two_sample};

/// What was measured for one metric, before any decision. Values are in the metric's unit.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate / baseline − 1) × 100, or the difference in pp for error rate.
    pub delta: f64,
    /// ln(candidate / baseline), or the difference of rates; positive is worse.
    pub effect: f64,
    pub se: f64,
    /// Degrees of freedom of the SE when it carries run-to-run noise estimated from runs.
    pub df: Option<f64>,
    pub n_baseline: usize,
    pub n_candidate: usize,
    /// Runs in each arm.
    pub runs: (usize, usize),
    pub mann_whitney_p: Option<f64>,
    /// Why the metric is shown but not judged, if so.
    pub not_gated: Option<String>,
    /// When it is not judged only because an arm has too few successful requests: the
    /// count each arm needs. More runs of the same scenario gate it.
    pub min_requests: Option<usize>,
    /// Set when the noise model cannot bound the effect at all (one run a side).
    pub unjudgeable: Option<String>,
    /// Error counts, judged exactly rather than by `se`.
    pub counts: Option<ErrorCounts>,
    /// A quality row's paired items, judged exactly ([`crate::verdict::quality`]).
    pub paired: Option<PairedCounts>,
    /// The parts of the noise, for saying what would resolve an inconclusive verdict.
    pub noise: Option<Noise>,
}

/// The noise of a run-level estimate, on the effect's scale, per run: the variance of the
/// effect is about (between + within)·(1/R + 1/K) for R and K runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Noise {
    /// What the runs' states add (for a rate: the runs' whole spread s²).
    pub between: f64,
    /// The sampling of the requests (0 for a rate: it is in `between`).
    pub within: f64,
    /// Judged in pairs: the variance of one block's difference (candidate − control run),
    /// which holds both runs' states and sampling noise but not what the block shared.
    pub blocks: Option<f64>,
    /// A latency quantile that lies in a jump of an arm's pooled values
    /// ([`crate::verdict::mode::quantile_in_jump`]): the arm and its values at p ± 2 % (µs).
    pub jump: Option<(&'static str, f64, f64)>,
}

/// Errors and measured requests in each arm.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorCounts {
    pub baseline: (u64, u64),
    pub candidate: (u64, u64),
}

impl ErrorCounts {
    /// Fisher's one-sided p of the candidate being worse, and of it being better.
    pub fn p_worse_better(&self) -> (f64, f64) {
        let ((xb, nb), (xc, nc)) = (self.baseline, self.candidate);
        (
            fisher_greater(xc, nc, xb, nb),
            fisher_greater(xb, nb, xc, nc),
        )
    }

    /// Clopper–Pearson bounds of (candidate − baseline) rate, each side at `level`.
    pub fn interval(&self, level: f64) -> (f64, f64) {
        let ((xb, nb), (xc, nc)) = (self.baseline, self.candidate);
        let (bl, bh) = clopper_pearson(xb, nb, level);
        let (cl, ch) = clopper_pearson(xc, nc, level);
        (cl - bh, ch - bl)
    }
}

impl Estimate {
    /// Nothing measured: no values, infinitely noisy.
    pub fn nothing(n_baseline: usize, n_candidate: usize) -> Estimate {
        Estimate {
            baseline: 0.0,
            candidate: 0.0,
            delta: 0.0,
            effect: 0.0,
            se: f64::INFINITY,
            df: None,
            n_baseline,
            n_candidate,
            runs: (0, 0),
            mann_whitney_p: None,
            not_gated: None,
            min_requests: None,
            unjudgeable: None,
            counts: None,
            paired: None,
            noise: None,
        }
    }
}

/// The outcome of estimating one metric.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimated {
    Measured(Box<Estimate>),
    /// Too few values on a side to estimate anything.
    NoData {
        n_baseline: usize,
        n_candidate: usize,
    },
    /// Not applicable: goodput without SLOs.
    Absent,
}

/// The two arms' runs, and the blocks they were run in when they were interleaved.
#[derive(Clone, Copy)]
pub struct Arms<'a> {
    pub base: &'a [RunResult],
    pub cand: &'a [RunResult],
    /// (baseline run, candidate run) of each block, when the gate judges the pairs.
    pub pairs: Option<&'a [(usize, usize)]>,
}

/// Estimates `metric` for the candidate's runs against the baseline's.
pub fn estimate(arms: Arms, metric: Metric, cfg: &GateConfig) -> Estimated {
    match metric {
        Metric::Latency(l, q) => latency(arms, l, q, None, cfg),
        Metric::TurnLatency(l, q, t) => latency(arms, l, q, Some(t), cfg),
        Metric::OutputThroughput
        | Metric::RequestThroughput
        | Metric::Goodput
        | Metric::JoulesPerToken
        | Metric::GpuPower => rate(arms, metric),
        Metric::ErrorRate => error_rate(arms.base, arms.cand),
        Metric::Accuracy | Metric::Agreement => quality(arms, metric),
    }
}

/// A quality row: each arm's share of ones among the paired items, the drop in points.
fn quality(arms: Arms, metric: Metric) -> Estimated {
    let runs = (arms.base.len(), arms.cand.len());
    match crate::verdict::quality::paired(metric, arms.base, arms.cand) {
        None => Estimated::Absent,
        Some(Err(why)) => Estimated::Measured(Box::new(Estimate {
            unjudgeable: Some(why),
            runs,
            ..Estimate::nothing(0, 0)
        })),
        Some(Ok(c)) => {
            let share = |x: u64| x as f64 / c.n as f64 * 100.0;
            let (b, k) = (share(c.base_ones), share(c.cand_ones));
            Estimated::Measured(Box::new(Estimate {
                baseline: b,
                candidate: k,
                delta: k - b,
                effect: c.effect(),
                n_baseline: c.n as usize,
                n_candidate: c.n as usize,
                runs,
                paired: Some(c),
                ..Estimate::nothing(0, 0)
            }))
        }
    }
}

/// The paired estimate of a rate from each block's difference `d` (candidate − control, on
/// the effect's scale, positive = worse): SE = s_d/√k with k − 1 degrees of freedom, and the
/// variance of one block's difference. `None` below 2 blocks.
fn paired_se(d: &[f64]) -> Option<(f64, f64, f64)> {
    let s = sd(d)?;
    let k = d.len() as f64;
    Some((s / k.sqrt(), k - 1.0, s * s))
}

fn hash_seed(key: &str, seed: u64) -> u64 {
    key.bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Each arm's one-run share of the variance of its pooled ln q_p (its run bootstrap × its
/// runs, i.e. s² of a mean of runs); `None` for an arm of fewer than two runs.
fn arm_spreads(arms: [&Runs; 2], p: f64, cfg: &GateConfig, seed: u64) -> [Option<f64>; 2] {
    let spread = |i: usize| {
        let a = arms[i];
        arm_var(a, p, cfg.replicates, seed.wrapping_add(i as u64)).map(|v| v * a.len() as f64)
    };
    [spread(0), spread(1)]
}

/// A latency quantile: the pooled quantile of each arm; its noise from drawing the arms'
/// runs again ([`crate::verdict::stats::runs`]) — in pairs, whole blocks — never below the
/// sampling noise of the pooled requests.
fn latency(
    arms: Arms,
    l: Latency,
    q: Quantile,
    turns: Option<Turns>,
    cfg: &GateConfig,
) -> Estimated {
    let (base, cand) = (arms.base, arms.cand);
    let p = q.p();
    let metric = match turns {
        Some(t) => Metric::TurnLatency(l, q, t),
        None => Metric::Latency(l, q),
    };
    let seed = hash_seed(&metric.key(), cfg.seed);
    let samples = |runs: &[RunResult]| -> Vec<Sample> {
        runs.iter().map(|r| sample_in(r, l, turns)).collect()
    };
    let (sb, sc) = (samples(base), samples(cand));
    // The runs that measured anything: a run without a value is no draw of this metric.
    let measured =
        |s: &[Sample]| Runs::new(&s.iter().filter(|s| !s.is_empty()).collect::<Vec<_>>());
    let (rb, rc) = (measured(&sb), measured(&sc));
    let pool = |s: &[Sample]| Sample::merged(&s.iter().collect::<Vec<_>>());
    let (pb, pc) = (pool(&sb), pool(&sc));
    let (nb, nc) = (pb.len(), pc.len());
    if nb < 2 || nc < 2 {
        return Estimated::NoData {
            n_baseline: nb,
            n_candidate: nc,
        };
    }
    let (qa, qb) = (pb.quantile(p).unwrap_or(0.0), pc.quantile(p).unwrap_or(0.0));
    let effect = if qa > 0.0 && qb > 0.0 {
        (qb / qa).ln()
    } else {
        0.0
    };
    // Requests drawn one by one from the pooled arms: the least noise the effect can carry.
    let sampling = se_two(&pb, &pc, p, cfg.replicates, seed ^ 0x5a).powi(2);
    let runs_factor = 1.0 / rb.len().max(1) as f64 + 1.0 / rc.len().max(1) as f64;
    // Judged in pairs when every block's two runs have enough values to bound the quantile
    // distribution-free; a p95 of 8 or 40 values is a run's top one or two, and pairing such
    // quantiles makes the interval too narrow (docs/gate-validation.md), so they are judged
    // as two samples of runs.
    let min_n = min_n_for_quantile(p, cfg.alpha);
    let paired = arms.pairs.and_then(|pairs| {
        let enough = pairs
            .iter()
            .all(|&(i, j)| sb[i].len().min(sc[j].len()) >= min_n);
        if !enough {
            return None;
        }
        // Every run is in a block and has values, so `rb` and `rc` hold them all, in order.
        let v = paired_var(&rb, &rc, pairs, p, cfg.replicates, seed)?;
        Some((v, pairs.len()))
    });
    // The two-sample noise (`two_sample`: pooled, or each arm's own where that is larger) is
    // only needed when the blocks do not judge.
    let spread = match paired {
        Some(_) => None,
        None => two_sample(arm_spreads([&rb, &rc], p, cfg, seed), [rb.len(), rc.len()]),
    };
    let (var, df) = match (paired, spread) {
        (Some((v, k)), _) => (v, Some(k as f64 - 1.0)),
        (None, Some((v, df))) => (v, Some(df)),
        (None, None) => (sampling, None),
    };
    let se = var.max(sampling).sqrt();
    let (not_gated, min_requests) = too_few(metric, p, min_n, (nb, nc));
    // The noise per run (per block in pairs), for saying what would resolve an inconclusive:
    // `within` is the pooled requests' sampling share, `between` what the runs add to it.
    let within = sampling / runs_factor;
    let jump = [("baseline", &pb), ("candidate", &pc)]
        .into_iter()
        .find_map(|(arm, s)| quantile_in_jump(s, p).map(|(lo, hi)| (arm, lo, hi)));
    Estimated::Measured(Box::new(Estimate {
        baseline: qa / 1000.0,
        candidate: qb / 1000.0,
        delta: percent_change(qa, qb),
        effect,
        se,
        // Student's t with the runs' own degrees of freedom, also when the runs agree: three
        // runs that happen to agree are weak evidence that runs never differ (Hartung–Knapp;
        // the SE stays ≥ the sampling part). In pairs: k − 1 for k blocks.
        df,
        n_baseline: nb,
        n_candidate: nc,
        runs: (base.len(), cand.len()),
        mann_whitney_p: mann_whitney_p(&pb, &pc),
        min_requests,
        not_gated,
        unjudgeable: (paired.is_none() && spread.is_none()).then(|| {
            "one run a side shows no run-to-run variation, which within-run noise cannot stand in for; repeat both arms (bench baseline --repeat 3, bench compare --repeat 3)".to_string()
        }),
        counts: None,
        paired: None,
        noise: Some(Noise {
            between: spread.map_or(0.0, |(v, _)| (v / runs_factor - within).max(0.0)),
            within,
            blocks: paired.map(|(v, k)| v * k as f64),
            jump,
        }),
    }))
}

/// Why a quantile is not gated for too few successful requests per arm (`n`), and how many
/// each arm needs; `(None, None)` when both have enough.
fn too_few(
    metric: Metric,
    p: f64,
    min_n: usize,
    (nb, nc): (usize, usize),
) -> (Option<String>, Option<usize>) {
    let need = if p >= 0.99 {
        min_n.max(P99_MIN_N)
    } else {
        min_n
    };
    if nb.min(nc) >= need {
        return (None, None);
    }
    let why = if p >= 0.99 {
        format!("not_gated: a p99 needs ≥ {P99_MIN_N} successful requests per arm (have {nb}/{nc})")
    } else {
        format!(
            "not_gated: a {metric} needs ≥ {min_n} successful requests per arm to be bounded without assuming a distribution (have {nb}/{nc})"
        )
    };
    (Some(why), Some(need))
}

fn percent_change(baseline: f64, candidate: f64) -> f64 {
    if baseline != 0.0 {
        (candidate / baseline - 1.0) * 100.0
    } else {
        0.0
    }
}

/// A rate (one figure per run): the geometric means of both arms' runs, their pooled
/// run-to-run spread as the noise — or, in pairs, the spread of the blocks' differences.
fn rate(arms: Arms, metric: Metric) -> Estimated {
    let (base, cand) = (arms.base, arms.cand);
    // Positive effect = worse: a fall in a throughput, a rise in energy or power.
    let worse = if metric.lower_is_better() { -1.0 } else { 1.0 };
    let log_of = |run: &RunResult| of_run(run, metric).filter(|v| *v > 0.0).map(f64::ln);
    let logs = |runs: &[RunResult]| {
        Values::logs_of_positive(runs.iter().filter_map(|r| of_run(r, metric)))
    };
    let (lb, lc) = (logs(base), logs(cand));
    if lb.is_empty() || lc.is_empty() {
        // Goodput exists only with SLOs; say nothing rather than "no data".
        return if metric == Metric::Goodput {
            Estimated::Absent
        } else {
            Estimated::NoData {
                n_baseline: lb.len(),
                n_candidate: lc.len(),
            }
        };
    }
    let mean = |v: &Values| v.mean().unwrap_or(0.0);
    let (qa, qc) = (mean(&lb).exp(), mean(&lc).exp());
    let (r, k) = (lb.len() as f64, lc.len() as f64);
    let two = two_sample([lb.var(), lc.var()], [lb.len(), lc.len()]);
    // The spread of runs is the noise of a one-figure-per-run metric: Student's t with its
    // degrees of freedom (`two_sample`). With one run a side, counting noise stands in: a rate
    // from n completions carries about 1/√n relative noise.
    let paired = arms.pairs.and_then(|pairs| {
        let d: Option<Vec<f64>> = pairs
            .iter()
            .map(|&(i, j)| Some(worse * (log_of(&base[i])? - log_of(&cand[j])?)))
            .collect();
        paired_se(&d?)
    });
    let (se, df) = if let Some((se, df, _)) = paired {
        (se, Some(df))
    } else if let Some((v, df)) = two {
        (v.sqrt(), Some(df))
    } else {
        let ok = |runs: &[RunResult]| {
            runs.iter().map(|r| r.summary.counts.ok).sum::<u64>().max(1) as f64
        };
        ((1.0 / ok(base) + 1.0 / ok(cand)).sqrt(), None)
    };
    Estimated::Measured(Box::new(Estimate {
        baseline: qa,
        candidate: qc,
        delta: percent_change(qa, qc),
        effect: -worse * (qc / qa).ln(),
        se,
        df,
        n_baseline: lb.len(),
        n_candidate: lc.len(),
        runs: (base.len(), cand.len()),
        mann_whitney_p: None,
        not_gated: None,
        min_requests: None,
        unjudgeable: None,
        counts: None,
        paired: None,
        noise: (df.is_some()).then(|| Noise {
            between: two.map_or(0.0, |(v, _)| v / (1.0 / r + 1.0 / k)),
            within: 0.0,
            blocks: paired.map(|p| p.2),
            jump: None,
        }),
    }))
}

/// (errors, measured requests sent) over runs.
fn errors(runs: &[RunResult]) -> (u64, u64) {
    runs.iter().fold((0, 0), |(x, n), r| {
        let c = &r.summary.counts;
        (x + c.errors.values().sum::<u64>(), n + c.sent)
    })
}

/// Error rate: counts pooled over each arm's runs, judged exactly (see `row`).
fn error_rate(base: &[RunResult], cand: &[RunResult]) -> Estimated {
    let ((xb, nb), (xc, nc)) = (errors(base), errors(cand));
    if nb == 0 || nc == 0 {
        return Estimated::NoData {
            n_baseline: nb as usize,
            n_candidate: nc as usize,
        };
    }
    let (pb, pc) = (xb as f64 / nb as f64, xc as f64 / nc as f64);
    Estimated::Measured(Box::new(Estimate {
        baseline: pb * 100.0,
        candidate: pc * 100.0,
        delta: (pc - pb) * 100.0,
        effect: pc - pb,
        se: f64::NAN,
        df: None,
        n_baseline: nb as usize,
        n_candidate: nc as usize,
        runs: (base.len(), cand.len()),
        mann_whitney_p: None,
        not_gated: None,
        min_requests: None,
        unjudgeable: None,
        counts: Some(ErrorCounts {
            baseline: (xb, nb),
            candidate: (xc, nc),
        }),
        paired: None,
        noise: None,
    }))
}
