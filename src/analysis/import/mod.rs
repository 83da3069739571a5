//! `bench import`: other tools' per-request results as bench runs, so that the gate can judge
//! them. Each file is one run (`DIR/repN/`, in the order given: `run.json`, `requests.csv`, `summary.csv`),
//! summarized from its requests by the same code as bench's own runs; the files of one import
//! must be one benchmark's settings, which become the scenario written beside them
//! (`scenario.toml`), so that `bench compare A/scenario.toml --against A --candidate B` judges
//! two imports as arms.
//!
//! Provenance is kept, not smoothed over: each run names the tool, the file and its SHA-256,
//! and every way the tool's figures are defined otherwise than bench's (a TTFT timed at the
//! role-only chunk, latencies from the actual rather than the intended send); a figure the
//! file does not hold is absent, not guessed. Formats: [`vllm`] (`vllm bench serve --save-detailed`),
//! [`guidellm`] (its JSON report).

pub mod guidellm;
pub mod vllm;

use crate::engine::runner::{RunData, StreamStats};
use crate::error::BenchError;
use crate::metrics::summary::summarize;
use crate::model::record::RequestRecord;
use crate::model::result::{Imported, RunResult, ToolInfo, SCHEMA_VERSION};
use crate::model::scenario::{sha256_hex, Scenario};
use chrono::{DateTime, Utc};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// vLLM's benchmark client.
pub const VLLM: &str = "vllm bench serve";
/// GuideLLM's.
pub const GUIDELLM: &str = "guidellm";

/// How a benchmark's requests arrived.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    /// A closed loop of this many users.
    Closed(u64),
    /// An open loop at `rate` requests a second (Poisson or evenly spaced), with at most
    /// `cap` in flight.
    Open {
        rate: f64,
        poisson: bool,
        cap: Option<u64>,
    },
}

/// A benchmark's settings: what must agree for files to be one benchmark's runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    pub chat: bool,
    pub load: Load,
    pub requests: u64,
    /// Mean prompt and output tokens (for the scenario's record only).
    pub input_tokens: u64,
    pub output_tokens: u64,
}

impl Settings {
    fn same_benchmark(&self, o: &Settings) -> bool {
        self.chat == o.chat && self.load == o.load && self.requests == o.requests
    }
}

/// One file, read by its tool's reader.
pub struct Parsed {
    pub tool: &'static str,
    pub version: Option<String>,
    pub settings: Settings,
    /// Times in µs from the run's first intended send.
    pub records: Vec<RequestRecord>,
    /// Each successful request's inter-chunk gaps, µs (empty where the file holds none).
    pub gaps: Vec<Vec<u64>>,
    pub started_at: Option<DateTime<Utc>>,
    pub model: String,
    pub differences: Vec<String>,
}

/// Reads a file in whichever format it is.
fn parse(text: &str) -> Result<Parsed, BenchError> {
    let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        BenchError::usage(format!(
            "not JSON ({e}); bench import reads {VLLM} --save-detailed and {GUIDELLM} JSON reports"
        ))
    })?;
    if v.get("benchmarks").is_some() {
        guidellm::parse(&v)
    } else {
        vllm::parse(text)
    }
}

/// What to import.
pub struct Import<'a> {
    pub files: &'a [PathBuf],
    pub out: &'a Path,
    /// The scenario's name.
    pub name: &'a str,
    /// `--var` labels of the configuration the files measured.
    pub vars: BTreeMap<String, String>,
}

/// The runs written, each with its directory, and the scenario file.
pub struct Written {
    pub scenario: PathBuf,
    pub runs: Vec<(PathBuf, RunResult)>,
}

/// Reads every file, checks they are one benchmark, and writes the scenario and the runs.
pub fn import(i: &Import) -> Result<Written, BenchError> {
    let mut parsed = Vec::new();
    for f in i.files {
        let bytes = std::fs::read(f)
            .map_err(|e| BenchError::usage(format!("cannot read {}: {e}", f.display())))?;
        let p = parse(&String::from_utf8_lossy(&bytes))
            .map_err(|e| BenchError::usage(format!("{}: {e}", f.display())))?;
        parsed.push((f, sha256_hex(&bytes), p));
    }
    let Some((first_file, _, first)) = parsed.first() else {
        return Err(BenchError::usage("bench import: no file given"));
    };
    for (f, _, p) in &parsed[1..] {
        if p.tool != first.tool || !p.settings.same_benchmark(&first.settings) {
            return Err(BenchError::usage(format!(
                "{} is another benchmark than {} (tool, API, load or request count differ): import each benchmark on its own",
                f.display(),
                first_file.display()
            )));
        }
    }
    let scenario_path = i.out.join("scenario.toml");
    let text = scenario_text(i.name, first, first_file);
    let scenario = crate::config::scenario::parse(&text, &scenario_path)?;
    let mut runs = Vec::new();
    for (n, (f, sha, p)) in parsed.into_iter().enumerate() {
        let dir = i.out.join(format!("rep{}", n + 1));
        crate::output::check_fresh(&dir)?;
        let run = run_of(&scenario, &scenario_path, p, f, &sha, &i.vars)?;
        crate::output::write_run_dir(&dir, &run)?;
        runs.push((dir, run));
    }
    crate::output::write_atomic(&scenario_path, text.as_bytes())?;
    Ok(Written {
        scenario: scenario_path,
        runs,
    })
}

/// The scenario a benchmark's settings describe: its API, its request count and its arrivals.
fn scenario_text(name: &str, p: &Parsed, file: &Path) -> String {
    let s = &p.settings;
    let load = match &s.load {
        Load::Open { rate, poisson, cap } => format!(
            "rate = {rate}\narrival = \"{}\"\nrequests = {}\nwarmup = 0\n{}",
            if *poisson { "poisson" } else { "uniform" },
            s.requests,
            cap.map_or(String::new(), |c| format!("max_concurrency = {c}\n"))
        ),
        Load::Closed(c) => format!("concurrency = {c}\nrequests = {}\nwarmup = 0\n", s.requests),
    };
    format!(
        "# The benchmark `bench import` read from {} ({}): its settings, for `bench compare`\n\
         # to judge imported runs by. The lengths are the first file's means, for the record.\n\
         name = \"{name}\"\n\
         description = \"imported from {}: {} requests\"\n\
         api = \"{}\"\nseed = 0\n\n[request]\nignore_eos = false\n\n\
         [workload]\ntype = \"synthetic\"\ninput_tokens = {}\noutput_tokens = {}\n\n[load]\n{load}",
        file.display(),
        p.tool,
        p.tool,
        s.requests,
        if s.chat { "chat" } else { "completions" },
        s.input_tokens,
        s.output_tokens,
    )
}

/// One file as a run, summarized by bench's own code.
fn run_of(
    s: &Scenario,
    scenario_file: &Path,
    p: Parsed,
    file: &Path,
    sha: &str,
    vars: &BTreeMap<String, String>,
) -> Result<RunResult, BenchError> {
    let mut streams = StreamStats::default();
    for g in p.gaps.iter().flatten() {
        streams.itl_us.saturating_record(*g);
    }
    let sent = p.records.len() as u64;
    let data = RunData {
        peak_concurrency: crate::analysis::merge::peak_concurrency(&p.records),
        records: p.records,
        omitted: 0,
        streams,
        planned: Some(p.settings.requests),
        not_sent: p.settings.requests.saturating_sub(sent),
        interrupted: false,
        failure: None,
        sessions: None,
        run_start: tokio::time::Instant::now(),
        wall: std::time::Duration::ZERO,
    };
    let (summary, hists) = summarize(&data, &s.slo, false);
    let file_time =
        || -> std::io::Result<DateTime<Utc>> { Ok(std::fs::metadata(file)?.modified()?.into()) };
    let started_at = match p.started_at {
        Some(t) => t,
        None => file_time().map_err(|e| {
            BenchError::usage(format!(
                "{}: no start time, and no file time ({e})",
                file.display()
            ))
        })?,
    };
    let last = data.records.iter().map(|r| r.end_us).max().unwrap_or(0);
    let windows = crate::metrics::windows::of_run(
        &data.records,
        None,
        started_at,
        crate::metrics::windows::WIDTH_S,
    );
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: p.tool.into(),
            version: p.version.unwrap_or_else(|| "unrecorded".into()),
        },
        run_id: format!("{}-{}", s.name, stem(file)),
        scenario_name: s.name.clone(),
        scenario_file: scenario_file.display().to_string(),
        scenario_hash: s.traffic_hash(),
        scenario: s.clone(),
        vars: vars.clone(),
        endpoint: String::new(),
        model: p.model,
        api: s.api,
        prompt_lengths: format!(
            "as {}'s dataset made them (prompt tokens as it counted them)",
            p.tool
        ),
        prompt_salt: None,
        trace_reuse: None,
        started_at,
        ended_at: started_at + chrono::Duration::microseconds(last as i64),
        complete: true,
        failure: None,
        summary,
        server_metrics: None,
        histograms: hists.encode()?,
        windows,
        requests: data.records,
        requests_omitted: 0,
        shard: None,
        environment: None,
        quality: None,
        reset: None,
        idle_round_trip: None,
        imported: Some(Imported {
            tool: p.tool.into(),
            file: file.display().to_string(),
            sha256: sha.to_string(),
            differences: p.differences,
        }),
    })
}

fn stem(f: &Path) -> String {
    f.file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned())
}
