//! Runs → verdicts: is the candidate worse than the baseline, metric by metric, beyond noise
//! and beyond the threshold?
//!
//! * [`baseline`] — the store of baselines (repetitions of a run) under `baselines/`.
//! * [`compare`] — comparability (same traffic, one var changed) and the [`Comparison`].
//! * [`gate`] — estimate → [`decide`] → row, per metric; methods in [`stats`].
//! * [`stack`] — how several changes combine (factorial interactions).
//!
//! [`Comparison`]: crate::model::comparison::Comparison

pub mod baseline;
pub mod compare;
pub mod decide;
pub mod gate;
pub mod stack;
pub mod stats;
