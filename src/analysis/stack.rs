//! `bench stack`'s runs: every configuration of a factorial, or each step of a ladder, measured
//! now on the simulator (`--repeat` sessions per configuration) or read from earlier runs
//! (`--from DIR`, matched by their vars; every run of a configuration is one of its
//! repetitions) — then judged by [`crate::verdict::stack`] (factorial) or the gate
//! (ladder, each step against the one before).

use crate::config::flags::Flags;
use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::result::RunResult;
use crate::model::stack::{InteractionRow, Ladder, LadderStep};
use crate::session::Session;
use crate::verdict::compare::compare;
use crate::verdict::stack::{factorial as interactions, Arm};
use std::path::{Path, PathBuf};

use crate::config::stack::{Change, StackConfig};

/// What to stack, checked before the first run.
pub struct StackPlan {
    /// The scenario as read, once; every configuration's spec is built from it.
    pub loaded: crate::model::scenario::Scenario,
    pub scenario: PathBuf,
    pub flags: Flags,
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
    /// The plan of `cfg`: its scenario read, its stored runs (`--from`) read, or the
    /// directory the runs go to checked fresh — all before the first run.
    pub fn new(cfg: StackConfig) -> Result<StackPlan, BenchError> {
        if cfg.from.is_none() {
            crate::output::check_fresh(&cfg.out)?;
        }
        Ok(StackPlan {
            loaded: crate::config::scenario::load(&cfg.scenario)?,
            pool: cfg.from.as_deref().map(runs_in).transpose()?,
            scenario: cfg.scenario,
            flags: cfg.flags,
            base: cfg.base,
            tries: cfg.tries,
            repeat: cfg.repeat,
            keep_going: cfg.keep_going,
            out: cfg.out,
        })
    }

    /// The gate a ladder judges each step with: the scenario's own thresholds over the
    /// defaults.
    pub fn gate(&self) -> Result<GateConfig, BenchError> {
        let spec = RunSpec::from_scenario(self.loaded.clone(), &self.scenario, &self.flags)?;
        GateConfig::new(
            &[spec.scenario.gate.as_slice()],
            crate::config::thresholds::DEFAULT_ALPHA,
            spec.scenario.seed,
        )
    }

    /// `quant=int4`, … in order.
    pub fn names(&self) -> Vec<String> {
        self.tries.iter().map(|(k, v)| format!("{k}={v}")).collect()
    }

    /// The runs of the base plus `changes`: every one the pool holds (in start order), or
    /// `self.repeat` measured now under `out/repN`.
    async fn obtain(&self, changes: &[&Change], out: &Path) -> Result<Vec<RunResult>, BenchError> {
        if let Some(pool) = &self.pool {
            return self.find(pool, changes);
        }
        let mut runs = Vec::new();
        for r in 0..self.repeat {
            runs.push(self.measure(changes, &out.join(format!("rep{r}"))).await?);
        }
        Ok(runs)
    }

    /// One run of the base plus `changes`, measured now on the simulator.
    async fn measure(&self, changes: &[&Change], out: &Path) -> Result<RunResult, BenchError> {
        let o = self.flags.clone().with_opts(
            self.base
                .iter()
                .chain(changes.iter().copied())
                .map(|(k, v)| format!("{k}={v}")),
        );
        let session = Session::new(RunSpec::from_scenario(
            self.loaded.clone(),
            &self.scenario,
            &o,
        )?)?;
        if session.spec().endpoint.is_some() {
            return Err(BenchError::usage("bench stack changes the simulator's options; against a real endpoint, record the runs yourself and pass --from DIR"));
        }
        crate::say!("stack: running {}", label(changes));
        let run = session.run_to(&out.join(label(changes)), false).await?;
        if !run.complete {
            return Err(BenchError::Runtime("the run was interrupted".into()));
        }
        Ok(run)
    }

    /// The pooled runs whose vars hold the base and `changes`, and none of the other tries —
    /// all of them, in start order: repetitions of one configuration are its runs, not one
    /// run found again.
    fn find(&self, pool: &[RunResult], changes: &[&Change]) -> Result<Vec<RunResult>, BenchError> {
        // The base with the changes applied over it: a change may set a key the base names
        // (--base quant=none --try quant=int4), as the options of a measured run do.
        let want: std::collections::BTreeMap<&String, &String> = self
            .base
            .iter()
            .chain(changes.iter().copied())
            .map(|(k, v)| (k, v))
            .collect();
        let not_applied: Vec<&Change> =
            self.tries.iter().filter(|t| !changes.contains(t)).collect();
        let found: Vec<RunResult> = pool
            .iter()
            .filter(|r| {
                want.iter().all(|(k, v)| r.vars.get(*k) == Some(*v))
                    && not_applied.iter().all(|(k, v)| r.vars.get(k) != Some(v))
            })
            .cloned()
            .collect();
        if found.is_empty() {
            return Err(BenchError::usage(format!(
                "--from: no run.json has vars {}",
                want.iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        Ok(found)
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

/// Every run.json under `dir`, in start order. One that cannot be read or is corrupt is an
/// error naming it; one marked interrupted is
/// left out, said on stderr; the same run found twice (a copied directory) is an error, since
/// it would count as two repetitions.
fn runs_in(dir: &Path) -> Result<Vec<RunResult>, BenchError> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .map_err(|e| BenchError::Runtime(format!("--from {}: {e}", d.display())))?;
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "run.json") {
                files.push(p);
            }
        }
    }
    files.sort();
    let mut runs: Vec<(RunResult, PathBuf)> = Vec::new();
    for f in files {
        if let Some(r) =
            crate::verdict::stored::load_file(&f, crate::verdict::stored::Role::Pool, true)?
        {
            if let Some((_, first)) = runs.iter().find(|(o, _)| o.run_id == r.run_id) {
                return Err(BenchError::usage(format!(
                    "--from: {} and {} are the same run ({}); keep one",
                    first.display(),
                    f.display(),
                    r.run_id
                )));
            }
            runs.push((r, f));
        }
    }
    runs.sort_by_key(|(r, _)| r.started_at);
    Ok(runs.into_iter().map(|(r, _)| r).collect())
}

/// Every combination of the tries (base, each alone, each pair, all), each in its runs (measured
/// now, `repeat` each, or every stored one), then their interactions. Every configuration is a
/// reference for the interaction: one whose run measured nothing stops it, as a ladder step does.
pub async fn factorial(plan: &StackPlan) -> Result<Vec<InteractionRow>, BenchError> {
    let n = plan.tries.len();
    let mut arms = Vec::new();
    for mask in 0..(1usize << n) {
        let set: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        let changes: Vec<&Change> = set.iter().map(|i| &plan.tries[*i]).collect();
        let runs = plan.obtain(&changes, &plan.out).await?;
        for r in &runs {
            crate::verdict::baseline::check_recorded(r).map_err(|m| {
                BenchError::Runtime(format!(
                    "the factorial cannot compare {}: its run {} {m}",
                    label(&changes),
                    r.run_id
                ))
            })?;
        }
        arms.push(Arm::from_runs(set, &runs));
    }
    Ok(interactions(&arms, &plan.names()))
}

/// The tries applied one at a time, each step judged by the gate against the step before
/// (`repeat` runs each); a regressing step stops the climb unless `keep_going`.
pub async fn ladder(plan: &StackPlan, gate: &GateConfig) -> Result<Ladder, BenchError> {
    let applied = |k: usize| -> Vec<&Change> { plan.tries[..k].iter().collect() };
    let step_runs = |k: usize| async move { plan.obtain(&applied(k), &plan.out).await };
    let names = plan.names();
    let mut prev = step_runs(0).await?;
    // TPOT p50 as the gate reports it: each step's pooled over its runs.
    let tpot = |c: &crate::model::comparison::Comparison, base: bool| {
        c.row(Metric::Latency(Latency::Tpot, Quantile::P50))
            .map(|r| if base { r.baseline } else { r.candidate })
            .filter(|v| *v > 0.0)
    };
    let mut first_tpot = None;
    let mut ladder = Ladder {
        steps: Vec::new(),
        stopped_at: None,
        planned: plan.tries.len(),
    };
    for step in 1..=plan.tries.len() {
        let runs = step_runs(step).await?;
        // The step before is this one's reference: runs of it that measured nothing (all
        // failed) would make this step look better, not be judged.
        for r in &prev {
            crate::verdict::baseline::check_recorded(r).map_err(|m| {
                BenchError::Runtime(format!(
                    "ladder step {} ({}) cannot be judged against: its run {} {m}",
                    step - 1,
                    if step == 1 {
                        "the base"
                    } else {
                        &names[step - 2]
                    },
                    r.run_id
                ))
            })?;
        }
        let baseline = Baseline::new(&format!("step {}", step - 1), prev)?;
        let comparison = compare(&baseline, &runs, false, gate)?;
        let regressed = comparison.regressed;
        if step == 1 {
            first_tpot = tpot(&comparison, true);
        }
        ladder.steps.push(LadderStep {
            change: names[step - 1].clone(),
            cumulative_tpot_pct: first_tpot
                .zip(tpot(&comparison, false))
                .map(|(a, b)| (b / a - 1.0) * 100.0),
            comparison,
        });
        prev = runs;
        if regressed && !plan.keep_going {
            ladder.stopped_at = Some(step);
            break;
        }
    }
    Ok(ladder)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `--from` pool of runs with these ids and `quant` values, started in this order.
    fn pool(runs: &[(&str, &str)]) -> StackPlan {
        let mut rng = crate::testkit::rng(1);
        let pool = runs
            .iter()
            .enumerate()
            .map(|(i, (id, quant))| {
                let mut r = crate::testkit::lognormal_run(10, 50.0, 0.0, &mut rng);
                r.run_id = id.to_string();
                r.started_at += chrono::Duration::seconds(i as i64);
                r.ended_at = r.started_at;
                r.vars = [("quant".to_string(), quant.to_string())].into();
                r
            })
            .collect();
        StackPlan {
            loaded: crate::testkit::scenario(""),
            scenario: PathBuf::new(),
            flags: {
                use clap::Parser;
                let cli = crate::cli::Cli::try_parse_from(["bench", "run", "s.toml"]).unwrap();
                let crate::cli::Command::Run(args) = cli.command else {
                    unreachable!()
                };
                Flags::from(&args.opts)
            },
            base: vec![("quant".into(), "none".into())],
            tries: vec![("quant".into(), "int4".into())],
            repeat: 2,
            keep_going: false,
            out: PathBuf::new(),
            pool: Some(pool),
        }
    }

    #[test]
    fn a_configurations_stored_repetitions_are_all_its_runs() {
        // Asking the pool --repeat times for its first match would judge one run as two
        // repetitions with no spread between them; and a change of a key the base names
        // (quant=none → int4) must match the runs that have it.
        let plan = pool(&[
            ("b1", "none"),
            ("q1", "int4"),
            ("b2", "none"),
            ("q2", "int4"),
        ]);
        let ids =
            |runs: Vec<RunResult>| -> Vec<String> { runs.into_iter().map(|r| r.run_id).collect() };
        let base = plan.find(plan.pool.as_ref().unwrap(), &[]).unwrap();
        assert_eq!(ids(base), ["b1", "b2"]);
        let int4 = &plan.tries[0];
        let tried = plan.find(plan.pool.as_ref().unwrap(), &[int4]).unwrap();
        assert_eq!(ids(tried), ["q1", "q2"]);
        let none = pool(&[("b1", "none")]);
        assert!(none.find(none.pool.as_ref().unwrap(), &[int4]).is_err());
    }

    #[tokio::test]
    async fn a_ladders_cumulative_gain_pools_each_steps_runs() {
        // Nothing changes but which state each run settled in: the base's first run in phase
        // (TPOT ≈ 21 ms), the step's first out of phase (≈ 43 ms), their second runs the other
        // way round. From each step's first run alone the cumulative TPOT would read ≈ +100 %;
        // pooled over the runs, as the gate judges them, it is ≈ 0.
        use crate::verdict::gate::tests::phased_run;
        let mut rng = crate::testkit::rng(3);
        let mut plan = pool(&[]);
        let runs = [
            ("b1", "none", false),
            ("q1", "int4", true),
            ("b2", "none", true),
            ("q2", "int4", false),
        ];
        plan.pool = Some(
            runs.iter()
                .enumerate()
                .map(|(i, (id, quant, out))| {
                    let mut r = phased_run(*out, &mut rng);
                    r.run_id = id.to_string();
                    r.started_at += chrono::Duration::seconds(i as i64);
                    r.ended_at = r.started_at;
                    r.vars = [("quant".to_string(), quant.to_string())].into();
                    r
                })
                .collect(),
        );
        let gate = GateConfig::new(&[], crate::config::thresholds::DEFAULT_ALPHA, 1).unwrap();
        let l = ladder(&plan, &gate).await.unwrap();
        let cum = l.steps[0].cumulative_tpot_pct.unwrap();
        assert!(cum.abs() < 20.0, "cumulative TPOT {cum:+.1} %");
    }

    /// A pool for a factorial of quant=int4 × spec=3: `per` runs of each configuration.
    fn factorial_pool(per: usize) -> StackPlan {
        let mut plan = pool(&[]);
        plan.base = vec![
            ("quant".into(), "none".into()),
            ("spec".into(), "off".into()),
        ];
        plan.tries = vec![("quant".into(), "int4".into()), ("spec".into(), "3".into())];
        let mut rng = crate::testkit::rng(2);
        let mut runs = Vec::new();
        for k in 0..per {
            for (c, (quant, spec)) in [
                ("none", "off"),
                ("int4", "off"),
                ("none", "3"),
                ("int4", "3"),
            ]
            .iter()
            .enumerate()
            {
                let mut r = crate::testkit::lognormal_run(30, 50.0, 0.0, &mut rng);
                r.run_id = format!("c{c}r{k}");
                r.started_at += chrono::Duration::seconds((k * 4 + c) as i64);
                r.ended_at = r.started_at;
                r.vars = [("quant", *quant), ("spec", *spec)]
                    .iter()
                    .map(|(a, b)| (a.to_string(), b.to_string()))
                    .collect();
                runs.push(r);
            }
        }
        plan.pool = Some(runs);
        plan
    }

    #[tokio::test]
    async fn the_factorial_judges_every_stored_run_of_a_configuration() {
        // Each configuration's earliest run with its requests bootstrapped would give far too
        // narrow an interval: a run's requests share its state.
        let rows = factorial(&factorial_pool(3)).await.unwrap();
        assert_eq!(
            rows.len(),
            3,
            "TTFT, E2E, throughput: these runs have no TPOT"
        );
        for r in &rows {
            assert_eq!((r.runs, r.df), (3, Some(8.0)), "{}", r.metric);
            assert!(r.interval_high.is_finite());
        }
        let one = factorial(&factorial_pool(1)).await.unwrap();
        assert!(one
            .iter()
            .all(|r| r.verdict == crate::model::stack::Interaction::Inconclusive));
    }

    #[tokio::test]
    async fn a_configuration_that_measured_nothing_stops_the_factorial() {
        use crate::model::record::Outcome;
        let mut plan = factorial_pool(2);
        let pool = plan.pool.as_mut().unwrap();
        let at = pool.iter().position(|r| r.run_id == "c3r1").unwrap();
        let records = (0..5)
            .map(|i| crate::testkit::record(i, Outcome::Http(503)))
            .collect();
        let mut failed = crate::testkit::run_of(records, crate::testkit::scenario(""), 1);
        failed.run_id = "c3r1".into();
        failed.vars = pool[at].vars.clone();
        pool[at] = failed;
        let e = factorial(&plan).await.unwrap_err().to_string();
        assert!(
            e.contains("the factorial cannot compare quant=int4+spec=3: its run c3r1 has no successful measured request"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn a_step_that_measured_nothing_is_no_reference_for_the_next() {
        use crate::model::record::Outcome;
        let mut plan = pool(&[("q1", "int4"), ("q2", "int4")]);
        let failed = (0..2).map(|k| {
            let records = (0..5)
                .map(|i| crate::testkit::record(i, Outcome::Http(503)))
                .collect();
            let mut r = crate::testkit::run_of(records, crate::testkit::scenario(""), 1);
            r.run_id = format!("b{k}");
            r.vars = [("quant".to_string(), "none".to_string())].into();
            r
        });
        plan.pool.as_mut().unwrap().extend(failed);
        let gate = GateConfig::new(&[], crate::config::thresholds::DEFAULT_ALPHA, 1).unwrap();
        let e = ladder(&plan, &gate).await.unwrap_err().to_string();
        assert!(
            e.contains("ladder step 0 (the base) cannot be judged against: its run b0 has no successful measured request"),
            "{e}"
        );
    }
}
