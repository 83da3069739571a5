//! `bench sweep`: one scenario at a series of loads, the throughput–latency curve, and the
//! highest rate that still meets the SLOs.
//!
//! * `--rates 1,2,4` (open loop, the scenario's arrival law) or `--concurrencies 1,8,32`
//!   (closed loop): one run per point.
//! * `--auto N` (GuideLLM's sweep): a synchronous run (concurrency 1) and a max-throughput run
//!   (`--max-concurrency-probe`, default 64 concurrent) bound the range; N rates evenly spaced
//!   between the two achieved request rates follow.
//! * `--find-max-rate`: bisection between those bounds for the highest rate at which at least
//!   `--attainment` (default 95 %) of requests meet every SLO (an overloaded server fails
//!   this through the queueing it adds to TTFT); it stops when the bracket is within
//!   `--tolerance` (default 10 %) of its upper end, or after 8 probes. The upper end is a rate
//!   measured to fail: the max-throughput rate tried as an open loop, doubled while it passes
//!   (3 times at most; past that the passing rate is reported as a lower bound).
//!
//! A series stops climbing at the first point that over-saturated its server — served below
//! offered load while TTFT kept rising inside the point (`analysis::saturation`) — and the
//! sweep reports the last tested rate that did not (`last_sustainable_rps`); or when two
//! points show the server saturated: achieved throughput rose less than 5 % from the previous
//! point while TTFT p50 grew by more than 50 %.

use crate::config::run::RunSpec;
pub use crate::config::sweep::{Load, SweepPlan};
use crate::error::BenchError;
use crate::model::metric::Latency;
use crate::model::result::RunResult;
use crate::model::sweep::{Point, Sweep};
use crate::session::Session;
use std::path::{Path, PathBuf};

/// A sweep's figures from one run.
pub fn point(
    load: String,
    offered: Option<f64>,
    conc: Option<u32>,
    r: &RunResult,
    dir: &Path,
) -> Point {
    let s = &r.summary;
    let l = |m: Latency| s.latency(m).cloned();
    let (t, p) = (l(Latency::Ttft), l(Latency::Tpot));
    let slo = &r.scenario.slo;
    // From the summary's counts, which cover every request whether or not its record was kept.
    let ok = s.counts.ok;
    let attainment = (!slo.is_empty() && ok > 0)
        .then(|| s.throughput.goodput_requests.unwrap_or(0) as f64 / ok as f64);
    Point {
        load,
        offered_rps: offered,
        concurrency: conc,
        achieved_rps: s.throughput.request_rps,
        output_tps: s.throughput.output_tps,
        goodput_rps: s.throughput.goodput_rps,
        slo_attainment: attainment,
        ttft_p50_ms: t.as_ref().map_or(0.0, |x| x.p50),
        ttft_p95_ms: t.as_ref().map_or(0.0, |x| x.p95),
        ttft_p99_ms: t.as_ref().map_or(0.0, |x| x.p99),
        tpot_p50_ms: p.as_ref().map_or(0.0, |x| x.p50),
        tpot_p95_ms: p.as_ref().map_or(0.0, |x| x.p95),
        tpot_p99_ms: p.as_ref().map_or(0.0, |x| x.p99),
        errors: s.counts.errors.values().sum(),
        sent: s.counts.sent,
        peak_concurrency: s.throughput.peak_concurrency,
        run_dir: dir.display().to_string(),
        saturation: offered.and_then(|_| super::saturation::test(r)),
    }
}

/// Runs one point after another, each a session of its own, under `out/NN-load/`: the one
/// spec of the sweep at each point's load.
struct Runner {
    spec: RunSpec,
    out: PathBuf,
    n: usize,
}

impl Runner {
    async fn at(&mut self, load: Load) -> Result<Point, BenchError> {
        let (rate, conc) = match load {
            Load::Rate(r) => (Some(r), None),
            Load::Concurrency(c) => (None, Some(c)),
        };
        self.n += 1;
        let label = load.label();
        crate::say!("sweep: point {} ({label})", self.n);
        let session = Session::new(self.spec.with_load(rate, conc)?)?;
        let dir = self
            .out
            .join(format!("{:02}-{}", self.n, label.replace('=', "-")));
        let r = session.run_to(&dir, false).await?;
        if !r.complete {
            return Err(BenchError::Runtime("the sweep was interrupted".into()));
        }
        Ok(point(label, rate, conc, &r, &dir))
    }
}

fn saturated(prev: &Point, cur: &Point) -> bool {
    cur.achieved_rps < prev.achieved_rps * 1.05 && cur.ttft_p50_ms > prev.ttft_p50_ms * 1.5
}

/// The least share of an open-loop point's offered load it must have served to count as
/// sustained by `--find-max-rate`.
const SERVED_SHARE: f64 = 0.9;

/// Whether a point meets the SLOs *at the load it was offered*. A short open-loop run can end
/// before the queue an unsustainable rate builds pushes TTFT past its SLO, so meeting the
/// SLOs is not enough: the server must also have served the load — in the run's steady state
/// at least [`SERVED_SHARE`] of the offered rate and not over-saturated by the sweep's own test
/// (`analysis::saturation`), or, in a run too short for a steady state, over the whole run.
/// A closed loop serves what it sends by definition.
fn passes(p: &Point, attainment: f64) -> bool {
    p.slo_attainment.is_some_and(|a| a >= attainment) && served(p)
}

fn served(p: &Point) -> bool {
    let Some(offered) = p.offered_rps.filter(|r| *r > 0.0) else {
        return true;
    };
    match &p.saturation {
        Some(s) => !s.over && s.served_rps >= SERVED_SHARE * s.offered_rps,
        None => p.achieved_rps >= SERVED_SHARE * offered,
    }
}

/// Adds a point; true when the series should stop: the point over-saturated its server
/// (`analysis::saturation`), or — between two points — throughput stopped rising while TTFT
/// grew.
fn push(sweep: &mut Sweep, p: Point, early_stop: bool) -> bool {
    let over = p
        .saturation
        .as_ref()
        .filter(|s| s.over)
        .map(|s| s.evidence());
    let flat = sweep.points.last().is_some_and(|prev| saturated(prev, &p));
    let load = p.load.clone();
    if over.is_some() && sweep.last_sustainable_rps.is_none() {
        sweep.last_sustainable_rps = Some(last_sustainable(&sweep.points));
    }
    sweep.points.push(p);
    let why = match (over, flat) {
        (Some(evidence), _) => format!("over-saturated at {load}: {evidence}"),
        (None, true) => {
            format!("saturated at {load}: throughput rose < 5 % while TTFT p50 grew > 50 %")
        }
        (None, false) => return false,
    };
    if early_stop {
        sweep.stopped_early = Some(why);
    }
    early_stop
}

/// The highest open-loop rate among `points` that was tested and not over-saturated (0 when
/// none was).
fn last_sustainable(points: &[Point]) -> f64 {
    points
        .iter()
        .filter(|p| p.saturation.as_ref().is_some_and(|s| !s.over))
        .filter_map(|p| p.offered_rps)
        .fold(0.0, f64::max)
}

/// Runs the sweep of `spec` (read once; each point is `spec` at its load) into `out`.
pub async fn sweep(plan: &SweepPlan, spec: RunSpec, out: &Path) -> Result<Sweep, BenchError> {
    let name = spec.scenario.name.clone();
    let mut run = Runner {
        spec,
        out: out.to_path_buf(),
        n: 0,
    };
    let mut sweep = Sweep {
        scenario: name,
        points: Vec::new(),
        stopped_early: None,
        max_rate_rps: None,
        max_rate_bracket: None,
        max_rate_note: None,
        last_sustainable_rps: None,
    };
    for load in &plan.series {
        let p = run.at(*load).await?;
        if push(&mut sweep, p, plan.early_stop) {
            break;
        }
    }
    if plan.auto.is_none() && !plan.find_max_rate {
        sustained(&mut sweep);
        return Ok(sweep);
    }
    let sync = run.at(Load::Concurrency(1)).await?;
    let (lo_rate, sync_ok) = (sync.achieved_rps, passes(&sync, plan.attainment));
    push(&mut sweep, sync, plan.early_stop);
    let max = run.at(Load::Concurrency(plan.probe_concurrency)).await?;
    let hi_rate = max.achieved_rps;
    push(&mut sweep, max, plan.early_stop);
    if let Some(n) = plan.auto {
        sweep.stopped_early = None;
        for i in 1..=n {
            let rate = lo_rate + (hi_rate - lo_rate) * i as f64 / (n + 1) as f64;
            let p = run.at(Load::Rate(rate)).await?;
            if push(&mut sweep, p, plan.early_stop) {
                break;
            }
        }
    }
    if plan.find_max_rate {
        bisect(&mut run, &mut sweep, plan, (lo_rate, sync_ok), hi_rate).await?;
    }
    sustained(&mut sweep);
    Ok(sweep)
}

/// The last sustainable rate of a sweep with open-loop points, also when none of them
/// over-saturated the server (then the highest tested: the limit lies above it).
fn sustained(sweep: &mut Sweep) {
    if sweep.last_sustainable_rps.is_none() && sweep.points.iter().any(|p| p.offered_rps.is_some())
    {
        sweep.last_sustainable_rps = Some(last_sustainable(&sweep.points));
    }
}

/// Doublings of the upper end tried while the server still meets the SLOs there.
const UPPER_PROBES: usize = 3;

/// `--find-max-rate`: bisection between the synchronous rate and the first rate measured to
/// fail (from the max-throughput rate up); both ends of the bracket are measured points.
async fn bisect(
    run: &mut Runner,
    sweep: &mut Sweep,
    plan: &SweepPlan,
    (lo_rate, sync_ok): (f64, bool),
    hi_rate: f64,
) -> Result<(), BenchError> {
    if !sweep.points.iter().any(|p| p.slo_attainment.is_some()) {
        return Err(BenchError::usage(
            "--find-max-rate needs SLOs: set [slo] ttft_ms / tpot_ms / e2e_ms in the scenario",
        ));
    }
    let mut lo = if sync_ok { lo_rate } else { 0.0 };
    // The bracket's upper end must be a rate measured to fail: the max-throughput run is a
    // closed loop, so its rate is tried as an open loop first, and doubled (at most
    // UPPER_PROBES times) while the server still meets the SLOs there.
    let mut hi = hi_rate.max(lo_rate * 1.01);
    let mut failed = false;
    for _ in 0..=UPPER_PROBES {
        let p = run.at(Load::Rate(hi)).await?;
        let ok = passes(&p, plan.attainment);
        sweep.points.push(p);
        if !ok {
            failed = true;
            break;
        }
        lo = hi;
        hi *= 2.0;
    }
    if !failed {
        sweep.max_rate_rps = Some(lo);
        sweep.max_rate_note = Some(format!(
            "every rate tried met the SLOs, up to {lo:.3} req/s: a lower bound, no failing rate was found"
        ));
        return Ok(());
    }
    for _ in 0..8 {
        if hi - lo <= plan.tolerance * hi {
            break;
        }
        let mid = if lo > 0.0 { (lo + hi) / 2.0 } else { hi / 2.0 };
        let p = run.at(Load::Rate(mid)).await?;
        let ok = passes(&p, plan.attainment);
        sweep.points.push(p);
        if ok {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    sweep.max_rate_rps = (lo > 0.0).then_some(lo);
    sweep.max_rate_bracket = Some((lo, hi));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "current_thread")]
    async fn a_sweep_reads_its_scenario_once_and_varies_the_load_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sw.toml");
        std::fs::write(
            &p,
            "name = \"sw\"\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 2\n[load]\nconcurrency = 1\nrequests = 2\n[server_metrics]\nenabled = false\n[sim]\nbandwidth_gbs = 30000\ntflops = 12100\nstep_overhead_ms = 0.2\n",
        )
        .unwrap();
        let before = crate::config::scenario::reads();
        let opts: crate::cli::RunOpts = {
            use clap::Parser;
            #[derive(clap::Parser)]
            struct Wrap {
                #[command(flatten)]
                o: crate::cli::RunOpts,
            }
            Wrap::parse_from(["x", "-q"]).o
        };
        let spec = RunSpec::from_args(&p, &opts).unwrap();
        let plan = SweepPlan {
            series: vec![Load::Rate(50.0), Load::Concurrency(2), Load::Rate(100.0)],
            auto: None,
            find_max_rate: false,
            attainment: 0.95,
            tolerance: 0.1,
            probe_concurrency: 4,
            early_stop: false,
        };
        let s = sweep(&plan, spec, &dir.path().join("out")).await.unwrap();
        assert_eq!(s.points.len(), 3);
        assert_eq!(s.points[1].concurrency, Some(2));
        assert_eq!(s.points[2].offered_rps, Some(100.0));
        assert_eq!(
            crate::config::scenario::reads() - before,
            1,
            "one read for the sweep"
        );
    }

    /// The point: an open-loop rate of 59.4 req/s whose short run met the SLOs while
    /// the server completed 14.7 req/s. It is not a rate the server can serve.
    #[test]
    fn a_rate_counts_for_find_max_rate_only_when_it_was_served() {
        use crate::model::sweep::Saturation;
        let p = |offered: Option<f64>, achieved: f64, sat: Option<(bool, f64)>| Point {
            load: "rate=59.4".into(),
            offered_rps: offered,
            concurrency: None,
            achieved_rps: achieved,
            output_tps: 0.0,
            goodput_rps: None,
            slo_attainment: Some(1.0),
            ttft_p50_ms: 10.0,
            ttft_p95_ms: 20.0,
            ttft_p99_ms: 30.0,
            tpot_p50_ms: 1.0,
            tpot_p95_ms: 2.0,
            tpot_p99_ms: 3.0,
            errors: 0,
            sent: 100,
            peak_concurrency: 8,
            run_dir: String::new(),
            saturation: sat.map(|(over, served)| Saturation {
                over,
                offered_rps: 59.4,
                served_rps: served,
                ttft_slope_ms_per_s: 0.0,
                ttft_slope_lower: 0.0,
            }),
        };
        assert!(!passes(&p(Some(59.4), 14.655, None), 0.95));
        assert!(!passes(&p(Some(59.4), 14.655, Some((false, 14.7))), 0.95));
        assert!(!passes(&p(Some(59.4), 57.0, Some((true, 57.0))), 0.95));
        assert!(passes(&p(Some(59.4), 57.0, Some((false, 58.9))), 0.95));
        assert!(passes(&p(Some(20.0), 19.5, None), 0.95));
        // A closed loop serves what it sends.
        assert!(passes(&p(None, 14.0, None), 0.95));
    }
}
