//! Sequential compares: candidate runs (interleaved blocks) are added while a gated row is
//! undecided, judged at planned looks — 3, 5, 8, 12, … runs a side (×1.5, to the cap) — with
//! α spent linearly over the looks (Lan–DeMets α-spending, the power family's linear member,
//! Kim–DeMets) and each look's tests held to their share by the union bound, which holds
//! whatever the joint law of the looks' t statistics and bootstrap errors is. A settled row
//! stays settled; a compare also stops when every row left is out of the cap's reach
//! ([`bulk_share`]); the design is written beside the runs (`sequence.json`) so stored runs
//! replay look by look.
//!
//! The method and why: `docs/gate.md` ("Sequential compares"). References: Lan & DeMets
//! (1983), Kim & DeMets (1987), Jennison & Turnbull (2000), ch. 7 and 9.

use crate::error::BenchError;
use crate::model::comparison::Row;
use crate::model::comparison::{Comparison, SequenceSummary, Stop, Verdict};
use crate::model::metric::Metric;
use crate::model::values::{Values, MAD_TO_SD};
use crate::verdict::gate::Spend;
use crate::verdict::stats::two_sample;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The first look: runs a side (blocks) before any row is judged. Three runs give a first
/// estimate of the run-to-run spread (two degrees of freedom a side).
pub const FIRST_LOOK: usize = 3;

/// The default cap (`--max-repeat`): at 12 runs a side (blocks) a change of 1.5 times the
/// threshold is caught in nearly every round when runs differ by ≈ 4 % (as the llama-server
/// CI scenario's do), and a CI job of 40-request runs stays within minutes. `bench baseline`
/// records as many runs by default, so that a stored arm never limits what the cap can decide.
pub const DEFAULT_MAX: usize = 12;

/// The file beside a sequential compare's candidate runs that holds its design.
pub const DESIGN_FILE: &str = "sequence.json";

/// A sequential design, fixed before the first run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// Runs a side (blocks) at the planned looks, increasing; the last is the cap.
    pub looks: Vec<usize>,
    /// The α spent over the whole sequence, on each side.
    pub alpha: f64,
}

impl Design {
    /// Looks at `first`, then ×1.5 rounded up, to `max` (the last look).
    pub fn new(first: usize, max: usize, alpha: f64) -> Design {
        let max = max.max(1);
        let mut k = first.clamp(1, max);
        let mut looks = vec![k];
        while k < max {
            k = ((k as f64 * 1.5).ceil() as usize).min(max);
            looks.push(k);
        }
        Design { looks, alpha }
    }

    /// The cap: the last planned look.
    pub fn max(&self) -> usize {
        self.looks.last().copied().unwrap_or(1)
    }

    pub fn is_look(&self, n: usize) -> bool {
        self.looks.contains(&n)
    }

    /// The α spent by a look at `n` runs: α·min(n / cap, 1).
    pub fn spent(&self, n: usize) -> f64 {
        self.alpha * (n as f64 / self.max() as f64).min(1.0)
    }

    /// What a look at `n` spends after one at `prev` (0 for the first).
    pub fn spend(&self, prev: usize, n: usize) -> Spend {
        let share = (self.spent(n) - self.spent(prev)).max(0.0);
        Spend {
            fail: share,
            bound: share,
        }
    }

    /// The design in words, for reports.
    pub fn describe(&self) -> String {
        let looks: Vec<String> = self.looks.iter().map(|k| k.to_string()).collect();
        format!(
            "α-spending α·n/{} (Lan–DeMets, linear), looks at {} runs a side; each look's share split over the gated metrics on the FAIL side, each metric's own on the no-change side; settled rows stay settled",
            self.max(),
            looks.join(", ")
        )
    }

    /// The design stored runs under `dir` are replayed with: the one the command line asks
    /// for (`want`: `--alpha`, `--max-repeat`; `None` for `--repeat`'s fixed size), never
    /// the file beside the runs alone. A `sequence.json` there must be that very design, or
    /// the replay is refused naming the file — an edited one (α = 0, a single look) would
    /// otherwise judge the runs at a level nobody asked for while the report says `--alpha`.
    /// No file: `None`, the runs are judged once as a fixed-size compare of as many.
    pub fn replayed(dir: &Path, want: Option<&Design>) -> Result<Option<Design>, BenchError> {
        let Some(found) = Design::stored(dir)? else {
            return Ok(None);
        };
        let p = dir.join(DESIGN_FILE);
        let Some(want) = want else {
            return Err(BenchError::usage(format!(
                "{}: these are a sequential compare's runs, replayed look by look; leave --repeat off (or remove the file to judge them once as a fixed-size compare)",
                p.display()
            )));
        };
        if found != *want {
            return Err(BenchError::usage(format!(
                "{}: the runs were judged with --alpha {} --max-repeat {}, this compare asks for --alpha {} --max-repeat {}; pass the flags the runs were made with to replay their looks",
                p.display(),
                crate::model::readable::number(found.alpha),
                found.max(),
                crate::model::readable::number(want.alpha),
                want.max()
            )));
        }
        Ok(Some(found))
    }

    /// The design stored beside runs under `dir`, if there is one.
    pub fn stored(dir: &Path) -> Result<Option<Design>, BenchError> {
        let p = dir.join(DESIGN_FILE);
        // A design is a few dozen bytes: anything large is not one, and is not read whole.
        match crate::config::bounded_file(&p, 64 * 1024) {
            Ok(_) => {}
            Err(crate::config::Unreadable::TooLarge(len)) => {
                return Err(BenchError::Runtime(format!(
                    "{}: {len} bytes is not a sequential design (bench writes a few dozen); remove it to judge the runs as a fixed-size compare",
                    p.display()
                )))
            }
            // No regular file there: no design.
            Err(_) => return Ok(None),
        }
        let text = std::fs::read_to_string(&p)
            .map_err(|e| BenchError::Runtime(format!("cannot read {}: {e}", p.display())))?;
        let d: Design = serde_json::from_str(&text).map_err(|e| {
            BenchError::Runtime(format!(
                "{}: not a sequential design ({e}); remove it to judge the runs as a fixed-size compare",
                p.display()
            ))
        })?;
        // Bounded as --max-repeat is: a design asks for no more runs than a compare may make.
        let bounded = d.looks.last().is_some_and(|&k| (1..=1000).contains(&k));
        let alpha_ok = d.alpha > 0.0 && d.alpha < 0.5;
        // Only the looks `bench compare` plans: 3, then ×1.5 to the cap.
        let planned = bounded && alpha_ok && d == Design::new(FIRST_LOOK, d.max(), d.alpha);
        if !planned {
            return Err(BenchError::Runtime(format!(
                "{}: not a design bench writes (looks {:?}, alpha {}): looks are 3, then ×1.5 to a cap of at most 1000, and alpha is in (0, 0.5); remove the file to judge the runs as a fixed-size compare",
                p.display(),
                d.looks,
                d.alpha
            )));
        }
        Ok(Some(d))
    }
}

/// Where a sequence stands after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Every gated row is settled.
    Settled,
    /// Every row left is out of the cap's reach at what it shows.
    OutOfReach,
    /// A row regressed and stays so: the compare fails whatever the rows left show.
    Failed,
    /// Go on.
    Open,
}

/// The looks of one compare so far: the rows settled, and the comparison at the last look.
/// A fixed-size compare is the one-look design at its size ([`Sequence::fixed`]): judged
/// once, with no sequence to report.
#[derive(Debug)]
pub struct Sequence {
    design: Design,
    fixed: bool,
    looks: Vec<usize>,
    settled: Vec<crate::model::comparison::Row>,
    last: Option<Comparison>,
}

impl Sequence {
    pub fn new(design: Design) -> Sequence {
        Sequence {
            design,
            fixed: false,
            looks: Vec::new(),
            settled: Vec::new(),
            last: None,
        }
    }

    /// A fixed-size compare: one look at `runs` runs a side (blocks), at the whole α.
    pub fn fixed(runs: usize, alpha: f64) -> Sequence {
        Sequence {
            fixed: true,
            ..Sequence::new(Design {
                looks: vec![runs],
                alpha,
            })
        }
    }

    /// After `n` runs a side (blocks): judges them when a look is planned at `n`, and says
    /// whether the compare stops here and why — every gated row settled, every one left out
    /// of the cap's reach, a regression settled (unless `settle_all`), the cap (a fixed
    /// size's one look), or the budget, asked of `over_budget` only when the compare would
    /// otherwise go on. `None`: add a run.
    pub fn after(
        &mut self,
        n: usize,
        settle_all: bool,
        over_budget: impl FnOnce() -> bool,
        judge: impl FnOnce(Spend) -> Result<Comparison, BenchError>,
    ) -> Result<Option<Stop>, BenchError> {
        let max = self.design.max();
        if self.design.is_look(n) {
            let standing = self.look(n, judge)?;
            if !self.fixed {
                match standing {
                    Standing::Settled => return Ok(Some(Stop::Settled)),
                    Standing::OutOfReach => return Ok(Some(Stop::OutOfReach)),
                    Standing::Failed if !settle_all => return Ok(Some(Stop::Regressed)),
                    Standing::Failed | Standing::Open => {}
                }
            }
        }
        if n >= max {
            return Ok(Some(if self.fixed { Stop::Fixed } else { Stop::Cap }));
        }
        Ok(over_budget().then_some(Stop::Budget))
    }

    pub fn design(&self) -> &Design {
        &self.design
    }

    /// Judges the runs so far at a look at `n` runs a side (blocks): `judge` compares them
    /// spending what the look may. Rows settled before are kept as they were; rows settled now
    /// are kept from now on. Says whether every gated row is settled, or every one left is out
    /// of the cap's reach.
    pub fn look(
        &mut self,
        n: usize,
        judge: impl FnOnce(Spend) -> Result<Comparison, BenchError>,
    ) -> Result<Standing, BenchError> {
        let prev = self.looks.last().copied().unwrap_or(0);
        if n <= prev {
            return Ok(self.standing(n));
        }
        let mut c = judge(self.design.spend(prev, n))?;
        for row in c.rows.iter_mut() {
            if let Some(s) = self.settled.iter().find(|s| s.metric == row.metric) {
                *row = s.clone();
            } else if matches!(
                row.verdict,
                Verdict::Regressed | Verdict::Improved | Verdict::NoChange
            ) {
                row.settled_at = (!self.fixed).then_some(n);
                self.settled.push(row.clone());
            }
        }
        c.regressed = c.rows.iter().any(|r| r.verdict == Verdict::Regressed);
        self.looks.push(n);
        self.last = Some(c);
        Ok(self.standing(n))
    }

    fn standing(&self, n: usize) -> Standing {
        let Some(c) = &self.last else {
            return Standing::Open;
        };
        let undecided = c.undecided();
        // A row not judged yet for too few requests is undecided, not absent: while the cap's
        // runs would gate it, the compare neither counts as settled nor stops as out of reach.
        let pending = c.not_judged().iter().any(|r| self.gated_by_cap(r, n, c));
        if undecided.is_empty() && !pending {
            Standing::Settled
        } else if c.regressed {
            Standing::Failed
        } else if n < self.design.max()
            && !pending
            && undecided.iter().all(|r| !self.reachable(r, n, c))
        {
            Standing::OutOfReach
        } else {
            Standing::Open
        }
    }

    /// Whether a row not judged at `n` runs a side for too few requests
    /// ([`Row::needs_requests`]) would have them at the cap: the candidate's requests grow
    /// with its runs, a stored baseline's stay as they are, an interleaved control's grow too.
    fn gated_by_cap(&self, r: &Row, n: usize, c: &Comparison) -> bool {
        let Some(need) = r.needs_requests else {
            return false;
        };
        let grow = self.design.max() as f64 / n.max(1) as f64;
        let base = if c.interleaved {
            r.n_baseline as f64 * grow
        } else {
            r.n_baseline as f64
        };
        let cand = r.n_candidate as f64 * grow;
        n < self.design.max() && base.min(cand) >= need as f64
    }

    /// Whether a row undecided at a look at `n` could be settled at the cap if what it shows
    /// stayed as it is: its effect where it is, its standard error shrinking as the runs grow
    /// to the cap K (against a stored baseline of R runs as [`to_cap`] projects it from each
    /// arm's spread — √((1/R + 1/K) / (1/R + 1/n)) when they spread alike; √(n/K) interleaved),
    /// judged at the last look's share. An error rate with no errors in either arm reaches
    /// its bound only when the candidate's requests at the cap reach the count that bounds
    /// it. A row out of reach is not waited for: stopping adds no claim, so no error rate
    /// grows, and more runs would most likely leave it undecided anyway.
    ///
    /// A latency quantile's standard error is projected from the spread of the bulk of its
    /// runs ([`bulk_share`]), not of all of them. The gate's quantile is the arm's pooled one,
    /// and a few runs in a rare state (a server beside a busy neighbour that, now and then,
    /// serves a whole run in its other mode) move it only while they are a large share of the
    /// pool: their weight falls faster than 1/√n as runs are added, so the spread they bring
    /// at an early look overstates what the cap would show. Only the stop is made less eager;
    /// the verdicts and their error rates are untouched.
    fn reachable(&self, r: &Row, n: usize, c: &Comparison) -> bool {
        let cap = self.design.max();
        let before_last = self.design.looks.iter().rev().nth(1).copied().unwrap_or(0);
        let share = self.design.spend(before_last, cap).fail;
        let grow = cap as f64 / n as f64;
        // A quality row is decided by the arms' first passes: more runs add nothing to it.
        if r.metric.is_quality() {
            return false;
        }
        if r.metric == Metric::ErrorRate {
            if r.baseline > 0.0 || r.candidate > 0.0 {
                return true;
            }
            let need = crate::verdict::stats::exact::requests_to_bound(r.floor, 1.0 - share);
            return (r.n_candidate as f64 * grow) >= need as f64;
        }
        let (Some(df), true) = (r.df, r.se.is_finite()) else {
            return true;
        };
        let (factor, df_cap) = if c.interleaved {
            ((1.0 / grow).sqrt(), df * grow)
        } else {
            let runs = c.baseline_repetitions.max(1);
            let spreads = [log_var(&r.baseline_values), log_var(&r.candidate_values)];
            to_cap(spreads, runs, n, cap).unwrap_or((1.0, df))
        };
        let bulk = match r.metric {
            Metric::Latency(..) | Metric::TurnLatency(..) => {
                bulk_share(&r.baseline_values, &r.candidate_values)
            }
            _ => 1.0,
        };
        let se = r.se * factor * bulk;
        let m = c.gated().max(1) as f64;
        let q = |level: f64| crate::verdict::stats::t_quantile(level, df_cap);
        let bar = (q(1.0 - share / m) * se).max(r.floor);
        r.effect + q(1.0 - share) * se <= r.floor || r.effect.abs() > bar
    }

    /// Runs a side (blocks) at the last look.
    pub fn judged(&self) -> usize {
        self.looks.last().copied().unwrap_or(0)
    }

    /// The comparison at the last look, with the sequence's looks and why it stopped; `None`
    /// before any look.
    pub fn finish(mut self, stop: Stop) -> Option<Comparison> {
        let used = self.judged();
        let design = self.design.describe();
        let max_repeat = self.design.max();
        let mut c = self.last.take()?;
        // Stopped before the runs that would have judged it (a budget, a settled regression):
        // the row is undecided, and said so, never silently not gated.
        let waiting: Vec<usize> = (0..c.rows.len())
            .filter(|&i| {
                c.rows[i].verdict == Verdict::NotGated && self.gated_by_cap(&c.rows[i], used, &c)
            })
            .collect();
        let unit = if c.interleaved {
            "blocks"
        } else {
            "runs a side"
        };
        for i in waiting {
            let r = &mut c.rows[i];
            r.verdict = Verdict::Inconclusive;
            r.reason = format!(
                "inconclusive {}: not judged at {used} {unit} — an arm needs ≥ {} successful requests (have {}/{}); the cap's {max_repeat} would judge it",
                r.metric,
                r.needs_requests.unwrap_or(0),
                r.n_baseline,
                r.n_candidate
            );
        }
        c.sequence = (!self.fixed).then_some(SequenceSummary {
            looks: self.looks,
            max_repeat,
            used,
            stop,
            design,
        });
        Some(c)
    }
}

/// Against a stored baseline of `runs` runs: how the effect's standard error would shrink from
/// `n` candidate runs to `cap`, and its degrees of freedom there, by the gate's rule
/// ([`two_sample`]: pooled, or each arm's own where larger) applied to the spread of each
/// arm's per-run figures, which stands in for the run bootstrap's. Arms whose spread is
/// unknown (under two runs) are taken to spread alike, which gives √((1/R + 1/cap) /
/// (1/R + 1/n)) at R + cap − 2 df.
fn to_cap(spreads: [Option<f64>; 2], runs: usize, n: usize, cap: usize) -> Option<(f64, f64)> {
    let spreads = match spreads {
        [Some(a), Some(b)] if a + b > 0.0 => [Some(a), Some(b)],
        _ => [Some(1.0), Some(1.0)],
    };
    let (now, _) = two_sample(spreads, [runs, n])?;
    let (then, df) = two_sample(spreads, [runs, cap])?;
    (now > 0.0).then(|| ((then / now).sqrt(), df))
}

/// The variance of the logs of a row's per-run values; `None` below two positive values.
fn log_var(values: &[f64]) -> Option<f64> {
    Values::logs_of_positive(values.iter().copied()).var()
}

/// The share of a row's run-to-run spread that the bulk of its runs show, from each arm's
/// runs' own values: their logs' median absolute deviation, each arm's about its own median
/// (× [`MAD_TO_SD`], the normal's SD), over their standard deviation (about each arm's mean),
/// at most 1. About 1 when the runs spread evenly; well below 1 when a few runs lie far from
/// the rest. 1 when the arms have fewer than three runs' degrees of freedom between them.
pub fn bulk_share(baseline: &[f64], candidate: &[f64]) -> f64 {
    let (mut dev, mut ss, mut df) = (Vec::new(), 0.0, 0);
    for values in [baseline, candidate] {
        let logs = Values::logs_of_positive(values.iter().copied());
        if logs.len() < 2 {
            continue;
        }
        ss += logs.sum_sq();
        df += logs.len() - 1;
        dev.extend_from_slice(logs.deviations().as_slice());
    }
    let sd = (ss / df.max(1) as f64).sqrt();
    match Values::new(dev).median() {
        Some(mad) if df >= 3 && sd >= 1e-9 => (mad * MAD_TO_SD / sd).min(1.0),
        _ => 1.0,
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_reach;
