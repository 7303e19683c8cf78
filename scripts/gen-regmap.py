#!/usr/bin/env python3
"""Generates the register-map artefacts from hw/regmap/lvsnic.rdl (SystemRDL):

  hw/rtl/lvsnic_regs.vh         Verilog localparams (addresses, fields, resets, codes, layouts)
  hw/regmap/src/regs.rs         Rust constants of the core's registers (crate lvsnic-regmap)
  hw/regmap/src/dma.rs          Rust constants of the DMA engine's registers
  hw/regmap/src/codes.rs        Rust enums of the shared codes, in-band layouts
  hw/tb/unit/lvsnic_regs.py     Python constants and code enums (cocotb tests)
  docs/registers.md             the register and code reference

The shared codes are the SystemRDL enums that fields `encode`: found by
walking the fields of every map in LAYOUTS, in declaration order.

`--check` regenerates in memory and fails (exit 1) if a committed file differs.
Needs systemrdl-compiler (installed into .venv by scripts/setup-hw.sh).
"""
import os
import sys

from systemrdl import RDLCompiler
from systemrdl.node import FieldNode, RegNode, RegfileNode

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RDL = os.path.join(ROOT, "hw", "regmap", "lvsnic.rdl")
HEADER = "generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit"


# The maps elaborated: BAR0 (the core at 0, the DMA engine), then the
# in-band layouts.
BAR0 = "lvsnic_bar0"
LAYOUTS = ("lvsnic_host_meta", "lvsnic_flow_entry", "lvsnic_flow6_entry", "lvsnic_action_entry")


class Map:
    """The elaborated maps: `core`, `dma` (nodes inside BAR0) and `layouts`
    (name -> top node)."""

    def __init__(self):
        rdlc = RDLCompiler()
        rdlc.compile_file(RDL)
        bar0 = rdlc.elaborate(top_def_name=BAR0).top
        self.core = bar0.get_child_by_name("core")
        self.dma = bar0.get_child_by_name("dma")
        self.layouts = {n: rdlc.elaborate(top_def_name=n).top for n in LAYOUTS}

    def enums(self):
        """Every enum a field encodes: [(enum class, the fields)] in order of first use."""
        seen = {}
        for node in [self.core] + list(self.layouts.values()):
            for f in node.descendants():
                if isinstance(f, FieldNode) and f.get_property("encode") is not None:
                    seen.setdefault(f.get_property("encode"), []).append(f)
        return [(e, Fields(fs)) for e, fs in seen.items()]

    def layout_fields(self, name):
        """(field, absolute bit position) of a layout, in bit order; fields named
        `rsvd` only give the layout its size (reserved, 0)."""
        top = self.layouts[name]
        out = [(f, 8 * r.address_offset + f.low) for r in top.children() for f in r.fields()
               if f.inst_name != "rsvd"]
        return sorted(out, key=lambda x: x[1])


class Fields(list):
    """The fields that encode one enum (all of one width)."""

    @property
    def width(self):
        return self[0].width

    def label(self):
        """`FLOW_CMD.cmd`, `ACT_CMD.cmd`; `lvsnic_host_meta.reason` for a layout."""
        def one(f):
            top = f.parent.parent
            owner = top.inst_name if top.inst_name in LAYOUTS else f.parent.inst_name
            return f"`{owner}.{f.inst_name}`"
        return ", ".join(one(f) for f in self)

    def desc(self):
        return self[0].get_property("desc") or f"`{self[0].inst_name}` codes."


def enum_prefix(e):
    """lvsnic_action_op -> ACTION_OP"""
    return e.type_name.removeprefix("lvsnic_").upper()


def enum_rust_name(e):
    """lvsnic_action_op -> ActionOp"""
    return "".join(w.capitalize() for w in e.type_name.removeprefix("lvsnic_").split("_"))


def camel(name):
    """L2_OTHER_HOST -> L2OtherHost"""
    return "".join(w.capitalize() for w in name.split("_"))


def enum_bits(e):
    """Bits needed for the largest value."""
    return max(1, max(m.value for m in e).bit_length())


def dense(e):
    """The values are 0..n-1."""
    return sorted(m.value for m in e) == list(range(len(e)))


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


def gen_verilog(m):
    L = [f"// {HEADER}", "// Register addresses, fields and reset values of lvsnic_core (docs/registers.md).", ""]
    for name, addr, node, arr in regs(m.core):
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
    return "\n".join(L + gen_verilog_codes(m)) + "\n"


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
            L += rust_field_consts(f"{name}_", desc, node)
    return "\n".join(L) + "\n"


def gen_verilog_codes(m):
    """Localparams of the codes and the in-band layouts."""
    L = []
    for e, f in m.enums():
        p, w = enum_prefix(e), enum_bits(e)
        L += ["", f"// {e.type_name}: values of {f.label()}."]
        L.append(f"localparam integer LVSNIC_{p}_BITS = {w};")
        if dense(e):
            L.append(f"localparam integer LVSNIC_{p}_COUNT = {len(e)};")
        for c in e:
            L.append(f"localparam [{w - 1}:0] LVSNIC_{p}_{c.name} = {w}'d{c.value};  // {c.rdl_desc}")
    for name, title, consts in layout_consts(m):
        L += ["", f"// {name}: {title}, bit positions."]
        L += [f"localparam integer LVSNIC_{c} = {v};" for c, v in consts]
    return L


def layout_consts(m):
    """[(layout, its title, [(NAME_LSB or NAME_WIDTH, value)])] of the in-band layouts."""
    out = []
    for name in LAYOUTS:
        p = name.removeprefix("lvsnic_").upper()
        consts = []
        for f, lsb in m.layout_fields(name):
            fn = f.inst_name.upper()
            consts += [(f"{p}_{fn}_LSB", lsb), (f"{p}_{fn}_WIDTH", f.width)]
        consts.append((f"{p}_WORDS", m.layouts[name].size // 4))
        out.append((name, m.layouts[name].get_property("name"), consts))
    return out


def rust_field_consts(prefix, desc, node):
    """MASK/SHIFT constants of a register's fields narrower than 32 bits."""
    L = []
    for f in fields(node):
        if f.width == 32:
            continue
        fn = f.inst_name.upper()
        mask = ((1 << f.width) - 1) << f.low
        L.append(f"/// {desc}: field `{f.inst_name}` (bits {f.high}:{f.low}).")
        L.append(f"pub const {prefix}{fn}_MASK: u32 = 0x{mask:08X};")
        L.append(f"/// {desc}: field `{f.inst_name}` shift.")
        L.append(f"pub const {prefix}{fn}_SHIFT: u32 = {f.low};")
    return L


def window(node):
    """The BAR0 window decoded to a block: its registers rounded up to a power of two."""
    return 1 << (node.size - 1).bit_length()


def gen_rust_dma(dma):
    L = [f"// {HEADER}",
         f"//! {dma.get_property('name')}: {dma.get_property('desc')} Registers in BAR0",
         "//! (docs/hardware.md §8.2); unlisted addresses in the window read 0 and ignore writes.", "",
         "/// First byte address of the DMA engine's registers in BAR0.",
         f"pub const DMA_BASE: u32 = 0x{dma.absolute_address:03X};",
         "/// One past the last byte address of the DMA engine's window.",
         f"pub const DMA_END: u32 = 0x{dma.absolute_address + window(dma):03X};"]
    queue = None
    for child in dma.children():
        L.append(f"/// {child.get_property('name')}.")
        L.append(f"pub const {child.inst_name}: u32 = 0x{child.absolute_address:03X};")
        if isinstance(child, RegNode):
            L += rust_field_consts(f"{child.inst_name}_", child.get_property("name"), child)
        else:
            queue = child
    L += ["", f"/// Offsets inside a queue register block (add a queue's address).", "pub mod q {"]
    for r in queue.children():
        name = r.get_property("name")
        d = r.get_property("desc")
        L.append(f"    /// {name}{'. ' + d if d else '.'}")
        L.append(f"    pub const {r.inst_name}: u32 = 0x{r.address_offset:02X};")
        L += ["    " + x for x in rust_field_consts(f"{r.inst_name}_", f"`{r.inst_name}`", r)]
    L += ["}", ""]
    return "\n".join(L)


def gen_rust_codes(m):
    L = [f"// {HEADER}",
         "//! The codes shared by the RTL, the model, the simulator harness and the",
         "//! testbenches, and the bit positions of the in-band data that carries them.", ""]
    for e, f in m.enums():
        n, w = enum_rust_name(e), enum_bits(e)
        L += [f"/// `{e.type_name}`: {f.desc()} Values of {f.label()}.",
              "#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]",
              "#[repr(u8)]", f"pub enum {n} {{"]
        for c in e:
            L += [f"    /// {c.rdl_desc}", f"    {camel(c.name)} = {c.value},"]
        L += ["}", "", f"impl {n} {{"]
        if dense(e):
            L += ["    /// Number of codes (their values are 0 to `COUNT` - 1).",
                  f"    pub const COUNT: usize = {len(e)};"]
        L += ["    /// The code of value `v`, if there is one.",
              f"    pub const fn from_u8(v: u8) -> Option<{n}> {{",
              "        match v {"]
        L += [f"            {c.value} => Some({n}::{camel(c.name)})," for c in e]
        L += ["            _ => None,", "        }", "    }"]
        if len(e) == 1 << f.width:
            last = list(e)[-1]
            L += [f"    /// The code in the low {f.width} bits of `v` (every value of the field is a code).",
                  f"    pub const fn from_field(v: u32) -> {n} {{",
                  f"        match v & 0x{(1 << f.width) - 1:X} {{"]
            L += [f"            {c.value} => {n}::{camel(c.name)}," for c in e if c is not last]
            L += [f"            _ => {n}::{camel(last.name)},", "        }", "    }"]
        L += ["    /// The code's name in lower case.",
              "    pub const fn name(self) -> &'static str {",
              "        match self {"]
        L += [f'            {n}::{camel(c.name)} => "{c.name.lower()}",' for c in e]
        L += ["        }", "    }", "}", ""]
    for name in LAYOUTS:
        top = m.layouts[name]
        mod = name.removeprefix("lvsnic_")
        nwords = top.size // 4
        L += [f"/// `{name}`: {top.get_property('name')}, bit positions (bit 0 = bit 0 of 32-bit word 0).",
              f"pub mod {mod} {{"]
        defined = [0] * nwords
        for f, lsb in m.layout_fields(name):
            fn = f.inst_name.upper()
            L += [f"    /// `{f.inst_name}`: {f.get_property('desc')}",
                  f"    pub const {fn}_LSB: u32 = {lsb};",
                  f"    /// `{f.inst_name}`: width in bits.",
                  f"    pub const {fn}_WIDTH: u32 = {f.width};"]
            for b in range(lsb, lsb + f.width):
                defined[b // 32] |= 1 << (b % 32)
        L += ["    /// 32-bit words.",
              f"    pub const WORDS: usize = {nwords};",
              "    /// The defined bits of each word; the others are reserved, 0.",
              f"    pub const DEFINED: [u32; WORDS] = [{', '.join(f'0x{d:08X}' for d in defined)}];",
              "}", ""]
    return "\n".join(L)


def gen_python(m):
    L = [f'"""{HEADER}.', "",
         "Register addresses of lvsnic_core, the shared codes and the bit positions of",
         'the in-band layouts (docs/registers.md), for the cocotb tests."""', "",
         "import enum", ""]
    for name, addr, node, arr in regs(m.core):
        if arr:
            base, stride, n = arr
            L.append(f"{name}_BASE = 0x{base:03X}")
            L.append(f"{name}_STRIDE = {stride}")
            L.append(f"{name}_LEN = {n}")
            if isinstance(node, RegfileNode):
                for r in node.children():
                    if isinstance(r, RegNode):
                        L.append(f"{name}_{r.inst_name}_OFFSET = 0x{r.address_offset:X}")
        else:
            L.append(f"{name} = 0x{addr:03X}")
            L.append(f"{name}_RESET = 0x{reset_of(node):08X}")
            for f in fields(node):
                if f.width < 32:
                    L.append(f"{name}_{f.inst_name.upper()}_MASK = 0x{((1 << f.width) - 1) << f.low:08X}")
                    L.append(f"{name}_{f.inst_name.upper()}_SHIFT = {f.low}")
    for e, f in m.enums():
        L += ["", "", f"class {enum_rust_name(e)}(enum.IntEnum):",
              f'    """`{e.type_name}`: the values of {f.label()}."""', ""]
        for c in e:
            L.append(f"    {c.name} = {c.value}  # {c.rdl_desc}")
    L.append("")
    for name, title, consts in layout_consts(m):
        L += ["", f"# {name}: {title}, bit positions"]
        L += [f"{c} = {v}" for c, v in consts]
    return "\n".join(L) + "\n"


def md_reg_rows(block, rel=False):
    """Table rows (address, name, access, reset, fields) of a block's registers
    (`rel`: offsets from the block's address)."""
    L = []
    for name, addr, node, arr in regs(block):
        if rel:
            addr -= block.absolute_address
        if isinstance(node, RegfileNode) and not node.is_array:
            L.append(f"| 0x{addr:03X} | `{name}` | | — | {node.get_property('name')}: a queue block, below |")
            continue
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
        fs = "; ".join(f"`{f.inst_name}` [{f.high}:{f.low}]" + md_field_note(f) for f in fl)
        d = node.get_property("desc")
        nm = f"`{name}[i]`" if arr else f"`{name}`"
        L.append(f"| {label} | {nm} | {acc} | {rs} | {node.get_property('name')}{(': ' + d) if d else ''} — {fs} |")
    return L


def md_field_note(f):
    d = f.get_property("desc")
    e = f.get_property("encode")
    note = f": {d}" if d else ""
    if e is not None:
        note += f" (values: `{e.type_name}`)"
    return note


HEAD = ["| address | name | access | reset | fields |", "|---|---|---|---|---|"]


def gen_markdown(m):
    top = m.core
    L = [f"<!-- {HEADER} -->", "# lvsnic registers", "",
         top.get_property("desc") or "", "",
         "Semantics: docs/hardware.md §6. Counter numbers: 0 frames received, 1 frames forwarded,",
         "2 frames to the host, 3 frames injected, 32 + *r* frames to the host with reason *r*.", ""]
    L += HEAD + md_reg_rows(top)
    L += ["", "## Codes", "",
          "Shared by the RTL (`LVSNIC_<CODE>_<NAME>` in hw/rtl/lvsnic_regs.vh), Rust (crate",
          "lvsnic-regmap) and the cocotb tests (hw/tb/unit/lvsnic_regs.py)."]
    for e, f in m.enums():
        L += ["", f"### `{e.type_name}`", "", f"Values of {f.label()}.", "",
              "| value | name | meaning |", "|---|---|---|"]
        L += [f"| {c.value} | `{c.name}` | {c.rdl_desc} |" for c in e]
    for name in LAYOUTS:
        top = m.layouts[name]
        L += ["", f"## {top.get_property('name')} (`{name}`)", "",
              "Bit positions in 32-bit words (bit 32*i* + *b* is bit *b* of word *i*); other bits reserved, 0.", "",
              "| bits | field | meaning |", "|---|---|---|"]
        L += [f"| {lsb + f.width - 1}:{lsb} | `{f.inst_name}` | {md_field_note(f).removeprefix(': ')} |"
              for f, lsb in m.layout_fields(name)]
    dma = m.dma
    L += ["", f"## {dma.get_property('name')} (BAR0 0x{dma.absolute_address:03X}–0x{dma.absolute_address + window(dma) - 1:03X})", "",
          f"{dma.get_property('desc')} Semantics: docs/hardware.md §8.2. Unlisted addresses read 0 and ignore writes.", ""]
    L += HEAD + md_reg_rows(dma)
    queue = [c for c in dma.children() if isinstance(c, RegfileNode)][0]
    L += ["", f"Queue block (offsets from `RXQ` or `TXQ`): {queue.get_property('desc')}", ""]
    L += [h.replace("address", "offset") for h in HEAD] + md_reg_rows(queue, rel=True)
    return "\n".join(L) + "\n"


def generated():
    """{path relative to the repository: text} of every generated file."""
    m = Map()
    return {
        "hw/rtl/lvsnic_regs.vh": gen_verilog(m),
        "hw/regmap/src/regs.rs": gen_rust_consts(m.core),
        "hw/regmap/src/dma.rs": gen_rust_dma(m.dma),
        "hw/regmap/src/codes.rs": gen_rust_codes(m),
        "hw/tb/unit/lvsnic_regs.py": gen_python(m),
        "docs/registers.md": gen_markdown(m),
    }


def main():
    check = "--check" in sys.argv
    stale = []
    for rel, text in generated().items():
        path = os.path.join(ROOT, rel)
        if check:
            try:
                with open(path) as fh:
                    cur = fh.read()
            except FileNotFoundError:
                cur = None
            if cur != text:
                stale.append(rel)
        else:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as fh:
                fh.write(text)
    if stale:
        print("lvsnic: generated register-map files are stale (run scripts/gen-regmap.py): " + ", ".join(stale), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
