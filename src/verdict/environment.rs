//! When baseline and candidate did not run under the same conditions, say so: another model
//! asked for with no var naming the change, another CPU, another engine version, or a machine
//! much busier (load average per CPU, CPU time stolen by
//! the hypervisor) during one arm than the other. These are warnings beside the verdict — the
//! statistics already widen with the runs' spread — so a reader knows what noise to suspect.

use crate::model::environment::RunEnvironment;
use crate::model::result::RunResult;

/// The environments recorded with `runs` (older runs have none).
fn envs(runs: &[RunResult]) -> Vec<&RunEnvironment> {
    runs.iter().filter_map(|r| r.environment.as_ref()).collect()
}

/// Mean 1-minute load average per CPU just before the runs.
fn load_per_cpu(envs: &[&RunEnvironment]) -> Option<f64> {
    let v: Vec<f64> = envs
        .iter()
        .filter_map(|e| Some(e.load_before?[0] / e.cpus.max(1) as f64))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn max_steal(envs: &[&RunEnvironment]) -> Option<f64> {
    envs.iter().filter_map(|e| e.steal_pct).reduce(f64::max)
}

/// The model the arms' runs asked for, when it differs between them (both known); `named`:
/// a var names the change under test.
fn models(base: &[RunResult], cand: &[RunResult], named: bool) -> Option<String> {
    let (b, c) = (&base.first()?.model, &cand.first()?.model);
    (!b.is_empty() && !c.is_empty() && b != c).then(|| {
        if named {
            format!("model: `{b}` → `{c}`, with the change the vars name")
        } else {
            format!(
                "model: the baseline's runs asked for `{b}`, the candidate's for `{c}` — a different model is a change of its own, and no var says so: name it (--var model={c}, or the quantization it stands for) so that the comparison says what changed"
            )
        }
    })
}

/// Warnings about how the arms' conditions differ; empty when they match. `named`: a var
/// names the change under test.
pub fn differences(base: &[RunResult], cand: &[RunResult], named: bool) -> Vec<String> {
    let mut out: Vec<String> = models(base, cand, named).into_iter().collect();
    out.extend(machine(base, cand));
    out
}

/// The machine and engine: CPU, engine version, load, steal.
fn machine(base: &[RunResult], cand: &[RunResult]) -> Vec<String> {
    let (b, c) = (envs(base), envs(cand));
    let (Some(b0), Some(c0)) = (b.first(), c.first()) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let cpu = |e: &RunEnvironment| {
        format!(
            "{} ({} CPUs)",
            e.cpu_model.as_deref().unwrap_or("unknown CPU"),
            e.cpus
        )
    };
    if (b0.cpu_model.as_ref(), b0.cpus) != (c0.cpu_model.as_ref(), c0.cpus) {
        out.push(format!(
            "environment: the baseline ran on {}, the candidate on {}: a different machine is a change of its own",
            cpu(b0),
            cpu(c0)
        ));
    }
    if b0.engine_version != c0.engine_version {
        out.push(format!(
            "environment: the engine reports version {} in the baseline and {} in the candidate",
            b0.engine_version.as_deref().unwrap_or("(none)"),
            c0.engine_version.as_deref().unwrap_or("(none)")
        ));
    }
    if let (Some(lb), Some(lc)) = (load_per_cpu(&b), load_per_cpu(&c)) {
        if (lb - lc).abs() > 0.5 {
            let (busier, quieter) = if lc > lb {
                ("candidate", "baseline")
            } else {
                ("baseline", "candidate")
            };
            out.push(format!(
                "environment: the machine was busier during the {busier} (load average {:.2} per CPU before its runs, {:.2} before the {quieter}'s): a busy neighbour makes run-level states likelier; --interleave puts the same load on both arms",
                lb.max(lc),
                lb.min(lc)
            ));
        }
    }
    for (arm, e) in [("baseline", &b), ("candidate", &c)] {
        if let Some(s) = max_steal(e).filter(|s| *s > 5.0) {
            out.push(format!(
                "environment: the hypervisor stole up to {s:.0} % of the CPU during the {arm}'s runs"
            ));
        }
    }
    out
}

/// The CPU pressure of each run of an arm (PSI "some", % of its wall time).
fn pressures(runs: &[RunResult]) -> Vec<f64> {
    envs(runs)
        .iter()
        .filter_map(|e| e.cpu_pressure_pct)
        .collect()
}

/// Percentage points of wall time by which the arms' CPU pressure must differ, beyond three
/// standard errors of their runs' spread, to be named: a few points move from run to run on a
/// machine that also hosts the engine, and a tenth of the time with a task waiting for a CPU
/// is where a server's steps and the client's reads start to queue behind other work.
pub const PRESSURE_POINTS: f64 = 10.0;

/// When the arms ran under CPU contention that differs beyond their runs' spread: what to
/// say beside the verdicts it could explain.
pub fn contention(base: &[RunResult], cand: &[RunResult]) -> Option<String> {
    let (b, c) = (pressures(base), pressures(cand));
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (mb, mc) = (mean(&b), mean(&c));
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    let df = (b.len() + c.len()).saturating_sub(2);
    let sd = if df > 0 {
        ((ss(&b, mb) + ss(&c, mc)) / df as f64).sqrt()
    } else {
        0.0
    };
    let se = sd * (1.0 / b.len() as f64 + 1.0 / c.len() as f64).sqrt();
    let diff = mc - mb;
    if diff.abs() <= PRESSURE_POINTS.max(3.0 * se) {
        return None;
    }
    let (busier, quieter, hi, lo) = if diff > 0.0 {
        ("candidate", "baseline", mc, mb)
    } else {
        ("baseline", "candidate", mb, mc)
    };
    Some(format!(
        "environment: the {busier}'s runs ran under more CPU contention — a runnable task waited for a CPU {hi:.0} % of the time (Linux PSI), against {lo:.0} % during the {quieter}'s, beyond the runs' spread (±{:.0} points): a latency verdict may be the machine's, not the change; --interleave puts the same contention on both arms",
        3.0 * se
    ))
}

/// Why a run cannot be judged because the client, not the server, set its pace: its median
/// send lag (how late requests left against their intended send time, queueing for a
/// concurrency slot excluded) over 10 % of its median TTFT and over 2 ms. Latencies are timed
/// from the intended send, so that lag is inside every one of them: past this the run
/// measures bench's delay as much as the server's.
pub fn client_bound(run: &RunResult) -> Option<String> {
    use crate::model::metric::Latency;
    let lag = run.summary.latency(Latency::SendLag)?;
    let ttft = run.summary.latency(Latency::Ttft)?;
    if !lag.has_values() || !ttft.has_values() {
        return None;
    }
    let limit = (0.1 * ttft.p50).max(2.0);
    if lag.p50 <= limit {
        return None;
    }
    let wait = run
        .environment
        .as_ref()
        .and_then(|e| e.client_wait_pct)
        .map_or(String::new(), |w| {
            format!("; its threads waited for a CPU {w:.0} % of the run")
        });
    Some(format!(
        "run {} is invalid: the client sent its requests late — median send lag {:.1} ms, over 10 % of the median TTFT ({:.1} ms) and over 2 ms{wait} — so the client, not the server, set the pace, and the lag is inside every latency; lower the rate or concurrency, give bench more CPU, or run it on another machine",
        run.run_id, lag.p50, ttft.p50
    ))
}
