//! Typed errors of the harness. Every message is one line.

use std::fmt;
use std::path::PathBuf;

/// An AXI-Stream port of `lvsnic_core`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Port {
    /// `s_axis_rx`: frames from the MAC.
    Rx,
    /// `s_axis_inject`: frames from the host.
    Inject,
    /// `m_axis_tx`: frames to the MAC.
    Tx,
    /// `m_axis_host`: exceptions to the host.
    Host,
}

impl Port {
    /// The RTL port prefix, e.g. `s_axis_rx`.
    pub const fn rtl_name(self) -> &'static str {
        match self {
            Port::Rx => "s_axis_rx",
            Port::Inject => "s_axis_inject",
            Port::Tx => "m_axis_tx",
            Port::Host => "m_axis_host",
        }
    }

    /// Width of the port's `tuser` in bits (docs/hardware.md §2).
    pub const fn tuser_bits(self) -> u32 {
        match self {
            Port::Rx => 96,
            Port::Inject => 32,
            Port::Tx => 33,
            Port::Host => 160,
        }
    }
}

impl fmt::Display for Port {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.rtl_name())
    }
}

/// An AXI-Lite operation, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AxilOp {
    /// A register write.
    Write,
    /// A register read.
    Read,
}

impl fmt::Display for AxilOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AxilOp::Write => "write",
            AxilOp::Read => "read",
        })
    }
}

/// What made the verilated model stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtlFailure {
    /// The RTL executed `$stop`, `$fatal` or `$error`.
    Stop,
    /// The RTL executed `$finish`.
    Finish,
    /// The Verilator runtime reported a fatal error.
    Runtime,
    /// The C++ side failed (exception, harness bug).
    Internal,
}

/// Errors of the simulation harness.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The model could not be created.
    #[error("lvsnic-sim: cannot create the DATA_WIDTH={width} model: {msg}")]
    Create {
        /// Requested data width.
        width: u32,
        /// Why.
        msg: String,
    },
    /// The verilated model stopped; the [`Core`](crate::Core) is unusable.
    #[error("lvsnic-sim: RTL stopped at cycle {cycle} ({kind:?}): {msg}")]
    Rtl {
        /// Cycle of the failing step.
        cycle: u64,
        /// What happened.
        kind: RtlFailure,
        /// The runtime's message.
        msg: String,
    },
    /// An earlier [`SimError::Rtl`] left the model unusable.
    #[error("lvsnic-sim: the model stopped earlier (cycle {cycle}) and cannot run")]
    Dead {
        /// Cycle at which it stopped.
        cycle: u64,
    },
    /// A frame without bytes was queued (AXI-Stream frames have at least one).
    #[error("lvsnic-sim: {port}: cannot send an empty frame")]
    EmptyFrame {
        /// The source port.
        port: Port,
    },
    /// A `tuser` value has bits set above the port's width.
    #[error("lvsnic-sim: {port}: tuser has bits set above bit {}", bits - 1)]
    TuserTooWide {
        /// The port.
        port: Port,
        /// Width of the port's `tuser`.
        bits: u32,
    },
    /// An output of the RTL broke the AXI-Stream or AXI-Lite rules. The
    /// cycle is complete, but the drivers may have missed its other
    /// handshakes: treat the run as failed.
    #[error("lvsnic-sim: {port}: protocol violation at cycle {cycle}: {what}")]
    Protocol {
        /// Port name (`m_axis_tx`, `s_axil`, ...).
        port: &'static str,
        /// Cycle of the violation.
        cycle: u64,
        /// The rule broken.
        what: String,
    },
    /// An output frame grew past the sink's limit without `tlast`.
    #[error("lvsnic-sim: {port}: frame longer than {max} bytes without tlast at cycle {cycle}")]
    FrameTooLong {
        /// The sink port.
        port: Port,
        /// The limit ([`Limits::max_frame_len`](crate::Limits)).
        max: usize,
        /// Cycle at which the limit was passed.
        cycle: u64,
    },
    /// An AXI-Lite address is unaligned or outside `AXIL_ADDR_WIDTH`.
    #[error(
        "lvsnic-sim: AXI-Lite address {addr:#x} is not a 4-byte aligned address below {limit:#x}"
    )]
    BadAddress {
        /// The address.
        addr: u32,
        /// 2^AXIL_ADDR_WIDTH.
        limit: u32,
    },
    /// An AXI-Lite access did not complete in time (the master gives up; a
    /// response arriving later is reported as a protocol violation).
    #[error("lvsnic-sim: AXI-Lite {op} of {addr:#05x} did not complete in {cycles} cycles (at cycle {cycle})")]
    AxilTimeout {
        /// Read or write.
        op: AxilOp,
        /// Address.
        addr: u32,
        /// The limit ([`Limits::axil_timeout`](crate::Limits)).
        cycles: u64,
        /// Cycle at which it gave up.
        cycle: u64,
    },
    /// An AXI-Lite access completed with a response other than OKAY.
    #[error("lvsnic-sim: AXI-Lite {op} of {addr:#05x} answered {} ({resp})", resp_name(*resp))]
    AxilResponse {
        /// Read or write.
        op: AxilOp,
        /// Address.
        addr: u32,
        /// `bresp` / `rresp`.
        resp: u8,
    },
    /// Work was pending but nothing moved on any port for too long.
    #[error("lvsnic-sim: watchdog: nothing moved for {idle} cycles at cycle {cycle}; {detail}")]
    Stalled {
        /// Cycle at which the watchdog fired.
        cycle: u64,
        /// Cycles without any transfer.
        idle: u64,
        /// What was pending.
        detail: String,
    },
    /// `run_until_idle` reached its cycle budget while work was still moving.
    #[error("lvsnic-sim: not idle after {cycles} cycles (at cycle {cycle}); {detail}")]
    Timeout {
        /// The budget.
        cycles: u64,
        /// Cycle at which it gave up.
        cycle: u64,
        /// What was pending.
        detail: String,
    },
    /// An FST trace could not be opened or written.
    #[error("lvsnic-sim: trace {}: {msg}", path.display())]
    Trace {
        /// The trace file.
        path: PathBuf,
        /// Why.
        msg: String,
    },
}

fn resp_name(resp: u8) -> &'static str {
    match resp {
        0 => "OKAY",
        1 => "EXOKAY",
        2 => "SLVERR",
        _ => "DECERR",
    }
}
