//! `bench compare`: judge a candidate — `--repeat` runs now, stored runs (`--candidate`), or
//! runs interleaved with the baseline's configuration (`--interleave`) — against a stored
//! baseline (or `--against RUN.json`, or stored control runs: `--control`); exit 1 on a
//! regression.

use crate::analysis::interleave::{self, check_control, control_opts};
use crate::cli::CompareArgs;
use crate::config::run::RunSpec;
use crate::config::thresholds::{self, GateConfig};
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::result::RunResult;
use crate::session::repeat::{repeat, Layout, Stopped};
use crate::session::Session;
use crate::verdict::stored::{self as stored_runs, Role};
use crate::verdict::{baseline as store, compare::compare, gate};
use crate::{output, EXIT_ERROR, EXIT_OK, EXIT_REGRESSION};
use std::path::Path;

pub async fn run(args: CompareArgs) -> Result<u8, BenchError> {
    // Read once: the control arm of an interleave is built from the same typed scenario.
    let scenario = crate::config::scenario::load(&args.scenario)?;
    let spec = RunSpec::from_scenario(scenario.clone(), &args.scenario, &args.opts)?;
    let layers = thresholds::layers(args.gate.as_deref(), &spec.scenario.gate)?;
    let refs: Vec<&[(String, String)]> = layers.iter().map(|l| l.as_slice()).collect();
    let cfg = GateConfig::new(&refs, args.alpha, spec.scenario.seed)?;
    let k = match args.repeat {
        Some(k) => crate::config::values::repeats(k)?,
        None if args.interleave => gate::PAIRED_MIN_BLOCKS,
        None => 3,
    };
    let stored = if args.against.is_empty() {
        store::load(&store::path(
            &args.baselines,
            &spec.scenario.name,
            &args.name,
        )?)?
    } else {
        let arm = stored_runs::load(&args.against, Role::Against)?;
        let name = match args.against.as_slice() {
            [one] => one.display().to_string(),
            more => format!("{} stored runs ({})", arm.runs.len(), more.len()),
        };
        Baseline::from_runs(&name, arm.runs)?
    };
    if args.candidate.is_empty() {
        // Refused now rather than after minutes of runs: what the runs will be is known.
        let hash = spec.scenario.traffic_hash();
        crate::verdict::compare::comparable(
            &stored,
            &hash,
            &spec.scenario,
            &spec.vars,
            args.allow_multi,
        )?;
    }
    let (base, cand) = if args.interleave {
        interleaved(&args, scenario, spec, stored, k).await?
    } else if !args.candidate.is_empty() {
        from_files(&args, stored)?
    } else {
        match measured(&args, spec, k).await? {
            Some(runs) => (stored, runs),
            None => return Ok(EXIT_ERROR),
        }
    };
    let mut c = compare(&base, &cand, args.allow_multi, &cfg)?;
    c.interleaved = args.interleave || gate::interleaved(&base.repetitions, &cand);
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
        let owner = args.owner.clone().unwrap_or_else(super::default_owner);
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

/// The control arm run now in ABBA blocks with the candidate (`--interleave`); the control
/// runs become the baseline judged against, the stored one naming their configuration.
async fn interleaved(
    args: &CompareArgs,
    scenario: crate::model::scenario::Scenario,
    spec: RunSpec,
    stored: Baseline,
    k: usize,
) -> Result<(Baseline, Vec<RunResult>), BenchError> {
    let opts = control_opts(
        &stored,
        &spec,
        &args.opts,
        args.baseline_endpoint.as_deref(),
        args.switch.is_some(),
    )?;
    let control = RunSpec::from_scenario(scenario, &args.scenario, &opts)?;
    check_control(&stored, &control)?;
    let candidate = Session::new(spec)?;
    let out = candidate.out_dir(&candidate.spec().scenario.name);
    output::check_fresh(&out)?;
    let hint = {
        let (out, dir, rejudge) = (
            out.clone(),
            out.display().to_string(),
            rejudge_command(args),
        );
        move || {
            kept_under(
                out.join("candidate/rep1/run.json").is_file(),
                "the runs finished so far are",
                &out,
                &format!("{rejudge} --control {dir}/control --candidate {dir}/candidate"),
            )
        }
    };
    // A signal while no run is under way (a --switch command, the wait for the endpoint)
    // ends the process at once: it says the same.
    crate::session::signals::on_exit(hint.clone());
    let (a, b) = interleave::run(
        &Session::new(control)?,
        &candidate,
        k,
        args.switch.as_deref(),
        &out,
    )
    .await
    .map_err(|e| BenchError::Runtime(format!("{e}{}", hint())))?;
    crate::say!("control and candidate runs written under {}", out.display());
    let name = format!("{} (interleaved control)", stored.name);
    Ok((Baseline::new(&name, a)?, b))
}

/// Stored runs judged (`--candidate`), against the stored baseline or stored control runs
/// (`--control`).
fn from_files(
    args: &CompareArgs,
    stored: Baseline,
) -> Result<(Baseline, Vec<RunResult>), BenchError> {
    if !args.opts.opts.is_empty() || args.opts.endpoint.is_some() {
        crate::say!("warning: --candidate given: --opt/--endpoint are ignored (the stored runs are judged as they are)");
    }
    let mut cand = stored_runs::load(&args.candidate, Role::Candidate)?;
    if args.control.is_empty() {
        return Ok((stored, cand.runs));
    }
    let mut control = stored_runs::load(&args.control, Role::Control)?;
    stored_runs::check_control(&stored, &control)?;
    stored_runs::whole_blocks(&mut control, &mut cand);
    let name = format!("{} (stored control)", stored.name);
    Ok((Baseline::new(&name, control.runs)?, cand.runs))
}

/// `k` candidate runs now; `None` when one was cut short (said, and exit 2), after naming the
/// command that judges those finished.
async fn measured(
    args: &CompareArgs,
    spec: RunSpec,
    k: usize,
) -> Result<Option<Vec<RunResult>>, BenchError> {
    let session = Session::new(spec)?;
    let out = session.out_dir(&session.spec().scenario.name);
    output::check_fresh(&out)?;
    let layout = Layout {
        out: &out,
        numbered: false,
        label: "candidate",
    };
    let done = repeat(&session, k, &layout, |_, _| Ok(())).await?;
    let hint = || {
        kept(
            !done.runs.is_empty(),
            &format!("the {} candidate runs finished are", done.runs.len()),
            &out,
            &format!("--candidate {}", out.display()),
            args,
        )
    };
    match &done.stopped {
        None => {
            crate::say!("candidate runs written to {}", out.display());
            Ok(Some(done.runs))
        }
        Some(Stopped::Failed(e)) => {
            crate::say!("error: {e}{}", hint());
            Ok(None)
        }
        Some(Stopped::Interrupted) => {
            if !done.runs.is_empty() {
                crate::say!("{}", hint().trim_start());
            }
            Ok(None)
        }
    }
}

/// After a compare stopped part-way with runs on disk (`any`): where they are (`what` are
/// kept under `out`) and the command that judges them (`flags`); empty when none are.
fn kept(any: bool, what: &str, out: &Path, flags: &str, args: &CompareArgs) -> String {
    kept_under(
        any,
        what,
        out,
        &format!("{} {flags}", rejudge_command(args)),
    )
}

/// [`kept`] with the whole command given.
fn kept_under(any: bool, what: &str, out: &Path, command: &str) -> String {
    if !any {
        return String::new();
    }
    format!(
        "\n{what} kept under {}; judge them with:\n  {command}",
        out.display()
    )
}

/// `bench compare` with the scenario and the baseline's store and name as given: how to judge
/// stored runs of this comparison again.
fn rejudge_command(args: &CompareArgs) -> String {
    let mut c = format!("bench compare {}", args.scenario.display());
    if args.baselines != Path::new("baselines") {
        c += &format!(" --baselines {}", args.baselines.display());
    }
    if args.name != "main" {
        c += &format!(" --name {}", args.name);
    }
    c
}
