//! `bench stack`'s judgement of how changes combine. **Factorial:** per metric, the
//! interaction I = ln r_combined − Σ ln r_single of each configuration's ratio to the base
//! (pooled quantiles of its runs, or the geometric mean of their throughput), its noise with
//! the run as the unit (each configuration's runs drawn again, one run's variance pooled over
//! the configurations, never below the requests' sampling noise), and a verdict — conflict,
//! synergy, neutral or inconclusive against the floor ln 1.05 — with the runs per
//! configuration that would settle an inconclusive row; quality rows in `quality.rs`.
//! **Ladder:** each change judged against the step before by the gate.
//!
//! The method, its formulas and the alternative rejected: `docs/optimization.md` ("How
//! `bench stack` measures it"); the rounds it was checked on: `docs/gate-validation.md`.

use crate::metrics::quantile::Sample;
use crate::metrics::summary::sample;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::quality::QualityRun;
use crate::model::result::RunResult;
use crate::model::server::ServerMetrics;
use crate::model::stack::{Interaction, InteractionRow, Resolve};
use crate::model::values::Values;
use crate::verdict::stats::bootstrap::se_one;
use crate::verdict::stats::runs::{arm_var, Runs};
use crate::verdict::stats::t_quantile;
use statrs::distribution::{ChiSquared, ContinuousCDF};

/// The metrics a stack reports.
pub const METRICS: [Metric; 4] = [
    Metric::Latency(Latency::Tpot, Quantile::P50),
    Metric::Latency(Latency::Ttft, Quantile::P50),
    Metric::Latency(Latency::E2e, Quantile::P50),
    Metric::OutputThroughput,
];

/// Draws of a configuration's runs for its run-level variance.
const REPLICATES: usize = 1000;

/// What one configuration measured, run by run.
#[derive(Debug, Clone)]
pub struct Arm {
    /// Indices of the changes applied (empty = base).
    pub changes: Vec<usize>,
    /// Each run's TTFT, TPOT and E2E values (µs).
    pub ttft: Vec<Sample>,
    pub tpot: Vec<Sample>,
    pub e2e: Vec<Sample>,
    /// Each run's output throughput (tokens/s).
    pub output_tps: Vec<f64>,
    /// The server's figures of the runs that scraped them.
    pub server: Vec<ServerMetrics>,
    /// The quality passes of the runs that made one, in run order.
    pub quality: Vec<QualityRun>,
}

/// One configuration's value of a metric and its noise.
struct Cell {
    /// ln of the value.
    value: f64,
    runs: usize,
    /// One run's share of the variance of `value` (s² of a run), when there are ≥ 2 runs.
    per_run: Option<f64>,
    /// Variance of `value` from the sampling of the requests alone.
    sampling: f64,
}

impl Arm {
    pub fn from_runs(changes: Vec<usize>, runs: &[RunResult]) -> Arm {
        let each = |l: Latency| runs.iter().map(|r| sample(r, l)).collect();
        Arm {
            changes,
            ttft: each(Latency::Ttft),
            tpot: each(Latency::Tpot),
            e2e: each(Latency::E2e),
            output_tps: runs
                .iter()
                .map(|r| r.summary.throughput.output_tps)
                .collect(),
            server: runs
                .iter()
                .filter_map(|r| r.server_metrics.clone())
                .collect(),
            quality: runs.iter().filter_map(|r| r.quality.clone()).collect(),
        }
    }

    /// Runs measured.
    pub fn runs(&self) -> usize {
        self.output_tps.len()
    }

    fn cell(&self, metric: Metric, seed: u64) -> Option<Cell> {
        let (samples, p) = match metric {
            Metric::Latency(Latency::Tpot, q) => (&self.tpot, q.p()),
            Metric::Latency(Latency::Ttft, q) => (&self.ttft, q.p()),
            Metric::Latency(Latency::E2e, q) => (&self.e2e, q.p()),
            Metric::OutputThroughput => {
                let logs = Values::logs_of_positive(self.output_tps.iter().copied());
                return Some(Cell {
                    value: logs.mean()?,
                    runs: logs.len(),
                    per_run: logs.var(),
                    sampling: 0.0,
                });
            }
            _ => return None,
        };
        let measured: Vec<&Sample> = samples.iter().filter(|s| !s.is_empty()).collect();
        let pooled = Sample::merged(&measured);
        let value = pooled.quantile(p).filter(|q| *q > 0.0)?.ln();
        let runs = Runs::new(&measured);
        Some(Cell {
            value,
            runs: runs.len(),
            per_run: arm_var(&runs, p, REPLICATES, seed).map(|v| v * runs.len() as f64),
            sampling: se_one(&pooled, p, 400, seed).powi(2),
        })
    }

    /// The mean of a server figure over the runs that have it.
    fn server_mean(&self, f: impl Fn(&ServerMetrics) -> Option<f64>) -> Option<f64> {
        self.server.iter().filter_map(f).collect::<Values>().mean()
    }
}

const FLOOR: f64 = 0.04879; // ln 1.05

fn find<'a>(arms: &'a [Arm], set: &[usize]) -> Option<&'a Arm> {
    arms.iter().find(|a| {
        let mut x = a.changes.clone();
        x.sort();
        let mut y = set.to_vec();
        y.sort();
        x == y
    })
}

/// The interaction of a set from its configurations' cells (combination first, then the
/// singles, then the base) and their weights.
struct Combined {
    /// I = Σ w_c ln value_c.
    value: f64,
    /// One run's variance s², pooled over the configurations; `None` when none has two runs.
    per_run: Option<f64>,
    /// Σ w_c²/R_c: Var I from the runs' spread is s² times this.
    shares: f64,
    /// Var I from the requests' sampling alone.
    sampling: f64,
    /// Degrees of freedom of s², Σ(R_c − 1).
    df: Option<f64>,
}

impl Combined {
    fn of(cells: &[(&Cell, f64)]) -> Combined {
        let (ss, df) = cells
            .iter()
            .filter_map(|(c, _)| c.per_run.map(|v| (v * (c.runs - 1) as f64, c.runs - 1)))
            .fold((0.0, 0usize), |(s, d), (v, k)| (s + v, d + k));
        Combined {
            value: cells.iter().map(|(c, w)| w * c.value).sum(),
            per_run: (df > 0).then(|| ss / df as f64),
            shares: cells.iter().map(|(c, w)| w * w / c.runs as f64).sum(),
            sampling: cells.iter().map(|(c, w)| w * w * c.sampling).sum(),
            df: (df > 0).then_some(df as f64),
        }
    }

    /// SE of I: the runs' part, never below the sampling; infinite without runs to judge by.
    fn se(&self) -> f64 {
        self.per_run.map_or(f64::INFINITY, |s2| {
            (s2 * self.shares).max(self.sampling).sqrt()
        })
    }
}

/// For an inconclusive row: the fewest runs per configuration (all alike, more than now) whose
/// interval would settle it — within ±f whatever the interaction, or, sooner, showing an
/// interaction beyond f that stays at `worse`. The runs' part of the variance is planned at
/// its 80 % upper confidence limit, s²·df/χ²₀.₂(df): a few runs see their own spread roughly
/// (see the module header). `None` without runs to judge by, or with a configuration that
/// measured a single value.
fn runs_to_resolve(worse: f64, noise: &Combined, cells: &[(&Cell, f64)]) -> Option<Resolve> {
    let (s2, df) = (noise.per_run?, noise.df?);
    // A configuration with a single value has no sampling noise to scale: nothing to plan by.
    if !noise.sampling.is_finite() {
        return None;
    }
    let upper = ChiSquared::new(df).ok()?.inverse_cdf(0.2);
    let w2: f64 = cells.iter().map(|(_, w)| w * w).sum();
    let half = |r: usize| {
        let shrink = w2 / r as f64 / noise.shares;
        let var = (s2 * noise.shares * df / upper).max(noise.sampling) * shrink;
        t_quantile(0.975, (cells.len() * (r - 1)) as f64) * var.sqrt()
    };
    let fewest = cells.iter().map(|(c, _)| c.runs).min().unwrap_or(1);
    let first = |settled: &dyn Fn(f64) -> bool| {
        (fewest + 1..=Resolve::MAX_RUNS).find(|&r| settled(half(r)))
    };
    let whatever = first(&|h| h <= FLOOR);
    let stays = if worse.abs() > FLOOR {
        first(&|h| h < worse.abs())
    } else {
        None
    };
    Some(Resolve {
        whatever,
        if_it_stays: stays.filter(|s| whatever.is_none_or(|w| *s < w)),
    })
}

fn verdict(worse: f64, critical: f64) -> Interaction {
    let bar = critical.max(FLOOR);
    if worse > bar {
        Interaction::Conflict
    } else if -worse > bar {
        Interaction::Synergy
    } else if critical <= FLOOR || (worse + critical <= FLOOR && worse - critical >= -FLOOR) {
        Interaction::Neutral
    } else {
        Interaction::Inconclusive
    }
}

/// Interactions of every pair, and of all the changes together when there are three.
pub fn factorial(arms: &[Arm], names: &[String]) -> Vec<InteractionRow> {
    let n = names.len();
    let mut sets: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            sets.push(vec![i, j]);
        }
    }
    if n == 3 {
        sets.push(vec![0, 1, 2]);
    }
    let mut out = Vec::new();
    for set in sets {
        // The combination, each single, the base.
        let mut configs: Vec<Vec<usize>> = vec![set.clone()];
        configs.extend(set.iter().map(|i| vec![*i]));
        configs.push(Vec::new());
        let Some(found) = configs
            .iter()
            .map(|c| find(arms, c))
            .collect::<Option<Vec<&Arm>>>()
        else {
            continue;
        };
        let weights: Vec<f64> = (0..configs.len())
            .map(|i| match i {
                0 => 1.0,
                i if i == configs.len() - 1 => set.len() as f64 - 1.0,
                _ => -1.0,
            })
            .collect();
        let labels: Vec<String> = configs
            .iter()
            .map(|c| match c.is_empty() {
                true => "base".to_string(),
                false => c
                    .iter()
                    .map(|i| names[*i].as_str())
                    .collect::<Vec<_>>()
                    .join("+"),
            })
            .collect();
        let changes: Vec<String> = set.iter().map(|i| names[*i].clone()).collect();
        for metric in METRICS {
            let seed = 0x57ac_u64 ^ ((set.iter().fold(0, |h, i| h * 8 + i + 1) as u64) << 8);
            let Some(cells) = found
                .iter()
                .enumerate()
                .map(|(k, a)| a.cell(metric, seed.wrapping_add(k as u64)))
                .collect::<Option<Vec<Cell>>>()
            else {
                continue;
            };
            let weighted: Vec<(&Cell, f64)> = cells.iter().zip(weights.iter().copied()).collect();
            let noise = Combined::of(&weighted);
            let (raw, se, df) = (noise.value, noise.se(), noise.df);
            let base = cells[cells.len() - 1].value;
            let alone: Vec<f64> = cells[1..cells.len() - 1]
                .iter()
                .map(|c| (c.value - base).exp())
                .collect();
            let combined = (cells[0].value - base).exp();
            let worse = if metric.lower_is_better() { raw } else { -raw };
            let critical = df.map_or(f64::INFINITY, |d| t_quantile(0.975, d) * se);
            let verdict = verdict(worse, critical);
            let resolve = (verdict == Interaction::Inconclusive)
                .then(|| runs_to_resolve(worse, &noise, &weighted))
                .flatten();
            out.push(InteractionRow {
                metric,
                changes: set.iter().map(|i| names[*i].clone()).collect(),
                expected: alone.iter().product(),
                alone,
                combined,
                interaction: worse,
                interval_low: worse - critical,
                interval_high: worse + critical,
                df,
                runs: found.iter().map(|a| a.runs()).min().unwrap_or(0),
                verdict,
                resolve,
                contention: contention(arms, &set, names, metric, verdict),
                detail: None,
            });
        }
        out.extend(
            quality::METRICS
                .into_iter()
                .filter_map(|m| quality::row(m, &found, &weights, changes.clone(), &labels)),
        );
    }
    out
}

/// What the measurements say the changes compete for. A speculative decoder's acceptance that
/// fell in the combination is named on the TPOT row whatever its verdict (the speculation ×
/// quantization conflict shows in the acceptance before it shows in a latency); the other
/// resources only where a row is a conflict or a synergy.
fn contention(
    arms: &[Arm],
    set: &[usize],
    names: &[String],
    metric: Metric,
    v: Interaction,
) -> Option<String> {
    let settled = !matches!(v, Interaction::Neutral | Interaction::Inconclusive);
    if !settled && metric != Metric::Latency(Latency::Tpot, Quantile::P50) {
        return None;
    }
    let combined = find(arms, set)?;
    let keys: Vec<&str> = set
        .iter()
        .map(|i| names[*i].split('=').next().unwrap_or(""))
        .collect();
    let has = |k: &str| keys.contains(&k);
    let acc = |a: &Arm| a.server_mean(|s| s.spec_acceptance_rate);
    if has("spec") {
        let alone = set
            .iter()
            .filter(|i| names[**i].starts_with("spec"))
            .find_map(|i| find(arms, &[*i]).and_then(acc));
        if let (Some(a), Some(c)) = (alone, acc(combined)) {
            if c < a - 0.05 {
                return Some(format!(
                    "the draft: spec-decode acceptance {a:.2} alone → {c:.2} combined"
                ));
            }
        }
    }
    if !settled {
        return None;
    }
    let pre = |a: &Arm| a.server_mean(|s| s.preemptions).unwrap_or(0.0);
    let single_pre = set
        .iter()
        .filter_map(|i| find(arms, &[*i]))
        .map(pre)
        .fold(0.0, f64::max);
    if pre(combined) > single_pre + 0.5
        || (v == Interaction::Synergy && single_pre > pre(combined) + 0.5)
    {
        return Some(format!(
            "KV cache: preemptions {single_pre:.0} (worst single) vs {:.0} combined",
            pre(combined)
        ));
    }
    if has("spec") && combined.server_mean(|s| s.running_peak).unwrap_or(0.0) >= 16.0 {
        return Some("scheduler slots / compute: verification competes with a large batch".into());
    }
    if has("tp") {
        return Some("communication bandwidth (all-reduce) and per-device tile efficiency".into());
    }
    None
}

mod quality;
#[cfg(test)]
mod tests;
