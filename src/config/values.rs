//! Checks shared by scenario fields and the command-line flags that override them, so a
//! value means the same and fails the same way wherever it is given — including its range.
//!
//! Every number has a sane range ([`limits`], listed in `scenarios/README.md`), checked when
//! the file or flag is read: a value far outside what a benchmark can mean (a rate of 5e-324,
//! a timeout of 1e308 s, a billion-token prompt) would otherwise overflow a duration, exhaust
//! memory or spin forever once the run starts.

/// The ranges, both ends inclusive.
pub mod limits {
    /// Open-loop rate, requests/s.
    pub const RATE_RPS: (f64, f64) = (1e-4, 1e6);
    /// Closed-loop concurrency and `max_concurrency`.
    pub(super) const CONCURRENCY: (u32, u32) = (1, 100_000);
    /// Measured requests of a plan (the open-loop schedule's own cap too).
    pub(super) const REQUESTS: (u64, u64) = (1, 10_000_000);
    pub(super) const WARMUP_MAX: u64 = 1_000_000;
    /// `load.duration`, s (30 days).
    pub(super) const DURATION_S: (f64, f64) = (1e-3, 2_592_000.0);
    /// Request timeouts and `server_metrics.interval_s`, s (one day).
    pub const TIMEOUT_S: (f64, f64) = (1e-3, 86_400.0);
    /// `--grace`, s.
    pub const GRACE_S: (f64, f64) = (0.0, 3_600.0);
    /// Gamma shape of arrivals.
    pub const BURSTINESS: (f64, f64) = (1e-3, 1e3);
    /// One prompt's or output's tokens (and a length distribution's mean and spread).
    pub const TOKENS_MAX: u32 = crate::model::dist::TOKENS_MAX;
    /// Shared prefixes of a `shared_prefix` workload, and all their tokens together.
    pub const PREFIXES_MAX: u32 = 100_000;
    /// `workload.time_scale` of a trace.
    pub const TIME_SCALE: (f64, f64) = (1e-3, 1e3);
    /// `workload.block_tokens` of a trace.
    pub const BLOCK_TOKENS: (u64, u64) = (1, 65_536);
    /// Turns of one conversation session (a request index holds session × 1,000 + turn).
    pub const TURNS: (u64, u64) = (1, 999);
    /// A think time between turns, ms (≈ 33 minutes: the bound every length distribution has).
    pub const THINK_TIME_MS: (u64, u64) = (1, 2_000_000);
    pub const PREFIX_TOKENS_TOTAL_MAX: u64 = 20_000_000;
    /// SLOs, ms (one day).
    pub const SLO_MS: (f64, f64) = (1e-3, 86_400_000.0);
    pub const TEMPERATURE: (f64, f64) = (0.0, 100.0);
    /// `--repeat`: runs a side, blocks, or runs a configuration.
    pub(super) const REPEAT_MAX: u32 = 1_000;
    /// One line of a JSONL dataset or trace, bytes: a prompt of TOKENS_MAX tokens is ≈ 10 MB
    /// of text, so a longer line is no request (and parsing it would take several times its
    /// size in memory).
    pub const LINE_BYTES_MAX: usize = 32 << 20;
    /// A dataset or trace file, bytes: it is read whole (ShareGPT's JSON is ≈ 0.7 GB).
    pub const DATA_FILE_BYTES_MAX: u64 = 4 << 30;
    /// A conversation's longest history (system + every turn's message and reply): the
    /// history is the next turn's prompt, so it has a prompt's bound.
    pub const HISTORY_TOKENS_MAX: u64 = TOKENS_MAX as u64;
}

/// `--repeat N` of any command: the runs (or blocks) to make, at least 1, at most
/// [`limits::REPEAT_MAX`]; every command refuses 0 the same way.
pub fn repeats(n: u32) -> Result<usize, crate::error::BenchError> {
    repeats_of("--repeat", n)
}

/// [`repeats`] for the flag named `flag` (`--max-repeat`), which the message names.
pub fn repeats_of(flag: &str, n: u32) -> Result<usize, crate::error::BenchError> {
    if (1..=limits::REPEAT_MAX).contains(&n) {
        Ok(n as usize)
    } else {
        Err(crate::error::BenchError::usage(format!(
            "{flag} must be between 1 and {} (got {n})",
            limits::REPEAT_MAX
        )))
    }
}

/// A JSONL line longer than [`limits::LINE_BYTES_MAX`]: the message naming it, else `None`.
pub fn line_too_long(line: &str) -> Option<String> {
    (line.len() > limits::LINE_BYTES_MAX).then(|| {
        format!(
            "a line of {:.0} MB, over the {} MB a request's line can take (a prompt of {} tokens is ≈ 10 MB)",
            line.len() as f64 / 1e6,
            limits::LINE_BYTES_MAX >> 20,
            limits::TOKENS_MAX
        )
    })
}

/// `v` within `[lo, hi]` (and a number), or why not.
pub fn in_range(v: f64, (lo, hi): (f64, f64), unit: &str) -> Result<(), String> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!("must be between {lo} and {hi}{unit} (got {v})"))
    }
}

/// An integer within `[lo, hi]`, or why not.
pub fn in_range_u64(v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("must be at least {lo} and at most {hi} (got {v})"))
    }
}

pub fn check_rate(r: f64) -> Result<(), String> {
    let (lo, hi) = limits::RATE_RPS;
    if r.is_finite() && r >= lo && r <= hi {
        Ok(())
    } else {
        Err(format!(
            "must be a positive number of requests per second, between {lo} and {hi} (got {r})"
        ))
    }
}

pub fn check_concurrency(c: u32) -> Result<(), String> {
    let (lo, hi) = limits::CONCURRENCY;
    in_range_u64(c as u64, lo as u64, hi as u64)
}

pub fn check_requests(r: u64) -> Result<(), String> {
    let (lo, hi) = limits::REQUESTS;
    in_range_u64(r, lo, hi)
}

pub fn check_warmup(w: u64) -> Result<(), String> {
    in_range_u64(w, 0, limits::WARMUP_MAX)
}

pub fn check_endpoint(e: &str) -> Result<(), String> {
    let url = url::Url::parse(e).map_err(|err| {
        format!("`{e}` is not a URL ({err}); write it like http://127.0.0.1:8000/v1")
    })?;
    match url.scheme() {
        "http" | "https" => Ok(()),
        s => Err(format!(
            "scheme `{s}` is not supported; use http:// or https://"
        )),
    }
}

/// Seconds from "90s", "5m", "1h 30m" (humantime) or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<f64, String> {
    let secs = match s.trim().parse::<f64>() {
        Ok(v) => v,
        Err(_) => humantime::parse_duration(s.trim())
            .map_err(|e| format!("`{s}` is not a duration ({e}); write it like \"90s\" or \"5m\""))?
            .as_secs_f64(),
    };
    let (lo, hi) = limits::DURATION_S;
    if secs.is_finite() && secs >= lo && secs <= hi {
        Ok(secs)
    } else {
        Err(format!(
            "must be between {lo} s and {hi} s, 30 days (got `{s}`)"
        ))
    }
}
