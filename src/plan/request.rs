//! One request of the plan, as the runner and the client take it: its prompt, shaped for the
//! API in use, and what it asks for. Built by `prompts` (and, turn by turn, `conversation`).

/// The prompt of one request, shaped for the API in use.
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Messages(serde_json::Value),
}

impl Prompt {
    /// As a messages array (a text prompt: one user message), for the chat and Responses APIs.
    pub fn messages(&self) -> serde_json::Value {
        match self {
            Prompt::Text(t) => serde_json::json!([{ "role": "user", "content": t }]),
            Prompt::Messages(m) => m.clone(),
        }
    }

    /// As text, for the completions and pooling APIs. A messages prompt there is rejected at
    /// load time (a `messages` dataset needs the chat API); if one gets here its last
    /// message's text is sent rather than nothing.
    pub fn text(&self) -> serde_json::Value {
        match self {
            Prompt::Text(t) => serde_json::json!(t),
            Prompt::Messages(m) => m
                .as_array()
                .and_then(|a| a.last())
                .and_then(|l| l.get("content"))
                .cloned()
                .unwrap_or(serde_json::Value::Null),
        }
    }

    /// Image parts among its messages' content (`image_url` as the chat API takes them,
    /// `input_image` as the Responses API does).
    pub fn images(&self) -> u32 {
        let Prompt::Messages(serde_json::Value::Array(m)) = self else {
            return 0;
        };
        m.iter()
            .filter_map(|m| m.get("content")?.as_array())
            .flatten()
            .filter(|p| {
                matches!(
                    p.get("type").and_then(|t| t.as_str()),
                    Some("image_url" | "input_image")
                )
            })
            .count() as u32
    }
}

/// One request of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestSpec {
    pub index: u64,
    /// Excluded from metrics (set by the runner: the first `warmup` indices).
    pub warmup: bool,
    pub prompt: Prompt,
    /// Tokens the prompt was built to have (synthetic workloads; approximate).
    pub input_tokens_target: Option<u32>,
    pub max_tokens: u32,
    /// `long`/`short` in a mix, `prefix-N` for a shared-prefix group, else empty.
    pub class: String,
    /// Conversation turns: (session, 1-based turn).
    pub session: Option<(u64, u32)>,
    /// The reply's text is needed (a later turn of its session carries it).
    pub keep_reply: bool,
}
