//! The device side of docs/hardware.md §8: a model of the card's DMA
//! engine between the core's host streams (`m_axis_host`,
//! `s_axis_inject`) and host memory, and a [`Card`] that puts the engine,
//! a core and the BAR0 address decoder together.
//!
//! The core is a trait ([`Core`]): [`ModelCore`] wraps the hardware model
//! (`lvsnic_model::hw::HwPipeline`); the verilated RTL (`lvsnic-sim`)
//! plugs in the same way (push frames into its AXI-Stream inputs, clock it
//! until idle, collect its outputs), so the `model` and `sim` backends run
//! the same engine and the same host ring code as a real card.
//!
//! The engine is modelled as infinitely fast and in order: a frame from the
//! core is written (or dropped) when it appears, and a transmit doorbell
//! carries out every posted descriptor before the register write returns.

use super::format::{
    self, idx, q, Cpl, CplStatus, Desc, DmaCaps, QCtrl, QIrq, QStatus, CPL_FLAGS_BYTE, CPL_SIZE, DESC_SIZE,
};
use super::memory::DmaMemory;
use lvsnic_model::hw::{Csr, HwOutput, HwParams, HwPipeline};

/// A frame the core sent on `m_axis_tx`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxOut {
    /// The frame's bytes.
    pub data: Vec<u8>,
    /// `m_axis_tx_tuser[31:0]`.
    pub seq: u32,
    /// `m_axis_tx_tuser[32]` on the last beat: the MAC discards the frame.
    pub abort: bool,
}

/// A frame the core sent on `m_axis_host`, with its 160-bit `tuser` as
/// five 32-bit words (word 0 = bits 31:0), uninterpreted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostOut {
    /// `m_axis_host_tuser`, word 0 = bits 31:0.
    pub meta: [u32; 5],
    /// The frame's bytes.
    pub data: Vec<u8>,
}

/// Frames that came out of a core, per output stream, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreOutputs {
    /// Frames on `m_axis_tx`.
    pub tx: Vec<TxOut>,
    /// Frames on `m_axis_host`.
    pub host: Vec<HostOut>,
}

/// The `lvsnic_core` as the card sees it: two input streams, two output
/// streams, the AXI-Lite registers.
///
/// Plugging in the verilated core (`lvsnic-sim`'s `Core`, AXI-Stream
/// push/pull and AXI-Lite read/write) takes one adapter:
///
/// ```text
/// impl Core for SimCore {
///     fn rx(&mut self, f, ts, seq)  { self.core.push_rx(f, tuser = ts | seq << 64) }
///     fn inject(&mut self, f, seq)  { self.core.push_inject(f, tuser = seq) }
///     fn drain(&mut self, out)      { clock until every pushed frame has left;
///                                     m_axis_tx   → out.tx   (tuser[31:0] seq, tuser[32] abort),
///                                     m_axis_host → out.host (tuser as five u32 words) }
///     fn backend(&self) -> &'static str { "sim" }
/// }
/// impl Csr for SimCore { /* AXI-Lite write/read */ }
/// ```
///
/// and `ModelDevice::with_core(SimCore::new(..), DmaEngine::default(), cfg)`
/// is the `sim` backend: same engine model, same rings, same slow path.
pub trait Core: Csr {
    /// The backend name a device built on this core reports.
    fn backend(&self) -> &'static str {
        "model"
    }
    /// Offers a frame on `s_axis_rx` (tuser: timestamp, sequence number).
    fn rx(&mut self, frame: &[u8], ts: u64, seq: u32);
    /// Offers a frame on `s_axis_inject` (tuser: sequence number).
    fn inject(&mut self, frame: &[u8], seq: u32);
    /// Runs the core until every frame offered so far has left it, and
    /// appends the outputs to `out`.
    fn drain(&mut self, out: &mut CoreOutputs);
}

/// The hardware model as a [`Core`].
#[derive(Clone, Debug)]
pub struct ModelCore {
    /// The hardware model.
    pub hw: HwPipeline,
    pending: CoreOutputs,
}

impl ModelCore {
    /// The hardware model with table sizes `params`, out of reset.
    pub fn new(params: HwParams) -> ModelCore {
        ModelCore { hw: HwPipeline::new(params), pending: CoreOutputs::default() }
    }
}

impl Csr for ModelCore {
    fn write32(&mut self, addr: u32, value: u32) {
        self.hw.write32(addr, value)
    }
    fn read32(&mut self, addr: u32) -> u32 {
        self.hw.read32(addr)
    }
}

impl Core for ModelCore {
    fn rx(&mut self, frame: &[u8], ts: u64, seq: u32) {
        match self.hw.process(frame, ts, seq) {
            HwOutput::Forward { frame, seq } => self.pending.tx.push(TxOut { data: frame, seq, abort: false }),
            HwOutput::ToHost { meta, frame } => self.pending.host.push(HostOut { meta: meta.to_words(), data: frame }),
            HwOutput::Aborted { meta, frame } => {
                // The aborted frame's bytes are unspecified (hardware.md §3.1).
                self.pending.tx.push(TxOut { data: Vec::new(), seq, abort: true });
                self.pending.host.push(HostOut { meta: meta.to_words(), data: frame });
            }
        }
    }
    fn inject(&mut self, frame: &[u8], seq: u32) {
        let data = self.hw.inject(frame);
        self.pending.tx.push(TxOut { data, seq, abort: false });
    }
    fn drain(&mut self, out: &mut CoreOutputs) {
        out.tx.append(&mut self.pending.tx);
        out.host.append(&mut self.pending.host);
    }
}

/// One queue's registers and state.
#[derive(Clone, Debug, Default)]
struct Queue {
    dq_base: u64,
    cq_base: u64,
    log2: u8,
    enabled: bool,
    fault: bool,
    irq_arm: bool,
    dq_prod: u16,
    dq_cons: u16,
    cq_prod: u16,
    cq_cons: u16,
    err_desc: u32,
    err_index: u32,
    err_dma: u32,
    drop: u32,
    irqs: u64,
}

impl Queue {
    fn size(&self) -> u16 {
        (1u32 << self.log2) as u16
    }
    fn running(&self) -> bool {
        self.enabled && !self.fault
    }
    fn has_descriptor(&self) -> bool {
        self.dq_cons != self.dq_prod
    }
    fn cq_room(&self) -> bool {
        idx::dist(self.cq_cons, self.cq_prod) < self.size()
    }

    fn read(&self, off: u32) -> u32 {
        match off {
            q::DQ_BASE_LO => self.dq_base as u32,
            q::DQ_BASE_HI => (self.dq_base >> 32) as u32,
            q::CQ_BASE_LO => self.cq_base as u32,
            q::CQ_BASE_HI => (self.cq_base >> 32) as u32,
            q::SIZE_LOG2 => self.log2 as u32,
            q::CTRL => QCtrl::ENABLE.bits() * self.enabled as u32,
            q::STATUS => {
                let mut s = QStatus::empty();
                s.set(QStatus::RUNNING, self.running());
                s.set(QStatus::FAULT, self.fault);
                s.bits()
            }
            q::IRQ => QIrq::ARM.bits() * self.irq_arm as u32,
            q::DQ_PROD => self.dq_prod as u32,
            q::DQ_CONS => self.dq_cons as u32,
            q::CQ_PROD => self.cq_prod as u32,
            q::CQ_CONS => self.cq_cons as u32,
            q::ERR_DESC => self.err_desc,
            q::ERR_INDEX => self.err_index,
            q::ERR_DMA => self.err_dma,
            q::DROP => self.drop,
            _ => 0,
        }
    }

    /// A register write; true if it was an accepted `DQ_PROD` (doorbell).
    fn write(&mut self, off: u32, v: u32, caps: DmaCaps) -> bool {
        let cfg = !self.enabled;
        match off {
            q::DQ_BASE_LO if cfg => self.dq_base = self.dq_base & !0xFFFF_FFFF | v as u64,
            q::DQ_BASE_HI if cfg => self.dq_base = self.dq_base & 0xFFFF_FFFF | (v as u64) << 32,
            q::CQ_BASE_LO if cfg => self.cq_base = self.cq_base & !0xFFFF_FFFF | v as u64,
            q::CQ_BASE_HI if cfg => self.cq_base = self.cq_base & 0xFFFF_FFFF | (v as u64) << 32,
            q::SIZE_LOG2 if cfg && (caps.min_log2 as u32..=caps.max_log2 as u32).contains(&v) => self.log2 = v as u8,
            q::CTRL => {
                let en = QCtrl::from_bits_retain(v).contains(QCtrl::ENABLE);
                if en && !self.enabled && self.log2 != 0 {
                    self.enabled = true;
                    self.fault = false;
                    (self.dq_prod, self.dq_cons, self.cq_prod, self.cq_cons) = (0, 0, 0, 0);
                } else if !en {
                    self.enabled = false;
                }
            }
            q::IRQ => self.irq_arm = QIrq::from_bits_retain(v).contains(QIrq::ARM),
            q::DQ_PROD if self.enabled => {
                let new = v as u16;
                let size = self.size();
                let ok = v >> 16 == 0
                    && idx::dist(self.cq_cons, new) <= size
                    && idx::dist(self.dq_cons, new) <= size
                    && idx::dist(self.dq_cons, new) >= idx::dist(self.dq_cons, self.dq_prod);
                if ok {
                    self.dq_prod = new;
                    return true;
                }
                self.err_index = self.err_index.wrapping_add(1);
            }
            q::CQ_CONS if self.enabled => {
                let new = v as u16;
                if v >> 16 == 0 && idx::dist(self.cq_cons, new) <= idx::dist(self.cq_cons, self.cq_prod) {
                    self.cq_cons = new;
                } else {
                    self.err_index = self.err_index.wrapping_add(1);
                }
            }
            _ => {}
        }
        false
    }

    fn fetch<M: DmaMemory + ?Sized>(&mut self, mem: &M) -> Option<Desc> {
        let mut b = [0u8; DESC_SIZE];
        let a = self.dq_base + (idx::slot(self.dq_cons, self.log2) * DESC_SIZE) as u64;
        if mem.read(a, &mut b).is_err() {
            self.err_dma = self.err_dma.wrapping_add(1);
            self.fault = true;
            return None;
        }
        Some(Desc::decode(&b))
    }

    /// Consumes the descriptor at `dq_cons` with a completion: bytes 0..31
    /// first, then byte 31 (the phase), so a host that sees the phase sees
    /// the whole record.
    fn complete<M: DmaMemory + ?Sized>(&mut self, mem: &M, len: u16, meta: [u32; 5], status: CplStatus) {
        let pos = self.cq_prod;
        let c = Cpl::new(self.dq_cons, len, meta, status, idx::phase(pos, self.log2));
        let b = c.encode();
        let a = self.cq_base + (idx::slot(pos, self.log2) * CPL_SIZE) as u64;
        let ok = mem.write(a, &b[..CPL_FLAGS_BYTE]).is_ok()
            && mem.write(a + CPL_FLAGS_BYTE as u64, &b[CPL_FLAGS_BYTE..]).is_ok();
        if !ok {
            self.err_dma = self.err_dma.wrapping_add(1);
            self.fault = true;
            return;
        }
        self.dq_cons = self.dq_cons.wrapping_add(1);
        self.cq_prod = pos.wrapping_add(1);
        if self.irq_arm {
            self.irq_arm = false;
            self.irqs += 1;
        }
    }
}

/// The DMA engine: a receive queue fed by `m_axis_host`, a transmit queue
/// feeding `s_axis_inject`, their registers at [`DMA_BASE`](format::DMA_BASE).
#[derive(Clone, Debug)]
pub struct DmaEngine {
    caps: DmaCaps,
    rx: Queue,
    tx: Queue,
}

impl Default for DmaEngine {
    fn default() -> Self {
        DmaEngine::new(DmaCaps {
            min_log2: format::MODEL_MIN_LOG2,
            max_log2: format::MODEL_MAX_LOG2,
            max_frame: format::MAX_FRAME as u16,
        })
    }
}

/// Which of the engine's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueId {
    /// The receive queue (exception frames).
    Rx,
    /// The transmit queue (injected frames).
    Tx,
}

impl DmaEngine {
    /// An engine that reports `caps` in `DMA_CAPS`, both queues disabled.
    pub fn new(caps: DmaCaps) -> DmaEngine {
        DmaEngine { caps, rx: Queue::default(), tx: Queue::default() }
    }

    fn queue(&mut self, addr: u32) -> Option<(&mut Queue, QueueId, u32)> {
        match addr {
            a if (format::RXQ..format::RXQ + 0x40).contains(&a) => Some((&mut self.rx, QueueId::Rx, a - format::RXQ)),
            a if (format::TXQ..format::TXQ + 0x40).contains(&a) => Some((&mut self.tx, QueueId::Tx, a - format::TXQ)),
            _ => None,
        }
    }

    /// A register read (addresses in `DMA_BASE..DMA_END`; others read 0).
    pub fn read32(&mut self, addr: u32) -> u32 {
        if addr == format::DMA_CAPS {
            return self.caps.to_reg();
        }
        match self.queue(addr) {
            Some((qu, _, off)) if off % 4 == 0 => qu.read(off),
            _ => 0,
        }
    }

    /// A register write; returns the queue whose doorbell was rung.
    pub fn write32(&mut self, addr: u32, v: u32) -> Option<QueueId> {
        let caps = self.caps;
        let (qu, id, off) = self.queue(addr)?;
        (off % 4 == 0 && qu.write(off, v, caps)).then_some(id)
    }

    /// MSI-X messages the queue would have raised so far.
    pub fn irqs(&self, q: QueueId) -> u64 {
        match q {
            QueueId::Rx => self.rx.irqs,
            QueueId::Tx => self.tx.irqs,
        }
    }

    /// A frame from `m_axis_host`: written into the next posted receive
    /// buffer with its completion, or dropped and counted. Returns whether
    /// it was delivered.
    pub fn rx_frame<M: DmaMemory + ?Sized>(&mut self, mem: &M, meta: [u32; 5], data: &[u8]) -> bool {
        let max_frame = self.caps.max_frame as usize;
        let qu = &mut self.rx;
        let drop = |qu: &mut Queue| {
            qu.drop = qu.drop.wrapping_add(1);
            false
        };
        if !qu.running() || data.len() > max_frame || data.is_empty() {
            return drop(qu);
        }
        loop {
            if !qu.has_descriptor() || !qu.cq_room() {
                return drop(qu);
            }
            let Some(d) = qu.fetch(mem) else { return drop(qu) };
            if !d.rx_valid() {
                qu.err_desc = qu.err_desc.wrapping_add(1);
                qu.complete(mem, 0, [0; 5], CplStatus::DescInvalid);
                if qu.fault {
                    return drop(qu);
                }
                continue;
            }
            if data.len() > d.len as usize {
                // The buffer stays posted for a shorter frame.
                return drop(qu);
            }
            if mem.write(d.addr, data).is_err() {
                qu.err_dma = qu.err_dma.wrapping_add(1);
                qu.complete(mem, 0, [0; 5], CplStatus::DmaFault);
                return drop(qu);
            }
            qu.complete(mem, data.len() as u16, meta, CplStatus::Ok);
            return !qu.fault;
        }
    }

    /// Carries out every posted transmit descriptor: frames go to the
    /// core's inject stream. Returns how many descriptors were consumed.
    pub fn tx_run<M: DmaMemory + ?Sized, C: Core + ?Sized>(&mut self, mem: &M, core: &mut C) -> usize {
        let max_frame = self.caps.max_frame as u32;
        let qu = &mut self.tx;
        let mut n = 0;
        while qu.running() && qu.has_descriptor() && qu.cq_room() {
            let Some(d) = qu.fetch(mem) else { break };
            n += 1;
            let seq = d.word3;
            if !d.tx_valid(max_frame) {
                qu.err_desc = qu.err_desc.wrapping_add(1);
                qu.complete(mem, 0, [seq, 0, 0, 0, 0], CplStatus::DescInvalid);
                continue;
            }
            let mut frame = vec![0u8; d.len as usize];
            if mem.read(d.addr, &mut frame).is_err() {
                qu.err_dma = qu.err_dma.wrapping_add(1);
                qu.complete(mem, 0, [seq, 0, 0, 0, 0], CplStatus::DmaFault);
                continue;
            }
            core.inject(&frame, seq);
            qu.complete(mem, d.len as u16, [seq, 0, 0, 0, 0], CplStatus::Ok);
        }
        n
    }
}

/// A modelled card: core, DMA engine, host memory, and the MAC side.
///
/// BAR0 decodes `DMA_BASE..DMA_END` to the engine and every other address
/// to the core's AXI-Lite port.
#[derive(Debug)]
pub struct Card<C: Core, M: DmaMemory> {
    /// The core behind the engine.
    pub core: C,
    /// The DMA engine.
    pub engine: DmaEngine,
    mem: M,
    outs: CoreOutputs,
    wire_tx: Vec<TxOut>,
}

impl<C: Core, M: DmaMemory> Card<C, M> {
    /// A card with `core` and `engine`, its DMA into `mem`.
    pub fn new(core: C, engine: DmaEngine, mem: M) -> Self {
        Card { core, engine, mem, outs: CoreOutputs::default(), wire_tx: Vec::new() }
    }

    /// A frame arriving from the network at the MAC (`s_axis_rx`).
    pub fn wire_rx(&mut self, frame: &[u8], ts: u64, seq: u32) {
        self.core.rx(frame, ts, seq);
        self.route();
    }

    /// Frames the MAC transmitted since the last call (aborted ones
    /// included, flagged), in order.
    pub fn take_wire_tx(&mut self) -> Vec<TxOut> {
        std::mem::take(&mut self.wire_tx)
    }

    /// Moves the core's outputs on: `m_axis_tx` to the MAC, `m_axis_host`
    /// into the engine's receive queue.
    fn route(&mut self) {
        self.core.drain(&mut self.outs);
        self.wire_tx.append(&mut self.outs.tx);
        for h in self.outs.host.drain(..) {
            self.engine.rx_frame(&self.mem, h.meta, &h.data);
        }
    }
}

impl<C: Core, M: DmaMemory> Csr for Card<C, M> {
    fn write32(&mut self, addr: u32, value: u32) {
        if (format::DMA_BASE..format::DMA_END).contains(&addr) {
            if self.engine.write32(addr, value) == Some(QueueId::Tx) {
                self.engine.tx_run(&self.mem, &mut self.core);
                self.route();
            }
        } else {
            self.core.write32(addr, value);
        }
    }
    fn read32(&mut self, addr: u32) -> u32 {
        if (format::DMA_BASE..format::DMA_END).contains(&addr) {
            self.engine.read32(addr)
        } else {
            self.core.read32(addr)
        }
    }
}
