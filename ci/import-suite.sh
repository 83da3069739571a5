#!/usr/bin/env bash
# Other tools' results judged by the gate: `vllm bench serve --save-result --save-detailed`
# (the vLLM suite's install, ci/engines/vllm.sh) and GuideLLM's JSON report (guidellm==0.8.1
# from PyPI, in a venv layered on vLLM's cached one, which already holds its torch and
# transformers: ≈ 20 s and 340 MB, cached under ~/.cache/bench), each against two embedded
# simulators — one as it is, one with a 30 % slower decode (--opt bw_eff=0.615) — three runs
# an arm, interleaved. `bench import` makes each file a run; `bench compare` must pass the A/A
# (two arms on the same server, at α = 0.001: a CI check must not fail by design) and fail the
# slower server naming TPOT. GuideLLM's servers answer 300 ms late (header_delay_ms): on two
# cores its client sends ≈ 16 ms late, which against the simulator's ≈ 20 ms TTFT makes its
# runs client-bound (bench refuses those, naming its client). Skipped, saying why, where vLLM
# cannot be had here; GuideLLM's part where it cannot be installed.
set -uo pipefail
cd "$(dirname "$0")/.."
BENCH=${BENCH:-target/release/bench}
[ -x "$BENCH" ] || cargo build --release --locked --quiet || exit 2
if ! py=$(bash ci/engines/vllm.sh build) || ! model=$(bash ci/engines/vllm.sh model); then
  echo "import suite: skipped (vLLM could not be installed here; see the message above)"
  exit 0
fi
source ci/engines/suite-lib.sh
vllm=$(dirname "$py")/vllm
work=$(mktemp -d)
sims=()
trap 'for p in "${sims[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
# serve VAR [ARGS]: starts a simulator (in this shell, so that the trap stops it), its port in VAR.
serve() {
  local var=$1 port; shift; port=$(free_port)
  "$BENCH" sim --listen "127.0.0.1:$port" "$@" >"$work/sim-$port.log" 2>&1 &
  sims+=($!)
  for _ in $(seq 1 50); do curl -fsS "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break; sleep 0.2; done
  printf -v "$var" '%s' "$port"
}
serve fast; serve slow --opt bw_eff=0.615
# vllm bench serve PORT NAME: one benchmark, saved with every request's timings.
vbench() {
  timeout 600 "$vllm" bench serve --backend openai-chat --base-url "http://127.0.0.1:$1" \
    --endpoint /v1/chat/completions --model bench-sim --tokenizer "$model" \
    --dataset-name random --random-input-len 64 --random-output-len 32 --num-prompts 20 \
    --max-concurrency 4 --ignore-eos --seed 1 --save-result --save-detailed \
    --result-dir "$work/vllm" --result-filename "$2.json" >"$work/$2.txt" 2>&1 \
    || { echo "vllm bench serve failed:"; tail -5 "$work/$2.txt"; }
}
start=$(date +%s)
for i in 1 2 3; do vbench "$fast" "base$i"; vbench "$fast" "same$i"; vbench "$slow" "slow$i"; done
echo "import suite: 9 vllm bench serve runs in $(( $(date +%s) - start )) s"
for arm in base same slow; do
  "$BENCH" import "$work/vllm/${arm}1.json" "$work/vllm/${arm}2.json" "$work/vllm/${arm}3.json" \
    --out "$work/$arm" --name vllm-import --var "server=$arm" >"$work/import-$arm.txt" 2>&1
  check "import: the $arm arm's three files read" "[ $? -eq 0 ]"
done
cat "$work/import-base.txt"
check "import: vLLM's TTFT definition named" "grep -q 'role-only chunk' '$work/import-base.txt'"
"$BENCH" compare "$work/base/scenario.toml" --against "$work/base" --candidate "$work/same" --alpha 0.001 --explain >"$work/aa.txt" 2>&1
rc=$?; cat "$work/aa.txt"
check "import: the A/A passes" "[ $rc -eq 0 ]"
check "import: the compare names the import" "grep -q 'imported from vllm bench serve (baseline 3 of 3 runs, candidate 3 of 3)' '$work/aa.txt'"
"$BENCH" compare "$work/base/scenario.toml" --against "$work/base" --candidate "$work/slow" --explain >"$work/slow.txt" 2>&1
rc=$?; cat "$work/slow.txt"
check "import: the slower server fails (exit 1)" "[ $rc -eq 1 ]"
check "import: TPOT named regressed" "grep -q '^  REGRESSED tpot.p50' '$work/slow.txt'"

# GuideLLM, in a venv that sees vLLM's packages (a .pth file), so that only its own are added.
gdir=${BENCH_CACHE:-$HOME/.cache/bench}/guidellm-0.8.1
if ! [ -x "$gdir/bin/guidellm" ]; then
  rm -rf "$gdir"
  "$py" -m venv "$gdir" && "$py" -c 'import site; print(site.getsitepackages()[0])' >"$gdir/lib/python3.11/site-packages/vllm-venv.pth" \
    && timeout 600 "$gdir/bin/pip" install --quiet guidellm==0.8.1 >"$work/guidellm-install.txt" 2>&1 \
    || { tail -3 "$work/guidellm-install.txt"; rm -rf "$gdir"; }
fi
if [ -x "$gdir/bin/guidellm" ]; then
  serve gfast --opt header_delay_ms=300; serve gslow --opt header_delay_ms=300 --opt bw_eff=0.615
  gbench() {
    timeout 600 "$gdir/bin/guidellm" run --backend "kind=openai_http,target=http://127.0.0.1:$1,model=bench-sim" \
      --profile kind=concurrent,streams=4 --constraint kind=max_requests,count=20 \
      --data kind=synthetic_text,prompt_tokens=64,output_tokens=32 --tokenizer "kind=hf_auto,model=$model" \
      --output "kind=json,path=$work/guidellm/$2.json" --disable-console >"$work/$2.txt" 2>&1 \
      || { echo "guidellm run failed:"; tail -5 "$work/$2.txt"; }
  }
  start=$(date +%s)
  for i in 1 2 3; do gbench "$gfast" "base$i"; gbench "$gfast" "same$i"; gbench "$gslow" "slow$i"; done
  echo "import suite: 9 guidellm runs in $(( $(date +%s) - start )) s"
  for arm in base same slow; do
    "$BENCH" import "$work/guidellm/${arm}1.json" "$work/guidellm/${arm}2.json" "$work/guidellm/${arm}3.json" \
      --out "$work/g-$arm" --name guidellm-import --var "server=$arm" >"$work/gimport-$arm.txt" 2>&1
    check "guidellm import: the $arm arm's three files read" "[ $? -eq 0 ]"
  done
  cat "$work/gimport-base.txt"
  "$BENCH" compare "$work/g-base/scenario.toml" --against "$work/g-base" --candidate "$work/g-same" --alpha 0.001 --explain >"$work/gaa.txt" 2>&1
  rc=$?; cat "$work/gaa.txt"
  check "guidellm import: the A/A passes" "[ $rc -eq 0 ]"
  "$BENCH" compare "$work/g-base/scenario.toml" --against "$work/g-base" --candidate "$work/g-slow" --explain >"$work/gslow.txt" 2>&1
  rc=$?; cat "$work/gslow.txt"
  check "guidellm import: the slower server fails (exit 1)" "[ $rc -eq 1 ]"
  check "guidellm import: TPOT named regressed" "grep -q '^  REGRESSED tpot.p50' '$work/gslow.txt'"
else
  echo "import suite: GuideLLM part skipped (guidellm==0.8.1 could not be installed here)"
fi
echo "import suite: $passed passed, $failed failed"
[ $failed -eq 0 ]
