//! Planning: every session's start, service, client and kind (half-open,
//! RST, idle gap, port reuse, bursts to persistent services), fixed before
//! the first frame from the spec's quotas; the clients' ephemeral ports.

use super::*;

impl Sim<'_> {
    pub(super) fn plan(&mut self) -> Result<(), TrafficError> {
        let n = self.spec.connections;
        if n == 0 {
            return Ok(());
        }
        let plans = self.plan_starts()?;
        for (i, &(start, svc, client, burst)) in plans.iter().enumerate() {
            let s = self.new_session(i as u32, start, svc, client, burst);
            self.sess.push(s);
        }
        self.plan_kinds();
        self.plan_port_reuse();
        self.plan_features();
        for i in 0..n {
            if self.sess[i].info.kind != SessionKind::PortReuse {
                let t = self.sess[i].info.start;
                self.push(t, Ev::Start(i as u32));
            }
        }
        Ok(())
    }

    /// Every session's `(start, svc, client, burst)`, in start order, the
    /// first at the spec's `start`; bursts of 2–4 sessions from one client
    /// to a persistent service.
    fn plan_starts(&mut self) -> Result<Vec<(Time, usize, usize, Option<u32>)>, TrafficError> {
        let spec = self.spec;
        let n = spec.connections;
        let tcp: Vec<usize> = (0..self.svcs.len()).filter(|&i| self.svcs[i].proto == IPPROTO_TCP).collect();
        let udp: Vec<usize> = (0..self.svcs.len()).filter(|&i| self.svcs[i].proto == IPPROTO_UDP).collect();
        if tcp.is_empty() && udp.is_empty() {
            return Err(TrafficError::NoServices);
        }
        let r = &mut self.rng;
        let hot = (spec.clients / 20).max(1) as u64;
        let udp_thr = per_2_32(spec.udp_fraction);
        let burst_thr = per_2_32(spec.persistent_burst_fraction);

        let mut plans: Vec<(Time, usize, usize, Option<u32>)> = Vec::with_capacity(n);
        let mut bursts = 0u32;
        while plans.len() < n {
            let use_udp = if tcp.is_empty() {
                true
            } else if udp.is_empty() {
                false
            } else {
                r.below(1 << 32) < udp_thr
            };
            let list = if use_udp { &udp } else { &tcp };
            let svc = list[r.below(list.len() as u64) as usize];
            let client = if r.chance(1, 4) { r.below(hot) } else { r.below(spec.clients as u64) } as usize;
            let start = spec.start + r.below(spec.duration + 1);
            let room = n - plans.len();
            let burst = self.svcs[svc].persistent
                && room >= 2
                && burst_thr > 0
                && (bursts == 0 || r.below(1 << 32) < burst_thr);
            if burst {
                let k = (between(r, 2, 4) as usize).min(room);
                for j in 0..k {
                    let at = if j == 0 { start } else { start + r.below(2 * SEC) };
                    plans.push((at, svc, client, Some(bursts)));
                }
                bursts += 1;
            } else {
                plans.push((start, svc, client, None));
            }
        }
        self.counts.persistent_bursts = bursts as u64;
        plans.sort_by_key(|p| p.0);
        // The first session starts at `start`.
        let shift = plans[0].0 - spec.start;
        for p in &mut plans {
            p.0 -= shift;
        }

        let mut per_client = vec![0usize; spec.clients];
        for p in &plans {
            per_client[p.2] += 1;
        }
        if let Some(m) = per_client.iter().copied().max().filter(|&m| m > MAX_SESSIONS_PER_CLIENT) {
            return Err(TrafficError::Spec(format!(
                "{m} connections from one client exceed {MAX_SESSIONS_PER_CLIENT}: use more clients"
            )));
        }
        Ok(plans)
    }

    /// Half-open TCP sessions, RST closes (alternately client and server)
    /// and idle gaps, by quota.
    fn plan_kinds(&mut self) {
        let spec = self.spec;
        let r = &mut self.rng;
        let all: Vec<usize> = (0..self.sess.len()).collect();
        let tcp_ids: Vec<usize> = all.iter().copied().filter(|&i| self.sess[i].proto == IPPROTO_TCP).collect();

        for i in pick(r, tcp_ids.clone(), quota(spec.half_open_fraction, tcp_ids.len())) {
            self.sess[i].info.kind = SessionKind::HalfOpen;
        }
        let live: Vec<usize> = all.iter().copied().filter(|&i| self.sess[i].info.kind == SessionKind::Normal).collect();
        let live_tcp: Vec<usize> = live.iter().copied().filter(|&i| self.sess[i].proto == IPPROTO_TCP).collect();
        for (k, i) in pick(r, live_tcp.clone(), quota(spec.rst_fraction, live_tcp.len())).into_iter().enumerate() {
            self.sess[i].close = if k % 2 == 0 { Close::ClientRst } else { Close::ServerRst };
        }
        for i in pick(r, live.clone(), quota(spec.idle_gap_fraction, live.len())) {
            let s = &mut self.sess[i];
            s.info.kind = SessionKind::Idle;
            s.exchanges = s.exchanges.max(2);
        }
    }

    /// Port reuse: pairs of plain TCP sessions; the later one becomes a
    /// follower of the earlier, which the client closes first: it opens
    /// from the same client port 61-90 s after that close.
    fn plan_port_reuse(&mut self) {
        let plain: Vec<usize> = (0..self.sess.len())
            .filter(|&i| {
                let s = &self.sess[i];
                s.proto == IPPROTO_TCP
                    && s.info.kind == SessionKind::Normal
                    && matches!(s.close, Close::ClientFin | Close::ServerFin)
            })
            .collect();
        let k = quota(self.spec.port_reuse_fraction, self.spec.connections).min(plain.len() / 2);
        let mut pairs = pick(&mut self.rng, plain, 2 * k);
        for pair in pairs.chunks_exact_mut(2) {
            pair.sort_unstable();
            let (p, f) = (pair[0], pair[1]);
            let (svc, client, vport, service, caddr, mss) = {
                let ps = &mut self.sess[p];
                ps.close = Close::ClientFin;
                ps.follower = Some(f as u32);
                (ps.svc, ps.client, ps.vport, ps.info.service, ps.info.client.ip(), ps.mss)
            };
            let fs = &mut self.sess[f];
            fs.info.kind = SessionKind::PortReuse;
            fs.info.reuses = Some(p as u32);
            fs.info.client = sock(caddr, 0);
            fs.info.service = service;
            fs.info.burst = None;
            (fs.svc, fs.client, fs.vport, fs.mss) = (svc, client, vport, mss);
        }
    }

    /// Per-session features by quota: VLAN tags, IP options, no DF,
    /// uploads, zero UDP checksums, the client's ICMP error.
    fn plan_features(&mut self) {
        let spec = self.spec;
        let r = &mut self.rng;
        let all: Vec<usize> = (0..self.sess.len()).collect();
        let tcp_ids: Vec<usize> = all.iter().copied().filter(|&i| self.sess[i].proto == IPPROTO_TCP).collect();
        let udp_ids: Vec<usize> = all.iter().copied().filter(|&i| self.sess[i].proto != IPPROTO_TCP).collect();
        // IPv6 has no options of the IPv4 kind and no zero UDP checksum
        // (the client's ICMP error is ICMPv6 there).
        let v4 = |ids: &Vec<usize>| -> Vec<usize> {
            ids.iter().copied().filter(|&i| self.sess[i].info.service.is_ipv4()).collect()
        };
        let (tcp4_ids, udp4_ids) = (v4(&tcp_ids), v4(&udp_ids));
        let tcp_live: Vec<usize> =
            tcp_ids.iter().copied().filter(|&i| self.sess[i].info.kind != SessionKind::HalfOpen).collect();
        // In this order: each draw moves the random stream.
        let features: [(&Vec<usize>, f64, fn(&mut SessionInfo)); 7] = [
            (&all, spec.vlan_fraction, |s| s.vlan = true),
            (&tcp4_ids, spec.ip_options_fraction, |s| s.ip_options = true),
            (&all, spec.no_df_fraction, |s| s.dont_frag = false),
            (&tcp_live, spec.upload_fraction, |s| s.upload = true),
            (&udp4_ids, spec.zero_checksum_fraction, |s| s.zero_checksum = true),
            (&udp_ids, spec.icmp_error_fraction, |s| s.client_icmp_error = true),
            (&udp_ids, spec.server_icmp_error_fraction, |s| s.server_icmp_error = true),
        ];
        for (ids, fraction, set) in features {
            for i in pick(r, ids.clone(), quota(fraction, ids.len())) {
                set(&mut self.sess[i].info);
            }
        }
        // 802.1Q sessions only for a director that balances tagged frames
        // (the default drops them, as Linux without a VLAN sub-interface);
        // the draw above is made either way so that the rest of the capture
        // stays the same.
        if self.cfg.vlan != lvsnic_model::config::VlanMode::Balance {
            for s in &mut self.sess {
                s.info.vlan = false;
            }
        }
    }

    pub(super) fn new_session(&mut self, id: u32, start: Time, svc: usize, client: usize, burst: Option<u32>) -> Sess {
        let mut r = SplitMix64::new(subseed(self.spec.seed, 1000 + id as u64));
        let v = &self.svcs[svc];
        let vport = if v.vport != 0 { v.vport } else { [80u16, 443, 8080][r.below(3) as usize] };
        let proto = v.proto;
        let exchanges = if proto == IPPROTO_TCP {
            match r.below(100) {
                0..=49 => 1,
                50..=84 => between(&mut r, 2, 3),
                _ => between(&mut r, 4, 8),
            }
        } else if r.chance(2, 3) {
            1
        } else {
            between(&mut r, 2, 3)
        } as u16;
        let close = if r.chance(3, 5) { Close::ClientFin } else { Close::ServerFin };
        let c = &self.clients[client];
        let caddr = if v.vip.is_ipv6() { IpAddr::V6(c.addr6) } else { IpAddr::V4(c.addr) };
        let info = SessionInfo {
            protocol: if proto == IPPROTO_TCP { Protocol::Tcp } else { Protocol::Udp },
            client: sock(caddr, 0),
            service: sock(v.vip, vport),
            start,
            kind: SessionKind::Normal,
            burst,
            reuses: None,
            vlan: false,
            ip_options: false,
            dont_frag: true,
            upload: false,
            zero_checksum: false,
            client_icmp_error: false,
            server_icmp_error: false,
            real_server: None,
            forwarding: None,
            end: SessionEnd::Open,
            frames: 0,
        };
        let c_nxt = r.next_u64() as u32;
        let s_isn = r.next_u64() as u32;
        let c_id = r.next_u64() as u16;
        let s_id = r.next_u64() as u16;
        Sess {
            info,
            rng: r,
            client: client as u32,
            svc: svc as u32,
            proto,
            cport: 0,
            vport,
            close,
            follower: None,
            rs: None,
            exchanges,
            first_exchange: true,
            c_nxt,
            c_rcv: 0,
            s_nxt: s_isn,
            s_rcv: 0,
            s_isn,
            mss: if v.vip.is_ipv6() { self.mss6 } else { self.mss },
            c_id,
            s_id,
            req: Msg::default(),
            resp: Msg::default(),
            flight_ends: Vec::new(),
            attempts: 0,
            gap_pending: false,
            gap_done: false,
            query: Vec::new(),
            quote: Vec::new(),
        }
    }

    /// The client's next ephemeral port: sequential from a random start,
    /// wrapping, so a port comes back only after 28 232 others.
    pub(super) fn alloc_port(&mut self, client: u32) -> u16 {
        let c = &mut self.clients[client as usize];
        let p = c.next_port;
        c.next_port = if p == PORT_HI { PORT_LO } else { p + 1 };
        p
    }
}
