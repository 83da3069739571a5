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
//! file does not hold is absent, not guessed. Formats: [`vllm`].

pub mod vllm;

use crate::engine::runner::{RunData, StreamStats};
use crate::error::BenchError;
use crate::metrics::summary::summarize;
use crate::model::result::{Imported, RunResult, ToolInfo, SCHEMA_VERSION};
use crate::model::scenario::{sha256_hex, Scenario};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The tool whose files `bench import` reads.
pub const VLLM: &str = "vllm bench serve";

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
        let text = String::from_utf8_lossy(&bytes);
        let d =
            vllm::parse(&text).map_err(|e| BenchError::usage(format!("{}: {e}", f.display())))?;
        parsed.push((f, sha256_hex(&bytes), d));
    }
    let Some((first_file, _, first)) = parsed.first() else {
        return Err(BenchError::usage("bench import: no file given"));
    };
    for (f, _, d) in &parsed[1..] {
        let same = d.backend == first.backend
            && d.num_prompts == first.num_prompts
            && d.request_rate == first.request_rate
            && d.max_concurrency == first.max_concurrency;
        if !same {
            return Err(BenchError::usage(format!(
                "{} is another benchmark than {} (backend, --num-prompts, --request-rate or --max-concurrency differ): import each benchmark on its own",
                f.display(),
                first_file.display()
            )));
        }
    }
    let scenario_path = i.out.join("scenario.toml");
    let text = scenario_text(i.name, first, first_file);
    let scenario = crate::config::scenario::parse(&text, &scenario_path)?;
    std::fs::create_dir_all(i.out)
        .map_err(|e| BenchError::Runtime(format!("cannot create {}: {e}", i.out.display())))?;
    let mut runs = Vec::new();
    for (n, (f, sha, d)) in parsed.iter().enumerate() {
        let dir = i.out.join(format!("rep{}", n + 1));
        crate::output::check_fresh(&dir)?;
        let run = run_of(&scenario, &scenario_path, d, f, sha, &i.vars)?;
        crate::output::write_run_dir(&dir, &run)?;
        runs.push((dir, run));
    }
    crate::output::write_atomic(&scenario_path, text.as_bytes())?;
    Ok(Written {
        scenario: scenario_path,
        runs,
    })
}

/// The scenario a vLLM benchmark's settings describe: its API, its prompt count and its
/// arrivals (a closed loop of `--max-concurrency` users, or an open loop at the rate).
fn scenario_text(name: &str, d: &vllm::Detailed, file: &Path) -> String {
    let n = d.input_lens.len().max(1) as f64;
    let mean = |v: &[u64]| (v.iter().sum::<u64>() as f64 / n).round().max(1.0) as u64;
    let load = match (d.rate(), d.max_concurrency) {
        (Some(r), cap) => format!(
            "rate = {r}\narrival = \"poisson\"\nrequests = {}\nwarmup = 0\n{}",
            d.num_prompts,
            cap.map_or(String::new(), |c| format!("max_concurrency = {c}\n"))
        ),
        (None, c) => format!(
            "concurrency = {}\nrequests = {}\nwarmup = 0\n",
            c.unwrap_or(d.num_prompts),
            d.num_prompts
        ),
    };
    format!(
        "# The benchmark `bench import` read from {} ({VLLM}): its settings, for `bench compare`\n\
         # to judge imported runs by. The lengths are the first file's means, for the record.\n\
         name = \"{name}\"\n\
         description = \"imported from {VLLM}: {} prompts, backend {}\"\n\
         api = \"{}\"\nseed = 0\n\n[request]\nignore_eos = false\n\n\
         [workload]\ntype = \"synthetic\"\ninput_tokens = {}\noutput_tokens = {}\n\n[load]\n{load}",
        file.display(),
        d.num_prompts,
        d.backend.replace(['"', '\\'], ""),
        if d.chat() { "chat" } else { "completions" },
        mean(&d.input_lens),
        mean(&d.output_lens),
    )
}

/// One file as a run, summarized by bench's own code.
fn run_of(
    s: &Scenario,
    scenario_file: &Path,
    d: &vllm::Detailed,
    file: &Path,
    sha: &str,
    vars: &BTreeMap<String, String>,
) -> Result<RunResult, BenchError> {
    let (records, gaps) = d.records();
    let mut streams = StreamStats::default();
    for g in gaps.iter().flatten() {
        streams.itl_us.saturating_record(*g);
    }
    let peak_concurrency = crate::analysis::merge::peak_concurrency(&records);
    let data = RunData {
        records,
        omitted: 0,
        streams,
        planned: Some(d.num_prompts),
        not_sent: d.num_prompts.saturating_sub(d.start_times.len() as u64),
        peak_concurrency,
        interrupted: false,
        failure: None,
        sessions: None,
        run_start: tokio::time::Instant::now(),
        wall: std::time::Duration::ZERO,
    };
    let (summary, hists) = summarize(&data, &s.slo, false);
    let started_at = chrono::NaiveDateTime::parse_from_str(&d.date, "%Y%m%d-%H%M%S")
        .map(|t| t.and_utc())
        .or_else(|_| {
            std::fs::metadata(file)
                .and_then(|m| m.modified())
                .map(chrono::DateTime::<chrono::Utc>::from)
        })
        .map_err(|e| {
            BenchError::usage(format!(
                "{}: no date, and no file time ({e})",
                file.display()
            ))
        })?;
    let last = data.records.iter().map(|r| r.end_us).max().unwrap_or(0);
    let ended_at = started_at + chrono::Duration::microseconds(last as i64);
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo {
            name: VLLM.into(),
            version: "unrecorded".into(),
        },
        run_id: format!("{}-{}", s.name, stem(file)),
        scenario_name: s.name.clone(),
        scenario_file: scenario_file.display().to_string(),
        scenario_hash: s.traffic_hash(),
        scenario: s.clone(),
        vars: vars.clone(),
        endpoint: String::new(),
        model: d.model_id.clone(),
        api: s.api,
        prompt_lengths: format!(
            "as {VLLM}'s dataset made them (input_lens: the server's usage, else vLLM's tokenizer)"
        ),
        prompt_salt: None,
        trace_reuse: None,
        started_at,
        ended_at,
        complete: true,
        failure: None,
        summary,
        server_metrics: None,
        histograms: hists.encode()?,
        windows: crate::metrics::windows::of_run(
            &data.records,
            None,
            started_at,
            crate::metrics::windows::WIDTH_S,
        ),
        requests: data.records,
        requests_omitted: 0,
        shard: None,
        environment: None,
        quality: None,
        imported: Some(Imported {
            tool: VLLM.into(),
            file: file.display().to_string(),
            sha256: sha.to_string(),
            differences: d.differences(),
        }),
    })
}

fn stem(f: &Path) -> String {
    f.file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().into_owned())
}
