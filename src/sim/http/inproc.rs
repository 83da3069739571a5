//! The engine without its HTTP layer: the same driver task the server runs, handed prompts
//! directly. A client under tokio's paused clock then runs against the model in virtual time
//! — token times follow the engine's modelled step durations exactly, with no socket and no
//! wall clock — which is how tests check what a workload's shape does to latency.

use super::driver::{drive, Cmd, MetricsState};
use crate::error::BenchError;
use crate::sim::engine::{Engine, NewRequest};
use crate::sim::profile::SimOptions;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::time::Instant;

/// A running engine that takes token ids and returns the time each output token was handed
/// over. Dropping it stops the driver.
pub struct InProcess {
    cmd: mpsc::UnboundedSender<Cmd>,
    next_id: AtomicU64,
}

impl InProcess {
    /// Starts the driver on the current tokio runtime.
    pub fn start(opts: SimOptions) -> Result<InProcess, BenchError> {
        let engine = Engine::new(opts).map_err(BenchError::Usage)?;
        let (cmd, rx) = mpsc::unbounded_channel();
        let metrics = Arc::new(Mutex::new(MetricsState::default()));
        tokio::spawn(drive(engine, rx, metrics, Instant::now()));
        Ok(InProcess {
            cmd,
            next_id: AtomicU64::new(0),
        })
    }

    /// Generates up to `max_tokens` for a prompt of token ids; the time each token was
    /// handed over (empty when the engine refused the request).
    pub async fn generate(
        &self,
        tokens: Vec<u64>,
        max_tokens: u32,
        ignore_eos: bool,
    ) -> Vec<Instant> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let req = NewRequest {
            id: self.next_id.fetch_add(1, Ordering::SeqCst),
            tokens,
            output_tokens: max_tokens,
            arrival: 0.0,
        };
        let add = Cmd::Add {
            req,
            max_tokens,
            ignore_eos,
            answer_len: None,
            tx,
        };
        if self.cmd.send(add).is_err() {
            return Vec::new();
        }
        let mut times = Vec::new();
        while let Some(ev) = rx.recv().await {
            times.extend(std::iter::repeat_n(ev.at, ev.tokens as usize));
            if ev.finished {
                break;
            }
        }
        times
    }
}
