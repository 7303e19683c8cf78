//! `lvsnic-sim`: the verilated `lvsnic_core` RTL (docs/hardware.md) behind a
//! safe Rust API.
//!
//! Two models are built into the crate, `DATA_WIDTH` 64 and 512 (see
//! [`Width`]), with the small table sizes of [`params`]. The RTL comes from
//! `hw/rtl/lvsnic_core.f`, or a stand-in in `sim/testdata/stub_rtl/` until
//! that exists ([`RTL_FILELIST`], [`RTL_ORIGIN`]).
//!
//! ```no_run
//! use lvsnic_sim::{Core, Pattern, RxUser, Width};
//!
//! # fn main() -> Result<(), lvsnic_sim::SimError> {
//! let mut core = Core::new(Width::W64)?;
//! assert_eq!(core.read(0x000)?, 0x4C56_534E);
//! core.rx().push_bytes(&[0u8; 60], RxUser { timestamp: 1, seq: 7 })?;
//! core.host().set_pattern(Pattern::random(1, 50));
//! core.run_until_idle(100_000)?;
//! let frame = core.host().pop().expect("one exception");
//! assert_eq!(frame.data.len(), 60);
//! # Ok(())
//! # }
//! ```
//!
//! Tracing: [`Core::enable_trace`], [`CoreConfig::trace`], or the
//! environment variable `LVSNIC_SIM_TRACE=<dir>` for every core.
#![deny(unsafe_code)]

mod axil;
mod axis;
mod dut;
mod error;
mod ffi;
mod meta;
mod pattern;

/// Elaboration parameters the models are built with.
pub mod params {
    include!("params.rs");
}

pub use crate::axis::{AxisSink, AxisSource, Frame, ReceivedFrame, SentFrame};
pub use crate::dut::{Core, CoreConfig, Limits, Width, TRACE_PERIOD};
pub use crate::error::{AxilOp, Port, RtlFailure, SimError};
pub use crate::meta::{HostUser, InjectUser, RxUser, Tuser, TxUser};
/// Exception reason codes (docs/hardware.md §3), generated from the register map.
pub use lvsnic_regmap::Reason;
pub use crate::params::{ACTION_LOG2, AXIL_ADDR_WIDTH, FLOW_BUCKETS_LOG2, IPV6, VIP_COUNT};
pub use crate::pattern::Pattern;

/// The `.f` file list the models were built from.
pub const RTL_FILELIST: &str = env!("LVSNIC_SIM_RTL_F");

/// Where the RTL came from: `hw/rtl`, `stub` (the stand-in of
/// `sim/testdata/stub_rtl`) or `LVSNIC_RTL_F`.
pub const RTL_ORIGIN: &str = env!("LVSNIC_SIM_RTL_ORIGIN");
