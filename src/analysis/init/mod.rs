//! `bench init`: sets up the regression gate in the repository of the current directory.
//!
//! It asks nothing it can find out. The model comes from the endpoint's `GET /v1/models`; the
//! scenario ([`files::scenario`]) is written and its baseline recorded there (on the reference
//! server when one is given; after `--switch`'s command switched to the baseline), and the recorded runs say what the server does that the gate
//! depends on — whether it streams usage (else output tokens are counted one a chunk), honours
//! `ignore_eos`, opens a chat stream with a text-less chunk, serves metrics bench maps. The gate
//! table ([`files::gate`]) then gates only the rows that baseline's plan
//! ([`crate::verdict::forecast::plan`]) can decide within the default sequential cap, and
//! turns the others off with the reason: a row that could never be decided would read
//! `undecided` in every compare and guard nothing. `ci/gate.sh` and the workflow are the files
//! this project ships (`ci/gate.sh`, `ci/github/bench-gate.yml`).
//!
//! How the arms are measured is chosen from what the job can serve: the embedded simulator or
//! a second server (`--baseline-endpoint`) or a switch command (`--switch`) → interleaved, both
//! arms on the same machine in the same minutes; a single server with no way back to the
//! reference → the stored baseline, and init says what that costs (a stored baseline measures
//! the system of the day it was recorded).

pub mod files;

use crate::analysis::interleave::Arm;
use crate::analysis::record::{record, Recording};
use crate::config::flags::Flags;
use crate::config::run::RunSpec;
use crate::config::thresholds::{GateConfig, DEFAULT_ALPHA};
use crate::engine::client::{list_models, Target};
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::session::Session;
use crate::verdict::forecast::{plan, RowPlan};
use crate::verdict::sequential::{Design, DEFAULT_MAX, FIRST_LOOK};
use std::path::{Path, PathBuf};

/// How the gate reaches the reference configuration.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The embedded simulator serves both arms.
    Simulator,
    /// A second server serves the reference configuration.
    Endpoint(String),
    /// A command switches the one server between the arms.
    Switch(String),
    /// Only the stored baseline.
    Stored,
}

impl Reference {
    pub fn interleaves(&self) -> bool {
        *self != Reference::Stored
    }
}

/// The load a run of the written scenario makes.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub requests: u64,
    pub concurrency: u32,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What to set up.
#[derive(Debug, Clone)]
pub struct Setup {
    pub endpoint: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub reference: Reference,
    pub name: String,
    pub shape: Shape,
    pub repeat: usize,
    pub comment: bool,
    pub force: bool,
}

/// What was set up.
pub struct Done {
    pub baseline: Baseline,
    pub rows: Vec<RowPlan>,
    /// What the recorded runs showed about the server.
    pub findings: Vec<String>,
    pub files: Vec<PathBuf>,
}

/// The files init writes, relative to the repository.
pub struct Paths {
    pub scenario: PathBuf,
    pub baseline: PathBuf,
    pub gate: PathBuf,
    pub script: PathBuf,
    pub workflow: PathBuf,
}

impl Paths {
    pub fn new(name: &str) -> Result<Paths, BenchError> {
        Ok(Paths {
            scenario: Path::new("scenarios").join(format!("{name}.toml")),
            baseline: crate::verdict::baseline::path(Path::new("baselines"), name, "main")?,
            gate: "ci/gate.toml".into(),
            script: "ci/gate.sh".into(),
            workflow: ".github/workflows/bench-gate.yml".into(),
        })
    }

    fn all(&self) -> [&Path; 5] {
        [
            &self.scenario,
            &self.baseline,
            &self.gate,
            &self.script,
            &self.workflow,
        ]
    }
}

/// Probes the endpoint, writes the scenario, records its baseline and writes the gate files.
pub async fn init(s: &Setup) -> Result<Done, BenchError> {
    let paths = Paths::new(&s.name)?;
    let taken: Vec<String> = paths
        .all()
        .into_iter()
        .filter(|p| p.exists())
        .map(|p| p.display().to_string())
        .collect();
    if !taken.is_empty() && !s.force {
        return Err(BenchError::usage(format!(
            "{} already exist{}; pass --force to replace {}, or --name for another scenario",
            taken.join(", "),
            if taken.len() == 1 { "s" } else { "" },
            if taken.len() == 1 { "it" } else { "them" }
        )));
    }
    if let Reference::Switch(c) = &s.reference {
        if c.contains(['\'', '\n']) {
            return Err(BenchError::usage(
                "--switch: write the command without single quotes or line breaks (ci/gate.toml keeps it as a TOML literal string)",
            ));
        }
    }
    let model = match (&s.model, &s.endpoint) {
        (Some(m), _) => Some(m.clone()),
        (None, Some(e)) => Some(only_model(e, s.api_key_env.as_deref()).await?),
        (None, None) => None,
    };
    write(
        &paths.scenario,
        &files::scenario(s, model.as_deref()),
        false,
    )?;
    let mut flags = Flags::defaults();
    if let Reference::Endpoint(e) = &s.reference {
        flags.set_endpoint(e);
    }
    let spec = RunSpec::from_scenario(
        crate::config::scenario::load(&paths.scenario)?,
        &paths.scenario,
        &flags,
    )?;
    let scenario = spec.scenario.clone();
    let recording = Recording {
        name: "main",
        repeat: s.repeat,
        path: &paths.baseline,
        force: s.force,
        scenario: &paths.scenario,
        baselines: Path::new("baselines"),
    };
    recording.check()?;
    let session = Session::new(spec)?;
    if let Reference::Switch(cmd) = &s.reference {
        crate::analysis::interleave::switch_to(cmd, Arm::Baseline, &session).await?;
    }
    let (baseline, _) = record(&session, &recording).await?;
    let gate = GateConfig::new(&[&scenario.gate], DEFAULT_ALPHA, scenario.seed)?;
    let design = Design::new(FIRST_LOOK, DEFAULT_MAX, DEFAULT_ALPHA);
    let rows = never_nothing(plan(&baseline, &gate, &design, s.reference.interleaves()))?;
    let findings = findings(&baseline);
    let gate_text = files::gate(s, &paths.scenario, &rows, &findings);
    write(&paths.gate, &gate_text, false)?;
    write(&paths.script, files::GATE_SCRIPT, true)?;
    write(&paths.workflow, &files::workflow(s.comment), false)?;
    Ok(Done {
        baseline,
        rows,
        findings,
        files: paths.all().iter().map(|p| p.to_path_buf()).collect(),
    })
}

/// The largest regression a row may need before the cap catches it and still be gated when no
/// row settles: a gate that only a doubling fails guards next to nothing.
const CATCHES_AT_MOST_PCT: f64 = 100.0;

/// A gate that gates no metric would pass every change, so when the baseline's runs let no
/// row settle within the cap, the rows the cap still catches a regression of at most
/// [`CATCHES_AT_MOST_PCT`] with are gated anyway, saying so: an unchanged candidate reads
/// `undecided` on them (named in the headline), a regression beyond what the cap catches fails.
/// Where not even that holds, init stops with an error rather than write a gate that guards
/// nothing.
fn never_nothing(mut rows: Vec<RowPlan>) -> Result<Vec<RowPlan>, BenchError> {
    if rows.iter().any(|r| r.runs.is_some()) {
        return Ok(rows);
    }
    for r in &mut rows {
        if let Some(p) = r.detectable_pct.filter(|p| *p <= CATCHES_AT_MOST_PCT) {
            r.runs = Some(DEFAULT_MAX);
            r.advice = Some(format!(
                "gated though the baseline's runs let no row settle within the cap: an unchanged candidate reads undecided; {DEFAULT_MAX} runs catch a regression of {p:.0} %"
            ));
        }
    }
    if rows.iter().any(|r| r.runs.is_some()) {
        return Ok(rows);
    }
    Err(BenchError::Runtime(format!(
        "the baseline's runs vary too much for any metric to be gated (even a regression of {CATCHES_AT_MOST_PCT:.0} % would pass unseen): {}; record steadier runs (more --requests, a quieter machine) or more of them (--repeat), then run bench init --force again",
        rows.iter()
            .filter_map(|r| r.spread.map(|s| format!("{} ≈ {:.0} %", r.metric, s * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// The one model the endpoint lists (or an error naming them all).
async fn only_model(endpoint: &str, key_env: Option<&str>) -> Result<String, BenchError> {
    let key = key_env.and_then(|v| std::env::var(v).ok());
    let target = Target::new(
        endpoint,
        crate::model::scenario::Api::Chat,
        String::new(),
        key,
    )?;
    let models = list_models(&target).await?;
    match models.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(BenchError::usage(format!(
            "{}/models lists no model; pass --model",
            target.public_endpoint()
        ))),
        many => Err(BenchError::usage(format!(
            "{}/models lists {} models ({}); pass --model with the one to gate",
            target.public_endpoint(),
            many.len(),
            many.join(", ")
        ))),
    }
}

/// What the baseline's runs showed about the server, a sentence each.
pub fn findings(b: &Baseline) -> Vec<String> {
    let runs = &b.repetitions;
    let sum = |f: &dyn Fn(&crate::model::result::RunResult) -> u64| runs.iter().map(f).sum::<u64>();
    let ok = sum(&|r| r.summary.counts.ok);
    let no_usage = sum(&|r| r.summary.tokens.usage_missing);
    let mismatch = sum(&|r| r.summary.tokens.output_len_mismatch);
    let textless = sum(&|r| {
        r.summary
            .counts
            .textless_first_chunk
            .as_ref()
            .map_or(0, |t| t.requests)
    });
    let engine = runs
        .iter()
        .find_map(|r| r.server_metrics.as_ref().and_then(|m| m.engine.clone()));
    let mut out = vec![match no_usage {
        0 => format!("usage streamed in all {ok} requests: token counts are the server's"),
        n => format!("no usage streamed in {n} of {ok} requests: their output tokens are counted one a chunk"),
    }];
    out.push(match mismatch {
        0 => "ignore_eos honoured: every answer ran to max_tokens".to_string(),
        n => format!("{n} of {ok} answers did not run to max_tokens (ignore_eos not honoured): TPOT and throughput compare answers of different lengths"),
    });
    if textless > 0 {
        out.push(format!("{textless} of {ok} chat streams opened with a text-less chunk: TTFT is timed at the first chunk with text"));
    }
    out.push(match engine {
        Some(e) => format!(
            "server metrics: {e}'s names mapped (queueing and KV cache beside each verdict)"
        ),
        None => "server metrics: none recognized at the endpoint's /metrics".to_string(),
    });
    out
}

/// Writes `text` to `path` atomically (its folders made on the way), executable when `exec`.
fn write(path: &Path, text: &str, exec: bool) -> Result<(), BenchError> {
    crate::output::write_atomic(path, text.as_bytes())?;
    if exec {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).map_err(|e| {
            BenchError::Runtime(format!("cannot make {} executable: {e}", path.display()))
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(metric: &str, runs: Option<usize>, detectable_pct: Option<f64>) -> RowPlan {
        RowPlan {
            metric: metric.parse().unwrap(),
            threshold: "10%".into(),
            spread: Some(0.2),
            runs,
            detectable_pct,
            advice: runs.is_none().then(|| "runs differ by ≈ 20 %".into()),
        }
    }

    #[test]
    fn rows_that_settle_are_the_gate() {
        let rows = never_nothing(vec![
            row("ttft.p50", Some(5), Some(9.0)),
            row("tpot.p99", None, Some(60.0)),
        ])
        .unwrap();
        assert_eq!(rows[0].runs, Some(5));
        assert_eq!(rows[1].runs, None, "a row that does not settle stays off");
    }

    #[test]
    fn when_none_settles_the_rows_the_cap_still_catches_are_gated_saying_so() {
        let rows = never_nothing(vec![
            row("ttft.p50", None, Some(38.0)),
            row("ttft.p99", None, Some(240.0)),
        ])
        .unwrap();
        assert_eq!(rows[0].runs, Some(DEFAULT_MAX));
        let why = rows[0].advice.as_deref().unwrap();
        assert!(
            why.contains("unchanged candidate reads undecided") && why.contains("38 %"),
            "{why}"
        );
        assert_eq!(rows[1].runs, None, "a row only a tripling fails stays off");
    }

    #[test]
    fn a_gate_that_would_guard_nothing_is_an_error() {
        let e = never_nothing(vec![
            row("ttft.p50", None, Some(150.0)),
            row("error_rate", None, None),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("vary too much") && e.contains("ttft.p50 ≈ 20 %") && e.contains("--repeat"),
            "{e}"
        );
    }
}
