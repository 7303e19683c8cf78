//! The DMA ring format of docs/hardware.md §8: register addresses in BAR0,
//! descriptor and completion layouts, index arithmetic. Shared by the host
//! side ([`rings`](super::rings)) and the device side
//! ([`dma_model`](super::dma_model)), so both read one definition.
//!
//! Everything here is plain data: encoders and decoders over byte arrays,
//! no memory access.

use bitflags::bitflags;

// ---------------------------------------------------------------- registers

// Addresses and fields are generated from the register map
// (hw/regmap/lvsnic.rdl, docs/registers.md): `DMA_BASE`..`DMA_END` is the
// engine's BAR0 window, `RXQ`/`TXQ` the queue register blocks and `q` the
// offsets inside one.
use lvsnic_regmap::dma as regs;
pub use lvsnic_regmap::dma::{q, DMA_BASE, DMA_CAPS, DMA_END, RXQ, TXQ};

bitflags! {
    /// Queue `CTRL` register.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct QCtrl: u32 {
        /// The queue runs. 0 → 1 zeroes the four indices and clears `fault`.
        const ENABLE = q::CTRL_ENABLE_MASK;
    }
    /// Queue `STATUS` register.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct QStatus: u32 {
        /// The queue is enabled and not halted.
        const RUNNING = q::STATUS_RUNNING_MASK;
        /// A DMA access to the queue's rings failed: the queue halted.
        const FAULT = q::STATUS_FAULT_MASK;
    }
    /// Queue `IRQ` register.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct QIrq: u32 {
        /// Raise the queue's MSI-X vector after the next completion, then clear.
        const ARM = q::IRQ_ARM_MASK;
    }
}

/// Smallest ring size (log2) the lvsnic DMA engine model reports in
/// `DMA_CAPS`.
pub const MODEL_MIN_LOG2: u8 = 2;
/// Largest ring size (log2) the lvsnic DMA engine model reports in
/// `DMA_CAPS`.
pub const MODEL_MAX_LOG2: u8 = 15;
/// The longest frame the engine moves in either direction (bytes).
pub const MAX_FRAME: u32 = 16384;
/// The smallest receive buffer a descriptor may post.
pub const RX_BUF_MIN: u32 = 64;
/// The largest receive buffer a descriptor may post.
pub const RX_BUF_MAX: u32 = 65535;
/// The shortest frame a transmit descriptor may carry (an Ethernet header).
pub const TX_FRAME_MIN: u32 = 14;

/// Decoded `DMA_CAPS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaCaps {
    /// `DMA_CAPS[7:0]`: smallest `SIZE_LOG2` a queue accepts.
    pub min_log2: u8,
    /// `DMA_CAPS[15:8]`: largest `SIZE_LOG2` a queue accepts (at most 15).
    pub max_log2: u8,
    /// `DMA_CAPS[31:16]`: `MAX_FRAME`, the longest frame the engine moves,
    /// in bytes.
    pub max_frame: u16,
}

impl DmaCaps {
    /// Decodes the `DMA_CAPS` register value `v`.
    pub fn from_reg(v: u32) -> DmaCaps {
        DmaCaps {
            min_log2: ((v & regs::DMA_CAPS_MIN_LOG2_MASK) >> regs::DMA_CAPS_MIN_LOG2_SHIFT) as u8,
            max_log2: ((v & regs::DMA_CAPS_MAX_LOG2_MASK) >> regs::DMA_CAPS_MAX_LOG2_SHIFT) as u8,
            max_frame: ((v & regs::DMA_CAPS_MAX_FRAME_MASK) >> regs::DMA_CAPS_MAX_FRAME_SHIFT) as u16,
        }
    }
    /// The `DMA_CAPS` register value (inverse of
    /// [`from_reg`](Self::from_reg)).
    pub fn to_reg(self) -> u32 {
        (self.min_log2 as u32) << regs::DMA_CAPS_MIN_LOG2_SHIFT
            | (self.max_log2 as u32) << regs::DMA_CAPS_MAX_LOG2_SHIFT
            | (self.max_frame as u32) << regs::DMA_CAPS_MAX_FRAME_SHIFT
    }
    /// The engine's DMA capabilities are usable by this driver: a non-empty
    /// ring size range within 1..=15 and a frame limit of at least 1514.
    pub fn usable(self) -> bool {
        (1..=15).contains(&self.min_log2)
            && (self.min_log2..=15).contains(&self.max_log2)
            && self.max_frame as u32 >= 1514
    }
}

// ------------------------------------------------------------- descriptors

/// Descriptor size in bytes (both rings).
pub const DESC_SIZE: usize = 16;
/// Completion size in bytes (both rings).
pub const CPL_SIZE: usize = 32;
/// Byte of a completion that holds the phase bit; written last.
pub const CPL_FLAGS_BYTE: usize = 31;
/// Phase bit in [`CPL_FLAGS_BYTE`].
pub const CPL_PHASE: u8 = 0x80;

/// A descriptor (16 bytes, little-endian):
/// `[0..8]` buffer address, `[8..12]` length (RX: buffer size; TX: frame
/// length), `[12..16]` RX: reserved 0, TX: sequence number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Desc {
    /// Bytes 0..8: device address of the buffer.
    pub addr: u64,
    /// Bytes 8..12: RX, the buffer's size; TX, the frame's length
    /// (bytes).
    pub len: u32,
    /// TX: sequence number for `s_axis_inject_tuser`; RX: reserved, 0.
    pub word3: u32,
}

impl Desc {
    /// The descriptor's 16 bytes as written to the ring.
    pub fn encode(&self) -> [u8; DESC_SIZE] {
        let mut b = [0u8; DESC_SIZE];
        b[0..8].copy_from_slice(&self.addr.to_le_bytes());
        b[8..12].copy_from_slice(&self.len.to_le_bytes());
        b[12..16].copy_from_slice(&self.word3.to_le_bytes());
        b
    }
    /// The descriptor held in 16 ring bytes.
    pub fn decode(b: &[u8; DESC_SIZE]) -> Desc {
        Desc {
            addr: u64::from_le_bytes(b[0..8].try_into().unwrap()),
            len: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            word3: u32::from_le_bytes(b[12..16].try_into().unwrap()),
        }
    }
    /// Whether the device accepts this as a receive descriptor.
    pub fn rx_valid(&self) -> bool {
        (RX_BUF_MIN..=RX_BUF_MAX).contains(&self.len) && self.word3 == 0
    }
    /// Whether the device accepts this as a transmit descriptor.
    pub fn tx_valid(&self, max_frame: u32) -> bool {
        (TX_FRAME_MIN..=max_frame).contains(&self.len)
    }
}

/// Completion status (byte 30).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CplStatus {
    /// The descriptor was carried out.
    Ok = 0,
    /// The descriptor was malformed (length out of range, reserved bits set):
    /// skipped, nothing transferred.
    DescInvalid = 1,
    /// The buffer's DMA access failed (IOMMU fault): nothing transferred.
    DmaFault = 2,
}

impl CplStatus {
    /// The status of byte 30 value `v`; None for an unknown status.
    pub fn from_u8(v: u8) -> Option<CplStatus> {
        match v {
            0 => Some(CplStatus::Ok),
            1 => Some(CplStatus::DescInvalid),
            2 => Some(CplStatus::DmaFault),
            _ => None,
        }
    }
}

/// A completion (32 bytes, little-endian):
/// `[0..2]` descriptor index (free-running), `[2..4]` length,
/// `[4..24]` RX: exception metadata (the 160-bit `m_axis_host_tuser` as
/// five 32-bit words, word 0 = bits 31:0); TX: `[4..8]` sequence number,
/// `[8..24]` reserved 0; `[24..30]` reserved 0; `[30]` status;
/// `[31]` bit 7 phase, bits 6:0 reserved 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cpl {
    /// Bytes 0..2: the descriptor's free-running position.
    pub index: u16,
    /// Bytes 2..4: RX, frame bytes written to the buffer; TX, the frame's
    /// length; 0 unless the status is `Ok`.
    pub len: u16,
    /// RX: metadata words; TX: `[seq, 0, 0, 0, 0]`.
    pub meta: [u32; 5],
    /// Bytes 24..30, must be 0.
    pub reserved: [u8; 6],
    /// Byte 30: the [`CplStatus`] as a raw byte (unknown values kept, for
    /// the host to reject).
    pub status: u8,
    /// Byte 31 (phase bit and reserved bits).
    pub flags: u8,
}

impl Cpl {
    /// A completion for position `index` with reserved bytes 0 and the phase
    /// bit `phase`.
    pub fn new(index: u16, len: u16, meta: [u32; 5], status: CplStatus, phase: bool) -> Cpl {
        Cpl { index, len, meta, reserved: [0; 6], status: status as u8, flags: if phase { CPL_PHASE } else { 0 } }
    }
    /// The completion's 32 bytes as written to the ring.
    pub fn encode(&self) -> [u8; CPL_SIZE] {
        let mut b = [0u8; CPL_SIZE];
        b[0..2].copy_from_slice(&self.index.to_le_bytes());
        b[2..4].copy_from_slice(&self.len.to_le_bytes());
        for (i, w) in self.meta.iter().enumerate() {
            b[4 + 4 * i..8 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b[24..30].copy_from_slice(&self.reserved);
        b[30] = self.status;
        b[31] = self.flags;
        b
    }
    /// The completion held in 32 ring bytes.
    pub fn decode(b: &[u8; CPL_SIZE]) -> Cpl {
        let mut meta = [0u32; 5];
        for (i, w) in meta.iter_mut().enumerate() {
            *w = u32::from_le_bytes(b[4 + 4 * i..8 + 4 * i].try_into().unwrap());
        }
        Cpl {
            index: u16::from_le_bytes([b[0], b[1]]),
            len: u16::from_le_bytes([b[2], b[3]]),
            meta,
            reserved: b[24..30].try_into().unwrap(),
            status: b[30],
            flags: b[31],
        }
    }
    /// The phase bit (byte 31 bit 7): which pass over the ring wrote
    /// this completion.
    pub fn phase(&self) -> bool {
        self.flags & CPL_PHASE != 0
    }
    /// Reserved bits of a receive completion are all 0.
    pub fn rx_reserved_clear(&self) -> bool {
        self.reserved == [0; 6] && self.flags & !CPL_PHASE == 0
    }
    /// Reserved bits of a transmit completion are all 0.
    pub fn tx_reserved_clear(&self) -> bool {
        self.rx_reserved_clear() && self.meta[1..] == [0; 4]
    }
}

// ------------------------------------------------------------------ indices

/// Free-running 16-bit ring positions. A ring of 2^`log2` slots
/// (1 ≤ log2 ≤ 15) holds position `p` in slot `p mod 2^log2`.
pub mod idx {
    /// Slot of position `pos`.
    #[inline]
    pub fn slot(pos: u16, log2: u8) -> usize {
        (pos as usize) & ((1usize << log2) - 1)
    }
    /// Positions from `from` up to (excluding) `to`, modulo 2^16.
    #[inline]
    pub fn dist(from: u16, to: u16) -> u16 {
        to.wrapping_sub(from)
    }
    /// The phase a completion at position `pos` carries: 1 on the first
    /// pass over the ring (so zeroed memory reads as "not written"),
    /// alternating on every pass. 2^16 is a multiple of 2·2^log2, so the
    /// phase is continuous across the 16-bit wrap.
    #[inline]
    pub fn phase(pos: u16, log2: u8) -> bool {
        (pos >> log2) & 1 == 0
    }
    /// Whether `pos` lies in the half-open window `[from, to)`.
    #[inline]
    pub fn in_window(pos: u16, from: u16, to: u16) -> bool {
        dist(from, pos) < dist(from, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_layout_is_byte_exact() {
        let d = Desc { addr: 0x1122_3344_5566_7788, len: 0x0000_05EA, word3: 0xA1B2_C3D4 };
        let b = d.encode();
        assert_eq!(b, [0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11, 0xEA, 0x05, 0, 0, 0xD4, 0xC3, 0xB2, 0xA1]);
        assert_eq!(Desc::decode(&b), d);
    }

    #[test]
    fn completion_layout_is_byte_exact() {
        let c = Cpl::new(0x0102, 0x05EA, [0x0000_010E, 0xDEAD_BEEF, 7, 0x8000_0001, 0x1234], CplStatus::Ok, true);
        let b = c.encode();
        assert_eq!(&b[0..4], &[0x02, 0x01, 0xEA, 0x05]);
        assert_eq!(&b[4..8], &[0x0E, 0x01, 0, 0]);
        assert_eq!(&b[8..12], &[0xEF, 0xBE, 0xAD, 0xDE]);
        assert_eq!(&b[20..24], &[0x34, 0x12, 0, 0]);
        assert_eq!(&b[24..31], &[0; 7]);
        assert_eq!(b[31], 0x80);
        assert_eq!(Cpl::decode(&b), c);
        assert!(c.rx_reserved_clear());
        let mut bad = b;
        bad[31] |= 1;
        assert!(!Cpl::decode(&bad).rx_reserved_clear());
        bad = b;
        bad[27] = 4;
        assert!(!Cpl::decode(&bad).rx_reserved_clear());
        let t = Cpl::new(3, 60, [99, 0, 0, 0, 0], CplStatus::Ok, false);
        assert!(t.tx_reserved_clear());
        assert!(!c.tx_reserved_clear());
    }

    #[test]
    fn descriptor_validity() {
        let rx = |len, w3| Desc { addr: 0, len, word3: w3 }.rx_valid();
        assert!(!rx(63, 0) && rx(64, 0) && rx(65535, 0) && !rx(65536, 0) && !rx(2048, 1));
        let tx = |len| Desc { addr: 0, len, word3: 0xFFFF_FFFF }.tx_valid(MAX_FRAME);
        assert!(!tx(0) && !tx(13) && tx(14) && tx(MAX_FRAME) && !tx(MAX_FRAME + 1) && !tx(u32::MAX));
    }

    #[test]
    fn index_arithmetic_wraps() {
        assert_eq!(idx::slot(0xFFFF, 4), 15);
        assert_eq!(idx::slot(0x0010, 4), 0);
        assert_eq!(idx::dist(0xFFF0, 0x0010), 0x20);
        assert_eq!(idx::dist(5, 5), 0);
        assert!(idx::in_window(0x0002, 0xFFFE, 0x0004));
        assert!(!idx::in_window(0x0004, 0xFFFE, 0x0004));
        assert!(!idx::in_window(0xFFFD, 0xFFFE, 0x0004));
        // Phase: first pass 1, alternating, continuous across the 16-bit wrap.
        for log2 in 1..=15u8 {
            let n = 1u32 << log2;
            assert!(idx::phase(0, log2));
            assert!(!idx::phase(n as u16, log2));
            for p in [0u32, 1, n - 1, n, 2 * n - 1, 0xFFFF - n, 0xFFFF] {
                let a = idx::phase(p as u16, log2);
                let b = idx::phase((p + n) as u16, log2);
                assert_ne!(a, b, "log2 {log2} pos {p:#x}: next pass flips the phase");
            }
            // Position 0xFFFF and 0x0000 are adjacent: same pass iff 0 is a slot boundary.
            assert_eq!(idx::phase(0xFFFF, log2), !idx::phase(0, log2));
        }
    }

    /// The generated register constants are the addresses of
    /// docs/hardware.md §8.2.
    #[test]
    fn registers_are_the_contract() {
        assert_eq!((DMA_BASE, DMA_END, DMA_CAPS, RXQ, TXQ), (0x800, 0x900, 0x800, 0x840, 0x880));
        let offsets = [
            q::DQ_BASE_LO, q::DQ_BASE_HI, q::CQ_BASE_LO, q::CQ_BASE_HI, q::SIZE_LOG2, q::CTRL, q::STATUS, q::IRQ,
            q::DQ_PROD, q::DQ_CONS, q::CQ_PROD, q::CQ_CONS, q::ERR_DESC, q::ERR_INDEX, q::ERR_DMA, q::DROP,
        ];
        assert_eq!(offsets, core::array::from_fn(|i| 4 * i as u32));
        assert_eq!((QCtrl::ENABLE.bits(), QStatus::RUNNING.bits(), QStatus::FAULT.bits(), QIrq::ARM.bits()), (1, 1, 2, 1));
    }

    #[test]
    fn caps_round_trip() {
        let c = DmaCaps { min_log2: 2, max_log2: 15, max_frame: MAX_FRAME as u16 };
        assert_eq!(DmaCaps::from_reg(c.to_reg()), c);
        assert_eq!(c.to_reg(), 0x4000_0F02);
        assert!(c.usable());
        assert!(!DmaCaps::from_reg(0).usable());
        assert!(!DmaCaps { min_log2: 4, max_log2: 3, max_frame: 9000 }.usable());
        assert!(!DmaCaps { min_log2: 2, max_log2: 16, max_frame: 9000 }.usable());
    }
}
