//! Exact prompt lengths without the server's help: a local Hugging Face `tokenizer.json`
//! (`--tokenizer FILE`, read with the `tokenizers` crate).
//!
//! The file counts the prompt text; it does not know what the server wraps around it (a chat
//! template, a BOS token — or not). That overhead is measured, not guessed: one probe request
//! (`max_tokens = 1`, not streamed, fixed text unrelated to the workload) before the run, and
//! `usage.prompt_tokens − tokens of the probe text`. A prompt then counts as its text's tokens
//! plus that overhead, which is right as long as the template is a fixed wrapper around one
//! user message — the case for every synthetic prompt.

use super::Target;
use crate::model::scenario::Api;
use crate::model::wire::Completion;
use crate::plan::prompts::Prompt;
use serde_json::{json, Value};
use std::time::Duration;

/// Probe text: plain words, so it tokenizes without touching the template's boundaries.
const PROBE: &str = "Please count the tokens of this short probe sentence";

pub struct LocalTokenizer {
    tok: tokenizers::Tokenizer,
    /// Tokens the server adds around a prompt's text (template, BOS), from the probe.
    pub overhead: i64,
}

impl LocalTokenizer {
    /// Tokens of `text` alone, without special tokens.
    fn count_text(tok: &tokenizers::Tokenizer, text: &str) -> Result<u64, String> {
        tok.encode(text, false)
            .map(|e| e.len() as u64)
            .map_err(|e| format!("the local tokenizer cannot encode a prompt: {e}"))
    }

    /// Measures the server's overhead with one probe request.
    pub async fn new(
        tok: tokenizers::Tokenizer,
        target: &Target,
        extra: &serde_json::Map<String, Value>,
    ) -> Result<LocalTokenizer, String> {
        let text = Self::count_text(&tok, PROBE)? as i64;
        let server = probe(target, extra).await? as i64;
        Ok(LocalTokenizer {
            tok,
            overhead: server - text,
        })
    }

    /// Tokens the server would count for this prompt.
    pub fn count(&self, prompt: &Prompt) -> Result<u64, String> {
        match prompt {
            Prompt::Text(t) => {
                Ok((Self::count_text(&self.tok, t)? as i64 + self.overhead).max(0) as u64)
            }
            Prompt::Messages(_) => Err("a local tokenizer counts single-text prompts only".into()),
        }
    }
}

/// `usage.prompt_tokens` for the probe text, from one unstreamed request with `max_tokens = 1`.
async fn probe(target: &Target, extra: &serde_json::Map<String, Value>) -> Result<u64, String> {
    let (route, mut body) = match target.api {
        // The Responses API renders the same chat template: the chat route measures it.
        Api::Chat | Api::Responses => (
            "chat/completions",
            json!({"model": target.model, "messages": [{"role": "user", "content": PROBE}]}),
        ),
        Api::Embeddings => ("embeddings", json!({"model": target.model, "input": PROBE})),
        Api::Rerank => {
            return Err(
                "a local tokenizer cannot count a rerank prompt: the server's usage counts the query with every document".into(),
            )
        }
        Api::Completions => (
            "completions",
            json!({"model": target.model, "prompt": PROBE}),
        ),
    };
    if let Some(b) = body.as_object_mut() {
        // The scenario's extra fields may change the template (`chat_template_kwargs`).
        for (k, v) in extra {
            b.insert(k.clone(), v.clone());
        }
        if target.api.streams() {
            b.insert("max_tokens".into(), json!(1));
            b.insert("stream".into(), json!(false));
        }
    }
    let http = super::http_client().map_err(|e| e.to_string())?;
    let mut req = http
        .post(target.url(route))
        .timeout(Duration::from_secs(120))
        .json(&body);
    if let Some(k) = target.api_key() {
        req = req.bearer_auth(k);
    }
    let what = "the probe request that measures the server's prompt overhead";
    let r = req.send().await.map_err(|e| {
        format!(
            "{what} failed: {}",
            target.redact(&super::error_chain(&e.without_url()))
        )
    })?;
    if !r.status().is_success() {
        return Err(format!("{what} got HTTP {}", r.status()));
    }
    let c: Completion = r.json().await.map_err(|e| format!("{what}: {e}"))?;
    c.usage
        .and_then(|u| u.prompt_tokens)
        .ok_or_else(|| format!("{what}: the response has no usage.prompt_tokens"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One token per non-space character: far from words ≈ tokens.
    pub(crate) const CHARS: &str = r#"{"version":"1.0","truncation":null,"padding":null,"added_tokens":[],
      "normalizer":null,"post_processor":null,"decoder":null,
      "pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\S"},"behavior":"Isolated","invert":false},
      "model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}"#;

    #[test]
    fn counts_text_and_adds_the_measured_overhead() {
        let tok: tokenizers::Tokenizer = CHARS.parse().unwrap();
        let l = LocalTokenizer { tok, overhead: 7 };
        // Whitespace pieces are tokens too under `Isolated`; count what the file says.
        let n = l.count(&Prompt::Text("ab cd".into())).unwrap();
        let text_only = LocalTokenizer::count_text(&l.tok, "ab cd").unwrap();
        assert_eq!(n, text_only + 7);
        assert!(text_only >= 4, "{text_only}");
        assert!(l.count(&Prompt::Messages(json!([]))).is_err());
    }
}
