//! No half-open connections in the card (issue 22, item 3), on the `model`
//! backend, every frame checked byte for byte against the golden model
//! alone (a `Director` with the same rules and configuration):
//!
//! * spoofed SYNs from random sources to a NAT and a DR service install no
//!   flow; a real connection's frames after the handshake leave the card;
//! * UDP: NAT offloaded on the first reply, DR on the client's second
//!   packet; a one-packet flood installs nothing;
//! * a full table: a connection that does not fit is marked unplaceable,
//!   its next frames run no placement search (`placements` stays), and
//!   `table_full` counts the failed searches, not the frames;
//! * eviction: an entry idle for `evict_idle` in the candidate buckets
//!   gives its slot to an active connection that did not fit; one recently
//!   active does not.

use lvsnic::device::model::{ModelDevice, MODEL_PARAMS};
use lvsnic::device::rings::RingConfig;
use lvsnic::flows::EVICT_IDLE;
use lvsnic::slowpath::{FrameResult, SlowPath};
use lvsnic_fixtures::*;
use lvsnic_model::director::Director;
use lvsnic_model::hw::HwParams;
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::{Time, MSEC};
use lvsnic_model::wire::{TCP_ACK, TCP_PSH, TCP_SYN};
use std::net::Ipv4Addr;

const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -m -w 1\n\
-A -t 10.0.0.100:81 -s rr\n-a -t 10.0.0.100:81 -r 192.168.10.2:81 -g -w 1\n\
-A -u 10.0.0.100:53 -s rr\n-a -u 10.0.0.100:53 -r 192.168.10.1:53 -m -w 1\n\
-A -u 10.0.0.100:54 -s rr\n-a -u 10.0.0.100:54 -r 192.168.10.2:54 -g -w 1\n\
-A -t 10.0.0.100:82 -s rr\n-a -t 10.0.0.100:82 -r 192.168.10.1:82 -m -w 1\n-a -t 10.0.0.100:82 -r 192.168.10.2:82 -m -w 1\n";

/// The card under test and the golden model beside it.
struct Pair {
    sp: SlowPath<ModelDevice>,
    golden: Director,
}

impl Pair {
    fn new(params: HwParams) -> Pair {
        Pair::with(params, "")
    }

    fn with(params: HwParams, extra: &str) -> Pair {
        let rules = parse_rules(RULES).unwrap();
        let d = Director::new(config(extra), &rules, T0).unwrap();
        let golden = Director::new(config(extra), &rules, T0).unwrap();
        let dev = ModelDevice::model(params, RingConfig::default()).unwrap();
        Pair { sp: SlowPath::new(d, dev, params).unwrap(), golden }
    }

    /// One frame through the card and through the golden model: the same
    /// frames leave.
    fn frame(&mut self, t: Time, f: &[u8]) -> FrameResult {
        let r = self.sp.frame(t, f).unwrap();
        let want = match feed(&mut self.golden, t, f) {
            Out::Tx(v) => v,
            _ => Vec::new(),
        };
        assert_eq!(r.tx, want, "the card's frames differ from the golden model's at t={t}");
        r
    }

    fn flow_entries(&self) -> usize {
        self.sp.flows.table_use().0
    }
}

/// A deterministic stream of "random" client addresses and ports.
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn client(&mut self) -> (Ipv4Addr, u16) {
        let a = 0x0100_0000 + (self.next() as u32 % 0xDF00_0000);
        (Ipv4Addr::from(a), 1024 + (self.next() % 60000) as u16)
    }
}

fn from(c: (Ipv4Addr, u16), vport: u16, flags: u8, seq: u32, ack: u32, payload: &[u8]) -> Vec<u8> {
    tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, vport, flags, seq, ack, payload)
}

/// Spoofed SYNs to the NAT (port 80) and DR (port 81) services take no
/// slot; a real connection completing its handshake afterwards is
/// offloaded, and its data leaves the card.
#[test]
fn spoofed_syns_install_nothing_and_a_real_connection_is_offloaded() {
    let mut p = Pair::new(MODEL_PARAMS);
    let mut rng = Lcg(22);
    let mut t = T0;
    for i in 0..4000u32 {
        t += 10_000;
        let c = rng.client();
        let r = p.frame(t, &from(c, if i % 2 == 0 { 80 } else { 81 }, TCP_SYN, i, 0, b""));
        assert_eq!(r.tx.len(), 1, "each SYN is forwarded as the kernel does");
    }
    assert_eq!(p.sp.director.conns.len(), 4000, "the director keeps its SYN_RECV entries");
    assert_eq!((p.sp.flows.len(), p.flow_entries()), (0, 0), "no half-open connection in the card");
    assert_eq!(p.sp.flows.placements, 0, "no placement search for a SYN");
    assert!(p.sp.flows.deferred >= 4000);

    // NAT: SYN, the real server's SYN-ACK, the client's ACK (ESTABLISHED), data.
    let c = (Ipv4Addr::new(198, 51, 100, 7), 40000);
    t += MSEC;
    assert!(!p.frame(t, &from(c, 80, TCP_SYN, 100, 0, b"")).in_hardware);
    assert_eq!(p.sp.flows.len(), 0);
    t += MSEC;
    let syn_ack = tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c.0), 80, c.1, TCP_SYN | TCP_ACK, 900, 101, b"");
    p.frame(t, &syn_ack);
    assert_eq!(p.sp.flows.len(), 0, "still SYN_RECV: not offloaded");
    t += MSEC;
    p.frame(t, &from(c, 80, TCP_ACK, 101, 901, b""));
    assert_eq!((p.sp.flows.len(), p.flow_entries()), (1, 2), "ESTABLISHED: request and reply flows");
    t += MSEC;
    assert!(p.frame(t, &from(c, 80, TCP_ACK | TCP_PSH, 101, 901, b"GET /")).in_hardware, "request by the card");
    t += MSEC;
    let reply = tcp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c.0), 80, c.1, TCP_ACK | TCP_PSH, 901, 106, b"200 OK");
    assert!(p.frame(t, &reply).in_hardware, "reply by the card");

    // DR: the director sees the client side only; its ACK makes it ESTABLISHED.
    let c = (Ipv4Addr::new(198, 51, 100, 8), 40001);
    t += MSEC;
    p.frame(t, &from(c, 81, TCP_SYN, 100, 0, b""));
    assert_eq!(p.sp.flows.len(), 1);
    t += MSEC;
    p.frame(t, &from(c, 81, TCP_ACK, 101, 901, b""));
    assert_eq!((p.sp.flows.len(), p.flow_entries()), (2, 3), "DR: one request flow");
    t += MSEC;
    assert!(p.frame(t, &from(c, 81, TCP_ACK | TCP_PSH, 101, 901, b"GET /")).in_hardware);
}

/// UDP: a flood of one packet per random source installs nothing; NAT is
/// offloaded on the real server's first reply, DR on the client's second
/// packet.
#[test]
fn udp_offloaded_on_the_first_reply_nat_or_the_second_packet_dr() {
    let mut p = Pair::new(MODEL_PARAMS);
    let mut rng = Lcg(53);
    let mut t = T0;
    for i in 0..2000u32 {
        t += 10_000;
        let c = rng.client();
        let f = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, if i % 2 == 0 { 53 } else { 54 }, b"q", false);
        assert_eq!(p.frame(t, &f).tx.len(), 1);
    }
    assert_eq!((p.sp.flows.len(), p.flow_entries()), (0, 0), "one-packet flows stay in software");

    let c = (Ipv4Addr::new(198, 51, 100, 9), 5353);
    let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, 53, b"query", false);
    t += MSEC;
    p.frame(t, &q);
    t += MSEC;
    assert!(!p.frame(t, &q).in_hardware, "NAT: a second request is not a reply");
    assert_eq!(p.sp.flows.len(), 0);
    t += MSEC;
    let a = udp(rs_mac(1), DIRECTOR_MAC, Ip::new(rs(1), c.0), 53, c.1, b"answer", false);
    assert!(!p.frame(t, &a).in_hardware);
    assert_eq!((p.sp.flows.len(), p.flow_entries()), (1, 2), "NAT: offloaded on the first reply");
    t += MSEC;
    assert!(p.frame(t, &q).in_hardware);
    t += MSEC;
    assert!(p.frame(t, &a).in_hardware);

    let q = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c.0, VIP), c.1, 54, b"query", false);
    t += MSEC;
    p.frame(t, &q);
    assert_eq!(p.sp.flows.len(), 1, "DR: one packet is not enough");
    t += MSEC;
    assert!(!p.frame(t, &q).in_hardware);
    assert_eq!(p.sp.flows.len(), 2, "DR: offloaded on the second packet");
    t += MSEC;
    assert!(p.frame(t, &q).in_hardware);
}

/// A tiny table (2 ways × 16 buckets × 4 slots = 128 slots, the smallest a card may report).
const TINY: HwParams = HwParams { data_width: 64, flow_buckets_log2: 4, action_log2: 4, vip_count: 4, ipv6: true };

/// Opens DR connections (port 81) from distinct clients until one does
/// not fit; returns the established ones and the one that did not fit.
fn fill(p: &mut Pair, t: &mut Time) -> (Vec<(Ipv4Addr, u16)>, (Ipv4Addr, u16)) {
    let mut rng = Lcg(7);
    let mut placed = Vec::new();
    for _ in 0..1000 {
        let c = rng.client();
        *t += 1000;
        p.frame(*t, &from(c, 81, TCP_SYN, 1, 0, b""));
        *t += 1000;
        p.frame(*t, &from(c, 81, TCP_ACK, 2, 1, b""));
        if p.sp.flows.table_full > 0 {
            return (placed, c);
        }
        placed.push(c);
    }
    panic!("the table never filled");
}

/// Table full: the connection that did not fit runs no placement search
/// on its next frames; `table_full` counts searches, not frames; an
/// established connection's frames are byte-identical either way. Then
/// eviction: entries active 0.7 s ago are not evicted, entries idle for
/// `EVICT_IDLE` are, and the active connection takes the slot.
#[test]
fn table_full_costs_no_search_per_frame_and_an_idle_entry_is_evicted() {
    assert_eq!(EVICT_IDLE, 1000 * MSEC);
    let mut p = Pair::new(TINY);
    let t0 = T0;
    let mut t = t0;
    let (placed, x) = fill(&mut p, &mut t);
    assert!(placed.len() > 80, "the table holds {} flows", placed.len());
    assert_eq!(p.sp.flows.len(), placed.len());
    assert_eq!(p.sp.flows.table_full, 1);
    assert_eq!(p.sp.flows.evicted, 0, "nothing idle yet");
    let searches = p.sp.flows.placements;

    // X's data: in software, byte for byte, no search.
    for i in 0..50u32 {
        t += 1000;
        let r = p.frame(t, &from(x, 81, TCP_ACK | TCP_PSH, 2 + i, 1, b"data"));
        assert!(!r.in_hardware);
    }
    assert_eq!(p.sp.flows.placements, searches, "an unplaceable connection's frames run no placement search");
    assert_eq!(p.sp.flows.placement_skipped, 50);
    assert_eq!(p.sp.flows.table_full, 1, "counted once, not per frame");

    // Every offloaded connection forwards a frame at t0 + 0.5 s (in the card).
    t = t0 + 500 * MSEC;
    for (i, &c) in placed.iter().enumerate() {
        t += 100;
        assert!(p.frame(t, &from(c, 81, TCP_ACK | TCP_PSH, 2, 1, b"x")).in_hardware, "connection {i} in the card");
    }
    // At t0 + 1.2 s X may search again (its mark ended at t0 + 1 s, when
    // the entries installed at t0 would have been idle for 1 s), but they
    // were active 0.7 s ago: no eviction, one more failed search.
    t = t0 + 1200 * MSEC;
    assert!(!p.frame(t, &from(x, 81, TCP_ACK | TCP_PSH, 100, 1, b"data")).in_hardware);
    assert_eq!(p.sp.flows.evicted, 0, "recently active entries are not evicted");
    assert_eq!(p.sp.flows.table_full, 2);
    assert_eq!(p.sp.flows.placements, searches + 1);
    // Until t0 + 1.5 s nothing can be evicted: no search.
    t = t0 + 1300 * MSEC;
    assert!(!p.frame(t, &from(x, 81, TCP_ACK | TCP_PSH, 101, 1, b"data")).in_hardware);
    assert_eq!(p.sp.flows.placements, searches + 1);
    // At t0 + 1.6 s the entries of X's buckets are idle for 1.1 s: one is
    // evicted, X takes its slot, and X's next frame leaves the card.
    t = t0 + 1600 * MSEC;
    assert!(!p.frame(t, &from(x, 81, TCP_ACK | TCP_PSH, 102, 1, b"data")).in_hardware);
    assert_eq!(p.sp.flows.evicted, 1);
    assert_eq!(p.sp.flows.len(), placed.len(), "one out, one in");
    t += MSEC;
    assert!(p.frame(t, &from(x, 81, TCP_ACK | TCP_PSH, 103, 1, b"data")).in_hardware, "X by the card");
    // The evicted connection's frames go through the host, byte-identical
    // (checked by `Pair::frame`), and it may come back.
    let out: Vec<_> = placed.iter().copied().filter(|&c| {
        t += 100;
        !p.frame(t, &from(c, 81, TCP_ACK | TCP_PSH, 3, 1, b"y")).in_hardware
    }).collect();
    // (An evicted connection coming back evicts, in turn, an entry idle
    // since t0 + 0.5 s: every frame that went through the host was an
    // evicted connection's.)
    assert!(!out.is_empty() && out.len() as u64 <= p.sp.flows.evicted, "{} through the host, {} evicted", out.len(), p.sp.flows.evicted);
}

/// A freed slot lets a connection marked unplaceable search again before
/// its mark ends: the DR server's flows leave the card (`-d`), and the
/// NAT connection that did not fit is offloaded on its next frame.
#[test]
fn a_freed_slot_lets_the_unplaceable_connection_search_again() {
    use lvsnic_model::rules::{Protocol, ServiceKey};
    let mut p = Pair::new(TINY);
    let mut t = T0;
    let (placed, _) = fill(&mut p, &mut t);
    // A NAT connection (two flows) that does not fit.
    let x = (Ipv4Addr::new(198, 51, 100, 77), 4242);
    t += 1000;
    p.frame(t, &from(x, 80, TCP_SYN, 1, 0, b""));
    t += 1000;
    p.frame(t, &from(x, 80, TCP_ACK, 2, 1, b""));
    assert_eq!(p.sp.flows.len(), placed.len(), "X did not fit");
    let searches = p.sp.flows.placements;
    t += 1000;
    assert!(!p.frame(t, &from(x, 80, TCP_ACK | TCP_PSH, 2, 1, b"a")).in_hardware);
    assert_eq!(p.sp.flows.placements, searches, "marked: no search");

    // The DR server goes: its flows leave the card a few per frame.
    let key = ServiceKey::Addr { proto: Protocol::Tcp, addr: VIP.into(), port: 81 };
    p.sp.del_dest(&key, rs(2), 81).unwrap();
    p.golden.del_dest(&key, rs(2), 81).unwrap();
    t += 1000;
    assert!(!p.frame(t, &from(x, 80, TCP_ACK | TCP_PSH, 3, 1, b"b")).in_hardware);
    assert!(p.sp.flows.placements > searches, "a freed slot: X searched again");
    assert!(p.sp.flows.len() < placed.len(), "the DR flows are leaving");
    assert!(p.sp.flows.is_offloaded(p.sp.director.conns.in_get(6, u32::from(x.0), x.1, u32::from(VIP), 80).unwrap()));
    t += 1000;
    assert!(p.frame(t, &from(x, 80, TCP_ACK | TCP_PSH, 4, 1, b"c")).in_hardware, "X by the card");
    assert_eq!(p.sp.flows.evicted, 0);
}

/// A SYN on a TIME_WAIT entry (`conn_reuse_mode` 1) makes a new
/// connection, scheduled afresh; on the kernel's timer wheel the old entry
/// lingers until the next jiffy. The new connection is not offloaded
/// (SYN_RECV), but the old one's flows must leave the card at once: the
/// client's ACK in the same jiffy belongs to the new connection and its
/// new real server, as the golden model sends it.
#[test]
fn a_new_connection_on_a_time_wait_entry_takes_its_keys_back_before_it_is_offloaded() {
    let mut p = Pair::with(MODEL_PARAMS, "[clock]\nhz = 250\njiffies = 4294892296\nat_ns = 1700000000123456789\n");
    let c = (Ipv4Addr::new(198, 51, 100, 5), 45000);
    let mut t = T0;
    let mut step = |p: &mut Pair, dt: Time, f: Vec<u8>| {
        t += dt;
        p.frame(t, &f)
    };
    let srv = |n: u8, flags: u8, seq: u32, ack: u32| tcp(rs_mac(n), DIRECTOR_MAC, Ip::new(rs(n), c.0), 82, c.1, flags, seq, ack, b"");
    let r = step(&mut p, MSEC, from(c, 82, TCP_SYN, 1, 0, b""));
    let first = if r.tx[0][..6] == rs_mac(1).0 { 1 } else { 2 };
    let other = 3 - first;
    assert_eq!(r.tx[0][..6], rs_mac(first).0);
    step(&mut p, MSEC, srv(first, TCP_SYN | TCP_ACK, 100, 2));
    step(&mut p, MSEC, from(c, 82, TCP_ACK, 2, 101, b""));
    assert_eq!(p.sp.flows.len(), 1, "ESTABLISHED: offloaded");
    step(&mut p, MSEC, from(c, 82, TCP_ACK | lvsnic_model::wire::TCP_FIN, 2, 101, b""));
    step(&mut p, MSEC, srv(first, TCP_ACK | lvsnic_model::wire::TCP_FIN, 101, 3));
    step(&mut p, MSEC, from(c, 82, TCP_ACK, 3, 102, b""));
    assert_eq!(p.sp.flows.len(), 1, "TIME_WAIT, still offloaded");
    // The same client port opens again: a new connection, to the other server.
    let r = step(&mut p, 10 * MSEC, from(c, 82, TCP_SYN, 5000, 0, b""));
    assert_eq!(r.tx[0][..6], rs_mac(other).0, "rr: the new connection to the other server");
    let on_card = p.sp.flows.len();
    // Its ACK within the same jiffy: to the new server, by the host
    // (checked against the golden model).
    let r = step(&mut p, 1000, from(c, 82, TCP_ACK, 5001, 1, b""));
    assert_eq!(r.tx[0][..6], rs_mac(other).0);
    assert!(!r.in_hardware);
    assert_eq!(on_card, 0, "the old flows had left the card at the SYN");
    // (The ACK made it ESTABLISHED: the new connection is offloaded now.)
    assert_eq!(p.sp.flows.len(), 1);
}
