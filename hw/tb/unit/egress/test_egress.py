"""lvsnic_egress: head rewrite, tunnel realignment (a 20-byte IPv4 or
40-byte IPv6 outer header inserted after the Ethernet header), trimming of
Ethernet padding, short-frame abort and replay, host pass-through; every
DATA_WIDTH (64, 128, 256, 512).

Decisions carry a random 74-byte head H. The expected tx frame of a
forwarded frame with total length tl is
``out[o] = H[o] if o < |H| else frame[o - shift]`` for o < 14 + tl + shift
(|H| = 54, shift = 0; IPv6: |H| = 74, shift = 0; IPIP: |H| = 74, shift =
20; an IPv6 outer header: |H| = 74, shift = 40). A frame shorter than
14 + tl gives an aborted tx frame and the frame, unchanged, to the host
with reason 19 and hit set. Frames of 1..~700 bytes, random input gaps and
output backpressure, back-to-back one-beat frames.
"""

import os
import random
from pathlib import Path

import pytest
import cocotb
from cocotb.clock import Clock
from cocotb.triggers import RisingEdge, FallingEdge
from cocotbext.axi import AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from lvsnic_tb import quiet_loggers


def meta(reason, hit, vip, hsh, seq, ts):
    return reason | hit << 8 | vip << 9 | hsh << 32 | seq << 64 | ts << 96


def unpause(o):
    o.clear_pause_generator()
    o.pause = False


class TB:
    def __init__(self, dut):
        self.dut = dut
        quiet_loggers()
        self.W = len(dut.s_axis_tkeep)
        self.LW = self.W.bit_length() - 1
        cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
        self.src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis"), dut.clk, dut.rst)
        self.tx = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_tx"), dut.clk, dut.rst)
        self.host = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_host"), dut.clk, dut.rst)
        for o in (self.src, self.tx, self.host):
            o.log.setLevel("WARNING")
        dut.d_valid.value = 0

    async def reset(self):
        self.dut.rst.value = 1
        for _ in range(3):
            await RisingEdge(self.dut.clk)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)

    async def drive_decisions(self, decs):
        d = self.dut
        for x in decs:
            await FallingEdge(d.clk)
            while int(d.d_inflight.value) >= 30:
                await FallingEdge(d.clk)
            for k, v in x.items():
                getattr(d, "d_" + k).value = v
            d.d_valid.value = 1
            await RisingEdge(d.clk)
            await FallingEdge(d.clk)
            d.d_valid.value = 0


def make_case(rng, W, i, mode, L=None, tl=None):
    """One frame and its decision. mode: 'fwd', 'fwd6' (IPv6, no tunnel),
    'tun' (IPIP), 'tun6' (IPv6 outer header), 'host'."""
    LW = W.bit_length() - 1
    seq, ts = 0x100 + i, 0xABC0000 + i
    if mode == "host":
        L = L or rng.randrange(1, 300)
        frame = bytes(rng.getrandbits(8) for _ in range(L))
        reason = rng.randrange(1, 19)
        dec = dict(fwd=0, tun=0, v6=rng.getrandbits(1), reason=reason, hit=rng.getrandbits(1), vip=rng.getrandbits(1),
                   hash=rng.getrandbits(32), seq=seq, ts=ts, h=0, j=0, k=0, ol=0, tl=0)
        exp_host = (frame, meta(reason, dec["hit"], dec["vip"], dec["hash"], seq, ts))
        return frame, False, dec, None, exp_host
    tun = mode in ("tun", "tun6")
    v6 = mode in ("fwd6", "tun6")
    tl = tl if tl is not None else rng.randrange(28, 600)
    full = 14 + tl
    r = rng.random()
    if L is None:
        if r < 0.6:
            L = full
        elif r < 0.8:
            L = full + rng.randrange(1, 70)            # Ethernet padding
        else:
            L = rng.randrange(1, full)                  # short
    frame = bytes(rng.getrandbits(8) for _ in range(L))
    short = L < full
    H = bytes(rng.getrandbits(8) for _ in range(74))
    kf = 13 + tl
    shift, hl = {"fwd": (0, 54), "fwd6": (0, 74), "tun": (20, 74), "tun6": (40, 74)}[mode]
    of = kf + shift
    hsh = rng.getrandbits(32)
    vip = rng.getrandbits(1)
    dec = dict(fwd=1, tun=int(tun), v6=int(v6), reason=0, hit=1, vip=vip, hash=hsh, seq=seq, ts=ts,
               h=int.from_bytes(H, "little"), j=of >> LW, k=kf >> LW, ol=of & (W - 1), tl=tl)
    if short:
        return frame, True, dec, ("abort", seq), (frame, meta(19, 1, vip, hsh, seq, ts))
    n = full + shift
    out = bytes(H[o] if o < hl else frame[o - shift] for o in range(n))
    return frame, False, dec, ("fwd", seq, out), None


async def run_cases(tb, cases):
    ev0 = int(tb.dut.n_events.value)
    exp_tx = [c[3] for c in cases if c[3] is not None]
    exp_host = [c[4] for c in cases if c[4] is not None]
    for frame, short, _, _, _ in cases:
        await tb.src.send(AxiStreamFrame(frame, tuser=int(short)))
    drv = cocotb.start_soon(tb.drive_decisions([c[2] for c in cases]))
    got_tx, got_host = [], []
    cyc = 0
    while len(got_tx) < len(exp_tx) or len(got_host) < len(exp_host):
        await RisingEdge(tb.dut.clk)
        cyc += 1
        assert cyc < 200000, f"timeout tx {len(got_tx)}/{len(exp_tx)} host {len(got_host)}/{len(exp_host)}"
        while not tb.tx.empty():
            got_tx.append(tb.tx.recv_nowait())
        while not tb.host.empty():
            got_host.append(tb.host.recv_nowait())
    await drv
    for _ in range(30):
        await RisingEdge(tb.dut.clk)
    assert tb.tx.empty() and tb.host.empty()
    for k, (e, g) in enumerate(zip(exp_tx, got_tx)):
        u = g.tuser if isinstance(g.tuser, list) else [g.tuser]
        assert u[0] & 0xFFFFFFFF == e[1], f"tx {k}: seq"
        if e[0] == "abort":
            assert (u[-1] >> 32) & 1, f"tx {k}: abort expected"
        else:
            assert not (u[-1] >> 32) & 1, f"tx {k}: unexpected abort"
            assert bytes(g.tdata) == e[2], f"tx {k}: bytes\n got {bytes(g.tdata).hex()}\n exp {e[2].hex()}"
    for k, (e, g) in enumerate(zip(exp_host, got_host)):
        u = g.tuser if isinstance(g.tuser, list) else [g.tuser]
        assert bytes(g.tdata) == e[0], f"host {k}: bytes"
        assert all(x == e[1] for x in u), f"host {k}: meta {u[0]:#x} != {e[1]:#x}"
    n_ok = sum(1 for e in exp_tx if e[0] == "fwd")
    assert int(tb.dut.n_events.value) - ev0 == n_ok, "one statistics event per forwarded frame"


@cocotb.test()
async def realign_all_lengths(dut):
    """Every total length 28..(4 beats + 80) for DR/NAT, IPIP and an IPv6
    outer header, exact, padded and short, back to back."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(11)
    W = tb.W
    cases = []
    i = 0
    top = 4 * W + 80
    for tl in range(28, top):
        for mode in ("fwd", "tun", "tun6"):
            cases.append(make_case(rng, W, i, mode, L=14 + tl, tl=tl)); i += 1
        cases.append(make_case(rng, W, i, ("tun", "fwd", "tun6", "fwd6")[tl % 4], L=14 + tl + 1 + tl % 61, tl=tl)); i += 1
        cases.append(make_case(rng, W, i, ("fwd6", "tun6", "fwd", "tun")[tl % 4], L=max(1, 14 + tl - 1 - tl % 37), tl=tl)); i += 1
    for k in range(0, len(cases), 300):
        await run_cases(tb, cases[k:k + 300])


@cocotb.test()
async def random_mix(dut):
    """Random forwarded / tunnelled / host / short frames with random input gaps
    and output backpressure."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(int(os.environ.get("LVSNIC_SEED", "3")))
    W = tb.W
    i = 0
    for rnd in range(4):
        if rnd == 1:
            tb.tx.set_pause_generator(iter(lambda: rng.random() < 0.4, None))
            tb.host.set_pause_generator(iter(lambda: rng.random() < 0.4, None))
            tb.src.set_pause_generator(iter(lambda: rng.random() < 0.3, None))
        elif rnd == 2:
            unpause(tb.src)
            tb.tx.set_pause_generator(iter(lambda: rng.random() < 0.9, None))
        elif rnd == 3:
            unpause(tb.tx)
            unpause(tb.host)
        cases = []
        for _ in range(150):
            cases.append(make_case(rng, W, i, rng.choice(["fwd", "fwd6", "tun", "tun6", "host"]))); i += 1
        # a burst of tiny frames (one beat each at wide buses)
        for _ in range(40):
            m = rng.choice(["fwd", "fwd6", "tun", "tun6", "host"])
            cases.append(make_case(rng, W, i, m, tl=28 if m != "host" else None)); i += 1
        await run_cases(tb, cases)


@pytest.mark.parametrize("dw", [64, 128, 256, 512])
def test_egress(dw):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run(f"egress{dw}", "tb_egress", "test_egress", here, parameters={"DATA_WIDTH": dw},
        extra_sources=[here / "tb_egress.sv"])
