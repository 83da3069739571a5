//! Statistical validation of the gate on seeded synthetic samples (no servers): false alarms
//! under A/A with run-to-run drift, power at twice the threshold, and inconclusive small runs.

use super::*;
use crate::config::thresholds::parse_threshold;
use crate::model::metric::Metric;
use crate::testkit::lognormal_run as run;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// Candidate runs per comparison: `bench compare --repeat`'s default.
pub(super) const CAND_RUNS: usize = 3;

pub(super) fn cfg(seed: u64) -> GateConfig {
    let t = vec![
        parse_threshold("ttft.p50", "10%").unwrap(),
        parse_threshold("ttft.p95", "10%").unwrap(),
    ];
    GateConfig {
        thresholds: t,
        alpha: 0.05,
        replicates: 1000,
        seed,
    }
}

/// Runs `pairs` comparisons; returns per-metric verdicts.
pub(super) fn trial(
    pairs: u64,
    n: usize,
    shift: f64,
    drift_sd: f64,
    seed: u64,
) -> Vec<Vec<Verdict>> {
    verdicts(rounds_of(pairs, 3, n, shift, drift_sd, seed))
}

/// Each round's verdicts, metric by metric.
pub(super) fn verdicts(rounds: Vec<Vec<Row>>) -> Vec<Vec<Verdict>> {
    rounds
        .into_iter()
        .map(|rows| rows.into_iter().map(|r| r.verdict).collect())
        .collect()
}

/// `pairs` comparisons of `reps` baseline runs with [`CAND_RUNS`] candidate runs of `n`
/// requests, each run drifted by N(0, `drift_sd`) and the candidate's shifted by `shift`.
pub(super) fn rounds_of(
    pairs: u64,
    reps: usize,
    n: usize,
    shift: f64,
    drift_sd: f64,
    seed: u64,
) -> Vec<Vec<Row>> {
    let drift = Normal::new(0.0, drift_sd).unwrap();
    (0..pairs)
        .map(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed * 1_000_003 + i);
            let base: Vec<RunResult> = (0..reps)
                .map(|_| run(n, 50.0, drift.sample(&mut rng), &mut rng))
                .collect();
            let cand: Vec<RunResult> = (0..CAND_RUNS)
                .map(|_| {
                    let d = drift.sample(&mut rng) + shift;
                    run(n, 50.0, d, &mut rng)
                })
                .collect();
            evaluate(&base, &cand, &cfg(i))
        })
        .collect()
}

#[test]
fn false_alarm_rate_under_a_a_is_at_most_alpha() {
    let pairs = 200;
    // α plus three binomial standard deviations.
    let slack = 3.0 * (0.05f64 * 0.95 / pairs as f64).sqrt();
    for drift in [0.02, 0.05] {
        let res = trial(pairs, 2000, 0.0, drift, 1);
        let alarms = res
            .iter()
            .filter(|v| v.contains(&Verdict::Regressed))
            .count();
        let rate = alarms as f64 / pairs as f64;
        let inconclusive = res
            .iter()
            .filter(|v| v.contains(&Verdict::Inconclusive))
            .count();
        println!("A/A, drift {drift}: false alarms {alarms}/{pairs} = {rate:.3} (bound {:.3}); inconclusive {inconclusive}/{pairs}", 0.05 + slack);
        assert!(rate <= 0.05 + slack);
    }
}

#[test]
fn a_shift_of_twice_the_threshold_is_detected() {
    let pairs = 200;
    // 2000 requests a run, 3 candidate runs, 2 % run-to-run drift. With 3 baseline
    // repetitions the drift is known to 4 degrees of freedom, and Student's t pays for that
    // in power; 5 repetitions buy it back.
    for (reps, want) in [(3, 0.85), (5, 0.95)] {
        let res = verdicts(rounds_of(pairs, reps, 2000, 2.0 * 1.1f64.ln(), 0.02, 2));
        for (m, name) in ["ttft.p50", "ttft.p95"].iter().enumerate() {
            let hits = res.iter().filter(|v| v[m] == Verdict::Regressed).count();
            println!("power at 2× threshold, {reps} repetitions, {name}: {hits}/{pairs}");
            assert!(
                hits as f64 >= want * pairs as f64,
                "{reps} reps, {name}: {hits}/{pairs}"
            );
        }
    }
}

#[test]
fn small_runs_are_inconclusive_not_passed() {
    let res = rounds_of(50, 3, 20, 0.0, 0.02, 3);
    let counts = |m: usize, v: Verdict| res.iter().filter(|r| r[m].verdict == v).count();
    println!(
        "n = 20: p50 inconclusive {}/50, p95 not gated {}/50, any pass {}",
        counts(0, Verdict::Inconclusive),
        counts(1, Verdict::NotGated),
        counts(0, Verdict::NoChange)
    );
    // Too small to see 10 %: a p50 passes only where the bound on worse excludes 10 %.
    for r in res.iter().map(|r| &r[0]) {
        assert!(r.critical > r.floor, "{}", r.reason);
        if r.verdict == Verdict::NoChange {
            assert!(r.bound <= r.floor, "{}", r.reason);
        }
    }
    assert!(counts(0, Verdict::Inconclusive) >= 40);
    // A p95 of 20 values cannot be bounded distribution-free (that needs 72): not gated.
    assert_eq!(counts(1, Verdict::NotGated), 50);
}

/// The non-inferiority "no change" (`decide`: the bound on worse, effect + q(1 − α)·SE, ≤
/// floor while critical > floor) on rows too noisy to see the threshold: at a true
/// regression of exactly the threshold it is wrong at most α of the time (each metric at α:
/// an intersection–union test), and in an A/A it settles rows that used to be inconclusive
/// only for want of seeing an improvement.
#[test]
fn a_bound_inside_the_threshold_passes_and_is_rarely_wrong() {
    // 200 requests a run, 3 runs a side, 2 % drift: the p50's critical is above the 10 %
    // floor in most rounds. p50 and p95 are gated (m = 2).
    let rounds = 200u64;
    let by_bound = |v: &[Row]| v[0].verdict == Verdict::NoChange && v[0].critical > v[0].floor;
    let judged = |shift: f64, seed: u64| rounds_of(rounds, 3, 200, shift, 0.02, seed);
    let at_threshold = judged(1.1f64.ln(), 41);
    let wrong = at_threshold.iter().filter(|v| by_bound(v)).count();
    let aa = judged(0.0, 42);
    let settled = aa.iter().filter(|v| by_bound(v)).count();
    let still = aa
        .iter()
        .filter(|v| v[0].verdict == Verdict::Inconclusive)
        .count();
    let noisy = aa.iter().filter(|v| v[0].critical > v[0].floor).count();
    println!(
        "true +10 %: no change by the bound {wrong}/{rounds}; A/A: critical > floor in {noisy}/{rounds}, of them settled by the bound {settled}, inconclusive {still}"
    );
    let tail = 0.05; // α, not α/m
    let slack = 3.0 * (tail * (1.0 - tail) / rounds as f64).sqrt();
    assert!(
        wrong as f64 <= (tail + slack) * rounds as f64,
        "{wrong}/{rounds}"
    );
    assert!(
        noisy * 2 > rounds as usize,
        "the setting must be noisy: {noisy}"
    );
    assert!(settled * 5 > noisy, "{settled} of {noisy}");
    let undecided = |r: &&Row| matches!(r.verdict, Verdict::NoChange | Verdict::Inconclusive);
    for r in aa
        .iter()
        .map(|v| &v[0])
        .filter(|r| r.critical > r.floor)
        .filter(undecided)
    {
        let by_the_bound = r.verdict == Verdict::NoChange;
        assert_eq!(by_the_bound, r.bound <= r.floor, "{}", r.reason);
        // The bound is the one-sided 1 − α one, inside the 1 − α/m critical value's.
        assert!(r.bound < r.effect + r.critical, "{}", r.reason);
        if by_the_bound {
            assert!(r.reason.contains("no regression of 10%"), "{}", r.reason);
        }
    }
}

#[test]
fn reasons_and_intervals_read_right() {
    let mut rng = ChaCha8Rng::seed_from_u64(4);
    let base: Vec<RunResult> = (0..3).map(|_| run(2000, 50.0, 0.0, &mut rng)).collect();
    let cand = run(2000, 50.0, 0.3, &mut rng);
    let rows = evaluate(&base, std::slice::from_ref(&cand), &cfg(0));
    let r = &rows[0];
    assert_eq!(r.verdict, Verdict::Regressed);
    assert!(
        r.reason.starts_with("REGRESSED ttft.p50 +3"),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("n=6000/2000"), "{}", r.reason);
    assert!(r.interval_low < r.delta_pct && r.delta_pct < r.interval_high);
    assert!((r.baseline - 50.0).abs() < 2.0 && r.unit == "ms");
}

#[test]
fn tiny_runs_keep_the_false_alarm_rate() {
    // 8 requests a run, as the real-engine A/A has: a p95 of 8 values is the top order
    // statistic, whose bootstrap spread is too narrow.
    let pairs = 200;
    let slack = 3.0 * (0.05f64 * 0.95 / pairs as f64).sqrt();
    let res = trial(pairs, 8, 0.0, 0.02, 5);
    let alarms = res
        .iter()
        .filter(|v| v.contains(&Verdict::Regressed))
        .count();
    println!("A/A at n = 8: false alarms {alarms}/{pairs}");
    assert!(
        alarms as f64 / pairs as f64 <= 0.05 + slack,
        "{alarms}/{pairs}"
    );
}

#[test]
fn quantile_minimum_sizes_are_the_distribution_free_ones() {
    let a = 0.05;
    assert_eq!(min_n_for_quantile(0.5, a), 6);
    assert_eq!(min_n_for_quantile(0.9, a), 36);
    assert_eq!(min_n_for_quantile(0.95, a), 72);
    // Defining property: pⁿ ≤ α/2 at n, not at n − 1.
    for p in [0.5, 0.75, 0.9, 0.95, 0.99] {
        let n = min_n_for_quantile(p, a) as i32;
        assert!(p.powi(n) <= a / 2.0 && p.powi(n - 1) > a / 2.0, "{p}");
    }
}

/// A run of 40 requests from a closed loop of two that locked into one of two states for the
/// whole run: in phase (both prompts prefilled together: TTFT ≈ 670 ms, TPOT ≈ 21 ms) or out
/// of phase (each prefill alone, stalling the other's decode: TTFT ≈ 360 ms, TPOT ≈ 43 ms).
/// E2E is the same either way — what a real llama-server A/A showed on a busy machine.
pub(crate) fn phased_run(out_of_phase: bool, rng: &mut ChaCha8Rng) -> RunResult {
    use crate::model::record::Outcome;
    use crate::model::scenario::LoadMode;
    let (ttft_ms, tpot_ms) = if out_of_phase {
        (360.0, 43.0)
    } else {
        (670.0, 21.0)
    };
    let jitter: Normal<f64> = Normal::new(0.0, 0.04).unwrap();
    let records = (0..40u64)
        .map(|i| {
            let ttft = (ttft_ms * 1000.0 * jitter.sample(rng).exp()) as u64;
            let tpot = tpot_ms * 1000.0 * jitter.sample(rng).exp();
            let e2e = 670_000 + 15 * 21_000 + (jitter.sample(rng) * 20_000.0) as i64;
            crate::model::record::RequestRecord {
                ttft_us: Some(ttft),
                tpot_us: Some(tpot),
                e2e_us: Some(e2e as u64),
                end_us: i * 1_000_000 + e2e as u64,
                output_tokens: 16,
                max_tokens: 16,
                ..crate::testkit::record(i, Outcome::Ok)
            }
        })
        .collect();
    let mut s = crate::testkit::scenario("");
    s.load.mode = LoadMode::Closed { concurrency: 2 };
    crate::testkit::run_of(records, s, 2)
}

/// `keys` gated at 10 %, α = 0.05, 400 replicates.
pub(super) fn ten_percent_cfg(keys: &[&str], seed: u64) -> GateConfig {
    GateConfig {
        thresholds: keys
            .iter()
            .map(|k| parse_threshold(k, "10%").unwrap())
            .collect(),
        alpha: 0.05,
        replicates: 400,
        seed,
    }
}

pub(super) fn p50_cfg(seed: u64) -> GateConfig {
    ten_percent_cfg(&["ttft.p50", "tpot.p50", "e2e.p50"], seed)
}

/// A/A rounds on the two-state closed loop: every run of either arm is out of phase with
/// probability `p`. Returns how many rounds called a regression.
pub(super) fn phased_false_alarms(rounds: u64, base_runs: usize, cand_runs: usize, p: f64) -> u64 {
    (0..rounds)
        .filter(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(9_000 + i);
            let arm = |k: usize, rng: &mut ChaCha8Rng| -> Vec<RunResult> {
                (0..k)
                    .map(|_| {
                        let out = rand::Rng::random_bool(rng, p);
                        phased_run(out, rng)
                    })
                    .collect()
            };
            let base = arm(base_runs, &mut rng);
            let cand = arm(cand_runs, &mut rng);
            evaluate(&base, &cand, &p50_cfg(*i))
                .iter()
                .any(|r| r.verdict == Verdict::Regressed)
        })
        .count() as u64
}

#[test]
fn a_run_level_mode_switch_does_not_cry_wolf_when_the_candidate_is_repeated() {
    // The failure seen on llama-server with a busy neighbour: 3 baseline runs that happened
    // not to flip, one candidate run that did, and the per-request noise says "significant".
    // With the candidate repeated, the runs' spread in both arms carries the states.
    // Seeded, so the counts are fixed: 17/200 with one candidate run, 2/200 with three.
    let rounds = 200;
    let alpha = 0.05;
    let one = phased_false_alarms(rounds, 3, 1, 0.3);
    let three = phased_false_alarms(rounds, 3, 3, 0.3);
    println!(
        "two-state A/A, 30 % of runs out of phase: false alarms with 1 candidate run {one}/{rounds}, with 3 {three}/{rounds}"
    );
    assert!(
        one as f64 / rounds as f64 > alpha,
        "a single candidate run should show the failure this guards against ({one}/{rounds})"
    );
    assert!(
        three as f64 / rounds as f64 <= alpha,
        "{three}/{rounds} false alarms with 3 candidate runs"
    );
}

/// The per-run spread SE of a quantile, the rejected model: the spread of the runs'
/// own ln q_p pooled over both arms, s²(1/R + 1/K).
pub(super) fn per_run_spread_se(base: &[RunResult], cand: &[RunResult], m: Metric) -> f64 {
    let Metric::Latency(l, q) = m else {
        unreachable!()
    };
    let logs = |runs: &[RunResult]| -> Vec<f64> {
        runs.iter()
            .filter_map(|r| crate::metrics::summary::sample_in(r, l, None).quantile(q.p()))
            .map(f64::ln)
            .collect()
    };
    let (a, b) = (logs(base), logs(cand));
    let ss = |v: &[f64]| {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        v.iter().map(|x| (x - m).powi(2)).sum::<f64>()
    };
    let s2 = (ss(&a) + ss(&b)) / (a.len() + b.len() - 2) as f64;
    (s2 * (1.0 / a.len() as f64 + 1.0 / b.len() as f64)).sqrt()
}

#[test]
fn a_pooled_quantile_of_two_state_runs_gets_the_noise_it_really_has() {
    // A/A rounds of 12 runs a side of the two-state closed loop, 30 % of runs out of phase.
    // The gate judges each arm's pooled quantile: the p95s lie inside one state's values
    // (TTFT in phase, TPOT out of phase) and barely move with how many runs flipped, while
    // each run's own p95 jumps between the states; the p50s move with the mix. The SE must
    // follow what the pooled quantile really does over rounds — seeded, so the figures are
    // fixed (printed below).
    let rounds = 120u64;
    let keys = ["ttft.p50", "tpot.p50", "ttft.p95", "tpot.p95"];
    let cfg = |seed| ten_percent_cfg(&keys, seed);
    let (mut effects, mut ses, mut old) = (vec![vec![]; 4], vec![vec![]; 4], vec![vec![]; 4]);
    let (mut alarms, mut inconclusive) = (0, [0; 4]);
    for i in 0..rounds {
        let mut rng = ChaCha8Rng::seed_from_u64(31_000 + i);
        let mut arm = |t0: i64| -> Vec<RunResult> {
            (0..12)
                .map(|j| {
                    let out = rand::Rng::random_bool(&mut rng, 0.3);
                    at(phased_run(out, &mut rng), t0 + j)
                })
                .collect()
        };
        let (base, cand) = (arm(0), arm(100));
        let rows = evaluate(&base, &cand, &cfg(i));
        alarms += rows.iter().any(|r| r.verdict == Verdict::Regressed) as u64;
        for (k, r) in rows.iter().enumerate() {
            effects[k].push(r.effect);
            ses[k].push(r.se);
            old[k].push(per_run_spread_se(&base, &cand, r.metric));
            inconclusive[k] += (r.verdict == Verdict::Inconclusive) as u64;
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    for k in 0..4 {
        let truth = crate::verdict::stats::sd(&effects[k]).unwrap();
        let (now, before) = (mean(&ses[k]) / truth, mean(&old[k]) / truth);
        println!(
            "{}: real spread of the effect {truth:.4}; SE / spread now {now:.2}, by the runs' own quantiles {before:.2}; inconclusive {}/{rounds}",
            keys[k], inconclusive[k]
        );
        assert!((0.8..1.6).contains(&now), "{}: {now:.2}", keys[k]);
        match keys[k] {
            // The runs' own p50s moved less than the pooled one: over-confident, the
            // false alarms the old model risked here.
            "ttft.p50" | "tpot.p50" => assert!(before < 0.8, "{}: {before:.2}", keys[k]),
            // Inside the in-phase TTFTs the pooled p95 hardly moves; the runs' own p95s
            // made it inconclusive every time.
            "ttft.p95" => {
                assert!(before > 3.0, "{before:.2}");
                assert!(
                    inconclusive[k] * 5 <= rounds,
                    "{}/{rounds}",
                    inconclusive[k]
                );
            }
            // 0 or 1 of 12 runs out of phase (8 % of rounds) drops the p95 into the
            // in-phase TPOTs: really that noisy, and inconclusive says so.
            _ => {}
        }
    }
    println!("false alarms {alarms}/{rounds}");
    assert!(alarms as f64 <= 0.05 * rounds as f64, "{alarms}/{rounds}");
}

/// A run over `--keep-records` (or a bounded baseline's long repetition) holds histograms but
/// no records. Where requests are resampled one by one anyway (not a closed loop of ≥ 2), the
/// gate sees the very same values from the histograms, so every row — value, interval,
/// verdict — is identical to the one judged from the records.
#[test]
fn runs_without_records_are_judged_exactly_as_with_them() {
    let strip = |r: &RunResult| {
        let mut r = r.clone();
        r.requests_omitted = r.requests.len() as u64;
        r.requests.clear();
        r
    };
    let mut t = cfg(3);
    t.thresholds
        .push(parse_threshold("e2e.p95", "10%").unwrap());
    for (i, shift) in [0.0, 0.05, 0.3].into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(40 + i as u64);
        let base: Vec<RunResult> = (0..3).map(|_| run(500, 50.0, 0.0, &mut rng)).collect();
        let cand: Vec<RunResult> = (0..2).map(|_| run(500, 50.0, shift, &mut rng)).collect();
        let with = evaluate(&base, &cand, &t);
        let base2: Vec<RunResult> = base.iter().map(strip).collect();
        let cand2: Vec<RunResult> = cand.iter().map(strip).collect();
        for r in base2.iter().chain(&cand2) {
            assert!(
                crate::metrics::consistency::problems(r).is_empty(),
                "{:?}",
                crate::metrics::consistency::problems(r)
            );
        }
        assert_eq!(with, evaluate(&base2, &cand2, &t), "shift {shift}");
    }
}

/// `r` started `t` seconds after the epoch.
pub(super) fn at(mut r: RunResult, t: i64) -> RunResult {
    r.started_at = chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(t);
    r
}

/// Rounds of `base_runs` quiet baseline runs (2 % drift) against `cand_runs` busy candidate
/// runs (15 % drift), nothing changed: how many rounds had a regressed row.
fn quiet_baseline_busy_candidate(rounds: u64, base_runs: usize, cand_runs: usize) -> usize {
    let (quiet, busy) = (
        Normal::new(0.0, 0.02).unwrap(),
        Normal::new(0.0, 0.15).unwrap(),
    );
    (0..rounds)
        .filter(|i| {
            let mut rng = ChaCha8Rng::seed_from_u64(7_000_003 + i);
            let base: Vec<RunResult> = (0..base_runs)
                .map(|_| run(200, 50.0, quiet.sample(&mut rng), &mut rng))
                .collect();
            let cand: Vec<RunResult> = (0..cand_runs)
                .map(|_| run(200, 50.0, busy.sample(&mut rng), &mut rng))
                .collect();
            evaluate(&base, &cand, &cfg(*i))
                .iter()
                .any(|r| r.verdict == Verdict::Regressed)
        })
        .count()
}

#[test]
fn a_large_quiet_baseline_does_not_lend_its_calm_to_a_busy_candidate() {
    // A baseline of 12 quiet runs (what `--plan` advises for decisiveness) against the first
    // look's 3 candidate runs on a busy machine. Pooled over the arms, the spread is mostly
    // the quiet arm's, and the busy arm's mean of three runs, which moves by ≈ 9 %, passed as
    // known to ≈ 4 %: 23 of 300 seeded rounds failed with nothing changed. Judged with each
    // arm's own spread where that is larger (`two_sample`), none. The usual case — 3 baseline
    // runs against more candidate runs, both alike — is judged as before.
    let rounds = 300;
    let slack = 3.0 * (0.05f64 * 0.95 / rounds as f64).sqrt();
    let big = quiet_baseline_busy_candidate(rounds, 12, 3);
    println!("12 quiet baseline runs vs 3 busy candidate runs, A/A: false fails {big}/{rounds}");
    assert!(
        big as f64 / rounds as f64 <= 0.05 + slack,
        "{big}/{rounds} false fails"
    );
}
