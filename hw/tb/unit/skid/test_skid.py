"""lvsnic_axis_skid (valid/ready register slice with a registered s_ready),
WIDTH 32, in tb_prims.sv.

Contract (hw/rtl/README.md, the module header): every beat accepted on s
leaves on m once, in order (no loss, no duplication); m holds valid and data
while m_ready is low (AXI-Stream); at most two beats are inside (output and
skid register); with m_ready held high it passes one beat per cycle.
Random s_valid gaps and m_ready backpressure, checked cycle by cycle against
a queue of the beats accepted.
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import Ports, seed, start

MASK = (1 << 32) - 1


class TB:
    def __init__(self, dut):
        self.p = Ports(dut, "skid_")
        self.clk = dut.clk
        self.p.s_valid.value = 0
        self.p.m_ready.value = 0
        self.sent, self.got = [], []
        self.nxt = 0x100
        self.holding = None       # beat presented on s, not yet accepted
        self.stuck = None         # beat shown on m last cycle and not taken

    async def cycle(self, offer, ready):
        """One clock: offer a new beat (when none is pending) if `offer`,
        m_ready = ready; checks the cycle's outputs."""
        p = self.p
        await FallingEdge(self.clk)
        if self.holding is None and offer:
            self.holding = self.nxt
            self.nxt = (self.nxt + 0x9E3779B1) & MASK
        p.s_valid.value = int(self.holding is not None)
        if self.holding is not None:
            p.s_data.value = self.holding
        p.m_ready.value = int(ready)
        await ReadOnly()
        mv = int(p.m_valid.value)
        if self.stuck is not None:
            assert mv and int(p.m_data.value) == self.stuck, "m changed while m_ready was low"
        self.stuck = None
        if mv:
            d = int(p.m_data.value)
            if ready:
                self.got.append(d)
                k = len(self.got) - 1
                assert k < len(self.sent) and d == self.sent[k], \
                    f"beat {k}: {d:#x}, expected {self.sent[k] if k < len(self.sent) else None}"
            else:
                self.stuck = d
        if self.holding is not None and int(p.s_ready.value):
            self.sent.append(self.holding)
            self.holding = None
        assert len(self.sent) - len(self.got) <= 2, f"{len(self.sent) - len(self.got)} beats inside"
        return mv and ready

    async def drain(self):
        for _ in range(8):
            await self.cycle(False, True)
        assert self.holding is None
        assert self.got == self.sent, f"{len(self.sent)} accepted, {len(self.got)} out"


@cocotb.test()
async def random_valid_ready(dut):
    """Ordering, no loss/duplication, AXI-Stream hold, occupancy <= 2 under
    random idle/backpressure patterns."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(5))
    for p_idle, p_stall in [(0.3, 0.3), (0.0, 0.7), (0.7, 0.0), (0.5, 0.5), (0.1, 0.9), (0.9, 0.1)]:
        for _ in range(500):
            await tb.cycle(rng.random() >= p_idle, rng.random() >= p_stall)
        await tb.drain()
    assert len(tb.got) > 800


@cocotb.test()
async def full_rate(dut):
    """s_valid and m_ready held high: one beat per cycle; a stall of k
    cycles costs k cycles."""
    tb = TB(dut)
    await start(dut)
    n = [await tb.cycle(True, True) for _ in range(100)]
    assert sum(n) >= 98, f"{sum(n)} beats in 100 cycles"
    rng = random.Random(2)
    pat = [rng.random() < 0.5 for _ in range(200)]
    n = [await tb.cycle(True, r) for r in pat]
    assert sum(n) >= sum(pat) - 2, f"{sum(n)} beats in {sum(pat)} ready cycles"
    await tb.drain()


def test_skid():
    from lvsnic_tb import run_prims
    run_prims("test_skid", Path(__file__).resolve().parent)
