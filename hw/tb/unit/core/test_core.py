"""lvsnic_core top-level tests (cocotb + cocotbext-axi), DATA_WIDTH 64 and
512, small tables (16 buckets per way, 16 actions).

* ``registers``: identification, capability and reset values, read/write
  registers, flow/action staging, command read-back (READ returns the slot
  and its pair partner), WRITE_PAIR.
* ``ipv6_pairs``: an IPv6 entry written with WRITE_PAIR whose tail, read as
  an IPv4 slot, is valid (ipv6 0) with the key of a test frame: the frame
  goes to the host as MISS_VIP; READ returns the pair (from either slot)
  and zero last_hit for both; the same 160 bits written as a plain IPv4
  slot with WRITE are matched (forwarded, last_hit set); an action with
  ipv6 set sends its flow's frames to the host as ACTION_HOST (not
  counted, last_hit unchanged).
* ``ipv6_frames``: IPv6 frames of a DR and a NAT flow (an IPv6 pair and an
  IPv6 action), one with hop limit 1 and one with a Hop-by-Hop header:
  with IPV6 = 1 the two flows are forwarded and the others go to the host
  (TTL, IP_OPTIONS); with IPV6 = 0 (the Versa ECP5 build) every one goes
  to the host as NON_IPV4 and CAPS1.ipv6 reads 0. The build
  ``core64_noipv6`` runs ``registers``, ``smoke`` and this test with
  IPV6 = 0.
* ``smoke``: programs MAC/IP/VIP/flows/actions through AXI-Lite, sends NAT
  (DNAT TCP, SNAT UDP), DR, IPIP (DF copied / not) and padded frames plus one
  frame per exception reason, a truncated frame and injected frames, and
  checks every output frame byte for byte against lvsnic_ref (an independent
  Python reading of docs/hardware.md; the rewritten frames are also
  re-verified with scapy's checksum computation), then the action counters,
  last_hit and the global/per-reason counters.
* ``random_traffic``: random mixes of flows and exceptions, random frame
  lengths, random tvalid gaps and tready backpressure, against lvsnic_ref.
* ``throughput``: back-to-back established-flow frames with tready high:
  input utilisation >= 0.99 (IPIP: limited by its 20 extra bytes), and the
  first-beat-in to first-beat-out latency.
"""

import os
import random
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, ReadOnly
from cocotbext.axi import (AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame,
                           AxiStreamSink, AxiStreamSource)

import lvsnic_ref as R
import lvsnic_regs as RM
from lvsnic_tb import quiet_loggers

B_LOG2 = 4
A_LOG2 = 4
VIPS = 4
# the core's IPV6 parameter (the runner below passes it to the build and to
# the test through LVSNIC_IPV6)
IPV6 = int(os.environ.get("LVSNIC_IPV6", "1"))

DIR_MAC = bytes.fromhex("020000000001")
DIR_IP = 0x0A000001           # 10.0.0.1
DIR_IP6 = 0x20010DB800FF << 80 | 1   # 2001:db8:ff::1
VIP = 0x0A000064              # 10.0.0.100
CLIENT = 0xC000020A           # 192.0.2.10
RS = 0x0A010005               # 10.1.0.5
RS_MAC = bytes.fromhex("02aaaaaaaa05")
GW_MAC = bytes.fromhex("02bbbbbbbb01")


def ip_str(a):
    return ".".join(str((a >> s) & 0xFF) for s in (24, 16, 8, 0))


def mac_str(m):
    return ":".join(f"{b:02x}" for b in m)


class TB:
    def __init__(self, dut):
        self.dut = dut
        quiet_loggers()
        self.W = len(dut.s_axis_rx_tkeep)
        cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
        self.rx = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_rx"), dut.clk, dut.rst)
        self.inj = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_inject"), dut.clk, dut.rst)
        self.tx = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_tx"), dut.clk, dut.rst)
        self.host = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_host"), dut.clk, dut.rst)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for o in (self.rx, self.inj, self.tx, self.host, self.axil.write_if, self.axil.read_if):
            o.log.setLevel("WARNING")
        self.ref = R.Ref(B_LOG2, A_LOG2, VIPS, ipv6=bool(IPV6))

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        while await self.rd(RM.FLOW_STATUS) & 1:
            pass
        while await self.rd(RM.ACT_STATUS) & 1:
            pass

    async def rd(self, a):
        return await self.axil.read_dword(a)

    async def wr(self, a, v):
        await self.axil.write_dword(a, v)

    async def configure(self, enable=True, pmtu=True, mtu=1500):
        r = self.ref
        r.mac, r.ip, r.mtu, r.enable, r.pmtu = DIR_MAC, DIR_IP, mtu, enable, pmtu
        r.ip6 = DIR_IP6 if IPV6 else 0
        await self.wr(RM.MAC_LO, int.from_bytes(DIR_MAC[2:6], "big"))
        await self.wr(RM.MAC_HI, int.from_bytes(DIR_MAC[0:2], "big"))
        await self.wr(RM.IP, DIR_IP)
        for i in range(RM.IP6_LEN):
            await self.wr(RM.IP6_BASE + RM.IP6_STRIDE * i, DIR_IP6 >> (96 - 32 * i) & 0xFFFFFFFF)
        await self.wr(RM.MTU, mtu)
        await self.set_vip(0, VIP)
        await self.wr(RM.CTRL, int(enable) | int(pmtu) << 1)

    async def set_ctrl(self, enable, pmtu):
        self.ref.enable, self.ref.pmtu = enable, pmtu
        await self.wr(RM.CTRL, int(enable) | int(pmtu) << 1)

    async def set_vip(self, i, addr, valid=True):
        self.ref.vips[i] = (valid, addr)
        await self.wr(RM.VIP_BASE + RM.VIP_STRIDE * i, addr)
        vv = sum(1 << k for k, (v, _) in enumerate(self.ref.vips) if v)
        await self.wr(RM.VIP_VALID, vv)

    async def write_flow(self, way, bucket, slot, entry):
        """FLOW_CMD WRITE of one 160-bit slot."""
        idx = self.ref.slot_index(way, bucket, slot)
        await R.table_write(self.wr, self.rd, R.flow_write_regs(idx, entry), RM.FLOW_STATUS)
        self.ref.write_slot(idx, entry)

    async def write_flow_pair(self, idx, entry):
        """FLOW_CMD WRITE_PAIR of 320 bits (an IPv6 entry) at the pair of idx."""
        await R.table_write(self.wr, self.rd, R.flow_write_regs(idx, entry, pair=True), RM.FLOW_STATUS)
        self.ref.write_pair(idx, entry)

    async def read_flow_pair(self, idx):
        """FLOW_CMD READ: ({slot idx ^ 1, slot idx}, last_hit of idx)."""
        return await R.flow_read(self.wr, self.rd, idx)

    async def read_flow(self, idx):
        """FLOW_CMD READ: (slot idx, its last_hit)."""
        e, lh = await self.read_flow_pair(idx)
        return e & ((1 << R.SLOT_BITS) - 1), lh

    async def write_action(self, idx, entry):
        await R.table_write(self.wr, self.rd, R.action_write_regs(idx, entry), RM.ACT_STATUS)
        self.ref.actions[idx] = entry
        self.ref.pkts[idx] = 0
        self.ref.bytes[idx] = 0

    async def read_action(self, idx):
        return await R.action_read(self.wr, self.rd, idx)

    async def counter(self, n):
        lo = await self.rd(RM.CNT_BASE + RM.CNT_STRIDE * n + RM.CNT_LO_OFFSET)
        hi = await self.rd(RM.CNT_BASE + RM.CNT_STRIDE * n + RM.CNT_HI_OFFSET)
        return hi << 32 | lo

    async def install(self, proto, src, dst, sport, dport, act, ack_fast=True, way=None, slot=None):
        """Installs a flow in the first free slot of its way-0 (or way-1)
        bucket, as a host would."""
        b0, b1 = self.ref.buckets(src, dst, sport, dport)
        ways = [way] if way is not None else [0, 1]
        for w in ways:
            b = b0 if w == 0 else b1
            slots = [slot] if slot is not None else range(4)
            for s in slots:
                # free, and not the tail of an IPv6 pair
                if not self.ref.flows.get((w, b, s), 0) & 1 and not (s & 1 and self.ref.flows.get((w, b, s - 1), 0) & 5 == 5):
                    await self.write_flow(w, b, s, R.flow_entry(proto, src, dst, sport, dport, act, ack_fast))
                    return self.ref.slot_index(w, b, s)
        raise RuntimeError("bucket full")


# ----------------------------------------------------------------------
# frame builders (scapy)
# ----------------------------------------------------------------------
def tcp_frame(src, dst, sport, dport, flags="A", payload=b"", dmac=DIR_MAC, smac=GW_MAC,
              ttl=64, tos=0, df=True, ip_id=1234, pad_to=0, **ipkw):
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    p = (Ether(dst=mac_str(dmac), src=mac_str(smac)) /
         IP(src=ip_str(src), dst=ip_str(dst), ttl=ttl, tos=tos, flags="DF" if df else 0, id=ip_id, **ipkw) /
         TCP(sport=sport, dport=dport, flags=flags, seq=1000, ack=2000) / payload)
    b = bytes(p)
    return b + bytes(max(0, pad_to - len(b)))


def udp_frame(src, dst, sport, dport, payload=b"", dmac=DIR_MAC, smac=GW_MAC, ttl=64, zero_csum=False,
              df=False, ip_id=77, pad_to=0):
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    p = (Ether(dst=mac_str(dmac), src=mac_str(smac)) /
         IP(src=ip_str(src), dst=ip_str(dst), ttl=ttl, flags="DF" if df else 0, id=ip_id) /
         UDP(sport=sport, dport=dport) / payload)
    b = bytearray(bytes(p))
    if zero_csum:
        b[40:42] = b"\0\0"
    return bytes(b) + bytes(max(0, pad_to - len(b)))


def check_l3l4(frame, tun):
    """Independent check of the output with scapy: recompute every checksum
    and compare with the frame's."""
    from scapy.layers.inet import IP, TCP, UDP
    from scapy.layers.l2 import Ether
    e = Ether(frame)
    ips = [e[IP]]
    if tun:
        assert e[IP].proto == 4
        ips.append(e[IP].payload)
    for ip in ips:
        c = ip.chksum
        ip2 = ip.copy()
        del ip2.chksum
        assert IP(bytes(ip2)).chksum == c, "IPv4 header checksum"
    inner = ips[-1]
    for L in (TCP, UDP):
        if L in inner and inner[L].chksum != 0:
            c = inner[L].chksum
            q = inner.copy()
            del q[L].chksum
            assert IP(bytes(q))[L].chksum == c, f"{L.__name__} checksum"


# ----------------------------------------------------------------------
# traffic driver / checker
# ----------------------------------------------------------------------
def user_first_last(f):
    u = f.tuser
    if isinstance(u, list):
        return u[0], u[-1]
    return u, u


async def run_frames(tb, frames, inject=(), timeout_cycles=200000):
    """Sends frames (list of bytes) on rx with ts/seq, and inject frames;
    returns the list of (tx frames) and (host frames) received, and checks
    them against the reference. The reference is applied in rx order."""
    exp_tx, exp_host = [], []
    for i, f in enumerate(frames):
        ts = 0x1000_0000_0000 + i * 977
        seq = 0x5000 + i
        r = tb.ref.process(f, ts, seq)
        if r[0] == "tx":
            exp_tx.append(("fwd", r[1], seq))
        elif r[0] == "host":
            exp_host.append((r[1], r[2]))
        else:
            exp_tx.append(("abort", None, seq))
            exp_host.append((r[1], r[2]))
        await tb.rx.send(AxiStreamFrame(f, tuser=(seq << 64) | ts))
    for j, f in enumerate(inject):
        await tb.inj.send(AxiStreamFrame(f, tuser=0x9000 + j))
    n_inj = len(inject)
    got_tx, got_host = [], []
    cycles = 0
    while len(got_tx) < len(exp_tx) + n_inj or len(got_host) < len(exp_host):
        await RisingEdge(tb.dut.clk)
        cycles += 1
        if cycles >= timeout_cycles:
            dump_state(tb)
        assert cycles < timeout_cycles, f"timeout: tx {len(got_tx)}/{len(exp_tx) + n_inj} host {len(got_host)}/{len(exp_host)}"
        while not tb.tx.empty():
            got_tx.append(tb.tx.recv_nowait())
        while not tb.host.empty():
            got_host.append(tb.host.recv_nowait())
    # nothing extra after a while
    for _ in range(50):
        await RisingEdge(tb.dut.clk)
    assert tb.tx.empty() and tb.host.empty(), "unexpected extra output frames"

    # host frames: exact bytes and metadata, in order
    for k, ((ef, em), g) in enumerate(zip(exp_host, got_host)):
        u0, u1 = user_first_last(g)
        assert u0 == u1, "host tuser not held"
        assert bytes(g.tdata) == ef, f"host frame {k}: bytes differ\n got {bytes(g.tdata).hex()}\n exp {ef.hex()}"
        assert u0 == em, f"host frame {k}: meta {u0:#042x} != {em:#042x}"
    # tx: forwarded/aborted frames in order, injected frames in order,
    # interleaved at frame boundaries
    fwd = [g for g in got_tx if (user_first_last(g)[0] & 0xFFFFFFFF) < 0x9000]
    inj = [g for g in got_tx if (user_first_last(g)[0] & 0xFFFFFFFF) >= 0x9000]
    assert len(fwd) == len(exp_tx) and len(inj) == n_inj
    for k, ((kind, ef, seq), g) in enumerate(zip(exp_tx, fwd)):
        u0, u1 = user_first_last(g)
        assert u0 & 0xFFFFFFFF == seq, f"tx frame {k}: seq {u0 & 0xFFFFFFFF:#x} != {seq:#x}"
        if kind == "fwd":
            assert not (u1 >> 32) & 1, f"tx frame {k}: unexpected abort"
            assert bytes(g.tdata) == ef, f"tx frame {k}: bytes differ\n got {bytes(g.tdata).hex()}\n exp {ef.hex()}"
        else:
            assert (u1 >> 32) & 1, f"tx frame {k}: abort expected"
    for j, (f, g) in enumerate(zip(inject, inj)):
        assert bytes(g.tdata) == f and user_first_last(g)[1] == 0x9000 + j
    return [g for k, g in zip(exp_tx, fwd) if k[0] == "fwd"], got_host


def dump_state(tb):
    d = tb.dut
    eg = d.u_egress
    names = ["cur_v", "cur_fwd", "cur_skip", "cur_rep", "rd_ptr", "wr_ptr", "free_ptr", "pv", "pf_count",
             "dq_v", "tx_cred", "host_cred", "ev_cred", "jrem", "krem", "need_read", "in_done",
             "pre_left", "space_ok"]
    out = []
    for n in names:
        try:
            out.append(f"{n}={int(getattr(eg, n).value)}")
        except AttributeError:
            out.append(f"{n}=?")
    for n in ("inflight", "init_cnt", "s0_v", "s11_v"):
        out.append(f"lk.{n}={int(getattr(d.u_lookup, n).value)}")
    out.append(f"rx_tready={int(d.s_axis_rx_tready.value)} rx_tvalid={int(d.s_axis_rx_tvalid.value)}")
    out.append(f"ing.beat_idx={int(d.u_ingress.beat_idx.value)}")
    out.append(f"rxq={tb.rx.count()} rx_idle={tb.rx.idle()} txq={tb.tx.count()} hostq={tb.host.count()}")
    out.append(f"tx_tready={int(d.m_axis_tx_tready.value)} host_tready={int(d.m_axis_host_tready.value)}")
    out.append(f"host_tvalid={int(d.m_axis_host_tvalid.value)} tx_tvalid={int(d.m_axis_tx_tvalid.value)}")
    d._log.error("state: " + " ".join(out))


async def setup(dut, **cfg):
    tb = TB(dut)
    await tb.reset()
    await tb.configure(**cfg)
    return tb


async def install_services(tb):
    """Actions and flows used by the smoke test. Returns a dict of slot
    indices."""
    slots = {}
    # action 1: DNAT VIP:80 -> RS:8080 (request path)
    await tb.write_action(1, R.action_entry(R.OP_DNAT, RS_MAC, RS, 8080, R.l4_delta(VIP, RS, 80, 8080)))
    # action 2: SNAT RS:53 -> VIP:53 (reply path), UDP
    await tb.write_action(2, R.action_entry(R.OP_SNAT, GW_MAC, VIP, 53, R.l4_delta(RS, VIP, 53, 53)))
    # action 3: DR to the real server
    await tb.write_action(3, R.action_entry(R.OP_ROUTE, RS_MAC))
    # action 4: IPIP to the real server
    await tb.write_action(4, R.action_entry(R.OP_TUNNEL, RS_MAC, RS))
    # action 5: SNAT TCP reply RS:8080 -> VIP:80
    await tb.write_action(5, R.action_entry(R.OP_SNAT, GW_MAC, VIP, 80, R.l4_delta(RS, VIP, 8080, 80)))
    # action 6: DNAT UDP VIP:53 -> RS:5353
    await tb.write_action(6, R.action_entry(R.OP_DNAT, RS_MAC, RS, 5353, R.l4_delta(VIP, RS, 53, 5353)))
    slots["dnat"] = await tb.install(6, CLIENT, VIP, 40000, 80, 1)
    slots["snat_udp"] = await tb.install(17, RS, CLIENT, 53, 5353, 2)
    slots["dr"] = await tb.install(6, CLIENT, VIP, 40001, 443, 3)
    slots["tun"] = await tb.install(6, CLIENT, VIP, 40002, 80, 4)
    slots["snat_tcp"] = await tb.install(6, RS, CLIENT, 8080, 40000, 5)
    slots["noack"] = await tb.install(6, CLIENT, VIP, 40003, 80, 1, ack_fast=False)
    slots["dnat_udp"] = await tb.install(17, CLIENT, VIP, 5000, 53, 6)
    # action 7: DR to the real server, its flows diverted to the host (`host` bit)
    await tb.write_action(7, R.action_entry(R.OP_ROUTE, RS_MAC, host=True))
    slots["diverted"] = await tb.install(6, CLIENT, VIP, 40005, 443, 7)
    # way 1 placement
    slots["dr_w1"] = await tb.install(6, CLIENT, VIP, 40004, 443, 3, way=1, slot=2)
    return slots


@cocotb.test()
async def registers(dut):
    tb = TB(dut)
    await tb.reset()
    W = tb.W * 8
    assert await tb.rd(RM.ID) == 0x4C56534E
    assert await tb.rd(RM.VERSION) == RM.VERSION_RESET == 0x00020000
    assert await tb.rd(RM.CAPS0) == W | B_LOG2 << 16 | A_LOG2 << 24
    assert await tb.rd(RM.CAPS1) == 4 | 2 << 8 | VIPS << 16 | IPV6 << 24 | IPV6 << 25   # ipv6, tun6
    # IP6[0..3]: the director's IPv6 address (IPV6 = 0: read 0, writes ignored)
    for i in range(RM.IP6_LEN):
        await tb.wr(RM.IP6_BASE + 4 * i, 0x20010DB8 + i)
    for i in range(RM.IP6_LEN):
        assert await tb.rd(RM.IP6_BASE + 4 * i) == (0x20010DB8 + i if IPV6 else 0), f"IP6[{i}]"
    assert await tb.rd(RM.CTRL) == 2            # enable 0, pmtu_disc 1
    assert await tb.rd(RM.MTU) == 1500
    assert await tb.rd(RM.FLOW_STATUS) == 0 and await tb.rd(RM.ACT_STATUS) == 0
    await tb.wr(RM.MAC_LO, 0x11223344)
    await tb.wr(RM.MAC_HI, 0xFFFF5566)
    assert await tb.rd(RM.MAC_LO) == 0x11223344
    assert await tb.rd(RM.MAC_HI) == 0x5566
    await tb.axil.write(RM.IP, b"\xaa")            # byte strobe: only byte 0
    assert await tb.rd(RM.IP) == 0xAA
    await tb.wr(RM.VIP_VALID, 0xFFFFFFFF)
    assert await tb.rd(RM.VIP_VALID) == (1 << VIPS) - 1
    await tb.wr(RM.VIP_BASE + 4 * (VIPS - 1), 0xDEADBEEF)
    assert await tb.rd(RM.VIP_BASE + 4 * (VIPS - 1)) == 0xDEADBEEF
    assert await tb.rd(RM.VIP_BASE + 4 * VIPS) == 0    # beyond VIP_COUNT
    assert await tb.rd(0x5FC) == 0 and await tb.rd(0x040) == 0
    # staging words are write-only: they read 0 (what they hold is read
    # back through RDATA once written to a table, below)
    for i in range(RM.FLOW_DATA_LEN):
        await tb.wr(RM.FLOW_DATA_BASE + 4 * i, 0xA5000000 | i)
    for i in range(RM.ACT_DATA_LEN):
        await tb.wr(RM.ACT_DATA_BASE + 4 * i, 0x5A000000 | i)
    for i in range(RM.FLOW_DATA_LEN):
        assert await tb.rd(RM.FLOW_DATA_BASE + 4 * i) == 0
    for i in range(RM.ACT_DATA_LEN):
        assert await tb.rd(RM.ACT_DATA_BASE + 4 * i) == 0
    # flow write / read back through the lookup pipeline (all 160 bits,
    # reserved ones too)
    e = R.flow_entry(6, 0x01020304, 0x05060708, 0x1111, 0x2222, 0xABCD) | 0x3C << 2 | 0xC001D00D << 128
    await tb.write_flow(1, 5, 3, e)
    got, lh = await tb.read_flow(tb.ref.slot_index(1, 5, 3))
    assert got == e and lh == 0
    got, _ = await tb.read_flow(tb.ref.slot_index(0, 5, 3))
    assert got == 0
    # READ returns the slot in 159:0 and its pair partner in 319:160
    got, _ = await tb.read_flow_pair(tb.ref.slot_index(1, 5, 2))
    assert got == e << R.SLOT_BITS
    # WRITE_PAIR (odd index: its pair), both halves read back from either slot
    p = R.flow6_entry(17, 0x20010DB8 << 96 | 1, 0x20010DB8 << 96 | 2, 53, 5353, 0x1234)
    await tb.write_flow_pair(tb.ref.slot_index(0, 6, 3), p)
    lo, hi = R.pair_halves(p)
    assert await tb.read_flow_pair(tb.ref.slot_index(0, 6, 2)) == (p, 0)
    assert await tb.read_flow_pair(tb.ref.slot_index(0, 6, 3)) == (lo << R.SLOT_BITS | hi, 0)
    assert (await tb.read_flow_pair(tb.ref.slot_index(0, 6, 0)))[0] == 0
    a = R.action_entry(3, RS_MAC, 0x0A0B0C0D, 0x1234, 0x5678) | 0xFEEDF00D << 224
    await tb.write_action(7, a)
    got, pk, by = await tb.read_action(7)
    assert (got, pk, by) == (a, 0, 0)
    a6 = R.action_entry(1, RS_MAC, 0x20010DB8 << 96 | 0x5, 0x1F90, 0x4321, ipv6=True)
    await tb.write_action(8, a6)
    assert await tb.read_action(8) == (a6, 0, 0)
    assert await tb.rd(RM.ACT_INDEX) == 8
    await tb.wr(RM.FLOW_INDEX, 0xFFFFFFFF)
    assert await tb.rd(RM.FLOW_INDEX) == (1 << (B_LOG2 + 3)) - 1
    # ACT_CMD 3 is ignored (not busy, action unchanged)
    await tb.wr(RM.ACT_DATA_BASE, 0)
    await tb.wr(RM.ACT_INDEX, 8)
    await tb.wr(RM.ACT_CMD, 3)
    assert await tb.rd(RM.ACT_STATUS) == 0
    assert (await tb.read_action(8))[0] == a6
    # counters are zero after reset
    for n in (0, 1, 2, 3, 33, 51):
        assert await tb.counter(n) == 0


@cocotb.test()
async def smoke(dut):
    tb = await setup(dut)
    slots = await install_services(tb)
    pay = bytes(range(256)) * 16

    frames = []
    # forwarded
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, payload=pay[:100]))                  # DNAT TCP
    frames.append(udp_frame(RS, CLIENT, 53, 5353, payload=pay[:33]))                      # SNAT UDP
    frames.append(tcp_frame(CLIENT, VIP, 40001, 443, payload=pay[:1]))                    # DR
    frames.append(tcp_frame(CLIENT, VIP, 40002, 80, payload=pay[:200], tos=0x03))         # TUN, DF, CE
    frames.append(tcp_frame(CLIENT, VIP, 40002, 80, payload=pay[:7], df=False, tos=0xB9))  # TUN, no DF
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, pad_to=60))                           # padded ACK
    frames.append(tcp_frame(RS, CLIENT, 8080, 40000, payload=pay[:1000], flags="PA"))    # SNAT TCP
    frames.append(tcp_frame(CLIENT, VIP, 40004, 443, payload=pay[:64]))                   # way 1
    frames.append(udp_frame(CLIENT, VIP, 5000, 53, payload=b"", pad_to=60))             # DNAT UDP padded, tl 28
    # exceptions
    frames.append(tcp_frame(CLIENT, VIP, 12345, 80, flags="S"))                           # MISS_VIP (SYN)
    frames.append(tcp_frame(CLIENT, DIR_IP, 22, 22))                                      # MISS_LOCAL
    frames.append(tcp_frame(CLIENT, 0x0A000099, 1, 2))                                    # MISS
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, flags="SA"))                          # TCP_CONTROL
    frames.append(tcp_frame(CLIENT, VIP, 40003, 80))                                      # TCP_CONTROL ack_fast=0
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, flags="FA"))                          # TCP_CONTROL FIN
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, flags="P"))                           # TCP_CONTROL no ACK
    frames.append(udp_frame(CLIENT, VIP, 5000, 53, payload=b"x", zero_csum=True))         # UDP_ZERO_CSUM
    frames.append(tcp_frame(CLIENT, VIP, 40005, 443, payload=pay[:10]))                   # ACTION_HOST
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, payload=pay[:1500 - 40 + 1]))         # TOO_BIG
    frames.append(tcp_frame(CLIENT, VIP, 40002, 80, payload=pay[:1500 - 40 - 19]))        # TOO_BIG (TUN +20)
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, ttl=1))                                # TTL
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, dmac=b"\xff" * 6))                    # L2_MULTICAST
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, dmac=bytes.fromhex("020000000002")))  # L2_OTHER_HOST
    f = bytearray(tcp_frame(CLIENT, VIP, 40000, 80))
    frames.append(bytes(f[:12] + b"\x81\x00\x00\x05" + f[12:]))                           # VLAN
    frames.append(DIR_MAC + GW_MAC + b"\x08\x06" + bytes(28))                           # NON_IPV4 (ARP)
    frames.append(bytes(10))                                                              # MALFORMED runt
    frames.append(DIR_MAC + GW_MAC + b"\x08\x00" + bytes(range(19)))                    # MALFORMED 33 bytes
    from scapy.layers.inet import IP, TCP, ICMP
    from scapy.layers.l2 import Ether
    frames.append(bytes(Ether(dst=mac_str(DIR_MAC), src=mac_str(GW_MAC)) /
                        IP(src=ip_str(CLIENT), dst=ip_str(VIP), options=b"\x01\x01\x01\x00") /
                        TCP(sport=40000, dport=80, flags="A")))                           # IP_OPTIONS
    f = bytearray(tcp_frame(CLIENT, VIP, 40000, 80))
    f[24] ^= 0x55
    frames.append(bytes(f))                                                               # IP_CHECKSUM
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, frag=5))                              # FRAGMENT
    frames.append(bytes(Ether(dst=mac_str(DIR_MAC), src=mac_str(GW_MAC)) /
                        IP(src=ip_str(CLIENT), dst=ip_str(VIP)) / ICMP()))                # NOT_TCP_UDP
    f = bytearray(tcp_frame(CLIENT, VIP, 40000, 80))
    f[16:18] = (39).to_bytes(2, "big")
    f[24:26] = b"\0\0"
    f[24:26] = R.csum(bytes(f[14:34])).to_bytes(2, "big")
    frames.append(bytes(f))                                                               # L4_TRUNCATED
    # truncated: forwardable header, frame shorter than 14 + total length
    f = tcp_frame(CLIENT, VIP, 40000, 80, payload=pay[:300])
    frames.append(f[:14 + 20 + 20 + 100])                                                 # TRUNCATED
    frames.append(f[:50])                                                                 # TRUNCATED inside header
    frames.append(tcp_frame(CLIENT, VIP, 40001, 443, payload=pay[:3000 - 54], df=False)[:2000])  # long, TOO_BIG
    frames.append(DIR_MAC + GW_MAC + b"\x86\xdd" + pay[:2999])                          # long host frame
    frames.append(bytes([0x02]))                                                          # 1-byte frame
    # forwarded again after all that (state intact)
    frames.append(tcp_frame(CLIENT, VIP, 40000, 80, payload=pay[:5]))
    frames.append(tcp_frame(CLIENT, VIP, 40002, 80, payload=pay[:64 - 54]))

    inject = [bytes(range(60)), pay[:1517], b"\x55"]
    fwd, host = await run_frames(tb, frames, inject)

    # every exception reason seen
    seen = sorted({(g.tuser[0] if isinstance(g.tuser, list) else g.tuser) & 0xFF for g in host})
    assert seen == list(range(1, 18)) + [19, 20], str(seen)
    for g in fwd:
        d = bytes(g.tdata)
        check_l3l4(d, tun=d[23] == 4)

    # counters
    for idx in (1, 2, 3, 4, 5, 6, 7):
        e, pk, by = await tb.read_action(idx)
        assert e == tb.ref.actions[idx]
        assert (pk, by) == (tb.ref.pkts.get(idx, 0), tb.ref.bytes.get(idx, 0)), (idx, pk, by)
    for name, s in slots.items():
        e, lh = await tb.read_flow(s)
        assert lh == tb.ref.last_hit.get(s, 0), (name, hex(lh))
    rx = await tb.counter(0)
    assert rx == len(frames)
    assert await tb.counter(1) == len(fwd)
    assert await tb.counter(2) == len(host)
    assert await tb.counter(3) == len(inject)
    per = {}
    for g in host:
        r = (g.tuser[0] if isinstance(g.tuser, list) else g.tuser) & 0xFF
        per[r] = per.get(r, 0) + 1
    for r in range(1, len(R.Reason)):
        assert await tb.counter(32 + r) == per.get(r, 0), r
    assert await tb.counter(32) == 0

    # DISABLED, and hit/vip/hash not reported
    await tb.set_ctrl(False, True)
    await run_frames(tb, [tcp_frame(CLIENT, VIP, 40000, 80)])
    # pmtu_disc off: IPIP outer DF clear, ID = inner ID
    await tb.set_ctrl(True, False)
    fwd, _ = await run_frames(tb, [tcp_frame(CLIENT, VIP, 40002, 80, payload=b"abc", ip_id=0x4242)])
    assert bytes(fwd[0].tdata)[18:22] == b"\x42\x42\x00\x00"
    # an entry rewritten in place is used by the next frames, last_hit zeroed
    await tb.write_flow(*divmod_slot(tb, slots["dr"]), R.flow_entry(6, CLIENT, VIP, 40001, 443, 4))
    e, lh = await tb.read_flow(slots["dr"])
    assert lh == 0
    await run_frames(tb, [tcp_frame(CLIENT, VIP, 40001, 443, payload=b"z" * 10)])


@cocotb.test()
async def ipv6_pairs(dut):
    """IPv6 slot pairs (WRITE_PAIR) never match an IPv4 frame through their
    tail; the same bits as an IPv4 slot (WRITE) do; an IPv6 action sends
    IPv4 frames to the host as ACTION_HOST."""
    tb = await setup(dut)
    await tb.write_action(3, R.action_entry(R.OP_ROUTE, RS_MAC))
    await tb.write_action(9, R.action_entry(R.OP_ROUTE, RS_MAC, 0x20010DB8 << 96 | 0x63, ipv6=True))
    key = (6, CLIENT, VIP, 41000, 443)
    b0, _ = tb.ref.buckets(*key[1:])
    # the pair 2-3 of way 0: head an IPv6 entry, tail = the IPv4 image of key
    head = R.pair_halves(R.flow6_entry(6, 0x20010DB8 << 96 | 0xC1, 0, 0, 0, 3))[0]
    tail = R.flow_entry(*key, 3)
    assert R.get(tail, "FLOW_ENTRY_VALID") == 1 and R.get(tail, "FLOW_ENTRY_IPV6") == 0
    pair = head | tail << R.SLOT_BITS
    even = tb.ref.slot_index(0, b0, 2)
    await tb.write_flow_pair(even, pair)
    assert await tb.read_flow_pair(even) == (pair, 0)
    assert await tb.read_flow_pair(even + 1) == (tail | head << R.SLOT_BITS, 0)
    frame = tcp_frame(CLIENT, VIP, 41000, 443, payload=b"six" * 10)
    fwd, host = await run_frames(tb, [frame])          # compared with lvsnic_ref
    assert not fwd and len(host) == 1
    assert (host[0].tuser[0] if isinstance(host[0].tuser, list) else host[0].tuser) & 0xFF == R.Reason.MISS_VIP
    # the same 160 bits as a plain IPv4 slot (WRITE): matched
    await tb.write_flow(0, b0, 0, tail)
    fwd, host = await run_frames(tb, [frame])
    assert len(fwd) == 1 and not host
    e, lh = await tb.read_flow(tb.ref.slot_index(0, b0, 0))
    assert e == tail and lh == tb.ref.last_hit[tb.ref.slot_index(0, b0, 0)] != 0
    # removed with WRITE_PAIR of zeros; the IPv4 slot now points at an IPv6 action
    await tb.write_flow_pair(even, 0)
    assert await tb.read_flow_pair(even) == (0, 0)
    await tb.write_flow(0, b0, 0, R.flow_entry(*key, 9))
    pk0 = await tb.counter(1)
    fwd, host = await run_frames(tb, [frame])
    assert not fwd and len(host) == 1
    assert (host[0].tuser[0] if isinstance(host[0].tuser, list) else host[0].tuser) & 0xFF == R.Reason.ACTION_HOST
    assert await tb.read_action(9) == (tb.ref.actions[9], 0, 0)
    assert await tb.read_flow(tb.ref.slot_index(0, b0, 0)) == (R.flow_entry(*key, 9), 0)
    assert await tb.counter(1) == pk0


def tcp6_frame(src, dst, sport, dport, hl=64, payload=b"", hbh=False):
    """An Ethernet/IPv6/TCP ACK frame to the director (scapy: checksum over
    the IPv6 pseudo-header); `hbh` puts an empty Hop-by-Hop header first."""
    import ipaddress
    from scapy.layers.inet import TCP
    from scapy.layers.inet6 import IPv6, IPv6ExtHdrHopByHop
    from scapy.layers.l2 import Ether
    ip = IPv6(src=str(ipaddress.IPv6Address(src)), dst=str(ipaddress.IPv6Address(dst)), hlim=hl, tc=0x2e, fl=0x12345)
    l4 = TCP(sport=sport, dport=dport, flags="A", seq=1000, ack=2000) / payload
    p = Ether(dst=mac_str(DIR_MAC), src=mac_str(GW_MAC)) / ip / (IPv6ExtHdrHopByHop() / l4 if hbh else l4)
    return bytes(p)


@cocotb.test()
async def ipv6_frames(dut):
    """IPv6 DR and NAT flows, an ip6ip6 tunnel and an IPv4-in-IPv6 one
    forwarded with IPV6 = 1; every IPv6 frame to the host as NON_IPV4 and
    the IPv4-in-IPv6 one as ACTION_HOST with IPV6 = 0 (compared with
    lvsnic_ref, which takes the parameter; the tunnels also checked with
    scapy)."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    import ipaddress
    tb = await setup(dut)
    client, vip6, rs6 = 0x20010DB8000C << 80 | 7, 0x20010DB8 << 96 | 0x10, 0x20010DB8000A << 80 | 5
    await tb.write_action(5, R.action_entry(R.OP_ROUTE, RS_MAC, rs6, ipv6=True))
    await tb.write_action(6, R.action_entry(R.OP_DNAT, RS_MAC, rs6, 8080, R.l4_delta6(vip6, rs6, 80, 8080), ipv6=True))
    await tb.write_action(7, R.action_entry(R.OP_TUNNEL, RS_MAC, rs6, ipv6=True))
    frames = []
    for i, (sport, act) in enumerate(((41000, 5), (41001, 6), (41002, 7))):
        b0, _ = tb.ref.buckets6(client, vip6, sport, 80)
        pair = next(p for p in (0, 2) if not tb.ref.flows.get((0, b0, p), 0) & 1)
        await tb.write_flow_pair(tb.ref.slot_index(0, b0, pair), R.flow6_entry(6, client, vip6, sport, 80, act))
        frames.append(tcp6_frame(client, vip6, sport, 80, payload=b"v6" * 20))
    # IPv4 in IPv6: an IPv4 flow on the IPv6 TUNNEL action (ECN CE -> ECT(0) outside)
    await tb.install(6, CLIENT, VIP, 40100, 80, 7)
    frames.append(tcp_frame(CLIENT, VIP, 40100, 80, payload=b"4in6" * 30, tos=0xB7))
    frames.append(tcp6_frame(client, vip6, 41000, 80, hl=1))
    frames.append(tcp6_frame(client, vip6, 41000, 80, hbh=True))
    fwd, host = await run_frames(tb, frames)            # compared with lvsnic_ref
    reasons = [(h.tuser[0] if isinstance(h.tuser, list) else h.tuser) & 0xFF for h in host]
    if IPV6:
        assert len(fwd) == 4, fwd
        assert reasons == [R.Reason.TTL, R.Reason.IP_OPTIONS], reasons
        for g, inner in zip(fwd[2:], ("ip6", "ip4")):
            e = Ether(bytes(g.tdata))
            o = e[IPv6]
            assert e.type == 0x86DD and o.nh == (41 if inner == "ip6" else 4), e.summary()
            assert (o.src, o.dst, o.fl, o.hlim) == (str(ipaddress.IPv6Address(DIR_IP6)), str(ipaddress.IPv6Address(rs6)), 0, 63)
            if inner == "ip6":
                i6 = o.payload
                assert o.plen == 40 + i6.plen and o.tc == i6.tc and i6.hlim == 63
                q = i6.copy()
                del q[TCP].chksum
                assert IPv6(bytes(q))[TCP].chksum == i6[TCP].chksum
            else:
                i4 = o.payload
                assert o.plen == i4.len and o.tc == 0xB6 and i4.tos == 0xB7 and i4.ttl == 63
                check_l3l4(bytes(Ether(src=e.src, dst=e.dst) / i4), tun=False)
    else:
        assert not fwd
        N = R.Reason.NON_IPV4
        assert reasons == [N, N, N, R.Reason.ACTION_HOST, N, N], reasons
        assert await tb.rd(RM.CAPS1) >> 24 & 3 == 0


def divmod_slot(tb, idx):
    B = tb.ref.B
    return idx >> (B + 2), (idx >> 2) & ((1 << B) - 1), idx & 3


def unpause(o):
    # clear_pause_generator() leaves `pause` at its last value
    o.clear_pause_generator()
    o.pause = False


def random_frame(rng, tb, flows):
    """A random frame: mostly established flows (some with odd flags/TTL),
    some misses and assorted junk; lengths up to ~1600 bytes."""
    k = rng.random()
    pay = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 5, 6, 7, 30, 63, 64, 65, 200, rng.randrange(0, 1460)])))
    if k < 0.65:
        proto, src, dst, sp, dp = rng.choice(flows)
        if proto == 6:
            fl = rng.choice(["A"] * 8 + ["PA", "S", "FA", "R", ""])
            f = tcp_frame(src, dst, sp, dp, flags=fl, payload=pay, ttl=rng.choice([64] * 10 + [1, 2]),
                          tos=rng.getrandbits(8), df=rng.random() < 0.7, ip_id=rng.getrandbits(16))
        else:
            f = udp_frame(src, dst, sp, dp, payload=pay, zero_csum=rng.random() < 0.1,
                          df=rng.random() < 0.5, ip_id=rng.getrandbits(16))
        r = rng.random()
        if r < 0.1:
            f = f + bytes(rng.randrange(1, 80))                       # padding
        elif r < 0.15:
            f = f[:rng.randrange(1, len(f))]                          # truncated
        elif r < 0.18:
            f = bytearray(f)
            f[rng.randrange(14, min(len(f), 54))] ^= 1 << rng.randrange(8)   # corrupt
            f = bytes(f)
        return f
    if k < 0.8:
        return tcp_frame(rng.getrandbits(32), rng.choice([VIP, DIR_IP, rng.getrandbits(32)]),
                         rng.getrandbits(16), rng.getrandbits(16), payload=pay)
    if k < 0.9:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 120)))
    return DIR_MAC + GW_MAC + b"\x08\x00" + bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 80)))


@cocotb.test()
async def random_traffic(dut):
    tb = await setup(dut)
    await install_services(tb)
    rng = random.Random(int(os.environ.get("LVSNIC_SEED", "12345")))
    flows = []
    for i in range(20):
        proto = rng.choice([6, 17])
        f = (proto, rng.getrandbits(32), VIP, rng.getrandbits(16), rng.choice([80, 443, 53]))
        act = rng.randrange(1, 6)
        try:
            await tb.install(*f, act, ack_fast=rng.random() < 0.9)
            flows.append(f)
        except RuntimeError:
            pass
    # a couple of actions pointing back at the MAC-only DR, TUN with pmtu
    n = int(os.environ.get("LVSNIC_RANDOM_FRAMES", "150"))
    for rnd in range(3):
        # backpressure / idle patterns
        if rnd == 1:
            tb.tx.set_pause_generator(iter(lambda: rng.random() < 0.5, None))
            tb.host.set_pause_generator(iter(lambda: rng.random() < 0.3, None))
            tb.rx.set_pause_generator(iter(lambda: rng.random() < 0.3, None))
        elif rnd == 2:
            tb.tx.set_pause_generator(iter(lambda: rng.random() < 0.9, None))
            tb.host.set_pause_generator(iter(lambda: rng.random() < 0.9, None))
            unpause(tb.rx)
        frames = [random_frame(rng, tb, flows) for _ in range(n // 3)]
        inject = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 200))) for _ in range(3)]
        await run_frames(tb, frames, inject, timeout_cycles=400000)
    unpause(tb.tx)
    unpause(tb.host)
    for idx in range(1, 6):
        e, pk, by = await tb.read_action(idx)
        assert (pk, by) == (tb.ref.pkts.get(idx, 0), tb.ref.bytes.get(idx, 0)), (idx, pk, by)


@cocotb.test()
async def length_sweep(dut):
    """Every frame length around the beat boundaries for every op (DNAT,
    SNAT, DR, IPIP; TCP and UDP), with Ethernet padding and truncated at
    every length, back to back (at 512 bits most are one-beat frames, one
    new frame per cycle): trimming, realignment and short-frame detection at
    every byte alignment."""
    tb = await setup(dut, mtu=9216)
    await install_services(tb)
    rng = random.Random(99)
    top = int(os.environ.get("LVSNIC_SWEEP_MAX", "200"))
    frames = []
    flows = [("tcp", (CLIENT, VIP, 40000, 80)), ("tcp", (RS, CLIENT, 8080, 40000)),
             ("tcp", (CLIENT, VIP, 40001, 443)), ("tcp", (CLIENT, VIP, 40002, 80)),
             ("udp", (RS, CLIENT, 53, 5353)), ("udp", (CLIENT, VIP, 5000, 53))]
    for L in range(42, top):
        for kind, fl in flows:
            if kind == "tcp":
                if L < 54:
                    continue
                f = tcp_frame(*fl, payload=bytes(rng.getrandbits(8) for _ in range(L - 54)), ip_id=L)
            else:
                f = udp_frame(*fl, payload=bytes(rng.getrandbits(8) for _ in range(L - 42)), ip_id=L)
            frames.append(f)
        # padding and truncation of one flow per length
        kind, fl = flows[L % len(flows)]
        f = frames[-1]
        frames.append(f + bytes(rng.randrange(1, 70)))
        frames.append(f[:rng.randrange(1, len(f))])
    for k in range(0, len(frames), 200):
        await run_frames(tb, frames[k:k + 200], timeout_cycles=100000)


@cocotb.test()
async def host_access_during_traffic(dut):
    """Flow/action reads, and writes to unrelated entries, while frames
    stream back to back: lookups are never corrupted by the stolen cycles
    or the read tokens."""
    tb = await setup(dut)
    slots = await install_services(tb)
    rng = random.Random(5)
    flows = [(6, CLIENT, VIP, 40000, 80), (6, CLIENT, VIP, 40001, 443), (6, CLIENT, VIP, 40002, 80),
             (17, RS, CLIENT, 53, 5353)]
    frames = []
    for i in range(240):
        p, *fl = rng.choice(flows)
        if p == 6:
            frames.append(tcp_frame(*fl, payload=bytes(rng.randrange(0, 100))))
        else:
            frames.append(udp_frame(*fl, payload=bytes(rng.randrange(0, 100))))
    used = {divmod_slot(tb, s) for s in slots.values()}
    free = [(w, b, s) for w in range(2) for b in range(1 << B_LOG2) for s in range(4) if (w, b, s) not in used]

    async def host():
        for i in range(40):
            if i % 4 == 0:
                w, b, s = rng.choice(free)
                await tb.write_flow(w, b, s, R.flow_entry(6, rng.getrandbits(32), rng.getrandbits(32), 1, 2, 9))
            elif i % 4 == 1:
                await tb.write_action(10 + i % 5, R.action_entry(R.OP_ROUTE, RS_MAC))
            elif i % 4 == 2:
                e, _ = await tb.read_flow(slots["dnat"])
                assert e == tb.ref.flows[divmod_slot(tb, slots["dnat"])]
            else:
                e, _, _ = await tb.read_action(1)
                assert e == tb.ref.actions[1]

    h = cocotb.start_soon(host())
    await run_frames(tb, frames)
    await h


@cocotb.test()
async def long_frames(dut):
    """The largest frames: a forwarded frame of total length 65535 (MTU
    65535, the frame buffer must hold it all until its end), the same frame
    truncated (aborted on tx, replayed complete to the host), a jumbo IPIP
    frame, and a host frame longer than the frame buffer (cut through)."""
    tb = await setup(dut, mtu=65535)
    await install_services(tb)
    rng = random.Random(21)
    big = tcp_frame(CLIENT, VIP, 40000, 80, payload=bytes(rng.getrandbits(8) for _ in range(65535 - 40)))
    assert len(big) == 14 + 65535
    frames = [big, big[:60000], tcp_frame(CLIENT, VIP, 40002, 80, payload=bytes(9000)),
              DIR_MAC + GW_MAC + b"\x88\xb5" + bytes(rng.getrandbits(8) for _ in range(140000)),
              tcp_frame(CLIENT, VIP, 40001, 443, payload=b"after")]
    await run_frames(tb, frames, timeout_cycles=400000)


@cocotb.test()
async def throughput(dut):
    """Back-to-back established-flow frames, tready high. Checks the input
    utilisation (accepted beats / cycles from the first to the last accepted
    beat), that the output keeps pace (the output span exceeds the input
    span only by the IPIP extra beats), and reports the latency from the
    first input beat to the first output beat."""
    tb = await setup(dut, mtu=9216)
    await install_services(tb)
    W = tb.W
    lengths = [int(x) for x in os.environ.get("LVSNIC_TPUT_LENGTHS", "").split(",") if x] or \
        [64, 65, 66, 127, 128, 129, 200, 511, 512, 513, 1500, 1518, 9000]
    for flow, tun in (((CLIENT, VIP, 40000, 80), False), ((CLIENT, VIP, 40002, 80), True),
                      ((CLIENT, VIP, 1, 2), None)):
        for L in lengths:
            if tun is None:
                # exceptions (MISS_VIP) stream to the host at the same rate
                n = max(4, min(60, 12000 // L))
                fr = [tcp_frame(*flow, payload=bytes(L - 54)) for _ in range(n)]
                beats = sum((len(f) + W - 1) // W for f in fr)
                for f in fr:
                    await tb.rx.send(AxiStreamFrame(f, tuser=0))
                acc = cyc = 0
                first = last = None
                while tb.host.count() < n:
                    await RisingEdge(dut.clk)
                    await ReadOnly()
                    cyc += 1
                    assert cyc < 50 * beats + 1000, "stalled"
                    if dut.s_axis_rx_tvalid.value and dut.s_axis_rx_tready.value:
                        acc += 1
                        first = cyc if first is None else first
                        last = cyc
                await RisingEdge(dut.clk)
                while not tb.host.empty():
                    tb.host.recv_nowait()
                util = beats / (last - first + 1)
                dut._log.info(f"W={W*8} HOST len {L} x{n}: in {beats} beats/{last - first + 1} cycles "
                              f"(utilisation {util:.4f})")
                assert util >= 0.99, (L, "host", util)
                continue
            n = max(4, min(60, 12000 // L))
            fr = [tcp_frame(*flow, payload=bytes(L - 54)) for _ in range(n)]
            beats = sum((len(f) + W - 1) // W for f in fr)
            obeats = sum((len(f) + (20 if tun else 0) + W - 1) // W for f in fr)
            for f in fr:
                await tb.rx.send(AxiStreamFrame(f, tuser=0))
            acc = outb = cyc = 0
            first = last = ofirst = olast = None
            while outb < obeats:
                await RisingEdge(dut.clk)
                await ReadOnly()
                cyc += 1
                assert cyc < 50 * obeats + 1000, "stalled"
                if dut.s_axis_rx_tvalid.value and dut.s_axis_rx_tready.value:
                    acc += 1
                    first = cyc if first is None else first
                    last = cyc
                if dut.m_axis_tx_tvalid.value and dut.m_axis_tx_tready.value:
                    outb += 1
                    ofirst = cyc if ofirst is None else ofirst
                    olast = cyc
            await RisingEdge(dut.clk)
            while tb.tx.count() < n:
                await RisingEdge(dut.clk)
            while not tb.tx.empty():
                tb.tx.recv_nowait()
            span, ospan = last - first + 1, olast - ofirst + 1
            util = beats / span
            dut._log.info(f"W={W*8} {'TUN' if tun else 'NAT'} len {L} x{n}: in {beats} beats/{span} cycles "
                          f"(utilisation {util:.4f}), out {obeats} beats/{ospan} cycles, "
                          f"latency {ofirst - first} cycles")
            # IPIP may be limited by its 20 extra output bytes only
            assert util >= 0.99 * (beats / obeats if tun else 1.0), (L, tun, util)
            # the output runs at one beat per cycle (IPIP: plus its extra beats)
            assert ospan <= max(span, obeats) + 2, (L, tun, span, ospan)


def test_core_64():
    _run(64)


def test_core_512():
    _run(512)


def test_core_128():
    _run(128, "smoke,length_sweep")


def test_core_256():
    _run(256, "smoke,length_sweep")


def test_core_64_noipv6():
    """IPV6 = 0, as the Versa ECP5 board builds the core."""
    _run(64, "registers,smoke,ipv6_frames", ipv6=0)


def _run(dw, cases=None, ipv6=1):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    tc = os.environ.get("LVSNIC_TESTCASE") or cases
    run(f"core{dw}" + ("" if ipv6 else "_noipv6"), "lvsnic_core", "test_core", here,
        parameters={"DATA_WIDTH": dw, "FLOW_BUCKETS_LOG2": B_LOG2, "ACTION_LOG2": A_LOG2, "VIP_COUNT": VIPS,
                    "IPV6": ipv6},
        testcase=tc.split(",") if tc else None, extra_env={"LVSNIC_IPV6": str(ipv6)})
