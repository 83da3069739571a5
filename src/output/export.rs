//! One writer for every report file a command writes, after hyperfine's export manager: a
//! report says which formats it has and renders each ([`Exporter`]); the flags name the
//! files ([`Requested`], built from the shared `--markdown/--html/--json/--csv` flags and
//! `--record`, or a command's fixed names); [`Requested::write`] renders each requested file
//! and writes it atomically, saying where on stderr (stdout stays the report a pipe reads). A format a report does not have is refused by [`Requested::check`] before
//! any run, not after.

use super::record::RecordRow;
use crate::error::BenchError;
use std::path::{Path, PathBuf};

/// A file format a report can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Markdown,
    Html,
    Json,
    /// Optimization-record rows, the file replaced.
    Csv,
    /// Optimization-record rows appended to a file that keeps growing (`--record`).
    Record,
}

impl Format {
    /// The flag that asks for it.
    pub fn flag(self) -> &'static str {
        match self {
            Format::Markdown => "--markdown",
            Format::Html => "--html",
            Format::Json => "--json",
            Format::Csv => "--csv",
            Format::Record => "--record",
        }
    }
}

/// A report that can be written to files.
pub trait Exporter {
    /// The command that writes it, for the error naming a format it lacks.
    const COMMAND: &'static str;
    /// The formats it has; [`Format::Record`] appends [`Exporter::rows`].
    const FORMATS: &'static [Format];
    /// The bytes of one format (not called for [`Format::Record`]).
    fn render(&self, format: Format) -> Result<Vec<u8>, BenchError>;
    /// The optimization-record rows, for `--record` (and a report's CSV where that is them).
    fn rows(&self) -> Vec<RecordRow> {
        Vec::new()
    }
}

/// The files the flags ask for, in the order they are written.
#[derive(Debug, Clone, Default)]
pub struct Requested {
    files: Vec<(Format, PathBuf)>,
}

impl Requested {
    /// The files asked for by the shared output flags and `--record`.
    pub fn new(
        markdown: Option<&Path>,
        html: Option<&Path>,
        json: Option<&Path>,
        csv: Option<&Path>,
        record: Option<&Path>,
    ) -> Self {
        let formats = [
            (Format::Markdown, markdown),
            (Format::Html, html),
            (Format::Json, json),
            (Format::Csv, csv),
            (Format::Record, record),
        ];
        Requested {
            files: formats
                .into_iter()
                .filter_map(|(f, p)| p.map(|p| (f, p.to_path_buf())))
                .collect(),
        }
    }

    /// Refuses a format `E` does not have, naming the ones it has.
    pub fn check<E: Exporter>(&self) -> Result<(), BenchError> {
        match self.files.iter().find(|(f, _)| !E::FORMATS.contains(f)) {
            None => Ok(()),
            Some((f, _)) => Err(BenchError::usage(format!(
                "{} does not write {}; it writes {}",
                E::COMMAND,
                f.flag(),
                E::FORMATS
                    .iter()
                    .map(|f| f.flag())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// The file asked for in `format`, if any.
    pub fn path(&self, format: Format) -> Option<&Path> {
        self.files
            .iter()
            .find(|(f, _)| *f == format)
            .map(|(_, p)| p.as_path())
    }

    /// Renders and writes every requested file: atomically, or for `--record` appended
    /// (rows under a header the file already has, or the header first). Says each path.
    pub fn write<E: Exporter>(&self, report: &E) -> Result<(), BenchError> {
        self.check::<E>()?;
        for (format, path) in &self.files {
            match format {
                Format::Record => {
                    super::record::append(path, &report.rows())?;
                    crate::say!("record rows appended to {}", path.display());
                }
                f => {
                    super::write_atomic(path, &report.render(*f)?)?;
                    crate::say!("wrote {}", path.display());
                }
            }
        }
        Ok(())
    }
}

/// The optimization-record rows of `report` as a CSV file with its header.
pub fn record_csv(report: &impl Exporter) -> Result<Vec<u8>, BenchError> {
    super::record::render(&report.rows(), true)
}

/// A page already rendered (`bench report`), the one file it writes.
pub struct Page(pub String);

impl Exporter for Page {
    const COMMAND: &'static str = "bench report";
    const FORMATS: &'static [Format] = &[Format::Html];

    fn render(&self, _: Format) -> Result<Vec<u8>, BenchError> {
        Ok(self.0.clone().into_bytes())
    }
}

/// `bench compare --plan`'s sequential design, the one file it writes (`--json`).
pub struct PlanDesign(pub serde_json::Value);

impl Exporter for PlanDesign {
    const COMMAND: &'static str = "bench compare --plan";
    const FORMATS: &'static [Format] = &[Format::Json];

    fn render(&self, _: Format) -> Result<Vec<u8>, BenchError> {
        super::json(&serde_json::json!({ "design": self.0 }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;
    impl Exporter for Two {
        const COMMAND: &'static str = "bench two";
        const FORMATS: &'static [Format] = &[Format::Markdown, Format::Json];
        fn render(&self, format: Format) -> Result<Vec<u8>, BenchError> {
            Ok(format!("{format:?}").into_bytes())
        }
    }

    #[test]
    fn a_format_the_report_lacks_is_refused_naming_those_it_has() {
        let r = Requested::new(None, Some(Path::new("x.html")), None, None, None);
        let e = r.check::<Two>().unwrap_err().to_string();
        assert!(
            e.contains("bench two does not write --html; it writes --markdown, --json"),
            "{e}"
        );
    }

    #[test]
    fn every_requested_file_is_written_with_its_format() {
        let dir = tempfile::tempdir().unwrap();
        let (md, js) = (dir.path().join("a.md"), dir.path().join("a.json"));
        let r = Requested::new(Some(&md), None, Some(&js), None, None);
        r.write(&Two).unwrap();
        assert_eq!(std::fs::read_to_string(&md).unwrap(), "Markdown");
        assert_eq!(std::fs::read_to_string(&js).unwrap(), "Json");
        assert_eq!(r.path(Format::Json), Some(js.as_path()));
        assert_eq!(r.path(Format::Html), None);
    }
}
