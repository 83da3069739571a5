//! Is a stored run whole and self-consistent? A baseline is a file anyone can edit, and a bad
//! merge, a hand fix or a crash can leave one well-typed but impossible: all TTFTs 0, a TTFT of
//! `u64::MAX`, counts that contradict the records, a histogram that does not decode. The gate
//! must never turn such a file into a verdict, so every run it reads as a reference passes
//! these checks first; the first few problems are named, each with what was found.

use super::summary::{histogram, per_request_us};
use crate::model::hist;
use crate::model::metric::Latency;
use crate::model::record::{Outcome, RequestRecord};
use crate::model::result::RunResult;
use std::collections::{BTreeMap, BTreeSet};

/// No latency of a real request is longer than a day (µs); a larger one is corruption.
const LATENCY_MAX_US: u64 = 86_400_000_000;

/// Problems shown at most; the rest are counted.
const SHOWN: usize = 4;

/// Every way `run` is not a whole, self-consistent run to judge against (empty when it is).
pub fn problems(run: &RunResult) -> Vec<String> {
    check(run, true)
}

/// The same for a run judged as a candidate, where no successful request is a result — its
/// error rate is what regressed — and not a reason to refuse the run.
pub fn candidate_problems(run: &RunResult) -> Vec<String> {
    check(run, false)
}

/// `need_ok`: a run without a successful measured request is a problem (a reference has no
/// latency to compare against).
fn check(run: &RunResult, need_ok: bool) -> Vec<String> {
    let mut p = Vec::new();
    if !run.complete {
        p.push(match &run.failure {
            Some(f) => format!("is incomplete: the run failed ({f})"),
            None => "is incomplete (`complete: false`: it was interrupted)".to_string(),
        });
    }
    if run.requests_omitted > 0 {
        summary_only(run, need_ok, &mut p);
        p.extend(super::crosscheck::problems(run));
        return p;
    }
    let measured: Vec<&RequestRecord> = run.requests.iter().filter(|r| !r.warmup).collect();
    if measured.is_empty() {
        p.push("holds no measured requests".into());
        return p;
    }
    counts(run, &measured, need_ok, &mut p);
    latencies(&measured, run.api.streams(), &mut p);
    let w = run.summary.throughput.window_s;
    if !(w.is_finite() && w > 0.0) {
        p.push(format!(
            "has a measured time window of {w} s (it must be a positive number of seconds)"
        ));
    }
    histograms(run, &mut p);
    p.extend(super::crosscheck::problems(run));
    p
}

/// A run that kept no records (over `--keep-records`): its counts must add up, and its
/// histograms must decode and hold its successful requests' latencies, all plausible.
fn summary_only(run: &RunResult, need_ok: bool, p: &mut Vec<String>) {
    let c = &run.summary.counts;
    if !run.requests.is_empty() {
        p.push(format!(
            "says {} request records were omitted but holds {}",
            run.requests_omitted,
            run.requests.len()
        ));
    }
    let total = c.sent.saturating_add(c.warmup);
    if total != run.requests_omitted {
        p.push(format!(
            "says sent {} + warmup {} but {} requests were recorded",
            c.sent, c.warmup, run.requests_omitted
        ));
    }
    let outcomes = c
        .errors
        .values()
        .fold(c.ok.saturating_add(c.aborted), |a, n| a.saturating_add(*n));
    if outcomes != c.sent {
        p.push(format!(
            "says sent {} but its outcomes (ok, errors, aborted) add up to {outcomes}",
            c.sent
        ));
    }
    if need_ok && c.ok == 0 {
        p.push("has no successful measured request: there is no latency to compare against".into());
    }
    let w = run.summary.throughput.window_s;
    if !(w.is_finite() && w > 0.0) {
        p.push(format!(
            "has a measured time window of {w} s (it must be a positive number of seconds)"
        ));
    }
    for m in Latency::GATED.into_iter().filter(|m| stored_for(run, *m)) {
        let Some(text) = run.histograms.get(m.hist_key()) else {
            if c.ok > 0 && !m.partial() {
                p.push(format!("has no `{}` histogram", m.hist_key()));
            }
            continue;
        };
        let h = match hist::decode(text) {
            Ok(h) => h,
            Err(e) => {
                p.push(format!(
                    "has a `{}` histogram that is corrupt ({e})",
                    m.hist_key()
                ));
                continue;
            }
        };
        // TPOT needs two tokens, TTFO an answer: fewer values than requests is no fault.
        if !m.partial() && h.len() != c.ok {
            p.push(format!(
                "has a `{}` histogram of {} values but {} successful requests",
                m.hist_key(),
                h.len(),
                c.ok
            ));
        }
        if !h.is_empty() && (h.max() > LATENCY_MAX_US || (m == Latency::Ttft && h.min() == 0)) {
            p.push(format!(
                "has impossible values in its `{}` histogram (min {} µs, max {} µs)",
                m.hist_key(),
                h.min(),
                h.max()
            ));
        }
    }
}

/// The summary's counts must be the records' counts.
fn counts(run: &RunResult, measured: &[&RequestRecord], need_ok: bool, p: &mut Vec<String>) {
    let c = &run.summary.counts;
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let (mut ok, mut aborted) = (0u64, 0u64);
    for r in measured {
        match r.outcome {
            Outcome::Ok => ok += 1,
            Outcome::Aborted => aborted += 1,
            o => *errors.entry(o.name()).or_insert(0) += 1,
        }
    }
    let warmup = (run.requests.len() - measured.len()) as u64;
    let pairs = [
        ("sent", c.sent, measured.len() as u64),
        ("warmup", c.warmup, warmup),
        ("ok", c.ok, ok),
        ("aborted", c.aborted, aborted),
    ];
    for (name, said, found) in pairs {
        if said != found {
            p.push(format!(
                "says {name} = {said} but holds {found} such request records"
            ));
        }
    }
    if c.errors != errors {
        let show = |m: &BTreeMap<String, u64>| {
            let v: Vec<String> = m.iter().map(|(k, n)| format!("{k} {n}")).collect();
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(", ")
            }
        };
        p.push(format!(
            "says errors {} but its records hold {}",
            show(&c.errors),
            show(&errors)
        ));
    }
    let indices: BTreeSet<u64> = run.requests.iter().map(|r| r.index).collect();
    if indices.len() != run.requests.len() {
        p.push(format!(
            "holds {} request records but only {} distinct indices",
            run.requests.len(),
            indices.len()
        ));
    }
    if need_ok && ok == 0 {
        p.push("has no successful measured request: there is no latency to compare against".into());
    }
}

/// Successful requests have positive, finite, ordered latencies under a day (an unstreamed
/// API's, embeddings', an E2E only).
fn latencies(measured: &[&RequestRecord], streams: bool, p: &mut Vec<String>) {
    let mut bad: Vec<String> = Vec::new();
    for r in measured.iter().filter(|r| r.outcome.is_ok()) {
        // Without tokens to time, the E2E stands in for the first token.
        let ttft = if streams { r.ttft_us } else { r.e2e_us };
        let why = match (ttft, r.e2e_us) {
            (None, _) | (_, None) => Some("has no TTFT or E2E".to_string()),
            (Some(0), _) => Some("has a TTFT of 0 µs".to_string()),
            (Some(t), Some(e)) if t > LATENCY_MAX_US || e > LATENCY_MAX_US => Some(format!(
                "has a latency above a day (TTFT {t} µs, E2E {e} µs)"
            )),
            (Some(t), Some(e)) if e < t => Some(format!(
                "ends before its first token (TTFT {t} µs > E2E {e} µs)"
            )),
            _ => match r.tpot_us {
                Some(v) if !(v.is_finite() && (0.0..=LATENCY_MAX_US as f64).contains(&v)) => {
                    Some(format!("has TPOT {v} µs"))
                }
                _ if r.end_us < r.intended_us => {
                    Some("ends before it was meant to be sent".to_string())
                }
                _ => None,
            },
        };
        if let Some(why) = why {
            bad.push(format!("request {} {why}", r.index));
        }
    }
    if !bad.is_empty() {
        let more = bad.len().saturating_sub(SHOWN);
        bad.truncate(SHOWN);
        let tail = if more > 0 {
            format!("; and {more} more")
        } else {
            String::new()
        };
        p.push(format!(
            "holds impossible latencies: {}{tail}",
            bad.join("; ")
        ));
    }
}

/// Every stored histogram decodes, and those of the gated latencies hold the records' values.
fn histograms(run: &RunResult, p: &mut Vec<String>) {
    for (key, text) in &run.histograms {
        let h = match hist::decode(text) {
            Ok(h) => h,
            Err(e) => {
                p.push(format!("has a `{key}` histogram that is corrupt ({e})"));
                continue;
            }
        };
        if let Some(m) = Latency::GATED.into_iter().find(|m| m.hist_key() == key) {
            let want = histogram(&run.requests, m).len();
            if h.len() != want {
                p.push(format!(
                    "has a `{key}` histogram of {} values but {want} successful requests with a {}",
                    h.len(),
                    m.name()
                ));
            }
        }
    }
    for m in Latency::GATED.into_iter().filter(|m| stored_for(run, *m)) {
        let has_values = run
            .requests
            .iter()
            .any(|r| !r.warmup && r.outcome.is_ok() && per_request_us(r, m).is_some());
        if has_values && !run.histograms.contains_key(m.hist_key()) {
            p.push(format!("has no `{}` histogram", m.hist_key()));
        }
    }
}

/// Whether a run stores a histogram of `m`: TTFO and the answer's TPOT only when its streams
/// carried reasoning (without any they are TTFT and TPOT, not stored twice), the server's
/// prefill and the rest of TTFT only when its replies carried the server's clock.
fn stored_for(run: &RunResult, m: Latency) -> bool {
    (!m.reasoning_only() || run.summary.tokens.reasoning.is_some())
        && (!m.server_reported() || run.summary.server_clock.is_some())
        && (run.api.streams() || !m.token_timed())
        && (!m.tool_only() || run.summary.tokens.tool_calls.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{record, run_of, scenario};

    fn good() -> RunResult {
        let records = (0..6)
            .map(|i| RequestRecord {
                ttft_us: Some(20_000 + i * 100),
                e2e_us: Some(60_000 + i * 100),
                tpot_us: Some(5_000.0),
                end_us: 100_000 + i * 10_000,
                ..record(i, Outcome::Ok)
            })
            .collect();
        run_of(records, scenario(""), 1)
    }

    #[test]
    fn a_whole_run_has_no_problems() {
        assert_eq!(problems(&good()), Vec::<String>::new());
    }

    #[test]
    fn each_corruption_is_named() {
        type Corrupt = fn(&mut RunResult);
        let cases: Vec<(&str, Corrupt)> = vec![
            ("incomplete", |r| r.complete = false),
            ("TTFT of 0", |r| {
                r.requests.iter_mut().for_each(|q| q.ttft_us = Some(0))
            }),
            ("above a day", |r| r.requests[2].ttft_us = Some(u64::MAX)),
            ("no measured requests", |r| r.requests.clear()),
            ("says ok = 6 but holds 5", |r| {
                r.requests.pop();
            }),
            ("histogram that is corrupt", |r| {
                r.histograms.insert("ttft_us".into(), "!!".into());
            }),
            ("time window of 0 s", |r| {
                r.summary.throughput.window_s = 0.0
            }),
            ("TPOT NaN", |r| r.requests[1].tpot_us = Some(f64::NAN)),
            ("histogram of 6 values but 5", |r| {
                r.requests[0].ttft_us = None
            }),
        ];
        for (want, corrupt) in cases {
            let mut r = good();
            corrupt(&mut r);
            let got = problems(&r).join(" | ");
            assert!(got.contains(want), "`{want}` not in: {got}");
        }
    }

    #[test]
    fn a_run_whose_every_request_failed_is_a_candidate_not_a_reference() {
        let records = (0..4).map(|i| record(i, Outcome::Http(503))).collect();
        let r = run_of(records, scenario(""), 1);
        assert_eq!(candidate_problems(&r), Vec::<String>::new());
        assert!(problems(&r)
            .join(" ")
            .contains("no successful measured request"));
        let mut cut = r.clone();
        cut.complete = false;
        assert!(candidate_problems(&cut).join(" ").contains("incomplete"));
    }
}
