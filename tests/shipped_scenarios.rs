//! Every scenario in `scenarios/` loads, and the schema doc mentions every top-level section.

use bench::config::scenario::load;

#[test]
fn every_shipped_scenario_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            load(&p).unwrap_or_else(|e| panic!("{e}"));
            n += 1;
        }
    }
    assert!(n >= 4, "at least four ready scenarios, found {n}");
    let doc = std::fs::read_to_string(dir.join("README.md")).unwrap();
    for section in [
        "[request]",
        "[workload]",
        "[load]",
        "[slo]",
        "shared_prefix",
        "long_short_mix",
        "dataset",
        "burstiness",
    ] {
        assert!(
            doc.contains(section),
            "scenarios/README.md does not document {section}"
        );
    }
}

/// Every committed baseline reads (whole and self-consistent) and was recorded from its
/// scenario file as that file reads today: a new default that changes the traffic hash fails
/// here, naming the fields, instead of in every user's CI.
#[test]
fn every_committed_baseline_matches_its_scenario() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let stored = bench::verdict::baseline::list(&root.join("baselines"));
    assert!(!stored.is_empty(), "no committed baseline found");
    for (scenario, name, path) in stored {
        let b = bench::verdict::baseline::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let file = root.join("scenarios").join(format!("{scenario}.toml"));
        let s = load(&file).unwrap_or_else(|e| panic!("{e}"));
        let changes = b.repetitions[0].scenario.traffic_changes(&s);
        assert_eq!(
            b.scenario_hash,
            s.traffic_hash(),
            "baselines/{scenario}/{name}.json no longer matches {}: {changes:?}; re-record it with `bench baseline {} --name {name} --force`",
            file.display(),
            file.display()
        );
    }
}

/// The shipped gate recipe, as a user's CI runs it (`ci/gate.sh` against the committed
/// baseline, on the embedded simulator), exits 0.
#[test]
fn the_shipped_gate_recipe_passes_against_the_committed_baseline() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = tempfile::tempdir().unwrap();
    let o = std::process::Command::new("bash")
        .arg(root.join("ci/gate.sh"))
        .args(["-q", "--out"])
        .arg(out.path().join("gate"))
        .env("BENCH", env!("CARGO_BIN_EXE_bench"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(0), "ci/gate.sh: {text}");
}
