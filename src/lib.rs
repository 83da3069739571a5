//! `bench`: drive an OpenAI-compatible inference server with a scenario, measure it, and judge
//! a change against a baseline.
//!
//! # How a request flows
//!
//! ```text
//! scenario.toml ─config─▶ RunSpec ─plan─▶ Plan ─engine─▶ RequestRecord ─metrics─▶ Summary
//!                                                             │                     │
//!                                      session: one run end to end, RunResult ◀─────┘
//!                                                             │
//!                         verdict: baseline ⟷ candidate ─▶ Comparison ─output─▶ table, CSV, …
//! ```
//!
//! 1. [`config`] reads the scenario file and the flags into a checked [`config::run::RunSpec`]
//!    (every error names the file, line and field, or the flag).
//! 2. [`plan`] turns it into a [`plan::Plan`] before any network I/O: request `i`'s prompt and
//!    lengths (seeded), and an open loop's intended send times.
//! 3. [`engine`] runs the plan: the runner releases each request at its intended time; the
//!    client sends it and times its stream. **A request's TTFT is measured in
//!    `engine::client`** — from the *intended* send to the first chunk carrying generated text
//!    (not the role-only chunk many servers send first) — and ends in one
//!    [`model::record::RequestRecord`] whatever happens.
//! 4. [`metrics`] turns the records into a [`model::summary::Summary`]. **That is where a TTFT
//!    becomes a p95**: [`metrics::quantile`], the one estimator behind every reported figure
//!    (type 7 at HDR resolution).
//! 5. [`session`] ties 1–4 together for one run (simulator, model discovery, prompt salt and
//!    calibration, server-metrics scrape, progress) and yields a [`model::result::RunResult`],
//!    written as `run.json`, `requests.csv`, `summary.csv`.
//! 6. [`verdict`] judges a candidate against a baseline's repetitions. **That is where the p95
//!    is judged**: [`verdict::gate`] estimates each metric's effect and noise, and
//!    [`verdict::decide`] calls it regressed, improved, no change or inconclusive.
//! 7. [`analysis`] builds on runs — sweeps, `bench stack`, the diagnosis, shard merging, the
//!    harness's self-test; [`output`] renders anything above as text, CSV, JSON or HTML.
//!
//! [`model`] holds the nouns every stage shares; [`sim`] is the simulated engine used when no
//! endpoint is given; [`commands`] holds one thin file per subcommand; [`cli`] is clap only.
//!
//! # Layers
//!
//! A module may import only modules in its own layer or below (`tests/architecture.rs`
//! checks this, that there are no import cycles between top-level modules nor between the
//! files of one folder, and that this file reaches no command: `main.rs` calls
//! [`commands::main`]):
//!
//! | layer | modules |
//! |---|---|
//! | 0 | `error` |
//! | 1 | `model` |
//! | 2 | `sim` |
//! | 3 | `cli` |
//! | 4 | `config` |
//! | 5 | `plan` |
//! | 6 | `engine` |
//! | 7 | `metrics` |
//! | 8 | `output` |
//! | 9 | `session` |
//! | 10 | `verdict` |
//! | 11 | `analysis` |
//! | 12 | `commands` |
//!
//! `output` sits below the stages that write files (a session writes its run directory, a
//! baseline store its JSON): its renderers are pure functions of `model` nouns, so any stage
//! may call them without seeing anything above itself.

pub mod analysis;
pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod error;
pub mod metrics;
pub mod model;
pub mod output;
pub mod plan;
pub mod session;
pub mod sim;
pub mod verdict;

#[cfg(test)]
mod testkit;

/// `println!` that ignores a closed stdout (`bench validate x | head`): a reader that went
/// away must not panic the process, nor stop a run before its files are written.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stdout(),
            "{}",
            $crate::model::escape::terminal(&format!($($t)*))
        );
    }};
}

/// `print!` that ignores a closed stdout, as [`out!`] does.
#[macro_export]
macro_rules! out_text {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(
            std::io::stdout(),
            "{}",
            $crate::model::escape::terminal(&format!($($t)*))
        );
    }};
}

/// `eprintln!` that ignores a closed or broken stderr (`bench … 2>&1 | head`, a log collector
/// that died): a message that cannot be shown must not panic the task that was saying it —
/// least of all the signal listener, whose death would leave SIGTERM ignored.
#[macro_export]
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "{}",
            $crate::model::escape::terminal(&format!($($t)*))
        );
    }};
}

/// `eprint!` that ignores a closed stderr, as [`say!`] does.
#[macro_export]
macro_rules! say_text {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(
            std::io::stderr(),
            "{}",
            $crate::model::escape::terminal(&format!($($t)*))
        );
    }};
}

/// Exit codes, as documented in the README: 0 pass, 1 regression found, 2 usage or runtime
/// error.
pub const EXIT_OK: u8 = 0;
pub const EXIT_REGRESSION: u8 = 1;
pub const EXIT_ERROR: u8 = 2;
