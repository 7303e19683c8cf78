//! The §8 rings from both sides, with the other side misbehaving:
//!
//! * host ring code against a rogue device (completions written by the
//!   test): every bad completion is counted and dropped, its buffer
//!   reused, nothing panics, nothing out of bounds is read;
//! * the DMA engine model against a rogue host (descriptors and index
//!   writes by the test): malformed descriptors are counted and skipped,
//!   bad index writes rejected, DMA faults counted;
//! * start-up checks (identity registers, capabilities, ring sizes).

use lvsnic::device::dma_model::{Card, Core, CoreOutputs, DmaEngine, ModelCore};
use lvsnic::device::format::{self, q, Cpl, CplStatus, Desc, QStatus, CPL_SIZE, DESC_SIZE};
use lvsnic::device::memory::{DmaMemory, SimMemory};
use lvsnic::device::rings::{RingConfig, RingError, RingLayout, Rings};
use lvsnic::device::{check_identity, IdentityError};
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::{Csr, HostMeta, HwParams, Reason};
use std::collections::HashMap;

// ------------------------------------------------------------------ host side

/// Registers of a device that accepts any configuration and never moves:
/// the test plays the device by writing DMA memory.
#[derive(Default)]
struct Regs {
    m: HashMap<u32, u32>,
    caps: Option<u32>,
    refuse_size: bool,
    never_run: bool,
}

impl Csr for Regs {
    fn write32(&mut self, addr: u32, v: u32) {
        self.m.insert(addr, v);
    }
    fn read32(&mut self, addr: u32) -> u32 {
        match addr {
            format::DMA_CAPS => self.caps.unwrap_or(0x4000_0F02),
            a if a == format::RXQ + q::STATUS || a == format::TXQ + q::STATUS => (!self.never_run) as u32,
            a if (a == format::RXQ + q::SIZE_LOG2 || a == format::TXQ + q::SIZE_LOG2) && self.refuse_size => 0,
            a => self.m.get(&a).copied().unwrap_or(0),
        }
    }
}

const BASE: u64 = 0x0000_0042_0000_0000;
const SMALL: RingConfig = RingConfig { rx_log2: 2, tx_log2: 2, rx_buf: 256, tx_buf: 256 };

fn host() -> (Regs, SimMemory, Rings) {
    let mut regs = Regs::default();
    let mem = SimMemory::new(BASE, RingLayout::new(BASE, &SMALL).len);
    let rings = Rings::start(&mut regs, &mem, &SMALL).unwrap();
    (regs, mem, rings)
}

fn meta(seq: u32) -> [u32; 5] {
    HostMeta { reason: Reason::Miss, hit: false, vip: true, hash0: 0xABCD_1234, seq, ts: 99 }.to_words()
}

/// The rogue device writes a receive completion for position `pos`.
fn rx_complete(mem: &SimMemory, l: &RingLayout, pos: u16, c: Cpl) {
    mem.write(l.rx_cq + (pos as u64 % 4) * CPL_SIZE as u64, &c.encode()).unwrap();
}

fn good(pos: u16, len: u16) -> Cpl {
    Cpl::new(pos, len, meta(pos as u32), CplStatus::Ok, format::idx::phase(pos, 2))
}

fn rx_desc(mem: &SimMemory, l: &RingLayout, pos: u16) -> Desc {
    let mut b = [0u8; DESC_SIZE];
    mem.read(l.rx_dq + (pos as u64 % 4) * DESC_SIZE as u64, &mut b).unwrap();
    Desc::decode(&b)
}

#[test]
fn start_posts_every_receive_buffer_and_programs_the_queues() {
    let (regs, mem, rings) = host();
    let l = rings.layout;
    assert_eq!(l.rx_dq, BASE);
    for p in 0..4 {
        assert_eq!(rx_desc(&mem, &l, p), Desc { addr: l.rx_bufs + 256 * p as u64, len: 256, word3: 0 });
    }
    let r = |a| regs.m.get(&a).copied();
    assert_eq!(r(format::RXQ + q::DQ_PROD), Some(4));
    assert_eq!(r(format::RXQ + q::DQ_BASE_LO), Some(0));
    assert_eq!(r(format::RXQ + q::DQ_BASE_HI), Some(0x42));
    assert_eq!(r(format::RXQ + q::CQ_BASE_LO), Some(0x1000));
    assert_eq!(r(format::TXQ + q::DQ_BASE_LO), Some(0x2000));
    assert_eq!(r(format::TXQ + q::SIZE_LOG2), Some(2));
    assert_eq!(r(format::TXQ + q::CTRL), Some(1));
    assert_eq!(rings.rx.posted(), 4);
}

#[test]
fn good_completions_are_copied_out_and_buffers_reposted() {
    let (mut regs, mem, mut rings) = host();
    let l = rings.layout;
    let mut out = Vec::new();
    assert_eq!(rings.rx.poll(&mut regs, &mem, &mut out, 8).unwrap(), 0, "zeroed ring: nothing yet");
    for pos in 0..10u16 {
        let frame: Vec<u8> = (0..60 + pos).map(|i| i as u8 ^ pos as u8).collect();
        mem.write(l.rx_bufs + 256 * (pos as u64 % 4), &frame).unwrap();
        rx_complete(&mem, &l, pos, good(pos, frame.len() as u16));
        assert_eq!(rings.rx.poll(&mut regs, &mem, &mut out, 8).unwrap(), 1);
        assert_eq!(out.last().unwrap().data, frame);
        assert_eq!(out.last().unwrap().meta.seq, pos as u32);
        assert_eq!(regs.m[&(format::RXQ + q::CQ_CONS)], pos as u32 + 1);
        assert_eq!(regs.m[&(format::RXQ + q::DQ_PROD)], pos as u32 + 5);
        assert_eq!(rx_desc(&mem, &l, pos + 4).addr, l.rx_bufs + 256 * (pos as u64 % 4), "same buffer, same slot");
    }
    assert_eq!(rings.rx.counters.frames, 10);
    assert_eq!(rings.rx.counters.errors(), 0);
    // A stale completion (the previous pass's phase) is not taken.
    rx_complete(&mem, &l, 10, Cpl::new(10, 60, meta(10), CplStatus::Ok, !format::idx::phase(10, 2)));
    assert_eq!(rings.rx.poll(&mut regs, &mem, &mut out, 8).unwrap(), 0);
    assert_eq!(rings.rx.posted(), 4);
}

#[test]
fn every_bad_receive_completion_is_counted_dropped_and_its_buffer_reused() {
    let (mut regs, mem, mut rings) = host();
    let l = rings.layout;
    let mut bad: Vec<(Cpl, &str)> = Vec::new();
    let mut c = good(0, 60);
    c.flags |= 0x01;
    bad.push((c, "reserved_bits"));
    let mut c = good(0, 60);
    c.reserved[3] = 0x10;
    bad.push((c, "reserved_bits"));
    let mut c = good(0, 60);
    c.index = 3;
    bad.push((c, "bad_index"));
    let mut c = good(0, 60);
    c.index = 0x8000;
    bad.push((c, "bad_index"));
    let mut c = good(0, 60);
    c.status = 9;
    bad.push((c, "bad_status"));
    let mut c = good(0, 60);
    c.status = CplStatus::DescInvalid as u8;
    bad.push((c, "desc_invalid"));
    let mut c = good(0, 60);
    c.status = CplStatus::DmaFault as u8;
    bad.push((c, "dma_fault"));
    bad.push((good(0, 257), "bad_len"));
    bad.push((good(0, 0), "bad_len"));
    bad.push((good(0, 0xFFFF), "bad_len"));
    let mut c = good(0, 60);
    c.meta[0] |= 1 << 12;
    bad.push((c, "bad_meta"));
    let mut c = good(0, 60);
    c.meta[0] = c.meta[0] & !0xFF | 200;
    bad.push((c, "bad_meta"));

    let mut out = Vec::new();
    for (i, (c, what)) in bad.iter().enumerate() {
        let pos = i as u16;
        let mut c = *c;
        // Keep each case's defect, but at the position under test.
        if what != &"bad_index" {
            c.index = pos;
        }
        c.flags = c.flags & !format::CPL_PHASE | if format::idx::phase(pos, 2) { format::CPL_PHASE } else { 0 };
        rx_complete(&mem, &l, pos, c);
        let before = rings.rx.counters;
        assert_eq!(rings.rx.poll(&mut regs, &mem, &mut out, 8).unwrap(), 0, "case {i} ({what}) dropped");
        let after = rings.rx.counters;
        let delta = |f: fn(&lvsnic::device::RxCounters) -> u64| f(&after) - f(&before);
        let counted = match *what {
            "reserved_bits" => delta(|c| c.reserved_bits),
            "bad_index" => delta(|c| c.bad_index),
            "bad_status" => delta(|c| c.bad_status),
            "desc_invalid" => delta(|c| c.desc_invalid),
            "dma_fault" => delta(|c| c.dma_fault),
            "bad_len" => delta(|c| c.bad_len),
            "bad_meta" => delta(|c| c.bad_meta),
            _ => unreachable!(),
        };
        assert_eq!(counted, 1, "case {i}: {what} counted");
        assert_eq!(after.errors() - before.errors(), 1, "case {i}: counted once");
        assert_eq!(rings.rx.posted(), 4, "case {i}: buffer reposted");
    }
    assert!(out.is_empty());
    // The ring still works afterwards.
    let pos = bad.len() as u16;
    mem.write(l.rx_bufs + 256 * (pos as u64 % 4), &[7u8; 64]).unwrap();
    rx_complete(&mem, &l, pos, good(pos, 64));
    assert_eq!(rings.rx.poll(&mut regs, &mem, &mut out, 8).unwrap(), 1);
    assert_eq!(out[0].data, vec![7u8; 64]);
}

#[test]
fn a_transmit_completion_for_a_descriptor_never_posted_is_caught() {
    let (mut regs, mem, mut rings) = host();
    let l = rings.layout;
    let frame = [0x5Au8; 60];
    assert_eq!(rings.send(&mut regs, &mem, [(&frame[..], 11)]).unwrap(), 1);
    assert_eq!(regs.m[&(format::TXQ + q::DQ_PROD)], 1);
    let mut d = [0u8; DESC_SIZE];
    mem.read(l.tx_dq, &mut d).unwrap();
    assert_eq!(Desc::decode(&d), Desc { addr: l.tx_bufs, len: 60, word3: 11 });
    let mut f = [0u8; 60];
    mem.read(l.tx_bufs, &mut f).unwrap();
    assert_eq!(f, frame);
    // The rogue device completes position 0 and also position 1, never posted.
    let tx_cpl =
        |pos: u16, len: u16, seq: u32| Cpl::new(pos, len, [seq, 0, 0, 0, 0], CplStatus::Ok, format::idx::phase(pos, 2));
    mem.write(l.tx_cq, &tx_cpl(0, 60, 11).encode()).unwrap();
    mem.write(l.tx_cq + CPL_SIZE as u64, &tx_cpl(1, 60, 12).encode()).unwrap();
    assert_eq!(rings.tx.reap(&mut regs, &mem).unwrap(), 1, "only posted positions are reaped");
    assert_eq!(rings.tx.counters.frames, 1);
    assert_eq!(regs.m[&(format::TXQ + q::CQ_CONS)], 1);
    // Posting position 1 finds the bogus completion there and reclaims the slot.
    rings.send(&mut regs, &mem, [(&frame[..], 12)]).unwrap();
    assert_eq!(rings.tx.counters.not_posted, 1);
    assert_eq!(rings.tx.reap(&mut regs, &mem).unwrap(), 0, "the bogus completion is not taken as the real one");
    // Echo mismatch and a wrong index.
    mem.write(l.tx_cq + CPL_SIZE as u64, &tx_cpl(1, 61, 12).encode()).unwrap();
    assert_eq!(rings.tx.reap(&mut regs, &mem).unwrap(), 1);
    assert_eq!(rings.tx.counters.mismatch, 1);
    rings.send(&mut regs, &mem, [(&frame[..], 13)]).unwrap();
    let mut wrong = tx_cpl(2, 60, 13);
    wrong.index = 0x7777;
    mem.write(l.tx_cq + 2 * CPL_SIZE as u64, &wrong.encode()).unwrap();
    rings.tx.reap(&mut regs, &mem).unwrap();
    assert_eq!(rings.tx.counters.bad_index, 1);
    assert_eq!(rings.tx.in_flight(), 0);
}

#[test]
fn transmit_refuses_bad_lengths_and_a_full_ring() {
    let (mut regs, mem, mut rings) = host();
    let f = vec![1u8; 300];
    assert!(matches!(
        rings.send(&mut regs, &mem, [(&f[..13], 1)]),
        Err(RingError::FrameLength { len: 13, min: 14, max: 256 })
    ));
    assert!(matches!(rings.send(&mut regs, &mem, [(&f[..257], 1)]), Err(RingError::FrameLength { len: 257, .. })));
    // Nobody completes: four fit, the fifth finds the ring full.
    let frames: Vec<(&[u8], u32)> = (0..5).map(|i| (&f[..64], i)).collect();
    assert!(matches!(rings.send(&mut regs, &mem, frames), Err(RingError::TxFull)));
    assert_eq!(rings.tx.in_flight(), 4);
    assert_eq!(rings.tx.counters.full, 1);
    assert_eq!(regs.m[&(format::TXQ + q::DQ_PROD)], 4, "the four queued frames were rung");
    assert_eq!(RingError::TxFull.to_string(), "transmit ring full");
}

/// Deterministic xorshift.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn garbage_in_completion_rings_never_panics_or_overreads() {
    let (mut regs, mem, mut rings) = host();
    let l = rings.layout;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut out = Vec::new();
    let frame = [3u8; 100];
    for round in 0..20_000 {
        // Scribble over a completion: random bytes, or a plausible one with one field wrong.
        let which = rng.next();
        let (cq, n) = if which & 1 == 0 { (l.rx_cq, 4) } else { (l.tx_cq, 4) };
        let slot = rng.next() % n;
        let mut b = [0u8; CPL_SIZE];
        for x in b.iter_mut() {
            *x = rng.next() as u8;
        }
        if which & 6 == 0 {
            // Mostly valid: right phase for some nearby position, random length.
            let pos = (rng.next() % 64) as u16;
            let mut c = good(pos, (rng.next() % 400) as u16);
            if rng.next() & 1 == 0 {
                c.meta[0] = rng.next() as u32;
            }
            b = c.encode();
        }
        mem.write(cq + slot * CPL_SIZE as u64, &b).unwrap();
        let got = rings.rx.poll(&mut regs, &mem, &mut out, 4).unwrap();
        assert!(got <= 4);
        if round % 3 == 0 {
            let _ = rings.send(&mut regs, &mem, [(&frame[..], round)]);
        }
        rings.tx.reap(&mut regs, &mem).unwrap();
        assert_eq!(rings.rx.posted(), 4, "every receive slot stays posted");
        assert!(rings.tx.in_flight() <= 4);
    }
    assert!(out.iter().all(|f| !f.data.is_empty() && f.data.len() <= 256));
    let c = rings.rx.counters;
    assert!(c.errors() > 1000, "garbage was seen and counted: {c:?}");
    eprintln!("rx {c:?}\ntx {:?}\n{} frames accepted", rings.tx.counters, out.len());
}

#[test]
fn start_checks_capabilities_and_configuration() {
    let mem = SimMemory::new(BASE, RingLayout::new(BASE, &SMALL).len);
    let start = |regs: &mut Regs, cfg: &RingConfig| Rings::start(regs, &mem, cfg).unwrap_err().to_string();
    assert_eq!(
        start(&mut Regs { caps: Some(0), ..Default::default() }, &SMALL),
        "DMA engine capabilities unusable (DMA_CAPS = 0x00000000)"
    );
    let caps = format::DmaCaps { min_log2: 3, max_log2: 10, max_frame: 9600 }.to_reg();
    assert_eq!(
        start(&mut Regs { caps: Some(caps), ..Default::default() }, &SMALL),
        "ring size 2^2 outside the engine's 2^3..2^10"
    );
    assert_eq!(
        start(&mut Regs { refuse_size: true, ..Default::default() }, &SMALL),
        "receive queue did not take ring size 2^2 (SIZE_LOG2 reads 0)"
    );
    assert_eq!(
        start(&mut Regs { never_run: true, ..Default::default() }, &SMALL),
        "receive queue did not start (STATUS = 0x0)"
    );
    let big = RingConfig { rx_buf: 4096, ..SMALL };
    assert!(start(&mut Regs::default(), &big).starts_with("DMA memory of "));
    assert_eq!(
        start(&mut Regs::default(), &RingConfig { rx_buf: 32, ..SMALL }),
        "buffer size 32 outside 64..=65535 bytes"
    );
}

// ---------------------------------------------------------------- device side

const DEV: u64 = 0x8000_0000;
const DQ: u64 = DEV;
const CQ: u64 = DEV + 0x1000;
const BUFS: u64 = DEV + 0x2000;

/// A card whose receive and transmit queues the test programs by hand.
fn card() -> (Card<ModelCore, SimMemory>, SimMemory) {
    let mem = SimMemory::new(DEV, 0x10_000);
    let mut c = Card::new(ModelCore::new(HwParams::default()), DmaEngine::default(), mem.clone());
    for qb in [format::RXQ, format::TXQ] {
        let off = if qb == format::RXQ { 0 } else { 0x4000 };
        c.write32(qb + q::DQ_BASE_LO, (DQ + off) as u32);
        c.write32(qb + q::CQ_BASE_LO, (CQ + off) as u32);
        c.write32(qb + q::SIZE_LOG2, 2);
        c.write32(qb + q::CTRL, 1);
        assert_eq!(c.read32(qb + q::STATUS), QStatus::RUNNING.bits());
    }
    (c, mem)
}

fn put_desc(mem: &SimMemory, dq: u64, pos: u16, d: Desc) {
    mem.write(dq + (pos as u64 % 4) * DESC_SIZE as u64, &d.encode()).unwrap();
}

fn cpl(mem: &SimMemory, cq: u64, pos: u16) -> Cpl {
    let mut b = [0u8; CPL_SIZE];
    mem.read(cq + (pos as u64 % 4) * CPL_SIZE as u64, &mut b).unwrap();
    Cpl::decode(&b)
}

fn reg(c: &mut Card<ModelCore, SimMemory>, qb: u32, off: u32) -> u32 {
    c.read32(qb + off)
}

#[test]
fn engine_skips_malformed_receive_descriptors_with_a_completion() {
    let (mut c, mem) = card();
    let rx = format::RXQ;
    put_desc(&mem, DQ, 0, Desc { addr: BUFS, len: 10, word3: 0 }); // too small
    put_desc(&mem, DQ, 1, Desc { addr: BUFS, len: 2048, word3: 1 }); // reserved bits
    put_desc(&mem, DQ, 2, Desc { addr: BUFS, len: 70_000, word3: 0 }); // too large
    put_desc(&mem, DQ, 3, Desc { addr: BUFS, len: 2048, word3: 0 });
    c.write32(rx + q::DQ_PROD, 4);
    let frame = [0xFFu8; 60]; // broadcast: the (disabled) core hands it up
    c.wire_rx(&frame, 5, 1);
    assert_eq!(reg(&mut c, rx, q::ERR_DESC), 3);
    for p in 0..3 {
        let k = cpl(&mem, CQ, p);
        assert_eq!((k.index, k.len, k.status, k.phase()), (p, 0, CplStatus::DescInvalid as u8, true));
    }
    let k = cpl(&mem, CQ, 3);
    assert_eq!((k.index, k.len, k.status), (3, 60, 0));
    assert_eq!(HostMeta::from_words(k.meta).unwrap().reason, Reason::Disabled);
    let mut b = [0u8; 60];
    mem.read(BUFS, &mut b).unwrap();
    assert_eq!(b, frame);
    assert_eq!((reg(&mut c, rx, q::DQ_CONS), reg(&mut c, rx, q::CQ_PROD)), (4, 4));
    // No buffer left: dropped and counted.
    c.wire_rx(&frame, 6, 2);
    assert_eq!(reg(&mut c, rx, q::DROP), 1);
}

#[test]
fn engine_drops_frames_longer_than_the_posted_buffer_and_keeps_the_buffer() {
    let (mut c, mem) = card();
    let rx = format::RXQ;
    put_desc(&mem, DQ, 0, Desc { addr: BUFS, len: 64, word3: 0 });
    c.write32(rx + q::DQ_PROD, 1);
    c.wire_rx(&[0xFFu8; 100], 1, 1);
    assert_eq!((reg(&mut c, rx, q::DROP), reg(&mut c, rx, q::DQ_CONS)), (1, 0));
    c.wire_rx(&[0xFFu8; 64], 2, 2);
    assert_eq!((reg(&mut c, rx, q::DROP), reg(&mut c, rx, q::DQ_CONS)), (1, 1));
    assert_eq!(cpl(&mem, CQ, 0).len, 64);
}

#[test]
fn engine_counts_dma_faults() {
    let (mut c, mem) = card();
    let rx = format::RXQ;
    put_desc(&mem, DQ, 0, Desc { addr: 0x1000, len: 2048, word3: 0 }); // outside host memory
    c.write32(rx + q::DQ_PROD, 1);
    c.wire_rx(&[0xFFu8; 60], 1, 1);
    assert_eq!((reg(&mut c, rx, q::ERR_DMA), reg(&mut c, rx, q::DROP)), (1, 1));
    assert_eq!(cpl(&mem, CQ, 0).status, CplStatus::DmaFault as u8);
    assert_eq!(reg(&mut c, rx, q::STATUS), QStatus::RUNNING.bits(), "a bad buffer does not halt the queue");
    // A descriptor ring outside memory halts the queue.
    c.write32(rx + q::CTRL, 0);
    c.write32(rx + q::DQ_BASE_HI, 0x99);
    c.write32(rx + q::CTRL, 1);
    c.write32(rx + q::DQ_PROD, 1);
    c.wire_rx(&[0xFFu8; 60], 2, 2);
    assert_eq!(reg(&mut c, rx, q::STATUS), QStatus::FAULT.bits());
    assert_eq!(reg(&mut c, rx, q::ERR_DMA), 2);
    c.wire_rx(&[0xFFu8; 60], 3, 3);
    assert_eq!(reg(&mut c, rx, q::DROP), 3, "a halted queue drops");
}

#[test]
fn engine_rejects_out_of_range_index_writes() {
    let (mut c, mem) = card();
    let rx = format::RXQ;
    c.write32(rx + q::DQ_PROD, 5); // more than the ring holds
    c.write32(rx + q::DQ_PROD, 0x1_0001); // reserved bits
    assert_eq!((reg(&mut c, rx, q::DQ_PROD), reg(&mut c, rx, q::ERR_INDEX)), (0, 2));
    for p in 0..3 {
        put_desc(&mem, DQ, p, Desc { addr: BUFS + 2048 * p as u64, len: 2048, word3: 0 });
    }
    c.write32(rx + q::DQ_PROD, 3);
    c.write32(rx + q::DQ_PROD, 2); // backwards
    assert_eq!((reg(&mut c, rx, q::DQ_PROD), reg(&mut c, rx, q::ERR_INDEX)), (3, 3));
    c.wire_rx(&[0xFFu8; 60], 1, 1);
    c.write32(rx + q::CQ_CONS, 2); // past the completions written
    assert_eq!((reg(&mut c, rx, q::CQ_CONS), reg(&mut c, rx, q::ERR_INDEX)), (0, 4));
    c.write32(rx + q::CQ_CONS, 1);
    assert_eq!(reg(&mut c, rx, q::CQ_CONS), 1);
    // Completions not consumed bound the producer: CQ_CONS = 1, so at most 1 + 4.
    c.write32(rx + q::DQ_PROD, 6);
    assert_eq!(reg(&mut c, rx, q::DQ_PROD), 3);
    c.write32(rx + q::DQ_PROD, 5);
    assert_eq!(reg(&mut c, rx, q::DQ_PROD), 5);
}

#[test]
fn engine_configuration_rules() {
    let (mut c, _mem) = card();
    let rx = format::RXQ;
    c.write32(rx + q::DQ_BASE_LO, 0x1234_0000); // ignored while enabled
    assert_eq!(reg(&mut c, rx, q::DQ_BASE_LO), DQ as u32);
    c.write32(rx + q::CTRL, 0);
    for bad in [0, 1, 16, 0x102] {
        c.write32(rx + q::SIZE_LOG2, bad);
        assert_eq!(reg(&mut c, rx, q::SIZE_LOG2), 2, "size {bad} refused");
    }
    c.write32(rx + q::SIZE_LOG2, 15);
    assert_eq!(reg(&mut c, rx, q::SIZE_LOG2), 15);
    assert_eq!(c.read32(format::DMA_CAPS), 0x4000_0F02);
    assert_eq!(c.read32(0x8C0), 0, "unmapped DMA addresses read 0");
    // A fresh engine without a size does not start.
    let mem = SimMemory::new(0, 4096);
    let mut fresh = Card::new(ModelCore::new(HwParams::default()), DmaEngine::default(), mem);
    fresh.write32(format::TXQ + q::CTRL, 1);
    assert_eq!(fresh.read32(format::TXQ + q::STATUS), 0);
}

#[test]
fn engine_transmit_skips_malformed_descriptors_and_echoes_sequence_numbers() {
    let (mut c, mem) = card();
    let tx = format::TXQ;
    let (tdq, tcq, tbuf) = (DQ + 0x4000, CQ + 0x4000, BUFS + 0x8000);
    let frame: Vec<u8> = (0..80u8).collect();
    mem.write(tbuf, &frame).unwrap();
    put_desc(&mem, tdq, 0, Desc { addr: tbuf, len: 0, word3: 1 });
    put_desc(&mem, tdq, 1, Desc { addr: tbuf, len: format::MAX_FRAME + 1, word3: 2 });
    put_desc(&mem, tdq, 2, Desc { addr: 0x10, len: 80, word3: 3 });
    put_desc(&mem, tdq, 3, Desc { addr: tbuf, len: 80, word3: 4 });
    c.write32(tx + q::IRQ, 1);
    c.write32(tx + q::DQ_PROD, 4);
    let sent = c.take_wire_tx();
    assert_eq!(sent.len(), 1);
    assert_eq!((sent[0].data.clone(), sent[0].seq, sent[0].abort), (frame, 4, false));
    assert_eq!((reg(&mut c, tx, q::ERR_DESC), reg(&mut c, tx, q::ERR_DMA)), (2, 1));
    let st: Vec<(u8, u32)> = (0..4).map(|p| (cpl(&mem, tcq, p).status, cpl(&mem, tcq, p).meta[0])).collect();
    assert_eq!(st, [(1, 1), (1, 2), (2, 3), (0, 4)]);
    assert_eq!(c.engine.irqs(lvsnic::device::dma_model::QueueId::Tx), 1, "armed once, raised once");
    assert_eq!(reg(&mut c, tx, q::IRQ), 0, "disarmed");
    assert_eq!(c.read32(CNT_BASE + 8 * CNT_INJECT), 1, "only the good frame reached the core");
}

// ------------------------------------------------------------------ identity

/// A card whose identification registers can be overridden.
struct Patched<C: Csr> {
    inner: C,
    over: HashMap<u32, u32>,
}
impl<C: Csr> Csr for Patched<C> {
    fn write32(&mut self, a: u32, v: u32) {
        self.inner.write32(a, v)
    }
    fn read32(&mut self, a: u32) -> u32 {
        self.over.get(&a).copied().unwrap_or_else(|| self.inner.read32(a))
    }
}

#[test]
fn identity_is_checked() {
    let (c, _mem) = card();
    let mut p = Patched { inner: c, over: HashMap::new() };
    let id = check_identity(&mut p).unwrap();
    assert_eq!(id.params, HwParams::default());
    assert_eq!(id.version, VERSION_VALUE);
    let cases: Vec<(u32, u32, IdentityError)> = vec![
        (ID, 0xFFFF_FFFF, IdentityError::NoResponse),
        (ID, 0x8086_10FB, IdentityError::WrongId(0x8086_10FB)),
        (VERSION, 0x0001_0000, IdentityError::Version { major: 1, minor: 0 }),
        (VERSION, 0x0003_0000, IdentityError::Version { major: 3, minor: 0 }),
        (format::DMA_CAPS, 0, IdentityError::NoDma(0)),
    ];
    for (reg, v, want) in cases {
        p.over.insert(reg, v);
        assert_eq!(check_identity(&mut p).unwrap_err(), want);
        p.over.clear();
    }
    p.over.insert(CAPS0, 48 | 10 << 16 | 10 << 24);
    assert_eq!(
        check_identity(&mut p).unwrap_err().to_string(),
        "unsupported core: data width 48 bits (CAPS0 = 0x0a0a0030)"
    );
    p.over.insert(CAPS0, 64 | 20 << 16 | 10 << 24);
    assert!(matches!(check_identity(&mut p), Err(IdentityError::Caps(_))));
    p.over.clear();
    p.over.insert(CAPS1, 8 | 2 << 8 | 16 << 16);
    assert!(matches!(check_identity(&mut p), Err(IdentityError::Caps(_))));
    assert_eq!(
        IdentityError::WrongId(0x8086_10FB).to_string(),
        "not an lvsnic card: ID register reads 0x808610fb, expected 0x4c56534e (\"LVSN\")"
    );
}

// ------------------------------------------------------------ a core plug-in

/// A stand-in for the verilated core: an echo core with a one-frame
/// latency, to show a core with its own timing plugs into the card.
#[derive(Default)]
struct EchoCore {
    queued: Vec<(Vec<u8>, u32)>,
    injected: u64,
}
impl Csr for EchoCore {
    fn write32(&mut self, _: u32, _: u32) {}
    fn read32(&mut self, a: u32) -> u32 {
        match a {
            ID => ID_VALUE,
            VERSION => VERSION_VALUE,
            CAPS0 => 512 | 12 << 16 | 12 << 24,
            CAPS1 => 4 | 2 << 8 | 32 << 16,
            _ => 0,
        }
    }
}
impl Core for EchoCore {
    fn rx(&mut self, frame: &[u8], _ts: u64, seq: u32) {
        self.queued.push((frame.to_vec(), seq));
    }
    fn inject(&mut self, _frame: &[u8], _seq: u32) {
        self.injected += 1;
    }
    fn drain(&mut self, out: &mut CoreOutputs) {
        for (f, seq) in self.queued.drain(..) {
            out.host.push(lvsnic::device::dma_model::HostOut { meta: [Reason::Miss as u32, 0, seq, 0, 0], data: f });
        }
    }
}

#[test]
fn another_core_plugs_into_the_same_card_and_rings() {
    use lvsnic::device::model::ModelDevice;
    use lvsnic::device::{Device, Wire};
    let mut dev = ModelDevice::with_core(EchoCore::default(), DmaEngine::default(), SMALL).unwrap();
    assert_eq!(dev.identity.params.data_width, 512);
    dev.deliver(&[1u8; 64], 0, 42);
    let mut out = Vec::new();
    dev.recv(&mut out, 4).unwrap();
    assert_eq!((out[0].meta.seq, out[0].meta.reason, out[0].data.len()), (42, Reason::Miss, 64));
    dev.send(&[(&[2u8; 60], 1)]).unwrap();
    assert_eq!(dev.card().core.injected, 1);
}
