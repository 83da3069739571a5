//! What the simulator answers at temperature 0: a seeded model of answer quality, so that a
//! quantization's accuracy cost shows with no server.
//!
//! A greedy reply is a function of the prompt and the weights. Each prompt has its own uniform
//! draws from a hash of its text (FNV-1a) and the simulator's `seed`:
//!
//! * **Questions it can solve** — the builtin set's forms (a sum, difference or product of two
//!   numbers, the largest of four lettered numbers, the letter after a letter) — are answered
//!   right when the first draw is at least [`BASE_ERROR`] + the quantization's accuracy cost
//!   ([`accuracy_cost`]): a lower precision only ever turns right answers wrong, never the
//!   reverse, as the items a model barely knows are the ones quantization loses. A wrong
//!   answer is a nearby number or another letter, the same one each time.
//! * **Any other prompt** gets the simulator's usual words, starting at a place set by the
//!   prompt (so the same prompt gets the same reply); under quantization a share
//!   [`divergence`] of prompts (the second draw) diverges from the first token on.
//!
//! An engine whose answers vary run to run is modelled by `answer_flip`: that share of
//! requests, drawn from each request's own id, answers otherwise (a right answer turns
//! wrong; a free text diverges).
//!
//! Speculative decoding is lossless here as on a real engine: the draft changes only how many
//! tokens a step yields, never which ones. Answers at a temperature above 0 are not modelled
//! (the quality pass asks greedily).

use super::profile::{Quant, SimOptions};

/// Share of the solvable questions the full-precision model answers wrong.
const BASE_ERROR: f64 = 0.3;

/// Extra share of questions answered wrong at a weight and KV precision.
fn accuracy_cost(weights: Quant, kv: Quant) -> f64 {
    let w = match weights {
        Quant::None => 0.0,
        Quant::Fp8 => 0.005,
        Quant::Int8 => 0.01,
        Quant::Int4 => 0.08,
    };
    let k = match kv {
        Quant::None => 0.0,
        Quant::Fp8 => 0.002,
        Quant::Int8 => 0.004,
        Quant::Int4 => 0.03,
    };
    w + k
}

/// Share of free-text replies that diverge from the full-precision model's.
fn divergence(weights: Quant, kv: Quant) -> f64 {
    let w: f64 = match weights {
        Quant::None => 0.0,
        Quant::Fp8 => 0.04,
        Quant::Int8 => 0.06,
        Quant::Int4 => 0.35,
    };
    let k = match kv {
        Quant::None => 0.0,
        Quant::Fp8 => 0.02,
        Quant::Int8 => 0.03,
        Quant::Int4 => 0.15,
    };
    (w + k).min(1.0)
}

/// How a greedy reply is made.
#[derive(Debug, Clone, PartialEq)]
pub enum Greedy {
    /// These words, then the end of the answer.
    Answer(Vec<String>),
    /// The usual words, from this place in the vocabulary.
    From(u64),
}

fn fnv1a(s: &str, seed: u64) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64 ^ seed;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A uniform draw in [0, 1) from `h`, the `k`-th of its prompt.
fn draw(h: u64, k: u64) -> f64 {
    let mut x = h ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (x ^ (x >> 31)) as f64 / 2f64.powi(64)
}

/// The greedy reply to `prompt` under `o`'s precision; `request` names this one request (its
/// id), from which an engine that flips (`answer_flip`) draws whether this answer does.
pub fn greedy(prompt: &str, o: &SimOptions, request: &str) -> Greedy {
    let h = fnv1a(prompt, o.seed);
    let flipped = o.answer_flip > 0.0 && draw(fnv1a(request, h), 3) < o.answer_flip;
    match solve(prompt) {
        Some((right, wrong)) => {
            let ok = draw(h, 1) >= BASE_ERROR + accuracy_cost(o.quant, o.kv_quant);
            Greedy::Answer(vec![if ok && !flipped {
                right
            } else {
                wrong(h ^ u64::from(flipped))
            }])
        }
        None => {
            let diverged = draw(h, 2) < divergence(o.quant, o.kv_quant);
            Greedy::From((h >> 16) + u64::from(diverged) * 7919 + u64::from(flipped) * 104_729)
        }
    }
}

type Wrong = Box<dyn Fn(u64) -> String>;

/// The right answer to a question of the builtin set's forms, and how it is got wrong.
fn solve(prompt: &str) -> Option<(String, Wrong)> {
    let nums = |s: &str| -> Vec<i64> {
        s.split(|c: char| !c.is_ascii_digit())
            .filter_map(|w| w.parse().ok())
            .collect()
    };
    let near = |v: i64| -> Wrong { Box::new(move |h| (v + 1 + (h % 9) as i64).to_string()) };
    if let Some(rest) = prompt.strip_prefix("What is ") {
        let n = nums(rest);
        let v = match n.as_slice() {
            [a, b] if rest.contains(" plus ") => a + b,
            [a, b] if rest.contains(" minus ") => a - b,
            [a, b] if rest.contains(" times ") => a * b,
            _ => return None,
        };
        return Some((v.to_string(), near(v)));
    }
    if prompt.starts_with("Which number is the largest?") {
        let n = nums(prompt);
        let best = (0..n.len().min(4)).max_by_key(|&i| n[i])?;
        let letter = |i: usize| ((b'A' + i as u8) as char).to_string();
        return Some((
            letter(best),
            Box::new(move |h| letter((best + 1 + (h % 3) as usize) % 4)),
        ));
    }
    if let Some(rest) = prompt.strip_prefix("Which letter comes right after ") {
        let l = *rest.as_bytes().first()?;
        if !l.is_ascii_uppercase() || l == b'Z' {
            return None;
        }
        let after = move |k: u8| ((l + k).min(b'Z') as char).to_string();
        return Some((after(1), Box::new(move |_| after(2))));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(q: Quant) -> SimOptions {
        SimOptions {
            quant: q,
            ..SimOptions::profile("small-gpu").unwrap()
        }
    }

    #[test]
    fn quantization_only_turns_right_answers_wrong_and_at_about_its_cost() {
        let qs: Vec<String> = (0..4000)
            .map(|i| {
                format!(
                    "What is {} plus {}? Reply with the number only.",
                    i / 60 + 10,
                    i % 60 + 10
                )
            })
            .collect();
        let right = |q: Quant| -> Vec<bool> {
            qs.iter()
                .map(|p| {
                    let (r, _) = solve(p).unwrap();
                    greedy(p, &opts(q), "r") == Greedy::Answer(vec![r])
                })
                .collect()
        };
        let (full, int4) = (right(Quant::None), right(Quant::Int4));
        assert!(
            full.iter().zip(&int4).all(|(f, i)| *f || !*i),
            "never wrong → right"
        );
        let share = |v: &[bool]| v.iter().filter(|x| **x).count() as f64 / v.len() as f64;
        assert!((share(&full) - 0.7).abs() < 0.03, "{}", share(&full));
        assert!(
            (share(&full) - share(&int4) - 0.08).abs() < 0.02,
            "{}",
            share(&int4)
        );
        let p = "Which number is the largest? A. 5 B. 80 C. 7 D. 12 Answer with the letter only.";
        assert_eq!(solve(p).unwrap().0, "B");
        assert_eq!(
            solve("Which letter comes right after G in the alphabet?")
                .unwrap()
                .0,
            "H"
        );
        assert!(solve("Tell me a story").is_none());
    }

    #[test]
    fn a_free_text_reply_is_fixed_by_its_prompt_and_diverges_under_quantization() {
        let o = opts(Quant::None);
        assert_eq!(
            greedy("hello there", &o, "a"),
            greedy("hello there", &o, "b")
        );
        let diverged = (0..2000)
            .map(|i| format!("prompt number {i}"))
            .filter(|p| greedy(p, &o, "r") != greedy(p, &opts(Quant::Int4), "r"))
            .count();
        assert!((600..800).contains(&diverged), "{diverged} of 2000 at 35 %");
        // A flipping engine: the same prompt answers otherwise for about that share of
        // requests, and alike for the rest.
        let flaky = SimOptions {
            answer_flip: 0.1,
            ..opts(Quant::None)
        };
        let p = "What is 20 plus 22? Reply with the number only.";
        let first = greedy(p, &flaky, "req-0");
        let other = (1..2000)
            .filter(|i| greedy(p, &flaky, &format!("req-{i}")) != first)
            .count();
        assert!(
            (100..300).contains(&other),
            "{other} of 1999 differ at 10 %"
        );
    }
}
