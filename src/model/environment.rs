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
    /// The engine's version as it reports it (`/version`, llama-server's `/props`), if it does.
    pub engine_version: Option<String>,
}
