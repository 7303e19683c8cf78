"""Migen simulation of the board glue (boards/common/lvsnic_litex.py):
FrameBuffer store-and-forward, drops and overflow; the exception datagram
header; the inject datagram parsing. Run by boards/versa_ecp5/build.sh
before synthesis (python -m pytest boards/common)."""
import os
import random
import sys

from migen import Module, Signal, run_simulation
from litex.soc.interconnect import stream

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lvsnic_litex import (FrameBuffer, ExceptionPacketizer, InjectDepacketizer,  # noqa: E402
                          EXCEPT_MAGIC, INJECT_MAGIC, LVSNIC_UDP_PORT)

KW = 8


def beats(frame):
    """A frame's bytes as (data, keep, last) 64-bit beats."""
    out = []
    for i in range(0, len(frame), KW):
        chunk = frame[i:i + KW]
        out.append((int.from_bytes(chunk, "little"), (1 << len(chunk)) - 1, i + KW >= len(frame)))
    return out


def unbeat(bs):
    b = bytearray()
    for data, keep in bs:
        n = bin(keep).count("1")
        assert keep == (1 << n) - 1, f"keep {keep:#x} not contiguous"
        b += data.to_bytes(KW, "little")[:n]
    return bytes(b)


# Migen simulation semantics: a value written by a generator becomes visible
# in its next iteration, and the clock edge after an iteration samples the
# values visible during it. A beat is therefore taken at the edge after an
# iteration that sees valid and ready both visible.

def drive(ep, frames, gap_seed=None):
    """Sends frames (list of (bytes, fields dict)) on endpoint ep, with
    random idle cycles between beats when gap_seed is given."""
    rng = random.Random(gap_seed)
    items = []
    for frame, fields in frames:
        for data, keep, last in beats(frame):
            while gap_seed is not None and rng.random() < 0.3:
                items.append(None)
            items.append((data, keep, last, fields))
    cur = None

    def present(item):
        if item is None:
            yield ep.valid.eq(0)
            return
        data, keep, last, fields = item
        yield ep.valid.eq(1)
        yield ep.data.eq(data)
        if "keep" in [name for name, _ in ep.description.payload_layout]:
            yield ep.keep.eq(keep)
        yield ep.last.eq(int(last))
        for k, v in fields.items():
            yield getattr(ep, k).eq(v)

    i = 0
    yield from present(items[0] if items else None)
    yield
    while i < len(items):
        taken = items[i] is None or (yield ep.ready)
        if taken:
            i += 1
            yield from present(items[i] if i < len(items) else None)
        yield


def receive(ep, got, n, fields=(), stall_seed=None, limit=5000, start=0):
    """Collects n frames from ep into got as (bytes, {field: value})."""
    rng = random.Random(stall_seed)
    cur = []
    for cyc in range(limit):
        if len(got) >= n:
            break
        if (yield ep.valid) and (yield ep.ready):
            cur.append(((yield ep.data), (yield ep.keep)))
            if (yield ep.last):
                vals = {}
                for f in fields:
                    vals[f] = yield getattr(ep, f)
                got.append((unbeat(cur), vals))
                cur = []
        on = cyc >= start and (stall_seed is None or rng.random() < 0.6)
        yield ep.ready.eq(int(on))
        yield
    for _ in range(8):    # let the counters settle
        yield


def run_buffer(frames, n_out, depth_log2=4, backpressure=True, stall_seed=None, gap_seed=None, start=0):
    """Frames through a FrameBuffer; returns ([(bytes, user, length)], counters)."""
    dut = FrameBuffer(64, depth_log2, user_width=8, backpressure=backpressure)
    got, counters = [], {}

    def source():
        yield from receive(dut.source, got, n_out, ("user", "length"), stall_seed, start=start)
        for name in ("frames", "dropped", "overflow"):
            counters[name] = yield getattr(dut, name)

    run_simulation(dut, [drive(dut.sink, frames, gap_seed), source()])
    return [(b, f["user"], f["length"]) for b, f in got], counters


def rand_frame(rng, lo=1, hi=100):
    return bytes(rng.randrange(256) for _ in range(rng.randint(lo, hi)))


def test_frames_pass_whole_and_in_order_with_stalls():
    rng = random.Random(1)
    frames = [(rand_frame(rng, 1, 40), {"user": i, "drop": 0}) for i in range(10)]
    got, c = run_buffer(frames, 10, depth_log2=5, stall_seed=2, gap_seed=3)
    assert [g[0] for g in got] == [f for f, _ in frames]
    assert [g[1] for g in got] == list(range(10))
    assert [g[2] for g in got] == [len(f) for f, _ in frames]
    assert c == {"frames": 10, "dropped": 0, "overflow": 0}


def test_dropped_frames_are_rewound():
    rng = random.Random(4)
    frames = [(rand_frame(rng, 1, 40), {"user": i, "drop": int(i % 3 == 1)}) for i in range(9)]
    got, c = run_buffer(frames, 6, depth_log2=5, stall_seed=5)
    assert [g[0] for g in got] == [f for i, (f, _) in enumerate(frames) if i % 3 != 1]
    assert c == {"frames": 6, "dropped": 3, "overflow": 0}


def test_frame_longer_than_the_buffer_is_discarded_not_deadlocked():
    # 16 beats of buffer: a 200-byte frame (25 beats) cannot fit.
    frames = [(bytes(range(40)), {"user": 1, "drop": 0}),
              (bytes(200), {"user": 2, "drop": 0}),
              (bytes(range(30)), {"user": 3, "drop": 0})]
    got, c = run_buffer(frames, 2, depth_log2=4, backpressure=True)
    assert [g[1] for g in got] == [1, 3]
    assert c == {"frames": 2, "dropped": 0, "overflow": 1}


def test_no_backpressure_drops_what_does_not_fit():
    # The reader starts late: 16 beats hold two 56-byte frames (7 beats each);
    # the third does not fit and is lost, the fourth fits again once read.
    frames = [(bytes([i]) * 56, {"user": i, "drop": 0}) for i in range(3)]
    got, c = run_buffer(frames, 2, depth_log2=4, backpressure=False, start=60)
    assert [g[0] for g in got] == [bytes([0]) * 56, bytes([1]) * 56]
    assert c["overflow"] == 1


def test_exception_datagram_header_and_length():
    from liteeth.common import eth_udp_user_description
    port = type("P", (), {})()
    port.sink = stream.Endpoint(eth_udp_user_description(64))
    host_ip, host_port = Signal(32, reset=0xC0A80164), Signal(16, reset=5000)
    dut = ExceptionPacketizer(port, host_ip, host_port)
    meta = int.from_bytes(bytes(range(100, 120)), "little")
    frame = bytes(range(21))
    out = []

    def snk():
        for cyc in range(30):
            if (yield port.sink.valid) and (yield port.sink.ready):
                out.append(((yield port.sink.data), (yield port.sink.last_be), (yield port.sink.last),
                            (yield port.sink.length), (yield port.sink.dst_port), (yield port.sink.src_port),
                            (yield port.sink.ip_address)))
            yield port.sink.ready.eq(int(cyc % 3 != 1))
            yield
    run_simulation(dut, [drive(dut.sink, [(frame, {"user": meta, "length": len(frame)})]), snk()])
    payload = b"".join(o[0].to_bytes(8, "little") for o in out)
    assert len(out) == 3 + 3
    assert payload[:20] == bytes(range(100, 120))
    assert payload[20:24] == EXCEPT_MAGIC.to_bytes(4, "little") == b"LVCX"
    assert payload[24:24 + 21] == frame
    assert [o[2] for o in out] == [0, 0, 0, 0, 0, 1]
    assert out[-1][1] == 1 << 4          # frame byte 20 is byte 4 of its beat
    assert {o[3] for o in out} == {24 + 21}
    assert {(o[4], o[5], o[6]) for o in out} == {(5000, LVSNIC_UDP_PORT, 0xC0A80164)}


def test_inject_datagrams_parsed_and_bad_ones_dropped():
    from liteeth.common import eth_udp_user_description
    port = type("P", (), {})()
    port.source = stream.Endpoint(eth_udp_user_description(64))
    m = Module()
    dut = InjectDepacketizer(port)
    buf = FrameBuffer(64, 6, user_width=32, backpressure=False)
    m.submodules += dut, buf
    m.comb += dut.source.connect(buf.sink)
    good = bytes(range(50))
    hdr = INJECT_MAGIC.to_bytes(4, "little")
    assert hdr == b"LVNJ"
    grams = [
        (7).to_bytes(4, "little") + hdr + good,
        (8).to_bytes(4, "little") + b"XXXX" + good,          # bad magic
        (9).to_bytes(4, "little") + hdr + good[:13],         # frame < 14 bytes
        (10).to_bytes(4, "little") + hdr + good[:14],
    ]
    got, counters = [], {}

    def snk():
        yield from receive(buf.source, got, 2, ("user",), stall_seed=6)
        counters["dropped"] = yield buf.dropped

    run_simulation(m, [drive(port.source, [(g, {"length": len(g)}) for g in grams], gap_seed=7), snk()])
    assert [(b, f["user"]) for b, f in got] == [(good, 7), (good[:14], 10)]
    assert counters["dropped"] == 2
