#!/usr/bin/env bash
# LiteLLM's OpenAI proxy in front of another server, for the real-engine suites: install,
# cache, start, stop.
#
#   ci/engines/litellm.sh build                  # prints the cached venv's python (installs it first)
#   LITELLM_MASTER_KEY=sk-… ci/engines/litellm.sh start PORT UPSTREAM
#                                                # proxies 127.0.0.1:PORT to UPSTREAM (…/v1), waits for it, prints its PID
#   ci/engines/litellm.sh stop PID
#
# Installed from PyPI (`litellm[proxy]`, pinned) into a venv under ~/.cache/bench, once per
# machine. The proxy serves one model, `smollm2`, routed to UPSTREAM as an OpenAI-compatible
# server (`openai/` provider; the upstream needs no key, LiteLLM wants one, so a dummy is set).
# The proxy refuses to start without a master key, and clients must send it as their bearer
# key: the caller chooses it (LITELLM_MASTER_KEY), which lets a suite check that bench sends
# a key and never writes it anywhere.
# Exit 3 means "cannot be had here": callers report a skip, never a pass.
set -uo pipefail
cd "$(dirname "$0")/../.."
CACHE=${BENCH_CACHE:-$HOME/.cache/bench}
VERSION=${LITELLM_VERSION:-1.108.7}
VENV="$CACHE/litellm-$VERSION"
mkdir -p "$CACHE"
skip() { echo "litellm unavailable: $*" >&2; exit 3; }
. ci/engines/await.sh
. ci/engines/logs.sh

build() {
  if [ -f "$VENV/.ready" ]; then echo "$VENV/bin/python"; return; fi
  command -v python3 >/dev/null || skip "no python3"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || skip "python3 -m venv failed"
  echo "installing litellm[proxy]==$VERSION into $VENV (a minute or two)" >&2
  timeout 1200 "$VENV/bin/python" -m pip install -q "litellm[proxy]==$VERSION" >&2 \
    || skip "pip install litellm[proxy]==$VERSION failed (PyPI unreachable, or no wheel for this Python)"
  "$VENV/bin/litellm" --help >/dev/null 2>&1 || skip "the litellm CLI does not run"
  touch "$VENV/.ready"
  echo "$VENV/bin/python"
}

start() {
  local port=$1 upstream=$2
  [ -n "${LITELLM_MASTER_KEY:-}" ] || { echo "set LITELLM_MASTER_KEY (sk-…)" >&2; exit 2; }
  build >/dev/null || exit 3
  local log
  log=$(fresh_log litellm "$port")
  cat >"$CACHE/litellm-$port.yaml" <<YAML
model_list:
  - model_name: smollm2
    litellm_params:
      model: openai/smollm2
      api_base: $upstream
      api_key: none
YAML
  OPENAI_API_KEY=none nohup "$VENV/bin/litellm" --config "$CACHE/litellm-$port.yaml" --host 127.0.0.1 --port "$port" \
    >"$log" 2>&1 &
  await_ready $! "http://127.0.0.1:$port/health/liveliness" "$log" "the proxy"
}

case "${1:-}" in
  build) build ;;
  start) start "${2:?PORT}" "${3:?UPSTREAM}" ;;
  stop) kill "${2:?PID}" 2>/dev/null; wait "${2}" 2>/dev/null; true ;;
  *) echo "usage: $0 build | start PORT UPSTREAM | stop PID" >&2; exit 2 ;;
esac
