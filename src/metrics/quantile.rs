//! The one quantile estimator behind every number a run reports: the summary table,
//! `summary.csv`, `run.json`, the reports, `bench sweep`, `bench stack` and the gate.
//!
//! **Definition.** Values are first taken at HDR resolution: each is replaced by the midpoint
//! of its bucket in a 3-significant-digit HDR histogram (`median_equivalent`, within ±0.05 % of
//! the exact µs value). The p-quantile of those n values sorted, x₀ ≤ … ≤ xₙ₋₁, is then
//! Hyndman & Fan's type 7 (numpy's and R's default, and so what vLLM's `bench serve` and
//! GuideLLM report): h = (n − 1)·p, q = x⌊h⌋ + (h − ⌊h⌋)(x⌊h⌋+1 − x⌊h⌋). Mean, min and max are
//! of the same values.
//!
//! **Why these two choices.** Type 7 because peers use it, so a p95 means the same in their
//! reports and ours, and because it interpolates instead of jumping between order statistics
//! at small n. HDR resolution because histograms are what runs can keep and add at any size —
//! a merged shard, a baseline kept as histograms, a million-request soak — and a quantile taken
//! from the raw values of a small run and from the histogram of a large one must not differ.
//! Taking both from the histogram makes them the same number by construction. (Before this,
//! the table read HDR's own `value_at_quantile`, an inverse-ECDF estimate, while the gate used
//! type 7 on raw values, so `bench run` and `bench compare` could print two p95s for one run.)
//!
//! A [`Sample`] is the histogram's distinct values with cumulative counts, so any order
//! statistic is a binary search — what the gate's bootstrap draws thousands of.

use crate::model::hist::{new_histogram, record_us};
use hdrhistogram::Histogram;

/// A sorted sample at HDR resolution: distinct values (µs, bucket midpoints) ascending, and
/// how many values are at or below each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    values: Vec<f64>,
    cumulative: Vec<u64>,
}

impl Sample {
    /// The values recorded in `h`.
    pub fn from_hist(h: &Histogram<u64>) -> Sample {
        let mut s = Sample::default();
        let mut total = 0u64;
        for v in h.iter_recorded() {
            total += v.count_at_value();
            s.values
                .push(h.median_equivalent(v.value_iterated_to()) as f64);
            s.cumulative.push(total);
        }
        s
    }

    /// `values` (µs) recorded into a histogram first, so they are at HDR resolution. Negative
    /// and non-finite values are not latencies and are left out; fractions round to the µs.
    pub fn from_values(values: impl IntoIterator<Item = f64>) -> Sample {
        let mut h = new_histogram();
        for v in values {
            if v.is_finite() && v >= 0.0 {
                record_us(&mut h, v.round() as u64);
            }
        }
        Sample::from_hist(&h)
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.cumulative.last().copied().unwrap_or(0) as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The `k`-th smallest value (0-based; clamped to the last).
    pub fn at(&self, k: usize) -> f64 {
        let i = self.cumulative.partition_point(|c| *c <= k as u64);
        self.values[i.min(self.values.len().saturating_sub(1))]
    }

    /// The type-7 p-quantile (`None` when empty).
    pub fn quantile(&self, p: f64) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let h = (self.len() - 1) as f64 * p.clamp(0.0, 1.0);
        let lo = h.floor() as usize;
        let (a, b) = (self.at(lo), self.at((lo + 1).min(self.len() - 1)));
        Some(a + (h - lo as f64) * (b - a))
    }

    pub fn mean(&self) -> Option<f64> {
        if self.is_empty() {
            return None;
        }
        let mut prev = 0u64;
        let mut sum = 0.0;
        for (v, c) in self.values.iter().zip(&self.cumulative) {
            sum += v * (c - prev) as f64;
            prev = *c;
        }
        Some(sum / self.len() as f64)
    }

    pub fn min(&self) -> Option<f64> {
        self.values.first().copied()
    }

    pub fn max(&self) -> Option<f64> {
        self.values.last().copied()
    }

    /// (value, how many) for each distinct value, ascending.
    pub fn counts(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        let mut prev = 0u64;
        self.values.iter().zip(&self.cumulative).map(move |(v, c)| {
            let n = c - prev;
            prev = *c;
            (*v, n)
        })
    }

    /// Both samples' values together.
    pub fn merged(samples: &[&Sample]) -> Sample {
        let mut all: Vec<(f64, u64)> = samples.iter().flat_map(|s| s.counts()).collect();
        all.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut out = Sample::default();
        let mut total = 0u64;
        for (v, n) in all {
            total += n;
            if out.values.last() == Some(&v) {
                if let Some(c) = out.cumulative.last_mut() {
                    *c = total;
                }
            } else {
                out.values.push(v);
                out.cumulative.push(total);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type7_matches_numpy_on_values_hdr_holds_exactly() {
        // Small integers are exact in an HDR histogram, so this is numpy's type 7 exactly:
        // numpy.percentile([1,2,3,4], [0, 50, 95, 100]) = 1, 2.5, 3.85, 4
        let s = Sample::from_values([4.0, 1.0, 3.0, 2.0]);
        assert_eq!(s.quantile(0.0), Some(1.0));
        assert_eq!(s.quantile(0.5), Some(2.5));
        assert!((s.quantile(0.95).unwrap() - 3.85).abs() < 1e-12);
        assert_eq!(s.quantile(1.0), Some(4.0));
        assert_eq!(Sample::default().quantile(0.5), None);
        assert_eq!(s.mean(), Some(2.5));
    }

    #[test]
    fn large_values_are_within_hdr_precision_and_ties_count() {
        let s = Sample::from_values([123_456.0, 123_456.0, 7_000_000.0, 50.0]);
        assert_eq!(s.len(), 4);
        assert_eq!(s.at(0), 50.0);
        assert!((s.at(1) / 123_456.0 - 1.0).abs() < 5e-4);
        assert_eq!(s.at(1), s.at(2));
        assert!((s.max().unwrap() / 7e6 - 1.0).abs() < 5e-4);
        let m = Sample::merged(&[&s, &Sample::from_values([50.0])]);
        assert_eq!((m.len(), m.at(1)), (5, 50.0));
    }
}
