//! One run end to end — the library type `run`, `baseline`, `compare`, `sweep` and `stack` all
//! call.
//!
//! A [`Session`] is built from a [`RunSpec`]: the plan is made there, before any I/O. Each
//! [`Session::run`] then: starts the embedded simulator when no endpoint is given; finds the
//! model (`GET /v1/models`) when none is set; salts and, if asked, calibrates the prompts
//! ([`prompts`]); takes the "before" scrape of the server's metrics; waits for `--start-at`;
//! runs the plan ([`crate::engine::runner`] with the HTTP client), showing [`progress`];
//! scrapes "after"; and summarizes the records ([`crate::metrics::summary`]) into a
//! [`RunResult`]. [`Session::run_to`] also writes the run directory, even when interrupted.

pub mod environment;
pub mod progress;
pub mod prompts;
pub mod quality;
pub mod repeat;
pub mod signals;

use crate::config::run::RunSpec;
use crate::engine::client::target::public;
use crate::engine::client::{idle, list_models, reset, server_version, HttpSender, Target};
use crate::engine::runner::{self, Cancel};
use crate::error::BenchError;
use crate::metrics::gpu;
use crate::metrics::server::{default_url, Collector};
use crate::metrics::summary::{Accumulator, RunCounts};
use crate::metrics::windows::Timeline;
use crate::model::result::{RunResult, ToolInfo, SCHEMA_VERSION};
use crate::model::scenario::Scenario;
use crate::model::server::ServerMetrics;
use crate::model::summary::Summary;
use crate::output;
use crate::plan::Plan;
use crate::sim::http::{ServeConfig, SimServer};
use chrono::Utc;
use progress::Progress;
use signals::Signals;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A run specification with its plan, ready to run (any number of times).
pub struct Session {
    spec: RunSpec,
    plan: Plan,
    /// Runs made so far: the first [`quality::PASSES`] make a quality pass.
    runs: std::sync::atomic::AtomicU32,
}

/// The scraping tasks of one run.
struct Scrapers {
    server: JoinHandle<ServerMetrics>,
    gpu: Option<JoinHandle<crate::metrics::server::Collected>>,
}

/// A run's plan as it will be sent, and what was done to get there.
struct Prepared {
    plan: Plan,
    prompt_salt: Option<String>,
    prompt_lengths: String,
    reset: Option<crate::model::result::ResetDone>,
    idle_round_trip: Option<crate::model::result::IdleRoundTrip>,
}

/// Where the run's requests go: the endpoint, and the simulator serving it when embedded
/// (dropping it stops the simulator).
struct Connection {
    target: Target,
    _sim: Option<SimServer>,
}

impl Session {
    /// Builds the plan; a schedule that cannot be made is an error now, before any I/O.
    pub fn new(spec: RunSpec) -> Result<Session, BenchError> {
        let plan = Plan::new(&spec.scenario, spec.shard)?;
        Ok(Session {
            spec,
            plan,
            runs: Default::default(),
        })
    }

    pub fn spec(&self) -> &RunSpec {
        &self.spec
    }

    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Runs once and writes the result directory `out` (even when interrupted); with `show`,
    /// prints the summary table. An interrupted run is returned with `complete: false` after
    /// saying so.
    pub async fn run_to(&self, out: &Path, show: bool) -> Result<RunResult, BenchError> {
        if let Some(name) = signals::received() {
            return Err(BenchError::Runtime(format!(
                "{name} during the last run, after it had sent every request (so that run is whole and written): no further run started"
            )));
        }
        let signals = Signals::listen(self.spec.grace);
        let csv = output::csv::RequestsWriter::create(&out.join("requests.csv"))?;
        let run = self.execute(signals.stop(), Some(csv)).await?;
        drop(signals);
        let files = output::write_run_dir(out, &run)?;
        if show {
            crate::out_text!("{}", output::table::render(&run));
            let names: Vec<String> = files.iter().map(|p| p.display().to_string()).collect();
            crate::out!("\nwrote {}", names.join(", "));
        }
        match (&run.failure, run.complete) {
            (Some(why), _) => crate::say!(
                "error: the run failed ({why}); what it measured was written with complete: false"
            ),
            (None, false) => crate::say!(
                "error: the run was interrupted; partial results were written with complete: false"
            ),
            _ => {}
        }
        Ok(run)
    }

    /// `--out` when given, else `results/<stem>-<UTC timestamp>`.
    pub fn out_dir(&self, stem: &str) -> PathBuf {
        self.spec.out_or(stem)
    }

    /// Runs once and builds the result (no files written).
    pub async fn run(&self, stop: impl Into<Cancel>) -> Result<RunResult, BenchError> {
        self.execute(stop, None).await
    }

    /// This run's plan, its prompts salted and calibrated, then the server reset (after the
    /// calibration's probes, so that the run itself starts from the reset state).
    async fn prepare(&self, target: &Target) -> Result<Prepared, BenchError> {
        let spec = &self.spec;
        let mut plan = self.plan.clone();
        let (generator, prompt_salt) = prompts::salt(spec, plan.generator.clone());
        let (generator, prompt_lengths) = prompts::calibrated(spec, &plan, generator, target).await;
        plan.generator = generator;
        let reset = match &spec.reset {
            Some(how) => Some(reset::reset(target, how).await?),
            None => None,
        };
        // Last, so that nothing else is in flight: the floor of an idle server.
        let idle_round_trip = idle::round_trip(target).await;
        Ok(Prepared {
            plan,
            prompt_salt,
            prompt_lengths,
            reset,
            idle_round_trip,
        })
    }

    /// Runs once; each record goes to the summary and to `csv` as it finishes, and is kept
    /// for `run.json` only while the run is within `--keep-records`.
    async fn execute(
        &self,
        stop: impl Into<Cancel>,
        mut csv: Option<output::csv::RequestsWriter>,
    ) -> Result<RunResult, BenchError> {
        let spec = &self.spec;
        let s = &spec.scenario;
        let conn = self.connect().await?;
        let prep = self.prepare(&conn.target).await?;
        // Server metrics are scraped alongside the run, on their own task; the "before"
        // scrape is taken now, ahead of the schedule's start.
        let scraping = CancellationToken::new();
        let collector = self.scrape(&conn.target, &scraping).await;
        let version = server_version(&conn.target).await;
        let (env, cpu) = environment::before(version.map(|v| conn.target.scrub(&v)));
        let stop: Cancel = stop.into();
        let stop_requests = stop.requests.clone();
        self.wait_for_start(&stop).await;
        let started_at = Utc::now();
        let run_id = format!("{}-{}", s.name, started_at.format("%Y%m%dT%H%M%S%.3fZ"));
        // The id as served is what requests name; what is printed and stored is scrubbed.
        let (endpoint, model) = (
            conn.target.public_endpoint(),
            conn.target.scrub(&conn.target.model),
        );
        let mut request = s.request.clone();
        request.extra.extend(spec.params.clone());
        let chunk_tokenizer = spec.tokenizer.as_ref().map(|(_, t)| t.clone());
        let quality_target = conn.target.clone();
        let sender = Arc::new(
            HttpSender::new(conn.target, request.clone(), run_id.clone())?
                .counting_chunks_with(chunk_tokenizer),
        );
        let show = match spec.quiet {
            true => progress::Show::Nothing,
            false if std::io::stderr().is_terminal() && std::env::var_os("CI").is_none() => {
                progress::Show::Bar
            }
            false => progress::Show::Lines(progress::LINE_EVERY),
        };
        let mut progress = Progress::new(show, prep.plan.planned());
        let mut acc = Accumulator::new(&s.slo, s.request.ignore_eos);
        // The windows and the steady state gather every measured request, past --keep-records
        // too, in aggregates per window.
        let mut timeline = Timeline::new(spec.window_s);
        let data = runner::run(
            sender.clone(),
            &prep.plan,
            spec.grace,
            stop,
            spec.keep_records,
            |r| {
                progress.record(r);
                acc.add(r);
                timeline.add(r);
                if let Some(w) = &mut csv {
                    w.write(r);
                }
            },
        )
        .await?;
        progress.finish();
        if let Some(w) = csv {
            w.finish()?;
        }
        scraping.cancel();
        let env = environment::after(env, cpu);
        let ended_at = Utc::now();
        let quality = self
            .quality_pass(
                data.complete(),
                quality_target,
                &request,
                &run_id,
                &stop_requests,
            )
            .await?;
        let (mut summary, hists) = acc.finish(RunCounts::of(&data));
        let server_metrics = self.scraped(collector, &summary).await;
        summary.counts.connections = Some(sender.connections_opened());
        summary.counts.reuse_stopped_at = sender.reuse_stopped_at();
        let windows =
            crate::metrics::windows::finish_at(timeline, server_metrics.as_ref(), started_at);
        Ok(RunResult {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo::current(),
            run_id,
            scenario_name: s.name.clone(),
            scenario_file: spec.scenario_file.display().to_string(),
            scenario_hash: s.traffic_hash(),
            scenario: public_scenario(s),
            vars: spec.vars.clone(),
            endpoint,
            model,
            api: s.api,
            prompt_lengths: prep.prompt_lengths,
            prompt_salt: prep.prompt_salt,
            trace_reuse: s.trace.as_ref().map(|t| {
                t.reuse(s.load.requests.unwrap_or(0).saturating_add(s.load.warmup) as usize)
            }),
            started_at,
            ended_at,
            complete: data.complete(),
            failure: data.failure.clone(),
            summary,
            server_metrics,
            histograms: hists.encode()?,
            requests: data.records,
            requests_omitted: data.omitted,
            shard: spec.shard,
            windows,
            environment: Some(env),
            quality,
            imported: None,
            reset: prep.reset,
            idle_round_trip: prep.idle_round_trip,
        })
    }

    /// The quality pass after a whole run, when the scenario has a set and this is one of
    /// the session's first [`quality::PASSES`] runs.
    async fn quality_pass(
        &self,
        whole: bool,
        target: Target,
        request: &crate::model::scenario::RequestParams,
        run_id: &str,
        stop: &CancellationToken,
    ) -> Result<Option<crate::model::quality::QualityRun>, BenchError> {
        let nth = self.runs.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let Some(set) = &self.spec.scenario.quality_set else {
            return Ok(None);
        };
        if nth >= quality::PASSES || !whole {
            return Ok(None);
        }
        if !self.spec.quiet {
            crate::say!(
                "quality pass: {} items of {}, one at a time",
                set.items.len(),
                set.name
            );
        }
        quality::pass(set, target, request, run_id, stop)
            .await
            .map(Some)
    }

    /// The endpoint (starting the simulator on its own thread when there is none) and the
    /// model to ask for.
    async fn connect(&self) -> Result<Connection, BenchError> {
        let spec = &self.spec;
        let (endpoint, sim) = match (&spec.endpoint, &spec.sim) {
            (Some(e), _) => (e.clone(), None),
            (None, Some(opts)) => {
                let server = SimServer::start(ServeConfig {
                    opts: opts.clone(),
                    listen: ([127, 0, 0, 1], 0).into(),
                    model: "bench-sim".into(),
                    truth_log: spec.sim_truth_log.clone(),
                })?;
                (format!("http://{}/v1", server.addr), Some(server))
            }
            (None, None) => {
                return Err(BenchError::usage(
                    "no endpoint and no simulator: pass --endpoint http://HOST:PORT/v1",
                ))
            }
        };
        let mut target = Target::new(
            &endpoint,
            spec.scenario.api,
            String::new(),
            spec.api_key.clone(),
        )?;
        target.model = match &spec.model {
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
        Ok(Connection { target, _sim: sim })
    }

    /// Takes the "before" scrapes (the server's, and the GPU node's when set) and leaves
    /// tasks scraping until `done`.
    async fn scrape(&self, target: &Target, done: &CancellationToken) -> Option<Scrapers> {
        let cfg = &self.spec.scenario.server_metrics;
        if !cfg.enabled {
            return None;
        }
        let every = Duration::from_secs_f64(cfg.interval_s);
        let url = cfg.url.clone().unwrap_or_else(|| default_url(&target.base));
        let server = Collector::start(url, every).await;
        let gpu = match &cfg.gpu_url {
            Some(u) => Some(Collector::start(u.clone(), every).await),
            None => None,
        };
        Some(Scrapers {
            server: tokio::spawn(server.run(done.clone())),
            gpu: gpu.map(|g| tokio::spawn(g.collect(done.clone()))),
        })
    }

    /// The scrapers' figures once they have taken their "after" scrapes (the GPU's energy
    /// per output token of `summary`'s requests); their warnings are printed.
    async fn scraped(&self, s: Option<Scrapers>, summary: &Summary) -> Option<ServerMetrics> {
        let s = s?;
        let mut m = s.server.await.ok()?;
        if let Some(task) = s.gpu {
            let tokens = summary.tokens.output_tokens + summary.tokens.warmup_output_tokens;
            m.gpu = task.await.ok().map(|c| gpu::summarize(&c, tokens));
        }
        let warnings = [
            m.warning.as_ref().map(|w| format!("server metrics: {w}")),
            m.gpu
                .as_ref()
                .and_then(|g| g.warning.as_ref())
                .map(|w| format!("GPU metrics: {w}")),
        ];
        for w in warnings.into_iter().flatten().filter(|_| !self.spec.quiet) {
            crate::say!("warning: {w}");
        }
        Some(m)
    }

    /// Waits for `--start-at`, or until a signal stops the run (which then sends nothing and
    /// is written incomplete).
    async fn wait_for_start(&self, stop: &Cancel) {
        let Some(at) = self.spec.start_at else { return };
        let wait = (at - Utc::now()).to_std().unwrap_or_default();
        if wait.is_zero() {
            crate::say!("warning: --start-at {at} has passed; starting now");
        } else {
            crate::say!(
                "waiting {:.1} s for --start-at {at} (a signal stops the run before it sends anything)",
                wait.as_secs_f64()
            );
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = stop.requests.cancelled() => {}
            }
        }
    }
}

/// The scenario as a result may hold it: URLs without credentials (an endpoint or metrics URL
/// given as `http://user:PW@host/v1?api_key=…` is used as given, never written so).
fn public_scenario(s: &Scenario) -> Scenario {
    let mut s = s.clone();
    s.endpoint = s.endpoint.as_deref().map(public);
    s.server_metrics.url = s.server_metrics.url.as_deref().map(public);
    s
}
