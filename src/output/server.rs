//! The server's figures as one line of text, for the run table and the reports.

use crate::model::server::ServerMetrics;

/// One line for reports: "prefix hit rate 61 %, acceptance 0.71, preemptions 0, …".
pub fn describe(m: &ServerMetrics) -> String {
    let mut parts = Vec::new();
    if let Some(h) = m.prefix_cache_hit_rate {
        parts.push(format!("prefix hit rate {:.0} %", h * 100.0));
    }
    if let Some(a) = m.spec_acceptance_rate {
        parts.push(format!("acceptance {a:.2}"));
    }
    if let Some(l) = m.spec_mean_accept_length {
        parts.push(format!("accept length {l:.2}"));
    }
    if let Some(p) = m.preemptions {
        parts.push(format!("preemptions {p:.0}"));
    }
    if let (Some(mean), Some(p95)) = (m.queue_time_mean_s, m.queue_time_p95_s) {
        parts.push(format!(
            "queue time mean {:.1} ms p95 {:.1} ms",
            mean * 1e3,
            p95 * 1e3
        ));
    }
    if let Some(mean) = m.prefill_time_mean_s {
        parts.push(format!("prefill time mean {:.1} ms", mean * 1e3));
    }
    if let Some(k) = m.kv_usage_peak {
        parts.push(format!("KV peak {:.0} %", k * 100.0));
    }
    if let Some(r) = m.running_peak {
        parts.push(format!("running peak {r:.0}"));
    }
    if let Some(w) = m.waiting_peak {
        parts.push(format!("waiting peak {w:.0}"));
    }
    parts.join(", ")
}
