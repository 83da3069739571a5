#!/usr/bin/env bash
# The ways bench is shipped, checked from the source tree:
#  * the wheel `pip wheel .` builds installs a working `bench` in a fresh virtual environment (the wheel is
#    pyproject.toml's maturin build, bindings = "bin"; distribution `llm-bench-gate`);
#  * ci/k8s/bench-shards.yaml validates against the Kubernetes schema (kubernetes-validate
#    --strict, from PyPI);
#  * the Dockerfile builds, where a Docker daemon answers (not on CI's machines: said so).
# A step whose tools cannot be installed here says it skipped and why; a step that runs and
# fails fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/ci-pip-venv
rm -rf "$venv"
if ! python3 -m venv "$venv" >/dev/null 2>&1; then
  echo "package check: SKIPPED pip install (python3 -m venv is not available here)"
  exit 0
fi
if ! "$venv/bin/pip" install --quiet --upgrade pip >/dev/null 2>&1; then
  echo "package check: SKIPPED pip install (PyPI cannot be reached to fetch pip/maturin)"
  exit 0
fi
start=$(date +%s)
# The wheel is kept in target/wheels: ci/init-e2e.sh installs it as a user's workflow does.
# It is built in the dev profile into this tree's target/, reusing what the tests compiled
# (≈ 30 s, where a fresh release build took ≈ 5 minutes of CI): the packaging is what this
# checks; the release wheels are ci/github/release.yml's.
rm -rf target/wheels
MATURIN_PEP517_ARGS="--profile dev" CARGO_TARGET_DIR="$PWD/target" \
  "$venv/bin/pip" wheel --quiet --no-deps -w target/wheels .
"$venv/bin/pip" install --quiet --no-index --find-links target/wheels llm-bench-gate
"$venv/bin/bench" --version
"$venv/bin/bench" validate scenarios/smoke.toml >/dev/null
echo "package check: the wheel gave a working bench ($(( $(date +%s) - start )) s)"
if "$venv/bin/pip" install --quiet kubernetes-validate >/dev/null 2>&1; then
  "$venv/bin/kubernetes-validate" --strict --quiet ci/k8s/bench-shards.yaml
  echo "package check: ci/k8s/bench-shards.yaml is a valid Kubernetes Job"
else
  echo "package check: SKIPPED the manifest check (kubernetes-validate could not be installed)"
fi
if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
  docker build --quiet -t bench:ci . >/dev/null
  docker run --rm bench:ci --version
  echo "package check: docker build . works"
else
  echo "package check: SKIPPED docker build (no Docker daemon answers here)"
fi
