"""lvsnic_tx_arb: m_axis_tx arbitration between forwarded and injected
frames (docs/hardware.md §2), DATA_WIDTH 64 and 512.

Contract: both streams' frames leave whole (never interleaved), unchanged
and in order per source; the output switches only at frame boundaries and
takes a waiting forwarded frame first; a forwarded frame's 33-bit tuser
passes unchanged, an injected frame's 32-bit tuser becomes tuser[31:0] with
the abort bit clear; inj_frame pulses once per injected frame (when its last
beat is taken). Checked with cocotbext-axi sources/sink under random gaps
and backpressure, plus a per-cycle monitor of the grant rules.
"""

import random
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamFrame, AxiStreamSink, AxiStreamSource

from lvsnic_tb import pauses, rand_bytes, seed, start, stream_bus, unpause

FWD_TAG, INJ_TAG = 0x1000_0000, 0x2000_0000


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.W = len(dut.m_keep)
        self.fwd = AxiStreamSource(stream_bus(dut, "fwd"), dut.clk, dut.rst)
        self.inj = AxiStreamSource(stream_bus(dut, "inj"), dut.clk, dut.rst)
        self.out = AxiStreamSink(stream_bus(dut, "m"), dut.clk, dut.rst)
        for o in (self.fwd, self.inj, self.out):
            o.log.setLevel("WARNING")
        self.inj_frames = 0
        self.grants = {"fwd_first": 0, "inj_when_fwd_idle": 0}
        cocotb.start_soon(self.monitor())

    async def monitor(self):
        """The grant rules, every cycle (values as the next edge sees them)."""
        d = self.dut
        cur = None                      # source of the frame in progress on m
        while True:
            await FallingEdge(d.clk)
            await ReadOnly()
            fv, iv = int(d.fwd_valid.value), int(d.inj_valid.value)
            fr, ir, mr = int(d.fwd_ready.value), int(d.inj_ready.value), int(d.m_ready.value)
            mv = int(d.m_valid.value)
            if int(d.inj_frame.value):
                self.inj_frames += 1
            assert not (fr and ir), "both sources granted"
            if cur == "fwd":
                assert not ir, "injected beat taken inside a forwarded frame"
            elif cur == "inj":
                assert not fr, "forwarded beat taken inside an injected frame"
            else:
                if fv:
                    assert not ir, "injected frame started while a forwarded frame waited"
                    assert mv and fr == mr, "waiting forwarded frame not offered"
                elif iv:
                    assert mv and ir == mr, "waiting injected frame not offered"
            if fv and fr:
                if cur is None and iv:
                    self.grants["fwd_first"] += 1
                cur = None if int(d.fwd_last.value) else "fwd"
            elif iv and ir:
                if cur is None:
                    self.grants["inj_when_fwd_idle"] += 1
                cur = None if int(d.inj_last.value) else "inj"


def frames(rng, W, n, tag, user_bits):
    out = []
    for i in range(n):
        L = rng.choice([1, W - 1, W, W + 1, rng.randrange(1, 4 * W), rng.randrange(60, 300)])
        u = tag + i
        if user_bits == 33:
            u |= rng.getrandbits(1) << 32       # the abort bit passes through
        out.append(AxiStreamFrame(rand_bytes(rng, L), tuser=u))
    return out


async def run_mix(tb, rng, n_fwd, n_inj):
    fw = frames(rng, tb.W, n_fwd, FWD_TAG, 33)
    ij = frames(rng, tb.W, n_inj, INJ_TAG, 32)
    inj0 = tb.inj_frames
    for f in fw:
        await tb.fwd.send(AxiStreamFrame(f.tdata, tuser=f.tuser))
    for f in ij:
        await tb.inj.send(AxiStreamFrame(f.tdata, tuser=f.tuser))
    got = []
    for _ in range(n_fwd + n_inj):
        got.append(await cocotb.triggers.with_timeout(tb.out.recv(), 200, "us"))
    gf = [g for g in got if (_u(g)[0] & 0xF000_0000) == FWD_TAG]
    gi = [g for g in got if (_u(g)[0] & 0xF000_0000) == INJ_TAG]
    assert len(gf) == n_fwd and len(gi) == n_inj, (len(gf), len(gi))
    for exp, g, kind in [(e, g, "fwd") for e, g in zip(fw, gf)] + [(e, g, "inj") for e, g in zip(ij, gi)]:
        u = _u(g)
        assert bytes(g.tdata) == bytes(exp.tdata), f"{kind} frame {exp.tuser:#x}: bytes differ"
        assert all(x == exp.tuser for x in u), f"{kind} frame {exp.tuser:#x}: tuser {[hex(x) for x in u]}"
    for _ in range(5):
        await RisingEdge(tb.dut.clk)
    assert tb.inj_frames - inj0 == n_inj, f"inj_frame pulses {tb.inj_frames - inj0}, frames {n_inj}"
    assert tb.out.empty()


def _u(g):
    return g.tuser if isinstance(g.tuser, list) else [g.tuser]


@cocotb.test()
async def random_mix(dut):
    """Both sources busy with random gaps, random backpressure."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(41))
    for p_f, p_i, p_o in [(0.0, 0.0, 0.0), (0.3, 0.3, 0.3), (0.0, 0.5, 0.7), (0.6, 0.0, 0.0), (0.5, 0.5, 0.9)]:
        for o, p in ((tb.fwd, p_f), (tb.inj, p_i), (tb.out, p_o)):
            if p:
                o.set_pause_generator(pauses(rng, p))
            else:
                unpause(o)
        await run_mix(tb, rng, 40, 30)
    assert tb.grants["fwd_first"] > 5 and tb.grants["inj_when_fwd_idle"] > 20, tb.grants


@cocotb.test()
async def forwarded_first(dut):
    """Both queues full, output stalled then released: the forwarded frames
    all leave before any injected one; with forwarded gaps the injected
    frames get through (no starvation)."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(42))
    tb.out.pause = True
    fw = frames(rng, tb.W, 10, FWD_TAG, 33)
    ij = frames(rng, tb.W, 10, INJ_TAG, 32)
    for f in fw:
        await tb.fwd.send(f)
    for f in ij:
        await tb.inj.send(f)
    for _ in range(20):
        await RisingEdge(dut.clk)
    tb.out.pause = False
    got = [await cocotb.triggers.with_timeout(tb.out.recv(), 100, "us") for _ in range(20)]
    tags = [_u(g)[0] & 0xF000_0000 for g in got]
    assert tags == [FWD_TAG] * 10 + [INJ_TAG] * 10, [hex(t) for t in tags]


@pytest.mark.parametrize("dw", [64, 512])
def test_tx_arb(dw):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run(f"tx_arb{dw}", "lvsnic_tx_arb", "test_tx_arb", here, parameters={"DATA_WIDTH": dw})
