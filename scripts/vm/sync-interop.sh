#!/usr/bin/env bash
# Live IPVS connection-sync interop with the real kernel, both ways, in one
# VM boot (scripts/vm/sync-inner.sh inside, scripts/vm/sync_compare.py
# after):
#   kernel master -> lvsnic backup: the backup's `-L -n -c` lists the
#     connections the kernel master has (state, addresses; expiry within 5 s),
#     IPv4 and IPv6 (struct ip_vs_sync_v6 entries both ways);
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
# lc with persistence) and generated closed-loop traffic over them, then
# IPv6 services and sessions.
cp tests/fixtures/kernel-sync/lvsnic-master/rules tests/fixtures/kernel-sync/lvsnic-master/director.toml "$OUT/l2k/"
"$B" traffic --rules "$OUT/l2k/rules" --director "$OUT/l2k/director.toml" --seed 5 --connections 40 --duration 3 \
    --udp 0.3 --other 0 --malformed 0 --idle-gap 1 --output "$OUT/l2k/in.pcap" >/dev/null
# IPv6 (struct ip_vs_sync_v6 entries): NAT and DR with a /64 persistence,
# appended to the rules (after the traffic was generated: `lvsnic
# traffic` makes IPv4 sessions only) and to the capture (4 clients on the
# NAT service, 2 on the persistent one, SYN, ACK, ACK each, after its end).
cat >>"$OUT/l2k/rules" <<'RULES'
-A -t [2001:db8::10]:80 -s rr
-a -t [2001:db8::10]:80 -r [2001:db8:1::1]:8080 -m -w 1
-a -t [2001:db8::10]:80 -r [2001:db8:1::2]:8080 -m -w 1
-A -t [2001:db8::20]:443 -s rr -p 300 -M 64
-a -t [2001:db8::20]:443 -r [2001:db8:1::1]:443 -g -w 1
-a -t [2001:db8::20]:443 -r [2001:db8:1::2]:443 -g -w 1
RULES
python3 - "$OUT/l2k/in.pcap" <<'PY'
import ipaddress, struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
assert data[:4] == bytes.fromhex("4d3cb2a1"), "a little-endian nanosecond pcap"
# The last record's time.
off, last = 24, 0
while off + 16 <= len(data):
    sec, nsec, incl, _ = struct.unpack("<IIII", data[off:off + 16])
    last = sec * 10**9 + nsec
    off += 16 + incl
def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF
def tcp6(src, dst, sport, dport, flags, seq, ack):
    s, d = ipaddress.IPv6Address(src).packed, ipaddress.IPv6Address(dst).packed
    seg = struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 29200, 0, 0)
    c = csum(s + d + struct.pack("!IxxxB", len(seg), 6) + seg)
    seg = seg[:16] + struct.pack("!H", c) + seg[18:]
    ip6 = struct.pack("!IHBB", 6 << 28, len(seg), 6, 64) + s + d
    return bytes.fromhex("020000000001" "0200000000fe" "86dd") + ip6 + seg
SYN, ACK = 0x02, 0x10
t = last + 10**6
with open(path, "ab") as f:
    for n, (vip, port) in enumerate([("2001:db8::10", 80)] * 4 + [("2001:db8::20", 443)] * 2, 1):
        client = f"2001:db8:cafe:{n}::7"
        for i, fl in enumerate([SYN, ACK, ACK]):
            fr = tcp6(client, vip, 41000 + n, port, fl, 100 + (i > 0), 1 if i else 0)
            f.write(struct.pack("<IIII", t // 10**9, t % 10**9, len(fr), len(fr)) + fr)
            t += 10**6
PY
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
