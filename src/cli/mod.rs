//! Command-line interface (clap derive only). The commands (`commands/`) turn these into
//! typed configuration (`config/`) before any work starts.

use crate::model::comparison::DEFAULT_ALPHA;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

mod adopt;
pub use adopt::{ImportArgs, InitArgs};

/// Benchmark-and-regression harness for OpenAI-compatible LLM inference servers.
///
/// Exit codes: 0 success, 1 regression found, 2 usage or runtime error.
#[derive(Debug, Parser)]
#[command(name = "bench", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load an endpoint with a scenario and write run.json, requests.csv and summary.csv.
    Run(Box<RunArgs>),
    /// Set up the regression gate in this repository: probe the endpoint, write a scenario, record its baseline, and write ci/gate.toml (only the rows it can decide), ci/gate.sh and a GitHub Actions workflow.
    Init(Box<InitArgs>),
    /// Record a baseline: run the scenario --repeat times and store baselines/<scenario>/<name>.json.
    Baseline(Box<BaselineArgs>),
    /// Compare a candidate run against a baseline, one variable at a time; exit 1 on a regression.
    Compare(Box<CompareArgs>),
    /// Check a scenario file and print the plan it makes, without sending anything.
    Validate {
        /// Scenario file (TOML).
        scenario: PathBuf,
        /// Show the plan of shard I of N (`bench run --shard I/N`).
        #[arg(long, value_name = "I/N")]
        shard: Option<String>,
    },
    /// Benchmark the harness itself: chunks/s it handles and the TTFT it adds, at 1, 64, 1024 streams.
    Selftest(SelftestArgs),
    /// Run a scenario at a series of loads: the throughput–latency curve and the max rate meeting the SLOs.
    Sweep(Box<SweepArgs>),
    /// Measure how optimizations combine: a factorial of up to 3 changes, or a ladder.
    Stack(Box<StackArgs>),
    /// Write one self-contained HTML page (SVG charts) for a run, a sweep, a comparison or a baseline.
    Report {
        /// run.json or its directory, a sweep directory, a compare JSON or a baseline file.
        path: PathBuf,
        /// Output file (default: report.html beside the input).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// A scenario's history: the compare outputs CI accumulated (JSON or record CSV), each gated metric over time, slow drift flagged; exit 1 when one moved the bad way.
    History(HistoryArgs),
    /// Read another tool's per-request results (vLLM's `bench serve --save-result --save-detailed`, GuideLLM's JSON report) as bench runs, one a file, for `bench compare --against/--candidate` to judge.
    Import(ImportArgs),
    /// Merge the run directories of `bench run --shard I/N` into one run.
    Merge {
        /// Shard result directories (each with a run.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged run.
        #[arg(long)]
        out: PathBuf,
    },
    /// Apply the symptom → technique decision tree to a run (run.json).
    Diagnose {
        /// A run.json written by `bench run`, or the run directory that holds it.
        run: PathBuf,
    },
    /// Serve the embedded simulated LLM engine (OpenAI API, vLLM metric names) until Ctrl-C.
    Sim(SimArgs),
    /// Scrape a server's Prometheus metrics once and show which families bench maps it
    /// serves; exit 1 when one that a running engine of its kind serves is missing (a rename
    /// between engine versions), 2 when it cannot be scraped or no engine is recognized.
    Metrics {
        /// The metrics URL (`http://HOST:8000/metrics`), or the API endpoint (`…/v1`), whose
        /// origin + `/metrics` is scraped.
        url: String,
    },
}

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Address to listen on (loopback by default).
    #[arg(long, default_value = "127.0.0.1:8000")]
    pub listen: std::net::SocketAddr,
    /// Hardware/model profile: small-gpu, l4-8b, h100-8b, h100-70b.
    #[arg(long, default_value = "small-gpu")]
    pub profile: String,
    /// An engine option (repeatable): --opt prefix_cache=on --opt quant=int8. See docs/simulator.md.
    #[arg(long = "opt", value_name = "KEY=VALUE")]
    pub opts: Vec<String>,
    /// Model id to serve (any requested name is accepted and echoed).
    #[arg(long, default_value = "bench-sim")]
    pub model: String,
    /// Write each request's arrival and token emission times (JSON lines) to this file.
    #[arg(long)]
    pub truth_log: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (TOML); see scenarios/README.md for the schema.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Also write the run in another tool's format: `--export vllm-json FILE` (the keys of
    /// `vllm bench serve --save-result`).
    #[arg(long, num_args = 2, value_names = ["FORMAT", "FILE"])]
    pub export: Option<Vec<String>>,
    /// Print the summary as JSON on stdout instead of the table.
    #[arg(long)]
    pub json: bool,
    /// After the run, print the diagnosis (`bench diagnose`).
    #[arg(long)]
    pub diagnose: bool,
}

/// How to run a scenario: shared by `run`, `baseline` and `compare`.
#[derive(Debug, Args, Clone)]
pub struct RunOpts {
    /// Base URL of the OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1. Overrides the scenario's `endpoint`.
    #[arg(long)]
    pub endpoint: Option<String>,
    /// Model name sent in each request. Overrides the scenario's `model`; when neither is set,
    /// the first model that GET /v1/models lists is used.
    #[arg(long)]
    pub model: Option<String>,
    /// Environment variable holding the API key (sent as a bearer token, never written).
    /// Overrides the scenario's `api_key_env`; default OPENAI_API_KEY.
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Result directory. Default: results/<scenario>-<UTC timestamp>/.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// A configuration fact under test, recorded in run.json `vars` (repeatable): --var quant=int8.
    /// A name the scenario lists in `request.body_vars` is also sent in every request body.
    #[arg(long = "var", value_name = "KEY=VALUE")]
    pub vars: Vec<String>,
    /// Open-loop arrival rate in requests/s. Overrides the scenario's `load.rate` (and replaces `load.concurrency`).
    #[arg(long)]
    pub rate: Option<f64>,
    /// Closed-loop concurrency. Overrides the scenario's `load.concurrency` (and replaces `load.rate`).
    #[arg(long)]
    pub concurrency: Option<u32>,
    /// Cap on requests in flight under open-loop load. Overrides the scenario's `load.max_concurrency`.
    #[arg(long)]
    pub max_concurrency: Option<u32>,
    /// Measured requests (warmup not included). Overrides the scenario's `load.requests`.
    #[arg(long)]
    pub requests: Option<u64>,
    /// Measured sessions of a conversation workload (warmup not included). Overrides the
    /// scenario's `load.sessions`.
    #[arg(long)]
    pub sessions: Option<u64>,
    /// Bound on the sending phase, e.g. 90s or 5m. Overrides the scenario's `load.duration`.
    #[arg(long)]
    pub duration: Option<String>,
    /// Requests sent first and excluded from metrics. Overrides the scenario's `load.warmup`.
    #[arg(long)]
    pub warmup: Option<u64>,
    /// Seed for prompts, lengths and arrivals. Overrides the scenario's `seed`.
    #[arg(long)]
    pub seed: Option<u64>,
    /// A simulator option (repeatable), used when no endpoint is given: --opt quant=int4.
    /// Overrides the scenario's `[sim]` table; every simulator option is recorded in `vars`.
    #[arg(long = "opt", value_name = "KEY=VALUE")]
    pub opts: Vec<String>,
    /// With the embedded simulator: write its ground-truth token times (JSON lines) here.
    #[arg(long)]
    pub sim_truth_log: Option<PathBuf>,
    /// Prometheus metrics URL scraped before, during and after the run. Overrides the
    /// scenario's `server_metrics.url`; default: the endpoint's origin + /metrics.
    #[arg(long)]
    pub metrics_url: Option<String>,
    /// A GPU node's dcgm-exporter (Prometheus text, e.g. http://gpu-node:9400/metrics),
    /// scraped alongside the server's metrics: energy, power, utilisation and memory per run,
    /// and joules per output token. Overrides the scenario's `server_metrics.gpu_url`.
    #[arg(long, value_name = "URL")]
    pub gpu_metrics_url: Option<String>,
    /// Do not scrape server metrics. Overrides the scenario's `server_metrics.enabled`.
    #[arg(long)]
    pub no_server_metrics: bool,
    /// After Ctrl-C, seconds to let in-flight requests finish before aborting them.
    #[arg(long, default_value_t = 5.0)]
    pub grace: f64,
    /// Keep every request's record in run.json while a run has at most N of them (`all`: no
    /// limit). A longer run writes its records only to requests.csv, as they finish, and holds
    /// histograms, counts and its time windows' aggregates in memory, so its memory does not
    /// grow with its length.
    #[arg(long, value_name = "N|all", default_value = "10000")]
    pub keep_records: String,
    /// Width of the run's time windows in seconds (run.json's `windows`, windows.csv, the
    /// report's time series): throughput, latency quantiles, in-flight requests, errors and
    /// the server's gauges per window.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub window: f64,
    /// An undeclared request-body field under test (repeatable): --param top_k=5. Sent with every
    /// request after the scenario's `[request.extra]`, recorded in `vars` as `param.KEY`, and
    /// not part of the scenario hash — so switching it is a one-variable change. (A field the
    /// scenario declares in `request.body_vars` is set with --var instead.)
    #[arg(long = "param", value_name = "KEY=VALUE")]
    pub params: Vec<String>,
    /// Calibrate synthetic prompt lengths with the server's own tokenizer (POST /tokenize, as
    /// vLLM and llama-server serve it) so each prompt has exactly its targeted token count.
    #[arg(long)]
    pub calibrate: bool,
    /// Calibrate with this local Hugging Face tokenizer.json instead of the server's /tokenize
    /// (implies --calibrate); one probe request measures what the server adds around a prompt
    /// (chat template, BOS). It also counts the tokens of each chunk of a stream whose server
    /// reports only its total.
    #[arg(long, value_name = "FILE")]
    pub tokenizer: Option<PathBuf>,
    /// Send only shard I of N of the plan (requests with index ≡ I mod N, at their planned
    /// times; a closed loop's concurrency is split too). Merge the shards with `bench merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Start the schedule at this wall-clock time (RFC 3339, e.g. 2026-12-02T15:00:00Z, or
    /// Unix seconds), so shards on several machines share one time origin.
    #[arg(long)]
    pub start_at: Option<String>,
    /// Make the server ready before every run — each repetition of a baseline or compare and
    /// each arm of an interleaved one — so that repeated runs of a caching change start from
    /// the same state: `vllm` (POST /reset_prefix_cache), `sglang` (POST /flush_cache),
    /// `llama.cpp` (erase every slot: POST /slots/ID?action=erase; the server needs
    /// --slot-save-path), or any other text as a shell command (run with BENCH_ENDPOINT set).
    /// What was done and how long it took is recorded in run.json (`reset`).
    #[arg(long, value_name = "vllm|sglang|llama.cpp|COMMAND")]
    pub reset: Option<String>,
    /// No progress line and no summary table (errors still go to stderr).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SelftestArgs {
    /// Concurrent streams to test, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1u32, 64, 256, 1024, 4096])]
    pub streams: Vec<u32>,
    /// Only run the reference server, on ADDR (127.0.0.1:0 for any free port): it prints
    /// `listening on http://ADDR/v1` and serves `--tokens` chunks per chat response until
    /// killed — to measure any client (bench run, another tool) from a process of its own.
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    /// With --serve: one content chunk every this many ms (default: all at once).
    #[arg(long, value_name = "MS", requires = "serve")]
    pub serve_pace_ms: Option<f64>,
    /// Requests of the memory rows (`bench run` in a process of its own), comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![10_000u64, 100_000, 1_000_000])]
    pub memory: Vec<u64>,
    /// Skip the memory rows.
    #[arg(long)]
    pub no_memory: bool,
    /// Run the reference server in this process instead of a child (its CPU is then counted
    /// as the client's).
    #[arg(long)]
    pub in_process: bool,
    /// Content chunks each response streams in the flat-out table.
    #[arg(long, default_value_t = 256)]
    pub tokens: u32,
    /// Content chunks each response streams in the paced table.
    #[arg(long, default_value_t = 32)]
    pub paced_tokens: u32,
    /// Requests per stream at each level (total = streams × this, at least 200 flat out and 20 paced).
    #[arg(long, default_value_t = 4)]
    pub rounds: u32,
    /// Gap between content chunks in the paced table, ms (20 ms = 50 tok/s per stream, like a
    /// real engine's decode).
    #[arg(long, default_value_t = 20.0)]
    pub pace_ms: f64,
}

#[derive(Debug, Args)]
pub struct BaselineArgs {
    /// Scenario file (not needed with --list).
    #[arg(required_unless_present = "list")]
    pub scenario: Option<PathBuf>,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Baseline name.
    #[arg(long, default_value = "main")]
    pub name: String,
    /// Repetitions of the run stored in the baseline: by default as many as a sequential
    /// compare may add (its --max-repeat, 12), so the stored arm never limits what the
    /// candidate's runs can decide; run-to-run noise needs at least 2.
    #[arg(long, default_value_t = 12)]
    pub repeat: u32,
    /// Replace an existing baseline of the same name.
    #[arg(long)]
    pub force: bool,
    /// Directory of the store.
    #[arg(long, default_value = "baselines")]
    pub baselines: PathBuf,
    /// List the stored baselines.
    #[arg(long)]
    pub list: bool,
    /// Print a summary of the named baseline of SCENARIO.
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
    /// Store the finished runs under DIR — what an interrupted `bench baseline` kept, or one
    /// whose store could not be written — as the baseline, without running them again. The
    /// runs must be of this scenario's traffic and one configuration.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["list", "show"])]
    pub from: Option<PathBuf>,
}

/// What an undecided gated row does to `bench compare`'s exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Undecided {
    Pass,
    Fail,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// Scenario file.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Baseline name in the store.
    #[arg(long, default_value = "main")]
    pub name: String,
    /// Directory of the store.
    #[arg(long, default_value = "baselines")]
    pub baselines: PathBuf,
    /// A fixed number of candidate runs (with --interleave, ABBA blocks of one control and
    /// one candidate run), judged once at --alpha. Without it the compare is sequential: runs
    /// are added while a gated row is undecided (see --max-repeat).
    #[arg(long, conflicts_with = "max_repeat")]
    pub repeat: Option<u32>,
    /// The cap of a sequential compare: at most this many candidate runs (blocks with
    /// --interleave), judged at looks after 3, 5, 8, 12, … with α spent over the looks; it
    /// stops at the first look where every gated row is settled, or where every row left is
    /// out of the cap's reach. Default 12.
    #[arg(long, value_name = "N")]
    pub max_repeat: Option<u32>,
    /// A sequential compare stops once a regression is settled — the exit code cannot change
    /// and CI's time is better spent elsewhere; with this it keeps adding runs until every
    /// gated row is settled (or the cap, the budget, or every row left out of reach).
    #[arg(long, conflicts_with = "repeat")]
    pub settle_all: bool,
    /// Stop a sequential compare before a run that would end past this wall time (`20m`,
    /// `90s`, `1h`), judging the runs made. Default 30m.
    #[arg(long, value_name = "DURATION", conflicts_with = "repeat")]
    pub budget: Option<String>,
    /// The exit code of a gated row left undecided (inconclusive) when the compare ends:
    /// `pass` (exit 0, the headline names the rows) or `fail` (exit 1).
    #[arg(long, value_enum, default_value_t = Undecided::Pass)]
    pub undecided: Undecided,
    /// Judge these stored runs (repeatable) instead of running the scenario now: a run.json,
    /// or a directory of repetitions (rep1/run.json, …) as --repeat and --interleave write.
    #[arg(long, value_name = "RUN.json|DIR")]
    pub candidate: Vec<PathBuf>,
    /// With --candidate: judge against these stored control runs (repeatable; a run.json or a
    /// directory of repetitions) instead of the baseline's repetitions — an earlier
    /// --interleave's OUT/control beside its OUT/candidate, judged again. The stored baseline
    /// still names the configuration the control runs must be of.
    #[arg(
        long,
        value_name = "RUN.json|DIR",
        requires = "candidate",
        conflicts_with = "against"
    )]
    pub control: Vec<PathBuf>,
    /// Run the baseline's configuration now as well, alternating with the candidate in ABBA
    /// blocks (--repeat of each), and judge against those control runs, so drift and machine
    /// load fall on both arms. The baseline's configuration is reached by its vars (simulator
    /// options, request-field vars, --param), --baseline-endpoint, or --switch.
    #[arg(long, conflicts_with_all = ["candidate", "against"])]
    pub interleave: bool,
    /// With --interleave: the baseline configuration's endpoint.
    #[arg(long, value_name = "URL", requires = "interleave")]
    pub baseline_endpoint: Option<String>,
    /// With --interleave: a shell command that switches the server to a configuration and
    /// returns; `{arm}` is replaced by `baseline` or `candidate`. bench then waits for the
    /// endpoint to answer GET /models before the next run.
    #[arg(long, value_name = "CMD", requires = "interleave")]
    pub switch: Option<String>,
    /// Judge against these earlier runs instead of a stored baseline (gating a stack of
    /// changes step by step): repeatable; a run.json, a directory holding one, or a directory
    /// of repetitions (rep1/, rep2/… as `compare --repeat` writes them). Latency rows need the
    /// runs' spread, so give the previous step's repetitions (one run judges only rates).
    #[arg(long, value_name = "RUN.json|DIR")]
    pub against: Vec<PathBuf>,
    /// Compare even when more than one var differs (every record row is then unattributable).
    #[arg(long)]
    pub allow_multi: bool,
    /// Gate thresholds file with a [gate] table (default: ci/gate.toml when it exists); the
    /// scenario's own [gate] table overrides it. Built-in defaults: ttft/tpot/e2e p50 and p95
    /// 10%, ttft/tpot p99 10% (gated only with ≥ 1000 requests per arm), output_throughput
    /// -5%, goodput -5% (with SLOs), error_rate +0.5pp, accuracy and agreement -1pp (with a
    /// [quality] set).
    #[arg(long)]
    pub gate: Option<PathBuf>,
    /// Family-wise significance level over the gated metrics (Bonferroni).
    #[arg(long, default_value_t = DEFAULT_ALPHA)]
    pub alpha: f64,
    /// Append one optimization-record row per metric to this CSV (created with a header).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Owner written in the record (default: git config user.name, else $USER).
    #[arg(long)]
    pub owner: Option<String>,
    /// Free-text note written in the record.
    #[arg(long)]
    pub note: Option<String>,
    /// Judge only each run's steady state: the warm-up MSER-5 finds at the start and the drain
    /// after the last send are left out. Off by default: both arms have the same warm-up and
    /// drain, so they cancel in a like-for-like compare, and a cut found from each run's own
    /// data adds noise and can hide a regression that shows as a slower warm-up (a cold cache).
    #[arg(long)]
    pub steady_state: bool,
    /// The same as --undecided fail.
    #[arg(long)]
    pub strict: bool,
    /// Print, without sending a request, what the baseline's runs say this compare can
    /// decide: each gated row's run-to-run spread, the runs a side (blocks) and wall time that
    /// settle it at α with 90 % power, and the smallest regression the cap catches.
    #[arg(long, conflicts_with_all = ["candidate", "control"])]
    pub plan: bool,
    /// Print every row's reason, the notes in full and the method paragraph after the table
    /// (the default view names the rows that regressed or stayed undecided in a few short
    /// lines, and each kind of note in one; the Markdown and HTML carry everything, under a
    /// fold).
    #[arg(long)]
    pub explain: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

impl RunOpts {
    /// Every run flag at its default (what a command line without them gives).
    pub fn defaults() -> RunOpts {
        #[derive(Parser)]
        struct Only {
            #[command(flatten)]
            opts: RunOpts,
        }
        Only::parse_from(["bench"]).opts
    }
}

#[derive(Debug, Args)]
pub struct HistoryArgs {
    /// Directories of `bench compare --json` outputs (read three levels deep), compare JSON
    /// files, or optimization-record CSVs (`bench compare --record`).
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// Only this scenario (default: a history for each scenario found).
    #[arg(long)]
    pub scenario: Option<String>,
    /// Probability of flagging a change in a history where nothing changed, shared over the
    /// metrics.
    #[arg(long, default_value_t = DEFAULT_ALPHA)]
    pub alpha: f64,
    /// Smallest change over the history that is flagged (a real but smaller change on a very
    /// steady series is reported, not flagged).
    #[arg(long, default_value = "5%", value_name = "PCT")]
    pub min_change: String,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Scenario file.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub opts: RunOpts,
    /// Open-loop rates to run, req/s, comma-separated (replaces the scenario's load).
    #[arg(long, conflicts_with = "concurrencies")]
    pub rates: Option<String>,
    /// Closed-loop concurrencies to run, comma-separated (replaces the scenario's load).
    #[arg(long)]
    pub concurrencies: Option<String>,
    /// GuideLLM-style: a synchronous run, a max-throughput run, then N rates evenly between.
    #[arg(long, value_name = "N")]
    pub auto: Option<u32>,
    /// Bisect for the highest rate whose requests still meet the scenario's SLOs.
    #[arg(long)]
    pub find_max_rate: bool,
    /// Fraction of requests that must meet every SLO for a rate to pass.
    #[arg(long, default_value_t = 0.95)]
    pub attainment: f64,
    /// Bisection stops when the bracket is within this fraction of its upper end.
    #[arg(long, default_value_t = 0.1)]
    pub tolerance: f64,
    /// Concurrency of the max-throughput probe (--auto, --find-max-rate).
    #[arg(long, default_value_t = 64)]
    pub max_concurrency_probe: u32,
    /// Run every point even when the server is clearly saturated.
    #[arg(long)]
    pub no_early_stop: bool,
}

#[derive(Debug, Args)]
pub struct StackArgs {
    /// Scenario file.
    pub scenario: PathBuf,
    #[command(flatten)]
    pub opts: RunOpts,
    /// The base configuration, e.g. quant=none,spec=off.
    #[arg(long)]
    pub base: Option<String>,
    /// A change to try (repeatable), e.g. --try quant=int4 --try spec=3.
    #[arg(long = "try", value_name = "KEY=VALUE")]
    pub tries: Vec<String>,
    /// Apply the changes one at a time, each judged against the previous step.
    #[arg(long)]
    pub ladder: bool,
    /// Reorder the changes in the recommended order (stability → TTFT → TPOT → tail; docs/optimization.md).
    #[arg(long)]
    pub recommended: bool,
    /// Keep climbing the ladder after a step regresses (the exit code is still 1).
    #[arg(long)]
    pub keep_going: bool,
    /// Runs per configuration measured now, a ladder step or a factorial cell (run-to-run
    /// noise needs ≥ 2); with --from, a configuration's runs are all its stored ones.
    #[arg(long, default_value_t = 2)]
    pub repeat: u32,
    /// Read the runs from run.json files under this directory (matched by vars; every run of a
    /// configuration is a repetition of it) instead of running the simulator — for real
    /// engines.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// Owner written in the CSV.
    #[arg(long)]
    pub owner: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The report files a command writes, declared once for compare, history and stack; a
/// command refuses, before it runs anything, a format its report does not have.
#[derive(Debug, Args, Default, Clone)]
pub struct OutputArgs {
    /// Write the report as Markdown (compare: also appended to $GITHUB_STEP_SUMMARY when that
    /// is set).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Write the report as a self-contained HTML page (compare: the verdict table, each run
    /// of both arms, both arms by percentile; history: a chart per metric with its change
    /// points; stack: each change alone, the combination expected and measured).
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Write the report as JSON (compare --plan: the sequential design the flags give,
    /// `{"design": {"looks": [...], "alpha": ...}}`).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the report as optimization-record CSV rows, one per metric (× change), the file
    /// replaced (compare and stack; `compare --record` appends instead).
    #[arg(long, value_name = "FILE")]
    pub csv: Option<PathBuf>,
}

pub fn parse() -> Cli {
    Cli::parse()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
