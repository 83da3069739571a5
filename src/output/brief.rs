//! A comparison as the terminal prints it by default: read in ten seconds in a CI log. The
//! headline (state, and every gated row left undecided or not judged, by name), the change and
//! the arms, the table, a line naming the rows that regressed, a line for each thing that
//! would settle the undecided ones, and a line for each kind of note — every line at most
//! [`WIDTH`] characters. A row's name is never cut: lines that name rows wrap; a reason, the
//! server's figures and a note are shortened with `…`. The reasons in full, the notes in full
//! and the method are `--explain`'s ([`super::compare::explain`]); the verdicts are the same.

use super::compare::{arms, delta, evidence, runs_used, state, table_head, table_row};
use super::lines::{note_lines, shorten};
use crate::model::comparison::{Comparison, Row, Verdict};
use std::fmt::Write;

/// The widest line the default view prints.
pub const WIDTH: usize = 120;

/// The default terminal view.
pub fn table(c: &Comparison) -> String {
    let mut o = String::new();
    let attrib = if c.attributable {
        ""
    } else {
        " (UNATTRIBUTABLE: several vars changed)"
    };
    wrap_into(
        &mut o,
        &format!("bench compare {} — {}", c.scenario_name, state(c)),
        "",
    );
    let (base, cand) = arms(c);
    let arms_line = format!(
        "change: {}{attrib} · baseline: {base} · candidate: {cand}",
        c.change
    );
    wrap_into(&mut o, &arms_line, "  ");
    if let Some(s) = runs_used(c) {
        let _ = writeln!(o, "{}", shorten(&format!("  {s}"), WIDTH));
    }
    let _ = writeln!(o, "\n{}", table_head());
    // A row whose threshold is off is reported only: named in one line, its figures in
    // --explain and the files.
    let off = |r: &&Row| r.verdict == Verdict::NotGated && r.needs_requests.is_none();
    for r in c.rows.iter().filter(|r| !off(r)) {
        let _ = writeln!(o, "{}", shorten(&table_row(r), WIDTH));
    }
    let off: Vec<String> = c
        .rows
        .iter()
        .filter(off)
        .map(|r| r.metric.to_string())
        .collect();
    if !off.is_empty() {
        wrap_into(
            &mut o,
            &format!("not gated, reported only: {}", off.join(", ")),
            "  ",
        );
    }
    o.push('\n');
    for line in flagged_lines(c) {
        wrap_into(&mut o, &line, "  ");
    }
    if !c.server_effects.is_empty() {
        let server = format!("  server: {}", c.server_effects.join(", "));
        let _ = writeln!(o, "{}", shorten(&server, WIDTH));
    }
    for n in note_lines(&c.notes, WIDTH - 8) {
        let _ = writeln!(o, "  note: {n}");
    }
    let _ = writeln!(
        o,
        "  reasons, notes in full and the method: --explain (the Markdown and HTML carry them)"
    );
    o
}

/// The rows that regressed, in one line (their intervals are the table's evidence), and
/// the undecided rows, a line for each thing that would settle them (rows that wait for the
/// same thing share it).
fn flagged_lines(c: &Comparison) -> Vec<String> {
    let mut lines = Vec::new();
    let regressed: Vec<String> = c
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Regressed)
        .map(|r| format!("{} {}", r.metric, delta(r)))
        .collect();
    if !regressed.is_empty() {
        lines.push(format!(
            "REGRESSED beyond the threshold: {}",
            regressed.join(", ")
        ));
    }
    for r in c.rows.iter().filter(|r| r.verdict == Verdict::Accepted) {
        if let Some(w) = &r.waiver {
            lines.push(format!(
                "ACCEPTED {} {}: waived by {} (expires {}): {}",
                r.metric,
                delta(r),
                w.owner,
                w.expires,
                shorten(&w.reason, 60)
            ));
        }
    }
    for r in c.rows.iter().filter(|r| r.verdict == Verdict::Regressed) {
        if let Some(w) = &r.waiver {
            lines.push(format!(
                "{}: its waiver by {} expired on {}: renew it in the gate file, or fix the regression",
                r.metric, w.owner, w.expires
            ));
        }
    }
    let mut waiting: Vec<(String, Vec<String>)> = Vec::new();
    for r in c.rows.iter().filter(|r| r.verdict == Verdict::Inconclusive) {
        let why = settle(&r.reason).unwrap_or_else(|| evidence(r));
        let name = format!("{} {}", r.metric, delta(r));
        match waiting.iter_mut().find(|(w, _)| *w == why) {
            Some((_, names)) => names.push(name),
            None => waiting.push((why, vec![name])),
        }
    }
    for (why, names) in waiting {
        lines.push(format!(
            "undecided {}: {}",
            names.join(", "),
            shorten(&why, 90)
        ));
    }
    lines
}

/// Prints the default view (everything with `explain`), writes the requested files, and appends the Markdown summary to
/// `$GITHUB_STEP_SUMMARY` when that is set.
pub fn write_all(
    report: &super::compare::Report,
    files: &super::export::Requested,
    explain: bool,
) -> Result<(), crate::error::BenchError> {
    let text = match explain {
        true => super::compare::explain(report.c),
        false => table(report.c),
    };
    crate::out_text!("{text}");
    files.write(report)?;
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        super::append(
            std::path::Path::new(&summary),
            super::compare::markdown(report.c).as_bytes(),
        )?;
    }
    Ok(())
}

/// What would settle an undecided row, as its reason says it (`≈ 19 runs a side (--repeat 19
/// …) would resolve -5% whatever the difference`), or why it is not decided where the reason
/// names that (`a change of mode, not of speed`, `not judged at 3 runs a side`).
fn settle(reason: &str) -> Option<String> {
    let mut found = None;
    for c in reason.split([';', ':']) {
        if let Some(i) = c.find('≈').filter(|i| c[*i..].contains(" would ")) {
            let c = c[i..].trim();
            // The reason's closing parenthesis, when this is its last clause.
            let open = c.matches('(').count();
            let c = match c.matches(')').count() > open {
                true => c.strip_suffix(')').unwrap_or(c),
                false => c,
            };
            return Some(without_asides(c));
        }
        if found.is_none() && (c.contains("a change of mode") || c.contains("not judged at")) {
            found = Some(c.trim().trim_start_matches('(').to_string());
        }
    }
    found
}

/// `s` without its parenthesised asides (`(--repeat 4 for baseline and compare)`): the flag
/// to use is in `--explain`; the line keeps what would settle the row.
fn without_asides(s: &str) -> String {
    let (mut out, mut depth) = (String::new(), 0usize);
    for ch in s.chars() {
        match ch {
            '(' => depth += 1,
            ')' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(ch),
            _ => {}
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Appends `text` wrapped at words to [`WIDTH`], its first line indented by `indent` and the
/// rest by four more spaces.
fn wrap_into(o: &mut String, text: &str, indent: &str) {
    let more = format!("{indent}    ");
    let mut line = indent.to_string();
    for word in text.split(' ') {
        let fresh = line.trim().is_empty();
        if !fresh && line.chars().count() + 1 + word.chars().count() > WIDTH {
            let _ = writeln!(o, "{line}");
            line = more.clone();
        }
        if !line.trim().is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    let _ = writeln!(o, "{}", shorten(&line, WIDTH));
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::output::lines::note_line;

    #[test]
    fn a_long_line_is_cut_at_a_word() {
        let s = "a ".repeat(100);
        let t = shorten(&s, 20);
        assert!(t.chars().count() <= 20 && t.ends_with('…'), "{t}");
    }

    #[test]
    fn a_note_keeps_its_lead() {
        let n = "ttft: two server states in 4 of 6 runs — baseline run 2 (70 % near 15.9 ms, 30 % near 22.2 ms), candidate run 1 (10 % near 12.7 ms, 90 % near 18.5 ms)";
        assert_eq!(
            note_line(n, 112),
            "ttft: two server states in 4 of 6 runs (--explain)"
        );
    }

    #[test]
    fn wrapping_keeps_every_word_and_the_width() {
        let mut o = String::new();
        let text = "PASS — 3 not judged, too few requests: ".to_string()
            + &"ttft.p95 (needs 72 an arm, has 60/60), ".repeat(6);
        wrap_into(&mut o, &text, "");
        assert!(o.lines().all(|l| l.chars().count() <= WIDTH), "{o}");
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(words(&o), words(&text));
    }
}
