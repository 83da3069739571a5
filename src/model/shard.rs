//! One shard of a distributed run (`bench run --shard I/N`): which requests of the plan are
//! this machine's, and its share of the concurrency. Recorded in `run.json` so `bench merge`
//! can check it has every shard.

use crate::error::BenchError;
use serde::{Deserialize, Serialize};

/// Shard `index` of `count` of a distributed run (`--shard I/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Whether request `i` of the plan belongs to this shard: `i ≡ index (mod count)`.
    pub fn owns(self, i: u64) -> bool {
        i % self.count as u64 == self.index as u64
    }

    /// This shard's part of `total` (a concurrency): the remainder goes to the first shards.
    pub fn share(self, total: u32) -> u32 {
        total / self.count + u32::from(self.index < total % self.count)
    }

    /// Parses `I/N`.
    pub fn parse(s: &str) -> Result<Shard, BenchError> {
        let bad = || {
            BenchError::usage(format!(
                "--shard `{s}`: write it as I/N with 0 ≤ I < N, e.g. --shard 0/3"
            ))
        };
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let (index, count): (u32, u32) = (
            i.trim().parse().map_err(|_| bad())?,
            n.trim().parse().map_err(|_| bad())?,
        );
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_split_requests_and_concurrency() {
        let s = Shard::parse("1/3").unwrap();
        assert!(s.owns(4) && !s.owns(3));
        assert_eq!(
            (0..3)
                .map(|i| Shard { index: i, count: 3 }.share(8))
                .sum::<u32>(),
            8
        );
        for bad in ["3/3", "x/2", "1", "0/0"] {
            assert!(Shard::parse(bad).is_err(), "{bad}");
        }
    }
}
