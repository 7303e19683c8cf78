#!/usr/bin/env python3
"""Logic depth between registers in a Yosys-mapped Xilinx netlist (JSON from
``write_json`` after ``synth_xilinx -flatten``).

Method: every cell is a node; timing start/end points are the sequential
primitives (flip-flops FD*, block RAM RAMB*, UltraRAM, SRL shift registers,
DSPs) and the module ports. A distributed-RAM cell (RAM32M/RAM64M/...) is a
start/end point for its write side and a one-LUT combinational node from its
read address to its data outputs (asynchronous read). For every path from a
start point to an end point through combinational cells the script counts

* ``lut``: LUT1..LUT6 and LUT-RAM reads (the "LUT levels"),
* ``mux``: MUXF7/MUXF8/MUXF9 (dedicated wide-mux levels),
* ``carry``: CARRY4/CARRY8 cells (each is one 8-bit slice of a carry
  chain; a 64-bit adder is 8 chained cells),

and reports the maximum LUT-level count, the path that achieves it, and the
maximum over all paths of the total cell count (comparable to Yosys
``ltp -noff``, which counts every cell). A histogram of per-endpoint LUT
depth shows how many register inputs sit at each depth.

Usage: depth.py netlist.json [top]
"""

import json
import sys
from collections import Counter

SEQ_PREFIX = ("FD", "RAMB", "URAM", "SRL", "DSP48", "FIFO")
LUTRAM_PREFIX = ("RAM32M", "RAM64M", "RAM32X", "RAM64X", "RAM128X", "RAM256X", "RAM512X")


def kind(t):
    if t.startswith(SEQ_PREFIX):
        return "seq"
    if t.startswith(LUTRAM_PREFIX):
        return "lutram"
    if t.startswith("LUT"):
        return "lut"
    if t.startswith("MUXF"):
        return "mux"
    if t.startswith("CARRY"):
        return "carry"
    if t in ("INV",):
        return "lut"
    return "other"


def is_read_addr(port):
    return port.startswith("ADDR") or port.startswith("DPRA") or (port.startswith("A") and port[1:].isdigit())


DEEP = 7


BITNAME = {}


def src_of(c):
    """A readable name for a cell: the public net its first output drives
    (register name), else its source location."""
    for p, bits in c["connections"].items():
        if c["port_directions"].get(p) == "output":
            for b in bits:
                if isinstance(b, int) and b in BITNAME:
                    return BITNAME[b]
    s = c.get("attributes", {}).get("src", "?")
    return s.split("|")[0].split("/")[-1]


def main():
    nl = None
    path = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("-") and sys.argv[i - 1] != "-e"][0]
    nl = json.load(open(path))
    mods = nl["modules"]
    args = [a for i, a in enumerate(sys.argv[1:], 1) if not a.startswith("-") and sys.argv[i - 1] != "-e"]
    path = args[0]
    top = args[1] if len(args) > 1 else next(
        n for n, m in mods.items() if m.get("attributes", {}).get("top") in (1, "00000000000000000000000000000001"))
    m = mods[top]
    cells = m["cells"]
    for n, nn in m["netnames"].items():
        if nn.get("hide_name", 0):
            continue
        for i, b in enumerate(nn["bits"]):
            if isinstance(b, int) and b not in BITNAME:
                BITNAME[b] = f"{n}[{i}]" if len(nn["bits"]) > 1 else n

    driver = {}      # bit -> cell name (combinational or sequential output)
    for cn, c in cells.items():
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) == "output":
                for b in bits:
                    if isinstance(b, int):
                        driver[b] = cn

    weight = {}
    comb_inputs = {}
    for cn, c in cells.items():
        k = kind(c["type"])
        if k == "seq":
            continue
        ins = []
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input":
                continue
            if k == "lutram" and not is_read_addr(p):
                continue
            ins += [b for b in bits if isinstance(b, int)]
        comb_inputs[cn] = ins
        if k in ("lut", "lutram"):
            weight[cn] = (1, 0, 0)
        elif k == "mux":
            weight[cn] = (0, 1, 0)
        elif k == "carry":
            weight[cn] = (0, 0, 1)
        else:
            weight[cn] = (0, 0, 0)

    sys.setrecursionlimit(1000000)
    memo_lut = {}    # cell -> (max lut depth ending at its output, predecessor)
    memo_all = {}

    def arrive(cn):
        """Max (lut, total) depth at the output of combinational cell cn."""
        if cn in memo_lut:
            return memo_lut[cn], memo_all[cn]
        memo_lut[cn] = (0, None)       # breaks loops, if any
        memo_all[cn] = 0
        best, pred, best_all = 0, None, 0
        for b in comb_inputs[cn]:
            d = driver.get(b)
            if d is None or d not in comb_inputs:
                continue
            (l, _), a = arrive(d)
            if l > best:
                best, pred = l, d
            best_all = max(best_all, a)
        w = weight[cn]
        memo_lut[cn] = (best + w[0], pred)
        memo_all[cn] = best_all + sum(w)
        return memo_lut[cn], memo_all[cn]

    # endpoints: inputs of sequential cells (and write side of LUT-RAMs)
    hist = Counter()
    deep_src = Counter()
    worst_by_end = {}
    worst = (0, None, None)
    worst_all = 0
    counts = Counter()
    for cn, c in cells.items():
        k = kind(c["type"])
        counts[c["type"]] += 1
        if k not in ("seq", "lutram"):
            continue
        ep = 0
        ep_driver = [None]
        for p, bits in c["connections"].items():
            if c["port_directions"].get(p) != "input":
                continue
            if k == "lutram" and is_read_addr(p):
                pass   # the write address of a LUT-RAM is also an endpoint
            for b in bits:
                d = driver.get(b) if isinstance(b, int) else None
                if d is None or d not in comb_inputs:
                    continue
                (l, _), a = arrive(d)
                if l > ep:
                    ep = l
                    ep_driver[0] = d
                worst_all = max(worst_all, a)
                if l > worst[0]:
                    worst = (l, d, f"{cn}.{p}")
        hist[ep] += 1
        if ep >= DEEP:
            deep_src[(ep, src_of(c))] += 1
            if ep > worst_by_end.get(src_of(c), (0,))[0]:
                worst_by_end[src_of(c)] = (ep, ep_driver[0])
    # output ports as endpoints
    for pn, p in m["ports"].items():
        if p["direction"] != "output":
            continue
        for b in p["bits"]:
            d = driver.get(b) if isinstance(b, int) else None
            if d is not None and d in comb_inputs:
                (l, _), a = arrive(d)
                worst_all = max(worst_all, a)
                if l > worst[0]:
                    worst = (l, d, f"port {pn}")

    # walk the worst LUT path back
    chain = []
    cn = worst[1]
    while cn is not None:
        chain.append(cn)
        cn = memo_lut[cn][1]
    chain.reverse()
    start = "?"
    if chain:
        c0 = cells[chain[0]]
        for p, bits in c0["connections"].items():
            if c0["port_directions"].get(p) == "input":
                for b in bits:
                    d = driver.get(b) if isinstance(b, int) else None
                    if d is not None and d not in comb_inputs:
                        start = f"{d} ({cells[d]['type']}, {src_of(cells[d])})"
                        break

    print(f"  logic depth (depth.py): max LUT levels between registers = {worst[0]}, "
          f"max cells on a path (LUT+MUXF+CARRY) = {worst_all}")
    endcell = worst[2].split(".")[0] if worst[2] else None
    print(f"  deepest LUT path: {start} -> {len(chain)} cells -> {worst[2]}"
          f" [{src_of(cells[endcell]) if endcell in cells else ''}]")
    for cn in chain:
        print(f"      {cells[cn]['type']:8s} {cn[:110]}")
    print("  register inputs by LUT depth: " + ", ".join(f"{k}:{hist[k]}" for k in sorted(hist)))
    def start_of(d):
        while memo_lut[d][1] is not None:
            d = memo_lut[d][1]
        c0 = cells[d]
        for p, bits in c0["connections"].items():
            if c0["port_directions"].get(p) == "input":
                for b in bits:
                    dd = driver.get(b) if isinstance(b, int) else None
                    if dd is not None and dd not in comb_inputs:
                        return src_of(cells[dd])
        return "?"
    if "-e" in sys.argv:
        pat = sys.argv[sys.argv.index("-e") + 1]
        for e, (d, drv) in worst_by_end.items():
            if pat in e:
                print(f"  path to {e} ({d} LUT levels):")
                ch = []
                x = drv
                while x is not None:
                    ch.append(x)
                    x = memo_lut[x][1]
                for x in reversed(ch):
                    c = cells[x]
                    ins = sorted({BITNAME.get(b, '?') for p, bits in c['connections'].items()
                                  if c['port_directions'].get(p) == 'input' for b in bits if isinstance(b, int)})
                    print(f"      {c['type']:8s} in: {', '.join(ins)[:150]}")
                break
    if "-v" in sys.argv:
        print("  worst path per endpoint source (LUT levels: start -> end):")
        for e, (d, drv) in sorted(worst_by_end.items(), key=lambda x: -x[1][0]):
            print(f"      {d:3d}  {start_of(drv)} -> {e}")
    if deep_src and "-v" in sys.argv:
        print(f"  endpoints with >= {DEEP} LUT levels (depth, source):")
        for (d, s), n in sorted(deep_src.items(), key=lambda x: (-x[0][0], x[0][1])):
            print(f"      {d:3d} {n:5d}  {s}")


if __name__ == "__main__":
    main()
