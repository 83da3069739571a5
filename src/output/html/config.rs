//! The configuration block at the top of every page: what ran, against what, how, and on
//! which machine — so a picture is never read without the settings that made it. The
//! endpoint is written without user, password or query (where credentials travel).

use super::esc;
use crate::engine::client::target::public;
use crate::model::result::RunResult;
use std::collections::BTreeMap;
use std::fmt::Write;

/// `<dl>` of (name, value) pairs; values are escaped here.
pub fn block(items: &[(&str, String)]) -> String {
    let mut o = String::from("<dl class=\"config\">");
    for (k, v) in items.iter().filter(|(_, v)| !v.is_empty()) {
        // A long value (the simulator's every option as vars) folds after its start.
        if v.chars().count() > 160 {
            let head: String = v.chars().take(110).collect();
            let _ = write!(
                o,
                "<dt>{}</dt><dd><details><summary>{}…</summary>{}</details></dd>",
                esc(k),
                esc(&head),
                esc(v)
            );
        } else {
            let _ = write!(o, "<dt>{}</dt><dd>{}</dd>", esc(k), esc(v));
        }
    }
    o.push_str("</dl>");
    o
}

/// `k=v k=v`, or `none`.
pub fn vars(v: &BTreeMap<String, String>) -> String {
    if v.is_empty() {
        return "none".into();
    }
    v.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What the run asked of the engine beyond the traffic: the request parameters and the
/// body's extra fields (the engine's own options, and the simulator's, are the vars).
fn engine_options(r: &RunResult) -> String {
    let q = &r.scenario.request;
    let mut parts = Vec::new();
    if let Some(m) = q.max_tokens {
        parts.push(format!("max_tokens={m}"));
    }
    parts.push(format!("ignore_eos={}", q.ignore_eos));
    if let Some(t) = q.temperature {
        parts.push(format!("temperature={t}"));
    }
    for (k, v) in &q.extra {
        let v = v.to_string();
        let v = if v.chars().count() > 60 {
            format!("{}…", v.chars().take(60).collect::<String>())
        } else {
            v
        };
        parts.push(format!("{k}={v}"));
    }
    parts.join(" ")
}

/// The environment in one line: host, CPUs, how busy the machine and the client were.
pub fn environment(r: &RunResult) -> String {
    let Some(e) = &r.environment else {
        return "not recorded".into();
    };
    let mut s = format!("{}, {} CPUs", e.host, e.cpus);
    if let Some(m) = &e.cpu_model {
        let _ = write!(s, " ({m})");
    }
    if let Some(b) = e.busy_pct {
        let _ = write!(s, " · CPU busy {b:.0} %");
    }
    if let Some(p) = e.cpu_pressure_pct {
        let _ = write!(s, " · CPU pressure (PSI some) {p:.1} %");
    }
    if let Some(w) = e.client_wait_pct {
        let _ = write!(s, " · bench's run-queue wait {w:.2} %");
    }
    s
}

/// The block of one run.
pub fn run(r: &RunResult) -> String {
    let engine = [
        r.server_metrics.as_ref().and_then(|m| m.engine.clone()),
        r.environment
            .as_ref()
            .and_then(|e| e.engine_version.clone()),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>()
    .join(" ");
    let secs = (r.ended_at - r.started_at).num_milliseconds() as f64 / 1000.0;
    block(&[
        (
            "scenario",
            format!("{} ({})", r.scenario_name, r.scenario_file),
        ),
        ("traffic hash", r.scenario_hash.clone()),
        ("vars", vars(&r.vars)),
        ("seed", r.scenario.seed.to_string()),
        ("load", crate::output::plan::describe(&r.scenario)),
        ("engine options", engine_options(r)),
        (
            "endpoint",
            format!(
                "{} · model {} · {} API",
                public(&r.endpoint),
                r.model,
                r.api.name()
            ),
        ),
        ("engine", engine),
        (
            "run",
            format!(
                "{} · {} · {secs:.1} s · {}",
                r.run_id,
                r.started_at.format("%Y-%m-%d %H:%M:%S UTC"),
                if r.complete { "complete" } else { "INCOMPLETE" }
            ),
        ),
        ("tool", format!("{} {}", r.tool.name, r.tool.version)),
        ("environment", environment(r)),
    ])
}
