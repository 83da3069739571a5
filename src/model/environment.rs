//! Where a run ran and how busy the machine was: what explains run-to-run noise, recorded so a
//! comparison can say when baseline and candidate did not run under the same conditions.

use serde::{Deserialize, Serialize};

/// The machine and the server of one run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunEnvironment {
    pub host: String,
    /// `model name` from /proc/cpuinfo, when readable.
    pub cpu_model: Option<String>,
    /// CPUs this process may use.
    pub cpus: usize,
    /// 1-, 5- and 15-minute load averages just before the run and just after it.
    pub load_before: Option<[f64; 3]>,
    pub load_after: Option<[f64; 3]>,
    /// Share of the machine's CPU time in use during the run (%, all processes, ours too).
    pub busy_pct: Option<f64>,
    /// Share of CPU time the hypervisor stole during the run (%).
    pub steal_pct: Option<f64>,
    /// Share of the run's wall time during which some runnable task on the machine waited for
    /// a CPU (%, Linux PSI `/proc/pressure/cpu`, "some"): CPU contention, whoever caused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_pct: Option<f64>,
    /// Time bench's own threads spent runnable but waiting for a CPU, over the run's wall time
    /// (%, summed over its threads from `/proc/self/task/*/schedstat`): how much the client
    /// itself was delayed by the scheduler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wait_pct: Option<f64>,
    /// Time the host took for bench's fixed calibration workload just before the run (µs,
    /// the fastest of five: SHA-256 of 1 MiB): the host's speed, so that a slower machine,
    /// a throttled or shared CPU is named the way contention is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration_us: Option<f64>,
    /// The engine's version as it reports it (`/version`, llama-server's `/props`), if it does.
    pub engine_version: Option<String>,
}
