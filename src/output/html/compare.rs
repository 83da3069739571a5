//! The page of a comparison: the verdict with how many gated rows were decided and how many
//! runs each arm used, the configuration, the verdict table and its reasons, each run of both
//! arms per gated figure ([`super::runs`]), the change of each row with its interval, and —
//! when the runs are at hand (`bench compare --html`) — latency by percentile of both arms.

use super::{config, esc, page, percentiles, runs};
use crate::model::comparison::Comparison;
use crate::model::result::RunResult;
use crate::output::compare as text;
use std::fmt::Write;

/// The block of a comparison: the candidate's configuration when its runs are at hand, and
/// what the comparison itself records.
fn config_block(c: &Comparison, cand: Option<&RunResult>) -> String {
    let (base, cand_arm) = text::arms(c);
    let mut items = vec![
        ("scenario", c.scenario_name.clone()),
        ("traffic hash", c.scenario_hash.clone()),
        (
            "change",
            format!(
                "{}{}",
                c.change,
                if c.attributable {
                    ""
                } else {
                    " (unattributable: several vars changed)"
                }
            ),
        ),
        ("baseline", base),
        ("candidate", cand_arm),
        ("runs used", text::runs_used(c).unwrap_or_default()),
        (
            "gate",
            format!(
                "α = {} · judged by bench {} · {}",
                crate::model::readable::number(c.alpha),
                c.tool_version,
                c.created_at.format("%Y-%m-%d %H:%M UTC")
            ),
        ),
    ];
    if let Some(r) = cand {
        items.extend([
            ("candidate vars", config::vars(&r.vars)),
            ("seed", r.scenario.seed.to_string()),
            ("load", crate::output::plan::describe(&r.scenario)),
            (
                "endpoint",
                crate::engine::client::target::public(&r.endpoint),
            ),
            ("environment", config::environment(r)),
        ]);
    }
    config::block(&items)
}

fn verdict_table(c: &Comparison) -> String {
    crate::output::compare::verdict_table(c, true).html()
}

/// `runs`: the baseline's runs and the candidate's, for latency by percentile (a stored
/// compare JSON keeps each run's figures, not its requests).
pub fn compare_report(c: &Comparison, runs: Option<(&[RunResult], &[RunResult])>) -> String {
    let mut b = String::new();
    let state = text::state(c);
    let class = if c.fails() {
        "fail"
    } else if c.undecided().is_empty() {
        "ok"
    } else {
        "undecided"
    };
    let _ = write!(
        b,
        "<p class=\"headline\"><span class=\"{class}\">{}</span> · {} of {} gated rows decided</p>",
        esc(&state),
        c.gated() - c.undecided().len(),
        c.gated()
    );
    if !c.server_effects.is_empty() {
        let _ = write!(b, "<p>server: {}</p>", esc(&c.server_effects.join(", ")));
    }
    b.push_str(&verdict_table(c));
    for n in &c.notes {
        let brief = crate::output::lines::note_line(n, 200);
        let _ = write!(b, "<p class=\"note\">note: {}</p>", esc(&brief));
    }
    b.push_str(&runs::section(c));
    b.push_str("<details><summary>Why each row got its verdict, the notes in full</summary><ul>");
    for r in &c.rows {
        let _ = write!(b, "<li>{}</li>", esc(&text::reason(c, r)));
    }
    for n in &c.notes {
        let _ = write!(b, "<li>note: {}</li>", esc(n));
    }
    b.push_str("</ul></details>");
    b.push_str(&super::effects_chart(c));
    match runs {
        Some((base, cand)) => {
            b.push_str("<h2>Latency by percentile, each arm's runs pooled</h2>");
            b.push_str(&percentiles(
                &[
                    ("baseline", base.iter().collect()),
                    ("candidate", cand.iter().collect()),
                ],
                &cand.first().map(|r| r.scenario.slo.clone()).unwrap_or_default(),
            ));
        }
        None => b.push_str("<p class=\"note\">No latency by percentile: this page was made from a stored comparison, which keeps each run's figures but not its requests; <code>bench compare --html FILE</code> draws them.</p>"),
    }
    page(
        &format!("bench compare {}", c.scenario_name),
        &config_block(c, runs.and_then(|(_, cand)| cand.first())),
        &b,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::baseline::Baseline;
    use crate::model::comparison::Verdict;
    use crate::model::metric::{Latency, Metric, Quantile};
    use crate::model::record::Outcome;
    use crate::testkit::{gate_config, record, rng, run_of, scenario};
    use rand_distr::{Distribution, LogNormal};

    /// A run of 40 requests whose TPOT sits in two clusters, ≈ 28 ms and ≈ 48 ms, with
    /// `slow` of them in the slower one (llama-server's decode steps that did or did not wait).
    fn two_cluster_run(slow: usize, seed: u64) -> RunResult {
        let mut g = rng(seed);
        let noise = LogNormal::new(0.0, 0.03).unwrap();
        let records = (0..40u64)
            .map(|i| {
                let tpot = if (i as usize) < slow {
                    48_000.0
                } else {
                    28_000.0
                } * noise.sample(&mut g);
                let e2e = 20_000 + (tpot * 9.0) as u64;
                crate::model::record::RequestRecord {
                    tpot_us: Some(tpot),
                    e2e_us: Some(e2e),
                    end_us: i * 1000 + e2e,
                    ..record(i, Outcome::Ok)
                }
            })
            .collect();
        let mut r = run_of(records, scenario(""), 1);
        r.run_id = format!("r{seed}");
        r
    }

    /// The two-cluster case: each arm's runs hold 0–5 of their 40 requests in the slow
    /// cluster, so each run's TPOT p95 is either ≈ 28 ms or ≈ 48 ms. The page draws each run
    /// of both arms at one of the two levels beside the row left undecided.
    #[test]
    fn the_two_cluster_case_shows_each_run_at_its_level() {
        let base: Vec<RunResult> = [0, 4, 1]
            .iter()
            .zip(1..)
            .map(|(s, k)| two_cluster_run(*s, k))
            .collect();
        let cand: Vec<RunResult> = [5, 0, 3]
            .iter()
            .zip(11..)
            .map(|(s, k)| two_cluster_run(*s, k))
            .collect();
        let b = Baseline::from_runs("main", base.clone()).unwrap();
        let c = crate::verdict::compare::compare(&b, &cand, false, &gate_config(400)).unwrap();
        let p95 = Metric::Latency(Latency::Tpot, Quantile::new(0.95).unwrap());
        let row = c.row(p95).unwrap();
        assert_eq!(row.verdict, Verdict::Inconclusive, "{}", row.reason);
        assert_eq!(
            (row.baseline_values.len(), row.candidate_values.len()),
            (3, 3)
        );
        let page = compare_report(&c, Some((&base, &cand)));
        assert!(page.contains("Each run of both arms"));
        // The strip of tpot.p95: its six run dots, at two heights far apart.
        let strip = runs::strip(row);
        let ys: Vec<f64> = strip
            .split("<circle cy=\"")
            .skip(1)
            .chain(strip.split("\" cy=\"").skip(1))
            .filter_map(|s| s.split('"').next()?.parse().ok())
            .collect();
        assert_eq!(ys.len(), 6, "{strip}");
        let (lo, hi) = ys
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), y| (a.min(*y), b.max(*y)));
        let low: Vec<_> = ys.iter().filter(|y| **y - lo < 15.0).collect();
        let high: Vec<_> = ys.iter().filter(|y| hi - **y < 15.0).collect();
        assert!(hi - lo > 45.0, "the clusters are drawn apart: {ys:?}");
        assert_eq!(
            low.len() + high.len(),
            6,
            "every run sits at one of two levels: {ys:?}"
        );
        assert!(page.contains(&strip));
    }
}
