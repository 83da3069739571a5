//! Exact prompt lengths: synthetic prompts calibrated with the server's own tokenizer, or with
//! a local `tokenizer.json` ([`super::local_tokenizer`]).
//!
//! Server: `POST {origin}/tokenize` as vLLM serves it (`{"model", "prompt"}` or, for chat,
//! `{"model", "messages", "add_generation_prompt": true}` so the chat template is counted the
//! way usage counts it), and as llama-server serves it when the first shape is refused or
//! counts nothing: `{"content", "add_special": true}`, for chat after `POST /apply-template`
//! has rendered the messages with the model's template.
//!
//! For each planned request the word count is searched until the tokenizer counts exactly the
//! targeted tokens: the first step assumes a word is a token, later steps interpolate between
//! the closest trials below and above the target (a secant step until both exist), at most
//! [`MAX_TRIALS`] counts. When no word count hits the target exactly (a tokenizer with several
//! tokens per word) the closest is kept and the run's `prompt_length_error` shows what is
//! left. Requests beyond the first [`MAX_CALIBRATED`], and unbounded runs, use the median
//! correction.

use super::local_tokenizer::LocalTokenizer;
use super::Target;
use crate::model::scenario::Api;
use crate::plan::prompts::{Generator, Prompt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::time::Duration;

const MAX_CALIBRATED: usize = 20_000;
/// Tokenizer calls per calibrated prompt, at most.
const MAX_TRIALS: usize = 10;

/// The server's `/tokenize`.
pub struct ServerTokenizer {
    http: reqwest::Client,
    url: url::Url,
    model: String,
    api: Api,
    key: Option<String>,
}

impl ServerTokenizer {
    pub fn new(target: &Target) -> Result<ServerTokenizer, String> {
        let mut url = target.base.clone();
        url.set_path("/tokenize");
        let http = super::http_client().map_err(|e| e.to_string())?;
        Ok(ServerTokenizer {
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
        let mut req = self
            .http
            .post(url.clone())
            .timeout(Duration::from_secs(10))
            .json(&body);
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
        let chat = self.api.takes_messages();
        let first = match prompt {
            _ if chat => {
                json!({"model": self.model, "messages": prompt.messages(), "add_generation_prompt": true})
            }
            Prompt::Text(t) => json!({"model": self.model, "prompt": t}),
            Prompt::Messages(_) => return Err("a messages prompt on the completions API".into()),
        };
        if let Some(n) = self.post(first).await?.filter(|n| *n > 0) {
            return Ok(n);
        }
        // llama-server: render the chat template first, then count with special tokens.
        let content = if chat {
            let mut at = self.url.clone();
            at.set_path("/apply-template");
            self.post_to(&at, json!({ "messages": prompt.messages() }))
                .await?
                .and_then(|v| v.get("prompt").and_then(Value::as_str).map(str::to_string))
                .ok_or_else(|| format!("{at} did not render the chat template"))?
        } else {
            prompt.text().as_str().unwrap_or_default().to_string()
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

/// What counts a prompt's tokens during calibration.
pub enum Counter {
    Server(ServerTokenizer),
    Local(Box<LocalTokenizer>),
}

impl Counter {
    pub async fn count(&self, prompt: &Prompt) -> Result<u64, String> {
        match self {
            Counter::Server(t) => t.count(prompt).await,
            Counter::Local(t) => t.count(prompt),
        }
    }
}

/// The word correction that makes `count` hit `target`, or the closest one found.
pub async fn search<F, Fut>(target: u64, mut count: F) -> Result<i32, String>
where
    F: FnMut(i32) -> Fut,
    Fut: std::future::Future<Output = Result<u64, String>>,
{
    let target = target as i64;
    let mut best = (i64::MAX, 0i32);
    // Closest trials below and above the target: (delta, tokens).
    let mut below: Option<(i32, i64)> = None;
    let mut above: Option<(i32, i64)> = None;
    let mut last: Option<(i32, i64)> = None;
    let mut delta = 0i32;
    for _ in 0..MAX_TRIALS {
        let n = count(delta).await? as i64;
        let diff = target - n;
        if diff.abs() < best.0 {
            best = (diff.abs(), delta);
        }
        if diff == 0 {
            break;
        }
        if diff > 0 {
            below = Some(below.map_or((delta, n), |b| if delta > b.0 { (delta, n) } else { b }));
        } else {
            above = Some(above.map_or((delta, n), |a| if delta < a.0 { (delta, n) } else { a }));
        }
        let next = match (below, above) {
            (Some(b), Some(a)) => {
                if a.0 - b.0 <= 1 {
                    break; // adjacent word counts straddle the target: keep the closer
                }
                let step = ((target - b.1) as f64 * (a.0 - b.0) as f64 / (a.1 - b.1) as f64).round()
                    as i32;
                (b.0 + step).clamp(b.0 + 1, a.0 - 1)
            }
            _ => {
                // Tokens per word, from the last two trials when they moved; else one.
                let slope = match last {
                    Some((d0, n0)) if d0 != delta && n != n0 => {
                        (n - n0) as f64 / (delta - d0) as f64
                    }
                    _ => 1.0,
                };
                if slope <= 0.0 {
                    break; // fewer words no longer means fewer tokens (one word is the floor)
                }
                let step = (diff as f64 / slope).round() as i32;
                delta
                    + if step == 0 {
                        diff.signum() as i32
                    } else {
                        step
                    }
            }
        };
        last = Some((delta, n));
        if next == delta {
            break;
        }
        delta = next;
    }
    Ok(best.1)
}

/// Words for each trace block in `ids` that count as exactly `block_tokens` tokens where a
/// block stands in a prompt — after other text and a space: a block's count is
/// tokens(`ANCHOR` + " " + block) − tokens(`ANCHOR`), so the server's template and special
/// tokens cancel. At most [`MAX_CALIBRATED`] blocks; the rest keep `block_tokens` words.
pub async fn calibrate_blocks(
    counter: &Counter,
    generator: &Generator,
    ids: &[u64],
    block_tokens: u32,
) -> Result<HashMap<u64, u32>, String> {
    blocks_by(
        |p| async move { counter.count(&p).await },
        generator,
        ids,
        block_tokens,
    )
    .await
}

/// [`calibrate_blocks`] with any counting function.
async fn blocks_by<F, Fut>(
    count: F,
    generator: &Generator,
    ids: &[u64],
    block_tokens: u32,
) -> Result<HashMap<u64, u32>, String>
where
    F: Fn(Prompt) -> Fut,
    Fut: std::future::Future<Output = Result<u64, String>>,
{
    const ANCHOR: &str = "the";
    let base = count(Prompt::Text(ANCHOR.into())).await?;
    let mut words = HashMap::new();
    for &id in ids.iter().take(MAX_CALIBRATED) {
        let delta = search(block_tokens as u64, |d| {
            let text = format!("{ANCHOR} {}", generator.block_text(id, d));
            let n = count(Prompt::Text(text));
            async move { Ok(n.await?.saturating_sub(base)) }
        })
        .await?;
        words.insert(id, (block_tokens as i64 + delta as i64).max(1) as u32);
    }
    Ok(words)
}

/// Per-request word corrections for `indices`, and the median one for everything else.
pub async fn calibrate(
    counter: &Counter,
    generator: &Generator,
    indices: &[u64],
) -> Result<(HashMap<u64, i32>, i32), String> {
    let mut deltas = HashMap::new();
    for &i in indices.iter().take(MAX_CALIBRATED) {
        let Some(target) = generator.spec(i).input_tokens_target else {
            continue;
        };
        let delta = search(target as u64, |d| {
            let spec = generator.spec_with_delta(i, d);
            async move { counter.count(&spec.prompt).await }
        })
        .await?;
        deltas.insert(i, delta);
    }
    let mut all: Vec<i32> = deltas.values().copied().collect();
    all.sort();
    let median = all.get(all.len() / 2).copied().unwrap_or(0);
    Ok((deltas, median))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tokens(words)` for a tokenizer with `per_word` tokens a word plus `overhead`, with the
    /// generator's floor of one word; `base` words at delta 0.
    fn model(base: i32, per_word: i64, overhead: i64) -> impl Fn(i32) -> u64 {
        move |d| ((base + d).max(1) as i64 * per_word + overhead) as u64
    }

    fn run(target: u64, f: impl Fn(i32) -> u64) -> (i32, usize) {
        let calls = std::cell::Cell::new(0);
        let d = futures_util::FutureExt::now_or_never(search(target, |d| {
            calls.set(calls.get() + 1);
            std::future::ready(Ok(f(d)))
        }))
        .unwrap()
        .unwrap();
        (d, calls.get())
    }

    #[test]
    fn words_near_tokens_converge_in_a_step_or_two() {
        let f = model(100, 1, 9);
        let (d, calls) = run(100, &f);
        assert_eq!(f(d), 100);
        assert!(calls <= 2, "{calls}");
    }

    #[test]
    fn several_tokens_per_word_still_converge_or_land_closest() {
        // 3 tokens a word: 100 words → 300 tokens; only multiples of 3 (+ 2) are reachable.
        let f = model(100, 3, 2);
        let (d, _) = run(149, &f);
        assert_eq!(f(d), 149);
        let (d, calls) = run(150, &f);
        assert!((f(d) as i64 - 150).abs() <= 1, "{}", f(d));
        assert!(calls <= MAX_TRIALS);
    }

    /// A tokenizer that splits words longer than five letters in two, plus a 3-token template.
    fn split_long(p: Prompt) -> std::future::Ready<Result<u64, String>> {
        let Prompt::Text(t) = p else { unreachable!() };
        let n: u64 = t
            .split_whitespace()
            .map(|w| if w.len() > 5 { 2 } else { 1 })
            .sum();
        std::future::ready(Ok(n + 3))
    }

    #[test]
    fn trace_blocks_are_calibrated_to_exact_tokens_and_stay_shared_prefixes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("t.jsonl"),
            "{\"timestamp\": 0, \"input_length\": 70, \"output_length\": 2, \"hash_ids\": [5, 6, 7]}\n{\"timestamp\": 1, \"input_length\": 45, \"output_length\": 2, \"hash_ids\": [5, 8]}\n",
        )
        .unwrap();
        let s = crate::config::scenario::parse(
            "name = \"t\"\napi = \"completions\"\nseed = 4\n[workload]\ntype = \"trace\"\npath = \"t.jsonl\"\nblock_tokens = 30\nsalt = \"none\"\n[load]\n",
            &dir.path().join("t.toml"),
        )
        .unwrap();
        let g = Generator::new(&s);
        // Row 0 sends blocks 5 and 6 whole (60 of 70 tokens), row 1 block 5 (30 of 45).
        let ids = g.full_blocks(&[0, 1]);
        assert_eq!(ids, vec![5, 6]);
        let words = futures_util::FutureExt::now_or_never(blocks_by(split_long, &g, &ids, 30))
            .unwrap()
            .unwrap();
        let tokens = |t: &str| split_long(Prompt::Text(t.into())).into_inner().unwrap() - 3;
        for id in &ids {
            let block = g.block_text(*id, words[id] as i32 - 30);
            // Exact unless the word that would reach 30 is a two-token word (then ±1).
            let n = tokens(&block) as i64;
            let one_less = tokens(&g.block_text(*id, words[id] as i32 - 31)) as i64;
            assert!(
                n == 30 || ((n - 30).abs() <= 1 && one_less < 30 && n > 30),
                "block {id}: {} words, {n} tokens",
                words[id]
            );
            assert!(words[id] < 30, "long words take two tokens, so fewer words");
        }
        // Both requests open with block 5's calibrated text: the shared prefix is exact.
        let g = g.with_block_words(words.clone());
        let text = |i: u64| match g.spec(i).prompt {
            Prompt::Text(t) => t,
            _ => unreachable!(),
        };
        let b5 = g.block_text(5, words[&5] as i32 - 30);
        assert!(text(0).starts_with(&format!("{b5} ")) && text(1).starts_with(&format!("{b5} ")));
    }

    #[test]
    fn an_unreachable_target_keeps_the_floor() {
        // The overhead alone exceeds the target: one word is as close as it gets.
        let f = model(50, 1, 80);
        let (d, _) = run(40, &f);
        assert_eq!(f(d), 81);
    }
}
