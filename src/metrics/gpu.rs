//! A GPU node's telemetry over a run, from dcgm-exporter's Prometheus text (NVIDIA's exporter
//! of DCGM fields, the names its default counters use):
//!
//! | figure | field | read as |
//! |---|---|---|
//! | energy | `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` (mJ since boot, a counter) | last − first scrape |
//! | energy, without that counter | `DCGM_FI_DEV_POWER_USAGE` (W, a gauge) | ∫ power dt: trapezoids between scrapes |
//! | power | `DCGM_FI_DEV_POWER_USAGE` | energy / span; the highest scrape |
//! | utilisation | `DCGM_FI_DEV_GPU_UTIL` (%) | mean over scrapes of the GPUs' mean |
//! | memory | `DCGM_FI_DEV_FB_USED` (MiB) | the highest scrape, summed over GPUs |
//! | SM / DRAM activity | `DCGM_FI_PROF_SM_ACTIVE`, `DCGM_FI_PROF_DRAM_ACTIVE` (0–1) | mean over scrapes of the GPUs' mean |
//!
//! Every figure is summed (energy, power, memory) or averaged (ratios) over the GPUs the
//! exporter lists, so a tensor-parallel server's whole node is one figure. The scrapes span
//! the run from before its first request to after its last, warm-up included, so joules per
//! output token divide by the output of every successful request, warm-up too; an idle GPU's
//! draw in the seconds around the run is in the energy (at most one scrape interval each side).

use super::server::promtext::Scrape;
use super::server::Collected;
use crate::model::server::{Coverage, CoverageRow, GpuMetrics};
use crate::model::values::Values;
use std::collections::BTreeSet;

const ENERGY_MJ: &str = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION";
const POWER_W: &str = "DCGM_FI_DEV_POWER_USAGE";
const UTIL_PCT: &str = "DCGM_FI_DEV_GPU_UTIL";
const FB_USED_MIB: &str = "DCGM_FI_DEV_FB_USED";
const SM_ACTIVE: &str = "DCGM_FI_PROF_SM_ACTIVE";
const DRAM_ACTIVE: &str = "DCGM_FI_PROF_DRAM_ACTIVE";

/// (figure, family, in dcgm-exporter's default counters) for `bench metrics`: the profiling
/// fields (SM, DRAM activity) need a counters file that turns them on.
const FIGURES: [(&str, &str, bool); 6] = [
    ("energy", ENERGY_MJ, true),
    ("power", POWER_W, true),
    ("utilisation", UTIL_PCT, true),
    ("memory used", FB_USED_MIB, true),
    ("SM active", SM_ACTIVE, false),
    ("DRAM active", DRAM_ACTIVE, false),
];

/// Which dcgm-exporter families `s` serves (`None`: it serves no power or utilisation field,
/// so it is not a dcgm-exporter).
pub fn coverage(s: &Scrape) -> Option<Coverage> {
    if !s.families.contains_key(POWER_W) && !s.families.contains_key(UTIL_PCT) {
        return None;
    }
    let rows = FIGURES
        .iter()
        .map(|(figure, family, required)| CoverageRow {
            figure: figure.to_string(),
            families: vec![family.to_string()],
            found: s.families.contains_key(*family).then(|| family.to_string()),
            required: *required,
        })
        .collect();
    Some(Coverage {
        engine: "dcgm-exporter".into(),
        rows,
    })
}

/// The run's GPU figures from its scrapes (`output_tokens`: every successful request's).
pub fn summarize(c: &Collected, output_tokens: u64) -> GpuMetrics {
    let mut m = GpuMetrics {
        url: c.url.clone(),
        scrapes: c.scrapes.len() as u32,
        span_s: c.span_s.unwrap_or(0.0),
        warning: c.unavailable.clone(),
        ..Default::default()
    };
    let gpus: BTreeSet<&str> = c
        .scrapes
        .iter()
        .flat_map(|s| s.families.get(POWER_W).or_else(|| s.families.get(UTIL_PCT)))
        .flat_map(|f| f.samples.iter().filter_map(|x| x.labels.get("gpu")))
        .map(String::as_str)
        .collect();
    m.gpus = gpus.len() as u32;
    if c.scrapes.is_empty() {
        return m;
    }
    if m.gpus == 0 {
        m.warning = Some("no dcgm-exporter GPU fields (DCGM_FI_DEV_POWER_USAGE, DCGM_FI_DEV_GPU_UTIL) in the scrapes".into());
        return m;
    }
    let per_gpu = |s: &Scrape, f: &str| s.value(f).map(|v| v / m.gpus as f64);
    let mean_of = |f: &str| {
        c.scrapes
            .iter()
            .filter_map(|s| per_gpu(s, f))
            .collect::<Values>()
            .mean()
    };
    let peak_of = |f: &str| {
        c.scrapes
            .iter()
            .filter_map(|s| s.value(f))
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
    };
    (m.energy_j, m.energy_source) = match energy(c) {
        Some((j, source)) => (Some(j), Some(source.to_string())),
        None => (None, None),
    };
    m.power_mean_w = m.energy_j.filter(|_| m.span_s > 0.0).map(|j| j / m.span_s);
    m.power_peak_w = peak_of(POWER_W);
    m.joules_per_output_token = m
        .energy_j
        .filter(|_| output_tokens > 0)
        .map(|j| j / output_tokens as f64);
    m.util_mean_pct = mean_of(UTIL_PCT);
    m.fb_used_peak_mib = peak_of(FB_USED_MIB);
    m.sm_active_mean = mean_of(SM_ACTIVE);
    m.dram_active_mean = mean_of(DRAM_ACTIVE);
    m
}

/// Energy over the scrapes, J, and where it came from: the energy counter's rise (mJ), or ∫
/// power dt by trapezoids where the counter is missing or went backwards (a GPU reset).
fn energy(c: &Collected) -> Option<(f64, &'static str)> {
    let (first, last) = (c.scrapes.first()?, c.scrapes.last()?);
    if c.scrapes.len() < 2 {
        return None;
    }
    if let (Some(a), Some(b)) = (first.value(ENERGY_MJ), last.value(ENERGY_MJ)) {
        if b >= a {
            return Some((
                (b - a) / 1000.0,
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION (counter)",
            ));
        }
    }
    let points: Vec<(f64, f64)> = c
        .scrapes
        .iter()
        .zip(&c.taken_ms)
        .filter_map(|(s, at)| Some((*at as f64 / 1000.0, s.value(POWER_W)?)))
        .collect();
    (points.len() >= 2).then(|| {
        let j = points
            .windows(2)
            .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
            .sum();
        (
            j,
            "∫ DCGM_FI_DEV_POWER_USAGE dt (trapezoids between scrapes)",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::server::promtext::parse;

    /// dcgm-exporter's text for two GPUs, as its README shows it (labels included).
    fn dcgm(power: [f64; 2], energy_mj: Option<[f64; 2]>) -> Scrape {
        let mut t = String::from("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n");
        let labels = |g: usize| {
            format!("gpu=\"{g}\",UUID=\"GPU-{g}f3b2c1e\",device=\"nvidia{g}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"")
        };
        for (g, p) in power.iter().enumerate() {
            t += &format!("DCGM_FI_DEV_POWER_USAGE{{{}}} {p}\n", labels(g));
        }
        if let Some(e) = energy_mj {
            t += "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n";
            for (g, v) in e.iter().enumerate() {
                t += &format!(
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{}}} {v}\n",
                    labels(g)
                );
            }
        }
        t += "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n";
        for g in 0..2 {
            t += &format!("DCGM_FI_DEV_GPU_UTIL{{{}}} {}\n", labels(g), 60 + 20 * g);
        }
        t += "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).\n# TYPE DCGM_FI_DEV_FB_USED gauge\n";
        for g in 0..2 {
            t += &format!("DCGM_FI_DEV_FB_USED{{{}}} 70000\n", labels(g));
        }
        parse(&t).unwrap()
    }

    fn collected(scrapes: Vec<Scrape>, at_s: &[f64]) -> Collected {
        Collected {
            url: "http://node-1:9400/metrics".into(),
            taken_ms: at_s
                .iter()
                .map(|s| (s * 1000.0) as i64 + 1_700_000_000_000)
                .collect(),
            span_s: Some(at_s[at_s.len() - 1] - at_s[0]),
            scrapes,
            unavailable: None,
        }
    }

    #[test]
    fn joules_per_token_is_the_integral_of_power_over_the_output() {
        // Scrapes 1.5 s and 2.5 s apart, power summed over the two GPUs 300, 700, 500 W:
        // ∫ = 1.5 × (300 + 700) / 2 + 2.5 × (700 + 500) / 2 = 750 + 1500 = 2250 J.
        let c = collected(
            vec![
                dcgm([200.0, 100.0], None),
                dcgm([400.0, 300.0], None),
                dcgm([250.0, 250.0], None),
            ],
            &[0.0, 1.5, 4.0],
        );
        let g = summarize(&c, 900);
        assert_eq!(g.gpus, 2);
        assert!((g.energy_j.unwrap() - 2250.0).abs() < 1e-9, "{g:?}");
        assert!((g.joules_per_output_token.unwrap() - 2250.0 / 900.0).abs() < 1e-12);
        assert!((g.power_mean_w.unwrap() - 2250.0 / 4.0).abs() < 1e-9);
        assert_eq!(g.power_peak_w, Some(700.0));
        assert_eq!(g.util_mean_pct, Some(70.0));
        assert_eq!(g.fb_used_peak_mib, Some(140000.0));
        assert!(g.energy_source.unwrap().starts_with("∫"));
    }

    #[test]
    fn the_energy_counter_wins_over_the_integral_unless_it_went_backwards() {
        let c = collected(
            vec![
                dcgm([300.0, 300.0], Some([1_000_000.0, 2_000_000.0])),
                dcgm([300.0, 300.0], Some([1_600_000.0, 2_650_000.0])),
            ],
            &[0.0, 2.0],
        );
        let g = summarize(&c, 100);
        assert!(
            (g.energy_j.unwrap() - 1250.0).abs() < 1e-9,
            "(600 000 + 650 000) mJ"
        );
        assert!(g.energy_source.unwrap().contains("counter"));
        // A GPU reset sets the counter back: the integral stands in (2 s × 600 W).
        let c = collected(
            vec![
                dcgm([300.0, 300.0], Some([1_000_000.0, 2_000_000.0])),
                dcgm([300.0, 300.0], Some([5_000.0, 2_650_000.0])),
            ],
            &[0.0, 2.0],
        );
        assert!((summarize(&c, 100).energy_j.unwrap() - 1200.0).abs() < 1e-9);
    }

    #[test]
    fn coverage_names_the_default_counters_served() {
        let c = coverage(&dcgm([1.0, 1.0], None)).unwrap();
        assert_eq!(c.engine, "dcgm-exporter");
        let missing: Vec<&str> = c.missing().iter().map(|r| r.figure.as_str()).collect();
        assert_eq!(missing, ["energy"]);
        assert!(coverage(&parse("vllm:num_requests_running 1\n").unwrap()).is_none());
    }

    #[test]
    fn an_exporter_without_gpu_fields_is_a_warning() {
        let c = collected(
            vec![parse("up 1\n").unwrap(), parse("up 1\n").unwrap()],
            &[0.0, 1.0],
        );
        let g = summarize(&c, 10);
        assert_eq!(g.gpus, 0);
        assert!(g.energy_j.is_none() && g.warning.unwrap().contains("no dcgm-exporter"));
    }
}
