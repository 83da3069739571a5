#!/usr/bin/env bash
# Where TTFT − prefill goes on llama-server: the `llama-server` scenario one request at a time
# (no queue), ROUNDS runs on each server configuration, the median of TTFT − the server's own
# prompt_ms per run, beside the idle round trip bench times before each run (GET /v1/models
# on its own client: the network and the client) and a curl GET /health. The
# configurations take away the server's work before the prompt starts one piece at a time:
# `default` (Jinja chat template and its output parser, host-memory prompt cache), `nojinja`
# (--no-jinja: the built-in template), `cr0` (--cache-ram 0: no prompt-cache save and restore),
# `bare` (both). Not part of .ci/run; run it by hand:
#   bash validation/ttft-rest.sh 2 default nojinja cr0 bare
#   BENCH=target/debug/bench bash validation/ttft-rest.sh 2 bare     # the client's own build
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2}; shift
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
source ci/engines/suite-lib.sh
port=$(free_port)
work=$(mktemp -d)
for mode in "${@:-default bare}"; do
  case $mode in
    default) args="" ;;
    nojinja) args="--no-jinja" ;;
    cr0) args="--cache-ram 0" ;;
    bare) args="--no-jinja --cache-ram 0" ;;
    *) echo "configuration: default, nojinja, cr0 or bare" >&2; exit 2 ;;
  esac
  pid=$(LLAMA_ARGS="$args" bash ci/engines/llama-server.sh start "$port") || { echo "$mode: llama-server did not start"; continue; }
  for i in $(seq 1 "$rounds"); do
    "$BENCH" run scenarios/llama-server.toml --endpoint "http://127.0.0.1:$port/v1" --concurrency 1 --out "$work/$mode-$i" -q >/dev/null 2>&1
    python3 - "$work/$mode-$i/run.json" "$mode" "$i" <<'PY'
import json, statistics as st, sys
d = json.load(open(sys.argv[1]))
q = [r for r in d["requests"] if r["outcome"] == "ok" and not r["warmup"] and (r.get("server") or {}).get("prefill_us")]
rest = [(r["ttft_us"] - r["server"]["prefill_us"]) / 1e3 for r in q]
idle = d["idle_round_trip"]["median_ms"]
print(f"{sys.argv[2]} run {sys.argv[3]}: TTFT − prefill median {st.median(rest):.2f} ms "
      f"(min {min(rest):.2f}, max {max(rest):.2f}; {len(rest)} requests), idle round trip "
      f"{idle:.2f} ms, rest − idle {st.median(rest) - idle:.2f} ms, prefill median "
      f"{st.median(r['server']['prefill_us'] / 1e3 for r in q):.1f} ms")
PY
  done
  echo "$mode: GET /health $(for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total} ' "http://127.0.0.1:$port/health"; done)s"
  bash ci/engines/llama-server.sh stop "$pid"
done
