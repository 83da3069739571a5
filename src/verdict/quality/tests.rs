//! The quality rows' paired test: its error rates measured over seeded item sets.

use super::*;
use crate::model::quality::{QualityAnswer, QualityRun};
use crate::testkit::{record, rng, run_of, scenario};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// A run whose quality pass answered `right[i]` (item i right or wrong) with `key[i]`.
fn run(answers: &[(bool, u64)]) -> RunResult {
    let mut r = run_of(
        vec![record(0, crate::model::record::Outcome::Ok)],
        scenario(""),
        1,
    );
    r.quality = Some(QualityRun {
        set: "s".into(),
        set_sha256: "h".into(),
        max_tokens: 16,
        answers: answers
            .iter()
            .enumerate()
            .map(|(i, (right, key))| QualityAnswer {
                id: i.to_string(),
                text: Some(key.to_string()),
                extracted: Some(key.to_string()),
                correct: Some(*right),
                error: None,
            })
            .collect(),
        seconds: 0.0,
    });
    r
}

/// One engine's pass over `items` items, each known with probability `skill[i]`; an answer
/// flips (to a wrong one that is the same every time) with probability `flip`; `lost` of
/// the items it knew it now gets wrong (a quantization's cost: the first ones).
fn pass(skill: &[f64], flip: f64, lost: usize, rng: &mut ChaCha8Rng) -> Vec<(bool, u64)> {
    let mut to_lose = lost;
    skill
        .iter()
        .map(|&s| {
            let mut knows = s > 0.5;
            if knows && to_lose > 0 {
                (knows, to_lose) = (false, to_lose - 1);
            }
            let flipped = rng.random_bool(flip);
            let right = knows && !flipped;
            (right, if right { 1 } else { 2 + u64::from(flipped) })
        })
        .collect()
}

/// The two quality rows at the shipped thresholds (−1 pp each): α = 0.05 over both (m = 2).
fn cfg() -> crate::config::thresholds::GateConfig {
    use crate::config::thresholds::parse_threshold;
    crate::config::thresholds::GateConfig {
        thresholds: vec![
            parse_threshold("accuracy", "-1pp").unwrap(),
            parse_threshold("agreement", "-1pp").unwrap(),
        ],
        alpha: 0.05,
        replicates: 100,
        seed: 1,
    }
}

/// Items a set: the builtin set's size.
const ITEMS: usize = 400;

fn verdicts(metric: Metric, sets: usize, flip: f64, lost: usize, seed: u64) -> [usize; 4] {
    let mut rng = rng(seed);
    let mut out = [0; 4];
    for _ in 0..sets {
        let skill: Vec<f64> = (0..ITEMS).map(|_| rng.random()).collect();
        let (b1, b2) = (
            pass(&skill, flip, 0, &mut rng),
            pass(&skill, flip, 0, &mut rng),
        );
        let c1 = pass(&skill, flip, lost, &mut rng);
        let (base, cand) = ([run(&b1), run(&b2)], [run(&c1)]);
        let rows = crate::verdict::gate::evaluate(&base, &cand, &cfg());
        let v = rows.iter().find(|r| r.metric == metric).unwrap().verdict;
        out[match v {
            Verdict::Regressed => 0,
            Verdict::NoChange => 1,
            Verdict::Inconclusive => 2,
            _ => 3,
        }] += 1;
    }
    out
}

#[test]
fn mcnemar_matches_hand_computed_tails() {
    let c = PairedCounts {
        n: 100,
        worse: 8,
        better: 1,
        base_ones: 70,
        cand_ones: 63,
        flips_unmeasured: false,
    };
    let (w, b) = c.p_worse_better();
    // P(Bin(9, ½) ≥ 8) = (9 + 1) / 512.
    assert!((w - 10.0 / 512.0).abs() < 1e-12, "{w}");
    assert!((b - (1.0 - 1.0 / 512.0)).abs() < 1e-12, "{b}");
    let (lo, hi) = c.interval(0.95);
    assert!(lo < c.effect() && c.effect() < hi);
}

#[test]
fn with_nothing_changed_a_quality_row_fails_at_most_alpha_of_the_time() {
    // 2,000 item sets of 400 each, a deterministic engine and one whose answers flip 5 % of
    // the time with nothing changed: false FAILs at most α/m = 0.025 a row (50 of 2,000).
    for metric in [Metric::Accuracy, Metric::Agreement] {
        for flip in [0.0, 0.05] {
            let v = verdicts(metric, 2000, flip, 0, 7);
            println!("{metric} flip {flip}: regressed/no_change/inconclusive/other {v:?}");
            assert!(
                v[0] <= 50,
                "{metric} flip {flip}: {} false FAILs of 2,000",
                v[0]
            );
        }
    }
}

#[test]
fn a_quantization_that_loses_answers_is_caught() {
    // Power at the builtin set's 400 items, 2,000 sets each: the candidate gets wrong `lost`
    // of the items the model knew (a drop of lost / 400).
    let caught = |metric, flip, lost| verdicts(metric, 2000, flip, lost, 9)[0];
    let accuracy_8pp = caught(Metric::Accuracy, 0.0, 32);
    assert!(
        accuracy_8pp >= 1990,
        "an 8 pp drop caught {accuracy_8pp} of 2,000"
    );
    let accuracy_3pp = caught(Metric::Accuracy, 0.0, 12);
    let agreement_2pp = caught(Metric::Agreement, 0.0, 8);
    let flaky_3pp = caught(Metric::Accuracy, 0.05, 12);
    assert!(
        accuracy_3pp >= 1900 && agreement_2pp >= 1900,
        "{accuracy_3pp} {agreement_2pp}"
    );
    println!("power at 400 items: accuracy −8 pp {accuracy_8pp}, −3 pp {accuracy_3pp} (flip 5 %: {flaky_3pp}), agreement −2 pp {agreement_2pp} of 2,000");
}
