//! A stored baseline's summary (`bench baseline --show`, and after recording one): one line
//! per repetition, so run-to-run spread is visible at a glance.

use super::sig4;
use crate::model::baseline::Baseline;
use crate::model::metric::Latency;
use std::fmt::Write;

/// `bench baseline --list`: one line per stored baseline (`scenario/name: …`), or why it
/// cannot be read; `dir` is the store, named when it holds none.
pub fn listing(
    dir: &std::path::Path,
    all: &[(String, String, Result<Baseline, String>)],
) -> String {
    if all.is_empty() {
        return format!("no baselines under {}\n", dir.display());
    }
    let mut o = String::new();
    for (scenario, name, b) in all {
        let line = match b {
            Ok(b) => format!(
                "{scenario}/{name}: {} repetitions, created {} on {}, {} vars",
                b.repetitions.len(),
                b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
                b.environment.host,
                b.vars.len()
            ),
            Err(e) => format!("{scenario}/{name}: unreadable — {e}"),
        };
        o.push_str(&line);
        o.push('\n');
    }
    o
}

pub fn summary(b: &Baseline) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "baseline {} of {} — {} repetitions, created {} on {} (bench {})",
        b.name,
        b.scenario_name,
        b.repetitions.len(),
        b.environment.created_at.format("%Y-%m-%d %H:%M UTC"),
        b.environment.host,
        b.environment.tool_version
    );
    let _ = writeln!(o, "  scenario hash {}", b.scenario_hash);
    let _ = writeln!(
        o,
        "  {:<5} {:>6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>14}",
        "rep",
        "sent",
        "ok",
        "ttft p50 ms",
        "ttft p95 ms",
        "tpot p50 ms",
        "tpot p95 ms",
        "output tok/s"
    );
    for (i, r) in b.repetitions.iter().enumerate() {
        let l = |m: Latency| r.summary.latency(m).cloned();
        let (t, p) = (l(Latency::Ttft), l(Latency::Tpot));
        let _ = writeln!(
            o,
            "  {:<5} {:>6} {:>6} {:>12} {:>12} {:>12} {:>12} {:>14.1}",
            i + 1,
            r.summary.counts.sent,
            r.summary.counts.ok,
            t.as_ref().map_or("—".into(), |x| sig4(x.p50)),
            t.as_ref().map_or("—".into(), |x| sig4(x.p95)),
            p.as_ref().map_or("—".into(), |x| sig4(x.p50)),
            p.as_ref().map_or("—".into(), |x| sig4(x.p95)),
            r.summary.throughput.output_tps
        );
    }
    o
}
