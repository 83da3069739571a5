//! The OpenAI-compatible wire format: one set of types for the client (which reads stream
//! chunks, model lists and usage), the simulator, `bench selftest`'s server and the test
//! servers (which write them).
//!
//! Chunks borrow their strings (`Cow`), so the client parses each `data:` payload on the hot
//! path without allocating for the text it only measures; fields it does not need
//! (`logprobs`, tool calls) are skipped by serde without being built. Servers write the
//! shapes vLLM writes: a chat stream opens with a role-only delta, `finish_reason` is an
//! explicit null until the end, and a usage chunk with empty `choices` precedes `[DONE]`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::borrow::Cow;

mod header;

pub use header::StreamHeader;

/// The line that ends a stream.
pub const DONE: &str = "data: [DONE]\n\n";

/// One server-sent event carrying `v` as its data.
pub fn sse<T: Serialize>(v: &T) -> String {
    format!(
        "data: {}\n\n",
        serde_json::to_string(v).unwrap_or_else(|_| "null".into())
    )
}

/// Token counts (`usage`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// `completion_tokens_details` (OpenAI, vLLM with a reasoning parser): how many of the
    /// completion tokens were reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionDetails>,
    /// `prompt_tokens_details` (OpenAI, vLLM, llama.cpp): how many of the prompt tokens the
    /// server's prefix cache served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptDetails>,
}

/// `usage.prompt_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// The prompt tokens its images cost, where the server says (the simulator does).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_tokens: Option<u64>,
}

/// llama.cpp's `timings`, on the last chunk of a stream (and on a whole reply): the server's
/// own clock for one request, in ms. `prompt_ms` times the prompt tokens it computed
/// (`prompt_n`; `cache_n` more came from its cache), from the slot's start to the first token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LlamaTimings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_n: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_ms: Option<f64>,
}

/// vLLM's per-request `metrics` (`--enable-per-request-metrics`), on a stream's usage chunk:
/// `queue_time_ms` waiting to be scheduled, `time_to_first_token_ms` scheduled → first token,
/// `generation_time_ms` first → last token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplyMetrics {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_time_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_to_first_token_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_time_ms: Option<f64>,
}

/// `usage.completion_tokens_details`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionDetails {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

/// A usage count above this is a server bug, not a number: no model has a context within
/// orders of magnitude of it. The client drops such a count, counts the request as
/// `usage_rejected` and falls back to the chunk count (so sums cannot wrap or explode).
pub const USAGE_TOKENS_MAX: u64 = 100_000_000;

impl Usage {
    /// The counts a client may use: each absurd count becomes `None`; `true` when any was.
    pub fn vetted(self) -> (Usage, bool) {
        let ok = |v: Option<u64>| v.filter(|n| *n <= USAGE_TOKENS_MAX);
        let completion = ok(self.completion_tokens);
        let vetted = Usage {
            prompt_tokens: ok(self.prompt_tokens),
            completion_tokens: completion,
            total_tokens: self.total_tokens.and_then(|t| ok(Some(t))),
            // More reasoning tokens than completion tokens is as absurd as an absurd count.
            completion_tokens_details: self.completion_tokens_details.map(|d| CompletionDetails {
                reasoning_tokens: d
                    .reasoning_tokens
                    .filter(|r| completion.is_some_and(|c| *r <= c)),
            }),
            // More cached tokens than prompt tokens is as absurd.
            prompt_tokens_details: self.prompt_tokens_details.map(|d| PromptDetails {
                cached_tokens: d
                    .cached_tokens
                    .filter(|c| ok(self.prompt_tokens).is_some_and(|p| *c <= p)),
                image_tokens: d
                    .image_tokens
                    .filter(|c| ok(self.prompt_tokens).is_some_and(|p| *c <= p)),
            }),
        };
        let rejected = vetted.prompt_tokens != self.prompt_tokens
            || vetted.completion_tokens != self.completion_tokens;
        (vetted, rejected)
    }

    pub fn new(prompt: u64, completion: u64) -> Usage {
        Usage {
            prompt_tokens: Some(prompt),
            completion_tokens: Some(completion),
            total_tokens: Some(prompt.saturating_add(completion)),
            completion_tokens_details: None,
            prompt_tokens_details: None,
        }
    }

    /// The prompt tokens the server's cache served, if it said.
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.cached_tokens)
    }

    /// The prompt tokens the images cost, if the server said.
    pub fn image_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.and_then(|d| d.image_tokens)
    }

    /// The reasoning tokens the server counted, if it said.
    pub fn reasoning_tokens(&self) -> Option<u64> {
        self.completion_tokens_details
            .and_then(|d| d.reasoning_tokens)
    }
}

/// One `data:` payload of a streamed chat or completions response (or an error object in
/// its place: `{"error": …}`, or vLLM's `{"object": "error", "message": …}`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Chunk<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub object: Option<Cow<'a, str>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<i64>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    pub choices: Vec<Choice<'a>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// llama.cpp's per-request clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<LlamaTimings>,
    /// vLLM's per-request clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<ReplyMetrics>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Value>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Choice<'a> {
    #[serde(default)]
    pub index: u32,
    /// Chat: the increment.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<Delta<'a>>,
    /// Completions: the increment.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub text: Option<Cow<'a, str>>,
    /// Written as an explicit null, never read.
    #[serde(skip_deserializing)]
    pub logprobs: Option<Value>,
    /// Written as an explicit null until the last content chunk.
    #[serde(borrow, default)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Delta<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Cow<'a, str>>,
    /// DeepSeek / vLLM reasoning parsers.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<Cow<'a, str>>,
    /// OpenAI's newer name.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Cow<'a, str>>,
    /// A tool call as it is generated: its name, then its arguments' JSON text in pieces.
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta<'a>>>,
}

/// One piece of a streamed tool call (`delta.tool_calls[i]`).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ToolCallDelta<'a> {
    #[serde(default)]
    pub index: u32,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub id: Option<Cow<'a, str>>,
    #[serde(
        borrow,
        default,
        rename = "type",
        skip_serializing_if = "Option::is_none"
    )]
    pub kind: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta<'a>>,
}

/// A tool call's function name and a piece of its arguments.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FunctionDelta<'a> {
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub name: Option<Cow<'a, str>>,
    #[serde(borrow, default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Cow<'a, str>>,
}

impl Chunk<'_> {
    /// Bytes of generated text (content + reasoning, or completions text) in the first choice.
    pub fn text_bytes(&self) -> usize {
        let (answer, reasoning) = self.text_split();
        answer + reasoning
    }

    /// Bytes of answer text (chat `content`, completions `text`) and of reasoning text
    /// (`reasoning_content`, `reasoning`) in the first choice.
    pub fn text_split(&self) -> (usize, usize) {
        let Some(c) = self.choices.first() else {
            return (0, 0);
        };
        let len = |t: &Option<Cow<str>>| t.as_ref().map_or(0, |t| t.len());
        let (content, reasoning) = c.delta.as_ref().map_or((0, 0), |d| {
            (
                len(&d.content),
                len(&d.reasoning_content) + len(&d.reasoning),
            )
        });
        (len(&c.text) + content, reasoning)
    }

    /// Bytes of tool-call text (function names and arguments) in the first choice.
    pub fn tool_bytes(&self) -> usize {
        let calls = self
            .choices
            .first()
            .and_then(|c| c.delta.as_ref())
            .and_then(|d| d.tool_calls.as_ref());
        calls.map_or(0, |calls| {
            calls
                .iter()
                .filter_map(|t| t.function.as_ref())
                .map(|f| {
                    f.name.as_ref().map_or(0, |n| n.len())
                        + f.arguments.as_ref().map_or(0, |a| a.len())
                })
                .sum()
        })
    }
}

/// An error object in a stream or a response body: `{"error": {"message": …, …}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorDetail {
    pub message: String,
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub param: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

impl ErrorBody {
    /// OpenAI's shape for an HTTP status: `invalid_request_error` for 4xx, else `server_error`.
    pub fn new(message: impl Into<String>, status: u16) -> ErrorBody {
        let kind = if (400..500).contains(&status) {
            "invalid_request_error"
        } else {
            "server_error"
        };
        ErrorBody {
            error: ErrorDetail {
                message: message.into(),
                kind: Some(kind.into()),
                param: None,
                code: Some(status),
            },
        }
    }
}

/// `GET /v1/models`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub data: Vec<ModelCard>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ModelCard {
    pub id: String,
    #[serde(default)]
    pub object: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// vLLM's extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
}

impl ModelList {
    pub fn one(card: ModelCard) -> ModelList {
        ModelList {
            object: "list".into(),
            data: vec![card],
        }
    }
}

/// The request fields `bench` sends and servers read. `messages` and `prompt` stay JSON
/// values (a server may take content parts or a one-element prompt list); fields a scenario
/// adds with `[request.extra]` are merged into the body on top of these.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Request {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// vLLM's extension: generate exactly `max_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignore_eos: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
    /// vLLM's and SGLang's extension: usage (cumulative) on every chunk, so a client knows
    /// how many tokens each chunk carried.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continuous_usage_stats: bool,
}

impl Request {
    /// `max_tokens` (or `max_completion_tokens`): `None` when absent or null, `Err` with the
    /// value when it is not an integer in 1..=u32::MAX.
    pub fn output_limit(&self) -> Result<Option<u32>, String> {
        match self
            .max_tokens
            .as_ref()
            .or(self.max_completion_tokens.as_ref())
        {
            None | Some(Value::Null) => Ok(None),
            Some(m) => match m.as_u64() {
                Some(n) if n >= 1 && n <= u32::MAX as u64 => Ok(Some(n as u32)),
                _ => Err(format!("`max_tokens` must be a positive integer (got {m})")),
            },
        }
    }

    pub fn include_usage(&self) -> bool {
        self.stream_options.is_some_and(|o| o.include_usage)
    }

    /// Usage asked for on every chunk (`stream_options.continuous_usage_stats`).
    pub fn continuous_usage(&self) -> bool {
        self.stream_options
            .is_some_and(|o| o.include_usage && o.continuous_usage_stats)
    }
}

/// A non-streamed response (`stream: false`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub object: String,
    #[serde(default)]
    pub created: i64,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub choices: Vec<CompletionChoice>,
    #[serde(default)]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CompletionChoice {
    #[serde(default)]
    pub index: u32,
    /// Chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// Completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_chunks_read_back_as_the_client_sees_them() {
        let h = StreamHeader {
            chat: true,
            id: Some("chatcmpl-1".into()),
            created: Some(7),
            model: Some("m".into()),
        };
        let role = sse(&h.role());
        assert!(
            role.contains(r#""delta":{"role":"assistant","content":""}"#),
            "{role}"
        );
        assert!(
            role.contains(r#""logprobs":null,"finish_reason":null"#),
            "{role}"
        );
        let text = serde_json::to_string(&h.text(" hi")).unwrap();
        let back: Chunk = serde_json::from_str(&text).unwrap();
        assert_eq!(back.text_bytes(), 3);
        let role_back: Chunk = serde_json::from_str(&role[6..]).unwrap();
        assert_eq!(role_back.text_bytes(), 0);
        let fin_text = serde_json::to_string(&h.finish("length")).unwrap();
        let fin: Chunk = serde_json::from_str(&fin_text).unwrap();
        assert_eq!(fin.choices[0].finish_reason.as_deref(), Some("length"));
        let u = serde_json::to_string(&StreamHeader::bare(false).usage(Usage::new(3, 4))).unwrap();
        assert_eq!(
            u,
            r#"{"object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#
        );
        let c = serde_json::to_string(&StreamHeader::bare(false).text("x")).unwrap();
        assert!(c.contains(r#""text":"x""#), "{c}");
    }

    #[test]
    fn requests_read_their_output_limit() {
        let r: Request = serde_json::from_str(r#"{"max_tokens": 5, "stream": true}"#).unwrap();
        assert_eq!(r.output_limit(), Ok(Some(5)));
        let r: Request = serde_json::from_str(r#"{"max_completion_tokens": 0}"#).unwrap();
        assert!(r.output_limit().unwrap_err().contains("positive integer"));
        let r: Request = serde_json::from_str(r#"{"max_tokens": null}"#).unwrap();
        assert_eq!(r.output_limit(), Ok(None));
    }
}
