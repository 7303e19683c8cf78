//! The `etherbone` backend against an emulated board (the hardware model
//! behind the management port's UDP protocol, `device::board_emu`): the
//! identity check, table programming and frames through the slow path
//! compared with the `model` backend (the reference), the inject path, and
//! what happens to lost replies and garbage datagrams.

#[path = "outcome_harness.rs"]
mod outcome;
use outcome::assert_same;
use lvsnic::device::board_emu::{BoardEmulator, EmulatedBoard, EMU_GLUE_BASE};
use lvsnic::device::etherbone::{EtherboneConfig, EtherboneDevice, EtherboneError, GlueMap};
use lvsnic::device::etherbone_wire::encode_exception;
use lvsnic::device::model::ModelDevice;
use lvsnic::device::rings::RingConfig;
use lvsnic::device::{check_core_identity, offer, take_injected, Device, DeviceError, Wire};
use lvsnic::replay::run_split;
use lvsnic::slowpath::SlowPath;
use lvsnic_fixtures::*;
use lvsnic_model::director::Director;
use lvsnic_model::hw::regs::{ID, ID_VALUE, VERSION_VALUE};
use lvsnic_model::hw::{Csr, HostMeta, HwOutput, HwParams, Reason};
use lvsnic_model::rules::ipvsadm::parse_rules;
use lvsnic_model::time::SEC;
use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
use lvsnic_traffic::{generate, TrafficSpec};
use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

/// Smaller tables than the model backend's: quicker to start, same code.
const PARAMS: HwParams = HwParams { data_width: 64, flow_buckets_log2: 10, action_log2: 8, vip_count: 16, ipv6: true };

fn board(params: HwParams) -> EmulatedBoard {
    EmulatedBoard::start(params).expect("emulated board")
}

fn model(params: HwParams) -> ModelDevice {
    ModelDevice::model(params, RingConfig::default()).unwrap()
}

#[test]
fn identity_and_glue_over_etherbone() {
    let mut b = board(PARAMS);
    assert_eq!(b.dev.identity.params, PARAMS);
    assert_eq!(b.dev.identity.version, VERSION_VALUE);
    assert_eq!(b.read32(ID), ID_VALUE);
    assert_eq!(check_core_identity(&mut b).unwrap().params, PARAMS);
    // The device pointed the board's exception datagrams at its own socket.
    let g = b.emu.glue_map();
    let local = b.dev.datagram_addr().unwrap();
    let IpAddr::V4(ip) = local.ip() else { panic!() };
    assert_eq!(b.read32(g.host_ip), u32::from(ip));
    assert_eq!(b.read32(g.host_port), local.port() as u32);
    // No DMA engine on a board: DMA_CAPS (0x800) reads 0.
    assert_eq!(b.read32(0x800), 0);
    assert_eq!(b.backend(), "etherbone");
    let c = b.counters();
    let m = c.management.unwrap();
    assert_eq!(m.glue.unwrap().host_frames, 0);
    assert_eq!((m.link.failures, m.link.retries, m.link.garbled), (0, 0, 0));
}

/// Consecutive register writes travel as one Etherbone record, in a packet
/// of their own, followed by the read packet that acknowledges them
/// (LiteEth cannot take writes and reads in one record: the emulator
/// stalls on one, as LiteEth does).
#[test]
fn consecutive_writes_are_batched() {
    let mut b = board(PARAMS);
    let before = b.emu.etherbone_requests();
    for i in 0..5 {
        b.write32(0x300 + 4 * i, 0x1111_0000 + i); // ACT_DATA0..4
    }
    b.dev.flush().unwrap();
    assert_eq!(b.emu.etherbone_requests() - before, 2);
    // The staging words are write-only; what they hold is written to the
    // action table and read back through ACT_RDATA.
    assert_eq!(b.read32(0x30C), 0);
    b.write32(0x320, 5); // ACT_INDEX
    b.write32(0x324, 1); // ACT_CMD = WRITE
    b.write32(0x324, 2); // ACT_CMD = READ
    assert_eq!(b.read32(0x320), 5);
    assert_eq!(b.read32(0x34C), 0x1111_0003); // ACT_RDATA3
    // A write elsewhere sends the queue first: order is kept.
    b.write32(0x024, 1); // VIP_VALID
    b.write32(0x100, 0x0A00_0064); // VIP[0]
    assert_eq!(b.read32(0x024), 1);
    assert_eq!(b.read32(0x100), 0x0A00_0064);
}

/// Generated traffic over every forwarding method through the slow path:
/// over Etherbone (tables programmed by Etherbone writes, exceptions as
/// datagrams, the director's frames injected as datagrams) exactly what the
/// `model` backend transmits and hands to the host, frame for frame.
#[test]
fn slow_path_over_etherbone_equals_model_backend() {
    let rules = parse_rules(MIXED_RULES).unwrap();
    let dcfg = config("");
    let spec = TrafficSpec { seed: 3, connections: 60, clients: 20, duration: 30 * SEC, ..TrafficSpec::default() };
    let recs = generate(&spec, &dcfg, &rules).expect("traffic");
    let start = recs.first().map(|r| r.ts_ns).unwrap_or(0);
    let sp = SlowPath::new(Director::new(dcfg.clone(), &rules, start).unwrap(), model(PARAMS), PARAMS).unwrap();
    let reference = run_split(sp, PARAMS, &recs).unwrap();
    let sp = SlowPath::new(Director::new(dcfg, &rules, start).unwrap(), board(PARAMS), PARAMS).unwrap();
    let over_eb = run_split(sp, PARAMS, &recs).unwrap();
    assert_same(&reference, &over_eb);
    assert_eq!(reference.in_hardware, over_eb.in_hardware);
    assert!(over_eb.in_hardware as usize > recs.len() / 4, "not vacuous: {} of {} in hardware", over_eb.in_hardware, recs.len());
}

/// One connection by hand (the DR service): the SYN goes to the host (an
/// exception datagram with its metadata), the director's DR rewrite is
/// injected; once the connection is established its packets are forwarded
/// by the core without the host. Whole frames, metadata and where each
/// frame was handled equal the model backend's.
#[test]
fn first_packet_to_host_later_forwarded_like_the_model() {
    let rules = parse_rules(MIXED_RULES).unwrap();
    let c = Ipv4Addr::new(172, 16, 0, 9);
    let pkt = |flags, seq, data: &[u8]| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(c, VIP), 40000, 443, flags, seq, 1, data);
    let frames = [pkt(TCP_SYN, 1, b""), pkt(TCP_ACK, 2, b""), pkt(TCP_ACK, 2, b"hello"), pkt(TCP_ACK, 7, b"world")];
    // The raw exception first: the core's metadata crosses intact.
    let mut eb = SlowPath::new(Director::new(config(""), &rules, T0).unwrap(), board(PARAMS), PARAMS).unwrap();
    let mut m = SlowPath::new(Director::new(config(""), &rules, T0).unwrap(), model(PARAMS), PARAMS).unwrap();
    let first = offer(&mut eb.dp, &frames[0], T0, 77).unwrap();
    let HwOutput::ToHost { meta, frame } = &first else { panic!("{first:?}") };
    assert_eq!((meta.reason, meta.vip, meta.seq, meta.ts), (Reason::MissVip, true, 77, T0));
    assert_eq!(frame, &frames[0]);
    assert_eq!(offer(&mut m.dp, &frames[0], T0, 77).unwrap(), first);
    let mut where_ = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let t = T0 + 1000 * i as u64;
        let (a, b) = (m.frame(t, f).unwrap(), eb.frame(t, f).unwrap());
        assert_eq!(a.tx, b.tx, "frame {i}");
        assert_eq!(b.tx.len(), 1, "frame {i}");
        assert_eq!((a.in_hardware, a.injected, a.host), (b.in_hardware, b.injected, b.host), "frame {i}");
        where_.push(b.in_hardware);
    }
    assert_eq!(where_.first(), Some(&false));
    assert_eq!(where_.last(), Some(&true), "{where_:?}");
    let c = eb.dp.counters();
    assert_eq!(c.core.rx, 5);
    assert_eq!(c.core.to_host + c.core.forwarded, 5);
    assert_eq!(c.rx.frames, c.core.to_host);
}

/// Frames the host injects leave the board's data port as the core's
/// inject path makes them (the model's `take_injected`); a frame too short
/// for the board is refused on the host.
#[test]
fn inject_path() {
    let mut b = board(PARAMS);
    let mut m = model(PARAMS);
    let f1 = udp(DIRECTOR_MAC, rs_mac(1), Ip::new(DIRECTOR_IP, rs(1)), 5000, 53, b"query", false);
    let f2 = tcp(DIRECTOR_MAC, GATEWAY_MAC, Ip::new(VIP, Ipv4Addr::new(172, 16, 0, 1)), 80, 999, TCP_ACK, 5, 6, b"x");
    let frames: [(&[u8], u32); 2] = [(&f1, 10), (&f2, 11)];
    assert_eq!(b.send(&frames).unwrap(), 2);
    assert_eq!(m.send(&frames).unwrap(), 2);
    let got = take_injected(&mut b, 2, 10).unwrap();
    assert_eq!(got, take_injected(&mut m, 2, 10).unwrap());
    assert_eq!(got, vec![f1.clone(), f2.clone()]);
    let c = b.counters();
    assert_eq!((c.tx.frames, c.core.injected), (2, 2));
    assert_eq!(c.management.unwrap().glue.unwrap().inject_frames, 2);
    let short = [0u8; 13];
    let e = b.send(&[(&short, 1)]).unwrap_err();
    assert!(matches!(e, DeviceError::Etherbone(EtherboneError::FrameLength { len: 13, .. })), "{e}");
}

/// A lost reply is sent again; when every try is lost the read gives
/// 0xFFFFFFFF and the next Device call the error, within tries x timeout.
#[test]
fn lost_and_garbled_replies() {
    let mut b = board(PARAMS);
    b.emu.drop_replies(1);
    assert_eq!(b.read32(ID), ID_VALUE);
    b.emu.garble_replies(1);
    assert_eq!(b.read32(ID), ID_VALUE);
    let link = b.dev.link_counters();
    assert_eq!((link.retries, link.garbled, link.failures), (2, 1, 0));
    assert!(b.recv(&mut Vec::new(), 8).is_ok());

    b.emu.drop_replies(3);
    let t0 = Instant::now();
    assert_eq!(b.read32(ID), 0xFFFF_FFFF);
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(600) && took < Duration::from_secs(3), "{took:?}");
    let e = b.recv(&mut Vec::new(), 8).unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, DeviceError::Etherbone(EtherboneError::NoReply { tries: 3, .. })), "{msg}");
    assert!(msg.starts_with("no Etherbone reply from 127.") && msg.contains("after 3 tries of 200 ms"), "{msg}");
    // Reported once; the board answers again.
    assert!(b.recv(&mut Vec::new(), 8).is_ok());
    assert_eq!(b.read32(ID), ID_VALUE);
    // Queued writes whose acknowledgement is lost fail the next send.
    b.write32(0x024, 3);
    b.emu.drop_replies(3);
    let e = b.send(&[]).unwrap_err();
    assert!(matches!(e, DeviceError::Etherbone(EtherboneError::NoReply { .. })), "{e}");
    // The writes were carried out (only the replies were lost).
    assert_eq!(b.read32(0x024), 3);
}

/// Datagrams that are not exception frames are counted and skipped.
#[test]
fn garbage_datagrams_are_counted_drops() {
    let mut b = board(PARAMS);
    let frame = udp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(Ipv4Addr::new(172, 16, 0, 2), DIRECTOR_IP), 1, 2, b"x", false);
    let good_meta = HostMeta { reason: Reason::Disabled, hit: false, vip: false, hash0: 0, seq: 5, ts: 99 };
    let mut bad_magic = encode_exception(good_meta.to_words(), &frame);
    bad_magic[20] = b'X';
    let mut bad_meta = encode_exception(good_meta.to_words(), &frame);
    bad_meta[2] = 0x80; // reserved bits
    for d in [&b"junk"[..], &[0u8; 24], &bad_magic, &bad_meta] {
        b.emu.send_to_host(d).unwrap();
    }
    b.emu.send_to_host(&encode_exception(good_meta.to_words(), &frame)).unwrap();
    assert!(b.dev.wait_datagrams(5, Duration::from_secs(5)));
    let mut out = Vec::new();
    assert_eq!(b.recv(&mut out, 16).unwrap(), 1);
    assert_eq!((out[0].meta, &out[0].data), (good_meta, &frame));
    let l = b.counters().management.unwrap().link;
    assert_eq!((l.datagrams, l.bad_short, l.bad_magic, l.bad_meta), (5, 2, 1, 1));
    // The core's own exceptions still arrive (core disabled: DISABLED).
    b.deliver(&frame, 1234, 6);
    out.clear();
    assert_eq!(b.recv(&mut out, 16).unwrap(), 1);
    assert_eq!(out[0].meta.reason, Reason::Disabled);
}

/// Opening a board that does not answer is one clear error, in bounded time;
/// a glue map that does not match the board is refused.
#[test]
fn open_errors() {
    let (emu, host) = BoardEmulator::start_on_loopback(PARAMS).unwrap();
    let board_addr = emu.etherbone_addr();
    let mut cfg = EtherboneConfig::new(board_addr);
    cfg.bind = IpAddr::V4(host);
    cfg.timeout = Duration::from_millis(100);
    cfg.glue = Some(GlueMap::at(EMU_GLUE_BASE + 0x100)); // nothing there
    let e = EtherboneDevice::open(cfg.clone()).unwrap_err().to_string();
    assert!(e.contains("not the glue's host_ip/host_port"), "{e}");
    drop(emu);
    let t0 = Instant::now();
    let e = EtherboneDevice::open(cfg).unwrap_err().to_string();
    assert!(e.starts_with(&format!("no Etherbone reply from {board_addr} after 3 tries")), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(2));
}
