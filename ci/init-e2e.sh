#!/usr/bin/env bash
# `bench init` end to end, as a user's repository and its CI run it. In a scratch git
# repository: `bench init`, then the workflow it wrote, run here step by step
# (ci/workflow-steps.py: the install step installs the pinned `llm-bench-gate==VERSION` —
# from the wheel this tree builds, through PIP_NO_INDEX/PIP_FIND_LINKS, since CI reaches no
# published one — and the gate step runs the ci/gate.sh init wrote). Each must pass an A/A
# (exit 0) and fail a regression (exit 1), and `bench history` must read the compares the
# runs kept:
#   * on the embedded simulator: the regression is a 30 % slower decode (--opt bw_eff=0.615);
#   * on llama-server (two of them: init's --baseline-endpoint is the reference, so the gate
#     interleaves, each on two threads): the regression is the candidate restarted on one
#     thread, which slows every latency and the throughput (here e2e.p50 +40–60 %, TTFT +20–45 %,
#     TPOT +37–60 %, output −31–38 %), so it fails on whichever rows init could gate: on a noisy
#     day the plan gated e2e.p50 alone, which a one-slot restart (the regression this walk used
#     before) barely moves. Its baseline is 5 runs of 16 requests.
# The A/As run at α = 0.001 (BENCH_COMPARE_ARGS, as a workflow's env would set it): a CI check
# must not fail by design in 5 % of runs. The llama-server part is skipped, saying why, where
# llama-server cannot be built.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source ci/engines/suite-lib.sh
wheels=$root/target/wheels
if ! ls "$wheels"/llm_bench_gate-*.whl >/dev/null 2>&1; then
  python3 -m pip wheel --quiet --no-deps -w "$wheels" . || { echo "init e2e: error: could not build the wheel" >&2; exit 2; }
fi
# Only bench comes from the wheel; the engines' scripts keep reaching the index.
local_wheel=(PIP_NO_INDEX=1 "PIP_FIND_LINKS=$wheels" PIP_DISABLE_PIP_VERSION_CHECK=1)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do bash "$root/ci/engines/llama-server.sh" stop "$p"; done; rm -rf "$work"; }
trap cleanup EXIT

# workflow REPO LOG [ENV…]: runs REPO's .github/workflows/bench-gate.yml as Actions would;
# prints its exit code.
workflow() {
  local repo=$1 log=$2; shift 2
  mkdir -p "$repo/.runner"
  : >"$repo/.runner/path"; : >"$repo/.runner/summary"
  python3 "$root/ci/workflow-steps.py" "$repo/.github/workflows/bench-gate.yml" >"$repo/.runner/job.sh" || { echo 2; return; }
  (cd "$repo" && env "${local_wheel[@]}" RUNNER_TEMP="$repo/.runner" GITHUB_PATH="$repo/.runner/path" \
    GITHUB_STEP_SUMMARY="$repo/.runner/summary" "$@" bash .runner/job.sh) >"$log" 2>&1
  echo $?
}

# gate_checks LABEL REPO INIT_RC A/A_RC REGRESSION_RC: what each engine's walk must show.
gate_checks() {
  local label=$1 repo=$2
  check "$label: bench init exits 0" "[ $3 -eq 0 ]"
  check "$label: it wrote the scenario, baseline, gate, script and workflow" "[ -f $repo/scenarios/gate.toml ] && [ -f $repo/baselines/gate/main.json ] && [ -f $repo/ci/gate.toml ] && [ -x $repo/ci/gate.sh ] && [ -f $repo/.github/workflows/bench-gate.yml ]"
  check "$label: the workflow's steps pass an A/A (exit 0)" "[ $4 -eq 0 ]"
  check "$label: the workflow installed the pinned bench" "[ -x $repo/.runner/bench/bin/bench ]"
  check "$label: the verdict and history reached the job summary" "grep -q 'bench compare gate' $repo/.runner/summary && grep -q 'bench history gate' $repo/.runner/summary"
  check "$label: the regression fails the gate (exit 1)" "[ $5 -eq 1 ]"
  check "$label: bench history reads the kept compares" "$repo/.runner/bench/bin/bench history $repo/results/compares | grep -q '2 compares'"
}

# The simulator.
repo=$work/sim; mkdir -p "$repo"; git -C "$repo" init -q
bench=$work/bench-venv
python3 -m venv "$bench" && env "${local_wheel[@]}" "$bench/bin/pip" install --quiet llm-bench-gate || exit 2
(cd "$repo" && "$bench/bin/bench" init --requests 20 --concurrency 4 --input-tokens 64 --output-tokens 32) >"$work/sim-init.txt" 2>&1
init_rc=$?; cat "$work/sim-init.txt"
aa=$(workflow "$repo" "$work/sim-aa.txt" BENCH_COMPARE_ARGS="--alpha 0.001"); cat "$work/sim-aa.txt"
(cd "$repo" && BENCH="$repo/.runner/bench/bin/bench" bash ci/gate.sh --opt bw_eff=0.615) >"$work/sim-reg.txt" 2>&1
reg=$?; grep -E '^(== |bench compare)' "$work/sim-reg.txt"
gate_checks simulator "$repo" $init_rc "$aa" $reg

# llama-server: the reference and the candidate, alike for the A/A.
if bash ci/engines/llama-server.sh build >/dev/null; then
  ref=$(free_port); cand=$(free_port)
  if pid=$(LLAMA_THREADS=2 bash ci/engines/llama-server.sh start "$ref") && pids+=("$pid") && pid=$(LLAMA_THREADS=2 bash ci/engines/llama-server.sh start "$cand") && pids+=("$pid"); then
    repo=$work/llama; mkdir -p "$repo"; git -C "$repo" init -q
    (cd "$repo" && "$bench/bin/bench" init --endpoint "http://127.0.0.1:$cand/v1" --baseline-endpoint "http://127.0.0.1:$ref/v1" \
      --requests 16 --concurrency 2 --input-tokens 48 --output-tokens 16 --repeat 5) >"$work/llama-init.txt" 2>&1
    init_rc=$?; cat "$work/llama-init.txt"
    aa=$(workflow "$repo" "$work/llama-aa.txt" BENCH_COMPARE_ARGS="--alpha 0.001"); cat "$work/llama-aa.txt"
    # Throttled: one thread where the reference has two.
    bash ci/engines/llama-server.sh stop "${pids[1]}"; unset 'pids[1]'
    if pid=$(LLAMA_THREADS=1 bash ci/engines/llama-server.sh start "$cand"); then
      pids+=("$pid")
      (cd "$repo" && BENCH="$repo/.runner/bench/bin/bench" bash ci/gate.sh) >"$work/llama-reg.txt" 2>&1
      reg=$?; grep -E '^(== |bench compare|  REGRESSED)' "$work/llama-reg.txt"
    else
      reg=2
    fi
    gate_checks llama-server "$repo" $init_rc "$aa" $reg
  else
    echo "init e2e: llama-server part skipped (llama-server did not start)"
  fi
else
  echo "init e2e: llama-server part skipped (llama-server could not be built here)"
fi
echo "init e2e: $passed passed, $failed failed"
[ $failed -eq 0 ]
