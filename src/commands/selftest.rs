//! `bench selftest`: what the harness itself costs, printed a level at a time; with `--serve`,
//! only the reference server.

use crate::analysis::selftest::server::FastServer;
use crate::analysis::selftest::{level, memory, Reference};
use crate::cli::SelftestArgs;
use crate::config::selftest::tables;
use crate::error::BenchError;
use crate::{output, EXIT_OK};
use std::io::Write;
use std::time::Duration;

pub async fn run(args: SelftestArgs) -> Result<u8, BenchError> {
    if let Some(addr) = &args.serve {
        return serve(addr, &args).await;
    }
    let tables = tables(&args)?;
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let place = if args.in_process {
        "in this process (its CPU counts as the client's)"
    } else {
        "in a child process (the CPU figures are the client's alone)"
    };
    crate::out!("bench selftest on {cpus} CPU(s); reference server {place}");
    for (pace, tokens, title) in tables {
        let server = if args.in_process {
            Reference::in_process(tokens, pace)?
        } else {
            Reference::spawn(tokens, pace)?
        };
        crate::out!("{}", output::selftest::header(&title, tokens));
        for &streams in &args.streams {
            // A level can take a while: say which is under way (stderr, so the tables stay
            // clean), so a CI log does not look hung.
            crate::say!("selftest: {streams} concurrent streams…");
            let l = level(&server, streams, tokens, args.rounds, pace).await?;
            crate::out!("{}", output::selftest::row(&l));
        }
    }
    if !args.no_memory && !args.memory.is_empty() {
        let server = Reference::spawn(1, Duration::ZERO)?;
        crate::out!("{}", output::selftest::MEMORY_HEADER);
        for &n in &args.memory {
            let m = memory(&server, n)?;
            crate::out!("{}", output::selftest::memory_row(&m));
        }
    }
    crate::out!("{}", output::selftest::FOOTER);
    Ok(EXIT_OK)
}

/// `--serve`: the reference server alone, until killed.
async fn serve(addr: &str, args: &SelftestArgs) -> Result<u8, BenchError> {
    let pace = match args.serve_pace_ms {
        Some(ms) if ms.is_finite() && ms > 0.0 && ms <= 60_000.0 => {
            Duration::from_secs_f64(ms / 1000.0)
        }
        Some(ms) => {
            return Err(BenchError::usage(format!(
                "--serve-pace-ms must be a number of ms between 0 and 60000 (got {ms})"
            )))
        }
        None => Duration::ZERO,
    };
    let server = FastServer::start(addr, args.tokens, pace)?;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "listening on http://{}/v1", server.addr);
    let _ = out.flush();
    let _ = tokio::signal::ctrl_c().await;
    Ok(EXIT_OK)
}
