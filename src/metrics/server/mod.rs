//! Server metrics during a run: the engine's Prometheus endpoint is scraped before the run,
//! every `interval_s` during it and after it; the run records deltas and derived figures under
//! engine-independent names ([`names`] maps vLLM, SGLang, llama.cpp and the simulator).
//!
//! * counters → the delta between the first and last scrape (prefix-cache hit rate =
//!   Δhits / Δqueries, spec-decode acceptance = Δaccepted / Δdraft, Δpreemptions, Δtokens);
//! * histograms → the delta of their buckets, read as mean (Δsum / Δcount) and p50/p95 by
//!   linear interpolation within the bucket (Prometheus' `histogram_quantile`) — but only
//!   where the bucket is narrower than the value: a quantile in a wider bucket (the first one,
//!   from 0, always) is reported as the bucket's upper edge and marked a bound
//!   (`bucket_bounds`), since interpolating there invents a figure (vLLM's first queue-time
//!   bucket is `le="0.3"`: a p95 of "285 ms" for requests that never queued), and so is one
//!   that interpolates past the time the scrapes spanned, which no request of the run could
//!   have taken (a trace replay's wide `le="960"` bucket gave "559 s" in a 348 s run);
//! * gauges → the peak over all scrapes (KV usage, running, waiting), or the mean where a gauge
//!   is itself a rate (SGLang's cache hit rate and accept length).
//!
//! A metrics endpoint that is missing or unreachable is a warning in the result, never a failed
//! run.

pub mod names;
pub mod promtext;

use crate::engine::client::target::public;
use crate::model::server::{Coverage, CoverageRow, GaugeSample, ServerMetrics};
use crate::model::values::Values;
use names::Names;
use promtext::Scrape;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn value(s: &Scrape, names: &[&str]) -> Option<f64> {
    names
        .iter()
        .find_map(|n| s.value(n).or_else(|| s.value(&format!("{n}_total"))))
}

fn delta(first: &Scrape, last: &Scrape, names: &[&str]) -> Option<f64> {
    Some((value(last, names)? - value(first, names).unwrap_or(0.0)).max(0.0))
}

/// A quantile read from histogram buckets: the interpolated value, or — when its bucket is
/// wider than that value — the bucket's edges, the upper one being all that can be said.
#[derive(Debug, Clone, Copy, PartialEq)]
enum BucketQuantile {
    Estimate(f64),
    Within(f64, f64),
}

impl BucketQuantile {
    /// The figure to store (the upper edge for a bound) and the bucket if it is a bound.
    fn split(self) -> (f64, Option<(f64, f64)>) {
        match self {
            BucketQuantile::Estimate(v) => (v, None),
            BucketQuantile::Within(lo, hi) => (hi, Some((lo, hi))),
        }
    }
}

/// Prometheus' histogram_quantile over the delta of two scrapes of one histogram: (mean,
/// p50, p95).
fn hist_delta(
    first: &Scrape,
    last: &Scrape,
    names: &[&str],
    longest_s: Option<f64>,
) -> Option<(f64, Option<BucketQuantile>, Option<BucketQuantile>)> {
    let name = names.iter().find(|n| last.histogram(n).is_some())?;
    let b = last.histogram(name)?;
    let a = first.histogram(name);
    let count = b.count - a.as_ref().map_or(0.0, |h| h.count);
    let sum = b.sum - a.as_ref().map_or(0.0, |h| h.sum);
    if count <= 0.0 {
        return None;
    }
    let buckets: Vec<(f64, f64)> = b
        .buckets
        .iter()
        .map(|(le, c)| {
            let before = a
                .as_ref()
                .and_then(|h| h.buckets.iter().find(|(l, _)| l == le))
                .map_or(0.0, |x| x.1);
            (*le, c - before)
        })
        .collect();
    let q = |p: f64| -> Option<BucketQuantile> {
        let rank = p * count;
        let mut prev = (0.0, 0.0);
        for &(le, c) in &buckets {
            if c >= rank {
                if le.is_infinite() {
                    return Some(BucketQuantile::Within(prev.0, f64::INFINITY));
                }
                let span = c - prev.1;
                let frac = if span > 0.0 {
                    (rank - prev.1) / span
                } else {
                    0.0
                };
                let v = prev.0 + (le - prev.0) * frac;
                let impossible = longest_s.is_some_and(|l| v > l);
                return Some(if prev.0 <= 0.0 || le - prev.0 > v || impossible {
                    BucketQuantile::Within(prev.0, le)
                } else {
                    BucketQuantile::Estimate(v)
                });
            }
            prev = (le, c);
        }
        None
    };
    Some((sum / count, q(0.5), q(0.95)))
}

/// Derives the figures from the scrapes in time order; `span_s`, the time from the first
/// scrape to the last, bounds any duration a request between them can have had.
pub fn summarize(url: &str, scrapes: &[Scrape], span_s: Option<f64>) -> ServerMetrics {
    let mut m = ServerMetrics {
        url: url.into(),
        scrapes: scrapes.len() as u32,
        ..Default::default()
    };
    let (Some(first), Some(last)) = (scrapes.first(), scrapes.last()) else {
        m.warning = Some("no scrape succeeded".into());
        return m;
    };
    let Some(n): Option<Names> = names::detect(last.families.keys()) else {
        m.warning = Some("no vLLM, SGLang or llama.cpp metric names found".into());
        return m;
    };
    m.engine = Some(n.engine.into());
    let peak = |names: &[&str]| {
        scrapes
            .iter()
            .filter_map(|s| value(s, names))
            .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))))
    };
    let mean = |names: &[&str]| {
        scrapes
            .iter()
            .filter_map(|s| value(s, names))
            .collect::<Values>()
            .mean()
    };
    m.running_peak = peak(n.running);
    m.waiting_peak = peak(n.waiting);
    m.waiting_deferred_peak = scrapes
        .iter()
        .filter_map(|s| {
            n.waiting_by_reason
                .iter()
                .find_map(|f| s.value_where(f, "reason", "deferred"))
        })
        .fold(None, |a: Option<f64>, v| Some(a.map_or(v, |a| a.max(v))));
    m.kv_usage_peak = peak(n.kv_usage);
    m.prefix_cache_hit_rate = match (
        delta(first, last, n.prefix_hits),
        delta(first, last, n.prefix_queries),
    ) {
        (Some(h), Some(q)) if n.queries_exclude_hits && q + h > 0.0 => Some(h / (q + h)),
        (Some(h), Some(q)) if !n.queries_exclude_hits && q > 0.0 => Some(h / q),
        _ => mean(n.prefix_hit_rate_gauge),
    };
    m.spec_acceptance_rate = match (
        delta(first, last, n.spec_accepted),
        delta(first, last, n.spec_draft),
    ) {
        (Some(a), Some(d)) if d > 0.0 => Some(a / d),
        _ => None,
    };
    m.spec_mean_accept_length = mean(n.spec_accept_length_gauge);
    m.preemptions = delta(first, last, n.preemptions);
    let mut m_bounds = std::collections::BTreeMap::new();
    let mut take = |name: &str, q: Option<BucketQuantile>| -> Option<f64> {
        let (v, bucket) = q?.split();
        // An upper edge of +Inf bounds nothing: no figure (and nothing JSON cannot hold).
        if !v.is_finite() {
            return None;
        }
        if let Some(b) = bucket {
            m_bounds.insert(name.to_string(), b);
        }
        Some(v)
    };
    let (mut queue, mut prefill) = (None, None);
    if let Some((mean, p50, p95)) = hist_delta(first, last, n.queue_time, span_s) {
        queue = Some((
            mean,
            take("queue_time_p50_s", p50),
            take("queue_time_p95_s", p95),
        ));
    }
    if let Some((mean, _, p95)) = hist_delta(first, last, n.prefill_time, span_s) {
        prefill = Some((mean, take("prefill_time_p95_s", p95)));
    }
    let decode = hist_delta(first, last, n.decode_time, span_s)
        .map(|(mean, _, p95)| (mean, take("decode_time_p95_s", p95)));
    if let Some((mean, p50, p95)) = queue {
        (m.queue_time_mean_s, m.queue_time_p50_s, m.queue_time_p95_s) = (Some(mean), p50, p95);
    }

    if let Some((mean, p95)) = prefill {
        (m.prefill_time_mean_s, m.prefill_time_p95_s) = (Some(mean), p95);
    }
    if let Some((mean, p95)) = decode {
        (m.decode_time_mean_s, m.decode_time_p95_s) = (Some(mean), p95);
    }
    m.cached_prompt_tokens = delta(first, last, n.cached_prompt_tokens);
    m.admission_rejections = delta(first, last, n.admission_rejections);
    m.bucket_bounds = m_bounds;
    // The prompt tokens the requests carried, as vLLM counts them: llama.cpp's counter holds
    // only those it computed, its cached ones are counted apart.
    let carried = |computed: Option<f64>, cached: Option<f64>| match n.queries_exclude_hits {
        true => computed.map(|p| p + cached.unwrap_or(0.0)),
        false => computed,
    };
    m.prompt_tokens = carried(delta(first, last, n.prompt_tokens), m.cached_prompt_tokens);
    m.generation_tokens = delta(first, last, n.generation_tokens);
    m.served_tokens_before = match (
        carried(
            value(first, n.prompt_tokens),
            value(first, n.cached_prompt_tokens),
        ),
        value(first, n.generation_tokens),
    ) {
        (None, None) => None,
        (p, g) => Some(p.unwrap_or(0.0) + g.unwrap_or(0.0)),
    };
    if scrapes.len() < 2 {
        m.warning =
            Some("only one scrape succeeded: deltas are totals since the server started".into());
    }
    m
}

/// One GET of the metrics text.
pub async fn scrape(http: &reqwest::Client, url: &str) -> Result<Scrape, String> {
    let r = http
        .get(url)
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    if !r.status().is_success() {
        return Err(format!("HTTP {}", r.status()));
    }
    let text = r.text().await.map_err(|e| e.without_url().to_string())?;
    promtext::parse(&text).map_err(|e| format!("not Prometheus text: {e}"))
}

/// Scrapes a run's server metrics: [`Collector::start`] takes the "before" scrape (awaited
/// before the first request goes out, so no request can slip ahead of it), then
/// [`Collector::run`] scrapes every `interval` until `done` and once more after.
pub struct Collector {
    url: String,
    http: Option<reqwest::Client>,
    interval: Duration,
    scrapes: Vec<Scrape>,
    /// When each scrape was taken, ms since the Unix epoch.
    taken_ms: Vec<i64>,
    /// When the first and the last successful scrape were taken.
    first_at: Option<std::time::Instant>,
    last_at: Option<std::time::Instant>,
    last_err: Option<String>,
}

impl Collector {
    pub async fn start(url: String, interval: Duration) -> Collector {
        let mut c = Collector {
            url,
            http: None,
            interval,
            scrapes: Vec::new(),
            taken_ms: Vec::new(),
            first_at: None,
            last_at: None,
            last_err: None,
        };
        match reqwest::Client::builder().no_proxy().build() {
            Ok(h) => c.http = Some(h),
            Err(e) => c.last_err = Some(e.to_string()),
        }
        c.take().await;
        c
    }

    async fn take(&mut self) {
        let Some(http) = &self.http else { return };
        match scrape(http, &self.url).await {
            Ok(s) => {
                let now = std::time::Instant::now();
                self.first_at.get_or_insert(now);
                self.last_at = Some(now);
                self.taken_ms.push(chrono::Utc::now().timestamp_millis());
                self.scrapes.push(s)
            }
            Err(e) => self.last_err = Some(e),
        }
    }

    pub async fn run(self, done: CancellationToken) -> ServerMetrics {
        let c = self.collect(done).await;
        let mut m = summarize(&c.url, &c.scrapes, c.span_s);
        m.gauges = gauges(&c.scrapes, &c.taken_ms);
        if let Some(e) = c.unavailable {
            m.warning = Some(e);
        }
        m
    }

    /// Scrapes every `interval` until `done`, once more after, and returns the scrapes.
    pub async fn collect(mut self, done: CancellationToken) -> Collected {
        loop {
            tokio::select! {
                _ = done.cancelled() => break,
                _ = tokio::time::sleep(self.interval) => self.take().await,
            }
        }
        self.take().await;
        Collected {
            url: public(&self.url),
            span_s: self
                .first_at
                .zip(self.last_at)
                .map(|(a, b)| (b - a).as_secs_f64()),
            unavailable: self.scrapes.is_empty().then(|| {
                format!(
                    "metrics endpoint unavailable: {}",
                    self.last_err.unwrap_or_default()
                )
            }),
            scrapes: self.scrapes,
            taken_ms: self.taken_ms,
        }
    }
}

/// A run's scrapes of one endpoint.
pub struct Collected {
    /// Without credentials.
    pub url: String,
    pub scrapes: Vec<Scrape>,
    /// When each scrape was taken, ms since the Unix epoch.
    pub taken_ms: Vec<i64>,
    /// First → last successful scrape, s.
    pub span_s: Option<f64>,
    /// Why there is no scrape at all.
    pub unavailable: Option<String>,
}

/// Each scrape's running, waiting and KV-usage gauges, under the names its engine uses.
fn gauges(scrapes: &[Scrape], taken_ms: &[i64]) -> Vec<GaugeSample> {
    let Some(n) = scrapes
        .last()
        .and_then(|s| names::detect(s.families.keys()))
    else {
        return Vec::new();
    };
    scrapes
        .iter()
        .zip(taken_ms)
        .map(|(s, at)| GaugeSample {
            at_ms: *at,
            running: value(s, n.running),
            waiting: value(s, n.waiting),
            kv_usage: value(s, n.kv_usage),
        })
        .collect()
}

/// Which mapped families `s` serves, for the engine its family names show (`None`: no
/// engine `bench` knows). A counter family counts as served with or without `_total`.
pub fn coverage(s: &Scrape) -> Option<Coverage> {
    let n = names::detect(s.families.keys())?;
    let has =
        |f: &str| s.families.contains_key(f) || s.families.contains_key(&format!("{f}_total"));
    let rows = n
        .figures()
        .into_iter()
        .map(|(figure, families, required)| CoverageRow {
            figure: figure.to_string(),
            families: families.iter().map(|f| f.to_string()).collect(),
            found: families.iter().find(|f| has(f)).map(|f| f.to_string()),
            required,
        })
        .collect();
    Some(Coverage {
        engine: n.engine.to_string(),
        rows,
    })
}

/// The default metrics URL of an endpoint: its origin plus `/metrics` (`/v1` dropped).
pub fn default_url(base: &url::Url) -> String {
    let mut u = base.clone();
    u.set_path("/metrics");
    u.set_query(None);
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.to_string()
}

#[cfg(test)]
mod tests;
