#!/usr/bin/env bash
# What the test command (scripts/test.sh, in the background) checks of the
# Versa ECP5 target, within CI's time:
#   1. the whole design (LiteX/LiteEth SoC around lvsnic_core) generated,
#      synthesised by Yosys and packed by nextpnr-ecp5: the exact cell
#      counts of the full build, failing if they exceed the device
#      (PACK_ONLY=1 build.sh, ~5 min);
#   2. the same SoC with lvsnic_core replaced by a stub with its ports,
#      placed and routed, failing unless every clock meets its constraint:
#      both RGMII clocks at 125 MHz, the management stack, the core clock's
#      glue and Etherbone (CORE_STUB=1 build.sh, ~5 min).
# The full build to a bitstream (build.sh: the core placed and routed too,
# 25-40 min of one core in WebAssembly nextpnr) does not fit next to the
# rest of the test command in CI's 30 minutes on 2 cores; run it by hand.
set -euo pipefail
cd "$(dirname "$0")/../.."
PACK_ONLY=1 ./boards/versa_ecp5/build.sh
CORE_STUB=1 ./boards/versa_ecp5/build.sh
