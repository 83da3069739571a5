//! A request trace as the plan replays it (loaded and checked by `config::trace`): one row a
//! request, with its send time and lengths, and the ids of the prompt's blocks — requests that
//! share leading block ids share exactly that prefix (the Mooncake trace format).

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// One request of a trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    /// Send time, ms from the trace's start (a later turn of a session: its session's start).
    pub timestamp_ms: f64,
    /// A later turn of a session: sent this long after the previous turn's reply ended (ms).
    pub delay_ms: Option<f64>,
    pub input_tokens: u32,
    pub output_tokens: u32,
    /// Ids of the prompt's consecutive blocks of `block_tokens` tokens (the last may be
    /// partial). Empty when the trace gives none: the prompt then shares nothing.
    pub hash_ids: Vec<u64>,
    /// 1-based line in the file.
    pub line: usize,
}

#[derive(Debug)]
pub struct Trace {
    pub rows: Vec<TraceRow>,
    /// What is released at a timestamp, in order: the row indices of each session (rows
    /// sharing a `session_id`, in file order), or one row alone. One row each when the trace
    /// has no sessions.
    pub units: Vec<Vec<usize>>,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
}

/// The prefix reuse a trace holds by itself: of all the blocks its first `rows` requests send,
/// the fraction whose id an earlier request already sent — the hit rate of an ideal,
/// unbounded prefix cache that keeps every block forever.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TraceReuse {
    pub rows: u64,
    pub blocks: u64,
    pub reused_blocks: u64,
    /// reused_blocks / blocks.
    pub ideal_hit_rate: f64,
}

impl Trace {
    /// Whether some rows are later turns of a session (`session_id`, `delay`).
    pub fn has_sessions(&self) -> bool {
        self.units.len() < self.rows.len()
    }

    /// When unit `u` starts (its first row's timestamp), ms.
    pub fn unit_start_ms(&self, u: usize) -> f64 {
        self.rows[self.units[u][0]].timestamp_ms
    }

    /// The most units (requests, or sessions' first turns) started within any one second of
    /// the replay, at `time_scale`.
    pub fn peak_rate(&self, time_scale: f64) -> f64 {
        let t: Vec<f64> = (0..self.units.len())
            .map(|u| self.unit_start_ms(u) * time_scale)
            .collect();
        let (mut start, mut best) = (0, 0);
        for end in 0..t.len() {
            while t[end] - t[start] >= 1000.0 {
                start += 1;
            }
            best = best.max(end - start + 1);
        }
        best as f64
    }

    /// [`TraceReuse`] of the rows of the first `n` units, in file order. Only a request's
    /// *leading* run of known blocks can hit a prefix cache, so a block counts as reused when
    /// it and every block before it in the same prompt were sent before.
    pub fn reuse(&self, n: usize) -> TraceReuse {
        let mut rows: Vec<usize> = self.units.iter().take(n).flatten().copied().collect();
        rows.sort_unstable();
        let mut seen: HashSet<u64> = HashSet::new();
        let (mut blocks, mut reused) = (0u64, 0u64);
        for r in rows.iter().map(|i| &self.rows[*i]) {
            let mut prefix = true;
            for id in &r.hash_ids {
                blocks += 1;
                prefix &= seen.contains(id);
                reused += prefix as u64;
            }
            seen.extend(r.hash_ids.iter().copied());
        }
        TraceReuse {
            rows: rows.len() as u64,
            blocks,
            reused_blocks: reused,
            ideal_hit_rate: if blocks > 0 {
                reused as f64 / blocks as f64
            } else {
                0.0
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(ids: &[u64]) -> TraceRow {
        TraceRow {
            timestamp_ms: 0.0,
            delay_ms: None,
            input_tokens: 1,
            output_tokens: 1,
            hash_ids: ids.to_vec(),
            line: 1,
        }
    }

    #[test]
    fn reuse_counts_leading_blocks_seen_before() {
        let t = Trace {
            rows: vec![
                row(&[1, 2, 3]),
                row(&[1, 2, 4]),
                row(&[5, 2]),
                row(&[1, 2, 3, 6]),
            ],
            units: (0..4).map(|i| vec![i]).collect(),
            sha256: String::new(),
        };
        // Row 2 reuses 1, 2; row 3 none (5 is new, so 2 is not a prefix hit); row 4 reuses 1, 2, 3.
        let r = t.reuse(4);
        assert_eq!((r.blocks, r.reused_blocks), (12, 5));
        assert!((r.ideal_hit_rate - 5.0 / 12.0).abs() < 1e-12);
        assert_eq!(t.reuse(1).reused_blocks, 0);
        let mut t = t;
        for (r, ms) in t.rows.iter_mut().zip([0.0, 400.0, 999.0, 1000.0]) {
            r.timestamp_ms = ms;
        }
        assert_eq!(
            t.peak_rate(1.0),
            3.0,
            "0, 400 and 999 ms fall in one second"
        );
        assert_eq!(t.peak_rate(0.25), 4.0);
        assert_eq!(t.peak_rate(10.0), 2.0, "9990 and 10000 ms");
    }
}
