//! What a baseline's runs say a compare against it can decide, before any request: for each
//! gated metric, the run-to-run spread of its runs' own figures (s, on the log scale; the
//! per-run figure's sampling noise within the run is part of it), and from it — as the gate
//! judges a figure per run, SE = s·√(1/R + 1/K) with Student's t on R + K − 2 degrees of
//! freedom (interleaved: both arms grow, s·√(2/K), 2K − 2) at each look's share of α of the
//! sequential design — the fewest runs a side (blocks) at which, with 90 % power,
//!
//! * an unchanged candidate is shown *no change* (the bound on worse inside the threshold), and
//! * a regression of 1.5 × the threshold is shown *regressed*;
//!
//! and the smallest regression the cap catches with 90 % power. The error rate is planned
//! exactly: the requests an arm needs before zero errors bound the increase inside its
//! threshold. A row no practical budget settles is named with what would settle it. A plan
//! is an estimate from few runs: the spread of three runs is itself uncertain by a factor of
//! about two.

use crate::config::thresholds::GateConfig;
use crate::model::baseline::Baseline;
use crate::model::metric::Metric;
use crate::model::result::RunResult;
use crate::verdict::figure;
use crate::verdict::sequential::Design;
use crate::verdict::stats::exact::requests_to_bound;
use crate::verdict::stats::{sd, t_quantile};
use std::fmt::Write;

/// z at 90 % power.
const Z_POWER: f64 = 1.2816;

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
            let logs: Vec<f64> = runs
                .iter()
                .filter_map(|x| figure::of_run(x, t.metric))
                .filter(|v| *v > 0.0)
                .map(f64::ln)
                .collect();
            let spread = (logs.len() >= 2).then(|| sd(&logs)).flatten();
            let se_df = |k: usize| match (spread, interleave) {
                (Some(s), false) => Some((s * (1.0 / r as f64 + 1.0 / k as f64).sqrt(), (r + k - 2) as f64)),
                (Some(s), true) => Some((s * (2.0 / k as f64).sqrt(), (2 * k - 2) as f64)),
                (None, _) => None,
            };
            let mut prev = 0;
            let mut runs_needed = None;
            for &k in &design.looks {
                let share = design.spend(prev, k).fail;
                prev = k;
                let Some((se, df)) = se_df(k) else { break };
                let (q_fail, q_bound) = (t_quantile(1.0 - share / m, df), t_quantile(1.0 - share, df));
                let no_change = (q_bound + Z_POWER) * se <= floor;
                let caught = 0.5 * floor >= Z_POWER * se && q_fail * se + Z_POWER * se <= 1.5 * floor;
                if no_change && caught {
                    runs_needed = Some(k);
                    break;
                }
            }
            let detectable_pct = se_df(design.max()).map(|(se, df)| {
                let share = design.spend(design.looks.iter().rev().nth(1).copied().unwrap_or(0), design.max()).fail;
                let d = (t_quantile(1.0 - share / m, df) * se).max(floor) + Z_POWER * se;
                (d.exp() - 1.0) * 100.0
            });
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
            "with no errors, bounding the increase inside {text} needs ≈ {need} requests an arm, {k} runs of {per_run}: more requests a run, a wider threshold, or `\"error_rate\" = \"off\"` in the gate and goodput under an SLO"
        )),
    }
}

/// A run's mean duration over `runs` (s).
pub fn secs_per_run(runs: &[RunResult]) -> f64 {
    let total: f64 = runs
        .iter()
        .map(|r| (r.ended_at - r.started_at).num_milliseconds().max(0) as f64 / 1000.0)
        .sum();
    total / runs.len().max(1) as f64
}

/// The plan of `base` under `cfg` and `design`, as the terminal shows it.
pub fn text(base: &Baseline, cfg: &GateConfig, design: &Design, interleave: bool) -> String {
    let rows = plan(base, cfg, design, interleave);
    render(&rows, design, secs_per_run(&base.repetitions), interleave)
}

/// The plan as the terminal shows it; `secs_per_run`: a baseline run's mean duration, for the
/// wall time (doubled interleaved: a block is two runs).
pub fn render(rows: &[RowPlan], design: &Design, secs_per_run: f64, interleave: bool) -> String {
    let unit = if interleave { "blocks" } else { "runs a side" };
    let per = if interleave {
        2.0 * secs_per_run
    } else {
        secs_per_run
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
            Some(k) => (k.to_string(), format!("≈ {:.0} s", k as f64 * per)),
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
        let text = render(&rows, &design, 10.0, false);
        assert!(
            text.contains("plan: looks at 3, 5, 8, 12 runs a side"),
            "{text}"
        );
    }
}
