//! Distributed load, locally: three `bench run --shard I/3` processes against one simulator,
//! merged with `bench merge`, equal the unsharded run in requests and counts, and pool the
//! shards' latencies.

mod common;

use bench::sim::http::{ServeConfig, SimServer};
use bench::sim::SimOptions;

use bench::model::metric::Latency;
use bench::model::result::RunResult;
use common::{bench, run_result};
use std::path::{Path, PathBuf};

/// Three shards and the unsharded run of one 60-request scenario against one simulator, all
/// started at one shared time.
struct Shards {
    dir: tempfile::TempDir,
    outs: Vec<PathBuf>,
    whole: PathBuf,
    _sim: SimServer,
}

fn run_shards() -> Shards {
    let mut opts = SimOptions::profile("small-gpu").unwrap();
    for (k, v) in [
        ("bandwidth_gbs", "30000"),
        ("tflops", "12100"),
        ("step_overhead_ms", "0.2"),
    ] {
        opts.set(k, v).unwrap();
    }
    let sim = SimServer::start(ServeConfig {
        opts,
        listen: ([127, 0, 0, 1], 0).into(),
        model: "sim".into(),
        truth_log: None,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"sh\"\nendpoint = \"http://{}/v1\"\nseed = 8\n[workload]\ntype = \"synthetic\"\ninput_tokens = 16\noutput_tokens = 8\n[load]\nrate = 100.0\narrival = \"poisson\"\nrequests = 60\nwarmup = 3\n[server_metrics]\nenabled = false\n",
            sim.addr
        ),
    )
    .unwrap();
    let s = scenario.to_str().unwrap();
    let start = format!(
        "{:.3}",
        (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64()
            + 2.0)
    );
    let shards: Vec<_> = (0..3)
        .map(|i| {
            let out = dir.path().join(format!("shard{i}"));
            let shard = format!("{i}/3");
            let child = bench()
                .args(["run", s, "--shard", &shard, "--start-at", &start])
                .args(["--out", out.to_str().unwrap(), "-q"])
                .spawn()
                .unwrap();
            (out, child)
        })
        .collect();
    let mut outs = Vec::new();
    for (out, mut child) in shards {
        assert!(child.wait().unwrap().success());
        outs.push(out);
    }
    let whole = dir.path().join("whole");
    assert!(bench()
        .args(["run", s, "--out", whole.to_str().unwrap(), "-q"])
        .status()
        .unwrap()
        .success());
    Shards {
        dir,
        outs,
        whole,
        _sim: sim,
    }
}

fn merge(outs: &[PathBuf], into: &Path) -> std::process::Output {
    bench()
        .arg("merge")
        .args(outs)
        .args(["--out", into.to_str().unwrap()])
        .output()
        .unwrap()
}

#[test]
fn three_shards_merge_into_the_unsharded_run() {
    let sh = run_shards();
    let merged = sh.dir.path().join("merged");
    let o = merge(&sh.outs, &merged);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let (m, w) = (run_result(&merged), run_result(&sh.whole));
    let (mc, wc) = (&m.summary.counts, &w.summary.counts);
    assert_eq!(
        (mc.sent, mc.ok, mc.warmup, mc.planned),
        (wc.sent, wc.ok, wc.warmup, wc.planned)
    );
    let intended = |r: &RunResult| {
        let mut x: Vec<(u64, u64)> = r
            .requests
            .iter()
            .map(|q| (q.index, q.intended_us))
            .collect();
        x.sort();
        x
    };
    let mi: Vec<u64> = intended(&m).iter().map(|x| x.0).collect();
    assert_eq!(
        mi,
        (0..63).collect::<Vec<_>>(),
        "every planned request exactly once"
    );
    // The shards sent the plan's requests at the plan's times (one shared start).
    for ((i, a), (_, b)) in intended(&m).iter().zip(intended(&w)) {
        assert!(
            a.abs_diff(b) < 20_000,
            "request {i}: merged offset {a} µs vs unsharded {b} µs"
        );
    }
    // The merged latencies are the shards' pooled: counts add up, and a pooled median lies
    // between the parts' medians (two real-time runs' latencies are not compared: on a
    // loaded machine they differ by more than any honest tolerance).
    let tpot = |r: &RunResult| r.summary.latency(Latency::Tpot).unwrap().clone();
    let parts: Vec<RunResult> = sh.outs.iter().map(|o| run_result(o)).collect();
    let total: u64 = parts.iter().map(|p| tpot(p).count).sum();
    assert_eq!(tpot(&m).count, total);
    assert_eq!(tpot(&m).count, tpot(&w).count);
    let (lo, hi) = parts
        .iter()
        .map(|p| tpot(p).p50)
        .fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let p50 = tpot(&m).p50;
    assert!(
        lo <= p50 && p50 <= hi,
        "merged tpot p50 {p50} outside the shards' [{lo}, {hi}]"
    );
    missing_and_cut_shards(&sh);
}

/// A missing shard is refused; an interrupted one makes the merged run incomplete: written,
/// marked, exit 2.
fn missing_and_cut_shards(sh: &Shards) {
    let o = merge(&sh.outs[..2], &sh.dir.path().join("bad"));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 2/3 is missing"));
    let cut = sh.outs[2].join("run.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cut).unwrap()).unwrap();
    r["complete"] = false.into();
    std::fs::write(&cut, r.to_string()).unwrap();
    let partial = sh.dir.path().join("partial");
    let o = merge(&sh.outs, &partial);
    assert_eq!(o.status.code(), Some(2));
    assert!(!run_result(&partial).complete);
}
