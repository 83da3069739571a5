#!/usr/bin/env bash
# The gate's false-alarm rate on a real engine: N independent A/A rounds on llama-server (a
# baseline with 3 repetitions, then a compare with nothing changed), each with a fresh
# baseline. Prints each round's verdict and the rate of false failures. Not part of .ci/run
# (it takes ≈ 40 s a round); run it by hand: bash validation/engine-aa.sh 6
set -uo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-6}
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
bash ci/engines/llama-server.sh build >/dev/null || { echo "engine A/A: skipped (no llama-server)"; exit 0; }
source ci/engines/suite-lib.sh
port=$(free_port)
pid=$(bash ci/engines/llama-server.sh start "$port") || { echo "engine A/A: skipped (llama-server did not start)"; exit 0; }
trap 'bash ci/engines/llama-server.sh stop "$pid"' EXIT
work=$(mktemp -d)
E="--endpoint http://127.0.0.1:$port/v1"
fails=0
for i in $(seq 1 "$rounds"); do
  "$BENCH" baseline scenarios/llama-server.toml $E --repeat 3 --baselines "$work/b$i" --out "$work/base$i" -q >/dev/null 2>&1 || { echo "round $i: baseline failed"; exit 2; }
  "$BENCH" compare --explain scenarios/llama-server.toml $E --baselines "$work/b$i" --out "$work/cand$i" -q >"$work/aa$i.txt" 2>&1
  rc=$?
  case $rc in
    0) echo "round $i: pass" ;;
    1) fails=$((fails + 1)); echo "round $i: FALSE FAIL"; grep -E '^  (REGRESSED|improved)' "$work/aa$i.txt" ;;
    *) echo "round $i: error (exit $rc)"; cat "$work/aa$i.txt"; exit 2 ;;
  esac
done
echo "engine A/A: $fails false failures in $rounds rounds"
