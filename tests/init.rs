//! `bench init` in a scratch repository on the embedded simulator: the files it writes, the
//! gate it sets up answering (`ci/gate.sh --plan`), and its refusal to overwrite. The full walk
//! — the written workflow's steps, an A/A and a regression, on the simulator and on
//! llama-server — is ci/init-e2e.sh's, in CI.

mod common;
use std::process::Command;

fn bench(dir: &std::path::Path, args: &[&str]) -> (Option<i32>, String) {
    common::text_of(common::bench_ci().args(args).current_dir(dir))
}

#[test]
fn init_sets_up_a_gate_that_answers_and_refuses_to_overwrite_it() {
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let shape = [
        "init",
        "--requests",
        "8",
        "--concurrency",
        "2",
        "--input-tokens",
        "32",
        "--output-tokens",
        "8",
        "--repeat",
        "2",
    ];
    let (code, text) = bench(dir, &shape);
    assert_eq!(code, Some(0), "{text}");
    for f in [
        "scenarios/gate.toml",
        "baselines/gate/main.json",
        "ci/gate.toml",
        "ci/gate.sh",
        ".github/workflows/bench-gate.yml",
    ] {
        assert!(dir.join(f).is_file(), "{f} missing: {text}");
        assert!(text.contains(&format!("wrote {f}")), "{text}");
    }
    // What the simulator showed, and the arms: interleaved.
    assert!(text.contains("usage streamed in all 16 requests"), "{text}");
    assert!(text.contains("arms: interleaved"), "{text}");
    let gate = std::fs::read_to_string(dir.join("ci/gate.toml")).unwrap();
    assert!(gate.contains("\ninterleave = true\n"), "{gate}");
    // 8-request runs never reach a p99's 1000 requests: off, with the reason.
    assert!(
        gate.contains("\"ttft.p99\"             = \"off\"    # "),
        "{gate}"
    );
    // The script is the shipped one, and the gate it runs plans against the new baseline.
    let script = std::fs::read_to_string(dir.join("ci/gate.sh")).unwrap();
    assert_eq!(script, include_str!("../ci/gate.sh"));
    let o = Command::new("bash")
        .args(["ci/gate.sh", "--plan"])
        .current_dir(dir)
        .env("BENCH", env!("CARGO_BIN_EXE_bench"))
        .output()
        .unwrap();
    let plan = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{plan}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // It plans every row init gated (which rows settle depends on the runs' spread, so on how
    // busy the machine was: the rows are read from the file, not assumed).
    assert!(plan.contains("plan: looks at"), "{plan}");
    let rows: Vec<&str> = gate
        .lines()
        .skip_while(|l| *l != "[gate]")
        .filter(|l| l.starts_with('"'))
        .collect();
    assert!(rows.len() >= 5, "{gate}");
    let gated: Vec<&str> = rows
        .iter()
        .filter(|l| !l.contains("= \"off\""))
        .filter_map(|l| l.split('"').nth(1))
        .collect();
    for m in &gated {
        assert!(
            plan.contains(&format!("  {m} ")),
            "{m} is gated but not planned:\n{plan}\n{gate}"
        );
    }
    // Again: every file it would replace is named, and nothing is written.
    let before = std::fs::read(dir.join("baselines/gate/main.json")).unwrap();
    let (code, text) = bench(dir, &shape);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("scenarios/gate.toml, baselines/gate/main.json, ci/gate.toml, ci/gate.sh, .github/workflows/bench-gate.yml already exist; pass --force"), "{text}");
    assert_eq!(
        std::fs::read(dir.join("baselines/gate/main.json")).unwrap(),
        before
    );
}

#[test]
fn init_refuses_an_endpoint_that_serves_no_api_before_writing_anything() {
    let repo = tempfile::tempdir().unwrap();
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let (code, text) = bench(repo.path(), &["init", "--endpoint", &url]);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("cannot list models"), "{text}");
    assert!(
        std::fs::read_dir(repo.path()).unwrap().next().is_none(),
        "wrote files: {text}"
    );
}
