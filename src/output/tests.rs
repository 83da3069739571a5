//! Golden files for every renderer (`src/output/snapshots/`, with `insta`): fixed inputs —
//! seeded runs, a comparison of them, a sweep, a stack — rendered and compared byte for byte.
//! A change to any output format shows up here as a diff to review (`cargo insta review`, or
//! `INSTA_UPDATE=always cargo test` and read the diff before committing).
//!
//! HTML pages are compared by structure (elements and text, SVG bodies elided): the charts'
//! coordinates belong to plotters, not to us.

use super::*;
use crate::model::baseline::Baseline;
use crate::model::comparison::{Comparison, Verdict};
use crate::model::diagnosis::{Area, Finding};
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::record::Outcome;
use crate::model::server::ServerMetrics;
use crate::model::stack::{Interaction, InteractionRow, Ladder, LadderStep, Resolve};
use crate::model::sweep::{Point, Sweep};
use crate::testkit::{record, run_of, scenario};

/// A run with varied latencies, an error, a role-only first chunk and server metrics.
fn run() -> RunResult {
    let mut rs: Vec<_> = (0..40).map(|i| record(i, Outcome::Ok)).collect();
    for (i, r) in rs.iter_mut().enumerate() {
        let i = i as u64;
        r.ttft_us = Some(15_000 + i * 731 % 9_000);
        r.e2e_us = Some(r.ttft_us.unwrap() + 30_000 + i * 97);
        r.tpot_us = Some((r.e2e_us.unwrap() - r.ttft_us.unwrap()) as f64 / 9.0);
        r.end_us = r.intended_us + r.e2e_us.unwrap();
        r.preamble_chunks = 1;
        r.first_event_us = Some(400 + i);
        r.input_tokens_target = Some(90);
    }
    rs[0].warmup = true;
    rs[7].outcome = Outcome::Http(503);
    rs[7].error = Some("=overloaded".into());
    let mut run = run_of(rs, scenario("[slo]\nttft_ms = 20"), 3);
    run.scenario_name = "golden".into();
    run.run_id = "golden-19700101T000000.000Z".into();
    run.vars = [("prefix_cache".to_string(), "on".to_string())].into();
    run.server_metrics = Some(ServerMetrics {
        url: "http://127.0.0.1:1/metrics".into(),
        engine: Some("vllm".into()),
        scrapes: 3,
        prefix_cache_hit_rate: Some(0.61),
        preemptions: Some(0.0),
        kv_usage_peak: Some(0.42),
        ..Default::default()
    });
    run
}

/// A baseline of three seeded runs and a candidate 30 % slower, compared with the defaults.
/// A comparison written to JSON reads back whole, its unbounded values (written as null:
/// JSON has no infinity) included — `bench report` reads comparisons back.
#[test]
fn a_comparison_reads_back_from_its_json() {
    let (_, _, c) = comparison();
    assert!(c.rows.iter().any(|r| r.critical.is_infinite()));
    let back: Comparison = serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
    assert_eq!(back.rows.len(), c.rows.len());
    let same = |a: f64, b: f64| a == b || (a - b).abs() <= 1e-12 * a.abs().max(1.0);
    for (b, r) in back.rows.iter().zip(&c.rows) {
        assert_eq!((b.verdict, &b.reason), (r.verdict, &r.reason));
        for (x, y) in [
            (b.interval_low, r.interval_low),
            (b.interval_high, r.interval_high),
            (b.critical, r.critical),
            (b.bound, r.bound),
        ] {
            assert!(same(x, y), "{}: {y} read back as {x}", r.metric);
        }
    }
}

fn comparison() -> (Baseline, Vec<RunResult>, Comparison) {
    let (mut base, cand, mut c) = crate::testkit::comparison_of_arms();
    base.environment.created_at = chrono::DateTime::UNIX_EPOCH;
    base.environment.host = "ci".into();
    c.created_at = chrono::DateTime::UNIX_EPOCH;
    (base, cand, c)
}

fn sweep() -> Sweep {
    let point = |load: &str, rps: f64, ttft: f64, attained: f64| Point {
        load: load.into(),
        offered_rps: Some(rps),
        concurrency: None,
        achieved_rps: rps * 0.98,
        output_tps: rps * 31.0,
        goodput_rps: Some(rps * attained),
        slo_attainment: Some(attained),
        ttft_p50_ms: ttft,
        ttft_p95_ms: ttft * 1.6,
        ttft_p99_ms: ttft * 2.1,
        tpot_p50_ms: 11.5,
        tpot_p95_ms: 12.9,
        tpot_p99_ms: 14.0,
        errors: 0,
        sent: 100,
        peak_concurrency: 7,
        run_dir: "results/sweep/01".into(),
        saturation: Some(crate::model::sweep::Saturation {
            over: ttft > 100.0,
            offered_rps: rps,
            served_rps: if ttft > 100.0 { rps * 0.6 } else { rps * 0.98 },
            ttft_slope_ms_per_s: if ttft > 100.0 { 41.0 } else { 0.2 },
            ttft_slope_lower: if ttft > 100.0 { 35.0 } else { -0.4 },
        }),
    };
    Sweep {
        scenario: "golden".into(),
        points: vec![
            point("rate=1.000", 1.0, 20.0, 1.0),
            point("rate=4.000", 4.0, 31.0, 0.97),
            point("rate=8.000", 8.0, 410.0, 0.2),
        ],
        stopped_early: Some("over-saturated at rate=8.000: served 4.80 of 8.00 req/s offered (60 %), TTFT rising 41.0 ms per s (99 % lower bound 35.0)".into()),
        max_rate_rps: Some(4.0),
        max_rate_bracket: Some((4.0, 8.0)),
        max_rate_note: None,
        last_sustainable_rps: Some(4.0),
    }
}

fn interactions() -> Vec<InteractionRow> {
    vec![
        InteractionRow {
            metric: Metric::Latency(Latency::Tpot, Quantile::P50),
            changes: vec!["spec=3".into(), "quant=int4".into()],
            alone: vec![0.32, 0.36],
            combined: 0.169,
            expected: 0.115,
            interaction: 0.39,
            interval_low: 0.29,
            interval_high: 0.49,
            df: Some(4.0),
            runs: 2,
            verdict: Interaction::Conflict,
            resolve: None,
            contention: Some("the draft: spec-decode acceptance 0.82 alone → 0.44 combined".into()),
            detail: None,
        },
        InteractionRow {
            metric: Metric::Latency(Latency::Ttft, Quantile::P50),
            changes: vec!["spec=3".into(), "quant=int4".into()],
            alone: vec![1.013, 0.851],
            combined: 0.842,
            expected: 0.862,
            interaction: -0.024,
            interval_low: -0.21,
            interval_high: 0.16,
            df: Some(4.0),
            runs: 2,
            verdict: Interaction::Inconclusive,
            resolve: Some(Resolve {
                whatever: Some(9),
                if_it_stays: None,
            }),
            contention: None,
            detail: None,
        },
        InteractionRow {
            metric: Metric::Accuracy,
            changes: vec!["spec=3".into(), "quant=int4".into()],
            alone: vec![1.0, 0.901],
            combined: 0.901,
            expected: 0.901,
            interaction: 0.0,
            interval_low: -0.094,
            interval_high: 0.094,
            df: None,
            runs: 2,
            verdict: Interaction::Inconclusive,
            resolve: None,
            contention: None,
            detail: Some("accuracy of 400 items: spec=3+quant=int4 63.8 %; spec=3 70.8 %; quant=int4 63.8 %; base 70.8 %".into()),
        },
    ]
}

/// Elements and text of a page, with each SVG reduced to its title.
pub(super) fn structure(html: &str) -> String {
    let mut out = String::new();
    let mut rest = html;
    while let Some(i) = rest.find("<svg") {
        out.push_str(&rest[..i]);
        let end = rest[i..].find("</svg>").map_or(rest.len(), |e| i + e + 6);
        out.push_str("<svg…/>");
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.replace("><", ">\n<")
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn run_renderers() {
    let r = run();
    insta::assert_snapshot!("run_table", table::render(&r));
    insta::assert_snapshot!("requests_csv", text(csv::requests(&r.requests).unwrap()));
    insta::assert_snapshot!("summary_csv", text(csv::summary(&r.summary).unwrap()));
    insta::assert_snapshot!("vllm_export", text(json(&vllm::render(&r)).unwrap()));
    insta::assert_snapshot!("run_html_structure", structure(&html::run_report(&r)));
    let findings = crate::analysis::diagnose::diagnose(&r);
    insta::assert_snapshot!("diagnosis", diagnose::render(&r, &findings));
}

#[test]
fn comparison_renderers() {
    let (base, cand, c) = comparison();
    insta::assert_snapshot!("compare_table", brief::table(&c));
    insta::assert_snapshot!("compare_explain", compare::explain(&c));
    insta::assert_snapshot!("compare_markdown", compare::markdown(&c));
    insta::assert_snapshot!("compare_json", text(json(&c).unwrap()));
    let rows = record::comparison_rows(&c, "=ci", "INT8 weights");
    insta::assert_snapshot!("record_csv", text(record::render(&rows, true).unwrap()));
    insta::assert_snapshot!("baseline_summary", baseline::summary(&base));
    insta::assert_snapshot!(
        "baseline_html_structure",
        structure(&html::baseline_report(&base))
    );
    let page = html::compare_report(&c, Some((&base.repetitions, &cand)));
    insta::assert_snapshot!("compare_html_structure", structure(&page));
    // The SVGs themselves: one strip of each run of both arms, one latency-by-percentile plot.
    insta::assert_snapshot!("runs_strip_svg", html::runs::strip(&c.rows[0]));
    let values: Vec<f64> = (1..=200)
        .map(|i| 20.0 + (f64::from(i) / 20.0).powi(2))
        .collect();
    let svg = html::plot::percentile_chart(
        &html::plot::Frame {
            title: "TTFT by percentile",
            x_label: "percentile",
            y_label: "TTFT (ms)",
            mark: html::plot::Mark::Line,
            refs: Vec::new(),
        },
        &[html::plot::Series {
            name: "run",
            points: html::plot::percentile_points(&values),
        }],
    );
    insta::assert_snapshot!("percentile_chart_svg", svg);
}

#[test]
fn sweep_and_stack_renderers() {
    let s = sweep();
    insta::assert_snapshot!("sweep_table", sweep::render(&s, 0.95));
    insta::assert_snapshot!("sweep_csv", text(sweep::csv(&s).unwrap()));
    insta::assert_snapshot!(
        "sweep_html_structure",
        structure(&html::sweep_report(&s, None))
    );
    let rows = interactions();
    insta::assert_snapshot!("stack_factorial", stack::factorial(&rows));
    insta::assert_snapshot!(
        "stack_html_structure",
        structure(&html::stack_report(
            "stack-demo",
            "quant=none,spec=off",
            &rows
        ))
    );
    let ctx = record::StackContext {
        scenario: "stack-demo",
        scenario_hash: "h",
        base: "quant=none,spec=off",
        owner: "me",
        date: "1970-01-01",
    };
    let stack_csv = record::stack_rows(&rows, &ctx);
    insta::assert_snapshot!("stack_csv", text(record::render(&stack_csv, true).unwrap()));
    let (_, _, c) = comparison();
    let ladder = Ladder {
        steps: vec![LadderStep {
            change: "quant=int8".into(),
            comparison: c,
            cumulative_tpot_pct: None,
        }],
        stopped_at: Some(1),
        planned: 2,
    };
    insta::assert_snapshot!("stack_ladder", stack::ladder(&ladder));
}

#[test]
fn plan_and_selftest_renderers() {
    let s = scenario("");
    let plan = crate::plan::Plan::new(&s, None).unwrap();
    insta::assert_snapshot!(
        "plan",
        format!("{}\n{}", plan::describe(&s), plan::render(&plan))
    );
    let level = crate::model::selftest::Level {
        streams: 64,
        requests: 256,
        ok: 256,
        chunks_per_s: 812_345.6,
        cpu_us_per_chunk: Some(2.1),
        bare_cpu_us_per_chunk: Some(1.4),
        added_ttft_p50_us: 412.0,
        added_ttft_p99_us: 1_730.5,
        added_ttft_max_us: 2_004.0,
        peak: 64,
        send_lag_p99_us: 35.0,
    };
    let memory = crate::model::selftest::MemoryRow {
        requests: 1_000_000,
        peak_rss_bytes: 61_234_567,
        run_dir_bytes: 98_765_432,
        wall_s: 84.25,
    };
    insta::assert_snapshot!(
        "selftest",
        format!(
            "{}\n{}\n{}\n{}\n{}",
            selftest::header("flat out", 256),
            selftest::row(&level),
            selftest::MEMORY_HEADER,
            selftest::memory_row(&memory),
            selftest::FOOTER
        )
    );
    let f = Finding {
        area: Area::Ttft,
        title: "TTFT high — queueing".into(),
        evidence: vec!["server queue time mean 700 ms of TTFT mean 900 ms".into()],
        techniques: vec!["prefix caching".into(), "chunked prefill".into()],
        conflicts: vec![],
    };
    insta::assert_snapshot!("diagnosis_finding", diagnose::render(&run(), &[f]));
    let mut cut = run();
    cut.complete = false;
    assert!(diagnose::render(&cut, &[])
        .contains("note: the run is incomplete (interrupted): this is what its requests measured"));
}

#[test]
fn crash_debris_of_a_killed_writer_is_removed_on_the_next_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("main.json");
    // What `kill -9` inside the write window left: temp files of processes now gone (PIDs
    // above the kernel's maximum cannot be alive), one of a live process (PID 1 is always
    // alive: it may be writing right now) and one for another file, whose writer is gone too.
    let dead = [".main.json.tmp-4194399", ".main.json.tmp-4194400"];
    for f in dead {
        std::fs::write(dir.path().join(f), b"{partial").unwrap();
    }
    std::fs::write(dir.path().join(".main.json.tmp-1"), b"{").unwrap();
    std::fs::write(dir.path().join(".other.json.tmp-4194399"), b"{").unwrap();
    write_atomic(&path, b"{}").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"{}");
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, [".main.json.tmp-1", "main.json"]);
}

/// Display defects: an interval from t with almost no degrees of freedom is said in
/// words, and a server figure the baseline lacked is shown as a change, not as one number.
#[test]
fn absurd_intervals_and_absent_baseline_figures_are_said_plainly() {
    let (mut base, cand, c) = comparison();
    let mut row = c.rows[0].clone();
    assert!(compare::interval(&row).starts_with('['));
    (row.critical, row.interval_low, row.interval_high) = (35.0, -100.0, 1.876e15);
    assert_eq!(compare::interval(&row), "unbounded: too few runs");
    let mut cand0 = cand[0].clone();
    let mut with = ServerMetrics {
        engine: Some("vllm".into()),
        prefix_cache_hit_rate: Some(0.77),
        ..Default::default()
    };
    cand0.server_metrics = Some(with.clone());
    with.prefix_cache_hit_rate = None;
    base.repetitions[0].server_metrics = Some(with);
    let fx = crate::verdict::compare::server_effects(&base, &cand0);
    assert_eq!(
        fx[0], "prefix hit rate none (no cache lookups) → 77 %",
        "{fx:?}"
    );
}

/// The evidence printed beside a verdict supports it: a no_change row shows its one-sided
/// bound on worse (inside the threshold), not the two-sided FAIL interval that can reach far
/// past it (`-36.9 % [-77.1 %, +73.4 %] no_change` read as "maybe +73 %").
#[test]
fn the_evidence_shown_supports_the_verdict() {
    let (_, _, c) = comparison();
    let mut row = c.rows[0].clone();
    (row.verdict, row.lower_is_better) = (Verdict::NoChange, true);
    (row.effect, row.critical, row.bound) = (-0.46, 1.01, 1.041f64.ln());
    (row.interval_low, row.interval_high) = (-77.1, 73.4);
    assert_eq!(compare::evidence(&row), "≤ +4.1%");
    row.lower_is_better = false;
    assert_eq!(compare::evidence(&row), "≥ -3.9%");
    row.verdict = Verdict::Regressed;
    assert_eq!(compare::evidence(&row), "[-77.1%, +73.4%]");
    // Every no_change row of the fixture shows a bound inside its threshold.
    for r in c.rows.iter().filter(|r| r.verdict == Verdict::NoChange) {
        assert!(r.bound <= r.floor, "{r:?}");
        assert!(compare::evidence(r).starts_with('≤') || compare::evidence(r).starts_with('≥'));
    }
}

/// A conversation run: 6 sessions of 3 turns, later turns faster (a prefix cache), one
/// session ended at a failed turn 2.
fn conversation_run() -> RunResult {
    let mut rs = Vec::new();
    for s in 0..6u64 {
        for t in 1..=3u32 {
            let i = s * 1000 + t as u64 - 1;
            let mut r = record(i, Outcome::Ok);
            r.session = Some(s);
            r.turn = Some(t);
            r.intended_us = s * 50_000 + t as u64 * 400_000;
            r.ttft_us = Some(if t == 1 { 60_000 } else { 20_000 } + s * 500);
            r.e2e_us = Some(r.ttft_us.unwrap() + 100_000);
            r.end_us = r.intended_us + r.e2e_us.unwrap();
            r.prompt_tokens = Some(300 + 200 * (t as u64 - 1));
            if s == 5 && t == 2 {
                r.outcome = Outcome::Http(500);
            }
            if s == 5 && t == 3 {
                continue;
            }
            rs.push(r);
        }
    }
    let s = scenario("");
    let mut data = crate::testkit::data(rs, 3);
    data.planned = Some(18);
    data.sessions = Some(crate::model::summary::SessionCounts {
        planned: Some(6),
        started: 6,
        completed: 5,
        ended_early: 1,
        turns_skipped: 1,
    });
    let mut run = run_of(Vec::new(), s, 3);
    let (summary, _) = crate::metrics::summary::summarize(&data, &run.scenario.slo, true);
    run.summary = summary;
    run.requests = data.records;
    run.scenario_name = "golden-conversation".into();
    run
}

#[test]
fn conversation_renderers() {
    let r = conversation_run();
    insta::assert_snapshot!("conversation_table", table::render(&r));
    insta::assert_snapshot!(
        "conversation_summary_csv",
        text(csv::summary(&r.summary).unwrap())
    );
    let s = crate::config::scenario::parse(
        "name = \"c\"\nseed = 2\n[workload]\ntype = \"conversation\"\nturns = { dist = \"uniform\", min = 2, max = 4 }\nuser_tokens = 20\noutput_tokens = 8\nthink_time_ms = 300\n[load]\nrate = 2\nsessions = 5\nwarmup = 1\n",
        std::path::Path::new("c.toml"),
    )
    .unwrap();
    let plan = crate::plan::Plan::new(&s, None).unwrap();
    insta::assert_snapshot!(
        "conversation_plan",
        format!("{}\n{}", plan::describe(&s), plan::render(&plan))
    );
}

#[test]
fn this_processs_temp_of_another_file_is_kept_and_new_parents_are_made() {
    let dir = tempfile::tempdir().unwrap();
    let mine = dir
        .path()
        .join(format!(".requests.csv.tmp-{}", std::process::id()));
    std::fs::write(&mine, "being written").unwrap();
    super::write_atomic(&dir.path().join("run.json"), b"{}").unwrap();
    assert!(mine.exists(), "this process's temp of another file is kept");
    // New parent directories are created (and synced) on the way.
    super::write_atomic(&dir.path().join("a/b/c.json"), b"{}").unwrap();
    assert!(dir.path().join("a/b/c.json").is_file());
}
