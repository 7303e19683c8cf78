"""lvsnic_dma: the card's DMA engine (docs/hardware.md §8; Rust model
host-driver/src/device/dma_model.rs), DATA_WIDTH 64 and 512.

Host memory is a cocotbext-axi AxiRam on the AXI4 master (it also asserts
that no INCR burst crosses a 4 KiB boundary); accesses at or above FAULT
answer SLVERR (an IOMMU fault). Registers through a cocotbext-axi
AXI-Lite master, exception frames in on s_axis_host, injected frames out
of m_axis_inject (random backpressure). Expected values are written from
the spec here: completion records byte by byte (§8.4), frames byte-exact in
their buffers with the bytes around them untouched, register values after
each step (§8.2, §8.5); rx_random against RxModel, a transcription of the
Rust model's receive path. Register offsets come from the generated
hw/regmap/src/dma.rs.
"""

import os
import random
import re
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import (AxiBus, AxiLiteBus, AxiLiteMaster, AxiRam, AxiStreamBus, AxiStreamFrame,
                           AxiStreamSink, AxiStreamSource)

from lvsnic_tb import REPO, cycles, pauses, rand_bytes, seed, start

MAX_FRAME = 16384
FAULT = 1 << 40          # host addresses at or above: SLVERR
GUARD = 0xEE             # fill of the buffer areas before a test


def _regmap():
    """NAME -> value of every `pub const NAME: u32 = V;` in the generated
    register map of the engine."""
    text = (REPO / "hw" / "regmap" / "src" / "dma.rs").read_text()
    return {m[1]: int(m[2], 0) for m in re.finditer(r"pub const (\w+): u32 = (0x[0-9A-Fa-f]+|\d+);", text)}


R = _regmap()
BASE = R["DMA_BASE"]
RXQ, TXQ = R["RXQ"] - BASE, R["TXQ"] - BASE


def cpl(index, length, meta, status, phase):
    """A completion record, docs/hardware.md §8.4."""
    b = bytearray(32)
    b[0:2] = index.to_bytes(2, "little")
    b[2:4] = length.to_bytes(2, "little")
    for i, w in enumerate(meta):
        b[4 + 4 * i:8 + 4 * i] = w.to_bytes(4, "little")
    b[30] = status
    b[31] = 0x80 if phase else 0
    return bytes(b)


def desc(addr, length, word3=0):
    return addr.to_bytes(8, "little") + length.to_bytes(4, "little") + word3.to_bytes(4, "little")


def meta_words(m):
    return [(m >> (32 * i)) & 0xFFFF_FFFF for i in range(5)]


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.W = len(dut.s_axis_host_tkeep)
        self.ram = AxiRam(AxiBus.from_prefix(dut, "m_axi"), dut.clk, dut.rst, size=1 << 22)
        for iface, name in ((self.ram.write_if, "_write"), (self.ram.read_if, "_read")):
            setattr(iface, name, self._faulty(getattr(iface, name)))
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_host"), dut.clk, dut.rst)
        self.sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_inject"), dut.clk, dut.rst)
        for o in (self.ram.write_if, self.ram.read_if, self.axil.write_if, self.axil.read_if, self.src, self.sink):
            o.log.setLevel("ERROR")
        self.irqs = [0, 0]
        cocotb.start_soon(self._irq_monitor())

    @staticmethod
    def _faulty(fn):
        async def wrapped(address, *args):
            if address >= FAULT:
                raise ValueError("fault window")
            return await fn(address, *args)
        return wrapped

    async def _irq_monitor(self):
        while True:
            await FallingEdge(self.dut.clk)
            await ReadOnly()
            v = int(self.dut.irq.value)
            for q in (0, 1):
                self.irqs[q] += (v >> q) & 1

    def stall(self, rng, p):
        """Random pauses (probability p) on every host-memory channel and
        on the s_axis_host source."""
        w, r = self.ram.write_if, self.ram.read_if
        for ch in (w.aw_channel, w.w_channel, w.b_channel, r.ar_channel, r.r_channel, self.src):
            ch.set_pause_generator(pauses(rng, p))

    async def rd(self, a):
        return await self.axil.read_dword(a)

    async def wr(self, a, v):
        await self.axil.write_dword(a, v)

    async def q(self, qb, name):
        return await self.rd(qb + R[name])

    async def setup(self, qb, dq, cq, log2):
        """Host start (§8.6): CTRL 0, zeroed completion ring, bases, size, enable."""
        await self.wr(qb + R["CTRL"], 0)
        self.ram.write(cq, bytes(32 << log2))
        await self.wr(qb + R["DQ_BASE_LO"], dq & 0xFFFF_FFFF)
        await self.wr(qb + R["DQ_BASE_HI"], dq >> 32)
        await self.wr(qb + R["CQ_BASE_LO"], cq & 0xFFFF_FFFF)
        await self.wr(qb + R["CQ_BASE_HI"], cq >> 32)
        await self.wr(qb + R["SIZE_LOG2"], log2)
        await self.wr(qb + R["CTRL"], 1)
        assert await self.q(qb, "STATUS") == 1

    async def until(self, cond, what, limit=200000):
        for _ in range(limit // 50):
            if await cond():
                return
            await cycles(self.dut, 50)
        raise AssertionError(f"timeout waiting for {what}")

    async def wait_count(self, qb, name, value):
        async def c():
            return await self.q(qb, name) == value
        await self.until(c, f"{name} == {value}")

    async def counters(self, qb):
        return {n: await self.q(qb, n) for n in ("DQ_PROD", "DQ_CONS", "CQ_PROD", "CQ_CONS",
                                                 "ERR_DESC", "ERR_INDEX", "ERR_DMA", "DROP", "STATUS")}


# ---------------------------------------------------------------- registers
@cocotb.test()
async def registers(dut):
    """Reset values, DMA_CAPS, base/size writes only while disabled, the
    SIZE_LOG2 range, enable refused before SIZE_LOG2 is set and zeroing the
    indices, DQ_PROD/CQ_CONS acceptance rules and ERR_INDEX, byte strobes,
    unaligned and unlisted addresses."""
    tb = TB(dut)
    await start(dut)
    assert await tb.rd(R["DMA_CAPS"] - BASE) == (MAX_FRAME << 16) | (15 << 8) | 2
    for qb in (RXQ, TXQ):
        for off in range(0, 0x40, 4):
            assert await tb.rd(qb + off) == 0, f"reset {qb + off:#x}"
    for a in (0x04, 0x3C, 0xC0, 0xFC):
        assert await tb.rd(a) == 0, f"{a:#x} reads 0"
    qb = RXQ
    # enable refused while SIZE_LOG2 was never set
    await tb.wr(qb + R["CTRL"], 1)
    assert (await tb.q(qb, "CTRL"), await tb.q(qb, "STATUS")) == (0, 0)
    for v, exp in ((1, 0), (16, 0), (2, 2), (15, 15), (0, 15), (0x102, 15), (5, 5)):
        await tb.wr(qb + R["SIZE_LOG2"], v)
        assert await tb.q(qb, "SIZE_LOG2") == exp, f"SIZE_LOG2 after {v}"
    await tb.wr(qb + R["DQ_BASE_LO"], 0x1234_5670)
    await tb.wr(qb + R["DQ_BASE_HI"], 0x89AB_CDEF)
    await tb.wr(qb + R["CQ_BASE_LO"], 0x0000_1000)
    # byte strobes: only byte 1 of CQ_BASE_LO
    await tb.axil.write(qb + R["CQ_BASE_LO"] + 1, b"\x5A")
    assert await tb.q(qb, "CQ_BASE_LO") == 0x0000_5A00
    assert (await tb.q(qb, "DQ_BASE_LO"), await tb.q(qb, "DQ_BASE_HI")) == (0x1234_5670, 0x89AB_CDEF)
    # address bits 1:0 are ignored (AXI-Lite), the strobes select bytes
    assert (await tb.axil.read(qb + R["CQ_BASE_LO"] + 1, 1)).data == b"\x5A"
    # writes to unlisted/read-only addresses change nothing
    await tb.wr(qb + R["DQ_CONS"], 0xFFFF)
    await tb.wr(0x00, 0)
    await tb.wr(0xC0, 0xFFFF_FFFF)
    assert await tb.q(qb, "DQ_PROD") == 0 and await tb.rd(0) == (MAX_FRAME << 16) | 0x0F02
    # DQ_PROD/CQ_CONS ignored while disabled (not counted)
    await tb.wr(qb + R["DQ_PROD"], 3)
    assert (await tb.q(qb, "DQ_PROD"), await tb.q(qb, "ERR_INDEX")) == (0, 0)
    await tb.wr(qb + R["CTRL"], 1)
    assert (await tb.q(qb, "CTRL"), await tb.q(qb, "STATUS")) == (1, 1)
    # base/size ignored while enabled
    await tb.wr(qb + R["DQ_BASE_LO"], 0)
    await tb.wr(qb + R["SIZE_LOG2"], 3)
    assert (await tb.q(qb, "DQ_BASE_LO"), await tb.q(qb, "SIZE_LOG2")) == (0x1234_5670, 5)
    # DQ_PROD: at most 2^5 = 32 ahead of CQ_CONS, no high bits, never backwards
    # (nothing is consumed: the base is not real memory, so keep the TX queue;
    # RX consumes only on frames, none are sent)
    for v, ok in ((33, False), (0x1_0001, False), (32, True), (31, False), (32, True), (0, False)):
        before = await tb.q(qb, "ERR_INDEX")
        await tb.wr(qb + R["DQ_PROD"], v)
        assert await tb.q(qb, "ERR_INDEX") == before + (0 if ok else 1), f"DQ_PROD {v:#x}"
    assert await tb.q(qb, "DQ_PROD") == 32
    # CQ_CONS: may not pass CQ_PROD (0)
    await tb.wr(qb + R["CQ_CONS"], 1)
    assert (await tb.q(qb, "CQ_CONS"), await tb.q(qb, "ERR_INDEX")) == (0, 5)
    await tb.wr(qb + R["CQ_CONS"], 0)
    assert await tb.q(qb, "ERR_INDEX") == 5
    # IRQ arm
    await tb.wr(qb + R["IRQ"], 0xFFFF_FFFF)
    assert await tb.q(qb, "IRQ") == 1
    # disable keeps indices, re-enable zeroes them
    await tb.wr(qb + R["CTRL"], 0)
    assert (await tb.q(qb, "STATUS"), await tb.q(qb, "DQ_PROD")) == (0, 32)
    await tb.wr(qb + R["CTRL"], 1)
    assert (await tb.q(qb, "DQ_PROD"), await tb.q(qb, "ERR_INDEX")) == (0, 5)
    # the other queue is untouched
    for off in range(0, 0x40, 4):
        assert await tb.rd(TXQ + off) == 0


# ----------------------------------------------------------------------- RX
RX_DQ, RX_CQ, RX_BUF = 0x1000, 0x2000, 0x10000


class Rx:
    """An RX ring the test drives: slot i's buffer at a fixed odd address
    (some straddling a 4 KiB boundary), `size` bytes."""

    def __init__(self, tb, log2):
        self.tb, self.log2, self.n = tb, log2, 1 << log2
        self.bufs = [RX_BUF + i * 0x5000 + (0xFC3 if i % 2 else 7 * i + 3) for i in range(self.n)]
        self.sizes = [MAX_FRAME] * self.n

    def post(self, slot, addr=None, size=None, word3=0):
        addr = self.bufs[slot] if addr is None else addr
        size = self.sizes[slot] if size is None else size
        self.tb.ram.write(RX_DQ + 16 * slot, desc(addr, size, word3))

    def fill(self):
        for i in range(self.n):
            self.tb.ram.write(self.bufs[i] - 16, bytes([GUARD]) * (MAX_FRAME + 32))

    def check_frame(self, slot, data):
        b = self.bufs[slot]
        got = self.tb.ram.read(b - 16, len(data) + 32)
        assert got[:16] == bytes([GUARD]) * 16, f"slot {slot}: bytes before the buffer written"
        assert got[16:16 + len(data)] == data, f"slot {slot}: frame bytes differ ({len(data)} bytes)"
        assert got[16 + len(data):] == bytes([GUARD]) * 16, f"slot {slot}: bytes after the frame written"

    def check_cpl(self, pos, length, meta, status):
        exp = cpl(pos & 0xFFFF, length, meta_words(meta) if status == 0 else [0] * 5, status,
                  ((pos >> self.log2) & 1) == 0)
        got = self.tb.ram.read(RX_CQ + 32 * (pos % self.n), 32)
        assert got == exp, f"RX completion {pos}: {got.hex()} expected {exp.hex()}"


async def send(tb, data, meta):
    await tb.src.send(AxiStreamFrame(data, tuser=meta))
    await tb.src.wait()


@cocotb.test()
async def rx_frames(dut):
    """Frames of every interesting length into posted buffers (exact bytes,
    completions with metadata and phase, indices); ring full: frames beyond
    the posted buffers are dropped and counted; second pass after CQ_CONS
    and reposting: phase 0; IRQ.arm raises irq[0] once."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(71))
    W = tb.W
    rx = Rx(tb, 2)
    rx.fill()
    for i in range(4):
        rx.post(i)
    await tb.setup(RXQ, RX_DQ, RX_CQ, 2)
    await tb.wr(RXQ + R["IRQ"], 1)
    await tb.wr(RXQ + R["DQ_PROD"], 4)
    lens = [1, W - 1, W + 1, 1514, 60, 3 * W + 5]
    frames = [(rand_bytes(rng, n), rng.getrandbits(160)) for n in lens]
    for data, meta in frames:
        await send(tb, data, meta)
    await tb.wait_count(RXQ, "DROP", 2)
    c = await tb.counters(RXQ)
    assert c == dict(DQ_PROD=4, DQ_CONS=4, CQ_PROD=4, CQ_CONS=0, ERR_DESC=0, ERR_INDEX=0, ERR_DMA=0,
                     DROP=2, STATUS=1), f"{c}"
    for i in range(4):
        rx.check_frame(i, frames[i][0])
        rx.check_cpl(i, lens[i], frames[i][1], 0)
    assert tb.irqs == [1, 0] and await tb.q(RXQ, "IRQ") == 0
    # a fifth post before CQ_CONS moves is refused (ring of 4)
    await tb.wr(RXQ + R["DQ_PROD"], 5)
    assert await tb.q(RXQ, "ERR_INDEX") == 1
    # second pass: consume, repost, phase 0
    await tb.wr(RXQ + R["CQ_CONS"], 4)
    await tb.wr(RXQ + R["DQ_PROD"], 8)
    rx.fill()
    lens2 = [W, 2 * W, 64, MAX_FRAME]
    frames2 = [(rand_bytes(rng, n), rng.getrandbits(160)) for n in lens2]
    for data, meta in frames2:
        await send(tb, data, meta)
    await tb.wait_count(RXQ, "CQ_PROD", 8)
    for i in range(4):
        rx.check_frame(i, frames2[i][0])
        rx.check_cpl(4 + i, lens2[i], frames2[i][1], 0)
    c = await tb.counters(RXQ)
    assert c["DROP"] == 2 and c["DQ_CONS"] == 8 and tb.irqs == [1, 0], f"{c}"


@cocotb.test()
async def rx_bad(dut):
    """Malformed descriptors (status 1, ERR_DESC, frame into the next
    buffer), a frame longer than the buffer (dropped, buffer stays posted),
    longer than MAX_FRAME (dropped), a buffer in the fault window (status 2,
    ERR_DMA, DROP), a stopped queue (DROP), a completion ring in the fault
    window (STATUS.fault, ERR_DMA; later frames dropped). Random pauses on
    every host-memory channel and on s_axis_host."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(72))
    tb.stall(rng, 0.3)
    rx = Rx(tb, 2)
    rx.fill()
    rx.post(0, size=63)                     # too small: malformed
    rx.post(1, size=100)
    rx.post(2, word3=1)                     # reserved bytes set: malformed
    rx.post(3)
    await tb.setup(RXQ, RX_DQ, RX_CQ, 2)
    await tb.wr(RXQ + R["DQ_PROD"], 4)
    f200, f80, f300 = [(rand_bytes(rng, n), rng.getrandbits(160)) for n in (200, 80, 300)]
    await send(tb, *f200)                   # slot 0 malformed, slot 1 too small: drop
    await tb.wait_count(RXQ, "DROP", 1)
    c = await tb.counters(RXQ)
    assert (c["DQ_CONS"], c["CQ_PROD"], c["ERR_DESC"]) == (1, 1, 1), f"{c}"
    rx.check_cpl(0, 0, 0, 1)
    await send(tb, *f80)                    # slot 1
    await tb.wait_count(RXQ, "CQ_PROD", 2)
    rx.check_frame(1, f80[0])
    rx.check_cpl(1, 80, f80[1], 0)
    await send(tb, *f300)                   # slot 2 malformed, slot 3
    await tb.wait_count(RXQ, "CQ_PROD", 4)
    rx.check_cpl(2, 0, 0, 1)
    rx.check_cpl(3, 300, f300[1], 0)
    rx.check_frame(3, f300[0])
    assert tb.ram.read(rx.bufs[2] - 16, 48) == bytes([GUARD]) * 48, "malformed descriptor's buffer written"
    await tb.wr(RXQ + R["CQ_CONS"], 4)
    rx.post(0)
    rx.post(1, addr=FAULT + 0x40)
    await tb.wr(RXQ + R["DQ_PROD"], 6)
    await send(tb, rand_bytes(rng, MAX_FRAME + 1), 5)      # too long: dropped
    await tb.wait_count(RXQ, "DROP", 2)
    assert await tb.q(RXQ, "DQ_CONS") == 4
    flong = (rand_bytes(rng, MAX_FRAME), rng.getrandbits(160))
    await send(tb, *flong)                                 # the longest frame
    await tb.wait_count(RXQ, "CQ_PROD", 5)
    rx.check_frame(0, flong[0])
    rx.check_cpl(4, MAX_FRAME, flong[1], 0)
    await send(tb, rand_bytes(rng, 99), 9)                 # buffer faults
    await tb.wait_count(RXQ, "DROP", 3)
    c = await tb.counters(RXQ)
    assert c == dict(DQ_PROD=6, DQ_CONS=6, CQ_PROD=6, CQ_CONS=4, ERR_DESC=2, ERR_INDEX=0, ERR_DMA=1,
                     DROP=3, STATUS=1), f"{c}"
    rx.check_cpl(5, 0, 0, 2)
    # stopped queue
    await tb.wr(RXQ + R["CTRL"], 0)
    await send(tb, rand_bytes(rng, 70), 1)
    await tb.wait_count(RXQ, "DROP", 4)
    # completion ring faults: the frame is written, no completion, queue halts
    await tb.wr(RXQ + R["CQ_BASE_HI"], FAULT >> 32)
    await tb.wr(RXQ + R["CTRL"], 1)
    rx.post(0)
    await tb.wr(RXQ + R["DQ_PROD"], 1)
    await send(tb, rand_bytes(rng, 70), 1)
    await tb.wait_count(RXQ, "ERR_DMA", 2)
    c = await tb.counters(RXQ)
    assert c == dict(DQ_PROD=1, DQ_CONS=0, CQ_PROD=0, CQ_CONS=0, ERR_DESC=2, ERR_INDEX=0, ERR_DMA=2,
                     DROP=4, STATUS=2), f"{c}"
    await send(tb, rand_bytes(rng, 70), 1)
    await tb.wait_count(RXQ, "DROP", 5)
    assert await tb.q(RXQ, "ERR_DMA") == 2
    # re-enabling clears the fault
    await tb.wr(RXQ + R["CTRL"], 0)
    await tb.wr(RXQ + R["CTRL"], 1)
    assert await tb.q(RXQ, "STATUS") == 1


# ----------------------------------------------------------------------- TX
TX_DQ, TX_CQ, TX_BUF = 0x3000, 0x4000, 0x80000


async def tx_reap(tb, n_frames):
    out = []
    for _ in range(n_frames):
        f = await cocotb.triggers.with_timeout(tb.sink.recv(), 2, "ms")
        out.append(f)
    return out


@cocotb.test()
async def tx_frames(dut):
    """Posted frames leave m_axis_inject byte-exact, in order, tuser = the
    sequence number on every beat; completions echo length and sequence;
    malformed descriptors (length 13, MAX_FRAME + 1; W + 1 at 64 bits) give status 1 and
    ERR_DESC, a buffer in the fault window status 2 and ERR_DMA, neither a
    frame; second pass phase 0; a descriptor ring in the fault window halts
    the queue. Random backpressure on the stream, random pauses on every
    host-memory channel."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(73))
    tb.stall(rng, 0.4)
    W = tb.W
    tb.sink.set_pause_generator(pauses(rng, 0.3))
    log2, n = 3, 8
    await tb.setup(TXQ, TX_DQ, TX_CQ, log2)
    await tb.wr(TXQ + R["IRQ"], 1)

    def batch(lens, first):
        posts = []
        for i, L in enumerate(lens):
            pos = first + i
            addr = TX_BUF + pos * 0x5000 + (0xFF0 if pos % 3 == 0 else 5 * pos + 1)
            if L == "fault":
                addr, L = FAULT + 0x100, 100
            data = rand_bytes(rng, L)
            if addr < FAULT:
                tb.ram.write(addr, data)
            seq = rng.getrandbits(32)
            tb.ram.write(TX_DQ + 16 * (pos % n), desc(addr, L, seq))
            posts.append((pos, data, seq, addr >= FAULT))
        return posts

    posts = batch([14, 13, W + 1, "fault", 1514, MAX_FRAME + 1, 60, 3 * W - 1], 0)
    await tb.wr(TXQ + R["DQ_PROD"], 8)
    good = [p for p in posts if 14 <= len(p[1]) <= MAX_FRAME and not p[3]]
    got = await tx_reap(tb, len(good))
    for (pos, data, seq, _), f in zip(good, got):
        assert bytes(f.tdata) == data, f"TX {pos}: frame bytes differ ({len(f.tdata)} vs {len(data)})"
        tu = f.tuser if isinstance(f.tuser, list) else [f.tuser]
        assert all(u == seq for u in tu), f"TX {pos}: tuser {tu} seq {seq:#x}"
    await tb.wait_count(TXQ, "CQ_PROD", 8)
    for pos, data, seq, fault in posts:
        L = len(data)
        status = 2 if fault else (0 if 14 <= L <= MAX_FRAME else 1)
        exp = cpl(pos, L if status == 0 else 0, [seq, 0, 0, 0, 0], status, True)
        assert tb.ram.read(TX_CQ + 32 * pos, 32) == exp, f"TX completion {pos}"
    c = await tb.counters(TXQ)
    bad = sum(1 for p in posts if not p[3] and not 14 <= len(p[1]) <= MAX_FRAME)
    assert bad == (3 if W < 14 else 2)
    assert c == dict(DQ_PROD=8, DQ_CONS=8, CQ_PROD=8, CQ_CONS=0, ERR_DESC=bad, ERR_INDEX=0, ERR_DMA=1,
                     DROP=0, STATUS=1), f"{c}"
    assert tb.irqs == [0, 1]
    # second pass (phase 0), only after the host consumed completions
    await tb.wr(TXQ + R["CQ_CONS"], 8)
    posts = batch([W + 14, 2 * W, 15, 64, 100], 8)
    await tb.wr(TXQ + R["DQ_PROD"], 13)
    got = await tx_reap(tb, 5)
    await tb.wait_count(TXQ, "CQ_PROD", 13)
    for (pos, data, seq, _), f in zip(posts, got):
        assert bytes(f.tdata) == data, f"TX {pos}"
        exp = cpl(pos, len(data), [seq, 0, 0, 0, 0], 0, False)
        assert tb.ram.read(TX_CQ + 32 * (pos % n), 32) == exp, f"TX completion {pos}"
    assert tb.sink.empty()
    # descriptor ring fault halts the queue, nothing sent
    await tb.wr(TXQ + R["CTRL"], 0)
    await tb.wr(TXQ + R["DQ_BASE_HI"], FAULT >> 32)
    await tb.wr(TXQ + R["CTRL"], 1)
    await tb.wr(TXQ + R["DQ_PROD"], 1)
    await tb.wait_count(TXQ, "STATUS", 2)
    c = await tb.counters(TXQ)
    assert (c["DQ_CONS"], c["CQ_PROD"], c["ERR_DMA"]) == (0, 0, 2), f"{c}"
    await cycles(dut, 100)
    assert tb.sink.empty()


# ------------------------------------------------------------- RX vs model
class RxModel:
    """The receive queue of host-driver/src/device/dma_model.rs (Queue and
    DmaEngine::rx_frame), transcribed: the expected engine. Memory is a
    bytearray; addresses at or above FAULT fail."""

    def __init__(self, mem, log2):
        self.mem, self.log2, self.size = mem, log2, 1 << log2
        self.dq_prod = self.dq_cons = self.cq_prod = self.cq_cons = 0
        self.err_desc = self.err_dma = self.drop = 0
        self.fault = False

    def _ok(self, a, n):
        return a + n <= FAULT and a + n <= len(self.mem)

    def _complete(self, length, meta, status):
        pos = self.cq_prod
        rec = cpl(self.dq_cons, length, meta, status, ((pos >> self.log2) & 1) == 0)
        a = RX_CQ + 32 * (pos % self.size)
        if not self._ok(a, 32):
            self.err_dma += 1
            self.fault = True
            return
        self.mem[a:a + 32] = rec
        self.dq_cons = (self.dq_cons + 1) & 0xFFFF
        self.cq_prod = (pos + 1) & 0xFFFF

    def rx_frame(self, meta, data):
        if self.fault or len(data) > MAX_FRAME or not data:
            self.drop += 1
            return
        while True:
            if self.dq_cons == self.dq_prod or ((self.cq_prod - self.cq_cons) & 0xFFFF) >= self.size:
                self.drop += 1
                return
            a = RX_DQ + 16 * (self.dq_cons % self.size)
            d = bytes(self.mem[a:a + 16])
            addr, length, w3 = int.from_bytes(d[0:8], "little"), int.from_bytes(d[8:12], "little"), \
                int.from_bytes(d[12:16], "little")
            if not (64 <= length <= 65535 and w3 == 0):
                self.err_desc += 1
                self._complete(0, [0] * 5, 1)
                if self.fault:
                    self.drop += 1
                    return
                continue
            if len(data) > length:
                self.drop += 1
                return
            if not self._ok(addr, len(data)):
                self.err_dma += 1
                self._complete(0, [0] * 5, 2)
                self.drop += 1
                return
            self.mem[addr:addr + len(data)] = data
            self._complete(len(data), meta_words(meta), 0)
            return


async def rx_idle(tb):
    """Until the engine holds no frame and is idle (frames are taken one by one)."""
    for _ in range(100000):
        await RisingEdge(tb.dut.clk)
        if int(tb.dut.rx_full.value) == 0 and int(tb.dut.st.value) == 0 and int(tb.dut.s_axis_host_tready.value):
            return
    raise AssertionError("engine never idle")


@cocotb.test()
async def rx_random(dut):
    """Random posting (valid, too small, malformed, faulting buffers),
    random frame lengths (1..MAX_FRAME + 8) and random consumption against
    RxModel (the Rust model transcribed): after every frame the completion
    ring, every buffer and the counters equal the model's."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(74))
    tb.stall(rng, 0.2)
    log2 = 3
    n = 1 << log2
    mem = bytearray(1 << 22)
    model = RxModel(mem, log2)
    bufs = [RX_BUF + i * 0x5000 + rng.randrange(0, 0x1000) for i in range(n)]
    tb.ram.write(0, bytes(mem))
    await tb.setup(RXQ, RX_DQ, RX_CQ, log2)
    host_cons = 0
    frames = int(os.environ.get("LVSNIC_RANDOM_FRAMES", "150"))
    for _ in range(frames):
        # host: consume some completions, post descriptors up to the ring
        if rng.random() < 0.5:
            host_cons = (host_cons + rng.randrange(0, ((model.cq_prod - host_cons) & 0xFFFF) + 1)) & 0xFFFF
            await tb.wr(RXQ + R["CQ_CONS"], host_cons)
            model.cq_cons = host_cons
        room = (host_cons + n - model.dq_prod) & 0xFFFF
        k = rng.randrange(0, room + 1) if rng.random() < 0.6 else 0
        for j in range(k):
            pos = (model.dq_prod + j) & 0xFFFF
            kind = rng.choices(["ok", "small", "bad", "fault"], [10, 2, 1, 1])[0]
            size = {"ok": MAX_FRAME, "small": rng.randrange(64, 400), "bad": rng.choice([0, 63, 65536]),
                    "fault": 2048}[kind]
            addr = FAULT + 0x1000 if kind == "fault" else bufs[pos % n]
            d = desc(addr, size, 0 if kind != "bad" or rng.random() < 0.5 else 1)
            a = RX_DQ + 16 * (pos % n)
            mem[a:a + 16] = d
            tb.ram.write(a, d)
        if k:
            model.dq_prod = (model.dq_prod + k) & 0xFFFF
            await tb.wr(RXQ + R["DQ_PROD"], model.dq_prod)
        L = rng.choice([1, tb.W, tb.W + 1, 60, 64, 65, 300, 1514, rng.randrange(1, 2000), MAX_FRAME,
                        MAX_FRAME + rng.randrange(1, 8)])
        data, meta = rand_bytes(rng, L), rng.getrandbits(160)
        model.rx_frame(meta, data)
        await send(tb, data, meta)
        await rx_idle(tb)
        c = await tb.counters(RXQ)
        exp = dict(DQ_PROD=model.dq_prod, DQ_CONS=model.dq_cons, CQ_PROD=model.cq_prod, CQ_CONS=model.cq_cons,
                   ERR_DESC=model.err_desc, ERR_INDEX=0, ERR_DMA=model.err_dma, DROP=model.drop,
                   STATUS=2 if model.fault else 1)
        assert c == exp, f"{c} != {exp}"
        assert tb.ram.read(RX_CQ, 32 * n) == bytes(mem[RX_CQ:RX_CQ + 32 * n]), "completion ring differs"
        for b in bufs:
            assert tb.ram.read(b, MAX_FRAME) == bytes(mem[b:b + MAX_FRAME]), f"buffer {b:#x} differs"
    assert model.drop > 5 and model.err_desc > 0 and model.cq_prod > frames // 3, vars(model)


@pytest.mark.parametrize("dw", [64, 512])
def test_dma(dw):
    from lvsnic_tb import RTL, run
    here = Path(__file__).resolve().parent
    run(f"dma{dw}", "lvsnic_dma", "test_dma", here, parameters={"DATA_WIDTH": dw},
        extra_sources=[RTL / "lvsnic_dma.sv"])
