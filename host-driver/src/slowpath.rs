//! The host slow path: every frame the data plane hands up is decided by
//! the golden model (schedulers, connection table, transmitters); the
//! resulting frames are injected, and the connection's flows are installed
//! or updated in the data plane so its next packets stay in hardware.
//!
//! The slow path runs on any [`Device`]: it takes exceptions the card
//! handed up ([`SlowPath::device_exception`]) and sends what the director
//! transmits down the card's transmit ring. On a card whose network is
//! simulated (`D: Device + Wire`, the `model` and `sim` backends) it can
//! also offer a frame to the data plane itself ([`SlowPath::frame`]) and
//! report the frames as they left the card's MAC.

use crate::device::{self, Device, DeviceError, Wire};
use crate::flows::{CardCaps, FlowManager, OffloadView};
use lvsnic_model::director::{Action, Director, DirectorError};
use lvsnic_model::rules::{DestRule, ServiceKey, ServiceRule};
use std::net::Ipv4Addr;
use lvsnic_model::hw::regs::*;
use lvsnic_model::hw::{HwOutput, HwParams};
use lvsnic_model::stats::ReceiveDrop;
use lvsnic_model::time::Time;

/// Flows of deleted real servers removed per [`SlowPath::advance`] (per
/// frame), so a replay or a test that never idles still empties the queue.
const DIVERTED_PER_ADVANCE: usize = 8;

/// What the director did with one received frame.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FrameResult {
    /// Frames transmitted on the wire, in order, as they left the card
    /// (cards with a [`Wire`]: the frame the data plane forwarded, or what
    /// it transmitted for the frames the director sent).
    pub tx: Vec<Vec<u8>>,
    /// Frames the director sent down the card's transmit ring for this
    /// frame (every backend; on a [`Wire`] card they are also in `tx`).
    pub injected: usize,
    /// The frame, if it went to the director's own stack.
    pub host: Option<Vec<u8>>,
    /// Whether the data plane forwarded it without the host.
    pub in_hardware: bool,
    /// Whether the exception was refused at the slow path's entry (the
    /// per-service new-connection rate limit).
    pub refused: bool,
    /// Why the frame was dropped on receive, before the data plane or the
    /// director saw it (empty, runt, oversize; a receive-ring drop).
    pub dropped: Option<ReceiveDrop>,
    /// Why the data plane handed it up (an exception), as its metadata said.
    pub reason: Option<lvsnic_model::hw::Reason>,
    /// Frames the director sent to a real server whose next hop has no
    /// MAC yet, or towards the gateway while its MAC is not known
    /// (`cfg.resolve_neighbors`): not sent, their destination MAC all
    /// zeros, for the host to hold until the MAC is known; and that real
    /// server (or the gateway's address).
    pub held: Option<(std::net::IpAddr, Vec<Vec<u8>>)>,
}

/// Golden model + flow manager in front of a data plane.
pub struct SlowPath<D: Device> {
    /// The golden model: services, connections, timers, transmitters.
    pub director: Director,
    /// The hardware flows of offloaded connections.
    pub flows: FlowManager,
    /// The card.
    pub dp: D,
    /// The card's parameters (its `CAPS0`/`CAPS1`).
    params: HwParams,
    seq: u32,
}

impl<D: Device> SlowPath<D> {
    /// Programs the data plane's registers from the director's
    /// configuration (MAC, IP, IP6, MTU, VIPs) and enables it; reads
    /// `CAPS1.tun6` for the tunnels it may offload.
    pub fn new(director: Director, mut dp: D, params: HwParams) -> Result<Self, DeviceError> {
        let id = dp.read32(ID);
        if id != ID_VALUE {
            return Err(device::IdentityError::WrongId(id).into());
        }
        let cfg = &director.cfg;
        // IP6: the source of the card's IPv6 tunnel headers (0 without
        // `[director] ip6`, when no tunnel into IPv6 is offloaded).
        let ip6 = cfg.ip6.unwrap_or(std::net::Ipv6Addr::UNSPECIFIED);
        for (reg, v) in identity_writes(cfg.mac, u32::from(cfg.ip), ip6, cfg.mtu) {
            dp.write32(reg, v);
        }
        // Tunnels into IPv6 as the card itself reports them: a core built
        // before CAPS1.tun6 has IPv6 without them.
        let tun6 = HwParams::caps1_tun6(dp.read32(CAPS1));
        let mut flows = FlowManager::new(params);
        flows.set_card_caps(CardCaps { ipv6: params.ipv6, tun6 });
        let mut s = SlowPath { director, flows, dp, params, seq: 0 };
        s.sync_vips(params.vip_count);
        let pmtu = if s.director.cfg.sysctl.pmtu_disc { CTRL_PMTU_DISC } else { 0 };
        s.dp.write32(CTRL, CTRL_ENABLE | pmtu);
        Ok(s)
    }

    /// Writes the VIP table: the `vip_count` lowest VIPs the director
    /// owns. The services' addresses are kept sorted, so this costs the
    /// VIPs it passes over, not a scan of every service (a `-R` of 10,000
    /// services writes the table every 200 ms while forwarding waits).
    pub fn sync_vips(&mut self, vip_count: u32) {
        let d = &self.director;
        let vips: Vec<u32> = d.services.vips().filter(|&v| d.vip_owned(Ipv4Addr::from(v))).take(vip_count as usize).collect();
        let mut valid = 0u32;
        for (i, v) in vips.iter().take(vip_count as usize).enumerate() {
            self.dp.write32(VIP_BASE + 4 * i as u32, *v);
            valid |= 1 << i;
        }
        self.dp.write32(VIP_VALID, valid);
    }

    /// Runs the director's timers up to `ts`, asking the data plane for the
    /// activity of offloaded connections, and removes expired flows.
    pub fn advance(&mut self, ts: Time) {
        if self.director.estimator_due(ts) {
            // The rate estimator's tick must see the packets the hardware
            // forwarded: credit its counters first.
            self.settle();
        }
        let mut view = OffloadView { flows: &mut self.flows, hw: &mut self.dp, removed: Vec::new() };
        self.director.advance_with(ts, &mut view);
        let removed = std::mem::take(&mut view.removed);
        self.flows.forget(&mut self.dp, &mut self.director, &removed);
        self.flows.remove_diverted(&mut self.dp, &mut self.director, DIVERTED_PER_ADVANCE);
    }

    /// Removes flows of deleted real servers (already diverted to the
    /// host) until `until` or none is left; returns whether some are left.
    pub fn remove_diverted_until(&mut self, until: std::time::Instant) -> bool {
        while self.flows.remove_diverted(&mut self.dp, &mut self.director, 16) > 0 && !crate::deadline::passed(until) {}
        self.flows.has_diverted()
    }

    /// Sends a frame from the director's own stack down the card's
    /// transmit ring (it leaves on the card's network port).
    pub fn host_tx(&mut self, frame: &[u8]) -> Result<(), DeviceError> {
        self.seq = self.seq.wrapping_add(1);
        self.inject(&[frame], self.seq)
    }

    /// Sends `frames` down the transmit ring with sequence number `seq`.
    fn inject(&mut self, frames: &[&[u8]], seq: u32) -> Result<(), DeviceError> {
        let batch: Vec<(&[u8], u32)> = frames.iter().map(|f| (*f, seq)).collect();
        self.dp.send(&batch)?;
        Ok(())
    }

    /// An exception frame a card received from its own ports (`seq` and
    /// `ts` from its metadata): timers run up to `ts`, then the golden model
    /// decides, as for frames handed up through [`frame`](Self::frame).
    pub fn device_exception(&mut self, ts: Time, frame: Vec<u8>, seq: u32) -> Result<FrameResult, DeviceError> {
        self.advance(ts);
        self.exception(frame, seq)
    }

    /// A frame the data plane handed up: the golden model decides.
    fn exception(&mut self, frame: Vec<u8>, seq: u32) -> Result<FrameResult, DeviceError> {
        let mut f = frame;
        let mut extra = Vec::new();
        let action = self.director.process_now(&mut f, &mut extra);
        let mut r = FrameResult::default();
        match action {
            Action::Transmit if extra.is_empty() && self.director.unresolved.is_none() => {
                // The common case, one frame to send: no lists to build.
                self.dp.send(&[(f.as_slice(), seq)])?;
                r.injected = 1;
            }
            Action::Transmit => {
                let all = std::iter::once(f).chain(extra);
                let (held, frames): (Vec<Vec<u8>>, Vec<Vec<u8>>) = match self.director.unresolved {
                    Some(_) => all.partition(|x| x.len() >= 6 && x[..6] == [0; 6]),
                    None => (Vec::new(), all.collect()),
                };
                let frames: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
                if !frames.is_empty() {
                    self.inject(&frames, seq)?;
                }
                r.injected = frames.len();
                if let (Some(rs), false) = (self.director.unresolved, held.is_empty()) {
                    r.held = Some((rs, held));
                }
            }
            Action::ToHost(_) => r.host = Some(f),
            Action::Drop(_) | Action::Held => {}
        }
        if let Some(id) = self.director.last_conn {
            let dir = self.director.last_dir;
            self.flows.seen(&mut self.dp, &mut self.director, id, dir);
        }
        Ok(r)
    }

    /// The next hop towards `ip` has a new MAC, or none (`None`): the
    /// golden model sends with it from now on, and the card's action
    /// entries that used the old one are rewritten in place (connections
    /// and flows stay); returns how many entries were rewritten.
    pub fn set_next_hop(&mut self, ip: std::net::IpAddr, mac: Option<lvsnic_model::wire::MacAddr>) -> usize {
        let changed = match ip {
            std::net::IpAddr::V4(a) => self.director.set_learned(a, mac),
            std::net::IpAddr::V6(a) => self.director.set_learned6(a, mac),
        };
        if !changed {
            return 0;
        }
        if mac.is_none() {
            // Unknown now: the connections' flows leave the card (their
            // frames come up and are held until the MAC is known again).
            // The gateway: every offloaded NAT connection whose client
            // replies through it leaves too.
            let gateway = self.director.cfg.gateway.map(std::net::IpAddr::from) == Some(ip);
            for id in self.flows.offloaded() {
                if gateway || self.director.conns.addrs(id).daddr == ip {
                    self.flows.sync(&mut self.dp, &mut self.director, id);
                }
            }
            return 0;
        }
        self.flows.next_hop_changed(&mut self.dp, &mut self.director, ip)
    }

    /// The gateway's address changed: every offloaded connection is
    /// brought in line with what the golden model now sends (reply flows
    /// towards an unknown gateway leave the card).
    pub fn gateway_moved(&mut self) {
        self.director.neighbors_changed();
        for id in self.flows.offloaded() {
            self.flows.sync(&mut self.dp, &mut self.director, id);
        }
    }

    /// `[neighbors]` changed (a reload): the golden model and the card's
    /// actions follow the new static entries of `changed` addresses.
    pub fn statics_changed(&mut self, changed: &[Ipv4Addr]) -> usize {
        self.director.neighbors_changed();
        let mut n = 0;
        for &ip in changed {
            n += self.flows.next_hop_changed(&mut self.dp, &mut self.director, ip.into());
        }
        n
    }

    /// `ipvsadm -a`.
    pub fn add_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<(), DirectorError> {
        self.director.add_dest(key, d).map(|_| ())
    }

    /// `ipvsadm -e`: existing connections (and their hardware flows) keep
    /// their real server and forwarding method.
    pub fn edit_dest(&mut self, key: &ServiceKey, d: &DestRule) -> Result<(), DirectorError> {
        self.director.edit_dest(key, d)
    }

    /// `ipvsadm -d`: the real server's hardware flows are removed, so its
    /// connections' packets come to the golden model (which drops them or
    /// reschedules, per `expire_nodest_conn`).
    pub fn del_dest(&mut self, key: &ServiceKey, addr: Ipv4Addr, port: u16) -> Result<(), DirectorError> {
        let dest = self.director.services.lookup_key(key).and_then(|svc| {
            self.director.services.service(svc).order.iter().copied().find(|&d| {
                let r = self.director.services.dest(d);
                r.addr == addr && r.port == port
            })
        });
        self.director.del_dest(key, addr, port)?;
        if let Some(dest) = dest {
            self.flows.drop_dest(&mut self.dp, &mut self.director, dest);
        }
        Ok(())
    }

    /// `ipvsadm -A`.
    pub fn add_service(&mut self, rule: &ServiceRule) -> Result<(), DirectorError> {
        self.director.add_service(rule)?;
        self.sync_vips(self.params.vip_count);
        Ok(())
    }

    /// VRRP: takes `vip` (master) or releases it (backup, fault); a
    /// released VIP leaves the card's VIP table and its connections' flows
    /// leave the flow table, so its packets come up to the golden model,
    /// which hands them to the host stack.
    pub fn set_vip_owned(&mut self, vip: std::net::IpAddr, owned: bool) -> bool {
        let changed = self.director.set_vip_owned(vip, owned);
        self.sync_vips(self.params.vip_count);
        if changed && !owned {
            // Offloaded connections of the VIP leave the card too: their
            // packets must reach the host stack like any other's (their
            // replies are rewritten in software; taking the VIP back
            // offloads them again on their next packet).
            for id in self.flows.offloaded() {
                let c = self.director.conns.get(id);
                let of_vip = match vip {
                    std::net::IpAddr::V4(v) => !c.is_v6() && c.vaddr == u32::from(v),
                    std::net::IpAddr::V6(_) => c.is_v6() && self.director.conns.addrs(id).vaddr == vip,
                };
                if of_vip {
                    self.flows.sync(&mut self.dp, &mut self.director, id);
                }
            }
        }
        changed
    }

    /// `ipvsadm -D`: every real server of the service goes, with its flows.
    pub fn del_service(&mut self, key: &ServiceKey) -> Result<(), DirectorError> {
        let dests: Vec<_> = self
            .director
            .services
            .lookup_key(key)
            .map(|svc| self.director.services.service(svc).order.clone())
            .unwrap_or_default();
        self.director.del_service(key)?;
        self.flows.drop_dests(&mut self.dp, &mut self.director, &dests);
        self.sync_vips(self.params.vip_count);
        Ok(())
    }

    /// Credits the data plane's counters to the director's statistics (call
    /// before reading them).
    pub fn settle(&mut self) {
        self.flows.credit_all(&mut self.dp, &mut self.director);
    }
}

/// The data plane of a card whose network is simulated: frames are offered
/// on its wire and what it transmits is read back.
impl<D: Device + Wire> SlowPath<D> {
    /// One received frame, end to end.
    pub fn frame(&mut self, ts: Time, frame: &[u8]) -> Result<FrameResult, DeviceError> {
        self.frame_gated(ts, frame, |_, _| true)
    }

    /// [`frame`](Self::frame) with a gate at the slow path's entry: an
    /// exception frame for which `admit(director, frame)` is false is
    /// refused (dropped) before the golden model sees it.
    ///
    /// A frame no MAC would take (empty, shorter than an Ethernet header,
    /// longer than [`MAX_RX_FRAME`](lvsnic_model::stats::MAX_RX_FRAME)) is
    /// dropped on receive with its reason, as is one the card's receive
    /// ring refuses: a counted drop, never an error.
    pub fn frame_gated(
        &mut self,
        ts: Time,
        frame: &[u8],
        mut admit: impl FnMut(&Director, &[u8]) -> bool,
    ) -> Result<FrameResult, DeviceError> {
        if let Some(why) = ReceiveDrop::of_len(frame.len()) {
            return Ok(FrameResult { dropped: Some(why), ..Default::default() });
        }
        self.advance(ts);
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let out = match device::offer(&mut self.dp, frame, ts, seq) {
            // Nothing out of the card: its receive ring dropped the exception.
            Err(DeviceError::Outcome { transmitted: 0, to_host: 0, .. }) => {
                return Ok(FrameResult { dropped: Some(ReceiveDrop::Ring), ..Default::default() })
            }
            r => r?,
        };
        match out {
            HwOutput::Forward { frame, .. } => Ok(FrameResult { tx: vec![frame], in_hardware: true, ..Default::default() }),
            HwOutput::ToHost { frame, meta } | HwOutput::Aborted { frame, meta } => {
                let reason = Some(meta.reason);
                if !admit(&self.director, &frame) {
                    return Ok(FrameResult { refused: true, reason, ..Default::default() });
                }
                let mut r = self.exception(frame, seq)?;
                r.tx = device::take_injected(&mut self.dp, r.injected, seq)?;
                r.reason = reason;
                Ok(r)
            }
        }
    }

    /// [`host_tx`](SlowPath::host_tx), returning the frame as it left the
    /// card's MAC.
    pub fn host_tx_observed(&mut self, frame: &[u8]) -> Result<Vec<u8>, DeviceError> {
        self.host_tx(frame)?;
        let mut tx = device::take_injected(&mut self.dp, 1, self.seq)?;
        Ok(tx.remove(0))
    }
}
