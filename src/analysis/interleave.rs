//! `bench compare --interleave`: the baseline's configuration run now as a control arm,
//! alternating with the candidate in ABBA blocks (A B, B A, A B, …), so slow drift and a busy
//! neighbour fall on both arms alike and a linear drift cancels between them. The stored
//! baseline stays the record: it says which configuration the control arm must reproduce, and
//! the control runs are written beside the candidate's.
//!
//! The control configuration is the candidate's with each var that differs set back to the
//! baseline's value: a simulator option (`--opt`), a request-field var (`--var`, declared in
//! `request.body_vars`) or a `--param` — all sent by bench itself. A var that only labels the
//! server (`--var engine=…`) needs the server to change: `--baseline-endpoint URL` (a second
//! server) or `--switch 'CMD {arm}'` (a command that reconfigures it; bench waits for
//! `GET /models` to answer before the next run). The control's vars must then equal the
//! baseline's, or the comparison would not be the one recorded.

use crate::config::flags::Flags;
use crate::config::run::RunSpec;
use crate::engine::client::target::redact;
use crate::engine::client::{list_models, Target};
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::result::RunResult;
use crate::session::Session;
use std::path::Path;
use std::time::{Duration, Instant};

/// Which configuration a run is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arm {
    Baseline,
    Candidate,
}

impl Arm {
    fn name(self) -> &'static str {
        match self {
            Arm::Baseline => "baseline",
            Arm::Candidate => "candidate",
        }
    }
}

/// The order of the arms in block `i`: A B, then B A, then A B, …
pub fn block(i: usize) -> [Arm; 2] {
    if i.is_multiple_of(2) {
        [Arm::Baseline, Arm::Candidate]
    } else {
        [Arm::Candidate, Arm::Baseline]
    }
}

/// The run flags of the control arm: the candidate's, with every var that differs from the
/// baseline set back to the baseline's value.
pub fn control_opts(
    base: &Baseline,
    cand: &RunSpec,
    flags: &Flags,
    baseline_endpoint: Option<&str>,
    switch: bool,
) -> Result<Flags, BenchError> {
    let mut o = flags.clone();
    let sim_keys: Vec<String> = cand
        .sim
        .as_ref()
        .map(|s| s.entries().into_iter().map(|(k, _)| k).collect())
        .unwrap_or_default();
    let keys: std::collections::BTreeSet<&String> =
        base.vars.keys().chain(cand.vars.keys()).collect();
    for key in keys {
        let want = base.vars.get(key).map(String::as_str);
        if cand.vars.get(key).map(String::as_str) == want {
            continue;
        }
        if sim_keys.contains(key) {
            o.set_opt(key, want);
        } else if cand.scenario.request.body_vars.contains(key) {
            o.set_var(key, want);
        } else if let Some(field) = key.strip_prefix("param.") {
            o.set_param(field, want);
        } else if baseline_endpoint.is_some() || switch {
            o.set_var(key, want);
        } else {
            return Err(BenchError::usage(format!(
                "--interleave cannot reach the baseline's configuration: `{key}` is only a label of the server ({} → {}); give --baseline-endpoint URL or --switch 'CMD {{arm}}'",
                want.unwrap_or("∅"),
                cand.vars.get(key).map_or("∅", String::as_str)
            )));
        }
    }
    if let Some(e) = baseline_endpoint {
        o.set_endpoint(e);
    }
    Ok(o)
}

/// Checks that the control arm reproduces the stored baseline's configuration.
pub fn check_control(base: &Baseline, control: &RunSpec) -> Result<(), BenchError> {
    // As the compare judges vars: a simulator option the baseline predates, at its profile's
    // default on the control's side, is the same configuration.
    let diffs = crate::verdict::compare::diff_vars(&base.vars, &control.vars);
    if !diffs.is_empty() {
        return Err(BenchError::usage(format!(
            "--interleave: the control arm would run {} instead of the baseline's configuration",
            crate::verdict::compare::describe_change(&diffs)
        )));
    }
    Ok(())
}

/// How long a `--switch` command may take, and then the endpoint to answer again.
const SWITCH_WAIT: Duration = Duration::from_secs(600);

/// Runs `sh -c CMD` with `{arm}` filled in (stopped after [`SWITCH_WAIT`]), then waits (up to
/// [`SWITCH_WAIT`] again) for the endpoint to list its models.
pub async fn switch_to(cmd: &str, arm: Arm, session: &Session) -> Result<(), BenchError> {
    let run = cmd.replace("{arm}", arm.name());
    // What bench prints of the command: without the API key, should the command hold it.
    let line = redact(&run, session.spec().api_key.as_deref().unwrap_or(""));
    crate::say!(
        "interleave: switching the server to the {} ({line})",
        arm.name()
    );
    let child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&run)
        .kill_on_drop(true)
        .status();
    let status = tokio::time::timeout(SWITCH_WAIT, child)
        .await
        .map_err(|_| {
            BenchError::Runtime(format!(
                "--switch `{line}` did not return within 10 minutes (stopped); it must switch the server and return — bench waits for the endpoint itself"
            ))
        })?
        .map_err(|e| BenchError::Runtime(format!("--switch `{line}`: {e}")))?;
    if let Some(name) = crate::session::signals::received() {
        return Err(BenchError::Runtime(format!(
            "{name} during --switch `{line}`: no further run started"
        )));
    }
    if !status.success() {
        return Err(BenchError::Runtime(format!(
            "--switch `{line}` exited with {status}"
        )));
    }
    let spec = session.spec();
    let Some(endpoint) = &spec.endpoint else {
        return Ok(());
    };
    let target = Target::new(
        endpoint,
        spec.scenario.api,
        String::new(),
        spec.api_key.clone(),
    )?;
    let start = Instant::now();
    loop {
        if list_models(&target).await.is_ok() {
            return Ok(());
        }
        if start.elapsed() > SWITCH_WAIT {
            return Err(BenchError::Runtime(format!(
                "after --switch to the {}, {} did not answer for 10 minutes",
                arm.name(),
                target.public_endpoint()
            )));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// `k` blocks of one control and one candidate run, ABBA-ordered; the runs of each arm, in
/// order. Runs are written to `out/control/repN` and `out/candidate/repN`.
pub async fn run(
    control: &Session,
    candidate: &Session,
    k: usize,
    switch: Option<&str>,
    out: &Path,
    mut go_on: impl FnMut(&[RunResult], &[RunResult]) -> Result<bool, BenchError>,
) -> Result<(Vec<RunResult>, Vec<RunResult>), BenchError> {
    // Signals during the first --switch command are routed too (see `signals::install`).
    crate::session::signals::install();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    let mut active: Option<Arm> = None;
    for i in 0..k {
        for arm in block(i) {
            if let Some(cmd) = switch.filter(|_| active != Some(arm)) {
                if let Some(name) = crate::session::signals::received() {
                    // The run before took the signal whole; no switch, no further run.
                    return Err(BenchError::Runtime(format!(
                        "{name} during the last run: no further switch or run started"
                    )));
                }
                switch_to(
                    cmd,
                    arm,
                    if arm == Arm::Baseline {
                        control
                    } else {
                        candidate
                    },
                )
                .await?;
            }
            active = Some(arm);
            let (session, runs, dir) = match arm {
                Arm::Baseline => (control, &mut a, "control"),
                Arm::Candidate => (candidate, &mut b, "candidate"),
            };
            if !session.spec().quiet {
                crate::say!("interleave: block {} of {k}, {}", i + 1, arm.name());
            }
            let run = session
                .run_to(&out.join(dir).join(format!("rep{}", runs.len() + 1)), false)
                .await?;
            if !run.complete {
                return Err(BenchError::Runtime(
                    "the interleaved runs were interrupted".into(),
                ));
            }
            if arm == Arm::Baseline {
                // The control arm is the reference: a run of it that measured nothing (its
                // endpoint down) would make the candidate look better, not be judged.
                crate::verdict::baseline::check_recorded(&run).map_err(|m| {
                    BenchError::Runtime(format!(
                        "the control run of block {} (the baseline's configuration) cannot be judged against: it {m}",
                        i + 1
                    ))
                })?;
            }
            runs.push(run);
        }
        if !go_on(&a, &b)? {
            break;
        }
    }
    Ok((a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_alternate_abba() {
        let order: Vec<Arm> = (0..3).flat_map(block).collect();
        use Arm::{Baseline as A, Candidate as B};
        assert_eq!(order, [A, B, B, A, A, B]);
    }
}
