//! The plan: which requests a run sends and when, built from a validated scenario before any
//! network I/O, so a schedule that cannot be made fails before the first request and `bench
//! validate` can print the real thing.
//!
//! * **Requests** ([`prompts`]): request `i`'s prompt and lengths, generated on demand from
//!   the seed (the first `warmup` indices are sent first and excluded from every metric).
//! * **Times** ([`schedule`]): an open loop's intended send offsets, all computed here; a closed
//!   loop has none — its intended time is the moment a worker picks the request up.
//! * **Shard** (`--shard I/N`): this machine's part — indices ≡ I (mod N) at their planned
//!   times, and its share of a closed loop's concurrency or an open loop's `max_concurrency`.
//! * **Sessions** ([`conversation`]): in a conversation workload the plan's unit is a session,
//!   not a request — the open loop's times are session starts, a closed loop's workers are
//!   users, warmup and shards count whole sessions — and each session sends its turns itself.

pub mod conversation;
pub mod prompts;
pub mod request;
pub mod schedule;

use crate::error::BenchError;
use crate::model::scenario::{Arrival, LoadMode, Scenario, Workload};
use crate::model::shard::Shard;
use crate::model::trace::Trace;
use conversation::SessionSpec;
use prompts::{Generator, RequestSpec};
use std::sync::Arc;
use std::time::Duration;

/// How requests are released.
#[derive(Debug, Clone)]
pub enum Release {
    /// Open loop: this shard's intended offsets from the run start, in index order (the j-th
    /// belongs to request [`Plan::index`]`(j)`).
    Open {
        offsets: Arc<Vec<Duration>>,
        rate_rps: f64,
        arrival: Arrival,
        /// This shard's cap on requests in flight (its share of `max_concurrency`).
        max_concurrency: Option<u32>,
    },
    /// Closed loop: this shard's workers, each sending its next request when the last ends;
    /// with a ramp, worker i (from 1) starts when the ramp's concurrency reaches i.
    Closed {
        workers: u32,
        ramp: Option<crate::model::scenario::Ramp>,
    },
}

/// What the runner releases at one planned time (or one closed-loop pick-up).
#[derive(Debug, Clone)]
pub enum Unit {
    Request(RequestSpec),
    /// A conversation's session: it sends its turns one after another.
    Session(SessionSpec),
}

/// A run's requests and their release, for one shard (or the whole run).
#[derive(Debug, Clone)]
pub struct Plan {
    pub generator: Generator,
    pub release: Release,
    /// The first `warmup` indices are sent first and excluded from every metric.
    pub warmup: u64,
    /// Requests in the whole plan, warmup included; `None` for a closed loop bounded only by
    /// its duration.
    pub total: Option<u64>,
    /// Bound on the sending phase, warmup included.
    pub duration: Option<Duration>,
    pub shard: Option<Shard>,
}

impl Plan {
    /// Builds the plan of `s` (or of one shard of it).
    pub fn new(s: &Scenario, shard: Option<Shard>) -> Result<Plan, BenchError> {
        let total = s.load.requests.map(|r| r.saturating_add(s.load.warmup));
        let release = match &s.load.mode {
            LoadMode::Open {
                rate_rps,
                arrival,
                burstiness,
                max_concurrency,
            } => {
                let all = match (&s.workload, &s.trace) {
                    (Workload::Trace { time_scale, .. }, Some(t)) => {
                        trace_offsets(t, *time_scale, total, s.load.duration_s)
                    }
                    _ => schedule::arrival_offsets(
                        schedule::Law::new(*rate_rps, *arrival, *burstiness).ramped(s.load.ramp),
                        total,
                        s.load.duration_s,
                        s.seed,
                    )
                    .map_err(|m| BenchError::usage(format!("{}: {m}", s.name)))?,
                };
                let offsets = match shard {
                    None => all,
                    Some(sh) => all
                        .into_iter()
                        .enumerate()
                        .filter(|(i, _)| sh.owns(*i as u64))
                        .map(|(_, o)| o)
                        .collect(),
                };
                Release::Open {
                    offsets: Arc::new(offsets),
                    rate_rps: *rate_rps,
                    arrival: *arrival,
                    max_concurrency: max_concurrency.map(|m| share(m, shard).max(1)),
                }
            }
            LoadMode::Closed { concurrency } => {
                let workers = share(*concurrency, shard).max(1);
                Release::Closed {
                    workers,
                    // A shard ramps its share of the workers from its share of the start, so
                    // the shards together start at `from` and climb as one loop would.
                    ramp: s
                        .load
                        .ramp
                        .map(|r| r.scaled(f64::from(workers) / f64::from((*concurrency).max(1)))),
                }
            }
        };
        Ok(Plan {
            generator: Generator::new(s),
            release,
            warmup: s.load.warmup,
            total,
            duration: s.load.duration_s.map(Duration::from_secs_f64),
            shard,
        })
    }

    /// Requests this shard will send when the plan runs through (`None`: bounded only by the
    /// duration). An open loop's count is exact; a closed loop bounded by a duration as well
    /// may send fewer.
    pub fn planned(&self) -> Option<u64> {
        let units = self.planned_units()?;
        if !self.generator.has_sessions() {
            return Some(units);
        }
        Some(
            (0..units)
                .map(|j| self.generator.turn_count(self.index(j)) as u64)
                .sum(),
        )
    }

    /// Units (requests, or a conversation's sessions) this shard will start when the plan
    /// runs through.
    pub fn planned_units(&self) -> Option<u64> {
        match &self.release {
            Release::Open { offsets, .. } => Some(offsets.len() as u64),
            Release::Closed { .. } => {
                let (k, n) = self.stride();
                self.total
                    .map(|t| if t > k { (t - k).div_ceil(n) } else { 0 })
            }
        }
    }

    /// Plan index of this shard's `j`-th request.
    pub fn index(&self, j: u64) -> u64 {
        let (k, n) = self.stride();
        k.saturating_add(n.saturating_mul(j))
    }

    /// Whether index `i` is past the end of a bounded plan.
    pub fn is_past_end(&self, i: u64) -> bool {
        self.total.is_some_and(|t| i >= t)
    }

    /// Unit `i` of the plan: a request, or a conversation's session.
    pub fn unit(&self, i: u64) -> Unit {
        match self.generator.session(i, i < self.warmup) {
            Some(s) => Unit::Session(s),
            None => Unit::Request(self.spec(i)),
        }
    }

    /// Request `i`, flagged as warmup when it is one of the first `warmup`.
    pub fn spec(&self, i: u64) -> RequestSpec {
        let mut spec = self.generator.spec(i);
        spec.warmup = i < self.warmup;
        spec
    }

    /// (first index, step) of this shard's indices.
    fn stride(&self) -> (u64, u64) {
        self.shard
            .map_or((0, 1), |s| (s.index as u64, s.count as u64))
    }
}

/// A trace's send offsets: each unit's (row's, or session's first row's) timestamp from the
/// first one's, × `time_scale`, for the first `total` units that fall inside `duration_s`.
fn trace_offsets(
    t: &Trace,
    time_scale: f64,
    total: Option<u64>,
    duration_s: Option<f64>,
) -> Vec<Duration> {
    let t0 = t.unit_start_ms(0);
    (0..t.units.len())
        .take(total.map_or(usize::MAX, |n| n as usize))
        .map(|u| Duration::from_secs_f64((t.unit_start_ms(u) - t0) / 1000.0 * time_scale))
        .take_while(|o| duration_s.is_none_or(|d| o.as_secs_f64() < d))
        .collect()
}

fn share(total: u32, shard: Option<Shard>) -> u32 {
    shard.map_or(total, |s| s.share(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(load: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nseed = 3\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\noutput_tokens = 2\n[load]\n{load}\n"
        );
        crate::config::scenario::parse(&text, Path::new("t.toml")).unwrap()
    }

    #[test]
    fn shards_partition_the_open_loop_schedule() {
        let s = scenario("rate = 20.0\nrequests = 10\nwarmup = 2");
        let whole = Plan::new(&s, None).unwrap();
        let Release::Open { offsets: all, .. } = &whole.release else {
            panic!()
        };
        assert_eq!(all.len(), 12);
        let mut seen = Vec::new();
        for k in 0..3 {
            let p = Plan::new(&s, Some(Shard { index: k, count: 3 })).unwrap();
            let Release::Open { offsets, .. } = &p.release else {
                panic!()
            };
            for (j, off) in offsets.iter().enumerate() {
                let i = p.index(j as u64);
                assert_eq!(*off, all[i as usize], "shard {k} request {i}");
                seen.push(i);
            }
        }
        seen.sort();
        assert_eq!(seen, (0..12).collect::<Vec<_>>());
        assert!(whole.spec(1).warmup && !whole.spec(2).warmup);
    }

    #[test]
    fn closed_loops_split_workers_and_count_requests() {
        let s = scenario("concurrency = 5\nrequests = 10");
        let p = Plan::new(&s, Some(Shard { index: 1, count: 2 })).unwrap();
        assert!(matches!(p.release, Release::Closed { workers: 2, .. }));
        assert_eq!(p.planned(), Some(5));
        assert_eq!(p.index(2), 5);
        let unbounded = Plan::new(&scenario("concurrency = 2\nduration = \"5s\""), None).unwrap();
        assert_eq!(unbounded.planned(), None);
    }

    #[test]
    fn sharded_closed_loop_ramps_start_where_one_loop_would() {
        let s = scenario("concurrency = 8\nrequests = 40\nramp = { from = 2, over = \"10s\" }");
        let starts = |p: &Plan| {
            let Release::Closed { workers, ramp } = p.release else {
                panic!()
            };
            let r = ramp.unwrap();
            (1..=workers)
                .map(|k| r.reaches(f64::from(k), f64::from(workers)))
                .collect::<Vec<f64>>()
        };
        let whole = starts(&Plan::new(&s, None).unwrap());
        assert_eq!(whole.iter().filter(|t| **t == 0.0).count(), 2);
        // Two shards of 4 workers: one worker each at the start, not two each.
        let mut both: Vec<f64> = (0..2)
            .flat_map(|k| starts(&Plan::new(&s, Some(Shard { index: k, count: 2 })).unwrap()))
            .collect();
        both.sort_by(f64::total_cmp);
        assert_eq!(both.iter().filter(|t| **t == 0.0).count(), 2, "{both:?}");
        assert!((both[7] - 10.0).abs() < 1e-9 && (whole[7] - 10.0).abs() < 1e-9);
        // Each shard's k-th worker joins when the whole loop's level reaches 2k.
        for (k, t) in both.iter().enumerate() {
            assert!(
                (t - whole[k / 2 * 2 + 1]).abs() < 1e-9 || *t == 0.0,
                "{both:?} {whole:?}"
            );
        }
    }

    #[test]
    fn a_schedule_that_cannot_be_made_fails_before_sending() {
        let e = Plan::new(&scenario("rate = 1e5\nduration = \"1000s\""), None).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
    }

    /// A trace scenario over `rows` (timestamp ms, input, hash ids) in a temp dir.
    fn trace_scenario(
        dir: &Path,
        rows: &[(f64, u32, &[u64])],
        workload: &str,
        load: &str,
    ) -> Result<Scenario, crate::error::ScenarioError> {
        let lines: Vec<String> = rows
            .iter()
            .map(|(t, n, ids)| {
                format!("{{\"timestamp\": {t}, \"input_length\": {n}, \"output_length\": 3, \"hash_ids\": {ids:?}}}")
            })
            .collect();
        std::fs::write(dir.join("t.jsonl"), lines.join("\n")).unwrap();
        let text = format!(
            "name = \"t\"\nseed = 3\n[workload]\ntype = \"trace\"\npath = \"t.jsonl\"\nblock_tokens = 4\n{workload}\n[workload.salt]\n[load]\n{load}\n"
        );
        let text = text.replace("[workload.salt]\n", "salt = \"none\"\n");
        std::fs::write(dir.join("t.toml"), &text).unwrap();
        crate::config::scenario::load(&dir.join("t.toml"))
    }

    #[test]
    fn a_trace_is_sent_at_its_own_timestamps() {
        let dir = tempfile::tempdir().unwrap();
        let rows: &[(f64, u32, &[u64])] = &[
            (1000.0, 6, &[1, 2]),
            (1000.0, 6, &[1, 3]),
            (1250.5, 10, &[1, 2, 4]),
            (4000.0, 2, &[]),
        ];
        let s = trace_scenario(dir.path(), rows, "time_scale = 0.5", "warmup = 1").unwrap();
        let p = Plan::new(&s, None).unwrap();
        let Release::Open { offsets, .. } = &p.release else {
            panic!()
        };
        let want: Vec<Duration> = [0.0, 0.0, 125.25, 1500.0]
            .iter()
            .map(|ms| Duration::from_secs_f64(ms / 1000.0))
            .collect();
        assert_eq!(**offsets, want, "timestamp − first, × time_scale, exactly");
        assert_eq!(p.planned(), Some(4));
        assert!(p.spec(0).warmup && !p.spec(1).warmup);
        // Prompts share exactly the blocks their hash ids share (4 words a block).
        let text = |i: u64| match p.spec(i).prompt {
            prompts::Prompt::Text(t) => t.split(' ').map(str::to_string).collect::<Vec<_>>(),
            _ => panic!(),
        };
        let (a, b, c) = (text(0), text(1), text(2));
        assert_eq!((a.len(), b.len(), c.len()), (6, 6, 10));
        assert_eq!(a[..4], b[..4], "block 1 shared");
        assert_ne!(a[4..6], b[4..6], "block 2 vs block 3");
        assert_eq!(a[..6], c[..6], "blocks 1, 2 shared; block 2 partial in a");
        assert_eq!(
            (p.spec(2).max_tokens, p.spec(2).input_tokens_target),
            (3, Some(10))
        );
        // `requests` and `duration` take the first rows.
        let s = trace_scenario(dir.path(), rows, "", "requests = 2").unwrap();
        assert_eq!(Plan::new(&s, None).unwrap().planned(), Some(2));
        let s = trace_scenario(dir.path(), rows, "", "duration = \"1s\"").unwrap();
        assert_eq!(Plan::new(&s, None).unwrap().planned(), Some(3));
    }

    #[test]
    fn a_trace_scenario_refuses_a_rate_and_too_many_requests() {
        let dir = tempfile::tempdir().unwrap();
        let rows: &[(f64, u32, &[u64])] = &[(0.0, 4, &[1]), (10.0, 4, &[1])];
        let e = trace_scenario(dir.path(), rows, "", "rate = 5.0")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("load.rate") && e.contains("timestamps are the schedule"),
            "{e}"
        );
        let e = trace_scenario(dir.path(), rows, "", "requests = 3")
            .unwrap_err()
            .to_string();
        assert!(e.contains("load.requests") && e.contains("2 rows"), "{e}");
        let e = trace_scenario(dir.path(), rows, "time_scale = 0.0", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.time_scale"), "{e}");
        let e = trace_scenario(dir.path(), rows, "max_rate = 1.0", "")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("workload.max_rate") && e.contains("2 requests within one second"),
            "{e}"
        );
        assert!(trace_scenario(dir.path(), rows, "max_rate = 2.0", "").is_ok());
        let e = trace_scenario(dir.path(), rows, "order = \"shuffle\"", "")
            .unwrap_err()
            .to_string();
        assert!(e.contains("workload.order"), "{e}");
    }
}
