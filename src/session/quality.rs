//! The quality pass: every item of the scenario's quality set asked once, after the run's
//! load and its "after" scrape, so that neither the latency figures nor the server's
//! counters hold any of it, and the load's traffic stays the declared one.
//!
//! Items go one at a time (a batch of one: on a real engine the batch a request shares
//! changes its numerics, and with it a greedy answer), greedy (`temperature` 0, `seed` 0 where
//! the API takes one), ending where the model ends (`ignore_eos` off) within the set's
//! `max_tokens`. Only the first [`PASSES`] runs of an arm make one: the first is the arm's
//! answers, the second measures how often an answer flips with nothing changed.

use crate::engine::client::{HttpSender, Target};
use crate::engine::runner::{SendCtx, Sender};
use crate::error::BenchError;
use crate::metrics::quality::score;
pub use crate::model::quality::PASSES;
use crate::model::quality::{QualityPrompt, QualityRun, QualitySet};
use crate::model::scenario::RequestParams;
use crate::plan::prompts::{Prompt, RequestSpec};
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Asks every item of `set` at `target`; stops early (the answers so far kept) on `stop`.
pub async fn pass(
    set: &QualitySet,
    target: Target,
    params: &RequestParams,
    run_id: &str,
    stop: &CancellationToken,
) -> Result<QualityRun, BenchError> {
    let mut params = params.clone();
    params.temperature = Some(0.0);
    params.ignore_eos = false;
    params
        .extra
        .entry("seed".to_string())
        .or_insert(serde_json::json!(0));
    let sender = HttpSender::new(target, params, format!("{run_id}-quality"))?;
    let mut answers = Vec::with_capacity(set.items.len());
    let began = Instant::now();
    for (i, item) in set.items.iter().enumerate() {
        if stop.is_cancelled() {
            break;
        }
        let spec = RequestSpec {
            index: i as u64,
            warmup: false,
            prompt: match &item.prompt {
                QualityPrompt::Text(t) => Prompt::Text(t.clone()),
                QualityPrompt::Messages(m) => Prompt::Messages(m.clone()),
            },
            input_tokens_target: None,
            max_tokens: set.max_tokens,
            class: "quality".into(),
            session: None,
            keep_reply: true,
        };
        let now = Instant::now();
        let ctx = SendCtx {
            run_start: now,
            intended: now,
            queue: Duration::ZERO,
            abort: stop.child_token(),
        };
        let sent = sender.send(spec, ctx).await;
        let reply = match (sent.record.outcome.is_ok(), &sent.reply) {
            (true, Some(r)) => Ok(r.text.as_str()),
            (true, None) => Ok(""),
            (false, _) => Err(sent.record.outcome.to_string()),
        };
        answers.push(score(item, reply));
    }
    Ok(QualityRun {
        set: set.name.clone(),
        set_sha256: set.sha256.clone(),
        max_tokens: set.max_tokens,
        answers,
        seconds: began.elapsed().as_secs_f64(),
    })
}
