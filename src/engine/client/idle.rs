//! The idle round trip: what the network, the HTTP stack and this client cost a request on
//! their own, measured against the same server just before a run's first request.
//!
//! TTFT − the server's own prefill (`ttft_rest`) is everything outside the server's prompt
//! work: the queue, the server's other per-request work, the network and the client. A floor
//! for the last two makes the rest readable: [`round_trip`] sends [`SAMPLES`] `GET
//! {base}/models` one after another on a client built as the load client is (HTTP/1.1, Nagle
//! off, pooled), each timed from its send to the end of its body, after one untimed request
//! that opens the connection. Every OpenAI-compatible server answers that route with a short
//! JSON list and no model work, so its median is the network and client cost of an idle
//! server; `bench diagnose` takes it off `ttft_rest` before naming a queue.

use super::{http_client, Target};
use crate::model::result::IdleRoundTrip;
use crate::model::values::Values;
use std::time::{Duration, Instant};

/// Timed requests (after the one that opens the connection).
const SAMPLES: usize = 5;

/// How long one probe may take before the measurement is given up.
const TIMEOUT: Duration = Duration::from_secs(5);

/// The route probed, under the endpoint's base.
const ROUTE: &str = "models";

/// [`SAMPLES`] idle round trips to `target`; `None` when the server does not answer the route
/// with a success (the run goes on without the floor, and says nothing of it).
pub async fn round_trip(target: &Target) -> Option<IdleRoundTrip> {
    let http = http_client().ok()?;
    let url = target.url(ROUTE);
    let once = || async {
        let mut req = http.get(url.clone()).timeout(TIMEOUT);
        if let Some(k) = target.api_key() {
            req = req.bearer_auth(k);
        }
        let t0 = Instant::now();
        let resp = req.send().await.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        resp.bytes().await.ok()?;
        Some(t0.elapsed().as_secs_f64() * 1000.0)
    };
    once().await?;
    let mut ms = Vec::with_capacity(SAMPLES);
    for _ in 0..SAMPLES {
        ms.push(once().await?);
    }
    let ms = Values::new(ms);
    Some(IdleRoundTrip {
        route: url.path().to_string(),
        samples: ms.len() as u32,
        median_ms: ms.median()?,
        min_ms: ms.as_slice().iter().copied().fold(f64::INFINITY, f64::min),
        max_ms: ms.as_slice().iter().copied().fold(0.0, f64::max),
    })
}
