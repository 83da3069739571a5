//! `bench metrics URL`: which of the server metrics bench maps an engine serves.

use crate::error::BenchError;
use crate::metrics::server::{coverage, default_url, scrape};
use crate::{output, EXIT_OK, EXIT_REGRESSION};

pub async fn run(url: &str) -> Result<u8, BenchError> {
    let parsed = url::Url::parse(url)
        .map_err(|e| BenchError::usage(format!("`{url}` is not a URL ({e})")))?;
    let target = if parsed.path().trim_end_matches('/').ends_with("/metrics") {
        url.to_string()
    } else {
        default_url(&parsed)
    };
    let http = crate::engine::client::http_client()?;
    let s = scrape(&http, &target)
        .await
        .map_err(|e| BenchError::Runtime(format!("cannot scrape {target}: {e}")))?;
    let c = coverage(&s)
        .or_else(|| crate::metrics::gpu::coverage(&s))
        .ok_or_else(|| {
            BenchError::Runtime(format!(
                "{target} serves no vllm:, sglang: or llamacpp: family and no dcgm-exporter field: not an engine or exporter bench knows"
            ))
        })?;
    crate::out_text!("{}", output::server::coverage(&c, &target));
    Ok(if c.missing().is_empty() {
        EXIT_OK
    } else {
        EXIT_REGRESSION
    })
}
