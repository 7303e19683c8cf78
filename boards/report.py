#!/usr/bin/env python3
"""Summary of a nextpnr --report JSON: utilisation of the main resources and
Fmax per clock against its constraint. Exit 1 if a resource is used beyond
what the device has, a clock misses its constraint, or a clock named with
--expect (the clock's net name, with its frequency in MHz) is missing or
constrained lower. With --pack-only (a report of nextpnr --pack-only, whose
cell counts are the placed design's): utilisation only.
With --paths, also the critical path of each clock (pair) nextpnr reports:
source, destination and the nets along it with their delays."""
import argparse
import json
import sys

RESOURCES = [
    ("TRELLIS_COMB", "LUT4 (+carry) cells"),
    ("TRELLIS_FF", "flip-flops"),
    ("TRELLIS_RAMW", "LUT-RAM write ports"),
    ("DP16KD", "block RAMs (18 kbit)"),
    ("MULT18X18D", "multipliers"),
    ("EHXPLLL", "PLLs"),
    ("TRELLIS_IO", "I/O"),
]


def _pin(p):
    return f"{p.get('cell', '?')}.{p.get('port', '?')}" if isinstance(p, dict) else str(p)


def print_paths(paths):
    """Critical paths of nextpnr's report: one per (from clock, to clock)."""
    for cp in paths:
        steps = cp.get("path", [])
        total = sum(s.get("delay", 0.0) for s in steps)
        print(f"critical path {cp.get('from', '?')} -> {cp.get('to', '?')}: {total:.2f} ns, "
              f"{sum(1 for s in steps if s.get('type') == 'logic')} logic levels")
        if steps:
            print(f"    from {_pin(steps[0].get('from'))}")
        t = 0.0
        for s in steps:
            t += s.get("delay", 0.0)
            kind = s.get("type", "?")
            where = s.get("net", "") if kind == "routing" else _pin(s.get("to"))
            print(f"    {t:7.2f} ns  {kind:<9} {where}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("report")
    ap.add_argument("--expect", action="append", default=[],
                    help="NAME=MHZ: the clock of net NAME must be constrained to >= MHZ")
    ap.add_argument("--paths", action="store_true",
                    help="print the critical path of each clock (pair) as well")
    ap.add_argument("--pack-only", action="store_true",
                    help="a report of nextpnr --pack-only: utilisation only (no clocks to check)")
    a = ap.parse_args()
    try:
        with open(a.report) as f:
            r = json.load(f)
        expects = [(sub, float(mhz)) for sub, mhz in (e.split("=") for e in a.expect)]
    except (OSError, ValueError) as e:
        print(f"report.py: cannot check {a.report}: {e}", file=sys.stderr)
        return 2
    ok = True
    print("utilisation:")
    util = r.get("utilization", {})
    for key, what in RESOURCES:
        u = util.get(key)
        if u:
            fits = u["used"] <= u["available"]
            ok &= fits
            print(f"  {key:<13} {u['used']:>6} / {u['available']:<6} {100.0 * u['used'] / u['available']:5.1f} %  {what}"
                  + ("" if fits else "  DOES NOT FIT"))
    if a.pack_only:
        print("fit:", "yes" if ok else "NO")
        return 0 if ok else 1
    print("clocks (Fmax from place and route):")
    fmax = r.get("fmax", {})
    for name, v in sorted(fmax.items()):
        met = v["achieved"] >= v["constraint"]
        ok &= met
        print(f"  {name:<28} {v['achieved']:8.2f} MHz  (constraint {v['constraint']:.2f} MHz)  {'met' if met else 'FAILED'}")
    for sub, mhz in expects:
        # nextpnr names a clock after its net, e.g. "$glbnet$crg_clkout":
        # NAME must be one of the "$"-separated parts (crg_clkout does not
        # match crg_clkout_1).
        hits = [v for n, v in fmax.items() if sub in n.split("$")]
        if not hits:
            print(f"  no clock matching '{sub}' in the report: FAILED")
            ok = False
        for v in hits:
            if v["constraint"] + 1e-6 < mhz:
                print(f"  clock '{sub}' constrained to {v['constraint']:.2f} MHz < {mhz:g} MHz: FAILED")
                ok = False
    if a.paths:
        print_paths(r.get("critical_paths", []))
    print("timing:", "met" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (KeyError, TypeError, AttributeError) as e:
        # a JSON file that is not a nextpnr report (a field missing or of
        # another type): an error, not a pass
        print(f"report.py: not a nextpnr report ({type(e).__name__}: {e})", file=sys.stderr)
        sys.exit(2)
