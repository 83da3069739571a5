//! Does a stored run's summary say what its own data says? [`super::consistency`] checks
//! that a run is whole (counts add up, latencies are possible, histograms decode); this checks
//! that the figures a verdict reads cannot be edited apart from the data they were made from:
//!
//! * every latency summary is recomputed with the one estimator from the values the gate
//!   reads ([`summary::sample`]: the records, or the stored histograms of a run that kept
//!   none) and must equal the stored one;
//! * the stored histograms of a run with records must hold the records' values;
//! * where records were dropped, the histograms are checked against each other: a request's
//!   TTFT and TPOT never exceed its E2E, so neither may any of their quantiles (a TPOT
//!   histogram replaced by an E2E one fails here);
//! * throughputs are the counts over the window (finite, not negative), goodput is at most the
//!   request rate, a run ends after it starts, and it has this bench's schema version.
//!
//! Figures are compared to a relative 1e-9: JSON round-trips f64 exactly (serde_json's
//! `float_roundtrip`), so only an edit differs.

use super::quantile::Sample;
use super::summary::{self, latency_summary};
use crate::model::hist;
use crate::model::metric::Latency;
use crate::model::result::{RunResult, SCHEMA_VERSION};
use crate::model::summary::LatencySummary;

/// HDR resolution (3 significant digits) and the estimator's interpolation between two
/// quantized values: a quantile of a pointwise-smaller metric may exceed the larger's by this.
const HDR_SLACK: f64 = 1.002;

/// Every way `run`'s summary contradicts its own data (empty when none does).
pub fn problems(run: &RunResult) -> Vec<String> {
    let mut p = Vec::new();
    if run.schema_version != SCHEMA_VERSION {
        p.push(format!(
            "has schema_version {} inside a file of schema {SCHEMA_VERSION}",
            run.schema_version
        ));
    }
    if run.ended_at < run.started_at {
        p.push(format!(
            "ends ({}) before it starts ({})",
            run.ended_at, run.started_at
        ));
    }
    latencies(run, &mut p);
    if run.requests_omitted == 0 {
        histograms_hold_records(run, &mut p);
    } else {
        dominance(run, &mut p);
    }
    throughput(run, &mut p);
    p
}

/// A figure as read: plain, or in exponent form when very large or small.
fn num(v: f64) -> String {
    if v != 0.0 && !(1e-6..1e12).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

fn same(a: &LatencySummary, b: &LatencySummary) -> bool {
    let f = |s: &LatencySummary| [s.mean, s.min, s.p50, s.p90, s.p95, s.p99, s.p999, s.max];
    a.count == b.count && f(a).iter().zip(f(b)).all(|(x, y)| close(*x, y))
}

/// Each stored latency summary equals the one its values give.
fn latencies(run: &RunResult, p: &mut Vec<String>) {
    for stored in &run.summary.latency {
        let m = stored.name;
        let want = latency_summary(m, &summary::sample(run, m));
        if !same(stored, &want) {
            p.push(format!(
                "has a {} summary (n {}, p50 {} ms, p95 {} ms) that its values contradict (n {}, p50 {} ms, p95 {} ms)",
                m.name(),
                stored.count,
                stored.p50,
                stored.p95,
                want.count,
                want.p50,
                want.p95
            ));
        }
    }
}

/// The stored histograms of the per-request latencies hold exactly the records' values.
fn histograms_hold_records(run: &RunResult, p: &mut Vec<String>) {
    for m in Latency::GATED {
        let Some(h) = run
            .histograms
            .get(m.hist_key())
            .and_then(|t| hist::decode(t).ok())
        else {
            continue;
        };
        let stored = latency_summary(m, &Sample::from_hist(&h));
        let records = latency_summary(m, &Sample::from_hist(&summary::histogram(&run.requests, m)));
        if !same(&stored, &records) {
            p.push(format!(
                "has a `{}` histogram (p50 {} ms) that is not its records' (p50 {} ms)",
                m.hist_key(),
                stored.p50,
                records.p50
            ));
        }
    }
}

/// Without records, the histograms against each other. TTFT and E2E are over the same
/// requests and TTFT ≤ E2E for each, so every TTFT quantile is at most E2E's. TPOT is over the
/// requests with two or more tokens, where TTFT + TPOT ≤ E2E: so the largest TPOT plus the
/// smallest TTFT is at most the largest E2E, and n·(mean TPOT + min TTFT) at most the E2E sum.
fn dominance(run: &RunResult, p: &mut Vec<String>) {
    let get = |m: Latency| {
        let h = run.histograms.get(m.hist_key())?;
        hist::decode(h)
            .ok()
            .map(|h| latency_summary(m, &Sample::from_hist(&h)))
    };
    let (Some(ttft), Some(e2e)) = (get(Latency::Ttft), get(Latency::E2e)) else {
        return;
    };
    let qs = |s: &LatencySummary| [s.min, s.p50, s.p90, s.p95, s.p99, s.max];
    let mut bad = |m: Latency, s: &LatencySummary| {
        p.push(format!(
            "has a `{}` histogram (n {}, p50 {} ms, max {} ms) that no request's E2E allows (n {}, p50 {} ms, max {} ms)",
            m.hist_key(),
            s.count,
            s.p50,
            s.max,
            e2e.count,
            e2e.p50,
            e2e.max
        ))
    };
    if ttft.count != e2e.count
        || qs(&ttft)
            .iter()
            .zip(qs(&e2e))
            .any(|(v, e)| *v > e * HDR_SLACK)
    {
        bad(Latency::Ttft, &ttft);
    }
    if let Some(tpot) = get(Latency::Tpot) {
        let n = tpot.count as f64;
        if tpot.count > e2e.count
            || tpot.max + ttft.min > e2e.max * HDR_SLACK
            || n * (tpot.mean + ttft.min) > e2e.count as f64 * e2e.mean * HDR_SLACK
        {
            bad(Latency::Tpot, &tpot);
        }
    }
}

/// Rates are counts over the window, finite and not negative.
fn throughput(run: &RunResult, p: &mut Vec<String>) {
    let t = &run.summary.throughput;
    let tok = &run.summary.tokens;
    let per_s = |x: f64| {
        if t.window_s > 0.0 {
            x / t.window_s
        } else {
            0.0
        }
    };
    let rates = [
        (
            "request_rps",
            t.request_rps,
            per_s(run.summary.counts.ok as f64),
        ),
        ("output_tps", t.output_tps, per_s(tok.output_tokens as f64)),
        (
            "total_tps",
            t.total_tps,
            per_s(tok.output_tokens.saturating_add(tok.prompt_tokens) as f64),
        ),
    ];
    for (name, said, want) in rates {
        if !said.is_finite() || said < 0.0 || !close(said, want) {
            p.push(format!(
                "says {name} = {} where its counts over its {} s window give {}",
                num(said),
                t.window_s,
                num(want)
            ));
        }
    }
    if let Some(g) = t.goodput_rps {
        if !g.is_finite() || g < 0.0 || g > t.request_rps * (1.0 + 1e-9) {
            p.push(format!(
                "says goodput_rps = {g}, beyond its request rate {}",
                t.request_rps
            ));
        }
    }
    let c = &run.summary.counts;
    if let Some(planned) = c.planned {
        if c.sent.saturating_add(c.warmup) > planned {
            p.push(format!(
                "says planned = {planned} but sent {} and warmup {}",
                c.sent, c.warmup
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{Outcome, RequestRecord};
    use crate::testkit::{record, run_of, scenario};

    fn good() -> RunResult {
        let records = (0..40)
            .map(|i| RequestRecord {
                ttft_us: Some(20_000 + i * 300),
                e2e_us: Some(200_000 + i * 900),
                tpot_us: Some(5_000.0 + i as f64 * 7.0),
                output_tokens: 32,
                end_us: 300_000 + i * 10_000,
                ..record(i, Outcome::Ok)
            })
            .collect();
        run_of(records, scenario(""), 4)
    }

    #[test]
    fn a_whole_run_contradicts_nothing() {
        assert_eq!(problems(&good()), Vec::<String>::new());
        let mut bare = good();
        bare.requests_omitted = bare.requests.len() as u64;
        bare.requests.clear();
        assert_eq!(problems(&bare), Vec::<String>::new());
    }

    #[test]
    fn an_edited_figure_is_named() {
        type Edit = fn(&mut RunResult);
        let cases: Vec<(&str, Edit)> = vec![
            ("schema_version 99", |r| r.schema_version = 99),
            ("before it starts", |r| {
                r.ended_at = r.started_at - chrono::Duration::seconds(1)
            }),
            ("tpot summary", |r| r.summary.latency[1].p50 *= 0.5),
            ("output_tps = 1e300", |r| {
                r.summary.throughput.output_tps = 1e300
            }),
            ("request_rps = -169", |r| {
                r.summary.throughput.request_rps = -169.0
            }),
            ("planned = 1", |r| r.summary.counts.planned = Some(1)),
            ("not its records'", |r| {
                let e2e = r.histograms["e2e_us"].clone();
                r.histograms.insert("tpot_us".into(), e2e);
            }),
        ];
        for (want, edit) in cases {
            let mut r = good();
            edit(&mut r);
            let got = problems(&r).join(" | ");
            assert!(got.contains(want), "`{want}` not in: {got}");
        }
    }

    #[test]
    fn a_tpot_histogram_swapped_for_e2e_is_caught_without_records() {
        let mut r = good();
        r.requests_omitted = r.requests.len() as u64;
        r.requests.clear();
        let e2e = r.histograms["e2e_us"].clone();
        r.histograms.insert("tpot_us".into(), e2e);
        // The summary edited to match, so only the histograms' relation is left to tell.
        r.summary.latency = Latency::ALL
            .into_iter()
            .map(|m| latency_summary(m, &summary::sample(&r, m)))
            .collect();
        let got = problems(&r).join(" | ");
        assert!(got.contains("that no request's E2E allows"), "{got}");
    }
}
