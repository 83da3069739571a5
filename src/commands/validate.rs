//! `bench validate`: check a scenario and print the plan it makes, sending nothing.

use crate::error::BenchError;
use crate::model::shard::Shard;
use crate::plan::Plan;
use crate::{config, output, EXIT_OK};
use std::path::Path;

pub fn run(scenario: &Path, shard: Option<&str>) -> Result<u8, BenchError> {
    let s = config::scenario::load(scenario)?;
    let plan = Plan::new(&s, shard.map(Shard::parse).transpose()?)?;
    crate::out!("{}: ok", scenario.display());
    crate::out!("{}", output::plan::describe(&s));
    crate::out_text!("{}", output::plan::render(&plan));
    crate::out!("traffic hash {}", s.traffic_hash());
    if let Some(q) = &s.quality_set {
        let labelled = q.items.iter().filter(|i| i.expected.is_some()).count();
        crate::out!(
            "quality set {}: {} items ({labelled} labelled), max_tokens {}, asked after the load of an arm's first {} runs (sha256 {})",
            q.name,
            q.items.len(),
            q.max_tokens,
            crate::model::quality::PASSES,
            crate::model::scenario::short_hash(&q.sha256)
        );
    }
    if !s.request.body_vars.is_empty() {
        crate::out!(
            "request-field vars (--var KEY=VALUE is also sent in every request body): {}",
            s.request.body_vars.join(", ")
        );
    }
    Ok(EXIT_OK)
}
