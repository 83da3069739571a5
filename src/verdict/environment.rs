//! When baseline and candidate did not run under the same conditions, say so: another model
//! asked for with no var naming the change, another CPU, another engine version, a machine
//! much busier (load average per CPU, CPU time stolen by the hypervisor, CPU pressure) or
//! slower (a fixed calibration workload) during one arm than the other, or a server that had
//! served far more before the candidate's runs than before the baseline's (state that
//! accumulates). These are warnings beside the verdict — the statistics already widen with the
//! runs' spread — so a reader knows what to suspect before blaming the change.

use crate::model::environment::RunEnvironment;
use crate::model::result::RunResult;
use crate::model::values::Values;

/// The environments recorded with `runs` (older runs have none).
fn envs(runs: &[RunResult]) -> Vec<&RunEnvironment> {
    runs.iter().filter_map(|r| r.environment.as_ref()).collect()
}

/// Mean 1-minute load average per CPU just before the runs.
fn load_per_cpu(envs: &[&RunEnvironment]) -> Option<f64> {
    envs.iter()
        .filter_map(|e| Some(e.load_before?[0] / e.cpus.max(1) as f64))
        .collect::<Values>()
        .mean()
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

/// One reading of contention per run: CPU pressure (PSI "some", % of the run's wall time a
/// runnable task waited for a CPU) or the machine's CPU busy share (%).
fn per_run(runs: &[RunResult], f: impl Fn(&RunEnvironment) -> Option<f64>) -> Vec<f64> {
    envs(runs).into_iter().filter_map(f).collect()
}

/// How the arms' readings differ: (baseline mean, candidate mean, three standard errors of
/// the difference from the runs' spread), or `None` without readings in both.
fn gap(b: &[f64], c: &[f64]) -> Option<(f64, f64, f64)> {
    if b.is_empty() || c.is_empty() {
        return None;
    }
    let (b, c) = (
        Values::new(b.iter().copied()),
        Values::new(c.iter().copied()),
    );
    let (mb, mc) = (b.mean()?, c.mean()?);
    let df = (b.len() + c.len()).saturating_sub(2);
    let sd = if df > 0 {
        ((b.sum_sq() + c.sum_sq()) / df as f64).sqrt()
    } else {
        0.0
    };
    let se = sd * (1.0 / b.len() as f64 + 1.0 / c.len() as f64).sqrt();
    Some((mb, mc, 3.0 * se))
}

/// Contention is named when an arm's CPU pressure is at least twice the other's and higher
/// by a point of wall time, or its CPU busy share higher by [`BUSY_POINTS`] — either beyond
/// three standard errors of the runs' spread. On a two-core machine serving llama-server, a
/// neighbour's busy loop took the busy share from ≈ 51 % to ≈ 100 % and the pressure from
/// ≈ 0.4 % to ≈ 2.2 %, while runs of one arm agreed within a few tenths.
const BUSY_POINTS: f64 = 20.0;

/// When the arms ran under CPU contention that differs beyond their runs' spread: what to
/// say beside the verdicts it could explain.
pub fn contention(base: &[RunResult], cand: &[RunResult]) -> Option<String> {
    let pressure = |e: &RunEnvironment| e.cpu_pressure_pct;
    let busy = |e: &RunEnvironment| e.busy_pct;
    let p = gap(&per_run(base, pressure), &per_run(cand, pressure));
    let u = gap(&per_run(base, busy), &per_run(cand, busy));
    let pressured = p.is_some_and(|(b, c, noise)| {
        let (hi, lo) = (b.max(c), b.min(c));
        hi - lo > noise.max(1.0) && hi >= 2.0 * lo
    });
    let busier = u.is_some_and(|(b, c, noise)| (c - b).abs() > noise.max(BUSY_POINTS));
    if !pressured && !busier {
        return None;
    }
    // Which arm: by the reading that crossed, pressure first.
    let (b, c, _) = if pressured { p? } else { u? };
    let (hot, calm) = if c > b {
        ("candidate", "baseline")
    } else {
        ("baseline", "candidate")
    };
    let figures = |g: Option<(f64, f64, f64)>, what: &str| {
        g.map(|(b, c, _)| {
            let (h, l) = if hot == "candidate" { (c, b) } else { (b, c) };
            format!("{what} {h:.1} % against {l:.1} %")
        })
    };
    let said: Vec<String> = [
        figures(p, "a runnable task waited for a CPU (Linux PSI)"),
        figures(u, "the CPUs were busy"),
    ]
    .into_iter()
    .flatten()
    .collect();
    Some(format!(
        "environment: the {hot}'s runs ran under more CPU contention than the {calm}'s — {} of the time, beyond the runs' spread: a latency or throughput verdict may be the machine's, not the change; --interleave puts the same contention on both arms",
        said.join("; ")
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
    let (client, fix) = match &run.imported {
        Some(i) => (
            format!("{}'s client", i.tool),
            "its own TTFT starts at its actual send and hides this; give it more CPU, fewer workers or a lower load",
        ),
        None => (
            "the client".to_string(),
            "lower the rate or concurrency, give bench more CPU, or run it on another machine",
        ),
    };
    Some(format!(
        "run {} is invalid: {client} sent its requests late — median send lag {:.1} ms, over 10 % of the median TTFT ({:.1} ms) and over 2 ms{wait} — so the client, not the server, set the pace, and the lag is inside every latency; {fix}",
        run.run_id, lag.p50, ttft.p50
    ))
}

/// A host this much slower on the calibration workload before one arm than the other is named.
const SLOWER_HOST: f64 = 0.15;

/// When the host computed the fixed calibration workload ([`RunEnvironment::calibration_us`])
/// at least [`SLOWER_HOST`] slower before one arm's runs than before the other's, beyond three
/// standard errors of the runs' spread: what to say beside the verdicts it could explain.
pub fn host_speed(base: &[RunResult], cand: &[RunResult]) -> Option<String> {
    let cal = |e: &RunEnvironment| e.calibration_us.filter(|v| *v > 0.0);
    let (b, c, noise) = gap(&per_run(base, cal), &per_run(cand, cal))?;
    let (hi, lo) = (b.max(c), b.min(c));
    if hi / lo - 1.0 < SLOWER_HOST || hi - lo <= noise {
        return None;
    }
    let slower = if c > b { "candidate" } else { "baseline" };
    Some(format!(
        "environment: the host ran bench's fixed calibration workload {:.0} % slower before the {slower}'s runs ({hi:.0} µs against {lo:.0} µs, mean of the runs): a slower host — another machine, a CPU throttled or shared — slows the server as a change would; a latency or throughput verdict may be the host's; record both arms on one host at one time (--interleave)",
        (hi / lo - 1.0) * 100.0
    ))
}

/// How many times more a server must have served before the candidate's runs than the
/// baseline's yardstick for it to be named.
const SERVED_MORE: f64 = 3.0;

/// When the candidate's runs started on a server that had processed far more tokens since it
/// started ([`crate::model::server::ServerMetrics::served_tokens_before`]) than the baseline's
/// had: at least [`SERVED_MORE`] times the larger of what it had served before the baseline and
/// what the baseline's own runs served (so a baseline on a fresh server is measured against its
/// own traffic). A long-lived server accumulates state — caches, fragmentation, memory — that
/// a stored baseline never saw, and no statistic tells that from the change. Not said when the
/// counters went down (the server restarted) or the arms were interleaved (the same history).
pub fn server_history(base: &[RunResult], cand: &[RunResult]) -> Option<String> {
    let before = |r: &RunResult| r.server_metrics.as_ref()?.served_tokens_before;
    let own = |r: &RunResult| {
        let m = r.server_metrics.as_ref()?;
        Some(m.prompt_tokens.unwrap_or(0.0) + m.generation_tokens.unwrap_or(0.0))
    };
    let first = |runs: &[RunResult]| runs.iter().filter_map(before).reduce(f64::min);
    let (b, c) = (first(base)?, first(cand)?);
    let served: f64 = base.iter().filter_map(own).sum();
    let yardstick = b.max(served).max(1.0);
    if c < b || c < SERVED_MORE * yardstick {
        return None;
    }
    Some(format!(
        "server: before the candidate's runs the server had processed {} tokens since it started, {:.0}× what it had before the baseline's runs or served during them ({}): state that accumulates in a long-lived server (caches, fragmentation, memory) may be the difference — restart it between recordings, or --interleave",
        crate::model::readable::count(c as u64),
        c / yardstick,
        crate::model::readable::count(yardstick as u64)
    ))
}
