"""lvsnic_sdp_ram (simple dual-port RAM, registered read, optional output
register), WIDTH 16, ADDR_WIDTH 4, OUT_REG 0 and 1, in tb_prims.sv.

Contract (the module header): a write (we) at a clock edge is seen by a read
issued (re) at any later edge; rdata is the read register (OUT_REG 0: one
cycle after re) or its copy taken when oce is high (OUT_REG 1: two cycles);
the read register and the output register hold while re / oce are low; a
read of the address being written in the same cycle is unspecified (not
checked), as are never-written addresses (contents are not reset).
Checked every cycle against a Python model under random we/re/oce.
"""

import random
from pathlib import Path

import cocotb
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import Ports, seed, start

N = 16
UNKNOWN = None


async def random_run(dut, inst, out_reg):
    p = Ports(dut, inst + "_")
    for s in ("we", "re", "oce"):
        getattr(p, s).value = 0
    await start(dut)
    rng = random.Random(seed(21) + out_reg)
    mem = [UNKNOWN] * N
    rd_q = UNKNOWN       # the read register
    out_q = UNKNOWN      # the output register (OUT_REG 1)
    checked = 0
    for p_we, p_re, p_oce in [(0.5, 0.5, 1.0), (0.9, 0.9, 1.0), (0.3, 0.7, 0.5), (0.7, 0.3, 0.3)]:
        for _ in range(500):
            await FallingEdge(dut.clk)
            we, re, oce = rng.random() < p_we, rng.random() < p_re, rng.random() < p_oce
            wa, ra, wd = rng.randrange(N), rng.randrange(N), rng.getrandbits(16)
            if rng.random() < 0.3:
                ra = wa ^ 1          # neighbours: reads right after writes
            p.we.value, p.waddr.value, p.wdata.value = int(we), wa, wd
            p.re.value, p.raddr.value, p.oce.value = int(re), ra, int(oce)
            await ReadOnly()
            exp = out_q if out_reg else rd_q
            if exp is not UNKNOWN:
                assert int(p.rdata.value) == exp, f"rdata {int(p.rdata.value):#x}, expected {exp:#x}"
                checked += 1
            # the clock edge
            if out_reg and oce:
                out_q = rd_q
            if re:
                rd_q = UNKNOWN if (we and wa == ra) else mem[ra]
            if we:
                mem[wa] = wd
    assert checked > 800, checked


@cocotb.test()
async def ram_no_oreg(dut):
    await random_run(dut, "r0", 0)


@cocotb.test()
async def ram_oreg(dut):
    await random_run(dut, "r1", 1)


@cocotb.test()
async def read_after_write_latency(dut):
    """Write at edge t, read issued at edge t+1: data at edge t+2 (OUT_REG 0)
    or t+3 (OUT_REG 1, oce high)."""
    r0, r1 = Ports(dut, "r0_"), Ports(dut, "r1_")
    for p in (r0, r1):
        p.we.value = p.re.value = 0
        p.oce.value = 1
    await start(dut)
    prev = None
    for val in (0x1234, 0xBEEF, 0x0F0F):
        await FallingEdge(dut.clk)
        for p in (r0, r1):
            p.we.value, p.waddr.value, p.wdata.value, p.re.value = 1, 5, val, 0
        await FallingEdge(dut.clk)
        for p in (r0, r1):
            p.we.value, p.re.value, p.raddr.value = 0, 1, 5
        await FallingEdge(dut.clk)
        for p in (r0, r1):
            p.re.value = 0
        await ReadOnly()
        assert int(r0.rdata.value) == val, "OUT_REG 0: data one cycle after re"
        if prev is not None:
            assert int(r1.rdata.value) == prev, "OUT_REG 1: still the previous read one cycle after re"
        await FallingEdge(dut.clk)
        await ReadOnly()
        assert int(r1.rdata.value) == val, "OUT_REG 1: data two cycles after re"
        assert int(r0.rdata.value) == val, "OUT_REG 0: holds while re is low"
        prev = val


def test_sdp_ram():
    from lvsnic_tb import run_prims
    run_prims("test_sdp_ram", Path(__file__).resolve().parent)
