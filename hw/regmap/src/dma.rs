// generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit
//! lvsnic DMA engine: DMA rings between the core's host streams and host memory. Registers in BAR0
//! (docs/hardware.md §8.2); unlisted addresses in the window read 0 and ignore writes.

/// First byte address of the DMA engine's registers in BAR0.
pub const DMA_BASE: u32 = 0x800;
/// One past the last byte address of the DMA engine's window.
pub const DMA_END: u32 = 0x900;
/// DMA capabilities.
pub const DMA_CAPS: u32 = 0x800;
/// DMA capabilities: field `min_log2` (bits 7:0).
pub const DMA_CAPS_MIN_LOG2_MASK: u32 = 0x000000FF;
/// DMA capabilities: field `min_log2` shift.
pub const DMA_CAPS_MIN_LOG2_SHIFT: u32 = 0;
/// DMA capabilities: field `max_log2` (bits 15:8).
pub const DMA_CAPS_MAX_LOG2_MASK: u32 = 0x0000FF00;
/// DMA capabilities: field `max_log2` shift.
pub const DMA_CAPS_MAX_LOG2_SHIFT: u32 = 8;
/// DMA capabilities: field `max_frame` (bits 31:16).
pub const DMA_CAPS_MAX_FRAME_MASK: u32 = 0xFFFF0000;
/// DMA capabilities: field `max_frame` shift.
pub const DMA_CAPS_MAX_FRAME_SHIFT: u32 = 16;
/// Receive queue (exception frames from m_axis_host, device to host).
pub const RXQ: u32 = 0x840;
/// Transmit queue (injected frames for s_axis_inject, host to device).
pub const TXQ: u32 = 0x880;

/// Offsets inside a queue register block (add a queue's address).
pub mod q {
    /// Descriptor ring address, low (16-byte aligned).
    pub const DQ_BASE_LO: u32 = 0x00;
    /// Descriptor ring address, high.
    pub const DQ_BASE_HI: u32 = 0x04;
    /// Completion ring address, low (32-byte aligned).
    pub const CQ_BASE_LO: u32 = 0x08;
    /// Completion ring address, high.
    pub const CQ_BASE_HI: u32 = 0x0C;
    /// Ring size. log2 of the slots of both rings; writes outside DMA_CAPS' range are ignored.
    pub const SIZE_LOG2: u32 = 0x10;
    /// Queue control.
    pub const CTRL: u32 = 0x14;
    /// `CTRL`: field `enable` (bits 0:0).
    pub const CTRL_ENABLE_MASK: u32 = 0x00000001;
    /// `CTRL`: field `enable` shift.
    pub const CTRL_ENABLE_SHIFT: u32 = 0;
    /// Queue status.
    pub const STATUS: u32 = 0x18;
    /// `STATUS`: field `running` (bits 0:0).
    pub const STATUS_RUNNING_MASK: u32 = 0x00000001;
    /// `STATUS`: field `running` shift.
    pub const STATUS_RUNNING_SHIFT: u32 = 0;
    /// `STATUS`: field `fault` (bits 1:1).
    pub const STATUS_FAULT_MASK: u32 = 0x00000002;
    /// `STATUS`: field `fault` shift.
    pub const STATUS_FAULT_SHIFT: u32 = 1;
    /// Queue interrupt.
    pub const IRQ: u32 = 0x1C;
    /// `IRQ`: field `arm` (bits 0:0).
    pub const IRQ_ARM_MASK: u32 = 0x00000001;
    /// `IRQ`: field `arm` shift.
    pub const IRQ_ARM_SHIFT: u32 = 0;
    /// Descriptors posted (host writes: the doorbell). Free-running ring position.
    pub const DQ_PROD: u32 = 0x20;
    /// `DQ_PROD`: field `index` (bits 15:0).
    pub const DQ_PROD_INDEX_MASK: u32 = 0x0000FFFF;
    /// `DQ_PROD`: field `index` shift.
    pub const DQ_PROD_INDEX_SHIFT: u32 = 0;
    /// Descriptors consumed (device). Free-running ring position.
    pub const DQ_CONS: u32 = 0x24;
    /// `DQ_CONS`: field `index` (bits 15:0).
    pub const DQ_CONS_INDEX_MASK: u32 = 0x0000FFFF;
    /// `DQ_CONS`: field `index` shift.
    pub const DQ_CONS_INDEX_SHIFT: u32 = 0;
    /// Completions written (device). Free-running ring position.
    pub const CQ_PROD: u32 = 0x28;
    /// `CQ_PROD`: field `index` (bits 15:0).
    pub const CQ_PROD_INDEX_MASK: u32 = 0x0000FFFF;
    /// `CQ_PROD`: field `index` shift.
    pub const CQ_PROD_INDEX_SHIFT: u32 = 0;
    /// Completions consumed (host writes). Free-running ring position.
    pub const CQ_CONS: u32 = 0x2C;
    /// `CQ_CONS`: field `index` (bits 15:0).
    pub const CQ_CONS_INDEX_MASK: u32 = 0x0000FFFF;
    /// `CQ_CONS`: field `index` shift.
    pub const CQ_CONS_INDEX_SHIFT: u32 = 0;
    /// Malformed descriptors skipped. 32-bit counter, wraps.
    pub const ERR_DESC: u32 = 0x30;
    /// DQ_PROD/CQ_CONS writes rejected. 32-bit counter, wraps.
    pub const ERR_INDEX: u32 = 0x34;
    /// DMA accesses that failed. 32-bit counter, wraps.
    pub const ERR_DMA: u32 = 0x38;
    /// Frames dropped (RX; TX reads 0). 32-bit counter, wraps.
    pub const DROP: u32 = 0x3C;
}
