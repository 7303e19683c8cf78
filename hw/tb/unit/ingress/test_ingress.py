"""lvsnic_ingress: frame buffer beats, 54/74-byte header capture and the short
flag (hw/rtl/README.md, docs/hardware.md §3.1), DATA_WIDTH 64/128/256/512.

Reference, per frame of L bytes (beats as lvsnic_core hands them over:
bytes past the frame zeroed, byte count - 1 per beat):
* frame-buffer beats: the frame's beats in order, last flag on the last,
  count - 1 = W - 1 except on the last beat, on the last beat short =
  L < 14 + total length (bytes 16..17; checked for L >= 18, where the
  total length is in the frame), for an IPv6 frame (EtherType 0x86DD)
  L < 54 + payload length (bytes 18..19; checked for L >= 20);
* one header per frame: bytes 0..53 of the frame (0..73 of an IPv6 one)
  zero-filled past its end and to 74 bytes, header bytes = min(L, 54)
  (IPv6: min(L, 74)), timestamp / sequence number of the frame's
  first beat (later beats carry other tuser values, which must be ignored);
* rx_frame once per frame.
Every length 1..3W+60 and random longer ones (the header's end at every
byte offset of a beat, every last-beat byte count), random input gaps,
frame-buffer and header backpressure.
"""

import random
from pathlib import Path

import cocotb
import pytest
from cocotb.triggers import FallingEdge, ReadOnly

from lvsnic_tb import cycles, rand_bytes, seed, start


def beats(frame, W):
    out = []
    for o in range(0, len(frame), W):
        chunk = frame[o:o + W]
        out.append((int.from_bytes(chunk, "little"), len(chunk) - 1, o + W >= len(frame)))
    return out


def expected(frame, W, ts, seq):
    L = len(frame)
    fb = []
    bs = beats(frame, W)
    v6 = L >= 14 and frame[12:14] == b"\x86\xdd"
    if v6:
        tl = 40 + (frame[18] << 8 | frame[19]) if L >= 20 else None
    else:
        tl = frame[16] << 8 | frame[17] if L >= 18 else None
    for k, (d, c, last) in enumerate(bs):
        short = (L < 14 + tl) if (last and tl is not None) else None
        fb.append((d, c if last else W - 1, int(last), short))
    hb = 74 if v6 else 54
    hdr = (int.from_bytes(frame[:hb].ljust(74, b"\0"), "little"), min(L, hb), ts, seq)
    return fb, hdr


def make_frame(rng, L):
    f = bytearray(rand_bytes(rng, L))
    if L >= 14 and rng.random() < 0.4:
        f[12:14] = b"\x86\xdd"                       # IPv6: 74-byte header, payload length
        if L >= 20 and rng.random() < 0.8:
            pl = max(0, L - 54 + rng.choice([-2, -1, 0, 0, 1, 2, rng.randrange(-30, 30)]))
            f[18:20] = pl.to_bytes(2, "big")
        return bytes(f)
    if L >= 14 and rng.random() < 0.5:
        f[12:14] = b"\x08\x00"
    if L >= 18 and rng.random() < 0.7:
        tl = max(0, L - 14 + rng.choice([-2, -1, 0, 0, 1, 2, rng.randrange(-30, 30)]))
        f[16:18] = tl.to_bytes(2, "big")
    return bytes(f)


class TB:
    def __init__(self, dut):
        self.dut = dut
        self.W = len(dut.s_data) // 8
        for s in ("s_valid", "fb_ready", "hdr_ready"):
            getattr(dut, s).value = 0

    async def run(self, rng, frames, p_idle, p_fb, p_hdr):
        d, W = self.dut, self.W
        todo = []                       # (data, cnt_m1, last, user)
        exp_fb, exp_hdr = [], []
        for i, f in enumerate(frames):
            ts, seq = rng.getrandbits(64), rng.getrandbits(32)
            fb, hdr = expected(f, W, ts, seq)
            exp_fb += fb
            exp_hdr.append(hdr)
            for k, (data, c, last) in enumerate(beats(f, W)):
                user = (seq << 64 | ts) if k == 0 else rng.getrandbits(96)
                todo.append((data, c, last, user))
        got_fb, got_hdr, rx = [], [], 0
        cur = None
        idle = 0
        while todo or cur is not None or idle < 6:
            await FallingEdge(d.clk)
            d.fb_ready.value = int(rng.random() >= p_fb)
            d.hdr_ready.value = int(rng.random() >= p_hdr)
            if cur is None and todo and rng.random() >= p_idle:
                cur = todo.pop(0)
            d.s_valid.value = int(cur is not None)
            if cur is not None:
                d.s_data.value, d.s_cnt_m1.value, d.s_last.value, d.s_user.value = cur
            await ReadOnly()
            if int(d.fb_valid.value):
                got_fb.append((int(d.fb_data.value), int(d.fb_cnt_m1.value), int(d.fb_last.value),
                               int(d.fb_short.value)))
            acc = cur is not None and int(d.s_ready.value)
            if int(d.hdr_valid.value):
                assert acc, "hdr_valid without the beat being taken"
                if int(d.hdr_ready.value):
                    got_hdr.append((int(d.hdr_data.value), int(d.hdr_bytes.value), int(d.hdr_ts.value),
                                    int(d.hdr_seq.value)))
            if int(d.rx_frame.value):
                assert acc and cur[2], "rx_frame off a last beat"
                rx += 1
            if acc:
                cur = None
            idle = 0 if (todo or cur is not None) else idle + 1
        assert len(got_fb) == len(exp_fb), f"{len(got_fb)} frame-buffer beats, expected {len(exp_fb)}"
        for k, (g, e) in enumerate(zip(got_fb, exp_fb)):
            assert g[:3] == e[:3], f"beat {k}: (data, cnt_m1, last) {g[:3]} != {e[:3]}"
            if e[3] is not None:
                assert g[3] == e[3], f"beat {k}: short {g[3]}, expected {e[3]}"
        assert len(got_hdr) == len(frames), f"{len(got_hdr)} headers for {len(frames)} frames"
        for k, (g, e) in enumerate(zip(got_hdr, exp_hdr)):
            assert g[0] == e[0], f"frame {k} (len {len(frames[k])}): header bytes\n got {g[0]:0108x}\n exp {e[0]:0108x}"
            assert g[1:] == e[1:], f"frame {k} (len {len(frames[k])}): (bytes, ts, seq) {g[1:]} != {e[1:]}"
        assert rx == len(frames)


@cocotb.test()
async def all_lengths(dut):
    """Every length 1..3W+60, back to back, no backpressure."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(51))
    await tb.run(rng, [make_frame(rng, L) for L in range(1, 3 * tb.W + 61)], 0.0, 0.0, 0.0)


@cocotb.test()
async def random_backpressure(dut):
    """Random lengths with input gaps, frame-buffer and header stalls."""
    tb = TB(dut)
    await start(dut)
    rng = random.Random(seed(52))
    for p in [(0.3, 0.3, 0.3), (0.0, 0.6, 0.0), (0.0, 0.0, 0.8), (0.5, 0.2, 0.5)]:
        fr = [make_frame(rng, rng.choice([rng.randrange(1, 70), rng.randrange(1, 400)])) for _ in range(60)]
        await tb.run(rng, fr, *p)
        await cycles(dut, 3)


@pytest.mark.parametrize("dw", [64, 128, 256, 512])
def test_ingress(dw):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run(f"ingress{dw}", "lvsnic_ingress", "test_ingress", here, parameters={"DATA_WIDTH": dw})
