//! `bench run`: one run of a scenario, its directory, the table, and optionally the vLLM
//! export and the diagnosis.

use crate::cli::RunArgs;
use crate::config::run::RunSpec;
use crate::error::BenchError;
use crate::output::export::Requested;
use crate::session::Session;
use crate::{analysis, output, EXIT_OK};
use std::path::PathBuf;

pub async fn run(args: RunArgs) -> Result<u8, BenchError> {
    let export = match args.export.as_deref() {
        None => None,
        Some([fmt, file]) if fmt == "vllm-json" => Some(PathBuf::from(file)),
        Some(other) => {
            return Err(BenchError::usage(format!(
                "--export {}: the only format is vllm-json",
                other.join(" ")
            )))
        }
    };
    let session = Session::new(RunSpec::from_args(&args.scenario, &args.opts)?)?;
    let out = session.out_dir(&session.spec().scenario.name);
    if out.join("run.json").exists() {
        return Err(BenchError::usage(format!(
            "--out {} already holds a run (run.json); give another --out, or remove it first",
            out.display()
        )));
    }
    let show = !session.spec().quiet && !args.json;
    let run = session.run_to(&out, show).await?;
    if args.json {
        let summary = serde_json::json!({"run_id": run.run_id, "complete": run.complete, "out": out, "summary": run.summary, "server_metrics": run.server_metrics});
        let text = String::from_utf8_lossy(&output::json(&summary)?).into_owned();
        crate::out!("{text}");
    }
    if run.requests_omitted > 0 && (export.is_some() || args.diagnose) {
        crate::say!(
            "warning: the run kept no per-request records ({} requests, over --keep-records), so --export's per-request lists are empty and --diagnose sees only the summary; they are in {}, or rerun with --keep-records all",
            run.requests_omitted,
            out.join("requests.csv").display()
        );
    }
    if let Some(p) = export {
        Requested::new(None, None, Some(&p), None, None).write(&output::vllm::Export(&run))?;
    }
    if args.diagnose {
        let findings = analysis::diagnose::diagnose(&run);
        crate::out_text!("\n{}", output::diagnose::render(&run, &findings));
    }
    match run.complete {
        true => Ok(EXIT_OK),
        // The partial run is written, marked incomplete; the session said why.
        false => Err(BenchError::Incomplete(String::new())),
    }
}
