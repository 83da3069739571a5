//! The metric formulas on hand-made records.

use super::*;
use crate::model::record::{Outcome, RequestRecord};
use crate::testkit::record;
use std::time::Duration;

fn data(records: Vec<RequestRecord>) -> RunData {
    let mut streams = crate::engine::runner::StreamStats::default();
    streams.itl_us.record_n(3_333, 9).unwrap();
    RunData {
        sessions: None,
        omitted: 0,
        planned: Some(records.len() as u64),
        records,
        streams,
        not_sent: 0,
        peak_concurrency: 4,
        interrupted: false,
        failure: None,
        run_start: tokio::time::Instant::now(),
        wall: Duration::from_secs(1),
    }
}

#[test]
fn counts_add_up_per_kind_and_warmup_is_excluded() {
    let mut rs: Vec<_> = (0..10).map(|i| record(i, Outcome::Ok)).collect();
    rs[0].warmup = true;
    rs[1].outcome = Outcome::Http(500);
    rs[2].outcome = Outcome::Http(500);
    rs[3].outcome = Outcome::Http(429);
    rs[4].outcome = Outcome::TimeoutFirstToken;
    rs[5].outcome = Outcome::Aborted;
    let (s, _) = summarize(&data(rs), &Slo::default(), true);
    let c = &s.counts;
    assert_eq!((c.sent, c.warmup, c.ok, c.aborted), (9, 1, 4, 1));
    assert_eq!(c.errors["http_500"], 2);
    assert_eq!(c.errors["http_429"], 1);
    assert_eq!(c.errors["timeout_first_token"], 1);
    assert_eq!(c.ok + c.errors.values().sum::<u64>() + c.aborted, c.sent);
    assert_eq!(s.latency(Latency::Ttft).unwrap().count, 4);
}

#[test]
fn throughput_uses_the_measured_window() {
    // 10 requests intended at 0, 1, …, 9 ms, each ending 50 ms after its intended time.
    let rs: Vec<_> = (0..10).map(|i| record(i, Outcome::Ok)).collect();
    let (s, _) = summarize(&data(rs), &Slo::default(), true);
    let t = &s.throughput;
    assert!((t.window_s - 0.059).abs() < 1e-9);
    assert!((t.request_rps - 10.0 / 0.059).abs() < 1e-6);
    assert!((t.output_tps - 100.0 / 0.059).abs() < 1e-6);
    assert!((t.total_tps - 1100.0 / 0.059).abs() < 1e-6);
    assert_eq!(t.goodput_rps, None);
    assert_eq!(t.peak_concurrency, 4);
}

#[test]
fn latency_figures_come_from_the_histogram_in_ms() {
    let mut rs: Vec<_> = (0..100).map(|i| record(i, Outcome::Ok)).collect();
    for (i, r) in rs.iter_mut().enumerate() {
        r.ttft_us = Some((i as u64 + 1) * 1000); // 1..=100 ms
    }
    let (s, h) = summarize(&data(rs), &Slo::default(), true);
    let t = s.latency(Latency::Ttft).unwrap();
    assert_eq!(t.unit, "ms");
    // Type 7: the median of 1..=100 ms lies halfway between the 50th and 51st values.
    assert!((t.p50 - 50.5).abs() <= 0.05, "{}", t.p50);
    assert!((t.p99 - 99.0).abs() <= 0.1, "{}", t.p99);
    assert!((t.max - 100.0).abs() <= 0.1);
    assert!((t.mean - 50.5).abs() <= 0.06);
    let tpot = s.latency(Latency::Tpot).unwrap();
    assert!((tpot.p50 - 3.333).abs() < 0.01);
    assert_eq!(s.latency(Latency::Itl).unwrap().count, 9);
    assert_eq!(h.by_metric[&Latency::Ttft].len(), 100);
}

#[test]
fn goodput_checks_every_set_slo_and_skips_tpot_for_one_token() {
    let mut rs: Vec<_> = (0..4).map(|i| record(i, Outcome::Ok)).collect();
    rs[1].ttft_us = Some(600_000); // misses ttft
    rs[2].tpot_us = Some(90_000.0); // misses tpot
    rs[3].tpot_us = None; // one output token: no tpot to check
    rs[3].output_tokens = 1;
    let slo = Slo {
        ttft_ms: Some(500.0),
        tpot_ms: Some(50.0),
        e2e_ms: None,
    };
    let (s, _) = summarize(&data(rs), &slo, true);
    assert_eq!(s.throughput.goodput_requests, Some(2));
}

#[test]
fn output_length_mismatch_and_missing_usage_are_counted() {
    let mut rs: Vec<_> = (0..5).map(|i| record(i, Outcome::Ok)).collect();
    rs[0].output_tokens = 7; // stopped early although ignore_eos was asked
    rs[1].output_tokens_from_usage = false; // chunk-count fallback: not compared
    rs[1].output_tokens = 3;
    let (s, _) = summarize(&data(rs.clone()), &Slo::default(), true);
    assert_eq!(
        (s.tokens.output_len_mismatch, s.tokens.usage_missing),
        (1, 1)
    );
    let (s, _) = summarize(&data(rs), &Slo::default(), false);
    assert_eq!(s.tokens.output_len_mismatch, 0);
}

#[test]
fn prompt_length_error_compares_server_counts_with_the_synthetic_target() {
    let mut rs: Vec<_> = (0..4).map(|i| record(i, Outcome::Ok)).collect();
    let (s, _) = summarize(&data(rs.clone()), &Slo::default(), true);
    assert_eq!(
        s.tokens.prompt_length_error_pct, None,
        "no target: a dataset run"
    );
    for r in &mut rs {
        r.input_tokens_target = Some(80); // the server counted 100
    }
    let (s, _) = summarize(&data(rs), &Slo::default(), true);
    assert!((s.tokens.prompt_length_error_pct.unwrap() - 25.0).abs() < 1e-9);
}
