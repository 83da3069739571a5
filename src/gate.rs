//! What the gate checks and how: thresholds per metric, and the evaluation of one candidate run
//! against a baseline's repetitions (method in [`crate::stats`] and [`crate::stats::verdict`]).
//!
//! Thresholds are written `"ttft.p95" = "10%"` (latency quantiles: lower is better; the floor is
//! ln 1.10), `"output_throughput" = "-5%"` (higher is better; the floor is −ln 0.95),
//! `"error_rate" = "+0.5pp"` (absolute percentage points) or `"off"`. Defaults: TTFT, TPOT and
//! E2E at p50/p95 and TTFT/TPOT at p99 at 10 %, output throughput −5 %, goodput −5 % (when the
//! scenario has SLOs), error rate +0.5 pp. A p99 is gated only when both arms have at least
//! [`P99_MIN_N`] successful requests, and any quantile only when both arms have enough values to
//! bound it distribution-free ([`min_n_for_quantile`]: p50 6, p95 72); below that it is
//! reported as not gated, saying why.

use crate::result::RunResult;
use crate::stats::verdict::{decide, needed_n, Verdict};
use crate::stats::{bootstrap_se, mann_whitney_p, quantile, sd, sorted, z};
use serde::{Deserialize, Serialize};

/// Below this many successful requests per arm a p99 is reported but not gated.
pub const P99_MIN_N: usize = 1000;

/// The fewest values from which the p-quantile can be bounded without assuming a shape: the
/// smallest n with pⁿ ≤ α/2, so that a distribution-free (order-statistic) two-sided 1 − α
/// interval for it has an upper end below the largest value. With fewer, the quantile is
/// the top few samples and a bootstrap of them is too narrow (a real A/A on llama-server
/// with 8 requests a run failed on a p95 this way). α = 0.05: p50 6, p90 36, p95 72.
pub fn min_n_for_quantile(p: f64, alpha: f64) -> usize {
    if !(0.0..1.0).contains(&p) {
        return usize::MAX;
    }
    let q = p.max(1.0 - p);
    ((alpha / 2.0).ln() / q.ln()).ceil().max(1.0) as usize
}

pub const DEFAULT_GATE: &[(&str, &str)] = &[
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
];

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Metric {
    /// A latency quantile: `ttft`, `tpot` or `e2e` at p.
    Latency(&'static str, f64),
    OutputThroughput,
    RequestThroughput,
    Goodput,
    ErrorRate,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    pub key: String,
    pub metric: Metric,
    /// On the effect's scale (log ratio, or a fraction for error rate); `None` = off.
    pub floor: Option<f64>,
    pub text: String,
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

/// Parses one `key = "value"` of a `[gate]` table.
pub fn parse_threshold(key: &str, value: &str) -> Result<Threshold, String> {
    let metric = match key {
        "output_throughput" => Metric::OutputThroughput,
        "request_throughput" => Metric::RequestThroughput,
        "goodput" => Metric::Goodput,
        "error_rate" => Metric::ErrorRate,
        _ => {
            let (name, q) = key.split_once('.').ok_or_else(|| unknown(key))?;
            let name: &'static str = match name {
                "ttft" => "ttft",
                "tpot" => "tpot",
                "e2e" => "e2e",
                _ => return Err(unknown(key)),
            };
            let p: f64 = q
                .strip_prefix('p')
                .and_then(|d| d.parse().ok())
                .ok_or_else(|| unknown(key))?;
            if !(0.0 < p && p < 100.0) {
                return Err(unknown(key));
            }
            Metric::Latency(name, p / 100.0)
        }
    };
    let text = value.trim().to_string();
    if text == "off" {
        return Ok(Threshold {
            key: key.into(),
            metric,
            floor: None,
            text,
        });
    }
    let floor = match metric {
        Metric::Latency(..) => (1.0 + percent(value, key)?).ln(),
        Metric::OutputThroughput | Metric::RequestThroughput | Metric::Goodput => {
            -(1.0 - percent(value, key)?).ln()
        }
        Metric::ErrorRate => {
            let t = value.trim().trim_start_matches('+');
            let pp: f64 = t
                .strip_suffix("pp")
                .and_then(|x| x.trim().parse().ok())
                .ok_or_else(|| {
                    format!("`error_rate` = \"{value}\": write percentage points like \"+0.5pp\"")
                })?;
            if !(pp > 0.0 && pp < 100.0) {
                return Err(format!(
                    "`error_rate` = \"{value}\": must be between 0 and 100 pp"
                ));
            }
            pp / 100.0
        }
    };
    Ok(Threshold {
        key: key.into(),
        metric,
        floor: Some(floor),
        text,
    })
}

fn unknown(key: &str) -> String {
    format!("unknown gate metric `{key}`; use ttft|tpot|e2e.pNN (e.g. ttft.p95), output_throughput, request_throughput, goodput or error_rate")
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
            match out.iter_mut().find(|x| x.key == t.key) {
                Some(slot) => *slot = t,
                None => out.push(t),
            }
        }
    }
    Ok(out)
}

#[derive(Debug, Clone)]
pub struct GateConfig {
    pub thresholds: Vec<Threshold>,
    /// Family-wise significance over the gated set.
    pub alpha: f64,
    pub replicates: usize,
    pub seed: u64,
}

/// One line of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// `ttft.p95`, `output_throughput`, …
    pub metric: String,
    pub unit: String,
    pub lower_is_better: bool,
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate / baseline − 1) × 100, or the difference in pp for error rate.
    pub delta_pct: f64,
    /// The decision interval (effect ± critical), on the delta's scale.
    pub interval_low: f64,
    pub interval_high: f64,
    /// Signed so that positive is worse.
    pub effect: f64,
    pub se: f64,
    pub critical: f64,
    pub floor: f64,
    pub threshold: String,
    pub verdict: Verdict,
    pub reason: String,
    pub n_baseline: usize,
    pub n_candidate: usize,
    /// Descriptive only.
    pub mann_whitney_p: Option<f64>,
    /// Degrees of freedom of the critical value: Student's t when the SE carries run-to-run
    /// noise estimated from a few repetitions (Welch–Satterthwaite with the bootstrap part);
    /// absent when the normal quantile applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
}

/// Welch–Satterthwaite degrees of freedom of `within + between`, where `within` (a variance)
/// is known with no uncertainty worth counting and `between` is estimated with `between_df`.
fn satterthwaite(within: f64, between: f64, between_df: usize) -> Option<f64> {
    (between > 0.0 && between_df > 0)
        .then(|| (within + between).powi(2) / (between * between / between_df as f64))
}

fn values(run: &RunResult, name: &str) -> Vec<f64> {
    run.requests
        .iter()
        .filter(|r| !r.warmup && r.outcome.is_ok())
        .filter_map(|r| match name {
            "ttft" => r.ttft_us.map(|v| v as f64),
            "tpot" => r.tpot_us,
            _ => r.e2e_us.map(|v| v as f64),
        })
        .collect()
}

fn error_rate(run: &RunResult) -> (f64, f64) {
    let c = &run.summary.counts;
    let errors: u64 = c.errors.values().sum();
    (errors as f64, c.sent as f64)
}

fn scalar(run: &RunResult, m: Metric) -> Option<f64> {
    let t = &run.summary.throughput;
    match m {
        Metric::OutputThroughput => Some(t.output_tps),
        Metric::RequestThroughput => Some(t.request_rps),
        Metric::Goodput => t.goodput_rps,
        _ => None,
    }
}

fn hash_seed(key: &str, seed: u64) -> u64 {
    key.bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

/// Compares `cand` with the repetitions of a baseline.
pub fn evaluate(base: &[RunResult], cand: &RunResult, cfg: &GateConfig) -> Vec<Row> {
    let reps = base.len().max(1) as f64;
    let rr_scale = (1.0 + 1.0 / reps).sqrt();
    let mut rows: Vec<(Row, bool)> = Vec::new();
    for t in &cfg.thresholds {
        let (mut row, mut gated) = match t.metric {
            Metric::Latency(name, p) => {
                let pooled = sorted(base.iter().flat_map(|r| values(r, name)));
                let c = sorted(values(cand, name));
                let label = format!("{name}.p{}", fmt_p(p));
                if pooled.len() < 2 || c.len() < 2 {
                    let r = empty_row(&label, "ms", true, pooled.len(), c.len(), &t.text);
                    rows.push((r, false));
                    continue;
                }
                let (qa, qb) = (
                    quantile(&pooled, p).unwrap_or(0.0),
                    quantile(&c, p).unwrap_or(0.0),
                );
                let effect = if qa > 0.0 && qb > 0.0 {
                    (qb / qa).ln()
                } else {
                    0.0
                };
                let seed = hash_seed(&label, cfg.seed);
                let se_boot = bootstrap_se(&pooled, &c, p, cfg.replicates, seed);
                // Run-to-run drift: the spread of the repetitions' quantiles beyond what their
                // own sampling noise explains (each repetition's noise from a one-arm bootstrap).
                let reps_sorted: Vec<Vec<f64>> = base
                    .iter()
                    .map(|r| sorted(values(r, name)))
                    .filter(|v| v.len() >= 2)
                    .collect();
                let per_rep: Vec<f64> = reps_sorted
                    .iter()
                    .filter_map(|v| quantile(v, p))
                    .filter(|q| *q > 0.0)
                    .map(f64::ln)
                    .collect();
                let within: Vec<f64> = reps_sorted
                    .iter()
                    .map(|v| crate::stats::bootstrap_se_one(v, p, cfg.replicates, seed).powi(2))
                    .collect();
                let drift2 = match sd(&per_rep) {
                    Some(s) => {
                        (s * s - within.iter().sum::<f64>() / within.len().max(1) as f64).max(0.0)
                    }
                    None => 0.0,
                };
                let between = drift2 * rr_scale * rr_scale;
                let se = (se_boot * se_boot + between).sqrt();
                let df = satterthwaite(se_boot * se_boot, between, per_rep.len().saturating_sub(1));
                let mut row = base_row(
                    &label,
                    "ms",
                    true,
                    qa / 1000.0,
                    qb / 1000.0,
                    effect,
                    se,
                    &t.text,
                    pooled.len(),
                    c.len(),
                );
                row.mann_whitney_p = mann_whitney_p(&pooled, &c);
                row.df = df;
                let mut gated = t.floor.is_some();
                let min_n = min_n_for_quantile(p, cfg.alpha);
                if gated && p >= 0.99 && pooled.len().min(c.len()) < P99_MIN_N {
                    gated = false;
                    row.reason = format!("not gated: a p99 needs ≥ {P99_MIN_N} successful requests per arm (have {}/{})", pooled.len(), c.len());
                } else if gated && pooled.len().min(c.len()) < min_n {
                    gated = false;
                    row.reason = format!(
                        "not gated: a {label} needs ≥ {min_n} successful requests per arm to be bounded without assuming a distribution (have {}/{})",
                        pooled.len(),
                        c.len()
                    );
                }
                (row, gated)
            }
            Metric::OutputThroughput | Metric::RequestThroughput | Metric::Goodput => {
                let bv: Vec<f64> = base
                    .iter()
                    .filter_map(|r| scalar(r, t.metric))
                    .filter(|v| *v > 0.0)
                    .collect();
                let cv = scalar(cand, t.metric).filter(|v| *v > 0.0);
                let unit = if t.metric == Metric::OutputThroughput {
                    "tok/s"
                } else {
                    "req/s"
                };
                let (Some(cv), false) = (cv, bv.is_empty()) else {
                    // Goodput exists only with SLOs; say nothing rather than "no data".
                    if t.metric != Metric::Goodput {
                        rows.push((empty_row(&t.key, unit, false, bv.len(), 0, &t.text), false));
                    }
                    continue;
                };
                let logs: Vec<f64> = bv.iter().map(|v| v.ln()).collect();
                let qa = (logs.iter().sum::<f64>() / logs.len() as f64).exp();
                let effect = -(cv / qa).ln();
                // One figure per run, so its noise is the run-to-run spread of the repetitions.
                // With a single baseline run (--against) fall back to counting noise: a rate
                // from n completions carries about 1/√n relative noise.
                // A new run against k earlier ones: (x − x̄) / (s·√(1 + 1/k)) is Student's t
                // with k − 1 degrees of freedom, not normal — with 3 repetitions that matters.
                let (se, df) = match sd(&logs) {
                    Some(s) => (s * rr_scale, Some((logs.len() - 1) as f64)),
                    None => {
                        let n_b =
                            base.iter().map(|r| r.summary.counts.ok).sum::<u64>().max(1) as f64;
                        let n_c = cand.summary.counts.ok.max(1) as f64;
                        ((1.0 / n_b + 1.0 / n_c).sqrt(), None)
                    }
                };
                let mut row = base_row(
                    &t.key,
                    unit,
                    false,
                    qa,
                    cv,
                    effect,
                    se,
                    &t.text,
                    bv.len(),
                    1,
                );
                row.df = df;
                (row, t.floor.is_some())
            }
            Metric::ErrorRate => {
                let (xb, nb) = base
                    .iter()
                    .map(error_rate)
                    .fold((0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
                let (xc, nc) = error_rate(cand);
                if nb == 0.0 || nc == 0.0 {
                    rows.push((
                        empty_row("error_rate", "%", true, nb as usize, nc as usize, &t.text),
                        false,
                    ));
                    continue;
                }
                let (pb, pc) = (xb / nb, xc / nc);
                let smooth = |x: f64, n: f64| (x + 0.5) / (n + 1.0);
                let (sb, sc) = (smooth(xb, nb), smooth(xc, nc));
                let se_bin = (sb * (1.0 - sb) / nb + sc * (1.0 - sc) / nc).sqrt();
                let per_rep: Vec<f64> = base
                    .iter()
                    .map(error_rate)
                    .filter(|(_, n)| *n > 0.0)
                    .map(|(x, n)| x / n)
                    .collect();
                let se_rep = sd(&per_rep).unwrap_or(0.0) * rr_scale;
                let se = se_bin.max(se_rep);
                let mut row = base_row(
                    "error_rate",
                    "%",
                    true,
                    pb * 100.0,
                    pc * 100.0,
                    pc - pb,
                    se,
                    &t.text,
                    nb as usize,
                    nc as usize,
                );
                row.delta_pct = (pc - pb) * 100.0;
                if se_rep > se_bin {
                    row.df = Some(per_rep.len().saturating_sub(1) as f64);
                }
                (row, t.floor.is_some())
            }
        };
        row.floor = t.floor.unwrap_or(0.0);
        if t.floor.is_none() {
            gated = false;
            row.reason = "not gated: threshold is off".into();
        }
        rows.push((row, gated));
    }
    let m = rows.iter().filter(|(_, g)| *g).count().max(1);
    let level = 1.0 - cfg.alpha / (2.0 * m as f64);
    let z_crit = z(level);
    rows.into_iter()
        .map(|(mut r, gated)| {
            let q = match r.df {
                Some(df) => crate::stats::t_quantile(level, df),
                None => z_crit,
            };
            let d = decide(r.effect, r.se, r.floor, q);
            r.critical = d.critical;
            let (lo, hi) = (r.effect - d.critical, r.effect + d.critical);
            // Back on the delta's own scale; for higher-is-better metrics "worse" is a drop.
            if r.metric == "error_rate" {
                (r.interval_low, r.interval_high) = (lo * 100.0, hi * 100.0);
            } else if r.lower_is_better {
                (r.interval_low, r.interval_high) =
                    ((lo.exp() - 1.0) * 100.0, (hi.exp() - 1.0) * 100.0);
            } else {
                (r.interval_low, r.interval_high) =
                    (((-hi).exp() - 1.0) * 100.0, ((-lo).exp() - 1.0) * 100.0);
            }
            if gated {
                r.verdict = d.verdict;
                r.reason = reason(&r, d.verdict);
            } else {
                r.verdict = Verdict::NotGated;
            }
            r
        })
        .collect()
}

fn fmt_p(p: f64) -> String {
    let x = p * 100.0;
    if (x - x.round()).abs() < 1e-9 {
        format!("{}", x.round() as u64)
    } else {
        format!("{x}")
    }
}

#[allow(clippy::too_many_arguments)]
fn base_row(
    metric: &str,
    unit: &str,
    lower: bool,
    baseline: f64,
    candidate: f64,
    effect: f64,
    se: f64,
    threshold: &str,
    nb: usize,
    nc: usize,
) -> Row {
    Row {
        metric: metric.into(),
        unit: unit.into(),
        lower_is_better: lower,
        baseline,
        candidate,
        delta_pct: if baseline != 0.0 {
            (candidate / baseline - 1.0) * 100.0
        } else {
            0.0
        },
        interval_low: 0.0,
        interval_high: 0.0,
        effect,
        se,
        critical: 0.0,
        floor: 0.0,
        threshold: threshold.into(),
        verdict: Verdict::NotGated,
        reason: String::new(),
        n_baseline: nb,
        n_candidate: nc,
        mann_whitney_p: None,
        df: None,
    }
}

fn empty_row(metric: &str, unit: &str, lower: bool, nb: usize, nc: usize, threshold: &str) -> Row {
    let mut r = base_row(
        metric,
        unit,
        lower,
        0.0,
        0.0,
        0.0,
        f64::INFINITY,
        threshold,
        nb,
        nc,
    );
    r.reason = format!("not gated: no data (n={nb}/{nc})");
    r
}

fn reason(r: &Row, v: Verdict) -> String {
    let scale = if r.metric == "error_rate" { "pp" } else { "%" };
    let delta = format!("{:+.1}{scale}", r.delta_pct);
    let n = match r.df {
        Some(df) => format!("n={}/{}, t df {df:.1}", r.n_baseline, r.n_candidate),
        None => format!("n={}/{}", r.n_baseline, r.n_candidate),
    };
    match v {
        Verdict::Regressed => format!(
            "FAIL {} {delta} (effect {:.3} > max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::Improved => format!(
            "improved {} {delta} (effect {:.3} < −max(critical {:.3}, floor {:.3}); {n})",
            r.metric, r.effect, r.critical, r.floor
        ),
        Verdict::NoChange => format!(
            "ok {} {delta} (|effect| {:.3} ≤ max(critical {:.3}, floor {:.3}); {n})",
            r.metric,
            r.effect.abs(),
            r.critical,
            r.floor
        ),
        Verdict::Inconclusive => {
            // Few degrees of freedom: the repetitions' spread, not the request count, is
            // what is too large, and more requests per run would not fix it.
            let more = if r.df.is_some_and(|d| d < 10.0) {
                "run-to-run noise dominates: record the baseline with more repetitions (--repeat 5)"
                    .to_string()
            } else if r.metric.contains(".p") {
                match needed_n(r.n_baseline.min(r.n_candidate), r.critical, r.floor) {
                    Some(k) => format!("needs ≈ {k} requests per arm, or more baseline repetitions if run-to-run noise dominates"),
                    None => "needs more requests".into(),
                }
            } else {
                "needs longer runs or more baseline repetitions".into()
            };
            format!("inconclusive {} {delta} (critical {:.3} > floor {:.3}: too noisy to see the threshold; {more}; {n})", r.metric, r.critical, r.floor)
        }
        Verdict::NotGated => r.reason.clone(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
