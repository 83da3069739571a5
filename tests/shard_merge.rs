//! Distributed load, locally: three `bench run --shard I/3` processes against one simulator,
//! merged with `bench merge`, equal the unsharded run in requests and counts, and pool the
//! shards' latencies.

mod common;

use bench::sim::http::{ServeConfig, SimServer};
use bench::sim::SimOptions;

use common::bench;

#[test]
fn three_shards_merge_into_the_unsharded_run() {
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
            let child = bench()
                .args([
                    "run",
                    s,
                    "--shard",
                    &format!("{i}/3"),
                    "--start-at",
                    &start,
                    "--out",
                    out.to_str().unwrap(),
                    "-q",
                ])
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
    let merged = dir.path().join("merged");
    let o = bench()
        .arg("merge")
        .args(&outs)
        .args(["--out", merged.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let read = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p.join("run.json")).unwrap()).unwrap()
    };
    let (m, w) = (read(&merged), read(&whole));
    for k in ["sent", "ok", "warmup", "planned"] {
        assert_eq!(m["summary"]["counts"][k], w["summary"]["counts"][k], "{k}");
    }
    let idx = |v: &serde_json::Value| {
        v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["index"].as_u64().unwrap())
            .collect::<Vec<_>>()
    };
    let mut mi = idx(&m);
    mi.sort();
    assert_eq!(
        mi,
        (0..63).collect::<Vec<_>>(),
        "every planned request exactly once"
    );
    // The shards sent the plan's requests at the plan's times (one shared start).
    let intended = |v: &serde_json::Value| {
        let mut x: Vec<(u64, u64)> = v["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["index"].as_u64().unwrap(),
                    r["intended_us"].as_u64().unwrap(),
                )
            })
            .collect();
        x.sort();
        x
    };
    for ((i, a), (_, b)) in intended(&m).iter().zip(intended(&w)) {
        assert!(
            a.abs_diff(b) < 20_000,
            "request {i}: merged offset {a} µs vs unsharded {b} µs"
        );
    }
    // The merged latencies are the shards' pooled: counts add up, and a pooled median lies
    // between the parts' medians (two real-time runs' latencies are not compared: on a
    // loaded machine they differ by more than any honest tolerance).
    let lat = |v: &serde_json::Value, field: &str| {
        v["summary"]["latency"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == "tpot")
            .unwrap()[field]
            .as_f64()
            .unwrap()
    };
    let parts: Vec<serde_json::Value> = outs.iter().map(|o| read(o)).collect();
    let total: f64 = parts.iter().map(|p| lat(p, "count")).sum();
    assert_eq!(lat(&m, "count"), total);
    assert_eq!(lat(&m, "count"), lat(&w, "count"));
    let (lo, hi) = parts
        .iter()
        .map(|p| lat(p, "p50"))
        .fold((f64::MAX, 0.0f64), |(a, b), x| (a.min(x), b.max(x)));
    let p50 = lat(&m, "p50");
    assert!(
        lo <= p50 && p50 <= hi,
        "merged tpot p50 {p50} outside the shards' [{lo}, {hi}]"
    );
    // A missing shard is refused.
    let o = bench()
        .arg("merge")
        .args(&outs[..2])
        .args(["--out", dir.path().join("bad").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("shard 2/3 is missing"));
    // An interrupted shard makes the merged run incomplete: written, marked, exit 2.
    let cut = outs[2].join("run.json");
    let mut r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&cut).unwrap()).unwrap();
    r["complete"] = false.into();
    std::fs::write(&cut, r.to_string()).unwrap();
    let partial = dir.path().join("partial");
    let o = bench()
        .arg("merge")
        .args(&outs)
        .args(["--out", partial.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(read(&partial)["complete"], false);
}
