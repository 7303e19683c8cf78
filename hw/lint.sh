#!/usr/bin/env bash
# Verilator -Wall lint of lvsnic_core (hw/rtl/lvsnic_core.f) at several
# parameter sets: DATA_WIDTH 64/128/256/512, small/large tables, and
# lvsnic_dma (the card's DMA engine) at 64/128/256/512 bits. Waivers are
# in hw/rtl/lvsnic.vlt only. Uses the project's Verilator (scripts/setup-hw.sh).
# Exit status non-zero on any warning.
set -euo pipefail
cd "$(dirname "$0")/.."
VBIN=${VERILATOR:-}
if [ -z "$VBIN" ]; then
    if [ -x .venv/bin/verilator ]; then VBIN=.venv/bin/verilator; else VBIN=$(./scripts/setup-hw.sh)/verilator; fi
fi
run() {
    echo "lint: lvsnic_core $*"
    # lvsnic_core.f lists the waiver file hw/rtl/lvsnic.vlt first
    "$VBIN" --lint-only -Wall --top-module lvsnic_core -f hw/rtl/lvsnic_core.f "$@"
}
run -GDATA_WIDTH=64
run -GDATA_WIDTH=64 -GIPV6=0
run -GDATA_WIDTH=512
run -GDATA_WIDTH=128 -GFLOW_BUCKETS_LOG2=4 -GACTION_LOG2=16 -GVIP_COUNT=1 -GAXIL_ADDR_WIDTH=12
run -GDATA_WIDTH=256 -GFLOW_BUCKETS_LOG2=16 -GACTION_LOG2=4 -GVIP_COUNT=32
# every module on its own as well (catches per-module issues hidden by
# constant propagation at the top)
for m in lvsnic_toeplitz lvsnic_ip_csum lvsnic_l4_csum; do
    echo "lint: $m"
    "$VBIN" --lint-only -Wall --top-module "$m" hw/rtl/lvsnic.vlt "hw/rtl/$m.sv"
done
# the card's DMA engine (not part of lvsnic_core; the board top instantiates it)
for p in "-GDATA_WIDTH=64" "-GDATA_WIDTH=128 -GMAX_FRAME=1514" "-GDATA_WIDTH=256 -GMAX_FRAME=9000" "-GDATA_WIDTH=512"; do
    echo "lint: lvsnic_dma $p"
    # shellcheck disable=SC2086
    "$VBIN" --lint-only -Wall --top-module lvsnic_dma hw/rtl/lvsnic.vlt hw/rtl/lvsnic_sdp_ram.sv hw/rtl/lvsnic_dma.sv $p
done
echo "lint: clean"
