"""lvsnic_lookup: the decision pipeline (docs/hardware.md §3, §4),
DATA_WIDTH 64 and 512, FLOW_BUCKETS_LOG2 4, ACTION_LOG2 4, VIP_COUNT 4.

Reference: ``lvsnic_ref.lookup_decision`` (classification rows 1..19 and
DISABLED, bucketed two-way cuckoo exact match on the 5-tuple with the two
Toeplitz keys, first valid matching slot, hit/vip/hash_0, action rewrite
of the 54/74-byte head) on the same tables and configuration, which the
test writes through the block's host ports (steal + write, read tokens).

* ``random_decisions``: random frames (established flows with odd flags,
  TTLs and lengths, misses to VIP / director IP / elsewhere, corrupted
  headers, junk, short frames) in batches under different configurations
  (enabled or not, small MTU, pmtu_disc), random header gaps and decision
  pops; every decision field checked, the decision credit (at most 32
  outstanding) checked every cycle.
* ``table_access``: entries written at random slots / actions (also
  invalid or colliding ones, IPv6 slot pairs written with WRITE_PAIR) read
  back through read tokens ({slot ^ 1, slot}, 320 bits), between and during
  traffic.
* ``ipv6_pairs``: an IPv6 entry written with WRITE_PAIR whose tail (odd
  slot), read as an IPv4 slot, is valid with ipv6 0 and the key of a test
  frame, and whose head read as an IPv4 slot has another frame's key: both
  frames miss (MISS_VIP); the read token returns the pair from either slot;
  the same 160 bits written as a plain IPv4 slot with WRITE match; the tail
  matches once its head is invalidated; an action with ipv6 set gives
  ACTION_HOST.
* ``atomic_writes``: one slot rewritten every few cycles, alternating
  between entries of two different keys (same bucket), while frames of both
  keys stream at full rate: each decision must be the reference decision
  under a table state that existed while the frame was in the pipeline, and
  the states seen must not go backwards (a torn 160-bit entry would match
  neither key, or make a key hit again after it was replaced).

* ``ipv6_decisions``: IPv6 flows in slot pairs on IPv6 actions of every op
  (DR and NAT forwarded with the 74-byte rewritten head; TUNNEL, host and
  an IPv4 action: ACTION_HOST), IPv6 frames hitting them with odd flags,
  hop limits, lengths and next headers (extension headers, fragments,
  ICMPv6), misses, corrupted headers, short frames, beside IPv4 traffic.

The random tables (``setup_tables``) also hold IPv6 pairs whose tails carry
the keys of frames sent (they must miss) and an action with ipv6 set.
"""

import random
import struct
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

import lvsnic_ref as R
from lvsnic_tb import cycles, rand_bytes, request, seed, start

B, A, VIPS, DEC_DEPTH = 4, 4, 4, 32
DIR_MAC = bytes.fromhex("020000000001")
GW_MAC = bytes.fromhex("02bbbbbbbb01")
DIR_IP = 0x0A000001
DIR_IP6 = 0x20010DB800FF00000000000000000001
VIP = 0x0A000064


def ipv4_frame(src, dst, proto, sport, dport, flags=0x10, ttl=64, tos=0, df=True, ip_id=0,
               payload=b"", udp_csum=None, dmac=DIR_MAC):
    """An Ethernet/IPv4/TCP-or-UDP frame (valid IPv4 header checksum)."""
    if proto == 6:
        l4 = struct.pack(">HHIIBBHHH", sport, dport, 1000, 2000, 5 << 4, flags, 512, 0xBEEF, 0)
    else:
        c = 0x1234 if udp_csum is None else udp_csum
        l4 = struct.pack(">HHHH", sport, dport, 8 + len(payload), c)
    tl = 20 + len(l4) + len(payload)
    ip = bytearray(struct.pack(">BBHHHBBHII", 0x45, tos, tl, ip_id, 0x4000 if df else 0, ttl, proto, 0, src, dst))
    ip[10:12] = R.csum(bytes(ip)).to_bytes(2, "big")
    return dmac + GW_MAC + b"\x08\x00" + bytes(ip) + l4 + payload


def decision_fields(dut):
    """The decision bundle's fields {name: (lsb, width)}, read from the
    design's own DEC_* localparams (hw/rtl/lvsnic_decision.vh), so that the
    positions are written in one place only; the width is checked against
    the port."""
    p = lambda n: int(getattr(dut, n).value)
    lw, a, b, jk = p("LW"), p("A"), p("B"), p("DEC_JK_W")
    f = {
        "fwd": (p("DEC_FWD_BIT"), 1), "tun": (p("DEC_TUN_BIT"), 1), "v6": (p("DEC_V6_BIT"), 1),
        "reason": (p("DEC_REASON_LSB"), 5), "hit": (p("DEC_HIT_BIT"), 1), "vip": (p("DEC_VIP_BIT"), 1),
        "hash": (p("DEC_HASH_LSB"), 32), "seq": (p("DEC_SEQ_LSB"), 32), "ts": (p("DEC_TS_LSB"), 64),
        "h": (p("DEC_HEAD_LSB"), 592), "j": (p("DEC_J_LSB"), jk), "k": (p("DEC_K_LSB"), jk),
        "outlast_m1": (p("DEC_OL_LSB"), lw), "act": (p("DEC_ACT_LSB"), a),
        "slot": (p("DEC_SLOT_LSB"), b + 3), "tl": (p("DEC_TL_LSB"), 16),
    }
    assert jk == 17 - lw
    assert sum(w for _, w in f.values()) == p("DEC_W") == len(dut.dec_data), "decision bundle width"
    covered = 0
    for lsb, w in f.values():
        m = ((1 << w) - 1) << lsb
        assert covered & m == 0, "decision fields overlap"
        covered |= m
    return f


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.LW = int(dut.LW.value)
        self.dec_fields = decision_fields(dut)
        self.W = 1 << self.LW
        self.sent = []             # (frame, seq, ts) of the headers pushed
        self.ref = R.Ref(B, A, VIPS)
        for s in ("hdr_valid", "steal", "flow_wr", "flow_wr_pair", "act_wr", "tok_req", "dec_pop", "cfg_enable"):
            getattr(dut, s).value = 0
        self.outstanding = 0       # decisions pushed, not popped
        self.decs = []             # decisions seen, in order
        self.flow_rd, self.act_rd = [], []
        self.p_pop_stall = 0.0
        self.rng = random.Random(seed(61))
        self.set_config(enable=True)
        cocotb.start_soon(self.monitor())

    def set_config(self, enable=True, pmtu=True, mtu=1500, vips=((True, VIP),)):
        d, r = self.dut, self.ref
        r.mac, r.ip, r.ip6, r.mtu, r.enable, r.pmtu = DIR_MAC, DIR_IP, DIR_IP6, mtu, enable, pmtu
        r.vips = [(False, 0)] * VIPS
        for i, v in enumerate(vips):
            r.vips[i] = v
        d.cfg_enable.value = int(enable)
        d.cfg_pmtu.value = int(pmtu)
        d.cfg_mac.value = int.from_bytes(DIR_MAC, "big")
        d.cfg_ip.value = DIR_IP
        d.cfg_ip6.value = DIR_IP6
        d.cfg_mtu.value = mtu
        d.cfg_vip_valid.value = sum(1 << i for i, (v, _) in enumerate(r.vips) if v)
        d.cfg_vip.value = sum(a << (32 * i) for i, (_, a) in enumerate(r.vips))

    async def monitor(self):
        """Collects decisions and read-token results; pops decisions like
        the egress would (randomly stalled); checks the credit."""
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            pop = self.outstanding > 0 and self.rng.random() >= self.p_pop_stall
            d.dec_pop.value = int(pop)
            await ReadOnly()
            if int(d.dec_valid.value):
                v = int(d.dec_data.value)
                self.decs.append({k: (v >> lsb) & ((1 << w) - 1) for k, (lsb, w) in self.dec_fields.items()})
                self.outstanding += 1
            if pop:
                self.outstanding -= 1
            assert self.outstanding <= DEC_DEPTH, f"{self.outstanding} decisions outstanding"
            if int(d.flow_rd_valid.value):
                self.flow_rd.append(int(d.flow_rd_data.value))
            if int(d.act_rd_valid.value):
                self.act_rd.append(int(d.act_rd_data.value))

    async def init(self):
        await start(self.dut)
        while int(self.dut.init_busy.value):
            await cycles(self.dut, 1)

    # --- host access (the protocol of lvsnic_regs) ---
    async def write(self, is_act, idx, entry, pair=False):
        """steal + write strobe for one cycle, index/data held one more.
        `pair`: WRITE_PAIR (idx even, entry 320 bits), as lvsnic_regs drives it."""
        d = self.dut
        await FallingEdge(d.clk)
        d.steal.value = 1
        (d.act_wr if is_act else d.flow_wr).value = 1
        if is_act:
            d.act_wr_idx.value, d.act_wr_data.value = idx, entry
        else:
            d.flow_wr_idx.value, d.flow_wr_data.value = idx & ~1 if pair else idx, entry
            d.flow_wr_pair.value = int(pair)
        await FallingEdge(d.clk)
        d.steal.value = d.flow_wr.value = d.act_wr.value = 0
        await FallingEdge(d.clk)          # the stolen cycle: the RAM is written
        d.flow_wr_pair.value = 0
        if is_act:
            self.ref.actions[idx] = entry
        elif pair:
            self.ref.write_pair(idx, entry)
        else:
            self.ref.write_slot(idx, entry)

    async def read(self, is_act, idx):
        """A read token; returns the entry."""
        d = self.dut
        res = self.act_rd if is_act else self.flow_rd
        n0 = len(res)
        await request(d, d.tok_req, d.tok_ack, tok_is_act=int(is_act), tok_idx=idx)
        for _ in range(100):
            if len(res) > n0:
                break
            await cycles(d, 1)
        assert len(res) == n0 + 1, "no read-token result"
        return res[n0]

    def ref_entry(self, is_act, idx):
        if is_act:
            return self.ref.actions.get(idx, 0)
        return self.ref.read_pair(idx)

    async def install(self, key, act, ack_fast=True):
        proto, src, dst, sp, dp = key
        b0, b1 = self.ref.buckets(src, dst, sp, dp)
        for w, b in ((0, b0), (1, b1)):
            for s in range(4):
                if not self.ref.flows.get((w, b, s), 0) & 1:
                    await self.write(False, self.ref.slot_index(w, b, s), R.flow_entry(*key, act, ack_fast))
                    return True
        return False

    # --- headers ---
    async def send(self, frames, p_idle=0.0, during=None):
        """Pushes the frames' headers (seq = index in self.sent); `during`
        is called with the frame number before each push."""
        d = self.dut
        rng = self.rng
        for f in frames:
            await FallingEdge(d.clk)
            while rng.random() < p_idle:
                d.hdr_valid.value = 0
                await FallingEdge(d.clk)
            seq = len(self.sent)
            ts = rng.getrandbits(64)
            self.sent.append((f, seq, ts))
            if during:
                during(seq)
            d.hdr_valid.value = 1
            h, nb = R.header(f)
            d.hdr_data.value = int.from_bytes(h, "little")
            d.hdr_bytes.value = nb
            d.hdr_ts.value, d.hdr_seq.value = ts, seq
            while True:
                await ReadOnly()
                if int(d.hdr_ready.value):
                    break
                await FallingEdge(d.clk)
        await FallingEdge(d.clk)
        d.hdr_valid.value = 0

    async def quiesce(self):
        for _ in range(5000):
            if len(self.decs) == len(self.sent) and self.outstanding == 0:
                break
            await cycles(self.dut, 1)
        assert len(self.decs) == len(self.sent), f"{len(self.decs)} decisions for {len(self.sent)} headers"

    def expect(self, frame):
        return R.lookup_decision(self.ref, frame)

    def check(self, g, e, frame):
        """One decision against the reference; returns a mismatch text or None."""
        W, LW = self.W, self.LW
        if e[0] == "host":
            _, reason, hit, vip, h0 = e
            got = (g["fwd"], g["reason"], g["hit"], g["vip"], g["hash"])
            if got != (0, reason, hit, vip, h0):
                return f"host decision {got} != {(0, reason, hit, vip, h0)}"
            return None
        _, tun, head, tl, act, slot, vip, h0 = e
        kf = 13 + tl
        of = kf + (0, 20, 40)[tun]
        # v6: the output is IPv6 (a tunnel's outer header): the egress's
        # 74-byte head, and with tun the 40-byte shift
        v6 = int(tun == 2 or (tun == 0 and frame[12:14] == b"\x86\xdd"))
        got = (g["fwd"], g["tun"], g["v6"], g["reason"], g["hit"], g["vip"], g["hash"], g["tl"], g["act"], g["slot"],
               g["j"], g["k"], g["outlast_m1"])
        exp = (1, int(tun != 0), v6, 0, 1, vip, h0, tl, act, slot, of >> LW, kf >> LW, of & (W - 1))
        if got != exp:
            return f"forward decision {got} != {exp}"
        if len(frame) >= 14 + tl:           # a short frame's bytes are aborted anyway
            gh = g["h"].to_bytes(74, "little")[:len(head)]
            if gh != head:
                return f"head\n got {gh.hex()}\n exp {head.hex()}"
        return None

    def check_all(self, first=0):
        for (f, seq, ts), g in zip(self.sent[first:], self.decs[first:]):
            assert (g["seq"], g["ts"]) == (seq, ts), f"decision out of order: seq {g['seq']} for {seq}"
            err = self.check(g, self.expect(f), f)
            assert err is None, f"frame {seq} ({f[:54].hex()}, len {len(f)}): {err}"


def ipv6_frame(src, dst, nh, sport, dport, flags=0x10, hl=64, payload=b"", udp_csum=None, dmac=DIR_MAC):
    """An Ethernet/IPv6/TCP-or-UDP frame (`nh` the next header; the L4
    header is TCP's for 6, UDP's otherwise)."""
    if nh == 6:
        l4 = struct.pack(">HHIIBBHHH", sport, dport, 1000, 2000, 5 << 4, flags, 512, 0xBEEF, 0)
    else:
        l4 = struct.pack(">HHHH", sport, dport, 8 + len(payload), 0x1234 if udp_csum is None else udp_csum)
    body = l4 + payload
    ip = struct.pack(">IHBB", 6 << 28 | 0xB8 << 20 | 0x12345, len(body), nh, hl) + src.to_bytes(16, "big") + dst.to_bytes(16, "big")
    return dmac + GW_MAC + b"\x86\xdd" + ip + body


VIP6 = 0x20010DB8000000000000000000000010


def random_flow_key6(rng):
    return (rng.choice([6, 17]), 0x20010DB8000C << 80 | rng.getrandbits(64), rng.choice([VIP6, rng.getrandbits(128)]),
            rng.getrandbits(16), rng.getrandbits(16))


def flow_frame6(rng, key):
    proto, src, dst, sp, dp = key
    pay = rand_bytes(rng, rng.choice([0, 0, 1, 6, 30, 100])) + bytes(rng.choice([0, 0, 0, 1400, 1460]))
    nh = proto if rng.random() < 0.85 else rng.choice([0, 43, 44, 51, 60, 58, 59, 50])
    f = ipv6_frame(src, dst, nh, sp, dp, flags=rng.choice([0x10] * 8 + [0x18, 0x02, 0x11, 0x04, 0x00]),
                   hl=rng.choice([64] * 10 + [0, 1, 2]), payload=pay,
                   udp_csum=rng.choice([None] * 6 + [0]) if proto == 17 else None)
    if proto == 17 and nh == 6:
        f = f[:54] + f[54:] + bytes(12)          # room for the TCP header the next header announces
    r = rng.random()
    if r < 0.1:
        f += bytes(rng.randrange(1, 60))                             # padding
    elif r < 0.2:
        f = f[:rng.randrange(1, len(f))]                             # short (also < 74)
    elif r < 0.3:
        f = bytearray(f)
        f[rng.randrange(0, min(74, len(f)))] ^= 1 << rng.randrange(8)   # any header bit
        f = bytes(f)
    return f


def random_flow_key(rng):
    proto = rng.choice([6, 17])
    return (proto, rng.getrandbits(32), rng.choice([VIP, VIP, DIR_IP, rng.getrandbits(32)]),
            rng.getrandbits(16), rng.getrandbits(16))


def flow_frame(rng, key):
    proto, src, dst, sp, dp = key
    pay = rand_bytes(rng, rng.choice([0, 0, 1, 6, 30, 100])) + bytes(rng.choice([0, 0, 0, 1400, 1480]))
    if proto == 6:
        f = ipv4_frame(src, dst, 6, sp, dp, flags=rng.choice([0x10] * 8 + [0x18, 0x02, 0x11, 0x04, 0x00, 0x12]),
                       ttl=rng.choice([64] * 10 + [0, 1, 2]), tos=rng.getrandbits(8), df=rng.random() < 0.7,
                       ip_id=rng.getrandbits(16), payload=pay)
    else:
        f = ipv4_frame(src, dst, 17, sp, dp, ttl=rng.choice([64] * 10 + [1, 2]), df=rng.random() < 0.5,
                       ip_id=rng.getrandbits(16), payload=pay, udp_csum=rng.choice([None] * 8 + [0]))
    r = rng.random()
    if r < 0.1:
        f += bytes(rng.randrange(1, 60))                             # padding
    elif r < 0.2:
        f = f[:rng.randrange(1, len(f))]                             # short (also < 54)
    elif r < 0.3:
        f = bytearray(f)
        f[rng.randrange(0, min(54, len(f)))] ^= 1 << rng.randrange(8)   # any header bit
        f = bytes(f)
    return f


def random_frame(rng, keys):
    k = rng.random()
    if k < 0.6 and keys:
        return flow_frame(rng, rng.choice(keys))
    if k < 0.75:
        return flow_frame(rng, random_flow_key(rng))                 # miss (mostly)
    if k < 0.85:
        return rand_bytes(rng, rng.randrange(1, 80))
    et = rng.choice([b"\x81\x00", b"\x86\xdd", b"\x08\x06", b"\x08\x00"])
    dm = rng.choice([DIR_MAC, b"\xff" * 6, b"\x01\x00\x5e\x00\x00\x01", GW_MAC])
    return dm + GW_MAC + et + rand_bytes(rng, rng.randrange(0, 60))


def tail_pair(rng, key, act):
    """An IPv6 entry (320 bits) whose tail (bits 319:160), read as an IPv4
    slot, is a valid IPv4 entry (ipv6 0) of `key`."""
    head = R.flow6_entry(rng.choice([6, 17]), rng.getrandbits(128), 0, 0, 0, rng.getrandbits(16))
    return R.pair_halves(head)[0] | R.flow_entry(*key, act) << R.SLOT_BITS


async def setup_tables(tb, rng, n_flows=24):
    keys = []
    for i in range(16):
        op = rng.randrange(4)
        # IPv6 actions: 12 (not TUNNEL) sends its IPv4 flows to the host,
        # 13 tunnels them in IPv6
        ipv6 = i in (12, 13)
        op = R.OP_TUNNEL if i == 13 else (op % 3 if i == 12 else op)
        await tb.write(True, i, R.action_entry(op, rand_bytes(rng, 6),
                                               rng.getrandbits(128 if ipv6 else 32), rng.getrandbits(16),
                                               rng.getrandbits(16), ipv6=ipv6))
    for n in range(n_flows):
        key = random_flow_key(rng)
        act = 13 if n < 3 else rng.choice([rng.randrange(16), rng.getrandbits(16)])   # IPv4 in IPv6
        if await tb.install(key, act, ack_fast=rng.random() < 0.9):
            keys.append(key)
    # entries with the valid bit clear: their keys must miss
    for _ in range(3):
        key = random_flow_key(rng)
        proto, src, dst, sp, dp = key
        b0, b1 = tb.ref.buckets(src, dst, sp, dp)
        w, b = rng.choice([(0, b0), (1, b1)])
        s = rng.randrange(4)
        if not tb.ref.flows.get((w, b, s), 0) & 1:
            await tb.write(False, tb.ref.slot_index(w, b, s), R.flow_entry(*key, 3, valid=False))
            keys.append(key)
    # IPv6 pairs whose tails look like IPv4 entries of keys sent: they must miss
    for _ in range(3):
        key = random_flow_key(rng)
        proto, src, dst, sp, dp = key
        b0, b1 = tb.ref.buckets(src, dst, sp, dp)
        w, b = rng.choice([(0, b0), (1, b1)])
        s = rng.choice([0, 2])
        if not (tb.ref.flows.get((w, b, s), 0) | tb.ref.flows.get((w, b, s + 1), 0)) & 1:
            await tb.write(False, tb.ref.slot_index(w, b, s), tail_pair(rng, key, rng.randrange(16)), pair=True)
            keys.append(key)
    return keys


@cocotb.test()
async def random_decisions(dut):
    tb = TB(dut)
    await tb.init()
    rng = random.Random(seed(62))
    keys = await setup_tables(tb, rng)
    configs = [dict(), dict(enable=False), dict(mtu=300), dict(pmtu=False, mtu=1480),
               dict(vips=((False, VIP), (True, DIR_IP)))]
    for i, cfg in enumerate(configs):
        tb.set_config(**cfg)
        tb.p_pop_stall = [0.0, 0.5, 0.9, 0.0, 0.2][i]
        first = len(tb.sent)
        await tb.send([random_frame(rng, keys) for _ in range(120)], p_idle=[0.0, 0.3, 0.0, 0.6, 0.1][i])
        await tb.quiesce()
        tb.check_all(first)
    kinds = {}
    for (f, _, _), g in zip(tb.sent, tb.decs):
        kinds[g["reason"]] = kinds.get(g["reason"], 0) + 1
    assert kinds.get(0, 0) > 50 and len(kinds) >= 12, f"decision mix too narrow: {kinds}"
    tun = [g["v6"] for g in tb.decs if g["fwd"] and g["tun"]]
    assert tun.count(0) > 0 and tun.count(1) > 0, f"IPIP / IPv4-in-IPv6 forwards: {tun.count(0)} / {tun.count(1)}"


@cocotb.test()
async def table_access(dut):
    tb = TB(dut)
    await tb.init()
    rng = random.Random(seed(63))
    # after the sweep every entry reads 0
    for idx in rng.sample(range(1 << (B + 3)), 10):
        assert await tb.read(False, idx) == 0
    for idx in range(0, 16, 5):
        assert await tb.read(True, idx) == 0
    keys = await setup_tables(tb, rng)
    for idx in range(1 << (B + 3)):
        assert await tb.read(False, idx) == tb.ref_entry(False, idx), f"flow slot {idx}"
    for idx in range(16):
        assert await tb.read(True, idx) == tb.ref_entry(True, idx), f"action {idx}"
    # reads while headers stream (tokens take header slots)
    tb.p_pop_stall = 0.3
    frames = [random_frame(rng, keys) for _ in range(150)]
    sender = cocotb.start_soon(tb.send(frames))
    n = 0
    while not sender.done():
        is_act = rng.random() < 0.4
        idx = rng.randrange(16 if is_act else 1 << (B + 3))
        assert await tb.read(is_act, idx) == tb.ref_entry(is_act, idx)
        n += 1
    await tb.quiesce()
    tb.check_all()
    assert n > 5


@cocotb.test()
async def atomic_writes(dut):
    tb = TB(dut)
    await tb.init()
    rng = random.Random(seed(64))
    await tb.write(True, 1, R.action_entry(R.OP_ROUTE, bytes.fromhex("02aaaaaaaa01")))
    await tb.write(True, 2, R.action_entry(R.OP_TUNNEL, bytes.fromhex("02aaaaaaaa02"), 0x0A010002))
    ka = (6, 0xC0000201, VIP, 1111, 80)
    b0 = tb.ref.buckets(*ka[1:])[0]
    while True:           # a second key with the same way-0 bucket, all fields different
        kb = (17, rng.getrandbits(32), VIP, rng.getrandbits(16), 53)
        if tb.ref.buckets(*kb[1:])[0] == b0:
            break
    idx = tb.ref.slot_index(0, b0, 1)
    ea, eb = R.flow_entry(*ka, 1), R.flow_entry(*kb, 2)
    await tb.write(False, idx, ea)
    versions = [dict(tb.ref.flows)]          # table states, in write order
    # frames alternate between the keys; record the state count at each push
    fa = ipv4_frame(*ka[1:3], 6, *ka[3:])
    fb = ipv4_frame(*kb[1:3], 17, *kb[3:])
    frames = [fa if i % 2 == 0 else fb for i in range(600)]
    pushed_at = {}
    done_writes = [0]

    def during(seq):
        pushed_at[seq] = done_writes[0]

    async def writer():
        for k in range(60):
            await cycles(dut, rng.randrange(2, 12))
            await tb.write(False, idx, eb if k % 2 == 0 else ea)
            versions.append(dict(tb.ref.flows))
            done_writes[0] += 1

    w = cocotb.start_soon(writer())
    await tb.send(frames, during=during)
    await w
    await tb.quiesce()
    # decisions under each table state
    outs = []
    for v in versions:
        tb.ref.flows = v
        outs.append({id(fa): tb.expect(fa), id(fb): tb.expect(fb)})
    cur = 0
    moved = 0
    for (f, seq, _), g in zip(tb.sent, tb.decs):
        lo = max(cur, pushed_at[seq] - 1)    # a write completing as the frame entered may not be seen yet
        for j in range(lo, len(versions)):
            if tb.check(g, outs[j][id(f)], f) is None:
                break
        else:
            raise AssertionError(f"frame {seq}: decision matches no table state from {lo} on "
                                 f"(reason {g['reason']}, act {g['act']})")
        moved += j != cur
        cur = j
    assert moved > 20, f"the frames saw only {moved} table changes"


@cocotb.test()
async def ipv6_pairs(dut):
    tb = TB(dut)
    await tb.init()
    rng = random.Random(seed(65))
    await tb.write(True, 1, R.action_entry(R.OP_ROUTE, bytes.fromhex("02aaaaaaaa01")))
    await tb.write(True, 2, R.action_entry(R.OP_ROUTE, bytes.fromhex("02aaaaaaaa02"), rng.getrandbits(128),
                                           ipv6=True))
    ka = (6, 0xC0000201, VIP, 1111, 80)           # the tail's IPv4 image
    proto, src, dst, sp, dp = ka
    b0 = tb.ref.buckets(src, dst, sp, dp)[0]
    # the head, read as an IPv4 slot, carries key kh (ipv6 = 1: never an IPv4 entry)
    while True:
        kh = (6, rng.getrandbits(32), VIP, rng.getrandbits(16), 80)
        if tb.ref.buckets(*kh[1:])[0] == b0:
            break
    head = R.flow_entry(*kh, 1) | R.put(1, "FLOW_ENTRY_IPV6")
    assert R.get(head, "FLOW6_ENTRY_IPV6") and R.get(head, "FLOW6_ENTRY_VALID")
    pair = head | R.flow_entry(*ka, 1) << R.SLOT_BITS
    even = tb.ref.slot_index(0, b0, 0)
    await tb.write(False, even + 1, pair, pair=True)     # odd index: the pair 0-1
    # read tokens: {slot ^ 1, slot} from either slot of the pair
    odd_half, even_half = R.pair_halves(pair)[1], R.pair_halves(pair)[0]
    assert await tb.read(False, even) == pair
    assert await tb.read(False, even + 1) == even_half << R.SLOT_BITS | odd_half
    fa = ipv4_frame(src, dst, 6, sp, dp)
    fh = ipv4_frame(kh[1], kh[2], 6, kh[3], kh[4])
    n0 = len(tb.sent)
    await tb.send([fa, fh])
    await tb.quiesce()
    tb.check_all(n0)
    assert [g["reason"] for g in tb.decs[n0:]] == [R.Reason.MISS_VIP] * 2, "IPv6 pair halves matched an IPv4 frame"
    # the same 160 bits as a plain IPv4 slot (WRITE, slot 2): a hit
    await tb.write(False, even + 2, odd_half)
    n1 = len(tb.sent)
    await tb.send([fa, fh])
    await tb.quiesce()
    tb.check_all(n1)
    ga, gh = tb.decs[n1:]
    assert (ga["fwd"], ga["hit"], ga["slot"]) == (1, 1, even + 2), ga
    assert gh["reason"] == R.Reason.MISS_VIP
    # head invalidated (WRITE of slot 0): the odd slot is an IPv4 entry of its own,
    # first match slot 1; the pair 2-3 cleared with WRITE_PAIR
    await tb.write(False, even + 2, 0, pair=True)
    await tb.write(False, even, head & ~1)
    n2 = len(tb.sent)
    await tb.send([fa])
    await tb.quiesce()
    tb.check_all(n2)
    assert (tb.decs[n2]["fwd"], tb.decs[n2]["slot"]) == (1, even + 1)
    assert await tb.read(False, even + 2) == 0
    # an action with ipv6 set: ACTION_HOST
    await tb.write(False, even + 1, R.flow_entry(*ka, 2))
    n3 = len(tb.sent)
    await tb.send([fa])
    await tb.quiesce()
    tb.check_all(n3)
    assert (tb.decs[n3]["fwd"], tb.decs[n3]["reason"], tb.decs[n3]["hit"]) == (0, R.Reason.ACTION_HOST, 1)


@cocotb.test()
async def ipv6_decisions(dut):
    tb = TB(dut)
    await tb.init()
    rng = random.Random(seed(66))
    # actions 0..6: IPv6 ROUTE, DNAT, SNAT, TUNNEL (ip6ip6), ROUTE with host, an IPv4 NAT, an IPv4
    # TUNNEL (IPv6 in IPv4: the host's); 8..15 IPv4 (setup_tables)
    keys4 = await setup_tables(tb, rng, n_flows=8)
    for i, (op, host, v6) in enumerate([(R.OP_ROUTE, False, True), (R.OP_DNAT, False, True), (R.OP_SNAT, False, True),
                                        (R.OP_TUNNEL, False, True), (R.OP_ROUTE, True, True), (R.OP_DNAT, False, False),
                                        (R.OP_TUNNEL, False, False)]):
        await tb.write(True, i, R.action_entry(op, rand_bytes(rng, 6), rng.getrandbits(128 if v6 else 32),
                                               rng.getrandbits(16), rng.getrandbits(16), host=host, ipv6=v6))
    keys6 = []
    for n in range(40):
        key = random_flow_key6(rng)
        b0, b1 = tb.ref.buckets6(*key[1:])
        for w, b in ((0, b0), (1, b1)):
            s = next((s for s in (0, 2) if not (tb.ref.flows.get((w, b, s), 0) | tb.ref.flows.get((w, b, s + 1), 0)) & 1), None)
            if s is not None:
                act = [0, 1, 2, 3, 1, 2, 3, 4, 5, 6][n % 10]
                await tb.write(False, tb.ref.slot_index(w, b, s), R.flow6_entry(*key, act, ack_fast=rng.random() < 0.9),
                               pair=True)
                keys6.append(key)
                break
    assert len(keys6) > 20
    for i, cfg in enumerate([dict(), dict(mtu=300), dict(enable=False)]):
        tb.set_config(**cfg)
        tb.p_pop_stall = [0.0, 0.5, 0.2][i]
        first = len(tb.sent)
        frames = []
        for _ in range(150):
            k = rng.random()
            if k < 0.7:
                frames.append(flow_frame6(rng, rng.choice(keys6)))
            elif k < 0.8:
                frames.append(flow_frame6(rng, random_flow_key6(rng)))
            else:
                frames.append(random_frame(rng, keys4))
        await tb.send(frames, p_idle=[0.0, 0.3, 0.0][i])
        await tb.quiesce()
        tb.check_all(first)
    kinds = {}
    for (f, _, _), g in zip(tb.sent, tb.decs):
        if f[12:14] == b"\x86\xdd":
            kinds[g["reason"]] = kinds.get(g["reason"], 0) + 1
    for r in (0, R.Reason.IP_OPTIONS, R.Reason.FRAGMENT, R.Reason.NOT_TCP_UDP, R.Reason.TTL, R.Reason.MISS,
              R.Reason.ACTION_HOST, R.Reason.TCP_CONTROL, R.Reason.TOO_BIG, R.Reason.L4_TRUNCATED):
        assert kinds.get(r, 0) > 0, f"IPv6 reason {r} never decided: {kinds}"
    ip6ip6 = sum(1 for (f, _, _), g in zip(tb.sent, tb.decs) if f[12:14] == b"\x86\xdd" and g["fwd"] and g["tun"])
    assert ip6ip6 > 0, "no ip6ip6 forward"


@pytest.mark.parametrize("dw", [64, 512])
def test_lookup(dw):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run(f"lookup{dw}", "lvsnic_lookup", "test_lookup", here,
        parameters={"DATA_WIDTH": dw, "FLOW_BUCKETS_LOG2": B, "ACTION_LOG2": A, "VIP_COUNT": VIPS})
