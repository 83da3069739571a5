//! Conversation sessions (`[workload] type = "conversation"`): session `s`'s turns, derived
//! from the seed, and the request each turn sends once the earlier replies are known.
//!
//! Session `s` draws from its own ChaCha8 stream, so it is the same whatever shard or order
//! runs it: its turn count, each turn's new user message (synthetic words, or the recorded
//! human turns of a ShareGPT conversation), each turn's `max_tokens` and the think time before
//! it. What it cannot know in advance is the assistant's replies: turn `t`'s request carries
//! the whole history — the system prompt, every earlier user message *and the reply actually
//! received to it* — then the new user message, as a chat client does, so a prefix cache sees
//! the same prefix growth a real conversation gives it.
//!
//! A reply that called tools (a scenario with `tools` in `[request.extra]`) is answered as an
//! agent answers it: the assistant message carries the calls (`tool_calls`, with their ids),
//! and the next turn's words go back as each call's result (a `tool` message naming the call's
//! id) instead of a new user message — so a session alternates user turns, calls and results
//! the way a tool-using client's traffic does.
//!
//! Turn `t` (0-based) of session `s` is request index `s × 1,000 + t` (turns are capped at 999),
//! so indices stay unique and deterministic across shards without counting earlier sessions.
//! A trace's sessions (rows sharing a `session_id`) are sessions too, but each turn is its
//! trace row's request as it stands ([`Turn::fixed`]; index = row), sent `delay` after the
//! previous reply.

use super::request::{Prompt, RequestSpec};
use crate::model::dataset::Dataset;
use crate::model::scenario::{LengthDist, Workload};
use crate::model::text::{stream_rng, words};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Request index stride between sessions: turn `t` of session `s` is `s * TURN_STRIDE + t`.
const TURN_STRIDE: u64 = 1000;

/// Mixed into the seed for session streams, so session `s` never draws request `s`'s words.
const SESSION_KEY: u64 = 0x7365_7373_696f_6e73;
/// The stream of the run's shared system prompt.
const SYSTEM_STREAM: u64 = u64::MAX - (1 << 33);

/// One turn, before the history is known.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The new user message.
    pub user: String,
    /// Its words (≈ tokens) for a synthetic session.
    pub user_words: Option<u32>,
    pub max_tokens: u32,
    /// Pause after the previous turn's reply before this turn is sent (zero for the first).
    pub think: Duration,
    /// A trace session's turn: this request as it stands (its prompt already holds the
    /// history), rather than one built from the replies.
    pub fixed: Option<Box<RequestSpec>>,
}

impl Turn {
    /// A turn sent as `spec` is, `think` after the previous reply.
    pub fn fixed(spec: RequestSpec, think: Duration) -> Turn {
        Turn {
            user: String::new(),
            user_words: None,
            max_tokens: spec.max_tokens,
            think,
            fixed: Some(Box::new(spec)),
        }
    }
}

/// What a turn's reply gives the next turn: its answer text and the tool calls it made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
}

/// One tool call of a reply, as its streamed pieces built it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    /// The server's id for the call; empty when it sent none.
    pub id: String,
    pub name: String,
    /// The arguments' JSON text.
    pub arguments: String,
}

impl Reply {
    /// The assistant message this reply is in the history of turn `t`'s session.
    fn message(&self, t: usize) -> serde_json::Value {
        if self.tool_calls.is_empty() {
            return json!({"role": "assistant", "content": self.text});
        }
        let calls: Vec<_> = self
            .tool_calls
            .iter()
            .enumerate()
            .map(|(k, c)| {
                json!({"id": c.call_id(t, k), "type": "function",
                       "function": {"name": c.name, "arguments": c.arguments}})
            })
            .collect();
        let content = (!self.text.is_empty()).then_some(self.text.as_str());
        json!({"role": "assistant", "content": content, "tool_calls": calls})
    }
}

impl ToolCall {
    /// The server's id, else one made from the turn and the call's place in it.
    fn call_id(&self, t: usize, k: usize) -> String {
        match self.id.is_empty() {
            true => format!("call_{t}_{k}"),
            false => self.id.clone(),
        }
    }
}

/// One session of the plan.
#[derive(Debug, Clone)]
pub struct SessionSpec {
    /// Session number (0-based); its turns are request indices `index × 1,000 + t`.
    pub index: u64,
    /// A warmup session: every turn is excluded from the metrics.
    pub warmup: bool,
    /// The system prompt every session shares (salted), if any.
    pub system: Option<Arc<String>>,
    pub turns: Vec<Turn>,
    /// ShareGPT: the line the conversation starts on.
    pub line: Option<usize>,
}

impl SessionSpec {
    /// Turn `t`'s request, given the replies received to turns `0..t` (`replies.len() == t`).
    pub fn request(&self, t: usize, replies: &[Reply]) -> RequestSpec {
        if let Some(spec) = &self.turns[t].fixed {
            return RequestSpec {
                session: Some((self.index, t as u32 + 1)),
                keep_reply: false,
                ..(**spec).clone()
            };
        }
        let mut messages = Vec::with_capacity(2 * t + 2);
        if let Some(s) = &self.system {
            messages.push(json!({"role": "system", "content": s.as_str()}));
        }
        for (i, turn) in self.turns.iter().enumerate().take(t + 1) {
            // Turn i's words: the results of the calls turn i − 1 made, else a user message.
            match i.checked_sub(1).map(|p| (p, &replies[p].tool_calls)) {
                Some((p, calls)) if !calls.is_empty() => {
                    for (k, c) in calls.iter().enumerate() {
                        messages.push(json!({"role": "tool", "tool_call_id": c.call_id(p, k),
                                             "content": turn.user}));
                    }
                }
                _ => messages.push(json!({"role": "user", "content": turn.user})),
            }
            if i < t {
                messages.push(replies[i].message(i));
            }
        }
        let turn = &self.turns[t];
        // Only the first turn's length is known before the run: later ones hold replies.
        let target = (t == 0).then(|| {
            turn.user_words.map(|u| {
                u + self
                    .system
                    .as_ref()
                    .map_or(0, |s| s.split(' ').count() as u32)
            })
        });
        RequestSpec {
            index: self.index * TURN_STRIDE + t as u64,
            warmup: self.warmup,
            prompt: Prompt::Messages(serde_json::Value::Array(messages)),
            input_tokens_target: target.flatten(),
            max_tokens: turn.max_tokens,
            class: String::new(),
            session: Some((self.index, t as u32 + 1)),
            keep_reply: t + 1 < self.turns.len(),
        }
    }
}

/// Builds sessions of a conversation workload.
#[derive(Debug, Clone)]
pub struct Sessions {
    seed: u64,
    turns: LengthDist,
    user_tokens: LengthDist,
    output_tokens: LengthDist,
    think_time_ms: Option<LengthDist>,
    system: Option<Arc<String>>,
    dataset: Option<Arc<Dataset>>,
    /// Leads the first user message when there is no system prompt.
    salt: Option<Arc<String>>,
}

impl Sessions {
    /// The sessions of `w` (`None` for another workload type).
    pub fn new(w: &Workload, seed: u64, dataset: Option<Arc<Dataset>>) -> Option<Sessions> {
        let Workload::Conversation {
            turns,
            user_tokens,
            output_tokens,
            think_time_ms,
            system_tokens,
            ..
        } = w
        else {
            return None;
        };
        let system = (*system_tokens > 0).then(|| {
            let mut rng = stream_rng(seed ^ SESSION_KEY, SYSTEM_STREAM);
            Arc::new(words(&mut rng, *system_tokens))
        });
        Some(Sessions {
            seed,
            turns: turns.clone(),
            user_tokens: user_tokens.clone(),
            output_tokens: output_tokens.clone(),
            think_time_ms: think_time_ms.clone(),
            system,
            dataset,
            salt: None,
        })
    }

    /// Leads every session with the run's salt words (the system prompt's, else the first
    /// user message's), so no run is served from an earlier run's prompt cache.
    pub fn with_salt(mut self, salt: Arc<String>) -> Sessions {
        match &self.system {
            Some(s) => self.system = Some(Arc::new(format!("{salt} {s}"))),
            None => self.salt = Some(salt),
        }
        self
    }

    /// How many turns session `s` has (cheap: the first draw of its stream).
    pub fn turn_count(&self, s: u64) -> u32 {
        self.first_draw(s).1
    }

    /// Session `s`'s stream after its first draw, and its number of turns: the draw, capped by
    /// a ShareGPT conversation's own turns.
    fn first_draw(&self, s: u64) -> (rand_chacha::ChaCha8Rng, u32) {
        let mut rng = stream_rng(self.seed ^ SESSION_KEY, s);
        let k = self.turns.sample(&mut rng).max(1);
        let k = match self.conversation(s) {
            Some((turns, _)) => k.min(turns.len() as u32),
            None => k,
        };
        (rng, k)
    }

    /// The ShareGPT conversation session `s` replays (they are taken in order, wrapping).
    fn conversation(&self, s: u64) -> Option<(&[(String, u32)], usize)> {
        let d = self.dataset.as_ref()?;
        let e = &d.entries[(s % d.entries.len() as u64) as usize];
        Some((&e.turns, e.line))
    }

    /// Session `s`.
    pub fn session(&self, s: u64, warmup: bool) -> SessionSpec {
        let (mut rng, k) = self.first_draw(s);
        let recorded = self.conversation(s);
        let mut turns = Vec::with_capacity(k as usize);
        for t in 0..k as usize {
            let think = match (&self.think_time_ms, t) {
                (Some(d), 1..) => Duration::from_millis(d.sample(&mut rng) as u64),
                _ => Duration::ZERO,
            };
            let (user, user_words, max_tokens) = match recorded {
                Some((rec, _)) => (rec[t].0.clone(), None, rec[t].1),
                None => {
                    let n = self.user_tokens.sample(&mut rng);
                    let out = self.output_tokens.sample(&mut rng);
                    (words(&mut rng, n), Some(n), out)
                }
            };
            turns.push(Turn {
                user,
                user_words,
                max_tokens,
                think,
                fixed: None,
            });
        }
        if let (Some(salt), Some(first)) = (&self.salt, turns.first_mut()) {
            first.user = format!("{salt} {}", first.user);
            first.user_words = first.user_words.map(|w| w + salt.split(' ').count() as u32);
        }
        SessionSpec {
            index: s,
            warmup,
            system: self.system.clone(),
            turns,
            line: recorded.map(|(_, line)| line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn sessions(workload: &str) -> Sessions {
        let text = format!(
            "name = \"t\"\nseed = 5\n[workload]\ntype = \"conversation\"\n{workload}\n[load]\nconcurrency = 1\nsessions = 4\n"
        );
        let s = crate::config::scenario::parse(&text, Path::new("t.toml")).unwrap();
        Sessions::new(&s.workload, s.seed, s.dataset.clone()).unwrap()
    }

    fn messages(r: &RequestSpec) -> Vec<(String, String)> {
        let Prompt::Messages(serde_json::Value::Array(m)) = &r.prompt else {
            panic!("{:?}", r.prompt)
        };
        m.iter()
            .map(|m| {
                (
                    m["role"].as_str().unwrap().to_string(),
                    m["content"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn each_turn_carries_the_history_with_the_replies_received() {
        let g = sessions(
            "turns = 3\nuser_tokens = 5\noutput_tokens = 7\nsystem_tokens = 4\nthink_time_ms = 250",
        );
        let s = g.session(2, false);
        assert_eq!((s.turns.len(), g.turn_count(2)), (3, 3));
        let reply = |t: &str| Reply {
            text: t.to_string(),
            ..Reply::default()
        };
        let replies = vec![reply("first reply"), reply("second")];
        let r0 = s.request(0, &replies[..0]);
        let r2 = s.request(2, &replies);
        assert_eq!((r0.index, r2.index), (2000, 2002));
        assert_eq!((r0.session, r2.session), (Some((2, 1)), Some((2, 3))));
        assert!(
            r0.keep_reply && !r2.keep_reply,
            "the last turn's reply is not needed"
        );
        assert_eq!(r0.input_tokens_target, Some(9));
        assert_eq!(r2.input_tokens_target, None);
        let m = messages(&r2);
        let roles: Vec<&str> = m.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(
            roles,
            ["system", "user", "assistant", "user", "assistant", "user"]
        );
        assert_eq!(
            (m[2].1.as_str(), m[4].1.as_str()),
            ("first reply", "second")
        );
        // Turn 2's prompt starts with turn 0's: the history is a prefix.
        assert_eq!(messages(&r0)[..2], m[..2]);
        assert_eq!(s.turns[0].think, Duration::ZERO);
        assert_eq!(s.turns[1].think, Duration::from_millis(250));
        // Deterministic, and sessions differ.
        assert_eq!(g.session(2, false).turns, s.turns);
        assert_ne!(g.session(3, false).turns[0].user, s.turns[0].user);
    }

    #[test]
    fn a_reply_that_called_tools_is_answered_with_their_results() {
        let g = sessions("turns = 3\nuser_tokens = 4\noutput_tokens = 5");
        let s = g.session(0, false);
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{\"q\": \"x\"}".into(),
        };
        let replies = vec![
            Reply {
                text: String::new(),
                tool_calls: vec![call("c-1", "search"), call("", "fetch")],
            },
            Reply {
                text: "the answer".into(),
                tool_calls: vec![],
            },
        ];
        let Prompt::Messages(serde_json::Value::Array(m)) = s.request(2, &replies).prompt else {
            panic!()
        };
        let roles: Vec<&str> = m.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "assistant", "user"]
        );
        assert_eq!(m[1]["content"], serde_json::Value::Null);
        assert_eq!(m[1]["tool_calls"][0]["id"], "c-1");
        assert_eq!(m[1]["tool_calls"][1]["function"]["name"], "fetch");
        // A call without the server's id gets one of its own, the same in the result.
        assert_eq!(m[1]["tool_calls"][1]["id"], "call_0_1");
        assert_eq!(
            (m[2]["tool_call_id"].as_str(), m[3]["tool_call_id"].as_str()),
            (Some("c-1"), Some("call_0_1"))
        );
        assert_eq!(m[2]["content"].as_str(), Some(s.turns[1].user.as_str()));
        assert_eq!(m[5]["content"].as_str(), Some(s.turns[2].user.as_str()));
    }

    #[test]
    fn the_salt_leads_the_system_prompt_or_else_the_first_message() {
        let salt = Arc::new("alpha beta".to_string());
        let g = sessions("turns = 2\nuser_tokens = 3\noutput_tokens = 2").with_salt(salt.clone());
        let s = g.session(0, false);
        assert!(s.turns[0].user.starts_with("alpha beta "));
        assert_eq!(s.turns[0].user_words, Some(5));
        assert!(!s.turns[1].user.starts_with("alpha beta"));
        let g = sessions("turns = 2\nuser_tokens = 3\noutput_tokens = 2\nsystem_tokens = 2")
            .with_salt(salt);
        let s = g.session(0, false);
        assert!(s.system.as_ref().unwrap().starts_with("alpha beta "));
        assert!(!s.turns[0].user.starts_with("alpha beta"));
    }
}
