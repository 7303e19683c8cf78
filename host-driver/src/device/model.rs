//! The `model` backend (and, with the verilated core plugged in, the `sim`
//! backend): a modelled card ([`Card`]: core + DMA engine) in plain memory,
//! driven by the same host ring code a real card is driven by.

use super::dma_model::{Card, Core, DmaEngine, ModelCore, TxOut};
use super::memory::SimMemory;
use super::rings::{RingConfig, RingLayout, Rings, RxFrame};
use super::{check_identity, read_counters, Device, DeviceCounters, DeviceError, Identity, Wire};
use lvsnic_model::hw::{Csr, HwParams};
use lvsnic_model::time::Time;

/// Table sizes of the modelled card (`--backend model`).
pub const MODEL_PARAMS: HwParams = HwParams { data_width: 64, flow_buckets_log2: 16, action_log2: 12, vip_count: 32, ipv6: true };

/// Device address of the model's DMA memory (arbitrary, above 4 GiB so the
/// `_HI` halves of the base registers are exercised).
pub const MODEL_IOVA: u64 = 0x0000_0010_0000_0000;

/// A modelled card behind the ring driver.
#[derive(Debug)]
pub struct ModelDevice<C: Core = ModelCore> {
    card: Card<C, SimMemory>,
    mem: SimMemory,
    /// The host side of the DMA rings.
    pub rings: Rings,
    /// What the identification registers said.
    pub identity: Identity,
}

impl ModelDevice<ModelCore> {
    /// The hardware model with `params`, rings of `cfg`.
    pub fn model(params: HwParams, cfg: RingConfig) -> Result<Self, DeviceError> {
        Self::with_core(ModelCore::new(params), DmaEngine::default(), cfg)
    }
}

impl<C: Core> ModelDevice<C> {
    /// A card with `core` and `engine`: checks its identity registers,
    /// allocates DMA memory for `cfg` and starts the rings.
    pub fn with_core(core: C, engine: DmaEngine, cfg: RingConfig) -> Result<Self, DeviceError> {
        let mem = SimMemory::new(MODEL_IOVA, RingLayout::new(MODEL_IOVA, &cfg).len);
        let mut card = Card::new(core, engine, mem.clone());
        let identity = check_identity(&mut card)?;
        let rings = Rings::start(&mut card, &mem, &cfg)?;
        Ok(ModelDevice { card, mem, rings, identity })
    }

    /// The card (core, engine) behind the BAR.
    pub fn card(&mut self) -> &mut Card<C, SimMemory> {
        &mut self.card
    }

    /// The DMA memory as the device sees it.
    pub fn memory(&self) -> &SimMemory {
        &self.mem
    }
}

impl<C: Core> Csr for ModelDevice<C> {
    fn write32(&mut self, addr: u32, value: u32) {
        self.card.write32(addr, value)
    }
    fn read32(&mut self, addr: u32) -> u32 {
        self.card.read32(addr)
    }
}

impl<C: Core> Device for ModelDevice<C> {
    fn backend(&self) -> &'static str {
        self.card.core.backend()
    }
    fn recv(&mut self, out: &mut Vec<RxFrame>, max: usize) -> Result<usize, DeviceError> {
        Ok(self.rings.rx.poll(&mut self.card, &self.mem, out, max)?)
    }
    fn send(&mut self, frames: &[(&[u8], u32)]) -> Result<usize, DeviceError> {
        let n = self.rings.send(&mut self.card, &self.mem, frames.iter().copied())?;
        self.rings.tx.reap(&mut self.card, &self.mem)?;
        Ok(n)
    }
    fn counters(&mut self) -> DeviceCounters {
        read_counters(&mut self.card, &self.rings)
    }
}

impl<C: Core> Wire for ModelDevice<C> {
    fn deliver(&mut self, frame: &[u8], ts: Time, seq: u32) {
        self.card.wire_rx(frame, ts, seq)
    }
    fn transmitted(&mut self) -> Vec<TxOut> {
        self.card.take_wire_tx()
    }
}
