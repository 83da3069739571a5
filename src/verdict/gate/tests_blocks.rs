//! Statistical validation of the gate on seeded synthetic samples, continued: runs that
//! alternate in ABBA blocks (paired judgement, its level and power), what an inconclusive row
//! says would settle it, the error-rate bound's level, and a p95 in a jump.

use super::tests::*;
use super::*;
use crate::config::thresholds::parse_threshold;
use crate::testkit::lognormal_run as run;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

#[test]
fn runs_alternating_in_time_form_blocks() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut mk = |t| at(run(20, 50.0, 0.0, &mut rng), t);
    // ABBA AB: control at 0, 3, 4; candidate at 1, 2, 5.
    let base = vec![mk(0), mk(3), mk(4)];
    let cand = vec![mk(1), mk(2), mk(5)];
    assert_eq!(blocks(&base, &cand), Some(vec![(0, 0), (1, 1), (2, 2)]));
    // The order the runs are given in does not matter, their start times do.
    let rev: Vec<RunResult> = cand.iter().rev().cloned().collect();
    assert_eq!(blocks(&base, &rev), Some(vec![(0, 2), (1, 1), (2, 0)]));
    // A baseline recorded before the candidate is not blocked; nor are unequal arms.
    let later: Vec<RunResult> = cand
        .iter()
        .map(|r| at(r.clone(), 100 + r.started_at.timestamp()))
        .collect();
    assert_eq!(blocks(&base, &later), None);
    assert_eq!(blocks(&base, &cand[..2]), None);
    assert!(
        !interleaved(&base[..1], &cand[..1]),
        "one run an arm says nothing of interleaving"
    );
    assert!(interleaved(&base[..2], &cand[..2]));
    assert_eq!(
        judged_blocks(&base, &cand),
        None,
        "3 blocks are judged as two samples"
    );
}

/// Rounds of 6 interleaved blocks on a machine whose load drifts between blocks (each
/// block's two runs share a slowdown of sd 8 %, each run has its own of sd `own`), TTFT p50
/// gated at `threshold`: how many rounds called it regressed, judged in pairs and — the very
/// same runs with the baseline's recorded before the candidate's — as two samples.
fn blocked_rounds(rounds: u64, own: f64, shift: f64, threshold: &str) -> (usize, usize) {
    let block = Normal::new(0.0, 0.08).unwrap();
    let own = Normal::new(0.0, own).unwrap();
    let cfg = |seed| GateConfig {
        thresholds: vec![parse_threshold("ttft.p50", threshold).unwrap()],
        alpha: 0.05,
        replicates: 400,
        seed,
    };
    let mut hits = (0, 0);
    for i in 0..rounds {
        let mut rng = ChaCha8Rng::seed_from_u64(70_000 + i);
        let (mut base, mut cand) = (Vec::new(), Vec::new());
        for b in 0..PAIRED_MIN_BLOCKS as i64 {
            let shared = block.sample(&mut rng);
            let d = shared + own.sample(&mut rng);
            base.push(at(run(200, 50.0, d, &mut rng), 2 * b));
            let d = shared + own.sample(&mut rng) + shift;
            cand.push(at(run(200, 50.0, d, &mut rng), 2 * b + 1));
        }
        let regressed = |rows: Vec<Row>| rows[0].verdict == Verdict::Regressed;
        assert!(judged_blocks(&base, &cand).is_some());
        hits.0 += regressed(evaluate(&base, &cand, &cfg(i))) as usize;
        let apart: Vec<RunResult> = cand
            .iter()
            .map(|r| at(r.clone(), 1000 + r.started_at.timestamp()))
            .collect();
        assert!(blocks(&base, &apart).is_none());
        hits.1 += regressed(evaluate(&base, &apart, &cfg(i))) as usize;
    }
    hits
}

#[test]
fn interleaved_blocks_judged_in_pairs_keep_alpha_and_see_more() {
    // Seeded, so the counts are fixed. With a 0.1 % threshold the verdict is the test alone,
    // so the A/A count is its false-alarm rate — with runs of their own differing by 6 %,
    // more than one run's sampling noise (≈ 4.4 % here), so that the runs' spread, not the
    // sampling floor, sets the SE; a +15 % change is judged at 10 %, runs differing by 2 %.
    let rounds = 200;
    let slack = 3.0 * (0.05f64 * 0.95 / rounds as f64).sqrt();
    let (paired_aa, apart_aa) = blocked_rounds(rounds, 0.06, 0.0, "0.1%");
    let (paired, apart) = blocked_rounds(rounds, 0.02, 1.15f64.ln(), "10%");
    println!(
        "6 blocks, block drift sd 8 %: A/A at a 0.1 % threshold, false alarms in pairs {paired_aa}/{rounds}, as two samples {apart_aa}/{rounds}; +15 % at 10 %, caught in pairs {paired}/{rounds}, as two samples {apart}/{rounds}"
    );
    assert!(
        paired_aa as f64 / rounds as f64 <= 0.05 + slack,
        "{paired_aa}/{rounds}"
    );
    assert!(paired as f64 >= 0.9 * rounds as f64, "{paired}/{rounds}");
    assert!(
        paired >= apart + rounds as usize / 10,
        "pairs {paired} vs two samples {apart}"
    );
}

#[test]
fn a_tail_quantile_of_small_runs_is_not_paired() {
    // 6 blocks of 20-request runs: each run bounds its p50 (needs 6) but not its p95 (needs
    // 72), so the p50 is judged in pairs (5 df) and the p95, gated on 120 values an arm, as
    // two samples of runs (10 df).
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for b in 0..6 {
        base.push(at(run(20, 50.0, 0.0, &mut rng), 2 * b));
        cand.push(at(run(20, 50.0, 0.0, &mut rng), 2 * b + 1));
    }
    let rows = evaluate(&base, &cand, &cfg(0));
    assert_eq!(rows[0].df, Some(5.0), "{}", rows[0].reason);
    assert_ne!(rows[1].verdict, Verdict::NotGated, "{}", rows[1].reason);
    assert_eq!(rows[1].df, Some(10.0), "{}", rows[1].reason);
}

#[test]
fn an_interleaved_compare_is_told_to_run_more_blocks() {
    // 6 blocks of 60-request runs whose own states differ by ≈ 30 %: the p95 (two samples of
    // runs, too few values a run to pair) is inconclusive at 30 % because the runs are too
    // few (≈ 11 a side would do). In an interleaved compare that means more blocks;
    // re-recording the baseline, as the same runs recorded apart are told, would not apply.
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let state = Normal::new(0.0, 0.3).unwrap();
    let (mut base, mut cand) = (Vec::new(), Vec::new());
    for b in 0..6 {
        base.push(at(run(60, 50.0, state.sample(&mut rng), &mut rng), 2 * b));
        cand.push(at(
            run(60, 50.0, state.sample(&mut rng), &mut rng),
            2 * b + 1,
        ));
    }
    let cfg = GateConfig {
        thresholds: vec![parse_threshold("ttft.p95", "30%").unwrap()],
        ..cfg(0)
    };
    let p95 = |cand: &[RunResult]| evaluate(&base, cand, &cfg).swap_remove(0);
    let r = p95(&cand);
    println!("interleaved: {}", r.reason);
    assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.reason);
    assert!(
        r.reason.contains("blocks (--interleave --repeat "),
        "{}",
        r.reason
    );
    assert!(
        !r.reason.contains("for baseline and compare"),
        "{}",
        r.reason
    );
    // The same runs with the baseline recorded first: runs a side, for both commands.
    let apart: Vec<RunResult> = cand
        .iter()
        .map(|r| at(r.clone(), 1000 + r.started_at.timestamp()))
        .collect();
    let r = p95(&apart);
    println!("recorded apart: {}", r.reason);
    assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.reason);
    assert!(
        r.reason.contains("runs a side (--repeat ")
            && r.reason.contains("for baseline and compare"),
        "{}",
        r.reason
    );
}

/// The count an inconclusive message names when the difference seen would be decided sooner
/// than "whatever the difference": 6 blocks of runs whose states differ by ≈ 25 %, four rows
/// judged at 15 %, once with the candidate as fast as drawn (the bound on worse gets inside
/// first) and once ≈ 20 % slower (the FAIL test sees it first). The claim is then checked on
/// the same runs cycled to that many blocks (whole cycles), which keeps the difference and
/// the runs' spread as they were.
#[test]
fn an_inconclusive_says_what_the_difference_seen_needs() {
    // The runs' states on the log scale: a spread of ≈ 25 %, the same in both arms.
    const STATES: [f64; 6] = [0.3, -0.3, 0.1, -0.1, 0.2, -0.2];
    let cfg = GateConfig {
        // Four gated rows, so that the FAIL test (at α/4) and the bound (at α) differ.
        thresholds: ["ttft.p95", "ttft.p50", "e2e.p50", "e2e.p95"]
            .map(|m| parse_threshold(m, "15%").unwrap())
            .to_vec(),
        ..cfg(0)
    };
    let count = |reason: &str, after: &str| -> usize {
        let rest = &reason[reason.find(after).expect(reason) + after.len()..];
        rest.split_whitespace().next().unwrap().parse().unwrap()
    };
    for (seed, shift, then, verdict) in [
        (21, -0.1, "would bound it inside 15%", Verdict::NoChange),
        (22, 0.2, "would show it as a regression", Verdict::Regressed),
    ] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let (mut base, mut cand) = (Vec::new(), Vec::new());
        for (b, c) in STATES.iter().zip(STATES.iter().rev()) {
            base.push(run(60, 50.0, *b, &mut rng));
            cand.push(run(60, 50.0, shift + c, &mut rng));
        }
        let blocks = |k: usize| -> (Vec<RunResult>, Vec<RunResult>) {
            let arm = |runs: &[RunResult], first: i64| -> Vec<RunResult> {
                (0..k)
                    .map(|b| at(runs[b % runs.len()].clone(), 2 * b as i64 + first))
                    .collect()
            };
            (arm(&base, 0), arm(&cand, 1))
        };
        let (b6, c6) = blocks(6);
        let r = evaluate(&b6, &c6, &cfg).swap_remove(0); // ttft.p95
        println!("shift {shift}: {}", r.reason);
        assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.reason);
        assert!(r.reason.contains("blocks (--interleave"), "{}", r.reason);
        let whatever = count(&r.reason, "too few: ≈ ");
        assert!(r.reason.contains(then), "{}", r.reason);
        let stays = count(&r.reason, "%, ≈ ");
        assert!(stays < whatever, "{}", r.reason);
        // Whole cycles of the six blocks, at least as many as the message names.
        let (b, c) = blocks(stays.div_ceil(6) * 6);
        let r = evaluate(&b, &c, &cfg).swap_remove(0);
        println!("  cycled to {} blocks: {}", b.len(), r.reason);
        assert_eq!(r.verdict, verdict, "{}", r.reason);
    }
}

/// The error rate's reason names its bound's level as `--alpha` makes it: 95 % at α = 0.05,
/// 99.9 % at α = 0.001 (once rounded to "100 %").
#[test]
fn the_error_rate_bound_says_its_level() {
    let mut g = ChaCha8Rng::seed_from_u64(5);
    let base: Vec<RunResult> = (0..3).map(|_| run(50, 40.0, 0.0, &mut g)).collect();
    let cand: Vec<RunResult> = (0..3).map(|_| run(50, 40.0, 0.0, &mut g)).collect();
    for (alpha, level) in [(0.05, "95 %"), (0.001, "99.9 %")] {
        let cfg = GateConfig {
            thresholds: vec![parse_threshold("error_rate", "+0.5pp").unwrap()],
            alpha,
            replicates: 100,
            seed: 1,
        };
        let rows = evaluate(&base, &cand, &cfg);
        let want = format!("the exact {level} upper bound on the increase");
        assert!(rows[0].reason.contains(&want), "{}", rows[0].reason);
    }
}

/// A TPOT p95 inside a jump of the values (a few requests of each run near 40 ms, the rest
/// near 23 ms, as on the quiet llama-server A/A) is inconclusive, and the row names an SLO in
/// the gap that would judge the share of slow requests instead.
#[test]
fn a_p95_in_a_jump_names_an_slo_in_the_gap() {
    use crate::model::record::Outcome;
    let jitter: Normal<f64> = Normal::new(0.0, 0.03).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let mut run = |slow: u64| -> RunResult {
        let records = (0..40u64)
            .map(|i| {
                let ms = if i < slow { 40.0 } else { 23.0 };
                crate::model::record::RequestRecord {
                    tpot_us: Some(ms * 1000.0 * jitter.sample(&mut rng).exp()),
                    end_us: i * 1_000_000,
                    output_tokens: 16,
                    max_tokens: 16,
                    ..crate::testkit::record(i, Outcome::Ok)
                }
            })
            .collect();
        crate::testkit::run_of(records, crate::testkit::scenario(""), 2)
    };
    let base: Vec<RunResult> = [3, 1, 2].into_iter().map(&mut run).collect();
    let cand: Vec<RunResult> = [2, 3, 1].into_iter().map(&mut run).collect();
    let rows = evaluate(&base, &cand, &ten_percent_cfg(&["tpot.p95"], 3));
    let r = &rows[0];
    println!("{}", r.reason);
    assert_eq!(r.verdict, Verdict::Inconclusive, "{}", r.reason);
    let after = "[slo] tpot_ms = ";
    let at = r.reason.find(after).expect(&r.reason) + after.len();
    let slo: f64 = r.reason[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((26.0..=36.0).contains(&slo), "{}", r.reason);
}
