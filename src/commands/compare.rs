//! `bench compare`: judge a candidate — runs now (sequential by default, `--repeat` for a fixed
//! number), stored runs (`--candidate`), or runs interleaved with the baseline's configuration
//! (`--interleave`) — against a stored baseline (or `--against RUN.json`, or stored control
//! runs: `--control`); exit 1 on a regression, or on an undecided row with `--undecided fail`.

use crate::analysis::judge::{ControlArm, Judge, Size};
use crate::cli::{CompareArgs, Undecided};
use crate::config::flags::Flags;
use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::output::compare::Report;
use crate::output::export::PlanDesign;
use crate::verdict::compare::comparable;
use crate::verdict::stored as stored_runs;
use crate::{output, EXIT_OK, EXIT_REGRESSION};

pub async fn run(args: CompareArgs) -> Result<u8, BenchError> {
    // Read once: the control arm of an interleave is built from the same typed scenario.
    let scenario = crate::config::scenario::load(&args.scenario)?;
    let flags = Flags::from(&args.opts);
    let spec = RunSpec::from_scenario(scenario.clone(), &args.scenario, &flags)?;
    let cfg = GateConfig::for_scenario(args.gate.as_deref(), &spec.scenario, args.alpha)?;
    let judge = Judge {
        cfg: &cfg,
        allow_multi: args.allow_multi,
        steady_state: args.steady_state,
        settle_all: args.settle_all,
        size: Size::from_flags(
            args.repeat,
            args.max_repeat,
            args.budget.as_deref(),
            args.alpha,
        )?,
    };
    let stored = stored_runs::reference(
        &args.against,
        &args.baselines,
        &spec.scenario.name,
        &args.name,
    )?;
    let files = super::requested(&args.output, args.record.as_deref());
    if args.plan {
        files.check::<PlanDesign>()?;
        let design = judge.size.design(args.alpha);
        crate::out_text!(
            "{}",
            crate::verdict::forecast::text(&stored, &cfg, &design, args.interleave)
        );
        // The design these flags give, as a sequential compare writes it beside its runs.
        files.write(&PlanDesign(serde_json::json!(design)))?;
        return Ok(EXIT_OK);
    }
    files.check::<Report>()?;
    if args.candidate.is_empty() {
        // Refused now rather than after minutes of runs: what the runs will be is known.
        let hash = spec.scenario.traffic_hash();
        comparable(&stored, &hash, &spec.scenario, &spec.vars, args.allow_multi)?;
    }
    let rejudge = crate::analysis::judge::rejudge_command(
        &args.scenario,
        (&args.baselines, &args.name),
        args.gate.as_deref(),
        (args.alpha, args.max_repeat),
    );
    let judged = if args.interleave {
        let arm = ControlArm {
            scenario_path: &args.scenario,
            flags: &flags,
            baseline_endpoint: args.baseline_endpoint.as_deref(),
            switch: args.switch.as_deref(),
        };
        judge
            .interleaved(stored, (scenario, spec), &arm, &rejudge)
            .await
    } else if !args.candidate.is_empty() {
        if flags.configures_a_run() {
            crate::say!("warning: --candidate given: --opt/--endpoint are ignored (the stored runs are judged as they are)");
        }
        judge.stored(stored, &args.candidate, &args.control)
    } else {
        judge.measured(stored, spec, &rejudge).await
    };
    let mut j = judged?;
    let c = &mut j.comparison;
    c.undecided_fails = args.strict || args.undecided == Undecided::Fail;
    c.revision = super::revision();
    let report = Report {
        c,
        arms: (&j.base.repetitions, &j.cand),
        owner: args.owner.clone().unwrap_or_else(super::default_owner),
        note: args.note.as_deref().unwrap_or(""),
    };
    output::compare::write_all(&report, &files)?;
    let fail_undecided = args.strict || args.undecided == Undecided::Fail;
    Ok(
        if c.regressed || (fail_undecided && !c.undecided().is_empty()) {
            EXIT_REGRESSION
        } else {
            EXIT_OK
        },
    )
}
