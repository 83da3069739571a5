//! The engine in real time: one task owns the [`Engine`], adds arriving requests (gathering
//! for [`GATHER`] when woken from idle), runs a step, sleeps until the step's modelled end,
//! then hands each request its tokens. The model's clock
//! advances by exact step durations and resynchronises with the wall clock only after an idle
//! period (or, as a guard, when it falls a whole [`MAX_LAG_S`] behind). A wake-up the host
//! delays — a busy machine, a descheduled thread — therefore delays only the tokens of that
//! step: the next step's end is still where the model puts it, so the engine catches up and
//! the lateness does not accumulate into every later token. What the simulator models is the
//! engine, not the host it happens to run on: a busy host jitters single token times, but a
//! request's TTFT, TPOT and E2E stay those of the model. After every step the gauges, counters
//! and histograms `/metrics` serves are published.

use crate::sim::engine::{Counters, Engine, NewRequest};
use crate::sim::prom::PromHistogram;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Tokens handed to one request's stream.
pub(super) struct Ev {
    pub tokens: u32,
    pub finished: bool,
    /// When the tokens were handed over.
    pub at: Instant,
    /// With the first tokens: the server's own clock for the request.
    pub clock: Option<FirstClock>,
}

/// The request's time in the engine up to its first token, as a server reports it: queued
/// from its arrival to its first scheduling (engine clock), prefill from then to the first
/// token's hand-over (wall clock, so a late step shows in it as in a real server's), and the
/// prompt tokens its prefix cache served.
#[derive(Debug, Clone, Copy)]
pub(super) struct FirstClock {
    pub queue: Duration,
    pub prefill: Duration,
    pub cached: u32,
}

/// What handlers ask of the engine.
pub(super) enum Cmd {
    Add {
        req: NewRequest,
        max_tokens: u32,
        ignore_eos: bool,
        /// A greedy answer's length, which ends the reply (within `max_tokens`).
        answer_len: Option<u32>,
        tx: mpsc::UnboundedSender<Ev>,
    },
    /// Empty the prefix cache; the count of blocks dropped goes back on `done`.
    ResetPrefixCache {
        done: tokio::sync::oneshot::Sender<usize>,
    },
}

/// What `/metrics` serves, updated after every step.
#[derive(Default)]
pub(super) struct MetricsState {
    pub running: usize,
    pub waiting: usize,
    pub kv_usage: f64,
    pub counters: Counters,
    /// Queue time, prefill time, TTFT, E2E and decode time, in vLLM's buckets.
    pub hist: Option<[PromHistogram; 5]>,
}

/// How far the model's clock may fall behind the wall clock while busy before it is moved up
/// to it: a host stalled this long is not caught up in one burst of tokens.
const MAX_LAG_S: f64 = 1.0;

/// How long an engine woken from idle gathers arriving requests before its first step.
const GATHER: Duration = Duration::from_millis(2);

pub(super) async fn drive(
    mut engine: Engine,
    mut rx: mpsc::UnboundedReceiver<Cmd>,
    metrics: Arc<Mutex<MetricsState>>,
    epoch: Instant,
) {
    let mut streams: HashMap<u64, mpsc::UnboundedSender<Ev>> = HashMap::new();
    let mut vt = 0.0f64;
    let handle = |engine: &mut Engine,
                  streams: &mut HashMap<u64, mpsc::UnboundedSender<Ev>>,
                  cmd: Cmd| match cmd {
        Cmd::Add {
            mut req,
            max_tokens,
            ignore_eos,
            answer_len,
            tx,
        } => {
            req.output_tokens = match (answer_len, ignore_eos) {
                (Some(n), false) => n.clamp(1, max_tokens.max(1)),
                _ => engine.output_length(max_tokens, ignore_eos),
            };
            req.arrival = epoch.elapsed().as_secs_f64();
            let id = req.id;
            if engine.add(req).is_ok() {
                streams.insert(id, tx);
            }
            // A refused request's sender drops here: its handler reports the error.
        }
        Cmd::ResetPrefixCache { done } => {
            let _ = done.send(engine.reset_prefix_cache());
        }
    };
    loop {
        loop {
            match rx.try_recv() {
                Ok(cmd) => handle(&mut engine, &mut streams, cmd),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        if !engine.has_work() {
            publish(&mut engine, &metrics);
            match rx.recv().await {
                Some(cmd) => handle(&mut engine, &mut streams, cmd),
                None => return,
            }
            // Woken from idle: the requests that arrive together (a closed loop's clients
            // replacing the requests that ended in one step) are admitted together, as an
            // engine's input processing gathers its queue before the step it schedules.
            // Without it the first arrival started a step alone and the rest, a few hundred µs
            // behind, waited a whole step: TTFT split by where a client's send fell, and a
            // run's p50 jumped between the two (23.6 ms against 15.0 ms on `smoke`).
            // The gather ends GATHER after the arrival on the model's clock, which starts
            // again from the wall clock here: a late wake-up from this sleep is caught up by
            // the step after it, not added to it.
            vt = vt.max(epoch.elapsed().as_secs_f64()) + GATHER.as_secs_f64();
            tokio::time::sleep_until(epoch + Duration::from_secs_f64(vt)).await;
            continue;
        }
        let now = epoch.elapsed().as_secs_f64();
        if vt < now - MAX_LAG_S {
            vt = now;
        }
        let out = engine.step(vt);
        vt += out.duration_s;
        // A step no real engine would take (options at the edge of their ranges) sleeps a
        // day rather than overflow a Duration.
        let wake = Duration::try_from_secs_f64(vt).unwrap_or(Duration::from_secs(86_400));
        tokio::time::sleep_until(epoch + wake.min(Duration::from_secs(86_400 * 365))).await;
        let at = Instant::now();
        for e in out.emitted {
            let gone = match streams.get(&e.id) {
                Some(tx) => tx
                    .send(Ev {
                        tokens: e.tokens,
                        finished: e.finished,
                        at,
                        clock: e.admitted.map(|a| {
                            let secs = |s: f64| Duration::try_from_secs_f64(s).unwrap_or_default();
                            FirstClock {
                                queue: secs(a.queued_s),
                                prefill: at.saturating_duration_since(epoch + secs(a.at)),
                                cached: a.cached,
                            }
                        }),
                    })
                    .is_err(),
                None => true,
            };
            if gone {
                // The client went away: stop generating for it.
                engine.abort(e.id);
                streams.remove(&e.id);
            } else if e.finished {
                streams.remove(&e.id);
            }
        }
        publish(&mut engine, &metrics);
    }
}

fn publish(engine: &mut Engine, metrics: &Arc<Mutex<MetricsState>>) {
    let obs = engine.take_observations();
    if let Ok(mut m) = metrics.lock() {
        m.running = engine.num_running();
        m.waiting = engine.num_waiting();
        m.kv_usage = engine.kv_usage();
        m.counters = engine.counters.clone();
        if let Some(h) = m.hist.as_mut() {
            let series = [
                &obs.queue_time_s,
                &obs.prefill_time_s,
                &obs.ttft_s,
                &obs.e2e_s,
                &obs.decode_time_s,
            ];
            for (hist, values) in h.iter_mut().zip(series) {
                for v in values {
                    hist.observe(*v);
                }
            }
        }
    }
}
