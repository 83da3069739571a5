//! The README's walk, line by line: every command in its `sh` blocks is one `bench` accepts
//! (parsed by the same clap definition the binary uses), every file of this repository it
//! names exists, and every placeholder it uses (`URL`, `T`) is defined in the text. Running
//! the whole walk takes longer than a CI budget (a sweep alone ≈ 10 minutes); the commands'
//! behaviour is the other tests' job.

use clap::Parser;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Each command line of the README's `sh` blocks: continuations joined, `;` split, comments
/// dropped, words split as the shell splits them.
fn commands(readme: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut pending = String::new();
    for (n, line) in readme.lines().enumerate() {
        if line.starts_with("```") {
            in_sh = line == "```sh";
            continue;
        }
        if !in_sh {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending += head;
            continue;
        }
        let full = std::mem::take(&mut pending) + line;
        let words = shlex::split(&full)
            .unwrap_or_else(|| panic!("README line {}: unbalanced quotes", n + 1));
        let mut cmd = Vec::new();
        for w in words.into_iter().take_while(|w| !w.starts_with('#')) {
            match w.strip_suffix(';') {
                Some(last) => {
                    cmd.push(last.to_string());
                    out.push((n + 1, std::mem::take(&mut cmd)));
                }
                None => cmd.push(w),
            }
        }
        if !cmd.is_empty() {
            out.push((n + 1, cmd));
        }
    }
    out
}

#[test]
fn every_readme_command_parses_and_names_files_that_exist() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let all = commands(&readme);
    assert!(all.len() > 20, "found only {} commands", all.len());
    let mut checked = 0;
    for (line, w) in &all {
        let argv: Vec<String> = match w[0].as_str() {
            "bench" => w.clone(),
            // `cargo run --release -- ARGS` runs `bench ARGS`.
            "cargo" if w.get(1).map(String::as_str) == Some("run") => {
                let at = w.iter().position(|x| x == "--").expect("cargo run -- ARGS");
                std::iter::once("bench".to_string())
                    .chain(w[at + 1..].iter().cloned())
                    .collect()
            }
            // ci/gate.sh's arguments go to every `bench compare` of the gate's scenarios.
            "ci/gate.sh" => ["bench", "compare", "scenarios/smoke.toml"]
                .iter()
                .map(|s| s.to_string())
                .chain(w[1..].iter().cloned())
                .collect(),
            "cargo" | "ci/check.sh" => continue,
            x if x.contains('=') => continue, // a shell variable's assignment
            other => panic!("README line {line}: `{other}` is not a command the README should run"),
        };
        if let Err(e) = bench::cli::Cli::try_parse_from(&argv) {
            panic!("README line {line}: `{}` does not parse:\n{e}", w.join(" "));
        }
        for a in &argv {
            let shipped = ["scenarios/", "baselines/", "ci/", "docs/"]
                .iter()
                .any(|d| a.starts_with(d));
            if shipped && !a.contains('…') {
                assert!(
                    root().join(a).exists(),
                    "README line {line}: {a} does not exist"
                );
            }
        }
        checked += 1;
    }
    assert!(checked > 20, "{checked}");
}

#[test]
fn every_readme_placeholder_is_defined_in_the_text() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for (line, w) in commands(&readme) {
        // An assignment (`T=$(date …)`) defines its variable.
        if w[0].contains('=') {
            continue;
        }
        for (i, a) in w.iter().enumerate() {
            // A note is the user's words, not a placeholder.
            if i > 0 && w[i - 1] == "--note" {
                continue;
            }
            let whole = a.len() >= 3 && a.chars().all(|c| c.is_ascii_uppercase());
            let vars = a.split('$').skip(1).map(|v| {
                v.trim_matches(|c: char| !c.is_ascii_alphanumeric())
                    .to_string()
            });
            let names: Vec<String> = vars
                .chain(whole.then(|| a.clone()))
                .filter(|n| !n.is_empty())
                .collect();
            for name in names {
                assert!(
                    readme.contains(&format!("`{name}`")) || readme.contains(&format!("{name}=$(")),
                    "README line {line}: placeholder {name} is not defined in the text"
                );
            }
        }
    }
}
