//! The chunks a server sends, in the shapes vLLM sends them: what the simulator, `bench
//! selftest`'s server and the test servers write.

use super::{Choice, Chunk, Delta, FunctionDelta, ToolCallDelta, Usage};
use std::borrow::Cow;

/// What every chunk of one streamed response repeats: which API, its id, time and model.
/// Builds the chunks a server sends, in the shapes vLLM sends them.
#[derive(Debug, Clone, Default)]
pub struct StreamHeader {
    pub chat: bool,
    pub id: Option<String>,
    pub created: Option<i64>,
    pub model: Option<String>,
}

impl StreamHeader {
    /// No id, time or model: the leanest stream a client must still read.
    pub fn bare(chat: bool) -> StreamHeader {
        StreamHeader {
            chat,
            ..Default::default()
        }
    }

    fn chunk(&self, choices: Vec<Choice<'static>>) -> Chunk<'static> {
        Chunk {
            id: self.id.clone().map(Cow::Owned),
            object: Some(Cow::Borrowed(if self.chat {
                "chat.completion.chunk"
            } else {
                "text_completion"
            })),
            created: self.created,
            model: self.model.clone().map(Cow::Owned),
            choices,
            ..Default::default()
        }
    }

    fn choice(&self, text: Option<String>, finish: Option<&'static str>) -> Choice<'static> {
        let finish_reason = finish.map(Cow::Borrowed);
        if self.chat {
            Choice {
                delta: Some(Delta {
                    content: text.map(Cow::Owned),
                    ..Default::default()
                }),
                finish_reason,
                ..Default::default()
            }
        } else {
            Choice {
                text: Some(Cow::Owned(text.unwrap_or_default())),
                finish_reason,
                ..Default::default()
            }
        }
    }

    /// The role-only delta a chat stream opens with (no text: TTFT is not timed on it).
    pub fn role(&self) -> Chunk<'static> {
        self.chunk(vec![Choice {
            delta: Some(Delta {
                role: Some(Cow::Borrowed("assistant")),
                content: Some(Cow::Borrowed("")),
                ..Default::default()
            }),
            ..Default::default()
        }])
    }

    /// A chunk carrying generated text.
    pub fn text(&self, text: &str) -> Chunk<'static> {
        self.chunk(vec![self.choice(Some(text.to_string()), None)])
    }

    /// A chat chunk carrying reasoning text (`delta.reasoning_content`, as vLLM's reasoning
    /// parsers send it); a completions stream has no separate field, so there it is text.
    pub fn reasoning(&self, text: &str) -> Chunk<'static> {
        if !self.chat {
            return self.text(text);
        }
        self.chunk(vec![Choice {
            delta: Some(Delta {
                reasoning_content: Some(Cow::Owned(text.to_string())),
                ..Default::default()
            }),
            ..Default::default()
        }])
    }

    /// A chat chunk carrying a piece of a tool call's arguments (and, on the first, the call's
    /// id and function name), as vLLM's tool parsers stream them.
    pub fn tool_call(&self, name: Option<&str>, arguments: &str) -> Chunk<'static> {
        self.chunk(vec![Choice {
            delta: Some(Delta {
                tool_calls: Some(vec![ToolCallDelta {
                    index: 0,
                    id: name
                        .map(|_| Cow::Owned(format!("call-{}", self.id.as_deref().unwrap_or("0")))),
                    kind: name.map(|_| Cow::Borrowed("function")),
                    function: Some(FunctionDelta {
                        name: name.map(|n| Cow::Owned(n.to_string())),
                        arguments: Some(Cow::Owned(arguments.to_string())),
                    }),
                }]),
                ..Default::default()
            }),
            ..Default::default()
        }])
    }

    /// The last content chunk: no text, the finish reason.
    pub fn finish(&self, reason: &'static str) -> Chunk<'static> {
        self.chunk(vec![self.choice(None, Some(reason))])
    }

    /// The usage chunk (`stream_options.include_usage`): empty choices.
    pub fn usage(&self, usage: Usage) -> Chunk<'static> {
        Chunk {
            usage: Some(usage),
            ..self.chunk(Vec::new())
        }
    }
}
