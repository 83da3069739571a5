//! The requests of a plan: request `i`'s prompt, lengths and class, derived from the
//! scenario's seed.
//!
//! Request `i` is generated from its own ChaCha8 stream (`seed`, stream `i`), so it is the same
//! whatever order or shard sends it and whether or not the run is bounded by count or time.
//! Synthetic prompts are sequences of common English words ([`crate::model::text`]) that BPE
//! tokenizers encode as about one token each, so a prompt of N words is roughly N tokens plus
//! the chat template; the real counts come back in `usage.prompt_tokens` and are what the
//! results report (`--calibrate` / `--tokenizer` make them exact).

use super::conversation::{SessionSpec, Sessions, Turn};
use crate::model::dataset::{Dataset, DatasetPrompt};
use crate::model::scenario::{DatasetOrder, LengthDist, Scenario, Workload};
use crate::model::text::{stream_rng, words};
use crate::model::trace::Trace;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;

pub use super::request::{Prompt, RequestSpec};

/// Builds request `i` of a scenario on demand.
#[derive(Debug, Clone)]
pub struct Generator {
    workload: Workload,
    seed: u64,
    dataset: Option<Arc<Dataset>>,
    trace: Option<Arc<Trace>>,
    /// Shared prefixes, built once.
    prefixes: Arc<Vec<String>>,
    /// Words added to (or removed from) request i's generated text so that the server's
    /// tokenizer counts exactly the target (`engine::client::tokenize`); `default_delta`
    /// for requests not calibrated one by one.
    deltas: Arc<std::collections::HashMap<u64, i32>>,
    default_delta: i32,
    /// The run's salt words, leading every synthetic prompt (they count toward its length).
    salt: Option<Arc<String>>,
    /// A conversation workload's sessions.
    sessions: Option<Sessions>,
    /// Words of trace block `id` that the tokenizer counts as exactly `block_tokens` tokens
    /// (`--calibrate` / `--tokenizer`); `block_tokens` words for a block not in it.
    block_words: Arc<std::collections::HashMap<u64, u32>>,
}

/// Words in a run's salt: with the vocabulary's size, two runs share one with odds below
/// one in a billion.
const SALT_WORDS: u32 = 4;

/// Stream ids at the top of the range are reserved for prefixes and schedules.
const PREFIX_STREAM_BASE: u64 = u64::MAX - (1 << 32);

/// Mixed into the seed for a trace's blocks, so block `h` never equals request `h`'s words.
const TRACE_BLOCK_KEY: u64 = 0x7472_6163_6562_6c6b;

/// The text of trace block `id`: `words` words from the block's own stream, so every request
/// that names the block sends the same text.
fn trace_block(seed: u64, id: u64, words_n: u32) -> String {
    let mut rng = stream_rng(seed ^ TRACE_BLOCK_KEY, id);
    words(&mut rng, words_n)
}

impl Generator {
    pub fn new(s: &Scenario) -> Generator {
        let prefixes = match &s.workload {
            Workload::SharedPrefix {
                prefixes,
                prefix_tokens,
                ..
            } => (0..*prefixes as u64)
                .map(|g| {
                    let mut rng = stream_rng(s.seed, PREFIX_STREAM_BASE + g);
                    words(&mut rng, *prefix_tokens)
                })
                .collect(),
            _ => Vec::new(),
        };
        Generator {
            workload: s.workload.clone(),
            seed: s.seed,
            dataset: s.dataset.clone(),
            trace: s.trace.clone(),
            prefixes: Arc::new(prefixes),
            deltas: Arc::default(),
            default_delta: 0,
            salt: None,
            sessions: Sessions::new(&s.workload, s.seed, s.dataset.clone()),
            block_words: Arc::default(),
        }
    }

    /// A trace's block ids that planned requests send whole (`rows`: request indices), each
    /// once, in first-use order: the blocks whose length calibration makes exact.
    pub fn full_blocks(&self, rows: &[u64]) -> Vec<u64> {
        let (Some(t), Workload::Trace { block_tokens, .. }) = (&self.trace, &self.workload) else {
            return Vec::new();
        };
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for &i in rows {
            let row = &t.rows[(i as usize).min(t.rows.len() - 1)];
            let whole =
                (row.input_tokens.saturating_sub(self.salt_words()) / block_tokens) as usize;
            for id in row.hash_ids.iter().take(whole) {
                if seen.insert(*id) {
                    out.push(*id);
                }
            }
        }
        out
    }

    /// The text of trace block `id` with `block_tokens + delta` words (calibration trials).
    pub fn block_text(&self, id: u64, delta: i32) -> String {
        let n = match &self.workload {
            Workload::Trace { block_tokens, .. } => *block_tokens,
            _ => 1,
        };
        trace_block(self.seed, id, (n as i64 + delta as i64).max(1) as u32)
    }

    /// Uses `words` (block id → words) for trace blocks: what block calibration found.
    pub fn with_block_words(mut self, words: std::collections::HashMap<u64, u32>) -> Generator {
        self.block_words = Arc::new(words);
        self
    }

    /// The conversation sessions, for a conversation workload.
    pub fn sessions(&self) -> Option<&Sessions> {
        self.sessions.as_ref()
    }

    /// Session `s` of a conversation workload, or unit `s` of a trace with sessions.
    pub fn session(&self, s: u64, warmup: bool) -> Option<SessionSpec> {
        if let Some(g) = &self.sessions {
            return Some(g.session(s, warmup));
        }
        let (t, rows) = self.trace_unit(s)?;
        let turns = rows
            .iter()
            .map(|r| {
                let mut spec = self.build(*r as u64, None);
                spec.warmup = warmup;
                Turn::fixed(
                    spec,
                    Duration::from_secs_f64(t.rows[*r].delay_ms.unwrap_or(0.0) / 1000.0),
                )
            })
            .collect();
        Some(SessionSpec {
            index: s,
            warmup,
            system: None,
            turns,
            line: Some(t.rows[rows[0]].line),
        })
    }

    /// Unit `i` of a trace with sessions: the trace and the unit's rows (`None` for any other
    /// workload, whose units are single requests).
    fn trace_unit(&self, i: u64) -> Option<(&Trace, &[usize])> {
        let t = self.trace.as_deref().filter(|t| t.has_sessions())?;
        Some((t, &t.units[(i as usize).min(t.units.len() - 1)]))
    }

    /// Whether the plan's units are sessions (a conversation, or a trace with sessions).
    pub fn has_sessions(&self) -> bool {
        self.sessions.is_some() || self.trace.as_ref().is_some_and(|t| t.has_sessions())
    }

    /// The request indices of unit `i` whose prompts are known before the run (what
    /// calibration counts): a trace session's rows, else `i` itself.
    pub fn unit_requests(&self, i: u64) -> Vec<u64> {
        match self.trace_unit(i) {
            Some((_, rows)) => rows.iter().map(|r| *r as u64).collect(),
            None => vec![i],
        }
    }

    /// Requests unit `i` sends if none fails: a session's turns, else 1.
    pub fn turn_count(&self, i: u64) -> u32 {
        if let Some(g) = &self.sessions {
            return g.turn_count(i);
        }
        self.trace_unit(i).map_or(1, |(_, rows)| rows.len() as u32)
    }

    /// Leads every synthetic prompt with [`SALT_WORDS`] words drawn from `nonce` (no effect
    /// on datasets). The words are returned for the run's record.
    pub fn with_salt(mut self, nonce: u64) -> (Generator, String) {
        let salt = words(&mut ChaCha8Rng::seed_from_u64(nonce), SALT_WORDS);
        self.salt = Some(Arc::new(salt.clone()));
        self.sessions = self.sessions.map(|g| g.with_salt(Arc::new(salt.clone())));
        (self, salt)
    }

    /// Salt words to leave out of a prompt's own word count, so the target still holds.
    fn salt_words(&self) -> u32 {
        if self.salt.is_some() {
            SALT_WORDS
        } else {
            0
        }
    }

    fn salted(&self, text: String) -> String {
        match &self.salt {
            Some(s) => format!("{s} {text}"),
            None => text,
        }
    }

    /// Applies per-request word corrections (and one for every other request).
    pub fn with_calibration(
        mut self,
        deltas: std::collections::HashMap<u64, i32>,
        default_delta: i32,
    ) -> Generator {
        self.deltas = Arc::new(deltas);
        self.default_delta = default_delta;
        self
    }

    /// Whether prompts start with the run's salt: synthetic text does, and so do synthetic
    /// conversations; text from a file (a dataset, ShareGPT conversations) is sent as written.
    pub fn takes_salt(&self) -> bool {
        match &self.workload {
            Workload::Dataset { .. } => false,
            Workload::Conversation { path, .. } => path.is_none(),
            _ => true,
        }
    }

    /// Whether the workload's prompts are synthetic (so their length can be calibrated): a
    /// conversation's are not, since later turns carry the replies received.
    pub fn is_synthetic(&self) -> bool {
        !matches!(
            self.workload,
            Workload::Dataset { .. } | Workload::Conversation { .. }
        )
    }

    fn adjusted(&self, index: u64, n: u32) -> u32 {
        let d = self
            .deltas
            .get(&index)
            .copied()
            .unwrap_or(self.default_delta);
        (n as i64 + d as i64).max(1) as u32
    }

    pub fn spec(&self, index: u64) -> RequestSpec {
        self.build(index, None)
    }

    /// Request `index` with `delta` words added to its generated text (calibration trials).
    pub fn spec_with_delta(&self, index: u64, delta: i32) -> RequestSpec {
        self.build(index, Some(delta))
    }

    /// A trace row's prompt: whole blocks of `block_tokens` each (their text calibrated to
    /// that when block lengths were calibrated), then a partial block or words of this request
    /// alone, where the word correction applies.
    fn trace_prompt(
        &self,
        index: u64,
        block_tokens: u32,
        adjusted: &dyn Fn(u32) -> u32,
        rng: &mut ChaCha8Rng,
    ) -> (String, Option<u32>, u32, String) {
        // The scenario loader always attaches the trace it validated, and the plan
        // never asks past its rows.
        let t = self
            .trace
            .as_ref()
            .expect("trace workload carries its trace");
        let row = &t.rows[(index as usize).min(t.rows.len() - 1)];
        // Token budget: whole blocks take `block_tokens` each (their text calibrated
        // to that when block lengths were calibrated), then a partial block or words
        // of this request alone; the word correction applies to that last part.
        let mut left = row.input_tokens.saturating_sub(self.salt_words());
        let mut parts: Vec<String> = Vec::new();
        for id in &row.hash_ids {
            if left < block_tokens {
                break;
            }
            let words_n = self.block_words.get(id).copied().unwrap_or(block_tokens);
            parts.push(trace_block(self.seed, *id, words_n));
            left -= block_tokens;
        }
        let whole = parts.len();
        let last = adjusted(left) as i64;
        let last = if left == 0 {
            // Whole blocks only: a correction adds words of its own, or (negative)
            // is dropped — the blocks themselves stay as they are.
            (last - left as i64).max(0) as u32
        } else {
            last.max(1) as u32
        };
        if last > 0 {
            match row.hash_ids.get(whole) {
                // A partial block: its leading words, shared with every request that
                // sends this block.
                Some(id) if left > 0 => {
                    let full = trace_block(self.seed, *id, last.max(block_tokens));
                    parts.push(
                        full.split(' ')
                            .take(last as usize)
                            .collect::<Vec<_>>()
                            .join(" "),
                    );
                }
                _ => parts.push(words(rng, last)),
            }
        }
        (
            self.salted(parts.join(" ")),
            Some(row.input_tokens),
            row.output_tokens,
            String::new(),
        )
    }

    fn build(&self, index: u64, delta: Option<i32>) -> RequestSpec {
        // A conversation's index here is a session: its first turn stands for it.
        if let Some(g) = &self.sessions {
            return g.session(index, false).request(0, &[]);
        }
        let adjusted = |n: u32| match delta {
            Some(d) => (n as i64 + d as i64).max(1) as u32,
            None => self.adjusted(index, n),
        };
        let mut rng = stream_rng(self.seed, index);
        let sample = |d: &LengthDist, rng: &mut ChaCha8Rng| d.sample(rng);
        let (prompt, target, max_tokens, class) = match &self.workload {
            Workload::Synthetic {
                input_tokens,
                output_tokens,
            } => {
                let n = sample(input_tokens, &mut rng);
                let out = sample(output_tokens, &mut rng);
                let own = adjusted(n.saturating_sub(self.salt_words()));
                (
                    self.salted(words(&mut rng, own)),
                    Some(n),
                    out,
                    String::new(),
                )
            }
            Workload::SharedPrefix {
                prefixes,
                prefix_tokens,
                suffix_tokens,
                output_tokens,
            } => {
                let g = rng.random_range(0..*prefixes) as usize;
                let n = sample(suffix_tokens, &mut rng);
                let out = sample(output_tokens, &mut rng);
                let own = adjusted(n.saturating_sub(self.salt_words()));
                let text = self.salted(format!("{} {}", self.prefixes[g], words(&mut rng, own)));
                (text, Some(prefix_tokens + n), out, format!("prefix-{g}"))
            }
            Workload::LongShortMix {
                long_fraction,
                short,
                long,
            } => {
                let is_long = rng.random_bool(*long_fraction);
                let l = if is_long { long } else { short };
                let n = sample(&l.input_tokens, &mut rng);
                let out = sample(&l.output_tokens, &mut rng);
                let class = if is_long { "long" } else { "short" };
                let own = adjusted(n.saturating_sub(self.salt_words()));
                (
                    self.salted(words(&mut rng, own)),
                    Some(n),
                    out,
                    class.to_string(),
                )
            }
            Workload::Trace { block_tokens, .. } => {
                self.trace_prompt(index, *block_tokens, &adjusted, &mut rng)
            }
            Workload::Conversation { .. } => unreachable!("conversations are built by sessions"),
            Workload::Dataset {
                order,
                output_tokens,
                ..
            } => {
                // The scenario loader always attaches the dataset it validated.
                let d = self
                    .dataset
                    .as_ref()
                    .expect("dataset workload carries its dataset");
                let n = d.entries.len() as u64;
                let i = match order {
                    DatasetOrder::Sequential => index % n,
                    DatasetOrder::Shuffle => rng.random_range(0..n),
                } as usize;
                let e = &d.entries[i];
                let out = e
                    .output_tokens
                    .unwrap_or_else(|| sample(output_tokens, &mut rng));
                let prompt = match &e.prompt {
                    DatasetPrompt::Text(t) => Prompt::Text(t.clone()),
                    DatasetPrompt::Messages(m) => Prompt::Messages(m.clone()),
                };
                return RequestSpec {
                    index,
                    warmup: false,
                    prompt,
                    input_tokens_target: None,
                    max_tokens: out,
                    class: format!("line-{}", e.line),
                    session: None,
                    keep_reply: false,
                };
            }
        };
        RequestSpec {
            index,
            warmup: false,
            prompt: Prompt::Text(prompt),
            input_tokens_target: target,
            max_tokens,
            class,
            session: None,
            keep_reply: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn scenario(workload: &str) -> Scenario {
        let text = format!(
            "name = \"t\"\nseed = 9\n[workload]\n{workload}\n[load]\nconcurrency = 1\nrequests = 10\nwarmup = 2\n"
        );
        crate::config::scenario::parse(&text, Path::new("t.toml")).unwrap()
    }

    #[test]
    fn same_seed_same_requests() {
        let s = scenario("type = \"synthetic\"\ninput_tokens = { dist = \"uniform\", min = 5, max = 50 }\noutput_tokens = 7");
        let a = Generator::new(&s);
        let b = Generator::new(&s);
        for i in 0..12 {
            let (x, y) = (a.spec(i), b.spec(i));
            assert_eq!(x.prompt, y.prompt);
            assert_eq!(x.max_tokens, 7);
            let Prompt::Text(t) = &x.prompt else { panic!() };
            assert_eq!(t.split(' ').count() as u32, x.input_tokens_target.unwrap());
        }
        assert_ne!(a.spec(0).prompt, a.spec(1).prompt);
    }

    #[test]
    fn shared_prefix_requests_share_their_group_prefix() {
        let s = scenario("type = \"shared_prefix\"\nprefixes = 2\nprefix_tokens = 30\nsuffix_tokens = 5\noutput_tokens = 4");
        let g = Generator::new(&s);
        let specs: Vec<_> = (0..20).map(|i| g.spec(i)).collect();
        for sp in &specs {
            let Prompt::Text(t) = &sp.prompt else {
                panic!()
            };
            let grp: usize = sp.class.trim_start_matches("prefix-").parse().unwrap();
            assert!(t.starts_with(&g.prefixes[grp]));
            assert_eq!(sp.input_tokens_target, Some(35));
        }
        assert!(
            specs.iter().any(|s| s.class == "prefix-0")
                && specs.iter().any(|s| s.class == "prefix-1")
        );
    }

    #[test]
    fn long_short_mix_follows_fraction() {
        let s = scenario("type = \"long_short_mix\"\nlong_fraction = 0.25\nshort = { input_tokens = 10, output_tokens = 5 }\nlong = { input_tokens = 400, output_tokens = 50 }");
        let g = Generator::new(&s);
        let longs = (0..4000).filter(|i| g.spec(*i).class == "long").count();
        assert!((900..1100).contains(&longs), "{longs}");
        let l = (0..50)
            .map(|i| g.spec(i))
            .find(|s| s.class == "long")
            .unwrap();
        assert_eq!((l.input_tokens_target, l.max_tokens), (Some(400), 50));
    }
}
