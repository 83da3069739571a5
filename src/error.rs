//! Domain errors and their exit codes.
//!
//! Every error names the file or flag at fault and, where one exists, the fix. The exit-code
//! contract (documented in the README) is: 0 pass, 1 regression found, 2 usage or runtime error;
//! every variant here maps to 2.

use std::path::PathBuf;

/// A scenario file that cannot be turned into a plan.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    #[error("cannot read scenario {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// `field` is the dotted path (`load.rate`) when it is known.
    #[error("{path}:{line}:{column}: {}{message}", field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
    Invalid {
        path: PathBuf,
        line: usize,
        column: usize,
        field: Option<String>,
        message: String,
    },
    #[error("{path}: {message}")]
    Other { path: PathBuf, message: String },
}

/// Errors that stop `bench` before or while it works; all exit with code 2.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("{0}")]
    Usage(String),
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Runtime(String),
    /// The command stopped part-way after its work was kept (an interrupted baseline or
    /// compare, a failed shard): exit 2, this text printed as it is — it says what happened
    /// and where the finished runs are (empty: nothing more to say).
    #[error("{0}")]
    Incomplete(String),
}

impl BenchError {
    pub fn usage(msg: impl Into<String>) -> Self {
        BenchError::Usage(msg.into())
    }
}
