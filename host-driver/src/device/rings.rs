//! The host side of the DMA rings (docs/hardware.md §8), the same code for
//! every backend: it drives the receive ring (exception frames) and the
//! transmit ring (injected frames) through a register interface ([`Csr`])
//! and a DMA memory ([`DmaMemory`]).
//!
//! The device is not trusted. A completion whose reserved bits are set,
//! whose index is not the position it was found at, whose status is
//! unknown, whose length exceeds the posted buffer, whose metadata does
//! not parse, or that was written for a descriptor the host never posted,
//! is counted in [`RxCounters`]/[`TxCounters`] and dropped; its buffer goes
//! back to the host. Every access goes through bounds-checked copies: no
//! index read from the device is ever used to address memory (buffers are
//! tied to ring slots the host computes from its own positions), and no
//! reference into DMA memory is formed.
//!
//! Memory layout (one contiguous DMA region, each area 4 KiB aligned):
//! RX descriptors, RX completions, TX descriptors, TX completions, RX
//! buffers (one per RX slot), TX buffers (one per TX slot).

use super::format::{
    self, idx, q, Cpl, CplStatus, Desc, DmaCaps, QCtrl, QStatus, CPL_FLAGS_BYTE, CPL_PHASE, CPL_SIZE, DESC_SIZE,
};
use super::memory::{round_up, DmaMemory, MemError};
use lvsnic_model::hw::{Csr, HostMeta};
use std::sync::atomic::{fence, Ordering};

/// Ring sizes and buffer sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingConfig {
    /// Receive ring size (log2).
    pub rx_log2: u8,
    /// Transmit ring size (log2).
    pub tx_log2: u8,
    /// Bytes per receive buffer (the longest exception frame received).
    pub rx_buf: u32,
    /// Bytes per transmit buffer (the longest frame injected).
    pub tx_buf: u32,
}

impl Default for RingConfig {
    /// 256 slots each way, buffers for the engine's longest frame.
    fn default() -> Self {
        RingConfig { rx_log2: 8, tx_log2: 8, rx_buf: format::MAX_FRAME, tx_buf: format::MAX_FRAME }
    }
}

/// Device addresses of the ring areas in the DMA region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingLayout {
    /// Device address of the receive descriptor ring (2^`rx_log2` ×
    /// 16 bytes).
    pub rx_dq: u64,
    /// Device address of the receive completion ring (2^`rx_log2` ×
    /// 32 bytes).
    pub rx_cq: u64,
    /// Device address of the transmit descriptor ring (2^`tx_log2` ×
    /// 16 bytes).
    pub tx_dq: u64,
    /// Device address of the transmit completion ring (2^`tx_log2` ×
    /// 32 bytes).
    pub tx_cq: u64,
    /// Device address of the receive buffers, one of `rx_buf` bytes per
    /// receive slot.
    pub rx_bufs: u64,
    /// Device address of the transmit buffers, one of `tx_buf` bytes per
    /// transmit slot.
    pub tx_bufs: u64,
    /// Bytes from the base to the end of the last area.
    pub len: usize,
}

const AREA_ALIGN: usize = 4096;

impl RingLayout {
    /// The layout of `cfg` starting at device address `base`.
    pub fn new(base: u64, cfg: &RingConfig) -> RingLayout {
        let mut off = 0usize;
        let mut area = |bytes: usize| {
            let a = base + off as u64;
            off = round_up(off + bytes, AREA_ALIGN);
            a
        };
        let (rn, tn) = (1usize << cfg.rx_log2, 1usize << cfg.tx_log2);
        let rx_dq = area(rn * DESC_SIZE);
        let rx_cq = area(rn * CPL_SIZE);
        let tx_dq = area(tn * DESC_SIZE);
        let tx_cq = area(tn * CPL_SIZE);
        let rx_bufs = area(rn * cfg.rx_buf as usize);
        let tx_bufs = area(tn * cfg.tx_buf as usize);
        RingLayout { rx_dq, rx_cq, tx_dq, tx_cq, rx_bufs, tx_bufs, len: off }
    }
}

/// A ring operation that could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RingError {
    /// `DMA_CAPS` is not usable by this driver (see [`DmaCaps::usable`]);
    /// holds the register's value.
    #[error("DMA engine capabilities unusable (DMA_CAPS = {0:#010x})")]
    Caps(u32),
    /// A configured ring size is outside the range `DMA_CAPS` reports.
    #[error("ring size 2^{log2} outside the engine's 2^{min}..2^{max}")]
    Size {
        /// The ring size asked for (log2 of the slots).
        log2: u8,
        /// `DMA_CAPS` smallest `SIZE_LOG2`.
        min: u8,
        /// `DMA_CAPS` largest `SIZE_LOG2`.
        max: u8,
    },
    /// A configured buffer size is outside what a descriptor may carry.
    #[error("buffer size {buf} outside {min}..={max} bytes")]
    BufSize {
        /// The buffer size asked for, in bytes.
        buf: u32,
        /// The smallest allowed, in bytes.
        min: u32,
        /// The largest allowed, in bytes.
        max: u32,
    },
    /// The DMA memory given cannot hold the ring layout.
    #[error("DMA memory of {have} bytes is smaller than the {need} bytes the rings need")]
    MemTooSmall {
        /// Bytes of DMA memory given.
        have: usize,
        /// Bytes the layout needs ([`RingLayout::len`]).
        need: usize,
    },
    /// A queue's `SIZE_LOG2` register did not read back the value written.
    #[error("{queue} queue did not take ring size 2^{log2} (SIZE_LOG2 reads {read})")]
    SizeRejected {
        /// `"receive"` or `"transmit"`.
        queue: &'static str,
        /// The value written.
        log2: u8,
        /// The value read back.
        read: u32,
    },
    /// A queue's `STATUS` lacks `RUNNING` after `CTRL.ENABLE` was set.
    #[error("{queue} queue did not start (STATUS = {status:#x})")]
    NotRunning {
        /// `"receive"` or `"transmit"`.
        queue: &'static str,
        /// The `STATUS` register read.
        status: u32,
    },
    /// A frame to inject is shorter than an Ethernet header or longer than
    /// the transmit buffer or `MAX_FRAME`.
    #[error("frame of {len} bytes cannot be injected (allowed {min}..={max})")]
    FrameLength {
        /// The frame's length in bytes.
        len: usize,
        /// The shortest allowed (`TX_FRAME_MIN`).
        min: usize,
        /// The longest allowed: the smaller of the buffer size and
        /// `MAX_FRAME`.
        max: usize,
    },
    /// Every transmit slot holds a frame whose completion has not been
    /// reaped.
    #[error("transmit ring full")]
    TxFull,
    /// An access to the DMA memory failed (out of its bounds).
    #[error("host DMA memory: {0}")]
    Mem(#[from] MemError),
}

/// A frame the device handed up, copied out of DMA memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RxFrame {
    /// The exception metadata of the completion (`m_axis_host_tuser`:
    /// reason, hash, sequence number, timestamp).
    pub meta: HostMeta,
    /// The frame's bytes, the completion's length of them.
    pub data: Vec<u8>,
}

/// Receive ring counters (host side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RxCounters {
    /// Frames received and handed on.
    pub frames: u64,
    /// Bytes of the frames counted in `frames`.
    pub bytes: u64,
    /// Completions with reserved bits set: dropped.
    pub reserved_bits: u64,
    /// Completions whose index is not the position they were written at: dropped.
    pub bad_index: u64,
    /// Completions with an unknown status: dropped.
    pub bad_status: u64,
    /// Completions saying a posted descriptor was malformed.
    pub desc_invalid: u64,
    /// Completions saying the buffer's DMA access faulted.
    pub dma_fault: u64,
    /// Completions with length 0 or longer than the buffer: dropped.
    pub bad_len: u64,
    /// Completions whose metadata does not parse (reserved bits, reason): dropped.
    pub bad_meta: u64,
    /// Completions found for descriptors not yet posted: reclaimed.
    pub not_posted: u64,
}

impl RxCounters {
    /// Completions the host rejected or the device reported as failed.
    pub fn errors(&self) -> u64 {
        self.reserved_bits
            + self.bad_index
            + self.bad_status
            + self.desc_invalid
            + self.dma_fault
            + self.bad_len
            + self.bad_meta
            + self.not_posted
    }
}

/// Transmit ring counters (host side).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxCounters {
    /// Frames whose completion said they were sent.
    pub frames: u64,
    /// Bytes of the frames counted in `frames`.
    pub bytes: u64,
    /// Sends refused because the ring was full.
    pub full: u64,
    /// Completions with reserved bits set.
    pub reserved_bits: u64,
    /// Completions whose index is not the position they were written at.
    pub bad_index: u64,
    /// Completions with an unknown status.
    pub bad_status: u64,
    /// Completions saying a posted descriptor was malformed (frame not
    /// sent).
    pub desc_invalid: u64,
    /// Completions saying the buffer's DMA read faulted (frame not sent).
    pub dma_fault: u64,
    /// Completions whose length or sequence number is not the posted one.
    pub mismatch: u64,
    /// Completions found for descriptors not yet posted: reclaimed.
    pub not_posted: u64,
}

impl TxCounters {
    /// Completions the host rejected or the device reported as failed
    /// (every counter but `frames`, `bytes` and `full`).
    pub fn errors(&self) -> u64 {
        self.reserved_bits
            + self.bad_index
            + self.bad_status
            + self.desc_invalid
            + self.dma_fault
            + self.mismatch
            + self.not_posted
    }
}

/// What one ring needs to know about its memory.
#[derive(Clone, Copy, Debug)]
struct RingMem {
    log2: u8,
    dq: u64,
    cq: u64,
    bufs: u64,
    buf_size: u32,
}

impl RingMem {
    fn desc_addr(&self, pos: u16) -> u64 {
        self.dq + (idx::slot(pos, self.log2) * DESC_SIZE) as u64
    }
    fn cpl_addr(&self, pos: u16) -> u64 {
        self.cq + (idx::slot(pos, self.log2) * CPL_SIZE) as u64
    }
    fn buf_addr(&self, pos: u16) -> u64 {
        self.bufs + idx::slot(pos, self.log2) as u64 * self.buf_size as u64
    }
    fn size(&self) -> u16 {
        // log2 ≤ 15 (checked at start): fits.
        (1u32 << self.log2) as u16
    }

    /// Reads the completion at `pos` if the device has written it (its
    /// phase is the one of `pos`): the phase byte first, then, ordered
    /// after it, the whole record.
    fn completion<M: DmaMemory + ?Sized>(&self, mem: &M, pos: u16) -> Result<Option<Cpl>, MemError> {
        let a = self.cpl_addr(pos);
        let mut flags = [0u8];
        mem.read(a + CPL_FLAGS_BYTE as u64, &mut flags)?;
        if (flags[0] & CPL_PHASE != 0) != idx::phase(pos, self.log2) {
            return Ok(None);
        }
        fence(Ordering::Acquire);
        let mut raw = [0u8; CPL_SIZE];
        mem.read(a, &mut raw)?;
        Ok(Some(Cpl::decode(&raw)))
    }

    /// Before posting `pos`: its completion slot must not already hold a
    /// completion for `pos` (the device cannot have carried out a
    /// descriptor not yet posted). If it does, the slot is reclaimed
    /// (phase flipped back) and `true` is returned so the caller counts it.
    fn claim<M: DmaMemory + ?Sized>(&self, mem: &M, pos: u16) -> Result<bool, MemError> {
        let a = self.cpl_addr(pos) + CPL_FLAGS_BYTE as u64;
        let mut flags = [0u8];
        mem.read(a, &mut flags)?;
        let want = idx::phase(pos, self.log2);
        if (flags[0] & CPL_PHASE != 0) != want {
            return Ok(false);
        }
        mem.write(a, &[if want { 0 } else { CPL_PHASE }])?;
        Ok(true)
    }
}

/// Programs one queue's registers and enables it.
fn start_queue<C: Csr + ?Sized>(csr: &mut C, qb: u32, name: &'static str, m: &RingMem) -> Result<(), RingError> {
    csr.write32(qb + q::CTRL, 0);
    csr.write32(qb + q::DQ_BASE_LO, m.dq as u32);
    csr.write32(qb + q::DQ_BASE_HI, (m.dq >> 32) as u32);
    csr.write32(qb + q::CQ_BASE_LO, m.cq as u32);
    csr.write32(qb + q::CQ_BASE_HI, (m.cq >> 32) as u32);
    csr.write32(qb + q::SIZE_LOG2, m.log2 as u32);
    let read = csr.read32(qb + q::SIZE_LOG2);
    if read != m.log2 as u32 {
        return Err(RingError::SizeRejected { queue: name, log2: m.log2, read });
    }
    csr.write32(qb + q::CTRL, QCtrl::ENABLE.bits());
    let status = csr.read32(qb + q::STATUS);
    if !QStatus::from_bits_retain(status).contains(QStatus::RUNNING) {
        return Err(RingError::NotRunning { queue: name, status });
    }
    Ok(())
}

/// The receive ring: every slot always holds a posted buffer.
#[derive(Debug)]
pub struct RxRing {
    m: RingMem,
    max_frame: u32,
    /// Next position to post.
    prod: u16,
    /// Next position whose completion is expected.
    cons: u16,
    /// What this ring has received, rejected and reclaimed.
    pub counters: RxCounters,
}

impl RxRing {
    fn post<M: DmaMemory + ?Sized>(&mut self, mem: &M) -> Result<(), MemError> {
        let pos = self.prod;
        if self.m.claim(mem, pos)? {
            self.counters.not_posted += 1;
        }
        let d = Desc { addr: self.m.buf_addr(pos), len: self.m.buf_size, word3: 0 };
        mem.write(self.m.desc_addr(pos), &d.encode())?;
        self.prod = pos.wrapping_add(1);
        Ok(())
    }

    /// Takes up to `max` received frames into `out` and posts their buffers
    /// again; returns how many frames were added. Completions that fail a
    /// check are counted and their buffers reposted.
    pub fn poll<C: Csr + ?Sized, M: DmaMemory + ?Sized>(
        &mut self,
        csr: &mut C,
        mem: &M,
        out: &mut Vec<RxFrame>,
        max: usize,
    ) -> Result<usize, RingError> {
        let start = self.cons;
        let mut n = 0;
        while n < max && self.cons != self.prod {
            let pos = self.cons;
            let Some(c) = self.m.completion(mem, pos)? else { break };
            self.cons = pos.wrapping_add(1);
            if let Some((meta, len)) = self.check(&c, pos) {
                let mut data = vec![0u8; len];
                mem.read(self.m.buf_addr(pos), &mut data)?;
                self.counters.frames += 1;
                self.counters.bytes += len as u64;
                out.push(RxFrame { meta, data });
                n += 1;
            }
            self.post(mem)?;
        }
        if self.cons != start {
            // Completions consumed before the buffers are handed back: the
            // device's overflow guard sees room first.
            fence(Ordering::Release);
            csr.write32(format::RXQ + q::CQ_CONS, self.cons as u32);
            csr.write32(format::RXQ + q::DQ_PROD, self.prod as u32);
        }
        Ok(n)
    }

    fn check(&mut self, c: &Cpl, pos: u16) -> Option<(HostMeta, usize)> {
        let ctr = &mut self.counters;
        if !c.rx_reserved_clear() {
            ctr.reserved_bits += 1;
            return None;
        }
        if c.index != pos {
            ctr.bad_index += 1;
            return None;
        }
        match CplStatus::from_u8(c.status) {
            Some(CplStatus::Ok) => {}
            Some(CplStatus::DescInvalid) => {
                ctr.desc_invalid += 1;
                return None;
            }
            Some(CplStatus::DmaFault) => {
                ctr.dma_fault += 1;
                return None;
            }
            None => {
                ctr.bad_status += 1;
                return None;
            }
        }
        let len = c.len as u32;
        if len == 0 || len > self.m.buf_size || len > self.max_frame {
            ctr.bad_len += 1;
            return None;
        }
        let Some(meta) = HostMeta::from_words(c.meta) else {
            ctr.bad_meta += 1;
            return None;
        };
        Some((meta, len as usize))
    }

    /// Descriptors posted and not yet completed.
    pub fn posted(&self) -> u16 {
        idx::dist(self.cons, self.prod)
    }
}

/// The transmit ring.
#[derive(Debug)]
pub struct TxRing {
    m: RingMem,
    max_frame: u32,
    prod: u16,
    cons: u16,
    /// Length and sequence number posted in each slot.
    posted: Vec<(u16, u32)>,
    rung: u16,
    /// What this ring has sent, refused, rejected and reclaimed.
    pub counters: TxCounters,
}

impl TxRing {
    /// Frames posted whose completions have not been reaped.
    pub fn in_flight(&self) -> u16 {
        idx::dist(self.cons, self.prod)
    }

    /// Writes `frame` into the next slot and its descriptor; the device
    /// sees it at the next [`doorbell`](Self::doorbell).
    pub fn push<M: DmaMemory + ?Sized>(&mut self, mem: &M, frame: &[u8], seq: u32) -> Result<(), RingError> {
        let max = self.m.buf_size.min(self.max_frame) as usize;
        let min = format::TX_FRAME_MIN as usize;
        if frame.len() < min || frame.len() > max {
            return Err(RingError::FrameLength { len: frame.len(), min, max });
        }
        if self.in_flight() >= self.m.size() {
            self.counters.full += 1;
            return Err(RingError::TxFull);
        }
        let pos = self.prod;
        if self.m.claim(mem, pos)? {
            self.counters.not_posted += 1;
        }
        let buf = self.m.buf_addr(pos);
        mem.write(buf, frame)?;
        let d = Desc { addr: buf, len: frame.len() as u32, word3: seq };
        mem.write(self.m.desc_addr(pos), &d.encode())?;
        self.posted[idx::slot(pos, self.m.log2)] = (frame.len() as u16, seq);
        self.prod = pos.wrapping_add(1);
        Ok(())
    }

    /// Tells the device about every frame pushed since the last doorbell.
    pub fn doorbell<C: Csr + ?Sized>(&mut self, csr: &mut C) {
        if self.rung != self.prod {
            fence(Ordering::Release);
            csr.write32(format::TXQ + q::DQ_PROD, self.prod as u32);
            self.rung = self.prod;
        }
    }

    /// Takes the completions the device has written; returns how many.
    pub fn reap<C: Csr + ?Sized, M: DmaMemory + ?Sized>(&mut self, csr: &mut C, mem: &M) -> Result<usize, RingError> {
        let start = self.cons;
        while self.cons != self.rung {
            let pos = self.cons;
            let Some(c) = self.m.completion(mem, pos)? else { break };
            self.cons = pos.wrapping_add(1);
            let (len, seq) = self.posted[idx::slot(pos, self.m.log2)];
            self.check(&c, pos, len, seq);
        }
        let n = idx::dist(start, self.cons);
        if n != 0 {
            csr.write32(format::TXQ + q::CQ_CONS, self.cons as u32);
        }
        Ok(n as usize)
    }

    fn check(&mut self, c: &Cpl, pos: u16, len: u16, seq: u32) {
        let ctr = &mut self.counters;
        if !c.tx_reserved_clear() {
            ctr.reserved_bits += 1;
        } else if c.index != pos {
            ctr.bad_index += 1;
        } else {
            match CplStatus::from_u8(c.status) {
                Some(CplStatus::Ok) if c.len == len && c.meta[0] == seq => {
                    ctr.frames += 1;
                    ctr.bytes += len as u64;
                }
                Some(CplStatus::Ok) => ctr.mismatch += 1,
                Some(CplStatus::DescInvalid) => ctr.desc_invalid += 1,
                Some(CplStatus::DmaFault) => ctr.dma_fault += 1,
                None => ctr.bad_status += 1,
            }
        }
    }
}

/// Both rings of one device, started.
#[derive(Debug)]
pub struct Rings {
    /// Where the rings and buffers are in the DMA memory.
    pub layout: RingLayout,
    /// `DMA_CAPS` as read when the rings were started.
    pub caps: DmaCaps,
    /// The receive ring (exception frames up to the host).
    pub rx: RxRing,
    /// The transmit ring (frames the host injects).
    pub tx: TxRing,
}

impl Rings {
    /// Checks the engine's capabilities against `cfg`, lays the rings out
    /// at the start of `mem`, zeroes the completion rings, programs and
    /// enables both queues and posts every receive buffer.
    pub fn start<C: Csr + ?Sized, M: DmaMemory + ?Sized>(
        csr: &mut C,
        mem: &M,
        cfg: &RingConfig,
    ) -> Result<Rings, RingError> {
        let caps_reg = csr.read32(format::DMA_CAPS);
        let caps = DmaCaps::from_reg(caps_reg);
        if !caps.usable() {
            return Err(RingError::Caps(caps_reg));
        }
        for log2 in [cfg.rx_log2, cfg.tx_log2] {
            if !(caps.min_log2..=caps.max_log2).contains(&log2) {
                return Err(RingError::Size { log2, min: caps.min_log2, max: caps.max_log2 });
            }
        }
        let max_frame = caps.max_frame as u32;
        if !(format::RX_BUF_MIN..=format::RX_BUF_MAX).contains(&cfg.rx_buf) {
            return Err(RingError::BufSize { buf: cfg.rx_buf, min: format::RX_BUF_MIN, max: format::RX_BUF_MAX });
        }
        if !(format::TX_FRAME_MIN..=format::RX_BUF_MAX).contains(&cfg.tx_buf) {
            return Err(RingError::BufSize { buf: cfg.tx_buf, min: format::TX_FRAME_MIN, max: format::RX_BUF_MAX });
        }
        let layout = RingLayout::new(mem.base(), cfg);
        if mem.len() < layout.len {
            return Err(RingError::MemTooSmall { have: mem.len(), need: layout.len });
        }
        for (cq, log2) in [(layout.rx_cq, cfg.rx_log2), (layout.tx_cq, cfg.tx_log2)] {
            mem.write(cq, &vec![0u8; CPL_SIZE << log2])?;
        }
        let rm = RingMem {
            log2: cfg.rx_log2,
            dq: layout.rx_dq,
            cq: layout.rx_cq,
            bufs: layout.rx_bufs,
            buf_size: cfg.rx_buf,
        };
        let tm = RingMem {
            log2: cfg.tx_log2,
            dq: layout.tx_dq,
            cq: layout.tx_cq,
            bufs: layout.tx_bufs,
            buf_size: cfg.tx_buf,
        };
        start_queue(csr, format::RXQ, "receive", &rm)?;
        start_queue(csr, format::TXQ, "transmit", &tm)?;
        let mut rx = RxRing { m: rm, max_frame, prod: 0, cons: 0, counters: RxCounters::default() };
        for _ in 0..rm.size() {
            rx.post(mem)?;
        }
        fence(Ordering::Release);
        csr.write32(format::RXQ + q::DQ_PROD, rx.prod as u32);
        let tx = TxRing {
            m: tm,
            max_frame,
            prod: 0,
            cons: 0,
            posted: vec![(0, 0); tm.size() as usize],
            rung: 0,
            counters: TxCounters::default(),
        };
        Ok(Rings { layout, caps, rx, tx })
    }

    /// Disables both queues.
    pub fn stop<C: Csr + ?Sized>(&mut self, csr: &mut C) {
        csr.write32(format::RXQ + q::CTRL, 0);
        csr.write32(format::TXQ + q::CTRL, 0);
    }

    /// Pushes every frame (reaping completions when the ring is full), then
    /// rings the doorbell once. Returns how many frames were queued; on an
    /// error the frames before it are queued and rung.
    pub fn send<'a, C: Csr + ?Sized, M: DmaMemory + ?Sized>(
        &mut self,
        csr: &mut C,
        mem: &M,
        frames: impl IntoIterator<Item = (&'a [u8], u32)>,
    ) -> Result<usize, RingError> {
        let mut n = 0;
        let mut res = Ok(());
        for (f, seq) in frames {
            if self.tx.in_flight() >= self.tx.m.size() {
                self.tx.doorbell(csr);
                self.tx.reap(csr, mem)?;
            }
            if let Err(e) = self.tx.push(mem, f, seq) {
                res = Err(e);
                break;
            }
            n += 1;
        }
        self.tx.doorbell(csr);
        res.map(|_| n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_aligned_and_disjoint() {
        let cfg = RingConfig { rx_log2: 3, tx_log2: 2, rx_buf: 2048, tx_buf: 1600 };
        let l = RingLayout::new(0x1_0000_0000, &cfg);
        assert_eq!(l.rx_dq, 0x1_0000_0000);
        assert_eq!(l.rx_cq, 0x1_0000_1000);
        assert_eq!(l.tx_dq, 0x1_0000_2000);
        assert_eq!(l.tx_cq, 0x1_0000_3000);
        assert_eq!(l.rx_bufs, 0x1_0000_4000);
        assert_eq!(l.tx_bufs, 0x1_0000_8000);
        assert_eq!(l.len, 0x8000 + round_up(4 * 1600, 4096));
        let big = RingLayout::new(0, &RingConfig::default());
        assert_eq!(big.rx_cq - big.rx_dq, 4096);
        assert_eq!(big.tx_dq - big.rx_cq, 8192);
        assert_eq!(big.tx_bufs - big.rx_bufs, 256 * 16384);
    }

    #[test]
    fn ring_mem_addresses_wrap_with_positions() {
        let m = RingMem { log2: 2, dq: 0x1000, cq: 0x2000, bufs: 0x10_000, buf_size: 2048 };
        assert_eq!(m.desc_addr(0), 0x1000);
        assert_eq!(m.desc_addr(5), 0x1010);
        assert_eq!(m.cpl_addr(0xFFFF), 0x2000 + 3 * 32);
        assert_eq!(m.buf_addr(0xFFFF), 0x10_000 + 3 * 2048);
        assert_eq!(m.size(), 4);
    }
}
