//! The server's figures as one line of text, for the run table and the reports.

use crate::model::metric::Latency;
use crate::model::result::IdleRoundTrip;
use crate::model::server::{Coverage, GpuMetrics, ServerMetrics};
use crate::model::summary::Summary;

/// A server-histogram quantile in ms: "12.5 ms", or what its bucket bounds ("≤ 300 ms",
/// "100–1000 ms") when the bucket is wider than the value (see `metrics::server`).
pub fn quantile(m: &ServerMetrics, field: &str, v_s: f64) -> String {
    match m.bucket_bounds.get(field) {
        Some((lo, hi)) if *lo <= 0.0 => format!("≤ {} ms", super::sig4(hi * 1e3)),
        Some((lo, hi)) => format!(
            "{}–{} ms (one histogram bucket)",
            super::sig4(lo * 1e3),
            super::sig4(hi * 1e3)
        ),
        None => format!("{:.1} ms", v_s * 1e3),
    }
}

/// The GPU node's figures as one line: "GPU (dcgm-exporter, 2 GPUs, 11 scrapes): energy …".
pub fn gpu(g: &GpuMetrics) -> String {
    let mut parts = Vec::new();
    if let (Some(j), Some(src)) = (g.energy_j, &g.energy_source) {
        parts.push(format!("energy {j:.1} J over {:.1} s ({src})", g.span_s));
    }
    if let Some(t) = g.joules_per_output_token {
        parts.push(format!("{t:.4} J per output token"));
    }
    if let Some(p) = g.power_mean_w {
        let peak = g
            .power_peak_w
            .map_or(String::new(), |p| format!(", peak {p:.0} W"));
        parts.push(format!("power mean {p:.0} W{peak}"));
    }
    if let Some(u) = g.util_mean_pct {
        parts.push(format!("utilisation {u:.0} %"));
    }
    if let Some(f) = g.fb_used_peak_mib {
        parts.push(format!("memory peak {f:.0} MiB"));
    }
    if let Some(a) = g.sm_active_mean {
        parts.push(format!("SM active {a:.2}"));
    }
    if let Some(a) = g.dram_active_mean {
        parts.push(format!("DRAM active {a:.2}"));
    }
    if let Some(w) = &g.warning {
        parts.push(format!("({w})"));
    }
    format!(
        "GPU (dcgm-exporter, {} GPUs, {} scrapes): {}",
        g.gpus,
        g.scrapes,
        parts.join(", ")
    )
}

/// The idle round trip as one line, with how far `ttft_rest`'s median lies beyond it when the
/// replies carried the server's clock: "idle round trip 0.31 ms (GET /v1/models, median of 5
/// before the run: the network and this client alone); ttft_rest p50 1.72 ms beyond it: …".
pub fn idle_round_trip(i: &IdleRoundTrip, s: &Summary) -> String {
    let beyond = match s.latency(Latency::TtftRest).filter(|l| l.has_values()) {
        Some(l) => format!(
            "; ttft_rest p50 {:.2} ms beyond it: the queue and the server's own work outside prefill",
            l.p50 - i.median_ms
        ),
        None => String::new(),
    };
    format!(
        "idle round trip {:.2} ms (GET {}, median of {} before the run, {:.2}–{:.2} ms: the network and this client alone){beyond}",
        i.median_ms, i.route, i.samples, i.min_ms, i.max_ms
    )
}

/// What the replies themselves said of the server, as one line: this run's own prefix-cache
/// hit rate and whose per-request clock the prefill figures come from; `None` when they said
/// neither.
pub fn replies(s: &Summary) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(c) = &s.tokens.cached {
        parts.push(format!(
            "this run's prefix hit rate {:.1} % ({} of {} prompt tokens cached, summed from {} replies)",
            c.hit_rate * 100.0,
            c.cached_tokens,
            c.prompt_tokens,
            c.requests
        ));
    }
    if let Some(i) = &s.tokens.images {
        let cost = match i.image_tokens {
            Some(t) if i.reported == i.requests => format!(
                ", {t} prompt tokens by the server's usage ({:.1} an image)",
                t as f64 / i.images.max(1) as f64
            ),
            Some(t) => format!(
                ", {t} prompt tokens by the usage of the {} replies that said",
                i.reported
            ),
            None => ", their tokens not reported by the server".into(),
        };
        parts.push(format!(
            "{} images in {} prompts{cost}",
            i.images, i.requests
        ));
    }
    if let Some(k) = &s.server_clock {
        let over = if k.prefill_over_ttft > 0 {
            format!(
                "; {} reported a prefill longer than the TTFT measured here and have no ttft_rest",
                k.prefill_over_ttft
            )
        } else {
            String::new()
        };
        parts.push(format!(
            "server's own clock ({}) on {} replies: prefill and ttft_rest below{over}",
            k.source, k.requests
        ));
    }
    (!parts.is_empty()).then(|| format!("replies: {}", parts.join("; ")))
}

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
    if let Some(r) = m.admission_rejections.filter(|r| *r > 0.0) {
        parts.push(format!(
            "{r:.0} requests refused at admission (queue limit)"
        ));
    }
    if let (Some(mean), Some(p95)) = (m.queue_time_mean_s, m.queue_time_p95_s) {
        parts.push(format!(
            "queue time mean {:.1} ms p95 {}",
            mean * 1e3,
            quantile(m, "queue_time_p95_s", p95)
        ));
    }
    if let Some(mean) = m.prefill_time_mean_s {
        parts.push(format!("prefill time mean {:.1} ms", mean * 1e3));
    }
    if let Some(mean) = m.decode_time_mean_s {
        parts.push(format!("decode time mean {:.1} ms", mean * 1e3));
    }
    if let (Some(c), Some(p)) = (m.cached_prompt_tokens, m.prompt_tokens.filter(|p| *p > 0.0)) {
        parts.push(format!(
            "{c:.0} of {p:.0} prompt tokens from cache ({:.0} %)",
            c / p * 100.0
        ));
    }
    if let Some(k) = m.kv_usage_peak {
        parts.push(format!("KV peak {:.0} %", k * 100.0));
    }
    if let Some(r) = m.running_peak {
        parts.push(format!("running peak {r:.0}"));
    }
    if let Some(w) = m.waiting_peak {
        match m.waiting_deferred_peak.filter(|d| *d > 0.0) {
            Some(d) => parts.push(format!(
                "waiting peak {w:.0} (deferred peak {d:.0}: KV transfer, LoRA budget or blocked, not capacity)"
            )),
            None => parts.push(format!("waiting peak {w:.0}")),
        }
    }
    parts.join(", ")
}

/// `bench metrics`: one line per stable figure — the family found, or what was looked for.
pub fn coverage(c: &Coverage, url: &str) -> String {
    let mut o = format!("{url}: {} metrics\n", c.engine);
    for r in &c.rows {
        let state = match (&r.found, r.required) {
            (Some(f), _) => format!("ok       {f}"),
            (None, true) => format!("MISSING  {} (renamed or removed?)", r.families.join(" | ")),
            (None, false) => format!(
                "absent   {} (only with that feature on)",
                r.families.join(" | ")
            ),
        };
        o.push_str(&format!("  {:<26} {state}\n", r.figure));
    }
    let missing = c.missing();
    if missing.is_empty() {
        o.push_str("every family bench relies on is served\n");
    } else {
        o.push_str(&format!(
            "{} famil{} bench relies on not served: the engine renamed or dropped {}; bench reports nothing for {}\n",
            missing.len(),
            if missing.len() == 1 { "y" } else { "ies" },
            if missing.len() == 1 { "it" } else { "them" },
            missing.iter().map(|r| r.figure.as_str()).collect::<Vec<_>>().join(", ")
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{clocked, lognormal_run, rng};

    #[test]
    fn the_idle_round_trip_line_says_how_far_ttft_rest_lies_beyond_it() {
        let i = IdleRoundTrip {
            route: "/v1/models".into(),
            samples: 5,
            median_ms: 0.5,
            min_ms: 0.25,
            max_ms: 1.0,
        };
        let plain = lognormal_run(10, 20.0, 0.0, &mut rng(1));
        assert_eq!(
            idle_round_trip(&i, &plain.summary),
            "idle round trip 0.50 ms (GET /v1/models, median of 5 before the run, 0.25–1.00 ms: the network and this client alone)"
        );
        // Every request's prefill is TTFT − 2 ms: ttft_rest p50 2 ms, 1.5 beyond the floor.
        let clocked = clocked(plain, |t| t - 2000, None, |r| r);
        assert!(idle_round_trip(&i, &clocked.summary).ends_with(
            "; ttft_rest p50 1.50 ms beyond it: the queue and the server's own work outside prefill"
        ));
    }
}
