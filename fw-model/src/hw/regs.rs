//! Register addresses (docs/hardware.md §6). The addresses, fields and
//! reset values come from the single source `hw/regmap/lvsnic.rdl` through
//! the generated [`regs_gen`](super::regs_gen); this module adds the names
//! the code uses and the command/counter numbers.

pub use super::regs_gen::{
    ACT_BYTES_HI, ACT_BYTES_LO, ACT_CMD, ACT_INDEX, ACT_PKTS_HI, ACT_PKTS_LO, ACT_STATUS, CAPS0, CAPS1, CNT_BASE, CTRL,
    FLOW_CMD, FLOW_HIT_HI, FLOW_HIT_LO, FLOW_INDEX, FLOW_STATUS, ID, IP, IP6_BASE, IP6_LEN, MAC_HI, MAC_LO, MTU, VERSION, VIP_BASE,
    VIP_VALID,
};

pub use super::regs_gen::{ACT_DATA_LEN, ACT_RDATA_LEN, FLOW_DATA_LEN, FLOW_RDATA_LEN};

/// Staging entry of the flow table (`FLOW_DATA_LEN` words: a slot's 5, or
/// a pair's 10).
pub const FLOW_DATA: u32 = super::regs_gen::FLOW_DATA_BASE;
/// Flow entry read back: the slot, then its pair partner.
pub const FLOW_RDATA: u32 = super::regs_gen::FLOW_RDATA_BASE;
/// Staging action (`ACT_DATA_LEN` words).
pub const ACT_DATA: u32 = super::regs_gen::ACT_DATA_BASE;
/// Action read back.
pub const ACT_RDATA: u32 = super::regs_gen::ACT_RDATA_BASE;

/// `ID` register value ("LVSN").
pub const ID_VALUE: u32 = super::regs_gen::ID_RESET;
/// `VERSION` register value (2.0).
pub const VERSION_VALUE: u32 = super::regs_gen::VERSION_RESET;

/// `CTRL[0]` enable: forward established flows; when 0 every frame goes
/// to the host (reason `DISABLED`). Reset 0.
pub const CTRL_ENABLE: u32 = super::regs_gen::CTRL_ENABLE_MASK;
/// `CTRL[1]` pmtu_disc: copy the inner DF into IPIP tunnel headers (the
/// IPVS sysctl `pmtu_disc`). Reset 1.
pub const CTRL_PMTU_DISC: u32 = super::regs_gen::CTRL_PMTU_DISC_MASK;

/// `FLOW_CMD`/`ACT_CMD` 1: write the staging entry to the indexed slot.
pub const CMD_WRITE: u32 = lvsnic_regmap::TableCmd::Write as u32;
/// `FLOW_CMD`/`ACT_CMD` 2: read the indexed slot back.
pub const CMD_READ: u32 = lvsnic_regmap::TableCmd::Read as u32;
/// `FLOW_CMD` 3: write both slots of the indexed slot's aligned pair in
/// one cycle (an IPv6 entry, or its removal).
pub const CMD_WRITE_PAIR: u32 = lvsnic_regmap::TableCmd::WritePair as u32;

/// The register writes that put `words` into flow slot `index`: a slot's 5
/// words with `WRITE`, or an aligned pair's 10 with `WRITE_PAIR` (the
/// caller waits for `FLOW_STATUS` idle between two of them on a real core).
pub fn flow_writes(index: usize, words: &[u32]) -> Vec<(u32, u32)> {
    let cmd = if words.len() > lvsnic_regmap::flow_entry::WORDS { CMD_WRITE_PAIR } else { CMD_WRITE };
    let mut w: Vec<(u32, u32)> = words.iter().enumerate().map(|(k, &v)| (FLOW_DATA + 4 * k as u32, v)).collect();
    w.push((FLOW_INDEX, index as u32));
    w.push((FLOW_CMD, cmd));
    w
}

/// The register writes that put action `index`'s words in place.
pub fn action_writes(index: usize, words: &[u32]) -> Vec<(u32, u32)> {
    let mut w: Vec<(u32, u32)> = words.iter().enumerate().map(|(k, &v)| (ACT_DATA + 4 * k as u32, v)).collect();
    w.push((ACT_INDEX, index as u32));
    w.push((ACT_CMD, CMD_WRITE));
    w
}

/// Counter numbers (`CNT[n]` at `CNT_BASE + 8n`). `CNT[0]`: frames
/// received.
pub const CNT_RX: u32 = 0;
/// `CNT[1]`: frames forwarded.
pub const CNT_FWD: u32 = 1;
/// `CNT[2]`: frames to the host.
pub const CNT_HOST: u32 = 2;
/// `CNT[3]`: frames injected by the host.
pub const CNT_INJECT: u32 = 3;
/// `CNT[32 + r]`: frames to the host with reason `r`.
pub const CNT_REASON_BASE: u32 = 32;
/// Number of counters.
pub const CNT_COUNT: u32 = super::regs_gen::CNT_LEN;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_from_the_single_source_match_the_contract() {
        assert_eq!((ID, VERSION, CTRL, MTU, VIP_VALID), (0x000, 0x004, 0x010, 0x020, 0x024));
        assert_eq!((IP, IP6_BASE, IP6_LEN, super::super::regs_gen::IP6_STRIDE), (0x01C, 0x028, 4, 4));
        assert_eq!((VIP_BASE, FLOW_DATA, FLOW_INDEX, FLOW_CMD, FLOW_RDATA, FLOW_HIT_LO), (0x100, 0x200, 0x240, 0x244, 0x260, 0x290));
        assert_eq!((ACT_DATA, ACT_INDEX, ACT_CMD, ACT_RDATA, ACT_PKTS_LO, ACT_BYTES_HI), (0x300, 0x320, 0x324, 0x340, 0x360, 0x36C));
        assert_eq!((FLOW_DATA_LEN, FLOW_RDATA_LEN, ACT_DATA_LEN, ACT_RDATA_LEN), (10, 10, 8, 8));
        assert_eq!((CMD_WRITE, CMD_READ, CMD_WRITE_PAIR), (1, 2, 3));
        assert_eq!((CNT_BASE, CNT_COUNT), (0x400, 64));
        assert_eq!((ID_VALUE, VERSION_VALUE, CTRL_ENABLE, CTRL_PMTU_DISC), (0x4C56534E, 0x0002_0000, 1, 2));
        assert_eq!(super::super::regs_gen::CTRL_RESET, CTRL_PMTU_DISC);
        assert_eq!(super::super::regs_gen::MTU_RESET, 1500);
    }

    /// `IP6[0]` holds the address's first four bytes, byte 0 in bits
    /// 31:24; `IP6[3]` the last four (docs/registers.md).
    #[test]
    fn identity_writes_put_the_ipv6_address_first_byte_high() {
        let ip6: std::net::Ipv6Addr = "2001:db8:1234:5678:9abc:def0:1122:3344".parse().unwrap();
        let w = identity_writes(crate::wire::MacAddr([2, 0, 0, 0, 0, 1]), 0x0a00_0001, ip6, 1500);
        let regs: Vec<(u32, u32)> = w.iter().copied().filter(|&(a, _)| (0x028..0x038).contains(&a)).collect();
        assert_eq!(regs, [(0x028, 0x2001_0db8), (0x02C, 0x1234_5678), (0x030, 0x9abc_def0), (0x034, 0x1122_3344)]);
        assert_eq!(ip6_of_words(ip6_words(ip6)), ip6);
        assert!(w.contains(&(IP, 0x0a00_0001)) && w.contains(&(MTU, 1500)));
    }
}

/// The writes that give a core the director's identity: `MAC_HI` (the
/// first two bytes), `MAC_LO` (the last four), `IP`, `IP6[0..4]` (the
/// address's first four bytes in `IP6[0]`, byte 0 in bits 31:24; a core
/// without `CAPS1.tun6` ignores them), `MTU`.
pub fn identity_writes(mac: crate::wire::MacAddr, ip: u32, ip6: std::net::Ipv6Addr, mtu: u16) -> [(u32, u32); 8] {
    let m = mac.0;
    let w6 = ip6_words(ip6);
    [
        (MAC_HI, (m[0] as u32) << 8 | m[1] as u32),
        (MAC_LO, u32::from_be_bytes([m[2], m[3], m[4], m[5]])),
        (IP, ip),
        (IP6_BASE, w6[0]),
        (IP6_BASE + 4, w6[1]),
        (IP6_BASE + 8, w6[2]),
        (IP6_BASE + 12, w6[3]),
        (MTU, mtu as u32),
    ]
}

/// The `IP6[0..4]` register values of an IPv6 address (`IP6[0]`: its
/// first four bytes, byte 0 in bits 31:24).
pub fn ip6_words(ip6: std::net::Ipv6Addr) -> [u32; IP6_LEN as usize] {
    let o = ip6.octets();
    std::array::from_fn(|i| u32::from_be_bytes([o[4 * i], o[4 * i + 1], o[4 * i + 2], o[4 * i + 3]]))
}

/// The IPv6 address `IP6[0..4]` hold ([`ip6_words`] inverted).
pub fn ip6_of_words(w: [u32; IP6_LEN as usize]) -> std::net::Ipv6Addr {
    let mut o = [0u8; 16];
    for (i, v) in w.iter().enumerate() {
        o[4 * i..4 * i + 4].copy_from_slice(&v.to_be_bytes());
    }
    std::net::Ipv6Addr::from(o)
}
