//! `bench selftest`: what the harness itself costs, printed a level at a time.

use crate::analysis::selftest::{level, tables, FastServer};
use crate::cli::SelftestArgs;
use crate::error::BenchError;
use crate::{output, EXIT_OK};

pub async fn run(args: SelftestArgs) -> Result<u8, BenchError> {
    let tables = tables(&args)?;
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    crate::out!("bench selftest: server and client in one process on {cpus} CPU(s)");
    for (pace, tokens, title) in tables {
        let server = FastServer::start(tokens, pace)?;
        crate::out!("{}", output::selftest::header(&title, tokens));
        for &streams in &args.streams {
            let l = level(&server, streams, tokens, args.rounds, pace).await?;
            crate::out!("{}", output::selftest::row(&l));
        }
    }
    crate::out!("{}", output::selftest::FOOTER);
    Ok(EXIT_OK)
}
