#!/usr/bin/env bash
# Runs every lvsnic test: unit, property, conformance and end-to-end tests
# of the whole workspace. Installs what it needs when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust
cargo test --workspace --release
