//! Snapshots of the renderers no run fixture reaches: a run's windows and steady state, and a
//! scenario's history of compares with its change point, as text and as its page.

use super::*;
use crate::model::history::{Entry, Value};
use crate::model::windows::{SteadyState, Window, Windows};
use chrono::{TimeZone, Utc};
use std::collections::BTreeMap;

fn window(k: usize, ttft: f64) -> Window {
    Window {
        start_s: k as f64,
        end_s: k as f64 + 1.0,
        sent: 10,
        errors: u64::from(k == 2),
        request_rps: 9.5,
        output_tps: 950.0,
        in_flight: 4.25,
        ttft_p50_ms: Some(ttft),
        ttft_p95_ms: Some(ttft * 1.8),
        tpot_p50_ms: Some(11.2),
        e2e_p50_ms: Some(ttft + 1100.0),
        server_running: Some(4.0),
        server_waiting: Some(0.5),
        server_kv_usage: Some(0.31),
    }
}

#[test]
fn windows_renderer() {
    let w = Windows {
        width_s: 1.0,
        asked_width_s: None,
        rows: (0..4).map(|k| window(k, 40.0 + 5.0 * k as f64)).collect(),
        steady: Some(SteadyState {
            method: "MSER-5 on E2E".into(),
            start_s: 1.0,
            end_s: 3.5,
            warmup_requests: 10,
            requests: 25,
            offered_rps: 10.0,
            achieved_rps: 9.6,
            output_tps: 960.0,
        }),
        steady_missing: None,
    };
    let mut o = String::new();
    windows::render_into(&mut o, &w);
    insta::assert_snapshot!("windows_table", o);
}

#[test]
fn history_renderer() {
    // Twelve nightly compares of one scenario; TPOT p50 steps up by 20 % at the eighth.
    let entries: Vec<Entry> = (0..12)
        .map(|i| {
            let tpot = if i < 7 { 20.0 } else { 24.0 } + (i % 3) as f64 * 0.1;
            let mut values = BTreeMap::new();
            values.insert(
                "tpot.p50".to_string(),
                Value {
                    unit: "ms".into(),
                    baseline: 20.0,
                    candidate: tpot,
                    verdict: if i < 7 { "no_change" } else { "regressed" }.into(),
                },
            );
            Entry {
                when: Utc.with_ymd_and_hms(2026, 11, 1 + i, 2, 0, 0).unwrap(),
                label: format!("rev{i:02}"),
                scenario: "smoke".into(),
                baseline: "main".into(),
                values,
                source: format!("compares/{i}.json"),
                runs: String::new(),
            }
        })
        .collect();
    let h = crate::analysis::history::history("smoke", entries, 0.05, 5.0);
    insta::assert_snapshot!("history_table", history::render(&h));
    insta::assert_snapshot!(
        "history_html_structure",
        super::tests::structure(&html::history_report(std::slice::from_ref(&h)))
    );
}
