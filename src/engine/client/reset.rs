//! Making the server ready before a run (`--reset`): a known reset endpoint (vLLM's
//! `/reset_prefix_cache`, SGLang's `/flush_cache`, llama.cpp's slot erase) or a shell command,
//! so that the repeated runs of a caching change — a baseline's repetitions, an interleaved
//! compare's arms — each start from the same server state instead of inheriting the last
//! run's cache. A reset that fails ends the run with an error: runs that were meant to start
//! alike and did not would be compared as if they had.

use super::{error_chain, http_client, Target};
use crate::config::run::Reset;
use crate::error::BenchError;
use crate::model::result::ResetDone;
use std::time::{Duration, Instant};

/// How long a reset may take.
const TIMEOUT: Duration = Duration::from_secs(300);

/// Runs `how` against `target`'s server; what was done and how long it took.
pub async fn reset(target: &Target, how: &Reset) -> Result<ResetDone, BenchError> {
    let t0 = Instant::now();
    let fail = |m: String| BenchError::Runtime(format!("--reset {}: {m}", how.describe()));
    match how {
        Reset::Vllm => post(target, "reset_prefix_cache").await.map_err(fail)?,
        Reset::Sglang => post(target, "flush_cache").await.map_err(fail)?,
        Reset::LlamaCpp => {
            for id in slots(target).await.map_err(fail)? {
                post(target, &format!("slots/{id}?action=erase"))
                    .await
                    .map_err(fail)?;
            }
        }
        Reset::Command(cmd) => command(target, cmd).await.map_err(fail)?,
    }
    Ok(ResetDone {
        how: how.describe(),
        ms: t0.elapsed().as_secs_f64() * 1000.0,
    })
}

/// The server's origin joined with `path` (`http://host:8000/v1` → `http://host:8000/path`).
fn at(target: &Target, path: &str) -> Result<url::Url, String> {
    let mut origin = target.url("");
    origin.set_path("/");
    origin.set_query(None);
    origin
        .join(path)
        .map_err(|e| format!("bad path {path}: {e}"))
}

async fn send(target: &Target, req: reqwest::RequestBuilder) -> Result<reqwest::Response, String> {
    let req = match target.api_key() {
        Some(k) => req.bearer_auth(k),
        None => req,
    };
    let resp = req
        .timeout(TIMEOUT)
        .send()
        .await
        .map_err(|e| target.redact(&error_chain(&e.without_url())))?;
    let status = resp.status();
    if status.is_success() {
        return Ok(resp);
    }
    let body = resp.text().await.unwrap_or_default();
    Err(format!(
        "the server answered HTTP {status}: {}",
        target.scrub(&body.chars().take(300).collect::<String>())
    ))
}

async fn post(target: &Target, path: &str) -> Result<(), String> {
    let http = http_client().map_err(|e| e.to_string())?;
    send(target, http.post(at(target, path)?)).await.map(drop)
}

/// The slot ids llama-server's `GET /slots` lists.
async fn slots(target: &Target) -> Result<Vec<u64>, String> {
    let http = http_client().map_err(|e| e.to_string())?;
    let list: Vec<serde_json::Value> = send(target, http.get(at(target, "slots")?))
        .await?
        .json()
        .await
        .map_err(|e| format!("GET /slots is not a list of slots: {e}"))?;
    list.iter()
        .map(|s| {
            s["id"]
                .as_u64()
                .ok_or("a slot without an id in GET /slots".to_string())
        })
        .collect()
}

/// `sh -c cmd`, with BENCH_ENDPOINT set to the endpoint; a non-zero exit is a failure.
async fn command(target: &Target, cmd: &str) -> Result<(), String> {
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("BENCH_ENDPOINT", target.public_endpoint())
        .stdin(std::process::Stdio::null())
        .output();
    let out = tokio::time::timeout(TIMEOUT, child)
        .await
        .map_err(|_| format!("did not finish within {} s", TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot run sh: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    let tail: String = said
        .trim()
        .chars()
        .rev()
        .take(300)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    Err(format!("exited with {}: {tail}", out.status))
}
