"""The Alveo board glue in simulation (cocotb, Verilator):

* lvsnic_alveo_frame_fifo at DATA_WIDTH 64, 32 beats: good frames come out
  unchanged (data, keep, the first beat's tuser) and in order, each as one
  unbroken burst while the consumer is ready; a frame flagged bad on its
  last beat never comes out; a frame that meets a full FIFO is discarded
  whole; frames + bad + overflow counts every input frame.
* lvsnic_alveo_bar0: BAR0 byte addresses 0x800..0x8FF reach the DMA port,
  all others the core port, with the selected port's data and response.
"""
import random
import sys
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "hw/tb/unit"))
from lvsnic_tb import Ports, run  # noqa: E402
DW = 64
KW = DW // 8
DEPTH = 32


async def reset(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    for _ in range(3):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


def frame_beats(data):
    beats = []
    for i in range(0, len(data), KW):
        chunk = data[i:i + KW]
        beats.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1))
    return beats


class FrameSink:
    """Collects output frames; checks that a frame is one burst while
    m_tready is held high."""

    def __init__(self, dut, rng, p_ready):
        self.clk = dut.clk
        self.dut, self.rng, self.p_ready = Ports(dut, "ff_"), rng, p_ready
        self.frames = []
        self.gaps = 0

    async def run(self):
        dut = self.dut
        cur, user, in_frame = bytearray(), None, False
        while True:
            await FallingEdge(self.clk)
            ready = self.rng.random() < self.p_ready
            dut.m_tready.value = int(ready)
            await ReadOnly()
            valid = int(dut.m_tvalid.value)
            if in_frame and ready and not valid:
                self.gaps += 1
            if valid and ready:
                keep = int(dut.m_tkeep.value)
                n = bin(keep).count("1")
                assert keep == (1 << n) - 1, f"tkeep {keep:#x} not contiguous"
                data = int(dut.m_tdata.value).to_bytes(KW, "little")
                if not in_frame:
                    user = int(dut.m_tuser.value)
                else:
                    assert int(dut.m_tuser.value) == user, "tuser changed inside a frame"
                cur += data[:n]
                in_frame = True
                if int(dut.m_tlast.value):
                    self.frames.append((bytes(cur), user))
                    cur, in_frame = bytearray(), False


async def send(tb, rng, data, user, bad, p_gap):
    dut = Ports(tb, "ff_")
    clk = tb.clk
    beats = frame_beats(data)
    for i, (word, keep) in enumerate(beats):
        while rng.random() < p_gap:
            await FallingEdge(clk)
            dut.s_tvalid.value = 0
        await FallingEdge(clk)
        last = i == len(beats) - 1
        dut.s_tdata.value = word
        dut.s_tkeep.value = keep
        dut.s_tvalid.value = 1
        dut.s_tlast.value = int(last)
        dut.s_tuser.value = user if i == 0 else rng.getrandbits(16)
        dut.s_bad.value = int(bad and last)
    await FallingEdge(clk)
    dut.s_tvalid.value = 0


def idle_inputs(tb):
    for s in ("s_tvalid", "s_tlast", "s_bad", "s_tdata", "s_tkeep", "s_tuser", "m_tready"):
        getattr(tb, "ff_" + s).value = 0
    for s in ("s_awvalid", "s_wvalid", "s_bready", "s_arvalid", "s_rready", "m_awready", "m_wready",
              "m_bvalid", "m_arready", "m_rvalid", "s_awaddr", "s_araddr", "s_wdata", "s_wstrb",
              "m_bresp", "m_rdata", "m_rresp"):
        getattr(tb, "bar_" + s).value = 0


@cocotb.test()
async def frame_fifo_passes_good_drops_bad(dut):
    """Consumer mostly ready: every good frame arrives, no bad one does."""
    idle_inputs(dut)
    await reset(dut)
    ff = Ports(dut, "ff_")
    rng = random.Random(5)
    sink = FrameSink(dut, rng, 1.0)
    cocotb.start_soon(sink.run())
    sent = []
    nbad = 0
    for n in range(120):
        length = rng.choice([14, 60, 64, 65, 71, 128, 129, 200])
        data = bytes(rng.getrandbits(8) for _ in range(length))
        user = rng.getrandbits(16)
        bad = rng.random() < 0.25
        await send(dut, rng, data, user, bad, p_gap=0.3)
        if bad:
            nbad += 1
        else:
            sent.append((data, user))
    for _ in range(100):
        await RisingEdge(dut.clk)
    assert sink.frames == sent
    assert sink.gaps == 0, "a frame left in more than one burst"
    assert int(ff.frames.value) == len(sent) and int(ff.bad.value) == nbad
    assert int(ff.overflow.value) == 0


@cocotb.test()
async def frame_fifo_discards_whole_frames_when_full(dut):
    """Consumer stalled: frames that fit in 32 beats are kept, a frame that
    meets the full FIFO is dropped whole (its beats that did fit included),
    and after draining new frames pass again."""
    idle_inputs(dut)
    await reset(dut)
    ff = Ports(dut, "ff_")
    rng = random.Random(6)
    # 3 frames of 10 beats (80 bytes) fit in 32 beats; the 4th does not
    frames = [(bytes(rng.getrandbits(8) for _ in range(80)), i) for i in range(4)]
    for data, user in frames:
        await send(dut, rng, data, user, False, p_gap=0.0)
    assert int(ff.frames.value) == 3 and int(ff.overflow.value) == 1
    sink = FrameSink(dut, rng, 0.7)
    cocotb.start_soon(sink.run())
    for _ in range(80):
        await RisingEdge(dut.clk)
    assert sink.frames == frames[:3]
    after = (bytes(rng.getrandbits(8) for _ in range(100)), 77)
    await send(dut, rng, after[0], after[1], False, p_gap=0.0)
    for _ in range(60):
        await RisingEdge(dut.clk)
    assert sink.frames == frames[:3] + [after]
    # random traffic against a slow consumer: everything is accounted for
    # and what comes out is an in-order subsequence of the good frames
    good = []
    for n in range(150):
        data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(14, 160)))
        bad = rng.random() < 0.1
        await send(dut, rng, data, n, bad, p_gap=0.05)
        if not bad:
            good.append((data, n))
    sink.p_ready = 1.0
    for _ in range(200):
        await RisingEdge(dut.clk)
    out = sink.frames[4:]
    it = iter(good)
    assert all(any(f == g for g in it) for f in out), "output is not an in-order subsequence"
    total = int(ff.frames.value) + int(ff.bad.value) + int(ff.overflow.value)
    assert total == 4 + 1 + 150
    assert int(ff.frames.value) == 4 + len(out)
    assert int(ff.overflow.value) > 1, "the slow consumer never filled the FIFO"


class BarTarget:
    """One side of the BAR0 decoder's master ports (0 core, 1 DMA): random
    ready/response delays; records the writes it receives and answers a read
    of `a` with data (port << 28) | a and response `port` (so a response
    from the wrong port is visible in both)."""

    def __init__(self, tb, rng):
        self.tb, self.rng = tb, rng
        self.writes = [[], []]
        self.reads = [[], []]

    def _bit(self, sig, i):
        return (int(getattr(self.tb, "bar_" + sig).value) >> i) & 1

    async def run(self):
        tb, rng = self.tb, self.rng
        aw = [None, None]
        w = [None, None]
        ar = [None, None]
        bval = [0, 0]
        rval = [0, 0]
        while True:
            await FallingEdge(tb.clk)
            awr = [int(rng.random() < 0.6) for _ in range(2)]
            wr = [int(rng.random() < 0.6) for _ in range(2)]
            arr = [int(rng.random() < 0.6) for _ in range(2)]
            for i in range(2):
                if not bval[i] and aw[i] is not None and w[i] is not None and rng.random() < 0.5:
                    self.writes[i].append((aw[i], *w[i]))
                    aw[i] = w[i] = None
                    bval[i] = 1
                if not rval[i] and ar[i] is not None and rng.random() < 0.5:
                    self.reads[i].append(ar[i])
                    rval[i] = ar[i]
                    ar[i] = None
                if aw[i] is not None:
                    awr[i] = 0
                if w[i] is not None:
                    wr[i] = 0
                if ar[i] is not None or rval[i]:
                    arr[i] = 0
            tb.bar_m_awready.value = awr[0] | (awr[1] << 1)
            tb.bar_m_wready.value = wr[0] | (wr[1] << 1)
            tb.bar_m_arready.value = arr[0] | (arr[1] << 1)
            tb.bar_m_bvalid.value = bval[0] | (bval[1] << 1)
            tb.bar_m_bresp.value = 0 | (1 << 2)
            tb.bar_m_rvalid.value = int(bool(rval[0])) | (int(bool(rval[1])) << 1)
            tb.bar_m_rresp.value = 0 | (1 << 2)
            rdata = 0
            for i in range(2):
                if rval[i]:
                    rdata |= ((i << 28) | (rval[i] & 0xFFFF)) << (32 * i)
            tb.bar_m_rdata.value = rdata
            await ReadOnly()
            for i in range(2):
                if self._bit("m_awvalid", i) and awr[i]:
                    aw[i] = int(tb.bar_m_awaddr.value)
                if self._bit("m_wvalid", i) and wr[i]:
                    w[i] = (int(tb.bar_m_wdata.value), int(tb.bar_m_wstrb.value))
                if self._bit("m_arvalid", i) and arr[i]:
                    ar[i] = int(tb.bar_m_araddr.value) | 0x10000   # never 0
                if bval[i] and self._bit("m_bready", i):
                    bval[i] = 0
                if rval[i] and self._bit("m_rready", i):
                    rval[i] = 0


async def bar_handshake(tb, valid, ready, **values):
    await FallingEdge(tb.clk)
    for k, v in values.items():
        getattr(tb, "bar_" + k).value = v
    getattr(tb, "bar_" + valid).value = 1
    while True:
        await ReadOnly()
        if int(getattr(tb, "bar_" + ready).value):
            break
        await FallingEdge(tb.clk)
    await FallingEdge(tb.clk)
    getattr(tb, "bar_" + valid).value = 0


async def bar_response(tb, valid, ready, *fields):
    await FallingEdge(tb.clk)
    getattr(tb, "bar_" + ready).value = 1
    while True:
        await ReadOnly()
        if int(getattr(tb, "bar_" + valid).value):
            got = tuple(int(getattr(tb, "bar_" + f).value) for f in fields)
            break
        await FallingEdge(tb.clk)
    await FallingEdge(tb.clk)
    getattr(tb, "bar_" + ready).value = 0
    return got


@cocotb.test()
async def bar0_routes_by_address(dut):
    idle_inputs(dut)
    await reset(dut)
    rng = random.Random(8)
    target = BarTarget(dut, rng)
    cocotb.start_soon(target.run())
    addrs = [0x000, 0x004, 0x5FC, 0x7FC, 0x800, 0x804, 0x840, 0x8FC, 0x900, 0xFFC, 0x1800, 0xFFFC]
    addrs += [rng.randrange(0, 1 << 14) * 4 for _ in range(40)]
    expect_w = [[], []]
    expect_r = [[], []]
    for n, a in enumerate(addrs):
        port = int(0x800 <= a < 0x900)
        if rng.random() < 0.5:
            data, strb = rng.getrandbits(32), rng.getrandbits(4)
            await bar_handshake(dut, "s_awvalid", "s_awready", s_awaddr=a)
            await bar_handshake(dut, "s_wvalid", "s_wready", s_wdata=data, s_wstrb=strb)
            (resp,) = await bar_response(dut, "s_bvalid", "s_bready", "s_bresp")
            assert resp == port, f"write {a:#x}: response of port {resp}, expected {port}"
            expect_w[port].append((a, data, strb))
        else:
            await bar_handshake(dut, "s_arvalid", "s_arready", s_araddr=a)
            data, resp = await bar_response(dut, "s_rvalid", "s_rready", "s_rdata", "s_rresp")
            assert (data, resp) == ((port << 28) | a, port), f"read {a:#x}: {data:#x} resp {resp}"
            expect_r[port].append(a | 0x10000)
    assert target.writes == expect_w
    assert target.reads == expect_r
    assert all(expect_w) and all(expect_r), "both ports must see reads and writes"


def test_glue():
    run("alveo_glue", "tb_alveo_glue", "test_glue", HERE,
        extra_sources=[HERE / "rtl/lvsnic_alveo_frame_fifo.sv", HERE / "rtl/lvsnic_alveo_bar0.sv",
                       HERE / "tb/tb_alveo_glue.sv"])
