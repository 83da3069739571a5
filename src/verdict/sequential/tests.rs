//! The design's error rates over whole sequences, on synthetic runs with run-level states:
//! each run's figure is its arm's true value plus a state drawn for the whole run (a normal
//! with a run-to-run spread), judged as the gate judges a figure per run (the runs' spread,
//! pooled or each arm's own: `two_sample`, with its Student's t) by the gate's own `decide`,
//! at the design's looks and shares. Thousands of seeded sequences against a stored baseline
//! of `bench baseline`'s default size, and of three runs.

use super::*;
use crate::verdict::decide::decide;
use crate::verdict::stats::{t_quantile, two_sample};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

const SEQUENCES: usize = 4000;
const ALPHA: f64 = 0.05;
/// `bench baseline`'s default: as many runs as the cap.
const BASE_RUNS: usize = DEFAULT_MAX;
/// Runs differ by ≈ 4 % from one another (ln scale).
const SPREAD: f64 = 0.04;

/// How each look spends α: the design's shares, or the fixed-sample rule at every look.
#[derive(Clone, Copy)]
enum Rule {
    Spending,
    FixedEveryLook,
}

/// The first verdict of one sequence other than inconclusive, and at how many runs; the
/// verdict at the cap when none was.
fn sequence(
    design: &Design,
    rule: Rule,
    effect: f64,
    floor: f64,
    rng: &mut ChaCha8Rng,
) -> (Verdict, usize) {
    sequence_against(BASE_RUNS, design, rule, effect, floor, rng)
}

/// [`sequence`] against a stored baseline of `base_runs` runs.
fn sequence_against(
    base_runs: usize,
    design: &Design,
    rule: Rule,
    effect: f64,
    floor: f64,
    rng: &mut ChaCha8Rng,
) -> (Verdict, usize) {
    let noise = Normal::new(0.0, SPREAD).unwrap();
    let base: Vec<f64> = (0..base_runs).map(|_| noise.sample(rng)).collect();
    let mut cand: Vec<f64> = Vec::new();
    let mut prev = 0;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut last = Verdict::Inconclusive;
    for &n in &design.looks {
        while cand.len() < n {
            cand.push(effect + noise.sample(rng));
        }
        let var = |v: &[f64]| crate::verdict::stats::sd(v).map(|s| s * s);
        let (v, df) = two_sample([var(&base), var(&cand)], [base_runs, n]).unwrap();
        let se = v.sqrt();
        let d = mean(&cand) - mean(&base);
        let spend = match rule {
            Rule::Spending => design.spend(prev, n),
            Rule::FixedEveryLook => Spend::all(ALPHA),
        };
        prev = n;
        let q = |level: f64| t_quantile(level, df);
        last = decide(d, se, floor, q(1.0 - spend.fail), q(1.0 - spend.bound)).verdict;
        if last != Verdict::Inconclusive {
            return (last, n);
        }
    }
    (last, design.max())
}

fn rate(base_runs: usize, rule: Rule, effect: f64, floor: f64, seed: u64, what: Verdict) -> f64 {
    let design = Design::new(FIRST_LOOK, DEFAULT_MAX, ALPHA);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let hits = (0..SEQUENCES)
        .filter(|_| sequence_against(base_runs, &design, rule, effect, floor, &mut rng).0 == what)
        .count();
    hits as f64 / SEQUENCES as f64
}

#[test]
fn looks_grow_by_half_to_the_cap_and_spend_alpha_linearly() {
    let d = Design::new(3, 12, 0.05);
    assert_eq!(d.looks, [3, 5, 8, 12]);
    let total: f64 = [(0, 3), (3, 5), (5, 8), (8, 12)]
        .iter()
        .map(|&(a, b)| d.spend(a, b).fail)
        .sum();
    assert!((total - 0.05).abs() < 1e-12, "{total}");
    assert!((d.spend(0, 3).fail - 0.0125).abs() < 1e-12);
    // A last look where a budget stopped the compare spends what the function allows there.
    assert!((d.spend(5, 7).bound - 0.05 * 2.0 / 12.0).abs() < 1e-12);
    assert_eq!(Design::new(3, 3, 0.05).looks, [3]);
    assert_eq!(Design::new(3, 2, 0.05).looks, [2]);
}

/// False FAILs against no difference, with a threshold of 0 so that the critical value, not
/// the threshold, decides: at most α over all looks with the design; the fixed-sample rule
/// applied at every look exceeds it.
#[test]
fn false_fails_stay_within_alpha_over_all_looks() {
    for base in [BASE_RUNS, 3] {
        let spending = rate(base, Rule::Spending, 0.0, 0.0, 1, Verdict::Regressed);
        let every = rate(base, Rule::FixedEveryLook, 0.0, 0.0, 1, Verdict::Regressed);
        eprintln!("false FAIL over all looks, {base} baseline runs: design {spending:.4}, fixed α at every look {every:.4}");
        // 4000 sequences: the SE of a rate near 0.05 is ≈ 0.0034.
        assert!(spending <= ALPHA, "design, {base}: {spending}");
        assert!(
            every > ALPHA + 0.01,
            "fixed α at every look, {base}: {every}"
        );
    }
}

/// False "no change" with a true regression of exactly the threshold: at most α over all
/// looks with the design; the fixed-sample rule at every look exceeds it.
#[test]
fn false_no_change_stays_within_alpha_over_all_looks() {
    let floor = 1.1f64.ln();
    for base in [BASE_RUNS, 3] {
        let spending = rate(base, Rule::Spending, floor, floor, 2, Verdict::NoChange);
        let every = rate(
            base,
            Rule::FixedEveryLook,
            floor,
            floor,
            2,
            Verdict::NoChange,
        );
        eprintln!(
            "false no change over all looks, {base} baseline runs: design {spending:.4}, fixed α at every look {every:.4}"
        );
        assert!(spending <= ALPHA, "design, {base}: {spending}");
        assert!(
            every > ALPHA + 0.01,
            "fixed α at every look, {base}: {every}"
        );
    }
}

/// What the design buys: a 40 % slowdown is caught at the first look, a 15 % one within the
/// cap in ≥ 90 % of sequences, and an A/A ends "no change" in ≥ 90 %, most before the cap.
#[test]
fn clear_changes_stop_early_and_a_15_percent_one_is_caught_by_the_cap() {
    let design = Design::new(FIRST_LOOK, DEFAULT_MAX, ALPHA);
    let floor = 1.1f64.ln();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut runs = |effect: f64, want: Verdict| {
        let mut used: Vec<usize> = Vec::new();
        let mut hit = 0;
        for _ in 0..1000 {
            let (v, n) = sequence(&design, Rule::Spending, effect, floor, &mut rng);
            if v == want {
                hit += 1;
                used.push(n);
            }
        }
        used.sort();
        (hit as f64 / 1000.0, used.get(used.len() / 2).copied())
    };
    let (caught, median) = runs(1.4f64.ln(), Verdict::Regressed);
    eprintln!("40 %: caught {caught}, median runs {median:?}");
    assert!(
        caught > 0.99 && median == Some(3),
        "40 %: {caught}, median runs {median:?}"
    );
    let (caught, m15) = runs(1.15f64.ln(), Verdict::Regressed);
    eprintln!("15 %: caught {caught}, median runs {m15:?}");
    assert!(caught >= 0.9, "15 %: {caught}");
    let (settled, median) = runs(0.0, Verdict::NoChange);
    eprintln!("A/A: no change {settled}, median runs {median:?}");
    assert!(
        settled >= 0.9 && median < Some(12),
        "A/A: {settled}, median runs {median:?}"
    );
}

#[test]
fn the_bulk_share_is_small_only_when_a_few_runs_lie_apart() {
    // Runs spread evenly: the MAD tells the SD's story (≈ 1, capped at 1).
    let even = bulk_share(
        &[600.0, 630.0, 615.0, 590.0, 645.0],
        &[620.0, 605.0, 640.0, 598.0, 611.0],
    );
    assert!(even > 0.7, "{even}");
    // One run of ten in the server's other state (−44 %): the SD is the outlier's, the bulk tight.
    let rare = bulk_share(
        &[607.0, 620.0, 622.0, 336.0, 611.0],
        &[607.0, 632.0, 616.0, 615.0, 609.0],
    );
    assert!(rare < 0.2, "{rare}");
    // Too few runs to tell: no change to the projection.
    assert_eq!(bulk_share(&[600.0, 300.0], &[610.0]), 1.0);
    assert_eq!(bulk_share(&[600.0; 3], &[600.0; 3]), 1.0);
}

#[test]
fn a_baseline_holds_as_many_runs_as_a_compare_may_add() {
    use clap::Parser;
    let cli = crate::cli::Cli::try_parse_from(["bench", "baseline", "s.toml"]).unwrap();
    let crate::cli::Command::Baseline(args) = cli.command else {
        panic!("not a baseline command");
    };
    assert_eq!(args.repeat as usize, DEFAULT_MAX);
}
