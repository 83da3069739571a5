//! Open-loop arrival schedules: the intended send time of every request, computed up front.
//!
//! Gaps are drawn from one seeded ChaCha8 stream, so the same seed gives the same offsets.
//! The first request is due at offset 0; each later one at the previous offset plus a gap:
//! constant (1/rate), exponential with mean 1/rate (Poisson process), or gamma with shape
//! `burstiness` and scale 1/(rate·burstiness), as vLLM's `bench serve` defines burstiness (the
//! mean gap stays 1/rate; shape 1 is Poisson).
//!
//! A ramp (`[load] ramp`) bends the same draws in time: the arrivals are drawn at the target
//! rate r, and the one due at t there is sent when the ramped rate's integral reaches r·t
//! ([`Ramp::time_of`], the time change that turns a rate-1 process into one of rate λ(t);
//! for Poisson arrivals the result is the non-homogeneous Poisson process of rate λ(t)).

use crate::model::scenario::{Arrival, Ramp};
use crate::model::text::stream_rng;
use rand_distr::{Distribution, Exp, Gamma};
use std::time::Duration;

/// Refuse plans larger than this rather than exhaust memory.
const MAX_ARRIVALS: u64 = 10_000_000;

const SCHEDULE_STREAM: u64 = u64::MAX;

/// An open loop's arrival law: the rate, the law of the gaps, and the gamma shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Law {
    pub rate_rps: f64,
    pub arrival: Arrival,
    pub burstiness: f64,
    /// Climbing to `rate_rps` first.
    pub ramp: Option<Ramp>,
}

impl Law {
    pub fn new(rate_rps: f64, arrival: Arrival, burstiness: f64) -> Law {
        Law {
            rate_rps,
            arrival,
            burstiness,
            ramp: None,
        }
    }

    /// The same law reached through `ramp`.
    pub fn ramped(self, ramp: Option<Ramp>) -> Law {
        Law { ramp, ..self }
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
        ramp,
    } = law;
    // When the arrival drawn at `t` (at the target rate) is sent.
    let at = |t: f64| ramp.map_or(t, |r| r.time_of(t * rate_rps, rate_rps));
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
            if at(t) >= d {
                break;
            }
        }
        out.push(Duration::from_secs_f64(at(t)));
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
    fn a_ramp_climbs_to_the_rate_and_holds_it() {
        use crate::model::scenario::RampShape;
        for shape in [RampShape::Linear, RampShape::Exponential] {
            let ramp = Ramp {
                from: 2.0,
                over_s: 20.0,
                shape,
            };
            let law = Law::new(20.0, Arrival::Constant, 1.0).ramped(Some(ramp));
            let o = arrival_offsets(law, None, Some(60.0), 1).unwrap();
            let secs: Vec<f64> = o.iter().map(|d| d.as_secs_f64()).collect();
            let count = |a: f64, b: f64| secs.iter().filter(|t| (a..b).contains(*t)).count() as f64;
            // The arrivals over the ramp are its rate's integral; after it, the rate itself.
            let want = match shape {
                RampShape::Linear => 11.0 * 20.0,
                RampShape::Exponential => 18.0 * 20.0 / 10f64.ln(),
            };
            assert!(
                (count(0.0, 20.0) - want).abs() <= 1.0,
                "{shape:?}: {}",
                count(0.0, 20.0)
            );
            assert!((count(20.0, 60.0) - 800.0).abs() <= 1.0, "{shape:?}");
            // The first gaps are at the start rate, the last at the target.
            assert!(
                (secs[1] - secs[0] - 0.5).abs() < 0.05,
                "{shape:?}: {}",
                secs[1] - secs[0]
            );
            let n = secs.len();
            assert!((secs[n - 1] - secs[n - 2] - 0.05).abs() < 1e-6);
            assert!((ramp.level(10.0, 20.0) - ramp.level(0.0, 20.0)) > 0.0);
            assert!((ramp.time_of(ramp.reaches(5.0, 20.0), 20.0) >= 0.0));
        }
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
            // The population CV: Σ(x − m)² / n.
            let g = crate::model::values::Values::new(gaps);
            (g.sum_sq() / g.len() as f64).sqrt() / g.mean().unwrap()
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
