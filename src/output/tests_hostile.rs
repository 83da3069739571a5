//! Strings a server, a flag or a file controls, rendered by every text renderer: none keeps a
//! meaning in Markdown (no code span broken out of, no image, link, raw HTML, mention, table
//! cell or extra line), none reaches a terminal or a CSV cell as a control character.

use super::*;
use crate::model::comparison::Comparison;
use crate::model::escape::markdown as md;
use crate::testkit::{lognormal_run, record, rng};

/// Hostile values: a model id with a backtick, raw HTML, a `javascript:` link, a mention, pipes,
/// newlines, ESC and OSC sequences.
const PAYLOADS: &[&str] = &[
    "m`<img src=http://evil/p.png>`",
    "<img src=http://evil/p.png>",
    "[c](javascript:alert(1))",
    "@octocat",
    "a | b | c",
    "x\n## injected heading\n- item",
    "\u{1b}]0;pwned\u{7}\u{1b}[2J",
    "![x](http://evil/x.png)",
];

fn hostile(p: &str) -> Comparison {
    let mut g = rng(3);
    let reps: Vec<RunResult> = (0..3)
        .map(|_| {
            let mut r = lognormal_run(100, 40.0, 0.0, &mut g);
            r.vars.insert("quant".into(), p.into());
            r
        })
        .collect();
    let base = crate::model::baseline::Baseline::new(p, reps).unwrap();
    let cand: Vec<RunResult> = (0..3)
        .map(|_| {
            let mut r = lognormal_run(100, 40.0, 0.0, &mut g);
            r.vars.insert("quant".into(), format!("{p}2"));
            r.model = p.into();
            r
        })
        .collect();
    let cfg = crate::testkit::gate_config(50);
    let mut c = crate::verdict::compare::compare(&base, &cand, false, &cfg).unwrap();
    c.scenario_name = p.into();
    c.notes.push(format!("model: `{p}` → `{p}`"));
    c.server_effects.push(p.into());
    c
}

#[test]
fn no_hostile_string_keeps_a_markdown_meaning() {
    for p in PAYLOADS {
        let c = hostile(p);
        let m = compare::markdown(&c);
        let clean = compare::markdown(&hostile("plain"));
        assert_eq!(
            m.lines().count(),
            clean.lines().count(),
            "{p:?} added lines:\n{m}"
        );
        for bad in ["<img", "](", "![", "`<", "\n## "] {
            let bare = m.match_indices(bad).any(|(i, _)| !m[..i].ends_with('\\'));
            assert!(!bare, "{p:?}: {bad:?} survived:\n{m}");
        }
        assert!(!m.contains('\u{1b}') && !m.contains('\u{7}'), "{p:?}");
        // A mention, a pipe or a backtick from the payload appears only escaped.
        for (i, ch) in m.char_indices() {
            if matches!(ch, '@' | '`') {
                assert!(m[..i].ends_with('\\'), "{p:?}: bare {ch:?} at {i}:\n{m}");
            }
        }
        assert!(m.contains(&md(p)), "{p:?}");
        // Table rows keep their six cells.
        for row in m.lines().filter(|l| l.starts_with("| ")) {
            let cells = row.matches(" | ").count() + 2;
            let escaped = row.matches("\\|").count();
            assert_eq!(cells - escaped, 7, "{p:?}: {row}");
        }
    }
}

#[test]
fn no_hostile_string_reaches_a_terminal_or_a_csv_cell_raw() {
    for p in PAYLOADS {
        let t = crate::model::escape::terminal(&compare::explain(&hostile(p)));
        assert!(!t.contains('\u{1b}') && !t.contains('\u{7}'), "{p:?}");
        let mut r = record(0, crate::model::record::Outcome::Ok);
        r.error = Some(p.to_string());
        r.class = p.to_string();
        let csv = String::from_utf8(csv::requests(&[r]).unwrap()).unwrap();
        assert!(
            !csv.contains('\u{1b}') && !csv.contains('\u{7}'),
            "{p:?}: {csv}"
        );
    }
}
