//! The data plane as the host sees it: frames in, forwarded or excepted
//! frames out, injected frames, and the register interface
//! (docs/hardware.md). Implemented by the hardware model (`model` backend)
//! and by the verilated RTL (`sim` backend).

use lvsnic_model::hw::{Csr, HostMeta, HwOutput, HwPipeline};
use lvsnic_model::time::Time;

/// One data plane instance.
pub trait Datapath: Csr {
    /// Offers one received frame (`s_axis_rx`, tuser = `ts`, `seq`) and
    /// returns what came out for it.
    fn rx(&mut self, frame: &[u8], ts: Time, seq: u32) -> Result<HwOutput, DatapathError>;
    /// Sends a frame from the host (`s_axis_inject`); returns it as it left
    /// on `m_axis_tx`.
    fn inject(&mut self, frame: &[u8], seq: u32) -> Result<Vec<u8>, DatapathError>;
    /// Exception frames the data plane received from its own network ports
    /// (a real card), up to `max`. Data planes fed through [`rx`](Self::rx)
    /// have none.
    fn poll_exceptions(&mut self, _out: &mut Vec<(HostMeta, Vec<u8>)>, _max: usize) -> Result<usize, DatapathError> {
        Ok(0)
    }
}

/// A data plane that misbehaved.
#[derive(Debug, thiserror::Error)]
pub enum DatapathError {
    #[error("data plane: {0}")]
    Device(String),
}

impl Datapath for HwPipeline {
    fn rx(&mut self, frame: &[u8], ts: Time, seq: u32) -> Result<HwOutput, DatapathError> {
        Ok(self.process(frame, ts, seq))
    }
    fn inject(&mut self, frame: &[u8], _seq: u32) -> Result<Vec<u8>, DatapathError> {
        Ok(HwPipeline::inject(self, frame))
    }
}
