//! Reads what explains run-to-run noise from the machine: its CPUs, the load average before
//! and after the run, and — from two readings each — how busy the CPUs were and how much time
//! the hypervisor stole (`/proc/stat`), how long runnable tasks waited for a CPU (pressure
//! stall information, `/proc/pressure/cpu`), and how long bench's own threads waited on a run
//! queue (`/proc/self/task/*/schedstat`). Linux only; elsewhere the fields are left empty
//! rather than guessed.

use crate::model::baseline::host;
use crate::model::environment::RunEnvironment;

/// CPU time counters of the `cpu` line of /proc/stat: (busy, steal, total), with the
/// pressure and run-queue counters read at the same moment.
#[derive(Debug, Clone, Copy)]
pub struct CpuTimes {
    busy: u64,
    steal: u64,
    total: u64,
    at: std::time::Instant,
    /// PSI "some" total, µs.
    pressure_us: Option<u64>,
    /// bench's threads' run-queue wait, ns.
    client_wait_ns: Option<u64>,
}

/// The `total=` of the `some` line of `/proc/pressure/cpu` (µs).
fn cpu_pressure_us() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/pressure/cpu").ok()?;
    parse_pressure(&text)
}

fn parse_pressure(text: &str) -> Option<u64> {
    text.lines()
        .find(|l| l.starts_with("some "))?
        .split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// The run-queue wait of every thread of this process (ns): the second field of each
/// `/proc/self/task/TID/schedstat`.
fn client_wait_ns() -> Option<u64> {
    let mut total = 0u64;
    for e in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        if let Ok(text) = std::fs::read_to_string(e.path().join("schedstat")) {
            total += text
                .split_whitespace()
                .nth(1)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    Some(total)
}

/// The counters now, when /proc/stat is readable.
fn cpu_times() -> Option<CpuTimes> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let mut t = parse_cpu_line(text.lines().next()?)?;
    t.pressure_us = cpu_pressure_us();
    t.client_wait_ns = client_wait_ns();
    Some(t)
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
        at: std::time::Instant::now(),
        pressure_us: None,
        client_wait_ns: None,
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
        calibration_us: Some(calibrate()),
        engine_version,
        ..Default::default()
    };
    (env, cpu_times())
}

/// The host's speed: the fastest of five SHA-256 digests of the same 1 MiB (µs). A fixed,
/// deterministic workload of a few milliseconds; the fastest is the least disturbed by
/// whatever else the machine was doing in that instant, so it measures the CPU, not the load.
pub fn calibrate() -> f64 {
    use sha2::Digest;
    let data: Vec<u8> = (0..1u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    (0..5)
        .map(|_| {
            let t = std::time::Instant::now();
            let digest = sha2::Sha256::digest(std::hint::black_box(&data));
            std::hint::black_box(digest);
            t.elapsed().as_secs_f64() * 1e6
        })
        .fold(f64::INFINITY, f64::min)
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
        let wall_us = b.at.saturating_duration_since(a.at).as_micros() as f64;
        if wall_us > 0.0 {
            let share = |d: u64| (d as f64 / wall_us * 100.0 * 100.0).round() / 100.0;
            env.cpu_pressure_pct = a
                .pressure_us
                .zip(b.pressure_us)
                .map(|(x, y)| share(y.saturating_sub(x)));
            env.client_wait_pct = a
                .client_wait_ns
                .zip(b.client_wait_ns)
                .map(|(x, y)| share(y.saturating_sub(x) / 1000));
        }
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pressure_total_is_read_from_the_some_line() {
        let text = "some avg10=1.59 avg60=4.23 avg300=4.20 total=1211249165\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_pressure(text), Some(1_211_249_165));
        assert_eq!(parse_pressure("full total=3\n"), None);
    }

    #[test]
    fn the_cpu_line_splits_into_busy_steal_and_total() {
        let t = parse_cpu_line("cpu  100 5 50 800 20 3 2 10 0 0").unwrap();
        assert_eq!((t.busy, t.steal, t.total), (160, 10, 990));
        assert!(parse_cpu_line("intr 1 2 3").is_none());
    }
}
