//! `bench report`: one self-contained HTML page for a run, a sweep, a comparison or a
//! baseline.

use crate::error::BenchError;
use crate::model::comparison::Comparison;
use crate::model::result::RunResult;
use crate::model::sweep::Sweep;
use crate::output::export::{Page, Requested};
use crate::output::html;
use crate::EXIT_OK;
use std::path::{Path, PathBuf};

pub fn run(path: &Path, out: Option<PathBuf>) -> Result<u8, BenchError> {
    let (text, default) = page(path)?;
    let out = out.unwrap_or(default);
    Requested::new(None, Some(&out), None, None, None).write(&Page(text))?;
    Ok(EXIT_OK)
}

/// The page for PATH: a run.json (or its directory), a sweep directory (sweep.json), a
/// compare JSON or a baseline file; and where it goes by default (`report.html` beside the
/// input; a baseline's under `results/`).
fn page(path: &Path) -> Result<(String, PathBuf), BenchError> {
    let dir = if path.is_dir() {
        path.to_path_buf()
    } else {
        path.parent().unwrap_or(Path::new(".")).to_path_buf()
    };
    let file = if path.is_dir() {
        ["run.json", "sweep.json"]
            .iter()
            .map(|f| path.join(f))
            .find(|p| p.exists())
            .ok_or_else(|| {
                BenchError::usage(format!(
                    "{}: no run.json or sweep.json in it",
                    path.display()
                ))
            })?
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| BenchError::Runtime(format!("cannot read {}: {e}", file.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| BenchError::Runtime(format!("{}: not JSON ({e})", file.display())))?;
    if v.get("kind").and_then(|k| k.as_str()) == Some(crate::model::baseline::KIND) {
        // Read as the gate reads it: a baseline that would not be judged is no page either.
        // Its page goes under results/, never into the committed store beside it.
        let b = crate::verdict::baseline::load(&file)?;
        let out = Path::new("results").join(format!(
            "baseline-{}-{}-report.html",
            b.scenario_name, b.name
        ));
        return Ok((html::baseline_report(&b), out));
    }
    let page = if v.get("points").is_some() {
        let s: Sweep = serde_json::from_value(v)
            .map_err(|e| BenchError::Runtime(format!("{}: not a sweep ({e})", file.display())))?;
        // The SLOs and the configuration come from the first point's run, when it is still there.
        let first = s
            .points
            .first()
            .and_then(|p| RunResult::load(&Path::new(&p.run_dir).join("run.json")).ok());
        html::sweep_report(&s, first.as_ref())
    } else if v.get("rows").is_some() {
        let c: Comparison = serde_json::from_value(v).map_err(|e| {
            BenchError::Runtime(format!("{}: not a comparison ({e})", file.display()))
        })?;
        html::compare_report(&c, None)
    } else {
        html::run_report(&RunResult::load(&file)?)
    };
    Ok((page, dir.join("report.html")))
}
