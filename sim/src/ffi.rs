//! The only module with `unsafe`: the C ABI of `csrc/shim.cpp`.
//!
//! [`Model`] owns one verilated model (and its `VerilatedContext`) through an
//! opaque pointer and exposes it with safe methods. The `#[repr(C)]` structs
//! mirror `csrc/lvsnic_shim.h`; their sizes are checked against the shim's
//! before the first model is created.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_void, CStr};
use std::ptr::NonNull;

/// Words of a 512-bit `tdata`.
pub(crate) const DATA_WORDS: usize = 16;

/// Every input port of `lvsnic_core` but `clk` (mirror of `LvsnicInputs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Inputs {
    pub rx_tdata: [u32; DATA_WORDS],
    pub inject_tdata: [u32; DATA_WORDS],
    pub rx_tkeep: u64,
    pub inject_tkeep: u64,
    pub rx_tuser: [u32; 3],
    pub inject_tuser: u32,
    pub axil_awaddr: u32,
    pub axil_wdata: u32,
    pub axil_araddr: u32,
    pub rst: u8,
    pub rx_tvalid: u8,
    pub rx_tlast: u8,
    pub inject_tvalid: u8,
    pub inject_tlast: u8,
    pub tx_tready: u8,
    pub host_tready: u8,
    pub axil_awprot: u8,
    pub axil_awvalid: u8,
    pub axil_wstrb: u8,
    pub axil_wvalid: u8,
    pub axil_bready: u8,
    pub axil_arprot: u8,
    pub axil_arvalid: u8,
    pub axil_rready: u8,
}

/// Every output port of `lvsnic_core` (mirror of `LvsnicOutputs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Outputs {
    pub tx_tdata: [u32; DATA_WORDS],
    pub host_tdata: [u32; DATA_WORDS],
    pub tx_tkeep: u64,
    pub host_tkeep: u64,
    pub tx_tuser: [u32; 2],
    pub host_tuser: [u32; 5],
    pub axil_rdata: u32,
    pub rx_tready: u8,
    pub inject_tready: u8,
    pub tx_tvalid: u8,
    pub tx_tlast: u8,
    pub host_tvalid: u8,
    pub host_tlast: u8,
    pub axil_awready: u8,
    pub axil_wready: u8,
    pub axil_bresp: u8,
    pub axil_bvalid: u8,
    pub axil_arready: u8,
    pub axil_rresp: u8,
    pub axil_rvalid: u8,
}

/// Status codes of the shim (`LVSNIC_*` in `lvsnic_shim.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    /// `$stop`, `$fatal` or `$error` in the RTL.
    Stop,
    /// `$finish` in the RTL.
    Finish,
    /// A fatal error of the Verilator runtime.
    Fatal,
    /// A C++ exception.
    Exception,
    /// A bad argument (a harness bug).
    Arg,
    /// An earlier error left the model unusable.
    Dead,
    /// A code this module does not know.
    Other(i32),
}

impl Status {
    fn from_code(c: i32) -> Option<Status> {
        Some(match c {
            0 => return None,
            1 => Status::Stop,
            2 => Status::Finish,
            3 => Status::Fatal,
            4 => Status::Exception,
            5 => Status::Arg,
            6 => Status::Dead,
            o => Status::Other(o),
        })
    }
}

/// A failed shim call: status and the shim's message.
#[derive(Clone, Debug)]
pub(crate) struct FfiError {
    pub status: Status,
    pub msg: String,
}

type CreateFn = unsafe extern "C" fn() -> *mut c_void;
type DestroyFn = unsafe extern "C" fn(*mut c_void);
type CycleFn = unsafe extern "C" fn(*mut c_void, *const Inputs, *mut Outputs, u64, u64) -> i32;
type TraceOpenFn = unsafe extern "C" fn(*mut c_void, *const c_char) -> i32;
type HandleFn = unsafe extern "C" fn(*mut c_void) -> i32;
type LastErrorFn = unsafe extern "C" fn(*mut c_void, *mut c_char, usize) -> usize;
type U32Fn = unsafe extern "C" fn() -> u32;

/// The shim functions of one model.
pub(crate) struct Vtable {
    data_width: U32Fn,
    abi_sizes: U32Fn,
    create: CreateFn,
    destroy: DestroyFn,
    cycle: CycleFn,
    trace_open: TraceOpenFn,
    trace_flush: HandleFn,
    trace_close: HandleFn,
    last_error: LastErrorFn,
}

macro_rules! model_abi {
    ($vt:ident, $data_width:ident, $abi_sizes:ident, $create:ident, $destroy:ident, $cycle:ident,
     $trace_open:ident, $trace_flush:ident, $trace_close:ident, $last_error:ident) => {
        extern "C" {
            fn $data_width() -> u32;
            fn $abi_sizes() -> u32;
            fn $create() -> *mut c_void;
            fn $destroy(m: *mut c_void);
            fn $cycle(
                m: *mut c_void,
                i: *const Inputs,
                o: *mut Outputs,
                t_low: u64,
                t_high: u64,
            ) -> i32;
            fn $trace_open(m: *mut c_void, path: *const c_char) -> i32;
            fn $trace_flush(m: *mut c_void) -> i32;
            fn $trace_close(m: *mut c_void) -> i32;
            fn $last_error(m: *mut c_void, buf: *mut c_char, len: usize) -> usize;
        }
        pub(crate) static $vt: Vtable = Vtable {
            data_width: $data_width,
            abi_sizes: $abi_sizes,
            create: $create,
            destroy: $destroy,
            cycle: $cycle,
            trace_open: $trace_open,
            trace_flush: $trace_flush,
            trace_close: $trace_close,
            last_error: $last_error,
        };
    };
}

model_abi!(
    VT64,
    lvsnic_sim64_data_width,
    lvsnic_sim64_abi_sizes,
    lvsnic_sim64_create,
    lvsnic_sim64_destroy,
    lvsnic_sim64_cycle,
    lvsnic_sim64_trace_open,
    lvsnic_sim64_trace_flush,
    lvsnic_sim64_trace_close,
    lvsnic_sim64_last_error
);
model_abi!(
    VT512,
    lvsnic_sim512_data_width,
    lvsnic_sim512_abi_sizes,
    lvsnic_sim512_create,
    lvsnic_sim512_destroy,
    lvsnic_sim512_cycle,
    lvsnic_sim512_trace_open,
    lvsnic_sim512_trace_flush,
    lvsnic_sim512_trace_close,
    lvsnic_sim512_last_error
);

/// One verilated model instance, exclusively owned.
pub(crate) struct Model {
    raw: NonNull<c_void>,
    vt: &'static Vtable,
}

// SAFETY: the models are built without --threads: a model and its own
// VerilatedContext have no thread affinity, and the shim makes the model's
// context the calling thread's current context on every call. `Model` is
// not `Sync` and every call takes `&mut self`, so one thread at a time.
unsafe impl Send for Model {}

impl Model {
    /// Creates the model for `data_width` (64 or 512).
    pub(crate) fn new(data_width: u32) -> Result<Model, String> {
        let vt: &'static Vtable = match data_width {
            64 => &VT64,
            512 => &VT512,
            w => return Err(format!("no model is built for DATA_WIDTH={w}")),
        };
        let want =
            ((std::mem::size_of::<Inputs>() as u32) << 16) | std::mem::size_of::<Outputs>() as u32;
        // SAFETY: argument-less functions of the shim that only return constants.
        let (got, width) = unsafe { ((vt.abi_sizes)(), (vt.data_width)()) };
        if got != want {
            return Err(format!(
                "the C++ shim and ffi.rs disagree on the port structs (C++ {got:#x}, Rust {want:#x})"
            ));
        }
        if width != data_width {
            return Err(format!("the DATA_WIDTH={data_width} shim reports {width}"));
        }
        // SAFETY: `create` has no preconditions; it returns a new model or null
        // (it catches every C++ exception).
        let raw = unsafe { (vt.create)() };
        NonNull::new(raw)
            .map(|raw| Model { raw, vt })
            .ok_or_else(|| "the verilated model could not be constructed (out of memory or an RTL error at time 0)".into())
    }

    fn check(&mut self, rc: i32) -> Result<(), FfiError> {
        match Status::from_code(rc) {
            None => Ok(()),
            Some(status) => Err(FfiError {
                status,
                msg: self.last_error(),
            }),
        }
    }

    fn last_error(&mut self) -> String {
        let mut buf = vec![0u8; 1024];
        // SAFETY: `raw` is a live model; `buf` is writable for `buf.len()` bytes
        // and the shim writes at most that many, NUL-terminated.
        let n =
            unsafe { (self.vt.last_error)(self.raw.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let mut s = String::from_utf8_lossy(&buf[..end]).into_owned();
        if n >= buf.len() {
            s.push_str("...");
        }
        s
    }

    /// One clock cycle: inputs applied with clk=0, eval, outputs sampled into
    /// `o`, clk=1, eval. A trace (if open) is dumped at `t_low` and `t_high`.
    pub(crate) fn cycle(
        &mut self,
        i: &Inputs,
        o: &mut Outputs,
        t_low: u64,
        t_high: u64,
    ) -> Result<(), FfiError> {
        // SAFETY: `raw` is a live model exclusively borrowed; `i` and `o` are
        // valid #[repr(C)] structs whose layout matches the shim (checked in
        // `new`); the shim reads `i` and writes `o` only during the call.
        let rc = unsafe { (self.vt.cycle)(self.raw.as_ptr(), i, o, t_low, t_high) };
        self.check(rc)
    }

    /// Opens an FST trace at `path` (replacing an open one).
    pub(crate) fn trace_open(&mut self, path: &CStr) -> Result<(), FfiError> {
        // SAFETY: `raw` is live; `path` is a NUL-terminated string valid for the call.
        let rc = unsafe { (self.vt.trace_open)(self.raw.as_ptr(), path.as_ptr()) };
        self.check(rc)
    }

    /// Flushes the open trace, if any.
    pub(crate) fn trace_flush(&mut self) -> Result<(), FfiError> {
        // SAFETY: `raw` is a live model exclusively borrowed.
        let rc = unsafe { (self.vt.trace_flush)(self.raw.as_ptr()) };
        self.check(rc)
    }

    /// Closes the open trace, if any (writes the FST file's tables).
    pub(crate) fn trace_close(&mut self) -> Result<(), FfiError> {
        // SAFETY: `raw` is a live model exclusively borrowed.
        let rc = unsafe { (self.vt.trace_close)(self.raw.as_ptr()) };
        self.check(rc)
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        // SAFETY: `raw` came from `create` and is destroyed exactly once here;
        // `destroy` closes an open trace and catches every C++ exception.
        unsafe { (self.vt.destroy)(self.raw.as_ptr()) }
    }
}
