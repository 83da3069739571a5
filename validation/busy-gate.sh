#!/usr/bin/env bash
# A/A rounds of the shipped gate recipe (`ci/gate.sh`, default α, sequential) against the
# committed baseline on the embedded simulator, while LOOPS busy loops (default 2: every core
# of a 2-core machine) run beside it — a new user's first `ci/gate.sh` on a busy laptop or a
# shared CI runner. Nothing changed between the arms, so every exit 1 is a false fail.
#
#   BENCH=target/release/bench bash validation/busy-gate.sh ROUNDS [LOOPS] [ARGS…]
#
# ARGS go to every compare: `--opt bw_eff=0.615` (decode ≈ 30 % slower) measures what the
# recipe catches under the same load, every exit 1 then a detection. DIRECT=1 runs
# `bench compare` against the stored baseline without the recipe's interleaving (what
# ci/gate.sh did before it interleaved on the simulator). Prints each round's exit code and
# headline, then the tally.
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-20}; loops=${2:-2}; shift 2 2>/dev/null || shift $#
BENCH=${BENCH:-target/release/bench}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq "$loops"); do
  # Bounded: each loop ends by itself after an hour even if this script is killed.
  timeout 3600 sh -c 'while :; do :; done' &
  pids+=($!)
done
fails=0; errors=0
for r in $(seq "$rounds"); do
  if [ -n "${DIRECT:-}" ]; then
    out=$("$BENCH" compare --explain scenarios/smoke.toml --gate ci/gate.toml -q --out "$work/r$r" "$@" 2>&1); rc=$?
  else
    out=$(BENCH="$BENCH" bash ci/gate.sh -q --out "$work/r$r" "$@" 2>&1); rc=$?
  fi
  head=$(printf '%s\n' "$out" | grep -m1 '^bench compare' || true)
  used=$(printf '%s\n' "$out" | grep -m1 'sequential:' | sed 's/^ *//' || true)
  echo "round $r: exit $rc — $head — $used"
  [ $rc -eq 1 ] && { fails=$((fails + 1)); printf '%s\n' "$out" | grep -E '^  (REGRESSED|improved|inconclusive) ' | sed 's/^/    /'; }
  [ $rc -eq 2 ] && { errors=$((errors + 1)); printf '%s\n' "$out" | tail -5; }
done
echo "busy-gate: $rounds rounds beside $loops busy loops${*:+ with $*}${DIRECT:+ (direct, no interleave)}: $fails exit 1, $errors errors (exit 2)"
