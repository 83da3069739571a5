//! One quantile definition for every number a run reports: the p50/p95 that `bench run` prints
//! and writes (table, summary.csv, run.json) are the values `bench compare` judges for the
//! same run. (Before the redesign the table read HDR's inverse-ECDF quantile and the gate a
//! type-7 quantile of the raw values, so the two could differ.)

mod common;

use common::Config;

use common::bench;

#[test]
fn run_and_compare_report_the_same_quantiles_for_the_same_run() {
    // Spread the latencies so the quantiles fall between distinct values.
    let cfg = Config {
        token_gap: std::time::Duration::from_millis(2),
        ..Default::default()
    };
    let (addr, _log) = common::spawn_background(cfg);
    let dir = tempfile::tempdir().unwrap();
    let scenario = common::scenario(dir.path(), addr, "", "concurrency = 3\nrequests = 90");
    let out = dir.path().join("run");
    let run = common::run_ok(&scenario, &out, &[]);
    let json = dir.path().join("cmp.json");
    let runjson = out.join("run.json");
    let o = bench()
        .args(["compare", scenario.to_str().unwrap(), "--against"])
        .arg(&runjson)
        .arg("--candidate")
        .arg(&runjson)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let cmp: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let summary_csv = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let mut checked = 0;
    for metric in ["ttft", "tpot", "e2e"] {
        let lat = run["summary"]["latency"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["name"] == metric)
            .unwrap();
        let csv_row: Vec<&str> = summary_csv
            .lines()
            .find(|l| l.starts_with(&format!("{metric},")))
            .unwrap()
            .split(',')
            .collect();
        for (q, csv_col) in [("p50", 6), ("p95", 8)] {
            let key = format!("{metric}.{q}");
            let Some(row) = cmp["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["metric"] == key.as_str())
            else {
                continue;
            };
            let table = lat[q].as_f64().unwrap();
            assert_eq!(
                row["baseline"].as_f64().unwrap(),
                table,
                "{key}: run.json vs compare"
            );
            assert_eq!(row["candidate"].as_f64().unwrap(), table, "{key}");
            let csv: f64 = csv_row[csv_col].parse().unwrap();
            assert!(
                (csv - table).abs() < 5e-4,
                "{key}: summary.csv {csv} vs {table}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 5, "only {checked} metrics compared");
}
