#!/usr/bin/env bash
# Live IPVS connection-sync interop with the real kernel, both ways, in one
# VM boot (scripts/vm/sync-inner.sh inside, scripts/vm/sync_compare.py
# after):
#   kernel master -> lvsnic backup: the backup's `-L -n -c` lists the
#     connections the kernel master has (state, addresses; expiry within 5 s);
#   lvsnic master -> kernel backup: the kernel backup's `ipvsadm -L -n -c`
#     equals an lvsnic backup's given the same messages, and every entry is
#     one of the master's connections.
#
#   scripts/vm/sync-interop.sh [OUTDIR]
#
# OUTDIR defaults to target/sync-interop, or /var/tmp/lvsnic-UID/ for a
# checkout under /tmp (the VM's /tmp is its own). Exit status 1 on any difference; the VM's own failures are one
# line each (scripts/vm/run.sh). LVSNIC_BIN: an lvsnic binary to use
# instead of building one.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
. "$ROOT/scripts/lib.sh"
# The binary and the inner script are copied next to the results, which
# the guest sees wherever the checkout is.
OUT=${1:-$(vm_out_dir sync-interop)}
rm -rf "$OUT"
mkdir -p "$OUT/l2k" "$OUT/bin"
OUT=$(cd "$OUT" && pwd)
cp "$(lvsnic_bin)" "$OUT/bin/lvsnic"
cp "$ROOT/scripts/vm/sync-inner.sh" "$OUT/bin/"
B=$OUT/bin/lvsnic
# lvsnic master's side: the MIXED rules (NAT, DR with persistence, UDP, TUN,
# lc with persistence) and generated closed-loop traffic over them.
cp tests/fixtures/kernel-sync/lvsnic-master/rules tests/fixtures/kernel-sync/lvsnic-master/director.toml "$OUT/l2k/"
"$B" traffic --rules "$OUT/l2k/rules" --director "$OUT/l2k/director.toml" --seed 5 --connections 40 --duration 3 \
    --udp 0.3 --other 0 --malformed 0 --idle-gap 1 --output "$OUT/l2k/in.pcap" >/dev/null
set +e
"$ROOT/scripts/vm/run.sh" --timeout "${LVSNIC_VM_TIMEOUT:-900}" "$OUT" "$OUT/bin/sync-inner.sh" "$OUT" "$B"
rc=$?
set -e
status=$(cat "$OUT/status" 2>/dev/null || echo "error: the VM script did not finish (log: $OUT/log.txt)")
if [ "$rc" != 0 ] || [ "$status" != ok ]; then
    echo "sync-interop: $status" >&2
    exit 1
fi
python3 "$ROOT/scripts/vm/sync_compare.py" "$OUT"
