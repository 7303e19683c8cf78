#
# Smoke test of the full-system simulation (boards/sim/): starts it with
# boards/sim/run.sh (building the model if needed, a few minutes the first
# time), then over the two taps:
#   * register map over Etherbone: ID, VERSION, CAPS, read/write registers
#     of the core and LiteX's scratch register, the glue's host address;
#   * exception path: IPv4 frames into the data tap come back as exception
#     datagrams ("LVCX") on UDP 0x4C56, frame unchanged, with the reason
#     the core gives (DISABLED while CTRL.enable = 0; MISS / MISS_LOCAL
#     once enabled with an empty flow table);
#   * inject path: "LVNJ" datagrams leave the data tap byte-identical;
#     a datagram with a wrong magic is counted and dropped;
#   * forwarding: the host driver's loop by hand (miss to a VIP, ROUTE flow
#     written at hash_0's bucket, the frame then forwarded by the core).
# Needs root (TAP devices). An instance already running on the same taps
# is reused and left running; otherwise the test stops what it started.
#
#   .venv/bin/python -m pytest -v boards/sim/test_lvsnic_sim.py

import os
import socket
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import simnet  # noqa: E402
from simnet import Etherbone, DataTap, ipv4_udp_frame, parse_exception, inject_datagram  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="TAP devices need root")

# docs/hardware.md §6, addresses from the generated map
L = simnet.L
ID, VERSION, CAPS0, CAPS1, CTRL, MAC_LO, MAC_HI, IP, MTU = (L.ID, L.VERSION, L.CAPS0, L.CAPS1, L.CTRL, L.MAC_LO,
                                                         L.MAC_HI, L.IP, L.MTU)
VIP0, VIP_VALID, FLOW_DATA0 = L.VIP_BASE, L.VIP_VALID, L.FLOW_DATA_BASE
def CNT_LO(n): return L.CNT_BASE + L.CNT_STRIDE * n + L.CNT_LO_OFFSET
DISABLED, MISS_LOCAL, MISS = 18, 13, 14

DIRECTOR_MAC = "02:00:00:00:00:01"
CLIENT_MAC = "02:00:00:00:00:02"
DIRECTOR_IP = "10.0.0.1"


@pytest.fixture(scope="module")
def sim():
    env = dict(os.environ)
    run = [os.path.join(HERE, "run.sh")]
    was_running = subprocess.run(run + ["status"], env=env, capture_output=True).returncode == 0
    r = subprocess.run(run + ["start"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        pytest.fail(f"run.sh start failed:\n{r.stderr[-3000:]}")
    ready = [l for l in r.stdout.splitlines() if l.startswith("lvsnic-sim: ready")]
    assert ready, r.stdout
    fields = dict(kv.split("=", 1) for kv in ready[0].split()[2:])
    info = {
        "sim_ip": fields["sim_ip"], "host_ip": fields["host_ip"],
        "data_tap": fields["data_tap"], "mgmt_tap": fields["mgmt_tap"],
        "csr": simnet.read_csr_csv(fields["csr_csv"]),
    }
    yield info
    if not was_running:
        subprocess.run(run + ["stop"], env=env, check=False)


@pytest.fixture(scope="module")
def eb(sim):
    with Etherbone(sim["sim_ip"], bind=sim["host_ip"], timeout=1.0) as e:
        yield e


@pytest.fixture(scope="module")
def host_sock(sim):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((sim["host_ip"], simnet.LVSNIC_UDP_PORT))
    s.settimeout(10.0)
    yield s
    s.close()


@pytest.fixture(scope="module")
def tap(sim):
    t = DataTap(sim["data_tap"])
    yield t
    t.close()


def _write(eb, addr, val):
    """A register write, read back: Etherbone writes are posted, and a frame
    on the data tap may otherwise overtake it."""
    eb.write(addr, val)
    return eb.read(addr)


def _mac_regs(mac):
    b = bytes.fromhex(mac.replace(":", ""))
    return int.from_bytes(b[2:6], "big"), int.from_bytes(b[0:2], "big")


def _drain(sock):
    sock.settimeout(0.05)
    try:
        while True:
            sock.recvfrom(65535)
    except socket.timeout:
        pass
    sock.settimeout(10.0)


def _exception_of(sock, sim, frame):
    """The next exception datagram (skipping others), checked for source."""
    data, addr = sock.recvfrom(65535)
    assert addr == (sim["sim_ip"], simnet.LVSNIC_UDP_PORT)
    meta, got = parse_exception(data)
    return meta, got


def test_id_and_caps(eb):
    assert eb.read(ID) == 0x4C56534E          # "LVSN"
    assert eb.read(VERSION) == L.VERSION_RESET == 0x00020000
    fb = int(os.environ.get("FLOW_BUCKETS_LOG2", 4))
    al = int(os.environ.get("ACTION_LOG2", 4))
    vips = int(os.environ.get("VIP_COUNT", 4))
    assert eb.read(CAPS0) == 64 | fb << 16 | al << 24
    # the simulated board builds the core with IPV6 = 1 (CAPS1.ipv6, bit
    # 24, and tun6, bit 25: IPv6 outer headers for tunnels)
    assert eb.read(CAPS1) == 4 | 2 << 8 | vips << 16 | 1 << 24 | 1 << 25
    assert eb.read(ID, 4) == [0x4C56534E, L.VERSION_RESET, 64 | fb << 16 | al << 24, 4 | 2 << 8 | vips << 16 | 3 << 24]


def test_read_write_registers(sim, eb):
    # The core has no scratch register: its VIP registers are plain
    # read/write, MTU keeps 16 bits, the staging words are write-only.
    for addr, val, back in [(FLOW_DATA0, 0xDEADBEEF, 0), (VIP0, 0x0A000063, 0x0A000063),
                            (MTU, 0xFFFF1234, 0x1234), (L.IP6_BASE + 12, 0x00000063, 0x00000063)]:
        old = eb.read(addr)
        eb.write(addr, val)
        assert eb.read(addr) == back
        eb.write(addr, old)
        assert eb.read(addr) == old
    # LiteX's SoC scratch register and the glue's CSRs, above 0x1_0000.
    csr = sim["csr"]
    scratch = csr["ctrl_scratch"]
    old = eb.read(scratch)
    eb.write(scratch, 0xA5A55A5A)
    assert eb.read(scratch) == 0xA5A55A5A
    eb.write(scratch, old)
    assert eb.read(csr["glue_host_ip"]) == int.from_bytes(socket.inet_aton(sim["host_ip"]), "big")
    assert eb.read(csr["glue_host_port"]) == simnet.LVSNIC_UDP_PORT


def test_exception_disabled(sim, eb, host_sock, tap):
    ctrl = eb.read(CTRL)
    _write(eb, CTRL, ctrl & ~1)                  # disabled: everything goes to the host
    _drain(host_sock)
    host0 = eb.read(sim["csr"]["glue_host_frames"])
    seqs = []
    # up to 8192 bytes (the glue's buffers); above 1448 the datagram needs
    # the management tap's MTU above 1500 (run.sh: 9000)
    for n, size in enumerate([60, 61, 64, 65, 72, 100, 513, 1448, 1514, 8192]):
        payload = bytes((n + i) & 0xFF for i in range(size - 42))
        frame = ipv4_udp_frame(DIRECTOR_MAC, CLIENT_MAC, "10.0.0.2", "10.0.0.9", 40000 + n, 80, payload)
        assert len(frame) == size
        tap.send(frame)
        meta, got = _exception_of(host_sock, sim, frame)
        assert got == frame, f"{size}-byte frame changed"
        assert meta["reason"] == DISABLED
        assert (meta["hit"], meta["vip"], meta["hash0"]) == (0, 0, 0)
        seqs.append(meta["seq"])
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert eb.read(sim["csr"]["glue_host_frames"]) == host0 + len(seqs)
    # A frame shorter than the minimum arrives padded to 60 bytes (as from a wire).
    arp = bytes.fromhex("ffffffffffff") + bytes.fromhex(CLIENT_MAC.replace(":", "")) + b"\x08\x06" + bytes(28)
    tap.send(arp)
    meta, got = _exception_of(host_sock, sim, arp)
    assert got == arp + bytes(60 - len(arp))
    eb.write(CTRL, ctrl)


def test_exception_miss(sim, eb, host_sock, tap):
    """Enabled with an empty flow table: a miss, to the host with its reason and hash."""
    ctrl = eb.read(CTRL)
    regs = {a: eb.read(a) for a in (MAC_LO, MAC_HI, IP)}
    lo, hi = _mac_regs(DIRECTOR_MAC)
    _write(eb, MAC_LO, lo)
    _write(eb, MAC_HI, hi)
    _write(eb, IP, int.from_bytes(socket.inet_aton(DIRECTOR_IP), "big"))
    assert _write(eb, CTRL, ctrl | 1) == ctrl | 1
    try:
        _drain(host_sock)
        for dst, reason in [("10.0.0.9", MISS), (DIRECTOR_IP, MISS_LOCAL)]:
            frame = ipv4_udp_frame(DIRECTOR_MAC, CLIENT_MAC, "10.0.0.2", dst, 12345, 53, b"lvsnic" * 10)
            tap.send(frame)
            meta, got = _exception_of(host_sock, sim, frame)
            assert got == frame
            assert meta["reason"] == reason
            assert meta["hit"] == 0 and meta["hash0"] != 0
    finally:
        eb.write(CTRL, ctrl)
        for a, v in regs.items():
            eb.write(a, v)


def test_inject(sim, eb, tap):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tap.drain()
    inj0 = eb.read(sim["csr"]["glue_inject_frames"])
    cnt0 = eb.read(CNT_LO(3))                    # frames injected
    sizes = [60, 61, 64, 127, 600, 1514, 8192]
    for n, size in enumerate(sizes):
        payload = bytes((7 * n + i) & 0xFF for i in range(size - 42))
        frame = ipv4_udp_frame("02:00:00:00:00:63", DIRECTOR_MAC, "10.0.0.9", "10.0.0.2", 80, 40000 + n, payload)
        s.sendto(inject_datagram(frame, seq=0x1000 + n), (sim["sim_ip"], simnet.LVSNIC_UDP_PORT))
        got = tap.recv(timeout=10)
        assert got == frame, f"{size}-byte injected frame: got {None if got is None else got[:32].hex()}"
    # A frame below the minimum leaves padded by the MAC.
    short = bytes.fromhex("02000000006302000000000188b5") + b"short"
    s.sendto(inject_datagram(short, seq=7), (sim["sim_ip"], simnet.LVSNIC_UDP_PORT))
    assert tap.recv(timeout=10) == short + bytes(60 - len(short))
    assert eb.read(sim["csr"]["glue_inject_frames"]) == inj0 + len(sizes) + 1
    assert eb.read(CNT_LO(3)) == cnt0 + len(sizes) + 1
    s.close()


def test_inject_bad_magic(sim, eb, tap):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tap.drain()
    bad0 = eb.read(sim["csr"]["glue_inject_bad"])
    frame = ipv4_udp_frame("02:00:00:00:00:63", DIRECTOR_MAC, "10.0.0.9", "10.0.0.2", 80, 1, bytes(30))
    s.sendto(b"\0\0\0\0LVXX" + frame, (sim["sim_ip"], simnet.LVSNIC_UDP_PORT))
    time.sleep(0.5)
    assert tap.recv(timeout=1) is None
    assert eb.read(sim["csr"]["glue_inject_bad"]) == bad0 + 1
    s.close()


def test_forward_after_install(sim, eb, host_sock, tap):
    """What the host driver does: a miss to a VIP comes up with hash_0, the
    host installs a ROUTE flow in way 0, bucket hash_0 & mask, and the same
    packet is then forwarded by the core out of the data tap (MACs
    rewritten, TTL - 1, checksum recomputed)."""
    fb = int(os.environ.get("FLOW_BUCKETS_LOG2", 4))
    vip, rs_mac = "10.0.0.100", "02:00:00:00:00:63"
    ctrl = eb.read(CTRL)
    saved = {a: eb.read(a) for a in (MAC_LO, MAC_HI, IP, VIP0, VIP_VALID)}
    lo, hi = _mac_regs(DIRECTOR_MAC)
    _write(eb, MAC_LO, lo)
    _write(eb, MAC_HI, hi)
    _write(eb, IP, simnet.ip_int(DIRECTOR_IP))
    _write(eb, VIP0, simnet.ip_int(vip))
    _write(eb, VIP_VALID, 1)
    _write(eb, CTRL, ctrl | 1)
    bucket = None
    try:
        _drain(host_sock)
        tap.drain()
        frame = ipv4_udp_frame(DIRECTOR_MAC, CLIENT_MAC, "10.0.0.2", vip, 23456, 80, b"forward me" * 5)
        tap.send(frame)
        meta, got = _exception_of(host_sock, sim, frame)
        assert got == frame and meta["reason"] == 12 and meta["vip"] == 1    # MISS_VIP
        bucket = meta["hash0"] & ((1 << fb) - 1)
        simnet.write_action(eb, 1, simnet.route_action(rs_mac))
        simnet.write_flow(eb, 0, bucket, 0, simnet.flow_entry(17, "10.0.0.2", vip, 23456, 80, 1), fb)
        fwd0 = eb.read(CNT_LO(1))
        for _ in range(3):
            tap.send(frame)
            out = tap.recv(timeout=10)
            assert out == simnet.routed(frame, rs_mac, DIRECTOR_MAC)
        assert eb.read(CNT_LO(1)) == fwd0 + 3
        host_sock.settimeout(0.5)
        with pytest.raises(socket.timeout):
            host_sock.recvfrom(65535)                # nothing more to the host
    finally:
        host_sock.settimeout(10.0)
        if bucket is not None:
            simnet.write_flow(eb, 0, bucket, 0, simnet.EMPTY_SLOT, fb)
        eb.write(CTRL, ctrl)
        for a, v in saved.items():
            eb.write(a, v)
        eb.read(CTRL)
