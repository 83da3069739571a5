//! `bench selftest`'s tables, printed a row at a time as the levels finish.

use crate::model::selftest::{Level, MemoryRow};

/// The heading of one table.
pub fn header(title: &str, tokens: u32) -> String {
    format!(
        "\n{title}; {tokens} content chunks per response\n{:>8} {:>9} {:>6} {:>6} {:>11} {:>13} {:>15} {:>11} {:>11} {:>11} {:>13} {:>13}",
        "streams",
        "requests",
        "ok",
        "peak",
        "chunks/s",
        "CPU µs/chunk",
        "chunks/s/core",
        "+TTFT p50",
        "+TTFT p99",
        "+TTFT max",
        "send lag p99",
        "bare µs/chunk"
    )
}

fn ms(us: f64) -> String {
    format!("{:.2} ms", us / 1000.0)
}

/// One level's row.
pub fn row(l: &Level) -> String {
    let (per_chunk, per_core) = match l.cpu_us_per_chunk {
        Some(c) if c > 0.0 => (format!("{c:.2}"), format!("{:.0}", 1e6 / c)),
        _ => ("-".into(), "-".into()),
    };
    let bare = match l.bare_cpu_us_per_chunk {
        Some(c) if c > 0.0 => format!("{c:.2}"),
        _ => "-".into(),
    };
    format!(
        "{:>8} {:>9} {:>6} {:>6} {:>11.0} {:>13} {:>15} {:>11} {:>11} {:>11} {:>13} {:>13}",
        l.streams,
        l.requests,
        l.ok,
        l.peak,
        l.chunks_per_s,
        per_chunk,
        per_core,
        ms(l.added_ttft_p50_us),
        ms(l.added_ttft_p99_us),
        ms(l.added_ttft_max_us),
        ms(l.send_lag_p99_us),
        bare
    )
}

/// The heading of the memory rows.
pub const MEMORY_HEADER: &str = "\nmemory: `bench run` in a process of its own, closed loop of 64 streams, 1 content chunk per response\n requests  peak RSS  run directory   wall";

/// One memory row.
pub fn memory_row(m: &MemoryRow) -> String {
    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1e6);
    format!(
        "{:>9} {:>9} {:>14} {:>6.1} s",
        m.requests,
        mb(m.peak_rss_bytes),
        mb(m.run_dir_bytes),
        m.wall_s
    )
}

/// What the columns mean.
pub const FOOTER: &str = "\nchunks/s: content chunks of measured requests per second of the measured window. CPU µs/chunk:\nthis process's CPU time (user + system; 10 ms ticks) over the level / content chunks of all its\nrequests; chunks/s/core is its inverse. +TTFT: the client's first-content time − the server's\nstamp for the same request, on the shared wall clock (type-7 percentiles). send lag: how late\nthe client released requests against their intended times. peak: most requests in flight.\nbare µs/chunk: the same streams and responses read by a bare tokio client (raw reads to [DONE],\nnothing parsed or timed; a closed loop): the floor the kernel and the runtime set here, so CPU\nµs/chunk − bare is what bench's client adds.\npeak RSS: the child's ru_maxrss at exit. MB = 10^6 bytes.";
