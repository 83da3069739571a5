//! One run's own figure of a gated metric — its quantile of a latency (ms) or its rate — the
//! unit the gate's noise is estimated from (runs, not requests). The plan reads a baseline's
//! spread from these, and a comparison keeps each arm's so that a report can draw the runs.

use crate::metrics::summary::sample_in;
use crate::model::metric::Metric;
use crate::model::result::RunResult;

/// `run`'s value of `m`: a latency quantile from the same sample as its summary (so equal
/// to the summary's p50…p99 where it has them), a throughput from its summary. `None` where
/// the run has no such value, and for the error rate, which the gate judges on the arms'
/// pooled counts, not per run. A run's accuracy is its quality pass's share right (%);
/// agreement is a relation between arms, with no value of one run.
pub fn of_run(run: &RunResult, m: Metric) -> Option<f64> {
    let t = &run.summary.throughput;
    match m {
        Metric::OutputThroughput => Some(t.output_tps),
        Metric::RequestThroughput => Some(t.request_rps),
        Metric::Goodput => t.goodput_rps,
        Metric::ErrorRate | Metric::Agreement => None,
        Metric::JoulesPerToken => {
            run.server_metrics
                .as_ref()?
                .gpu
                .as_ref()?
                .joules_per_output_token
        }
        Metric::GpuPower => run.server_metrics.as_ref()?.gpu.as_ref()?.power_mean_w,
        Metric::Accuracy => {
            let (right, of) = run.quality.as_ref()?.accuracy();
            (of > 0).then(|| right as f64 / of as f64 * 100.0)
        }
        Metric::Latency(l, q) => sample_in(run, l, None).quantile(q.p()).map(|v| v / 1000.0),
        Metric::TurnLatency(l, q, turns) => sample_in(run, l, Some(turns))
            .quantile(q.p())
            .map(|v| v / 1000.0),
    }
}

/// Each run's value of `m`, in order, skipping runs without one.
pub fn of_runs(runs: &[RunResult], m: Metric) -> Vec<f64> {
    runs.iter().filter_map(|r| of_run(r, m)).collect()
}
