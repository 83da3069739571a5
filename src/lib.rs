//! `bench`: drive an OpenAI-compatible inference server with a scenario and measure it.
//!
//! Data flows one way: scenario file → [`scenario::Scenario`] → plan ([`workload`]) →
//! [`runner`] (with the [`client`]) → [`record::RequestRecord`]s → [`metrics`] →
//! [`result::RunResult`] → [`export`]. `main.rs` only parses arguments and calls [`main`].

pub mod app;
pub mod baseline;
pub mod cli;
pub mod client;
pub mod compare;
pub mod diagnose;
pub mod error;
pub mod export;
pub mod gate;
pub mod merge;
pub mod metrics;
pub mod promtext;
pub mod record;
pub mod report;
pub mod result;
pub mod runner;
pub mod scenario;
pub mod selftest;
pub mod servermetrics;
pub mod sim;
pub mod stack;
pub mod stats;
pub mod sweep;
pub mod workload;

use std::process::ExitCode;

/// Exit codes, as documented in the README.
/// `println!` that ignores a closed stdout (`bench validate x | head`): a reader that went
/// away must not panic the process, nor stop a run before its files are written.
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($t)*);
    }};
}

/// `print!` that ignores a closed stdout, as [`out!`] does.
#[macro_export]
macro_rules! out_text {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($t)*);
    }};
}

pub const EXIT_OK: u8 = 0;
pub const EXIT_REGRESSION: u8 = 1;
pub const EXIT_ERROR: u8 = 2;

/// Runs a parsed command line and maps the outcome to an exit code.
pub fn main(cli: cli::Cli) -> ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_ERROR);
        }
    };
    match rt.block_on(app::dispatch(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
