// generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit
//! The codes shared by the RTL, the model, the simulator harness and the
//! testbenches, and the bit positions of the in-band data that carries them.

/// `lvsnic_table_cmd`: `cmd` codes. Values of `FLOW_CMD.cmd`, `ACT_CMD.cmd`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum TableCmd {
    /// Write the staging entry (and zero its activity); a flow slot takes FLOW_DATA bits 159:0.
    Write = 1,
    /// Read the entry and its activity; FLOW_RDATA holds slot FLOW_INDEX in bits 159:0 and slot FLOW_INDEX ^ 1 in bits 319:160.
    Read = 2,
    /// Flow table only: write the aligned slot pair of FLOW_INDEX (its low bit ignored) with FLOW_DATA bits 159:0 (even slot) and 319:160 (odd slot) in one cycle, and zero both activities; an IPv6 entry is written, and removed, this way. The action table ignores it.
    WritePair = 3,
}

impl TableCmd {
    /// The code of value `v`, if there is one.
    pub const fn from_u8(v: u8) -> Option<TableCmd> {
        match v {
            1 => Some(TableCmd::Write),
            2 => Some(TableCmd::Read),
            3 => Some(TableCmd::WritePair),
            _ => None,
        }
    }
    /// The code's name in lower case.
    pub const fn name(self) -> &'static str {
        match self {
            TableCmd::Write => "write",
            TableCmd::Read => "read",
            TableCmd::WritePair => "write_pair",
        }
    }
}

/// `lvsnic_reason`: Why the frame went to the host. Values of `lvsnic_host_meta.reason`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Reason {
    /// Forwarded (never seen on the host port).
    Forwarded = 0,
    /// Shorter than 14 bytes, or a malformed IPv4 header.
    Malformed = 1,
    /// Group bit set in the destination MAC.
    L2Multicast = 2,
    /// Destination MAC is not the director's.
    L2OtherHost = 3,
    /// 802.1Q tagged.
    Vlan = 4,
    /// EtherType not IPv4, nor IPv6 on a core built with IPV6.
    NonIpv4 = 5,
    /// IPv4 header checksum wrong.
    IpChecksum = 6,
    /// IHL > 5.
    IpOptions = 7,
    /// A fragment.
    Fragment = 8,
    /// Neither TCP nor UDP.
    NotTcpUdp = 9,
    /// Total length too short for the L4 header.
    L4Truncated = 10,
    /// TTL ≤ 1.
    Ttl = 11,
    /// No flow, destination is a VIP.
    MissVip = 12,
    /// No flow, destination is the director.
    MissLocal = 13,
    /// No flow.
    Miss = 14,
    /// TCP SYN/FIN/RST, ACK clear, or `ack_fast` clear.
    TcpControl = 15,
    /// UDP checksum 0 on a NAT action.
    UdpZeroCsum = 16,
    /// Larger than the MTU after rewrite.
    TooBig = 17,
    /// `CTRL.enable` = 0.
    Disabled = 18,
    /// Forwarding decided, but the frame ended early (also aborted on tx).
    Truncated = 19,
    /// A flow entry matched, and its action has `host` set, or an address of the other family (`ipv6`) than the frame's for ROUTE and NAT, or is a TUNNEL of an IPv6 frame into IPv4 (or into IPv6 without CAPS1.tun6).
    ActionHost = 20,
}

impl Reason {
    /// Number of codes (their values are 0 to `COUNT` - 1).
    pub const COUNT: usize = 21;
    /// The code of value `v`, if there is one.
    pub const fn from_u8(v: u8) -> Option<Reason> {
        match v {
            0 => Some(Reason::Forwarded),
            1 => Some(Reason::Malformed),
            2 => Some(Reason::L2Multicast),
            3 => Some(Reason::L2OtherHost),
            4 => Some(Reason::Vlan),
            5 => Some(Reason::NonIpv4),
            6 => Some(Reason::IpChecksum),
            7 => Some(Reason::IpOptions),
            8 => Some(Reason::Fragment),
            9 => Some(Reason::NotTcpUdp),
            10 => Some(Reason::L4Truncated),
            11 => Some(Reason::Ttl),
            12 => Some(Reason::MissVip),
            13 => Some(Reason::MissLocal),
            14 => Some(Reason::Miss),
            15 => Some(Reason::TcpControl),
            16 => Some(Reason::UdpZeroCsum),
            17 => Some(Reason::TooBig),
            18 => Some(Reason::Disabled),
            19 => Some(Reason::Truncated),
            20 => Some(Reason::ActionHost),
            _ => None,
        }
    }
    /// The code's name in lower case.
    pub const fn name(self) -> &'static str {
        match self {
            Reason::Forwarded => "forwarded",
            Reason::Malformed => "malformed",
            Reason::L2Multicast => "l2_multicast",
            Reason::L2OtherHost => "l2_other_host",
            Reason::Vlan => "vlan",
            Reason::NonIpv4 => "non_ipv4",
            Reason::IpChecksum => "ip_checksum",
            Reason::IpOptions => "ip_options",
            Reason::Fragment => "fragment",
            Reason::NotTcpUdp => "not_tcp_udp",
            Reason::L4Truncated => "l4_truncated",
            Reason::Ttl => "ttl",
            Reason::MissVip => "miss_vip",
            Reason::MissLocal => "miss_local",
            Reason::Miss => "miss",
            Reason::TcpControl => "tcp_control",
            Reason::UdpZeroCsum => "udp_zero_csum",
            Reason::TooBig => "too_big",
            Reason::Disabled => "disabled",
            Reason::Truncated => "truncated",
            Reason::ActionHost => "action_host",
        }
    }
}

/// `lvsnic_action_op`: What the action does. Values of `lvsnic_action_entry.op`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ActionOp {
    /// Direct routing: MAC rewrite.
    Route = 0,
    /// NAT request: destination address and port.
    NatDnat = 1,
    /// NAT reply: source address and port.
    NatSnat = 2,
    /// IP-in-IP encapsulation: an IPv4 outer header (IPIP), or with the action's ipv6 an IPv6 one (ip6ip6, IPv4 in IPv6).
    Tunnel = 3,
}

impl ActionOp {
    /// Number of codes (their values are 0 to `COUNT` - 1).
    pub const COUNT: usize = 4;
    /// The code of value `v`, if there is one.
    pub const fn from_u8(v: u8) -> Option<ActionOp> {
        match v {
            0 => Some(ActionOp::Route),
            1 => Some(ActionOp::NatDnat),
            2 => Some(ActionOp::NatSnat),
            3 => Some(ActionOp::Tunnel),
            _ => None,
        }
    }
    /// The code in the low 2 bits of `v` (every value of the field is a code).
    pub const fn from_field(v: u32) -> ActionOp {
        match v & 0x3 {
            0 => ActionOp::Route,
            1 => ActionOp::NatDnat,
            2 => ActionOp::NatSnat,
            _ => ActionOp::Tunnel,
        }
    }
    /// The code's name in lower case.
    pub const fn name(self) -> &'static str {
        match self {
            ActionOp::Route => "route",
            ActionOp::NatDnat => "nat_dnat",
            ActionOp::NatSnat => "nat_snat",
            ActionOp::Tunnel => "tunnel",
        }
    }
}

/// `lvsnic_host_meta`: Exception metadata, bit positions (bit 0 = bit 0 of 32-bit word 0).
pub mod host_meta {
    /// `reason`: Why the frame went to the host.
    pub const REASON_LSB: u32 = 0;
    /// `reason`: width in bits.
    pub const REASON_WIDTH: u32 = 8;
    /// `hit`: A flow entry matched.
    pub const HIT_LSB: u32 = 8;
    /// `hit`: width in bits.
    pub const HIT_WIDTH: u32 = 1;
    /// `vip`: The destination is a valid VIP.
    pub const VIP_LSB: u32 = 9;
    /// `vip`: width in bits.
    pub const VIP_WIDTH: u32 = 1;
    /// `hash_0`: Toeplitz hash of way 0.
    pub const HASH_0_LSB: u32 = 32;
    /// `hash_0`: width in bits.
    pub const HASH_0_WIDTH: u32 = 32;
    /// `seq`: Sequence number from s_axis_rx_tuser.
    pub const SEQ_LSB: u32 = 64;
    /// `seq`: width in bits.
    pub const SEQ_WIDTH: u32 = 32;
    /// `ts`: Ingress timestamp.
    pub const TS_LSB: u32 = 96;
    /// `ts`: width in bits.
    pub const TS_WIDTH: u32 = 64;
    /// 32-bit words.
    pub const WORDS: usize = 5;
    /// The defined bits of each word; the others are reserved, 0.
    pub const DEFINED: [u32; WORDS] = [0x000003FF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF];
}

/// `lvsnic_flow_entry`: Flow entry (IPv4), bit positions (bit 0 = bit 0 of 32-bit word 0).
pub mod flow_entry {
    /// `valid`: The slot holds an entry.
    pub const VALID_LSB: u32 = 0;
    /// `valid`: width in bits.
    pub const VALID_WIDTH: u32 = 1;
    /// `ack_fast`: TCP segments with only ACK (of SYN/FIN/RST/ACK) may be forwarded; otherwise every TCP segment goes to the host (TCP_CONTROL).
    pub const ACK_FAST_LSB: u32 = 1;
    /// `ack_fast`: width in bits.
    pub const ACK_FAST_WIDTH: u32 = 1;
    /// `ipv6`: The entry is an IPv6 entry (lvsnic_flow6_entry) over this slot and the next; 0 here.
    pub const IPV6_LSB: u32 = 2;
    /// `ipv6`: width in bits.
    pub const IPV6_WIDTH: u32 = 1;
    /// `proto`: IP protocol of the key (6 TCP, 17 UDP).
    pub const PROTO_LSB: u32 = 8;
    /// `proto`: width in bits.
    pub const PROTO_WIDTH: u32 = 8;
    /// `action`: Index of the action entry applied on a match (its low ACTION_LOG2 bits).
    pub const ACTION_LSB: u32 = 16;
    /// `action`: width in bits.
    pub const ACTION_WIDTH: u32 = 16;
    /// `saddr`: IPv4 source address of the key, as received.
    pub const SADDR_LSB: u32 = 32;
    /// `saddr`: width in bits.
    pub const SADDR_WIDTH: u32 = 32;
    /// `daddr`: IPv4 destination address of the key, as received.
    pub const DADDR_LSB: u32 = 64;
    /// `daddr`: width in bits.
    pub const DADDR_WIDTH: u32 = 32;
    /// `sport`: L4 source port of the key.
    pub const SPORT_LSB: u32 = 96;
    /// `sport`: width in bits.
    pub const SPORT_WIDTH: u32 = 16;
    /// `dport`: L4 destination port of the key.
    pub const DPORT_LSB: u32 = 112;
    /// `dport`: width in bits.
    pub const DPORT_WIDTH: u32 = 16;
    /// 32-bit words.
    pub const WORDS: usize = 5;
    /// The defined bits of each word; the others are reserved, 0.
    pub const DEFINED: [u32; WORDS] = [0xFFFFFF07, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0x00000000];
}

/// `lvsnic_flow6_entry`: Flow entry (IPv6), bit positions (bit 0 = bit 0 of 32-bit word 0).
pub mod flow6_entry {
    /// `valid`: The pair holds an entry.
    pub const VALID_LSB: u32 = 0;
    /// `valid`: width in bits.
    pub const VALID_WIDTH: u32 = 1;
    /// `ack_fast`: As in lvsnic_flow_entry.
    pub const ACK_FAST_LSB: u32 = 1;
    /// `ack_fast`: width in bits.
    pub const ACK_FAST_WIDTH: u32 = 1;
    /// `ipv6`: 1: the entry is IPv6 and the odd slot of the pair is its tail, never an entry of its own.
    pub const IPV6_LSB: u32 = 2;
    /// `ipv6`: width in bits.
    pub const IPV6_WIDTH: u32 = 1;
    /// `proto`: IP protocol of the key (6 TCP, 17 UDP): the upper-layer protocol after the fixed header.
    pub const PROTO_LSB: u32 = 8;
    /// `proto`: width in bits.
    pub const PROTO_WIDTH: u32 = 8;
    /// `action`: Index of the action entry applied on a match.
    pub const ACTION_LSB: u32 = 16;
    /// `action`: width in bits.
    pub const ACTION_WIDTH: u32 = 16;
    /// `saddr`: IPv6 source address of the key, as received (first byte of the address in the top 8 bits).
    pub const SADDR_LSB: u32 = 32;
    /// `saddr`: width in bits.
    pub const SADDR_WIDTH: u32 = 128;
    /// `daddr`: IPv6 destination address of the key, as received.
    pub const DADDR_LSB: u32 = 160;
    /// `daddr`: width in bits.
    pub const DADDR_WIDTH: u32 = 128;
    /// `sport`: L4 source port of the key.
    pub const SPORT_LSB: u32 = 288;
    /// `sport`: width in bits.
    pub const SPORT_WIDTH: u32 = 16;
    /// `dport`: L4 destination port of the key.
    pub const DPORT_LSB: u32 = 304;
    /// `dport`: width in bits.
    pub const DPORT_WIDTH: u32 = 16;
    /// 32-bit words.
    pub const WORDS: usize = 10;
    /// The defined bits of each word; the others are reserved, 0.
    pub const DEFINED: [u32; WORDS] = [0xFFFFFF07, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF];
}

/// `lvsnic_action_entry`: Action entry, bit positions (bit 0 = bit 0 of 32-bit word 0).
pub mod action_entry {
    /// `op`: What the action does.
    pub const OP_LSB: u32 = 0;
    /// `op`: width in bits.
    pub const OP_WIDTH: u32 = 2;
    /// `host`: Send the frames of every flow that points here to the host (reason ACTION_HOST) instead of rewriting them: the driver takes a deleted real server's flows off the card in one write, and removes their flow entries afterwards.
    pub const HOST_LSB: u32 = 2;
    /// `host`: width in bits.
    pub const HOST_WIDTH: u32 = 1;
    /// `ipv6`: addr is an IPv6 address (NAT to an IPv6 real server, or an IPv6 outer header for TUNNEL); 0: an IPv4 address in addr's low 32 bits.
    pub const IPV6_LSB: u32 = 3;
    /// `ipv6`: width in bits.
    pub const IPV6_WIDTH: u32 = 1;
    /// `port`: New destination (NAT_DNAT) or source (NAT_SNAT) port.
    pub const PORT_LSB: u32 = 16;
    /// `port`: width in bits.
    pub const PORT_WIDTH: u32 = 16;
    /// `l4_delta`: The folded one's-complement L4 checksum delta of the NAT rewrite: the sum of the complemented 16-bit words of the old address and port and the new ones.
    pub const L4_DELTA_LSB: u32 = 32;
    /// `l4_delta`: width in bits.
    pub const L4_DELTA_WIDTH: u32 = 16;
    /// `mac`: Destination MAC written into the frame (byte 0 of the address in the field's top 8 bits).
    pub const MAC_LSB: u32 = 48;
    /// `mac`: width in bits.
    pub const MAC_WIDTH: u32 = 48;
    /// `addr`: New destination (NAT_DNAT), new source (NAT_SNAT) or tunnel destination (TUNNEL) address: IPv6 (first byte in the top 8 bits) with ipv6, else IPv4 in bits 31:0 and the rest 0.
    pub const ADDR_LSB: u32 = 96;
    /// `addr`: width in bits.
    pub const ADDR_WIDTH: u32 = 128;
    /// 32-bit words.
    pub const WORDS: usize = 8;
    /// The defined bits of each word; the others are reserved, 0.
    pub const DEFINED: [u32; WORDS] = [0xFFFF000F, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0x00000000];
}
