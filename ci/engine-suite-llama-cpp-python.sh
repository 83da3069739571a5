#!/usr/bin/env bash
# The real-engine suite on llama-cpp-python's OpenAI server (a FastAPI app over llama.cpp's
# library, installed from PyPI and cached by ci/engines/llama-cpp-python.sh). What this server
# does its own way is checked: exact prompt lengths (a local tokenizer.json; it serves no
# /tokenize), TTFT at the first text chunk, output counts without usage in the stream, no
# /metrics (the run says so and goes on), an A/A that passes, and a real change judged: asking
# for log-probabilities, which the server computes in Python for every token, must come out as
# a TPOT regression and fail the compare. When the server cannot be had here it says why and
# reports the suite as skipped, never passed.
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
start=$(date +%s)
if ! bash ci/engines/llama-cpp-python.sh build >/dev/null; then
  echo "llama-cpp-python suite: skipped (it could not be installed here; see the message above)"
  exit 0
fi
source ci/engines/suite-lib.sh
work=$(mktemp -d)
port=$(free_port)
if ! pid=$(bash ci/engines/llama-cpp-python.sh start "$port"); then
  echo "llama-cpp-python suite: skipped (the server did not start; see the message above)"; exit 0
fi
trap 'bash ci/engines/llama-cpp-python.sh stop "$pid"' EXIT
echo "llama-cpp-python suite: server up after $(( $(date +%s) - start )) s (install included)"
url="http://127.0.0.1:$port/v1"
if ! python3 ci/engines/gguf-tokenizer.py "$(bash ci/engines/llama-server.sh model)" "$work/tokenizer.json"; then
  echo "FAILED: convert the GGUF vocabulary to tokenizer.json" >&2; exit 1
fi
E=(--endpoint "$url" --tokenizer "$work/tokenizer.json")

"$BENCH" run scenarios/llama-server.toml "${E[@]}" --out "$work/chat" >"$work/chat.txt" 2>&1
rc=$?; cat "$work/chat.txt"
r="$work/chat/run.json"
check "llama-cpp-python chat: bench run exits 0" "[ $rc -eq 0 ]"
check "llama-cpp-python chat: every request ok" "[ \"\$(json $r \"d['summary']['counts']['ok']\")\" = 8 ]"
check "llama-cpp-python chat: TTFT measured (> 0 ms)" "python3 -c \"import json; d=json.load(open('$r')); assert min(q['ttft_us'] for q in d['requests'] if q['outcome']=='ok') > 0\""
# It streams no usage (not even with stream_options.include_usage): output is counted as
# text chunks, one token each, and every request says so. A token that brings no text of its
# own (part of a character) sends no chunk, so the count can fall a little short of max_tokens
# (125 of 128 here); without usage nothing tells bench otherwise.
check "llama-cpp-python chat: no usage in the stream, said per request, output counted by chunks" "python3 -c \"import json; d=json.load(open('$r')); t=d['summary']['tokens']; assert t['usage_missing'] == 8 and 0.9 * 8 * 16 <= t['output_tokens'] <= 8 * 16, t\""
check "llama-cpp-python chat: prompts calibrated with the local tokenizer and the probed template" "python3 -c \"import json; d=json.load(open('$r')); assert d['prompt_lengths'].startswith('calibrated with the local tokenizer'), d['prompt_lengths']\""
check "llama-cpp-python: no /metrics, said and recorded" "python3 -c \"import json; m=json.load(open('$r'))['server_metrics']; assert m['engine'] is None and m['scrapes'] == 0 and '404' in m['warning'], m\""
first=$(curl -sN --max-time 60 "$url/chat/completions" -H 'Content-Type: application/json' \
  -d '{"model":"smollm2","messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"stream":true}' | grep -m1 '^data: ')
echo "llama-cpp-python's first chat chunk: $first"
role_only_checks "llama-cpp-python chat" "$first" "$work/chat/run.json"

# A/A, interleaved (see ci/engine-suite.sh for why, and for α = 0.001).
"$BENCH" baseline scenarios/llama-server.toml "${E[@]}" --repeat 3 --baselines "$work/aa-b" --out "$work/aa-base" >"$work/aa-base.txt" 2>&1
check "llama-cpp-python A/A: baseline recorded" "[ $? -eq 0 ]"
"$BENCH" compare --explain scenarios/llama-server.toml "${E[@]}" --interleave --alpha 0.001 --baselines "$work/aa-b" --out "$work/aa-cand" >"$work/aa.txt" 2>&1
rc=$?; cat "$work/aa.txt"
check "llama-cpp-python A/A: compare with nothing changed passes" "[ $rc -eq 0 ]"

# A real change that costs decode time: `logprobs` (one body field, --param, on the
# completions API; chat would need two), for which the server computes log-probabilities over
# the 49,152-token vocabulary in Python after every token.
# The baseline has bench's default size (12 runs): against a stored baseline of 3 runs that
# spread more than the candidate's, the gate judges with Welch's ≈ 2 degrees of freedom, and at
# α = 0.001 not even a +385 % TPOT can be told from noise by the cap (seen on a machine whose
# hypervisor stole 15–20 % of the CPU: the compare stopped, rightly, as out of reach).
sed 's/^api = "chat"/api = "completions"/' scenarios/llama-server.toml >"$work/completions.toml"
"$BENCH" baseline "$work/completions.toml" "${E[@]}" --baselines "$work/lp-b" --out "$work/lp-base" >"$work/lp-base.txt" 2>&1
check "llama-cpp-python logprobs: baseline recorded" "[ $? -eq 0 ]"
"$BENCH" compare --explain "$work/completions.toml" "${E[@]}" --param logprobs=5 --alpha 0.001 \
  --baselines "$work/lp-b" --out "$work/lp" >"$work/lp.txt" 2>&1
rc=$?; cat "$work/lp.txt"
check "llama-cpp-python logprobs: the compare fails (exit 1)" "[ $rc -eq 1 ]"
# The compare stops at the first look that settles a regression, so which decode-time row
# carries it depends on the draw: TPOT p50's own interval, from 24 requests whose TPOT spreads
# widely under logprobs, may still be open when output throughput has settled.
check "llama-cpp-python logprobs: the decode cost is caught (TPOT p50 or output throughput regressed)" "grep -Eq '^  REGRESSED (tpot.p50|output_throughput)' '$work/lp.txt'"
echo "llama-cpp-python suite: $passed passed, $failed failed ($(( $(date +%s) - start )) s)"
[ "$failed" -eq 0 ]
