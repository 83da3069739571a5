//! The simulator's ground truth (`--sim-truth-log`): one JSON line a finished request — when
//! it arrived, when each of its tokens was handed to HTTP, and the server's own clock as its
//! reply reports it — that tests hold the client's measurements against.

use super::driver::FirstClock;
use super::AppState;
use serde_json::json;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// The server's clock for one finished request: its first tokens' [`FirstClock`] and the
/// first and last token times.
pub(super) struct Clocked {
    pub(super) first: FirstClock,
    pub(super) decode: Duration,
}

/// Writes one request's ground truth when it finishes.
pub(super) struct TruthWriter {
    pub(super) state: Arc<AppState>,
    pub(super) request_id: Option<String>,
    pub(super) arrival: Instant,
}

impl TruthWriter {
    /// `reasoning`: how many leading tokens were reasoning; `clock`: the server's own clock
    /// as the reply reports it.
    pub(super) fn write(&self, token_at: &[Instant], reasoning: u32, clock: Option<&Clocked>) {
        let Some(t) = &self.state.truth else { return };
        let us = |i: Instant| i.saturating_duration_since(self.state.epoch).as_micros() as u64;
        let line = json!({
            "request_id": self.request_id,
            "arrival_us": us(self.arrival),
            "first_token_us": token_at.first().map(|i| us(*i)),
            "token_us": token_at.iter().map(|i| us(*i)).collect::<Vec<_>>(),
            "output_tokens": token_at.len(),
            "reasoning_tokens": (reasoning as usize).min(token_at.len()),
            "first_answer_us": token_at.get(reasoning as usize).map(|i| us(*i)),
            "server_queue_us": clock.map(|c| c.first.queue.as_micros() as u64),
            "server_prefill_us": clock.map(|c| c.first.prefill.as_micros() as u64),
            "cached_tokens": clock.map(|c| c.first.cached),
        });
        if let Ok(mut w) = t.lock() {
            let _ = writeln!(w, "{line}");
            let _ = w.flush();
        }
    }
}
