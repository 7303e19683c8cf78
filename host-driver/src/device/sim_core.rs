//! The verilated RTL core (`lvsnic-sim`) as the card's [`Core`]: with the
//! DMA engine model and the host rings it is the `sim` backend
//! (`ModelDevice<SimCore>`), the same host code path a real card sees.

use super::dma_model::{Core, CoreOutputs, DmaEngine, HostOut, TxOut};
use super::model::ModelDevice;
use super::rings::RingConfig;
use lvsnic_model::hw::{Csr, HwParams};
use lvsnic_sim::{Core as Rtl, InjectUser, RxUser, SimError, TxUser, Width};

/// Cycles `drain` may run before the watchdog reports a stuck core.
pub const DRAIN_WATCHDOG_CYCLES: u64 = 50_000_000;

/// The verilated core.
pub struct SimCore {
    /// The verilated core.
    pub rtl: Rtl,
    /// The first simulation error (a stuck frame, an AXI-Lite timeout, an
    /// RTL assertion); the core produces nothing more after it.
    pub error: Option<SimError>,
}

impl std::fmt::Debug for SimCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimCore {{ width: {:?}, cycle: {}, error: {:?} }}", self.rtl.width(), self.rtl.cycle(), self.error)
    }
}

impl SimCore {
    /// A core of `width` bits (64 or 512) out of reset.
    pub fn new(width: u32) -> Result<SimCore, String> {
        let w = match width {
            64 => Width::W64,
            512 => Width::W512,
            _ => return Err(format!("sim: no model of width {width} (built: 64, 512)")),
        };
        let rtl = Rtl::new(w).map_err(|e| format!("sim: {e}"))?;
        Ok(SimCore { rtl, error: None })
    }

    /// The table sizes the models were built with.
    pub fn params(width: u32) -> HwParams {
        HwParams {
            data_width: width,
            flow_buckets_log2: lvsnic_sim::params::FLOW_BUCKETS_LOG2,
            action_log2: lvsnic_sim::params::ACTION_LOG2,
            vip_count: lvsnic_sim::params::VIP_COUNT,
            ipv6: lvsnic_sim::params::IPV6 != 0,
        }
    }

    fn note(&mut self, r: Result<(), SimError>) {
        if let Err(e) = r {
            self.error.get_or_insert(e);
        }
    }
}

/// The `sim` device: the verilated core of `width` bits behind the DMA
/// engine model and the host rings.
pub fn sim_device(width: u32) -> Result<ModelDevice<SimCore>, String> {
    let core = SimCore::new(width)?;
    ModelDevice::with_core(core, DmaEngine::default(), RingConfig::default()).map_err(|e| e.to_string())
}

impl Csr for SimCore {
    fn write32(&mut self, addr: u32, value: u32) {
        if self.error.is_none() {
            let r = self.rtl.write(addr, value);
            self.note(r);
        }
    }
    fn read32(&mut self, addr: u32) -> u32 {
        if self.error.is_some() {
            return 0;
        }
        match self.rtl.read(addr) {
            Ok(v) => v,
            Err(e) => {
                self.error.get_or_insert(e);
                0
            }
        }
    }
}

impl Core for SimCore {
    fn backend(&self) -> &'static str {
        "sim"
    }
    fn rx(&mut self, frame: &[u8], ts: u64, seq: u32) {
        if self.error.is_none() {
            let r = self.rtl.rx().push_bytes(frame, RxUser { timestamp: ts, seq }).map(|_| ());
            self.note(r);
        }
    }
    fn inject(&mut self, frame: &[u8], seq: u32) {
        if self.error.is_none() {
            let r = self.rtl.inject().push_bytes(frame, InjectUser { seq }).map(|_| ());
            self.note(r);
        }
    }
    fn drain(&mut self, out: &mut CoreOutputs) {
        if self.error.is_some() {
            return;
        }
        let r = self.rtl.run_until_idle(DRAIN_WATCHDOG_CYCLES).map(|_| ());
        self.note(r);
        for f in self.rtl.tx().take() {
            let u = TxUser::from_tuser(&f.tuser_last);
            out.tx.push(TxOut { data: f.data, seq: u.seq, abort: u.abort });
        }
        for f in self.rtl.host().take() {
            let w = f.tuser.words();
            out.host.push(HostOut { meta: [w[0], w[1], w[2], w[3], w[4]], data: f.data });
        }
    }
}
