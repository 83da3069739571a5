//! Quality sets (`[quality] set = …`): read from a file the user already has, or the builtin
//! one; errors name the file and line. Nothing is fetched: a set never leaves the machine
//! except as requests to the endpoint under test.
//!
//! * **jsonl** — one object a line: `prompt` (a string) or `messages` (chat messages), and
//!   optionally `id`, `answer` (the right answer, as text) and `scorer` (`exact`, the default;
//!   `choice`; `numeric`, with `tolerance`, default 1e-6; `regex`, with `pattern`). An item
//!   without `answer` is unlabelled: it counts for agreement, not accuracy.
//! * **mmlu** — MMLU's shape: a CSV of `question,A,B,C,D,answer` rows (no header, as the
//!   original files), or JSONL with `question`, `choices` (a list) and `answer` (a letter or a
//!   0-based index). Asked with the choices lettered and "Answer with the letter only.";
//!   scored by the letter.
//! * **gsm8k** — GSM8K's shape: JSONL with `question` and `answer`, whose final number follows
//!   `####`. Asked to end with the number; scored numerically.
//! * **builtin** — [`builtin`]: 400 items this project generates (arithmetic, the largest of
//!   four numbers, the next letter), deterministic and licence-clean. SmolLM2-135M-Instruct
//!   (Q4_1, llama-server, greedy, 16 tokens) answers 23 % of them right.

use crate::error::ScenarioError;
use crate::model::quality::{QualityItem, QualityPrompt, QualitySet, Scorer};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;

/// The most items a set may hold: each is one more request per quality pass.
pub const MAX_ITEMS: usize = 10_000;

/// Items in the builtin set: enough that an A/A on a deterministic engine bounds an accuracy
/// drop within 1 pp (no discordant item in n bounds it at 1 − 0.025^(1/n): 0.92 pp at 400).
const BUILTIN_ITEMS: usize = 400;

/// The formats [`load`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Jsonl,
    Mmlu,
    Gsm8k,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "jsonl" => Some(Format::Jsonl),
            "mmlu" => Some(Format::Mmlu),
            "gsm8k" => Some(Format::Gsm8k),
            _ => None,
        }
    }

    /// The output limit a quality request of this format gets unless the scenario says.
    fn default_max_tokens(self) -> u32 {
        match self {
            Format::Gsm8k => 256,
            _ => 16,
        }
    }

    /// A `.csv` file is MMLU's; a JSONL file is told by its first object's keys.
    fn sniff(path: &Path, text: &str) -> Format {
        if path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        {
            return Format::Mmlu;
        }
        let first: Option<Value> = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .and_then(|l| serde_json::from_str(l).ok());
        match first {
            Some(v) if v.get("choices").is_some() && v.get("question").is_some() => Format::Mmlu,
            Some(v)
                if v.get("question").is_some()
                    && v.get("answer")
                        .and_then(Value::as_str)
                        .is_some_and(|a| a.contains("####")) =>
            {
                Format::Gsm8k
            }
            _ => Format::Jsonl,
        }
    }
}

/// Reads a set file (`format` as given, else sniffed), keeping at most `limit` items.
pub fn load(
    path: &Path,
    format: Option<Format>,
    max_tokens: Option<u32>,
    limit: Option<usize>,
) -> Result<QualitySet, ScenarioError> {
    let (text, sha256) = super::read_hashed(path)?;
    let format = format.unwrap_or_else(|| Format::sniff(path, &text));
    let mut items = match format {
        Format::Mmlu
            if path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("csv")) =>
        {
            mmlu_csv(path, &text)?
        }
        _ => jsonl(path, &text, format)?,
    };
    if items.is_empty() {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: "the quality set has no items".into(),
        });
    }
    if items.len() > MAX_ITEMS {
        return Err(ScenarioError::Other {
            path: path.to_path_buf(),
            message: format!(
                "{} items, over the {MAX_ITEMS} a quality set may hold (each is a request in every quality pass); set [quality] items = N to use the first N",
                items.len()
            ),
        });
    }
    items.truncate(limit.unwrap_or(usize::MAX));
    Ok(QualitySet {
        name: path.display().to_string(),
        sha256,
        items: Arc::new(items),
        max_tokens: max_tokens.unwrap_or(format.default_max_tokens()),
    })
}

fn bad(path: &Path, line: usize, message: impl Into<String>) -> ScenarioError {
    ScenarioError::Invalid {
        path: path.to_path_buf(),
        line,
        column: 1,
        field: None,
        message: message.into(),
    }
}

/// The choices lettered, then the instruction.
fn mmlu_prompt(question: &str, choices: &[String]) -> String {
    let mut p = question.trim().to_string();
    for (i, c) in choices.iter().enumerate() {
        p.push_str(&format!("\n{}. {}", (b'A' + i as u8) as char, c.trim()));
    }
    p.push_str("\nAnswer with the letter only.");
    p
}

fn mmlu_csv(path: &Path, text: &str) -> Result<Vec<QualityItem>, ScenarioError> {
    let mut r = csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .from_reader(text.as_bytes());
    let mut items = Vec::new();
    for (i, rec) in r.records().enumerate() {
        let line = i + 1;
        let rec = rec.map_err(|e| bad(path, line, format!("not a CSV row: {e}")))?;
        if rec.len() < 4 {
            return Err(bad(
                path,
                line,
                format!(
                    "{} columns; an MMLU row is question, 2–10 choices, answer",
                    rec.len()
                ),
            ));
        }
        let fields: Vec<String> = rec.iter().map(str::to_string).collect();
        let answer = fields[fields.len() - 1].trim().to_string();
        let choices = &fields[1..fields.len() - 1];
        let letter = letter_of(&answer, choices.len()).ok_or_else(|| {
            bad(
                path,
                line,
                format!(
                    "answer `{answer}` is not one of the {} choices' letters",
                    choices.len()
                ),
            )
        })?;
        items.push(QualityItem {
            id: line.to_string(),
            prompt: QualityPrompt::Text(mmlu_prompt(&fields[0], choices)),
            expected: Some(letter),
            scorer: Scorer::Choice,
        });
    }
    Ok(items)
}

/// A letter `A`… or a 0-based index, as the letter of one of `n` choices.
fn letter_of(answer: &str, n: usize) -> Option<String> {
    let i = match answer.parse::<usize>() {
        Ok(i) => i,
        Err(_) => {
            let b = answer.trim().as_bytes();
            (b.len() == 1 && b[0].is_ascii_uppercase()).then(|| (b[0] - b'A') as usize)?
        }
    };
    (i < n && n <= 10).then(|| ((b'A' + i as u8) as char).to_string())
}

fn jsonl(path: &Path, text: &str, format: Format) -> Result<Vec<QualityItem>, ScenarioError> {
    let mut items = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        if let Some(m) = super::values::line_too_long(line) {
            return Err(bad(path, n, m));
        }
        let v: Value =
            serde_json::from_str(line).map_err(|e| bad(path, n, format!("not JSON: {e}")))?;
        let item = match format {
            Format::Jsonl => own(&v),
            Format::Mmlu => mmlu_json(&v),
            Format::Gsm8k => gsm8k(&v),
        }
        .map_err(|m| bad(path, n, m))?;
        let id = v
            .get("id")
            .map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string))
            .unwrap_or_else(|| n.to_string());
        items.push(QualityItem { id, ..item });
    }
    Ok(items)
}

fn text_field<'a>(v: &'a Value, key: &str) -> Result<&'a str, String> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("`{key}` (a string) is required"))
}

fn own(v: &Value) -> Result<QualityItem, String> {
    let prompt = match (v.get("prompt"), v.get("messages")) {
        (Some(Value::String(p)), None) => QualityPrompt::Text(p.clone()),
        (None, Some(m @ Value::Array(_))) => QualityPrompt::Messages(m.clone()),
        _ => return Err("give either `prompt` (a string) or `messages` (an array)".into()),
    };
    let scorer = match v.get("scorer").and_then(Value::as_str).unwrap_or("exact") {
        "exact" => Scorer::Exact,
        "choice" => Scorer::Choice,
        "numeric" => Scorer::Numeric {
            tolerance: v.get("tolerance").and_then(Value::as_f64).unwrap_or(1e-6),
        },
        "regex" => {
            let pattern = text_field(v, "pattern")?.to_string();
            regex::Regex::new(&pattern).map_err(|e| format!("`pattern` does not compile: {e}"))?;
            Scorer::Regex { pattern }
        }
        other => {
            return Err(format!(
                "`scorer` is exact, choice, numeric or regex (got `{other}`)"
            ))
        }
    };
    let expected = match v.get("answer") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err("`answer` is a string or a number".into()),
    };
    Ok(QualityItem {
        id: String::new(),
        prompt,
        expected,
        scorer,
    })
}

fn mmlu_json(v: &Value) -> Result<QualityItem, String> {
    let q = text_field(v, "question")?;
    let choices: Vec<String> = v
        .get("choices")
        .and_then(Value::as_array)
        .ok_or("`choices` (a list) is required")?
        .iter()
        .map(|c| c.as_str().map_or_else(|| c.to_string(), str::to_string))
        .collect();
    let answer = match v.get("answer") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("`answer` (a letter or a 0-based index) is required".into()),
    };
    let letter = letter_of(&answer, choices.len()).ok_or_else(|| {
        format!(
            "answer `{answer}` is not one of the {} choices",
            choices.len()
        )
    })?;
    Ok(QualityItem {
        id: String::new(),
        prompt: QualityPrompt::Text(mmlu_prompt(q, &choices)),
        expected: Some(letter),
        scorer: Scorer::Choice,
    })
}

fn gsm8k(v: &Value) -> Result<QualityItem, String> {
    let q = text_field(v, "question")?;
    let a = text_field(v, "answer")?;
    let (_, n) = a
        .rsplit_once("####")
        .ok_or("`answer` has no `#### N` final answer")?;
    let n = n.trim().replace(',', "");
    n.parse::<f64>()
        .map_err(|_| format!("the final answer `{n}` is not a number"))?;
    Ok(QualityItem {
        id: String::new(),
        prompt: QualityPrompt::Text(format!(
            "{}\nSolve it step by step, then give the final answer as a number after ####.",
            q.trim()
        )),
        expected: Some(n),
        scorer: Scorer::Numeric { tolerance: 1e-6 },
    })
}

/// The builtin set: 400 short questions with one right answer each, generated from a fixed
/// seed (the same on every machine): sums and differences of two-digit numbers, products of
/// small ones, the largest of four numbers (a letter), and the letter after a given one. Easy
/// enough for a small model to answer some, hard enough that none answers all.
pub fn builtin(max_tokens: Option<u32>, limit: Option<usize>) -> QualitySet {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x0071_7561_6c69_7479);
    let mut items = Vec::with_capacity(BUILTIN_ITEMS);
    let mut push = |prompt: String, expected: String, scorer: Scorer| {
        let id = format!("b{:03}", items.len() + 1);
        items.push(QualityItem {
            id,
            prompt: QualityPrompt::Text(prompt),
            expected: Some(expected),
            scorer,
        });
    };
    let number = Scorer::Numeric { tolerance: 0.0 };
    for i in 0..BUILTIN_ITEMS {
        match i % 5 {
            0 => {
                let (a, b) = (rng.random_range(10..100), rng.random_range(10..100));
                push(
                    format!("What is {a} plus {b}? Reply with the number only."),
                    (a + b).to_string(),
                    number.clone(),
                );
            }
            1 => {
                let (a, b) = (rng.random_range(30..100), rng.random_range(2..30));
                push(
                    format!("What is {a} minus {b}? Reply with the number only."),
                    (a - b).to_string(),
                    number.clone(),
                );
            }
            2 => {
                let (a, b) = (rng.random_range(2..13), rng.random_range(2..13));
                push(
                    format!("What is {a} times {b}? Reply with the number only."),
                    (a * b).to_string(),
                    number.clone(),
                );
            }
            3 => {
                let mut v: Vec<u32> = Vec::new();
                while v.len() < 4 {
                    let x = rng.random_range(1..100);
                    if !v.contains(&x) {
                        v.push(x);
                    }
                }
                let best = (0..4).max_by_key(|&k| v[k]).unwrap_or(0);
                push(
                    format!(
                        "Which number is the largest? A. {} B. {} C. {} D. {} Answer with the letter only.",
                        v[0], v[1], v[2], v[3]
                    ),
                    ((b'A' + best as u8) as char).to_string(),
                    Scorer::Choice,
                );
            }
            _ => {
                let l = rng.random_range(b'A'..b'Y');
                // The first standalone capital letter: "The letter "E" comes next" reads E.
                push(
                    format!("Which letter comes right after {} in the alphabet? Reply with the letter only.", l as char),
                    ((l + 1) as char).to_string(),
                    Scorer::Regex {
                        pattern: r"\b([A-Z])\b".into(),
                    },
                );
            }
        }
    }
    let digest: String = items
        .iter()
        .map(|i| {
            format!(
                "{}\u{1f}{:?}\u{1f}{:?}\u{1f}{:?}\n",
                i.id, i.prompt, i.expected, i.scorer
            )
        })
        .collect();
    items.truncate(limit.unwrap_or(usize::MAX));
    QualitySet {
        name: "builtin".into(),
        sha256: crate::model::scenario::sha256_hex(digest.as_bytes()),
        items: Arc::new(items),
        max_tokens: max_tokens.unwrap_or(16),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join(name);
        std::fs::write(&p, text).unwrap();
        (d, p)
    }

    #[test]
    fn the_three_shapes_users_have_load_without_saying_which() {
        let (_d, p) = write(
            "m.csv",
            "\"What is 2+2?\",3,4,5,6,B\nCapital of France?,Paris,Rome,Oslo,Bern,A\n",
        );
        let s = load(&p, None, None, None).unwrap();
        assert_eq!(s.items.len(), 2);
        assert_eq!(s.items[0].expected.as_deref(), Some("B"));
        assert!(
            matches!(&s.items[0].prompt, QualityPrompt::Text(t) if t.contains("B. 4") && t.ends_with("letter only."))
        );
        let (_d, p) = write(
            "m.jsonl",
            "{\"question\":\"q?\",\"choices\":[\"x\",\"y\"],\"answer\":1}\n",
        );
        let s = load(&p, None, None, None).unwrap();
        assert_eq!(
            (s.items[0].expected.as_deref(), &s.items[0].scorer),
            (Some("B"), &Scorer::Choice)
        );
        let (_d, p) = write(
            "g.jsonl",
            "{\"question\":\"Tom has 3…\",\"answer\":\"3+4=7\\n#### 1,007\"}\n",
        );
        let s = load(&p, None, None, None).unwrap();
        assert_eq!(s.items[0].expected.as_deref(), Some("1007"));
        assert_eq!(s.max_tokens, 256);
        let (_d, p) = write("o.jsonl", "{\"id\":\"x1\",\"prompt\":\"Say hi\"}\n{\"messages\":[{\"role\":\"user\",\"content\":\"2+2?\"}],\"answer\":4,\"scorer\":\"numeric\"}\n");
        let s = load(&p, None, None, Some(1)).unwrap();
        assert_eq!(s.items.len(), 1, "items = 1 keeps the first");
        assert_eq!(
            (s.items[0].id.as_str(), s.items[0].expected.as_deref()),
            ("x1", None)
        );
    }

    #[test]
    fn a_bad_item_names_its_file_and_line() {
        for (text, says) in [
            ("{\"prompt\":\"a\"}\n{\"prompt\":1}\n", "prompt"),
            (
                "{\"prompt\":\"a\",\"scorer\":\"regex\",\"pattern\":\"(\"}\n",
                "pattern",
            ),
            ("{\"prompt\":\"a\",\"scorer\":\"fuzzy\"}\n", "scorer"),
        ] {
            let (_d, p) = write("bad.jsonl", text);
            let e = load(&p, Some(Format::Jsonl), None, None)
                .unwrap_err()
                .to_string();
            assert!(e.contains("bad.jsonl:") && e.contains(says), "{e}");
        }
        let (_d, p) = write("m.csv", "q,a,b,c,d,F\n");
        let e = load(&p, None, None, None).unwrap_err().to_string();
        assert!(e.contains("m.csv:1:") && e.contains("`F`"), "{e}");
    }

    #[test]
    fn the_builtin_set_is_the_same_everywhere_and_every_answer_fits_its_scorer() {
        let a = builtin(None, None);
        assert_eq!(a.items.len(), BUILTIN_ITEMS);
        assert_eq!(a.sha256, builtin(None, None).sha256);
        for item in a.items.iter() {
            let e = item.expected.as_deref().unwrap();
            let fits = match item.scorer {
                Scorer::Numeric { .. } => e.parse::<u32>().is_ok(),
                _ => e.len() == 1 && e.as_bytes()[0].is_ascii_uppercase(),
            };
            assert!(fits, "{item:?}");
        }
    }
}
