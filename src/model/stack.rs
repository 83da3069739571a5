//! How stacked changes combined (made by `verdict::stack`).

use super::metric::Metric;
use serde::Serialize;

/// The verdict on a combination (docs/optimization.md: stacked techniques do not add up).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Interaction {
    Synergy,
    Neutral,
    Conflict,
    /// The runs cannot tell: one run per configuration, or noise wider than the floor.
    Inconclusive,
}

#[derive(Debug, Clone, Serialize)]
pub struct InteractionRow {
    pub metric: Metric,
    /// Names of the changes combined.
    pub changes: Vec<String>,
    /// Ratio to base of each change alone (candidate / base; < 1 is faster for latency).
    pub alone: Vec<f64>,
    pub combined: f64,
    /// Product of the single ratios.
    pub expected: f64,
    /// ln combined − Σ ln alone, signed so that positive is worse than independence.
    pub interaction: f64,
    /// The 95 % interval (t with `df`); infinite when no configuration was run twice.
    pub interval_low: f64,
    pub interval_high: f64,
    /// Degrees of freedom of the run-to-run noise: Σ(runs − 1) over the configurations
    /// compared; `None` with one run each.
    pub df: Option<f64>,
    /// The fewest runs of any configuration compared.
    pub runs: usize,
    pub verdict: Interaction,
    /// For an inconclusive row with runs to judge by: how many runs would settle it.
    pub resolve: Option<Resolve>,
    /// Which resource they likely contend for, when the data shows it.
    pub contention: Option<String>,
    /// For a quality row: each configuration's share, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// About how many runs per configuration would settle an inconclusive interaction, from the
/// noise measured: its standard error shrinks as 1/√runs and its degrees of freedom grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Resolve {
    /// Runs per configuration, all alike, for an interval within ±5 % whatever the
    /// interaction; `None` when even [`Resolve::MAX_RUNS`] would not do.
    pub whatever: Option<usize>,
    /// When the interaction measured is beyond 5 % and it would show sooner: the runs per
    /// configuration for that, if it stays at its size.
    pub if_it_stays: Option<usize>,
}

impl Resolve {
    pub const MAX_RUNS: usize = 200;
}

/// One step of a ladder: the change applied, judged against the step before.
#[derive(Debug, Clone, Serialize)]
pub struct LadderStep {
    /// `quant=int4`.
    pub change: String,
    pub comparison: super::comparison::Comparison,
    /// TPOT p50 against the base (ratio − 1, in %), when both have one: each pooled over its
    /// runs, as the gate reports it.
    pub cumulative_tpot_pct: Option<f64>,
}

/// A ladder: the changes applied one at a time, in order.
#[derive(Debug, Clone, Serialize)]
pub struct Ladder {
    pub steps: Vec<LadderStep>,
    /// The step that regressed and stopped the climb (without `--keep-going`).
    pub stopped_at: Option<usize>,
    /// How many changes were to be applied.
    pub planned: usize,
}

impl Ladder {
    pub fn regressed(&self) -> bool {
        self.steps.iter().any(|s| s.comparison.regressed)
    }
}

/// The recommended order (docs/optimization.md): stability (quantization → TP → chunked prefill) → TTFT
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
