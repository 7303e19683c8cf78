//! The `sim` backend: the verilated RTL core (`lvsnic-sim`) as a
//! [`Datapath`]. Frames are offered one at a time and the core is clocked
//! until that frame's output appears (on `m_axis_tx` or `m_axis_host`), with
//! a watchdog; register access is AXI-Lite, cycle by cycle.

use crate::datapath::{Datapath, DatapathError};
use lvsnic_model::hw::{Csr, HostMeta, HwOutput, HwParams, Reason};
use lvsnic_model::time::Time;
use lvsnic_sim::{Core, HostUser, InjectUser, RxUser, SimError, TxUser, Width};

/// Cycles a frame may take to come out before the watchdog fails the run.
pub const FRAME_WATCHDOG_CYCLES: u64 = 200_000;

/// The verilated core behind the [`Datapath`] interface.
pub struct SimDatapath {
    pub core: Core,
    error: Option<SimError>,
}

impl SimDatapath {
    /// A core of `width` bits out of reset.
    pub fn new(width: u32) -> Result<Self, DatapathError> {
        let w = match width {
            64 => Width::W64,
            512 => Width::W512,
            _ => return Err(DatapathError::Device(format!("sim: no model of width {width} (64 or 512)"))),
        };
        let core = Core::new(w).map_err(|e| DatapathError::Device(format!("sim: {e}")))?;
        Ok(SimDatapath { core, error: None })
    }

    /// The table sizes the models were built with.
    pub fn params(width: u32) -> HwParams {
        HwParams {
            data_width: width,
            flow_buckets_log2: lvsnic_sim::params::FLOW_BUCKETS_LOG2,
            action_log2: lvsnic_sim::params::ACTION_LOG2,
            vip_count: lvsnic_sim::params::VIP_COUNT,
        }
    }

    fn take_error(&mut self) -> Result<(), DatapathError> {
        match self.error.take() {
            Some(e) => Err(DatapathError::Device(format!("sim: {e}"))),
            None => Ok(()),
        }
    }

    fn sim<T>(r: Result<T, SimError>) -> Result<T, DatapathError> {
        r.map_err(|e| DatapathError::Device(format!("sim: {e}")))
    }
}

impl Csr for SimDatapath {
    fn write32(&mut self, addr: u32, value: u32) {
        if let Err(e) = self.core.write(addr, value) {
            self.error.get_or_insert(e);
        }
    }
    fn read32(&mut self, addr: u32) -> u32 {
        match self.core.read(addr) {
            Ok(v) => v,
            Err(e) => {
                self.error.get_or_insert(e);
                0
            }
        }
    }
}

impl Datapath for SimDatapath {
    fn rx(&mut self, frame: &[u8], ts: Time, seq: u32) -> Result<HwOutput, DatapathError> {
        self.take_error()?;
        Self::sim(self.core.rx().push_bytes(frame, RxUser { timestamp: ts, seq }))?;
        let start = self.core.cycle();
        let mut host: Option<(HostMeta, Vec<u8>)> = None;
        let mut aborted = false;
        loop {
            if let Some(f) = self.core.tx().pop() {
                let u = TxUser::from_tuser(&f.tuser_last);
                if u.seq != seq {
                    return Err(DatapathError::Device(format!("sim: tx frame with sequence {} while waiting for {seq}", u.seq)));
                }
                if u.abort {
                    aborted = true;
                } else {
                    return Ok(HwOutput::Forward { frame: f.data, seq });
                }
            }
            if let Some(f) = self.core.host().pop() {
                let u = HostUser::from_tuser(&f.tuser);
                let reason = Reason::from_u8(u.reason)
                    .ok_or_else(|| DatapathError::Device(format!("sim: unknown reason code {}", u.reason)))?;
                if u.seq != seq || u.reserved != 0 {
                    return Err(DatapathError::Device(format!("sim: host frame with bad metadata {u:?} while waiting for {seq}")));
                }
                host = Some((HostMeta { reason, hit: u.hit, vip: u.vip, hash0: u.hash, seq: u.seq, ts: u.timestamp }, f.data));
            }
            if let Some((meta, frame)) = host.take() {
                if meta.reason != Reason::Truncated {
                    return Ok(HwOutput::ToHost { meta, frame });
                }
                if aborted {
                    return Ok(HwOutput::Aborted { meta, frame });
                }
                host = Some((meta, frame));
            }
            if self.core.cycle() - start > FRAME_WATCHDOG_CYCLES {
                return Err(DatapathError::Device(format!(
                    "sim: watchdog: frame {seq} ({} bytes) produced no output in {FRAME_WATCHDOG_CYCLES} cycles",
                    frame.len()
                )));
            }
            Self::sim(self.core.step())?;
        }
    }

    fn inject(&mut self, frame: &[u8], seq: u32) -> Result<Vec<u8>, DatapathError> {
        self.take_error()?;
        Self::sim(self.core.inject().push_bytes(frame, InjectUser { seq }))?;
        let start = self.core.cycle();
        loop {
            if let Some(f) = self.core.tx().pop() {
                let u = TxUser::from_tuser(&f.tuser_last);
                if u.seq != seq || u.abort {
                    return Err(DatapathError::Device(format!("sim: injected frame {seq} came out as {u:?}")));
                }
                return Ok(f.data);
            }
            if self.core.cycle() - start > FRAME_WATCHDOG_CYCLES {
                return Err(DatapathError::Device(format!("sim: watchdog: injected frame {seq} did not come out")));
            }
            Self::sim(self.core.step())?;
        }
    }
}
