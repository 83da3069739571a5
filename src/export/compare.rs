//! Renderers for a comparison: the terminal table, the Markdown summary, the optimization
//! record CSV, and a baseline's summary. Pure functions of their inputs (the record writer
//! only adds the atomic file update).

use crate::baseline::Baseline;
use crate::compare::Comparison;
use crate::error::BenchError;
use crate::export::csv::escape;
use crate::export::table::sig4;
use crate::gate::Row;
use crate::stats::verdict::Verdict;
use std::fmt::Write;
use std::path::Path;

fn value(r: &Row, v: f64) -> String {
    match r.unit.as_str() {
        "%" => format!("{v:.2}%"),
        "ms" => format!("{} ms", sig4(v)),
        u => format!("{} {u}", sig4(v)),
    }
}

fn delta(r: &Row) -> String {
    if r.metric == "error_rate" {
        format!("{:+.2} pp", r.delta_pct)
    } else {
        format!("{:+.1}%", r.delta_pct)
    }
}

fn interval(r: &Row) -> String {
    if !r.critical.is_finite() {
        return "—".into();
    }
    let u = if r.metric == "error_rate" { " pp" } else { "%" };
    format!("[{:+.1}{u}, {:+.1}{u}]", r.interval_low, r.interval_high)
}

fn headline(c: &Comparison) -> String {
    let state = if c.regressed { "REGRESSION" } else { "PASS" };
    let attrib = if c.attributable {
        ""
    } else {
        " (UNATTRIBUTABLE: several vars changed)"
    };
    format!(
        "bench compare {} — {state}\n  change: {}{attrib}\n  baseline: {} ({} repetition{}) · candidate: {}",
        c.scenario_name,
        c.change,
        c.baseline,
        c.baseline_repetitions,
        if c.baseline_repetitions == 1 { "" } else { "s" },
        c.candidate_run
    )
}

fn gated(c: &Comparison) -> usize {
    c.rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotGated)
        .count()
}

pub fn table(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}\n", headline(c));
    let _ = writeln!(
        o,
        "  {:<18} {:>14} {:>14} {:>9} {:>22}  verdict",
        "metric", "baseline", "candidate", "delta", "interval"
    );
    for r in &c.rows {
        let _ = writeln!(
            o,
            "  {:<18} {:>14} {:>14} {:>9} {:>22}  {}",
            r.metric,
            value(r, r.baseline),
            value(r, r.candidate),
            delta(r),
            interval(r),
            r.verdict.label()
        );
    }
    if !c.server_effects.is_empty() {
        let _ = writeln!(o, "\n  server: {}", c.server_effects.join(", "));
    }
    let _ = writeln!(o);
    for r in &c.rows {
        let _ = writeln!(o, "  {}", r.reason);
    }
    let _ = writeln!(o, "\n  {}", method(c));
    o
}

fn method(c: &Comparison) -> String {
    format!(
        "effect = ln(candidate/baseline) quantile (type 7), positive = worse (error rate: difference in pp); critical = q(1 − α/2m)·SE (q normal, or Student's t where run-to-run noise from the repetitions is in the SE), α = {}, m = {} gated metrics; floor = the threshold; regressed when effect > max(critical, floor). Interval = effect ± critical.",
        c.alpha,
        gated(c)
    )
}

pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let mark = if c.regressed {
        "❌ regression"
    } else {
        "✅ pass"
    };
    let _ = writeln!(o, "### bench compare `{}`: {mark}\n", c.scenario_name);
    let _ = writeln!(
        o,
        "- change: **{}**{}",
        c.change,
        if c.attributable {
            ""
        } else {
            " (unattributable: several vars changed)"
        }
    );
    let _ = writeln!(
        o,
        "- baseline: `{}` ({} repetitions), candidate: `{}`",
        c.baseline, c.baseline_repetitions, c.candidate_run
    );
    if !c.server_effects.is_empty() {
        let _ = writeln!(o, "- server: {}", c.server_effects.join(", "));
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "| metric | baseline | candidate | delta | interval | verdict |"
    );
    let _ = writeln!(o, "|---|---:|---:|---:|---:|---|");
    for r in &c.rows {
        let v = match r.verdict {
            Verdict::Regressed => "**FAIL**".to_string(),
            other => other.label().to_string(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {v} |",
            r.metric,
            value(r, r.baseline),
            value(r, r.candidate),
            delta(r),
            interval(r)
        );
    }
    let _ = writeln!(o, "\n<details><summary>reasons</summary>\n");
    for r in &c.rows {
        let _ = writeln!(o, "- {}", r.reason);
    }
    let _ = writeln!(o, "\n{}\n</details>", method(c));
    o
}

pub const RECORD_COLUMNS: &[&str] = &[
    "date",
    "owner",
    "scenario",
    "change",
    "metric",
    "unit",
    "baseline",
    "candidate",
    "delta_pct",
    "interval_low",
    "interval_high",
    "verdict",
    "side_effects",
    "note",
    "summary",
];

fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Regressed => "regressed",
        Verdict::Improved => "improved",
        Verdict::NoChange => "no_change",
        Verdict::Inconclusive => "inconclusive",
        Verdict::NotGated => "not_gated",
    }
}

/// "prefix_cache: off → on: ttft.p95 2.10 s → 1.20 s (−42.9 %)", as DOMAIN.md's records read.
fn sentence(change: &str, r: &Row) -> String {
    let v = |x: f64| match r.unit.as_str() {
        "ms" if x >= 1000.0 => format!("{:.2} s", x / 1000.0),
        "ms" => format!("{} ms", sig4(x)),
        "%" => format!("{x:.2} %"),
        u => format!("{} {u}", sig4(x)),
    };
    let d = if r.metric == "error_rate" {
        format!("{:+.2} pp", r.delta_pct)
    } else {
        format!("{:+.1} %", r.delta_pct)
    };
    format!(
        "{change}: {} {} → {} ({})",
        r.metric,
        v(r.baseline),
        v(r.candidate),
        d.replace('-', "−")
    )
}

/// Rows of the optimization record, one per metric.
pub fn record_rows(c: &Comparison, owner: &str, note: &str) -> Vec<Vec<String>> {
    let date = c.created_at.format("%Y-%m-%d").to_string();
    let change = if c.attributable {
        c.change.clone()
    } else {
        format!("unattributable: {}", c.change)
    };
    c.rows
        .iter()
        .map(|r| {
            let side: Vec<String> = c
                .rows
                .iter()
                .filter(|o| o.metric != r.metric && o.verdict == Verdict::Regressed)
                .map(|o| format!("{} {}", o.metric, delta(o)))
                .chain(c.server_effects.iter().cloned())
                .collect();
            vec![
                date.clone(),
                escape(owner),
                escape(&c.scenario_name),
                escape(&change),
                r.metric.clone(),
                r.unit.clone(),
                format!("{:.3}", r.baseline),
                format!("{:.3}", r.candidate),
                format!("{:.2}", r.delta_pct),
                if r.critical.is_finite() {
                    format!("{:.2}", r.interval_low)
                } else {
                    String::new()
                },
                if r.critical.is_finite() {
                    format!("{:.2}", r.interval_high)
                } else {
                    String::new()
                },
                verdict_name(r.verdict).into(),
                escape(&side.join("; ")),
                escape(note),
                escape(&sentence(&change, r)),
            ]
        })
        .collect()
}

/// Appends record rows to `path` (header first if the file is new), rewriting it atomically.
pub fn append_record(
    path: &Path,
    c: &Comparison,
    owner: &str,
    note: &str,
) -> Result<(), BenchError> {
    let mut existing = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => {
            return Err(BenchError::Write {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let fail = |e: csv::Error| BenchError::Runtime(format!("cannot write {}: {e}", path.display()));
    if !existing.is_empty() {
        let header = existing.split(|b| *b == b'\n').next().unwrap_or_default();
        if String::from_utf8_lossy(header).trim_end() != RECORD_COLUMNS.join(",") {
            return Err(BenchError::usage(format!(
                "{} has other columns than an optimization record; give another --record file",
                path.display()
            )));
        }
        if !existing.ends_with(b"\n") {
            existing.push(b'\n');
        }
    }
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(existing.clone());
    if existing.is_empty() {
        w.write_record(RECORD_COLUMNS).map_err(fail)?;
    }
    for row in record_rows(c, owner, note) {
        w.write_record(&row).map_err(fail)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| BenchError::Runtime(e.to_string()))?;
    crate::export::write_atomic(path, &bytes)
}

pub fn baseline_summary(b: &Baseline) -> String {
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
        let l = |n: &str| r.summary.latency(n).cloned();
        let (t, p) = (l("ttft"), l("tpot"));
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
