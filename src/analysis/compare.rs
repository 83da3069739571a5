//! `bench compare` from its checked configuration: the scenario read once, its gate and the
//! stored reference, what the flags can decide (`--plan`), and the candidate judged —
//! measured now, read from stored runs, or interleaved with the baseline's configuration —
//! by [`super::judge::Judge`], the gate file's waivers applied to what regressed, with the
//! revision under test recorded.

use super::judge::{ControlArm, Judge, Judged, Size};
use crate::config::compare::{Arms, CompareConfig};
use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::comparison::Waiver;
use crate::model::scenario::Scenario;
use crate::verdict::compare::comparable;
use crate::verdict::sequential::Design;

/// A compare ready to run: everything the flags name read and checked.
pub struct Compare {
    pub config: CompareConfig,
    scenario: Scenario,
    spec: RunSpec,
    gate: GateConfig,
    stored: Baseline,
    size: Size,
    waivers: Vec<Waiver>,
}

impl Compare {
    /// Reads the scenario (once: an interleave's control arm is built from the same typed
    /// scenario), the gate and the stored reference, and checks the size flags.
    pub fn new(config: CompareConfig) -> Result<Compare, BenchError> {
        let scenario = crate::config::scenario::load(&config.scenario)?;
        let spec = RunSpec::from_scenario(scenario.clone(), &config.scenario, &config.flags)?;
        let gate = GateConfig::for_scenario(config.gate.as_deref(), &spec.scenario, config.alpha)?;
        let waivers = crate::config::waiver::for_compare(config.gate.as_deref())?;
        let size = Size::from_flags(
            config.repeat,
            config.max_repeat,
            config.budget.as_deref(),
            config.alpha,
        )?;
        let stored = crate::verdict::stored::reference(
            &config.against,
            &config.baselines,
            &spec.scenario.name,
            &config.name,
        )?;
        Ok(Compare {
            config,
            scenario,
            spec,
            gate,
            stored,
            size,
            waivers,
        })
    }

    /// `--plan`: what the baseline's runs say this compare can decide, and the sequential
    /// design the flags give.
    pub fn plan(&self) -> (String, Design) {
        let design = self.size.design(self.config.alpha);
        let interleaved = matches!(self.config.arms, Arms::Interleaved { .. });
        let text = crate::verdict::forecast::text(&self.stored, &self.gate, &design, interleaved);
        (text, design)
    }

    /// Runs (or reads) the candidate and judges it.
    pub async fn judge(self) -> Result<Judged, BenchError> {
        let Compare {
            config: c,
            scenario,
            spec,
            gate,
            stored,
            size,
            waivers,
        } = self;
        if !matches!(c.arms, Arms::Stored { .. }) {
            // Refused now rather than after minutes of runs: what the runs will be is known.
            let hash = spec.scenario.traffic_hash();
            comparable(&stored, &hash, &spec.scenario, &spec.vars, c.allow_multi)?;
        }
        let judge = Judge {
            cfg: &gate,
            allow_multi: c.allow_multi,
            steady_state: c.steady_state,
            settle_all: c.settle_all,
            size,
        };
        let rejudge = c.rejudge_command();
        let mut judged = match &c.arms {
            Arms::Interleaved {
                baseline_endpoint,
                switch,
            } => {
                let arm = ControlArm {
                    scenario_path: &c.scenario,
                    flags: &c.flags,
                    baseline_endpoint: baseline_endpoint.as_deref(),
                    switch: switch.as_deref(),
                };
                let arms = (scenario, spec);
                judge.interleaved(stored, arms, &arm, &rejudge).await?
            }
            Arms::Stored { candidate, control } => {
                if c.flags.configures_a_run() {
                    crate::say!("warning: --candidate given: --opt/--endpoint are ignored (the stored runs are judged as they are)");
                }
                judge.stored(stored, candidate, control)?
            }
            Arms::Measured => judge.measured(stored, spec, &rejudge).await?,
        };
        let today = chrono::Utc::now().date_naive();
        crate::verdict::waiver::apply(&mut judged.comparison, &waivers, today);
        judged.comparison.undecided_fails = c.undecided_fails;
        judged.comparison.revision = crate::config::provenance::revision();
        Ok(judged)
    }
}
