#!/usr/bin/env python3
"""Generates the register-map artefacts from hw/regmap/lvsnic.rdl (SystemRDL):

  hw/rtl/lvsnic_regs.vh         Verilog localparams (addresses, fields, resets)
  fw-model/src/hw/regs_gen.rs   Rust constants
  host-driver/src/regmap.rs     Rust BAR0 layout (volatile-register blocks, bitflags fields)
  docs/registers.md             the register reference

`--check` regenerates in memory and fails (exit 1) if a committed file differs.
Needs systemrdl-compiler (installed into .venv by scripts/setup-hw.sh).
"""
import os
import sys

from systemrdl import RDLCompiler
from systemrdl.node import RegNode, RegfileNode, AddrmapNode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RDL = os.path.join(ROOT, "hw", "regmap", "lvsnic.rdl")
HEADER = "generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit"


def compile_map():
    rdlc = RDLCompiler()
    rdlc.compile_file(RDL)
    return rdlc.elaborate().top


def regs(top):
    """(name, address, node, array (base, stride, len) or None) for each register, in address order."""
    out = []
    for child in top.children():
        if isinstance(child, RegNode):
            if child.is_array:
                base = child.raw_absolute_address
                out.append((child.inst_name, base, child, (base, child.array_stride, child.array_dimensions[0])))
            else:
                out.append((child.inst_name, child.absolute_address, child, None))
        elif isinstance(child, RegfileNode):
            base = child.raw_absolute_address
            stride = child.array_stride if child.is_array else child.size
            n = child.array_dimensions[0] if child.is_array else 1
            out.append((child.inst_name, base, child, (base, stride, n)))
    return sorted(out, key=lambda r: r[1])


def fields(node):
    if isinstance(node, RegNode):
        return list(node.fields())
    return []


def access(f):
    sw = f.get_property("sw").name
    return {"rw": "RW", "r": "R", "w": "W"}.get(sw, sw.upper())


def reset_of(node):
    v = 0
    for f in fields(node):
        r = f.get_property("reset")
        if isinstance(r, int):
            v |= r << f.low
    return v


def gen_verilog(top):
    L = [f"// {HEADER}", "// Register addresses, fields and reset values of lvsnic_core (docs/registers.md).", ""]
    for name, addr, node, arr in regs(top):
        if arr:
            base, stride, n = arr
            L.append(f"localparam [15:0] LVSNIC_{name}_BASE = 16'h{base:04x};")
            L.append(f"localparam integer LVSNIC_{name}_STRIDE = {stride};")
            L.append(f"localparam integer LVSNIC_{name}_LEN = {n};")
            if isinstance(node, RegfileNode):
                for r in node.children():
                    if isinstance(r, RegNode):
                        L.append(f"localparam [15:0] LVSNIC_{name}_{r.inst_name}_OFFSET = 16'h{r.address_offset:04x};")
        else:
            L.append(f"localparam [15:0] LVSNIC_{name} = 16'h{addr:04x};")
            rv = reset_of(node)
            L.append(f"localparam [31:0] LVSNIC_{name}_RESET = 32'h{rv:08x};")
            for f in fields(node):
                fn = f.inst_name.upper()
                L.append(f"localparam integer LVSNIC_{name}_{fn}_LSB = {f.low};")
                L.append(f"localparam integer LVSNIC_{name}_{fn}_WIDTH = {f.width};")
    return "\n".join(L) + "\n"


def gen_rust_consts(top):
    L = [f"// {HEADER}", "//! Register addresses, fields and reset values (docs/registers.md).", ""]
    for name, addr, node, arr in regs(top):
        desc = (node.get_property("name") or name)
        if arr:
            base, stride, n = arr
            L.append(f"/// {desc}: base address of {n} × {stride}-byte entries.")
            L.append(f"pub const {name}_BASE: u32 = 0x{base:03X};")
            L.append(f"/// {desc}: bytes between entries.")
            L.append(f"pub const {name}_STRIDE: u32 = {stride};")
            L.append(f"/// {desc}: entries.")
            L.append(f"pub const {name}_LEN: u32 = {n};")
            if isinstance(node, RegfileNode):
                for r in node.children():
                    if isinstance(r, RegNode):
                        L.append(f"/// {desc}: offset of `{r.inst_name}` within an entry.")
                        L.append(f"pub const {name}_{r.inst_name}_OFFSET: u32 = 0x{r.address_offset:X};")
        else:
            L.append(f"/// {desc}.")
            L.append(f"pub const {name}: u32 = 0x{addr:03X};")
            L.append(f"/// {desc}: value after reset.")
            L.append(f"pub const {name}_RESET: u32 = 0x{reset_of(node):08X};")
            for f in fields(node):
                if f.width == 32:
                    continue
                fn = f.inst_name.upper()
                mask = ((1 << f.width) - 1) << f.low
                L.append(f"/// {desc}: field `{f.inst_name}` (bits {f.high}:{f.low}).")
                L.append(f"pub const {name}_{fn}_MASK: u32 = 0x{mask:08X};")
                L.append(f"/// {desc}: field `{f.inst_name}` shift.")
                L.append(f"pub const {name}_{fn}_SHIFT: u32 = {f.low};")
    return "\n".join(L) + "\n"


def gen_rust_mmio(top):
    L = [f"// {HEADER}",
         "//! BAR0 of an lvsnic card as a `#[repr(C)]` block of volatile registers",
         "//! (`volatile-register`), and the control bits as `bitflags`. Only the",
         "//! VFIO backend maps it over device memory; the layout is checked",
         "//! against the register map in tests.",
         "",
         "use volatile_register::{RO, RW, WO};",
         "",
         "bitflags::bitflags! {",
         "    /// `CTRL` register bits.",
         "    #[derive(Clone, Copy, Debug, PartialEq, Eq)]",
         "    pub struct Ctrl: u32 {"]
    for name, addr, node, arr in regs(top):
        if name == "CTRL":
            for f in fields(node):
                L.append(f"        /// {f.get_property('desc') or f.inst_name}")
                L.append(f"        const {f.inst_name.upper()} = 1 << {f.low};")
    L += ["    }", "}", "",
          "/// One 64-bit counter (`LO` latches `HI`).",
          "#[repr(C)]",
          "pub struct Counter {",
          "    pub lo: RO<u32>,",
          "    pub hi: RO<u32>,",
          "}", "",
          "/// BAR0 registers, in address order.",
          "#[repr(C)]",
          "pub struct Bar0 {"]
    pos = 0
    pad = 0
    for name, addr, node, arr in regs(top):
        if addr > pos:
            L.append(f"    _reserved{pad}: [u32; {(addr - pos) // 4}],")
            pad += 1
        if arr:
            base, stride, n = arr
            if isinstance(node, RegfileNode):
                L.append(f"    pub {name.lower()}: [Counter; {n}],")
            else:
                kind = {"RW": "RW", "R": "RO", "W": "WO"}[access(fields(node)[0])]
                L.append(f"    pub {name.lower()}: [{kind}<u32>; {n}],")
            pos = base + stride * n
        else:
            kind = {"RW": "RW", "R": "RO", "W": "WO"}[access(fields(node)[0])]
            L.append(f"    pub {name.lower()}: {kind}<u32>,")
            pos = addr + 4
    L += ["}", "",
          f"/// Size of the register block in bytes.",
          f"pub const BAR0_REGS_SIZE: usize = 0x{pos:X};",
          "",
          "#[cfg(test)]",
          "mod tests {",
          "    use super::*;",
          "    use lvsnic_model::hw::regs_gen as r;",
          "    use std::mem::{offset_of, size_of};",
          "",
          "    #[test]",
          "    fn layout_matches_the_register_map() {",
          "        assert_eq!(size_of::<Bar0>(), BAR0_REGS_SIZE);"]
    for name, addr, node, arr in regs(top):
        const = f"r::{name}_BASE" if arr else f"r::{name}"
        L.append(f"        assert_eq!(offset_of!(Bar0, {name.lower()}) as u32, {const});")
    L += ["    }", "}", ""]
    return "\n".join(L)


def gen_markdown(top):
    L = [f"<!-- {HEADER} -->", "# lvsnic registers", "",
         top.get_property("desc") or "", "",
         "Semantics: docs/hardware.md §6. Counter numbers: 0 frames received, 1 frames forwarded,",
         "2 frames to the host, 3 frames injected, 32 + *r* frames to the host with reason *r*.", "",
         "| address | name | access | reset | fields |", "|---|---|---|---|---|"]
    for name, addr, node, arr in regs(top):
        if arr:
            base, stride, n = arr
            label = f"0x{base:03X} + {stride}·*i*, *i* < {n}"
            if isinstance(node, RegfileNode):
                subs = ", ".join(f"`{r.inst_name}` +0x{r.address_offset:X}" for r in node.children() if isinstance(r, RegNode))
                L.append(f"| {label} | `{name}[i]` | R | — | {node.get_property('desc') or ''} ({subs}) |")
                continue
        else:
            label = f"0x{addr:03X}"
        fl = fields(node)
        acc = access(fl[0]) if fl else ""
        rs = f"0x{reset_of(node):08X}" if any(isinstance(f.get_property('reset'), int) for f in fl) else "—"
        fs = "; ".join(
            f"`{f.inst_name}` [{f.high}:{f.low}]" + (f": {f.get_property('desc')}" if f.get_property("desc") else "")
            for f in fl)
        d = node.get_property("desc")
        nm = f"`{name}[i]`" if arr else f"`{name}`"
        L.append(f"| {label} | {nm} | {acc} | {rs} | {node.get_property('name')}{(': ' + d) if d else ''} — {fs} |")
    return "\n".join(L) + "\n"


def main():
    top = compile_map()
    outputs = {
        os.path.join(ROOT, "hw", "rtl", "lvsnic_regs.vh"): gen_verilog(top),
        os.path.join(ROOT, "fw-model", "src", "hw", "regs_gen.rs"): gen_rust_consts(top),
        os.path.join(ROOT, "host-driver", "src", "regmap.rs"): gen_rust_mmio(top),
        os.path.join(ROOT, "docs", "registers.md"): gen_markdown(top),
    }
    check = "--check" in sys.argv
    stale = []
    for path, text in outputs.items():
        if check:
            try:
                cur = open(path).read()
            except FileNotFoundError:
                cur = None
            if cur != text:
                stale.append(os.path.relpath(path, ROOT))
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
    if stale:
        print("lvsnic: generated register-map files are stale (run scripts/gen-regmap.py): " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
