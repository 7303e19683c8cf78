#!/usr/bin/env bash
# Runs every lvsnic test: unit, property, conformance and end-to-end tests of
# the whole workspace (including the RTL-vs-model differential runs and the
# replay tests on the verilated core), the register-map freshness check,
# the Verilator -Wall lint of the RTL, the cocotb testbenches, the live
# connection-sync interop with the real kernel in a VM (as root), the VFIO
# layer against the kernel's real VFIO with QEMU's edu device behind an
# emulated IOMMU in a VM (scripts/vm/vfio.sh, as root), the build of
# the director without Verilator (scripts/check-no-sim.sh) and the host
# driver's module graph (no import cycles), the boards (the Alveo U250
# sources linted and its DMA engine mapped by Yosys; the simulated Versa
# board, as root; the Versa ECP5 bitstream built with timing checked, in
# the background, as root or with a native nextpnr-ecp5), and the
# conformance matrix
# against real Linux IPVS in a VM (scripts/vm/matrix.sh). Tests that need root run when
# this runs as root; otherwise they are listed at the end as not run.
# Installs what it needs when
# missing (Rust must come from rustup; Verilator, cocotb and the SystemRDL
# compiler go into .venv/ via scripts/setup-hw.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
# step NAME: a heading with the time since the start, so a CI log shows
# where the minutes go
step() { printf '\n== test.sh %02d:%02d %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }
step "set-up"
ensure_rust
VENV_BIN=$(./scripts/setup-hw.sh)
export PATH="$VENV_BIN:$PATH"
python scripts/gen-regmap.py --check
not_run=""
mkdir -p target
# bg_pid: the cocotb benches when they run in the background (below);
# ecp5_pid: the Versa ECP5 bitstream build (next)
bg_pid=""
ecp5_pid=""
trap 'for p in $bg_pid $ecp5_pid; do kill -- -"$p" 2>/dev/null; kill -CONT -- -"$p" 2>/dev/null || true; done' EXIT
# The Versa ECP5 board built to a bitstream, timing checked
# (boards/versa_ecp5/ci.sh; about 34 minutes of one core with a native
# nextpnr-ecp5): it is the longest single job, so it starts first and runs
# in the background beside everything else, ahead of it in priority, and is
# waited for at the end. Its tools are installed here in the foreground
# (LiteX, YoWASP Yosys; nextpnr-ecp5 from Debian 13, which needs root
# unless one is on PATH) so that no two installs overlap.
step "Versa ECP5 bitstream (in the background; log target/test-ecp5.log)"
./boards/setup.sh >/dev/null
if ./boards/nextpnr-native.sh >/dev/null; then
    # Ahead of the rest (nice -5 as root): it is single-threaded and the
    # end waits for it, so it gets one core to itself while everything
    # else shares the other (at equal priority the whole command took 52
    # minutes in CI on 5 December, the build alone about 34).
    if [ "$(id -u)" = 0 ]; then prio="nice -n -5"; else prio=""; fi
    setsid $prio ./boards/versa_ecp5/ci.sh > target/test-ecp5.log 2>&1 < /dev/null &
    ecp5_pid=$!
else
    not_run="boards/versa_ecp5/ci.sh (the ECP5 bitstream: needs a native nextpnr-ecp5, which boards/nextpnr-native.sh fetches as root)"
fi
step "Verilator lint"
./hw/lint.sh
# The production build: no verilated core, no Verilator needed.
step "build without Verilator"
./scripts/check-no-sim.sh
step "cargo test"
cargo test --workspace --release
# Tests that need root (TAP devices, network namespaces; the HA test also
# keepalived and the metrics test prometheus, installed here; e2e_board the simulated board, which
# boards/sim/run.sh installs (apt, pip) and builds: about 2 minutes the first
# time, cached in boards/build/sim, then about 5 s) are #[ignore]d in a
# plain `cargo test`: run them when this runs as root, and say which did not
# run otherwise.
if [ "$(id -u)" = 0 ] && [ -c /dev/net/tun ] && command -v ip >/dev/null; then
    ensure_keepalived
    ensure_packaging_tools
    ensure_prometheus
    # The ECP5 build keeps running beside them: the HA pair's drills hold
    # under full load (docs/ha.md, "A handshake across the takeover").
    step "cargo test (root tests: HA pair, namespaces, simulated board, the Debian package, Prometheus)"
    # (the vfio_edu tests need QEMU's edu device: scripts/vm/vfio.sh runs
    # them in a VM, below)
    cargo test --workspace --release --tests -- --ignored --skip vfio_edu_
    # IPVS connection sync against the real Linux 6.1 kernel in a VM, both
    # ways, live (installs the VM's packages on first use; ~1-2 min).
    # The simulated board's own smoke test (Etherbone registers, exception,
    # inject and forwarding paths over the taps; ~5 s, the model was built
    # by e2e_board above).
    step "simulated board smoke test"
    python -m pytest -q -p no:cacheprovider boards/sim/test_lvsnic_sim.py
    # The cocotb benches (about 12 minutes of CPU) run in the background
    # from here, beside the two VM runs (QEMU uses one core and leaves the
    # other idle), and are waited for before the end.
    step "cocotb testbenches (in the background; log target/test-cocotb.log)"
    setsid nice -n 5 python -m pytest -q -p no:cacheprovider hw/tb > target/test-cocotb.log 2>&1 < /dev/null &
    bg_pid=$!
    step "connection sync interop with the kernel (VM)"
    ./scripts/vm/sync-interop.sh
    # The VFIO layer on the kernel's real VFIO (one TCG boot, ~30 s): group,
    # container, IOMMU mapping, BAR mapping, reset, DMA, MSI on QEMU's edu
    # device (host-driver/tests/vfio_edu.rs, built by cargo test above).
    step "VFIO with QEMU's edu device behind an emulated IOMMU (VM)"
    ./scripts/vm/vfio.sh
else
    not_run="${not_run:+$not_run
}$(cargo test --workspace --release --tests -q -- --list --ignored 2>/dev/null | sed -n 's/: test$//p' | { grep -v '^vfio_edu_' || true; })
scripts/vm/sync-interop.sh (kernel VM; apt-get needs root)
scripts/vm/vfio.sh (VFIO with QEMU's edu device in a kernel VM: the vfio_edu tests; apt-get needs root)
boards/sim/test_lvsnic_sim.py (TAP devices)"
fi
if [ -z "$bg_pid" ]; then
    step "cocotb testbenches"
    python -m pytest -q -p no:cacheprovider hw/tb
fi
step "Alveo U250 target; the ECP5 build's timing gate"
# Alveo U250 target: generated sources linted against the vendor stubs,
# board glue (~1 min); boards/report.py, which fails the ECP5 build on a
# missed clock or a design that does not fit (seconds)
python -m pytest -q -p no:cacheprovider boards/alveo_u250 boards/test_report.py
python3 scripts/modgraph.py host-driver/src --check >/dev/null || { python3 scripts/modgraph.py host-driver/src; exit 1; }
# The conformance matrix against real Linux 6.1 IPVS (docs/conformance.md):
# 156 scenarios (IPv4, IPv6, mixed-family tunnels, IPv6 fragments) in one VM boot under
# QEMU TCG, about 9 minutes (540 s of VM on 7 December, g6-frag6 adds ~22 s; the VM gets
# 1200 s, then fails with "lvsnic: the VM timed out ..."); installs its
# packages itself (scripts/vm/setup.sh). Needs root (apt-get, the VM's
# private mount namespace).
if [ "$(id -u)" = 0 ]; then
    step "conformance matrix (VM)"
    LVSNIC_MATRIX_TIMEOUT=1200 ./scripts/vm/matrix.sh
else
    not_run="${not_run:+$not_run
}conformance matrix against Linux IPVS in a VM (scripts/vm/matrix.sh)"
fi
# wait_background VAR WHAT LOG LINES: waits for the background job whose
# process group is in variable VAR (if one was started), clears VAR (so the
# EXIT trap leaves it alone), shows the last LINES of LOG, fails on failure
wait_background() {
    local pid=${!1} rc=0
    [ -n "$pid" ] || return 0
    step "waiting for $2"
    wait "$pid" || rc=$?
    printf -v "$1" '%s' ""
    tail -n "$4" "$3"
    [ "$rc" = 0 ] || { echo "lvsnic: $2 failed (exit $rc; log: $3)" >&2; exit 1; }
}
wait_background bg_pid "the cocotb testbenches" target/test-cocotb.log 30
wait_background ecp5_pid "the Versa ECP5 bitstream build (fit and timing)" target/test-ecp5.log 25
step "done"
if [ -n "$not_run" ]; then
    echo "NOT RUN (the rest passed; the root tests and VM runs need root, /dev/net/tun and iproute2):"
    echo "$not_run" | sed 's/^/    /'
fi
