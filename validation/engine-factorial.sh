#!/usr/bin/env bash
# `bench stack`'s factorial on a real engine: llama-server's threads (-t 1 → 2) × parallel
# slots (-np 4 → 1), with the shipped 8-request scenario (2 clients). Each configuration is run
# REPS times; the server is restarted with its flags before every run and the configurations
# take turns (base, threads, parallel, both; then again), so drift falls on all four alike.
# The runs carry their configuration as vars, and `bench stack --from` judges them — then
# once more with only each configuration's first run, to show what one run a configuration
# can say.
#
#   bash validation/engine-factorial.sh [REPS] [WORK]   (default 3; about 1.1 minutes a repetition: 4 took 4.5 minutes)
# BENCH=path overrides target/release/bench. Prints where the runs are kept. With WORK (a
# directory an earlier call printed) the repetitions are added to its runs, numbered on from
# the last one there, and the factorial judges them all — what an inconclusive row's "≈ N
# runs per configuration would settle it" asks for.
set -uo pipefail
cd "$(dirname "$0")/.."
reps=${1:-3}
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
bash ci/engines/llama-server.sh build >/dev/null || { echo "factorial: skipped (no llama-server)"; exit 0; }
source ci/engines/suite-lib.sh
work=${2:-$(mktemp -d)}
mkdir -p "$work/runs" || exit 2
# Repetitions already there (r1-…, r2-…): number the new ones on from the last.
done_reps=$(ls "$work/runs" | sed -n 's/^r\([0-9]*\)-.*/\1/p' | sort -n | tail -1)
done_reps=${done_reps:-0}
added=$((done_reps + 1)); [ "$reps" -gt 1 ] && added="$added–$((done_reps + reps))"
echo "factorial: runs kept under $work (repetition $added added)"
pid=""
trap '[ -n "$pid" ] && bash ci/engines/llama-server.sh stop "$pid"' EXIT
for rep in $(seq $((done_reps + 1)) $((done_reps + reps))); do
  for cfg in "1 4" "2 4" "1 1" "2 1"; do
    set -- $cfg
    port=$(free_port)
    pid=$(LLAMA_THREADS=$1 LLAMA_PARALLEL=$2 bash ci/engines/llama-server.sh start "$port") || { echo "factorial: llama-server did not start"; exit 2; }
    "$BENCH" run scenarios/llama-server.toml --endpoint "http://127.0.0.1:$port/v1" \
      --var "threads=$1" --var "parallel=$2" --out "$work/runs/r$rep-t$1-np$2" -q >/dev/null \
      || { echo "factorial: the run of threads=$1 parallel=$2 failed"; exit 2; }
    bash ci/engines/llama-server.sh stop "$pid"; pid=""
  done
done
stack() { "$BENCH" stack scenarios/llama-server.toml --base threads=1,parallel=4 --try threads=2 --try parallel=1 --from "$1"; }
echo "== every run ($((done_reps + reps)) a configuration)"
stack "$work/runs"
rm -rf "$work/first"; mkdir -p "$work/first"
for d in "$work"/runs/r1-*; do cp -r "$d" "$work/first/"; done
echo "== each configuration's first run only"
stack "$work/first"
