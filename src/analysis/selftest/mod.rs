//! `bench selftest`: what the harness itself costs, measured against a server that streams as
//! fast as it can.
//!
//! The reference server ([`server`]) runs in a child process (`bench selftest --serve`), so
//! what this process spends is the client's alone. The real client and runner (flat out: a
//! closed loop, concurrency = streams; paced: an open Poisson loop at the rate that keeps
//! `streams` in flight; one warmup round to open the connections) measure TTFT as usual, and
//!
//! * *chunks/s* = content chunks of measured requests / measured window;
//! * *CPU µs/chunk* = this process's CPU time (user + system, /proc/self/stat, 10 ms ticks)
//!   over the level / content chunks of every request of the level (warmup included: its CPU
//!   is in the total); *chunks/s per core* is its inverse;
//! * *added TTFT* = client's first-content timestamp − server's first-content stamp, per
//!   request, reported as p50/p99/max. The two processes share the wall clock (µs since the
//!   Unix epoch); the client's monotonic stamps are placed on it through one reading of both
//!   clocks taken just before the level;
//! * *send lag p99* = how late the client released requests against their intended times;
//! * *bare µs/chunk* = the same count of streams and responses read by a bare tokio client
//!   ([`bare`]: raw reads to `[DONE]`, nothing parsed or timed) — the floor the kernel and
//!   the runtime set on this machine, so *CPU µs/chunk* − *bare* is what bench's client adds.
//!
//! The memory rows run `bench run` itself as a child process (a flat-out closed loop of 64
//! streams, one content chunk per response, against the same reference server) for 10k, 100k
//! and 1M requests, and report its peak resident set (the kernel's `ru_maxrss` at exit, from
//! `wait4`) and the size of the run directory it wrote.

pub mod bare;
pub mod server;

use crate::engine::client::{HttpSender, Target};
use crate::engine::runner;
use crate::error::BenchError;
use crate::metrics::quantile::Sample;
use crate::metrics::summary::summarize;
use crate::model::scenario::{Api, Arrival, LoadMode};
use crate::model::selftest::{Level, MemoryRow};
use crate::plan::Plan;
use server::{unix_us, FastServer};
use std::collections::HashMap;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where the reference server runs: a child process (`bench selftest --serve`), so the
/// client's CPU is measured alone, or this process (tests).
pub struct Reference {
    pub addr: SocketAddr,
    child: Option<Child>,
    _local: Option<FastServer>,
}

impl Reference {
    /// Starts `bench selftest --serve 127.0.0.1:0` as a child process and reads its address.
    pub fn spawn(tokens: u32, pace: Duration) -> Result<Reference, BenchError> {
        let mut cmd = Command::new(bench_exe()?);
        cmd.args(["selftest", "--serve", "127.0.0.1:0", "--tokens"])
            .arg(tokens.to_string());
        if !pace.is_zero() {
            cmd.args([
                "--serve-pace-ms",
                &(pace.as_secs_f64() * 1000.0).to_string(),
            ]);
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stdin(Stdio::null())
            .spawn()
            .map_err(|e| {
                BenchError::Runtime(format!("selftest: cannot start the reference server: {e}"))
            })?;
        let mut line = String::new();
        if let Some(out) = child.stdout.take() {
            let _ = std::io::BufReader::new(out).read_line(&mut line);
        }
        let addr = line
            .trim()
            .rsplit("http://")
            .next()
            .and_then(|a| a.trim_end_matches("/v1").parse().ok());
        match addr {
            Some(addr) => Ok(Reference {
                addr,
                child: Some(child),
                _local: None,
            }),
            None => {
                let _ = child.kill();
                let _ = child.wait();
                Err(BenchError::Runtime(format!(
                    "selftest: the reference server did not say where it listens (got `{}`)",
                    line.trim()
                )))
            }
        }
    }

    /// The reference server on a thread of this process (shares its CPU accounting).
    pub fn in_process(tokens: u32, pace: Duration) -> Result<Reference, BenchError> {
        let s = FastServer::start("127.0.0.1:0", tokens, pace)?;
        Ok(Reference {
            addr: s.addr,
            child: None,
            _local: Some(s),
        })
    }

    /// The server's first-content stamps since the last call (and forgets them).
    async fn stamps(&self) -> Result<HashMap<u64, u64>, BenchError> {
        let url = format!("http://{}/stamps", self.addr);
        let fail = |e: reqwest::Error| BenchError::Runtime(format!("selftest: GET {url}: {e}"));
        reqwest::get(&url)
            .await
            .map_err(fail)?
            .json()
            .await
            .map_err(fail)
    }
}

impl Drop for Reference {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// This binary, to run the reference server and `bench run` as child processes.
fn bench_exe() -> Result<std::path::PathBuf, BenchError> {
    std::env::current_exe()
        .map_err(|e| BenchError::Runtime(format!("selftest: cannot find bench itself: {e}")))
}

/// CPU time (user + system) this process has used, µs. From /proc/self/stat, so its
/// resolution is the kernel's clock tick (`sysconf(_SC_CLK_TCK)`, 100 Hz on Linux: 10 ms);
/// None off Linux.
pub fn process_cpu_us() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) closed by the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf reads a constant of the running system.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    (hz > 0).then(|| ticks * 1_000_000 / hz as u64)
}

/// One level: `streams` concurrent streams, measured as the module header says.
pub async fn level(
    server: &Reference,
    streams: u32,
    tokens: u32,
    rounds: u32,
    pace: Duration,
) -> Result<Level, BenchError> {
    server.stamps().await?;
    // Flat out, a level takes a fraction of a second, so 200 requests are cheap; paced, one
    // response lasts tokens × pace and the open loop runs at streams / that, so keep it short.
    let floor = if pace.is_zero() { 200 } else { 20 };
    let requests = (streams as u64 * rounds as u64).max(floor);
    let text = format!(
        "name = \"selftest\"\n[request]\ntimeout_s = 120\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = {tokens}\n[load]\nconcurrency = {streams}\nrequests = {requests}\nwarmup = {streams}\n"
    );
    let mut s = crate::config::scenario::parse(&text, Path::new("<selftest>"))?;
    let target = Target::new(
        &format!("http://{}/v1", server.addr),
        Api::Chat,
        "selftest".into(),
        None,
    )?;
    let sender = Arc::new(HttpSender::new(
        target,
        s.request.clone(),
        format!("selftest{streams}"),
    )?);
    s.load.mode = if pace.is_zero() {
        LoadMode::Closed {
            concurrency: streams,
        }
    } else {
        // Poisson arrivals at the rate that keeps `streams` requests in flight on average
        // (Little's law: rate = concurrency / duration of one response).
        let per_request_s = pace.as_secs_f64() * tokens as f64;
        LoadMode::Open {
            rate_rps: streams as f64 / per_request_s,
            arrival: Arrival::Poisson,
            burstiness: 1.0,
            max_concurrency: None,
        }
    };
    let plan = Plan::new(&s, None)?;
    // One moment on both clocks, to place the client's monotonic stamps on the server's.
    let (mono, wall) = (Instant::now(), unix_us());
    let cpu_before = process_cpu_us();
    let data = runner::run(
        sender,
        &plan,
        Duration::from_secs(1),
        CancellationToken::new(),
        None,
        |_| {},
    )
    .await?;
    let cpu = process_cpu_us()
        .zip(cpu_before)
        .map(|(a, b)| a.saturating_sub(b));
    let (summary, _) = summarize(&data, &s.slo, true);
    let stamps = server.stamps().await?;
    let start = data.run_start.into_std();
    let on_wall = |t: Instant| -> f64 {
        if t >= mono {
            wall as f64 + (t - mono).as_micros() as f64
        } else {
            wall as f64 - (mono - t).as_micros() as f64
        }
    };
    let mut added = Vec::new();
    let (mut chunks, mut all_chunks) = (0u64, 0u64);
    for r in &data.records {
        all_chunks += r.content_chunks as u64;
        if r.warmup || !r.outcome.is_ok() {
            continue;
        }
        chunks += r.content_chunks as u64;
        let (Some(ttft), Some(server_first)) = (r.ttft_us, stamps.get(&r.index)) else {
            continue;
        };
        let client_first = on_wall(start + Duration::from_micros(r.intended_us + ttft));
        added.push((client_first - *server_first as f64).max(0.0));
    }
    let added = Sample::from_values(added);
    let per_stream = requests.div_ceil(streams as u64) as u32;
    let bare = bare::cpu_us_per_chunk(server.addr, streams, per_stream, tokens).await?;
    let window = summary.throughput.window_s;
    let cpu_us_per_chunk = cpu
        .filter(|_| all_chunks > 0)
        .map(|c| c as f64 / all_chunks as f64);
    Ok(Level {
        streams,
        requests,
        ok: summary.counts.ok,
        chunks_per_s: if window > 0.0 {
            chunks as f64 / window
        } else {
            0.0
        },
        cpu_us_per_chunk,
        bare_cpu_us_per_chunk: bare,
        added_ttft_p50_us: added.quantile(0.5).unwrap_or(0.0),
        added_ttft_p99_us: added.quantile(0.99).unwrap_or(0.0),
        added_ttft_max_us: added.max().unwrap_or(0.0),
        peak: summary.throughput.peak_concurrency,
        send_lag_p99_us: Sample::from_values(
            data.records
                .iter()
                .filter(|r| !r.warmup)
                .map(|r| r.send_lag_us as f64),
        )
        .quantile(0.99)
        .unwrap_or(0.0),
    })
}

/// One memory row: `bench run` in a child process sending `requests` requests at `server`.
pub fn memory(server: &Reference, requests: u64) -> Result<MemoryRow, BenchError> {
    let dir = std::env::temp_dir().join(format!(
        "bench-selftest-mem-{}-{requests}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|source| BenchError::Write {
        path: dir.clone(),
        source,
    })?;
    let scenario = dir.join("memory.toml");
    let text = format!(
        "name = \"selftest-memory\"\nseed = 1\n[request]\ntimeout_s = 60\n[workload]\ntype = \"synthetic\"\ninput_tokens = 8\noutput_tokens = 1\nsalt = \"none\"\n[load]\nconcurrency = 64\nrequests = {requests}\nwarmup = 64\n"
    );
    std::fs::write(&scenario, text).map_err(|source| BenchError::Write {
        path: scenario.clone(),
        source,
    })?;
    let out = dir.join("run");
    let started = Instant::now();
    let child = Command::new(bench_exe()?)
        .arg("run")
        .arg(&scenario)
        .args([
            "--endpoint",
            &format!("http://{}/v1", server.addr),
            "-q",
            "--out",
        ])
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| BenchError::Runtime(format!("selftest: cannot start bench run: {e}")))?;
    let (status, max_rss_kb) = wait_rss(child)?;
    let wall_s = started.elapsed().as_secs_f64();
    let run_dir_bytes = dir_size(&out);
    let _ = std::fs::remove_dir_all(&dir);
    if status != 0 {
        return Err(BenchError::Runtime(format!(
            "selftest: bench run of {requests} requests exited {status}"
        )));
    }
    Ok(MemoryRow {
        requests,
        peak_rss_bytes: max_rss_kb * 1024,
        run_dir_bytes,
        wall_s,
    })
}

/// Waits for `child` and returns its exit status and peak resident set (KiB, `ru_maxrss`).
fn wait_rss(child: Child) -> Result<(i32, u64), BenchError> {
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data that wait4 fills; the child is ours and not yet reaped
    // (`child` is never waited on through std, only forgotten after this call).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    std::mem::forget(child);
    if r != pid {
        return Err(BenchError::Runtime(format!(
            "selftest: waiting for bench run: {}",
            std::io::Error::last_os_error()
        )));
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    Ok((code, usage.ru_maxrss.max(0) as u64))
}

/// Bytes of the files under `dir`.
fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| match e.metadata() {
            Ok(m) if m.is_dir() => dir_size(&e.path()),
            Ok(m) => m.len(),
            Err(_) => 0,
        })
        .sum()
}
