//! Whether one load point over-saturated its server: requests arriving faster than they are
//! served, so the queue — and with it TTFT — grows without bound for as long as the point
//! lasts.
//!
//! The test has two parts, both required:
//! * **served < offered**: inside the run's steady state (`metrics::windows`), the requests'
//!   completions spread over a span more than [`KEEP_UP`]⁻¹ times their arrivals' — the
//!   backlog grows by the difference every second (Little's law);
//! * **TTFT rises with time**: the least-squares slope of TTFT on intended send time over the
//!   successful requests, with the lower bound of its one-sided 99 % confidence interval
//!   (Student's t, n − 2 degrees of freedom) above zero.
//!
//! A server at capacity but keeping up passes both (no slope, served = offered); a noisy one
//! that keeps up fails the first; a backlog that drains by itself (a burst) shows no lasting
//! slope. GuideLLM stops its sweeps on a like test of over-saturation.

use crate::model::record::RequestRecord;
use crate::model::result::RunResult;
pub use crate::model::sweep::Saturation;
use crate::model::values::Values;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Served below this fraction of offered is not keeping up.
pub const KEEP_UP: f64 = 0.95;

/// The one-sided confidence level of the slope test.
const CONFIDENCE: f64 = 0.99;

/// The test on an open-loop run; `None` for a run without a steady state or with fewer than
/// 10 successful requests.
pub fn test(run: &RunResult) -> Option<Saturation> {
    let s = run.windows.as_ref()?.steady.as_ref()?;
    let (lower, slope) = slope_lower(&run.requests)?;
    let over = s.achieved_rps < KEEP_UP * s.offered_rps && lower > 0.0;
    Some(Saturation {
        over,
        offered_rps: s.offered_rps,
        served_rps: s.achieved_rps,
        ttft_slope_ms_per_s: slope,
        ttft_slope_lower: lower,
    })
}

/// (lower bound, slope) of TTFT (ms) on intended send (s) over the successful measured
/// requests.
fn slope_lower(records: &[RequestRecord]) -> Option<(f64, f64)> {
    let xy: Vec<(f64, f64)> = records
        .iter()
        .filter(|r| !r.warmup && r.outcome.is_ok())
        .filter_map(|r| Some((r.intended_us as f64 / 1e6, r.ttft_us? as f64 / 1e3)))
        .collect();
    let n = xy.len();
    if n < 10 {
        return None;
    }
    let nf = n as f64;
    let (mx, my) = (
        Values::new(xy.iter().map(|p| p.0)).mean()?,
        Values::new(xy.iter().map(|p| p.1)).mean()?,
    );
    let sxx: f64 = xy.iter().map(|p| (p.0 - mx).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let b = xy.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum::<f64>() / sxx;
    let a = my - b * mx;
    let rss: f64 = xy.iter().map(|p| (p.1 - a - b * p.0).powi(2)).sum();
    let se = (rss / (nf - 2.0) / sxx).sqrt();
    let t = StudentsT::new(0.0, 1.0, nf - 2.0)
        .ok()?
        .inverse_cdf(CONFIDENCE);
    Some((b - t * se, b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::Outcome;
    use crate::testkit::record;

    fn records(ttft: impl Fn(u64) -> u64) -> Vec<RequestRecord> {
        (0..200)
            .map(|i| RequestRecord {
                intended_us: i * 10_000,
                ttft_us: Some(ttft(i)),
                ..record(i, Outcome::Ok)
            })
            .collect()
    }

    #[test]
    fn a_growing_queue_has_a_positive_slope_and_a_flat_one_none() {
        // TTFT grows 2 ms a request = 200 ms per s, with ±5 ms of wobble.
        let (lower, slope) = slope_lower(&records(|i| 20_000 + i * 2000 + (i % 3) * 5000)).unwrap();
        assert!(
            (slope - 200.0).abs() < 5.0 && lower > 150.0,
            "{slope} {lower}"
        );
        let (lower, _) = slope_lower(&records(|i| 20_000 + (i % 7) * 3000)).unwrap();
        assert!(lower <= 0.0, "{lower}");
        assert!(slope_lower(&records(|_| 1)[..9]).is_none());
    }
}
