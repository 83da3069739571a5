#!/usr/bin/env bash
# Run the regression gate: `bench compare` for every scenario listed in ci/gate.toml against
# its baseline in baselines/. Exit 0 when all pass, 1 when any regressed, 2 on an error.
# Extra arguments go to every `bench compare` (e.g. --endpoint URL --var engine=vllm-0.11).
# Each compare is sequential (bench's default): candidate runs are added at looks after 3, 5, 8
# and 12 runs a side until every gated row is settled, a regression is, the cap (--max-repeat)
# or the budget (--budget) is reached, or every row left is out of the cap's reach; an
# undecided row is named in the headline and passes unless --undecided fail.
# On a shared or drifting machine, serve the baseline's configuration in the same job and add
# --interleave --baseline-endpoint URL (or --switch 'CMD {arm}'): control runs then alternate
# with the candidate's in ABBA blocks, judged in pairs, and drift falls on both arms instead of
# looking like a regression. What each row can decide at the cap: `bench compare --plan`.
#
# With no --endpoint the compare runs on the embedded simulator, which can serve the
# baseline's configuration as readily as the candidate's: the recipe then interleaves by
# itself, so that a busy laptop or CI runner slows both arms alike. (The simulator models an
# engine, but the client, the HTTP path and the simulator's own wake-ups still share the host:
# a stored baseline from a quiet machine against runs beside two busy loops read TTFT p95
# ≈ +25 % and failed; validation/busy-gate.sh measures it.)
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
scenarios=$(sed -n 's/^scenarios *= *\[\(.*\)\]/\1/p' ci/gate.toml | tr -d '"' | tr ',' ' ')
[ -n "$scenarios" ] || { echo "ci/gate.toml lists no scenarios" >&2; exit 2; }
mode=(--interleave)
keep=1
for a in "$@"; do
  case $a in
    --endpoint|--endpoint=*|--interleave|--candidate|--candidate=*|--control|--control=*|--against|--against=*) mode=() ;;
    --plan) mode=(); keep=0 ;;
    --json|--json=*) keep=0 ;;
  esac
done
# Every compare's JSON is kept where the next `bench history` finds it (one file a compare,
# named by scenario and time; BENCH_COMPARES moves the folder): `bench history results/compares`.
compares=${BENCH_COMPARES:-results/compares}
worst=0
for s in $scenarios; do
  echo "== gate: $s"
  json=()
  if [ $keep -eq 1 ]; then
    json=(--json "$compares/$(basename "$s" .toml)-$(date -u +%Y%m%dT%H%M%SZ).json")
  fi
  "$BENCH" compare "$s" --gate ci/gate.toml "${mode[@]}" "${json[@]}" "$@"
  rc=$?
  if [ $rc -eq 2 ]; then worst=2; elif [ $rc -eq 1 ] && [ $worst -eq 0 ]; then worst=1; fi
done
exit $worst
