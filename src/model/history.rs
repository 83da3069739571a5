//! A scenario's history of compares (made by `analysis::history`): each compare's gated
//! values, each metric's series, and its change point (`analysis::drift`).

use chrono::{DateTime, Utc};
use serde::Serialize;
use std::collections::BTreeMap;

/// Which model fitted the change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The level moved at `onset` and stayed.
    Shift,
    /// The level moves a little every step from `onset` on.
    Drift,
}

/// The best change point of a series and its test.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChangePoint {
    pub kind: ChangeKind,
    /// Index of the first value of the changed regime.
    pub onset: usize,
    /// Permutation p-value of the max statistic.
    pub p_value: f64,
    /// The level before the change (geometric mean, the series' unit).
    pub before: f64,
    /// The fitted value at the series' end.
    pub after: f64,
    /// (after / before − 1) × 100.
    pub change_pct: f64,
    /// A drift's fitted change per step, % (0 for a shift).
    pub per_step_pct: f64,
}

/// One metric of one compare.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Value {
    pub unit: String,
    pub baseline: f64,
    pub candidate: f64,
    /// `regressed`, `no_change`, … as the compare named it.
    pub verdict: String,
}

/// One compare, as read from its JSON or its record rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    pub when: DateTime<Utc>,
    /// The revision when the compare recorded one, else its date.
    pub label: String,
    pub scenario: String,
    /// What the compare was judged against: the baseline's name and its runs; a new value
    /// means the baseline was recorded again.
    pub baseline: String,
    /// Gated metrics by key (`ttft.p50`).
    pub values: BTreeMap<String, Value>,
    /// The file (and row) it came from.
    pub source: String,
    /// The compare's identity: the runs it judged (`baseline runs | candidate runs`), the same
    /// whether read from its JSON or its record rows; empty when they were not written.
    #[serde(skip)]
    pub runs: String,
}

/// A metric's series and its change point.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    pub metric: String,
    pub unit: String,
    pub lower_is_better: bool,
    /// One per entry; `None` where that compare did not gate the metric.
    pub values: Vec<Option<Value>>,
    /// The best change point of the values present, its onset an entry index.
    pub change: Option<ChangePoint>,
    /// The change point passed the test (p ≤ α / metrics and |change| ≥ the floor).
    pub flagged: bool,
    /// It went the bad way (slower, or less throughput).
    pub worse: bool,
}

/// A scenario's history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct History {
    pub scenario: String,
    pub entries: Vec<Entry>,
    /// `rebaselined[i]`: entry i was judged against another baseline than entry i − 1.
    pub rebaselined: Vec<bool>,
    pub series: Vec<Series>,
    /// Family-wise α over the series, and the smallest change flagged (%).
    pub alpha: f64,
    pub floor_pct: f64,
    pub method: String,
}

impl History {
    /// Flagged change points that went the bad way.
    pub fn worse(&self) -> Vec<&Series> {
        self.series
            .iter()
            .filter(|s| s.flagged && s.worse)
            .collect()
    }
}
