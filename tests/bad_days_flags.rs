//! Flags on bad days: each refusal names the flag the user typed and says why, and numbers
//! echoed back read as a person writes them (no 300-digit decimal, no saturated u64).

mod common;

use common::bench_text as bench;

#[test]
fn a_window_narrower_than_10_ms_is_refused_saying_why() {
    for w in ["1e-9", "0.001", "0"] {
        let (rc, t) = bench(&["run", "scenarios/smoke.toml", "--window", w]);
        assert_eq!(rc, Some(2), "{w}: {t}");
        assert!(t.contains("--window") && t.contains("at least 0.01"), "{t}");
    }
}

#[test]
fn max_repeat_out_of_range_names_max_repeat() {
    for n in ["0", "1000000000"] {
        let (rc, t) = bench(&[
            "compare",
            "scenarios/smoke.toml",
            "--max-repeat",
            n,
            "--plan",
        ]);
        assert_eq!(rc, Some(2), "{t}");
        assert!(t.contains("--max-repeat must be between 1 and 1000"), "{t}");
    }
}

#[test]
fn budget_and_settle_all_are_refused_with_a_fixed_repeat() {
    for extra in [["--budget", "5m"].as_slice(), ["--settle-all"].as_slice()] {
        let mut args = vec!["compare", "scenarios/smoke.toml", "--repeat", "3", "--plan"];
        args.extend_from_slice(extra);
        let (rc, t) = bench(&args);
        assert_eq!(rc, Some(2), "{extra:?}: {t}");
        assert!(t.contains("cannot be used with"), "{t}");
    }
}

#[test]
fn a_tiny_alpha_reads_as_a_person_writes_it() {
    // The error rate gated, so that the plan says how many requests bounding it needs.
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate.toml");
    std::fs::write(&gate, "[gate]\n\"error_rate\" = \"+0.5pp\"\n").unwrap();
    let (rc, t) = bench(&[
        "compare",
        "scenarios/smoke.toml",
        "--alpha",
        "1e-300",
        "--plan",
        "--gate",
        gate.to_str().unwrap(),
    ]);
    assert_eq!(rc, Some(0), "{t}");
    assert!(!t.contains("18446744073709551615"), "{t}");
    let longest_digits = t
        .split(|c: char| !c.is_ascii_digit())
        .map(str::len)
        .max()
        .unwrap_or(0);
    assert!(
        longest_digits < 13,
        "a number of {longest_digits} digits:\n{t}"
    );
    assert!(t.contains("more than 10^"), "{t}");
}

/// `--rates` prints the last-sustainable-rate line the docs promise, also when no point
/// over-saturated the server.
#[test]
fn a_rate_sweep_always_says_its_last_sustainable_rate() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sw");
    let (rc, t) = bench(&[
        "sweep",
        "scenarios/chat-short.toml",
        "--rates",
        "8,16",
        "--requests",
        "12",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(rc, Some(0), "{t}");
    assert!(t.contains("last sustainable rate:"), "{t}");
}
