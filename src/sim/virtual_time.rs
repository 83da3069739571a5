//! Runs the engine in virtual time: no sleeping, no sockets. Used by the model's tests and by
//! anyone who wants the model's answer for a workload in milliseconds of CPU.

use super::engine::{Counters, Engine, NewRequest};
use super::profile::SimOptions;
use std::collections::VecDeque;

/// One request of a virtual workload.
#[derive(Debug, Clone)]
pub struct VRequest {
    pub tokens: Vec<u64>,
    pub output_tokens: u32,
    pub class: String,
}

pub enum VirtualLoad {
    /// Requests at given arrival times (seconds, ascending).
    Open(Vec<(f64, VRequest)>),
    /// `concurrency` users, each sending its next request when the previous one finishes.
    Closed {
        concurrency: usize,
        requests: Vec<VRequest>,
    },
}

/// What happened to one request, in seconds of virtual time.
#[derive(Debug, Clone)]
pub struct Trace {
    pub class: String,
    pub arrival: f64,
    /// Time each output token was emitted (tokens of one step share a time).
    pub token_times: Vec<f64>,
}

impl Trace {
    pub fn ttft(&self) -> Option<f64> {
        self.token_times.first().map(|t| t - self.arrival)
    }
    pub fn e2e(&self) -> Option<f64> {
        self.token_times.last().map(|t| t - self.arrival)
    }
    /// (E2E − TTFT) / (tokens − 1), as the harness defines TPOT.
    pub fn tpot(&self) -> Option<f64> {
        let n = self.token_times.len();
        (n > 1).then(|| (self.token_times[n - 1] - self.token_times[0]) / (n - 1) as f64)
    }
}

pub struct VirtualRun {
    pub traces: Vec<Trace>,
    pub counters: Counters,
    pub peak_running: usize,
    /// Time of the last token.
    pub makespan_s: f64,
}

impl VirtualRun {
    pub fn output_tokens_per_s(&self) -> f64 {
        let n: usize = self.traces.iter().map(|t| t.token_times.len()).sum();
        n as f64 / self.makespan_s.max(1e-9)
    }
}

pub fn simulate(opts: SimOptions, load: VirtualLoad) -> Result<VirtualRun, String> {
    let mut engine = Engine::new(opts)?;
    let mut traces: Vec<Trace> = Vec::new();
    let mut arrivals: VecDeque<(f64, VRequest)> = VecDeque::new();
    let mut backlog: VecDeque<VRequest> = VecDeque::new();
    match load {
        VirtualLoad::Open(a) => arrivals.extend(a),
        VirtualLoad::Closed {
            concurrency,
            requests,
        } => {
            let mut it = requests.into_iter();
            for r in it.by_ref().take(concurrency) {
                arrivals.push_back((0.0, r));
            }
            backlog.extend(it);
        }
    }
    let mut t = 0.0f64;
    let mut peak = 0;
    let mut steps: u64 = 0;
    loop {
        while arrivals.front().is_some_and(|(at, _)| *at <= t) {
            let Some((at, r)) = arrivals.pop_front() else {
                break;
            };
            let id = traces.len() as u64;
            traces.push(Trace {
                class: r.class,
                arrival: at,
                token_times: Vec::new(),
            });
            engine.add(NewRequest {
                id,
                tokens: r.tokens,
                output_tokens: r.output_tokens,
                arrival: at,
            })?;
        }
        if !engine.has_work() {
            match arrivals.front() {
                Some((at, _)) => {
                    t = t.max(*at);
                    continue;
                }
                None => break,
            }
        }
        steps += 1;
        if steps > 50_000_000 {
            return Err("the simulation did not finish (over 50 M steps)".into());
        }
        let out = engine.step(t);
        t += out.duration_s;
        peak = peak.max(engine.num_running());
        for e in out.emitted {
            let tr = &mut traces[e.id as usize];
            tr.token_times
                .extend(std::iter::repeat_n(t, e.tokens as usize));
            if e.finished {
                if let Some(next) = backlog.pop_front() {
                    arrivals.push_back((t, next));
                }
            }
        }
        // Follow-ups arrive at the current time, which only grows, so `arrivals` stays sorted.
    }
    Ok(VirtualRun {
        traces,
        counters: engine.counters.clone(),
        peak_running: peak,
        makespan_s: t,
    })
}
