#!/usr/bin/env bash
# Answer quality on a real engine: llama-server with SmolLM2-135M (Q4_1, as shipped), the
# techniques the gate must judge on what they do to answers (scenarios/llama-quality.toml gates
# only the quality rows; the speed rows are reported beside them):
#
#   1. an A/A: the quality rows no_change, the compare passes;
#   2. the model requantized to Q2_K by llama-quantize (built with llama-server): exit 1,
#      naming the quality rows, and the record row carries the accuracy change;
#   3. speculative decoding with the model as its own draft: the answers agree with the
#      non-speculative baseline at temperature 0, and the server's acceptance is reported;
#   4. the Q2_K model as the draft (judged against step 3's runs, one variable at a time):
#      acceptance measurably lower than with the full-precision draft.
#
# The quality rows need one pass a side (the baseline's second measures its flips), so the
# candidates make one run; step 3 makes two because its runs are step 4's baseline. ≈ 5 min.
#
# When llama-server cannot be built here it says why and reports the suite as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
if ! bash ci/engines/llama-server.sh build >/dev/null; then
  echo "quality suite: skipped (llama-server could not be built here; see the message above)"
  exit 0
fi
source ci/engines/suite-lib.sh
S=scenarios/llama-quality.toml
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && bash ci/engines/llama-server.sh stop "$pid"' EXIT
# serve [ENV=VALUE…]: (re)starts llama-server with those settings (LLAMA_MODEL, LLAMA_ARGS) on
# a fresh port, two threads; sets E to the endpoint flags. False when it did not start.
serve() {
  [ -n "$pid" ] && bash ci/engines/llama-server.sh stop "$pid"
  pid=
  local port
  port=$(free_port)
  pid=$(env LLAMA_THREADS=2 "$@" bash ci/engines/llama-server.sh start "$port") || { pid=; return 1; }
  E="--endpoint http://127.0.0.1:$port/v1"
}
# acceptance DIR: the spec-decode acceptance of the run under DIR, or of its repetitions
# (rep1/, rep2/…: the mean), or None.
acceptance() {
  python3 -c "import glob,json,sys; a=[json.load(open(f))['server_metrics'].get('spec_acceptance_rate') for f in sorted(glob.glob(sys.argv[1]+'/run.json') + glob.glob(sys.argv[1]+'/rep*/run.json'))]; a=[x for x in a if x is not None]; print(sum(a)/len(a) if a else None)" "$1"
}
# quality_line FILE ROW: the verdict line of a quality row in a compare's output.
quality_line() { grep -m1 "^  [a-zA-Z_]* $2 " "$1"; }

q2=$(bash ci/engines/llama-server.sh quantize Q2_K)
check "llama-quantize made a Q2_K model" "[ -s '$q2' ]"
M=$(bash ci/engines/llama-server.sh model)
base_vars="--var quant=q4_1 --var spec=off --var draft_quant=same"

if serve; then
  "$BENCH" baseline $S $E $base_vars --repeat 2 --baselines "$work/b" --out "$work/base" -q >"$work/base.txt" 2>&1
  check "baseline with quality passes recorded" "[ $? -eq 0 ]"
  "$BENCH" compare --explain $S $E $base_vars --repeat 1 --baselines "$work/b" --out "$work/aa" -q >"$work/aa.txt" 2>&1
  rc=$?; cat "$work/aa.txt"
  check "A/A: the compare passes" "[ $rc -eq 0 ]"
  check "A/A: accuracy no_change" "quality_line '$work/aa.txt' accuracy | grep -q '^  no_change'"
  check "A/A: agreement no_change" "quality_line '$work/aa.txt' agreement | grep -q '^  no_change'"
else
  check "llama-server (Q4_1) started" false
fi

if [ -s "$q2" ] && serve LLAMA_MODEL="$q2"; then
  "$BENCH" compare --explain $S $E --var quant=q2_k --var spec=off --var draft_quant=same --repeat 1 --baselines "$work/b" \
    --out "$work/q2" --record "$work/q2.csv" -q >"$work/q2.txt" 2>&1
  rc=$?; cat "$work/q2.txt"
  check "Q4_1 → Q2_K: the compare exits 1" "[ $rc -eq 1 ]"
  check "Q4_1 → Q2_K: a quality row REGRESSED" "grep -q '^  REGRESSED \\(accuracy\\|agreement\\) ' '$work/q2.txt'"
  check "Q4_1 → Q2_K: the record's accuracy row holds the change" "python3 -c \"import csv; r=[r for r in csv.DictReader(open('$work/q2.csv')) if r['metric']=='accuracy']; assert r and 'quant: q4_1 → q2_k' in r[0]['change'] and 'accuracy' in r[0]['summary'] and ' pp' in r[0]['summary'], r\""
else
  check "llama-server (Q2_K) started" false
fi

if serve LLAMA_ARGS="--model-draft $M --spec-type draft-simple"; then
  "$BENCH" compare --explain $S $E --var quant=q4_1 --var spec=on --var draft_quant=same --repeat 2 --baselines "$work/b" \
    --out "$work/spec" --record "$work/spec.csv" -q >"$work/spec.txt" 2>&1
  rc=$?; cat "$work/spec.txt"
  check "self-draft speculation: the compare passes" "[ $rc -eq 0 ]"
  check "self-draft speculation: agreement no_change (lossless at temperature 0)" "quality_line '$work/spec.txt' agreement | grep -q '^  no_change'"
  a_same=$(acceptance "$work/spec")
  check "self-draft speculation: acceptance reported ($a_same), and in the record's summary" "[ '$a_same' != None ] && python3 -c \"import csv; r=list(csv.DictReader(open('$work/spec.csv'))); assert r and 'acceptance' in r[0]['summary'], r[0]['summary']\""
else
  check "llama-server (self-draft speculation) started" false
fi

if [ -s "$q2" ] && serve LLAMA_ARGS="--model-draft $q2 --spec-type draft-simple"; then
  "$BENCH" compare --explain $S $E --var quant=q4_1 --var spec=on --var draft_quant=q2_k --repeat 1 --against "$work/spec" \
    --out "$work/spec-q2" -q >"$work/spec-q2.txt" 2>&1
  cat "$work/spec-q2.txt"
  a_q2=$(acceptance "$work/spec-q2")
  check "Q2_K draft: acceptance ($a_q2) below the Q4_1 draft's (${a_same:-None})" "python3 -c 'import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); assert a < b - 0.02, (a, b)' '$a_q2' '${a_same:-None}'"
  check "Q2_K draft: the answers still agree (the target verifies every token)" "quality_line '$work/spec-q2.txt' agreement | grep -q '^  no_change'"
else
  check "llama-server (Q2_K draft) started" false
fi
echo "quality: $passed passed, $failed failed"
[ $failed -eq 0 ]
