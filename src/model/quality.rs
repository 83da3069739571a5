//! Answer quality beside speed: the items of a quality set, how an answer is scored, and what
//! a run stores of each answer (scored by `metrics::quality`, judged by `verdict::quality`).

use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Runs of an arm that make a quality pass: the first answers it, the second measures how
/// often the engine's answers flip with nothing changed.
pub const PASSES: u32 = 2;

/// How an answer is turned into the thing compared with the expected one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "scorer")]
pub enum Scorer {
    /// The whole answer, normalised (lower case, punctuation and articles dropped, spaces
    /// collapsed), equals the expected text normalised alike.
    Exact,
    /// The first capture group of `pattern` (the whole match without one), normalised.
    Regex { pattern: String },
    /// A multiple-choice letter: the first standalone capital letter A–J of the answer.
    Choice,
    /// A number: the one after `####` when the answer has it, else its last number; equal
    /// to the expected one within `tolerance` (absolute).
    Numeric { tolerance: f64 },
}

/// What one item asks and, when it is labelled, what a right answer is.
#[derive(Debug, Clone, PartialEq)]
pub struct QualityItem {
    /// Stable within its set (`id` in the file, else the 1-based line).
    pub id: String,
    /// A prompt (completions) or chat messages.
    pub prompt: QualityPrompt,
    /// The right answer, when the set has one (agreement needs none).
    pub expected: Option<String>,
    pub scorer: Scorer,
}

#[derive(Debug, Clone, PartialEq)]
pub enum QualityPrompt {
    Text(String),
    Messages(serde_json::Value),
}

/// A quality set, loaded and checked (`config::quality`).
#[derive(Debug, Clone)]
pub struct QualitySet {
    /// `builtin` or the file's path as the scenario names it.
    pub name: String,
    /// SHA-256 of what was loaded (the file's bytes, or the builtin set's items): arms are
    /// compared item by item only when they answered the same set.
    pub sha256: String,
    pub items: Arc<Vec<QualityItem>>,
    /// Output limit of every quality request.
    pub max_tokens: u32,
}

/// What one quality item answered in one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityAnswer {
    pub id: String,
    /// The answer's text as received, whitespace trimmed; absent when the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// What the scorer extracted (absent when it found nothing, or the request failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extracted: Option<String>,
    /// Right or wrong, for a labelled item (a failed request is wrong).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub correct: Option<bool>,
    /// The request's outcome when it was not ok (`http_500`, `timeout_total`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl QualityAnswer {
    /// The key agreement compares: the extracted answer where the scorer found one, else the
    /// whole text; `None` for a failed request (which agrees with nothing).
    pub fn key(&self) -> Option<&str> {
        self.extracted.as_deref().or(self.text.as_deref())
    }

    /// Whether this answer is the one `reference` gave: the same key, where the reference has
    /// one (a failed request agrees with nothing).
    pub fn agrees_with(&self, reference: &QualityAnswer) -> bool {
        reference.key().is_some() && self.key() == reference.key()
    }
}

/// A run's quality pass: the set it answered and every item's answer, in set order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QualityRun {
    pub set: String,
    pub set_sha256: String,
    pub max_tokens: u32,
    pub answers: Vec<QualityAnswer>,
    /// Wall time of the pass (s), which a run's `started_at`..`ended_at` leaves out; 0 where
    /// a run predates it.
    #[serde(default)]
    pub seconds: f64,
}

impl QualityRun {
    /// Labelled items answered right, and labelled items in all.
    pub fn accuracy(&self) -> (u64, u64) {
        let labelled = self.answers.iter().filter_map(|a| a.correct);
        let right = labelled.clone().filter(|c| *c).count();
        (right as u64, labelled.count() as u64)
    }
}
