//! The stale keep-alive retry, made deterministic: a raw HTTP/1.1 server that answers a
//! request on a kept-alive connection, then reads the next request on it and closes the
//! socket without answering — what llama-server does after a few requests. The client must
//! send that request again, once, on a fresh connection, mark it `retried`, and count it; a
//! server that never answers must not be retried forever.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

const BODY: &str = concat!(
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}],",
    "\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n",
    "data: [DONE]\n\n",
);

/// Reads one request (headers, then `content-length` bytes): `Some(its request line)`, or
/// `None` at EOF.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<String> {
    let mut len = 0usize;
    let mut line = String::new();
    let mut first = None;
    loop {
        line.clear();
        match r.read_line(&mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if line == "\r\n" {
            break;
        }
        first.get_or_insert_with(|| line.trim_end().to_string());
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok()?;
    first
}

fn answer(w: &mut TcpStream) {
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\n\r\n",
        BODY.len()
    );
    let _ = w.write_all(head.as_bytes());
    let _ = w.write_all(BODY.as_bytes());
    let _ = w.flush();
}

/// `answers_per_connection` requests answered on each connection, then the next one read and
/// the connection closed. Returns the address and the count of requests received.
fn spawn(answers_per_connection: usize) -> (std::net::SocketAddr, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    let received = Arc::new(AtomicUsize::new(0));
    let count = received.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(conn) = conn else { return };
            let _ = conn.set_nodelay(true);
            let mut w = conn.try_clone().unwrap();
            let mut r = BufReader::new(conn);
            let mut answered = 0;
            while let Some(request_line) = read_request(&mut r) {
                // Only the load counts: bench also asks GET /version (and /props) once a run.
                if request_line.starts_with("POST") {
                    count.fetch_add(1, Ordering::SeqCst);
                }
                if answered == answers_per_connection {
                    break; // read it, then close without a response
                }
                answer(&mut w);
                answered += 1;
            }
        }
    });
    (addr, received)
}

fn run(addr: std::net::SocketAddr, requests: u32) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.toml");
    std::fs::write(
        &scenario,
        format!(
            "name = \"ka\"\napi = \"chat\"\nmodel = \"m\"\nendpoint = \"http://{addr}/v1\"\n\
             [request]\ntimeout_s = 10\n[workload]\ntype = \"synthetic\"\ninput_tokens = 4\n\
             output_tokens = 1\n[load]\nconcurrency = 1\nrequests = {requests}\n"
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_bench"))
        .args([
            "run",
            scenario.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .args(["-q", "--no-server-metrics"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(out.join("run.json")).unwrap()).unwrap()
}

#[test]
fn a_request_on_a_connection_the_server_closed_is_sent_again_once() {
    // One answer per connection: requests 2 and 3 each find their pooled connection closed.
    let (addr, received) = spawn(1);
    let run = run(addr, 3);
    let reqs = run["requests"].as_array().unwrap();
    assert!(reqs.iter().all(|r| r["outcome"] == "ok"), "{reqs:?}");
    let retried: Vec<bool> = reqs.iter().map(|r| r["retried"] == true).collect();
    assert_eq!(retried, [false, true, true]);
    assert_eq!(run["summary"]["counts"]["retried"], 2);
    assert_eq!(run["summary"]["counts"]["ok"], 3);
    assert_eq!(received.load(Ordering::SeqCst), 5, "3 requests + 2 resent");
}

#[test]
fn a_server_that_never_answers_is_retried_once_then_counted_broken() {
    let (addr, received) = spawn(0);
    let run = run(addr, 2);
    let reqs = run["requests"].as_array().unwrap();
    for r in reqs {
        assert_eq!(r["outcome"], "stream_broken", "{r}");
        assert_eq!(r["retried"], true, "{r}");
    }
    assert_eq!(run["summary"]["counts"]["errors"]["stream_broken"], 2);
    assert_eq!(
        received.load(Ordering::SeqCst),
        4,
        "each request sent twice, no more"
    );
}
