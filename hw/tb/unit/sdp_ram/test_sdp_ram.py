"""lvsnic_sdp_ram (simple dual-port RAM, registered read, optional output
register), WIDTH 16, ADDR_WIDTH 4, OUT_REG 0 and 1 (both in tb_prims.sv,
same stimulus).

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


class Model:
    def __init__(self, out_reg):
        self.out_reg = out_reg
        self.mem = [UNKNOWN] * N
        self.rd_q = UNKNOWN       # the read register
        self.out_q = UNKNOWN      # the output register (OUT_REG 1)
        self.checked = 0

    def check(self, rdata):
        exp = self.out_q if self.out_reg else self.rd_q
        if exp is not UNKNOWN:
            assert rdata == exp, f"OUT_REG {self.out_reg}: rdata {rdata:#x}, expected {exp:#x}"
            self.checked += 1

    def clock(self, we, wa, wd, re, ra, oce):
        if self.out_reg and oce:
            self.out_q = self.rd_q
        if re:
            self.rd_q = UNKNOWN if (we and wa == ra) else self.mem[ra]
        if we:
            self.mem[wa] = wd


async def setup(dut):
    p = Ports(dut, "ram_")
    for s in ("we", "re", "oce"):
        getattr(p, s).value = 0
    await start(dut)
    return p


def rdata(p, n):
    return (int(p.rdata.value) >> (16 * n)) & 0xFFFF


@cocotb.test()
async def random_access(dut):
    p = await setup(dut)
    rng = random.Random(seed(21))
    models = [Model(0), Model(1)]
    for p_we, p_re, p_oce in [(0.5, 0.5, 1.0), (0.9, 0.9, 1.0), (0.3, 0.7, 0.5), (0.7, 0.3, 0.3)]:
        for _ in range(500):
            await FallingEdge(dut.clk)
            wa = rng.randrange(N)
            ra = wa ^ 1 if rng.random() < 0.3 else rng.randrange(N)     # neighbours: reads right after writes
            stim = (rng.random() < p_we, wa, rng.getrandbits(16), rng.random() < p_re, ra, rng.random() < p_oce)
            p.we.value, p.waddr.value, p.wdata.value, p.re.value, p.raddr.value, p.oce.value = (int(x) for x in stim)
            await ReadOnly()
            for n, m in enumerate(models):
                m.check(rdata(p, n))
                m.clock(*stim)
    assert all(m.checked > 800 for m in models), [m.checked for m in models]


@cocotb.test()
async def read_after_write_latency(dut):
    """Write at edge t, read issued at edge t+1: data after edge t+1
    (OUT_REG 0) or t+2 (OUT_REG 1, oce high); both hold afterwards."""
    p = await setup(dut)
    p.oce.value = 1
    prev = None
    for val in (0x1234, 0xBEEF, 0x0F0F):
        await FallingEdge(dut.clk)
        p.we.value, p.waddr.value, p.wdata.value, p.re.value = 1, 5, val, 0
        await FallingEdge(dut.clk)
        p.we.value, p.re.value, p.raddr.value = 0, 1, 5
        await FallingEdge(dut.clk)
        p.re.value = 0
        await ReadOnly()
        assert rdata(p, 0) == val, "OUT_REG 0: data one cycle after re"
        if prev is not None:
            assert rdata(p, 1) == prev, "OUT_REG 1: still the previous read one cycle after re"
        await FallingEdge(dut.clk)
        await ReadOnly()
        assert rdata(p, 1) == val, "OUT_REG 1: data two cycles after re"
        assert rdata(p, 0) == val, "OUT_REG 0: holds while re is low"
        prev = val


def test_sdp_ram():
    from lvsnic_tb import run_prims
    run_prims("test_sdp_ram", Path(__file__).resolve().parent)
