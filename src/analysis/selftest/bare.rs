//! The floor under the client's cost per chunk: the same streams read by a bare tokio client.
//!
//! `streams` tasks, each on a keep-alive connection of its own, write one chat request by hand
//! and read the response with plain `read`s into one buffer until `[DONE]` — no hyper, no
//! reqwest, no SSE framing, no JSON, no timestamps, no records — `per_stream` times in a row.
//! What this process spends doing that, per content chunk, is what the kernel (TCP receive,
//! epoll, wake-ups) and tokio's scheduling cost on this machine for that many streams; bench's
//! own figure minus it is what bench's client adds on top. The connections are opened before
//! the CPU is read, so the floor is if anything a little low.

use super::process_cpu_us;
use crate::error::BenchError;
use std::net::SocketAddr;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

const BODY: &str =
    r#"{"model":"selftest","messages":[{"role":"user","content":"hi"}],"stream":true}"#;
const DONE: &[u8] = b"[DONE]";

/// CPU µs per content chunk of `streams` bare streams, `per_stream` responses of `tokens`
/// content chunks each (None where /proc is not there).
pub async fn cpu_us_per_chunk(
    addr: SocketAddr,
    streams: u32,
    per_stream: u32,
    tokens: u32,
) -> Result<Option<f64>, BenchError> {
    let fail = |e: std::io::Error| BenchError::Runtime(format!("selftest: bare client: {e}"));
    let request = Arc::new(request(addr));
    let mut conns = Vec::with_capacity(streams as usize);
    for _ in 0..streams {
        let c = TcpStream::connect(addr).await.map_err(fail)?;
        c.set_nodelay(true).map_err(fail)?;
        conns.push(c);
    }
    let before = process_cpu_us();
    let mut tasks = JoinSet::new();
    for c in conns {
        tasks.spawn(responses(c, request.clone(), per_stream));
    }
    let mut done = 0u64;
    while let Some(r) = tasks.join_next().await {
        done += r
            .map_err(|e| BenchError::Runtime(format!("selftest: bare client: {e}")))?
            .map_err(fail)?;
    }
    let cpu = process_cpu_us()
        .zip(before)
        .map(|(a, b)| a.saturating_sub(b));
    let chunks = done * tokens as u64;
    Ok(cpu.filter(|_| chunks > 0).map(|c| c as f64 / chunks as f64))
}

/// The chat request, written by hand: HTTP/1.1, keep-alive, a fixed JSON body.
fn request(addr: SocketAddr) -> Vec<u8> {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: text/event-stream\r\ncontent-length: {}\r\n\r\n{BODY}",
        BODY.len()
    )
    .into_bytes()
}

/// Sends `n` requests one after another on `c`, reading each response to its `[DONE]`.
async fn responses(mut c: TcpStream, request: Arc<Vec<u8>>, n: u32) -> std::io::Result<u64> {
    let mut buf = vec![0u8; 16 * 1024];
    for _ in 0..n {
        c.write_all(&request).await?;
        let mut seen = Tail::default();
        loop {
            let k = c.read(&mut buf).await?;
            if k == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            if seen.ends_in_done(&buf[..k]) {
                break;
            }
        }
    }
    Ok(n as u64)
}

/// Finds `[DONE]` in a response read piece by piece, also when a read boundary splits it.
/// Allocation-free, as a floor must be: it keeps the last bytes of what was read in place.
#[derive(Default)]
struct Tail {
    /// The last `len` bytes read so far (fewer than `DONE`'s length).
    last: [u8; DONE.len() - 1],
    len: usize,
}

impl Tail {
    fn ends_in_done(&mut self, read: &[u8]) -> bool {
        const KEEP: usize = DONE.len() - 1;
        if contains(read, DONE) {
            return true;
        }
        // The previous tail followed by the head of this read: where a split `[DONE]` lies.
        let head = read.len().min(KEEP);
        let mut edge = [0u8; 2 * KEEP];
        edge[..self.len].copy_from_slice(&self.last[..self.len]);
        edge[self.len..self.len + head].copy_from_slice(&read[..head]);
        let edge = &edge[..self.len + head];
        if contains(edge, DONE) {
            return true;
        }
        // The last `KEEP` bytes of everything read so far.
        let tail = if read.len() >= KEEP {
            &read[read.len() - KEEP..]
        } else {
            &edge[edge.len().saturating_sub(KEEP)..]
        };
        self.last[..tail.len()].copy_from_slice(tail);
        self.len = tail.len();
        false
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn done_is_found_whole_or_split_at_any_point() {
        let stream = b"data: {\"x\":1}\n\ndata: [DONE]\n\n";
        for cut in 0..stream.len() {
            for cut2 in cut..stream.len() {
                let mut t = Tail::default();
                let parts = [&stream[..cut], &stream[cut..cut2], &stream[cut2..]];
                let at = parts.iter().position(|p| t.ends_in_done(p));
                assert_eq!(at, Some(found_in(cut, cut2)), "cuts {cut}, {cut2}");
            }
        }
        let mut t = Tail::default();
        assert!(!t.ends_in_done(b"data: [DON"));
        assert!(!t.ends_in_done(b""));
        assert!(t.ends_in_done(b"E]\n\n"));
    }

    #[tokio::test]
    async fn reads_whole_responses_back_to_back_on_one_connection() {
        use crate::analysis::selftest::server::FastServer;
        use std::time::Duration;
        let server = FastServer::start("127.0.0.1:0", 40, Duration::ZERO).unwrap();
        let c = TcpStream::connect(server.addr).await.unwrap();
        // A request the server did not take would be answered without `[DONE]` and never end.
        let five = responses(c, Arc::new(request(server.addr)), 5);
        let done = tokio::time::timeout(Duration::from_secs(30), five).await;
        assert_eq!(done.expect("the responses ended").unwrap(), 5);
        let level = cpu_us_per_chunk(server.addr, 3, 2, 40);
        let per_chunk = tokio::time::timeout(Duration::from_secs(30), level).await;
        let per_chunk = per_chunk.expect("the level ended").unwrap();
        assert!(per_chunk.is_none_or(|c| c.is_finite() && c >= 0.0));
    }

    /// The piece in which `[DONE]` (bytes 21..27 of the test stream) becomes whole.
    fn found_in(cut: usize, cut2: usize) -> usize {
        let end = 27;
        if end <= cut {
            0
        } else if end <= cut2 {
            1
        } else {
            2
        }
    }
}
