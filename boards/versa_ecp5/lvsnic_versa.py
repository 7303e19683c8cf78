#!/usr/bin/env python3
#
# lvsnic on the Lattice ECP5 Versa (LFE5UM5G-45F-8BG381C), built with LiteX,
# LiteEth, Yosys and nextpnr-ecp5 (boards/build.sh runs it).
#
#   eth0 (data port)        RGMII PHY -> LiteEth MAC (64-bit) <-> lvsnic_core rx/tx
#   eth1 (management port)  RGMII PHY -> LiteEth UDP/IP (32-bit, mgmt clock): Etherbone
#                           (UDP 1234) to the register map, exception/inject
#                           datagrams (UDP 0x4C56)
#
# The top adds only clocks, PHYs and the glue of boards/common/lvsnic_litex.py.

import argparse
import os
import sys

from migen import *
from migen.genlib.resetsync import AsyncResetSynchronizer

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex.soc.integration.soc_core import SoCMini
from litex.soc.integration.builder import Builder

from litex_boards.platforms import lattice_versa_ecp5

from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII
from liteeth.mac.core import LiteEthMACCore
from liteeth.core import LiteEthUDPIPCore
from liteeth.frontend.etherbone import LiteEthEtherbone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from lvsnic_litex import LvsnicCore, LvsnicCoreStub, LvsnicGlue, LVSNIC_UDP_PORT  # noqa: E402


def ip_to_int(ip):
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


class _CRG(LiteXModule):
    """clk100 -> PLL -> sys (the core's clock) and mgmt (the management
    port's UDP/IP stack); reset from the PLL lock and the board's reset
    button."""
    def __init__(self, platform, sys_clk_freq, mgmt_clk_freq):
        self.cd_sys  = ClockDomain()
        self.cd_mgmt = ClockDomain()
        self.cd_por = ClockDomain()
        clk100 = platform.request("clk100")
        rst_n  = platform.request("rst_n")
        por_count = Signal(16, reset=2**16 - 1)
        por_done  = Signal()
        self.comb += [self.cd_por.clk.eq(clk100), por_done.eq(por_count == 0)]
        self.sync.por += If(~por_done, por_count.eq(por_count - 1))
        self.pll = pll = ECP5PLL()
        self.comb += pll.reset.eq(~por_done | ~rst_n)
        pll.register_clkin(clk100, 100e6)
        pll.create_clkout(self.cd_sys, sys_clk_freq)
        pll.create_clkout(self.cd_mgmt, mgmt_clk_freq)


class LvsnicVersa(SoCMini):
    # Register map of the core at 0x0000 (docs/hardware.md §6), the glue's
    # CSRs (LiteX) above it.
    mem_map = {"csr": 0x0001_0000}

    def __init__(self, sys_clk_freq, flow_buckets_log2, action_log2, vip_count,
                 eth_ip, host_ip, mac_address, core_stub=False, mgmt_clk_freq=40e6):
        platform = lattice_versa_ecp5.Platform(device="LFE5UM5G", toolchain="trellis")
        self.crg = _CRG(platform, sys_clk_freq, mgmt_clk_freq)
        SoCMini.__init__(self, platform, sys_clk_freq, ident="lvsnic on Versa ECP5", ident_version=False)
        # (no build date in the identifier ROM: the bitstream depends on the sources only)

        # PHYs: RGMII, delays from the PHYs' straps (as litex-boards' Versa target).
        phys = []
        for n in (0, 1):
            phy = ClockDomainsRenamer({"eth_rx": f"eth{n}_rx", "eth_tx": f"eth{n}_tx"})(
                LiteEthPHYRGMII(
                    clock_pads = platform.request("eth_clocks", n),
                    pads       = platform.request("eth", n),
                    tx_delay   = 0e-9,
                    rx_delay   = 0e-9))
            setattr(self, f"ethphy{n}", phy)
            phys.append(phy)

        # Management port: Etherbone (register map) + lvsnic UDP port.
        # LiteEth's MAC/ARP/IPv4/UDP stack runs at 32 bits in its own clock
        # domain `mgmt` (PLL, 40 MHz by default: 32 bits x 40 MHz = 1.28 Gb/s,
        # above the port's 1 Gb/s); the 125 MHz RGMII domain keeps only the
        # PHY, the MAC's 8 <-> 32-bit converters and its clock crossings.
        # Etherbone's Wishbone master and the lvsnic UDP port cross to sys
        # through LiteEth's own crossings (asynchronous FIFOs). Why: at 8 bits
        # in the RGMII domain (LiteX's default) the stack's transmit path is
        # one combinational valid/ready chain (UDP arbiter between Etherbone
        # and the lvsnic port, UDP, IPv4/ICMP and ARP/IPv4 arbiters, MAC) and
        # that domain reached 80 MHz; at 32 bits the chain (now joined through
        # Etherbone's probe reply to the receive path) is 17.7 ns, about
        # 56 MHz, so the stack gets a clock of its own below that rather than
        # holding the core's clock down (boards/README.md, "Fmax").
        # (This is what SoC.add_etherbone(data_width=32) builds, written out
        # because add_etherbone puts a 32-bit stack in sys and does not
        # rename the PHY's clock domains then.)
        self.ethcore_etherbone = ClockDomainsRenamer({"eth_tx": "eth1_tx", "eth_rx": "eth1_rx", "sys": "mgmt"})(
            LiteEthUDPIPCore(phy=phys[1], mac_address=mac_address, ip_address=eth_ip,
                             clk_freq=mgmt_clk_freq, dw=32, with_ip_broadcast=True,
                             with_sys_datapath=True))
        self.etherbone = LiteEthEtherbone(self.ethcore_etherbone.udp, 1234, buffer_depth=16, cd="sys")
        self.bus.add_master(name="etherbone", master=self.etherbone.wishbone.bus)
        udp_port = self.ethcore_etherbone.udp.crossbar.get_port(LVSNIC_UDP_PORT, dw=64, cd="sys")

        # Data port: MAC (preamble, FCS, padding) at 64 bits in the sys domain.
        self.mac0 = ClockDomainsRenamer({"eth_rx": "eth0_rx", "eth_tx": "eth0_tx"})(
            LiteEthMACCore(phy=phys[0], dw=64, with_preamble_crc=True, with_padding=True))
        # Clock constraints: the platform's (clk100 and both PHYs' rx clock
        # pins, 125 MHz; each PHY's tx clock is its rx clock); nextpnr derives
        # the PLL's sys clock. Crossings are asynchronous FIFOs.

        # The core and its glue.
        # (core_stub: a stand-in with the same ports, for quick timing runs of
        # everything else; boards/README.md "Quick timing runs".)
        # IPV6 = 0: the IPv6 parser, hashes, pair compare and rewrite do not
        # fit the LFE5UM5G-45F beside the rest (with them the build packed
        # to 88.8 % of its LUTs and did not route; docs/hardware.md §9);
        # IPv6 frames go to the host as NON_IPV4, CAPS1.ipv6 reads 0.
        self.lvsnic = (LvsnicCoreStub if core_stub else LvsnicCore)(platform, data_width=64, flow_buckets_log2=flow_buckets_log2,
                                 action_log2=action_log2, vip_count=vip_count, ipv6=False)
        self.lvsnic.add_to_bus(self, origin=0x0000_0000)
        self.glue = LvsnicGlue(self.lvsnic, self.mac0, udp_port, sys_clk_freq,
                               host_ip=ip_to_int(host_ip))

        # LEDs: link activity is not wired; LED 0 blinks with the sys clock (alive).
        leds = platform.request_all("user_led")
        alive = Signal(27)
        self.sync += alive.eq(alive + 1)
        self.comb += leds.eq(~Cat(alive[-1], Replicate(0, len(leds) - 1)))


def main():
    p = argparse.ArgumentParser(description="lvsnic gateware for the Lattice ECP5 Versa")
    p.add_argument("--sys-clk-freq", type=float, default=60e6, help="core clock (Hz)")
    p.add_argument("--mgmt-clk-freq", type=float, default=40e6,
                   help="management port UDP/IP stack clock (Hz, >= 31.25e6 for 1 Gb/s at 32 bits)")
    p.add_argument("--flow-buckets-log2", type=int, default=4)
    p.add_argument("--action-log2", type=int, default=4)
    p.add_argument("--vip-count", type=int, default=4)
    p.add_argument("--eth-ip", default="192.168.1.50", help="management port IPv4 address")
    p.add_argument("--host-ip", default="192.168.1.100", help="exception datagrams' destination (reset value)")
    p.add_argument("--mac-address", type=lambda s: int(s, 0), default=0x10e2d5000000)
    p.add_argument("--core-stub", action="store_true",
                   help="replace lvsnic_core by a stub with the same ports (timing of the rest in minutes)")
    p.add_argument("--output-dir", required=True)
    args = p.parse_args()

    soc = LvsnicVersa(args.sys_clk_freq, args.flow_buckets_log2, args.action_log2, args.vip_count,
                      args.eth_ip, args.host_ip, args.mac_address, core_stub=args.core_stub,
                      mgmt_clk_freq=args.mgmt_clk_freq)
    builder = Builder(soc, output_dir=args.output_dir, compile_software=False,
                      csr_csv=os.path.join(args.output_dir, "csr.csv"))
    # Generate only: boards/build.sh runs Yosys, nextpnr and ecppack itself.
    builder.build(build_name="lvsnic_versa", run=False, seed=1, timingstrict=True)


if __name__ == "__main__":
    main()
