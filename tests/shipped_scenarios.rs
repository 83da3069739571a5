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
