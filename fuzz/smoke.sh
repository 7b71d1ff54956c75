#!/usr/bin/env bash
# CI's short pass over every fuzz target: installs cargo-fuzz if needed, 20 s a target.
set -euo pipefail
cd "$(dirname "$0")"
if ! command -v cargo-fuzz > /dev/null; then
  cargo install cargo-fuzz --locked --quiet
fi
exec ./run.sh "${FUZZ_SMOKE_SECONDS:-20}"
