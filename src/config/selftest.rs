//! `bench selftest`'s flags as its two tables' settings, checked before any stream opens.

use crate::cli::SelftestArgs;
use crate::error::BenchError;
use std::time::Duration;

/// The two tables: (gap between chunks, chunks per response, title).
pub fn tables(args: &SelftestArgs) -> Result<Vec<(Duration, u32, String)>, BenchError> {
    if args.streams.is_empty() || args.streams.contains(&0) {
        return Err(BenchError::usage(
            "--streams: give one or more positive counts, e.g. 1,64,1024",
        ));
    }
    if !(args.pace_ms.is_finite() && args.pace_ms > 0.0) {
        return Err(BenchError::usage("--pace-ms: must be > 0"));
    }
    let paced = Duration::from_secs_f64(args.pace_ms / 1000.0);
    Ok(vec![
        (Duration::ZERO, args.tokens, "flat out: the server sends every chunk at once; closed loop, concurrency = streams".to_string()),
        (paced, args.paced_tokens, format!("paced: one chunk every {} ms per stream; open loop (Poisson) at the rate that keeps `streams` in flight", args.pace_ms)),
    ])
}
