//! Scoring a quality answer ([`crate::model::quality::Scorer`]): what is extracted from the
//! text, and whether it is right. The rules are those of the common evaluation harnesses:
//! normalised exact match (lower case, punctuation and the articles a/an/the dropped, spaces
//! collapsed, as SQuAD's), a multiple-choice letter as the first standalone capital A–J, a
//! number as GSM8K's `#### N` or else the last number in the text (thousands separators
//! dropped), a regex's first capture group.

use crate::model::quality::{QualityAnswer, QualityItem, Scorer};
use regex::Regex;
use std::sync::LazyLock;

/// The most characters of an answer a run stores (agreement compares the scorer's
/// extraction, or this text when it extracts nothing).
const STORED_CHARS: usize = 2_000;

/// `s` as a run stores it: whole up to [`STORED_CHARS`], else its first characters and the
/// SHA-256 of the whole, so that two long answers stored alike are the same answer and a
/// server that answers at length cannot grow run.json without bound. Scoring sees the whole.
fn bounded(s: &str) -> String {
    if s.chars().count() <= STORED_CHARS {
        return s.to_string();
    }
    let hash = crate::model::scenario::sha256_hex(s.as_bytes());
    let head: String = s.chars().take(STORED_CHARS).collect();
    format!("{head}… [{} characters, sha256 {hash}]", s.chars().count())
}

/// Lower case, punctuation and articles dropped, whitespace collapsed.
fn normalise(s: &str) -> String {
    let lower: String = s
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c.is_whitespace() {
                c
            } else {
                ' '
            }
        })
        .collect();
    lower
        .split_whitespace()
        .filter(|w| !matches!(*w, "a" | "an" | "the"))
        .collect::<Vec<_>>()
        .join(" ")
}

static LETTER: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b([A-J])\b").expect("valid"));
static NUMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"-?\d[\d,]*(?:\.\d+)?").expect("valid"));

/// The answer `scorer` extracts from `text`, if any. A regex pattern was checked when the set
/// was loaded; one that does not compile extracts nothing.
pub fn extract(scorer: &Scorer, text: &str) -> Option<String> {
    match scorer {
        Scorer::Exact => Some(normalise(text)).filter(|s| !s.is_empty()),
        Scorer::Regex { pattern } => {
            let re = Regex::new(pattern).ok()?;
            let c = re.captures(text)?;
            let m = c.get(1).or_else(|| c.get(0))?;
            Some(normalise(m.as_str()))
        }
        Scorer::Choice => LETTER.captures(text).map(|c| c[1].to_string()),
        Scorer::Numeric { .. } => {
            let tail = text.rsplit_once("####").map_or(text, |(_, t)| t);
            let found = match text.contains("####") {
                true => NUMBER.find(tail),
                false => NUMBER.find_iter(tail).last(),
            }?;
            let n: f64 = found.as_str().replace(',', "").parse().ok()?;
            Some(number_text(n))
        }
    }
}

/// A number as extraction writes it: an integer without a decimal point.
fn number_text(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

/// Whether an extracted answer is the expected one.
fn is_right(scorer: &Scorer, extracted: &str, expected: &str) -> bool {
    match scorer {
        Scorer::Exact | Scorer::Regex { .. } => extracted == normalise(expected),
        Scorer::Choice => extracted.eq_ignore_ascii_case(expected.trim()),
        Scorer::Numeric { tolerance } => {
            let e: Option<f64> = expected.trim().replace(',', "").parse().ok();
            match (extracted.parse::<f64>(), e) {
                (Ok(x), Some(e)) => (x - e).abs() <= *tolerance,
                _ => false,
            }
        }
    }
}

/// One item's answer: `Ok(text)` a reply, `Err(outcome)` a failed request.
pub fn score(item: &QualityItem, reply: Result<&str, String>) -> QualityAnswer {
    match reply {
        Ok(text) => {
            let text = text.trim();
            let extracted = extract(&item.scorer, text);
            let extracted = extracted.map(|x| bounded(&x));
            let correct = item.expected.as_deref().map(|e| {
                extracted
                    .as_deref()
                    .is_some_and(|x| is_right(&item.scorer, x, e))
            });
            QualityAnswer {
                id: item.id.clone(),
                text: Some(bounded(text)),
                extracted,
                correct,
                error: None,
            }
        }
        Err(outcome) => QualityAnswer {
            id: item.id.clone(),
            text: None,
            extracted: None,
            correct: item.expected.as_ref().map(|_| false),
            error: Some(outcome),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scorers_extract_as_the_common_harnesses_do() {
        assert_eq!(normalise("  The Eiffel   Tower! "), "eiffel tower");
        assert_eq!(
            extract(&Scorer::Choice, "The answer is (B)."),
            Some("B".into())
        );
        assert_eq!(extract(&Scorer::Choice, "I think so."), Some("I".into()));
        assert_eq!(extract(&Scorer::Choice, "dunno"), None);
        let num = Scorer::Numeric { tolerance: 1e-6 };
        assert_eq!(extract(&num, "3 apples and 4 pears: 7"), Some("7".into()));
        assert_eq!(
            extract(&num, "so 1,234 total #### 1,234\nmore 9"),
            Some("1234".into())
        );
        assert_eq!(extract(&num, "-2.50 dollars"), Some("-2.5".into()));
        assert_eq!(extract(&num, "none"), None);
        assert!(is_right(&num, "7", "7.0") && !is_right(&num, "8", "7"));
        let re = Scorer::Regex {
            pattern: r"answer: (\w+)".into(),
        };
        assert_eq!(extract(&re, "my answer: Paris."), Some("paris".into()));
        assert!(is_right(&Scorer::Exact, &normalise("Paris."), "paris"));
    }

    #[test]
    fn a_long_answer_is_stored_bounded_and_still_tells_answers_apart() {
        let item = QualityItem {
            id: "1".into(),
            prompt: crate::model::quality::QualityPrompt::Text("story".into()),
            expected: None,
            scorer: Scorer::Exact,
        };
        let long = "word ".repeat(1_000);
        let (a, b) = (
            score(&item, Ok(&long)),
            score(&item, Ok(&(long.clone() + "end"))),
        );
        assert!(a.text.as_ref().unwrap().chars().count() < STORED_CHARS + 120);
        assert!(
            a.key().is_some() && a.key() != b.key(),
            "differ past the stored part"
        );
        assert_eq!(a.key(), score(&item, Ok(&long)).key());
    }

    #[test]
    fn a_failed_request_is_wrong_on_a_labelled_item_and_unscored_on_another() {
        let item = |expected: Option<&str>| QualityItem {
            id: "1".into(),
            prompt: crate::model::quality::QualityPrompt::Text("2+2?".into()),
            expected: expected.map(str::to_string),
            scorer: Scorer::Numeric { tolerance: 0.0 },
        };
        let a = score(&item(Some("4")), Err("http_500".into()));
        assert_eq!((a.correct, a.key()), (Some(false), None));
        assert_eq!(score(&item(None), Err("x".into())).correct, None);
        let ok = score(&item(Some("4")), Ok(" It is 4. "));
        assert_eq!((ok.correct, ok.key()), (Some(true), Some("4")));
    }
}
