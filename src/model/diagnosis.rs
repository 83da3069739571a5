//! Findings of the symptom → technique decision tree (made by `analysis::diagnose`).

use serde::Serialize;

/// Thresholds used when the scenario sets no SLO.
pub struct Limits;

impl Limits {
    pub const TTFT_P95_MS: f64 = 500.0;
    pub const TPOT_P95_MS: f64 = 50.0;
    /// p99/p50 above this is a tail.
    pub const TAIL_RATIO: f64 = 3.0;
    /// Error rate above this is a stability problem.
    pub const ERROR_RATE: f64 = 0.01;
    /// A server-side share of TTFT above this names the cause.
    pub const CAUSE_SHARE: f64 = 0.5;
    /// Below this prefix-cache hit rate, repeated prefixes are being recomputed.
    pub const LOW_HIT_RATE: f64 = 0.3;
    /// Speculation below this acceptance no longer pays (11.2).
    pub const MIN_ACCEPTANCE: f64 = 0.5;
    /// Achieved/offered request rate below this: the server does not keep up.
    pub const KEEP_UP: f64 = 0.9;
}

/// The symptom areas, in the recommended order (docs/optimization.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Area {
    Stability,
    Ttft,
    Tpot,
    Tail,
    Capacity,
}

#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    pub area: Area,
    /// "TTFT high — queueing".
    pub title: String,
    pub evidence: Vec<String>,
    /// Cheapest first.
    pub techniques: Vec<String>,
    /// Conflicts with what the run already enables.
    pub conflicts: Vec<String>,
}
