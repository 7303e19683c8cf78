//! IP protocol numbers (IANA "Assigned Internet Protocol Numbers"): the
//! IPv4 Protocol field and the IPv6 Next Header field share them.

use std::fmt;

/// An IP protocol number, named where lvsnic gives it a meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IpProtocol {
    /// 0: IPv6 Hop-by-Hop Options (RFC 8200 §4.3).
    HopByHop,
    /// 1: ICMP (RFC 792).
    Icmp,
    /// 4: IPv4 encapsulation (RFC 2003), IPVS tunnelling.
    Ipip,
    /// 6: TCP (RFC 9293).
    Tcp,
    /// 17: UDP (RFC 768).
    Udp,
    /// 41: IPv6 encapsulation (RFC 2473), ip6ip6 and 6in4.
    Ipv6,
    /// 43: IPv6 Routing header (RFC 8200 §4.4).
    Ipv6Route,
    /// 44: IPv6 Fragment header (RFC 8200 §4.5).
    Ipv6Frag,
    /// 47: GRE (RFC 2784).
    Gre,
    /// 50: Encapsulating Security Payload (RFC 4303).
    Esp,
    /// 51: Authentication Header (RFC 4302).
    Ah,
    /// 58: ICMPv6 (RFC 4443).
    Icmpv6,
    /// 59: IPv6 No Next Header (RFC 8200 §4.7).
    Ipv6NoNext,
    /// 60: IPv6 Destination Options (RFC 8200 §4.6).
    Ipv6Opts,
    /// 132: SCTP (RFC 9260).
    Sctp,
    /// Any other number.
    Unknown(u8),
}

impl From<u8> for IpProtocol {
    fn from(v: u8) -> Self {
        match v {
            0 => IpProtocol::HopByHop,
            1 => IpProtocol::Icmp,
            4 => IpProtocol::Ipip,
            6 => IpProtocol::Tcp,
            17 => IpProtocol::Udp,
            41 => IpProtocol::Ipv6,
            43 => IpProtocol::Ipv6Route,
            44 => IpProtocol::Ipv6Frag,
            47 => IpProtocol::Gre,
            50 => IpProtocol::Esp,
            51 => IpProtocol::Ah,
            58 => IpProtocol::Icmpv6,
            59 => IpProtocol::Ipv6NoNext,
            60 => IpProtocol::Ipv6Opts,
            132 => IpProtocol::Sctp,
            v => IpProtocol::Unknown(v),
        }
    }
}

impl From<IpProtocol> for u8 {
    fn from(p: IpProtocol) -> u8 {
        match p {
            IpProtocol::HopByHop => 0,
            IpProtocol::Icmp => 1,
            IpProtocol::Ipip => 4,
            IpProtocol::Tcp => 6,
            IpProtocol::Udp => 17,
            IpProtocol::Ipv6 => 41,
            IpProtocol::Ipv6Route => 43,
            IpProtocol::Ipv6Frag => 44,
            IpProtocol::Gre => 47,
            IpProtocol::Esp => 50,
            IpProtocol::Ah => 51,
            IpProtocol::Icmpv6 => 58,
            IpProtocol::Ipv6NoNext => 59,
            IpProtocol::Ipv6Opts => 60,
            IpProtocol::Sctp => 132,
            IpProtocol::Unknown(v) => v,
        }
    }
}

impl IpProtocol {
    /// Whether Linux treats the number as an IPv6 extension header
    /// (`ipv6_ext_hdr`: Hop-by-Hop, Routing, Fragment, AH, No Next Header,
    /// Destination Options; not ESP).
    pub fn is_ipv6_ext_header(self) -> bool {
        matches!(
            self,
            IpProtocol::HopByHop
                | IpProtocol::Ipv6Route
                | IpProtocol::Ipv6Frag
                | IpProtocol::Ah
                | IpProtocol::Ipv6NoNext
                | IpProtocol::Ipv6Opts
        )
    }
}

impl fmt::Display for IpProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            IpProtocol::HopByHop => "Hop-by-Hop",
            IpProtocol::Icmp => "ICMP",
            IpProtocol::Ipip => "IPIP",
            IpProtocol::Tcp => "TCP",
            IpProtocol::Udp => "UDP",
            IpProtocol::Ipv6 => "IPv6",
            IpProtocol::Ipv6Route => "IPv6-Route",
            IpProtocol::Ipv6Frag => "IPv6-Frag",
            IpProtocol::Gre => "GRE",
            IpProtocol::Esp => "ESP",
            IpProtocol::Ah => "AH",
            IpProtocol::Icmpv6 => "ICMPv6",
            IpProtocol::Ipv6NoNext => "IPv6-NoNxt",
            IpProtocol::Ipv6Opts => "IPv6-Opts",
            IpProtocol::Sctp => "SCTP",
            IpProtocol::Unknown(v) => return write!(f, "proto {v}"),
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_number_round_trips() {
        for v in 0..=255u8 {
            assert_eq!(u8::from(IpProtocol::from(v)), v);
        }
        assert_eq!(IpProtocol::from(6), IpProtocol::Tcp);
        assert_eq!(IpProtocol::from(200), IpProtocol::Unknown(200));
        assert_eq!(IpProtocol::Tcp.to_string(), "TCP");
        assert_eq!(IpProtocol::from(200).to_string(), "proto 200");
        let ext: Vec<u8> = (0..=255u8).filter(|&v| IpProtocol::from(v).is_ipv6_ext_header()).collect();
        assert_eq!(ext, [0, 43, 44, 51, 59, 60], "ipv6_ext_hdr's list, ESP not in it");
    }
}
