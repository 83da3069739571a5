//! Gate thresholds: what counts as a regression of each metric, and where that is configured.
//!
//! Thresholds are written `"ttft.p95" = "10%"` (latency quantiles: lower is better; the floor is
//! ln 1.10), `"output_throughput" = "-5%"` (higher is better; the floor is −ln 0.95),
//! `"error_rate" = "+0.5pp"` (absolute percentage points) or `"off"`. Layers, each replacing
//! the one before key by key: the built-in defaults ([`DEFAULT_GATE`]: TTFT, TPOT and E2E at
//! p50/p95 and TTFT/TPOT at p99 at 10 %, output throughput −5 %, goodput −5 % when the
//! scenario has SLOs, error rate +0.5 pp, accuracy and agreement −1 pp when both arms made a
//! quality pass), then a gate file (`--gate`, or `ci/gate.toml` when
//! it exists), then the scenario's own `[gate]` table.

use crate::error::BenchError;
use crate::model::metric::Metric;
use std::path::Path;

pub use crate::model::comparison::DEFAULT_ALPHA;

const DEFAULT_GATE: &[(&str, &str)] = &[
    ("ttft.p50", "10%"),
    ("ttft.p95", "10%"),
    ("ttft.p99", "10%"),
    ("tpot.p50", "10%"),
    ("tpot.p95", "10%"),
    ("tpot.p99", "10%"),
    ("e2e.p50", "10%"),
    ("e2e.p95", "10%"),
    ("output_throughput", "-5%"),
    ("goodput", "-5%"),
    ("error_rate", "+0.5pp"),
    // Judged wherever both arms made a quality pass (a scenario's [quality]), left out
    // elsewhere: a change that breaks answers never passes on speed alone.
    ("accuracy", "-1pp"),
    ("agreement", "-1pp"),
];

/// One metric's threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub metric: Metric,
    /// On the effect's scale (log ratio, or a fraction for error rate); `None` = off.
    pub floor: Option<f64>,
    /// As written (`10%`, `off`).
    pub text: String,
}

/// How the gate decides: the thresholds and the statistics' settings.
#[derive(Debug, Clone)]
pub struct GateConfig {
    pub thresholds: Vec<Threshold>,
    /// Family-wise significance over the gated set.
    pub alpha: f64,
    /// Bootstrap replicates.
    pub replicates: usize,
    /// Seeds the bootstrap, so a verdict is reproducible.
    pub seed: u64,
}

impl GateConfig {
    /// The defaults under `layers`, with α = `alpha`, 1000 replicates and `seed`.
    pub fn new(
        layers: &[&[(String, String)]],
        alpha: f64,
        seed: u64,
    ) -> Result<GateConfig, BenchError> {
        check_alpha(alpha)?;
        Ok(GateConfig {
            thresholds: thresholds(layers).map_err(BenchError::Usage)?,
            alpha,
            replicates: 1000,
            seed,
        })
    }
}

impl GateConfig {
    /// The gate a compare of `scenario` judges with: the defaults, then the thresholds file
    /// (`file`, else `ci/gate.toml` when it exists), then the scenario's own `[gate]`.
    pub fn for_scenario(
        file: Option<&Path>,
        scenario: &crate::model::scenario::Scenario,
        alpha: f64,
    ) -> Result<GateConfig, BenchError> {
        let layers = layers(file, &scenario.gate)?;
        let refs: Vec<&[(String, String)]> = layers.iter().map(|l| l.as_slice()).collect();
        GateConfig::new(&refs, alpha, scenario.seed)
    }
}

fn percent(v: &str, key: &str) -> Result<f64, String> {
    let t = v
        .trim()
        .trim_end_matches('%')
        .trim_start_matches('+')
        .trim_start_matches('-');
    let x: f64 = t
        .parse()
        .map_err(|_| format!("`{key}` = \"{v}\": write a percentage like \"10%\""))?;
    if !(x > 0.0 && x < 100.0) {
        return Err(format!(
            "`{key}` = \"{v}\": the percentage must be between 0 and 100"
        ));
    }
    Ok(x / 100.0)
}

/// A family-wise α as every command takes it: in (0, 0.5), so that a one-sided test's level
/// stays a test.
pub fn check_alpha(alpha: f64) -> Result<(), BenchError> {
    if alpha > 0.0 && alpha < 0.5 {
        return Ok(());
    }
    Err(BenchError::usage(format!(
        "--alpha {}: must be between 0 and 0.5, e.g. {}",
        crate::model::readable::number(alpha),
        DEFAULT_ALPHA
    )))
}

/// `bench history --min-change`: `5%` or `5` → 5.0.
pub fn min_change_pct(s: &str) -> Result<f64, BenchError> {
    s.trim()
        .trim_end_matches('%')
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| BenchError::usage(format!("--min-change {s}: give a percentage such as 5%")))
}

/// Parses one `key = "value"` of a `[gate]` table.
pub fn parse_threshold(key: &str, value: &str) -> Result<Threshold, String> {
    let metric: Metric = key.parse()?;
    let text = value.trim().to_string();
    if text == "off" {
        return Ok(Threshold {
            metric,
            floor: None,
            text,
        });
    }
    let floor = match metric {
        Metric::Latency(..)
        | Metric::TurnLatency(..)
        | Metric::JoulesPerToken
        | Metric::GpuPower => (1.0 + percent(value, key)?).ln(),
        Metric::OutputThroughput | Metric::RequestThroughput | Metric::Goodput => {
            -(1.0 - percent(value, key)?).ln()
        }
        Metric::ErrorRate => points(
            value.trim().trim_start_matches('+'),
            || format!("`error_rate` = \"{value}\": write percentage points like \"+0.5pp\""),
            || format!("`error_rate` = \"{value}\": must be between 0 and 100 pp"),
        )?,
        Metric::Accuracy | Metric::Agreement => points(
            value.trim().trim_start_matches(['-', '−']),
            || {
                format!("`{key}` = \"{value}\": write the drop it may take in percentage points, like \"-1pp\"")
            },
            || format!("`{key}` = \"{value}\": must be between 0 and 100 pp"),
        )?,
    };
    Ok(Threshold {
        metric,
        floor: Some(floor),
        text,
    })
}

/// `N pp` (its sign already stripped) as a fraction in (0, 1); `unreadable` or `out_of_range`
/// says why not.
fn points(
    t: &str,
    unreadable: impl FnOnce() -> String,
    out_of_range: impl FnOnce() -> String,
) -> Result<f64, String> {
    let pp: f64 = t
        .strip_suffix("pp")
        .and_then(|x| x.trim().parse().ok())
        .ok_or_else(unreadable)?;
    if !(pp > 0.0 && pp < 100.0) {
        return Err(out_of_range());
    }
    Ok(pp / 100.0)
}

/// Thresholds: defaults, then each layer's entries replacing them key by key.
pub fn thresholds(layers: &[&[(String, String)]]) -> Result<Vec<Threshold>, String> {
    let mut out: Vec<Threshold> = DEFAULT_GATE
        .iter()
        .map(|(k, v)| parse_threshold(k, v))
        .collect::<Result<_, _>>()?;
    for layer in layers {
        for (k, v) in layer.iter() {
            let t = parse_threshold(k, v)?;
            match out.iter_mut().find(|x| x.metric == t.metric) {
                Some(slot) => *slot = t,
                None => out.push(t),
            }
        }
    }
    Ok(out)
}

/// The `[gate]` layers of a compare: the file given (or `ci/gate.toml` when present), then
/// the scenario's own table.
pub fn layers(
    file: Option<&Path>,
    scenario: &[(String, String)],
) -> Result<Vec<Vec<(String, String)>>, BenchError> {
    let default = Path::new("ci/gate.toml");
    let path = file.or_else(|| default.exists().then_some(default));
    let mut layers = Vec::new();
    if let Some(p) = path {
        let text = std::fs::read_to_string(p).map_err(|e| {
            BenchError::usage(format!("cannot read gate file {}: {e}", p.display()))
        })?;
        let v: toml::Table = toml::from_str(&text)
            .map_err(|e| BenchError::usage(format!("{}: {}", p.display(), e.message())))?;
        let mut layer = Vec::new();
        if let Some(g) = v.get("gate") {
            let t = g.as_table().ok_or_else(|| {
                BenchError::usage(format!("{}: [gate] must be a table", p.display()))
            })?;
            for (k, v) in t {
                let s = v.as_str().ok_or_else(|| {
                    BenchError::usage(format!(
                        "{}: gate.{k} must be a string like \"10%\"",
                        p.display()
                    ))
                })?;
                parse_threshold(k, s)
                    .map_err(|m| BenchError::usage(format!("{}: {m}", p.display())))?;
                layer.push((k.clone(), s.to_string()));
            }
        }
        layers.push(layer);
    }
    layers.push(scenario.to_vec());
    Ok(layers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::metric::{Latency, Quantile};

    #[test]
    fn thresholds_parse_and_override_defaults() {
        let t = thresholds(&[&[
            ("ttft.p95".into(), "5%".into()),
            ("tpot.p99".into(), "off".into()),
            ("e2e.p90".into(), "20%".into()),
        ]])
        .unwrap();
        let get = |k: &str| {
            let m: Metric = k.parse().unwrap();
            t.iter().find(|x| x.metric == m).unwrap().clone()
        };
        assert!((get("ttft.p95").floor.unwrap() - 1.05f64.ln()).abs() < 1e-12);
        assert_eq!(get("tpot.p99").floor, None);
        assert!(
            matches!(get("e2e.p90").metric, Metric::Latency(Latency::E2e, p) if p == Quantile::P90)
        );
        assert!((get("output_throughput").floor.unwrap() + 0.95f64.ln()).abs() < 1e-12);
        assert_eq!(get("error_rate").floor, Some(0.005));
        assert!(parse_threshold("ttfb.p95", "10%")
            .unwrap_err()
            .contains("unknown gate metric"));
        assert!(parse_threshold("ttft.p95", "ten").is_err());
        assert!(parse_threshold("error_rate", "0.5%").is_err());
    }
}
