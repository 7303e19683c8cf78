"""lvsnic_regs: the AXI4-Lite register block (docs/hardware.md §6, the
generated map hw/regmap/lvsnic.rdl / docs/registers.md), DATA_WIDTH 64,
FLOW_BUCKETS_LOG2 4, ACTION_LOG2 4, VIP_COUNT 4, IPV6 0 (the core's default is
1: CAPS1.ipv6 must follow the parameter), AXIL_ADDR_WIDTH 16, driven
with cocotbext-axi's AxiLiteMaster.

The register list is read from the SystemRDL source (every register of the
map, arrays unrolled); the expected behaviour comes from docs/hardware.md:
reset values, read/write registers keeping only their defined bits, byte
strobes, read-only registers ignoring writes, unmapped addresses and
aliases (the full address width is decoded) reading 0 and ignoring writes,
VIP[i >= VIP_COUNT] reading 0. (The map has no write-1-to-clear registers;
FLOW_CMD / ACT_CMD are write-only and read 0.)

Commands: a Python stand-in for lvsnic_lookup / lvsnic_stats answers the
block's table ports (steal + write, read tokens, statistics operations)
with random delays; checked: the entry and index written (FLOW_CMD WRITE:
one 160-bit slot, DATA bits 159:0; WRITE_PAIR: the even slot of the
index's pair with DATA 159:0 and the odd one with 319:160 in one stolen
cycle; ACT_CMD WRITE: 256 bits), last_hit (both slots for a pair) /
counters zeroed after a write, read results in RDATA (flow: the slot in
159:0, its partner slot ^ 1 in 319:160)/HIT/PKTS/BYTES, busy, commands
ignored while busy, during the reset sweep and for values other than 1 and
2 (and 3 for FLOW_CMD) after strobes, staging registers latched when a
command is taken. Counters: each event input counts its counter(s), unimplemented
numbers read 0, and the HI latch (LO then HI is one consistent 64-bit
value while the counter crosses a 2^32 boundary).
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly
from cocotbext.axi import AxiLiteBus, AxiLiteMaster

import lvsnic_regs as RM
from lvsnic_regs import Reason, TableCmd
from lvsnic_tb import REPO, cycles, seed, start

DW, B, A, VIPS, AW = 64, 4, 4, 4, 16
IPV6 = 0
SLOT = RM.FLOW_ENTRY_WORDS * 32                   # one flow slot (160 bits)
SLOT_MASK = (1 << SLOT) - 1
WORDS = {"FLOW": RM.FLOW_DATA_LEN, "ACT": RM.ACT_DATA_LEN}   # staging words (10, 8)


def register_map():
    """[(name, address, [(field, lsb, width, sw, hw, reset)])] of every
    register of hw/regmap/lvsnic.rdl."""
    from systemrdl import RDLCompiler
    from systemrdl.node import RegNode
    rdlc = RDLCompiler()
    rdlc.compile_file(str(REPO / "hw" / "regmap" / "lvsnic.rdl"))
    top = rdlc.elaborate(top_def_name="lvsnic").top
    out = []
    for r in top.descendants(unroll=True):
        if isinstance(r, RegNode):
            name = r.get_path().split(".", 1)[1]
            out.append((name, r.absolute_address,
                        [(f.inst_name, f.lsb, f.width, f.get_property("sw").name, f.get_property("hw").name,
                          f.get_property("reset")) for f in r.fields()]))
    return out


def kept_bits(name, fields):
    """The bits a read/write register keeps (docs/hardware.md §6)."""
    m = 0
    for _, lsb, width, _, _, _ in fields:
        m |= ((1 << width) - 1) << lsb
    limits = {"VIP_VALID": VIPS, "FLOW_INDEX": B + 3, "ACT_INDEX": A}
    if name in limits:
        m &= (1 << limits[name]) - 1
    if name.startswith("VIP[") and int(name[4:-1]) >= VIPS:
        m = 0
    if name.startswith("IP6[") and not IPV6:
        m = 0               # no IPv6 tunnels (CAPS1.tun6 = 0): read 0, writes ignored
    return m


def reset_value(name, fields):
    """None when the contract gives no reset value (read-back registers)."""
    if name == "CAPS0":
        return DW | B << 16 | A << 24
    if name == "CAPS1":
        return 4 | 2 << 8 | VIPS << 16 | IPV6 << 24 | IPV6 << 25     # ipv6, tun6
    if name.startswith("CNT[") or name in ("FLOW_STATUS", "ACT_STATUS", "FLOW_CMD", "ACT_CMD"):
        return 0
    v = 0
    for _, lsb, _, _, _, reset in fields:
        if reset is None:
            return None
        v |= reset << lsb
    return v & kept_bits(name, fields) if all(f[3] == "rw" for f in fields) else v


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.axil.write_if.log.setLevel("WARNING")
        self.axil.read_if.log.setLevel("WARNING")
        for s in ("tok_ack", "flow_rd_valid", "act_rd_valid", "st_ack", "lh_rd_valid", "cnt_rd_valid",
                  "init_busy", "ev_rx", "ev_fwd", "ev_host", "ev_host_reason", "ev_inj"):
            getattr(dut, s).value = 0
        self.map = register_map()
        self.addr = {name: a for name, a, _ in self.map}

    async def rd(self, a):
        return await self.axil.read_dword(a)

    async def wr(self, a, v):
        await self.axil.write_dword(a, v)


@cocotb.test()
async def register_map_access(dut):
    """Reset values, read/write masks, strobes, read-only, unmapped, aliases."""
    tb = TB(dut)
    await start(dut, settle=3)
    rng = random.Random(seed(71))
    regs = tb.map
    assert len(regs) > 150
    for name, a, fields in regs:
        exp = reset_value(name, fields)
        if exp is not None:
            assert await tb.rd(a) == exp, f"{name} @ {a:#x}: reset value"
    for name, a, fields in regs:
        sw = {f[3] for f in fields}
        if sw == {"rw"}:
            m = kept_bits(name, fields)
            for v in (0xFFFFFFFF, 0, rng.getrandbits(32), rng.getrandbits(32)):
                await tb.wr(a, v)
                assert await tb.rd(a) == v & m, f"{name}: wrote {v:#x}"
            # byte strobes: one lane at a time
            await tb.wr(a, 0)
            val = 0
            for lane in rng.sample(range(4), 4):
                byte = rng.randrange(1, 256)
                await tb.axil.write(a + lane, bytes([byte]))
                val |= byte << (8 * lane)
                assert await tb.rd(a) == val & m, f"{name}: strobe lane {lane}"
        elif sw == {"r"}:
            before = await tb.rd(a)
            await tb.wr(a, ~before & 0xFFFFFFFF)
            assert await tb.rd(a) == before, f"{name}: a read-only register changed on a write"
        elif sw == {"w"}:
            assert await tb.rd(a) == 0, f"{name}: write-only register reads 0"
        else:
            raise AssertionError(f"{name}: access {sw} not covered by this test")
    # unmapped words in and beyond the map, and aliases of mapped ones
    mapped = {a for _, a, _ in regs}
    words = [w for w in range(0, 0x700, 4) if w not in mapped]
    words += [a | 1 << bit for a in (tb.addr["CTRL"], tb.addr["VIP[0]"], tb.addr["FLOW_INDEX"], tb.addr["CNT[0].LO"])
              for bit in range(11, AW)]
    snapshot = {name: await tb.rd(a) for name, a, f in regs if {x[3] for x in f} == {"rw"}}
    for w in words:
        assert await tb.rd(w) == 0, f"unmapped {w:#x} reads nonzero"
        await tb.wr(w, 0xFFFFFFFF)
    for name, v in snapshot.items():
        assert await tb.rd(tb.addr[name]) == v, f"{name} changed by a write to an unmapped address"
    # responses always OKAY
    r = await tb.axil.read(0x7FFC, 4)
    assert int(r.resp) == 0
    w = await tb.axil.write(0x7FFC, b"\x01\x02\x03\x04")
    assert int(w.resp) == 0


class Tables:
    """Stand-in for the lookup's and statistics' table ports: records
    writes and answers tokens / statistics operations after random delays."""

    def __init__(self, dut, rng):
        self.dut, self.rng = dut, rng
        self.flow, self.act, self.lh, self.cnt = {}, {}, {}, {}
        self.log = []
        cocotb.start_soon(self.writes())
        cocotb.start_soon(self.serve(dut.tok_req, dut.tok_ack, ("tok_is_act", "tok_idx"), self.token))
        cocotb.start_soon(self.serve(dut.st_req, dut.st_ack, ("st_op", "st_idx"), self.stats_op))

    async def writes(self):
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            await ReadOnly()
            if not int(d.steal.value):
                continue
            aw = int(d.act_wr.value)
            assert aw + int(d.flow_wr.value) == 1, "steal without exactly one write strobe"
            idx_s, data_s = (d.act_wr_idx, d.act_wr_data) if aw else (d.flow_wr_idx, d.flow_wr_data)
            idx, val, pair = int(idx_s.value), int(data_s.value), int(d.flow_wr_pair.value)
            if aw:
                self.act[idx] = val
                self.log.append(("wr_act", idx, val))
            elif pair:                          # the lookup: even slot 159:0, odd slot 319:160
                assert idx & 1 == 0, "WRITE_PAIR at an odd index"
                self.flow[idx], self.flow[idx | 1] = val & SLOT_MASK, val >> SLOT
                self.log.append(("wr_pair", idx, val))
            else:                               # the lookup: the slot takes bits 159:0
                self.flow[idx] = val & SLOT_MASK
                self.log.append(("wr_flow", idx, val & SLOT_MASK))
            await FallingEdge(d.clk)            # the stolen cycle: still held
            await ReadOnly()
            assert (int(idx_s.value), int(data_s.value), int(d.flow_wr_pair.value)) == (idx, val, pair), \
                "write not held in the stolen cycle"

    async def serve(self, req, ack, fields, act):
        """Acknowledges a level request after 1..5 cycles; `act` gets the
        request's fields."""
        d = self.dut
        while True:
            await FallingEdge(d.clk)
            ack.value = 0
            await ReadOnly()
            if not int(req.value):
                continue
            for _ in range(self.rng.choice([1, 1, 2, 5])):
                await FallingEdge(d.clk)
            ack.value = 1
            await ReadOnly()
            act(*(int(getattr(d, f).value) for f in fields))

    def result(self, sig, **values):
        """A read result after a random delay, one cycle long."""
        async def pulse():
            d = self.dut
            for _ in range(self.rng.randrange(2, 8)):
                await FallingEdge(d.clk)
            getattr(d, sig).value = 1
            for k, v in values.items():
                getattr(d, k).value = v
            await FallingEdge(d.clk)
            getattr(d, sig).value = 0
        cocotb.start_soon(pulse())

    def token(self, is_act, idx):
        self.log.append(("tok", is_act, idx))
        if is_act:
            self.result("act_rd_valid", act_rd_data=self.act.get(idx & ((1 << A) - 1), 0))
        else:
            idx &= (1 << (B + 3)) - 1           # the slot in 159:0, its pair partner in 319:160
            self.result("flow_rd_valid", flow_rd_data=self.flow.get(idx ^ 1, 0) << SLOT | self.flow.get(idx, 0))

    def stats_op(self, op, idx):
        self.log.append(("st", op, idx))
        slot, act = idx & ((1 << (B + 3)) - 1), idx & ((1 << A) - 1)
        if op == 0:
            self.lh[slot] = 0
        elif op == 1:
            self.result("lh_rd_valid", lh_rd_data=self.lh.get(slot, 0))
        elif op == 2:
            self.cnt[act] = (0, 0)
        else:
            pk, by = self.cnt.get(act, (0, 0))
            self.result("cnt_rd_valid", cnt_rd_pkts=pk, cnt_rd_bytes=by)


async def wait_idle(tb, status):
    for _ in range(200):
        if not await tb.rd(status) & 1:
            return
    raise AssertionError("command stays busy")


async def stage(tb, prefix, idx, entry):
    for i in range(WORDS[prefix]):
        await tb.wr(tb.addr[f"{prefix}_DATA[{i}]"], (entry >> (32 * i)) & 0xFFFFFFFF)
    await tb.wr(tb.addr[f"{prefix}_INDEX"], idx)


@cocotb.test()
async def commands(dut):
    tb = TB(dut)
    await start(dut, settle=3)
    rng = random.Random(seed(72))
    tab = Tables(dut, rng)
    for prefix, n_idx, lo, hi in (("FLOW", 1 << (B + 3), "FLOW_HIT_LO", "FLOW_HIT_HI"),
                                  ("ACT", 1 << A, "ACT_PKTS_LO", "ACT_PKTS_HI")):
        is_act = prefix == "ACT"
        cmd, status = tb.addr[f"{prefix}_CMD"], tb.addr[f"{prefix}_STATUS"]
        bits = 32 * WORDS[prefix]
        for k in range(8):
            idx, entry = rng.randrange(n_idx), rng.getrandbits(bits)
            pair = not is_act and k % 2 == 1
            # write: entry and index as staged, then the activity zeroed
            tab.log.clear()
            await stage(tb, prefix, idx, entry)
            await tb.wr(cmd, TableCmd.WRITE_PAIR if pair else TableCmd.WRITE)
            # the staging registers may change while busy
            await stage(tb, prefix, rng.randrange(n_idx), rng.getrandbits(bits))
            await wait_idle(tb, status)
            if is_act:
                exp = [("wr_act", idx, entry), ("st", 2, idx)]
            elif pair:                            # both slots of the pair, both last_hit zeroed
                exp = [("wr_pair", idx & ~1, entry), ("st", 0, idx & ~1), ("st", 0, idx | 1)]
            else:
                exp = [("wr_flow", idx, entry & SLOT_MASK), ("st", 0, idx)]
            assert tab.log == exp, tab.log
            # read: entry and activity returned by the tables
            if is_act:
                tab.cnt[idx] = (rng.getrandbits(64), rng.getrandbits(64))
            else:
                tab.lh[idx] = rng.getrandbits(64)
            tab.log.clear()
            await tb.wr(tb.addr[f"{prefix}_INDEX"], idx)
            await tb.wr(cmd, 2)
            await wait_idle(tb, status)
            assert tab.log == [("tok", int(is_act), idx), ("st", 3 if is_act else 1, idx)], tab.log
            got = 0
            for i in range(WORDS[prefix]):
                got |= await tb.rd(tb.addr[f"{prefix}_RDATA[{i}]"]) << (32 * i)
            if is_act:
                assert got == entry, f"{prefix} read-back entry"
            else:
                assert got == tab.flow.get(idx ^ 1, 0) << SLOT | tab.flow[idx], f"{prefix} read-back entry"
                if pair:
                    assert got == (entry if idx % 2 == 0 else (entry & SLOT_MASK) << SLOT | entry >> SLOT)
            if is_act:
                pk, by = tab.cnt[idx]
                got = [await tb.rd(tb.addr[r]) for r in ("ACT_PKTS_LO", "ACT_PKTS_HI", "ACT_BYTES_LO", "ACT_BYTES_HI")]
                assert got == [pk & 0xFFFFFFFF, pk >> 32, by & 0xFFFFFFFF, by >> 32]
            else:
                got = await tb.rd(tb.addr[lo]) | await tb.rd(tb.addr[hi]) << 32
                assert got == tab.lh[idx], "FLOW_HIT"
        # ignored: other values (after strobes), a command while busy
        tab.log.clear()
        for v in (0, 5, 0x101, 0x80000001, 0x103) + ((3,) if is_act else ()):   # ACT_CMD: 3 ignored
            await tb.wr(cmd, v)
        await tb.axil.write(cmd + 1, b"\x01")        # lane 1 only: value 0x100
        await cycles(dut, 20)
        assert tab.log == [], f"{prefix}: ignored command values acted on: {tab.log}"
        await tb.wr(cmd, 2)
        await tb.wr(cmd, 1)                          # while the read is busy
        await wait_idle(tb, status)
        assert [x[0] for x in tab.log] == ["tok", "st"], f"{prefix}: command while busy: {tab.log}"
    # during the reset sweep: busy, commands ignored
    dut.init_busy.value = 1
    await cycles(dut, 2)
    tab.log.clear()
    assert await tb.rd(tb.addr["FLOW_STATUS"]) == 1 and await tb.rd(tb.addr["ACT_STATUS"]) == 1
    await tb.wr(tb.addr["FLOW_CMD"], 1)
    await tb.wr(tb.addr["ACT_CMD"], 2)
    await cycles(dut, 10)
    dut.init_busy.value = 0
    await cycles(dut, 10)
    assert tab.log == [] and await tb.rd(tb.addr["FLOW_STATUS"]) == 0


@cocotb.test()
async def counters(dut):
    tb = TB(dut)
    await start(dut, settle=3)
    rng = random.Random(seed(73))
    n = {k: 0 for k in range(64)}

    async def events(cycles_):
        for _ in range(cycles_):
            await FallingEdge(dut.clk)
            rx, fw, inj = (int(rng.random() < 0.5) for _ in range(3))
            host = int(rng.random() < 0.6)
            reason = rng.choice(range(0, 32))
            dut.ev_rx.value, dut.ev_fwd.value, dut.ev_inj.value = rx, fw, inj
            dut.ev_host.value, dut.ev_host_reason.value = host, reason
            n[0] += rx
            n[1] += fw
            n[3] += inj
            n[2] += host
            if host and 1 <= reason < len(Reason):
                n[32 + reason] += 1
        await FallingEdge(dut.clk)
        dut.ev_rx.value = dut.ev_fwd.value = dut.ev_inj.value = dut.ev_host.value = 0

    # HI reads 0 before the first LO read
    await events(50)
    for k in (0, 1, 2, 3, 33, 51):
        assert await tb.rd(tb.addr[f"CNT[{k}].HI"]) == 0
    await events(1500)
    for k in range(64):
        lo = await tb.rd(tb.addr[f"CNT[{k}].LO"])
        hi = await tb.rd(tb.addr[f"CNT[{k}].HI"])
        assert hi << 32 | lo == n[k], f"CNT[{k}] = {hi << 32 | lo}, expected {n[k]}"
    assert n[0] > 500 and n[33] > 10 and n[51] > 10
    # HI latch across a 2^32 boundary: the frames-received counter is set
    # just below it and counts every cycle while LO/HI pairs are read
    await FallingEdge(dut.clk)
    start_v = (5 << 32) | 0xFFFFFF00
    dut.g_cnt[0].g_impl.c.value = start_v
    dut.ev_rx.value = 1
    vals = []
    for _ in range(40):
        lo = await tb.rd(tb.addr["CNT[0].LO"])
        hi = await tb.rd(tb.addr["CNT[0].HI"])
        vals.append(hi << 32 | lo)
    await FallingEdge(dut.clk)
    dut.ev_rx.value = 0
    end_v = (await tb.rd(tb.addr["CNT[0].LO"])) | (await tb.rd(tb.addr["CNT[0].HI"])) << 32
    assert vals == sorted(vals) and start_v <= vals[0] and vals[-1] < end_v, [hex(v) for v in vals]
    assert vals[0] >> 32 == 5 and vals[-1] >> 32 == 6, "the run did not cross the boundary"
    # the latch is per counter: another counter's LO read in between does
    # not change what this counter's HI returns
    lo0 = await tb.rd(tb.addr["CNT[0].LO"])
    await tb.rd(tb.addr["CNT[1].LO"])
    assert await tb.rd(tb.addr["CNT[0].HI"]) << 32 | lo0 == end_v


def test_regs():
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run("regs", "lvsnic_regs", "test_regs", here,
        parameters={"DATA_WIDTH": DW, "FLOW_BUCKETS_LOG2": B, "ACTION_LOG2": A, "VIP_COUNT": VIPS,
                    "IPV6": IPV6, "AXIL_ADDR_WIDTH": AW})
