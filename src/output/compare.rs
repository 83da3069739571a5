//! A comparison as the terminal table and as the Markdown summary (`$GITHUB_STEP_SUMMARY`).
//! Pure: `Comparison → String`.

use super::export::{Exporter, Format};
use super::markup::{Align, Cell, Table};
use super::sig4;
use crate::error::BenchError;
use crate::model::comparison::{Comparison, Row, Verdict};
use crate::model::escape::markdown as md;
use crate::model::result::RunResult;
use std::fmt::Write;

/// A row's value in its unit (`39.15 ms`, `734.2 tok/s`, `0.50%`).
pub fn value(r: &Row, v: f64) -> String {
    match r.unit.as_str() {
        "%" => format!("{v:.2}%"),
        "ms" => format!("{} ms", sig4(v)),
        u => format!("{} {u}", sig4(v)),
    }
}

/// A row's change (`+37.2%`, `+0.50 pp`).
pub fn delta(r: &Row) -> String {
    if r.metric.in_points() {
        format!("{:+.2} pp", r.delta_pct)
    } else {
        format!("{:+.1}%", r.delta_pct)
    }
}

/// What backs a row's verdict, in the table's `evidence` column: for `no_change` the
/// one-sided 1 − α bound on worse (`≤ +4.1%`: no regression beyond it, at 1 − α; a drop for
/// a higher-is-better metric, `≥ -4.1%`), the claim "no regression of the threshold's size"
/// rests on; for every other verdict the interval effect ± critical ([`interval`]), whose
/// end beyond the threshold a regression or an improvement rests on. A row with a threshold
/// not judged for too few requests shows how many it has of those it needs.
pub fn evidence(r: &Row) -> String {
    // A row not judged for too few requests has no evidence yet: what it waits for.
    if let (Some(need), Verdict::Inconclusive | Verdict::NotGated) = (r.needs_requests, r.verdict) {
        return format!("too few: {} of {need}", r.n_baseline.min(r.n_candidate));
    }
    if r.verdict != Verdict::NoChange || !r.bound.is_finite() {
        return interval(r);
    }
    if r.metric.in_points() && r.lower_is_better {
        return format!("≤ {:+.2} pp", r.bound * 100.0);
    }
    if r.metric.in_points() {
        return format!("≥ {:+.2} pp", -r.bound * 100.0);
    }
    if r.lower_is_better {
        format!("≤ {:+.1}%", (r.bound.exp() - 1.0) * 100.0)
    } else {
        format!("≥ {:+.1}%", ((-r.bound).exp() - 1.0) * 100.0)
    }
}

/// A row's decision interval; — when it has none (no data); and in words when it spans more
/// than a factor of 10 either way (t with one or two degrees of freedom makes intervals like
/// [−100 %, +1.9e15 %], which no one should read as a number).
pub fn interval(r: &Row) -> String {
    if !r.critical.is_finite() {
        return "—".into();
    }
    if !r.metric.in_points() && r.critical > 10f64.ln() {
        return "unbounded: too few runs".into();
    }
    let u = if r.metric.in_points() { " pp" } else { "%" };
    format!("[{:+.1}{u}, {:+.1}{u}]", r.interval_low, r.interval_high)
}

/// `REGRESSION`, `PASS`, or `FAIL` (undecided rows with `--undecided fail`), and how many
/// gated rows were left undecided, by name: `PASS — 2 of 8 undecided: tpot.p95, e2e.p95`.
pub fn state(c: &Comparison) -> String {
    let state = if c.regressed {
        "REGRESSION"
    } else if c.fails() {
        "FAIL"
    } else {
        "PASS"
    };
    let undecided = c.undecided();
    let not_judged = c.not_judged();
    let mut s = state.to_string();
    let accepted = c.accepted();
    if !accepted.is_empty() {
        let names: Vec<String> = accepted
            .iter()
            .map(|r| match &r.waiver {
                Some(w) => format!("{} (waiver expires {})", r.metric, w.expires),
                None => r.metric.to_string(),
            })
            .collect();
        s += &format!(
            " — {} accepted trade-off: {}",
            accepted.len(),
            names.join(", ")
        );
    }
    if !undecided.is_empty() {
        let names: Vec<String> = undecided.iter().map(|r| r.metric.to_string()).collect();
        s += &format!(
            " — {} of {} undecided: {}",
            undecided.len(),
            c.gated(),
            names.join(", ")
        );
    }
    if !not_judged.is_empty() {
        let names: Vec<String> = not_judged
            .iter()
            .map(|r| {
                format!(
                    "{} (needs {} an arm, has {}/{})",
                    r.metric,
                    r.needs_requests.unwrap_or(0),
                    r.n_baseline,
                    r.n_candidate
                )
            })
            .collect();
        let sep = if undecided.is_empty() { " —" } else { ";" };
        s += &format!(
            "{sep} {} not judged, too few requests: {}",
            not_judged.len(),
            names.join(", ")
        );
    }
    s
}

/// How many runs each arm used and, for a sequential compare, why it stopped.
pub fn runs_used(c: &Comparison) -> Option<String> {
    let s = c.sequence.as_ref()?;
    let unit = if c.interleaved {
        "blocks"
    } else {
        "runs a side"
    };
    let looks: Vec<String> = s.looks.iter().map(|k| k.to_string()).collect();
    let why = match s.stop {
        crate::model::comparison::Stop::Settled => "every gated row settled".to_string(),
        crate::model::comparison::Stop::Cap => format!("the cap, --max-repeat {}", s.max_repeat),
        crate::model::comparison::Stop::Budget => "the --budget".to_string(),
        crate::model::comparison::Stop::OutOfReach => {
            "every row left being out of the cap's reach".to_string()
        }
        crate::model::comparison::Stop::Fixed => "a fixed size".to_string(),
        crate::model::comparison::Stop::RunsEnded => format!(
            "the stored runs ending at {} of the cap's {}: the compare that made them stopped before its next look",
            s.used, s.max_repeat
        ),
        crate::model::comparison::Stop::Regressed => {
            "a settled regression: the exit could not change (--settle-all goes on)".to_string()
        }
    };
    Some(format!(
        "sequential: {} {unit} used, stopped by {why} (looks at {}; cap {})",
        s.used,
        looks.join(", "),
        s.max_repeat
    ))
}

/// A row's reason, with the look it was settled at.
pub(crate) fn reason(c: &Comparison, r: &Row) -> String {
    match r.settled_at {
        Some(n) => {
            let unit = if c.interleaved {
                "blocks"
            } else {
                "runs a side"
            };
            format!("{} [settled at {n} {unit}]", r.reason)
        }
        None => r.reason.clone(),
    }
}

fn headline(c: &Comparison) -> String {
    let state = state(c);
    let attrib = if c.attributable {
        ""
    } else {
        " (UNATTRIBUTABLE: several vars changed)"
    };
    let mut h = format!(
        "bench compare {} — {state}\n  change: {}{attrib}\n  baseline: {} · candidate: {}",
        c.scenario_name,
        c.change,
        arms(c).0,
        arms(c).1
    );
    if let Some(s) = runs_used(c) {
        h += &format!("\n  {s}");
    }
    h
}

/// How each arm is described: `main (3 runs)` and `3 runs (first r-1)`, interleaved or not.
pub fn arms(c: &Comparison) -> (String, String) {
    let runs = |n: usize| format!("{n} run{}", if n == 1 { "" } else { "s" });
    let base = format!("{} ({})", c.baseline, runs(c.baseline_repetitions));
    let mut cand = if c.candidate_repetitions <= 1 {
        c.candidate_run.clone()
    } else {
        format!(
            "{} (first {})",
            runs(c.candidate_repetitions),
            c.candidate_run
        )
    };
    if c.interleaved {
        cand.push_str(", run alternating with the baseline's configuration (ABBA)");
    }
    (base, cand)
}

fn gated(c: &Comparison) -> usize {
    c.rows
        .iter()
        .filter(|r| r.verdict != Verdict::NotGated)
        .count()
}

/// The terminal table's head: its columns at their widths.
pub fn table_head() -> String {
    format!(
        "  {:<18} {:>14} {:>14} {:>9} {:>22}  verdict",
        "metric", "baseline", "candidate", "delta", "evidence"
    )
}

/// One row of the terminal table: metric, both values, delta, evidence and verdict.
pub fn table_row(r: &Row) -> String {
    format!(
        "  {:<18} {:>14} {:>14} {:>9} {:>22}  {}",
        r.metric,
        value(r, r.baseline),
        value(r, r.candidate),
        delta(r),
        evidence(r),
        r.verdict.label()
    )
}

/// Everything the terminal can say of a comparison (`--explain`): the headline, the table,
/// every row's reason, the server's effects, the notes in full and the method. The default
/// view is [`super::brief::table`].
pub fn explain(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "{}\n", headline(c));
    let _ = writeln!(o, "{}", table_head());
    for r in &c.rows {
        let _ = writeln!(o, "{}", table_row(r));
    }
    if !c.server_effects.is_empty() {
        let _ = writeln!(o, "\n  server: {}", c.server_effects.join(", "));
    }
    let _ = writeln!(o);
    for r in &c.rows {
        let _ = writeln!(o, "  {}", reason(c, r));
    }
    if !c.notes.is_empty() {
        let _ = writeln!(o);
        for n in &c.notes {
            let _ = writeln!(o, "  note: {n}");
        }
    }
    let _ = writeln!(o, "\n  {}", method(c));
    o
}

fn method(c: &Comparison) -> String {
    let noise = match c.paired_blocks {
        Some(k) => format!("SE from the {k} ABBA blocks in pairs — a latency: the blocks drawn again with replacement, each with its control and candidate run, so what a block's two runs share (drift, a neighbour's load) cancels; a rate: s/√{k} of the blocks' differences — never below the pooled requests' sampling noise, with {} degrees of freedom (blocks − 1); a quantile each run has too few values to bound (p95: 72) as two samples of runs, Σ(runs − 1) df; critical = q(1 − α/m)·SE (one-sided: false FAILs ≤ α), q Student's t", k - 1),
        None => "SE from drawing each arm's runs again with replacement (the run is the unit; a rate: the runs' spread), pooled over the arms unless each arm's own spread gives more (Welch), never below the pooled requests' sampling noise; critical = q(1 − α/m)·SE (one-sided: false FAILs ≤ α), q Student's t with the runs' degrees of freedom Σ(runs − 1) (Satterthwaite's where each arm's own spread judges), also when they agree".into(),
    };
    format!(
        "effect = ln(candidate/baseline) of each arm's pooled quantile (type 7), positive = worse; {noise}, α = {}, m = {} gated metrics; floor = the threshold; regressed when effect > max(critical, floor), else no_change when the bound on worse effect + q(1 − α)·SE ≤ floor (a regression of the threshold excluded, at α for each metric: all rows no_change together is an intersection–union test, needing no share of α), else inconclusive; evidence: for no_change the bound on worse on the delta's scale (≤ +x %: no regression beyond it at 1 − α), else the interval effect ± critical (two-sided 1 − 2α/m). Error rate: exact (Fisher; the bound on worse from the arms' Clopper–Pearson bounds, each at α/2).{}{}",
        crate::model::readable::number(c.alpha),
        gated(c),
        if c.rows.iter().any(|r| r.metric.is_quality()) {
            " Accuracy and agreement: the quality pass's items paired across the arms, McNemar's exact test on the items that changed (below α/m) and an exact bound on the drop (Clopper–Pearson, each side at α/2), at the whole α at every look (docs/quality.md)."
        } else {
            ""
        },
        c.sequence
            .as_ref()
            .map_or(String::new(), |s| format!(" Over the looks: {}; at each look α is that look's share.", s.design))
    )
}

/// The comparison as GitHub-flavoured Markdown. Every string that came from a server, a
/// flag or a file (the scenario's and the baseline's names, run ids, the vars' values, model
/// ids in notes, the server's effects) goes through [`md`], so none of it can open a link, an
/// image, raw HTML, a mention or a table cell; the rest is bench's own text.
pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let mark = if c.fails() { "❌" } else { "✅" };
    let _ = writeln!(
        o,
        "### bench compare {}: {mark} {}\n",
        md(&c.scenario_name),
        state(c)
    );
    let _ = writeln!(
        o,
        "- change: **{}**{}",
        md(&c.change),
        if c.attributable {
            ""
        } else {
            " (unattributable: several vars changed)"
        }
    );
    let (base, cand) = arms(c);
    let _ = writeln!(o, "- baseline: {}; candidate: {}", md(&base), md(&cand));
    if let Some(s) = runs_used(c) {
        let _ = writeln!(o, "- {s}");
    }
    if !c.server_effects.is_empty() {
        let _ = writeln!(o, "- server: {}", md(&c.server_effects.join(", ")));
    }
    let _ = writeln!(o);
    o.push_str(&verdict_table(c, false).markdown());
    if !c.notes.is_empty() {
        let _ = writeln!(o);
    }
    for n in &c.notes {
        let _ = writeln!(o, "- note: {}", md(&super::lines::note_line(n, 200)));
    }
    let _ = writeln!(
        o,
        "\n<details><summary>reasons, notes and method</summary>\n"
    );
    for r in &c.rows {
        let _ = writeln!(o, "- {}", reason(c, r));
    }
    for n in &c.notes {
        let _ = writeln!(o, "- note: {}", md(n));
    }
    let _ = writeln!(o, "\n{}\n</details>", method(c));
    o
}

/// The verdict of every row: metric, both values, delta, evidence and verdict, and with
/// `wide` (the HTML page) the threshold and the runs a side too. The verdict's class is the
/// page's (`fail` is bold in both formats).
pub(crate) fn verdict_table(c: &Comparison, wide: bool) -> Table {
    let mut heads = vec![
        ("metric", Align::Left),
        ("baseline", Align::Right),
        ("candidate", Align::Right),
        ("delta", Align::Right),
        ("evidence", Align::Right),
    ];
    if wide {
        heads.extend([("threshold", Align::Right), ("runs", Align::Right)]);
    }
    heads.push(("verdict", Align::Left));
    let mut t = Table::new(heads);
    for r in &c.rows {
        let class = match r.verdict {
            Verdict::Regressed => "fail",
            Verdict::Improved | Verdict::NoChange => "ok",
            Verdict::Inconclusive | Verdict::Accepted => "undecided",
            Verdict::NotGated => "",
        };
        let mut cells: Vec<Cell> = vec![
            r.metric.to_string().into(),
            value(r, r.baseline).into(),
            value(r, r.candidate).into(),
            delta(r).into(),
            evidence(r).into(),
        ];
        if wide {
            let runs = match r.baseline_values.len() {
                0 => "—".to_string(),
                n => format!("{n} vs {}", r.candidate_values.len()),
            };
            cells.extend([r.threshold.clone().into(), runs.into()]);
        }
        cells.push(Cell::classed(r.verdict.label(), class));
        t.row(cells);
    }
    t
}

/// A comparison as report files: the Markdown summary, the HTML page (with both arms' runs
/// when they are at hand), the JSON, and its optimization-record rows.
pub struct Report<'a> {
    pub c: &'a Comparison,
    /// Both arms' runs, baseline first.
    pub arms: (&'a [RunResult], &'a [RunResult]),
    /// The owner and the note of the record rows.
    pub owner: String,
    pub note: &'a str,
}

impl Exporter for Report<'_> {
    const COMMAND: &'static str = "bench compare";
    const FORMATS: &'static [Format] = &[
        Format::Markdown,
        Format::Html,
        Format::Json,
        Format::Csv,
        Format::Record,
    ];

    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
        match format {
            Format::Html => Ok(super::html::compare_report(self.c, Some(self.arms)).into_bytes()),
            Format::Json => super::json(self.c),
            Format::Csv => super::export::record_csv(self),
            _ => Ok(markdown(self.c).into_bytes()),
        }
    }

    fn rows(&self) -> Vec<super::record::RecordRow> {
        super::record::comparison_rows(self.c, &self.owner, self.note)
    }
}
