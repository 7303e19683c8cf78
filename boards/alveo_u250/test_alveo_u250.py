"""boards/alveo_u250: the generator writes a complete, consistent set of
sources, and the generated top lints clean (Verilator -Wall) together with
lvsnic_core and the stubs of every vendor primitive and IP it instantiates.

Each check is also shown to fail on a broken input (a misspelt port, a
missing stub, an unconstrained pin), so a pass means something.
Needs Verilator (the project's .venv, scripts/setup-hw.sh); no Vivado.
"""
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TOP = "lvsnic_alveo_u250"


def _load_generator():
    spec = importlib.util.spec_from_file_location("alveo_generate", HERE / "generate.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


gen = _load_generator()


def verilator():
    v = ROOT / ".venv" / "bin" / "verilator"
    if v.exists():
        return str(v)
    found = shutil.which("verilator")
    if not found:
        pytest.fail("verilator not found: run scripts/setup-hw.sh (the test command does)")
    return found


def generate(out, *args):
    return subprocess.run([sys.executable, str(HERE / "generate.py"), "--out", str(out), *args],
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("alveo_u250")
    r = generate(out)
    assert r.returncode == 0, r.stderr
    return out


def lint(out, stubs=None, extra=()):
    """Verilator -Wall lint of the generated top against the stubs."""
    stubs = sorted((HERE / "stubs").glob("*.sv")) if stubs is None else stubs
    core = [ROOT / f for f in gen.core_files()]
    files = ([ROOT / "hw/rtl/lvsnic.vlt"] + core + stubs + [ROOT / "hw/rtl/lvsnic_dma.sv"]
             + [out / g for g in gen.GLUE] + [out / f"{TOP}.sv"] + list(extra))
    return subprocess.run([verilator(), "--lint-only", "-Wall", "--top-module", TOP,
                           f"+incdir+{ROOT / 'hw/rtl'}"] + [str(f) for f in files],
                          capture_output=True, text=True, cwd=ROOT)


def top_ports(text):
    """{name: width} of the top's ports."""
    head = text[text.index(f"module {TOP} ("):]
    head = head[:head.index(");")]
    ports = {}
    for m in re.finditer(r"(input|output)\s+wire\s+(\[(\d+):0\]\s+)?(\w+)", head):
        ports[m.group(4)] = int(m.group(3)) + 1 if m.group(3) else 1
    return ports


def test_generates_every_file(built):
    names = sorted(p.name for p in built.iterdir())
    assert names == sorted([f"{TOP}.sv", f"{TOP}.xdc", "build.tcl", "sources.f", "params.json"]
                           + gen.GLUE)
    params = json.loads((built / "params.json").read_text())
    assert params["data_width"] == 512
    assert params["part"] == "xcu250-figd2104-2L-e"


def test_generated_top_lints_clean(built):
    r = lint(built)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "%Warning" not in r.stderr and "%Error" not in r.stderr, r.stderr


def test_lint_fails_on_a_misspelt_ip_port(built, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(built, bad)
    top = bad / f"{TOP}.sv"
    text = top.read_text()
    assert ".tx_axis_tkeep (cmac_tx_tkeep)" in text
    top.write_text(text.replace(".tx_axis_tkeep (cmac_tx_tkeep)", ".tx_axis_tkep (cmac_tx_tkeep)"))
    r = lint(bad)
    assert r.returncode != 0 and "tx_axis_tkep" in r.stderr, r.stderr


def test_lint_fails_on_a_width_mismatch(built, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(built, bad)
    top = bad / f"{TOP}.sv"
    text = top.read_text()
    assert ".s_axis_tuser (hc_tuser)" in text
    top.write_text(text.replace(".s_axis_tuser (hc_tuser)", ".s_axis_tuser (hc_tuser[31:0])"))
    r = lint(bad)
    assert r.returncode != 0 and "WIDTH" in r.stderr, r.stderr


def test_every_instantiated_vendor_module_has_a_stub_and_is_created(built):
    """Each module the top instantiates is the core, board glue, the DMA
    engine, a UG974 primitive stub or an IP instance that build.tcl
    creates (create_ip -module_name) and that has a stub."""
    text = (built / f"{TOP}.sv").read_text()
    used = set(re.findall(r"^\s{4}(\w+)\s+(?:#\(.*?\)\s*)?u_\w+\s*\(", text, re.M | re.S))
    tcl = (built / "build.tcl").read_text()
    created = set(re.findall(r"-module_name (\w+)", tcl))
    stubbed = set()
    for f in (HERE / "stubs").glob("*.sv"):
        stubbed |= set(re.findall(r"^module (\w+)", f.read_text(), re.M))
    primitives = {"IBUFDS", "IBUFDS_GTE4", "BUFG", "BUFG_GT", "MMCME4_BASE"}
    ours = {"lvsnic_core", "lvsnic_dma", "lvsnic_alveo_frame_fifo", "lvsnic_alveo_bar0"}
    assert used >= ours | {"lvsnic_cmac", "lvsnic_xdma"}, used
    vendor = used - ours
    assert vendor - stubbed == set(), "instantiated without a stub"
    assert (vendor - primitives) - created == set(), "instantiated IP that build.tcl does not create"
    assert created - vendor == set(), "IP created but not instantiated"
    assert primitives & vendor == primitives


def test_stub_check_is_not_vacuous(built):
    """Without the CMAC stub the lint fails, naming the missing module."""
    stubs = [f for f in sorted((HERE / "stubs").glob("*.sv")) if f.name != "lvsnic_cmac.sv"]
    r = lint(built, stubs=stubs)
    assert r.returncode != 0 and "lvsnic_cmac" in r.stderr, r.stderr


def xdc_pins(text):
    pins = {}
    for m in re.finditer(r"PACKAGE_PIN (\w+)(?: IOSTANDARD \w+)?\}? \[get_ports \{([^}]+)\}\]", text):
        pins[m.group(2)] = m.group(1)
    return pins


def test_xdc_places_every_top_port_bit_on_its_own_pin(built):
    ports = top_ports((built / f"{TOP}.sv").read_text())
    bits = {n if w == 1 else f"{n}[{i}]" for n, w in ports.items() for i in range(w)}
    pins = xdc_pins((built / f"{TOP}.xdc").read_text())
    assert set(pins) == bits
    assert len(set(pins.values())) == len(pins), "two ports on one pin"
    # a few pins against the U250 board (AMD's XDC / litex-boards platform)
    assert pins["clk300_p"] == "AY37" and pins["pcie_refclk_p"] == "AM11"
    assert pins["qsfp0_rx_p[0]"] == "N4" and pins["qsfp0_refclk_p"] == "K11"
    assert pins["pcie_tx_p[15]"] == "BF5"


def test_xdc_check_is_not_vacuous(built, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(built, bad)
    top = bad / f"{TOP}.sv"
    top.write_text(top.read_text().replace("    output wire [2:0]  user_led\n",
                                           "    output wire [3:0]  user_led\n"))
    ports = top_ports(top.read_text())
    bits = {n if w == 1 else f"{n}[{i}]" for n, w in ports.items() for i in range(w)}
    assert set(xdc_pins((bad / f"{TOP}.xdc").read_text())) != bits


def test_build_script_reads_the_core_file_list_and_constrains_timing(built):
    tcl = (built / "build.tcl").read_text()
    for f in gen.core_files():
        assert f"$root/{f}" in tcl
    assert "synth_design -top lvsnic_alveo_u250 -part $part" in tcl
    assert re.search(r"if \{\$wns < 0 \|\| \$whs < 0\} \{\s*error", tcl)
    # the DMA engine's RTL is read with the core
    assert "$root/hw/rtl/lvsnic_dma.sv" in tcl
    srcs = (built / "sources.f").read_text().split()
    assert srcs[:len(gen.core_files())] == gen.core_files()


def test_core_parameters_reach_the_instance(tmp_path):
    r = generate(tmp_path, "--flow-buckets-log2", "14", "--action-log2", "12", "--vip-count", "8")
    assert r.returncode == 0, r.stderr
    text = (tmp_path / f"{TOP}.sv").read_text()
    inst = text[text.index("lvsnic_core #("):]
    assert ".DATA_WIDTH        (512)" in inst and ".FLOW_BUCKETS_LOG2 (14)" in inst
    assert ".ACTION_LOG2       (12)" in inst and ".VIP_COUNT         (8)" in inst


@pytest.mark.parametrize("args,word", [(["--vip-count", "0"], "vip-count"),
                                       (["--flow-buckets-log2", "17"], "flow-buckets-log2"),
                                       (["--action-log2", "3"], "action-log2")])
def test_out_of_range_parameters_are_refused(tmp_path, args, word):
    r = generate(tmp_path / "o", *args)
    assert r.returncode == 1 and word in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert not (tmp_path / "o").exists()


def test_timestamp_step_is_exact_at_the_cmac_clock(built):
    """One core cycle at 322.265625 MHz is 3 + 17/165 ns; the generated
    counter's recurrence reaches exactly 10^9 ns after one second of cycles."""
    whole, num, den = gen.ns_step(gen.CORE_CLK_HZ)
    assert (whole, num, den) == (3, 17, 165)
    assert whole + Fraction(num, den) == Fraction(10**9, 322265625)
    # the RTL's recurrence, over one period of the fraction and a few more
    ns, frac = 0, 0
    for _ in range(165 * 4):
        if frac + num >= den:
            ns, frac = ns + whole + 1, frac + num - den
        else:
            ns, frac = ns + whole, frac + num
    assert ns == 4 * 512 and frac == 0
    text = (built / f"{TOP}.sv").read_text()
    for name, value in (("NS_WHOLE", 3), ("NS_NUM", 17), ("NS_DEN", 165)):
        assert re.search(rf"localparam integer {name}\s*= {value};", text), name
