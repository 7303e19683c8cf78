"""lvsnic_fifo (first-word-fall-through FIFO, optional output register),
WIDTH 16, DEPTH_LOG2 2, OREG 0 and 1 (both in tb_prims.sv, same stimulus).

Contract (the module header): one push and one pop per cycle; out_valid /
out_data show the oldest entry (an entry pushed at a clock edge is visible
after that edge, both with and without the output register); `count` is the
number of stored entries, at most 2^DEPTH_LOG2 + OREG; a push when full and
a pop when empty are ignored; `flush` empties the FIFO and loses a push of
the same cycle. Checked every cycle against a Python queue per variant
under random push/pop/flush patterns (from near-empty to overflowing).
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import Ports, seed, start

DEPTH = 4


class Model:
    def __init__(self, oreg):
        self.oreg = oreg
        self.cap = DEPTH + oreg
        self.q = []
        self.pushed = self.popped = self.dropped = 0

    def check(self, valid, data, count):
        q = self.q
        assert count == len(q), f"OREG {self.oreg}: count {count}, expected {len(q)}"
        assert valid == int(bool(q)), f"OREG {self.oreg}: out_valid"
        if q:
            assert data == q[0], f"OREG {self.oreg}: head {data:#x}, expected {q[0]:#x}"

    def clock(self, push, d, pop, flush):
        if flush:
            self.q = []
            return
        full = len(self.q) >= self.cap
        if pop and self.q:
            self.q.pop(0)
            self.popped += 1
        if push and full:
            self.dropped += 1
        elif push:
            self.q.append(d)
            self.pushed += 1


@cocotb.test()
async def random_push_pop(dut):
    p = Ports(dut, "fifo_")
    for s in ("flush", "in_valid", "out_pop"):
        getattr(p, s).value = 0
    await start(dut)
    rng = random.Random(seed(9))
    models = [Model(0), Model(1)]
    for p_push, p_pop, p_flush in [(0.5, 0.5, 0.0), (0.9, 0.2, 0.0), (0.2, 0.9, 0.0),
                                   (1.0, 1.0, 0.0), (0.6, 0.4, 0.03), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]:
        for _ in range(400):
            await FallingEdge(dut.clk)
            stim = (rng.random() < p_push, rng.getrandbits(16), rng.random() < p_pop, rng.random() < p_flush)
            p.in_valid.value, p.in_data.value, p.out_pop.value, p.flush.value = (int(x) for x in stim)
            await ReadOnly()
            for n, m in enumerate(models):
                m.check((int(p.out_valid.value) >> n) & 1, (int(p.out_data.value) >> (16 * n)) & 0xFFFF,
                        (int(p.count.value) >> (3 * n)) & 7)
                m.clock(*stim)
    for m in models:
        assert m.pushed > 700 and m.popped > 700 and m.dropped > 50, (m.pushed, m.popped, m.dropped)


def test_fifo():
    from lvsnic_tb import run_prims
    run_prims("test_fifo", Path(__file__).resolve().parent)
