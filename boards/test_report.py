"""boards/report.py is the gate of the ECP5 build: the build fails when it
exits non-zero. These tests feed it nextpnr --report JSON in the shape
nextpnr-ecp5 writes (utilization, fmax, critical_paths) and check that it
passes a design that fits and meets timing and fails every way the build
must fail: a clock under its constraint, a resource over capacity, an
expected clock missing or constrained below its target, a report that
cannot be read."""
import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPORT_PY = Path(__file__).with_name("report.py")

# The clocks and resources of the Versa build (numbers of a real run).
GOOD = {
    "utilization": {
        "TRELLIS_COMB": {"used": 32591, "available": 43848},
        "TRELLIS_FF": {"used": 24515, "available": 43848},
        "DP16KD": {"used": 80, "available": 108},
        "EHXPLLL": {"used": 1, "available": 4},
    },
    "fmax": {
        "$glbnet$crg_clkout0": {"achieved": 77.92, "constraint": 60.0024},
        "$glbnet$crg_clkout1": {"achieved": 72.35, "constraint": 40.0},
        "$glbnet$eth_clocks0_rx$TRELLIS_IO_IN": {"achieved": 154.39, "constraint": 125.0},
        "$glbnet$eth_clocks1_rx$TRELLIS_IO_IN": {"achieved": 180.21, "constraint": 125.0},
    },
    "critical_paths": [{
        "from": "posedge $glbnet$crg_clkout0", "to": "posedge $glbnet$crg_clkout0",
        "path": [
            {"type": "clk-to-q", "delay": 0.31, "from": {"cell": "a", "port": "CLK"}, "to": {"cell": "a", "port": "Q"}},
            {"type": "routing", "delay": 1.29, "net": "n0", "from": {"cell": "a", "port": "Q"}, "to": {"cell": "b", "port": "A"}},
            {"type": "logic", "delay": 0.27, "from": {"cell": "b", "port": "A"}, "to": {"cell": "b", "port": "Z"}},
        ],
    }],
}
EXPECT = ["--expect", "crg_clkout0=60", "--expect", "crg_clkout1=40",
          "--expect", "eth_clocks0_rx=125", "--expect", "eth_clocks1_rx=125"]


def run(tmp_path, report, *args):
    p = tmp_path / "report.json"
    p.write_text(report if isinstance(report, str) else json.dumps(report))
    r = subprocess.run([sys.executable, str(REPORT_PY), str(p), *args],
                       capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_fits_and_meets_timing(tmp_path):
    rc, out = run(tmp_path, GOOD, *EXPECT, "--paths")
    assert rc == 0, out
    assert "timing: met" in out
    # the critical path's total is the sum of its steps: 0.31 + 1.29 + 0.27
    assert "1.87 ns, 1 logic levels" in out


def test_clock_under_constraint_fails(tmp_path):
    r = copy.deepcopy(GOOD)
    r["fmax"]["$glbnet$eth_clocks0_rx$TRELLIS_IO_IN"]["achieved"] = 124.9
    rc, out = run(tmp_path, r, *EXPECT)
    assert rc == 1, out
    assert "FAILED" in out and "timing: FAILED" in out


def test_over_capacity_fails_also_in_pack_only(tmp_path):
    r = copy.deepcopy(GOOD)
    r["utilization"]["DP16KD"]["used"] = 109
    rc, out = run(tmp_path, r, *EXPECT)
    assert rc == 1 and "DOES NOT FIT" in out, out
    rc, out = run(tmp_path, r, "--pack-only")
    assert rc == 1 and "fit: NO" in out, out
    rc, out = run(tmp_path, GOOD, "--pack-only")
    assert rc == 0 and "fit: yes" in out, out


def test_expected_clock_missing_fails(tmp_path):
    # e.g. LiteX named the PLL output differently and nextpnr never timed it
    r = copy.deepcopy(GOOD)
    del r["fmax"]["$glbnet$eth_clocks1_rx$TRELLIS_IO_IN"]
    rc, out = run(tmp_path, r, *EXPECT)
    assert rc == 1 and "no clock matching 'eth_clocks1_rx'" in out, out


def test_clock_constrained_below_target_fails(tmp_path):
    # met, but only because the constraint was lowered: not accepted
    r = copy.deepcopy(GOOD)
    r["fmax"]["$glbnet$eth_clocks0_rx$TRELLIS_IO_IN"] = {"achieved": 120.0, "constraint": 100.0}
    rc, out = run(tmp_path, r, *EXPECT)
    assert rc == 1 and "constrained to 100.00 MHz < 125 MHz" in out, out


def test_expect_matches_whole_net_name_parts(tmp_path):
    # "crg_clkout" must not be satisfied by "crg_clkout0"
    rc, out = run(tmp_path, GOOD, "--expect", "crg_clkout=60")
    assert rc == 1 and "no clock matching 'crg_clkout'" in out, out


@pytest.mark.parametrize("bad", ["", "{not json", "[1, 2"])
def test_unreadable_report_is_an_error(tmp_path, bad):
    rc, out = run(tmp_path, bad, *EXPECT)
    assert rc == 2 and "cannot check" in out and "Traceback" not in out, out


def test_json_that_is_not_a_report_is_an_error(tmp_path):
    r = copy.deepcopy(GOOD)
    del r["fmax"]["$glbnet$crg_clkout0"]["achieved"]
    for bad in (r, [1, 2], {"fmax": [1]}):
        rc, out = run(tmp_path, bad, *EXPECT)
        assert rc == 2 and "not a nextpnr report" in out and "Traceback" not in out, out


def test_malformed_expect_is_an_error(tmp_path):
    rc, out = run(tmp_path, GOOD, "--expect", "crg_clkout0")
    assert rc == 2 and "Traceback" not in out, out
