//! `bench selftest`'s figures for one concurrency level (made by `analysis::selftest`).

/// One concurrency level's figures: chunks handled per second of the measured window, and
/// the TTFT the client added (µs) over the server's own first-token stamp.
#[derive(Debug, Clone)]
pub struct Level {
    pub streams: u32,
    pub requests: u64,
    pub ok: u64,
    pub chunks_per_s: f64,
    pub added_ttft_p50_us: f64,
    pub added_ttft_p99_us: f64,
    pub added_ttft_max_us: f64,
    pub peak: u64,
}
