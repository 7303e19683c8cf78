"""Structure of the Versa ECP5 top (lvsnic_versa.py), checked on the Migen
fragment in seconds, without Yosys or nextpnr: the management port's
125 MHz RGMII domain must hold only the PHY and LiteEth's MAC converters and
clock crossings, with LiteEth's MAC/ARP/IPv4/UDP stack at 32 bits in its own
`mgmt` domain. With the stack at 8 bits in the RGMII domain (LiteX's
default, 2,485 flip-flop bits there) that domain reached 80 MHz of its 125
(boards/README.md, "Fmax"). Run by boards/versa_ecp5/build.sh."""
import os
import sys

from migen.fhdl.tools import list_targets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lvsnic_versa  # noqa: E402


def domain_bits(core_stub=True):
    soc = lvsnic_versa.LvsnicVersa(75e6, 4, 4, 4, "192.168.1.50", "192.168.1.100",
                                   0x10e2d5000000, core_stub=core_stub)
    soc.finalize()
    frag = soc.get_fragment()
    return {d: sum(len(s) for s in list_targets(st)) for d, st in frag.sync.items()}


def test_management_port_rgmii_domain_holds_only_phy_and_crossings():
    bits = domain_bits()
    # The data port's RGMII domains (PHY, 8-bit MAC: preamble, CRC) as the
    # yardstick: the management port's must not be bigger.
    assert bits["eth1_rx"] <= bits["eth0_rx"], bits
    assert bits["eth1_tx"] <= bits["eth0_tx"], bits
    assert bits["eth1_rx"] + bits["eth1_tx"] < 256, bits
    # The stack is in mgmt (it has the flip-flops the RGMII domain lost);
    # Etherbone's Wishbone side is in sys (no separate Etherbone domain).
    assert bits["mgmt"] > 1000, bits
    assert "etherbone" not in bits, bits


def test_core_is_built_without_ipv6():
    """The Versa build's lvsnic_core has IPV6 = 0 (the IPv6 logic does not
    fit the LFE5UM5G-45F; docs/hardware.md §9), and the register map's
    CAPS1.ipv6 reads what the parameter says (lvsnic_regs)."""
    from migen.fhdl.specials import Instance
    soc = lvsnic_versa.LvsnicVersa(75e6, 4, 4, 4, "192.168.1.50", "192.168.1.100",
                                   0x10e2d5000000, core_stub=False)
    specials = soc.lvsnic.get_fragment().specials
    cores = [s for s in specials if isinstance(s, Instance) and s.of == "lvsnic_core"]
    assert len(cores) == 1
    params = {p.name: p.value for p in cores[0].items if isinstance(p, Instance.Parameter)}
    assert params["IPV6"] == 0, params
    assert soc.lvsnic.params["ipv6"] is False
