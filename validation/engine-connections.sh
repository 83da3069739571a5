#!/usr/bin/env bash
# What an engine does with bench's connections, counted: a raw-socket probe (three requests on
# one kept-alive connection, streamed and not: does the server keep it?), then ROUNDS runs of
# REQUESTS tiny chat requests at concurrency 2 — connections opened, stale-connection retries
# and errors of each (a `timeout_first_token` here is a request that never got an answer).
# Not part of .ci/run; run it by hand:
#   bash validation/engine-connections.sh llama-server 3 1000     # or: vllm 2 200
set -uo pipefail
cd "$(dirname "$0")/.."
engine=${1:-llama-server}; rounds=${2:-3}; requests=${3:-1000}
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
case $engine in llama-server|vllm) ;; *) echo "engine: llama-server or vllm" >&2; exit 2 ;; esac
source ci/engines/suite-lib.sh
port=$(free_port)
pid=$(bash "ci/engines/$engine.sh" start "$port") || { echo "engine connections: skipped ($engine did not start)"; exit 0; }
trap 'bash "ci/engines/$engine.sh" stop "$pid"' EXIT
work=$(mktemp -d)
model=$(curl -s "http://127.0.0.1:$port/v1/models" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"][0]["id"])')
python3 - "$port" "$model" <<'EOF'
import json, socket, sys
port, model = int(sys.argv[1]), sys.argv[2]
def complete(buf):
    head, sep, body = buf.partition(b"\r\n\r\n")
    if not sep: return False
    if b"transfer-encoding: chunked" in head.lower():
        while b"\r\n" in body:
            n, _, rest = body.partition(b"\r\n"); n = int(n, 16)
            if n == 0: return rest.startswith(b"\r\n")
            if len(rest) < n + 2: return False
            body = rest[n + 2:]
        return False
    length = [int(l.split(b":")[1]) for l in head.lower().split(b"\r\n") if l.startswith(b"content-length")]
    return bool(length) and len(body) >= length[0]
for stream in (True, False):
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "stream": stream}).encode()
    req = b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body) + body
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(60)
    answered = 0
    for _ in range(3):
        try:
            s.sendall(req); buf = b""
            while not complete(buf):
                d = s.recv(65536)
                if not d: raise ConnectionError("closed")
                buf += d
            answered += 1
        except OSError:
            break
    s.close()
    print(f"probe, {'streamed' if stream else 'not streamed'}: {answered} of 3 requests answered on one connection")
EOF
tiny_scenario "$work/s.toml" connections "$requests" 15 30
for i in $(seq 1 "$rounds"); do
  "$BENCH" run "$work/s.toml" --endpoint "http://127.0.0.1:$port/v1" --out "$work/r$i" -q >/dev/null 2>&1
  json "$work/r$i/run.json" "'round $i: %d requests (warmup included), %d connections opened, %d retried, errors %s' % (d['summary']['counts']['sent'] + d['summary']['counts']['warmup'], d['summary']['counts']['connections'], d['summary']['counts']['retried'], d['summary']['counts']['errors'])"
done
