//! A conversation session in the runner: its turns one after another, each carrying the
//! replies received so far (the module header of [`super`] says how they are timed).

use super::{Sender, Shared};
use crate::plan::conversation::{Reply, SessionSpec};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::Semaphore;
use tokio::time::Instant;

impl<S: Sender> Shared<S> {
    /// Runs one conversation session: each turn after the last one's reply and think time,
    /// carrying the replies received; it ends at a failed turn or a stop.
    pub(super) async fn session(
        self: &Arc<Self>,
        s: SessionSpec,
        start: Instant,
        slots: &Option<Arc<Semaphore>>,
    ) {
        let c = &self.counters;
        c.sessions_started.fetch_add(1, Ordering::SeqCst);
        let n = s.turns.len();
        let mut replies: Vec<Reply> = Vec::with_capacity(n);
        let mut intended = start;
        for t in 0..n {
            let left = (n - t) as u64;
            if t > 0 {
                // Like a closed loop's pick-up, a later turn is intended when its user is done
                // thinking: the timer's 1 ms resolution may lengthen the think time, but is not
                // added to the turn's latency.
                tokio::select! {
                    biased;
                    _ = self.stop.cancelled() => {}
                    _ = tokio::time::sleep(s.turns[t].think) => {}
                }
                intended = Instant::now();
            }
            if self.stop.is_cancelled() {
                c.not_sent.fetch_add(left, Ordering::SeqCst);
                return;
            }
            let spec = s.request(t, &replies);
            let waiting = Instant::now();
            let Some(_permit) = self.slot(slots, left).await else {
                return;
            };
            let Some(mut sent) = self.send(spec, intended, waiting.elapsed()).await else {
                return;
            };
            let ok = sent.record.outcome.is_ok();
            let reply = sent.reply.take();
            self.deliver(sent);
            if !ok {
                // A turn aborted by a stop ends the session like the stop does; a turn that
                // failed on its own ends it early.
                if self.stop.is_cancelled() {
                    c.not_sent.fetch_add(left - 1, Ordering::SeqCst);
                } else {
                    c.sessions_ended_early.fetch_add(1, Ordering::SeqCst);
                    c.turns_skipped.fetch_add(left - 1, Ordering::SeqCst);
                }
                return;
            }
            replies.push(reply.unwrap_or_default());
        }
        c.sessions_completed.fetch_add(1, Ordering::SeqCst);
    }
}
