#!/usr/bin/env bash
# The keep-alive pool against a server that closes every connection right after its answer
# (as llama-server does after a streamed one, though its headers promise keep-alive): ROUNDS
# runs of REQUESTS tiny streamed requests at concurrency 2 against a raw Python server, each
# line the run's errors, retries, connections, where reuse stopped, and the requests that
# waited out their first-token timeout (2 s here) — with whether the server ever read them.
# MODE=keep makes the server keep its connections instead (the pool must stay in use).
# Not part of .ci/run; run it by hand, e.g. to compare two binaries:
#   bash validation/pool-race.sh 20 9000                     # this checkout's release binary
#   BENCH=/tmp/old-bench bash validation/pool-race.sh 20 9000
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}; requests=${2:-9000}; mode=${MODE:-close}
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
source ci/engines/suite-lib.sh
work=$(mktemp -d); port=$(free_port)
cat >"$work/server.py" <<'EOF'
import asyncio, json, sys
port, mode, log = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "w", buffering=1)
def chunk(b): return b"%x\r\n%s\r\n" % (len(b), b)
def event(o): return chunk(b"data: " + json.dumps(o).encode() + b"\n\n")
async def serve(r, w):
    try:
        while True:
            head = await r.readuntil(b"\r\n\r\n")
            lines = head.split(b"\r\n")
            size = sum(int(l.split(b":")[1]) for l in lines if l.lower().startswith(b"content-length:"))
            await r.readexactly(size)
            for l in lines:  # which requests reached the server at all
                if l.lower().startswith(b"x-request-id:"): log.write(l[13:].strip().decode() + "\n")
            if lines[0].startswith(b"GET"):
                w.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"); await w.drain(); continue
            w.write(b"HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
            w.write(event({"choices": [{"index": 0, "delta": {"role": "assistant"}}]}))
            await w.drain()
            for _ in range(2):  # each event a write of its own, as a server streams them
                w.write(event({"choices": [{"index": 0, "delta": {"content": "a"}}]}))
                await w.drain()
            w.write(event({"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}], "usage": {"prompt_tokens": 16, "completion_tokens": 2}}))
            w.write(chunk(b"data: [DONE]\n\n"))
            await w.drain()
            w.write(b"0\r\n\r\n")  # the body's end in a segment of its own (llama-server)
            await w.drain()
            if mode == "close":
                break  # close at once, keep-alive headers notwithstanding
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        w.close()
async def main():
    async with await asyncio.start_server(serve, "127.0.0.1", port, backlog=512) as s:
        await s.serve_forever()
asyncio.run(main())
EOF
python3 "$work/server.py" "$port" "$mode" "$work/seen.log" & server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
sleep 1
tiny_scenario "$work/s.toml" pool-race "$requests" 2 5 raw
for i in $(seq 1 "$rounds"); do
  "$BENCH" run "$work/s.toml" --endpoint "http://127.0.0.1:$port/v1" --out "$work/r$i" --no-server-metrics --keep-records all -q >/dev/null 2>&1
  sleep 0.2  # the server's log catches up
  python3 - "$work/r$i/run.json" "$work/seen.log" "$i" <<'EOF'
import collections, json, sys
d = json.load(open(sys.argv[1])); c = d["summary"]["counts"]; rid = d["run_id"]
# bench's X-Request-Id (docs/measurement.md, "Request ids"): FNV-1a of the run id, then the index.
h = 0xcbf29ce484222325
for b in rid.encode():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
prefix = f"{h >> 32:08x}-{(h >> 16) & 0xffff:04x}-{0x8000 | (h & 0xfff):04x}-"
seen = collections.Counter(((int(l[19:23], 16) & 0x3fff) << 48) | int(l[24:36], 16)
                           for l in open(sys.argv[2]) if l.startswith(prefix))
waited = [x["index"] for x in d.get("requests", []) if x["outcome"] == "timeout_first_token"]
never = sum(seen[i] == 0 for i in waited)
print(f"round {sys.argv[3]}: {c['sent']} sent, {c['ok']} ok, errors {c['errors']}, {c['retried']} retried, "
      f"{c.get('connections')} connections, reuse stopped at {c.get('reuse_stopped_at', '-')}; "
      f"timed out waiting for headers: {len(waited)} (never reached the server: {never})")
EOF
done
