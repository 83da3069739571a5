//! A run cut into time windows, and the steady state found in it (computed by
//! `metrics::windows`; every field says its unit).

use serde::{Deserialize, Serialize};

/// The run's windows and its steady state.
/// The narrowest window, s (`--window`): 10 ms, about the finest a server's step and a
/// client's timer resolve; narrower ones hold a request or none, and only multiply the files.
pub const MIN_WIDTH_S: f64 = 0.01;

/// The most windows a run is cut into. A longer run's windows are widened (to a whole number
/// of the width asked for) and say so (`asked_width_s`), so that run.json, windows.csv and the
/// report stay bounded whatever the run's length: 10,000 windows ≈ 2 MB of run.json.
pub const MAX_WINDOWS: u64 = 10_000;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Windows {
    /// Width of each window, s; windows lie at whole multiples of it on the run's clock.
    pub width_s: f64,
    /// The width `--window` asked for, when the run was too long for that many windows and
    /// they were widened to `width_s` (at most [`MAX_WINDOWS`] a run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_width_s: Option<f64>,
    pub rows: Vec<Window>,
    /// Where warm-up ended and drain began; absent when the run was too short to tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyState>,
    /// Why there is no steady state, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_missing: Option<String>,
}

/// One window of a run. Requests belong to the window of their intended send for what was
/// sent (counts, errors, latencies), and to the window of their end for what was completed
/// (throughput); in-flight is time-weighted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Offsets from the run's start, s.
    pub start_s: f64,
    pub end_s: f64,
    /// Measured requests meant to be sent in the window.
    pub sent: u64,
    /// Of those, the ones that failed (every outcome but ok and aborted).
    pub errors: u64,
    /// Successful measured requests that ended in the window, per second.
    pub request_rps: f64,
    /// Their output tokens per second.
    pub output_tps: f64,
    /// Mean measured requests in flight (intended send → end): Σ overlap / width.
    pub in_flight: f64,
    /// Successful requests sent in the window: TTFT, TPOT and E2E quantiles, ms (absent
    /// without any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p95_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tpot_p50_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_p50_ms: Option<f64>,
    /// The server's gauges, mean over the scrapes taken in the window (absent without).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_running: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_waiting: Option<f64>,
    /// KV-cache usage, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_kv_usage: Option<f64>,
}

/// The part of a run between warm-up and drain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SteadyState {
    /// How it was found.
    pub method: String,
    /// Offsets from the run's start, s: the start of the slice where the warm-up MSER-5 found
    /// ends, and the last intended send (after it the run only drains).
    pub start_s: f64,
    pub end_s: f64,
    /// Measured requests sent before it (warm-up) and inside it.
    pub warmup_requests: u64,
    pub requests: u64,
    /// The requests sent inside it: (n − 1) / (last − first intended send), req/s — the load
    /// offered.
    pub offered_rps: f64,
    /// The same requests' successful completions: (n − 1) / (last − first end), req/s — the
    /// load served. Equal to the offered load when the server keeps up.
    pub achieved_rps: f64,
    /// Their output tokens over the same completion span (tok/s).
    pub output_tps: f64,
}
