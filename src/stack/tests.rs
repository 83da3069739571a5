//! Interactions measured on the simulator in virtual time, and the ladder on stored runs.

use super::*;
use crate::sim::tokenize;
use crate::sim::virtual_time::{simulate, VRequest, VirtualLoad, VirtualRun};
use crate::sim::SimOptions;
use crate::workload::{stream_rng, words};
use clap::Parser;
use rand::Rng;

fn arm(changes: Vec<usize>, r: &VirtualRun) -> Arm {
    let us = |s: f64| s * 1e6;
    Arm {
        changes,
        ttft: sorted(r.traces.iter().filter_map(|t| t.ttft()).map(us)),
        tpot: sorted(r.traces.iter().filter_map(|t| t.tpot()).map(us)),
        e2e: sorted(r.traces.iter().filter_map(|t| t.e2e()).map(us)),
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
    rows.iter().find(|r| r.metric == metric).unwrap()
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

#[tokio::test]
async fn ladder_attributes_each_gain_to_its_step_in_order() {
    use crate::gate::tests::run;
    use rand::SeedableRng;
    let dir = tempfile::tempdir().unwrap();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    // base 100 ms; quant alone 60 ms; quant + prefix cache 30 ms.
    let configs = [
        (100.0, "none", "off"),
        (60.0, "int4", "off"),
        (30.0, "int4", "on"),
    ];
    for (i, (ms, quant, pc)) in configs.iter().enumerate() {
        for rep in 0..2 {
            let mut r = run(600, *ms, 0.0, &mut rng);
            r.scenario_name = "lad".into();
            r.vars = [("quant", *quant), ("prefix_cache", *pc)]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let d = dir.path().join(format!("c{i}r{rep}"));
            crate::export::write_run_dir(&d, &r).unwrap();
        }
    }
    let scenario = dir.path().join("lad.toml");
    std::fs::write(&scenario, "name = \"lad\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\noutput_tokens = 1\n[load]\nconcurrency = 1\nrequests = 1\n").unwrap();
    let csv = dir.path().join("ladder.csv");
    let cli = crate::cli::Cli::try_parse_from([
        "bench",
        "stack",
        scenario.to_str().unwrap(),
        "--ladder",
        "--recommended",
        "--repeat",
        "2",
        "--try",
        "prefix_cache=on",
        "--try",
        "quant=int4",
        "--from",
        dir.path().to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
    ])
    .unwrap();
    let crate::cli::Command::Stack(args) = cli.command else {
        panic!()
    };
    let code = super::cli::stack_command(*args).await.unwrap();
    assert_eq!(code, crate::EXIT_OK);
    let text = std::fs::read_to_string(&csv).unwrap();
    let step = |change: &str| {
        text.lines()
            .find(|l| l.contains(change) && l.contains(",ttft.p50,"))
            .unwrap()
            .to_string()
    };
    let s1 = step("quant: none → int4");
    let s2 = step("prefix_cache: off → on");
    assert!(s1.contains(",improved,") && s1.contains("-4"), "{s1}");
    assert!(s2.contains(",improved,") && s2.contains("-5"), "{s2}");
    assert!(
        text.find("quant: none → int4").unwrap() < text.find("prefix_cache: off → on").unwrap(),
        "the recommended order puts quantization first"
    );
}
