//! Reads what explains run-to-run noise from the machine: its CPUs, the load average before
//! and after the run, and — from two readings of `/proc/stat` — how busy the CPUs were and
//! how much time the hypervisor stole during the run. Linux only; elsewhere the fields are
//! left empty rather than guessed.

use crate::model::baseline::host;
use crate::model::environment::RunEnvironment;

/// CPU time counters of the `cpu` line of /proc/stat: (busy, steal, total).
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    busy: u64,
    steal: u64,
    total: u64,
}

/// The counters now, when /proc/stat is readable.
pub fn cpu_times() -> Option<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse_cpu_line(text.lines().next()?)
}

fn parse_cpu_line(line: &str) -> Option<CpuTimes> {
    let f: Vec<u64> = line
        .strip_prefix("cpu ")?
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let get = |i: usize| f.get(i).copied().unwrap_or(0);
    let total: u64 = (0..8).map(get).sum();
    let idle = get(3) + get(4);
    Some(CpuTimes {
        busy: total.saturating_sub(idle + get(7)),
        steal: get(7),
        total,
    })
}

fn load_average() -> Option<[f64; 3]> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let v: Vec<f64> = text
        .split_whitespace()
        .take(3)
        .filter_map(|x| x.parse().ok())
        .collect();
    Some([*v.first()?, *v.get(1)?, *v.get(2)?])
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// What is known before the run starts.
pub fn before(engine_version: Option<String>) -> (RunEnvironment, Option<CpuTimes>) {
    let env = RunEnvironment {
        host: host(),
        cpu_model: cpu_model(),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_before: load_average(),
        engine_version,
        ..Default::default()
    };
    (env, cpu_times())
}

/// Completes `env` when the run is over.
pub fn after(mut env: RunEnvironment, start: Option<CpuTimes>) -> RunEnvironment {
    env.load_after = load_average();
    if let (Some(a), Some(b)) = (start, cpu_times()) {
        let total = b.total.saturating_sub(a.total);
        if total > 0 {
            let pct = |x: u64| x as f64 / total as f64 * 100.0;
            env.busy_pct = Some(pct(b.busy.saturating_sub(a.busy)));
            env.steal_pct = Some(pct(b.steal.saturating_sub(a.steal)));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_splits_into_busy_steal_and_total() {
        let t = parse_cpu_line("cpu  100 5 50 800 20 3 2 10 0 0").unwrap();
        assert_eq!((t.busy, t.steal, t.total), (160, 10, 990));
        assert!(parse_cpu_line("intr 1 2 3").is_none());
    }
}
