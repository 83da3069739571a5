//! `bench history` at a CI's scale, timed side by side in one run (no assertion: a
//! benchmark, not a test). Writes 1,000 / 2,000 / 10,000 compare JSON outputs of one
//! scenario, runs the built `bench history` on each set, and prints the wall time and the
//! peak RSS of each; first, one 60 MB compare JSON, whose peak RSS is printed against the
//! file's size. Run with `cargo bench --bench history`.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

const METRICS: [(&str, &str, f64); 6] = [
    ("ttft.p50", "ms", 22.0),
    ("ttft.p95", "ms", 40.0),
    ("tpot.p50", "ms", 11.4),
    ("tpot.p95", "ms", 14.0),
    ("e2e.p50", "ms", 375.0),
    ("output_throughput", "tok/s", 284.0),
];

/// One compare's JSON, its values wobbling by a deterministic pattern; `pad` extra notes.
fn compare(i: usize, pad: usize) -> String {
    let wobble = 1.0 + ((i * 7919) % 61) as f64 / 1000.0 - 0.03;
    let rows: Vec<String> = METRICS
        .iter()
        .map(|(m, unit, v)| {
            let c = v * wobble;
            format!(
                r#"{{"metric":"{m}","unit":"{unit}","lower_is_better":{},"baseline":{v},"candidate":{c},"delta_pct":{},"interval_low":-5.0,"interval_high":5.0,"effect":0.0,"se":0.01,"critical":0.03,"floor":0.0953,"threshold":"10%","verdict":"no_change","reason":"no_change","n_baseline":60,"n_candidate":60,"mann_whitney_p":null}}"#,
                *unit == "ms",
                (wobble - 1.0) * 100.0
            )
        })
        .collect();
    let notes: Vec<String> = (0..pad)
        .map(|k| format!("\"note {k}: {}\"", "x".repeat(200)))
        .collect();
    // (`pad` is 0 here but for the large file, which `big` writes piece by piece.)
    let (day, sec) = (i / 86_400, i % 86_400);
    format!(
        r#"{{"schema_version":2,"scenario_name":"smoke","scenario_hash":"h","baseline":"main","baseline_repetitions":12,"candidate_run":"c{i}","baseline_runs":["b{}"],"candidate_runs":["c{i}"],"diffs":[],"change":"none (A/A)","attributable":true,"alpha":0.05,"rows":[{}],"notes":[{}],"regressed":false,"created_at":"2026-01-{:02}T{:02}:{:02}:{:02}Z"}}"#,
        i / 50,
        rows.join(","),
        notes.join(","),
        day + 1,
        sec / 3600,
        (sec / 60) % 60,
        sec % 60
    )
}

/// One compare JSON with `notes` notes of 200 bytes, written piece by piece: this process
/// stays small, so the children's peak RSS (a spawned child starts as a copy of its parent)
/// is `bench history`'s own.
fn big_file(path: &Path, notes: usize) {
    use std::io::Write;
    let one = compare(0, 1);
    let (head, tail) = one.split_once(r#""notes":["#).unwrap();
    let tail = &tail[tail.find("],").unwrap()..];
    let mut w = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    write!(w, r#"{head}"notes":["#).unwrap();
    let x = "x".repeat(200);
    for k in 0..notes {
        let sep = if k == 0 { "" } else { "," };
        write!(w, "{sep}\"note {k}: {x}\"").unwrap();
    }
    write!(w, "{tail}").unwrap();
}

/// Wall time (s) and the peak RSS (MiB) of `bench history` on `path`.
fn history(bench: &str, path: &Path) -> (f64, f64, Option<i32>) {
    let t = Instant::now();
    let status = Command::new(bench)
        .arg("history")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("bench runs");
    let wall = t.elapsed().as_secs_f64();
    // The children's peak, which is this child's: each run is the largest so far or not.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    (wall, ru.ru_maxrss as f64 / 1024.0, status.code())
}

fn main() {
    let bench = env!("CARGO_BIN_EXE_bench");
    let dir = tempfile::tempdir().expect("a temp dir");
    // First, so that the children's peak RSS is this run's own.
    let big = dir.path().join("big.json");
    big_file(&big, 280_000);
    let size = std::fs::metadata(&big).unwrap().len() as f64 / (1 << 20) as f64;
    let (wall, rss, code) = history(bench, &big);
    println!(
        "one compare of {size:.0} MiB: {wall:.2} s, peak RSS {rss:.1} MiB ({:.2}× the file), exit {code:?}",
        rss / size
    );
    println!("compares  wall time  peak RSS (largest so far)  exit");
    for n in [1_000, 2_000, 10_000] {
        let d = dir.path().join(format!("h{n}"));
        std::fs::create_dir_all(&d).unwrap();
        for i in 0..n {
            std::fs::write(d.join(format!("c{i:05}.json")), compare(i, 0)).unwrap();
        }
        let (wall, rss, code) = history(bench, &d);
        println!("{n:>8}  {wall:>8.2} s  {rss:>10.1} MiB  {code:?}");
    }
}
