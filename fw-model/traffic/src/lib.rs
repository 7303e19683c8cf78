//! # lvsnic-traffic — test traffic for lvsnic
//!
//! Seeded, realistic packet captures of what arrives at the director's NIC
//! (`lvsnic traffic`), for the examples, the tests and the benchmarks, and
//! random data-plane worlds for differential testing of the RTL against the
//! hardware model ([`fuzz`]). Built on the golden model
//! ([`lvsnic_model`]) through its public API only.
//!
//! # Closed loop ([`generate`], [`generate_capture`])
//!
//! An event-driven simulation in virtual time (nanoseconds, from
//! [`TrafficSpec::start`]). Simulated clients (addresses in 198.18.0.0/15,
//! behind the router whose MAC is the configuration's `gateway_mac`) open
//! sessions to the virtual services of the rules, IPv4 and IPv6 alike: a
//! client's IPv6 address is in 2001:db8:c::/64 with its IPv4 address as
//! the low 32 bits ([`client_addr6`]). Every frame the generator
//! puts in the capture is also run, in timestamp order, through a private
//! [`Director`] with the same configuration and rules, so the generator knows
//! what the director does with it and the simulated hosts react as real ones
//! would:
//!
//! * a client SYN forwarded by NAT to real server X is answered by X: its
//!   SYN-ACK appears in the capture (from X's `[neighbors]` MAC to the
//!   director, X:rport → client:cport) a LAN round trip later; for DR and
//!   TUN the real server answers the client directly, so nothing appears,
//!   but the client's next segment comes a round trip later all the same;
//! * sequence and acknowledgement numbers are consistent on both sides,
//!   data flows in flights of up to 10 segments with delayed ACKs (one per
//!   two segments), MSS 1460 (or MTU − 40; over IPv6 1440, or MTU − 60);
//! * a client whose full-size DF segment bounces off a tunnel service with
//!   ICMP "fragmentation needed" (over IPv6: ICMPv6 "packet too big") lowers
//!   its MSS to the reported MTU − 40 (− 60) and resends; a refused SYN (ICMP port unreachable, or handed to the
//!   director's own stack, which resets it) ends the session; a silently
//!   dropped SYN, segment or query is retransmitted (at most 2–3 times);
//! * after an idle gap longer than the connection's timeout, the director
//!   has forgotten the TCP connection: the client's next segment goes to the
//!   director's stack (which resets it) and the session ends; a UDP client
//!   resuming after its gap simply gets a new connection.
//!
//! The capture holds only frames arriving at the director: client frames
//! (source MAC = `gateway_mac`) and real-server frames (NAT replies, source
//! MAC = the server's). Timestamps strictly increase, at least 1 µs apart, so
//! a microsecond pcap keeps the order.
//!
//! The traffic mix: TCP sessions (full handshakes with MSS/SACK/window-scale
//! options, HTTP-like request/response exchanges of 100 B to 128 KiB,
//! uploads, think times, graceful close from either side, RST aborts from
//! either side, half-open SYN-only sessions, idle gaps, reuse of a client
//! port after TIME_WAIT, bursts of connections from one client to persistent
//! services, TTL 64/128 less 2–24 hops, mostly DF, some 802.1Q-tagged
//! clients (for a director with `vlan = "balance"`), some SYNs with IP
//! options), DNS-like UDP sessions (some with a zero UDP checksum, some
//! ending with the client's ICMP port unreachable quoting the server's
//! reply, some NAT ones with the real server's port unreachable quoting the
//! client's query), plus a share of "other" frames and of malformed frames: see
//! [`Category`]. IPv6 sessions are the same but for what IPv6 does not have
//! (IP options, DF, zero UDP checksums; the client's error is ICMPv6 port
//! unreachable, quoting up to 1232 bytes); when the rules have an IPv6 service the other and malformed frames
//! include IPv6 ones aimed at its VIP (hop limit 1, a truncated header, a
//! wrong Payload Length, broken extension-header chains: see
//! [`Category::is_ipv6`]).
//!
//! Everything is derived from [`TrafficSpec::seed`] with [`SplitMix64`] and
//! integer arithmetic only, so a spec gives byte-identical output on every
//! run and host.
//!
//! # Open loop ([`established_flows`])
//!
//! For benchmarks that need millions of frames of established traffic: `N`
//! flows' handshakes (run through a private director only to learn each
//! flow's real server), then `M` data frames round-robin over the flows,
//! built from per-flow templates with incremental checksum updates; flows
//! to IPv6 services are IPv6 as in the closed loop. See [`FlowSpec`].
//!
//! ```
//! use lvsnic_model::config::DirectorConfig;
//! use lvsnic_model::rules::ipvsadm::parse_rules;
//! use lvsnic_traffic::{generate_capture, Category, TrafficSpec};
//!
//! let cfg = DirectorConfig::parse(r#"
//!     [director]
//!     ip = "10.0.0.1"
//!     mac = "02:00:00:00:00:01"
//!     gateway_mac = "02:00:00:00:00:fe"
//!     [neighbors]
//!     "192.168.10.1" = "02:00:00:00:10:01"
//! "#).unwrap();
//! let rules = parse_rules("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m\n").unwrap();
//! let spec = TrafficSpec { connections: 20, clients: 5, ..TrafficSpec::default() };
//! let cap = generate_capture(&spec, &cfg, &rules).unwrap();
//! assert!(cap.records.windows(2).all(|w| w[1].ts_ns >= w[0].ts_ns + 1000));
//! assert_eq!(cap.counts.connections, 20);
//! assert!(cap.counts.category(Category::TcpServer) > 0); // NAT replies
//! ```

mod flows;
mod frames;
pub mod fuzz;
mod sim;

pub use flows::{established_flows, FlowSpec};

use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::{Action, Counters, Director, DirectorError, DropReason, HostReason};
use lvsnic_model::pcap::PcapRecord;
use lvsnic_model::rng::SplitMix64;
use lvsnic_model::rules::{FwdMethod, Protocol, RuleSet};
use lvsnic_model::time::{Time, SEC};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};

/// Default start of virtual time: 2023-11-14T22:13:20Z.
pub const DEFAULT_START: Time = 1_700_000_000 * SEC;

/// What to generate. Fractions are probabilities in `0.0..=1.0`; the
/// `*_fraction` knobs that describe sessions are applied as quotas (that
/// share of the eligible sessions, rounded, and at least one when the
/// fraction is non-zero and a session is eligible), so a capture of
/// moderate size contains every feature.
#[derive(Clone, Debug, PartialEq)]
pub struct TrafficSpec {
    /// Seed of everything.
    pub seed: u64,
    /// TCP and UDP sessions (connections the clients open), port reuses
    /// included.
    pub connections: usize,
    /// Distinct client addresses (1..=100 000).
    pub clients: usize,
    /// Time of the first session start.
    pub start: Time,
    /// Span of session start times (uniform over `start..start + duration`);
    /// the capture lasts longer (sessions, idle gaps, port reuse).
    pub duration: Time,
    /// Share of sessions that are UDP (when the rules have both TCP and UDP
    /// services).
    pub udp_fraction: f64,
    /// Share of the capture's frames that are "other" frames (ARP, ICMP
    /// echo, traffic to the director, IPv6, ...).
    pub other_fraction: f64,
    /// Share of the capture's frames that are deliberately malformed.
    pub malformed_fraction: f64,
    /// Share of sessions that fall silent for [`idle_gap`](Self::idle_gap)
    /// between two exchanges.
    pub idle_gap_fraction: f64,
    /// Length of an idle gap; `None`: the protocol's timeout in the director
    /// configuration (TCP ESTABLISHED or UDP) plus 5–30 s, so the director
    /// expires the connection during the gap.
    pub idle_gap: Option<Time>,
    /// Share of TCP sessions that are half-open: a SYN only.
    pub half_open_fraction: f64,
    /// Share of TCP sessions aborted by a RST (half by the client, half by
    /// the server).
    pub rst_fraction: f64,
    /// Share of sessions that reuse the client port of an earlier session
    /// after that one's TIME_WAIT (61–90 s after its close).
    pub port_reuse_fraction: f64,
    /// Share of sessions whose client frames carry an 802.1Q tag (only for a
    /// director with `vlan = "balance"`; the default one drops tagged frames).
    pub vlan_fraction: f64,
    /// Share of TCP sessions whose SYN carries an IPv4 Timestamp option.
    pub ip_options_fraction: f64,
    /// Share of sessions whose client does not set DF.
    pub no_df_fraction: f64,
    /// Share of TCP sessions whose first request is an upload (several
    /// full-size segments).
    pub upload_fraction: f64,
    /// Share of UDP sessions whose client sends a zero UDP checksum.
    pub zero_checksum_fraction: f64,
    /// Share of UDP sessions that end with the client's ICMP port
    /// unreachable quoting the server's last reply.
    pub icmp_error_fraction: f64,
    /// Share of UDP sessions whose real server, when the director forwards
    /// the session by NAT, answers the first query with an ICMP (IPv6:
    /// ICMPv6) port unreachable instead of a reply (nothing listens there),
    /// which the director relays to the client (`ip_vs_out_icmp`).
    pub server_icmp_error_fraction: f64,
    /// Share of sessions to persistent services that come as a burst of 2–4
    /// connections from the same client.
    pub persistent_burst_fraction: f64,
}

impl Default for TrafficSpec {
    fn default() -> Self {
        TrafficSpec {
            seed: 1,
            connections: 1000,
            clients: 100,
            start: DEFAULT_START,
            duration: 60 * SEC,
            udp_fraction: 0.2,
            other_fraction: 0.05,
            malformed_fraction: 0.01,
            idle_gap_fraction: 0.02,
            idle_gap: None,
            half_open_fraction: 0.03,
            rst_fraction: 0.06,
            port_reuse_fraction: 0.03,
            vlan_fraction: 0.02,
            ip_options_fraction: 0.01,
            no_df_fraction: 0.1,
            upload_fraction: 0.1,
            zero_checksum_fraction: 0.1,
            icmp_error_fraction: 0.05,
            server_icmp_error_fraction: 0.05,
            persistent_burst_fraction: 0.3,
        }
    }
}

/// Largest number of clients.
pub const MAX_CLIENTS: usize = 100_000;

/// Most sessions one client may open (the ephemeral range 32768..=60999
/// holds 28 232 ports; ports are not reused within a capture except
/// deliberately).
pub const MAX_SESSIONS_PER_CLIENT: usize = 20_000;

impl TrafficSpec {
    /// Checks the fractions and sizes.
    pub fn validate(&self) -> Result<(), TrafficError> {
        let fractions = [
            ("udp_fraction", self.udp_fraction),
            ("other_fraction", self.other_fraction),
            ("malformed_fraction", self.malformed_fraction),
            ("idle_gap_fraction", self.idle_gap_fraction),
            ("half_open_fraction", self.half_open_fraction),
            ("rst_fraction", self.rst_fraction),
            ("port_reuse_fraction", self.port_reuse_fraction),
            ("vlan_fraction", self.vlan_fraction),
            ("ip_options_fraction", self.ip_options_fraction),
            ("no_df_fraction", self.no_df_fraction),
            ("upload_fraction", self.upload_fraction),
            ("zero_checksum_fraction", self.zero_checksum_fraction),
            ("icmp_error_fraction", self.icmp_error_fraction),
            ("server_icmp_error_fraction", self.server_icmp_error_fraction),
            ("persistent_burst_fraction", self.persistent_burst_fraction),
        ];
        for (name, f) in fractions {
            if !(0.0..=1.0).contains(&f) {
                return Err(TrafficError::Spec(format!("{name} {f} is not between 0 and 1")));
            }
        }
        if self.other_fraction + self.malformed_fraction > 0.9 {
            return Err(TrafficError::Spec(format!(
                "other ({}) and malformed ({}) fractions add up to more than 0.9: no room for sessions",
                self.other_fraction, self.malformed_fraction
            )));
        }
        if self.clients == 0 || self.clients > MAX_CLIENTS {
            return Err(TrafficError::Spec(format!("clients {} is not between 1 and {MAX_CLIENTS}", self.clients)));
        }
        // pcap seconds are 32-bit: leave a day for the sessions.
        let limit = (u32::MAX as u64 - 86_400) * SEC;
        if self.start.saturating_add(self.duration) > limit {
            return Err(TrafficError::Spec(
                "start + duration is beyond what a pcap timestamp holds (year 2106)".into(),
            ));
        }
        if self.idle_gap.is_some_and(|g| g > 86_400 * SEC / 2) {
            return Err(TrafficError::Spec("idle gap longer than 12 hours".into()));
        }
        Ok(())
    }
}

/// Why traffic cannot be generated (one line).
#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    /// The rules or configuration do not make a director.
    #[error("{0}")]
    Director(#[from] DirectorError),
    /// A spec value is out of range.
    #[error("invalid traffic spec: {0}")]
    Spec(String),
    /// Sessions were asked for but there is nothing to connect to.
    #[error("the rules have no TCP or UDP virtual service to open connections to")]
    NoServices,
}

macro_rules! categories {
    ($($(#[$m:meta])* $v:ident = $name:literal,)*) => {
        /// What a frame of the capture is (the generator's intent).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Category { $($(#[$m])* $v,)* }

        impl Category {
            /// Every category, in declaration order.
            pub const ALL: &'static [Category] = &[$(Category::$v,)*];

            /// Short snake_case name.
            pub fn name(self) -> &'static str {
                match self { $(Category::$v => $name,)* }
            }
        }
    };
}

categories! {
    /// A client's segment of a TCP session.
    TcpClient = "tcp_client",
    /// A real server's segment of a NAT TCP session (a NAT reply).
    TcpServer = "tcp_server",
    /// A client's datagram of a UDP session.
    UdpClient = "udp_client",
    /// A real server's datagram of a NAT UDP session.
    UdpServer = "udp_server",
    /// The first client segment after an idle gap (the director normally
    /// forgot the connection: to its stack as "not SYN").
    TcpIdleResume = "tcp_idle_resume",
    /// A client's ICMP (IPv6: ICMPv6) port unreachable quoting a
    /// server→client datagram.
    ClientIcmpError = "client_icmp_error",
    /// A NAT real server's ICMP (IPv6: ICMPv6) port unreachable quoting a
    /// client→server datagram as the server received it.
    ServerIcmpError = "server_icmp_error",
    /// A full-size DF client packet to a tunnel service (provokes ICMP
    /// fragmentation needed): a session segment, or a SYN with data.
    OversizeDfTunnel = "oversize_df_tunnel",
    /// ARP request for a VIP.
    ArpVip = "arp_vip",
    /// ARP request for the director's address.
    ArpDirector = "arp_director",
    /// ARP request for an unrelated address, or a gratuitous ARP reply.
    ArpOther = "arp_other",
    /// ICMP echo request to a VIP.
    IcmpEchoVip = "icmp_echo_vip",
    /// ICMP echo request to the director's address.
    IcmpEchoDirector = "icmp_echo_director",
    /// TCP (ssh) to the director's own address.
    TcpToDirector = "tcp_to_director",
    /// TCP SYN to a VIP port without a service.
    SynNoService = "syn_no_service",
    /// TCP ACK to a VIP service with no connection.
    StrayAck = "stray_ack",
    /// IPv6 (neighbor solicitation, echo).
    Ipv6 = "ipv6",
    /// Another EtherType (LLDP).
    OtherEthertype = "other_ethertype",
    /// A frame for another host's MAC.
    OtherMac = "other_mac",
    /// An IPv4 broadcast (DHCP discover).
    Broadcast = "broadcast",
    /// A TCP SYN or UDP datagram to a VIP service arriving with TTL 1.
    Ttl1 = "ttl1",
    /// A TCP SYN or UDP datagram to an IPv6 VIP service arriving with hop
    /// limit 1.
    HopLimit1 = "hop_limit1",
    /// An IPv4 fragment (of a UDP datagram to a VIP).
    Fragment = "fragment",
    /// IPv4 with options: ICMP echo with Record Route to a VIP.
    IpOptions = "ip_options",
    /// Malformed: shorter than an Ethernet header.
    MalformedRunt = "malformed_runt",
    /// Malformed: IPv4 EtherType, fewer than 20 bytes of header.
    MalformedTruncatedIpv4 = "malformed_truncated_ipv4",
    /// Malformed: IPv4 EtherType, version not 4.
    MalformedBadVersion = "malformed_bad_version",
    /// Malformed: IHL below 5.
    MalformedBadIhl = "malformed_bad_ihl",
    /// Malformed: wrong IPv4 header checksum.
    MalformedBadChecksum = "malformed_bad_checksum",
    /// Malformed: Total Length larger than the frame.
    MalformedTotalLength = "malformed_total_length",
    /// Malformed: TCP header cut short by Total Length.
    MalformedTruncatedTcp = "malformed_truncated_tcp",
    /// Malformed: IPv6 EtherType, fewer than 40 bytes of header.
    MalformedTruncatedIpv6 = "malformed_truncated_ipv6",
    /// Malformed: IPv6 Payload Length larger than the frame.
    MalformedIpv6PayloadLength = "malformed_ipv6_payload_length",
    /// Malformed: IPv6 Payload Length shorter than the TCP header (the frame
    /// holds all of it).
    MalformedIpv6ShortPayload = "malformed_ipv6_short_payload",
    /// Malformed: an IPv6 Hop-by-Hop Options header whose length runs past
    /// the packet, so the next header of the chain is missing.
    MalformedIpv6HopByHop = "malformed_ipv6_hop_by_hop",
    /// Malformed: an IPv6 Destination Options header whose Next Header is
    /// an unassigned protocol number.
    MalformedIpv6UnknownNext = "malformed_ipv6_unknown_next",
}

impl Category {
    /// Number of categories.
    pub const COUNT: usize = Category::ALL.len();

    /// Whether the frame is deliberately malformed.
    pub fn is_malformed(self) -> bool {
        self >= Category::MalformedRunt
    }

    /// Whether the category is an IPv6 frame aimed at an IPv6 VIP, dealt
    /// only when the rules have an IPv6 TCP or UDP service (sessions to
    /// IPv6 services are [`TcpClient`](Self::TcpClient) and the like).
    pub fn is_ipv6(self) -> bool {
        matches!(
            self,
            Category::HopLimit1
                | Category::MalformedTruncatedIpv6
                | Category::MalformedIpv6PayloadLength
                | Category::MalformedIpv6ShortPayload
                | Category::MalformedIpv6HopByHop
                | Category::MalformedIpv6UnknownNext
        )
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What the director did with a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Transmitted, rewritten (NAT, DR, TUN, possibly fragmented).
    Forwarded,
    /// Answered with an ARP reply.
    ArpReply,
    /// Answered with an ICMP error instead (the reason says which).
    IcmpError(DropReason),
    /// Handed to the director's own network stack.
    ToHost(HostReason),
    /// Dropped without an answer.
    Dropped(DropReason),
    /// A fragment kept until the rest of its datagram arrives.
    Held,
}

impl Outcome {
    /// Runs `frame` through `d` at `ts` ([`Director::process`]) and
    /// classifies the result using the director's counters.
    pub fn of(d: &mut Director, ts: Time, frame: &mut Vec<u8>, extra: &mut Vec<Vec<u8>>) -> Outcome {
        let drops = d.counters.drop;
        let arp = d.counters.arp_replies;
        match d.process(ts, frame, extra) {
            Action::Transmit => {
                if d.counters.arp_replies != arp {
                    Outcome::ArpReply
                } else if let Some(i) = (0..drops.len()).find(|&i| d.counters.drop[i] != drops[i]) {
                    Outcome::IcmpError(DropReason::ALL[i])
                } else {
                    Outcome::Forwarded
                }
            }
            Action::ToHost(r) => Outcome::ToHost(r),
            Action::Drop(r) => Outcome::Dropped(r),
            Action::Held => Outcome::Held,
        }
    }
}

/// What the generator knows about one frame of the capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameTag {
    /// What the frame is.
    pub category: Category,
    /// The session it belongs to (index into [`Capture::sessions`]).
    pub session: Option<u32>,
    /// What the generator's director did with it.
    pub outcome: Outcome,
}

/// How a session was planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionKind {
    /// Handshake, exchanges, close.
    Normal,
    /// A SYN only (the real server's SYN-ACKs go unanswered).
    HalfOpen,
    /// Falls silent for the idle gap between two exchanges.
    Idle,
    /// Reuses the client port of an earlier session after its TIME_WAIT.
    PortReuse,
}

/// How a session ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SessionEnd {
    /// Not ended (the simulation runs every session to its end, so a
    /// finished capture has none).
    Open,
    /// Client sent the first FIN.
    ClientClose,
    /// Server sent the first FIN.
    ServerClose,
    /// Client aborted with RST.
    ClientReset,
    /// Server aborted with RST.
    ServerReset,
    /// Half-open: the handshake was never completed.
    HalfOpen,
    /// UDP exchange(s) done (or ended by the client's ICMP error).
    Completed,
    /// The director no longer knew the connection after an idle gap; the
    /// director's stack reset it.
    IdleReset,
    /// Refused: ICMP error, or handed to the director's stack.
    Refused,
    /// Retransmissions exhausted.
    GaveUp,
    /// A real server's frame was not forwarded; the client heard nothing
    /// more.
    Lost,
}

/// One simulated session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    /// TCP or UDP.
    pub protocol: Protocol,
    /// Client address and port (IPv6 for an IPv6 service).
    pub client: SocketAddr,
    /// The virtual service (VIP and port) it connects to.
    pub service: SocketAddr,
    /// When its first frame was due.
    pub start: Time,
    /// How it was planned.
    pub kind: SessionKind,
    /// Burst of connections from one client to a persistent service.
    pub burst: Option<u32>,
    /// The session whose client port this one reuses.
    pub reuses: Option<u32>,
    /// Client frames 802.1Q-tagged.
    pub vlan: bool,
    /// The SYN carries IPv4 options (IPv4 sessions only).
    pub ip_options: bool,
    /// The client sets DF (meaningless for IPv6, which has no DF: always
    /// set there).
    pub dont_frag: bool,
    /// The first request is an upload.
    pub upload: bool,
    /// UDP client sends zero checksums (IPv4 sessions only).
    pub zero_checksum: bool,
    /// UDP client ends with an ICMP port unreachable about the last reply
    /// (ICMPv6 destination unreachable, code 4, in IPv6 sessions).
    pub client_icmp_error: bool,
    /// The NAT real server answered the first query with an ICMP port
    /// unreachable (drawn for UDP sessions; cleared when the director
    /// chose DR or TUN, whose server's error does not pass the director).
    pub server_icmp_error: bool,
    /// The real server the director chose (the last one, for UDP sessions
    /// whose connection was rescheduled after an idle gap).
    pub real_server: Option<SocketAddr>,
    /// Its forwarding method.
    pub forwarding: Option<FwdMethod>,
    /// How it ended.
    pub end: SessionEnd,
    /// Frames of the session in the capture.
    pub frames: u32,
}

/// Per-category and per-feature counts of a capture, and the counters of
/// the generator's director after the last frame.
#[derive(Clone, Debug, Default)]
pub struct TrafficCounts {
    /// Frames in the capture.
    pub frames: u64,
    /// Bytes in the capture (frame lengths).
    pub bytes: u64,
    /// Sessions (connections opened by clients).
    pub connections: u64,
    /// TCP sessions.
    pub tcp_sessions: u64,
    /// UDP sessions.
    pub udp_sessions: u64,
    /// Sessions to IPv6 services (TCP and UDP).
    pub ipv6_sessions: u64,
    /// Well-formed IPv6 frames (of sessions and other).
    pub ipv6_frames: u64,
    /// Frames of sessions (session steps, their idle resumes, their
    /// clients' ICMP errors, their bouncing oversized segments).
    pub session_frames: u64,
    /// "Other" frames (not of a session, not malformed).
    pub other_frames: u64,
    /// Deliberately malformed frames.
    pub malformed_frames: u64,
    /// Frames per [`Category`] (index = declaration order; see
    /// [`category`](Self::category)).
    pub categories: Vec<u64>,
    /// TCP handshakes completed.
    pub handshakes: u64,
    /// Sessions by how they ended.
    pub ends: std::collections::BTreeMap<String, u64>,
    /// Idle gaps taken.
    pub idle_gaps: u64,
    /// Sessions reusing a client port after TIME_WAIT.
    pub port_reuses: u64,
    /// Bursts of connections to persistent services.
    pub persistent_bursts: u64,
    /// Retransmitted SYNs, segments and queries.
    pub retransmissions: u64,
    /// Times a client lowered its MSS after ICMP fragmentation needed.
    pub pmtu_reductions: u64,
    /// Frames with an 802.1Q tag.
    pub vlan_frames: u64,
    /// IPv4 frames with options.
    pub ip_option_frames: u64,
    /// IPv4 frames with DF.
    pub df_frames: u64,
    /// UDP frames with a zero checksum.
    pub zero_checksum_frames: u64,
    /// IPv4 frames arriving with TTL above 64 (Windows-like clients, initial
    /// TTL 128).
    pub ttl128_frames: u64,
    /// IPv4 frames arriving with TTL 2..=64 (Linux-like clients and the real
    /// servers, initial TTL 64).
    pub ttl64_frames: u64,
    /// The generator's director counters after the last frame (a fresh
    /// director replaying the capture ends with the same).
    pub director: Counters,
}

impl TrafficCounts {
    /// Frames of category `c`.
    pub fn category(&self, c: Category) -> u64 {
        self.categories.get(c.index()).copied().unwrap_or(0)
    }

    /// Sessions that ended as `e`.
    pub fn ended(&self, e: SessionEnd) -> u64 {
        self.ends.get(&format!("{e:?}")).copied().unwrap_or(0)
    }
}

/// A generated capture with what the generator knows about it.
#[derive(Clone, Debug)]
pub struct Capture {
    /// The frames, strictly increasing timestamps at least 1 µs apart.
    pub records: Vec<PcapRecord>,
    /// One tag per record.
    pub tags: Vec<FrameTag>,
    /// The sessions, by index.
    pub sessions: Vec<SessionInfo>,
    /// Counts.
    pub counts: TrafficCounts,
}

/// The capture for `spec` (see the module documentation).
pub fn generate(spec: &TrafficSpec, cfg: &DirectorConfig, rules: &RuleSet) -> Result<Vec<PcapRecord>, TrafficError> {
    Ok(generate_capture(spec, cfg, rules)?.records)
}

/// The capture for `spec` with per-frame tags, sessions and counts.
pub fn generate_capture(spec: &TrafficSpec, cfg: &DirectorConfig, rules: &RuleSet) -> Result<Capture, TrafficError> {
    spec.validate()?;
    if cfg.gateway_mac.is_none() {
        return Err(DirectorError::NoGatewayMac.into());
    }
    sim::run(spec, cfg, rules)
}

/// A sub-seed for stream `n` of `seed`, so independent parts of a run draw
/// from independent sequences.
fn subseed(seed: u64, n: u64) -> u64 {
    let mut r = SplitMix64::new(seed ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
    r.next_u64()
}

/// `n` distinct client addresses of 198.18.0.0/15 (RFC 2544 benchmarking
/// space) in random order: a random affine bijection of the 2^17
/// addresses, skipping those ending in .0 or .255.
fn client_addrs(n: usize, r: &mut SplitMix64) -> Vec<Ipv4Addr> {
    let base = u32::from(Ipv4Addr::new(198, 18, 0, 0));
    let mul = (r.next_u64() as u32 | 1) & 0x1_FFFF;
    let add = r.next_u64() as u32 & 0x1_FFFF;
    let mut out = Vec::with_capacity(n);
    let mut k = 0u32;
    while out.len() < n && k < 1 << 17 {
        let a = Ipv4Addr::from(base + (k.wrapping_mul(mul).wrapping_add(add) & 0x1_FFFF));
        k += 1;
        if !matches!(a.octets()[3], 0 | 255) {
            out.push(a);
        }
    }
    out
}

/// The IPv6 address of the client whose IPv4 address is `v4`:
/// 2001:db8:c::/64 (documentation space) with `v4` as the low 32 bits.
pub fn client_addr6(v4: Ipv4Addr) -> Ipv6Addr {
    let o = v4.octets();
    Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, u16::from_be_bytes([o[0], o[1]]), u16::from_be_bytes([o[2], o[3]]))
}

/// Converts a fraction to a threshold out of 2^32 (exact IEEE arithmetic,
/// same on every host).
fn per_2_32(f: f64) -> u64 {
    (f * 4_294_967_296.0) as u64
}
