//! Deterministic text: the word list synthetic prompts and the simulator's replies are made
//! of, and the seeded random streams they are drawn from.
//!
//! Stream `i` of a seed is ChaCha8 with that stream id, so request `i`'s text is the same
//! whatever order or shard produces it. The words are common English words that BPE
//! tokenizers (Llama, GPT, Qwen) encode as one token each with their leading space, so N words
//! are roughly N tokens.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// Words that common BPE vocabularies hold as single tokens (with a leading space).
const VOCAB: &[&str] = &[
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "was",
    "with",
    "be",
    "by",
    "on",
    "not",
    "he",
    "this",
    "are",
    "or",
    "his",
    "from",
    "at",
    "which",
    "but",
    "have",
    "an",
    "had",
    "they",
    "you",
    "were",
    "their",
    "one",
    "all",
    "we",
    "can",
    "her",
    "has",
    "there",
    "been",
    "if",
    "more",
    "when",
    "will",
    "would",
    "who",
    "so",
    "no",
    "time",
    "people",
    "year",
    "way",
    "day",
    "man",
    "thing",
    "woman",
    "life",
    "child",
    "world",
    "school",
    "state",
    "family",
    "student",
    "group",
    "country",
    "problem",
    "hand",
    "part",
    "place",
    "case",
    "week",
    "company",
    "system",
    "program",
    "question",
    "work",
    "number",
    "night",
    "point",
    "home",
    "water",
    "room",
    "mother",
    "area",
    "money",
    "story",
    "fact",
    "month",
    "lot",
    "right",
    "study",
    "book",
    "eye",
    "job",
    "word",
    "business",
    "issue",
    "side",
    "kind",
    "head",
    "house",
    "service",
    "friend",
    "father",
    "power",
    "hour",
    "game",
    "line",
    "end",
    "member",
    "law",
    "car",
    "city",
    "name",
    "team",
    "minute",
    "idea",
    "body",
    "back",
    "face",
    "level",
    "office",
    "door",
    "health",
    "person",
    "art",
    "war",
    "history",
    "party",
    "result",
    "change",
    "morning",
    "reason",
    "research",
    "girl",
    "guy",
    "moment",
    "air",
    "teacher",
    "force",
    "education",
];

/// Word `i` of the vocabulary (wrapping), for deterministic generated text.
pub fn vocab_word(i: usize) -> &'static str {
    VOCAB[i % VOCAB.len()]
}

/// `n` space-separated words drawn uniformly from [`VOCAB`].
pub fn words<R: Rng + ?Sized>(rng: &mut R, n: u32) -> String {
    let mut s = String::with_capacity(n as usize * 6);
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(VOCAB[rng.random_range(0..VOCAB.len())]);
    }
    s
}
