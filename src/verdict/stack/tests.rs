//! Interactions measured on the simulator in virtual time, and the ladder on stored runs.

use super::*;
use crate::model::text::{stream_rng, words};
use crate::sim::tokenize;
use crate::sim::virtual_time::{simulate, VRequest, VirtualLoad, VirtualRun};
use crate::sim::SimOptions;
use rand::Rng;

fn arm(changes: Vec<usize>, r: &VirtualRun) -> Arm {
    let us = |s: f64| s * 1e6;
    Arm {
        changes,
        ttft: Sample::from_values(r.traces.iter().filter_map(|t| t.ttft()).map(us)),
        tpot: Sample::from_values(r.traces.iter().filter_map(|t| t.tpot()).map(us)),
        e2e: Sample::from_values(r.traces.iter().filter_map(|t| t.e2e()).map(us)),
        output_tps: r.output_tokens_per_s(),
        ok: r.traces.len() as u64,
        server: Some(ServerMetrics {
            engine: Some("sim".into()),
            spec_acceptance_rate: (r.counters.spec_draft_tokens > 0).then(|| {
                r.counters.spec_accepted_tokens as f64 / r.counters.spec_draft_tokens as f64
            }),
            preemptions: Some(r.counters.preemptions as f64),
            running_peak: Some(r.peak_running as f64),
            ..Default::default()
        }),
    }
}

/// Runs base + every subset of `changes` (key=value) on `profile`.
fn run_factorial(
    profile: &str,
    base: &[(&str, &str)],
    changes: &[(&str, &str)],
    users: usize,
    reqs: &[VRequest],
) -> (Vec<Arm>, Vec<String>) {
    let n = changes.len();
    let mut arms = Vec::new();
    for mask in 0..(1usize << n) {
        let mut o = SimOptions::profile(profile).unwrap();
        for (k, v) in base {
            o.set(k, v).unwrap();
        }
        let set: Vec<usize> = (0..n).filter(|i| mask & (1 << i) != 0).collect();
        for i in &set {
            o.set(changes[*i].0, changes[*i].1).unwrap();
        }
        let r = simulate(
            o,
            VirtualLoad::Closed {
                concurrency: users,
                requests: reqs.to_vec(),
            },
        )
        .unwrap();
        arms.push(arm(set, &r));
    }
    (
        arms,
        changes.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    )
}

fn unique(n: usize, input: u32, output: u32) -> Vec<VRequest> {
    (0..n as u64)
        .map(|i| VRequest {
            tokens: tokenize::text(&words(&mut stream_rng(11, i), input)),
            output_tokens: output,
            class: String::new(),
        })
        .collect()
}

fn row<'a>(rows: &'a [InteractionRow], metric: &str) -> &'a InteractionRow {
    rows.iter().find(|r| r.metric.key() == metric).unwrap()
}

#[test]
fn speculation_and_int4_conflict() {
    let (arms, names) = run_factorial(
        "h100-8b",
        &[],
        &[("spec", "3"), ("quant", "int4")],
        1,
        &unique(6, 256, 128),
    );
    let rows = factorial(&arms, &names);
    let t = row(&rows, "tpot.p50");
    println!("spec × int4 TPOT: alone {:?}, combined {:.3}, expected {:.3}, interaction {:.3} → {:?}; {:?}", t.alone, t.combined, t.expected, t.interaction, t.verdict, t.contention);
    assert_eq!(t.verdict, Interaction::Conflict);
    assert!(t.combined > t.expected, "1 + 1 < 2");
    assert!(
        t.contention.as_deref().unwrap_or("").contains("acceptance"),
        "{:?}",
        t.contention
    );
}

#[test]
fn prefix_cache_and_batching_parameters_are_neutral() {
    // 16 users on shared prefixes; the batching change caps the batch at 8.
    let heads: Vec<String> = (0..4)
        .map(|g| words(&mut stream_rng(12, 1000 + g), 512))
        .collect();
    let reqs: Vec<VRequest> = (0..96u64)
        .map(|i| {
            let mut rng = stream_rng(12, i);
            let g = rng.random_range(0..4) as usize;
            VRequest {
                tokens: tokenize::text(&format!("{} {}", heads[g], words(&mut rng, 32))),
                output_tokens: 64,
                class: String::new(),
            }
        })
        .collect();
    let (arms, names) = run_factorial(
        "small-gpu",
        &[],
        &[("prefix_cache", "on"), ("max_num_seqs", "8")],
        16,
        &reqs,
    );
    let rows = factorial(&arms, &names);
    let t = row(&rows, "tpot.p50");
    println!("prefix cache × max_num_seqs TPOT: alone {:?}, combined {:.3}, expected {:.3}, interaction {:.3} → {:?}", t.alone, t.combined, t.expected, t.interaction, t.verdict);
    assert_eq!(t.verdict, Interaction::Neutral);
}

#[test]
fn recommended_order_puts_stability_first_and_speculation_late() {
    let mut keys = vec!["spec", "prefix_cache", "quant", "kv_quant"];
    keys.sort_by_key(|k| recommended_rank(k));
    assert_eq!(keys, vec!["quant", "prefix_cache", "kv_quant", "spec"]);
}
