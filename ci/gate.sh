#!/usr/bin/env bash
# Run the regression gate: `bench compare` for every scenario listed in ci/gate.toml against
# its baseline in baselines/, then `bench history` of every compare kept so far. Exit 0 when
# all pass, 1 when any regressed (or history saw a metric drift the bad way), 2 on an error.
# Extra arguments go to every `bench compare` (e.g. --endpoint URL --var engine=vllm-0.11), and
# so do the words of $BENCH_COMPARE_ARGS (a workflow's env: "--alpha 0.01 --max-repeat 20").
# `bench init` writes this same script into a repository it sets up.
#
# Each compare is sequential (bench's default): candidate runs are added at looks after 3, 5, 8
# and 12 runs a side until every gated row is settled, a regression is, the cap (--max-repeat)
# or the budget (--budget) is reached, or every row left is out of the cap's reach; an
# undecided row is named in the headline and passes unless --undecided fail.
#
# How the arms are measured, from ci/gate.toml's top-level keys:
#   baseline_endpoint = "URL"   a second server serves the baseline's configuration: control
#                               runs alternate with the candidate's in ABBA blocks (--interleave)
#   switch = 'CMD {arm}'        a command reconfigures the one server between the arms
#   interleave = false          against the stored baseline only (the server is what changed)
# With none of them: interleaved when the scenario runs on the embedded simulator (no
# endpoint), which serves the baseline's configuration as readily as the candidate's, so a
# busy laptop or CI runner slows both arms alike; --endpoint/--candidate/--against on the
# command line mean the stored baseline. A stored baseline measures the machine and server of
# the day it was recorded; interleaving judges both arms on the same ones (a stored quiet
# baseline against runs beside two busy loops read TTFT p95 ≈ +25 % and failed on the
# simulator; validation/busy-gate.sh measures it).
#
# Environment: BENCH (the binary; else bench on PATH, or this source tree's release build),
# BENCH_COMPARES (where each compare's JSON is kept, default results/compares),
# GITHUB_STEP_SUMMARY (the Markdown verdicts and history are appended there), BENCH_COMMENT=true
# with GH_TOKEN on a pull request (one sticky comment with the verdicts, updated each run).
set -uo pipefail
cd "${BENCH_ROOT:-$(dirname "$0")/..}" || exit 2
if [ -z "${BENCH:-}" ]; then
  if grep -qs '^name = "bench"' Cargo.toml; then
    BENCH=target/release/bench
    [ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
  elif command -v bench >/dev/null 2>&1; then
    BENCH=bench
  else
    echo "error: bench is not installed (pip install llm-bench-gate, or set BENCH=PATH)" >&2
    exit 2
  fi
fi
gate=ci/gate.toml
[ -f "$gate" ] || { echo "error: $gate not found (bench init writes one)" >&2; exit 2; }
# The top-level keys, before the first [table].
top=$(sed -n '/^\[/q; p' "$gate")
unknown=$(printf '%s\n' "$top" | sed -n 's/^\([A-Za-z_]*\) *=.*/\1/p' | grep -vxE 'scenarios|baseline_endpoint|switch|interleave')
[ -z "$unknown" ] || { echo "error: $gate: unknown key \`$unknown\` (scenarios, baseline_endpoint, switch, interleave)" >&2; exit 2; }
scenarios=$(printf '%s\n' "$top" | sed -n 's/^scenarios *= *\[\(.*\)\]/\1/p' | tr -d '"' | tr ',' ' ')
[ -n "$scenarios" ] || { echo "error: $gate lists no scenarios" >&2; exit 2; }
baseline_endpoint=$(printf '%s\n' "$top" | sed -n 's/^baseline_endpoint *= *"\(.*\)" *$/\1/p')
switch=$(printf '%s\n' "$top" | sed -n "s/^switch *= *'\(.*\)' *\$/\1/p")
interleave=$(printf '%s\n' "$top" | sed -n 's/^interleave *= *\([a-z]*\) *$/\1/p')
if [ -n "$baseline_endpoint" ]; then mode=(--interleave --baseline-endpoint "$baseline_endpoint")
elif [ -n "$switch" ]; then mode=(--interleave --switch "$switch")
elif [ "$interleave" = false ]; then mode=()
else mode=(--interleave)
fi
read -r -a env_args <<<"${BENCH_COMPARE_ARGS:-}"
set -- "${env_args[@]}" "$@"
keep=1
for a in "$@"; do
  case $a in
    --endpoint|--endpoint=*|--interleave|--candidate|--candidate=*|--control|--control=*|--against|--against=*) mode=() ;;
    --plan) mode=(); keep=0 ;;
    --json|--json=*) keep=0 ;;
  esac
done
# Every compare's JSON is kept where the next `bench history` finds it (one file a compare,
# named by scenario and time): CI carries the folder from run to run.
compares=${BENCH_COMPARES:-results/compares}
md=$(mktemp -d)
trap 'rm -rf "$md"' EXIT
worst=0
for s in $scenarios; do
  name=$(basename "$s" .toml)
  echo "== gate: $s"
  extra=()
  if [ $keep -eq 1 ]; then
    extra=(--json "$compares/$name-$(date -u +%Y%m%dT%H%M%SZ).json" --markdown "$md/$name.md")
  fi
  "$BENCH" compare "$s" --gate "$gate" "${mode[@]}" "${extra[@]}" "$@"
  rc=$?
  if [ $rc -eq 2 ]; then worst=2; elif [ $rc -eq 1 ] && [ $worst -eq 0 ]; then worst=1; fi
done
if [ $keep -eq 1 ] && [ -d "$compares" ]; then
  echo "== history: $compares"
  "$BENCH" history "$compares" --markdown "$md/history.md"
  rc=$?
  # 1: a metric drifted or shifted the bad way over the compares; 2: nothing to read yet.
  if [ $rc -eq 1 ] && [ $worst -eq 0 ]; then worst=1; fi
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$md/history.md" ]; then
    cat "$md/history.md" >>"$GITHUB_STEP_SUMMARY"
  fi
fi
# One sticky pull-request comment: found by its first line, replaced each run.
if [ "${BENCH_COMMENT:-}" = true ] && [ "${GITHUB_EVENT_NAME:-}" = pull_request ] && ls "$md"/*.md >/dev/null 2>&1; then
  pr=$(jq -r .pull_request.number "$GITHUB_EVENT_PATH")
  body=$( { echo '<!-- bench gate -->'; cat "$md"/*.md; } | jq -Rs '{body: .}')
  id=$(gh api "repos/$GITHUB_REPOSITORY/issues/$pr/comments" --paginate \
    --jq '.[] | select(.body | startswith("<!-- bench gate -->")) | .id' | head -1)
  if [ -n "$id" ]; then
    gh api -X PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" --input - <<<"$body" >/dev/null
  else
    gh api -X POST "repos/$GITHUB_REPOSITORY/issues/$pr/comments" --input - <<<"$body" >/dev/null
  fi || echo "warning: could not write the pull-request comment (GH_TOKEN with pull-requests: write?)" >&2
fi
exit $worst
