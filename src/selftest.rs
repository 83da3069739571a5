//! `bench selftest`: how much the harness itself costs. Placeholder replaced below.
use crate::cli::SelftestArgs;
use crate::error::BenchError;
pub async fn run(_args: SelftestArgs) -> Result<u8, BenchError> {
    Err(BenchError::Runtime("not yet".into()))
}
