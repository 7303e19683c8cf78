"""A small Python reference of the lvsnic hardware contract
(docs/hardware.md), written from the document for the cocotb tests (the
normative bit-exact model is fw-model's Rust ``hw`` module).

``Ref`` holds the register/table state; ``Ref.process(frame, ts, seq)``
returns what the core must emit for one received frame:

* ``("tx", bytes)`` a forwarded, rewritten frame;
* ``("host", bytes, meta160)`` an exception, frame unchanged;
* ``("trunc", bytes, meta160)`` a frame classified for forwarding that is
  short: an aborted tx frame plus the frame to the host (reason 19).

Interpretations shared with the RTL (docs/hardware.md): a frame that ends
before its fixed TCP/UDP header is L4_TRUNCATED (row 11), so no header fact
of a forwarded frame is missing; ``hit``/``vip``/``hash_0``
are reported only when classification reached row 12 (and CTRL.enable = 1);
the action index uses its low ACTION_LOG2 bits.

Tables: ``Ref.flows`` holds 160-bit slots (``lvsnic_flow_entry``); an IPv6
entry (``lvsnic_flow6_entry``, 320 bits, ``flow6_entry``) is its two halves
in an aligned slot pair (``Ref.write_pair``, FLOW_CMD WRITE_PAIR). An IPv4
frame matches IPv4 slots only: valid, ``ipv6`` 0, and not the tail of a
valid IPv6 head; an IPv6 frame (EtherType 0x86DD, TCP/UDP right after the
fixed header) matches pairs whose head is valid with ``ipv6`` 1
(docs/hardware.md §4). An action whose ``ipv6`` differs from the frame's
family (but a TUNNEL with an IPv6 action: ip6ip6, IPv4 in IPv6), or an IPv4
TUNNEL of an IPv6 frame, is ACTION_HOST like ``host``. IPv6 has no VIP
table (a miss is MISS), no header checksum, hop limit for TTL.

Register sequences for the table commands (``flow_write_regs``,
``action_write_regs``, ``flow_read_regs``, ...) use the generated
addresses; ``table_write``/``table_read`` run them over any async
register access.
"""

import struct

import lvsnic_regs as L
from lvsnic_regs import ActionOp, Reason

KEY0 = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
KEY1 = KEY0[16:] + KEY0[:16]

# Reason codes (Reason.MALFORMED, ...) and action ops, generated from the
# register map (hw/regmap/lvsnic.rdl).
OP_ROUTE, OP_DNAT, OP_SNAT, OP_TUNNEL = ActionOp.ROUTE, ActionOp.NAT_DNAT, ActionOp.NAT_SNAT, ActionOp.TUNNEL


def toeplitz(key, data):
    k = int.from_bytes(key, "big")
    kl = len(key) * 8
    r = 0
    for i in range(len(data) * 8):
        if (data[i // 8] >> (7 - i % 8)) & 1:
            r ^= (k >> (kl - 32 - i)) & 0xFFFFFFFF
    return r


def fold(s):
    while s > 0xFFFF:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def csum(data):
    if len(data) % 2:
        data = data + b"\0"
    return ~fold(sum(struct.unpack(f">{len(data) // 2}H", data))) & 0xFFFF


def l4_delta(old_addr, new_addr, old_port, new_port):
    s = (~(old_addr >> 16) & 0xFFFF) + (~old_addr & 0xFFFF) + (new_addr >> 16) + (new_addr & 0xFFFF)
    s += (~old_port & 0xFFFF) + new_port
    return fold(s)


def l4_delta6(old_addr, new_addr, old_port, new_port):
    """``l4_delta`` over the eight 16-bit words of each IPv6 address."""
    s = sum((~(old_addr >> 16 * i) & 0xFFFF) + (new_addr >> 16 * i & 0xFFFF) for i in range(8))
    s += (~old_port & 0xFFFF) + new_port
    return fold(s)


# IPv6 next headers sent to the host as IP_OPTIONS (Hop-by-Hop, Routing, AH,
# Destination Options) and FRAGMENT (44); others not TCP/UDP: NOT_TCP_UDP.
IPV6_EXT_OPTIONS = (0, 43, 51, 60)


def is_v6(h):
    return len(h) >= 14 and (h[12] << 8 | h[13]) == 0x86DD


def ip_len(h):
    """The IP packet length: IPv4 total length, IPv6 40 + payload length."""
    return 40 + (h[18] << 8 | h[19]) if is_v6(h) else h[16] << 8 | h[17]


def header(frame):
    """What the lookup sees: the first 74 bytes (IPv6) or 54 (others),
    zero-filled to 74, and how many are present."""
    hb = 74 if is_v6(frame) else 54
    n = min(len(frame), hb)
    return bytes(frame[:n]) + bytes(74 - n), n


def put(value, name):
    """`value` in field `name` of a layout (``L.<LAYOUT>_<FIELD>_LSB``/``_WIDTH``)."""
    lsb, width = getattr(L, name + "_LSB"), getattr(L, name + "_WIDTH")
    assert 0 <= value < 1 << width, (name, value)
    return value << lsb


def get(entry, name):
    """Field `name` of a layout in `entry`."""
    return entry >> getattr(L, name + "_LSB") & ((1 << getattr(L, name + "_WIDTH")) - 1)


SLOT_BITS = L.FLOW_ENTRY_WORDS * 32          # one flow slot (160)
PAIR_BITS = L.FLOW6_ENTRY_WORDS * 32         # an IPv6 entry, a slot pair (320)
ACTION_BITS = L.ACTION_ENTRY_WORDS * 32      # an action entry (256)
assert PAIR_BITS == 2 * SLOT_BITS


def flow_entry(proto, src, dst, sport, dport, action, ack_fast=True, valid=True):
    """An IPv4 flow entry (one 160-bit slot, ``ipv6`` 0)."""
    return (put(int(valid), "FLOW_ENTRY_VALID") | put(int(ack_fast), "FLOW_ENTRY_ACK_FAST")
            | put(0, "FLOW_ENTRY_IPV6")
            | put(proto, "FLOW_ENTRY_PROTO") | put(src, "FLOW_ENTRY_SADDR") | put(dst, "FLOW_ENTRY_DADDR")
            | put(sport, "FLOW_ENTRY_SPORT") | put(dport, "FLOW_ENTRY_DPORT") | put(action, "FLOW_ENTRY_ACTION"))


def flow6_entry(proto, src, dst, sport, dport, action, ack_fast=True, valid=True):
    """An IPv6 flow entry (320 bits over an aligned slot pair, ``ipv6`` 1):
    `src`, `dst` 128-bit addresses (first byte in the top 8 bits)."""
    return (put(int(valid), "FLOW6_ENTRY_VALID") | put(int(ack_fast), "FLOW6_ENTRY_ACK_FAST")
            | put(1, "FLOW6_ENTRY_IPV6")
            | put(proto, "FLOW6_ENTRY_PROTO") | put(src, "FLOW6_ENTRY_SADDR") | put(dst, "FLOW6_ENTRY_DADDR")
            | put(sport, "FLOW6_ENTRY_SPORT") | put(dport, "FLOW6_ENTRY_DPORT") | put(action, "FLOW6_ENTRY_ACTION"))


def pair_halves(entry):
    """(even slot, odd slot) of a 320-bit slot-pair value (bits 159:0, 319:160)."""
    m = (1 << SLOT_BITS) - 1
    return entry & m, entry >> SLOT_BITS & m


def flow_key(entry):
    """The key fields of an IPv4 flow entry, as one comparable tuple."""
    return tuple(get(entry, "FLOW_ENTRY_" + f) for f in ("PROTO", "SADDR", "DADDR", "SPORT", "DPORT"))


def action_entry(op, mac, addr=0, port=0, delta=0, host=False, ipv6=False):
    """An action entry (256 bits); `addr` IPv4 (addr field bits 31:0) or,
    with `ipv6`, a 128-bit IPv6 address."""
    return (put(op, "ACTION_ENTRY_OP") | put(int(host), "ACTION_ENTRY_HOST") | put(int(ipv6), "ACTION_ENTRY_IPV6")
            | put(int.from_bytes(mac, "big"), "ACTION_ENTRY_MAC") | put(addr, "ACTION_ENTRY_ADDR")
            | put(port, "ACTION_ENTRY_PORT") | put(delta, "ACTION_ENTRY_L4_DELTA"))


def words(value, n):
    """`value` as n 32-bit words, bits 31:0 first (DATA0 / RDATA0 first)."""
    assert 0 <= value < 1 << (32 * n)
    return [(value >> (32 * i)) & 0xFFFFFFFF for i in range(n)]


def from_words(ws):
    return sum(w << (32 * i) for i, w in enumerate(ws))


def flow_write_regs(index, entry, pair=False):
    """[(address, value)] register writes of a flow table command: WRITE of
    a 160-bit slot at `index`, or (`pair`) WRITE_PAIR of a 320-bit pair at
    the pair of `index` (an IPv6 entry, or two slots at once)."""
    n = L.FLOW6_ENTRY_WORDS if pair else L.FLOW_ENTRY_WORDS
    ops = [(L.FLOW_DATA_BASE + L.FLOW_DATA_STRIDE * i, w) for i, w in enumerate(words(entry, n))]
    return ops + [(L.FLOW_INDEX, index), (L.FLOW_CMD, L.TableCmd.WRITE_PAIR if pair else L.TableCmd.WRITE)]


def action_write_regs(index, entry):
    ops = [(L.ACT_DATA_BASE + L.ACT_DATA_STRIDE * i, w) for i, w in enumerate(words(entry, L.ACTION_ENTRY_WORDS))]
    return ops + [(L.ACT_INDEX, index), (L.ACT_CMD, L.TableCmd.WRITE)]


FLOW_RDATA = [L.FLOW_RDATA_BASE + L.FLOW_RDATA_STRIDE * i for i in range(L.FLOW_RDATA_LEN)]
ACT_RDATA = [L.ACT_RDATA_BASE + L.ACT_RDATA_STRIDE * i for i in range(L.ACT_RDATA_LEN)]


async def table_write(wr, rd, ops, status):
    """Runs a command's register writes (``flow_write_regs`` ...) with the
    async `wr(addr, value)` / `rd(addr)`, waiting for `status` busy = 0
    before and after."""
    while await rd(status) & L.FLOW_STATUS_BUSY_MASK:
        pass
    for a, v in ops:
        await wr(a, v)
    while await rd(status) & L.FLOW_STATUS_BUSY_MASK:
        pass


async def flow_read(wr, rd, index):
    """FLOW_CMD READ: (320 bits {slot index ^ 1, slot index}, last_hit)."""
    await wr(L.FLOW_INDEX, index)
    await wr(L.FLOW_CMD, L.TableCmd.READ)
    while await rd(L.FLOW_STATUS) & L.FLOW_STATUS_BUSY_MASK:
        pass
    e = from_words([await rd(a) for a in FLOW_RDATA])
    lh = await rd(L.FLOW_HIT_LO) | (await rd(L.FLOW_HIT_HI)) << 32
    return e, lh


async def action_read(wr, rd, index):
    """ACT_CMD READ: (256-bit action, packets, bytes)."""
    await wr(L.ACT_INDEX, index)
    await wr(L.ACT_CMD, L.TableCmd.READ)
    while await rd(L.ACT_STATUS) & L.ACT_STATUS_BUSY_MASK:
        pass
    e = from_words([await rd(a) for a in ACT_RDATA])
    pk = await rd(L.ACT_PKTS_LO) | (await rd(L.ACT_PKTS_HI)) << 32
    by = await rd(L.ACT_BYTES_LO) | (await rd(L.ACT_BYTES_HI)) << 32
    return e, pk, by


def meta(reason, hit, vip, hash0, seq, ts):
    """The 160-bit m_axis_host_tuser (lvsnic_host_meta)."""
    return (reason << L.HOST_META_REASON_LSB | hit << L.HOST_META_HIT_LSB | vip << L.HOST_META_VIP_LSB
            | hash0 << L.HOST_META_HASH_0_LSB | seq << L.HOST_META_SEQ_LSB | ts << L.HOST_META_TS_LSB)


class Ref:
    def __init__(self, buckets_log2, action_log2, vip_count=16, ipv6=True):
        self.B = buckets_log2
        self.ipv6 = ipv6    # parameter IPV6: without it IPv6 frames are NON_IPV4
        self.A = action_log2
        self.enable = False
        self.pmtu = True
        self.mac = bytes(6)
        self.ip = 0
        self.ip6 = 0        # IP6[0..3]: source of IPv6 tunnel headers (128-bit int)
        self.mtu = 1500
        self.vips = [(False, 0)] * vip_count
        self.flows = {}     # (way, bucket, slot) -> 160-bit slot
        self.actions = {}   # index -> 256-bit entry
        self.pkts = {}
        self.bytes = {}
        self.last_hit = {}

    def slot_index(self, way, bucket, slot):
        return way << (self.B + 2) | bucket << 2 | slot

    def slot_of(self, index):
        """(way, bucket, slot) of a slot index."""
        return index >> (self.B + 2), (index >> 2) & ((1 << self.B) - 1), index & 3

    def write_slot(self, index, entry):
        """FLOW_CMD WRITE: one slot, last_hit zeroed."""
        self.flows[self.slot_of(index)] = entry & ((1 << SLOT_BITS) - 1)
        self.last_hit[index] = 0

    def write_pair(self, index, entry):
        """FLOW_CMD WRITE_PAIR: the pair of `index` (its low bit ignored),
        bits 159:0 to the even slot, 319:160 to the odd one, both last_hit
        zeroed."""
        even, odd = pair_halves(entry)
        self.write_slot(index & ~1, even)
        self.write_slot(index | 1, odd)

    def read_pair(self, index):
        """FLOW_CMD READ: {slot index ^ 1, slot index} (320 bits)."""
        return self.flows.get(self.slot_of(index ^ 1), 0) << SLOT_BITS | self.flows.get(self.slot_of(index), 0)

    def buckets(self, src, dst, sport, dport):
        d = struct.pack(">IIHH", src, dst, sport, dport)
        m = (1 << self.B) - 1
        return toeplitz(KEY0, d) & m, toeplitz(KEY1, d) & m

    def buckets6(self, src, dst, sport, dport):
        d = src.to_bytes(16, "big") + dst.to_bytes(16, "big") + struct.pack(">HH", sport, dport)
        m = (1 << self.B) - 1
        return toeplitz(KEY0, d) & m, toeplitz(KEY1, d) & m

    def process(self, frame, ts=0, seq=0):
        n = len(frame)
        h, _ = header(frame)                       # missing bytes read as 0
        res = self._classify(h, n)
        reason, hit, vip, hash0, act_idx, slot = res
        m = meta(reason, hit, vip, hash0, seq, ts)
        if reason:
            return ("host", bytes(frame), m)
        tl = ip_len(h)
        if n < 14 + tl:
            return ("trunc", bytes(frame), meta(Reason.TRUNCATED, 1, vip, hash0, seq, ts))
        a = self.actions.get(act_idx, 0)
        out = self._rewrite(bytearray(frame[:14 + tl]), a)
        self.pkts[act_idx] = self.pkts.get(act_idx, 0) + 1
        self.bytes[act_idx] = self.bytes.get(act_idx, 0) + tl
        self.last_hit[slot] = ts
        return ("tx", bytes(out))

    def _classify(self, h, n):
        """(reason, hit, vip, hash0, action index, slot index)"""
        if not self.enable:
            return (Reason.DISABLED, 0, 0, 0, 0, 0)
        etype = h[12] << 8 | h[13]
        if self.ipv6 and etype == 0x86DD and n >= 14 and not h[0] & 1 and h[0:6] == self.mac:
            return self._classify6(h, n)
        ver, ihl = h[14] >> 4, h[14] & 15
        tl = h[16] << 8 | h[17]
        frag = h[20] << 8 | h[21]
        ttl, proto = h[22], h[23]
        src, dst = struct.unpack(">II", h[26:34])
        sport, dport = struct.unpack(">HH", h[34:38])
        pre = 0
        if n < 14:
            pre = Reason.MALFORMED
        elif h[0] & 1:
            pre = Reason.L2_MULTICAST
        elif h[0:6] != self.mac:
            pre = Reason.L2_OTHER_HOST
        elif etype == 0x8100:
            pre = Reason.VLAN
        elif etype != 0x0800:
            pre = Reason.NON_IPV4
        elif n < 34 or ver != 4 or ihl < 5 or tl < ihl * 4:
            pre = Reason.MALFORMED
        elif ihl > 5:
            pre = Reason.IP_OPTIONS
        elif csum(h[14:34]) != 0:
            pre = Reason.IP_CHECKSUM
        elif frag & 0x3FFF:
            pre = Reason.FRAGMENT
        elif proto not in (6, 17):
            pre = Reason.NOT_TCP_UDP
        elif tl < (40 if proto == 6 else 28) or n < (54 if proto == 6 else 42):
            pre = Reason.L4_TRUNCATED
        if pre:
            return (pre, 0, 0, 0, 0, 0)
        d = struct.pack(">IIHH", src, dst, sport, dport)
        hash0 = toeplitz(KEY0, d)
        vip = int(any(v and a == dst for v, a in self.vips))
        if ttl <= 1:
            return (Reason.TTL, int(self._lookup(h) is not None), vip, hash0, 0, 0)
        found = self._lookup(h)
        if found is None:
            r = Reason.MISS_VIP if vip else (Reason.MISS_LOCAL if dst == self.ip else Reason.MISS)
            return (r, 0, vip, hash0, 0, 0)
        entry, slot = found
        act_idx = get(entry, "FLOW_ENTRY_ACTION") & ((1 << self.A) - 1)
        ack_fast = get(entry, "FLOW_ENTRY_ACK_FAST")
        a = self.actions.get(act_idx, 0)
        op = get(a, "ACTION_ENTRY_OP")
        a_v6 = get(a, "ACTION_ENTRY_IPV6")
        if get(a, "ACTION_ENTRY_HOST") or (a_v6 and not (op == OP_TUNNEL and self.ipv6)):
            # host bit, or an IPv6 action hit by an IPv4 frame (a rewrite
            # across families, left to the host) but an IPv4-in-IPv6 tunnel
            return (Reason.ACTION_HOST, 1, vip, hash0, 0, 0)
        if proto == 6:
            flags = h[47]
            if (flags & 0x07) or not (flags & 0x10) or not ack_fast:
                return (Reason.TCP_CONTROL, 1, vip, hash0, 0, 0)
        if proto == 17 and (h[40] << 8 | h[41]) == 0 and op in (OP_DNAT, OP_SNAT):
            return (Reason.UDP_ZERO_CSUM, 1, vip, hash0, 0, 0)
        if tl + ((40 if a_v6 else 20) if op == OP_TUNNEL else 0) > self.mtu:
            return (Reason.TOO_BIG, 1, vip, hash0, 0, 0)
        return (0, 1, vip, hash0, act_idx, slot)

    def _classify6(self, h, n):
        """Rows 6..19 for an IPv6 frame (docs/hardware.md §3)."""
        plen, nh, hl = h[18] << 8 | h[19], h[20], h[21]
        if n < 54 or h[14] >> 4 != 6:
            return (Reason.MALFORMED, 0, 0, 0, 0, 0)
        if nh in IPV6_EXT_OPTIONS:
            return (Reason.IP_OPTIONS, 0, 0, 0, 0, 0)
        if nh == 44:
            return (Reason.FRAGMENT, 0, 0, 0, 0, 0)
        if nh not in (6, 17):
            return (Reason.NOT_TCP_UDP, 0, 0, 0, 0, 0)
        if plen < (20 if nh == 6 else 8) or n < (74 if nh == 6 else 62):
            return (Reason.L4_TRUNCATED, 0, 0, 0, 0, 0)
        hash0 = toeplitz(KEY0, h[22:58])
        found = self._lookup6(h)
        if hl <= 1:
            return (Reason.TTL, int(found is not None), 0, hash0, 0, 0)
        if found is None:
            return (Reason.MISS, 0, 0, hash0, 0, 0)
        entry, slot = found
        act_idx = get(entry, "FLOW6_ENTRY_ACTION") & ((1 << self.A) - 1)
        a = self.actions.get(act_idx, 0)
        op = get(a, "ACTION_ENTRY_OP")
        # an IPv4 action (ROUTE/NAT into IPv4, IPv6 in IPv4) is the host's;
        # TUNNEL with an IPv6 action is ip6ip6
        if get(a, "ACTION_ENTRY_HOST") or not get(a, "ACTION_ENTRY_IPV6"):
            return (Reason.ACTION_HOST, 1, 0, hash0, 0, 0)
        if nh == 6:
            flags = h[67]
            if (flags & 0x07) or not (flags & 0x10) or not get(entry, "FLOW6_ENTRY_ACK_FAST"):
                return (Reason.TCP_CONTROL, 1, 0, hash0, 0, 0)
        if nh == 17 and (h[60] << 8 | h[61]) == 0 and op in (OP_DNAT, OP_SNAT):
            return (Reason.UDP_ZERO_CSUM, 1, 0, hash0, 0, 0)
        if 40 + plen + (40 if op == OP_TUNNEL else 0) > self.mtu:
            return (Reason.TOO_BIG, 1, 0, hash0, 0, 0)
        return (0, 1, 0, hash0, act_idx, slot)

    def _lookup6(self, h):
        key = (h[20], int.from_bytes(h[22:38], "big"), int.from_bytes(h[38:54], "big")) + struct.unpack(">HH", h[54:58])
        b0, b1 = self.buckets6(*key[1:])
        for way, b in ((0, b0), (1, b1)):
            for slot in (0, 2):
                e = self.flows.get((way, b, slot), 0) | self.flows.get((way, b, slot + 1), 0) << SLOT_BITS
                if get(e, "FLOW6_ENTRY_VALID") and get(e, "FLOW6_ENTRY_IPV6") and tuple(
                        get(e, "FLOW6_ENTRY_" + f) for f in ("PROTO", "SADDR", "DADDR", "SPORT", "DPORT")) == key:
                    return e, self.slot_index(way, b, slot)
        return None

    def _lookup(self, h):
        proto = h[23]
        src, dst = struct.unpack(">II", h[26:34])
        sport, dport = struct.unpack(">HH", h[34:38])
        key = (proto, src, dst, sport, dport)
        b0, b1 = self.buckets(src, dst, sport, dport)
        for way, b in ((0, b0), (1, b1)):
            for slot in range(4):
                e = self.flows.get((way, b, slot), 0)
                if self.ipv4_eligible(way, b, slot) and flow_key(e) == key:
                    return e, self.slot_index(way, b, slot)
        return None

    def ipv4_eligible(self, way, bucket, slot):
        """Slot may match an IPv4 key: valid, ipv6 0, and not the tail of a
        valid IPv6 head (odd slot after a valid slot with ipv6 1)."""
        e = self.flows.get((way, bucket, slot), 0)
        if not get(e, "FLOW_ENTRY_VALID") or get(e, "FLOW_ENTRY_IPV6"):
            return False
        if slot & 1:
            h = self.flows.get((way, bucket, slot - 1), 0)
            if get(h, "FLOW6_ENTRY_VALID") and get(h, "FLOW6_ENTRY_IPV6"):
                return False
        return True

    def _encap6(self, f, a, tc, hop, nh):
        """The 40-byte IPv6 outer header after the Ethernet header
        (EtherType 0x86DD): traffic class ECN-encapsulated, flow label 0,
        payload length = the inner packet's length, next header `nh`, hop
        limit `hop`, source IP6, destination the action's address."""
        if tc & 3 == 3:
            tc = (tc & 0xFC) | 2
        o = bytearray(40)
        o[0] = 0x60 | tc >> 4
        o[1] = (tc & 15) << 4
        o[4:6] = (len(f) - 14).to_bytes(2, "big")
        o[6] = nh
        o[7] = hop
        o[8:24] = self.ip6.to_bytes(16, "big")
        o[24:40] = get(a, "ACTION_ENTRY_ADDR").to_bytes(16, "big")
        f[12:14] = b"\x86\xdd"
        f[14:14] = o
        return f

    def _rewrite6(self, f, a):
        """IPv6: MACs, hop limit - 1, NAT address/port/L4 checksum;
        TUNNEL: ip6ip6."""
        op = get(a, "ACTION_ENTRY_OP")
        addr = get(a, "ACTION_ENTRY_ADDR").to_bytes(16, "big")
        port = get(a, "ACTION_ENTRY_PORT").to_bytes(2, "big")
        f[0:6] = get(a, "ACTION_ENTRY_MAC").to_bytes(6, "big")
        f[6:12] = self.mac
        f[21] = (f[21] - 1) & 0xFF
        if op in (OP_DNAT, OP_SNAT):
            if op == OP_DNAT:
                f[38:54], f[56:58] = addr, port
            else:
                f[22:38], f[54:56] = addr, port
            co = 54 + (16 if f[20] == 6 else 6)
            old = f[co] << 8 | f[co + 1]
            s = fold(0xFFFF + (~old & 0xFFFF) + get(a, "ACTION_ENTRY_L4_DELTA"))
            new = ~s & 0xFFFF
            if f[20] == 17 and new == 0:
                new = 0xFFFF
            f[co:co + 2] = new.to_bytes(2, "big")
        if op == OP_TUNNEL:
            return self._encap6(f, a, (f[14] & 15) << 4 | f[15] >> 4, f[21], 41)
        return f

    def _rewrite(self, f, a):
        if is_v6(f):
            return self._rewrite6(f, a)
        op = get(a, "ACTION_ENTRY_OP")
        amac = get(a, "ACTION_ENTRY_MAC").to_bytes(6, "big")
        addr = get(a, "ACTION_ENTRY_ADDR") & 0xFFFFFFFF      # IPv4: the addr field's bits 31:0
        port = get(a, "ACTION_ENTRY_PORT")
        delta = get(a, "ACTION_ENTRY_L4_DELTA")
        f[0:6] = amac
        f[6:12] = self.mac
        f[22] = (f[22] - 1) & 0xFF
        proto = f[23]
        if op in (OP_DNAT, OP_SNAT):
            if op == OP_DNAT:
                f[30:34] = addr.to_bytes(4, "big")
                f[36:38] = port.to_bytes(2, "big")
            else:
                f[26:30] = addr.to_bytes(4, "big")
                f[34:36] = port.to_bytes(2, "big")
            co = 34 + (16 if proto == 6 else 6)
            old = f[co] << 8 | f[co + 1]
            s = 0xFFFF + (~old & 0xFFFF) + delta
            s = (s & 0xFFFF) + (s >> 16)
            s = (s & 0xFFFF) + (s >> 16)
            new = ~s & 0xFFFF
            if proto == 17 and new == 0:
                new = 0xFFFF
            f[co:co + 2] = new.to_bytes(2, "big")
        f[24:26] = b"\0\0"
        f[24:26] = csum(bytes(f[14:34])).to_bytes(2, "big")
        if op == OP_TUNNEL and get(a, "ACTION_ENTRY_IPV6"):
            return self._encap6(f, a, f[15], f[22], 4)
        if op == OP_TUNNEL:
            tos = f[15]
            if tos & 3 == 3:
                tos = (tos & 0xFC) | 2
            tl = f[16] << 8 | f[17]
            df = self.pmtu and (f[20] & 0x40)
            o = bytearray(20)
            o[0] = 0x45
            o[1] = tos
            o[2:4] = (tl + 20).to_bytes(2, "big")
            o[4:6] = b"\0\0" if df else f[18:20]
            o[6:8] = b"\x40\0" if df else b"\0\0"
            o[8] = f[22]
            o[9] = 4
            o[12:16] = self.ip.to_bytes(4, "big")
            o[16:20] = addr.to_bytes(4, "big")
            o[10:12] = csum(bytes(o)).to_bytes(2, "big")
            f[14:14] = o
        return f


def lookup_decision(ref, frame):
    """The decision lvsnic_lookup takes for ``frame`` (it sees the first 74
    bytes of an IPv6 frame, 54 of others, zero-filled, and how many are
    present: ``header``), before the egress's length check:

    * ``("host", reason, hit, vip, hash_0)`` for an exception;
    * ``("fwd", tun, head, total_length, action_index, slot_index, vip,
      hash_0)`` for a forwarded frame, ``tun`` 0, 1 (IPIP) or 2 (an IPv6
      outer header), ``head`` the first 54 bytes (74 with a tunnel or IPv6)
      of the rewritten frame, fewer when the rewritten frame is
      shorter. A frame shorter than 14 + total length is forwarded here too
      (the egress aborts it, docs/hardware.md §3.1); its head is that of the
      frame zero-filled to 14 + total length.

    No state (counters, last_hit) is changed."""
    n = len(frame)
    h, _ = header(frame)
    reason, hit, vip, hash0, act, slot = ref._classify(h, n)
    if reason:
        return ("host", reason, hit, vip, hash0)
    tl = ip_len(h)
    a = ref.actions.get(act, 0)
    tun = (2 if get(a, "ACTION_ENTRY_IPV6") else 1) if get(a, "ACTION_ENTRY_OP") == OP_TUNNEL else 0
    body = bytearray(frame[:14 + tl]) + bytes(max(0, 14 + tl - n))
    out = ref._rewrite(body, a)
    return ("fwd", tun, bytes(out[:74 if tun or is_v6(h) else 54]), tl, act, slot, vip, hash0)
