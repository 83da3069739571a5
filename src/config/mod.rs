//! Files and flags → typed configuration, checked before any work starts: scenario files
//! ([`scenario`], with their JSONL [`dataset`]s), the flags that override them
//! ([`overrides`], [`kv`]), one run's whole specification ([`run::RunSpec`]) and the gate's
//! thresholds ([`thresholds`]). Every error names the file (with line and field) or the flag,
//! and the fix.

pub mod dataset;
pub mod kv;
pub mod overrides;
pub mod run;
pub mod scenario;
pub mod thresholds;
pub mod trace;
pub mod values;
