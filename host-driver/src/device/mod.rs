//! The device side of the host driver: one [`Device`] interface over four
//! backends, all driving the core through the same registers ([`Csr`]);
//! three of them through the same DMA rings (docs/hardware.md §8,
//! [`rings`]), the fourth (`etherbone`, a board without a DMA engine)
//! through UDP datagrams of its management port.
//!
//! | backend | core | DMA engine | memory | registers |
//! |---|---|---|---|---|
//! | `model` ([`model::ModelDevice`]) | `HwPipeline` ([`dma_model::ModelCore`]) | [`dma_model::DmaEngine`] | [`memory::SimMemory`] | [`dma_model::Card`] |
//! | `sim` (`ModelDevice<C>` with the verilated core as `C`) | `lvsnic-sim` | the same model | the same | the same |
//! | `vfio` ([`vfio::VfioDevice`]) | the card | the card | [`memory::DmaRegion`] in the IOMMU | BAR0 ([`mmio::Bar`]) |
//! | `etherbone` ([`etherbone::EtherboneDevice`]) | the board | none: frames as UDP datagrams | none | Etherbone over UDP |
//!
//! [`board_emu`] is an emulated board for the `etherbone` backend's tests
//! (the hardware model behind the same UDP protocol).
//!
//! [`vfio_pci`] is the generic VFIO PCI device (rust-vmm's `vfio-ioctls`
//! underneath) the `vfio` backend is built on; `tests/vfio_edu.rs` drives
//! it against QEMU's `edu` device in a VM (scripts/vm/vfio.sh).
//!
//! One file per concern; `unsafe` lives only in [`mmio`] (volatile BAR
//! access), [`memory`] (volatile DMA-memory copies) and [`sys`] (the two
//! VFIO ioctls vfio-ioctls does not serve), each of which allows it; the workspace denies it
//! everywhere else (`[workspace.lints]`).

pub mod board_emu;
pub mod dma_model;
pub mod etherbone;
pub mod etherbone_wire;
pub mod format;
pub mod memory;
pub mod mmio;
pub mod model;
#[cfg(feature = "sim")]
pub mod sim_core;
pub mod pci;
pub mod rings;
pub mod sys;
pub mod vfio;
pub mod vfio_pci;

use format::{q, DmaCaps};
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::{Csr, HwOutput, HwParams};
use lvsnic_model::time::Time;
pub use rings::{RxCounters, RxFrame, TxCounters};

/// One lvsnic card, whatever the backend: its registers ([`Csr`]), the
/// exception (receive) ring and the inject (transmit) ring. Every backend
/// implements every method with its real effect; how frames reach and
/// leave the card's network ports is not part of it (see [`Wire`]).
pub trait Device: Csr {
    /// `model`, `sim`, `vfio` or `etherbone`.
    fn backend(&self) -> &'static str;
    /// Takes up to `max` exception frames (with their metadata) the card
    /// handed up, copied out of DMA memory; returns how many were added.
    fn recv(&mut self, out: &mut Vec<RxFrame>, max: usize) -> Result<usize, DeviceError>;
    /// Queues frames (with their sequence numbers) for transmission on the
    /// card's network port (`s_axis_inject`), rings the doorbell once and
    /// reaps finished sends; returns how many were queued.
    fn send(&mut self, frames: &[(&[u8], u32)]) -> Result<usize, DeviceError>;
    /// Host ring counters, the DMA engine's error counters and the core's
    /// frame counters.
    fn counters(&mut self) -> DeviceCounters;
}

/// The network side of a card whose network is simulated (`model`, `sim`):
/// frames arriving at its MAC and the frames it transmitted. A real card
/// (`vfio`) has no such side in the host: frames from the network arrive
/// on its ports, the ones it sends leave on them, and the host sees only
/// what the card hands up ([`Device::recv`]). Code that offers frames to
/// the data plane and reads back what it sent is written for
/// `D: Device + Wire` ([`offer`], [`take_injected`]).
pub trait Wire {
    /// A frame arriving from the network (`s_axis_rx`, tuser = `ts`, `seq`).
    fn deliver(&mut self, frame: &[u8], ts: Time, seq: u32);
    /// Frames transmitted since the last call, in order.
    fn transmitted(&mut self) -> Vec<dma_model::TxOut>;
}

/// Offers one frame to the data plane of a simulated card (`seq` is its
/// sequence number) and returns what came out for it: forwarded on the
/// wire, handed up through the receive ring, or both for a frame the core
/// aborted. Anything else (no output, several) is an error.
pub fn offer<D: Device + Wire + ?Sized>(dev: &mut D, frame: &[u8], ts: Time, seq: u32) -> Result<HwOutput, DeviceError> {
    dev.deliver(frame, ts, seq);
    let mut tx = dev.transmitted();
    let mut host = Vec::with_capacity(1);
    dev.recv(&mut host, usize::MAX)?;
    let (nt, nh) = (tx.len(), host.len());
    if nt <= 1 && nh <= 1 {
        match (tx.pop(), host.pop()) {
            (Some(t), None) if !t.abort => return Ok(HwOutput::Forward { frame: t.data, seq: t.seq }),
            (None, Some(h)) => return Ok(HwOutput::ToHost { meta: h.meta, frame: h.data }),
            (Some(t), Some(h)) if t.abort => return Ok(HwOutput::Aborted { meta: h.meta, frame: h.data }),
            _ => {}
        }
    }
    Err(DeviceError::Outcome { seq, transmitted: nt, to_host: nh, rx: dev.counters().rx })
}

/// The frames a simulated card transmitted for the `n` frames just sent
/// through its transmit ring (`seq`: the sequence number they carried),
/// as they left its MAC. Fewer, more, or an aborted one is an error.
pub fn take_injected<D: Device + Wire + ?Sized>(dev: &mut D, n: usize, seq: u32) -> Result<Vec<Vec<u8>>, DeviceError> {
    let tx = dev.transmitted();
    if tx.len() == n && tx.iter().all(|t| !t.abort) {
        return Ok(tx.into_iter().map(|t| t.data).collect());
    }
    Err(DeviceError::Injected { seq, sent: n, transmitted: tx.len(), tx: dev.counters().tx })
}

/// A device failure, as one line.
#[derive(Debug, thiserror::Error)]
pub enum DeviceError {
    /// The host ring code refused or failed.
    #[error("{0}")]
    Ring(#[from] rings::RingError),
    /// The card is not one this driver can run.
    #[error("{0}")]
    Identity(#[from] IdentityError),
    /// A board's management port failed (`etherbone`).
    #[error("{0}")]
    Etherbone(#[from] etherbone::EtherboneError),
    /// A frame offered to a simulated card gave an output the core cannot
    /// give for one frame.
    #[error("frame {seq}: {transmitted} frames transmitted and {to_host} received by the host (receive ring {rx:?})")]
    Outcome {
        /// The frame's sequence number.
        seq: u32,
        /// Frames the card transmitted for it.
        transmitted: usize,
        /// Frames it handed up for it.
        to_host: usize,
        /// The receive ring's counters then.
        rx: RxCounters,
    },
    /// Frames sent through the transmit ring did not all leave the card.
    #[error("injected frame {seq}: {sent} frames sent, {transmitted} transmitted (transmit ring {tx:?})")]
    Injected {
        /// The sequence number the frames carried.
        seq: u32,
        /// Frames sent down the transmit ring.
        sent: usize,
        /// Frames that left the card.
        transmitted: usize,
        /// The transmit ring's counters then.
        tx: TxCounters,
    },
}

/// What the identification registers say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    /// `VERSION`: major in the upper half, minor in the lower.
    pub version: u32,
    /// Table sizes and data width (`CAPS0`, `CAPS1`).
    pub params: HwParams,
    /// The DMA engine's ring sizes and frame limit (`DMA_CAPS`).
    pub dma: DmaCaps,
}

/// The card is not one this driver can run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    /// `ID` reads all ones.
    #[error("the device does not answer: ID register reads 0xffffffff (memory decoding off, card in reset or gone)")]
    NoResponse,
    /// `ID` is not "LVSN".
    #[error("not an lvsnic card: ID register reads {0:#010x}, expected 0x4c56534e (\"LVSN\")")]
    WrongId(u32),
    /// A register map version other than 1.x.
    #[error("unsupported register map version {major}.{minor} (this driver supports 1.x)")]
    Version {
        /// `VERSION[31:16]`.
        major: u16,
        /// `VERSION[15:0]`.
        minor: u16,
    },
    /// Parameters out of the range this driver handles.
    #[error("unsupported core: {0}")]
    Caps(String),
    /// `DMA_CAPS` offers no usable ring size or frame length.
    #[error("no usable DMA engine: DMA_CAPS reads {0:#010x}")]
    NoDma(u32),
}

/// What the core's identification registers say (a board without a DMA
/// engine: `etherbone`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoreIdentity {
    /// `VERSION`: major in the upper half, minor in the lower.
    pub version: u32,
    /// Table sizes and data width (`CAPS0`, `CAPS1`).
    pub params: HwParams,
}

/// Reads and checks `ID`, `VERSION`, `CAPS0`, `CAPS1` and `DMA_CAPS`.
pub fn check_identity<C: Csr + ?Sized>(csr: &mut C) -> Result<Identity, IdentityError> {
    let CoreIdentity { version, params } = check_core_identity(csr)?;
    let dma_reg = csr.read32(format::DMA_CAPS);
    let dma = DmaCaps::from_reg(dma_reg);
    if !dma.usable() {
        return Err(IdentityError::NoDma(dma_reg));
    }
    Ok(Identity { version, params, dma })
}

/// Reads and checks the core's `ID`, `VERSION`, `CAPS0` and `CAPS1`.
pub fn check_core_identity<C: Csr + ?Sized>(csr: &mut C) -> Result<CoreIdentity, IdentityError> {
    let id = csr.read32(ID);
    if id == 0xFFFF_FFFF {
        return Err(IdentityError::NoResponse);
    }
    if id != ID_VALUE {
        return Err(IdentityError::WrongId(id));
    }
    let version = csr.read32(VERSION);
    if version >> 16 != VERSION_VALUE >> 16 {
        return Err(IdentityError::Version { major: (version >> 16) as u16, minor: version as u16 });
    }
    let caps0 = csr.read32(CAPS0);
    let caps1 = csr.read32(CAPS1);
    let params = HwParams::from_caps(caps0, caps1);
    if ![64, 128, 256, 512].contains(&params.data_width) {
        return Err(IdentityError::Caps(format!("data width {} bits (CAPS0 = {caps0:#010x})", params.data_width)));
    }
    if !(4..=16).contains(&params.flow_buckets_log2) || !(4..=16).contains(&params.action_log2) {
        return Err(IdentityError::Caps(format!("table sizes out of range (CAPS0 = {caps0:#010x})")));
    }
    if !HwParams::caps1_geometry_ok(caps1) || !(1..=32).contains(&params.vip_count) {
        return Err(IdentityError::Caps(format!("flow table geometry or VIP count (CAPS1 = {caps1:#010x})")));
    }
    Ok(CoreIdentity { version, params })
}

/// A queue's device-side state and error counters (its registers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueRegs {
    /// `STATUS`.
    pub status: u32,
    /// `DQ_CONS`: descriptors consumed.
    pub dq_cons: u32,
    /// `CQ_PROD`: completions written.
    pub cq_prod: u32,
    /// Malformed descriptors skipped.
    pub err_desc: u32,
    /// Producer/consumer index writes rejected.
    pub err_index: u32,
    /// DMA accesses that faulted.
    pub err_dma: u32,
    /// Frames dropped (receive: no buffer, too long, queue stopped).
    pub drop: u32,
}

/// The core's frame counters (`CNT[0..4]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreCounters {
    /// `CNT_RX`: frames received from the network.
    pub rx: u64,
    /// `CNT_FWD`: frames forwarded by the data plane.
    pub forwarded: u64,
    /// `CNT_HOST`: frames handed up.
    pub to_host: u64,
    /// `CNT_INJECT`: frames injected by the host.
    pub injected: u64,
}

/// Everything a device counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceCounters {
    /// Receive ring (host side).
    pub rx: RxCounters,
    /// Transmit ring (host side).
    pub tx: TxCounters,
    /// Receive queue registers.
    pub rxq: QueueRegs,
    /// Transmit queue registers.
    pub txq: QueueRegs,
    /// The core's frame counters.
    pub core: CoreCounters,
    /// A board's management port (`etherbone`; `None` on the other
    /// backends, whose receive and transmit rings are `rx`, `tx`, `rxq`,
    /// `txq`).
    pub management: Option<etherbone::ManagementCounters>,
}

fn queue_regs<C: Csr + ?Sized>(csr: &mut C, qb: u32) -> QueueRegs {
    QueueRegs {
        status: csr.read32(qb + q::STATUS),
        dq_cons: csr.read32(qb + q::DQ_CONS),
        cq_prod: csr.read32(qb + q::CQ_PROD),
        err_desc: csr.read32(qb + q::ERR_DESC),
        err_index: csr.read32(qb + q::ERR_INDEX),
        err_dma: csr.read32(qb + q::ERR_DMA),
        drop: csr.read32(qb + q::DROP),
    }
}

/// A 64-bit core counter: `LO` (latching the upper half), then `HI`.
pub fn read_counter<C: Csr + ?Sized>(csr: &mut C, n: u32) -> u64 {
    let lo = csr.read32(CNT_BASE + 8 * n);
    let hi = csr.read32(CNT_BASE + 8 * n + 4);
    (hi as u64) << 32 | lo as u64
}

/// The counters of a device with `rings` behind `csr`.
pub fn read_counters<C: Csr + ?Sized>(csr: &mut C, rings: &rings::Rings) -> DeviceCounters {
    DeviceCounters {
        rx: rings.rx.counters,
        tx: rings.tx.counters,
        rxq: queue_regs(csr, format::RXQ),
        txq: queue_regs(csr, format::TXQ),
        core: CoreCounters {
            rx: read_counter(csr, CNT_RX),
            forwarded: read_counter(csr, CNT_FWD),
            to_host: read_counter(csr, CNT_HOST),
            injected: read_counter(csr, CNT_INJECT),
        },
        management: None,
    }
}
