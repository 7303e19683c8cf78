//! [`Core`]: one verilated `lvsnic_core` with its port drivers.

use std::ffi::CString;
use std::fmt;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::axil::AxilMaster;
use crate::axis::{AxisSink, AxisSource, SinkLanes, SrcLanes};
use crate::error::{AxilOp, Port, RtlFailure, SimError};
use crate::ffi::{FfiError, Inputs, Model, Outputs, Status};
use crate::params::AXIL_ADDR_WIDTH;

/// Trace time of one clock period: 4000 time units, i.e. 4 ns (250 MHz)
/// at the default 1 ps precision.
pub const TRACE_PERIOD: u64 = 4000;

/// The AXI-Stream data width of a model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Width {
    /// `DATA_WIDTH = 64` (quick simulation).
    W64,
    /// `DATA_WIDTH = 512` (100 GbE at 250 MHz).
    W512,
}

impl Width {
    /// Every width a model is built for.
    pub const ALL: [Width; 2] = [Width::W64, Width::W512];

    /// `DATA_WIDTH` in bits.
    pub const fn bits(self) -> u32 {
        match self {
            Width::W64 => 64,
            Width::W512 => 512,
        }
    }

    /// Bytes per beat (`KEEP_WIDTH`).
    pub const fn bytes(self) -> usize {
        self.bits() as usize / 8
    }

    /// The width for `DATA_WIDTH` = `bits`, if a model is built for it.
    pub const fn from_bits(bits: u32) -> Option<Width> {
        match bits {
            64 => Some(Width::W64),
            512 => Some(Width::W512),
            _ => None,
        }
    }
}

impl fmt::Display for Width {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-bit", self.bits())
    }
}

/// Cycle budgets and limits of a [`Core`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Cycles `rst` is held high by [`Core::reset`] (then one idle cycle).
    pub reset_cycles: u32,
    /// Watchdog: cycles without any transfer, while work is pending, after
    /// which [`Core::run_until_idle`] fails with [`SimError::Stalled`].
    pub stall_cycles: u64,
    /// Cycles with nothing pending after which [`Core::run_until_idle`]
    /// returns (covers frames still inside the pipeline).
    pub idle_cycles: u64,
    /// Cycles an AXI-Lite access may take.
    pub axil_timeout: u64,
    /// Longest frame a sink accepts before reporting [`SimError::FrameTooLong`].
    pub max_frame_len: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            reset_cycles: 16,
            stall_cycles: 10_000,
            idle_cycles: 256,
            axil_timeout: 10_000,
            max_frame_len: 65_536,
        }
    }
}

/// Options of [`Core::with_config`].
#[derive(Clone, Debug, Default)]
pub struct CoreConfig {
    /// Cycle budgets.
    pub limits: Limits,
    /// Dump an FST trace here from cycle 0 (reset included). Without it, the
    /// environment variable `LVSNIC_SIM_TRACE=<dir>` traces every core to
    /// `<dir>/lvsnic_core<width>-<pid>-<n>.fst`.
    pub trace: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Run,
    Reset,
    Quiet,
}

/// One verilated `lvsnic_core` (docs/hardware.md) with drivers on every port.
///
/// Each [`step`](Core::step) is one clock cycle: the drivers set the inputs,
/// the model is evaluated with clk=0, the outputs are sampled (handshakes
/// are decided on them), then clk=1 is evaluated. Frames go in through
/// [`rx`](Core::rx) / [`inject`](Core::inject) and come out of
/// [`tx`](Core::tx) / [`host`](Core::host); registers are reached with
/// [`read`](Core::read) / [`write`](Core::write).
pub struct Core {
    model: Model,
    width: Width,
    inputs: Inputs,
    outputs: Outputs,
    cycle: u64,
    limits: Limits,
    mode: Mode,
    last_progress: u64,
    dead: Option<u64>,
    trace: Option<PathBuf>,
    rx: AxisSource,
    inject: AxisSource,
    tx: AxisSink,
    host: AxisSink,
    axil: AxilMaster,
}

static TRACE_SEQ: AtomicU64 = AtomicU64::new(0);

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Core")
            .field("width", &self.width)
            .field("cycle", &self.cycle)
            .field("trace", &self.trace)
            .field("dead", &self.dead)
            .finish_non_exhaustive()
    }
}

impl Core {
    /// A core of the given width, out of reset and idle.
    pub fn new(width: Width) -> Result<Core, SimError> {
        Core::with_config(width, CoreConfig::default())
    }

    /// A core with explicit limits and optional trace, out of reset and idle.
    pub fn with_config(width: Width, config: CoreConfig) -> Result<Core, SimError> {
        let model = Model::new(width.bits()).map_err(|msg| SimError::Create {
            width: width.bits(),
            msg,
        })?;
        let bytes = width.bytes();
        let limits = config.limits;
        let mut core = Core {
            model,
            width,
            inputs: Inputs::default(),
            outputs: Outputs::default(),
            cycle: 0,
            limits,
            mode: Mode::Run,
            last_progress: 0,
            dead: None,
            trace: None,
            rx: AxisSource::new(Port::Rx, bytes),
            inject: AxisSource::new(Port::Inject, bytes),
            tx: AxisSink::new(Port::Tx, bytes, limits.max_frame_len),
            host: AxisSink::new(Port::Host, bytes, limits.max_frame_len),
            axil: AxilMaster::new(),
        };
        let trace = config.trace.or_else(|| {
            let dir = std::env::var_os("LVSNIC_SIM_TRACE").filter(|d| !d.is_empty())?;
            let dir = PathBuf::from(dir);
            let _ = std::fs::create_dir_all(&dir);
            let n = TRACE_SEQ.fetch_add(1, Ordering::Relaxed);
            Some(dir.join(format!(
                "lvsnic_core{}-{}-{n}.fst",
                width.bits(),
                std::process::id()
            )))
        });
        if let Some(path) = trace {
            core.enable_trace(path)?;
        }
        core.reset()?;
        Ok(core)
    }

    /// The model's data width.
    pub fn width(&self) -> Width {
        self.width
    }

    /// Clock cycles run since creation (reset included).
    pub fn cycle(&self) -> u64 {
        self.cycle
    }

    /// The current limits.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Replaces the limits.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
        self.tx.set_max_frame_len(limits.max_frame_len);
        self.host.set_max_frame_len(limits.max_frame_len);
    }

    /// The `s_axis_rx` source (frames from the MAC).
    pub fn rx(&mut self) -> &mut AxisSource {
        &mut self.rx
    }

    /// The `s_axis_inject` source (frames from the host).
    pub fn inject(&mut self) -> &mut AxisSource {
        &mut self.inject
    }

    /// The `m_axis_tx` sink (frames to the MAC).
    pub fn tx(&mut self) -> &mut AxisSink {
        &mut self.tx
    }

    /// The `m_axis_host` sink (exceptions to the host).
    pub fn host(&mut self) -> &mut AxisSink {
        &mut self.host
    }

    /// Resets the core: `rst` high for [`Limits::reset_cycles`] cycles with
    /// every `tvalid`/`tready` low, then idle cycles with `rst` low while
    /// the core clears its tables (docs/hardware.md §6: 2^max(
    /// `FLOW_BUCKETS_LOG2`, `ACTION_LOG2`) cycles, during which table
    /// commands are refused), so the core is ready when this returns.
    /// A frame partly sent or received is dropped; queued frames stay.
    pub fn reset(&mut self) -> Result<(), SimError> {
        self.rx.abort();
        self.inject.abort();
        self.tx.abort();
        self.host.abort();
        self.axil.abort();
        self.mode = Mode::Reset;
        let r = (|| {
            for _ in 0..self.limits.reset_cycles.max(1) {
                self.step()?;
            }
            self.mode = Mode::Quiet;
            let sweep = 1u64 << crate::params::FLOW_BUCKETS_LOG2.max(crate::params::ACTION_LOG2);
            for _ in 0..sweep + 8 {
                self.step()?;
            }
            Ok(())
        })();
        self.mode = Mode::Run;
        self.last_progress = self.cycle;
        r
    }

    fn ffi_error(&mut self, e: FfiError, cycle: u64) -> SimError {
        self.dead = Some(cycle);
        let kind = match e.status {
            Status::Stop => RtlFailure::Stop,
            Status::Finish => RtlFailure::Finish,
            Status::Fatal => RtlFailure::Runtime,
            Status::Exception | Status::Arg | Status::Dead | Status::Other(_) => {
                RtlFailure::Internal
            }
        };
        SimError::Rtl {
            cycle,
            kind,
            msg: e.msg,
        }
    }

    /// Runs one clock cycle.
    pub fn step(&mut self) -> Result<(), SimError> {
        if let Some(cycle) = self.dead {
            return Err(SimError::Dead { cycle });
        }
        let cycle = self.cycle;
        let i = &mut self.inputs;
        if self.mode == Mode::Run {
            i.rst = 0;
            self.rx.drive(SrcLanes {
                tdata: &mut i.rx_tdata,
                tkeep: &mut i.rx_tkeep,
                tvalid: &mut i.rx_tvalid,
                tlast: &mut i.rx_tlast,
                tuser: &mut i.rx_tuser,
            });
            self.inject.drive(SrcLanes {
                tdata: &mut i.inject_tdata,
                tkeep: &mut i.inject_tkeep,
                tvalid: &mut i.inject_tvalid,
                tlast: &mut i.inject_tlast,
                tuser: std::slice::from_mut(&mut i.inject_tuser),
            });
            i.tx_tready = self.tx.drive();
            i.host_tready = self.host.drive();
        } else {
            i.rst = u8::from(self.mode == Mode::Reset);
            i.rx_tvalid = 0;
            i.inject_tvalid = 0;
            i.tx_tready = 0;
            i.host_tready = 0;
        }
        self.axil.drive(i);

        let t = cycle.wrapping_mul(TRACE_PERIOD);
        if let Err(e) = self
            .model
            .cycle(&self.inputs, &mut self.outputs, t, t + TRACE_PERIOD / 2)
        {
            return Err(self.ffi_error(e, cycle));
        }
        self.cycle += 1;
        if self.mode != Mode::Run {
            return Ok(());
        }

        let (i, o) = (&self.inputs, &self.outputs);
        let rx_fire = i.rx_tvalid != 0 && o.rx_tready != 0;
        let inject_fire = i.inject_tvalid != 0 && o.inject_tready != 0;
        self.rx.after(rx_fire, cycle);
        self.inject.after(inject_fire, cycle);
        let tx_fire = self.tx.sample(
            SinkLanes {
                tdata: &o.tx_tdata,
                tkeep: o.tx_tkeep,
                tvalid: o.tx_tvalid != 0,
                tlast: o.tx_tlast != 0,
                tuser: &o.tx_tuser,
            },
            cycle,
        )?;
        let host_fire = self.host.sample(
            SinkLanes {
                tdata: &o.host_tdata,
                tkeep: o.host_tkeep,
                tvalid: o.host_tvalid != 0,
                tlast: o.host_tlast != 0,
                tuser: &o.host_tuser,
            },
            cycle,
        )?;
        let axil_moved = self.axil.sample(i, o, cycle)?;
        if rx_fire || inject_fire || tx_fire || host_fire || axil_moved {
            self.last_progress = cycle;
        }
        Ok(())
    }

    /// Runs `cycles` clock cycles.
    pub fn run(&mut self, cycles: u64) -> Result<(), SimError> {
        for _ in 0..cycles {
            self.step()?;
        }
        Ok(())
    }

    /// Whether work is visibly pending: frames queued on a source, a frame
    /// half received, `tvalid` high on an output, or an AXI-Lite access.
    pub fn busy(&self) -> bool {
        !self.rx.is_idle()
            || !self.inject.is_idle()
            || self.tx.in_frame()
            || self.host.in_frame()
            || self.outputs.tx_tvalid != 0
            || self.outputs.host_tvalid != 0
            || self.axil.busy()
    }

    fn describe(&self) -> String {
        format!(
            "{}; {}; {}; {}",
            self.rx.describe(),
            self.inject.describe(),
            self.tx.describe(self.outputs.tx_tvalid != 0),
            self.host.describe(self.outputs.host_tvalid != 0)
        )
    }

    /// Runs until nothing is pending (see [`Core::busy`]) for
    /// [`Limits::idle_cycles`] cycles in a row; returns the cycles run.
    ///
    /// Never hangs: fails with [`SimError::Stalled`] when work is pending but
    /// no beat or AXI-Lite handshake happened for [`Limits::stall_cycles`]
    /// cycles (e.g. a sink that never takes data), and with
    /// [`SimError::Timeout`] after `max_cycles`.
    pub fn run_until_idle(&mut self, max_cycles: u64) -> Result<u64, SimError> {
        let start = self.cycle;
        self.last_progress = start;
        let mut quiet = 0u64;
        loop {
            if self.cycle - start >= max_cycles {
                return Err(SimError::Timeout {
                    cycles: max_cycles,
                    cycle: self.cycle,
                    detail: self.describe(),
                });
            }
            self.step()?;
            if self.busy() {
                quiet = 0;
                let idle = (self.cycle - 1).saturating_sub(self.last_progress);
                if idle >= self.limits.stall_cycles {
                    return Err(SimError::Stalled {
                        cycle: self.cycle,
                        idle,
                        detail: self.describe(),
                    });
                }
            } else {
                quiet += 1;
                if quiet >= self.limits.idle_cycles {
                    return Ok(self.cycle - start);
                }
            }
        }
    }

    fn check_addr(addr: u32) -> Result<(), SimError> {
        let limit = 1u32 << AXIL_ADDR_WIDTH;
        if addr % 4 != 0 || addr >= limit {
            return Err(SimError::BadAddress { addr, limit });
        }
        Ok(())
    }

    fn finish_axil(&mut self) -> Result<u32, SimError> {
        let start = self.cycle;
        loop {
            if let Err(e) = self.step() {
                self.axil.abort();
                return Err(e);
            }
            if let Some(r) = self.axil.take_done() {
                return r;
            }
            if self.cycle - start >= self.limits.axil_timeout {
                let (op, addr) = self.axil.op_addr().unwrap_or((AxilOp::Read, 0));
                self.axil.abort();
                return Err(SimError::AxilTimeout {
                    op,
                    addr,
                    cycles: self.limits.axil_timeout,
                    cycle: self.cycle,
                });
            }
        }
    }

    /// Writes a 32-bit register (all byte strobes), cycle by cycle; the
    /// streams keep running meanwhile.
    pub fn write(&mut self, addr: u32, data: u32) -> Result<(), SimError> {
        self.write_strobe(addr, data, 0xF)
    }

    /// Writes the bytes of a register selected by `strb` (bit i = byte i).
    pub fn write_strobe(&mut self, addr: u32, data: u32, strb: u8) -> Result<(), SimError> {
        Self::check_addr(addr)?;
        if let Some(cycle) = self.dead {
            return Err(SimError::Dead { cycle });
        }
        self.axil.start_write(addr, data, strb & 0xF);
        self.finish_axil().map(|_| ())
    }

    /// Reads a 32-bit register, cycle by cycle; the streams keep running.
    pub fn read(&mut self, addr: u32) -> Result<u32, SimError> {
        Self::check_addr(addr)?;
        if let Some(cycle) = self.dead {
            return Err(SimError::Dead { cycle });
        }
        self.axil.start_read(addr);
        self.finish_axil()
    }

    /// Reads a 64-bit counter: `LO` at `addr`, then `HI` at `addr + 4`.
    pub fn read64(&mut self, addr: u32) -> Result<u64, SimError> {
        let lo = self.read(addr)?;
        let hi = self.read(addr.wrapping_add(4))?;
        Ok(u64::from(hi) << 32 | u64::from(lo))
    }

    /// Starts dumping an FST trace of the whole design to `path` (replacing
    /// an open trace); times are [`TRACE_PERIOD`] per cycle.
    pub fn enable_trace(&mut self, path: impl AsRef<Path>) -> Result<(), SimError> {
        let path = path.as_ref().to_path_buf();
        if let Some(cycle) = self.dead {
            return Err(SimError::Dead { cycle });
        }
        // The FST writer does not report open errors: check the path first.
        if let Err(e) = std::fs::File::create(&path) {
            return Err(SimError::Trace {
                path,
                msg: e.to_string(),
            });
        }
        let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
            return Err(SimError::Trace {
                path,
                msg: "the path contains a NUL byte".into(),
            });
        };
        if let Err(e) = self.model.trace_open(&c) {
            return Err(self.ffi_error(e, self.cycle));
        }
        self.trace = Some(path);
        Ok(())
    }

    /// Writes buffered trace data to the file (the trace stays open).
    pub fn flush_trace(&mut self) -> Result<(), SimError> {
        if self.trace.is_none() {
            return Ok(());
        }
        if let Err(e) = self.model.trace_flush() {
            return Err(self.ffi_error(e, self.cycle));
        }
        Ok(())
    }

    /// Closes the trace (the FST file is complete after this, or on drop).
    pub fn disable_trace(&mut self) -> Result<(), SimError> {
        if self.trace.take().is_none() {
            return Ok(());
        }
        if let Err(e) = self.model.trace_close() {
            return Err(self.ffi_error(e, self.cycle));
        }
        Ok(())
    }

    /// The file being traced to, if any.
    pub fn trace_path(&self) -> Option<&Path> {
        self.trace.as_deref()
    }
}
