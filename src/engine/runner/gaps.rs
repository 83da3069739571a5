//! What the runner keeps of the streams besides their records: each stream's gaps between
//! chunks in bounded memory ([`Gaps`]), and the run's gaps, per-token gaps and tokens a chunk
//! ([`StreamStats`]), which have one value per gap or chunk rather than per request.

use super::Sent;
use crate::model::hist::{new_histogram, record_us};
use hdrhistogram::Histogram;

/// A stream's inter-token gaps (µs), in bounded memory: the first [`Gaps::LISTED`] as values,
/// the rest (a server that streams without end) folded into a histogram at HDR resolution,
/// the resolution every reported figure has anyway. None is dropped.
#[derive(Debug, Default)]
pub struct Gaps {
    listed: Vec<u64>,
    folded: Option<Box<Histogram<u64>>>,
}

impl Gaps {
    /// Gaps kept as values before the rest are folded (512 KiB).
    const LISTED: usize = 65_536;

    pub fn push(&mut self, us: u64) {
        if self.listed.len() < Self::LISTED {
            self.listed.push(us);
        } else {
            record_us(
                self.folded
                    .get_or_insert_with(|| Box::new(crate::model::hist::new_histogram())),
                us,
            );
        }
    }

    /// `n` equal values (a chunk of n tokens after one gap, counted per token): listed while
    /// there is room and n is small, folded otherwise (a server claiming a million tokens in
    /// one chunk costs one histogram entry, not a million).
    pub fn push_n(&mut self, us: u64, n: u64) {
        if n <= 64 && self.listed.len() + (n as usize) <= Self::LISTED {
            self.listed.extend(std::iter::repeat_n(us, n as usize));
        } else if n > 0 {
            let h = self
                .folded
                .get_or_insert_with(|| Box::new(crate::model::hist::new_histogram()));
            if h.record_n(us, n).is_err() {
                h.saturating_record_n(us, n);
            }
        }
    }

    /// Every gap divided by `by` (> 0), the counts kept.
    pub fn scaled(&self, by: f64) -> Gaps {
        let div = |v: u64| (v as f64 / by).round() as u64;
        let mut g = Gaps {
            listed: self.listed.iter().map(|v| div(*v)).collect(),
            folded: None,
        };
        if let Some(f) = &self.folded {
            for v in f.iter_recorded() {
                g.push_n(div(v.value_iterated_to()), v.count_at_value());
            }
        }
        g
    }

    /// How many gaps were recorded.
    pub fn len(&self) -> u64 {
        self.listed.len() as u64 + self.folded.as_ref().map_or(0, |h| h.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds every gap to `h` (same bounds and precision: adding cannot fail).
    pub fn record_into(&self, h: &mut Histogram<u64>) {
        for gap in &self.listed {
            record_us(h, *gap);
        }
        if let Some(f) = &self.folded {
            let _ = h.add(f.as_ref());
        }
    }
}

impl From<Vec<u64>> for Gaps {
    fn from(listed: Vec<u64>) -> Gaps {
        let mut g = Gaps::default();
        listed.into_iter().for_each(|v| g.push(v));
        g
    }
}

pub use crate::model::summary::TokensPerChunk;

/// The run-level figures of the streams' chunks (measured, successful requests only): they
/// have one value per gap or chunk, not per request, so no record holds them.
#[derive(Debug, Clone)]
pub struct StreamStats {
    /// Gaps between chunks with text, µs.
    pub itl_us: Histogram<u64>,
    /// Per token, µs ([`crate::model::metric::Latency::ItlToken`]); `None` while every
    /// stream so far carried one token a chunk, when it is `itl_us` itself (kept once, not
    /// recorded twice on every run). Read it with [`StreamStats::per_token`].
    pub itl_token_us: Option<Histogram<u64>>,
    pub chunk_tokens: TokensPerChunk,
}

impl Default for StreamStats {
    fn default() -> Self {
        StreamStats {
            itl_us: new_histogram(),
            itl_token_us: None,
            chunk_tokens: TokensPerChunk::default(),
        }
    }
}

impl StreamStats {
    pub(super) fn add(&mut self, sent: &Sent) {
        match (&sent.itl_token_us, &mut self.itl_token_us) {
            (None, None) => {}
            (None, Some(per_token)) => sent.itl_us.record_into(per_token),
            (Some(g), _) => g.record_into(self.per_token_mut()),
        }
        sent.itl_us.record_into(&mut self.itl_us);
        self.chunk_tokens.merge(&sent.chunk_tokens);
    }

    /// The per-token gaps.
    pub fn per_token(&self) -> &Histogram<u64> {
        self.itl_token_us.as_ref().unwrap_or(&self.itl_us)
    }

    /// The per-token gaps, kept apart from the chunk gaps from now on.
    pub fn per_token_mut(&mut self) -> &mut Histogram<u64> {
        let itl = &self.itl_us;
        self.itl_token_us.get_or_insert_with(|| itl.clone())
    }
}

#[cfg(test)]
mod gaps_tests {
    use super::*;

    #[test]
    fn a_stream_without_end_keeps_every_gap_in_bounded_memory() {
        let mut g = Gaps::default();
        let n = Gaps::LISTED as u64 + 1000;
        (0..n).for_each(|i| g.push(1000 + i % 7));
        assert_eq!(g.len(), n);
        assert_eq!(
            g.listed.len(),
            Gaps::LISTED,
            "values past the list are folded"
        );
        let mut h = crate::model::hist::new_histogram();
        g.record_into(&mut h);
        assert_eq!(h.len(), n, "none is dropped");
    }
}
