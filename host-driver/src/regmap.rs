// generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit
//! BAR0 of an lvsnic card as a `#[repr(C)]` block of volatile registers
//! (`volatile-register`), and the control bits as `bitflags`. Only the
//! VFIO backend maps it over device memory; the layout is checked
//! against the register map in tests.

use volatile_register::{RO, RW, WO};

bitflags::bitflags! {
    /// `CTRL` register bits.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct Ctrl: u32 {
        /// Forward established flows; when 0 every frame goes to the host (reason DISABLED).
        const ENABLE = 1 << 0;
        /// Copy DF into tunnel headers (IPVS sysctl pmtu_disc).
        const PMTU_DISC = 1 << 1;
    }
}

/// One 64-bit counter (`LO` latches `HI`).
#[repr(C)]
pub struct Counter {
    pub lo: RO<u32>,
    pub hi: RO<u32>,
}

/// BAR0 registers, in address order.
#[repr(C)]
pub struct Bar0 {
    pub id: RO<u32>,
    pub version: RO<u32>,
    pub caps0: RO<u32>,
    pub caps1: RO<u32>,
    pub ctrl: RW<u32>,
    pub mac_lo: RW<u32>,
    pub mac_hi: RW<u32>,
    pub ip: RW<u32>,
    pub mtu: RW<u32>,
    pub vip_valid: RW<u32>,
    _reserved0: [u32; 54],
    pub vip: [RW<u32>; 32],
    _reserved1: [u32; 32],
    pub flow_data: [RW<u32>; 4],
    pub flow_index: RW<u32>,
    pub flow_cmd: WO<u32>,
    pub flow_status: RO<u32>,
    _reserved2: [u32; 1],
    pub flow_rdata: [RO<u32>; 4],
    pub flow_hit_lo: RO<u32>,
    pub flow_hit_hi: RO<u32>,
    _reserved3: [u32; 50],
    pub act_data: [RW<u32>; 4],
    pub act_index: RW<u32>,
    pub act_cmd: WO<u32>,
    pub act_status: RO<u32>,
    _reserved4: [u32; 1],
    pub act_rdata: [RO<u32>; 4],
    pub act_pkts_lo: RO<u32>,
    pub act_pkts_hi: RO<u32>,
    pub act_bytes_lo: RO<u32>,
    pub act_bytes_hi: RO<u32>,
    _reserved5: [u32; 48],
    pub cnt: [Counter; 64],
}

/// Size of the register block in bytes.
pub const BAR0_REGS_SIZE: usize = 0x600;

#[cfg(test)]
mod tests {
    use super::*;
    use lvsnic_model::hw::regs_gen as r;
    use std::mem::{offset_of, size_of};

    #[test]
    fn layout_matches_the_register_map() {
        assert_eq!(size_of::<Bar0>(), BAR0_REGS_SIZE);
        assert_eq!(offset_of!(Bar0, id) as u32, r::ID);
        assert_eq!(offset_of!(Bar0, version) as u32, r::VERSION);
        assert_eq!(offset_of!(Bar0, caps0) as u32, r::CAPS0);
        assert_eq!(offset_of!(Bar0, caps1) as u32, r::CAPS1);
        assert_eq!(offset_of!(Bar0, ctrl) as u32, r::CTRL);
        assert_eq!(offset_of!(Bar0, mac_lo) as u32, r::MAC_LO);
        assert_eq!(offset_of!(Bar0, mac_hi) as u32, r::MAC_HI);
        assert_eq!(offset_of!(Bar0, ip) as u32, r::IP);
        assert_eq!(offset_of!(Bar0, mtu) as u32, r::MTU);
        assert_eq!(offset_of!(Bar0, vip_valid) as u32, r::VIP_VALID);
        assert_eq!(offset_of!(Bar0, vip) as u32, r::VIP_BASE);
        assert_eq!(offset_of!(Bar0, flow_data) as u32, r::FLOW_DATA_BASE);
        assert_eq!(offset_of!(Bar0, flow_index) as u32, r::FLOW_INDEX);
        assert_eq!(offset_of!(Bar0, flow_cmd) as u32, r::FLOW_CMD);
        assert_eq!(offset_of!(Bar0, flow_status) as u32, r::FLOW_STATUS);
        assert_eq!(offset_of!(Bar0, flow_rdata) as u32, r::FLOW_RDATA_BASE);
        assert_eq!(offset_of!(Bar0, flow_hit_lo) as u32, r::FLOW_HIT_LO);
        assert_eq!(offset_of!(Bar0, flow_hit_hi) as u32, r::FLOW_HIT_HI);
        assert_eq!(offset_of!(Bar0, act_data) as u32, r::ACT_DATA_BASE);
        assert_eq!(offset_of!(Bar0, act_index) as u32, r::ACT_INDEX);
        assert_eq!(offset_of!(Bar0, act_cmd) as u32, r::ACT_CMD);
        assert_eq!(offset_of!(Bar0, act_status) as u32, r::ACT_STATUS);
        assert_eq!(offset_of!(Bar0, act_rdata) as u32, r::ACT_RDATA_BASE);
        assert_eq!(offset_of!(Bar0, act_pkts_lo) as u32, r::ACT_PKTS_LO);
        assert_eq!(offset_of!(Bar0, act_pkts_hi) as u32, r::ACT_PKTS_HI);
        assert_eq!(offset_of!(Bar0, act_bytes_lo) as u32, r::ACT_BYTES_LO);
        assert_eq!(offset_of!(Bar0, act_bytes_hi) as u32, r::ACT_BYTES_HI);
        assert_eq!(offset_of!(Bar0, cnt) as u32, r::CNT_BASE);
    }
}
