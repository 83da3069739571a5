//! Exact prompt lengths: synthetic prompts calibrated with the server's own tokenizer.
//!
//! `POST {origin}/tokenize` as vLLM serves it (`{"model", "prompt"}` or, for chat, `{"model",
//! "messages", "add_generation_prompt": true}` so the chat template is counted the way usage
//! counts it), and as llama-server serves it when the first shape is refused or counts
//! nothing: `{"content", "add_special": true}`, for chat after `POST /apply-template` has
//! rendered the messages with the model's template. For each planned
//! request the word count is corrected until the server counts exactly the targeted tokens
//! (at most 6 trials; words are ≈ one token each, so it usually takes one or two). Requests
//! beyond the first [`MAX_CALIBRATED`], and unbounded runs, use the median correction.

use super::Target;
use crate::scenario::Api;
use crate::workload::{Generator, Prompt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

pub const MAX_CALIBRATED: usize = 20_000;

pub struct Tokenizer {
    http: reqwest::Client,
    url: url::Url,
    model: String,
    api: Api,
    key: Option<String>,
}

impl Tokenizer {
    pub fn new(target: &Target) -> Result<Tokenizer, String> {
        let mut url = target.base.clone();
        url.set_path("/tokenize");
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Tokenizer {
            http,
            url,
            model: target.model.clone(),
            api: target.api,
            key: target.api_key().map(str::to_string),
        })
    }

    async fn post(&self, body: Value) -> Result<Option<u64>, String> {
        Ok(self.post_to(&self.url, body).await?.and_then(|v| {
            v.get("count").and_then(Value::as_u64).or_else(|| {
                v.get("tokens")
                    .and_then(Value::as_array)
                    .map(|a| a.len() as u64)
            })
        }))
    }

    async fn post_to(&self, url: &url::Url, body: Value) -> Result<Option<Value>, String> {
        let mut req = self.http.post(url.clone()).json(&body);
        if let Some(k) = &self.key {
            req = req.bearer_auth(k);
        }
        let r = req.send().await.map_err(|e| e.to_string())?;
        if r.status().is_client_error() {
            return Ok(None);
        }
        if !r.status().is_success() {
            return Err(format!("HTTP {}", r.status()));
        }
        r.json().await.map(Some).map_err(|e| e.to_string())
    }

    /// Tokens the server counts for this prompt, as `usage.prompt_tokens` would.
    pub async fn count(&self, prompt: &Prompt) -> Result<u64, String> {
        let (first, text) = match (self.api, prompt) {
            (Api::Chat, Prompt::Text(t)) => (
                json!({"model": self.model, "messages": [{"role": "user", "content": t}], "add_generation_prompt": true}),
                t.clone(),
            ),
            (Api::Chat, Prompt::Messages(m)) => (
                json!({"model": self.model, "messages": m, "add_generation_prompt": true}),
                String::new(),
            ),
            (Api::Completions, Prompt::Text(t)) => {
                (json!({"model": self.model, "prompt": t}), t.clone())
            }
            (Api::Completions, Prompt::Messages(_)) => {
                return Err("a messages prompt on the completions API".into())
            }
        };
        if let Some(n) = self.post(first).await?.filter(|n| *n > 0) {
            return Ok(n);
        }
        // llama-server: render the chat template first, then count with special tokens.
        let content = match (self.api, prompt) {
            (Api::Completions, _) => text,
            (Api::Chat, p) => {
                let messages = match p {
                    Prompt::Text(t) => json!([{"role": "user", "content": t}]),
                    Prompt::Messages(m) => m.clone(),
                };
                let mut at = self.url.clone();
                at.set_path("/apply-template");
                self.post_to(&at, json!({ "messages": messages }))
                    .await?
                    .and_then(|v| v.get("prompt").and_then(Value::as_str).map(str::to_string))
                    .ok_or_else(|| format!("{at} did not render the chat template"))?
            }
        };
        self.post(json!({"content": content, "add_special": true}))
            .await?
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                format!(
                    "{} refused both the vLLM and the llama-server request shapes",
                    self.url
                )
            })
    }
}

/// Per-request word corrections for `indices`, and the median one for everything else.
pub async fn calibrate(
    tok: &Tokenizer,
    generator: &Generator,
    indices: &[u64],
) -> Result<(HashMap<u64, i32>, i32), String> {
    let mut deltas = HashMap::new();
    for &i in indices.iter().take(MAX_CALIBRATED) {
        let Some(target) = generator.spec(i).input_tokens_target else {
            continue;
        };
        let mut delta = 0i32;
        let mut best = (i64::MAX, 0i32);
        for _ in 0..6 {
            let spec = generator.spec_with_delta(i, delta);
            let n = tok.count(&spec.prompt).await? as i64;
            let diff = target as i64 - n;
            if diff.abs() < best.0 {
                best = (diff.abs(), delta);
            }
            if diff == 0 {
                break;
            }
            delta += diff as i32;
        }
        deltas.insert(i, best.1);
    }
    let mut all: Vec<i32> = deltas.values().copied().collect();
    all.sort();
    let median = all.get(all.len() / 2).copied().unwrap_or(0);
    Ok((deltas, median))
}
