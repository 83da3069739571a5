//! `bench compare`: judge a candidate (run now, or `--candidate RUN.json`) against a stored
//! baseline (or `--against RUN.json`); exit 1 on a regression.

use crate::cli::CompareArgs;
use crate::config::run::RunSpec;
use crate::config::thresholds::{self, GateConfig};
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::result::RunResult;
use crate::session::Session;
use crate::verdict::{baseline as store, compare::compare};
use crate::{output, EXIT_ERROR, EXIT_OK, EXIT_REGRESSION};

pub async fn run(args: CompareArgs) -> Result<u8, BenchError> {
    let spec = RunSpec::from_args(&args.scenario, &args.opts)?;
    let layers = thresholds::layers(args.gate.as_deref(), &spec.scenario.gate)?;
    let refs: Vec<&[(String, String)]> = layers.iter().map(|l| l.as_slice()).collect();
    let cfg = GateConfig::new(&refs, args.alpha, spec.scenario.seed)?;
    let base = match &args.against {
        Some(p) => Baseline::from_run(p, RunResult::load(p)?)?,
        None => store::load(&store::path(
            &args.baselines,
            &spec.scenario.name,
            &args.name,
        ))?,
    };
    let cand = match &args.candidate {
        Some(p) => {
            if !args.opts.opts.is_empty() || args.opts.endpoint.is_some() {
                eprintln!("warning: --candidate given: --opt/--endpoint are ignored (the stored run is judged as it is)");
            }
            RunResult::load(p)?
        }
        None => {
            let session = Session::new(spec)?;
            let out = session.out_dir(&session.spec().scenario.name);
            let run = session.run_to(&out, false).await?;
            if !run.complete {
                return Ok(EXIT_ERROR);
            }
            eprintln!("candidate run written to {}", out.display());
            run
        }
    };
    let c = compare(&base, &cand, args.allow_multi, &cfg)?;
    crate::out_text!("{}", output::compare::table(&c));
    let md = output::compare::markdown(&c);
    if let Some(p) = &args.markdown {
        output::write_atomic(p, md.as_bytes())?;
    }
    if let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|s| !s.is_empty()) {
        output::append(std::path::Path::new(&summary), md.as_bytes())?;
    }
    if let Some(p) = &args.html {
        let page = output::html::compare_report(&c, Some((&base.repetitions, &cand)));
        output::write_atomic(p, page.as_bytes())?;
    }
    if let Some(p) = &args.json {
        output::write_atomic(p, &output::json(&c)?)?;
    }
    if let Some(p) = &args.record {
        let owner = args.owner.clone().unwrap_or_else(default_owner);
        let rows = output::record::comparison_rows(&c, &owner, args.note.as_deref().unwrap_or(""));
        output::record::append(p, &rows)?;
        crate::out!("record rows appended to {}", p.display());
    }
    Ok(if c.regressed {
        EXIT_REGRESSION
    } else {
        EXIT_OK
    })
}

/// `git config user.name`, else `$USER`, else "unknown".
fn default_owner() -> String {
    std::process::Command::new("git")
        .args(["config", "user.name"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| "unknown".into())
}
