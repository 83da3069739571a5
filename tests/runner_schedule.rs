//! The runner's timing rules, in virtual time (tokio's paused clock) with a fake server.

mod common;

use bench::engine::runner::{run, SendCtx, Sender, Sent};
use bench::model::record::Outcome;
use bench::model::scenario::{Arrival, LoadMode, Scenario};
use bench::plan::prompts::RequestSpec;
use bench::plan::{schedule, Plan};
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Answers every request after `latency` (virtual time), with `tokens` tokens.
struct FakeServer {
    latency: Duration,
}

impl Sender for FakeServer {
    fn send(&self, spec: RequestSpec, ctx: SendCtx) -> impl Future<Output = Sent> + Send {
        let latency = self.latency;
        async move {
            let sent = Instant::now();
            let outcome = tokio::select! {
                _ = tokio::time::sleep(latency) => Outcome::Ok,
                _ = ctx.abort.cancelled() => Outcome::Aborted,
            };
            let end = Instant::now();
            Sent {
                record: common::fake_record(
                    &spec,
                    &ctx,
                    common::Faked {
                        sent,
                        outcome,
                        tokens: Some((end, end)),
                        prompt_tokens: 1,
                        output_tokens: 1,
                    },
                ),
                itl_us: Default::default(),
                itl_token_us: Default::default(),
                chunk_tokens: Default::default(),
                reply: None,
            }
        }
    }
}

fn scenario() -> Scenario {
    bench::config::scenario::parse(
        "name = \"t\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\noutput_tokens = 1\n[load]\nconcurrency = 1\nrequests = 1\n",
        Path::new("t.toml"),
    )
    .unwrap()
}

fn open(rate: f64, max_concurrency: Option<u32>) -> LoadMode {
    LoadMode::Open {
        rate_rps: rate,
        arrival: Arrival::Poisson,
        burstiness: 1.0,
        max_concurrency,
    }
}

/// The plan of `requests` (+ `warmup`) under `mode`, seed 11.
fn plan(mode: LoadMode, requests: u64, warmup: u64) -> Plan {
    plan_with(mode, Some(requests), None, warmup)
}

fn plan_with(
    mode: LoadMode,
    requests: Option<u64>,
    duration: Option<Duration>,
    warmup: u64,
) -> Plan {
    let mut s = scenario();
    s.seed = 11;
    s.load.mode = mode;
    s.load.requests = requests;
    s.load.duration_s = duration.map(|d| d.as_secs_f64());
    s.load.warmup = warmup;
    Plan::new(&s, None).unwrap()
}

const GRACE: Duration = Duration::from_secs(2);

#[tokio::test(start_paused = true)]
async fn a_slow_server_does_not_slow_the_schedule() {
    // 10 req/s against a server that takes 30 s per request: every request still leaves on time.
    let p = plan(open(10.0, None), 50, 0);
    let planned = schedule::arrival_offsets(
        schedule::Law::new(10.0, Arrival::Poisson, 1.0),
        Some(50),
        None,
        11,
    )
    .unwrap();
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_secs(30),
        }),
        &p,
        GRACE,
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(data.records.len(), 50);
    assert!(data.complete());
    let mut recs = data.records.clone();
    recs.sort_by_key(|r| r.index);
    for (r, off) in recs.iter().zip(&planned) {
        assert_eq!(r.intended_us, off.as_micros() as u64, "request {}", r.index);
        // The paused clock moves in tokio's 1 ms timer ticks, so a send lands within a tick of
        // its slot; none of the 30 s the server takes shows up as lateness or queueing.
        assert!(r.send_lag_us < 1000, "lag {}", r.send_lag_us);
        assert_eq!(r.queue_us, 0);
        let e2e = r.e2e_us.unwrap();
        assert!((30_000_000..30_002_000).contains(&e2e), "{e2e}");
    }
    // All 50 overlap: the schedule spans ~5 s, each request lasts 30 s.
    assert_eq!(data.peak_concurrency, 50);
}

#[tokio::test(start_paused = true)]
async fn max_concurrency_queues_and_latency_counts_from_intended_time() {
    // Constant 10 req/s, 1 s per request, 2 slots: request k waits for a slot, and its latency
    // includes that wait (measured from its schedule slot, not from when it finally went).
    let mode = LoadMode::Open {
        rate_rps: 10.0,
        arrival: Arrival::Constant,
        burstiness: 1.0,
        max_concurrency: Some(2),
    };
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_secs(1),
        }),
        &plan(mode, 6, 0),
        GRACE,
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await
    .unwrap();
    let mut recs = data.records.clone();
    recs.sort_by_key(|r| r.index);
    assert_eq!(data.peak_concurrency, 2);
    let queue: Vec<u64> = recs.iter().map(|r| r.queue_us / 1000).collect();
    // Slots free at 1.0 s, 1.1 s, 2.0 s, 2.1 s: requests due at 0.2, 0.3, 0.4, 0.5 s wait
    // 0.8, 0.8, 1.6, 1.6 s.
    assert_eq!(queue, vec![0, 0, 800, 800, 1600, 1600]);
    let e2e: Vec<u64> = recs.iter().map(|r| r.e2e_us.unwrap() / 1000).collect();
    assert_eq!(e2e, vec![1000, 1000, 1800, 1800, 2600, 2600]);
    assert!(recs.iter().all(|r| r.send_lag_us == 0));
}

#[tokio::test(start_paused = true)]
async fn closed_loop_sends_exactly_the_plan_with_warmup_first() {
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_millis(100),
        }),
        &plan(LoadMode::Closed { concurrency: 3 }, 10, 2),
        GRACE,
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(data.records.len(), 12);
    assert_eq!(data.records.iter().filter(|r| r.warmup).count(), 2);
    assert!(data
        .records
        .iter()
        .filter(|r| r.warmup)
        .all(|r| r.index < 2));
    assert_eq!(data.peak_concurrency, 3);
    // 12 requests, 3 at a time, 100 ms each: 4 rounds.
    assert_eq!(data.wall, Duration::from_millis(400));
}

#[tokio::test(start_paused = true)]
async fn closed_loop_duration_bound() {
    let p = plan_with(
        LoadMode::Closed { concurrency: 2 },
        None,
        Some(Duration::from_millis(1050)),
        0,
    );
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_millis(100),
        }),
        &p,
        GRACE,
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await
    .unwrap();
    // Workers start new requests at 0, 100, …, 1000 ms: 11 rounds of 2.
    assert_eq!(data.records.len(), 22);
    assert!(data.complete());
}

#[tokio::test(start_paused = true)]
async fn stop_keeps_the_partial_run_and_aborts_after_grace() {
    let stop = CancellationToken::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(2500)).await;
        s2.cancel();
    });
    // 1 req/s constant, 10 s per request: at 2.5 s three are in flight; grace 2 s is too short.
    let mode = LoadMode::Open {
        rate_rps: 1.0,
        arrival: Arrival::Constant,
        burstiness: 1.0,
        max_concurrency: None,
    };
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_secs(10),
        }),
        &plan(mode, 20, 0),
        GRACE,
        stop,
        None,
        |_| {},
    )
    .await
    .unwrap();
    assert!(!data.complete());
    assert_eq!(data.records.len(), 3);
    assert!(data.records.iter().all(|r| r.outcome == Outcome::Aborted));
    // Aborted at stop + grace = 4.5 s.
    assert!(data.records.iter().all(|r| r.end_us == 4_500_000));
    assert_eq!(data.planned, Some(20));
    let (summary, _) = bench::metrics::summary::summarize(&data, &Default::default(), true);
    assert_eq!(summary.counts.not_sent, 17);
    assert_eq!(summary.counts.aborted, 3);
}

#[tokio::test(start_paused = true)]
async fn stop_within_grace_lets_requests_finish() {
    let stop = CancellationToken::new();
    let s2 = stop.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        s2.cancel();
    });
    let data = run(
        Arc::new(FakeServer {
            latency: Duration::from_secs(1),
        }),
        &plan(LoadMode::Closed { concurrency: 2 }, 10, 0),
        GRACE,
        stop,
        None,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(data.records.len(), 2);
    assert!(data.records.iter().all(|r| r.outcome == Outcome::Ok));
    assert!(!data.complete(), "stopped before the plan was through");
}

/// Panics on one request, as a bug in bench's own code would.
struct PanickingServer {
    on: u64,
}

impl Sender for PanickingServer {
    fn send(&self, spec: RequestSpec, ctx: SendCtx) -> impl Future<Output = Sent> + Send {
        let on = self.on;
        let fake = FakeServer {
            latency: Duration::from_millis(10),
        };
        async move {
            if spec.index == on {
                panic!("injected failure on request {on}");
            }
            fake.send(spec, ctx).await
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_while_sending_fails_the_run_instead_of_hiding_as_success() {
    // Before: the task died, its request vanished from the counts and the run said complete.
    for mode in [LoadMode::Closed { concurrency: 2 }, open(10.0, None)] {
        let stop = CancellationToken::new();
        let data = run(
            Arc::new(PanickingServer { on: 3 }),
            &plan(mode, 10, 0),
            GRACE,
            stop.clone(),
            None,
            |_| {},
        )
        .await
        .unwrap();
        assert!(!data.complete());
        let why = data.failure.clone().unwrap();
        assert!(
            why.contains("sending request 3 panicked: injected failure"),
            "{why}"
        );
        assert!(
            !stop.is_cancelled(),
            "the caller's token is not the run's to cancel"
        );
        assert!(data.records.iter().all(|r| r.index != 3));
    }
}
