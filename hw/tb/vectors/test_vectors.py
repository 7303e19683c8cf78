"""lvsnic_core against `lvsnic vectors`: load the register script, stream
the input frames (tuser = timestamp, sequence number), and check every
frame and its sideband on the tx and host streams against the expected
ones, with idle gaps and random backpressure, at 64 and 512 bits.

Run: pytest hw/tb/vectors (needs the venv from scripts/setup-hw.sh; the
README's test command runs it). Each run appends its simulation speed
(frames, wall seconds) to $LVSNIC_TB_STATS when that is set.
"""
import itertools
import logging
import os
import random
import struct
import sys
import time

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "hw", "tb", "unit"))

# Table command and status registers (docs/registers.md): the host waits
# for busy = 0 before a command.
from lvsnic_regs import ACT_CMD, ACT_STATUS, FLOW_CMD, FLOW_STATUS  # noqa: E402
from lvsnic_ref import meta  # noqa: E402


def read_pcap(path):
    """Frames of a classic pcap file (either resolution, little- or big-endian)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    endian = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    off, frames = 24, []
    while off + 16 <= len(data):
        _, _, incl, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        frames.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return frames


def read_lines(path):
    with open(path) as f:
        return [l.split() for l in f if l.strip()]


class TB:
    """Testbench of lvsnic_core: clock, reset, AXI-Lite master, rx and
    inject sources, tx and host sinks."""

    def __init__(self, dut):
        self.dut = dut
        for name in ("cocotbext.axi", "cocotb"):
            logging.getLogger(name).setLevel(logging.WARNING)
        cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
        self.rx = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_rx"), dut.clk, dut.rst)
        self.inject = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_inject"), dut.clk, dut.rst)
        self.tx = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_tx"), dut.clk, dut.rst)
        self.host = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_host"), dut.clk, dut.rst)
        self.axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        for log in (self.rx.log, self.inject.log, self.tx.log, self.host.log, self.axil.write_if.log, self.axil.read_if.log):
            log.setLevel(logging.WARNING)

    def set_pattern(self, pattern, seed):
        if pattern == "backpressure":
            rng = random.Random(seed)
            self.tx.set_pause_generator(itertools.cycle([rng.random() < 0.3 for _ in range(997)]))
            self.host.set_pause_generator(itertools.cycle([rng.random() < 0.4 for _ in range(991)]))
            self.rx.set_pause_generator(itertools.cycle([rng.random() < 0.2 for _ in range(983)]))

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(8):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        for _ in range(4):
            await RisingEdge(self.dut.clk)
        # the tables are cleared after reset; commands wait for it
        await self.idle(FLOW_STATUS)
        await self.idle(ACT_STATUS)

    async def idle(self, status):
        for _ in range(100000):
            if (await self.read(status)) & 1 == 0:
                return
        raise AssertionError(f"table status {status:#x} stays busy")

    async def write(self, addr, value):
        if addr in (FLOW_CMD, ACT_CMD):
            await self.idle(FLOW_STATUS if addr == FLOW_CMD else ACT_STATUS)
        await self.axil.write_dword(addr, value)

    async def read(self, addr):
        return await self.axil.read_dword(addr)


@cocotb.test()
async def run_vectors(dut):
    vec = os.environ["LVSNIC_VECTORS"]
    tb = TB(dut)
    tb.set_pattern(os.environ.get("LVSNIC_PATTERN", "idle"), 7)
    await tb.reset()
    assert await tb.read(0x000) == 0x4C56534E, "ID register"
    for addr, value in read_lines(os.path.join(vec, "regs.txt")):
        await tb.write(int(addr, 16), int(value, 16))
    frames = read_pcap(os.path.join(vec, "input.pcap"))
    # Timestamps: the pcap's, in ns (records were written with ns resolution).
    with open(os.path.join(vec, "input.pcap"), "rb") as f:
        raw = f.read()
    ts, off = [], 24
    while off + 16 <= len(raw):
        sec, frac, incl, _ = struct.unpack("<IIII", raw[off:off + 16])
        ts.append(sec * 1_000_000_000 + frac)
        off += 16 + incl
    start = time.monotonic()
    for i, (frame, t) in enumerate(zip(frames, ts)):
        await tb.rx.send(AxiStreamFrame(frame, tuser=t | ((i + 1) << 64)))
    exp_tx = read_pcap(os.path.join(vec, "expected_tx.pcap"))
    exp_tx_seq = [int(l[0]) for l in read_lines(os.path.join(vec, "expected_tx.txt"))]
    exp_host = read_pcap(os.path.join(vec, "expected_host.pcap"))
    exp_meta = read_lines(os.path.join(vec, "expected_host.txt"))
    aborts = set(int(l[0]) for l in read_lines(os.path.join(vec, "expected_abort.txt")))
    got_tx = []
    while len(got_tx) < len(exp_tx) + len(aborts):
        got_tx.append(await tb.tx.recv())
    got_tx = [f for f in got_tx if not (int(f.tuser[-1] if isinstance(f.tuser, list) else f.tuser) >> 32) & 1]
    assert len(got_tx) == len(exp_tx)
    for k, (g, e, seq) in enumerate(zip(got_tx, exp_tx, exp_tx_seq)):
        u = g.tuser[0] if isinstance(g.tuser, list) else g.tuser
        assert bytes(g.tdata) == e, f"tx frame {k} (seq {seq}) differs"
        assert int(u) & 0xFFFFFFFF == seq, f"tx frame {k}: tuser seq {int(u) & 0xFFFFFFFF} != {seq}"
    for k, (e, m) in enumerate(zip(exp_host, exp_meta)):
        g = await tb.host.recv()
        u = int(g.tuser[0] if isinstance(g.tuser, list) else g.tuser)
        seq, reason, hit, vip, hash0, t = int(m[0]), int(m[1]), int(m[2]), int(m[3]), int(m[4], 16), int(m[5])
        assert bytes(g.tdata) == e, f"host frame {k} (seq {seq}) differs"
        want = meta(reason, hit, vip, hash0, seq, t)
        assert u == want, f"host frame {k} (seq {seq}): tuser {u:#042x} != {want:#042x}"
    wall = time.monotonic() - start
    for _ in range(50):
        await RisingEdge(dut.clk)
    assert tb.tx.empty() and tb.host.empty(), "no extra frames"
    assert len(exp_tx) > 0 and len(exp_host) > 0, "vectors exercise both outputs"
    stats = os.environ.get("LVSNIC_TB_STATS")
    if stats:
        with open(stats, "a") as f:
            f.write(f"{os.environ.get('LVSNIC_WIDTH')} {os.environ.get('LVSNIC_PATTERN')} {len(frames)} {wall:.3f}\n")


@pytest.mark.parametrize("pattern", ["idle", "backpressure"])
@pytest.mark.parametrize("width", [64, 512])
def test_core_vectors(vectors_dir, width, pattern):
    from lvsnic_tb import run

    run(f"vectors{width}", "lvsnic_core", "test_vectors", os.path.dirname(__file__),
        parameters={"DATA_WIDTH": width, "FLOW_BUCKETS_LOG2": 8, "ACTION_LOG2": 8, "VIP_COUNT": 16},
        extra_env={"LVSNIC_VECTORS": vectors_dir, "LVSNIC_PATTERN": pattern, "LVSNIC_WIDTH": str(width)})
