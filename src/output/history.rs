//! A scenario's history as the terminal shows it: one line per compare with each gated
//! metric's candidate value and verdict, the baseline re-recordings marked, then each
//! metric's change point and whether it was flagged. Pure: `History → String`.

use super::export::{Exporter, Format};
use super::sig4;
use crate::error::BenchError;
use crate::model::history::{ChangeKind, History, Series};
use std::fmt::Write;

/// One character for a verdict: `=` no change, `+` improved, `R` regressed, `A` a regression
/// accepted by a waiver, `?` undecided.
pub fn mark(verdict: &str) -> &'static str {
    match verdict {
        "no_change" => "=",
        "improved" => "+",
        "regressed" => "R",
        "accepted" => "A",
        _ => "?",
    }
}

/// The change point of a series in words.
pub fn change_text(h: &History, s: &Series) -> String {
    let Some(c) = &s.change else {
        return "too few compares to test (6 or more)".into();
    };
    let at = h
        .entries
        .get(c.onset)
        .map_or(String::new(), |e| format!(" ({})", e.label));
    let what = match c.kind {
        ChangeKind::Shift => format!(
            "shift at #{}{at}: {} → {} {} ({:+.1} %)",
            c.onset + 1,
            sig4(c.before),
            sig4(c.after),
            s.unit,
            c.change_pct
        ),
        ChangeKind::Drift => format!(
            "drift from #{}{at}: {} → {} {} ({:+.1} %, {:+.1} % a compare)",
            c.onset + 1,
            sig4(c.before),
            sig4(c.after),
            s.unit,
            c.change_pct,
            c.per_step_pct
        ),
    };
    let verdict = match (s.flagged, s.worse) {
        (true, true) => "FLAGGED, worse",
        (true, false) => "flagged, better",
        (false, _) => "not flagged",
    };
    format!("{what}, p = {:.3} — {verdict}", c.p_value)
}

pub fn render(h: &History) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "bench history {} — {} compares, {} gated metrics",
        h.scenario,
        h.entries.len(),
        h.series.len()
    );
    let label_w = h
        .entries
        .iter()
        .map(|e| e.label.chars().count())
        .max()
        .unwrap_or(4)
        .max(5);
    let cols: Vec<usize> = h.series.iter().map(|s| s.metric.len().max(10)).collect();
    let _ = write!(o, "  {:>3}  {:<label_w$}  ", "#", "when");
    for (s, w) in h.series.iter().zip(&cols) {
        let _ = write!(o, " {:>w$}", s.metric);
    }
    o.push('\n');
    for (i, e) in h.entries.iter().enumerate() {
        let rebase = if h.rebaselined[i] { "B" } else { " " };
        let _ = write!(o, "  {:>3}  {:<label_w$} {rebase}", i + 1, e.label);
        for (s, w) in h.series.iter().zip(&cols) {
            let cell = s.values[i].as_ref().map_or("—".to_string(), |v| {
                format!("{} {}", sig4(v.candidate), mark(&v.verdict))
            });
            let _ = write!(o, " {cell:>w$}");
        }
        o.push('\n');
    }
    let units: Vec<String> = h
        .series
        .iter()
        .map(|s| format!("{} in {}", s.metric, s.unit))
        .collect();
    let _ = writeln!(
        o,
        "  values: the candidate's at each compare ({}); = no change, + improved, R regressed, A accepted trade-off, ? undecided; B: judged against a newly recorded baseline",
        units.join(", ")
    );
    let _ = writeln!(
        o,
        "change points ({}; α = {} shared over {} metrics, changes under {} % not flagged):",
        h.method,
        crate::model::readable::number(h.alpha),
        h.series.len(),
        h.floor_pct
    );
    let w = h.series.iter().map(|s| s.metric.len()).max().unwrap_or(8);
    for s in &h.series {
        let _ = writeln!(o, "  {:<w$}  {}", s.metric, change_text(h, s));
    }
    let worse = h.worse();
    if worse.is_empty() {
        let _ = writeln!(o, "no metric drifted or shifted the bad way");
    } else {
        let names: Vec<&str> = worse.iter().map(|s| s.metric.as_str()).collect();
        let _ = writeln!(o, "DRIFT: {} moved the bad way", names.join(", "));
    }
    o
}

/// Histories as report files: the terminal text as Markdown, the HTML page, the JSON.
pub struct Report<'a>(pub &'a [History]);

impl Exporter for Report<'_> {
    const COMMAND: &'static str = "bench history";
    const FORMATS: &'static [Format] = &[Format::Markdown, Format::Html, Format::Json];

    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
        match format {
            Format::Html => Ok(super::html::history_report(self.0).into_bytes()),
            Format::Json => super::json(&self.0),
            _ => {
                let text: String = self.0.iter().map(render).collect();
                Ok(crate::model::escape::fenced(&text).into_bytes())
            }
        }
    }
}
