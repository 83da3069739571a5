//! What is built on runs: the throughput–latency [`sweep`], how changes combine ([`stack`]'s
//! runs), the symptom → technique [`diagnose`], distributed runs' [`merge`], and the harness's
//! own cost ([`selftest`]).

pub mod diagnose;
pub mod merge;
pub mod selftest;
pub mod stack;
pub mod sweep;
