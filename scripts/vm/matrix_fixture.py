#!/usr/bin/env python3
"""Cuts one scenario of a conformance-matrix run out as a kernel fixture
(tests/fixtures/kernel/NAME, replayed by host-driver/tests/kernel_fixtures.rs
without a VM).

    matrix_fixture.py GROUPDIR SCENARIO OUTDIR

GROUPDIR is a group directory of a finished `scripts/vm/matrix.sh` run
(kernel-sent.pcap, kernel-out.pcap, rules.txt, director.toml,
scenarios.txt, start_ns.txt, changes.log). OUTDIR gets:

    in.pcap          the frames of the scenario as they reached the kernel (VM times)
    kernel-out.pcap  what the kernel sent for the scenario
    rules.txt        the scenario's lines of the group's rules
    director.toml    the group's
    changes.txt      the scenario's changes at the times the kernel applied
                     them (when ipvsadm returned), in seconds after in.pcap's
                     first frame

A frame belongs to the scenario when one of its addresses (outer, IPIP or
ip6ip6 inner, ICMP- or ICMPv6-quoted, ARP) is one the scenario owns (scenarios.txt),
as `lvsnic conformance --scenarios` splits. Python 3 standard library only.
"""
import ipaddress
import os
import shutil
import struct
import sys

from pcapio import read_pcap, write_pcap


def ipv4_addrs(b, o, depth=0):
    if len(b) < o + 20 or b[o] >> 4 != 4:
        return []
    out = [b[o + 12:o + 16], b[o + 16:o + 20]]
    ihl = (b[o] & 15) * 4
    frag = struct.unpack("!H", b[o + 6:o + 8])[0] & 0x1FFF
    l4 = o + ihl
    if depth < 2 and not frag:
        if b[o + 9] == 4:
            out += ipv4_addrs(b, l4, depth + 1)
        elif b[o + 9] == 1 and len(b) > l4 and b[l4] in (3, 4, 5, 11, 12):
            out += ipv4_addrs(b, l4 + 8, depth + 1)
    return out


def ipv6_addrs(b, o, depth=0):
    """The addresses of the IPv6 header at o, of a tunnelled header inside
    (41: IPv6, 4: IPv4) and of the header an ICMPv6 error quotes (the
    first Next Header only: extension headers are not walked)."""
    if len(b) < o + 40 or b[o] >> 4 != 6:
        return []
    out = [b[o + 8:o + 24], b[o + 24:o + 40]]
    nxt, l4 = b[o + 6], o + 40
    if depth < 2:
        if nxt == 41:
            out += ipv6_addrs(b, l4, depth + 1)
        elif nxt == 4:
            out += ipv4_addrs(b, l4, depth + 1)
        elif nxt == 58 and len(b) > l4 and b[l4] < 128:
            out += ipv6_addrs(b, l4 + 8, depth + 1)
    return out


def addrs(frame):
    o, et = 14, frame[12:14]
    if et == b"\x81\x00" and len(frame) >= 18:
        o, et = 18, frame[16:18]
    if et == b"\x08\x06" and len(frame) >= o + 28:
        return [frame[o + 14:o + 18], frame[o + 24:o + 28]]
    if et == b"\x08\x00":
        return ipv4_addrs(frame, o)
    if et == b"\x86\xdd":
        return ipv6_addrs(frame, o)
    return []


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: matrix_fixture.py GROUPDIR SCENARIO OUTDIR")
    g, name, out = sys.argv[1:]
    owned = None
    with open(os.path.join(g, "scenarios.txt")) as f:
        for line in f:
            w = line.split()
            if w and w[0] == name:
                owned = {ipaddress.ip_address(a).packed for a in w[1:]}
    if owned is None:
        sys.exit("matrix_fixture.py: no scenario %s in %s/scenarios.txt" % (name, g))
    mine = lambda r: any(a in owned for a in addrs(r[1]))
    sent = [r for r in read_pcap(os.path.join(g, "kernel-sent.pcap")) if mine(r)]
    kout = [r for r in read_pcap(os.path.join(g, "kernel-out.pcap")) if mine(r)]
    if not sent:
        sys.exit("matrix_fixture.py: no frame of %s in %s/kernel-sent.pcap" % (name, g))
    os.makedirs(out, exist_ok=True)
    write_pcap(os.path.join(out, "in.pcap"), sent)
    write_pcap(os.path.join(out, "kernel-out.pcap"), kout)
    shutil.copy(os.path.join(g, "director.toml"), os.path.join(out, "director.toml"))
    # Addresses as the rules write them: a.b.c.d:port, [IPv6]:port.
    vips = {str(ipaddress.ip_address(a)) if len(a) == 4 else "[%s]" % ipaddress.ip_address(a) for a in owned}
    with open(os.path.join(g, "rules.txt")) as f:
        rules = [l for l in f if any(" %s:" % v in l for v in vips) and l.startswith(("-A", "-a"))]
    with open(os.path.join(out, "rules.txt"), "w") as f:
        f.writelines(rules)
    start = int(open(os.path.join(g, "start_ns.txt")).read())
    first = sent[0][0]
    lines = []
    if os.path.exists(os.path.join(g, "changes.log")):
        for l in open(os.path.join(g, "changes.log")):
            w = l.split()
            if len(w) > 4 and w[2] == "ok" and w[3] == "ipvsadm" and any(" %s:" % v in l for v in vips):
                at = start + int(w[1]) - first
                lines.append("%.9f %s\n" % (max(at, 0) / 1e9, " ".join(w[4:])))
    if lines:
        with open(os.path.join(out, "changes.txt"), "w") as f:
            f.writelines(lines)
    print("%s: %d frames in, %d out, %d changes" % (name, len(sent), len(kout), len(lines)))


if __name__ == "__main__":
    main()
