#!/usr/bin/env bash
# Builds the lvsnic bitstream for the AMD Alveo U250 where Vivado is
# installed: generates the sources (boards/alveo_u250/generate.py) and runs
# the generated Vivado batch script (IP, synthesis, place and route, timing
# check, bitstream). Output in boards/build/alveo_u250/.
#
# Usage: boards/alveo_u250/build.sh [generate.py options]
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=$ROOT/boards/build/alveo_u250
command -v vivado >/dev/null || { echo "lvsnic alveo_u250: vivado is not on PATH (source Vivado's settings64.sh)" >&2; exit 1; }
python3 boards/alveo_u250/generate.py --out "$OUT" "$@"
cd "$OUT"
vivado -mode batch -nojournal -log vivado.log -source build.tcl -tclargs "$ROOT"
