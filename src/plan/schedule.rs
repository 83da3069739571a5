//! Open-loop arrival schedules: the intended send time of every request, computed up front.
//!
//! Gaps are drawn from one seeded ChaCha8 stream, so the same seed gives the same offsets.
//! The first request is due at offset 0; each later one at the previous offset plus a gap:
//! constant (1/rate), exponential with mean 1/rate (Poisson process), or gamma with shape
//! `burstiness` and scale 1/(rate·burstiness), as vLLM's `bench serve` defines burstiness (the
//! mean gap stays 1/rate; shape 1 is Poisson).

use crate::model::scenario::Arrival;
use crate::model::text::stream_rng;
use rand_distr::{Distribution, Exp, Gamma};
use std::time::Duration;

/// Refuse plans larger than this rather than exhaust memory.
pub const MAX_ARRIVALS: u64 = 10_000_000;

const SCHEDULE_STREAM: u64 = u64::MAX;

/// An open loop's arrival law: the rate, the law of the gaps, and the gamma shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Law {
    pub rate_rps: f64,
    pub arrival: Arrival,
    pub burstiness: f64,
}

impl Law {
    pub fn new(rate_rps: f64, arrival: Arrival, burstiness: f64) -> Law {
        Law {
            rate_rps,
            arrival,
            burstiness,
        }
    }
}

/// Intended offsets from the run start: `count` of them, or as many as fall before
/// `duration_s`, whichever is fewer.
pub fn arrival_offsets(
    law: Law,
    count: Option<u64>,
    duration_s: Option<f64>,
    seed: u64,
) -> Result<Vec<Duration>, String> {
    let Law {
        rate_rps,
        arrival,
        burstiness,
    } = law;
    let limit = match (count, duration_s) {
        (Some(c), _) => c,
        (None, Some(d)) => (rate_rps * d * 1.5 + 100.0).min(u64::MAX as f64) as u64,
        (None, None) => {
            return Err("an open-loop schedule needs a request count or a duration".into())
        }
    };
    if limit > MAX_ARRIVALS {
        return Err(format!(
            "the plan would hold more than {MAX_ARRIVALS} arrivals; lower the rate, the duration or the request count"
        ));
    }
    let mut rng = stream_rng(seed, SCHEDULE_STREAM);
    let mean_gap = 1.0 / rate_rps;
    let exp = Exp::new(rate_rps).map_err(|e| e.to_string())?;
    let gamma = Gamma::new(burstiness, mean_gap / burstiness).map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(limit.min(1 << 20) as usize);
    let mut t = 0.0f64;
    while (out.len() as u64) < limit {
        if let Some(d) = duration_s {
            if t >= d {
                break;
            }
        }
        out.push(Duration::from_secs_f64(t));
        t += match arrival {
            // A trace's times come from the trace itself (`Plan::new`), never from here.
            Arrival::Constant | Arrival::Trace => mean_gap,
            Arrival::Poisson => exp.sample(&mut rng),
            Arrival::Gamma => gamma.sample(&mut rng),
        };
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mean_rate(o: &[Duration]) -> f64 {
        (o.len() - 1) as f64 / o.last().unwrap().as_secs_f64()
    }

    #[test]
    fn seeded_and_counted() {
        let a =
            arrival_offsets(Law::new(20.0, Arrival::Poisson, 1.0), Some(5000), None, 3).unwrap();
        let b =
            arrival_offsets(Law::new(20.0, Arrival::Poisson, 1.0), Some(5000), None, 3).unwrap();
        let c =
            arrival_offsets(Law::new(20.0, Arrival::Poisson, 1.0), Some(5000), None, 4).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_eq!(a.len(), 5000);
        assert_eq!(a[0], Duration::ZERO);
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        let r = mean_rate(&a);
        assert!((r - 20.0).abs() < 1.0, "poisson rate {r}");
    }

    #[test]
    fn constant_and_gamma_rates() {
        let c = arrival_offsets(Law::new(4.0, Arrival::Constant, 1.0), Some(9), None, 0).unwrap();
        assert_eq!(c[8], Duration::from_secs(2));
        for b in [0.25, 4.0] {
            let g =
                arrival_offsets(Law::new(10.0, Arrival::Gamma, b), Some(20_000), None, 1).unwrap();
            let r = mean_rate(&g);
            assert!((r - 10.0).abs() < 0.5, "gamma({b}) rate {r}");
        }
    }

    #[test]
    fn burstier_gamma_has_more_variable_gaps() {
        let cv = |b: f64| {
            let g =
                arrival_offsets(Law::new(10.0, Arrival::Gamma, b), Some(20_000), None, 1).unwrap();
            let gaps: Vec<f64> = g.windows(2).map(|w| (w[1] - w[0]).as_secs_f64()).collect();
            let m = gaps.iter().sum::<f64>() / gaps.len() as f64;
            let v = gaps.iter().map(|x| (x - m).powi(2)).sum::<f64>() / gaps.len() as f64;
            v.sqrt() / m
        };
        // Coefficient of variation of a gamma gap is 1/sqrt(shape).
        assert!((cv(0.25) - 2.0).abs() < 0.2);
        assert!((cv(4.0) - 0.5).abs() < 0.05);
    }

    #[test]
    fn duration_bounds_the_plan() {
        let d =
            arrival_offsets(Law::new(50.0, Arrival::Poisson, 1.0), None, Some(10.0), 5).unwrap();
        assert!(d.iter().all(|o| o.as_secs_f64() < 10.0));
        assert!((400..600).contains(&d.len()), "{}", d.len());
        let both = arrival_offsets(
            Law::new(50.0, Arrival::Constant, 1.0),
            Some(10),
            Some(100.0),
            5,
        )
        .unwrap();
        assert_eq!(both.len(), 10);
        assert!(
            arrival_offsets(Law::new(1e9, Arrival::Constant, 1.0), None, Some(1e3), 5).is_err()
        );
    }
}
