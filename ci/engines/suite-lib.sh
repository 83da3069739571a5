# Helpers the real-engine suites share (sourced, not run): a free loopback port, pass/fail
# counting, one field of a JSON file, and the checks every engine suite makes of a run.
passed=0; failed=0
# check NAME CONDITION: evaluates CONDITION and counts it; a failure is printed as FAILED: NAME.
check() { if eval "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $1" >&2; fi; }
# json FILE EXPR: prints EXPR evaluated with d = the parsed FILE.
json() { python3 -c "import json,sys; d=json.load(open('$1')); print(eval(sys.argv[1]))" "$2"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# tiny_scenario FILE NAME REQUESTS FIRST_TOKEN_TIMEOUT_S TIMEOUT_S [MODEL]: a closed loop of two
# workers sending REQUESTS 16-token prompts for 2 tokens each, one warmup request first
# (validation/engine-connections.sh, validation/pool-race.sh). Without MODEL the server's first model is used.
tiny_scenario() {
  { echo "name = \"$2\""; echo 'api = "chat"'; echo 'seed = 13'
    [ -n "${6:-}" ] && echo "model = \"$6\""
    cat <<EOF
[request]
temperature = 0.0
ignore_eos = true
first_token_timeout_s = $4
timeout_s = $5
[workload]
type = "synthetic"
input_tokens = 16
output_tokens = 2
[load]
concurrency = 2
requests = $3
warmup = 1
EOF
  } >"$1"
}

# run_checks LABEL RC RUN.json OK ENGINE CALIBRATED USAGE_MAY_LACK: what every engine suite asks
# of a `bench run --calibrate` against it — exit 0, OK requests all ok, TTFT measured,
# ignore_eos honoured (output = max_tokens; with USAGE_MAY_LACK=1 also passed when the count
# came without usage), every prompt exactly its target length with prompt_lengths starting
# CALIBRATED, and the ENGINE's metric names mapped (ENGINE `-`: a server without metrics).
run_checks() {
  local label=$1 rc=$2 r=$3 ok=$4 engine=$5 calibrated=$6 lenient=$7
  check "$label: bench run exits 0" "[ $rc -eq 0 ]"
  check "$label: every request ok" "[ \"\$(json $r \"d['summary']['counts']['ok']\")\" = $ok ]"
  check "$label: TTFT measured (> 0 ms)" "python3 -c \"import json; d=json.load(open('$r')); assert min(q['ttft_us'] for q in d['requests'] if q['outcome']=='ok') > 0\""
  check "$label: ignore_eos honoured (output = max_tokens)" "python3 -c \"import json; d=json.load(open('$r')); t=d['summary']['tokens']; assert t['output_len_mismatch'] == 0 or ($lenient and t['usage_missing'] > 0), t\""
  check "$label: calibrated prompts have exactly their target length" "python3 -c \"import json,sys; d=json.load(open('$r')); assert d['prompt_lengths'].startswith(sys.argv[1]), d['prompt_lengths']; l=[(q['prompt_tokens'], q['input_tokens_target']) for q in d['requests'] if q['outcome']=='ok']; assert l and all(a == b for a, b in l), l\" \"$calibrated\""
  [ "$engine" = - ] || check "$label: $engine metrics mapped" "[ \"\$(json $r \"(d.get('server_metrics') or {}).get('engine')\")\" = $engine ]"
}

# role_only_checks LABEL FIRST_CHUNK RUN.json: the engine's first chat chunk (a raw `data:`
# line) carries no text, and bench counted such a chunk in every stream of a chat run and timed
# TTFT at the first chunk with text — TTFT is not the first chunk.
role_only_checks() {
  local label=$1 first=$2 r=$3
  check "$label: the engine's first chunk carries no text (role-only)" "python3 -c \"import json,sys; d=json.loads(sys.argv[1][6:]); c=d['choices'][0]['delta']; assert 'role' in c and not (c.get('content') or c.get('reasoning_content')), c\" '$first'"
  check "$label: bench counted it in every stream and timed TTFT at the first text chunk" "python3 -c \"import json; d=json.load(open('$r')); ok=[q for q in d['requests'] if q['outcome']=='ok' and not q['warmup']]; assert all(q['preamble_chunks'] >= 1 and q['first_event_us'] <= q['ttft_us'] for q in ok); assert d['summary']['counts']['textless_first_chunk']['requests'] == len(ok)\""
}

# embeddings_checks LABEL RC RUN.json OK: an embeddings run (`api = "embeddings"`, calibrated):
# it exits 0, every measured request is ok with an E2E and no TTFT (nothing streams), and each
# prompt has exactly its target length.
embeddings_checks() {
  local label=$1 rc=$2 r=$3 ok=$4
  check "$label: bench run exits 0" "[ $rc -eq 0 ]"
  check "$label: every request ok" "[ \"\$(json $r \"d['summary']['counts']['ok']\")\" = $ok ]"
  check "$label: E2E measured, no TTFT (an unstreamed answer)" "python3 -c \"import json; d=json.load(open('$r')); q=[x for x in d['requests'] if x['outcome']=='ok']; assert q and all(x['e2e_us'] > 0 and x['ttft_us'] is None for x in q); assert [l['name'] for l in d['summary']['latency']] == ['e2e', 'send_lag', 'queue']\""
  check "$label: calibrated prompts have exactly their target length" "python3 -c \"import json; d=json.load(open('$r')); l=[(q['prompt_tokens'], q['input_tokens_target']) for q in d['requests'] if q['outcome']=='ok']; assert l and all(a == b for a, b in l), l\""
}
