//! `bench selftest`'s tables, printed a row at a time as the levels finish.

use crate::model::selftest::Level;

/// The heading of one table.
pub fn header(title: &str, tokens: u32) -> String {
    format!(
        "\n{title}; {tokens} content chunks per response\n{:>8} {:>9} {:>6} {:>6} {:>12} {:>18} {:>18} {:>18}",
        "streams",
        "requests",
        "ok",
        "peak",
        "chunks/s",
        "added TTFT p50 µs",
        "added TTFT p99 µs",
        "added TTFT max µs"
    )
}

/// One level's row.
pub fn row(l: &Level) -> String {
    format!(
        "{:>8} {:>9} {:>6} {:>6} {:>12.0} {:>18.0} {:>18.0} {:>18.0}",
        l.streams,
        l.requests,
        l.ok,
        l.peak,
        l.chunks_per_s,
        l.added_ttft_p50_us,
        l.added_ttft_p99_us,
        l.added_ttft_max_us
    )
}

/// What the columns mean.
pub const FOOTER: &str = "\nchunks/s: content chunks handled per second of the measured window. added TTFT: the client's\nfirst-content timestamp − the server's, per request (type-7 percentiles). peak: most requests in flight.";
