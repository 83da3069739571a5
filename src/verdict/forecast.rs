//! What a baseline's runs say a compare against it can decide, before any request: for each
//! gated metric, the run-to-run spread of its runs' own figures (s, on the log scale; the
//! per-run figure's sampling noise within the run is part of it), and from it — judged as the
//! gate judges a figure per run, at each look's share of α of the sequential design — the
//! fewest runs a side (blocks) at which, with 90 % power,
//!
//! * an unchanged candidate is shown *no change* (the bound on worse inside the threshold), and
//! * a regression of 1.5 × the threshold is shown *regressed*;
//!
//! and the smallest regression the cap catches with 90 % power.
//!
//! Against a stored baseline of R runs the gate's standard error is [`two_sample`]'s: the arms'
//! spreads pooled, s·√(1/R + 1/K) on R + K − 2 degrees of freedom, or each arm's own where
//! that is larger (Welch–Satterthwaite). Which one judges depends on the candidate's spread,
//! unknown before it runs, so the plan takes the candidate's runs to spread like the
//! baseline's and averages the power over their sample variance, s²·χ²(K − 1)/(K − 1), at
//! [`DRAWS`] equally likely quantiles: at a first look of 3 runs against 12 that variance is
//! the larger about half the time, and then Welch's few degrees of freedom judge. Planning at
//! the pooled figure alone promised the first look more than it holds. Interleaved, both arms
//! grow alike: s·√(2/K) on 2K − 2 degrees of freedom.
//!
//! The error rate is planned exactly: the requests an arm needs before zero errors bound the
//! increase inside its threshold. A row no practical budget settles is named with what would
//! settle it. A plan is an estimate from few runs: the spread of three runs is itself
//! uncertain by a factor of about two.

use crate::config::thresholds::GateConfig;
use crate::model::baseline::Baseline;
use crate::model::metric::Metric;
use crate::model::result::RunResult;
use crate::model::values::Values;
use crate::verdict::figure;
use crate::verdict::sequential::Design;
use crate::verdict::stats::exact::requests_to_bound;
use crate::verdict::stats::{t_quantile, two_sample, z};
use statrs::distribution::{ChiSquared, ContinuousCDF, Normal};
use std::fmt::Write;

/// The power each claim is planned for.
const POWER: f64 = 0.9;
/// Equally likely quantiles of the candidate's sample variance the power is averaged over.
const DRAWS: usize = 64;

/// One gated metric's plan.
#[derive(Debug, Clone, PartialEq)]
pub struct RowPlan {
    pub metric: Metric,
    pub threshold: String,
    /// Run-to-run spread of the baseline's runs (ln scale); `None` for the error rate and
    /// when fewer than two runs have the figure.
    pub spread: Option<f64>,
    /// Runs a side (blocks) at which both claims reach 90 % power; `None` past the cap.
    pub runs: Option<usize>,
    /// The smallest regression (percent) the cap catches with 90 % power.
    pub detectable_pct: Option<f64>,
    /// What would settle a row the cap does not.
    pub advice: Option<String>,
}

/// The plan of every gated metric of `cfg` against `base`'s runs, over `design`'s looks.
pub fn plan(base: &Baseline, cfg: &GateConfig, design: &Design, interleave: bool) -> Vec<RowPlan> {
    let runs = &base.repetitions;
    let gated: Vec<_> = cfg
        .thresholds
        .iter()
        .filter(|t| {
            t.floor.is_some()
                && (t.metric == Metric::ErrorRate
                    || t.metric.is_quality() && runs[0].quality.is_some()
                    || !matches!(t.metric, Metric::TurnLatency(..))
                        && figure::of_run(&runs[0], t.metric).is_some())
        })
        .collect();
    let m = gated.len().max(1) as f64;
    let r = runs.len();
    gated
        .into_iter()
        .map(|t| {
            let floor = t.floor.unwrap_or(0.0);
            if t.metric == Metric::ErrorRate {
                return error_rate(runs, &t.text, floor, design);
            }
            if t.metric.is_quality() {
                return quality(runs, t.metric, &t.text, floor, design);
            }
            if let Some(why) = ungated(runs, t.metric, design.max(), interleave) {
                return RowPlan {
                    metric: t.metric,
                    threshold: t.text.clone(),
                    spread: None,
                    runs: None,
                    detectable_pct: None,
                    advice: Some(why),
                };
            }
            let spread = Values::logs_of_positive(
                runs.iter().filter_map(|x| figure::of_run(x, t.metric)),
            )
            .sd();
            let look = Look { r, floor, m, interleave };
            let runs_needed = spread.and_then(|s| look.settles(s, design));
            let detectable_pct = spread.map(|s| (look.caught_at_cap(s, design).exp() - 1.0) * 100.0);
            let advice = match (runs_needed, spread) {
                (Some(_), _) => None,
                (None, None) => Some("needs two or more baseline runs to plan".to_string()),
                (None, Some(s)) => Some(format!(
                    "runs differ by ≈ {:.0} %: within the cap only with a wider threshold, steadier runs (more requests a run, warmup), {}",
                    s * 100.0,
                    if interleave { "or a larger --max-repeat" } else { "a baseline of more runs (--repeat), or --interleave" }
                )),
            };
            RowPlan {
                metric: t.metric,
                threshold: t.text.clone(),
                spread,
                runs: runs_needed,
                detectable_pct,
                advice,
            }
        })
        .collect()
}

/// What is fixed about a row's looks: the baseline's runs, the threshold on the log scale, the
/// gated rows splitting the FAIL side's α, and whether the compare interleaves.
struct Look {
    r: usize,
    floor: f64,
    m: f64,
    interleave: bool,
}

impl Look {
    /// The (standard error, degrees of freedom) pairs the gate may judge a look of `k` with,
    /// equally likely, and the effect's true standard error, for runs that spread by `s`.
    fn judged(&self, s: f64, k: usize) -> (Vec<(f64, f64)>, f64) {
        let r = self.r;
        if self.interleave {
            let se = s * (2.0 / k as f64).sqrt();
            return (vec![(se, (2 * k).saturating_sub(2).max(1) as f64)], se);
        }
        let true_se = s * (1.0 / r as f64 + 1.0 / k as f64).sqrt();
        let pooled = vec![(true_se, (r + k).saturating_sub(2).max(1) as f64)];
        let Ok(chi) = ChiSquared::new(k.saturating_sub(1) as f64) else {
            return (pooled, true_se);
        };
        let points = (0..DRAWS)
            .filter_map(|i| {
                let q = chi.inverse_cdf((i as f64 + 0.5) / DRAWS as f64) / (k - 1) as f64;
                let (var, df) = two_sample([Some(s * s), Some(s * s * q)], [r, k])?;
                Some((var.sqrt(), df))
            })
            .collect::<Vec<_>>();
        (if points.is_empty() { pooled } else { points }, true_se)
    }

    /// At a look of `k` spending `share` of α: the chance an unchanged candidate is shown no
    /// change, and the chance a regression of `effect` (log scale) is shown regressed.
    fn power(&self, s: f64, k: usize, share: f64, effect: f64) -> (f64, f64) {
        let (points, true_se) = self.judged(s, k);
        let n = Normal::standard();
        let no_change = points
            .iter()
            .map(|&(se, df)| n.cdf((self.floor - t_quantile(1.0 - share, df) * se) / true_se))
            .sum::<f64>();
        let bars = self.bars(&points, share);
        (
            no_change / points.len() as f64,
            caught(&bars, true_se, effect),
        )
    }

    /// The effect each point must exceed to be called regressed: beyond the threshold and
    /// beyond noise at the FAIL side's share of `share`.
    fn bars(&self, points: &[(f64, f64)], share: f64) -> Vec<f64> {
        points
            .iter()
            .map(|&(se, df)| (t_quantile(1.0 - share / self.m, df) * se).max(self.floor))
            .collect()
    }

    /// The first look at which both claims reach [`POWER`]; `None` past the cap.
    fn settles(&self, s: f64, design: &Design) -> Option<usize> {
        let mut prev = 0;
        design.looks.iter().copied().find(|&k| {
            let share = design.spend(prev, k).fail;
            prev = k;
            let (no_change, caught) = self.power(s, k, share, 1.5 * self.floor);
            no_change >= POWER && caught >= POWER
        })
    }

    /// The smallest regression (log scale) the cap's look catches with [`POWER`], found by
    /// bisection between the threshold and the largest bar plus z₀.₉ true standard errors.
    fn caught_at_cap(&self, s: f64, design: &Design) -> f64 {
        let cap = design.max();
        let before = design.looks.iter().rev().nth(1).copied().unwrap_or(0);
        let (points, true_se) = self.judged(s, cap);
        let bars = self.bars(&points, design.spend(before, cap).fail);
        let top = bars.iter().copied().fold(self.floor, f64::max);
        let (mut lo, mut hi) = (self.floor, top + z(POWER) * true_se);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if caught(&bars, true_se, mid) >= POWER {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    }
}

/// The chance a regression of `effect` exceeds its bar, averaged over equally likely bars;
/// the estimate scatters by `true_se` about the effect.
fn caught(bars: &[f64], true_se: f64, effect: f64) -> f64 {
    let n = Normal::standard();
    bars.iter()
        .map(|b| n.cdf((effect - b) / true_se))
        .sum::<f64>()
        / bars.len().max(1) as f64
}

/// Why a p99 will not be gated: an arm below [`crate::verdict::gate::P99_MIN_N`] successful
/// requests, even at the cap.
fn ungated(runs: &[RunResult], m: Metric, cap: usize, interleave: bool) -> Option<String> {
    let Metric::Latency(_, q) = m else {
        return None;
    };
    let min = crate::verdict::gate::P99_MIN_N as u64;
    let ok = runs.iter().map(|r| r.summary.counts.ok).sum::<u64>();
    let per_run = ok / runs.len().max(1) as u64;
    let base = if interleave { per_run * cap as u64 } else { ok };
    (q.p() >= 0.99 && (base < min || per_run * (cap as u64) < min)).then(|| {
        format!(
            "not gated: a p99 is judged from {min} successful requests an arm, and the runs hold ≈ {per_run} each (the baseline {ok}): reported only"
        )
    })
}

/// The error rate: zero errors in both arms bound the increase inside `floor` once the
/// candidate arm holds `requests_to_bound` requests, at the last look's share of α.
fn error_rate(runs: &[RunResult], text: &str, floor: f64, design: &Design) -> RowPlan {
    let per_run =
        runs.iter().map(|r| r.summary.counts.sent).sum::<u64>() / runs.len().max(1) as u64;
    let before_last = design.looks.iter().rev().nth(1).copied().unwrap_or(0);
    let need = requests_to_bound(floor, 1.0 - design.spend(before_last, design.max()).bound);
    let k = need.div_ceil(per_run.max(1)) as usize;
    let within = k <= design.max();
    RowPlan {
        metric: Metric::ErrorRate,
        threshold: text.to_string(),
        spread: None,
        runs: within.then_some(k.max(design.looks[0])),
        detectable_pct: None,
        advice: (!within).then(|| format!(
            "with no errors, bounding the increase inside {text} needs ≈ {} requests an arm, {} runs of {per_run}: more requests a run, a wider threshold, or `\"error_rate\" = \"off\"` in the gate and goodput under an SLO",
            crate::model::readable::count(need),
            crate::model::readable::count(k as u64)
        )),
    }
}

/// A quality row is decided at the first look, from the items the set holds, at the whole α
/// (`gate::evaluate_at`): with no item changing, the exact bound on a drop is
/// 1 − (α/2)^(1/n), so it settles when that is inside the threshold. More runs add nothing
/// (an arm's answers come from its first pass).
fn quality(runs: &[RunResult], metric: Metric, text: &str, floor: f64, design: &Design) -> RowPlan {
    let q = runs[0].quality.as_ref();
    let n = match metric {
        Metric::Accuracy => q.map_or(0, |q| q.accuracy().1),
        _ => q.map_or(0, |q| q.answers.len() as u64),
    };
    let need = requests_to_bound(floor, 1.0 - design.alpha);
    RowPlan {
        metric,
        threshold: text.to_string(),
        spread: None,
        runs: (n >= need).then_some(design.looks[0]),
        detectable_pct: None,
        advice: (n < need).then(|| format!(
            "the quality set has {n} items; bounding a drop inside {text} needs ≥ {} with none changing: a larger set, or a wider threshold",
            crate::model::readable::count(need)
        )),
    }
}

/// A run's mean duration over `runs` (s).
fn secs_per_run(runs: &[RunResult]) -> f64 {
    let total: f64 = runs
        .iter()
        .map(|r| (r.ended_at - r.started_at).num_milliseconds().max(0) as f64 / 1000.0)
        .sum();
    total / runs.len().max(1) as f64
}

/// The mean wall time of the quality passes `runs` made (s), which a run's duration leaves
/// out; 0 without a timed pass.
fn secs_per_pass(runs: &[RunResult]) -> f64 {
    runs.iter()
        .filter_map(|r| r.quality.as_ref().map(|q| q.seconds))
        .filter(|s| *s > 0.0)
        .collect::<Values>()
        .mean()
        .unwrap_or(0.0)
}

/// The plan of `base` under `cfg` and `design`, as the terminal shows it.
pub fn text(base: &Baseline, cfg: &GateConfig, design: &Design, interleave: bool) -> String {
    let rows = plan(base, cfg, design, interleave);
    let runs = &base.repetitions;
    render(
        &rows,
        design,
        (secs_per_run(runs), secs_per_pass(runs)),
        interleave,
    )
}

/// The plan as the terminal shows it; `secs`: a baseline run's mean duration and its quality
/// pass's, for the wall time (k runs a side take k runs and the first
/// [`crate::model::quality::PASSES`] passes; doubled interleaved, a block being two runs).
pub fn render(rows: &[RowPlan], design: &Design, secs: (f64, f64), interleave: bool) -> String {
    let unit = if interleave { "blocks" } else { "runs a side" };
    let arms = if interleave { 2.0 } else { 1.0 };
    let (per, pass) = secs;
    let wall_of = |k: usize| {
        let passes = k.min(crate::model::quality::PASSES as usize);
        arms * (k as f64 * per + passes as f64 * pass)
    };
    let mut o = String::new();
    let _ = writeln!(
        o,
        "plan: looks at {} {unit}, cap {}; 90 % power for no change when nothing changed and for a regression of 1.5 × the threshold",
        design.looks.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", "),
        design.max()
    );
    let _ = writeln!(
        o,
        "  {:<18} {:>10} {:>8} {:>14} {:>10}  smallest regression caught at the cap",
        "metric", "threshold", "spread", unit, "wall time"
    );
    for r in rows {
        let spread = r
            .spread
            .map_or("—".into(), |s| format!("{:.1}%", s * 100.0));
        let (n, wall) = match r.runs {
            Some(k) => (k.to_string(), format!("≈ {:.0} s", wall_of(k))),
            None => (format!("> {}", design.max()), "—".into()),
        };
        let caught = r.detectable_pct.map_or("—".into(), |d| format!("{d:+.0}%"));
        let _ = writeln!(
            o,
            "  {:<18} {:>10} {:>8} {:>14} {:>10}  {caught}",
            r.metric.to_string(),
            r.threshold,
            spread,
            n,
            wall
        );
    }
    for r in rows.iter().filter(|r| r.advice.is_some()) {
        let _ = writeln!(
            o,
            "  {}: {}",
            r.metric,
            r.advice.as_deref().unwrap_or_default()
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::lognormal_run;
    use rand::SeedableRng;

    fn cfg() -> GateConfig {
        crate::testkit::gate_config(200)
    }

    /// The gate's own look, drawn `n` times: a stored baseline of `r` runs whose spread is `s`
    /// (its mean off the truth by its own error), a candidate of `k` runs spread alike and moved
    /// by `effect`, judged with [`two_sample`] at `share` of α. Returns the share of draws shown
    /// no change and the share shown regressed.
    fn drawn(
        look: &Look,
        s: f64,
        k: usize,
        share: f64,
        effect: f64,
        rng: &mut impl rand::Rng,
    ) -> (f64, f64) {
        use rand_distr::{Distribution, Normal as N};
        let unit = N::new(0.0, 1.0).unwrap();
        let n = 4000;
        let (mut no_change, mut regressed) = (0, 0);
        for _ in 0..n {
            let base_error = s / (look.r as f64).sqrt() * unit.sample(rng);
            let runs: Vec<f64> = (0..k).map(|_| effect + s * unit.sample(rng)).collect();
            let runs = Values::new(runs);
            let (mean, var) = (runs.mean().unwrap(), runs.var().unwrap());
            let (v, df) = two_sample([Some(s * s), Some(var)], [look.r, k]).unwrap();
            let d = mean - base_error;
            let bar = (t_quantile(1.0 - share / look.m, df) * v.sqrt()).max(look.floor);
            regressed += (d > bar) as u32;
            no_change +=
                (d <= bar && d + t_quantile(1.0 - share, df) * v.sqrt() <= look.floor) as u32;
        }
        (no_change as f64 / n as f64, regressed as f64 / n as f64)
    }

    #[test]
    fn the_planned_look_holds_its_power_under_the_gates_rule() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let design = Design::new(3, 12, 0.05);
        let look = Look {
            r: 12,
            floor: 1.1f64.ln(),
            m: 8.0,
            interleave: false,
        };
        let mut pooled_fell_short = Vec::new();
        for s in [0.02, 0.025, 0.03, 0.035, 0.04, 0.05, 0.06, 0.08] {
            let (mut prev, mut pooled) = (0, None);
            for &k in &design.looks {
                let share = design.spend(prev, k).fail;
                prev = k;
                // The plan's power at every look is what the gate's rule delivers.
                let (plan_nc, plan_caught) = look.power(s, k, share, 1.5 * look.floor);
                let (nc, _) = drawn(&look, s, k, share, 0.0, &mut rng);
                let (_, caught) = drawn(&look, s, k, share, 1.5 * look.floor, &mut rng);
                assert!(
                    (plan_nc - nc).abs() <= 0.04 && (plan_caught - caught).abs() <= 0.04,
                    "s {s}, look {k}: planned no change {plan_nc:.3} / caught {plan_caught:.3}, drawn {nc:.3} / {caught:.3}"
                );
                // A plan that took the candidate's spread to be exactly the baseline's:
                // pooled, R + K − 2 degrees of freedom, the first look meeting 90 % so.
                let (se, df) = (s * (1.0 / 12.0 + 1.0 / k as f64).sqrt(), (10 + k) as f64);
                let pooled_nc = (t_quantile(1.0 - share, df) + z(POWER)) * se <= look.floor;
                let pooled_caught = 1.5 * look.floor
                    - (t_quantile(1.0 - share / 8.0, df) * se).max(look.floor)
                    >= z(POWER) * se;
                if pooled_nc && pooled_caught && pooled.is_none() {
                    pooled = Some((k, nc.min(caught)));
                }
            }
            let planned = look.settles(s, &design);
            if let Some((k, held)) = pooled.filter(|(k, _)| planned.is_none_or(|p| *k < p)) {
                pooled_fell_short.push((s, k, held));
            }
        }
        // Where the pooled figure alone promised an earlier look, that look falls short of 90 %.
        assert!(!pooled_fell_short.is_empty(), "the rule changed no plan");
        for (s, k, held) in pooled_fell_short {
            assert!(
                held < 0.87,
                "s {s}: the pooled plan's look {k} held both claims in {held:.3}"
            );
        }
    }

    #[test]
    fn steady_runs_settle_early_and_noisy_ones_are_named() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(4);
        let steady: Vec<RunResult> = (0..5)
            .map(|i| {
                let mut r = lognormal_run(2000, 40.0, 0.0, &mut rng);
                r.run_id = format!("s{i}");
                r
            })
            .collect();
        let design = Design::new(3, 12, 0.05);
        let b = Baseline::new("main", steady).unwrap();
        let rows = plan(&b, &cfg(), &design, false);
        let ttft = rows
            .iter()
            .find(|r| r.metric.to_string() == "ttft.p50")
            .unwrap();
        assert!(ttft.runs.is_some_and(|k| k <= 5), "{ttft:?}");
        let noisy: Vec<RunResult> = (0..3)
            .map(|i| {
                let mut r = lognormal_run(300, 40.0, [0.0, 0.3, -0.3][i], &mut rng);
                r.run_id = format!("n{i}");
                r
            })
            .collect();
        let b = Baseline::new("main", noisy).unwrap();
        let rows = plan(&b, &cfg(), &design, false);
        let ttft = rows
            .iter()
            .find(|r| r.metric.to_string() == "ttft.p50")
            .unwrap();
        assert_eq!(ttft.runs, None, "{ttft:?}");
        assert!(
            ttft.advice
                .as_deref()
                .is_some_and(|a| a.contains("runs differ by ≈ 3")),
            "{ttft:?}"
        );
        let err = rows.iter().find(|r| r.metric == Metric::ErrorRate).unwrap();
        // ≈ 956 requests bound no errors inside +0.5 pp at the last look: 4 runs of 300.
        assert_eq!(err.runs, Some(4), "{err:?}");
        let text = render(&rows, &design, (10.0, 0.0), false);
        assert!(
            text.contains("plan: looks at 3, 5, 8, 12 runs a side"),
            "{text}"
        );
        // 4 runs of 10 s; with a 30 s quality pass, the first two runs make one each.
        assert!(text.contains("≈ 40 s"), "{text}");
        let timed = render(&rows, &design, (10.0, 30.0), false);
        assert!(timed.contains("≈ 100 s"), "{timed}");
        let interleaved = render(&rows, &design, (10.0, 30.0), true);
        assert!(interleaved.contains("≈ 200 s"), "{interleaved}");
    }
}
