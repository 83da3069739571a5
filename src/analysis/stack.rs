//! `bench stack`'s runs: every configuration of a factorial, or each step of a ladder, measured
//! now on the simulator (a session per configuration) or read from earlier runs (`--from DIR`,
//! matched by their vars) — then judged by [`crate::verdict::stack`] (factorial) or the gate
//! (ladder, each step against the one before).

use crate::cli::{RunOpts, StackArgs};
use crate::config::kv;
use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::stack::{InteractionRow, Ladder, LadderStep};
use crate::session::Session;
use crate::verdict::compare::compare;
use crate::verdict::stack::{factorial as interactions, recommended_rank, Arm};
use std::path::{Path, PathBuf};

/// A change: `(key, value)`.
type Change = (String, String);

/// What to stack, checked before the first run.
pub struct StackPlan {
    pub scenario: PathBuf,
    pub opts: RunOpts,
    pub base: Vec<Change>,
    /// In the order they are applied (the recommended one with `--recommended`).
    pub tries: Vec<Change>,
    pub repeat: usize,
    pub keep_going: bool,
    pub out: PathBuf,
    /// Runs read from `--from DIR`, when given.
    pub pool: Option<Vec<RunResult>>,
}

impl StackPlan {
    pub fn from_args(args: &StackArgs, out: PathBuf) -> Result<StackPlan, BenchError> {
        let base = kv::list("--base", args.base.as_deref().unwrap_or(""))?;
        let mut tries: Vec<Change> = Vec::new();
        for t in &args.tries {
            tries.extend(kv::list("--try", t)?);
        }
        if tries.is_empty() {
            return Err(BenchError::usage("give at least one --try KEY=VALUE"));
        }
        if !args.ladder && tries.len() > 3 {
            return Err(BenchError::usage(
                "the factorial takes at most 3 changes (8 runs); use --ladder for longer stacks",
            ));
        }
        if args.recommended {
            tries.sort_by_key(|(k, _)| recommended_rank(k));
        }
        Ok(StackPlan {
            scenario: args.scenario.clone(),
            opts: args.opts.clone(),
            base,
            tries,
            repeat: args.repeat.max(1) as usize,
            keep_going: args.keep_going,
            out,
            pool: args.from.as_deref().map(runs_in),
        })
    }

    /// `quant=int4`, … in order.
    pub fn names(&self) -> Vec<String> {
        self.tries.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// One run of the base plus `changes`: found in the pool, or measured now.
    async fn obtain(&self, changes: &[&Change], out: &Path) -> Result<RunResult, BenchError> {
        if let Some(pool) = &self.pool {
            return self.find(pool, changes);
        }
        let mut o = self.opts.clone();
        o.opts.extend(
            self.base
                .iter()
                .chain(changes.iter().copied())
                .map(|(k, v)| format!("{k}={v}")),
        );
        let session = Session::new(RunSpec::from_args(&self.scenario, &o)?)?;
        if session.spec().endpoint.is_some() {
            return Err(BenchError::usage("bench stack changes the simulator's options; against a real endpoint, record the runs yourself and pass --from DIR"));
        }
        eprintln!("stack: running {}", label(changes));
        let run = session.run_to(&out.join(label(changes)), false).await?;
        if !run.complete {
            return Err(BenchError::Runtime("the run was interrupted".into()));
        }
        Ok(run)
    }

    /// The pooled run whose vars hold the base and `changes`, and none of the other tries.
    fn find(&self, pool: &[RunResult], changes: &[&Change]) -> Result<RunResult, BenchError> {
        let want: Vec<&Change> = self.base.iter().chain(changes.iter().copied()).collect();
        let not_applied: Vec<&Change> =
            self.tries.iter().filter(|t| !changes.contains(t)).collect();
        pool.iter()
            .find(|r| {
                want.iter().all(|(k, v)| r.vars.get(k) == Some(v))
                    && not_applied.iter().all(|(k, v)| r.vars.get(k) != Some(v))
            })
            .cloned()
            .ok_or_else(|| {
                BenchError::usage(format!(
                    "--from: no run.json has vars {}",
                    want.iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(",")
                ))
            })
    }
}

fn label(changes: &[&Change]) -> String {
    if changes.is_empty() {
        "base".into()
    } else {
        changes
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("+")
    }
}

/// All run.json files under `dir`.
fn runs_in(dir: &Path) -> Vec<RunResult> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "run.json") {
                if let Ok(r) = RunResult::load(&p) {
                    out.push(r);
                }
            }
        }
    }
    out
}

/// Every combination of the tries (base, each alone, each pair, all), then their interactions.
pub async fn factorial(plan: &StackPlan) -> Result<Vec<InteractionRow>, BenchError> {
    let n = plan.tries.len();
    let mut arms = Vec::new();
    for mask in 0..(1usize << n) {
        let set: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let changes: Vec<&Change> = set.iter().map(|i| &plan.tries[*i]).collect();
        let run = plan.obtain(&changes, &plan.out).await?;
        arms.push(Arm::from_run(set, &run));
    }
    Ok(interactions(&arms, &plan.names()))
}

/// The tries applied one at a time, each step judged by the gate against the step before
/// (`repeat` runs each); a regressing step stops the climb unless `keep_going`.
pub async fn ladder(plan: &StackPlan, gate: &GateConfig) -> Result<Ladder, BenchError> {
    let applied = |k: usize| -> Vec<&Change> { plan.tries[..k].iter().collect() };
    let step_runs = |k: usize| async move {
        let mut runs = Vec::new();
        for r in 0..plan.repeat {
            runs.push(
                plan.obtain(&applied(k), &plan.out.join(format!("rep{r}")))
                    .await?,
            );
        }
        Ok::<_, BenchError>(runs)
    };
    let names = plan.names();
    let mut prev = step_runs(0).await?;
    let tpot = |r: &RunResult| {
        r.summary
            .latency(Latency::Tpot)
            .map(|l| l.p50)
            .filter(|v| *v > 0.0)
    };
    let first_tpot = tpot(&prev[0]);
    let mut ladder = Ladder {
        steps: Vec::new(),
        stopped_at: None,
        planned: plan.tries.len(),
    };
    for step in 1..=plan.tries.len() {
        let runs = step_runs(step).await?;
        let baseline = Baseline::new(&format!("step {}", step - 1), prev)?;
        let comparison = compare(&baseline, &runs, false, gate)?;
        let regressed = comparison.regressed;
        ladder.steps.push(LadderStep {
            change: names[step - 1].clone(),
            comparison,
            cumulative_tpot_pct: first_tpot
                .zip(tpot(&runs[0]))
                .map(|(a, b)| (b / a - 1.0) * 100.0),
        });
        prev = runs;
        if regressed && !plan.keep_going {
            ladder.stopped_at = Some(step);
            break;
        }
    }
    Ok(ladder)
}
