#!/usr/bin/env bash
# Runs the lvsnic director (golden model) on the built-in example:
# examples/rules.txt (ipvsadm -S format), examples/director.toml and
# examples/traffic.pcap (generated here if missing, seed 1). Prints the
# one-line summary and the per-service listing; writes out/example-*.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_rust
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
