//! A sweep: one scenario at a series of loads (made by `analysis::sweep`).

use serde::{Deserialize, Serialize};

/// One load of a sweep and what it achieved (latencies in ms, rates per second of the run's
/// measured window).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Point {
    /// `rate=4` or `concurrency=8`.
    pub load: String,
    pub offered_rps: Option<f64>,
    pub concurrency: Option<u32>,
    pub achieved_rps: f64,
    pub output_tps: f64,
    pub goodput_rps: Option<f64>,
    /// Fraction of successful requests meeting every SLO.
    pub slo_attainment: Option<f64>,
    pub ttft_p50_ms: f64,
    pub ttft_p95_ms: f64,
    pub ttft_p99_ms: f64,
    pub tpot_p50_ms: f64,
    pub tpot_p95_ms: f64,
    pub tpot_p99_ms: f64,
    pub errors: u64,
    pub sent: u64,
    pub peak_concurrency: u64,
    pub run_dir: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Sweep {
    pub scenario: String,
    pub points: Vec<Point>,
    /// Why the series stopped before its last point, if it did.
    pub stopped_early: Option<String>,
    /// `--find-max-rate`: the highest passing rate found and the bracket it came from.
    pub max_rate_rps: Option<f64>,
    /// Both ends measured: the lower met the SLOs (or is 0 when none did), the upper failed.
    pub max_rate_bracket: Option<(f64, f64)>,
    /// When no tested rate failed: the max rate is a lower bound, and says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_note: Option<String>,
}
