//! The OpenAI-compatible streaming client: one request in, one [`RequestRecord`] out.
//!
//! Built on reqwest (rustls, HTTP/1.1, no proxy, Nagle off, an unbounded idle pool so every
//! concurrent stream keeps its own connection, reused by its next request: each stream is read
//! to its body's end, past `[DONE]`). [`stream`] sends a request, its body built for its API
//! by [`body`], and reads its stream: each read of the body is timestamped with the monotonic
//! clock the moment it arrives, before it is parsed; the pure SSE decoder ([`sse`]) and chunk
//! interpreter ([`openai`]) then decide which reads carried generated text, and TTFT is taken
//! at the first that did. The API key is held only in the [`Target`], sent as a bearer token,
//! and redacted from any error text that echoes it. [`tokenize`] and [`local_tokenizer`] make
//! prompt lengths exact.
//!
//! [`RequestRecord`]: crate::model::record::RequestRecord

mod body;
mod chunk_text;
pub mod idle;
pub mod local_tokenizer;
pub mod openai;
mod pooling;
mod progress;
pub mod reset;
pub mod responses;
pub mod sse;
pub mod stream;
pub mod target;
pub mod tokenize;

pub use stream::HttpSender;
pub use target::Target;

use crate::error::BenchError;
use crate::model::wire::ModelList;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The reqwest client used for load: no pool limit, no proxy, HTTP/1.1, TCP_NODELAY.
pub fn http_client() -> Result<reqwest::Client, BenchError> {
    client_keeping(usize::MAX, None)
}

/// Counts the connections a client opens (each connect of its connector that succeeded, TLS
/// ones included; a refused connect opened nothing), so a run can say how many its requests
/// took.
#[derive(Clone, Default)]
pub struct ConnectCounter(Arc<AtomicU64>);

impl ConnectCounter {
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

impl<S> tower_layer::Layer<S> for ConnectCounter {
    type Service = Counted<S>;
    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            n: self.0.clone(),
        }
    }
}

/// A connector that counts its calls.
#[derive(Clone)]
pub struct Counted<S> {
    inner: S,
    n: Arc<AtomicU64>,
}

impl<S, R> tower_service::Service<R> for Counted<S>
where
    S: tower_service::Service<R>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<S::Response, S::Error>> + Send>>;
    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }
    fn call(&mut self, req: R) -> Self::Future {
        let (n, connecting) = (self.n.clone(), self.inner.call(req));
        Box::pin(async move {
            let connected = connecting.await;
            if connected.is_ok() {
                n.fetch_add(1, Ordering::Relaxed);
            }
            connected
        })
    }
}

/// The load client counting its connections into `counter`; `pooled` false: it keeps no
/// idle connection, so each request goes out on a new one.
pub fn counted_http_client(
    counter: &ConnectCounter,
    pooled: bool,
) -> Result<reqwest::Client, BenchError> {
    client_keeping(if pooled { usize::MAX } else { 0 }, Some(counter))
}

fn client_keeping(
    idle_per_host: usize,
    counter: Option<&ConnectCounter>,
) -> Result<reqwest::Client, BenchError> {
    let mut b = reqwest::Client::builder();
    if let Some(c) = counter {
        b = b.connector_layer(c.clone());
    }
    b.pool_max_idle_per_host(idle_per_host)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .no_proxy()
        .http1_only()
        .user_agent(concat!("bench/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| BenchError::Runtime(format!("cannot build the HTTP client: {e}")))
}

/// An error with its causes, one line (reqwest's top-level message alone is vague); uncut, so
/// it can be redacted before it is shortened. Give reqwest errors `without_url()` first: their
/// text otherwise carries the URL, credentials and all.
pub(crate) fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// Asks `GET {base}/models` for the served model ids (used when no model is configured).
pub async fn list_models(target: &Target) -> Result<Vec<String>, BenchError> {
    let http = http_client()?;
    let mut req = http
        .get(target.url("models"))
        .timeout(Duration::from_secs(10));
    if let Some(k) = target.api_key() {
        req = req.bearer_auth(k);
    }
    let fail = |m: String| {
        BenchError::Runtime(format!(
            "cannot list models at {}/models: {m}; pass --model",
            target.public_endpoint()
        ))
    };
    let resp = req
        .send()
        .await
        .map_err(|e| fail(target.redact(&error_chain(&e.without_url()))))?;
    if !resp.status().is_success() {
        return Err(fail(format!("HTTP {}", resp.status())));
    }
    let list: ModelList = resp.json().await.map_err(|e| fail(e.to_string()))?;
    Ok(list.data.into_iter().map(|m| m.id).collect())
}

/// The engine's version as it reports it: vLLM's and SGLang's `GET /version`
/// (`{"version": …}`), else llama-server's `GET /props` (`build_info`); `None` when neither
/// answers within 2 s. Recorded with the run so a comparison can say the engine changed.
pub async fn server_version(target: &Target) -> Option<String> {
    let http = http_client().ok()?;
    let mut origin = target.base.clone();
    origin.set_path("/");
    origin.set_query(None);
    for (path, key) in [("version", "version"), ("props", "build_info")] {
        let mut req = http
            .get(origin.join(path).ok()?)
            .timeout(Duration::from_secs(2));
        if let Some(k) = target.api_key() {
            req = req.bearer_auth(k);
        }
        let Ok(r) = req.send().await else { continue };
        if !r.status().is_success() {
            continue;
        }
        let found = r
            .json::<serde_json::Value>()
            .await
            .ok()
            .and_then(|v| v.get(key)?.as_str().map(str::to_string));
        if found.is_some() {
            return found;
        }
    }
    None
}
