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
//!   `--tolerance` (default 10 %) of its upper end, or after 8 probes.
//!
//! A series stops early when the server is clearly saturated: achieved throughput rose less
//! than 5 % from the previous point while TTFT p50 grew by more than 50 %.

use crate::app::{default_out_dir, run_and_write, RunSetup};
use crate::cli::{RunOpts, SweepArgs};
use crate::error::BenchError;
use crate::metrics::meets_slo;
use crate::result::RunResult;
use crate::EXIT_OK;
use serde::Serialize;
use std::fmt::Write;
use std::path::Path;

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Point {
    /// `rate=4` or `concurrency=8`.
    pub load: String,
    pub offered_rps: Option<f64>,
    pub concurrency: Option<u32>,
    pub achieved_rps: f64,
    pub output_tps: f64,
    pub goodput_rps: Option<f64>,
    /// Fraction of successful requests meeting every SLO.
    pub slo_attainment: Option<f64>,
    pub ttft_p50_ms: f64,
    pub ttft_p95_ms: f64,
    pub ttft_p99_ms: f64,
    pub tpot_p50_ms: f64,
    pub tpot_p95_ms: f64,
    pub tpot_p99_ms: f64,
    pub errors: u64,
    pub sent: u64,
    pub peak_concurrency: u64,
    pub run_dir: String,
}

#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Sweep {
    pub scenario: String,
    pub points: Vec<Point>,
    /// Why the series stopped before its last point, if it did.
    pub stopped_early: Option<String>,
    /// `--find-max-rate`: the highest passing rate found and the bracket it came from.
    pub max_rate_rps: Option<f64>,
    pub max_rate_bracket: Option<(f64, f64)>,
}

fn point(
    load: String,
    offered: Option<f64>,
    conc: Option<u32>,
    r: &RunResult,
    dir: &Path,
) -> Point {
    let s = &r.summary;
    let l = |m: &str| s.latency(m).cloned();
    let (t, p) = (l("ttft"), l("tpot"));
    let slo = crate::scenario::Slo::from_run_scenario(&r.scenario);
    let ok: Vec<_> = r
        .requests
        .iter()
        .filter(|q| !q.warmup && q.outcome.is_ok())
        .collect();
    let attainment = (!slo.is_empty() && !ok.is_empty())
        .then(|| ok.iter().filter(|q| meets_slo(q, &slo)).count() as f64 / ok.len() as f64);
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
    }
}

fn parse_list<T: std::str::FromStr>(flag: &str, s: &str) -> Result<Vec<T>, BenchError> {
    s.split(',')
        .map(|x| {
            x.trim()
                .parse::<T>()
                .map_err(|_| BenchError::usage(format!("{flag}: `{x}` is not a number")))
        })
        .collect()
}

struct Runner<'a> {
    args: &'a SweepArgs,
    out: std::path::PathBuf,
    n: usize,
}

impl Runner<'_> {
    async fn at(&mut self, rate: Option<f64>, conc: Option<u32>) -> Result<Point, BenchError> {
        let mut o: RunOpts = self.args.opts.clone();
        o.rate = rate;
        o.concurrency = conc;
        let load = match (rate, conc) {
            (Some(r), _) => format!("rate={r:.3}"),
            (_, Some(c)) => format!("concurrency={c}"),
            _ => "scenario".into(),
        };
        self.n += 1;
        eprintln!("sweep: point {} ({load})", self.n);
        let setup = RunSetup::from_args(&self.args.scenario, &o)?;
        let dir = self
            .out
            .join(format!("{:02}-{}", self.n, load.replace('=', "-")));
        let r = run_and_write(&setup, &dir, false).await?;
        if !r.complete {
            return Err(BenchError::Runtime("the sweep was interrupted".into()));
        }
        Ok(point(load, rate, conc, &r, &dir))
    }
}

fn saturated(prev: &Point, cur: &Point) -> bool {
    cur.achieved_rps < prev.achieved_rps * 1.05 && cur.ttft_p50_ms > prev.ttft_p50_ms * 1.5
}

/// Whether a point meets the SLOs. Overload shows here too: the queue it builds pushes TTFT
/// past its SLO.
fn passes(p: &Point, attainment: f64) -> bool {
    p.slo_attainment.is_some_and(|a| a >= attainment)
}

pub async fn sweep_command(args: SweepArgs) -> Result<u8, BenchError> {
    let out = args
        .opts
        .out
        .clone()
        .unwrap_or_else(|| default_out_dir("sweep"));
    let scenario_name = RunSetup::from_args(&args.scenario, &args.opts)?
        .scenario
        .name
        .clone();
    let mut run = Runner {
        args: &args,
        out: out.clone(),
        n: 0,
    };
    let mut sweep = Sweep {
        scenario: scenario_name,
        points: Vec::new(),
        stopped_early: None,
        max_rate_rps: None,
        max_rate_bracket: None,
    };
    let series: Vec<(Option<f64>, Option<u32>)> = if let Some(r) = &args.rates {
        parse_list::<f64>("--rates", r)?
            .into_iter()
            .map(|r| (Some(r), None))
            .collect()
    } else if let Some(c) = &args.concurrencies {
        parse_list::<u32>("--concurrencies", c)?
            .into_iter()
            .map(|c| (None, Some(c)))
            .collect()
    } else {
        Vec::new()
    };
    if series
        .iter()
        .any(|(r, c)| r.is_some_and(|r| r.is_nan() || r <= 0.0) || c.is_some_and(|c| c == 0))
    {
        return Err(BenchError::usage("sweep loads must be positive"));
    }
    let bounds = args.auto.is_some() || args.find_max_rate;
    if series.is_empty() && !bounds {
        return Err(BenchError::usage(
            "give --rates, --concurrencies, --auto N or --find-max-rate",
        ));
    }
    let push = |sweep: &mut Sweep, p: Point| -> bool {
        let stop =
            !args.no_early_stop && sweep.points.last().is_some_and(|prev| saturated(prev, &p));
        let load = p.load.clone();
        sweep.points.push(p);
        if stop {
            sweep.stopped_early = Some(format!(
                "saturated at {load}: throughput rose < 5 % while TTFT p50 grew > 50 %"
            ));
        }
        stop
    };
    for (r, c) in series {
        let p = run.at(r, c).await?;
        if push(&mut sweep, p) {
            break;
        }
    }
    if bounds {
        let sync = run.at(None, Some(1)).await?;
        let (lo_rate, sync_ok) = (sync.achieved_rps, passes(&sync, args.attainment));
        push(&mut sweep, sync);
        let max = run.at(None, Some(args.max_concurrency_probe)).await?;
        let hi_rate = max.achieved_rps;
        push(&mut sweep, max);
        if let Some(n) = args.auto {
            sweep.stopped_early = None;
            for i in 1..=n {
                let rate = lo_rate + (hi_rate - lo_rate) * i as f64 / (n + 1) as f64;
                let p = run.at(Some(rate), None).await?;
                if push(&mut sweep, p) {
                    break;
                }
            }
        }
        if args.find_max_rate {
            let has_slo = sweep.points.iter().any(|p| p.slo_attainment.is_some());
            if !has_slo {
                return Err(BenchError::usage("--find-max-rate needs SLOs: set [slo] ttft_ms / tpot_ms / e2e_ms in the scenario"));
            }
            let (mut lo, mut hi) = (
                if sync_ok { lo_rate } else { 0.0 },
                hi_rate.max(lo_rate * 1.01),
            );
            for _ in 0..8 {
                if hi - lo <= args.tolerance * hi {
                    break;
                }
                let mid = if lo > 0.0 { (lo + hi) / 2.0 } else { hi / 2.0 };
                let p = run.at(Some(mid), None).await?;
                let ok = passes(&p, args.attainment);
                sweep.points.push(p);
                if ok {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            sweep.max_rate_rps = (lo > 0.0).then_some(lo);
            sweep.max_rate_bracket = Some((lo, hi));
        }
    }
    let text = render(&sweep, args.attainment);
    crate::out_text!("{text}");
    let json = serde_json::to_vec_pretty(&sweep).map_err(|e| BenchError::Runtime(e.to_string()))?;
    crate::export::write_atomic(&out.join("sweep.json"), &json)?;
    crate::export::write_atomic(&out.join("sweep.csv"), &csv(&sweep)?)?;
    let slo = RunSetup::from_args(&args.scenario, &args.opts)?
        .scenario
        .slo
        .ttft_ms;
    crate::export::write_atomic(
        &out.join("report.html"),
        crate::report::sweep_report(&sweep, slo).as_bytes(),
    )?;
    crate::out!(
        "wrote {0}/sweep.csv, sweep.json and report.html",
        out.display()
    );
    Ok(EXIT_OK)
}

pub fn csv(s: &Sweep) -> Result<Vec<u8>, BenchError> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let fail = |e: csv::Error| BenchError::Runtime(e.to_string());
    w.write_record([
        "load",
        "offered_rps",
        "concurrency",
        "achieved_rps",
        "output_tps",
        "goodput_rps",
        "slo_attainment",
        "ttft_p50_ms",
        "ttft_p95_ms",
        "ttft_p99_ms",
        "tpot_p50_ms",
        "tpot_p95_ms",
        "tpot_p99_ms",
        "errors",
        "sent",
        "peak_concurrency",
        "run_dir",
    ])
    .map_err(fail)?;
    let o = |v: Option<f64>| v.map(|x| format!("{x:.4}")).unwrap_or_default();
    for p in &s.points {
        w.write_record([
            p.load.clone(),
            o(p.offered_rps),
            p.concurrency.map(|c| c.to_string()).unwrap_or_default(),
            format!("{:.4}", p.achieved_rps),
            format!("{:.2}", p.output_tps),
            o(p.goodput_rps),
            o(p.slo_attainment),
            format!("{:.3}", p.ttft_p50_ms),
            format!("{:.3}", p.ttft_p95_ms),
            format!("{:.3}", p.ttft_p99_ms),
            format!("{:.3}", p.tpot_p50_ms),
            format!("{:.3}", p.tpot_p95_ms),
            format!("{:.3}", p.tpot_p99_ms),
            p.errors.to_string(),
            p.sent.to_string(),
            p.peak_concurrency.to_string(),
            crate::export::csv::escape(&p.run_dir),
        ])
        .map_err(fail)?;
    }
    w.into_inner()
        .map_err(|e| BenchError::Runtime(e.to_string()))
}

pub fn render(s: &Sweep, attainment: f64) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "bench sweep {}\n", s.scenario);
    let _ = writeln!(
        o,
        "  {:<20} {:>10} {:>11} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7}",
        "load",
        "req/s",
        "out tok/s",
        "goodput",
        "SLO met",
        "TTFT p50",
        "TTFT p99",
        "TPOT p50",
        "TPOT p99",
        "errors"
    );
    for p in &s.points {
        let _ = writeln!(
            o,
            "  {:<20} {:>10.3} {:>11.1} {:>10} {:>9} {:>9.1} {:>9.1} {:>9.2} {:>9.2} {:>7}",
            p.load,
            p.achieved_rps,
            p.output_tps,
            p.goodput_rps.map_or("—".into(), |g| format!("{g:.3}")),
            p.slo_attainment
                .map_or("—".into(), |a| format!("{:.0} %", a * 100.0)),
            p.ttft_p50_ms,
            p.ttft_p99_ms,
            p.tpot_p50_ms,
            p.tpot_p99_ms,
            p.errors
        );
    }
    if let Some(w) = &s.stopped_early {
        let _ = writeln!(o, "\n  stopped early: {w}");
    }
    if let Some((lo, hi)) = s.max_rate_bracket {
        match s.max_rate_rps {
            Some(m) => {
                let _ = writeln!(o, "\n  max rate meeting the SLOs (≥ {:.0} % of requests): {m:.3} req/s (bracket {lo:.3}–{hi:.3})", attainment * 100.0);
            }
            None => {
                let _ = writeln!(
                    o,
                    "\n  no rate met the SLOs (even the synchronous run); bracket {lo:.3}–{hi:.3}"
                );
            }
        }
    }
    let _ = writeln!(o, "  latencies in ms (HDR, successful requests); req/s and tok/s over each run's measured window");
    o
}
