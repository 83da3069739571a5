//! The plan as `bench validate` prints it: what the scenario sends, how, and when.

use crate::model::scenario::{Arrival, DatasetFormat, LoadMode, Scenario, Workload};
use crate::plan::{Plan, Release};
use std::fmt::Write;

/// One line: the scenario's workload, load and bounds.
pub fn describe(s: &Scenario) -> String {
    let (unit, per_s) = if s.workload.is_conversation() {
        ("sessions", "new sessions/s")
    } else {
        ("requests", "req/s")
    };
    let load = match &s.load.mode {
        LoadMode::Closed { concurrency } => format!("closed loop, concurrency {concurrency}"),
        LoadMode::Open {
            rate_rps,
            arrival,
            burstiness,
            max_concurrency,
        } => {
            let mut d = if *arrival == Arrival::Trace {
                format!("open loop at the trace's timestamps (mean {rate_rps:.2} req/s)")
            } else {
                format!("open loop, {rate_rps} {per_s} {}", arrival.name())
            };
            if *arrival == Arrival::Gamma {
                d.push_str(&format!(" (burstiness {burstiness})"));
            }
            if let Some(m) = max_concurrency {
                d.push_str(&format!(", max {m} in flight"));
            }
            d
        }
    };
    let bound = match (s.load.requests, s.load.duration_s) {
        (Some(r), Some(d)) => format!("{r} {unit} or {d} s, whichever first"),
        (Some(r), None) => format!("{r} {unit}"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => String::new(),
    };
    let kind = match &s.workload {
        Workload::Conversation {
            turns,
            think_time_ms,
            path,
            ..
        } => {
            let think = match think_time_ms {
                Some(t) => format!("think time {} ms", t.describe()),
                None => "no think time".to_string(),
            };
            let source = match (path, &s.dataset) {
                (Some(_), Some(d)) => format!(
                    "ShareGPT human turns, {} conversations in the file",
                    d.entries.len()
                ),
                _ => "synthetic messages".to_string(),
            };
            format!(
                "conversation, {} turns a session, {source}, {think}; each turn carries the replies received",
                turns.describe()
            )
        }
        Workload::Synthetic { .. } => "synthetic".to_string(),
        Workload::SharedPrefix { .. } => "shared prefix".to_string(),
        Workload::LongShortMix { .. } => "long/short mix".to_string(),
        Workload::Trace {
            time_scale,
            block_tokens,
            ..
        } => match &s.trace {
            Some(t) => {
                let n = s.load.requests.unwrap_or(0).saturating_add(s.load.warmup) as usize;
                let sessions = if t.has_sessions() {
                    format!(
                        " ({} rows; sessions' later turns follow their replies)",
                        t.rows.len()
                    )
                } else {
                    String::new()
                };
                let what = if t.has_sessions() { "units" } else { "rows" };
                format!(
                    "trace replay, {} of its {} {what}{sessions}, time × {time_scale}, {block_tokens}-token blocks, ideal prefix hit rate {:.1} %",
                    n.min(t.units.len()),
                    t.units.len(),
                    t.reuse(n).ideal_hit_rate * 100.0
                )
            }
            None => "trace replay".to_string(),
        },
        Workload::Dataset { format, .. } => {
            let name = match format {
                DatasetFormat::Jsonl => "dataset",
                DatasetFormat::Sharegpt => "ShareGPT dataset, single-turn",
            };
            match &s.dataset {
                Some(d) if d.skipped > 0 => format!(
                    "{name}, {} requests in the file, {} conversations skipped (no human turn answered)",
                    d.entries.len(),
                    d.skipped
                ),
                Some(d) => format!("{name}, {} requests in the file", d.entries.len()),
                None => name.to_string(),
            }
        }
    };
    format!(
        "{} ({kind}, {} API): {load}; {bound} + {} warmup; seed {}",
        s.name,
        s.api.name(),
        s.load.warmup,
        s.seed
    )
}

/// The plan as built: how many requests this shard sends, and an open loop's intended times
/// (first, last, mean gap and rate, largest gap).
pub fn render(plan: &Plan) -> String {
    let mut o = String::new();
    let who = match plan.shard {
        Some(s) => format!(
            "shard {}/{} (indices ≡ {} mod {})",
            s.index, s.count, s.index, s.count
        ),
        None => "the whole run".to_string(),
    };
    let sessions = plan.generator.has_sessions();
    let unit = if sessions { "sessions" } else { "requests" };
    let count = match (plan.planned_units(), plan.planned()) {
        (Some(u), Some(n)) if sessions => {
            format!("{u} sessions, {n} turns if none fails")
        }
        (_, Some(n)) => format!("{n} requests"),
        _ => format!("{unit} until the duration runs out"),
    };
    let warmup = match plan.warmup {
        0 => "no warmup".to_string(),
        1 => format!(
            "{} 0 of the plan is warmup (sent, not measured)",
            unit.trim_end_matches('s')
        ),
        n => format!(
            "{unit} 0–{} of the plan are warmup (sent, not measured)",
            n - 1
        ),
    };
    let _ = writeln!(o, "plan for {who}: {count}; {warmup}");
    match &plan.release {
        Release::Closed { workers, .. } if sessions => {
            let _ = writeln!(
                o,
                "  closed loop: {workers} user{}, each starting its next session when its last one ends",
                if *workers == 1 { "" } else { "s" }
            );
        }
        Release::Closed { workers, .. } => {
            let _ = writeln!(
                o,
                "  closed loop: {workers} worker{}, each sending its next request when its last one ends; a request's intended time is when a worker takes it",
                if *workers == 1 { "" } else { "s" }
            );
        }
        Release::Open {
            offsets,
            rate_rps,
            arrival,
            max_concurrency,
        } => {
            if *arrival == Arrival::Trace {
                let _ = write!(o, "  open loop at the trace's timestamps");
            } else if sessions {
                let _ = write!(
                    o,
                    "  open loop, {} at {rate_rps} new sessions/s (later turns follow their replies)",
                    arrival.name()
                );
            } else {
                let _ = write!(o, "  open loop, {} at {rate_rps} req/s", arrival.name());
            }
            if let Some(m) = max_concurrency {
                let _ = write!(o, ", at most {m} in flight (waiting counts as queue time)");
            }
            let _ = writeln!(o);
            if let (Some(first), Some(last)) = (offsets.first(), offsets.last()) {
                let span = (*last - *first).as_secs_f64();
                let gaps = offsets.len().saturating_sub(1);
                let largest = offsets
                    .windows(2)
                    .map(|w| (w[1] - w[0]).as_secs_f64())
                    .fold(0.0, f64::max);
                let _ = write!(
                    o,
                    "  intended {}: {:.3} s … {:.3} s from the start",
                    if sessions { "session starts" } else { "sends" },
                    first.as_secs_f64(),
                    last.as_secs_f64()
                );
                if gaps > 0 && span > 0.0 {
                    let _ = write!(
                        o,
                        "; mean gap {:.1} ms ({:.2} {} as planned), largest {:.1} ms",
                        span / gaps as f64 * 1000.0,
                        gaps as f64 / span,
                        if sessions { "sessions/s" } else { "req/s" },
                        largest * 1000.0
                    );
                }
                let _ = writeln!(o);
            }
        }
    }
    if let Some(d) = plan.duration {
        let _ = writeln!(
            o,
            "  sending stops after {:.3} s whatever is left",
            d.as_secs_f64()
        );
    }
    o
}
