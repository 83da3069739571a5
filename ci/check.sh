#!/usr/bin/env bash
# Format, lint and test: what CI checks, runnable locally.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all -- --check
cargo clippy --all-targets --locked -- -D warnings
cargo test --locked
