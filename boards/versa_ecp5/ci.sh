#!/usr/bin/env bash
# What the test command (scripts/test.sh, in the background) checks of the
# Versa ECP5 target: the full build to a bitstream (build.sh: LiteX/LiteEth
# SoC around lvsnic_core generated, Yosys, nextpnr-ecp5 place and route,
# ecppack), failing unless the design fits and every clock meets its
# constraint (both RGMII clocks at 125 MHz, the core clock at 60 MHz, the
# management stack at 40 MHz). Needs a native nextpnr-ecp5
# (boards/nextpnr-native.sh: Debian 13's, fetched as root; about 12 minutes
# of place and route, 17 in all): YoWASP's WebAssembly build takes 25-40
# minutes and would not fit in CI's 30, so it is not used here.
set -euo pipefail
cd "$(dirname "$0")/../.."
NEXTPNR=native ./boards/versa_ecp5/build.sh
bit=boards/build/versa_ecp5/gateware/lvsnic_versa.bit
[ -s "$bit" ] || { echo "lvsnic versa_ecp5 ci: no bitstream ($bit)" >&2; exit 1; }
