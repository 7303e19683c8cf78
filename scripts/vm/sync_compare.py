#!/usr/bin/env python3
"""Compares the connection listings scripts/vm/sync-inner.sh recorded.

    sync_compare.py DIR

Rows of `ipvsadm -L -n -c` (kernel) and `lvsnic -L -n -c` are compared on
protocol, state, client, virtual and destination address; their expiry
times may differ by up to 5 s (the listings are taken a moment apart and the
two sides count from when each saw the entry), and an entry with at most
5 s left on one side may be missing from the other. Every entry of the kernel
backup with more than 60 s left must also be one of the lvsnic master's
connections. Prints one line per
direction; exit status 1 on any difference, with the rows that differ.
"""
import collections
import sys

SLACK = 5


def rows(path, keep=lambda r: True):
    out = []
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) != 6 or w[0] not in ("TCP", "UDP", "SCTP", "IP"):
                continue
            m, s = w[1].split(":")
            r = {"key": (w[0], w[2], w[3], w[4], w[5]), "expire": int(m) * 60 + int(s)}
            if keep(r):
                out.append(r)
    return out


KERNEL_VIPS = ("10.0.0.200:", "[2001:db8::200]:")


def compare(name, want, got, want_label, got_label, at_least, at_least_v6):
    errors = []
    v6 = sum(1 for r in want if r["key"][3].startswith("["))
    if v6 < at_least_v6:
        errors.append(f"{want_label} lists {v6} IPv6 entries, expected at least {at_least_v6}")
    wk = collections.Counter(r["key"] for r in want)
    gk = collections.Counter(r["key"] for r in got)
    # An entry with at most SLACK seconds left on one side may have expired
    # before the other listing was taken (seen on a loaded machine: a CLOSE
    # entry at 00:00 in the kernel backup, gone from lvsnic's a moment later).
    leaving = {r["key"] for r in want + got if r["expire"] <= SLACK}
    for k in sorted((wk - gk).elements()):
        if k not in leaving:
            errors.append(f"only in {want_label}: {' '.join(k)}")
    for k in sorted((gk - wk).elements()):
        if k not in leaving:
            errors.append(f"only in {got_label}: {' '.join(k)}")
    by_key = {r["key"]: r["expire"] for r in got}
    for r in want:
        e = by_key.get(r["key"])
        if e is not None and abs(e - r["expire"]) > SLACK:
            errors.append(f"expiry {r['expire']} s in {want_label}, {e} s in {got_label}: {' '.join(r['key'])}")
    if len(want) < at_least:
        errors.append(f"{want_label} lists {len(want)} entries, expected at least {at_least}")
    states = collections.Counter((k[0], k[1]) for k in wk.elements())
    desc = ", ".join(f"{n} {p} {s}" for (p, s), n in sorted(states.items()))
    print(f"{name}: {len(want)} entries, {v6} IPv6 ({desc}): {'identical' if not errors else 'DIFFERENT'}")
    for e in errors:
        print("    " + e)
    return not errors


def main():
    d = sys.argv[1]
    ok = compare(
        "kernel master -> lvsnic backup",
        rows(f"{d}/k2l-kernel.txt", lambda r: r["key"][3].startswith(KERNEL_VIPS)),
        rows(f"{d}/k2l-lvsnic.txt"),
        "the kernel master",
        "the lvsnic backup",
        10,
        3,
    )
    kernel = rows(f"{d}/l2k-kernel.txt", lambda r: not r["key"][3].startswith(KERNEL_VIPS))
    # IPv6: 6 connections and at least one /64 template.
    ok &= compare("lvsnic master -> kernel backup", kernel, rows(f"{d}/l2k-lvsnic.txt"), "the kernel backup", "the lvsnic backup", 10, 7)
    # The master replayed its capture at once, so its clock is at the
    # capture's end: an entry with a short timeout (CLOSE: 10 s) may have
    # expired there while the backups, on real time, still hold it.
    master = {r["key"] for r in rows(f"{d}/l2k-master.txt")}
    stray = [r["key"] for r in kernel if r["key"] not in master and r["expire"] > 60]
    for k in stray:
        print(f"    the kernel backup has an entry the lvsnic master does not: {' '.join(k)}")
    ok &= not stray
    # Part 2 ran over the IPv6 group: both backups' `-L --daemon` lines
    # (maxlen: the MTU less 48, IPv6 and UDP headers) equal but for the
    # interface's name (the kernel's is br0, lvsnic's eth0).
    want = open(f"{d}/l2k-kernel-daemon.txt").read().replace("mcast=br0,", "mcast=IF,")
    got = open(f"{d}/l2k-lvsnic-daemon.txt").read().replace("mcast=eth0,", "mcast=IF,")
    print(f"{'ok' if want == got else 'DIFFERENT'}: -L --daemon over the IPv6 group: kernel {want.strip()!r}, lvsnic {got.strip()!r}")
    ok &= want == got and "group=ff02::81" in want
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
