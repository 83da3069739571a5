//! The model's documented effects, in virtual time: each test builds the workload the effect
//! needs and asserts its direction and a magnitude.

use super::profile::{Quant, SimOptions};
use super::tokenize;
use super::virtual_time::{simulate, Trace, VRequest, VirtualLoad, VirtualRun};
use crate::model::scenario::Arrival;
use crate::model::text::{stream_rng, words};
use crate::plan::schedule;
use rand::Rng;

fn opts(profile: &str, kv: &[(&str, &str)]) -> SimOptions {
    let mut o = SimOptions::profile(profile).unwrap();
    for (k, v) in kv {
        o.set(k, v).unwrap();
    }
    o
}

fn unique(n: usize, input: u32, output: u32, seed: u64) -> Vec<VRequest> {
    (0..n as u64)
        .map(|i| {
            let mut rng = stream_rng(seed, i);
            VRequest {
                tokens: tokenize::text(&words(&mut rng, input)),
                output_tokens: output,
                class: String::new(),
            }
        })
        .collect()
}

fn shared(
    n: usize,
    prefixes: u64,
    prefix: u32,
    suffix: u32,
    output: u32,
    seed: u64,
) -> Vec<VRequest> {
    let heads: Vec<String> = (0..prefixes)
        .map(|g| words(&mut stream_rng(seed, 1_000_000 + g), prefix))
        .collect();
    (0..n as u64)
        .map(|i| {
            let mut rng = stream_rng(seed, i);
            let g = rng.random_range(0..prefixes) as usize;
            let text = format!("{} {}", heads[g], words(&mut rng, suffix));
            VRequest {
                tokens: tokenize::text(&text),
                output_tokens: output,
                class: String::new(),
            }
        })
        .collect()
}

fn closed(o: SimOptions, concurrency: usize, reqs: Vec<VRequest>) -> VirtualRun {
    simulate(
        o,
        VirtualLoad::Closed {
            concurrency,
            requests: reqs,
        },
    )
    .unwrap()
}

/// Type-7 quantile of a metric over traces of a class ("" = all).
fn q(run: &VirtualRun, class: &str, f: fn(&Trace) -> Option<f64>, p: f64) -> f64 {
    let mut v: Vec<f64> = run
        .traces
        .iter()
        .filter(|t| class.is_empty() || t.class == class)
        .filter_map(f)
        .collect();
    assert!(!v.is_empty());
    v.sort_by(f64::total_cmp);
    let h = (v.len() - 1) as f64 * p;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (h - lo as f64)
}

/// The longest gap between two tokens of a request.
fn max_gap(t: &Trace) -> Option<f64> {
    t.token_times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max_by(f64::total_cmp)
}

#[test]
fn same_seed_same_timings() {
    let o = opts("small-gpu", &[("spec", "3")]);
    let a = closed(o.clone(), 4, unique(20, 100, 30, 1));
    let b = closed(o, 4, unique(20, 100, 30, 1));
    let times = |r: &VirtualRun| {
        r.traces
            .iter()
            .map(|t| t.token_times.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(times(&a), times(&b));
    assert!(
        a.traces.iter().all(|t| t.token_times.len() == 30),
        "every request gets exactly its output length"
    );
}

#[test]
fn prefix_cache_cuts_ttft_on_shared_prefixes_and_does_nothing_on_unique_prompts() {
    let shared_reqs = shared(120, 4, 1024, 64, 32, 2);
    let off = closed(opts("small-gpu", &[]), 8, shared_reqs.clone());
    let on = closed(opts("small-gpu", &[("prefix_cache", "on")]), 8, shared_reqs);
    let (t_off, t_on) = (q(&off, "", Trace::ttft, 0.5), q(&on, "", Trace::ttft, 0.5));
    let hit = on.counters.prefix_hits as f64 / on.counters.prefix_queries as f64;
    println!(
        "shared prefix: TTFT p50 {:.1} → {:.1} ms, hit rate {hit:.2}",
        t_off * 1e3,
        t_on * 1e3
    );
    assert!(
        t_on < 0.5 * t_off,
        "prefix caching should at least halve TTFT on shared prefixes"
    );
    assert!(hit > 0.8, "most prompt tokens are shared: hit rate {hit}");

    let uniq = unique(120, 1088, 32, 3);
    let off = closed(opts("small-gpu", &[]), 8, uniq.clone());
    let on = closed(opts("small-gpu", &[("prefix_cache", "on")]), 8, uniq);
    let (u_off, u_on) = (q(&off, "", Trace::ttft, 0.5), q(&on, "", Trace::ttft, 0.5));
    assert!(
        (u_on / u_off - 1.0).abs() < 0.01,
        "unique prompts: {u_off} vs {u_on}"
    );
    assert_eq!(on.counters.prefix_hits, 0);
}

#[test]
fn int4_cuts_tpot_at_low_concurrency() {
    let reqs = unique(20, 256, 128, 4);
    let fp16 = closed(opts("small-gpu", &[]), 1, reqs.clone());
    let int4 = closed(opts("small-gpu", &[("quant", "int4")]), 1, reqs);
    let r = q(&int4, "", Trace::tpot, 0.5) / q(&fp16, "", Trace::tpot, 0.5);
    println!("int4 TPOT ratio at concurrency 1: {r:.2}");
    assert!(
        r < 0.6,
        "int4 should cut TPOT by more than 40 % when decode is weight-bandwidth bound (ratio {r})"
    );
}

fn spec_gain(profile: &str, quant: &str, concurrency: usize) -> (f64, f64) {
    let reqs = unique(concurrency * 3, 256, 128, 5);
    let base = closed(
        opts(profile, &[("quant", quant)]),
        concurrency,
        reqs.clone(),
    );
    let spec = closed(
        opts(profile, &[("quant", quant), ("spec", "3")]),
        concurrency,
        reqs,
    );
    let gain = q(&base, "", Trace::tpot, 0.5) / q(&spec, "", Trace::tpot, 0.5);
    let acceptance =
        spec.counters.spec_accepted_tokens as f64 / spec.counters.spec_draft_tokens as f64;
    (gain, acceptance)
}

#[test]
fn speculation_gains_more_at_concurrency_1_than_64() {
    let (g1, a) = spec_gain("h100-8b", "none", 1);
    let (g64, _) = spec_gain("h100-8b", "none", 64);
    println!("spec TPOT gain: {g1:.2}× at concurrency 1, {g64:.2}× at 64; acceptance {a:.2}");
    assert!(
        g1 > 2.0,
        "k = 3 at α = 0.9 gives ~3.4 tokens per step: {g1}"
    );
    assert!(
        g1 > 1.15 * g64,
        "verification competes with a big batch: {g1} vs {g64}"
    );
    assert!((a - 0.81).abs() < 0.04, "acceptance {a}");
}

#[test]
fn speculation_with_int4_gains_less_than_speculation_alone() {
    let (alone, a_fp16) = spec_gain("h100-8b", "none", 1);
    let (with_int4, a_int4) = spec_gain("h100-8b", "int4", 1);
    println!("spec gain {alone:.2}× at FP16 (acceptance {a_fp16:.2}), {with_int4:.2}× on INT4 (acceptance {a_int4:.2})");
    assert!(
        a_int4 < 0.5,
        "a quantized draft drifts: acceptance {a_int4}"
    );
    assert!(with_int4 < 0.75 * alone, "conflict: {with_int4} vs {alone}");
    // Keeping the draft in high precision is the remedy.
    let reqs = unique(3, 256, 128, 5);
    let base = closed(opts("h100-8b", &[("quant", "int4")]), 1, reqs.clone());
    let fixed = closed(
        opts(
            "h100-8b",
            &[("quant", "int4"), ("spec", "3"), ("draft_quant", "none")],
        ),
        1,
        reqs,
    );
    let g = q(&base, "", Trace::tpot, 0.5) / q(&fixed, "", Trace::tpot, 0.5);
    assert!(
        g > with_int4,
        "an FP16 draft restores acceptance: {g} vs {with_int4}"
    );
}

#[test]
fn quantization_gains_more_under_a_kv_bound_load_than_at_low_load() {
    // An 8B model on a 24 GB card: FP16 weights leave ~35 k tokens of KV (~60 of these
    // requests at full length), INT8 ~96 k (all 128 users fit). Long outputs keep the load
    // decode-bound, and 128 decodes still fit the card's compute.
    let low = unique(4, 64, 512, 6);
    let high = unique(384, 64, 512, 7);
    let tput = |quant: &str, c: usize, r: &Vec<VRequest>| {
        closed(opts("l4-8b", &[("quant", quant)]), c, r.clone())
    };
    let (l16, l8) = (tput("none", 1, &low), tput("int8", 1, &low));
    let (h16, h8) = (tput("none", 128, &high), tput("int8", 128, &high));
    let g_low = l8.output_tokens_per_s() / l16.output_tokens_per_s();
    let g_high = h8.output_tokens_per_s() / h16.output_tokens_per_s();
    println!(
        "int8 throughput gain: {g_low:.2}× at concurrency 1, {g_high:.2}× at 128 (preemptions {} → {})",
        h16.counters.preemptions, h8.counters.preemptions
    );
    assert!(
        h16.counters.preemptions > 100,
        "FP16 KV is too small for this load"
    );
    assert!(
        h8.counters.preemptions * 10 < h16.counters.preemptions,
        "smaller weights leave room for the whole batch"
    );
    assert!(g_high > 1.15 * g_low, "synergy: {g_high} vs {g_low}");
}

fn long_short(chunked: bool) -> VirtualRun {
    let n = 300;
    let offsets = schedule::arrival_offsets(
        schedule::Law::new(3.0, Arrival::Poisson, 1.0),
        Some(n),
        None,
        8,
    )
    .unwrap();
    let mut arrivals = Vec::new();
    for (i, off) in offsets.iter().enumerate() {
        let mut rng = stream_rng(8, i as u64);
        let long = rng.random_bool(0.1);
        let (input, output, class) = if long {
            (6000, 128, "long")
        } else {
            (128, 128, "short")
        };
        let r = VRequest {
            tokens: tokenize::text(&words(&mut rng, input)),
            output_tokens: output,
            class: class.into(),
        };
        arrivals.push((off.as_secs_f64(), r));
    }
    let o = opts(
        "small-gpu",
        &[("chunked_prefill", if chunked { "on" } else { "off" })],
    );
    simulate(o, VirtualLoad::Open(arrivals)).unwrap()
}

#[test]
fn chunked_prefill_cuts_p99_ttft_of_short_requests_in_a_long_short_mix() {
    let (off, on) = (long_short(false), long_short(true));
    let (p_off, p_on) = (
        q(&off, "short", Trace::ttft, 0.99),
        q(&on, "short", Trace::ttft, 0.99),
    );
    println!(
        "short-request TTFT p99: {:.0} ms → {:.0} ms with chunked prefill",
        p_off * 1e3,
        p_on * 1e3
    );
    assert!(p_on < 0.6 * p_off, "{p_on} vs {p_off}");
    // The price: the long prompts' own TTFT does not improve.
    assert!(q(&on, "long", Trace::ttft, 0.5) >= 0.9 * q(&off, "long", Trace::ttft, 0.5));
}

#[test]
fn a_kv_cache_too_small_preempts_and_grows_the_tail() {
    let reqs = unique(160, 256, 256, 9);
    let big = closed(opts("small-gpu", &[]), 32, reqs.clone());
    let small = closed(
        opts("small-gpu", &[("kv_capacity_tokens", "4096")]),
        32,
        reqs,
    );
    let tail = |r: &VirtualRun| q(r, "", Trace::e2e, 0.99) / q(r, "", Trace::e2e, 0.5);
    let worst_gap = |r: &VirtualRun| q(r, "", max_gap, 0.99);
    println!(
        "preemptions {} → {}; e2e p99/p50 {:.2} → {:.2}; p99 of the longest inter-token gap {:.0} → {:.0} ms",
        big.counters.preemptions,
        small.counters.preemptions,
        tail(&big),
        tail(&small),
        worst_gap(&big) * 1e3,
        worst_gap(&small) * 1e3
    );
    assert_eq!(big.counters.preemptions, 0);
    assert!(small.counters.preemptions > 10);
    assert!(
        tail(&small) > 1.1 * tail(&big),
        "the e2e distribution grows a tail"
    );
    assert!(
        worst_gap(&small) > 5.0 * worst_gap(&big),
        "preempted streams stall while they wait and recompute"
    );
    assert!(
        small.traces.iter().all(|t| t.token_times.len() == 256),
        "preempted requests still finish"
    );
}

#[test]
fn weights_that_do_not_fit_are_an_out_of_memory_error() {
    let e = simulate(
        opts("l4-8b", &[("memory_gb", "16")]),
        VirtualLoad::Open(vec![]),
    )
    .err()
    .unwrap();
    assert!(e.contains("out of memory") && e.contains("quantize"), "{e}");
    assert!(simulate(
        opts("l4-8b", &[("memory_gb", "16"), ("quant", "int4")]),
        VirtualLoad::Open(vec![])
    )
    .is_ok());
    let _ = Quant::Int4;
}
