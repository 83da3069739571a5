#!/usr/bin/env bash
# Self-test of the regression gate against the embedded simulator (run by .ci/run):
#   1. an A/A compare passes (exit 0);
#   2. a simulator option that slows decode by ~30 % (bw_eff 0.8 → 0.615) fails (exit 1), naming TPOT;
#   3. a corrupt baseline is an error (exit 2).
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
S=scenarios/ci-gate.toml
fail() { echo "gate self-test FAILED: $*" >&2; exit 1; }

"$BENCH" baseline "$S" --baselines "$work/baselines" --out "$work/base" --repeat 3 >/dev/null || fail "could not record the baseline"

"$BENCH" compare --explain "$S" --baselines "$work/baselines" --out "$work/aa" >"$work/aa.txt"
rc=$?; cat "$work/aa.txt"
if [ $rc -eq 1 ]; then
  # A shared machine can stall a whole run; a real defect fails twice.
  echo "A/A compare failed once; repeating it to tell machine noise from a defect" >&2
  "$BENCH" compare --explain "$S" --baselines "$work/baselines" --out "$work/aa2" >"$work/aa.txt"
  rc=$?; cat "$work/aa.txt"
fi
[ $rc -eq 0 ] || fail "A/A compare exited $rc, expected 0"

"$BENCH" compare --explain "$S" --baselines "$work/baselines" --out "$work/slow" --opt bw_eff=0.615 \
  --record "$work/record.csv" --owner ci >"$work/slow.txt"
rc=$?; cat "$work/slow.txt"
[ $rc -eq 1 ] || fail "a 30 % slower decode exited $rc, expected 1"
grep -q "REGRESSED tpot.p50" "$work/slow.txt" || fail "the regression does not name tpot.p50"
grep -q "bw_eff: 0.8 → 0.615" "$work/record.csv" || fail "the record does not name the change"

echo '{"schema_version": 1, "kind": "bench-baseline", "repetitions": [' > "$work/baselines/ci-gate/main.json"
"$BENCH" compare --explain "$S" --baselines "$work/baselines" --candidate "$work/aa/rep1/run.json" 2>"$work/corrupt.txt"
rc=$?; cat "$work/corrupt.txt"
[ $rc -eq 2 ] || fail "a corrupt baseline exited $rc, expected 2"
echo "selftest: 3 passed, 0 failed"
