"""lvsnic_toeplitz: the Microsoft RSS verification vectors and random
inputs against a bit-serial Python Toeplitz, for both lvsnic keys, with the
IPv4 input (IN_BITS 96) and the IPv6 input (IN_BITS 288)."""

import random
import socket
import struct
from pathlib import Path

import cocotb
import pytest
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, RisingEdge

KEY0 = bytes.fromhex("6d5a56da255b0ec24167253d43a38fb0d0ca2bcbae7b30b477cb2da38030f20c6a42b73bbeac01fa")
KEY1 = KEY0[16:] + KEY0[:16]

# Microsoft "Verifying the RSS hash calculation", IPv4 table: (source,
# destination, IPv4-only hash, IPv4 with TCP ports hash). The input is
# source address | destination address | source port | destination port.
RSS_VECTORS = [
    (("66.9.149.187", 2794), ("161.142.100.80", 1766), 0x323E8FC2, 0x51CCC178),
    (("199.92.111.2", 14230), ("65.69.140.83", 4739), 0xD718262A, 0xC626B0EA),
    (("24.19.198.95", 12898), ("12.22.207.184", 38024), 0xD2D0A5DE, 0x5C2B394A),
    (("38.27.205.30", 48228), ("209.142.163.6", 2217), 0x82989176, 0xAFC7327F),
    (("153.39.163.191", 44251), ("202.188.127.2", 1303), 0x5D1809C5, 0x10E828A2),
]


# The same page's IPv6 table: (source, destination, IPv6 with TCP ports hash).
RSS_VECTORS6 = [
    (("3ffe:2501:200:1fff::7", 2794), ("3ffe:2501:200:3::1", 1766), 0x40207D3D),
    (("3ffe:501:8::260:97ff:fe40:efab", 14230), ("ff02::1", 4739), 0xDDE51BBF),
    (("3ffe:1900:4545:3:200:f8ff:fe21:67cf", 44251), ("fe80::200:f8ff:fe21:67cf", 38024), 0x02D1FEEF),
]


def pack6(src, dst, sport, dport):
    return socket.inet_pton(socket.AF_INET6, src) + socket.inet_pton(socket.AF_INET6, dst) + struct.pack(">HH", sport, dport)


def toeplitz(key, data):
    k = int.from_bytes(key, "big")
    kl = len(key) * 8
    r = 0
    for i in range(len(data) * 8):
        if (data[i // 8] >> (7 - i % 8)) & 1:
            r ^= (k >> (kl - 32 - i)) & 0xFFFFFFFF
    return r


def pack(src, dst, sport, dport):
    return socket.inet_aton(src) + socket.inet_aton(dst) + struct.pack(">HH", sport, dport)


@cocotb.test()
async def rss_vectors_and_random(dut):
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.ce.value = 1
    nbytes = len(dut.in_data) // 8
    inputs = []
    if nbytes == 36:
        for (s, sp), (d, dp), h_tcp in RSS_VECTORS6:
            assert toeplitz(KEY0, pack6(s, d, sp, dp)) == h_tcp
            inputs.append((pack6(s, d, sp, dp), h_tcp))
        # an IPv4 input followed by zeros hashes as the IPv4 input
        for (s, sp), (d, dp), h_ip, h_tcp in RSS_VECTORS:
            inputs.append((pack(s, d, sp, dp) + bytes(24), h_tcp))
    for (s, sp), (d, dp), h_ip, h_tcp in (RSS_VECTORS if nbytes == 12 else []):
        # self-check of the Python reference against the published values
        assert toeplitz(KEY0, pack(s, d, sp, dp)) == h_tcp
        assert toeplitz(KEY0, socket.inet_aton(s) + socket.inet_aton(d)) == h_ip
        inputs.append((pack(s, d, sp, dp), h_tcp))
        # zero ports contribute nothing: 12-byte hash == 8-byte (IPv4) hash
        inputs.append((pack(s, d, 0, 0), h_ip))
    rng = random.Random(1)
    for _ in range(300):
        inputs.append((bytes(rng.getrandbits(8) for _ in range(nbytes)), None))
    inputs.append((b"\xff" * nbytes, None))
    inputs.append((b"\x00" * nbytes, None))

    # stream one input per cycle (driven at the falling edge); the hash of
    # the input taken at rising edge k is visible after rising edge k + 1
    expect = []
    checked = 0
    for data, pinned in inputs + [(bytes(nbytes), None)] * 2:
        await FallingEdge(dut.clk)
        if len(expect) >= 2:
            d, pinned0 = expect[-2]
            h0 = dut.hash0.value.to_unsigned()
            h1 = dut.hash1.value.to_unsigned()
            assert h0 == toeplitz(KEY0, d), f"{d.hex()}: way0 {h0:#010x}"
            assert h1 == toeplitz(KEY1, d), f"{d.hex()}: way1 {h1:#010x}"
            if pinned0 is not None:
                assert h0 == pinned0
            checked += 1
        dut.in_data.value = int.from_bytes(data, "big")
        expect.append((data, pinned))
    assert checked == len(inputs)
    # ce low holds the pipeline
    dut.ce.value = 0
    held = dut.hash0.value.to_unsigned()
    for _ in range(3):
        await RisingEdge(dut.clk)
    assert dut.hash0.value.to_unsigned() == held


@pytest.mark.parametrize("in_bits", [96, 288])
def test_toeplitz(in_bits):
    from lvsnic_tb import run
    here = Path(__file__).resolve().parent
    run(f"toeplitz_{in_bits}", "tb_toeplitz", "test_toeplitz", here, parameters={"IN_BITS": in_bits},
        extra_sources=[here / "tb_toeplitz.sv"])
