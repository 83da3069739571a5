//! What is built on runs: a compare from its flags ([`compare`]), its runs and looks ([`judge`]) with the interleaved arms of
//! `bench compare --interleave` ([`interleave`]), the throughput–latency [`sweep`] with its
//! [`saturation`] test, how changes combine ([`stack`]'s runs), the symptom → technique
//! [`diagnose`], distributed runs' [`merge`], a baseline's [`record`]ing, the harness's own cost ([`selftest`]), and a
//! scenario's [`history`] of compares with its change points ([`drift`]).

pub mod compare;
pub mod diagnose;
pub mod drift;
pub mod history;
pub mod import;
pub mod init;
pub mod interleave;
pub mod judge;
pub mod merge;
pub mod record;
pub mod saturation;
pub mod selftest;
pub mod stack;
pub mod sweep;
