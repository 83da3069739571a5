//! Tokens a chunk counted with the local tokenizer (`--tokenizer`), for a stream whose server
//! reported its output tokens only in total (or not at all) while its chunks carried several.
//!
//! The stream's generated text (reasoning and answer, in arrival order) is kept with the byte
//! at which each chunk's part ends. Once the stream is over the text is encoded once, in
//! whole, so that tokens merge across chunk boundaries as they did on the server, and every
//! token is given to the chunk in which its text ended. Encoding each chunk on its own would
//! not do: a byte-level BPE splits a word cut between two chunks into more tokens than the
//! server generated.

/// A stream's text, kept only while its chunks' tokens may need counting.
#[derive(Default)]
pub(super) struct ChunkText {
    pub(super) text: String,
    /// Where each text chunk's part of [`Self::text`] ends (exclusive), in chunk order.
    ends: Vec<usize>,
    /// Whether each text chunk carried reasoning only.
    reasoning: Vec<bool>,
    /// Each text chunk's gap after the previous one, µs (`None` for the first).
    gaps: Vec<Option<u64>>,
    /// The text outgrew [`Self::MAX_BYTES`]: the count is given up, not guessed.
    overflow: bool,
}

/// One text chunk's tokens by the local count, with what it was.
#[derive(Debug)]
pub(super) struct Counted {
    pub(super) tokens: u64,
    pub(super) reasoning: bool,
    pub(super) gap_us: Option<u64>,
}

impl ChunkText {
    /// The most text one stream keeps for counting (a server that streams without end does
    /// not grow it further; such a stream's chunks stay estimated).
    const MAX_BYTES: usize = 8 << 20;

    /// One text chunk arrived: its text was appended to [`Self::text`] by the interpreter.
    pub(super) fn chunk(&mut self, reasoning: bool, gap_us: Option<u64>) {
        if self.text.len() > Self::MAX_BYTES {
            self.overflow = true;
            self.text = String::new();
        }
        self.ends.push(self.text.len());
        self.reasoning.push(reasoning);
        self.gaps.push(gap_us);
    }

    /// Every text chunk's tokens by `tok`, or why they cannot be counted.
    pub(super) fn count(&self, tok: &tokenizers::Tokenizer) -> Result<Vec<Counted>, String> {
        if self.overflow {
            return Err(format!("over {} bytes of text", Self::MAX_BYTES));
        }
        let enc = tok
            .encode(self.text.as_str(), false)
            .map_err(|e| format!("the local tokenizer cannot encode the reply: {e}"))?;
        let mut tokens = vec![0u64; self.ends.len()];
        let last = tokens.len().checked_sub(1).ok_or("no text chunk")?;
        for &(_, end) in enc.get_offsets() {
            // The first chunk whose part ends at or after the token's last byte.
            let i = self.ends.partition_point(|&e| e < end).min(last);
            tokens[i] += 1;
        }
        Ok(tokens
            .into_iter()
            .zip(&self.reasoning)
            .zip(&self.gaps)
            .map(|((tokens, &reasoning), &gap_us)| Counted {
                tokens,
                reasoning,
                gap_us,
            })
            .collect())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// One token per whitespace-separated word: the fixture the end-to-end tests use.
    pub(in crate::engine::client) fn words() -> tokenizers::Tokenizer {
        let file = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/tokenizer-words.json"
        );
        tokenizers::Tokenizer::from_file(file).unwrap()
    }

    fn feed(parts: &[(&str, bool)]) -> ChunkText {
        let mut c = ChunkText::default();
        for (i, (t, r)) in parts.iter().enumerate() {
            c.text.push_str(t);
            c.chunk(*r, (i > 0).then_some(10 * i as u64));
        }
        c
    }

    #[test]
    fn each_token_goes_to_the_chunk_its_text_ends_in() {
        let c = feed(&[
            (" think", true),
            (" more here", true),
            (" The", false),
            (" answer is fo", false),
            ("rty two", false),
        ]);
        let got: Vec<(u64, bool, Option<u64>)> = c
            .count(&words())
            .unwrap()
            .into_iter()
            .map(|k| (k.tokens, k.reasoning, k.gap_us))
            .collect();
        // "forty" ends in the last chunk: the chunk that began it brought "answer", "is" only.
        assert_eq!(
            got,
            vec![
                (1, true, None),
                (2, true, Some(10)),
                (1, false, Some(20)),
                (2, false, Some(30)),
                (2, false, Some(40)),
            ]
        );
    }

    #[test]
    fn a_chunk_of_whitespace_carries_no_token_and_the_total_is_the_whole_texts() {
        let c = feed(&[(" a b", false), (" ", false), ("c d e", false)]);
        let k: Vec<u64> = c
            .count(&words())
            .unwrap()
            .iter()
            .map(|k| k.tokens)
            .collect();
        assert_eq!(k, vec![2, 0, 3]);
    }

    #[test]
    fn past_the_bound_the_count_is_given_up() {
        let mut c = ChunkText {
            text: "x".repeat(ChunkText::MAX_BYTES + 1),
            ..ChunkText::default()
        };
        c.chunk(false, None);
        c.text.push_str(" y");
        c.chunk(false, Some(1));
        assert!(c.count(&words()).unwrap_err().contains("bytes"));
    }
}
