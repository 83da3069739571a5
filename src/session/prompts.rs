//! A run's prompts as sent: the plan's requests with this run's salt, and — with
//! `--calibrate` / `--tokenizer` — lengths corrected so each prompt has exactly its target
//! token count on the server's tokenizer (`engine::client::tokenize`).

use crate::config::run::RunSpec;
use crate::engine::client::local_tokenizer::LocalTokenizer;
use crate::engine::client::tokenize::{calibrate, calibrate_blocks, Counter, ServerTokenizer};
use crate::engine::client::Target;
use crate::model::scenario::{Salt, Workload};
use crate::plan::prompts::Generator;
use crate::plan::Plan;

/// The run's generator, with its salt words when the scenario salts prompts per run. Shards of
/// one run (`--start-at`) derive the salt from the shared start and seed, so they share it.
pub fn salt(spec: &RunSpec, generator: Generator) -> (Generator, Option<String>) {
    let s = &spec.scenario;
    if s.salt != Salt::PerRun || !generator.takes_salt() {
        return (generator, None);
    }
    let nonce = match spec.start_at {
        Some(t) => {
            let micros = t.timestamp_micros() as u64;
            micros ^ s.seed.rotate_left(32) ^ 0x5a17_5a17_5a17_5a17
        }
        None => rand::random(),
    };
    let (g, salt) = generator.with_salt(nonce);
    (g, Some(salt))
}

const APPROXIMATE: &str = "approximate: synthetic words ≈ tokens (no tokenizer); real counts from server usage.prompt_tokens";

/// The generator, calibrated when the spec asks for it, and how the run's prompt lengths were
/// made (recorded as `prompt_lengths`). A calibration that cannot be done is a warning: the
/// run goes ahead with approximate lengths and says so.
pub async fn calibrated(
    spec: &RunSpec,
    plan: &Plan,
    generator: Generator,
    target: &Target,
) -> (Generator, String) {
    if !generator.is_synthetic() {
        let conversation = generator.sessions().is_some();
        if spec.calibrate {
            crate::say!(
                "note: --calibrate applies to synthetic single-turn prompts; {}",
                if conversation {
                    "a conversation's later turns carry the replies received, so their lengths are the server's"
                } else {
                    "dataset prompts are sent as written"
                }
            );
        }
        let how = if conversation {
            "conversation: each turn carries the history with the replies received; token counts from server usage"
        } else {
            "dataset text as given; token counts from server usage"
        };
        return (generator, how.into());
    }
    if !spec.calibrate {
        return (generator, APPROXIMATE.into());
    }
    let s = &spec.scenario;
    // Every planned prompt of a bounded plan; the first 64 of an unbounded one, whose median
    // correction then serves the rest.
    let indices: Vec<u64> = match (plan.total, plan.planned()) {
        (Some(_), Some(_)) => (0..plan.planned_units().unwrap_or(0))
            .flat_map(|j| generator.unit_requests(plan.index(j)))
            .collect(),
        _ => (0..64).collect(),
    };
    let (counter, source) = match counter(spec, target).await {
        Ok(c) => c,
        Err(e) => {
            crate::say!("warning: cannot calibrate prompt lengths with {e}; they stay approximate");
            return (generator, APPROXIMATE.into());
        }
    };
    // A trace's whole blocks first, so that shared prefixes are exact, then each prompt's
    // last part, so that its total is.
    let (generator, blocks) = match &s.workload {
        Workload::Trace { block_tokens, .. } => {
            let ids = generator.full_blocks(&indices);
            match calibrate_blocks(&counter, &generator, &ids, *block_tokens).await {
                Ok(words) => {
                    let n = words.len();
                    (
                        generator.with_block_words(words),
                        format!("{n} trace blocks of exactly {block_tokens} tokens, "),
                    )
                }
                Err(e) => {
                    crate::say!("warning: cannot calibrate trace blocks with {source} ({e}); block lengths stay approximate");
                    (generator, String::new())
                }
            }
        }
        _ => (generator, String::new()),
    };
    match calibrate(&counter, &generator, &indices).await {
        Ok((deltas, median)) => {
            let how = format!(
                "calibrated with {source}: {blocks}{} prompts one by one{}",
                deltas.len(),
                if s.load.requests.is_none() {
                    format!(", the rest with the median correction ({median:+} words)")
                } else {
                    String::new()
                }
            );
            (generator.with_calibration(deltas, median), how)
        }
        Err(e) => {
            crate::say!("warning: cannot calibrate prompt lengths with {source} ({e}); they stay approximate");
            (generator, APPROXIMATE.into())
        }
    }
}

/// What counts tokens: the local tokenizer (with the overhead one probe request measures) or
/// the server's `/tokenize`; the error says which could not be had and why.
async fn counter(spec: &RunSpec, target: &Target) -> Result<(Counter, String), String> {
    match &spec.tokenizer {
        Some((file, tok)) => {
            let mut extra = spec.scenario.request.extra.clone();
            extra.extend(spec.params.clone());
            let l = LocalTokenizer::new((**tok).clone(), target, &extra)
                .await
                .map_err(|e| format!("{} ({e})", file.display()))?;
            let source = format!(
                "the local tokenizer {} (+{} tokens the server adds, from one probe request)",
                file.display(),
                l.overhead
            );
            Ok((Counter::Local(Box::new(l)), source))
        }
        None => ServerTokenizer::new(target)
            .map(|t| (Counter::Server(t), "the server's /tokenize".to_string()))
            .map_err(|e| format!("the server's tokenizer ({e})")),
    }
}
