#!/usr/bin/env python3
"""Runs INSIDE the conformance VM (director.sh starts it before the
replay): applies CHANGES with the real ipvsadm when the replay reaches
each change's capture time, and logs when each one took effect.

    changes_runner.py WORKDIR START_NS

WORKDIR/changes.txt: "SECONDS ipvsadm-args" (seconds after the first
frame); WORKDIR/in.pcap: the capture being replayed; WORKDIR/kernel-sent.pcap:
what the tester has sent so far (tcpdump -U, growing). The replay's clock
is the capture time of the last frame sent plus the wall time since it was
sent (TCG falls behind the capture's pace, so a wall-clock offset from the
replay's start would apply a change many seconds early in capture time).

While ipvsadm runs, tcpreplay is stopped (SIGSTOP, and SIGCONT once
ipvsadm has returned): under TCG the exec of ipvsadm takes up to a second
and the rules change at some unobservable moment of it, so no frame may
reach the director meanwhile.

WORKDIR/changes.log gets, per change, ipvsadm's own output and then one
line "SECONDS NS ok|exit N ipvsadm ARGS", NS being when ipvsadm returned,
in ns after START_NS (no frame was sent between its start and then).
WORKDIR/changes-times.txt: SECONDS, start and return in ns after START_NS,
and whether the replay was paused (NOT-PAUSED: tcpreplay had already
finished or could not be stopped).
Python 3 standard library only; one process for all changes (every exec
costs about a second under TCG).
"""
import os
import signal
import struct
import subprocess
import sys
import time


def pcap_times(data, off, scale):
    """Timestamps (ns) and lengths of the complete records of a pcap's
    bytes `data` from byte `off`; returns (records, new offset)."""
    out = []
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        if off + 16 + incl > len(data):
            break
        out.append((sec * 1_000_000_000 + frac * scale, incl))
        off += 16 + incl
    return out, off


def scale_of(data):
    return 1 if struct.unpack("<I", data[:4])[0] == 0xA1B23C4D else 1000


def replay_pid(w):
    """tcpreplay's pid (director.sh writes it), if it still runs."""
    try:
        pid = int(open(os.path.join(w, "tcpreplay.pid")).read())
        with open("/proc/%d/comm" % pid) as f:
            return pid if f.read().strip() == "tcpreplay" else None
    except (OSError, ValueError):
        return None


def pause(pid):
    """SIGSTOP and wait until the process is stopped (state T); False if it is gone."""
    try:
        os.kill(pid, signal.SIGSTOP)
        for _ in range(2000):
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("T", "t"):
                    return True
            time.sleep(0.001)
    except OSError:
        pass
    return False


def main():
    w, start = sys.argv[1], int(sys.argv[2])
    changes = []
    with open(os.path.join(w, "changes.txt")) as f:
        for line in f:
            p = line.split()
            if p:
                changes.append((p[0], float(p[0]), p[1:]))
    with open(os.path.join(w, "in.pcap"), "rb") as f:
        data = f.read()
    cap, _ = pcap_times(data, 24, scale_of(data))
    # Frames shorter than an Ethernet header are not sent (no wire carries them).
    cap = [t for t, n in cap if n >= 14]
    if not cap:
        return
    sent_path = os.path.join(w, "kernel-sent.pcap")
    sent = None  # the growing capture, read incrementally
    buf, off, scale, sent_n, last_wall = b"", 24, 1, 0, None
    log = open(os.path.join(w, "changes.log"), "a")
    times = open(os.path.join(w, "changes-times.txt"), "a")
    for secs, t, args in changes:
        target = cap[0] + int(t * 1e9)
        while True:
            if sent is None and os.path.exists(sent_path):
                sent = open(sent_path, "rb")
            if sent is not None:
                buf += sent.read()
                if len(buf) >= 24:
                    if off == 24:
                        scale = scale_of(buf)
                    recs, off = pcap_times(buf, off, scale)
                    if recs:
                        sent_n += len(recs)
                        last_wall = recs[-1][0]
                    buf, off = buf[off:], 0
            if last_wall is not None:
                k = min(sent_n, len(cap)) - 1
                if cap[k] + (time.time_ns() - last_wall) >= target:
                    break
            time.sleep(0.02)
        # The replay is paused while ipvsadm runs: the rules change at some
        # moment of ipvsadm's run that cannot be observed, so no frame may
        # reach the director meanwhile. A frame the tester sent before the
        # pause was handled in its own sendto (veth -> backlog -> softirq).
        pid = replay_pid(w)
        paused = pid is not None and pause(pid)
        t0 = time.time_ns()
        r = subprocess.run(["ipvsadm"] + args, stdout=log, stderr=log)
        t1 = time.time_ns()
        if paused:
            os.kill(pid, signal.SIGCONT)
        res = "ok" if r.returncode == 0 else "exit %d" % r.returncode
        log.write("%s %d %s ipvsadm %s\n" % (secs, t1 - start, res, " ".join(args)))
        log.flush()
        times.write("%s %d %d %s\n" % (secs, t0 - start, t1 - start, "paused" if paused else "NOT-PAUSED"))
        times.flush()


if __name__ == "__main__":
    main()
