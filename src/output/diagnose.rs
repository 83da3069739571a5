//! A diagnosis as text: each finding with its evidence, the techniques to try cheapest first,
//! and the conflicts with what the run already enables.

use crate::model::diagnosis::{Finding, Limits};
use crate::model::result::RunResult;
use std::fmt::Write;

/// The findings as text.
pub fn render(run: &RunResult, findings: &[Finding]) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "diagnosis of {} ({}), in the recommended order: stability → TTFT → TPOT → tail → capacity",
        run.scenario_name, run.run_id
    );
    if !run.complete {
        let why = run.failure.as_deref().unwrap_or("interrupted");
        let _ = writeln!(
            o,
            "  note: the run is incomplete ({why}): this is what its requests measured, and a symptom of the part not run cannot show"
        );
    }
    if findings.is_empty() {
        let _ = writeln!(o, "  no symptom above its threshold (TTFT p95 ≤ SLO or {} ms, TPOT p95 ≤ SLO or {} ms, p99/p50 ≤ {}, errors ≤ {} %)", Limits::TTFT_P95_MS, Limits::TPOT_P95_MS, Limits::TAIL_RATIO, Limits::ERROR_RATE * 100.0);
    }
    for (i, f) in findings.iter().enumerate() {
        let _ = writeln!(o, "\n{}. {}", i + 1, f.title);
        for e in &f.evidence {
            let _ = writeln!(o, "   evidence: {e}");
        }
        let _ = writeln!(o, "   try, cheapest first: {}", f.techniques.join(" → "));
        for c in &f.conflicts {
            let _ = writeln!(o, "   conflict: {c}");
        }
    }
    o
}
