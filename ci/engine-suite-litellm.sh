#!/usr/bin/env bash
# The real-engine suite through a gateway: LiteLLM's OpenAI proxy (installed from PyPI and
# cached by ci/engines/litellm.sh) in front of llama-server (ci/engines/llama-server.sh). What
# a gateway can break is checked: exact prompt lengths (a local tokenizer.json; the proxy has no
# /tokenize), TTFT at the first text chunk (the proxy re-frames the stream and opens it with a
# role-only delta of its own), usage and ignore_eos passed through, the server's metrics read
# behind the proxy (--metrics-url), the proxy's key sent and never written, an A/A that passes,
# and a real change (llama-server's prompt cache, a body field the proxy must forward) judged.
# When either cannot be had here it says why and reports the suite as skipped, never passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
start=$(date +%s)
if ! bash ci/engines/litellm.sh build >/dev/null; then
  echo "litellm suite: skipped (LiteLLM could not be installed here; see the message above)"
  exit 0
fi
if ! bash ci/engines/llama-server.sh build >/dev/null; then
  echo "litellm suite: skipped (llama-server could not be built here; see the message above)"
  exit 0
fi
source ci/engines/suite-lib.sh
work=$(mktemp -d)
lport=$(free_port); pport=$(free_port)
lpid=""; ppid=""
trap '[ -n "$ppid" ] && bash ci/engines/litellm.sh stop "$ppid"; [ -n "$lpid" ] && bash ci/engines/llama-server.sh stop "$lpid"' EXIT
if ! lpid=$(bash ci/engines/llama-server.sh start "$lport"); then
  echo "litellm suite: skipped (llama-server did not start)"; lpid=""; exit 0
fi
# The proxy's master key: bench sends it as the bearer key (OPENAI_API_KEY, its default
# api_key_env) and must write it nowhere.
export LITELLM_MASTER_KEY="sk-bench-$(python3 -c 'import secrets; print(secrets.token_hex(12))')"
export OPENAI_API_KEY="$LITELLM_MASTER_KEY"
if ! ppid=$(bash ci/engines/litellm.sh start "$pport" "http://127.0.0.1:$lport/v1"); then
  echo "litellm suite: skipped (the LiteLLM proxy did not start; see the message above)"; ppid=""; exit 0
fi
echo "litellm suite: proxy up after $(( $(date +%s) - start )) s (install included)"
url="http://127.0.0.1:$pport/v1"
if ! python3 ci/engines/gguf-tokenizer.py "$(bash ci/engines/llama-server.sh model)" "$work/tokenizer.json"; then
  echo "FAILED: convert the GGUF vocabulary to tokenizer.json" >&2; exit 1
fi
E=(--endpoint "$url" --tokenizer "$work/tokenizer.json" --metrics-url "http://127.0.0.1:$lport/metrics")

"$BENCH" run scenarios/llama-server.toml "${E[@]}" --out "$work/chat" >"$work/chat.txt" 2>&1
rc=$?; cat "$work/chat.txt"
run_checks "litellm chat" $rc "$work/chat/run.json" 8 llama.cpp "calibrated with the local tokenizer" 0
first=$(curl -sN --max-time 60 "$url/chat/completions" -H "Authorization: Bearer $LITELLM_MASTER_KEY" -H 'Content-Type: application/json' \
  -d '{"model":"smollm2","messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true}' | grep -m1 '^data: ')
echo "LiteLLM's first chat chunk: $first"
role_only_checks "litellm chat" "$first" "$work/chat/run.json"
check "litellm: the proxy's key is in no file bench wrote" "! grep -rqF \"\$LITELLM_MASTER_KEY\" '$work/chat'"
check "litellm: usage came on the last chunk only, and each chunk was one token (no chunk estimated)" "python3 -c \"import json; d=json.load(open('$work/chat/run.json')); assert 'chunks' not in d['summary']['tokens'], d['summary']['tokens']\""

# A/A through the proxy, interleaved (see ci/engine-suite.sh for why, and for α = 0.001).
"$BENCH" baseline scenarios/llama-server.toml "${E[@]}" --repeat 3 --baselines "$work/aa-b" --out "$work/aa-base" >"$work/aa-base.txt" 2>&1
check "litellm A/A: baseline recorded" "[ $? -eq 0 ]"
"$BENCH" compare --explain scenarios/llama-server.toml "${E[@]}" --interleave --alpha 0.001 --baselines "$work/aa-b" --out "$work/aa-cand" >"$work/aa.txt" 2>&1
rc=$?; cat "$work/aa.txt"
check "litellm A/A: compare with nothing changed passes" "[ $rc -eq 0 ]"

# A real change the proxy must carry: llama-server's prompt cache, a body field
# (`cache_prompt`) the gateway forwards to the server.
"$BENCH" baseline scenarios/llama-prefix.toml "${E[@]}" --var cache_prompt=false --repeat 3 --baselines "$work/b" --out "$work/base" >"$work/base.txt" 2>&1
check "litellm prompt cache: baseline recorded" "[ $? -eq 0 ]"
"$BENCH" compare --explain scenarios/llama-prefix.toml "${E[@]}" --var cache_prompt=true --alpha 0.001 --baselines "$work/b" --out "$work/cand" >"$work/cmp.txt" 2>&1
rc=$?; cat "$work/cmp.txt"
check "litellm prompt cache: compare passes" "[ $rc -eq 0 ]"
check "litellm prompt cache: TTFT improved through the proxy" "grep -q '^  improved ttft.p50' '$work/cmp.txt'"
echo "litellm suite: $passed passed, $failed failed ($(( $(date +%s) - start )) s)"
# LiteLLM's own Python has been seen to segfault mid-suite (dmesg: `litellm: segfault … in
# libpython3.11`), after which every later check fails on a refused connection. That is the
# gateway's crash, not a finding about bench: said, and the suite run once more from the start.
# The crashed proxy can linger as a zombie (its parent, the start script, is gone, and the
# process that inherits it need not reap it), which `kill -0` still finds: a proxy is gone when
# its process is, when it is a zombie, or when nothing answers on its port.
proxy_gone() {
  kill -0 "$ppid" 2>/dev/null || return 0
  [ "$(ps -o stat= -p "$ppid" 2>/dev/null | cut -c1)" = Z ] && return 0
  ! curl -s -o /dev/null --max-time 10 "http://127.0.0.1:$pport/"
}
if [ "$failed" -gt 0 ] && proxy_gone && [ -z "${LITELLM_SUITE_RETRY:-}" ]; then
  echo "litellm suite: the proxy process died during the suite; its log ends:" >&2
  tail -3 "${BENCH_CACHE:-$HOME/.cache/bench}/litellm-$pport.log" >&2 2>/dev/null
  echo "litellm suite: running it once more" >&2
  bash ci/engines/llama-server.sh stop "$lpid"; lpid=""; ppid=""
  LITELLM_SUITE_RETRY=1 exec bash ci/engine-suite-litellm.sh
fi
[ "$failed" -eq 0 ]
