#!/usr/bin/env python3
#
# Host-side helpers for lvsnic's full-system simulation (boards/sim/): an
# Etherbone client over UDP (LiteX's packet classes, our socket), the
# management port's datagram framing (boards/README.md "Management port"),
# raw frames on the data tap, and the readiness probe run.sh uses:
#
#   simnet.py probe --ip 192.168.1.50 [--bind 192.168.1.100] [--timeout 120]
#
# exits 0 once the core's ID register (byte address 0) reads 0x4C56534E.

import argparse
import os
import socket
import struct
import sys
import time

from litex.tools.remote.etherbone import EtherbonePacket, EtherboneRecord
from litex.tools.remote.etherbone import EtherboneReads, EtherboneWrites

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "hw", "tb", "unit"))
import lvsnic_ref as R  # noqa: E402
import lvsnic_regs as L  # noqa: E402  (generated from hw/regmap/lvsnic.rdl)

ETHERBONE_PORT = 1234
LVSNIC_UDP_PORT = 0x4C56          # 19542
LVSN_ID = 0x4C56534E
EXCEPT_MAGIC = b"LVCX"
INJECT_MAGIC = b"LVNJ"
PACKET_OUTGOING = 4               # sll_pkttype of frames the host itself sent


class Etherbone:
    """Etherbone (the LiteEth flavour: 32-bit addresses and data) over UDP.

    LiteEth answers to UDP port 1234 of the requester whatever the
    request's source port, so the socket is bound to local port 1234."""
    def __init__(self, ip, port=ETHERBONE_PORT, bind="", timeout=0.5, retries=10):
        self.ip, self.port, self.timeout, self.retries = ip, port, timeout, retries
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((bind, ETHERBONE_PORT))
        self.sock.settimeout(timeout)
        self.tag = 0

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def read(self, addr, count=1):
        """count 32-bit words from byte address addr (incrementing)."""
        for _ in range(self.retries):
            self.tag = (self.tag + 1) & 0xFFFFFFFF
            record = EtherboneRecord(addr_size=4)
            record.reads = EtherboneReads(addr_size=4, addrs=[addr + 4 * i for i in range(count)])
            record.rcount = count
            record.reads.base_ret_addr = self.tag
            packet = EtherbonePacket(addr_width=32)
            packet.records = [record]
            packet.encode()
            self.sock.sendto(packet.bytes, (self.ip, self.port))
            deadline = time.monotonic() + self.timeout
            while time.monotonic() < deadline:
                try:
                    data, _ = self.sock.recvfrom(65535)
                except socket.timeout:
                    break
                reply = EtherbonePacket(32, data)
                reply.decode()
                if not reply.records:
                    continue
                rec = reply.records.pop()
                if rec.writes is not None and rec.writes.base_addr == self.tag:
                    vals = rec.writes.get_datas()
                    return vals[0] if count == 1 else vals
        raise TimeoutError(f"no Etherbone reply from {self.ip}:{self.port}")

    def write(self, addr, values):
        """32-bit words to byte address addr (posted: no reply)."""
        values = values if isinstance(values, list) else [values]
        record = EtherboneRecord(addr_size=4)
        record.writes = EtherboneWrites(addr_size=4, base_addr=addr, datas=iter(values))
        record.wcount = len(values)
        packet = EtherbonePacket(addr_width=32)
        packet.records = [record]
        packet.encode()
        self.sock.sendto(packet.bytes, (self.ip, self.port))


def read_csr_csv(path):
    """{name: byte address} of the LiteX CSRs of a build's csr.csv."""
    regs = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) >= 3 and parts[0] == "csr_register":
                regs[parts[1]] = int(parts[2], 0)
    return regs


# Core tables (docs/hardware.md §4, §6) ------------------------------------------------------------

# register addresses from the generated map (hw/tb/unit/lvsnic_regs.py)
REG = {"ID": L.ID, "VERSION": L.VERSION, "CAPS0": L.CAPS0, "CAPS1": L.CAPS1, "CTRL": L.CTRL,
       "MAC_LO": L.MAC_LO, "MAC_HI": L.MAC_HI, "IP": L.IP, "MTU": L.MTU, "VIP_VALID": L.VIP_VALID,
       "VIP0": L.VIP_BASE, "FLOW_DATA0": L.FLOW_DATA_BASE, "FLOW_INDEX": L.FLOW_INDEX, "FLOW_CMD": L.FLOW_CMD,
       "FLOW_STATUS": L.FLOW_STATUS, "ACT_DATA0": L.ACT_DATA_BASE, "ACT_INDEX": L.ACT_INDEX, "ACT_CMD": L.ACT_CMD,
       "ACT_STATUS": L.ACT_STATUS, "ACT_PKTS_LO": L.ACT_PKTS_LO, "CNT0_LO": L.CNT_BASE + L.CNT_LO_OFFSET}


def ip_int(ip):
    return int.from_bytes(socket.inet_aton(ip), "big")


def mac_int(mac):
    return int.from_bytes(bytes.fromhex(mac.replace(":", "")), "big")


def flow_entry(proto, src, dst, sport, dport, action, ack_fast=False):
    """IPv4 flow entry (§4, one 160-bit slot) as FLOW_ENTRY_WORDS 32-bit
    words, DATA0 first (the cocotb reference's layout, generated from
    hw/regmap/lvsnic.rdl)."""
    return R.words(R.flow_entry(proto, ip_int(src), ip_int(dst), sport, dport, action, ack_fast=ack_fast),
                   L.FLOW_ENTRY_WORDS)


def flow6_entry(proto, src, dst, sport, dport, action, ack_fast=False):
    """IPv6 flow entry (§4, an aligned slot pair, 320 bits) as
    FLOW6_ENTRY_WORDS words, for write_flow(..., pair=True)."""
    return R.words(R.flow6_entry(proto, int.from_bytes(socket.inet_pton(socket.AF_INET6, src), "big"),
                                 int.from_bytes(socket.inet_pton(socket.AF_INET6, dst), "big"),
                                 sport, dport, action, ack_fast=ack_fast), L.FLOW6_ENTRY_WORDS)


EMPTY_SLOT = [0] * L.FLOW_ENTRY_WORDS


def route_action(mac):
    """ROUTE (direct routing) action to the given MAC, ACTION_ENTRY_WORDS words."""
    return R.words(R.action_entry(R.OP_ROUTE, mac_int(mac).to_bytes(6, "big")), L.ACTION_ENTRY_WORDS)


def _command(eb, ops, status_reg):
    """A table command's register writes (lvsnic_ref.flow_write_regs /
    action_write_regs), the staging words in one Etherbone write."""
    for _ in range(100):
        if eb.read(status_reg) & 1 == 0:
            break
    data = [v for _, v in ops[:-2]]
    eb.write(ops[0][0], data)
    for a, v in ops[-2:]:                   # index, then the command
        eb.write(a, int(v))
    for _ in range(100):
        if eb.read(status_reg) & 1 == 0:
            return
    raise TimeoutError("table command stays busy")


def write_flow(eb, way, bucket, slot, words, buckets_log2, pair=False):
    """FLOW_CMD WRITE of one slot (FLOW_ENTRY_WORDS words), or with `pair`
    WRITE_PAIR of the slot's aligned pair (FLOW6_ENTRY_WORDS words)."""
    assert len(words) == (L.FLOW6_ENTRY_WORDS if pair else L.FLOW_ENTRY_WORDS)
    index = way << (buckets_log2 + 2) | bucket << 2 | slot
    _command(eb, R.flow_write_regs(index, R.from_words(words), pair=pair), REG["FLOW_STATUS"])


def write_action(eb, index, words):
    assert len(words) == L.ACTION_ENTRY_WORDS
    _command(eb, R.action_write_regs(index, R.from_words(words)), REG["ACT_STATUS"])


def routed(frame, dst_mac, src_mac):
    """The frame a ROUTE action makes of an option-less IPv4 frame: MACs
    replaced, TTL - 1, header checksum recomputed, cut at the total length."""
    ip = bytearray(frame[14:34])
    total = int.from_bytes(ip[2:4], "big")
    ip[8] -= 1
    ip[10:12] = b"\0\0"
    ip[10:12] = _csum(bytes(ip)).to_bytes(2, "big")
    return bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) \
        + frame[12:14] + bytes(ip) + frame[34:14 + total]


# Frames ----------------------------------------------------------------------------------------

def _csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4_udp_frame(dst_mac, src_mac, src_ip, dst_ip, sport, dport, payload, ttl=64, ident=1):
    udp = struct.pack("!HHHH", sport, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ident, 0, ttl, 17, 0,
                     socket.inet_aton(src_ip), socket.inet_aton(dst_ip))
    ip = ip[:10] + struct.pack("!H", _csum(ip)) + ip[12:]
    return bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) \
        + b"\x08\x00" + ip + udp


def parse_exception(dgram):
    """(metadata fields, frame) of an exception datagram, or ValueError."""
    if len(dgram) < 24 or dgram[20:24] != EXCEPT_MAGIC:
        raise ValueError(f"not an exception datagram: {dgram[:24].hex()}")
    meta = int.from_bytes(dgram[:20], "little")
    fields = {
        "reason": meta & 0xFF,
        "hit": (meta >> 8) & 1,
        "vip": (meta >> 9) & 1,
        "hash0": (meta >> 32) & 0xFFFFFFFF,
        "seq": (meta >> 64) & 0xFFFFFFFF,
        "timestamp": (meta >> 96) & ((1 << 64) - 1),
    }
    return fields, dgram[24:]


def inject_datagram(frame, seq=0):
    return struct.pack("<I", seq) + INJECT_MAGIC + frame


class DataTap:
    """Raw frames on the data port's tap: send() goes into the simulated
    data port, recv() returns frames the simulation sent out of it."""
    def __init__(self, ifname, timeout=5.0):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
        self.sock.bind((ifname, 0))
        self.sock.settimeout(timeout)

    def send(self, frame):
        self.sock.send(frame)

    def recv(self, timeout=None):
        """Next frame from the simulation (skips the host's own), or None."""
        deadline = time.monotonic() + (timeout if timeout is not None else self.sock.gettimeout())
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.sock.settimeout(left)
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                return None
            if addr[2] != PACKET_OUTGOING:
                return data

    def drain(self):
        while self.recv(timeout=0.05) is not None:
            pass

    def close(self):
        self.sock.close()


# Readiness probe -------------------------------------------------------------------------------

def probe(ip, bind, timeout):
    """0 once the core's ID reads LVSN over Etherbone. If local UDP port 1234
    is taken (an Etherbone client such as `lvsnic daemon --backend
    etherbone` already runs), readiness is the management port answering
    ping instead."""
    import errno
    import subprocess
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            with Etherbone(ip, bind=bind, timeout=0.5, retries=1) as eb:
                v = eb.read(0)
            if v == LVSN_ID:
                return 0
            last = f"ID read 0x{v:08x}"
        except TimeoutError as e:
            last = str(e)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                last = f"local UDP port {ETHERBONE_PORT} in use, probing with ping"
                if subprocess.run(["ping", "-q", "-c", "1", "-W", "1", ip],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
                    print(f"simnet: {last}: {ip} answers", file=sys.stderr)
                    return 0
            else:
                # e.g. bind() while the tap's address is not usable yet
                last = str(e)
                time.sleep(0.5)
    print(f"simnet: {ip} not ready after {timeout} s ({last})", file=sys.stderr)
    return 1


def main():
    p = argparse.ArgumentParser(description=__doc__)
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("probe", help="wait until the core's ID register reads LVSN over Etherbone")
    pr.add_argument("--ip", required=True)
    pr.add_argument("--bind", default="")
    pr.add_argument("--timeout", type=float, default=120)
    args = p.parse_args()
    if args.cmd == "probe":
        sys.exit(probe(args.ip, args.bind, args.timeout))


if __name__ == "__main__":
    main()
