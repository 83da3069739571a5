//! The page of `bench history`: per scenario, each gated metric's candidate value (and the
//! baseline it was judged against) over the compares, the change point marked and named,
//! and the table of every compare with its verdicts and baseline re-recordings.

use super::plot::{chart_noted, Frame, Mark, Ref, Series};
use super::{config, esc, page};
use crate::model::history::History;
use crate::output::history::{change_text, mark};
use crate::output::markup::{Align, Cell, Table};
use crate::output::sig4;

fn one(h: &History) -> String {
    let mut o = format!("<h2>{}</h2>", esc(&h.scenario));
    let first = h
        .entries
        .first()
        .map(|e| e.when.format("%Y-%m-%d").to_string());
    let last = h
        .entries
        .last()
        .map(|e| e.when.format("%Y-%m-%d").to_string());
    let rebased = h.rebaselined.iter().filter(|b| **b).count();
    o.push_str(&config::block(&[
        (
            "compares",
            format!(
                "{} from {} to {} · baseline recorded again {rebased} times",
                h.entries.len(),
                first.unwrap_or_default(),
                last.unwrap_or_default()
            ),
        ),
        ("method", h.method.clone()),
        (
            "flagged when",
            format!(
                "p ≤ α / metrics = {} / {} and the change ≥ {} %",
                h.alpha,
                h.series.len(),
                h.floor_pct
            ),
        ),
    ]));
    o.push_str("<div class=\"charts\">");
    for s in &h.series {
        let pts = |f: &dyn Fn(&crate::model::history::Value) -> f64| {
            s.values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| Some(((i + 1) as f64, f(v.as_ref()?))))
                .collect::<Vec<_>>()
        };
        let mut refs: Vec<Ref> = s
            .change
            .iter()
            .filter(|_| s.flagged)
            .map(|c| Ref {
                value: (c.onset + 1) as f64,
                label: format!("change point #{}", c.onset + 1),
                vertical: true,
            })
            .collect();
        if rebased <= 6 {
            refs.extend(
                h.rebaselined
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| **b)
                    .map(|(i, _)| Ref {
                        value: (i + 1) as f64,
                        label: format!("baseline recorded again at #{}", i + 1),
                        vertical: true,
                    }),
            );
        }
        let title = format!(
            "{} ({}){}",
            s.metric,
            s.unit,
            if s.flagged && s.worse {
                " — DRIFT"
            } else {
                ""
            }
        );
        let fig = chart_noted(
            &Frame {
                title: &title,
                x_label: "compare (oldest first)",
                y_label: &s.unit,
                mark: Mark::LineDots,
                refs,
            },
            &[
                Series {
                    name: "candidate",
                    points: pts(&|v| v.candidate),
                },
                Series {
                    name: "baseline judged against",
                    points: pts(&|v| v.baseline),
                },
            ],
            Some(change_text(h, s)),
        );
        o.push_str(&fig);
    }
    o.push_str("</div>");
    o.push_str(&table(h));
    o
}

/// Every compare with its verdicts and baseline re-recordings.
fn table(h: &History) -> String {
    let mut heads = vec![
        ("#".to_string(), Align::Right),
        ("when".into(), Align::Left),
        ("baseline".into(), Align::Left),
    ];
    heads.extend(
        h.series
            .iter()
            .map(|s| (format!("{} ({})", s.metric, s.unit), Align::Right)),
    );
    let mut t = Table::new(heads);
    for (i, e) in h.entries.iter().enumerate() {
        let again = if h.rebaselined[i] {
            "recorded again"
        } else {
            ""
        };
        let mut cells: Vec<Cell> = vec![
            (i + 1).to_string().into(),
            e.label.clone().into(),
            again.into(),
        ];
        cells.extend(h.series.iter().map(|s| match &s.values[i] {
            Some(v) => {
                let class = match v.verdict.as_str() {
                    "regressed" => "fail",
                    "improved" | "no_change" => "ok",
                    _ => "undecided",
                };
                Cell::classed(format!("{} {}", sig4(v.candidate), mark(&v.verdict)), class)
            }
            None => "—".into(),
        }));
        t.row(cells);
    }
    t.html() + "<p class=\"note\">= no change, + improved, R regressed, A accepted trade-off, ? undecided.</p>"
}

/// One page for the histories of every scenario read.
pub fn history_report(histories: &[History]) -> String {
    let body: String = histories.iter().map(one).collect();
    let names: Vec<&str> = histories.iter().map(|h| h.scenario.as_str()).collect();
    let worse: Vec<String> = histories
        .iter()
        .flat_map(|h| {
            h.worse()
                .into_iter()
                .map(move |s| format!("{} {}", h.scenario, s.metric))
        })
        .collect();
    let head = if worse.is_empty() {
        "<p class=\"headline\"><span class=\"ok\">no metric drifted or shifted the bad way</span></p>".to_string()
    } else {
        format!(
            "<p class=\"headline\"><span class=\"fail\">DRIFT</span>: {}</p>",
            esc(&worse.join(", "))
        )
    };
    page(&format!("bench history {}", names.join(", ")), &head, &body)
}
