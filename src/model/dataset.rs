//! A JSONL dataset as the plan uses it: one request per line (loaded and checked by
//! `config::dataset`).

use std::path::PathBuf;

/// What one dataset line asks the server.
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetPrompt {
    Text(String),
    Messages(serde_json::Value),
}

#[derive(Debug, Clone)]
pub struct DatasetEntry {
    pub prompt: DatasetPrompt,
    pub output_tokens: Option<u32>,
    /// 1-based line in the file, for messages.
    pub line: usize,
    /// ShareGPT: every human turn answered by a reply, in order, with the reply's length in
    /// words (a multi-turn session sends them one by one); empty for other formats.
    pub turns: Vec<(String, u32)>,
}

#[derive(Debug)]
pub struct Dataset {
    pub path: PathBuf,
    pub entries: Vec<DatasetEntry>,
    /// SHA-256 of the file's bytes.
    pub sha256: String,
    /// Entries of the file that make no request (a ShareGPT conversation with no human turn
    /// answered by a reply), counted so `bench validate` can say how many.
    pub skipped: usize,
}

impl Dataset {
    pub fn all_have_output_tokens(&self) -> bool {
        self.entries.iter().all(|e| e.output_tokens.is_some())
    }

    /// The first line holding a `messages` array, if any (these need the chat API).
    pub fn first_messages_line(&self) -> Option<usize> {
        self.entries
            .iter()
            .find(|e| matches!(e.prompt, DatasetPrompt::Messages(_)))
            .map(|e| e.line)
    }
}
