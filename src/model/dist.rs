//! Token-length distributions for prompts and outputs.
//!
//! A length is written either as a bare integer (`input_tokens = 128`, a fixed length) or as a
//! table naming the distribution:
//!
//! * `{ dist = "fixed", value = 128 }`
//! * `{ dist = "uniform", min = 64, max = 256 }` — integers, both ends inclusive
//! * `{ dist = "normal", mean = 256, stddev = 64 }` — rounded to the nearest integer
//! * `{ dist = "lognormal", mean = 256, stddev = 128 }` — `mean`/`stddev` are those of the
//!   lengths themselves (not of their logarithm); the underlying parameters are
//!   σ² = ln(1 + sd²/mean²), μ = ln(mean) − σ²/2, so the sample mean converges to `mean`.
//!
//! `normal` and `lognormal` accept `min` (default 1) and `max` (default unbounded) and clamp to
//! them. Validation happens during deserialization so a bad value is reported at its own line.

use rand::Rng;
use rand_distr::{Distribution, LogNormal, Normal};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The most tokens one length may have (a value, a bound, a mean or a spread): two million,
/// beyond any context window; a larger one is an error when the scenario is read.
pub const TOKENS_MAX: u32 = 2_000_000;

/// A distribution of token counts (always ≥ 1 after sampling).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "dist", rename_all = "lowercase")]
pub enum LengthDist {
    Fixed {
        value: u32,
    },
    Uniform {
        min: u32,
        max: u32,
    },
    Normal {
        mean: f64,
        stddev: f64,
        min: u32,
        max: u32,
    },
    LogNormal {
        mean: f64,
        stddev: f64,
        min: u32,
        max: u32,
    },
}

impl LengthDist {
    /// Draws one length.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> u32 {
        match *self {
            LengthDist::Fixed { value } => value,
            LengthDist::Uniform { min, max } => rng.random_range(min..=max),
            LengthDist::Normal {
                mean,
                stddev,
                min,
                max,
            } => {
                // Parameters were validated (finite, stddev ≥ 0), so construction cannot fail.
                let d = Normal::new(mean, stddev).unwrap_or_else(|_| unreachable_dist());
                clamp_round(d.sample(rng), min, max)
            }
            LengthDist::LogNormal {
                mean,
                stddev,
                min,
                max,
            } => {
                let sigma2 = (1.0 + (stddev * stddev) / (mean * mean)).ln();
                let mu = mean.ln() - sigma2 / 2.0;
                let d = LogNormal::new(mu, sigma2.sqrt()).unwrap_or_else(|_| unreachable_dist());
                clamp_round(d.sample(rng), min, max)
            }
        }
    }

    /// A short description for reports: `4`, `2–8`, `normal 300 ± 50`, `lognormal 300 ± 50`.
    pub fn describe(&self) -> String {
        match *self {
            LengthDist::Fixed { value } => value.to_string(),
            LengthDist::Uniform { min, max } => format!("{min}–{max}"),
            LengthDist::Normal { mean, stddev, .. } => format!("normal {mean} ± {stddev}"),
            LengthDist::LogNormal { mean, stddev, .. } => format!("lognormal {mean} ± {stddev}"),
        }
    }
}

fn unreachable_dist<T>() -> T {
    panic!("length distribution parameters are validated at load time")
}

fn clamp_round(x: f64, min: u32, max: u32) -> u32 {
    let r = x.round();
    if r.is_nan() || r < min as f64 {
        min
    } else if r > max as f64 {
        max
    } else {
        r as u32
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDist {
    dist: String,
    value: Option<u32>,
    min: Option<u32>,
    max: Option<u32>,
    mean: Option<f64>,
    stddev: Option<f64>,
}

impl RawDist {
    fn into_dist(self) -> Result<LengthDist, String> {
        let only = |allowed: &[&str]| -> Result<(), String> {
            let present = [
                ("value", self.value.is_some()),
                ("min", self.min.is_some()),
                ("max", self.max.is_some()),
                ("mean", self.mean.is_some()),
                ("stddev", self.stddev.is_some()),
            ];
            for (name, is) in present {
                if is && !allowed.contains(&name) {
                    return Err(format!(
                        "`{name}` is not a parameter of dist = \"{}\" (it takes {})",
                        self.dist,
                        allowed.join(", ")
                    ));
                }
            }
            Ok(())
        };
        let need = |v: Option<f64>, name: &str| {
            v.ok_or_else(|| format!("dist = \"{}\" needs `{name}`", self.dist))
        };
        match self.dist.as_str() {
            "fixed" => {
                only(&["value"])?;
                let value = self.value.ok_or("dist = \"fixed\" needs `value`")?;
                positive(value, "value")?;
                Ok(LengthDist::Fixed { value })
            }
            "uniform" => {
                only(&["min", "max"])?;
                let min = self.min.ok_or("dist = \"uniform\" needs `min`")?;
                let max = self.max.ok_or("dist = \"uniform\" needs `max`")?;
                positive(min, "min")?;
                if max < min {
                    return Err(format!("max ({max}) is below min ({min})"));
                }
                Ok(LengthDist::Uniform { min, max })
            }
            "normal" | "lognormal" => {
                only(&["mean", "stddev", "min", "max"])?;
                let mean = need(self.mean, "mean")?;
                let stddev = need(self.stddev, "stddev")?;
                let top = TOKENS_MAX as f64;
                if !(mean.is_finite() && mean > 0.0 && mean <= top) {
                    return Err(format!(
                        "mean must be between 0 and {top} tokens (got {mean})"
                    ));
                }
                if !(stddev.is_finite() && (0.0..=top).contains(&stddev)) {
                    return Err(format!(
                        "stddev must be between 0 and {top} tokens (got {stddev})"
                    ));
                }
                let min = self.min.unwrap_or(1);
                let max = self.max.unwrap_or(TOKENS_MAX);
                positive(min, "min")?;
                if max < min {
                    return Err(format!("max ({max}) is below min ({min})"));
                }
                Ok(if self.dist == "normal" {
                    LengthDist::Normal {
                        mean,
                        stddev,
                        min,
                        max,
                    }
                } else {
                    LengthDist::LogNormal {
                        mean,
                        stddev,
                        min,
                        max,
                    }
                })
            }
            other => Err(format!(
                "unknown dist \"{other}\"; choose from: fixed, uniform, normal, lognormal"
            )),
        }
    }
}

fn positive(v: u32, name: &str) -> Result<(), String> {
    if v == 0 {
        Err(format!("`{name}` must be at least 1 token"))
    } else if v > TOKENS_MAX {
        Err(format!(
            "`{name}` must be at most {TOKENS_MAX} tokens (got {v})"
        ))
    } else {
        Ok(())
    }
}

impl<'de> Deserialize<'de> for LengthDist {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LengthDist;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a token count (integer ≥ 1) or a table like { dist = \"uniform\", min = 64, max = 256 }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<LengthDist, E> {
                if v < 1 || v > TOKENS_MAX as i64 {
                    return Err(E::custom(format!(
                        "a token count must be between 1 and {TOKENS_MAX} (got {v})"
                    )));
                }
                Ok(LengthDist::Fixed { value: v as u32 })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<LengthDist, E> {
                self.visit_i64(v.min(i64::MAX as u64) as i64)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LengthDist, A::Error> {
                let raw = RawDist::deserialize(de::value::MapAccessDeserializer::new(map))?;
                raw.into_dist().map_err(de::Error::custom)
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    #[derive(Deserialize)]
    struct W {
        d: LengthDist,
    }

    fn parse(s: &str) -> Result<LengthDist, String> {
        toml::from_str::<W>(s)
            .map(|w| w.d)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn bare_integer_is_fixed() {
        assert_eq!(parse("d = 12").unwrap(), LengthDist::Fixed { value: 12 });
    }

    #[test]
    fn bad_values_are_rejected_with_reason() {
        assert!(parse("d = 0").unwrap_err().contains("between 1"));
        assert!(parse("d = { dist = \"uniform\", min = 9, max = 3 }")
            .unwrap_err()
            .contains("below min"));
        assert!(parse("d = { dist = \"zipf\" }")
            .unwrap_err()
            .contains("choose from"));
        assert!(parse("d = { dist = \"fixed\", value = 3, mean = 2 }")
            .unwrap_err()
            .contains("not a parameter"));
        assert!(parse("d = { dist = \"normal\", mean = 10 }")
            .unwrap_err()
            .contains("needs `stddev`"));
    }

    #[test]
    fn samples_stay_in_range_and_means_converge() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let u = LengthDist::Uniform { min: 10, max: 20 };
        let ln = LengthDist::LogNormal {
            mean: 200.0,
            stddev: 100.0,
            min: 1,
            max: u32::MAX,
        };
        let n = 20_000;
        let mut sum = 0u64;
        for _ in 0..n {
            let x = u.sample(&mut rng);
            assert!((10..=20).contains(&x));
            sum += ln.sample(&mut rng) as u64;
        }
        let mean = sum as f64 / n as f64;
        assert!((mean - 200.0).abs() < 5.0, "lognormal mean {mean}");
        let clamped = LengthDist::Normal {
            mean: 5.0,
            stddev: 50.0,
            min: 3,
            max: 8,
        };
        for _ in 0..1000 {
            assert!((3..=8).contains(&clamped.sample(&mut rng)));
        }
    }
}
