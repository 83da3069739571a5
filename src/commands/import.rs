//! `bench import`: another tool's per-request results as bench runs, one a file, with the
//! scenario their settings describe — for `bench compare` to judge.

use crate::analysis::import::{import, Import};
use crate::cli::ImportArgs;
use crate::error::BenchError;
use crate::EXIT_OK;

pub fn run(args: &ImportArgs) -> Result<u8, BenchError> {
    let written = import(&Import {
        files: &args.files,
        out: &args.out,
        name: &args.name,
        vars: crate::config::kv::unique("--var", &args.vars)?,
    })?;
    for (dir, r) in &written.runs {
        let c = &r.summary.counts;
        crate::out!(
            "{}: {} requests ({} ok) from {}",
            dir.display(),
            c.sent,
            c.ok,
            r.imported.as_ref().map_or("?", |i| i.file.as_str())
        );
        if let Some(why) = crate::verdict::environment::client_bound(r) {
            crate::say!("warning: {why}");
        }
    }
    if let Some(i) = written.runs.first().and_then(|(_, r)| r.imported.as_ref()) {
        crate::out!("how {}'s figures differ from bench's:", i.tool);
        for d in &i.differences {
            crate::out!("  - {d}");
        }
    }
    crate::out!(
        "wrote {}; judge two imports as arms: bench compare {} --against {} --candidate OTHER_IMPORT",
        written.scenario.display(),
        written.scenario.display(),
        args.out.display()
    );
    Ok(EXIT_OK)
}
