//! lvsnic's cross-crate tests: the [fixtures](lvsnic_fixtures) (test
//! network, frame builders, independently built expected frames, re-exported
//! here) and a director under test ([`Dut`]) over every backend: the golden
//! model, the hardware model with the host slow path, and the verilated RTL
//! at 64 and 512 bits.

pub use lvsnic_fixtures::*;
use lvsnic_model::director::Director;
use lvsnic_model::time::Time;
use std::net::Ipv4Addr;

/// A director under test: the golden model alone, or the hardware model
/// with the host slow path (`hw model + host == golden`). Reads go to the
/// golden model inside (`Deref`); frames and rule changes go through the
/// whole stack.
pub struct Dut {
    /// `golden`, `model`, `sim64` or `sim512`.
    pub name: &'static str,
    kind: DutKind,
}

enum DutKind {
    Golden(Director),
    Model(Box<lvsnic::slowpath::SlowPath<lvsnic::device::model::ModelDevice>>),
    Sim(Box<lvsnic::slowpath::SlowPath<lvsnic::device::model::ModelDevice<lvsnic::device::sim_core::SimCore>>>),
}

/// Table sizes of the modelled data plane in tests (small, so cuckoo
/// displacement and action sharing are exercised).
pub const TEST_PARAMS: lvsnic_model::hw::HwParams =
    lvsnic_model::hw::HwParams { data_width: 64, flow_buckets_log2: 6, action_log2: 6, vip_count: 16, ipv6: true };

/// Number of backends the conformance tests run on: golden, model, and the
/// verilated RTL at 64 and 512 bits. (A sim crate built with its stand-in
/// core instead of `hw/rtl/` fails these tests; it is not a data plane.)
pub const BACKENDS: usize = 4;

/// Backend `b` (0 golden, 1 model, 2 sim 64-bit, 3 sim 512-bit) with `rules`
/// and `extra` config, at [`T0`].
pub fn dut(b: usize, rules: &str, extra: &str) -> Dut {
    match b {
        0 => Dut { name: "golden", kind: DutKind::Golden(director(rules, extra)) },
        1 => {
            let dev = lvsnic::device::model::ModelDevice::model(TEST_PARAMS, Default::default()).expect("model device");
            let sp = lvsnic::slowpath::SlowPath::new(director(rules, extra), dev, TEST_PARAMS).expect("model data plane");
            Dut { name: "model", kind: DutKind::Model(Box::new(sp)) }
        }
        _ => {
            let width = if b == 2 { 64 } else { 512 };
            let dev = lvsnic::device::sim_core::sim_device(width).expect("simulated core");
            let params = lvsnic::device::sim_core::SimCore::params(width);
            let sp = lvsnic::slowpath::SlowPath::new(director(rules, extra), dev, params).expect("sim data plane");
            Dut { name: if b == 2 { "sim64" } else { "sim512" }, kind: DutKind::Sim(Box::new(sp)) }
        }
    }
}

impl std::ops::Deref for Dut {
    type Target = Director;
    fn deref(&self) -> &Director {
        match &self.kind {
            DutKind::Golden(d) => d,
            DutKind::Model(sp) => &sp.director,
            DutKind::Sim(sp) => &sp.director,
        }
    }
}

impl Dut {
    /// Feeds one frame at time `t`.
    pub fn feed(&mut self, t: Time, frame: &[u8]) -> Out {
        match &mut self.kind {
            // No receiver takes an empty, runt or oversize frame: dropped on
            // receive before the director, as the slow path and the golden
            // replay drop it.
            DutKind::Golden(_) if lvsnic_model::stats::ReceiveDrop::of_len(frame.len()).is_some() => Out::Drop,
            DutKind::Golden(d) => feed(d, t, frame),
            DutKind::Model(sp) => split_out(sp.frame(t, frame).expect("data plane")),
            DutKind::Sim(sp) => split_out(sp.frame(t, frame).expect("simulated data plane")),
        }
    }

    /// Runs timers up to `t`.
    pub fn advance(&mut self, t: Time) {
        match &mut self.kind {
            DutKind::Golden(d) => d.advance(t),
            DutKind::Model(sp) => sp.advance(t),
            DutKind::Sim(sp) => sp.advance(t),
        }
    }

    /// `ipvsadm -e` on every layer of the backend.
    pub fn edit_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, r: &lvsnic_model::rules::DestRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.edit_dest(key, r),
            DutKind::Model(sp) => sp.edit_dest(key, r),
            DutKind::Sim(sp) => sp.edit_dest(key, r),
        }
    }

    /// `ipvsadm -a` on every layer of the backend.
    pub fn add_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, r: &lvsnic_model::rules::DestRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.add_dest(key, r).map(|_| ()),
            DutKind::Model(sp) => sp.add_dest(key, r),
            DutKind::Sim(sp) => sp.add_dest(key, r),
        }
    }

    /// `ipvsadm -d`, with the real server's hardware flows.
    pub fn del_dest(&mut self, key: &lvsnic_model::rules::ServiceKey, addr: Ipv4Addr, port: u16) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.del_dest(key, addr, port),
            DutKind::Model(sp) => sp.del_dest(key, addr, port),
            DutKind::Sim(sp) => sp.del_dest(key, addr, port),
        }
    }

    /// `ipvsadm -A`, with the VIP table.
    pub fn add_service(&mut self, rule: &lvsnic_model::rules::ServiceRule) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.add_service(rule).map(|_| ()),
            DutKind::Model(sp) => sp.add_service(rule),
            DutKind::Sim(sp) => sp.add_service(rule),
        }
    }

    /// `ipvsadm -D`, with the service's hardware flows.
    pub fn del_service(&mut self, key: &lvsnic_model::rules::ServiceKey) -> Result<(), lvsnic_model::director::DirectorError> {
        match &mut self.kind {
            DutKind::Golden(d) => d.del_service(key),
            DutKind::Model(sp) => sp.del_service(key),
            DutKind::Sim(sp) => sp.del_service(key),
        }
    }

    /// Credits what the hardware counted to the statistics (before reading them).
    pub fn settle(&mut self) {
        match &mut self.kind {
            DutKind::Golden(_) => {}
            DutKind::Model(sp) => sp.settle(),
            DutKind::Sim(sp) => sp.settle(),
        }
    }

    /// Frames the hardware forwarded without the host so far (model only).
    pub fn in_hardware(&mut self) -> u64 {
        match &mut self.kind {
            DutKind::Golden(_) => 0,
            DutKind::Model(sp) => {
                use lvsnic_model::hw::Csr;
                sp.dp.read32(lvsnic_model::hw::regs::CNT_BASE + 8) as u64
            }
            DutKind::Sim(sp) => {
                use lvsnic_model::hw::Csr;
                sp.dp.read32(lvsnic_model::hw::regs::CNT_BASE + 8) as u64
            }
        }
    }
}

fn split_out(r: lvsnic::slowpath::FrameResult) -> Out {
    if !r.tx.is_empty() {
        Out::Tx(r.tx)
    } else if let Some(h) = r.host {
        Out::Host(h)
    } else {
        Out::Drop
    }
}

