//! `bench compare`'s arms and looks: the candidate run now against a stored baseline, run in
//! ABBA blocks with a control arm (`--interleave`), or read from stored runs (`--candidate`,
//! `--control`), and judged at the looks of its size — a fixed number of runs judged once at
//! α, or a sequential design that adds runs while a gated row is undecided
//! ([`crate::verdict::sequential`]), up to its cap or its wall-time budget. Stored runs of a
//! sequential compare are replayed look by look from the design written beside them.

use crate::analysis::interleave::{self, check_control, control_opts};
use crate::config::run::RunSpec;
use crate::config::thresholds::GateConfig;
use crate::error::BenchError;
use crate::model::baseline::Baseline;
use crate::model::comparison::{Comparison, Stop};
use crate::model::result::RunResult;
use crate::model::scenario::Scenario;
use crate::session::repeat::{repeat, Halt, Layout};
use crate::session::Session;
use crate::verdict::compare::compare_at;
use crate::verdict::gate::{self, Spend};
use crate::verdict::sequential::{Design, Sequence, DEFAULT_MAX, DESIGN_FILE, FIRST_LOOK};
use crate::verdict::stored::{self as stored_runs, Role};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How many runs a compare makes.
#[derive(Debug, Clone)]
pub enum Size {
    /// This many, judged once at α (`--repeat`).
    Fixed(usize),
    /// Up to the design's cap, stopping at the first look where every gated row is settled,
    /// or before a run that would end past the budget.
    Sequential {
        design: Design,
        budget: Option<Duration>,
    },
}

impl Size {
    /// `--repeat N`: a fixed size; else sequential to `--max-repeat` (default
    /// [`DEFAULT_MAX`]) within `--budget` (default 30 minutes: a CI job's share).
    pub fn from_flags(
        repeat: Option<u32>,
        max_repeat: Option<u32>,
        budget: Option<&str>,
        alpha: f64,
    ) -> Result<Size, BenchError> {
        use crate::config::values::{parse_duration, repeats};
        if let Some(k) = repeat {
            return Ok(Size::Fixed(repeats(k)?));
        }
        let max = crate::config::values::repeats_of(
            "--max-repeat",
            max_repeat.unwrap_or(DEFAULT_MAX as u32),
        )?;
        let budget = parse_duration(budget.unwrap_or("30m"))
            .map_err(|m| BenchError::usage(format!("--budget: {m}")))?;
        Ok(Size::Sequential {
            design: Design::new(FIRST_LOOK, max, alpha),
            budget: Some(Duration::from_secs_f64(budget)),
        })
    }

    /// The looks this size judges at: one at a fixed size.
    pub fn design(&self, alpha: f64) -> Design {
        match self {
            Size::Fixed(k) => Design {
                looks: vec![*k],
                alpha,
            },
            Size::Sequential { design, .. } => design.clone(),
        }
    }
}

/// What a compare judges with.
pub struct Judge<'a> {
    pub cfg: &'a GateConfig,
    pub allow_multi: bool,
    pub size: Size,
    /// Judge only each run's steady state (`--steady-state`).
    pub steady_state: bool,
    /// Keep adding runs after a regression is settled, until every row is (`--settle-all`).
    pub settle_all: bool,
}

/// The judged comparison and the arms it judged.
pub struct Judged {
    pub comparison: Comparison,
    pub base: Baseline,
    pub cand: Vec<RunResult>,
}

/// The looks of one compare as its runs come in.
struct Looks<'a> {
    judge: &'a Judge<'a>,
    seq: Sequence,
    started: Instant,
    stop: Stop,
}

impl<'a> Looks<'a> {
    fn new(judge: &'a Judge<'a>) -> Looks<'a> {
        let alpha = judge.cfg.alpha;
        let seq = match &judge.size {
            Size::Fixed(k) => Sequence::fixed(*k, alpha),
            Size::Sequential { design, .. } => Sequence::new(design.clone()),
        };
        Looks {
            seq,
            judge,
            started: Instant::now(),
            stop: Stop::Cap,
        }
    }

    /// After `n` runs a side (blocks): whether to go on ([`Sequence::after`] decides, the
    /// budget measured here).
    fn after(
        &mut self,
        n: usize,
        compare: impl FnOnce(Spend) -> Result<Comparison, BenchError>,
    ) -> Result<bool, BenchError> {
        let budget = match self.judge.size {
            Size::Sequential { budget, .. } => budget,
            Size::Fixed(_) => None,
        };
        let started = self.started;
        let over = || {
            let spent = started.elapsed();
            budget.is_some_and(|b| spent + spent / n.max(1) as u32 > b)
        };
        match self.seq.after(n, self.judge.settle_all, over, compare)? {
            Some(stop) => {
                self.stop = stop;
                Ok(false)
            }
            None => Ok(true),
        }
    }

    /// The comparison at the last look, taken at `n` when none was (a budget's stop, runs
    /// that ended before a look).
    fn finish(
        mut self,
        n: usize,
        compare: impl FnOnce(Spend) -> Result<Comparison, BenchError>,
    ) -> Result<Comparison, BenchError> {
        if self.seq.judged() < n {
            self.seq.look(n, compare)?;
        }
        self.seq
            .finish(self.stop)
            .ok_or_else(|| BenchError::Runtime("no run was judged".into()))
    }
}

impl Judge<'_> {
    fn compare(
        &self,
        base: &Baseline,
        cand: &[RunResult],
        spend: Spend,
    ) -> Result<Comparison, BenchError> {
        if self.steady_state {
            return self.compare_steady(base, cand, spend);
        }
        let mut c = compare_at(base, cand, self.allow_multi, self.cfg, spend)?;
        c.interleaved = gate::interleaved(&base.repetitions, cand);
        Ok(c)
    }

    /// [`Self::compare`] of every run's steady state ([`crate::metrics::windows::steady_only`]).
    fn compare_steady(
        &self,
        base: &Baseline,
        cand: &[RunResult],
        spend: Spend,
    ) -> Result<Comparison, BenchError> {
        use crate::metrics::windows::steady_only;
        let cut = |runs: &[RunResult]| -> Result<Vec<RunResult>, BenchError> {
            runs.iter()
                .map(|r| steady_only(r).map_err(|e| BenchError::usage(format!("--steady-state: {e}; judge the whole runs instead (leave --steady-state off)"))))
                .collect()
        };
        let steady_base = Baseline {
            repetitions: cut(&base.repetitions)?,
            ..base.clone()
        };
        let steady_cand = cut(cand)?;
        let mut c = compare_at(
            &steady_base,
            &steady_cand,
            self.allow_multi,
            self.cfg,
            spend,
        )?;
        c.interleaved = gate::interleaved(&steady_base.repetitions, &steady_cand);
        let kept: u64 = steady_base
            .repetitions
            .iter()
            .chain(&steady_cand)
            .map(|r| r.summary.counts.sent)
            .sum();
        let all: u64 = base
            .repetitions
            .iter()
            .chain(cand)
            .map(|r| r.summary.counts.sent)
            .sum();
        c.notes.push(format!(
            "--steady-state: judged each run's steady state only (MSER-5 warm-up cut, drain after the last send left out): {kept} of {all} measured requests"
        ));
        Ok(c)
    }

    /// Writes the design beside the runs, so that judging them again replays its looks.
    fn write_design(&self, dir: &Path) -> Result<(), BenchError> {
        if let Size::Sequential { design, .. } = &self.size {
            let text = serde_json::to_vec_pretty(design)
                .map_err(|e| BenchError::Runtime(format!("cannot write the design: {e}")))?;
            crate::output::write_atomic(&dir.join(DESIGN_FILE), &text)?;
        }
        Ok(())
    }

    fn cap(&self) -> usize {
        self.size.design(self.cfg.alpha).max()
    }

    /// Candidate runs now against the stored baseline; `Err` with the runs kept named when
    /// one was cut short or failed.
    pub async fn measured(
        &self,
        stored: Baseline,
        spec: RunSpec,
        rejudge: &str,
    ) -> Result<Judged, BenchError> {
        let session = Session::new(spec)?;
        let out = session.out_dir(&session.spec().scenario.name);
        crate::output::check_fresh(&out)?;
        let sequential = matches!(self.size, Size::Sequential { .. });
        let layout = Layout {
            out: &out,
            numbered: sequential,
            label: "candidate",
            at_most: sequential,
        };
        if sequential {
            self.write_design(&out)?;
        }
        let mut looks = Looks::new(self);
        let done = repeat(&session, self.cap(), &layout, |runs| {
            looks.after(runs.len(), |s| self.compare(&stored, runs, s))
        })
        .await?;
        let hint = kept(
            !done.runs.is_empty(),
            &format!("the {} candidate runs finished are", done.runs.len()),
            &out,
            &format!("{rejudge} --candidate {}", out.display()),
        );
        match done.stopped {
            None => crate::say!("candidate runs written to {}", out.display()),
            Some(Halt::Failed(e)) => {
                return Err(BenchError::Incomplete(format!("error: {e}{hint}")))
            }
            Some(Halt::Interrupted) => {
                return Err(BenchError::Incomplete(hint.trim_start().to_string()))
            }
        }
        let n = done.runs.len();
        let comparison = looks.finish(n, |s| self.compare(&stored, &done.runs, s))?;
        Ok(Judged {
            comparison,
            base: stored,
            cand: done.runs,
        })
    }

    /// The control arm run now in ABBA blocks with the candidate (`--interleave`); the control
    /// runs become the baseline judged against, the stored one naming their configuration.
    pub async fn interleaved(
        &self,
        stored: Baseline,
        (scenario, spec): (Scenario, RunSpec),
        arm: &ControlArm<'_>,
        rejudge: &str,
    ) -> Result<Judged, BenchError> {
        let opts = control_opts(
            &stored,
            &spec,
            arm.flags,
            arm.baseline_endpoint,
            arm.switch.is_some(),
        )?;
        let control = RunSpec::from_scenario(scenario, arm.scenario_path, &opts)?;
        check_control(&stored, &control)?;
        let candidate = Session::new(spec)?;
        let out = candidate.out_dir(&candidate.spec().scenario.name);
        crate::output::check_fresh(&out)?;
        self.write_design(&out.join("candidate"))?;
        let hint = {
            let (out, dir, rejudge) = (out.clone(), out.display().to_string(), rejudge.to_string());
            move || {
                kept(
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
        let name = format!("{} (interleaved control)", stored.name);
        let mut looks = Looks::new(self);
        let control = Session::new(control)?;
        let (a, b) = interleave::run(
            &control,
            &candidate,
            self.cap(),
            arm.switch,
            &out,
            |a, b| {
                // The control arm becomes a baseline only at a look.
                looks.after(b.len(), |s| {
                    self.compare(&Baseline::new(&name, a.to_vec())?, b, s)
                })
            },
        )
        .await
        .map_err(|e| BenchError::Incomplete(format!("error: {e}{}", hint())))?;
        crate::say!("control and candidate runs written under {}", out.display());
        let base = Baseline::new(&name, a)?;
        let comparison = looks.finish(b.len(), |s| self.compare(&base, &b, s))?;
        Ok(Judged {
            comparison,
            base,
            cand: b,
        })
    }

    /// Stored runs judged again (`--candidate`), against the stored baseline or stored control
    /// runs (`--control`): replayed look by look when a sequential design lies beside them,
    /// else judged once.
    pub fn stored(
        &self,
        stored: Baseline,
        candidate: &[PathBuf],
        control: &[PathBuf],
    ) -> Result<Judged, BenchError> {
        let mut cand = stored_runs::load(candidate, Role::Candidate)?;
        // The design comes from the flags; a sequence.json beside the runs must agree.
        let want = match &self.size {
            Size::Sequential { design, .. } => Some(design),
            Size::Fixed(_) => None,
        };
        let design = match candidate {
            [dir] if dir.is_dir() => Design::replayed(dir, want)?,
            _ => None,
        };
        let replay = Judge {
            cfg: self.cfg,
            allow_multi: self.allow_multi,
            steady_state: self.steady_state,
            settle_all: self.settle_all,
            size: match design {
                Some(design) => Size::Sequential {
                    design,
                    budget: None,
                },
                None => Size::Fixed(cand.runs.len()),
            },
        };
        cand.runs.sort_by_key(|r| r.started_at);
        let paired = !control.is_empty();
        let base = if control.is_empty() {
            stored
        } else {
            let mut control = stored_runs::load(control, Role::Control)?;
            stored_runs::check_control(&stored, &control)?;
            stored_runs::whole_blocks(&mut control, &mut cand);
            control.runs.sort_by_key(|r| r.started_at);
            let name = format!("{} (stored control)", stored.name);
            Baseline::new(&name, control.runs)?
        };
        // The control arm's first n runs, built only at a look; the stored baseline as it is.
        let arm = |n: usize| -> Result<std::borrow::Cow<Baseline>, BenchError> {
            if paired {
                let runs = base.repetitions[..n].to_vec();
                Ok(std::borrow::Cow::Owned(Baseline::new(&base.name, runs)?))
            } else {
                Ok(std::borrow::Cow::Borrowed(&base))
            }
        };
        let mut looks = Looks::new(&replay);
        let mut n = 0;
        let mut going = true;
        while going && n < cand.runs.len() {
            n += 1;
            going = looks.after(n, |s| replay.compare(&*arm(n)?, &cand.runs[..n], s))?;
        }
        if going && matches!(replay.size, Size::Sequential { .. }) {
            // The runs end before the design stopped: said as such, not as the cap.
            looks.stop = Stop::RunsEnded;
        }
        let b = arm(n)?.into_owned();
        let comparison = looks.finish(n, |s| replay.compare(&b, &cand.runs[..n], s))?;
        Ok(Judged {
            comparison,
            base: b,
            cand: cand.runs[..n].to_vec(),
        })
    }
}

/// How `--interleave` reaches the baseline's configuration.
pub struct ControlArm<'a> {
    pub scenario_path: &'a Path,
    pub flags: &'a crate::config::flags::Flags,
    pub baseline_endpoint: Option<&'a str>,
    pub switch: Option<&'a str>,
}

/// After a compare stopped part-way with runs on disk (`any`): where they are (`what` are
/// kept under `out`) and the command that judges them; empty when none are.
fn kept(any: bool, what: &str, out: &Path, command: &str) -> String {
    if !any {
        return String::new();
    }
    format!(
        "\n{what} kept under {}; judge them with:\n  {command}",
        out.display()
    )
}
