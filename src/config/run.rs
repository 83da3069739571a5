//! [`RunSpec`]: everything one run needs, built from a scenario file and the command line and
//! checked before any request is sent. `run`, `baseline`, `compare`, `sweep` and `stack` all
//! start from one.
//!
//! What becomes a *var* (the configuration under test, recorded in `run.json` and diffed by
//! `compare`): every `--var`; every `--param KEY=VALUE` as `param.KEY`; a scenario's
//! `request.body_vars` (with their `[request.extra]` default when not given); and, on the
//! embedded simulator, every engine option. Vars are outside the scenario hash, so changing
//! one is a one-variable change of the same traffic.

use super::flags::Flags;
use super::kv;
use super::overrides::Overrides;
use crate::cli::RunOpts;
use crate::error::BenchError;
use crate::model::scenario::{RequestParams, Scenario};
pub use crate::model::shard::Shard;
use crate::sim::SimOptions;
use chrono::Utc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Everything a run needs, checked before any request is sent.
#[derive(Clone)]
pub struct RunSpec {
    pub scenario: Scenario,
    pub scenario_file: PathBuf,
    pub vars: BTreeMap<String, String>,
    /// None: start the embedded simulator with `sim`.
    pub endpoint: Option<String>,
    pub sim: Option<SimOptions>,
    pub sim_truth_log: Option<PathBuf>,
    pub model: Option<String>,
    /// Held here and in the client only; never written.
    pub api_key: Option<String>,
    /// `--out`, when given (`run` writes there; `baseline` and `compare` put their runs under it).
    pub out: Option<PathBuf>,
    pub shard: Option<Shard>,
    pub start_at: Option<chrono::DateTime<Utc>>,
    pub calibrate: bool,
    /// `--tokenizer`: the file and what it holds, read before any work.
    pub tokenizer: Option<(PathBuf, Arc<tokenizers::Tokenizer>)>,
    /// `--param` fields and the `--var`s named in `request.body_vars`, merged into every
    /// request body after `[request.extra]`.
    pub params: serde_json::Map<String, serde_json::Value>,
    pub grace: Duration,
    pub quiet: bool,
    /// `--keep-records`: records kept in run.json at most (None: all).
    pub keep_records: Option<u64>,
    /// `--window`: width of the run's time windows, s.
    pub window_s: f64,
    /// `--reset`: how the server is made ready before each run.
    pub reset: Option<Reset>,
}

/// How the server is made ready before a run (`--reset`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reset {
    /// vLLM: `POST /reset_prefix_cache` (the simulator serves it too).
    Vllm,
    /// SGLang: `POST /flush_cache`.
    Sglang,
    /// llama.cpp: `POST /slots/ID?action=erase` for every slot `GET /slots` lists.
    LlamaCpp,
    /// A shell command.
    Command(String),
}

impl Reset {
    pub fn parse(v: &str) -> Result<Reset, BenchError> {
        Ok(match v.trim() {
            "" => {
                return Err(BenchError::usage(
                    "--reset is empty: give vllm, sglang, llama.cpp or a shell command",
                ))
            }
            "vllm" => Reset::Vllm,
            "sglang" => Reset::Sglang,
            "llama.cpp" | "llamacpp" | "llama-server" => Reset::LlamaCpp,
            cmd => Reset::Command(cmd.to_string()),
        })
    }

    /// As recorded in run.json.
    pub fn describe(&self) -> String {
        match self {
            Reset::Vllm => "vllm: POST /reset_prefix_cache".into(),
            Reset::Sglang => "sglang: POST /flush_cache".into(),
            Reset::LlamaCpp => "llama.cpp: POST /slots/ID?action=erase, every slot".into(),
            Reset::Command(c) => format!("command: {c}"),
        }
    }
}

impl std::fmt::Debug for RunSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunSpec")
            .field("scenario", &self.scenario.name)
            .field("vars", &self.vars)
            .field("endpoint", &self.endpoint)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish_non_exhaustive()
    }
}

impl RunSpec {
    /// Loads `scenario_file`, applies the flags and checks everything.
    pub fn from_args(scenario_file: &Path, args: &RunOpts) -> Result<RunSpec, BenchError> {
        let flags = Flags::from(args);
        Self::from_scenario(super::scenario::load(scenario_file)?, scenario_file, &flags)
    }

    /// [`RunSpec::from_args`] on a scenario already read from `scenario_file`: a command that
    /// runs several configurations of one scenario (an interleave's arms, a stack's
    /// configurations) reads the file once and builds each spec from the typed scenario.
    pub fn from_scenario(
        mut scenario: Scenario,
        scenario_file: &Path,
        flags: &Flags,
    ) -> Result<RunSpec, BenchError> {
        let args = &flags.0;
        overrides(args).apply(&mut scenario)?;
        if let Some(u) = &args.metrics_url {
            super::values::check_endpoint(u).map_err(|_| {
                BenchError::usage(format!("--metrics-url `{u}` is not an http(s) URL"))
            })?;
            scenario.server_metrics.url = Some(u.clone());
        }
        if let Some(u) = &args.gpu_metrics_url {
            super::values::check_endpoint(u).map_err(|_| {
                BenchError::usage(format!("--gpu-metrics-url `{u}` is not an http(s) URL"))
            })?;
            scenario.server_metrics.gpu_url = Some(u.clone());
        }
        if args.no_server_metrics {
            scenario.server_metrics.enabled = false;
        }
        let mut vars = kv::unique("--var", &args.vars)?;
        let mut params = serde_json::Map::new();
        for (k, v) in kv::pairs("--param", &args.params)? {
            if scenario.request.body_vars.contains(&k) {
                return Err(BenchError::usage(format!(
                    "--param {k}: the scenario declares {k} in request.body_vars; set it with --var {k}={v}"
                )));
            }
            let key = format!("param.{k}");
            if vars.get(&key).is_some_and(|u| *u != v) {
                return Err(BenchError::usage(format!(
                    "--var {key} contradicts --param {k}={v}"
                )));
            }
            params.insert(k, kv::body_value(&v));
            vars.insert(key, v);
        }
        body_vars(&scenario.request, &mut vars, &mut params);
        let cli_opts = kv::pairs("--opt", &args.opts)?;
        super::values::in_range(args.grace, super::values::limits::GRACE_S, " s")
            .map_err(|m| BenchError::usage(format!("--grace: {m}")))?;
        let endpoint = scenario.endpoint.clone();
        let sim = match &endpoint {
            Some(_) if !cli_opts.is_empty() => {
                return Err(BenchError::usage("--opt configures the embedded simulator, which runs only when no endpoint is given"))
            }
            Some(_) => None,
            None => Some(sim_vars(&scenario, &cli_opts, &mut vars)?),
        };
        let key_var = scenario
            .api_key_env
            .clone()
            .unwrap_or_else(|| "OPENAI_API_KEY".into());
        let api_key = std::env::var(&key_var)
            .ok()
            .filter(|k| !k.trim().is_empty());
        if api_key.is_none() && scenario.api_key_env.is_some() && endpoint.is_some() {
            // Named on purpose, so a missing key is likelier a slip than a server without auth.
            // Once a process: a sweep or an interleave builds a spec per run.
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| crate::say!("warning: the API key variable {key_var} (api_key_env / --api-key-env) is not set or empty; sending no key"));
        }
        Ok(RunSpec {
            model: scenario.model.clone(),
            scenario,
            scenario_file: scenario_file.to_path_buf(),
            vars,
            endpoint,
            sim,
            sim_truth_log: args.sim_truth_log.clone(),
            api_key,
            out: args.out.clone(),
            shard: args.shard.as_deref().map(Shard::parse).transpose()?,
            calibrate: args.calibrate || args.tokenizer.is_some(),
            tokenizer: match &args.tokenizer {
                Some(f) => Some((f.clone(), Arc::new(load_tokenizer(f)?))),
                None => None,
            },
            params,
            start_at: args.start_at.as_deref().map(parse_start).transpose()?,
            grace: Duration::from_secs_f64(args.grace),
            quiet: args.quiet,
            keep_records: keep_records(&args.keep_records)?,
            window_s: window(args.window)?,
            reset: args.reset.as_deref().map(Reset::parse).transpose()?,
        })
    }

    /// The same run at another load — an open loop at `rate` or a closed loop of
    /// `concurrency` — checked as `--rate` / `--concurrency` are (a sweep's point), without
    /// reading the scenario file again.
    pub fn with_load(
        &self,
        rate: Option<f64>,
        concurrency: Option<u32>,
    ) -> Result<RunSpec, BenchError> {
        let mut spec = self.clone();
        Overrides {
            rate,
            concurrency,
            ..Overrides::default()
        }
        .apply(&mut spec.scenario)?;
        Ok(spec)
    }

    /// `--out` when given, else a new `results/<stem>-<UTC timestamp>` directory.
    pub fn out_or(&self, stem: &str) -> PathBuf {
        self.out.clone().unwrap_or_else(|| default_out_dir(stem))
    }
}

fn overrides(args: &RunOpts) -> Overrides {
    Overrides {
        endpoint: args.endpoint.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
        seed: args.seed,
        requests: args.requests,
        sessions: args.sessions,
        duration: args.duration.clone(),
        rate: args.rate,
        concurrency: args.concurrency,
        max_concurrency: args.max_concurrency,
        warmup: args.warmup,
    }
}

/// The simulator's options (`[sim]`, then `--opt`); every one becomes a var, so changing one
/// is a one-variable change.
fn sim_vars(
    scenario: &Scenario,
    cli_opts: &[(String, String)],
    vars: &mut BTreeMap<String, String>,
) -> Result<SimOptions, BenchError> {
    let o = sim_options(scenario.seed, &[&scenario.sim, cli_opts], "--opt")?;
    vars.insert("target".into(), "bench-sim".into());
    for (k, v) in o.entries() {
        if let Some(user) = vars.get(&k) {
            if *user != v {
                return Err(BenchError::usage(format!(
                    "--var {k}={user} contradicts the simulator's option {k}={v}; set it with --opt {k}={user}"
                )));
            }
        }
        vars.insert(k, v);
    }
    Ok(o)
}

/// Simulator options: `profile` first (it resets the rest), then the others in order.
pub fn sim_options(
    seed: u64,
    layers: &[&[(String, String)]],
    flag: &str,
) -> Result<SimOptions, BenchError> {
    let mut o = SimOptions::profile("small-gpu").map_err(BenchError::Usage)?;
    o.seed = seed;
    for layer in layers {
        let (profile, rest): (Vec<_>, Vec<_>) = layer.iter().partition(|(k, _)| k == "profile");
        for (k, v) in profile.into_iter().chain(rest) {
            o.set(k, v)
                .map_err(|m| BenchError::usage(format!("{flag} {k}={v}: {m}")))?;
        }
    }
    Ok(o)
}

/// The scenario's `request.body_vars`: a `--var` with such a name is also sent in every
/// request body; one not given is labelled with its `[request.extra]` default, when there is
/// one, so a baseline without the flag still names the value it ran with.
fn body_vars(
    request: &RequestParams,
    vars: &mut BTreeMap<String, String>,
    params: &mut serde_json::Map<String, serde_json::Value>,
) {
    for k in &request.body_vars {
        match (vars.get(k), request.extra.get(k)) {
            (Some(v), _) => {
                params.insert(k.clone(), kv::body_value(v));
            }
            (None, Some(default)) => {
                let text = match default {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                vars.insert(k.clone(), text);
            }
            (None, None) => {}
        }
    }
}

fn parse_start(s: &str) -> Result<chrono::DateTime<Utc>, BenchError> {
    if let Ok(secs) = s.trim().parse::<f64>() {
        return chrono::DateTime::from_timestamp_millis((secs * 1000.0) as i64)
            .ok_or_else(|| BenchError::usage(format!("--start-at `{s}` is out of range")));
    }
    chrono::DateTime::parse_from_rfc3339(s.trim())
        .map(|t| t.with_timezone(&Utc))
        .map_err(|e| {
            BenchError::usage(format!(
                "--start-at `{s}`: {e}; write RFC 3339 (2026-12-02T15:00:00Z) or Unix seconds"
            ))
        })
}

/// Reads a Hugging Face `tokenizer.json` (`--tokenizer`); the error names the file.
fn load_tokenizer(file: &Path) -> Result<tokenizers::Tokenizer, BenchError> {
    // Only a regular file of a tokenizer's size: `/dev/zero`, a FIFO or a stray multi-GB file
    // would otherwise be read whole (the largest published tokenizer.json files are tens of MB).
    const TOKENIZER_BYTES_MAX: u64 = 512 << 20;
    use super::Unreadable;
    let why = match super::bounded_file(file, TOKENIZER_BYTES_MAX) {
        Ok(_) => None,
        Err(Unreadable::Io(e)) => Some(e.to_string()),
        Err(Unreadable::NotRegular) => {
            Some("not a regular file; give a Hugging Face tokenizer.json".into())
        }
        Err(Unreadable::TooLarge(len)) => Some(format!(
            "{} MiB is larger than any tokenizer.json ({} MiB at most); give a Hugging Face tokenizer.json",
            len >> 20,
            TOKENIZER_BYTES_MAX >> 20
        )),
    };
    if let Some(why) = why {
        return Err(BenchError::usage(format!(
            "--tokenizer {}: {why}",
            file.display()
        )));
    }
    tokenizers::Tokenizer::from_file(file).map_err(|e| {
        BenchError::usage(format!(
            "--tokenizer {}: {e} (expected a Hugging Face tokenizer.json)",
            file.display()
        ))
    })
}

/// `results/<stem>-<UTC timestamp>`, with `-2`, `-3`, … when that exists.
pub fn default_out_dir(stem: &str) -> PathBuf {
    let stamp = Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = PathBuf::from("results").join(format!("{stem}-{stamp}"));
    let mut p = base.clone();
    let mut n = 2;
    while p.exists() {
        p = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    p
}

/// `--window SECONDS`: a finite width of at least [`MIN_WIDTH_S`] (a run too long for that
/// many windows gets wider ones: `MAX_WINDOWS`).
fn window(s: f64) -> Result<f64, BenchError> {
    use crate::model::windows::MIN_WIDTH_S;
    if s.is_finite() && s >= MIN_WIDTH_S {
        Ok(s)
    } else {
        Err(BenchError::usage(format!(
            "--window: {} is not a window width in seconds of at least {MIN_WIDTH_S} (narrower windows hold a request or none and only multiply the files); give a number such as 10 or 0.5",
            crate::model::readable::number(s)
        )))
    }
}

/// `--keep-records N|all`.
fn keep_records(v: &str) -> Result<Option<u64>, BenchError> {
    match v.trim() {
        "all" => Ok(None),
        n => n.parse::<u64>().map(Some).map_err(|_| {
            BenchError::usage(format!(
                "--keep-records: `{v}` is neither a number of records nor `all`"
            ))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_tokenizer_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tok.json");
        std::fs::write(&p, "{not json").unwrap();
        let e = load_tokenizer(&p).err().unwrap().to_string();
        assert!(
            e.contains("tok.json") && e.contains("tokenizer.json"),
            "{e}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_never_read_as_a_tokenizer() {
        let e = load_tokenizer(Path::new("/dev/zero"))
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("/dev/zero") && e.contains("not a regular file"),
            "{e}"
        );
    }
}
