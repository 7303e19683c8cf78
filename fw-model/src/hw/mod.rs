//! The bit-exact model of the lvsnic data plane (`lvsnic_core`), defined by
//! `docs/hardware.md`: classification, the flow and action tables, the
//! rewrites, the exception metadata and the AXI-Lite register interface.
//!
//! [`HwPipeline::process`] is what the RTL must equal frame for frame;
//! [`HwPipeline::write32`]/[`read32`](HwPipeline::read32) are its register
//! interface, so host code that programs the tables runs unchanged on the
//! model, the simulated RTL and a card ([`Csr`]).

pub mod pipeline;
pub mod placement;
pub mod regs;
pub mod regs_gen;
pub mod tables;
pub mod toeplitz;

pub use pipeline::{HwOutput, HwParams, HwPipeline};

/// Exception reason codes (docs/hardware.md §3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reason {
    Forwarded = 0,
    Malformed = 1,
    L2Multicast = 2,
    L2OtherHost = 3,
    Vlan = 4,
    NonIpv4 = 5,
    IpChecksum = 6,
    IpOptions = 7,
    Fragment = 8,
    NotTcpUdp = 9,
    L4Truncated = 10,
    Ttl = 11,
    MissVip = 12,
    MissLocal = 13,
    Miss = 14,
    TcpControl = 15,
    UdpZeroCsum = 16,
    TooBig = 17,
    Disabled = 18,
    Truncated = 19,
}

impl Reason {
    /// Number of reason codes.
    pub const COUNT: usize = 20;

    pub fn from_u8(v: u8) -> Option<Reason> {
        use Reason::*;
        Some(match v {
            0 => Forwarded,
            1 => Malformed,
            2 => L2Multicast,
            3 => L2OtherHost,
            4 => Vlan,
            5 => NonIpv4,
            6 => IpChecksum,
            7 => IpOptions,
            8 => Fragment,
            9 => NotTcpUdp,
            10 => L4Truncated,
            11 => Ttl,
            12 => MissVip,
            13 => MissLocal,
            14 => Miss,
            15 => TcpControl,
            16 => UdpZeroCsum,
            17 => TooBig,
            18 => Disabled,
            19 => Truncated,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use Reason::*;
        match self {
            Forwarded => "forwarded",
            Malformed => "malformed",
            L2Multicast => "l2_multicast",
            L2OtherHost => "l2_other_host",
            Vlan => "vlan",
            NonIpv4 => "non_ipv4",
            IpChecksum => "ip_checksum",
            IpOptions => "ip_options",
            Fragment => "fragment",
            NotTcpUdp => "not_tcp_udp",
            L4Truncated => "l4_truncated",
            Ttl => "ttl",
            MissVip => "miss_vip",
            MissLocal => "miss_local",
            Miss => "miss",
            TcpControl => "tcp_control",
            UdpZeroCsum => "udp_zero_csum",
            TooBig => "too_big",
            Disabled => "disabled",
            Truncated => "truncated",
        }
    }
}

/// Exception metadata (`m_axis_host_tuser`, docs/hardware.md §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMeta {
    pub reason: Reason,
    pub hit: bool,
    pub vip: bool,
    pub hash0: u32,
    pub seq: u32,
    pub ts: u64,
}

impl HostMeta {
    /// The 160-bit `tuser` value as five little-endian 32-bit words.
    pub fn to_words(&self) -> [u32; 5] {
        [
            self.reason as u32 | (self.hit as u32) << 8 | (self.vip as u32) << 9,
            self.hash0,
            self.seq,
            self.ts as u32,
            (self.ts >> 32) as u32,
        ]
    }

    /// Parses a 160-bit `tuser` value; None for an unknown reason or
    /// non-zero reserved bits.
    pub fn from_words(w: [u32; 5]) -> Option<HostMeta> {
        if w[0] & 0xFFFF_FC00 != 0 {
            return None;
        }
        Some(HostMeta {
            reason: Reason::from_u8(w[0] as u8)?,
            hit: w[0] & 0x100 != 0,
            vip: w[0] & 0x200 != 0,
            hash0: w[1],
            seq: w[2],
            ts: w[3] as u64 | (w[4] as u64) << 32,
        })
    }
}

/// Register access to the data plane (AXI-Lite), the same for the model,
/// the simulated RTL and a real card.
pub trait Csr {
    fn write32(&mut self, addr: u32, value: u32);
    fn read32(&mut self, addr: u32) -> u32;
}
