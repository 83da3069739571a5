//! Scenario files (TOML) → a validated [`Scenario`].
//!
//! Parsing is two-stage: serde reads the file into [`raw`] structs (unknown fields rejected,
//! every value's span kept), then the checks here turn them into the typed form, checking
//! values and cross-field rules. serde errors carry a byte span (from `toml`) and a field path
//! (from `serde_path_to_error`); our own checks use the spans kept in [`raw`]. Every error is
//! [`ScenarioError::Invalid`] with the file, the 1-based line and column, and the dotted field
//! path. The schema is documented in `scenarios/README.md`.

mod build;
pub use build::check_name;
mod load;
mod raw;
mod workload;

use crate::error::ScenarioError;
use crate::model::scenario::Scenario;
use raw::RawScenario;
use std::ops::Range;
use std::path::Path;

thread_local! {
    /// Scenario files read on this thread (a command reads its scenario once and varies the
    /// typed spec in memory; a test holds it to that).
    static READS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// How many scenario files this thread has read.
pub fn reads() -> usize {
    READS.with(|r| r.get())
}

/// Reads and validates a scenario file.
pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
    READS.with(|r| r.set(r.get() + 1));
    let bytes = std::fs::read(path).map_err(|source| ScenarioError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let text =
        String::from_utf8(bytes).map_err(|e| not_utf8(path, e.as_bytes(), e.utf8_error()))?;
    parse(&text, path)
}

/// A file that is not UTF-8: the line and column of the first bad byte.
fn not_utf8(path: &Path, bytes: &[u8], e: std::str::Utf8Error) -> ScenarioError {
    let good = std::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or_default();
    let (line, column) = line_col(good, good.len());
    ScenarioError::Invalid {
        path: path.to_path_buf(),
        line,
        column,
        field: None,
        message: format!(
            "byte 0x{:02X} is not UTF-8: a scenario file must be UTF-8 text (re-save it as UTF-8)",
            bytes[e.valid_up_to()]
        ),
    }
}

/// Validates scenario text; `path` is used for messages and to resolve dataset paths.
pub fn parse(text: &str, path: &Path) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { path, text };
    let de = toml::Deserializer::parse(text).map_err(|e| toml_error(&ctx, &e, String::new()))?;
    let raw: RawScenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let field = e
            .path()
            .iter()
            .map(|s| s.to_string())
            .filter(|s| !s.starts_with("$__") && s != "?")
            .collect::<Vec<_>>()
            .join(".");
        toml_error(&ctx, e.inner(), field)
    })?;
    build::build(&ctx, raw)
}

fn toml_error(ctx: &Ctx, e: &toml::de::Error, field: String) -> ScenarioError {
    let span = e.span().unwrap_or(0..0);
    ctx.at(span, &field, e.message().trim().to_string())
}

/// Where errors point: the file's name and text.
pub(crate) struct Ctx<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    /// An error at the first of `fields` that is present (`{section}.{name}: {why}`), for
    /// fields that do not apply where they were written.
    pub(crate) fn refuse(
        &self,
        section: &str,
        fields: &[(&str, Option<Range<usize>>)],
        why: &str,
    ) -> Result<(), ScenarioError> {
        match fields
            .iter()
            .find_map(|(n, sp)| sp.clone().map(|sp| (n, sp)))
        {
            Some((name, sp)) => Err(self.at(sp, &format!("{section}.{name}"), why)),
            None => Ok(()),
        }
    }

    pub(crate) fn at(
        &self,
        span: Range<usize>,
        field: &str,
        message: impl Into<String>,
    ) -> ScenarioError {
        let (line, column) = line_col(self.text, span.start);
        ScenarioError::Invalid {
            path: self.path.to_path_buf(),
            line,
            column,
            field: (!field.is_empty()).then(|| field.to_string()),
            message: message.into(),
        }
    }
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests;
