//! The subcommands: one thin file each — typed configuration in, library calls, exit code out.
//! No command imports another; what two need lives in the library.

mod baseline;
mod compare;
mod diagnose;
mod history;
mod import;
mod init;
mod merge;
mod metrics;
mod report;
mod run;
mod selftest;
mod sim;
mod stack;
mod sweep;
mod validate;

use crate::cli::{Cli, Command, OutputArgs};
use crate::error::BenchError;
use crate::output::export::Requested;

/// Runs a parsed command line and maps the outcome to an exit code.
pub fn main(cli: Cli) -> std::process::ExitCode {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            crate::say!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::from(crate::EXIT_ERROR);
        }
    };
    match rt.block_on(dispatch(cli)) {
        Ok(code) => std::process::ExitCode::from(code),
        Err(e) => {
            match e {
                BenchError::Incomplete(text) if text.is_empty() => {}
                BenchError::Incomplete(text) => crate::say!("{text}"),
                e => crate::say!("error: {e:#}"),
            }
            std::process::ExitCode::from(crate::EXIT_ERROR)
        }
    }
}

/// Runs a parsed command line; `Ok` is the exit code (0 pass, 1 regression), `Err` exits 2.
pub async fn dispatch(cli: Cli) -> Result<u8, BenchError> {
    match cli.command {
        Command::Run(args) => run::run(*args).await,
        Command::Init(args) => init::run(*args).await,
        Command::Baseline(args) => baseline::run(*args).await,
        Command::Compare(args) => compare::run(*args).await,
        Command::Validate { scenario, shard } => validate::run(&scenario, shard.as_deref()),
        Command::Selftest(args) => selftest::run(args).await,
        Command::Sweep(args) => sweep::run(*args).await,
        Command::Stack(args) => stack::run(*args).await,
        Command::Report { path, out } => report::run(&path, out),
        Command::History(args) => history::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Merge { dirs, out } => merge::run(&dirs, &out),
        Command::Diagnose { run } => diagnose::run(&run),
        Command::Sim(args) => sim::run(args).await,
        Command::Metrics { url } => metrics::run(&url).await,
    }
}

/// The report files the shared output flags (and `--record`) ask for.
fn requested(o: &OutputArgs, record: Option<&std::path::Path>) -> Requested {
    let (md, html, json, csv) = (&o.markdown, &o.html, &o.json, &o.csv);
    Requested::new(
        md.as_deref(),
        html.as_deref(),
        json.as_deref(),
        csv.as_deref(),
        record,
    )
}
