//! `bench merge`: shards of one distributed run (`bench run --shard I/N`) → one run.
//!
//! The shards must be all N of one plan (same scenario hash and vars). Their timelines are
//! aligned on wall-clock start (`started_at`; with `--start-at` the shards share it), then:
//! records concatenate (raw values intact, so every percentile is recomputed exactly), counts
//! add, the inter-token histograms add, and peak concurrency is recomputed from the aligned
//! send/end times. Server metrics are the first shard's (every shard scraped the same server).

use crate::engine::runner::{RunData, StreamStats};
use crate::error::BenchError;
use crate::metrics::summary::summarize;
use crate::metrics::windows::WIDTH_S;
use crate::model::hist;
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::summary::SessionCounts;

/// Shards are one run only if they ran together: a shard that started after another had
/// ended is refused (the merged window would be the sum of their times, its rates a fraction
/// of the real ones), and starts further apart than a tenth of the shortest shard are warned
/// of (use a shared `--start-at`).
fn together(runs: &[RunResult]) -> Result<(), BenchError> {
    let name = |r: &RunResult| {
        r.shard
            .map_or("?".into(), |s| format!("{}/{}", s.index, s.count))
    };
    let (Some(late), Some(early_end)) = (
        runs.iter().max_by_key(|r| r.started_at),
        runs.iter().min_by_key(|r| r.ended_at),
    ) else {
        return Ok(());
    };
    if late.started_at >= early_end.ended_at {
        let gap = (late.started_at - early_end.ended_at).num_milliseconds() as f64 / 1e3;
        return Err(BenchError::usage(format!(
            "cannot merge: the shards did not run together — shard {} started {gap:.1} s after shard {} had ended ({} vs {}); run them at once (a shared --start-at) and merge those",
            name(late),
            name(early_end),
            late.started_at,
            early_end.ended_at
        )));
    }
    let early = runs.iter().min_by_key(|r| r.started_at).unwrap_or(late);
    let spread = (late.started_at - early.started_at).num_milliseconds() as f64 / 1e3;
    let shortest = runs
        .iter()
        .map(|r| (r.ended_at - r.started_at).num_milliseconds() as f64 / 1e3)
        .fold(f64::INFINITY, f64::min);
    if spread > 0.1 * shortest {
        crate::say!(
            "warning: the shards started {spread:.1} s apart (shard {} first, {} last), over a tenth of the shortest shard ({shortest:.1} s): the merged run's rates and peak concurrency are those of partly overlapping loads; a shared --start-at aligns them",
            name(early),
            name(late)
        );
    }
    Ok(())
}

pub fn merge(mut runs: Vec<RunResult>) -> Result<RunResult, BenchError> {
    let bad = |m: String| BenchError::usage(format!("cannot merge: {m}"));
    let first = runs
        .first()
        .ok_or_else(|| bad("no runs given".into()))?
        .clone();
    let n = first.shard.map(|s| s.count).ok_or_else(|| {
        bad(format!(
            "{} is not a shard (run with --shard I/N)",
            first.run_id
        ))
    })?;
    let mut seen = vec![false; n as usize];
    for r in &runs {
        let s = r
            .shard
            .ok_or_else(|| bad(format!("{} is not a shard", r.run_id)))?;
        if s.count != n {
            return Err(bad(format!(
                "{} is shard {}/{} but the first is of {n}",
                r.run_id, s.index, s.count
            )));
        }
        if r.scenario_hash != first.scenario_hash || r.vars != first.vars {
            return Err(bad(format!(
                "{} ran other traffic or another configuration",
                r.run_id
            )));
        }
        if std::mem::replace(&mut seen[s.index as usize], true) {
            return Err(bad(format!("shard {}/{n} is given twice", s.index)));
        }
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(bad(format!("shard {missing}/{n} is missing")));
    }
    runs.sort_by_key(|r| r.shard.map(|s| s.index));
    together(&runs)?;
    let t0 = runs
        .iter()
        .map(|r| r.started_at)
        .min()
        .unwrap_or(first.started_at);
    let mut records = Vec::new();
    let mut streams = StreamStats::default();
    let (mut planned, mut not_sent) = (Some(0u64), 0u64);
    if let Some(r) = runs.iter().find(|r| r.requests_omitted > 0) {
        return Err(BenchError::usage(format!(
            "shard {} kept no request records ({} requests, over --keep-records), and merging needs them; run the shards with --keep-records all",
            r.shard.map_or("?".to_string(), |s| format!("{}/{}", s.index, s.count)),
            r.requests_omitted
        )));
    }
    for r in &runs {
        let shift = (r.started_at - t0).num_microseconds().unwrap_or(0).max(0) as u64;
        for mut q in r.requests.iter().cloned() {
            q.intended_us += shift;
            q.sent_us += shift;
            q.end_us += shift;
            records.push(q);
        }
        add_streams(r, &mut streams)?;
        planned = match (planned, r.summary.counts.planned) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        not_sent += r.summary.counts.not_sent;
    }
    records.sort_by_key(|q| q.index);
    let peak = peak_concurrency(&records);
    let sessions = sessions(&runs);
    let data = RunData {
        sessions,
        omitted: 0,
        planned,
        records: records.clone(),
        streams,
        not_sent,
        peak_concurrency: peak,
        interrupted: runs.iter().any(|r| !r.complete),
        failure: runs.iter().find_map(|r| r.failure.clone()),
        run_start: tokio::time::Instant::now(),
        wall: std::time::Duration::ZERO,
    };
    let s = &first.scenario;
    let (mut summary, hists) = summarize(&data, &s.slo, s.request.ignore_eos);
    summary.counts.connections = runs.iter().map(|r| r.summary.counts.connections).sum();
    summary.counts.reuse_stopped_at = runs
        .iter()
        .filter_map(|r| r.summary.counts.reuse_stopped_at)
        .min();
    let mut endpoints: Vec<&str> = runs.iter().map(|r| r.endpoint.as_str()).collect();
    endpoints.dedup();
    let endpoint = endpoints.join(", ");
    Ok(RunResult {
        run_id: format!("merged-{}", first.run_id),
        endpoint,
        started_at: t0,
        ended_at: runs
            .iter()
            .map(|r| r.ended_at)
            .max()
            .unwrap_or(first.ended_at),
        complete: data.complete(),
        failure: data.failure.clone(),
        summary,
        histograms: hists.encode()?,
        windows: crate::metrics::windows::of_run(
            &records,
            first.server_metrics.as_ref(),
            t0,
            first.windows.as_ref().map_or(WIDTH_S, |w| w.width_s),
        ),
        requests: records,
        shard: None,
        ..first
    })
}

/// Adds a shard's gaps, per-token gaps and tokens a chunk to the merged run's. A shard whose
/// chunks were all one token stored no per-token histogram: its per-token gaps are its gaps.
fn add_streams(r: &RunResult, streams: &mut StreamStats) -> Result<(), BenchError> {
    let bad = |m: String| BenchError::usage(format!("cannot merge: {m}"));
    let decoded = |m: Latency| {
        r.histograms
            .get(m.hist_key())
            .map(|h| hist::decode(h).map_err(|e| bad(format!("{}: {e}", r.run_id))))
            .transpose()
    };
    let itl = decoded(Latency::Itl)?;
    let per_token = decoded(Latency::ItlToken)?.or_else(|| itl.clone());
    let add = |m: Latency, into: &mut hdrhistogram::Histogram<u64>, h: &Option<_>| match h {
        Some(h) => into
            .add(h)
            .map_err(|e| bad(format!("{}: {m} histograms do not add ({e})", r.run_id))),
        None => Ok(()),
    };
    add(Latency::ItlToken, streams.per_token_mut(), &per_token)?;
    add(Latency::Itl, &mut streams.itl_us, &itl)?;
    if let Some(c) = &r.summary.tokens.chunks {
        streams.chunk_tokens.merge(&c.tokens_per_chunk());
    }
    Ok(())
}

/// Peak concurrency from the aligned intervals: +1 at each send, −1 at each end.
pub fn peak_concurrency(records: &[crate::model::record::RequestRecord]) -> u64 {
    let mut events: Vec<(u64, i64)> = records
        .iter()
        .flat_map(|q| [(q.sent_us, 1), (q.end_us, -1)])
        .collect();
    events.sort_by_key(|(t, d)| (*t, *d));
    let (mut cur, mut peak) = (0i64, 0i64);
    for (_, d) in events {
        cur += d;
        peak = peak.max(cur);
    }
    peak.max(0) as u64
}

/// Shards own whole sessions, so a merged run's session counts are their sums.
fn sessions(runs: &[RunResult]) -> Option<SessionCounts> {
    let per_shard: Vec<&SessionCounts> = runs
        .iter()
        .filter_map(|r| r.summary.counts.sessions.as_ref())
        .collect();
    let sum = |f: fn(&SessionCounts) -> u64| per_shard.iter().map(|s| f(s)).sum::<u64>();
    (!per_shard.is_empty()).then(|| SessionCounts {
        planned: per_shard.iter().map(|s| s.planned).sum::<Option<u64>>(),
        started: sum(|s| s.started),
        completed: sum(|s| s.completed),
        ended_early: sum(|s| s.ended_early),
        turns_skipped: sum(|s| s.turns_skipped),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::model::shard::Shard;
    use crate::testkit::{record, run_of, scenario};

    fn shard(i: u32, start_s: i64, end_s: i64, endpoint: &str) -> RunResult {
        let records = (0..3)
            .map(|k| crate::model::record::RequestRecord {
                index: i as u64 * 3 + k,
                ttft_us: Some(10_000),
                e2e_us: Some(20_000),
                end_us: 30_000,
                ..record(k, Outcome::Ok)
            })
            .collect();
        let mut r = run_of(records, scenario(""), 1);
        r.shard = Some(Shard { index: i, count: 3 });
        r.started_at = chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(start_s);
        r.ended_at = chrono::DateTime::UNIX_EPOCH + chrono::Duration::seconds(end_s);
        r.endpoint = endpoint.into();
        r
    }

    #[test]
    fn shards_that_ran_one_after_another_are_not_one_run() {
        let seq = vec![
            shard(0, 0, 12, "a"),
            shard(1, 13, 25, "a"),
            shard(2, 26, 38, "a"),
        ];
        let e = merge(seq).unwrap_err().to_string();
        assert!(
            e.contains("did not run together") && e.contains("shard 2/3 started"),
            "{e}"
        );
        let at_once = vec![
            shard(0, 0, 12, "a"),
            shard(1, 0, 12, "b"),
            shard(2, 0, 12, "c"),
        ];
        let m = merge(at_once).unwrap();
        assert_eq!(m.endpoint, "a, b, c", "every shard's endpoint is named");
    }
}
