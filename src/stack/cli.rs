//! The `bench stack` command: runs (on the simulator) or reads (`--from DIR`) every
//! configuration, then reports the factorial interactions or walks the ladder.

use super::{factorial, recommended_rank, Arm, Interaction, InteractionRow};
use crate::app::{default_out_dir, run_and_write, RunSetup};
use crate::baseline::Baseline;
use crate::cli::{RunOpts, StackArgs};
use crate::compare::compare;
use crate::error::BenchError;
use crate::gate::{self, GateConfig};
use crate::result::RunResult;
use crate::stats::verdict::Verdict;
use crate::{EXIT_OK, EXIT_REGRESSION};
use std::fmt::Write;
use std::path::Path;

fn split_pairs(s: &str) -> Result<Vec<(String, String)>, BenchError> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| BenchError::usage(format!("`{p}`: write changes as KEY=VALUE")))
        })
        .collect()
}

/// Run options for one configuration: the base, then the chosen changes, as simulator opts.
fn config_opts(
    opts: &RunOpts,
    base: &[(String, String)],
    changes: &[&(String, String)],
) -> RunOpts {
    let mut o = opts.clone();
    o.opts.extend(
        base.iter()
            .chain(changes.iter().copied())
            .map(|(k, v)| format!("{k}={v}")),
    );
    o
}

fn label(changes: &[&(String, String)]) -> String {
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

/// One run of a configuration: measured now on the simulator, or found in `--from`.
async fn obtain(
    args: &StackArgs,
    base: &[(String, String)],
    tries: &[(String, String)],
    changes: &[&(String, String)],
    out: &Path,
    pool: &[RunResult],
) -> Result<RunResult, BenchError> {
    if args.from.is_some() {
        let want: Vec<(String, String)> = base
            .iter()
            .cloned()
            .chain(changes.iter().map(|c| (*c).clone()))
            .collect();
        // A change that is tried but not applied here must not be in effect.
        let not_applied: Vec<&(String, String)> =
            tries.iter().filter(|t| !changes.contains(t)).collect();
        return pool
            .iter()
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
            });
    }
    let setup = RunSetup::from_args(&args.scenario, &config_opts(&args.opts, base, changes))?;
    if setup.endpoint.is_some() {
        return Err(BenchError::usage("bench stack changes the simulator's options; against a real endpoint, record the runs yourself and pass --from DIR"));
    }
    eprintln!("stack: running {}", label(changes));
    let run = run_and_write(&setup, &out.join(label(changes)), false).await?;
    if !run.complete {
        return Err(BenchError::Runtime("the run was interrupted".into()));
    }
    Ok(run)
}

pub async fn stack_command(args: StackArgs) -> Result<u8, BenchError> {
    let base = split_pairs(args.base.as_deref().unwrap_or(""))?;
    let mut tries: Vec<(String, String)> = args
        .tries
        .iter()
        .map(|t| split_pairs(t))
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .flatten()
        .collect();
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
    let out = args
        .opts
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("stack"));
    let pool = args.from.as_deref().map(runs_in).unwrap_or_default();
    let names: Vec<String> = tries.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if args.ladder {
        return ladder(&args, &base, &tries, &names, &out, &pool).await;
    }
    let mut arms = Vec::new();
    for mask in 0..(1usize << tries.len()) {
        let set: Vec<usize> = (0..tries.len()).filter(|i| mask & (1 << i) != 0).collect();
        let changes: Vec<&(String, String)> = set.iter().map(|i| &tries[*i]).collect();
        let run = obtain(&args, &base, &tries, &changes, &out, &pool).await?;
        arms.push(Arm::from_run(set, &run));
    }
    let rows = factorial(&arms, &names);
    let text = render_factorial(&rows);
    crate::out_text!("{text}");
    write_outputs(&args, &rows, &text)?;
    Ok(EXIT_OK)
}

fn render_factorial(rows: &[InteractionRow]) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "bench stack — factorial (ratios to the base; for latency < 1 is faster, for throughput > 1 is more)\n");
    let _ = writeln!(
        o,
        "  {:<28} {:<18} {:>20} {:>9} {:>9} {:>22}  verdict",
        "changes", "metric", "alone", "combined", "expected", "interaction [95 %]"
    );
    for r in rows {
        let alone: Vec<String> = r.alone.iter().map(|a| format!("{a:.3}")).collect();
        let _ = writeln!(
            o,
            "  {:<28} {:<18} {:>20} {:>9.3} {:>9.3} {:>22}  {}",
            r.changes.join(" × "),
            r.metric,
            alone.join(", "),
            r.combined,
            r.expected,
            format!(
                "{:+.3} [{:+.3}, {:+.3}]",
                r.interaction, r.interval_low, r.interval_high
            ),
            match r.verdict {
                Interaction::Synergy => "synergy (1+1>2)",
                Interaction::Neutral => "neutral (≈2)",
                Interaction::Conflict => "CONFLICT (1+1<2)",
            }
        );
        if let Some(c) = &r.contention {
            let _ = writeln!(o, "  {:<28} contends for: {c}", "");
        }
    }
    let _ = writeln!(o, "\n  interaction = ln(combined) − Σ ln(alone), positive = worse than independent; conflict/synergy when |interaction| > max(1.96·SE, ln 1.05).");
    o
}

fn write_outputs(args: &StackArgs, rows: &[InteractionRow], text: &str) -> Result<(), BenchError> {
    if let Some(p) = &args.markdown {
        crate::export::write_atomic(p, format!("```\n{text}```\n").as_bytes())?;
    }
    if let Some(p) = &args.csv {
        let mut w = csv::Writer::from_writer(Vec::new());
        let fail = |e: csv::Error| BenchError::Runtime(e.to_string());
        w.write_record(crate::export::compare::RECORD_COLUMNS)
            .map_err(fail)?;
        let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
        for r in rows {
            let pct = |x: f64| format!("{:.2}", (x.exp() - 1.0) * 100.0);
            let verdict = match r.verdict {
                Interaction::Synergy => "synergy",
                Interaction::Neutral => "neutral",
                Interaction::Conflict => "conflict",
            };
            let change = r.changes.join(" × ");
            w.write_record([
                date.clone(),
                args.owner.clone().unwrap_or_default(),
                crate::export::csv::escape(&args.scenario.display().to_string()),
                crate::export::csv::escape(&change),
                r.metric.clone(),
                "ratio".into(),
                format!("{:.4}", r.expected),
                format!("{:.4}", r.combined),
                pct(r.interaction),
                pct(r.interval_low),
                pct(r.interval_high),
                verdict.into(),
                crate::export::csv::escape(r.contention.as_deref().unwrap_or("")),
                String::new(),
                crate::export::csv::escape(&format!(
                    "{change}: {} combined ×{:.3} vs ×{:.3} if independent ({verdict})",
                    r.metric, r.combined, r.expected
                )),
            ])
            .map_err(fail)?;
        }
        let bytes = w
            .into_inner()
            .map_err(|e| BenchError::Runtime(e.to_string()))?;
        crate::export::write_atomic(p, &bytes)?;
    }
    Ok(())
}

async fn ladder(
    args: &StackArgs,
    base: &[(String, String)],
    tries: &[(String, String)],
    names: &[String],
    out: &Path,
    pool: &[RunResult],
) -> Result<u8, BenchError> {
    let reps = args.repeat.max(1) as usize;
    let setup = RunSetup::from_args(&args.scenario, &config_opts(&args.opts, base, &[]))?;
    let thresholds =
        gate::thresholds(&[setup.scenario.gate.as_slice()]).map_err(BenchError::Usage)?;
    let cfg = GateConfig {
        thresholds,
        alpha: 0.05,
        replicates: 1000,
        seed: setup.scenario.seed,
    };
    let step_runs =
        |applied: usize| -> Vec<&(String, String)> { tries[..applied].iter().collect() };
    let mut prev: Vec<RunResult> = Vec::new();
    for r in 0..reps {
        let o = out.join(format!("rep{r}"));
        prev.push(obtain(args, base, tries, &step_runs(0), &o, pool).await?);
    }
    let first = prev[0].clone();
    let mut o = String::new();
    let _ = writeln!(
        o,
        "bench stack — ladder ({} step{}, each judged against the one before)\n",
        tries.len(),
        if tries.len() == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        o,
        "  {:<4} {:<24} {:>12} {:>12} {:>12} {:>12}  verdict",
        "step", "change", "tpot.p50", "ttft.p50", "throughput", "cum. tpot"
    );
    let mut records = Vec::new();
    let mut code = EXIT_OK;
    for step in 1..=tries.len() {
        let mut runs = Vec::new();
        for r in 0..reps {
            let o = out.join(format!("rep{r}"));
            runs.push(obtain(args, base, tries, &step_runs(step), &o, pool).await?);
        }
        let baseline = Baseline::new(&format!("step {}", step - 1), prev.clone())?;
        let c = compare(&baseline, &runs[0], false, &cfg)?;
        let d = |m: &str| {
            c.rows
                .iter()
                .find(|r| r.metric == m)
                .map_or("—".to_string(), |r| format!("{:+.1}%", r.delta_pct))
        };
        let cum = {
            let q = |r: &RunResult| r.summary.latency("tpot").map(|l| l.p50).unwrap_or(0.0);
            if q(&first) > 0.0 {
                format!("{:+.1}%", (q(&runs[0]) / q(&first) - 1.0) * 100.0)
            } else {
                "—".into()
            }
        };
        let regressed: Vec<&str> = c
            .rows
            .iter()
            .filter(|r| r.verdict == Verdict::Regressed)
            .map(|r| r.metric.as_str())
            .collect();
        let verdict = if regressed.is_empty() {
            "ok".to_string()
        } else {
            format!("REGRESSED: {}", regressed.join(", "))
        };
        let _ = writeln!(
            o,
            "  {:<4} {:<24} {:>12} {:>12} {:>12} {:>12}  {verdict}",
            step,
            names[step - 1],
            d("tpot.p50"),
            d("ttft.p50"),
            d("output_throughput"),
            cum
        );
        records.push(c.clone());
        prev = runs;
        if !regressed.is_empty() {
            code = EXIT_REGRESSION;
            if !args.keep_going {
                let _ = writeln!(
                    o,
                    "\n  stopped: step {step} regressed (--keep-going to continue)"
                );
                break;
            }
        }
    }
    crate::out_text!("{o}");
    if let Some(p) = &args.markdown {
        crate::export::write_atomic(p, format!("```\n{o}```\n").as_bytes())?;
    }
    if let Some(p) = &args.csv {
        for c in &records {
            crate::export::compare::append_record(
                p,
                c,
                args.owner.as_deref().unwrap_or(""),
                "ladder step",
            )?;
        }
    }
    Ok(code)
}
