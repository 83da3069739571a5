//! Executes a plan: dispatches requests at their intended times and collects one record each.
//!
//! *Open loop* (`rate`): every intended send time is in the [`Plan`], computed before the run
//! starts. A dispatcher thread of its own sleeps until each time (to
//! within a few µs; tokio's timer has 1 ms ticks) and spawns the request as its own task, so a
//! slow server never delays the schedule; the next request is generated while waiting, not
//! after. With `max_concurrency` the task first waits for a slot; that wait
//! is recorded as `queue_us` and the latency still counts from the intended time.
//! *Closed loop* (`concurrency`): N workers, each sending its next request when the previous one
//! ends; the intended time is the moment the worker picks the request up.
//! *Sessions* (a conversation workload): what is released — at its planned time, or when a
//! closed-loop user is free — is a session, which sends its turns one after another: turn
//! `t + 1` is intended when the think time after turn `t`'s reply has passed (the moment the
//! task wakes, as a closed loop's pick-up: tokio's 1 ms timer may lengthen a think time but
//! never adds to a latency), and its request carries the replies received so far. A turn that fails ends its session; the turns it never
//! sent are counted (`turns_skipped`), not lost. A `max_concurrency` slot is held per turn, not
//! through the think time.
//!
//! Failing: a panic anywhere in the run's own code — generating a request, sending one — is
//! caught, recorded as the run's `failure`, and stops the run like a stop does: the run is
//! then incomplete and the failure says why, never a quiet run with requests missing.
//!
//! Stopping: [`Cancel::requests`] (the first Ctrl-C or SIGTERM) ends dispatch at once; requests
//! already sent get `grace` to finish, then the rest are aborted (outcome `aborted`) and the
//! partial run is returned marked incomplete; [`Cancel::in_flight`] (a second signal) ends the
//! grace at once. Requests still waiting for a slot when stop arrives were never sent and
//! are counted as `not_sent`.

use crate::error::BenchError;
use crate::model::record::{Outcome, RequestRecord};
use crate::model::summary::SessionCounts;
use crate::plan::conversation::Reply;
use crate::plan::prompts::RequestSpec;
use crate::plan::{Plan, Release, Unit};
use futures_util::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};
use tokio::time::{sleep_until, Instant};
use tokio_util::sync::CancellationToken;

mod gaps;
mod session;
mod timing;

pub use gaps::{Gaps, StreamStats, TokensPerChunk};
use timing::{clock_is_paused, precise_sleeps, wait_until};

/// How a run is told to stop: no new requests, then (at once, or when the grace runs out)
/// abort those in flight.
#[derive(Debug, Clone, Default)]
pub struct Cancel {
    /// Dispatch ends; requests in flight get the grace period.
    pub requests: CancellationToken,
    /// The grace ends now: requests in flight are aborted.
    pub in_flight: CancellationToken,
}

impl From<CancellationToken> for Cancel {
    /// A stop with a grace period that only its own clock ends.
    fn from(requests: CancellationToken) -> Cancel {
        Cancel {
            requests,
            in_flight: CancellationToken::new(),
        }
    }
}

/// Timing context handed to a sender for one request.
#[derive(Debug, Clone)]
pub struct SendCtx {
    pub run_start: Instant,
    /// The schedule's time for this request.
    pub intended: Instant,
    /// Time spent waiting for a `max_concurrency` slot (zero without a cap). Lateness of the
    /// dispatcher itself is not queueing: it shows as send lag.
    pub queue: Duration,
    /// Cancelled when the grace period after a stop has run out.
    pub abort: CancellationToken,
}

/// What a sender returns: the record and the inter-token gaps (µs) of the stream.
#[derive(Debug)]
pub struct Sent {
    pub record: RequestRecord,
    /// Gaps between chunks.
    pub itl_us: Gaps,
    /// The same time per token ([`crate::model::metric::Latency::ItlToken`]); `None` when
    /// every chunk carried one token (then it is `itl_us`).
    pub itl_token_us: Option<Gaps>,
    /// The stream's chunks by tokens carried.
    pub chunk_tokens: TokensPerChunk,
    /// The generated text, when the request asked for it ([`RequestSpec::keep_reply`]).
    pub reply: Option<Reply>,
}

/// Anything that can execute one request (the HTTP client, or a fake in tests).
pub trait Sender: Send + Sync + 'static {
    fn send(&self, spec: RequestSpec, ctx: SendCtx) -> impl Future<Output = Sent> + Send;
}

/// Everything a run produced, before any summary.
#[derive(Debug)]
pub struct RunData {
    /// Every sent request (warmup included, flagged), in completion order — unless there
    /// were more than the caller's `keep`, in which case none are kept (they went to the
    /// `observe` callback as they finished) and `omitted` counts them.
    pub records: Vec<RequestRecord>,
    /// Sent requests whose records are not in `records`.
    pub omitted: u64,
    /// Inter-token gaps and tokens a chunk of measured, successful requests.
    pub streams: StreamStats,
    /// Requests the plan held (None for an unbounded closed loop).
    pub planned: Option<u64>,
    /// Dispatched but never sent (waiting for a slot at stop).
    pub not_sent: u64,
    pub peak_concurrency: u64,
    /// Stopped by the caller before the plan was done.
    pub interrupted: bool,
    /// An internal failure (a panic in bench's own code) that ended the run.
    pub failure: Option<String>,
    /// A conversation workload's sessions.
    pub sessions: Option<SessionCounts>,
    pub run_start: Instant,
    pub wall: Duration,
}

impl RunData {
    pub fn complete(&self) -> bool {
        !self.interrupted && self.failure.is_none()
    }
}

/// Spawns one open-loop request: it waits for a `max_concurrency` slot if there is a cap (that
/// wait is its queue time), then sends.
fn launch<S: Sender>(
    handle: &tokio::runtime::Handle,
    shared: &Arc<Shared<S>>,
    slots: &Option<Arc<Semaphore>>,
    unit: Unit,
    intended: Instant,
) {
    let shared = shared.clone();
    let slots = slots.clone();
    handle.spawn(async move {
        match unit {
            Unit::Request(spec) => {
                let waiting = Instant::now();
                let Some(_permit) = shared.slot(&slots, 1).await else {
                    return;
                };
                shared.one(spec, intended, waiting.elapsed()).await;
            }
            Unit::Session(s) => shared.session(s, intended, &slots).await,
        }
    });
}

/// Counters the runner reads after every task is gone.
#[derive(Default)]
struct Counters {
    in_flight: AtomicU64,
    peak: AtomicU64,
    not_sent: AtomicU64,
    sessions_started: AtomicU64,
    sessions_completed: AtomicU64,
    sessions_ended_early: AtomicU64,
    turns_skipped: AtomicU64,
    /// The first internal failure.
    failure: std::sync::Mutex<Option<String>>,
}

/// What a caught panic said.
fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// What each task holds; the channel closes when the last holder drops.
struct Shared<S> {
    sender: Arc<S>,
    tx: mpsc::UnboundedSender<Sent>,
    abort: CancellationToken,
    stop: CancellationToken,
    counters: Arc<Counters>,
    run_start: Instant,
}

impl<S: Sender> Shared<S> {
    /// Records an internal failure (the first one wins) and stops the run.
    fn fail(&self, what: String) {
        if let Ok(mut f) = self.counters.failure.lock() {
            f.get_or_insert(what);
        }
        self.stop.cancel();
    }

    /// Unit `i` of the plan, or `None` (the run failed) when making it panicked.
    fn unit(&self, plan: &Plan, i: u64) -> Option<Unit> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| plan.unit(i)))
            .map_err(|p| self.fail(format!("building request {i} panicked: {}", panic_text(p))))
            .ok()
    }

    /// A `max_concurrency` slot (`Some(None)` without a cap), or `None` when the run stopped
    /// first: the `unsent` requests that would have used it are then counted as not sent.
    async fn slot(
        &self,
        slots: &Option<Arc<Semaphore>>,
        unsent: u64,
    ) -> Option<Option<tokio::sync::OwnedSemaphorePermit>> {
        match slots {
            None => Some(None),
            Some(s) => tokio::select! {
                biased;
                _ = self.stop.cancelled() => {
                    self.counters.not_sent.fetch_add(unsent, Ordering::SeqCst);
                    None
                }
                p = s.clone().acquire_owned() => Some(p.ok()),
            },
        }
    }

    /// Sends one request and hands its record to the collector.
    async fn one(self: &Arc<Self>, spec: RequestSpec, intended: Instant, queue: Duration) {
        if let Some(sent) = self.send(spec, intended, queue).await {
            self.deliver(sent);
        }
    }

    /// Hands a record to the collector.
    fn deliver(&self, sent: Sent) {
        // The collector outlives every task, so this cannot fail; if it ever did the record
        // would be lost, so count it as not sent rather than drop it silently.
        if self.tx.send(sent).is_err() {
            self.counters.not_sent.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Sends one request; `None` when sending it panicked (the run then fails).
    async fn send(
        self: &Arc<Self>,
        spec: RequestSpec,
        intended: Instant,
        queue: Duration,
    ) -> Option<Sent> {
        let c = &self.counters;
        let n = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.peak.fetch_max(n, Ordering::SeqCst);
        // A child token per request: polling a token locks it, and one token shared by a
        // thousand streams polled on every chunk is a contended lock.
        let ctx = SendCtx {
            run_start: self.run_start,
            intended,
            queue,
            abort: self.abort.child_token(),
        };
        let index = spec.index;
        let sent = AssertUnwindSafe(self.sender.send(spec, ctx))
            .catch_unwind()
            .await;
        c.in_flight.fetch_sub(1, Ordering::SeqCst);
        match sent {
            Ok(s) => Some(s),
            Err(p) => {
                c.not_sent.fetch_add(1, Ordering::SeqCst);
                self.fail(format!(
                    "sending request {index} panicked: {}",
                    panic_text(p)
                ));
                None
            }
        }
    }
}

/// Runs the plan; `observe` sees each record as it completes (for progress display).
pub async fn run<S: Sender>(
    sender: Arc<S>,
    plan: &Plan,
    grace: Duration,
    stop: impl Into<Cancel>,
    keep: Option<u64>,
    observe: impl FnMut(&RequestRecord),
) -> Result<RunData, BenchError> {
    let Cancel {
        requests: stop,
        in_flight: hurry,
    } = stop.into();
    let run_start = Instant::now();
    let (tx, rx) = mpsc::unbounded_channel::<Sent>();
    let counters = Arc::new(Counters::default());
    // Stopped by the caller, or by an internal failure (which must not cancel the caller's).
    let stop = stop.child_token();
    let shared = Arc::new(Shared {
        sender,
        tx,
        abort: CancellationToken::new(),
        stop: stop.clone(),
        counters: counters.clone(),
        run_start,
    });
    let handles = match &plan.release {
        Release::Open {
            offsets,
            max_concurrency,
            ..
        } => vec![release_open(
            plan,
            offsets.clone(),
            *max_concurrency,
            shared.clone(),
        )?],
        Release::Closed { workers, ramp } => release_closed(plan, *workers, *ramp, &shared),
    };
    let abort = shared.abort.clone();
    // Only the tasks hold senders now; the channel closes when the last one finishes.
    drop(shared);
    let kept = collect(rx, [&stop, &hurry], &abort, grace, keep, observe).await;
    let (records, streams) = (kept.records, kept.streams);
    for h in handles {
        let _ = h.await;
    }
    let planned = plan.planned();
    let not_sent = counters.not_sent.load(Ordering::SeqCst);
    // Interrupted means the stop came before the plan was through: a stop after the last
    // request was dispatched changes nothing.
    let skipped = counters.turns_skipped.load(Ordering::SeqCst);
    let dispatched_all = match planned {
        Some(p) => kept.total + not_sent + skipped >= p && not_sent == 0,
        None => false,
    };
    let aborted = kept.aborted;
    let interrupted = stop.is_cancelled() && (!dispatched_all || aborted);
    let failure = counters.failure.lock().ok().and_then(|f| f.clone());
    let load = |a: &AtomicU64| a.load(Ordering::SeqCst);
    let sessions = plan.generator.has_sessions().then(|| SessionCounts {
        planned: plan.planned_units(),
        started: load(&counters.sessions_started),
        completed: load(&counters.sessions_completed),
        ended_early: load(&counters.sessions_ended_early),
        turns_skipped: load(&counters.turns_skipped),
    });
    Ok(RunData {
        sessions,
        not_sent,
        omitted: kept.total - records.len() as u64,
        records,
        streams,
        planned,
        peak_concurrency: counters.peak.load(Ordering::SeqCst),
        interrupted,
        failure,
        run_start,
        wall: run_start.elapsed(),
    })
}

/// Open loop: releases each planned request at its intended time, from a thread of its own
/// (tokio's timer has 1 ms ticks, and that lateness would be added to every open-loop
/// latency) or, on tokio's paused test clock, from a task (the timer is exact there).
fn release_open<S: Sender>(
    plan: &Plan,
    offsets: Arc<Vec<Duration>>,
    max_concurrency: Option<u32>,
    shared: Arc<Shared<S>>,
) -> Result<tokio::task::JoinHandle<()>, BenchError> {
    let slots = max_concurrency.map(|m| Arc::new(Semaphore::new(m.max(1) as usize)));
    let run_start = shared.run_start;
    let (p, s) = (plan.clone(), shared.clone());
    // Ends early (the run failed) when a request cannot be built.
    let mut requests = (0..offsets.len()).map_while(move |j| {
        let i = p.index(j as u64);
        Some((s.unit(&p, i)?, run_start + offsets[j]))
    });
    if clock_is_paused() {
        return Ok(tokio::spawn(async move {
            for (unit, intended) in requests.by_ref() {
                tokio::select! {
                    biased;
                    _ = shared.stop.cancelled() => break,
                    _ = sleep_until(intended) => {}
                }
                launch(
                    &tokio::runtime::Handle::current(),
                    &shared,
                    &slots,
                    unit,
                    intended,
                );
            }
        }));
    }
    let handle = tokio::runtime::Handle::current();
    let (done_tx, done_rx) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name("bench-dispatch".into())
        .spawn(move || {
            precise_sleeps();
            for (unit, intended) in requests {
                if !wait_until(intended.into_std(), &shared.stop) {
                    break;
                }
                launch(&handle, &shared, &slots, unit, intended);
            }
            let _ = done_tx.send(());
        })
        .map_err(|e| BenchError::Runtime(format!("cannot start the dispatcher thread: {e}")))?;
    Ok(tokio::spawn(async move {
        let _ = done_rx.await;
    }))
}

/// Closed loop: `workers` tasks, each taking this shard's next index when its last request
/// ends, until the plan or its duration runs out.
fn release_closed<S: Sender>(
    plan: &Plan,
    workers: u32,
    ramp: Option<crate::model::scenario::Ramp>,
    shared: &Arc<Shared<S>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let deadline = plan.duration.map(|d| shared.run_start + d);
    let next = Arc::new(AtomicU64::new(0));
    let workers = workers.max(1);
    (0..workers)
        .map(|i| {
            let (shared, next, plan) = (shared.clone(), next.clone(), plan.clone());
            // With a ramp, worker i + 1 joins when the ramp's concurrency reaches i + 1.
            let start = ramp.map_or(0.0, |r| r.reaches((i + 1) as f64, workers as f64));
            tokio::spawn(async move {
                if start > 0.0 {
                    tokio::select! {
                        _ = shared.stop.cancelled() => return,
                        _ = sleep_until(shared.run_start + Duration::from_secs_f64(start)) => {}
                    }
                }
                loop {
                    if shared.stop.is_cancelled() || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    let i = plan.index(next.fetch_add(1, Ordering::SeqCst));
                    if plan.is_past_end(i) {
                        break;
                    }
                    match plan.unit(i) {
                        Unit::Request(spec) => {
                            shared.one(spec, Instant::now(), Duration::ZERO).await
                        }
                        Unit::Session(s) => shared.session(s, Instant::now(), &None).await,
                    }
                }
            })
        })
        .collect()
}

/// What [`collect`] gathered.
struct Collected {
    records: Vec<RequestRecord>,
    streams: StreamStats,
    /// Records received, kept or not.
    total: u64,
    aborted: bool,
}

/// Receives every record until the last task is done, handing each to `observe` and keeping
/// them all while there are at most `keep` (None: no limit). A stop starts the grace period;
/// when it runs out, requests still in flight are aborted.
async fn collect(
    mut rx: mpsc::UnboundedReceiver<Sent>,
    [stop, hurry]: [&CancellationToken; 2],
    abort: &CancellationToken,
    grace: Duration,
    keep: Option<u64>,
    mut observe: impl FnMut(&RequestRecord),
) -> Collected {
    let mut records = Vec::new();
    let mut streams = StreamStats::default();
    let (mut total, mut aborted) = (0u64, false);
    let mut grace_end: Option<Instant> = None;
    loop {
        tokio::select! {
            biased;
            msg = rx.recv() => match msg {
                Some(sent) => {
                    if !sent.record.warmup && sent.record.outcome.is_ok() {
                        streams.add(&sent);
                    }
                    observe(&sent.record);
                    total += 1;
                    aborted |= sent.record.outcome == Outcome::Aborted;
                    if keep.is_none_or(|k| total <= k) {
                        records.push(sent.record);
                    } else if !records.is_empty() {
                        records = Vec::new();
                    }
                }
                None => break,
            },
            _ = stop.cancelled(), if grace_end.is_none() => {
                grace_end = Some(Instant::now() + grace);
            }
            _ = async { sleep_until(grace_end.unwrap_or_else(Instant::now)).await }, if grace_end.is_some() && !abort.is_cancelled() => {
                abort.cancel();
            }
            _ = hurry.cancelled(), if !abort.is_cancelled() => {
                stop.cancel();
                abort.cancel();
            }
        }
    }
    Collected {
        records,
        streams,
        total,
        aborted,
    }
}
