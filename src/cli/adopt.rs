//! The flags of the commands that bring a repository or another tool's results to the gate:
//! `bench init` and `bench import`.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The result files, one run each (all of one benchmark's settings).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Where to write the runs (DIR/<file stem>/run.json) and DIR/scenario.toml.
    #[arg(long)]
    pub out: PathBuf,
    /// The scenario's name.
    #[arg(long, default_value = "imported")]
    pub name: String,
    /// The configuration the files measured (`--var server=patched`), as `bench run` records it.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The server to gate (`http://HOST:PORT/v1`); bench's embedded simulator when none.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model to ask for; the one GET /v1/models lists when it lists one.
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable holding the API key (its value is never written anywhere).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
    /// A second server serving the reference configuration: the baseline is recorded on it,
    /// and the gate alternates runs on it with the candidate's (interleaved).
    #[arg(long, value_name = "URL", conflicts_with = "switch")]
    pub baseline_endpoint: Option<String>,
    /// A command that switches the one server between the arms (`{arm}` is `baseline` or
    /// `candidate`): the gate interleaves through it.
    #[arg(long, value_name = "CMD")]
    pub switch: Option<String>,
    /// The scenario's name: scenarios/NAME.toml, baselines/NAME/main.json.
    #[arg(long, default_value = "gate")]
    pub name: String,
    /// Requests a run (after warmup).
    #[arg(long, default_value_t = 20)]
    pub requests: u64,
    /// Requests in flight at once (closed loop).
    #[arg(long, default_value_t = 4)]
    pub concurrency: u32,
    /// Prompt tokens a request.
    #[arg(long, default_value_t = 128)]
    pub input_tokens: u64,
    /// Output tokens a request (sent with ignore_eos).
    #[arg(long, default_value_t = 64)]
    pub output_tokens: u64,
    /// Baseline runs to record.
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// The workflow keeps one sticky pull-request comment with the verdicts.
    #[arg(long)]
    pub comment: bool,
    /// Replace files that exist.
    #[arg(long)]
    pub force: bool,
}
