//! The commands: turn command-line arguments into typed configuration, run, write results.

use crate::cli::{Cli, Command, RunArgs, RunOpts, SimArgs};
use crate::client::{list_models, HttpSender, Target};
use crate::error::BenchError;
use crate::metrics::summarize;
use crate::result::{RunResult, ToolInfo, SCHEMA_VERSION};
use crate::runner::{self, RunConfig};
use crate::scenario::{LoadMode, Overrides, Scenario, Workload};
use crate::sim::server::{ServeConfig, SimServer};
use crate::sim::SimOptions;
use crate::workload::Generator;
use crate::{export, EXIT_ERROR, EXIT_OK};
use chrono::Utc;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub async fn dispatch(cli: Cli) -> Result<u8, BenchError> {
    match cli.command {
        Command::Run(args) => run_command(*args).await,
        Command::Validate { scenario } => {
            let s = Scenario::load(&scenario)?;
            crate::out!("{}: ok", scenario.display());
            crate::out!("{}", describe(&s));
            crate::out!("traffic hash {}", s.traffic_hash());
            if !s.request.body_vars.is_empty() {
                crate::out!(
                    "request-field vars (--var KEY=VALUE is also sent in every request body): {}",
                    s.request.body_vars.join(", ")
                );
            }
            Ok(EXIT_OK)
        }
        Command::Selftest(args) => crate::selftest::run(args).await,
        Command::Sim(args) => sim_command(args).await,
        Command::Sweep(args) => crate::sweep::sweep_command(*args).await,
        Command::Stack(args) => crate::stack::cli::stack_command(*args).await,
        Command::Report { path, out } => {
            let (html, default) = crate::report::from_path(&path)?;
            let out = out.unwrap_or(default);
            export::write_atomic(&out, html.as_bytes())?;
            crate::out!("wrote {}", out.display());
            Ok(EXIT_OK)
        }
        Command::Merge { dirs, out } => {
            let runs: Vec<RunResult> = dirs
                .iter()
                .map(|d| RunResult::load(&d.join("run.json")))
                .collect::<Result<_, _>>()?;
            let merged = crate::merge::merge(runs)?;
            let files = export::write_run_dir(&out, &merged)?;
            crate::out_text!("{}", export::table::render(&merged));
            crate::out!(
                "\nwrote {}",
                files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Ok(EXIT_OK)
        }
        Command::Diagnose { run } => {
            let r = RunResult::load(&run)?;
            crate::out_text!(
                "{}",
                crate::diagnose::render(&r, &crate::diagnose::diagnose(&r))
            );
            Ok(EXIT_OK)
        }
        Command::Baseline(args) => crate::compare::baseline_command(*args).await,
        Command::Compare(args) => crate::compare::compare_command(*args).await,
    }
}

/// Parses `KEY=VALUE` pairs of a repeatable flag.
fn pairs(flag: &str, items: &[String]) -> Result<Vec<(String, String)>, BenchError> {
    items
        .iter()
        .map(|v| {
            let (k, val) = v.split_once('=').ok_or_else(|| {
                BenchError::usage(format!(
                    "{flag} `{v}`: write it as KEY=VALUE, e.g. {flag} prefix_cache=on"
                ))
            })?;
            Ok((k.trim().to_string(), val.trim().to_string()))
        })
        .collect()
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

async fn sim_command(args: SimArgs) -> Result<u8, BenchError> {
    let mut layers = vec![("profile".to_string(), args.profile.clone())];
    layers.extend(pairs("--opt", &args.opts)?);
    let opts = sim_options(0, &[&layers], "--opt")?;
    let cfg = ServeConfig {
        opts,
        listen: args.listen,
        model: args.model.clone(),
        truth_log: args.truth_log.clone(),
    };
    let model = args.model.clone();
    let profile = args.profile.clone();
    crate::sim::server::serve(
        cfg,
        move |addr| {
            eprintln!("bench sim: profile {profile}, model `{model}`, serving http://{addr}/v1 (this is a model of an engine, not a measurement); Ctrl-C stops");
        },
        async {
            let _ = tokio::signal::ctrl_c().await;
        },
    )
    .await?;
    Ok(EXIT_OK)
}

/// Everything `bench run` needs, checked before any request is sent.
pub struct RunSetup {
    pub scenario: Scenario,
    pub scenario_file: PathBuf,
    pub vars: BTreeMap<String, String>,
    /// None: start the embedded simulator with `sim`.
    pub endpoint: Option<String>,
    pub sim: Option<SimOptions>,
    pub sim_truth_log: Option<PathBuf>,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub out: PathBuf,
    pub shard: Option<(u32, u32)>,
    pub start_at: Option<chrono::DateTime<Utc>>,
    pub calibrate: bool,
    /// `--tokenizer`: the file and what it holds, read before any work.
    pub tokenizer: Option<(PathBuf, std::sync::Arc<tokenizers::Tokenizer>)>,
    /// `--param` fields and the `--var`s named in `request.body_vars`, merged into every
    /// request body after `[request.extra]`.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Whether `out` was given with --out (baseline and compare put their runs under it).
    pub out_given: bool,
    pub grace: Duration,
    pub quiet: bool,
}

impl RunSetup {
    /// The `--out` directory when one was given.
    pub fn opts_out(&self) -> Option<PathBuf> {
        self.out_given.then(|| self.out.clone())
    }
}

fn parse_shard(s: &str) -> Result<(u32, u32), BenchError> {
    let bad = || {
        BenchError::usage(format!(
            "--shard `{s}`: write it as I/N with 0 ≤ I < N, e.g. --shard 0/3"
        ))
    };
    let (i, n) = s.split_once('/').ok_or_else(bad)?;
    let (i, n): (u32, u32) = (
        i.trim().parse().map_err(|_| bad())?,
        n.trim().parse().map_err(|_| bad())?,
    );
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
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

/// A flag's value as a request-body value: JSON where it parses (false, 5, 0.9, "x"), else
/// the text as a string.
fn body_value(v: &str) -> serde_json::Value {
    serde_json::from_str(v).unwrap_or_else(|_| serde_json::Value::String(v.to_string()))
}

/// The scenario's `request.body_vars`: a `--var` with such a name is also sent in every
/// request body; one not given is labelled with its `[request.extra]` default, when there is
/// one, so a baseline without the flag still names the value it ran with.
fn body_vars(
    request: &crate::scenario::RequestParams,
    vars: &mut BTreeMap<String, String>,
    params: &mut serde_json::Map<String, serde_json::Value>,
) {
    for k in &request.body_vars {
        match (vars.get(k), request.extra.get(k)) {
            (Some(v), _) => {
                params.insert(k.clone(), body_value(v));
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

/// Parses `--var KEY=VALUE` flags.
pub fn parse_vars(vars: &[String]) -> Result<BTreeMap<String, String>, BenchError> {
    let mut out = BTreeMap::new();
    for v in vars {
        let (k, val) = v.split_once('=').ok_or_else(|| {
            BenchError::usage(format!(
                "--var `{v}`: write it as KEY=VALUE, e.g. --var prefix_cache=on"
            ))
        })?;
        let k = k.trim();
        if k.is_empty() {
            return Err(BenchError::usage(format!("--var `{v}`: the key is empty")));
        }
        if out.insert(k.to_string(), val.trim().to_string()).is_some() {
            return Err(BenchError::usage(format!("--var {k} is given twice")));
        }
    }
    Ok(out)
}

impl RunSetup {
    pub fn from_args(
        scenario_file: &std::path::Path,
        args: &RunOpts,
    ) -> Result<RunSetup, BenchError> {
        let mut scenario = Scenario::load(scenario_file)?;
        let overrides = Overrides {
            endpoint: args.endpoint.clone(),
            model: args.model.clone(),
            api_key_env: args.api_key_env.clone(),
            seed: args.seed,
            requests: args.requests,
            duration: args.duration.clone(),
            rate: args.rate,
            concurrency: args.concurrency,
            max_concurrency: args.max_concurrency,
            warmup: args.warmup,
        };
        overrides.apply(&mut scenario)?;
        if let Some(u) = &args.metrics_url {
            crate::client::normalize_base(u).map_err(|_| {
                BenchError::usage(format!("--metrics-url `{u}` is not an http(s) URL"))
            })?;
            scenario.server_metrics.url = Some(u.clone());
        }
        if args.no_server_metrics {
            scenario.server_metrics.enabled = false;
        }
        let mut vars = parse_vars(&args.vars)?;
        let mut params = serde_json::Map::new();
        for (k, v) in pairs("--param", &args.params)? {
            // JSON where it parses (false, 5, 0.9, "x"), else the text as a string.
            if scenario.request.body_vars.contains(&k) {
                return Err(BenchError::usage(format!(
                    "--param {k}: the scenario declares {k} in request.body_vars; set it with --var {k}={v}"
                )));
            }
            let value = body_value(&v);
            let key = format!("param.{k}");
            if vars.get(&key).is_some_and(|u| *u != v) {
                return Err(BenchError::usage(format!(
                    "--var {key} contradicts --param {k}={v}"
                )));
            }
            vars.insert(key, v);
            params.insert(k, value);
        }
        body_vars(&scenario.request, &mut vars, &mut params);
        let cli_opts = pairs("--opt", &args.opts)?;
        if !(args.grace.is_finite() && args.grace >= 0.0) {
            return Err(BenchError::usage(
                "--grace: must be a number of seconds ≥ 0",
            ));
        }
        let endpoint = scenario.endpoint.clone();
        let sim = match &endpoint {
            Some(_) if !cli_opts.is_empty() => {
                return Err(BenchError::usage("--opt configures the embedded simulator, which runs only when no endpoint is given"))
            }
            Some(_) => None,
            None => {
                let o = sim_options(scenario.seed, &[&scenario.sim, &cli_opts], "--opt")?;
                // Every simulator option becomes a var, so changing one is a one-variable change.
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
                Some(o)
            }
        };
        let key_var = scenario
            .api_key_env
            .clone()
            .unwrap_or_else(|| "OPENAI_API_KEY".into());
        let api_key = std::env::var(&key_var)
            .ok()
            .filter(|k| !k.trim().is_empty());
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| default_out_dir(&scenario.name));
        Ok(RunSetup {
            model: scenario.model.clone(),
            scenario,
            scenario_file: scenario_file.to_path_buf(),
            vars,
            endpoint,
            sim,
            sim_truth_log: args.sim_truth_log.clone(),
            api_key,
            out,
            out_given: args.out.is_some(),
            shard: args.shard.as_deref().map(parse_shard).transpose()?,
            calibrate: args.calibrate || args.tokenizer.is_some(),
            tokenizer: match &args.tokenizer {
                Some(f) => Some((
                    f.clone(),
                    std::sync::Arc::new(
                        crate::client::local_tokenizer::LocalTokenizer::load(f)
                            .map_err(BenchError::Usage)?,
                    ),
                )),
                None => None,
            },
            params,
            start_at: args.start_at.as_deref().map(parse_start).transpose()?,
            grace: Duration::from_secs_f64(args.grace),
            quiet: args.quiet,
        })
    }
}

pub fn default_out_dir(name: &str) -> PathBuf {
    let stamp = Utc::now().format("%Y%m%dT%H%M%SZ");
    let base = PathBuf::from("results").join(format!("{name}-{stamp}"));
    let mut p = base.clone();
    let mut n = 2;
    while p.exists() {
        p = PathBuf::from(format!("{}-{n}", base.display()));
        n += 1;
    }
    p
}

/// One line describing the plan.
pub fn describe(s: &Scenario) -> String {
    let load = match &s.load.mode {
        LoadMode::Closed { concurrency } => format!("closed loop, concurrency {concurrency}"),
        LoadMode::Open {
            rate_rps,
            arrival,
            burstiness,
            max_concurrency,
        } => {
            let mut d = format!("open loop, {rate_rps} req/s {arrival:?}");
            if *arrival == crate::scenario::Arrival::Gamma {
                d.push_str(&format!(" (burstiness {burstiness})"));
            }
            if let Some(m) = max_concurrency {
                d.push_str(&format!(", max {m} in flight"));
            }
            d
        }
    };
    let bound = match (s.load.requests, s.load.duration_s) {
        (Some(r), Some(d)) => format!("{r} requests or {d} s, whichever first"),
        (Some(r), None) => format!("{r} requests"),
        (None, Some(d)) => format!("{d} s"),
        (None, None) => String::new(),
    };
    let kind = match &s.workload {
        Workload::Synthetic { .. } => "synthetic",
        Workload::SharedPrefix { .. } => "shared prefix",
        Workload::LongShortMix { .. } => "long/short mix",
        Workload::Dataset { .. } => "dataset",
    };
    format!(
        "{} ({kind}, {:?} API): {load}; {bound} + {} warmup; seed {}",
        s.name, s.api, s.load.warmup, s.seed
    )
}

async fn run_command(args: RunArgs) -> Result<u8, BenchError> {
    let setup = RunSetup::from_args(&args.scenario, &args.opts)?;
    let export = match args.export.as_deref() {
        None => None,
        Some([fmt, file]) if fmt == "vllm-json" => Some(PathBuf::from(file)),
        Some(other) => {
            return Err(BenchError::usage(format!(
                "--export {}: the only format is vllm-json",
                other.join(" ")
            )))
        }
    };
    let run = run_and_write(&setup, &setup.out, !setup.quiet && !args.json).await?;
    if args.json {
        let summary = serde_json::json!({"run_id": run.run_id, "complete": run.complete, "out": setup.out, "summary": run.summary, "server_metrics": run.server_metrics});
        crate::out!(
            "{}",
            serde_json::to_string_pretty(&summary)
                .map_err(|e| BenchError::Runtime(e.to_string()))?
        );
    }
    if let Some(p) = export {
        let v = crate::export::vllm::render(&run);
        crate::export::write_atomic(
            &p,
            &serde_json::to_vec_pretty(&v).map_err(|e| BenchError::Runtime(e.to_string()))?,
        )?;
    }
    if args.diagnose {
        crate::out_text!(
            "\n{}",
            crate::diagnose::render(&run, &crate::diagnose::diagnose(&run))
        );
    }
    if !run.complete {
        return Ok(EXIT_ERROR);
    }
    Ok(EXIT_OK)
}

/// A stop token cancelled by Ctrl-C, with the message saying what happens next.
pub fn ctrl_c_token(grace: Duration) -> CancellationToken {
    let stop = CancellationToken::new();
    let s = stop.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            eprintln!(
                "\ninterrupted: no new requests; waiting up to {:.1} s for those in flight, then writing the partial run",
                grace.as_secs_f64()
            );
            s.cancel();
        }
    });
    stop
}

/// Runs once, writes the result directory `out` (even when interrupted) and, if `show`, the
/// summary table. An interrupted run is returned with `complete: false` after saying so.
pub async fn run_and_write(
    setup: &RunSetup,
    out: &std::path::Path,
    show: bool,
) -> Result<RunResult, BenchError> {
    let run = execute(setup, ctrl_c_token(setup.grace)).await?;
    let files = export::write_run_dir(out, &run)?;
    if show {
        crate::out_text!("{}", export::table::render(&run));
        let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
        crate::out!("\nwrote {}", names.join(", "));
    }
    if !run.complete {
        eprintln!(
            "error: the run was interrupted; partial results were written with complete: false"
        );
    }
    Ok(run)
}

/// Runs a validated setup against its endpoint and builds the result (no files written).
pub async fn execute(setup: &RunSetup, stop: CancellationToken) -> Result<RunResult, BenchError> {
    let s = &setup.scenario;
    // Without an endpoint the simulator runs on its own thread for the length of the run.
    let (endpoint, _sim) = match (&setup.endpoint, &setup.sim) {
        (Some(e), _) => (e.clone(), None),
        (None, Some(opts)) => {
            let server = SimServer::start(ServeConfig {
                opts: opts.clone(),
                listen: ([127, 0, 0, 1], 0).into(),
                model: "bench-sim".into(),
                truth_log: setup.sim_truth_log.clone(),
            })?;
            (format!("http://{}/v1", server.addr), Some(server))
        }
        (None, None) => {
            return Err(BenchError::usage(
                "no endpoint and no simulator: pass --endpoint http://HOST:PORT/v1",
            ))
        }
    };
    let mut target = Target::new(&endpoint, s.api, String::new(), setup.api_key.clone())?;
    target.model = match &setup.model {
        Some(m) => m.clone(),
        None => list_models(&target)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| {
                BenchError::usage(format!(
                    "{}/models lists no model; pass --model",
                    target.public_endpoint()
                ))
            })?,
    };
    let (generator, prompt_salt) = salt_prompts(setup);
    let (generator, prompt_lengths) = prepare_prompts(setup, generator, &target).await;
    // Server metrics are scraped alongside the run, on their own task; the "before" scrape
    // is taken now, ahead of the schedule's start.
    let scraping = CancellationToken::new();
    let collector = if s.server_metrics.enabled {
        let url = s
            .server_metrics
            .url
            .clone()
            .unwrap_or_else(|| crate::servermetrics::default_url(&target.base));
        let c = crate::servermetrics::Collector::start(
            url,
            Duration::from_secs_f64(s.server_metrics.interval_s),
        )
        .await;
        Some(tokio::spawn(c.run(scraping.clone())))
    } else {
        None
    };
    if let Some(at) = setup.start_at {
        let wait = (at - Utc::now()).to_std().unwrap_or_default();
        if wait.is_zero() {
            eprintln!("warning: --start-at {at} has passed; starting now");
        } else {
            tokio::time::sleep(wait).await;
        }
    }
    let started_at = Utc::now();
    let run_id = format!("{}-{}", s.name, started_at.format("%Y%m%dT%H%M%S%.3fZ"));
    let public_endpoint = target.public_endpoint();
    let model = target.model.clone();
    let mut request = s.request.clone();
    request.extra.extend(setup.params.clone());
    let sender = Arc::new(HttpSender::new(target, request, run_id.clone())?);
    let cfg = RunConfig {
        mode: s.load.mode.clone(),
        warmup: s.load.warmup,
        requests: s.load.requests,
        duration: s.load.duration_s.map(Duration::from_secs_f64),
        seed: s.seed,
        grace: setup.grace,
        shard: setup.shard,
    };
    let show = !setup.quiet && std::io::stderr().is_terminal() && std::env::var_os("CI").is_none();
    let bar = progress_bar(show, cfg.requests.map(|r| r + cfg.warmup));
    // Rolling TTFT/TPOT medians over the last 200 successful requests, for the progress line.
    let mut recent: std::collections::VecDeque<(u64, Option<f64>)> =
        std::collections::VecDeque::new();
    let mut errors = 0u64;
    let data = runner::run(sender, generator, &cfg, stop, |r| {
        bar.inc(1);
        if r.outcome.is_ok() {
            if let Some(t) = r.ttft_us {
                recent.push_back((t, r.tpot_us));
                if recent.len() > 200 {
                    recent.pop_front();
                }
            }
        } else {
            errors += 1;
        }
        if bar.is_hidden() || !bar.position().is_multiple_of(5) {
            return;
        }
        let mut t: Vec<u64> = recent.iter().map(|x| x.0).collect();
        let mut p: Vec<f64> = recent.iter().filter_map(|x| x.1).collect();
        let (tm, pm) = (t.len() / 2, p.len() / 2);
        let ttft = (!t.is_empty()).then(|| *t.select_nth_unstable(tm).1 as f64 / 1000.0);
        let tpot =
            (!p.is_empty()).then(|| *p.select_nth_unstable_by(pm, f64::total_cmp).1 / 1000.0);
        bar.set_message(format!(
            "TTFT p50 {} · TPOT p50 {} (last {}) · errors {errors}",
            ttft.map_or("—".into(), |v| format!("{v:.1} ms")),
            tpot.map_or("—".into(), |v| format!("{v:.2} ms")),
            recent.len()
        ));
    })
    .await?;
    bar.finish_and_clear();
    scraping.cancel();
    let server_metrics = match collector {
        Some(h) => h.await.ok(),
        None => None,
    };
    if let Some(w) = server_metrics.as_ref().and_then(|m| m.warning.as_ref()) {
        if !setup.quiet {
            eprintln!("warning: server metrics: {w}");
        }
    }
    let ended_at = Utc::now();
    let (summary, hists) = summarize(&data, &s.slo, s.request.ignore_eos);
    Ok(RunResult {
        schema_version: SCHEMA_VERSION,
        tool: ToolInfo::current(),
        run_id,
        scenario_name: s.name.clone(),
        scenario_file: setup.scenario_file.display().to_string(),
        scenario_hash: s.traffic_hash(),
        scenario: serde_json::to_value(s).map_err(|e| BenchError::Runtime(e.to_string()))?,
        vars: setup.vars.clone(),
        endpoint: public_endpoint,
        model,
        api: s.api,
        prompt_lengths,
        prompt_salt,
        started_at,
        ended_at,
        complete: data.complete(),
        summary,
        server_metrics,
        histograms: RunResult::encode_histograms(&hists)?,
        requests: data.records,
        shard: setup
            .shard
            .map(|(index, count)| crate::result::ShardInfo { index, count }),
    })
}

/// The request generator, calibrated with the server's tokenizer when `--calibrate` asks
/// for it, and how the run's prompt lengths were made.
/// The run's generator, with its salt words when the scenario salts prompts per run. Shards of
/// one run (`--start-at`) derive the salt from the shared start and seed, so they share it.
fn salt_prompts(setup: &RunSetup) -> (Generator, Option<String>) {
    let s = &setup.scenario;
    let generator = Generator::new(s);
    if s.salt != crate::scenario::Salt::PerRun || !generator.is_synthetic() {
        return (generator, None);
    }
    let nonce = match setup.start_at {
        Some(t) => {
            let micros = t.timestamp_micros() as u64;
            micros ^ s.seed.rotate_left(32) ^ 0x5a17_5a17_5a17_5a17
        }
        None => rand::random(),
    };
    let (g, salt) = generator.with_salt(nonce);
    (g, Some(salt))
}

async fn prepare_prompts(
    setup: &RunSetup,
    generator: Generator,
    target: &Target,
) -> (Generator, String) {
    let s = &setup.scenario;
    if !generator.is_synthetic() {
        if setup.calibrate {
            eprintln!("note: --calibrate applies to synthetic prompts; dataset prompts are sent as written");
        }
        return (
            generator,
            "dataset text as given; token counts from server usage".into(),
        );
    }
    let approximate = "approximate: synthetic words ≈ tokens (no tokenizer); real counts from server usage.prompt_tokens".to_string();
    if !setup.calibrate {
        return (generator, approximate);
    }
    let indices: Vec<u64> = match s.load.requests {
        Some(r) => (0..r + s.load.warmup)
            .filter(|i| runner::in_shard(*i, setup.shard))
            .collect(),
        None => (0..64).collect(),
    };
    use crate::client::local_tokenizer::LocalTokenizer;
    use crate::client::tokenize::{calibrate, Counter, ServerTokenizer};
    let (counter, source) = match &setup.tokenizer {
        Some((file, tok)) => {
            let mut extra = s.request.extra.clone();
            extra.extend(setup.params.clone());
            let counter = LocalTokenizer::new((**tok).clone(), target, &extra)
                .await
                .map(|l| {
                    let source = format!(
                        "the local tokenizer {} (+{} tokens the server adds, from one probe request)",
                        file.display(),
                        l.overhead
                    );
                    (Counter::Local(Box::new(l)), source)
                });
            match counter {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("warning: cannot calibrate prompt lengths with {} ({e}); they stay approximate", file.display());
                    return (generator, approximate);
                }
            }
        }
        None => match ServerTokenizer::new(target) {
            Ok(t) => (Counter::Server(t), "the server's /tokenize".to_string()),
            Err(e) => {
                eprintln!("warning: cannot calibrate prompt lengths with the server's tokenizer ({e}); they stay approximate");
                return (generator, approximate);
            }
        },
    };
    match calibrate(&counter, &generator, &indices).await {
        Ok((deltas, median)) => {
            let how = format!(
                "calibrated with {source}: {} prompts one by one{}",
                deltas.len(),
                if s.load.requests.is_none() {
                    format!(", the rest with the median correction ({median:+} words)")
                } else {
                    String::new()
                }
            );
            (generator.with_calibration(deltas, median), how)
        }
        Err(e) => {
            eprintln!("warning: cannot calibrate prompt lengths with {source} ({e}); they stay approximate");
            (generator, approximate)
        }
    }
}

fn progress_bar(show: bool, total: Option<u64>) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = match total {
        Some(t) => indicatif::ProgressBar::new(t),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "{elapsed_precise} [{bar:30}] {pos}/{len} requests {per_sec} {msg}",
    )
    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
    bar.set_style(style);
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
