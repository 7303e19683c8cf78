#!/usr/bin/env python3
#
# Figures of a running full-system simulation (boards/sim/run.sh start):
# simulated cycles per second (the simulation-only cycle counter CSR
# simctl_cycles, read over Etherbone), ping round trip to the management
# address, Etherbone read round trip, and frame rates through the
# exception path (data tap -> core -> UDP datagram) and the inject path
# (UDP datagram -> core -> data tap).
#
#   .venv/bin/python boards/sim/measure.py [--frames 2000] [--size 64]
#
# Reads the instance's addresses from boards/build/sim/run/DATA-MGMT/env
# (run.sh's defaults unless --state is given). Leaves CTRL.enable as found
# but clears it while measuring (every frame then goes to the host).

import argparse
import os
import re
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from simnet import (Etherbone, DataTap, ipv4_udp_frame, inject_datagram, read_csr_csv,  # noqa: E402
                    parse_exception, write_flow, write_action, flow_entry, route_action,
                    mac_int, ip_int, REG, EMPTY_SLOT, LVSNIC_UDP_PORT)


def load_env(path):
    env = {}
    with open(path) as f:
        for line in f:
            if "=" in line:
                k, v = line.strip().split("=", 1)
                env[k] = v
    return env


def cycles(eb, csr):
    hi, lo = eb.read(csr["simctl_cycles"], 2)   # upper word at the lower address
    return hi << 32 | lo


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--state", default=os.path.join(HERE, "..", "build", "sim", "run",
                   f"{os.environ.get('LVSNIC_SIM_DATA_TAP', 'lvsd0')}-{os.environ.get('LVSNIC_SIM_MGMT_TAP', 'lvsm0')}"))
    p.add_argument("--frames", type=int, default=2000)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--burst", type=int, default=16, help="frames in flight")
    p.add_argument("--seconds", type=float, default=5.0, help="idle cycle-rate measurement time")
    args = p.parse_args()
    env = load_env(os.path.join(args.state, "env"))
    sim_ip, host_ip = env["LVSNIC_SIM_IP"], env["LVSNIC_SIM_HOST_IP"]
    csr = read_csr_csv(env["LVSNIC_SIM_CSR_CSV"])
    out = {}

    with Etherbone(sim_ip, bind=host_ip, timeout=1.0) as eb:
        # cycles per second, idle (only these two reads)
        c0, t0 = cycles(eb, csr), time.monotonic()
        time.sleep(args.seconds)
        c1, t1 = cycles(eb, csr), time.monotonic()
        out["idle cycles/s"] = (c1 - c0) / (t1 - t0)

        # Etherbone read round trip
        n = 200
        t0 = time.monotonic()
        for _ in range(n):
            eb.read(0)
        out["Etherbone read RTT (ms)"] = (time.monotonic() - t0) / n * 1000

        # ping
        r = subprocess.run(["ping", "-q", "-c", "50", "-i", "0.05", sim_ip], capture_output=True, text=True)
        m = re.search(r"= ([\d.]+)/([\d.]+)/([\d.]+)/([\d.]+) ms", r.stdout)
        if m:
            out["ping RTT min/avg/max (ms)"] = f"{m.group(1)}/{m.group(2)}/{m.group(3)}"

        ctrl = eb.read(REG["CTRL"])
        eb.write(REG["CTRL"], ctrl & ~1)
        assert eb.read(REG["CTRL"]) == ctrl & ~1

        # exception path: bursts of --burst frames (the data port's receive
        # buffer holds 32 frames; beyond that frames are dropped and counted,
        # since the management port's datagrams are longer than the frames)
        rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind((host_ip, LVSNIC_UDP_PORT))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        rx.settimeout(5.0)
        tap = DataTap(env["LVSNIC_SIM_DATA_TAP"])
        frame = ipv4_udp_frame("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.2", "10.0.0.9",
                               1000, 80, bytes(args.size - 42))
        ov0 = {k: eb.read(csr[k]) for k in ("glue_rx_overflow", "glue_host_overflow", "glue_inject_overflow",
                                            "glue_inject_bad")}

        def run(send, receive):
            c0, t0 = cycles(eb, csr), time.monotonic()
            got = 0
            while got < args.frames:
                k = min(args.burst, args.frames - got)
                for _ in range(k):
                    send()
                for _ in range(k):
                    if not receive():
                        raise SystemExit(f"lost a frame after {got}")
                    got += 1
            t1 = time.monotonic()
            c1 = cycles(eb, csr)
            return (f"{got / (t1 - t0):.0f} frames/s, {(c1 - c0) / got:.0f} cycles/frame, "
                    f"{(c1 - c0) / (t1 - t0):.0f} cycles/s")

        def recv_dgram():
            try:
                rx.recvfrom(65535)
                return True
            except socket.timeout:
                return False

        out[f"exception path, {args.size}-byte frames"] = run(lambda: tap.send(frame), recv_dgram)

        # inject path
        tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tap.drain()
        dg = inject_datagram(frame, seq=1)
        out[f"inject path, {args.size}-byte frames"] = run(
            lambda: tx.sendto(dg, (sim_ip, LVSNIC_UDP_PORT)), lambda: tap.recv(timeout=5.0) is not None)
        # forward path: the flow installed as the host would (miss -> hash_0 -> way 0 bucket)
        fb = (eb.read(REG["CAPS0"]) >> 16) & 0xFF
        saved = {a: eb.read(REG[a]) for a in ("MAC_LO", "MAC_HI", "IP", "VIP0", "VIP_VALID")}
        eb.write(REG["MAC_LO"], mac_int("02:00:00:00:00:01") & 0xFFFFFFFF)
        eb.write(REG["MAC_HI"], mac_int("02:00:00:00:00:01") >> 32)
        eb.write(REG["VIP0"], ip_int("10.0.0.9"))
        eb.write(REG["VIP_VALID"], 1)
        eb.write(REG["CTRL"], ctrl | 1)
        eb.read(REG["CTRL"])
        tap.drain()
        tap.send(frame)
        meta, _ = parse_exception(rx.recvfrom(65535)[0])
        bucket = meta["hash0"] & ((1 << fb) - 1)
        write_action(eb, 1, route_action("02:00:00:00:00:63"))
        write_flow(eb, 0, bucket, 0, flow_entry(17, "10.0.0.2", "10.0.0.9", 1000, 80, 1), fb)
        out[f"forward path, {args.size}-byte frames"] = run(
            lambda: tap.send(frame), lambda: tap.recv(timeout=5.0) is not None)
        write_flow(eb, 0, bucket, 0, EMPTY_SLOT, fb)
        eb.write(REG["CTRL"], ctrl & ~1)
        for a, v in saved.items():
            eb.write(REG[a], v)

        ov1 = {k: eb.read(csr[k]) for k in ov0}
        out["glue overflow counters (delta)"] = {k: ov1[k] - ov0[k] for k in ov0}
        eb.write(REG["CTRL"], ctrl)
        eb.read(REG["CTRL"])

    for k, v in out.items():
        print(f"{k}: {v:.0f}" if isinstance(v, float) and v > 100 else f"{k}: {v:.3f}" if isinstance(v, float) else f"{k}: {v}")


if __name__ == "__main__":
    main()
