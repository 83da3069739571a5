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
    /// The over-saturation test of an open-loop point (absent for a closed loop, or a run too
    /// short for a steady state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<Saturation>,
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
    /// The highest tested rate whose point was not over-saturated, once one was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sustainable_rps: Option<f64>,
}

/// What the test saw at one point.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    pub over: bool,
    /// Offered and served load in the steady state (req/s).
    pub offered_rps: f64,
    pub served_rps: f64,
    /// TTFT's growth per second of the run, ms/s, and the lower bound of its 99 % interval.
    pub ttft_slope_ms_per_s: f64,
    pub ttft_slope_lower: f64,
}

impl Saturation {
    pub fn evidence(&self) -> String {
        format!(
            "served {:.2} of {:.2} req/s offered ({:.0} %), TTFT rising {:.1} ms per s (99 % lower bound {:.1})",
            self.served_rps,
            self.offered_rps,
            self.served_rps / self.offered_rps * 100.0,
            self.ttft_slope_ms_per_s,
            self.ttft_slope_lower
        )
    }
}
