//! A comparison of a candidate run with a baseline: what changed, and the gate's verdict on
//! each metric (made by `verdict::compare` and `verdict::gate`).

use super::metric::Metric;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The family-wise α a compare spends when `--alpha` is not given: false FAILs over all gated
/// rows at most 5 % (docs/gate.md). The flags' default and every caller read this one.
pub const DEFAULT_ALPHA: f64 = 0.05;

/// Version of the compare JSON (`bench compare --json`). 2: `diffs` are objects with an
/// absent side as null (1 wrote `[key, baseline, candidate]` with "∅" for absent);
/// `candidate_repetitions`, `interleaved` and `notes` added.
pub const COMPARE_SCHEMA: u32 = 2;

/// The gate's decision on one metric (rule in `verdict::decide`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Regressed,
    Improved,
    NoChange,
    Inconclusive,
    /// Reported but not gated (e.g. p99 with too few requests, or a threshold set to off).
    NotGated,
    /// Regressed, and the regression is a trade-off a valid waiver accepts ([`Waiver`]):
    /// counted and named, not failed.
    Accepted,
}

impl Verdict {
    /// How the terminal table shows it: [`Verdict::name`], a regression in capitals so that
    /// it stands out (one vocabulary across terminal, JSON, Markdown and CSV).
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Regressed => "REGRESSED",
            v => v.name(),
        }
    }

    /// How files (record CSV, JSON, Markdown) and the terminal name it.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Regressed => "regressed",
            Verdict::Improved => "improved",
            Verdict::NoChange => "no_change",
            Verdict::Inconclusive => "inconclusive",
            Verdict::NotGated => "not_gated",
            Verdict::Accepted => "accepted",
        }
    }
}

/// One var whose value differs between baseline and candidate; `None` = not set on that side.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VarChange {
    pub key: String,
    pub baseline: Option<String>,
    pub candidate: Option<String>,
}

impl fmt::Display for VarChange {
    /// `prefix_cache: off → on`; an unset side shows as ∅.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let side = |v: &Option<String>| v.clone().unwrap_or_else(|| "∅".into());
        write!(
            f,
            "{}: {} → {}",
            self.key,
            side(&self.baseline),
            side(&self.candidate)
        )
    }
}

fn unbounded() -> f64 {
    f64::INFINITY
}

/// JSON has no infinity: serde_json writes a row's unbounded values (a metric not gated, or
/// with no data) as `null`, and these read them back.
fn null_is_inf<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
}

fn null_is_neg_inf<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NEG_INFINITY))
}

/// One line of a comparison: a metric, both values, the decision and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub metric: Metric,
    /// Unit of `baseline` and `candidate` (`ms`, `tok/s`, `req/s`, `%`).
    pub unit: String,
    pub lower_is_better: bool,
    pub baseline: f64,
    pub candidate: f64,
    /// (candidate / baseline − 1) × 100, or the difference in pp for error rate.
    pub delta_pct: f64,
    /// The decision interval (effect ± critical), on the delta's scale.
    #[serde(deserialize_with = "null_is_neg_inf")]
    pub interval_low: f64,
    #[serde(deserialize_with = "null_is_inf")]
    pub interval_high: f64,
    /// ln(candidate / baseline) (a difference for error rate), signed so that positive is worse.
    pub effect: f64,
    /// Standard error of the effect.
    #[serde(deserialize_with = "null_is_inf")]
    pub se: f64,
    /// Critical value of the effect: q(1 − α/m) · se (one-sided in each direction).
    #[serde(deserialize_with = "null_is_inf")]
    pub critical: f64,
    /// The bound on worse: the effect's one-sided 1 − α upper bound (effect + q(1 − α) · se;
    /// for error rate the exact one), "no change" when inside the floor. Absent in comparisons
    /// written without it.
    #[serde(default = "unbounded", deserialize_with = "null_is_inf")]
    pub bound: f64,
    /// The threshold on the effect's scale (ln 1.10 for "10%").
    pub floor: f64,
    /// The threshold as written (`10%`, `-5%`, `+0.5pp`, `off`).
    pub threshold: String,
    pub verdict: Verdict,
    pub reason: String,
    pub n_baseline: usize,
    pub n_candidate: usize,
    /// Descriptive only.
    pub mann_whitney_p: Option<f64>,
    /// Degrees of freedom of the critical value: Student's t with the runs' Σ(runs − 1) for a
    /// latency, R + K − 2 for a rate, k − 1 for k interleaved blocks judged in pairs; absent
    /// when the normal quantile applies (a rate with one run a side, judged on counting noise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub df: Option<f64>,
    /// In a sequential compare, the runs a side (blocks, interleaved) at whose look this row
    /// was settled; it is shown as judged then. Absent for a row still undecided at the end,
    /// and in a fixed-size compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled_at: Option<usize>,
    /// A row with a threshold that is not judged only because an arm has too few successful
    /// requests: how many each arm needs (a p95 72, a p99 1000). More runs gate it, so a
    /// sequential compare counts it as undecided until they are made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_requests: Option<usize>,
    /// Each run's own value of the metric (`verdict::figure`; the gate's unit), in run order:
    /// the baseline arm's and the candidate arm's. Empty for the error rate, which is judged
    /// on pooled counts, and in comparisons written without them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub baseline_values: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub candidate_values: Vec<f64>,
    /// The waiver that accepted this row's regression, or that had expired when it would
    /// have.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiver: Option<Waiver>,
}

/// A trade-off accepted on purpose: a regression of `metric` caused by a change of the var
/// `change` (`prefix_cache`, or `prefix_cache=on` for one value) reads `accepted` until
/// `expires` (that day included), with who accepted it and why. Written in a gate file's
/// `[[waiver]]` tables.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Waiver {
    pub metric: String,
    pub change: String,
    pub reason: String,
    pub owner: String,
    pub expires: chrono::NaiveDate,
}

impl Waiver {
    /// Whether it covers a change of these vars: one of them has its key (and, when it names
    /// one, its candidate value).
    pub fn covers(&self, diffs: &[VarChange]) -> bool {
        let (key, value) = match self.change.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim())),
            None => (self.change.trim(), None),
        };
        diffs
            .iter()
            .any(|d| d.key == key && value.is_none_or(|v| d.candidate.as_deref() == Some(v)))
    }
}

/// Why a sequential compare stopped adding runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// Every gated row was regressed, improved or no change.
    Settled,
    /// `--max-repeat` runs a side (blocks) were judged.
    Cap,
    /// `--budget` would have run out during the next run.
    Budget,
    /// Every row left undecided was out of the cap's reach at what it showed.
    OutOfReach,
    /// A row regressed and settled rows stay settled: the exit code could not change, so no
    /// more runs were spent on the rows left (`--settle-all` goes on).
    Regressed,
    /// A fixed number of runs (`--repeat`, or stored runs with no sequential design).
    Fixed,
    /// Stored runs of a sequential compare that ended before the next look (interrupted,
    /// or cut short by an error): judged where the runs end.
    RunsEnded,
}

impl Stop {
    pub fn name(self) -> &'static str {
        match self {
            Stop::Settled => "settled",
            Stop::Cap => "cap",
            Stop::Budget => "budget",
            Stop::OutOfReach => "out_of_reach",
            Stop::Regressed => "regressed",
            Stop::Fixed => "fixed",
            Stop::RunsEnded => "runs_ended",
        }
    }
}

/// How a sequential compare went: its design, its looks and why it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SequenceSummary {
    /// Candidate runs (blocks, interleaved) at which the rows were judged, in order.
    pub looks: Vec<usize>,
    /// The cap the α was spent over (`--max-repeat`).
    pub max_repeat: usize,
    /// Candidate runs (blocks) used.
    pub used: usize,
    pub stop: Stop,
    /// The design in words: the spending function and how a look spends its share.
    pub design: String,
}

/// `bench compare`'s result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub scenario_name: String,
    pub scenario_hash: String,
    /// Store name, or the path of the run given with `--against`.
    pub baseline: String,
    pub baseline_repetitions: usize,
    /// The first candidate run's id.
    pub candidate_run: String,
    /// Every run judged, by id: the baseline arm's and the candidate arm's (the evidence a
    /// record row names).
    #[serde(default)]
    pub baseline_runs: Vec<String>,
    #[serde(default)]
    pub candidate_runs: Vec<String>,
    /// The bench that judged.
    #[serde(default)]
    pub tool_version: String,
    /// Candidate runs judged (`bench compare --repeat`).
    #[serde(default = "one")]
    pub candidate_repetitions: usize,
    /// The baseline arm was run now, alternating with the candidate (`--interleave`), rather
    /// than read from the store.
    #[serde(default)]
    pub interleaved: bool,
    /// The runs of both arms alternated in this many ABBA blocks, enough to be judged in
    /// pairs (each block's candidate − control difference; `verdict::gate::PAIRED_MIN_BLOCKS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paired_blocks: Option<usize>,
    pub diffs: Vec<VarChange>,
    /// `prefix_cache: off → on`, `none (A/A)`, or the list when several differ.
    pub change: String,
    /// False when more than one var differs (`--allow-multi`).
    pub attributable: bool,
    pub alpha: f64,
    pub rows: Vec<Row>,
    /// What the server's own metrics say changed ("prefix hit rate 0 % → 61 %").
    #[serde(default)]
    pub server_effects: Vec<String>,
    /// What is not a regression, and what explains noise: a change of mode, runs that split
    /// into two clusters, environments that differ.
    #[serde(default)]
    pub notes: Vec<String>,
    pub regressed: bool,
    /// An undecided gated row fails the compare (`--undecided fail`).
    #[serde(default)]
    pub undecided_fails: bool,
    /// A sequential compare's looks and stop; absent for a fixed number of runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequence: Option<SequenceSummary>,
    pub created_at: DateTime<Utc>,
    /// The commit the candidate was built from, as CI names it (`$BENCH_REVISION`,
    /// `$GITHUB_SHA`, `$CI_COMMIT_SHA`, or `git rev-parse HEAD` where bench ran): how
    /// `bench history` labels a compare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<String>,
}

fn one() -> usize {
    1
}

impl Comparison {
    /// The gated rows left inconclusive: neither a regression nor an improvement nor no
    /// change could be shown at the runs judged.
    /// Regressed rows a valid waiver accepts.
    pub fn accepted(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Accepted)
            .collect()
    }

    pub fn undecided(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::Inconclusive)
            .collect()
    }

    /// Whether the compare fails: a row regressed, or one is undecided and that fails it.
    pub fn fails(&self) -> bool {
        self.regressed || (self.undecided_fails && !self.undecided().is_empty())
    }

    /// Rows with a threshold that were not judged because an arm had too few successful
    /// requests ([`Row::needs_requests`]): the headline names them, so that a gate never
    /// reads as covering rows it did not judge.
    pub fn not_judged(&self) -> Vec<&Row> {
        self.rows
            .iter()
            .filter(|r| r.verdict == Verdict::NotGated && r.needs_requests.is_some())
            .collect()
    }

    /// Gated rows: every row but the not-gated ones.
    pub fn gated(&self) -> usize {
        self.rows
            .iter()
            .filter(|r| r.verdict != Verdict::NotGated)
            .count()
    }

    /// The row of one metric, if the comparison has it.
    pub fn row(&self, m: Metric) -> Option<&Row> {
        self.rows.iter().find(|r| r.metric == m)
    }
}
