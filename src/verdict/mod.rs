//! Runs → verdicts: is the candidate worse than the baseline, metric by metric, beyond noise
//! and beyond the threshold?
//!
//! * [`baseline`] — the store of baselines (repetitions of a run) under `baselines/`;
//!   [`stored`] — stored runs named on the command line (`--candidate`, `--control`).
//! * [`compare`] — comparability (same traffic, one var changed) and the [`Comparison`].
//! * [`gate`] — estimate → [`decide`] → row, per metric; methods in [`stats`].
//! * [`mode`] — naming what is not a regression (a change of mode, runs that split in two);
//!   [`environment`] — saying when the arms ran under different conditions.
//! * [`figure`] — one run's own value of a metric, the gate's unit.
//! * [`forecast`] — what a baseline's runs say a compare can decide, before any request
//!   (`compare --plan`).
//! * [`quality`] — the quality pass's answers, paired by item (`accuracy`, `agreement`).
//! * [`sequential`] — adding runs until every gated row is settled, with α spent over the looks.
//! * [`stack`] — how several changes combine (factorial interactions).
//! * [`waiver`] — accepted trade-offs: a waived regression reads `accepted` until it expires.
//!
//! [`Comparison`]: crate::model::comparison::Comparison

pub mod baseline;
pub mod compare;
pub mod decide;
pub mod environment;
pub mod figure;
pub mod forecast;
pub mod gate;
pub mod mode;
pub mod quality;
pub mod sequential;
pub mod stack;
pub mod stats;
pub mod stored;
pub mod waiver;
