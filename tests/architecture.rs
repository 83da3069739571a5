//! The data path stays one-way: every `crate::…` reference in `src/` goes to a top-level
//! module in the same layer or a lower one (the layers are listed in `src/lib.rs`), so no two
//! top-level modules import each other. Test code (`tests.rs` and `tests_*.rs` files,
//! `#[cfg(test)]` modules, `testkit.rs`) may reach across, and is left out.

mod common;
use common::rust_files;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Top-level modules by layer, lowest first — as `src/lib.rs` documents them.
const LAYERS: &[&[&str]] = &[
    &["error"],
    &["model"],
    &["sim"],
    &["cli"],
    &["config"],
    &["plan"],
    &["engine"],
    &["metrics"],
    &["output"],
    &["session"],
    &["verdict"],
    &["analysis"],
    &["commands"],
];

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The non-test source of every file under `dir`, with its top-level module.
fn sources(dir: &Path, out: &mut Vec<(String, String, String)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
            continue;
        }
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let test_file = name == "tests.rs" || name.starts_with("tests_") || name == "testkit.rs";
        if !name.ends_with(".rs") || test_file {
            continue;
        }
        let rel = p
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
            .unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let code = non_test(&text).to_string();
        out.push((rel.display().to_string(), top, code));
    }
}

/// `text` up to its test module (`#[cfg(test)]` before `mod`); a test-only item elsewhere
/// does not end it.
fn non_test(text: &str) -> &str {
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let after = text[at + "#[cfg(test)]".len()..].trim_start();
        let after = match after.strip_prefix("pub") {
            // `pub mod`, `pub(super) mod`, `pub(crate) mod`, …
            Some(rest) => rest.trim_start_matches(|c: char| c != ' ').trim_start(),
            None => after,
        };
        if after.starts_with("mod ") {
            return &text[..at];
        }
        from = at + 1;
    }
    text
}

fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules a file's code names as `crate::x` or in `crate::{x, y::z}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        let names = match after.strip_prefix('{') {
            // A group: the first name of each top-level item.
            Some(group) => {
                let (mut depth, mut items, mut start) = (0, Vec::new(), 0);
                for (k, c) in group.char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => {
                            items.push(&group[start..k]);
                            break;
                        }
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            items.push(&group[start..k]);
                            start = k + 1;
                        }
                        _ => {}
                    }
                }
                items.into_iter().map(ident).collect()
            }
            None => vec![ident(after)],
        };
        out.extend(names.into_iter().filter(|n| layer(n).is_some()));
        rest = after;
    }
    out
}

#[test]
fn the_import_scanner_sees_paths_and_groups() {
    let code = "use crate::model::x;\nuse crate::{output, session::Session, verdict::{a, b}};\nlet _ = crate::out!(\"\");";
    let got: Vec<String> = imports(code).into_iter().collect();
    assert_eq!(got, ["model", "output", "session", "verdict"]);
}

#[test]
fn every_module_imports_only_its_layer_or_below_and_there_are_no_cycles() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for (file, top, code) in &files {
        let own = layer(top).unwrap_or_else(|| panic!("{file}: module `{top}` is in no layer"));
        for m in imports(code) {
            if m == *top {
                continue;
            }
            if layer(&m).unwrap() > own {
                wrong.push(format!(
                    "{file} ({top}, layer {own}) imports {m} (layer {})",
                    layer(&m).unwrap()
                ));
            }
            graph.entry(top.clone()).or_default().insert(m);
        }
    }
    assert!(wrong.is_empty(), "upward imports:\n{}", wrong.join("\n"));
    // Same-layer modules could still import each other; look for any cycle.
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) {
        if let Some(i) = path.iter().position(|p| p == n) {
            panic!("import cycle: {} → {n}", path[i..].join(" → "));
        }
        if done.contains(n) {
            return;
        }
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            visit(m, graph, path, done);
        }
        path.pop();
        done.insert(n.to_string());
    }
    let mut done = BTreeSet::new();
    for n in graph.keys() {
        visit(n, &graph, &mut Vec::new(), &mut done);
    }
}

/// The command line is parsed in one place: the clap types of `cli.rs` reach `commands/`
/// (which map them) and `config/` (which turns them into typed configuration), and no deeper
/// code sees them.
#[test]
fn only_commands_and_config_see_the_command_line() {
    let mut files = Vec::new();
    sources(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let wrong: Vec<&String> = files
        .iter()
        .filter(|(_, top, code)| {
            !["commands", "config", "cli"].contains(&top.as_str()) && imports(code).contains("cli")
        })
        .map(|(file, _, _)| file)
        .collect();
    assert!(
        wrong.is_empty(),
        "crate::cli imported outside commands/ and config/: {wrong:?}"
    );
}

#[test]
fn lib_rs_documents_the_same_layers() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for (i, layer) in LAYERS.iter().enumerate() {
        let row = layer
            .iter()
            .map(|m| format!("`{m}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let line = format!("//! | {i} | {row} |");
        assert!(
            lib.contains(&line),
            "src/lib.rs does not list layer {i} as `{line}`"
        );
    }
}

#[test]
fn no_source_file_is_too_long_to_read_in_one_sitting() {
    // Every .rs file under src/, test files (`tests.rs`, `testkit.rs`) included.
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let n = std::fs::read_to_string(path).unwrap().lines().count();
            (n > 600).then(|| format!("{}: {n} lines", path.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "split these along the data path:\n{}",
        long.join("\n")
    );
}

/// Every file of one folder and the sibling files it names (`super::x`, or the folder's full
/// path `crate::a::b::x`); `mod.rs` is the folder's own and left out.
fn sibling_imports() -> BTreeMap<String, BTreeMap<String, BTreeSet<String>>> {
    fn walk(
        dir: &Path,
        src: &Path,
        out: &mut BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
    ) {
        let entries: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        let siblings: BTreeSet<String> = entries
            .iter()
            .filter_map(|p| {
                let stem = p.file_stem()?.to_string_lossy().into_owned();
                (p.is_dir() || p.extension().is_some_and(|x| x == "rs")).then_some(stem)
            })
            .filter(|s| s != "mod" && s != "tests")
            .collect();
        let folder = dir
            .strip_prefix(src)
            .unwrap()
            .display()
            .to_string()
            .replace('/', "::");
        for p in &entries {
            if p.is_dir() {
                walk(p, src, out);
                continue;
            }
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            if !siblings.contains(&stem) || p.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(p).unwrap();
            // Code only: a doc link to a sibling is no import.
            let code: String = non_test(&text)
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            let code = code.as_str();
            let mut names = BTreeSet::new();
            let prefixes = ["super::".to_string(), format!("crate::{folder}::")];
            for prefix in prefixes.iter().filter(|x| x.as_str() != "crate::::") {
                let mut rest = code;
                while let Some(i) = rest.find(prefix.as_str()) {
                    let after = &rest[i + prefix.len()..];
                    let items: Vec<String> = match after.strip_prefix('{') {
                        Some(g) => g
                            .split('}')
                            .next()
                            .unwrap_or("")
                            .split(',')
                            .map(ident)
                            .collect(),
                        None => vec![ident(after)],
                    };
                    names.extend(
                        items
                            .into_iter()
                            .filter(|n| siblings.contains(n) && *n != stem),
                    );
                    rest = after;
                }
            }
            out.entry(folder.clone()).or_default().insert(stem, names);
        }
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&src, &src, &mut out);
    out
}

#[test]
fn no_import_cycle_inside_a_folder_and_lib_rs_does_not_reach_up_to_commands() {
    for (folder, graph) in sibling_imports() {
        // Depth-first search for a back edge.
        fn visit(
            n: &str,
            g: &BTreeMap<String, BTreeSet<String>>,
            path: &mut Vec<String>,
            done: &mut BTreeSet<String>,
        ) -> Option<Vec<String>> {
            if let Some(i) = path.iter().position(|p| p == n) {
                let mut cycle = path[i..].to_vec();
                cycle.push(n.to_string());
                return Some(cycle);
            }
            if done.contains(n) {
                return None;
            }
            path.push(n.to_string());
            for m in g.get(n).into_iter().flatten() {
                if let Some(c) = visit(m, g, path, done) {
                    return Some(c);
                }
            }
            path.pop();
            done.insert(n.to_string());
            None
        }
        let mut done = BTreeSet::new();
        for n in graph.keys() {
            if let Some(c) = visit(n, &graph, &mut Vec::new(), &mut done) {
                panic!("import cycle inside src/{folder}: {}", c.join(" → "));
            }
        }
    }
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    let code: Vec<&str> = lib
        .lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.starts_with("pub mod "))
        .collect();
    assert!(
        !code.iter().any(|l| l.contains("commands")),
        "src/lib.rs uses commands/: the library must not reach up to the command layer"
    );
}

/// The code of `text` with string and char literals and comments blanked (their braces are
/// no blocks), line breaks kept.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < c.len() {
        let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == 'r' && (c.get(i + 1) == Some(&'#') || c.get(i + 1) == Some(&'"')) {
            // A raw string: r"…" or r#"…"#.
            let hashes = c[i + 1..].iter().take_while(|&&x| x == '#').count();
            if c.get(i + 1 + hashes) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            i += 2 + hashes;
            while i < c.len() {
                if c[i] == '"'
                    && c[i + 1..]
                        .iter()
                        .take(hashes)
                        .filter(|&&x| x == '#')
                        .count()
                        == hashes
                {
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 2) == Some(&'\'') || c.get(i + 1) == Some(&'\\')) {
            // A char literal ('{', '\n', '\''); a lifetime has no closing quote.
            i += 1;
            if c[i] == '\\' {
                i += 1;
            }
            i += 1;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Every function longer than `max` lines in `text`: (name, lines).
fn long_functions(text: &str, max: usize) -> Vec<(String, usize)> {
    let code = code_only(text);
    let lines: Vec<&str> = code.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        let t = t
            .strip_prefix("pub(crate) ")
            .or(t.strip_prefix("pub(super) "))
            .unwrap_or(t);
        let t = t.strip_prefix("pub ").unwrap_or(t);
        let t = t.strip_prefix("const ").unwrap_or(t);
        let t = t.strip_prefix("async ").unwrap_or(t);
        let Some(rest) = t.strip_prefix("fn ") else {
            i += 1;
            continue;
        };
        let name = ident(rest);
        let (mut depth, mut opened, mut j) = (0i64, false, i);
        'scan: while j < lines.len() {
            for ch in lines[j].chars() {
                match ch {
                    '{' => {
                        depth += 1;
                        opened = true;
                    }
                    '}' => depth -= 1,
                    ';' if !opened && depth == 0 => break 'scan, // a declaration
                    _ => {}
                }
                if opened && depth == 0 {
                    break 'scan;
                }
            }
            j += 1;
        }
        if opened && j - i + 1 > max {
            out.push((name, j - i + 1));
        }
        i = if opened { j + 1 } else { i + 1 };
    }
    out
}

#[test]
fn the_function_scanner_ignores_braces_in_literals_and_comments() {
    let text = "fn a() {\n    let s = \"{{\";\n    let c = '{';\n    // {\n    let r = r#\"}\"#;\n}\nfn b<'x>(v: &'x str) -> &'x str {\n    v\n}\n";
    assert_eq!(
        long_functions(text, 2),
        [("a".to_string(), 6), ("b".to_string(), 3)]
    );
    assert!(long_functions(text, 6).is_empty());
}

#[test]
fn no_function_is_longer_than_a_reader_can_hold() {
    const MAX: usize = 120;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("tests"), &mut files);
    let long: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            long_functions(&text, MAX)
                .into_iter()
                .map(move |(f, n)| format!("{}: fn {f}: {n} lines", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "functions over {MAX} lines:\n{}",
        long.join("\n")
    );
}

#[test]
fn every_command_maps_arguments_and_prints_in_80_lines() {
    // What a command does beyond mapping flags to typed configuration, calling the library
    // and printing belongs in config/, analysis/ or output/.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
    let long: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let text = std::fs::read_to_string(&p).unwrap();
            let n = non_test(&text).lines().count();
            (n > 80).then(|| format!("{}: {n} lines", p.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "commands over 80 lines:\n{}",
        long.join("\n")
    );
}

/// Items public only by accident: declared `pub` in a file of `src/`, named by no other file
/// of `src/`, `tests/` or `benches/`. Private, they fall under the dead-code lint. A type
/// (struct, enum, alias) stays `pub` when a public signature or field of its own file names
/// it: it is that item's API.
#[test]
fn no_pub_item_is_used_only_inside_its_own_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut all = Vec::new();
    for d in ["src", "tests", "benches"] {
        rust_files(&root.join(d), &mut all);
    }
    let texts: Vec<(PathBuf, String)> = all
        .into_iter()
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect();
    let decl = regex::Regex::new(
        r"(?m)^\s*pub (?:async )?(?:const )?(fn|struct|enum|const|type|trait|static) ([A-Za-z_][A-Za-z0-9_]*)",
    )
    .unwrap();
    let mut private = Vec::new();
    for (path, text) in &texts {
        let name = path.file_name().unwrap().to_string_lossy();
        let test_file = name == "tests.rs" || name.starts_with("tests_") || name == "testkit.rs";
        if !path.starts_with(root.join("src")) || test_file {
            continue;
        }
        let code = code_only(non_test(text));
        for m in decl.captures_iter(&code) {
            let (kind, item) = (&m[1], &m[2]);
            let word = regex::Regex::new(&format!(r"\b{item}\b")).unwrap();
            if texts.iter().any(|(p, t)| p != path && word.is_match(t)) {
                continue;
            }
            // Each public declaration of the file up to its body, its end or the next one, but
            // this one's.
            let start = m.get(0).unwrap().end();
            let in_signature = ["struct", "enum", "type"].contains(&kind)
                && code.match_indices("pub ").any(|(i, _)| {
                    let rest = &code[i..];
                    let next = rest[4..].find("pub ").map_or(rest.len(), |k| k + 4);
                    let end = rest.find(['{', ';', '}']).unwrap_or(rest.len()).min(next);
                    !(i..i + end).contains(&start) && word.is_match(&rest[..end])
                });
            if !in_signature {
                private.push(format!("{}: pub {kind} {item}", path.display()));
            }
        }
    }
    assert!(
        private.is_empty(),
        "pub items no other file uses; make them private (or delete them when nothing uses them):\n{}",
        private.join("\n")
    );
}

/// Production code handles what the network and users send: no `.unwrap()` outside tests
/// (`tests.rs`, `tests_*.rs`, `testkit.rs` and `#[cfg(test)]` modules), in lib.rs and
/// main.rs too.
#[test]
fn production_code_never_unwraps() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    for top in ["lib.rs", "main.rs"] {
        let text = std::fs::read_to_string(src.join(top)).unwrap();
        files.push((top.to_string(), String::new(), non_test(&text).to_string()));
    }
    let found: Vec<String> = files
        .iter()
        .flat_map(|(file, _, code)| {
            code_only(code)
                .lines()
                .enumerate()
                .filter(|(_, l)| l.contains(".unwrap()"))
                .map(|(i, l)| format!("{file}:{}: {}", i + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "`.unwrap()` in production code; return a typed error (or `expect` an invariant, saying why it holds):\n{}",
        found.join("\n")
    );
}
