//! A run that scrapes a GPU node's dcgm-exporter (`--gpu-metrics-url`): an in-process server
//! on port 0 serves dcgm-exporter's text for two GPUs, each drawing a constant 150 W and
//! adding 5 000 mJ to its energy counter at every scrape it answers. The run's energy must be
//! exactly the counter's rise over the scrapes the server answered, and joules per output
//! token that energy over every output token the run's successful requests produced.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Serves GET /metrics until the process ends; returns its URL and the scrape count.
fn exporter() -> (String, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    let served = Arc::new(AtomicU64::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let n = count.fetch_add(1, Ordering::SeqCst);
            let mut body = String::from("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n");
            let labels = |g: u32| {
                format!("gpu=\"{g}\",UUID=\"GPU-{g}\",device=\"nvidia{g}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node-1\"")
            };
            for g in 0..2 {
                body += &format!("DCGM_FI_DEV_POWER_USAGE{{{}}} 150\n", labels(g));
            }
            body += "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).\n# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n";
            for g in 0..2 {
                body += &format!(
                    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{}}} {}\n",
                    labels(g),
                    1_000_000 + 5_000 * n
                );
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, served)
}

#[test]
fn energy_and_joules_per_token_come_from_the_exporters_counter() {
    let (url, served) = exporter();
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("s.toml");
    std::fs::write(
        &s,
        "name = \"gpu\"\nseed = 2\n[request]\nignore_eos = true\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 32\n[load]\nconcurrency = 2\nrequests = 12\nwarmup = 2\n[server_metrics]\ninterval_s = 0.2\n",
    )
    .unwrap();
    let run = common::run_ok(&s, &dir.path().join("o"), &["--gpu-metrics-url", &url]);
    let g = &run["server_metrics"]["gpu"];
    let scrapes = g["scrapes"].as_u64().unwrap();
    assert_eq!(scrapes, served.load(Ordering::SeqCst), "{g}");
    assert!(scrapes >= 2, "{g}");
    assert_eq!(g["gpus"], 2);
    // Two GPUs, 5 000 mJ each a scrape, over scrapes − 1 intervals.
    let energy = (scrapes - 1) as f64 * 2.0 * 5.0;
    assert!(
        (g["energy_j"].as_f64().unwrap() - energy).abs() < 1e-9,
        "{g}"
    );
    let tokens = &run["summary"]["tokens"];
    let out = tokens["output_tokens"].as_u64().unwrap()
        + tokens["warmup_output_tokens"].as_u64().unwrap();
    assert_eq!(out, 14 * 32, "every request's 32 tokens, the warm-up's too");
    assert!((g["joules_per_output_token"].as_f64().unwrap() - energy / out as f64).abs() < 1e-12);
    assert_eq!(g["power_peak_w"], 300.0);
}

#[test]
fn joules_per_token_is_a_gate_row_when_a_gate_names_it() {
    let m: bench::model::metric::Metric = "joules_per_token".parse().unwrap();
    assert!(m.lower_is_better());
    assert_eq!(m.unit(), "J/tok");
    let t = bench::config::thresholds::parse_threshold("joules_per_token", "10%").unwrap();
    assert!((t.floor.unwrap() - 1.1f64.ln()).abs() < 1e-12);
    assert!("gpu_power".parse::<bench::model::metric::Metric>().is_ok());
}
