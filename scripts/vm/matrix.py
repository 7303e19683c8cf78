#!/usr/bin/env python3
"""Writes the conformance matrix's inputs: many scenarios replayed AT ONCE.

    matrix.py LVSNIC OUTDIR [--only NAME-PATTERN...]
    matrix.py --report OUTDIR     (after the run: OUTDIR/matrix.md, one table row a scenario)

Every scenario is one virtual service with its own VIP (10.1.K.1) and its
own real servers (10.2.K.1-4, MAC 02:00:0a:02:KK:NN), so no two scenarios
share an address or a 5-tuple; an IPv6 scenario (group g4-ipv6, names
v6-*) has VIP 2001:db8:1:K::1 and real servers 2001:db8:2:K::1-4 (same
MACs), its group's DIRECTOR.toml an `ip6` (which makes director.sh turn
IPv6 on in the VM for that replay only). Its traffic is generated on its own
(`lvsnic traffic`, seed K, rules of that service only); the scenarios that
need the same global state (timeouts, sysctls) form a group, whose captures
are merged by timestamp into one capture (all start at the generator's
default start), with one rules file, one DIRECTOR.toml (every group's real
server as a neighbour) and one changes file. Each group is one directory
OUTDIR/GROUP with:

    rules.txt      every service of the group (ipvsadm -R input, no comments)
    director.toml  the group's [timeouts] and [sysctl]
    changes.in     the merged `SECONDS ipvsadm-args` lines (may be empty)
    input.pcap     the merged capture
    scenarios.txt  `NAME ADDRESS...` for `lvsnic conformance --scenarios`
    about.txt      `NAME what it exercises`

OUTDIR/gen/NAME holds each scenario's own rules and capture. Python 3
standard library only.
"""
import fnmatch
import os
import subprocess
import sys

from pcapio import read_pcap, write_pcap

SCHEDULERS = "rr wrr lc wlc lblc lblcr dh sh sed nq fo ovf mh".split()
FWD = {"m": "nat", "g": "dr", "i": "tun"}

DIRECTOR = """[director]
ip = "10.0.0.1"
{ip6}mac = "02:00:00:00:00:01"
mtu = 1500
gateway_mac = "02:00:00:00:00:fe"

[timeouts]
tcp = {tcp}
tcpfin = {tcpfin}
udp = {udp}

[sysctl]
{sysctl}
[neighbors]
{neighbors}"""

# The example director's real servers, for the ip-options scenario (its
# frames are written for examples/rules.txt).
EXAMPLE_NEIGHBORS = [("192.168.10.%d" % n, "02:00:00:00:10:%02x" % n) for n in range(1, 8)] + [
    ("192.168.20.%d" % n, "02:00:00:00:20:%02x" % n) for n in (1, 2)
]


class Scenario:
    def __init__(self, name, group, proto, sched, fwd, about, sflags="", weights=(1, 2, 3), rflags="",
                 conns=12, clients=6, duration=4.0, other=0.0, idle_gap=1.0, changes=(), script=None, port_reuse=None,
                 v6=False, rs6=None):
        self.name, self.group, self.proto, self.sched, self.fwd = name, group, proto, sched, fwd
        self.about, self.sflags, self.weights, self.rflags = about, sflags, weights, rflags
        self.conns, self.clients, self.duration, self.other, self.idle_gap = conns, clients, duration, other, idle_gap
        # (seconds, "edit|del|add|weight", server 1-based, weight)
        self.changes = changes
        # A hand-written capture instead of `lvsnic traffic`:
        # tests/fixtures/kernel/make_icmp_errors.py (its own two services).
        self.script = script
        # --port-reuse: 0 where rule changes happen, so that no SYN reusing
        # a port meets a connection that a change left to be expired "now"
        # (the kernel's timer fires at the next jiffy, the model's at once:
        # divergence #5), and the captures are short.
        self.port_reuse = port_reuse
        # An IPv6 service (addr()): IPv6 VIP and real servers; rs6 the real
        # servers' family when it differs (mixed-family tunnels).
        self.v6 = v6
        self.rs6 = v6 if rs6 is None else rs6


def scenarios():
    out = []
    # g1: every scheduler x NAT/DR/TUN x TCP/UDP, default sysctls and timeouts.
    for s in SCHEDULERS:
        for fwd in "mgi":
            for proto in "tu":
                flags = ""
                if proto == "t" and s in ("sh", "mh"):
                    flags = "-b %s-port" % s
                other = 0.06 if s == "rr" else 0.0
                about = "%s %s %s, 3 servers weights 1-3%s%s" % (
                    s, FWD[fwd].upper(), "TCP" if proto == "t" else "UDP",
                    " (%s)" % flags if flags else "",
                    ", other frames (TTL 1, fragments, IP options, echo, ARP, no service)" if other else "")
                out.append(Scenario("%s-%s-%s" % (s, FWD[fwd], "tcp" if proto == "t" else "udp"), "g1-defaults",
                                    proto, s, fwd, about, sflags=flags, other=other))
    g1 = "g1-defaults"
    out += [
        Scenario("persist-rr-nat-tcp", g1, "t", "rr", "m", "persistence -p 300 without netmask, bursts from 3 clients",
                 sflags="-p 300", conns=16, clients=3),
        Scenario("persist-wlc-nat-udp-mask", g1, "u", "wlc", "m", "persistence -p 300 -M 255.255.255.0",
                 sflags="-p 300 -M 255.255.255.0", conns=16, clients=8),
        Scenario("persist-lc-dr-tcp-mask", g1, "t", "lc", "g", "persistence -p 300 -M 255.255.0.0",
                 sflags="-p 300 -M 255.255.0.0", conns=16, clients=8),
        Scenario("thresh-wlc-nat-tcp", g1, "t", "wlc", "m", "-x 3 -y 1 on every server, 24 sessions in 3 s",
                 rflags="-x 3 -y 1", conns=24, clients=12, duration=3),
        Scenario("thresh-sed-dr-tcp", g1, "t", "sed", "g", "-x 2 -y 1 on every server, 24 sessions in 3 s",
                 rflags="-x 2 -y 1", conns=24, clients=12, duration=3),
        Scenario("icmp-from-rs", g1, "t", "rr", "m",
                 "ICMP errors from NAT real servers to clients (frag needed, host/port unreachable, time exceeded; "
                 "with and without a connection, TTL 1), TCP and UDP (make_icmp_errors.py)",
                 script="make_icmp_errors.py"),
        Scenario("changes-wlc-nat-tcp", g1, "t", "wlc", "m",
                 "weight 0 (2 s), weight change (4 s), deletion (6 s) and re-addition (12 s) under traffic",
                 conns=24, clients=12, duration=16,
                 changes=[(2, "weight", 1, 0), (4, "weight", 2, 5), (6, "del", 3, 0), (12, "add", 3, 1)], port_reuse=0),
        Scenario("changes-rr-dr-udp", g1, "u", "rr", "g", "deletion (3 s) and re-addition (9 s) under traffic",
                 conns=20, clients=10, duration=14, changes=[(3, "del", 2, 0), (9, "add", 2, 2)], port_reuse=0),
        Scenario("changes-sh-nat-tcp-fallback", g1, "t", "sh", "m", "sh-fallback, weight 0 (3 s) and back (9 s)",
                 sflags="-b sh-fallback", conns=20, clients=10, duration=14,
                 changes=[(3, "weight", 2, 0), (9, "weight", 2, 2)], port_reuse=0),
        Scenario("changes-mh-tun-tcp-fallback", g1, "t", "mh", "i", "mh-fallback, weight 0 (3 s) and back (9 s)",
                 sflags="-b mh-fallback", conns=20, clients=10, duration=14,
                 changes=[(3, "weight", 1, 0), (9, "weight", 1, 1)], port_reuse=0),
    ]
    # g2: expire_nodest_conn, expire_quiescent_template, sloppy_tcp,
    # nat_icmp_send, conn_reuse_mode 0; --set 10 6 8 with 13 s idle gaps.
    # Schedulers whose choice does not depend on connection counts, so that
    # the kernel's timer-wheel rounding of expiry (divergence #5) cannot
    # change a choice.
    g2 = "g2-sysctls"
    gap = 13.0
    out += [
        Scenario("nodest-rr-nat-tcp", g2, "t", "rr", "m", "expire_nodest_conn: deletion (3 s), re-addition (20 s)",
                 conns=12, duration=6, idle_gap=gap, changes=[(3, "del", 2, 0), (20, "add", 2, 2)], port_reuse=0),
        Scenario("nodest-rr-dr-tcp", g2, "t", "rr", "g", "expire_nodest_conn: deletion (3 s), re-addition (20 s)",
                 conns=12, duration=6, idle_gap=gap, changes=[(3, "del", 1, 0), (20, "add", 1, 1)], port_reuse=0),
        Scenario("nodest-wrr-nat-udp", g2, "u", "wrr", "m", "expire_nodest_conn: deletion (3 s), re-addition (20 s)",
                 conns=12, duration=6, idle_gap=gap, changes=[(3, "del", 3, 0), (20, "add", 3, 3)], port_reuse=0),
        Scenario("quiescent-sh-nat-tcp", g2, "t", "sh", "m", "expire_quiescent_template: -p 300 -b sh-fallback, weight 0 (3 s)",
                 sflags="-p 300 -b sh-fallback", conns=16, clients=3, duration=8, idle_gap=gap, changes=[(3, "weight", 1, 0)], port_reuse=0),
        Scenario("quiescent-rr-dr-udp", g2, "u", "rr", "g", "expire_quiescent_template: -p 300, weight 0 (3 s)",
                 sflags="-p 300", conns=16, clients=3, duration=8, idle_gap=gap, changes=[(3, "weight", 2, 0)], port_reuse=0),
        Scenario("sloppy-rr-tun-tcp", g2, "t", "rr", "i", "sloppy_tcp and --set: idle gaps past the 10 s timeout",
                 conns=12, duration=4, idle_gap=gap, other=0.06),
        Scenario("sloppy-dh-nat-tcp", g2, "t", "dh", "m", "sloppy_tcp and --set: idle gaps past the 10 s timeout",
                 conns=12, duration=4, idle_gap=gap),
        Scenario("set-mh-dr-udp", g2, "u", "mh", "g", "--set udp 8: idle gaps past the timeout",
                 conns=12, duration=4, idle_gap=gap),
        Scenario("set-fo-nat-udp", g2, "u", "fo", "m", "--set udp 8, fo", conns=12, duration=4, idle_gap=gap),
    ]
    # g3: secure_tcp (the tcp_states_dos table), pmtu_disc 0, conn_reuse_mode 3.
    g3 = "g3-sysctls"
    out += [
        Scenario("secure-wlc-nat-tcp", g3, "t", "wlc", "m", "secure_tcp, conn_reuse_mode 3", conns=16),
        Scenario("secure-lc-dr-tcp", g3, "t", "lc", "g", "secure_tcp (input-only states), conn_reuse_mode 3", conns=16),
        Scenario("secure-rr-nat-udp", g3, "u", "rr", "m", "secure_tcp (UDP unaffected)", conns=12),
        Scenario("pmtu-rr-tun-tcp", g3, "t", "rr", "i", "pmtu_disc 0: DF too big for the tunnel", conns=16, other=0.06),
        Scenario("pmtu-wrr-tun-udp", g3, "u", "wrr", "i", "pmtu_disc 0, UDP over the tunnel", conns=12),
        Scenario("reuse-sh-dr-tcp", g3, "t", "sh", "g", "conn_reuse_mode 3, port reuse on DR", sflags="-b sh-port",
                 conns=16),
    ]
    # g4: IPv6 services (each its own VIP 2001:db8:1:K::1 and real servers
    # 2001:db8:2:K::1-4, same MACs as the IPv4 scheme), clients
    # 2001:db8:c::<IPv4 client>; IPv6 on in the VM only for this group.
    g4 = "g4-ipv6"
    for s in ("rr", "wlc", "sh", "mh"):
        for fwd in "mgi":
            for proto in "tu":
                flags = "-b sh-port" if (proto == "t" and s == "sh") else ""
                other = 0.06 if s == "rr" else 0.0
                about = "IPv6 %s %s %s, 3 servers weights 1-3%s%s" % (
                    s, FWD[fwd].upper() + (" (ip6ip6)" if fwd == "i" else ""), "TCP" if proto == "t" else "UDP",
                    " (%s)" % flags if flags else "", ", other frames (hop limit 1, ...)" if other else "")
                out.append(Scenario("v6-%s-%s-%s" % (s, FWD[fwd], "tcp" if proto == "t" else "udp"), g4, proto, s, fwd,
                                    about, sflags=flags, other=other, v6=True))
    out += [
        Scenario("v6-persist-rr-nat-tcp", g4, "t", "rr", "m", "IPv6 persistence -p 300 -M 64, bursts from 8 clients",
                 sflags="-p 300 -M 64", conns=16, clients=8, v6=True),
        Scenario("v6-persist-wlc-dr-udp", g4, "u", "wlc", "g", "IPv6 persistence -p 300 -M 64, UDP",
                 sflags="-p 300 -M 64", conns=16, clients=8, v6=True),
        Scenario("v6-persist-lc-tun-tcp", g4, "t", "lc", "i", "IPv6 persistence -p 300 (no netmask), ip6ip6",
                 sflags="-p 300", conns=16, clients=3, v6=True),
    ]
    # Every other scheduler once with NAT TCP and once with ip6ip6 UDP (dh,
    # lblc and lblcr hash the IPv6 destination, `ip_vs_dh_hashkey` & co.).
    for s in ("wrr", "lc", "lblc", "lblcr", "dh", "sed", "nq", "fo", "ovf"):
        for fwd, proto in (("m", "t"), ("i", "u")):
            about = "IPv6 %s %s %s, 3 servers weights 1-3" % (
                s, FWD[fwd].upper() + (" (ip6ip6)" if fwd == "i" else ""), "TCP" if proto == "t" else "UDP")
            out.append(Scenario("v6-%s-%s-%s" % (s, FWD[fwd], "tcp" if proto == "t" else "udp"), g4, proto, s, fwd,
                                about, v6=True))
    # g5: mixed-family tunnels (ip_vs_tunnel_xmit / _v6 with cp->af !=
    # cp->daf): an IPv6 service tunnelled to IPv4 real servers (IPv6 in
    # IPv4, protocol 41) and an IPv4 service tunnelled to IPv6 real servers
    # (IPv4 in IPv6, next header 4). Its own group: a rules file the real
    # ipvsadm refused would fail only this replay.
    g5 = "g5-mixed"
    out += [
        Scenario("v6-mixed-6in4-rr-tcp", g5, "t", "rr", "i", "IPv6 service, IPv4 tunnel servers (6in4), rr TCP",
                 v6=True, rs6=False),
        Scenario("v6-mixed-6in4-wlc-udp", g5, "u", "wlc", "i", "IPv6 service, IPv4 tunnel servers (6in4), wlc UDP",
                 v6=True, rs6=False),
        Scenario("v6-mixed-4in6-rr-tcp", g5, "t", "rr", "i", "IPv4 service, IPv6 tunnel servers (4in6), rr TCP",
                 v6=False, rs6=True),
        Scenario("v6-mixed-4in6-sh-udp", g5, "u", "sh", "i", "IPv4 service, IPv6 tunnel servers (4in6), sh UDP",
                 v6=False, rs6=True),
    ]
    # g6: fragmented IPv6 client traffic and extension-header chains
    # (make_frag6.py: nf_defrag_ipv6 before IPVS, ip6_fragment after; AH,
    # unknown next headers), one scenario per forwarding method. Its own
    # group: short (3 s of frames), IPv6 on as in g4.
    g6 = "g6-frag6"
    for fwd in "mgi":
        out.append(Scenario("frag6-%s" % FWD[fwd], g6, "t", "rr", fwd,
                            "IPv6 fragments (in order, reversed, unequal, duplicate, overlapping, truncated, hop limit 1, "
                            "over the tunnel MTU) and AH / unknown next headers, %s (make_frag6.py)" % FWD[fwd],
                            script="make_frag6.py", v6=True))
    return out


def addr(s, k, what, n=1):
    """A scenario's VIP (what "vip") or real server n (what "rs")."""
    if what == "vip":
        return ("2001:db8:1:%d::1" % k) if s.v6 else ("10.1.%d.1" % k)
    return ("2001:db8:2:%d::%d" % (k, n)) if s.rs6 else ("10.2.%d.%d" % (k, n))


def hostport(a, port):
    return "[%s]:%d" % (a, port) if ":" in a else "%s:%d" % (a, port)


# g2's icmp_ratelimit 0: its nat_icmp_send answers come in bursts to one
# real server, and the kernel's per-peer limiter counts whole jiffies
# (`inet_peer_xrlim_allow`, 4 ms at HZ 250) where the model counts
# nanoseconds: an error ~1 s after the burst's first was let through by
# the kernel and not by the model (matrix run 3; divergence #5's family).
# g1 keeps the default limit (TTL 1, fragmentation needed, ip-options).
GROUPS = {
    "g1-defaults": dict(tcp=900, tcpfin=120, udp=300, sysctl={}),
    "g2-sysctls": dict(tcp=10, tcpfin=6, udp=8, sysctl=dict(expire_nodest_conn=1, expire_quiescent_template=1,
                                                         sloppy_tcp=1, nat_icmp_send=1, conn_reuse_mode=0,
                                                         icmp_ratelimit=0)),
    "g3-sysctls": dict(tcp=900, tcpfin=120, udp=300, sysctl=dict(secure_tcp=1, pmtu_disc=0, conn_reuse_mode=3)),
    "g4-ipv6": dict(tcp=900, tcpfin=120, udp=300, sysctl={}),
    "g5-mixed": dict(tcp=900, tcpfin=120, udp=300, sysctl={}),
    "g6-frag6": dict(tcp=900, tcpfin=120, udp=300, sysctl={}),
}
GROUP_ABOUT = {
    "g1-defaults": "kernel defaults: timeouts 900/120/300, every sysctl at its default",
    "g2-sysctls": "--set 10 6 8, expire_nodest_conn 1, expire_quiescent_template 1, sloppy_tcp 1, nat_icmp_send 1, conn_reuse_mode 0, icmp_ratelimit 0",
    "g3-sysctls": "secure_tcp 1 (kernel 3: always), pmtu_disc 0, conn_reuse_mode 3",
    "g4-ipv6": "IPv6 services, kernel defaults (IPv6 on wire0: no link-local, DAD, RS; forwarding on)",
    "g5-mixed": "mixed-family tunnels (6in4, 4in6), kernel defaults, IPv6 on as in g4",
    "g6-frag6": "IPv6 fragments and extension headers (make_frag6.py), kernel defaults, IPv6 on as in g4",
}


def report(out):
    """OUTDIR/matrix.md: the per-scenario table of a finished run (each
    group's report.json, about.txt, vm-time.txt)."""
    import json
    rows = ["| group | scenario | what | input | kernel sent | lvsnic sent (+ to host) | identical (random / clock ignored) | explained | unexplained |",
            "|---|---|---|---|---|---|---|---|---|"]
    for g in sorted(os.listdir(out)):
        gd = os.path.join(out, g)
        rp = os.path.join(gd, "report.json")
        if not os.path.isfile(os.path.join(gd, "about.txt")):
            continue
        about = {}
        with open(os.path.join(gd, "about.txt")) as f:
            for line in f:
                if not line.startswith("#"):
                    n, _, w = line.strip().partition(" ")
                    about[n] = w
        if not os.path.isfile(rp):
            rows.append("| %s | (all) | | | | | | | the group did not run: see %s/result.txt |" % (g, g))
            continue
        with open(rp) as f:
            rep = json.load(f)
        for sc in rep.get("scenarios", []):
            m = sc["summary"]
            un = m["differing"] + m["only_kernel"] + m["only_lvsnic"]
            rows.append("| %s | %s | %s | %d | %d | %d (+%d) | %d (%d / %d) | %d | %s |" % (
                g, sc["name"], about.get(sc["name"], "frames of no scenario (director address, ARP, IPv6, ...)"),
                m["input_frames"], m["kernel_frames"], m["lvsnic_frames"], m["host_frames"], m["identical"], m["random_fields_ignored"],
                m["clock_fields_ignored"], m["explained"], "**%d**" % un if un else "0"))
    with open(os.path.join(out, "matrix.md"), "w") as f:
        f.write("\n".join(rows) + "\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--report":
        return report(sys.argv[2])
    if len(sys.argv) < 3:
        sys.exit("usage: matrix.py LVSNIC OUTDIR [--only PATTERN...]")
    lvsnic, out = sys.argv[1], sys.argv[2]
    only = sys.argv[4:] if len(sys.argv) > 3 and sys.argv[3] == "--only" else []
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    all_sc = scenarios()
    chosen = [s for s in all_sc if not only or any(fnmatch.fnmatch(s.name, p) for p in only)]
    if not chosen:
        sys.exit("matrix.py: no scenario matches %s" % " ".join(only))
    index = {s.name: k + 1 for k, s in enumerate(all_sc)}
    groups = {}
    for s in chosen:
        groups.setdefault(s.group, []).append(s)
    for g, members in groups.items():
        gd = os.path.join(out, g)
        os.makedirs(gd, exist_ok=True)
        conf = GROUPS[g]
        neighbors = []
        for s in members:
            k = index[s.name]
            neighbors += [(addr(s, k, "rs", n), "02:00:0a:02:%02x:%02x" % (k, n)) for n in range(1, 5)]
        with_ip_options = g == "g1-defaults" and (not only or any(fnmatch.fnmatch("ip-options", p) for p in only))
        if with_ip_options:
            neighbors += EXAMPLE_NEIGHBORS
        sysctl = "".join("%s = %d\n" % kv for kv in sorted(conf["sysctl"].items()))
        ip6 = 'ip6 = "2001:db8::1"\n' if any(s.v6 or s.rs6 for s in members) else ""
        director = DIRECTOR.format(ip6=ip6, tcp=conf["tcp"], tcpfin=conf["tcpfin"], udp=conf["udp"], sysctl=sysctl,
                                   neighbors="".join('"%s" = "%s"\n' % n for n in neighbors))
        dpath = os.path.join(gd, "director.toml")
        with open(dpath, "w") as f:
            f.write(director)
        rules, changes, merged, scen, about = [], [], [], [], []
        for order, s in enumerate(members):
            k = index[s.name]
            vip = addr(s, k, "vip")
            port = 80 if s.proto == "t" else 53
            rport = {"m": 8000 + k, "g": port, "i": port}[s.fwd] if s.proto == "t" else port
            svc = "-%s %s" % (s.proto, hostport(vip, port))
            rip = lambda n: hostport(addr(s, k, "rs", n), rport)
            r = ["-A %s -s %s%s" % (svc, s.sched, " " + s.sflags if s.sflags else "")]
            for n, w in enumerate(s.weights, 1):
                r.append("-a %s -r %s -%s -w %d%s" % (svc, rip(n), s.fwd, w, " " + s.rflags if s.rflags else ""))
            for t, what, n, w in s.changes:
                if what == "weight":
                    changes.append((t, order, "-e %s -r %s -%s -w %d%s" % (svc, rip(n), s.fwd, w, " " + s.rflags if s.rflags else "")))
                elif what == "del":
                    changes.append((t, order, "-d %s -r %s" % (svc, rip(n))))
                else:
                    changes.append((t, order, "-a %s -r %s -%s -w %d%s" % (svc, rip(n), s.fwd, w, " " + s.rflags if s.rflags else "")))
            sd = os.path.join(out, "gen", s.name)
            os.makedirs(sd, exist_ok=True)
            pcap = os.path.join(sd, "input.pcap")
            if s.script:
                if s.v6:
                    # make_frag6.py: TCP to server 1, UDP to server 2, by s.fwd.
                    tp = 8080 if s.fwd == "m" else 80
                    r = ["-A -t [%s]:80 -s rr" % vip, "-a -t [%s]:80 -r [%s]:%d -%s -w 1" % (vip, addr(s, k, "rs", 1), tp, s.fwd),
                         "-A -u [%s]:53 -s rr" % vip, "-a -u [%s]:53 -r [%s]:53 -%s -w 1" % (vip, addr(s, k, "rs", 2), s.fwd)]
                    args = [pcap, str(k), s.fwd]
                else:
                    r = ["-A -t %s:80 -s rr" % vip, "-a -t %s:80 -r 10.2.%d.1:8080 -m -w 1" % (vip, k),
                         "-A -u %s:53 -s rr" % vip, "-a -u %s:53 -r 10.2.%d.2:53 -m -w 1" % (vip, k)]
                    args = [pcap, str(k)]
                subprocess.run([sys.executable, os.path.join(root, "tests/fixtures/kernel", s.script)] + args, check=True)
                recs = read_pcap(pcap)
                # 2 s after the generated captures' common start.
                base = 1_700_000_000 * 10**9
                merged += [(base + 2 * 10**9 + ts - recs[0][0], order, i, fr, orig) for i, (ts, fr, orig) in enumerate(recs)]
                rules += r
                scen.append("%s %s %s" % (s.name, vip, " ".join(addr(s, k, "rs", n) for n in range(1, 5))))
                about.append("%s %s" % (s.name, s.about))
                continue
            with open(os.path.join(sd, "rules.txt"), "w") as f:
                f.write("\n".join(r) + "\n")
            cmd = [lvsnic, "traffic", "--rules", os.path.join(sd, "rules.txt"), "--director", dpath,
                   "--seed", str(k), "--connections", str(s.conns), "--clients", str(s.clients),
                   "--duration", str(s.duration), "--udp", "1" if s.proto == "u" else "0",
                   "--other", str(s.other), "--malformed", "0", "--idle-gap", str(s.idle_gap), "--output", pcap]
            if s.port_reuse is not None:
                cmd[-2:-2] = ["--port-reuse", str(s.port_reuse)]
            summary = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip()
            with open(os.path.join(sd, "traffic.txt"), "w") as f:
                f.write(" ".join(cmd) + "\n" + summary + "\n")
            merged += [(ts, order, i, fr, orig) for i, (ts, fr, orig) in enumerate(read_pcap(pcap))]
            rules += r
            scen.append("%s %s %s" % (s.name, vip, " ".join(addr(s, k, "rs", n) for n in range(1, 5))))
            about.append("%s %s" % (s.name, s.about))
        if with_ip_options:
            # The IPv4-options fixtures' frames (examples/rules.txt services),
            # 1 s and 12 s after the merged capture's start.
            start = min(m[0] for m in merged)
            mk = os.path.join(root, "tests/fixtures/kernel/make_ip_options.py")
            for n, (extra, shift) in enumerate([([], 1), (["icmp"], 12)]):
                p = os.path.join(out, "gen", "ip-options%d.pcap" % n)
                subprocess.run([sys.executable, mk, p] + extra, check=True)
                recs = read_pcap(p)
                base = recs[0][0]
                merged += [(start + shift * 10**9 + ts - base, len(members) + n, i, fr, orig) for i, (ts, fr, orig) in enumerate(recs)]
            with open(os.path.join(root, "examples/rules.txt")) as f:
                rules += [l.strip() for l in f if l.strip()]
            scen.append("ip-options 10.0.0.100 10.0.0.101 10.0.0.102 " + " ".join(a for a, _ in EXAMPLE_NEIGHBORS))
            about.append("ip-options IPv4 options, TTL 1 with options, fragments (make_ip_options.py, both captures; examples/rules.txt)")
        merged.sort(key=lambda m: (m[0], m[1], m[2]))
        write_pcap(os.path.join(gd, "input.pcap"), [(m[0], m[3], m[4]) for m in merged])
        with open(os.path.join(gd, "rules.txt"), "w") as f:
            f.write("\n".join(rules) + "\n")
        changes.sort()
        with open(os.path.join(gd, "changes.in"), "w") as f:
            f.writelines("%g %s\n" % (t, c) for t, _, c in changes)
        with open(os.path.join(gd, "scenarios.txt"), "w") as f:
            f.write("\n".join(scen) + "\n")
        with open(os.path.join(gd, "about.txt"), "w") as f:
            f.write("# %s: %s\n" % (g, GROUP_ABOUT[g]) + "\n".join(about) + "\n")
        span = (merged[-1][0] - merged[0][0]) / 1e9 if merged else 0
        print("%s: %d scenarios, %d frames, %.1f s, %d changes" % (g, len(scen), len(merged), span, len(changes)))


if __name__ == "__main__":
    main()
