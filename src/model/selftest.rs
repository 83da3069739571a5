//! `bench selftest`'s figures for one concurrency level (made by `analysis::selftest`).

/// One concurrency level's figures: chunks handled per second of the measured window, and
/// the TTFT the client added (µs) over the server's own first-token stamp.
#[derive(Debug, Clone)]
pub struct Level {
    pub streams: u32,
    pub requests: u64,
    pub ok: u64,
    pub chunks_per_s: f64,
    /// This process's CPU µs per content chunk (None where /proc is not there).
    pub cpu_us_per_chunk: Option<f64>,
    /// The same streams read by a bare tokio client, CPU µs per content chunk: the floor.
    pub bare_cpu_us_per_chunk: Option<f64>,
    pub added_ttft_p50_us: f64,
    pub added_ttft_p99_us: f64,
    pub added_ttft_max_us: f64,
    pub peak: u64,
    /// p99 of how late requests were released against their intended times (µs).
    pub send_lag_p99_us: f64,
}

/// `bench run` of `requests` requests in a process of its own: its peak resident set and the
/// size of the run directory it wrote.
#[derive(Debug, Clone)]
pub struct MemoryRow {
    pub requests: u64,
    pub peak_rss_bytes: u64,
    pub run_dir_bytes: u64,
    pub wall_s: f64,
}
