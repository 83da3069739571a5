//! Ctrl-C and SIGTERM stop a run the same way. SIGTERM is what CI runners and Kubernetes send
//! on cancel, so it must keep the partial run just as Ctrl-C does: the first signal ends
//! dispatch and gives requests in flight the grace period, after which the partial run is
//! written (`complete: false`, exit 2); a second signal ends the grace at once; a third exits
//! immediately without writing (for a run stuck past both). One listener serves the process,
//! routing each signal to the run under way. A command of several runs (repetitions, blocks,
//! sweep points) starts none after a signal: a signal that came after the last request was
//! sent leaves that run whole, but the command stops.
//!
//! The listener is installed before a command's first wait ([`install`]: a `--start-at` wait,
//! a `--switch` command), so no signal meets the default disposition there; it counts every
//! delivery (signals that arrive back to back are not merged into one), and it never depends on
//! stderr: a message that cannot be written (a closed pipe) is dropped, the signal still acts.

use crate::engine::runner::Cancel;
use std::sync::Mutex;
use std::time::Duration;
use tokio::task::JoinHandle;

/// The run signals go to now, if any, and its grace.
static CURRENT: Mutex<Option<(Cancel, Duration)>> = Mutex::new(None);
/// The one listener (per runtime: re-installed if the runtime it ran on has ended).
static LISTENER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);
/// The first signal this process received, if any: a command of several runs starts no run
/// after one, even when the run it arrived in had sent every request and finished whole.
static RECEIVED: Mutex<Option<&'static str>> = Mutex::new(None);

/// What a command of several runs wants said when a signal ends the process between its runs
/// (where it kept the runs finished, and how to judge them), computed then.
type ExitNote = Box<dyn Fn() -> String + Send>;
static EXIT_NOTE: Mutex<Option<ExitNote>> = Mutex::new(None);

/// Sets the note [`route`] prints when a signal arrives while no run is under way — say, while
/// an interleave waits for its `--switch` command — and so ends the process at once.
pub fn on_exit(note: impl Fn() -> String + Send + 'static) {
    if let Ok(mut n) = EXIT_NOTE.lock() {
        *n = Some(Box::new(note));
    }
}

/// The signal that asked this process to stop, if one has (see [`RECEIVED`]).
pub fn received() -> Option<&'static str> {
    RECEIVED.lock().ok().and_then(|r| *r)
}

/// Routes stop signals to one run while it lives; dropping it stops routing them there. A
/// signal that arrives while no run is under way (between two repetitions) ends the process
/// at once, exit 2: nothing is in flight, and every finished run is already written.
pub struct Signals {
    stop: Cancel,
}

/// Starts routing stop signals (once per runtime), so that a signal while no run is under way
/// — a `--switch` command, a wait — ends the process with its note rather than meeting the
/// default disposition. Must be called inside the runtime.
pub fn install() {
    if let Ok(mut l) = LISTENER.lock() {
        if l.as_ref().is_none_or(|h| h.is_finished()) {
            let mut incoming = Incoming::new();
            *l = Some(tokio::spawn(async move {
                loop {
                    for name in incoming.next().await {
                        route(name);
                    }
                }
            }));
        }
    }
}

impl Signals {
    pub fn listen(grace: Duration) -> Signals {
        let stop = Cancel::default();
        // Installed here at the latest, before the run starts, so no early signal is missed.
        install();
        if let Ok(mut c) = CURRENT.lock() {
            *c = Some((stop.clone(), grace));
        }
        Signals { stop }
    }

    /// The stop the run obeys.
    pub fn stop(&self) -> Cancel {
        self.stop.clone()
    }
}

impl Drop for Signals {
    fn drop(&mut self) {
        if let Ok(mut c) = CURRENT.lock() {
            *c = None;
        }
    }
}

/// One signal: the first stops dispatch, the second the grace, the third the process.
fn route(name: &'static str) {
    if let Ok(mut r) = RECEIVED.lock() {
        r.get_or_insert(name);
    }
    let current = CURRENT.lock().ok().and_then(|c| c.clone());
    match current {
        None => {
            let note = EXIT_NOTE
                .lock()
                .ok()
                .and_then(|n| n.as_ref().map(|f| f()))
                .unwrap_or_default();
            crate::say!("\n{name}: no run under way; exiting{note}");
            std::process::exit(2);
        }
        Some((s, grace)) if !s.requests.is_cancelled() => {
            crate::say!(
                "\n{name}: no new requests; waiting up to {:.1} s for those in flight, then writing the partial run (signal again to stop waiting)",
                grace.as_secs_f64()
            );
            s.requests.cancel();
        }
        Some((s, _)) if !s.in_flight.is_cancelled() => {
            crate::say!(
                "\n{name} again: aborting requests in flight and writing the partial run now"
            );
            s.in_flight.cancel();
        }
        Some(_) => {
            crate::say!("\n{name} a third time: exiting without writing");
            std::process::exit(2);
        }
    }
}

/// Deliveries of SIGINT and SIGTERM counted by a handler of their own (an atomic add is
/// async-signal-safe): tokio's stream wakes once for several deliveries that arrive before it
/// is polled, and these counts say how many there were.
#[cfg(unix)]
static DELIVERED: [std::sync::atomic::AtomicU64; 2] = [
    std::sync::atomic::AtomicU64::new(0),
    std::sync::atomic::AtomicU64::new(0),
];

/// Whether the counting handler of each signal was registered.
#[cfg(unix)]
static COUNTED: [std::sync::atomic::AtomicBool; 2] = [
    std::sync::atomic::AtomicBool::new(false),
    std::sync::atomic::AtomicBool::new(false),
];

const NAMES: [&str; 2] = ["interrupted (Ctrl-C)", "terminated (SIGTERM)"];

/// Ctrl-C and SIGTERM as they arrive (registered once, so none is missed between two waits).
struct Incoming {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    /// Deliveries routed so far, per signal.
    #[cfg(unix)]
    seen: [u64; 2],
}

impl Incoming {
    fn new() -> Incoming {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            static COUNTING: std::sync::Once = std::sync::Once::new();
            COUNTING.call_once(|| {
                for (i, sig) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
                    // SAFETY: the action only adds to a static atomic, which is
                    // async-signal-safe; it never allocates, locks or panics.
                    let registered = unsafe {
                        signal_hook_registry::register(sig, move || {
                            DELIVERED[i].fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        })
                    };
                    if registered.is_ok() {
                        COUNTED[i].store(true, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
            let now = |i: usize| DELIVERED[i].load(std::sync::atomic::Ordering::SeqCst);
            Incoming {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
                seen: [now(0), now(1)],
            }
        }
        #[cfg(not(unix))]
        Incoming {}
    }

    /// Waits for the next Ctrl-C or SIGTERM and names each delivery since the last call.
    async fn next(&mut self) -> Vec<&'static str> {
        #[cfg(unix)]
        {
            async fn recv(s: &mut Option<tokio::signal::unix::Signal>) {
                let got = match s {
                    Some(s) => s.recv().await.is_some(),
                    None => false,
                };
                if !got {
                    std::future::pending::<()>().await
                }
            }
            loop {
                let woke = tokio::select! {
                    _ = recv(&mut self.int) => 0,
                    _ = recv(&mut self.term) => 1,
                };
                let mut names = Vec::new();
                for i in 0..2 {
                    let now = DELIVERED[i].load(std::sync::atomic::Ordering::SeqCst);
                    let n = now.saturating_sub(self.seen[i]);
                    self.seen[i] = now;
                    names.extend(std::iter::repeat_n(NAMES[i], n as usize));
                }
                // A wake whose deliveries an earlier wake already counted is none.
                if names.is_empty() && !COUNTED[woke].load(std::sync::atomic::Ordering::SeqCst) {
                    names.push(NAMES[woke]);
                }
                if !names.is_empty() {
                    return names;
                }
            }
        }
        #[cfg(not(unix))]
        match tokio::signal::ctrl_c().await {
            Ok(()) => vec![NAMES[0]],
            Err(_) => std::future::pending().await,
        }
    }
}
