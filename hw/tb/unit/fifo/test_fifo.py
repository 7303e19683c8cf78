"""lvsnic_fifo (first-word-fall-through FIFO, optional output register),
WIDTH 16, DEPTH_LOG2 2, OREG 0 and 1, in tb_prims.sv.

Contract (the module header): one push and one pop per cycle; out_valid /
out_data show the oldest entry (an entry pushed at a clock edge is visible
after that edge, both with and without the output register); `count` is the
number of stored entries, at most 2^DEPTH_LOG2 + OREG; a push when full and
a pop when empty are ignored; `flush` empties the FIFO and loses a push of
the same cycle. Checked every cycle against a Python queue under random
push/pop/flush patterns (from near-empty to overflowing).
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import Ports, seed, start

DEPTH = 4


async def random_run(dut, inst, oreg):
    p = Ports(dut, inst + "_")
    for s in ("flush", "in_valid", "out_pop"):
        getattr(p, s).value = 0
    await start(dut)
    rng = random.Random(seed(9) + oreg)
    cap = DEPTH + oreg
    q = []
    pushed = popped = overflow = 0
    for p_push, p_pop, p_flush in [(0.5, 0.5, 0.0), (0.9, 0.2, 0.0), (0.2, 0.9, 0.0),
                                   (1.0, 1.0, 0.0), (0.6, 0.4, 0.03), (1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]:
        for _ in range(400):
            await FallingEdge(dut.clk)
            push = rng.random() < p_push
            pop = rng.random() < p_pop
            flush = rng.random() < p_flush
            d = rng.getrandbits(16)
            p.in_valid.value = int(push)
            p.in_data.value = d
            p.out_pop.value = int(pop)
            p.flush.value = int(flush)
            await ReadOnly()
            assert int(p.count.value) == len(q), f"count {int(p.count.value)}, expected {len(q)}"
            assert int(p.out_valid.value) == int(bool(q)), "out_valid"
            if q:
                assert int(p.out_data.value) == q[0], f"head {int(p.out_data.value):#x}, expected {q[0]:#x}"
            if flush:
                q = []
                continue
            full = len(q) >= cap
            if pop and q:
                q.pop(0)
                popped += 1
            if push:
                if full:
                    overflow += 1
                else:
                    q.append(d)
                    pushed += 1
    assert pushed > 700 and popped > 700 and overflow > 50, (pushed, popped, overflow)


@cocotb.test()
async def fifo_no_oreg(dut):
    await random_run(dut, "f0", 0)


@cocotb.test()
async def fifo_oreg(dut):
    await random_run(dut, "f1", 1)


def test_fifo():
    from lvsnic_tb import run_prims
    run_prims("test_fifo", Path(__file__).resolve().parent)
