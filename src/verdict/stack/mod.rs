//! `bench stack`: how stacked optimizations combine (DOMAIN.md 11.2).
//!
//! **Factorial.** For changes A, B (, C) it measures the base, each change alone and every
//! combination. Per metric, the effect of a configuration is r = q_config / q_base (a type-7
//! quantile, or the throughput); if the changes were independent the combination would give
//! the product of the single ratios. The interaction is
//! I = ln r_combined − Σ ln r_single, with a standard error from a bootstrap of every arm
//! (SE² = Σ SE²ᵢ, arms resampled independently) and a 95 % interval I ± 1.96 SE. Signed so
//! that positive means the combination does *worse* than independence predicts:
//! **conflict** (1 + 1 < 2) when I > max(1.96·SE, floor), **synergy** (1 + 1 > 2) when
//! −I > max(1.96·SE, floor), **neutral** (≈ 2) otherwise; floor = ln 1.05.
//!
//! **Ladder.** Changes are applied one at a time (in the given order, or DOMAIN.md's
//! recommended one with `--recommended`); each step is judged against the previous step with
//! the gate, so each gain is attributable, and the cumulative gain is reported against the
//! base. A regressing step stops the ladder (exit 1) unless `--keep-going`.

use crate::metrics::quantile::Sample;
use crate::metrics::summary::sample;
use crate::model::metric::{Latency, Metric, Quantile};
use crate::model::result::RunResult;
use crate::model::server::ServerMetrics;
use crate::model::stack::{Interaction, InteractionRow};
use crate::verdict::stats::bootstrap::se_one as bootstrap_se_one;

/// The metrics a stack reports.
pub const METRICS: [Metric; 4] = [
    Metric::Latency(Latency::Tpot, Quantile::P50),
    Metric::Latency(Latency::Ttft, Quantile::P50),
    Metric::Latency(Latency::E2e, Quantile::P50),
    Metric::OutputThroughput,
];

/// What one configuration measured.
#[derive(Debug, Clone)]
pub struct Arm {
    /// Indices of the changes applied (empty = base).
    pub changes: Vec<usize>,
    pub ttft: Sample,
    pub tpot: Sample,
    pub e2e: Sample,
    pub output_tps: f64,
    pub ok: u64,
    pub server: Option<ServerMetrics>,
}

impl Arm {
    pub fn from_run(changes: Vec<usize>, r: &RunResult) -> Arm {
        Arm {
            changes,
            ttft: sample(r, Latency::Ttft),
            tpot: sample(r, Latency::Tpot),
            e2e: sample(r, Latency::E2e),
            output_tps: r.summary.throughput.output_tps,
            ok: r.summary.counts.ok,
            server: r.server_metrics.clone(),
        }
    }

    /// ln of the metric and its standard error.
    fn log_value(&self, metric: Metric) -> Option<(f64, f64)> {
        let (v, p) = match metric {
            Metric::Latency(Latency::Tpot, q) => (&self.tpot, q.p()),
            Metric::Latency(Latency::Ttft, q) => (&self.ttft, q.p()),
            Metric::Latency(Latency::E2e, q) => (&self.e2e, q.p()),
            Metric::OutputThroughput => {
                // A rate from n completions: relative noise ≈ 1/√n.
                return (self.output_tps > 0.0)
                    .then(|| (self.output_tps.ln(), 1.0 / (self.ok.max(1) as f64).sqrt()));
            }
            _ => return None,
        };
        let q = v.quantile(p).filter(|q| *q > 0.0)?;
        Some((q.ln(), bootstrap_se_one(v, p, 400, v.len() as u64)))
    }
}

const FLOOR: f64 = 0.04879; // ln 1.05

fn find<'a>(arms: &'a [Arm], set: &[usize]) -> Option<&'a Arm> {
    arms.iter().find(|a| {
        let mut x = a.changes.clone();
        x.sort();
        let mut y = set.to_vec();
        y.sort();
        x == y
    })
}

/// Interactions of every pair, and of all the changes together when there are three.
pub fn factorial(arms: &[Arm], names: &[String]) -> Vec<InteractionRow> {
    let n = names.len();
    let mut sets: Vec<Vec<usize>> = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            sets.push(vec![i, j]);
        }
    }
    if n == 3 {
        sets.push(vec![0, 1, 2]);
    }
    let Some(base) = find(arms, &[]) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for set in sets {
        for metric in METRICS {
            let lower = metric.lower_is_better();
            let Some((b, sb)) = base.log_value(metric) else {
                continue;
            };
            let singles: Option<Vec<(f64, f64)>> = set
                .iter()
                .map(|i| find(arms, &[*i]).and_then(|a| a.log_value(metric)))
                .collect();
            let (Some(singles), Some((c, sc))) =
                (singles, find(arms, &set).and_then(|a| a.log_value(metric)))
            else {
                continue;
            };
            let alone: Vec<f64> = singles.iter().map(|(v, _)| (v - b).exp()).collect();
            let combined = (c - b).exp();
            let expected: f64 = alone.iter().product();
            // ln(c/b) − Σ ln(sᵢ/b): the base enters once per single and once for the combination.
            let raw = (c - b) - singles.iter().map(|(v, _)| v - b).sum::<f64>();
            let base_weight = (set.len() as f64 - 1.0).powi(2);
            let se =
                (sc * sc + singles.iter().map(|(_, s)| s * s).sum::<f64>() + base_weight * sb * sb)
                    .sqrt();
            let worse = if lower { raw } else { -raw };
            let bar = (1.96 * se).max(FLOOR);
            let verdict = if worse > bar {
                Interaction::Conflict
            } else if -worse > bar {
                Interaction::Synergy
            } else {
                Interaction::Neutral
            };
            out.push(InteractionRow {
                metric,
                changes: set.iter().map(|i| names[*i].clone()).collect(),
                alone,
                combined,
                expected,
                interaction: worse,
                interval_low: worse - 1.96 * se,
                interval_high: worse + 1.96 * se,
                verdict,
                contention: contention(arms, &set, names, verdict),
            });
        }
    }
    out
}

/// What the measurements say the changes compete for.
fn contention(arms: &[Arm], set: &[usize], names: &[String], v: Interaction) -> Option<String> {
    if v == Interaction::Neutral {
        return None;
    }
    let combined = find(arms, set)?;
    let keys: Vec<&str> = set
        .iter()
        .map(|i| names[*i].split('=').next().unwrap_or(""))
        .collect();
    let has = |k: &str| keys.contains(&k);
    let acc = |a: &Arm| a.server.as_ref().and_then(|s| s.spec_acceptance_rate);
    if has("spec") {
        let alone = set
            .iter()
            .filter(|i| names[**i].starts_with("spec"))
            .find_map(|i| find(arms, &[*i]).and_then(acc));
        if let (Some(a), Some(c)) = (alone, acc(combined)) {
            if c < a - 0.05 {
                return Some(format!(
                    "the draft: spec-decode acceptance {a:.2} alone → {c:.2} combined"
                ));
            }
        }
    }
    let pre = |a: &Arm| a.server.as_ref().and_then(|s| s.preemptions).unwrap_or(0.0);
    let single_pre = set
        .iter()
        .filter_map(|i| find(arms, &[*i]))
        .map(pre)
        .fold(0.0, f64::max);
    if pre(combined) > single_pre + 0.5
        || (v == Interaction::Synergy && single_pre > pre(combined) + 0.5)
    {
        return Some(format!(
            "KV cache: preemptions {single_pre:.0} (worst single) vs {:.0} combined",
            pre(combined)
        ));
    }
    if has("spec")
        && combined
            .server
            .as_ref()
            .and_then(|s| s.running_peak)
            .unwrap_or(0.0)
            >= 16.0
    {
        return Some("scheduler slots / compute: verification competes with a large batch".into());
    }
    if has("tp") {
        return Some("communication bandwidth (all-reduce) and per-device tile efficiency".into());
    }
    None
}

/// DOMAIN.md's recommended order: stability (quantization → TP → chunked prefill) → TTFT
/// (prefix cache → capacity) → TPOT (batching parameters → KV quantization → speculation) →
/// tail (PD). Unknown keys keep their place after the known ones.
pub fn recommended_rank(key: &str) -> usize {
    match key {
        "quant" => 0,
        "tp" => 1,
        "chunked_prefill" => 2,
        "prefix_cache" => 3,
        "max_num_seqs" | "max_num_batched_tokens" => 4,
        "kv_quant" => 5,
        "spec" | "spec_alpha" | "draft_quant" => 6,
        "pd" => 7,
        _ => 8,
    }
}

#[cfg(test)]
mod tests;
