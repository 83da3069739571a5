//! `bench init`: set up the regression gate in the current directory's repository — a
//! scenario, its baseline, `ci/gate.toml` gating what that baseline can decide, `ci/gate.sh`
//! and a GitHub Actions workflow.

use crate::analysis::init::{init, Reference, Setup, Shape};
use crate::cli::InitArgs;
use crate::error::BenchError;
use crate::{output, EXIT_OK};

pub async fn run(args: InitArgs) -> Result<u8, BenchError> {
    let reference = match (&args.baseline_endpoint, &args.switch, &args.endpoint) {
        (Some(e), _, _) => Reference::Endpoint(e.clone()),
        (None, Some(c), _) => Reference::Switch(c.clone()),
        (None, None, None) => Reference::Simulator,
        (None, None, Some(_)) => Reference::Stored,
    };
    let setup = Setup {
        endpoint: args.endpoint,
        model: args.model,
        api_key_env: args.api_key_env,
        reference,
        name: args.name,
        shape: Shape {
            requests: args.requests,
            concurrency: args.concurrency,
            input_tokens: args.input_tokens,
            output_tokens: args.output_tokens,
        },
        repeat: crate::config::values::repeats(args.repeat)?,
        comment: args.comment,
        force: args.force,
    };
    let done = init(&setup).await?;
    crate::out_text!("{}", output::baseline::summary(&done.baseline));
    crate::out!("what the server showed:");
    for f in &done.findings {
        crate::out!("  {f}");
    }
    let gated: Vec<String> = done
        .rows
        .iter()
        .filter(|r| r.runs.is_some())
        .map(|r| r.metric.to_string())
        .collect();
    let off: Vec<String> = done
        .rows
        .iter()
        .filter(|r| r.runs.is_none())
        .map(|r| r.metric.to_string())
        .collect();
    crate::out!("gated: {}", gated.join(", "));
    if let Some(why) = done.rows.iter().find_map(|r| r.runs.and(r.advice.as_ref())) {
        crate::out!("note: {why} (each row's figure in ci/gate.toml)");
    }
    if !off.is_empty() {
        crate::out!(
            "off (not within the cap; why in ci/gate.toml): {}",
            off.join(", ")
        );
    }
    crate::out!(
        "{}",
        match &setup.reference {
            Reference::Stored => "arms: against the stored baseline (a second server, --baseline-endpoint, or --switch would let the gate interleave)",
            _ => "arms: interleaved (both on this machine, in the same minutes)",
        }
    );
    for f in &done.files {
        crate::out!("wrote {}", f.display());
    }
    crate::out!("next: bash ci/gate.sh (what CI runs), then commit these files; the workflow gates every pull request");
    Ok(EXIT_OK)
}
