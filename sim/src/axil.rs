//! AXI4-Lite master: one access at a time, run cycle by cycle by
//! [`Core::write`](crate::Core::write) / [`Core::read`](crate::Core::read).

use crate::error::{AxilOp, SimError};
use crate::ffi::{Inputs, Outputs};

#[derive(Clone, Copy, Debug)]
enum State {
    Idle,
    Write {
        addr: u32,
        data: u32,
        strb: u8,
        aw_done: bool,
        w_done: bool,
    },
    Read {
        addr: u32,
        ar_done: bool,
    },
}

/// Result of a finished access: read data (0 for writes) or a non-OKAY response.
pub(crate) type Outcome = Result<u32, SimError>;

pub(crate) struct AxilMaster {
    state: State,
    done: Option<Outcome>,
}

const PORT: &str = "s_axil";

impl AxilMaster {
    pub(crate) fn new() -> AxilMaster {
        AxilMaster {
            state: State::Idle,
            done: None,
        }
    }

    pub(crate) fn busy(&self) -> bool {
        !matches!(self.state, State::Idle)
    }

    pub(crate) fn start_write(&mut self, addr: u32, data: u32, strb: u8) {
        self.state = State::Write {
            addr,
            data,
            strb,
            aw_done: false,
            w_done: false,
        };
        self.done = None;
    }

    pub(crate) fn start_read(&mut self, addr: u32) {
        self.state = State::Read {
            addr,
            ar_done: false,
        };
        self.done = None;
    }

    /// Gives up on the current access (timeout or reset).
    pub(crate) fn abort(&mut self) {
        self.state = State::Idle;
        self.done = None;
    }

    pub(crate) fn take_done(&mut self) -> Option<Outcome> {
        self.done.take()
    }

    pub(crate) fn op_addr(&self) -> Option<(AxilOp, u32)> {
        match self.state {
            State::Idle => None,
            State::Write { addr, .. } => Some((AxilOp::Write, addr)),
            State::Read { addr, .. } => Some((AxilOp::Read, addr)),
        }
    }

    /// Drives this cycle's AXI-Lite inputs.
    #[inline]
    pub(crate) fn drive(&self, i: &mut Inputs) {
        i.axil_awprot = 0;
        i.axil_arprot = 0;
        i.axil_awvalid = 0;
        i.axil_wvalid = 0;
        i.axil_bready = 0;
        i.axil_arvalid = 0;
        i.axil_rready = 0;
        match self.state {
            State::Idle => {}
            State::Write {
                addr,
                data,
                strb,
                aw_done,
                w_done,
            } => {
                i.axil_awaddr = addr;
                i.axil_awvalid = u8::from(!aw_done);
                i.axil_wdata = data;
                i.axil_wstrb = strb;
                i.axil_wvalid = u8::from(!w_done);
                i.axil_bready = 1;
            }
            State::Read { addr, ar_done } => {
                i.axil_araddr = addr;
                i.axil_arvalid = u8::from(!ar_done);
                i.axil_rready = 1;
            }
        }
    }

    /// Applies this cycle's handshakes; returns whether one happened.
    #[inline]
    pub(crate) fn sample(&mut self, i: &Inputs, o: &Outputs, cycle: u64) -> Result<bool, SimError> {
        let violation = |what: &str| SimError::Protocol {
            port: PORT,
            cycle,
            what: what.into(),
        };
        match &mut self.state {
            State::Idle => {
                if o.axil_bvalid != 0 {
                    return Err(violation("bvalid with no write outstanding"));
                }
                if o.axil_rvalid != 0 {
                    return Err(violation("rvalid with no read outstanding"));
                }
                Ok(false)
            }
            State::Write {
                addr,
                aw_done,
                w_done,
                ..
            } => {
                let addr = *addr;
                if o.axil_rvalid != 0 {
                    return Err(violation("rvalid during a write"));
                }
                let mut moved = false;
                if o.axil_bvalid != 0 {
                    if !(*aw_done && *w_done) {
                        return Err(violation("bvalid before both AW and W were accepted"));
                    }
                    self.done = Some(match o.axil_bresp & 3 {
                        0 => Ok(0),
                        resp => Err(SimError::AxilResponse {
                            op: AxilOp::Write,
                            addr,
                            resp,
                        }),
                    });
                    self.state = State::Idle;
                    return Ok(true);
                }
                if i.axil_awvalid != 0 && o.axil_awready != 0 {
                    *aw_done = true;
                    moved = true;
                }
                if i.axil_wvalid != 0 && o.axil_wready != 0 {
                    *w_done = true;
                    moved = true;
                }
                Ok(moved)
            }
            State::Read { addr, ar_done } => {
                let addr = *addr;
                if o.axil_bvalid != 0 {
                    return Err(violation("bvalid during a read"));
                }
                if o.axil_rvalid != 0 {
                    if !*ar_done {
                        return Err(violation("rvalid before AR was accepted"));
                    }
                    self.done = Some(match o.axil_rresp & 3 {
                        0 => Ok(o.axil_rdata),
                        resp => Err(SimError::AxilResponse {
                            op: AxilOp::Read,
                            addr,
                            resp,
                        }),
                    });
                    self.state = State::Idle;
                    return Ok(true);
                }
                if i.axil_arvalid != 0 && o.axil_arready != 0 {
                    *ar_done = true;
                    return Ok(true);
                }
                Ok(false)
            }
        }
    }
}
