//! A sweep as the terminal table and as `sweep.csv` (one row per load).

use super::export::{Exporter, Format};
use crate::error::BenchError;
use crate::model::sweep::Sweep;
use std::fmt::Write;

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
        "over_saturated",
        "served_rps_steady",
        "ttft_slope_ms_per_s",
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
            super::csv::escape(&p.run_dir),
            p.saturation
                .as_ref()
                .map(|x| x.over.to_string())
                .unwrap_or_default(),
            o(p.saturation.as_ref().map(|x| x.served_rps)),
            o(p.saturation.as_ref().map(|x| x.ttft_slope_ms_per_s)),
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
    if let Some(r) = s.last_sustainable_rps {
        let over = s
            .points
            .iter()
            .any(|p| p.saturation.as_ref().is_some_and(|x| x.over));
        let _ = match (r > 0.0, over) {
            (true, true) => writeln!(o, "  last sustainable rate: {r:.3} req/s (the highest tested rate the server kept up with: served ≥ 95 % of offered, TTFT not rising)"),
            (true, false) => writeln!(o, "  last sustainable rate: {r:.3} req/s (the highest tested rate; none over-saturated the server, so its limit lies above it)"),
            (false, _) => writeln!(o, "  last sustainable rate: none of the tested rates (the first one already over-saturated the server, or none had a steady state to test)"),
        };
    }
    if let (Some(note), Some(m)) = (&s.max_rate_note, s.max_rate_rps) {
        let _ = writeln!(
            o,
            "\n  max rate meeting the SLOs (≥ {:.0} % of requests): ≥ {m:.3} req/s ({note})",
            attainment * 100.0
        );
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

/// A sweep as the files beside its points: `sweep.json`, `sweep.csv` and `report.html` (the
/// page reads the first point's run, when it is still there, for the SLOs and configuration).
pub struct Report<'a> {
    pub sweep: &'a Sweep,
    pub first: Option<&'a crate::model::result::RunResult>,
}

impl Exporter for Report<'_> {
    const COMMAND: &'static str = "bench sweep";
    const FORMATS: &'static [Format] = &[Format::Html, Format::Json, Format::Csv];

    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
        match format {
            Format::Json => super::json(self.sweep),
            Format::Csv => csv(self.sweep),
            _ => Ok(super::html::sweep_report(self.sweep, self.first).into_bytes()),
        }
    }
}
