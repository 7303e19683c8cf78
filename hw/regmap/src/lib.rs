//! The lvsnic register map and shared codes in Rust. Every module but this
//! one is generated from the single source `hw/regmap/lvsnic.rdl` by
//! `scripts/gen-regmap.py` (which `--check`s they are current), alongside
//! the RTL header `hw/rtl/lvsnic_regs.vh`, the cocotb tests' constants
//! `hw/tb/unit/lvsnic_regs.py` and `docs/registers.md`.
//!
//! * [`regs`]: addresses, fields and reset values of `lvsnic_core`'s registers.
//! * [`dma`]: the DMA engine's registers in a card's BAR0.
//! * [`Reason`], [`ActionOp`], [`TableCmd`]: the codes, and
//!   [`host_meta`]/[`action_word0`] the bit positions of the in-band data
//!   that carries them.

#![no_std]

mod codes;
pub mod dma;
pub mod regs;

pub use codes::*;
