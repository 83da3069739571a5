//! The manual stays a manual: the README is a user guide of at most 300 lines, neither it nor
//! a code comment carries dated history (git is the history; the dated validation record is
//! `docs/gate-validation.md`), and every file the docs or the code cite exists.

mod common;
use common::rust_files;
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `YYYY-MM-DD` after a word that makes it history ("until 2026-12-04", "since …").
fn dated_history(text: &str) -> Vec<String> {
    let words = ["until", "since", "before", "after", "as of", "added"];
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        for w in words {
            let mut from = 0;
            while let Some(i) = lower[from..].find(w) {
                let rest = lower[from + i + w.len()..].trim_start_matches([' ', '(']);
                let b = rest.as_bytes();
                let is_date = b.len() >= 10
                    && b[..4].iter().all(u8::is_ascii_digit)
                    && b[4] == b'-'
                    && b[7] == b'-';
                if is_date {
                    found.push(format!("line {}: {}", n + 1, line.trim()));
                }
                from += i + w.len();
            }
        }
    }
    found
}

#[test]
fn the_readme_is_a_guide_of_at_most_300_lines_without_dates() {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the method and records belong in docs/"
    );
    let dates: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.as_bytes().windows(10).any(|w| {
                w[..4].iter().all(u8::is_ascii_digit)
                    && w[4] == b'-'
                    && w[5..7].iter().all(u8::is_ascii_digit)
                    && w[7] == b'-'
                    && w[8..].iter().all(u8::is_ascii_digit)
            })
        })
        .collect();
    assert!(dates.is_empty(), "dates in README.md: {dates:?}");
    for cited in ["DOMAIN.md", "../shared", "--nocapture"] {
        assert!(!text.contains(cited), "README.md cites {cited}");
    }
}

#[test]
fn no_code_comment_carries_dated_history_or_issue_numbers() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("tests"), &mut files);
    let mut bad = Vec::new();
    for f in files.iter().filter(|f| !f.ends_with("docs.rs")) {
        let text = std::fs::read_to_string(f).unwrap();
        for d in dated_history(&text) {
            bad.push(format!("{}: {d}", f.display()));
        }
        for (n, line) in text.lines().enumerate() {
            let l = line.trim_start();
            let comment = l.starts_with("//") || l.starts_with("///") || l.starts_with("//!");
            let lower = l.to_lowercase();
            let issue = lower
                .match_indices("issue ")
                .any(|(i, _)| lower[i + 6..].starts_with(|c: char| c.is_ascii_digit()));
            if comment && (l.contains("DOMAIN.md") || issue) {
                bad.push(format!("{}:{}: {}", f.display(), n + 1, l));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "history belongs in git:\n{}",
        bad.join("\n")
    );
}

/// Relative link targets in Markdown (`](path)`, `](path#anchor)`).
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or("").trim();
        if !target.is_empty() && !target.contains("://") && !target.starts_with("mailto:") {
            out.push(target.to_string());
        }
    }
    out
}

#[test]
fn every_file_the_docs_and_the_code_cite_exists() {
    let root = root();
    let mut md: Vec<PathBuf> = vec![root.join("README.md"), root.join("scenarios/README.md")];
    for e in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            md.push(e.path());
        }
    }
    let mut missing = Vec::new();
    for f in &md {
        let text = std::fs::read_to_string(f).unwrap();
        for l in links(&text) {
            let target = f.parent().unwrap().join(&l);
            if !target.exists() {
                missing.push(format!("{} links {l}", f.display()));
            }
        }
    }
    // `docs/NAME.md` named in the source, the CLI's help or the scenarios.
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for e in std::fs::read_dir(root.join("scenarios")).unwrap().flatten() {
        files.push(e.path());
    }
    for f in files.iter().filter(|f| f.is_file()) {
        let text = std::fs::read_to_string(f).unwrap_or_default();
        let mut rest = text.as_str();
        while let Some(i) = rest.find("docs/") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_ascii_alphanumeric() || "/-_.".contains(c)))
                .unwrap_or(tail.len());
            let cited = tail[..end].trim_end_matches('.');
            if cited.ends_with(".md") && !root.join(cited).exists() {
                missing.push(format!("{} cites {cited}", f.display()));
            }
            rest = &tail[5..];
        }
    }
    assert!(
        missing.is_empty(),
        "cited but missing:\n{}",
        missing.join("\n")
    );
}
