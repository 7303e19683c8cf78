//! Emission: a frame into the capture and through the private director at
//! once, with its category counted; the credit that interleaves other and
//! malformed frames with the sessions' frames.

use super::*;

impl Sim<'_> {
    /// Puts `frame` in the capture at `at` (or 1 µs after the previous
    /// frame), runs it through the director and returns the timestamp, the
    /// outcome and the frame as the director left it.
    pub(super) fn emit(&mut self, at: Time, frame: Vec<u8>, cat: Category, session: Option<u32>) -> (Time, Outcome, Vec<u8>) {
        let ts = match self.last_ts {
            Some(l) => at.max(l + MIN_GAP),
            None => at,
        };
        self.last_ts = Some(ts);
        let mut work = frame.clone();
        self.extra.clear();
        let outcome = Outcome::of(&mut self.d, ts, &mut work, &mut self.extra);
        self.count_frame(&frame, cat);
        if cat.is_malformed() {
            self.counts.malformed_frames += 1;
        } else if session.is_none() {
            self.counts.other_frames += 1;
        }
        if let Some(s) = session {
            self.counts.session_frames += 1;
            self.sess[s as usize].info.frames += 1;
            self.credit(ts);
        }
        self.records.push(PcapRecord { ts_ns: ts, orig_len: frame.len() as u32, data: frame });
        self.tags.push(FrameTag { category: cat, session, outcome });
        (ts, outcome, work)
    }

    pub(super) fn count_frame(&mut self, frame: &[u8], cat: Category) {
        let c = &mut self.counts;
        c.frames += 1;
        c.bytes += frame.len() as u64;
        c.categories[cat.index()] += 1;
        if cat.is_malformed() {
            return;
        }
        let info = parse_frame(frame);
        if info.vlan_tci.is_some() {
            c.vlan_frames += 1;
        }
        c.ipv6_frames += info.ipv6.is_some() as u64;
        if let Some(v4) = info.ipv4 {
            c.ip_option_frames += v4.has_options as u64;
            c.df_frames += v4.df as u64;
            if v4.ttl > 64 {
                c.ttl128_frames += 1;
            } else if v4.ttl > 1 {
                c.ttl64_frames += 1;
            }
            if v4.protocol == IpProtocol::Udp && !v4.is_non_first_fragment() {
                let o = v4.l4_offset() + 6;
                if frame.len() >= o + 2 && frame[o] == 0 && frame[o + 1] == 0 {
                    c.zero_checksum_frames += 1;
                }
            }
        }
    }

    /// Session frames earn credit for other and malformed frames, so that
    /// their shares of the capture are the spec's fractions.
    pub(super) fn credit(&mut self, ts: Time) {
        self.credit_other += self.rate_other;
        while self.credit_other >= 1.0 && !self.deck_other.is_empty() {
            let k = self.spawn_other(ts, false);
            self.credit_other -= k as f64;
        }
        self.credit_malformed += self.rate_malformed;
        while self.credit_malformed >= 1.0 {
            self.spawn_other(ts, true);
            self.credit_malformed -= 1.0;
        }
    }

    pub(super) fn deal(&mut self, malformed: bool) -> Category {
        let (deck, at) = if malformed {
            (&mut self.deck_malformed, &mut self.deck_malformed_at)
        } else {
            (&mut self.deck_other, &mut self.deck_other_at)
        };
        if *at >= deck.len() {
            shuffle(&mut self.rng, deck);
            *at = 0;
        }
        *at += 1;
        deck[*at - 1]
    }

    /// Schedules an other (or malformed) unit soon after `ts`; returns the
    /// number of frames it will send.
    pub(super) fn spawn_other(&mut self, ts: Time, malformed: bool) -> u32 {
        let cat = self.deal(malformed);
        let client = self.rng.below(self.clients.len() as u64) as u32;
        let steps = match cat {
            Category::IcmpEchoVip | Category::IcmpEchoDirector => between(&mut self.rng, 1, 3) as u8,
            Category::TcpToDirector => 5,
            _ => 1,
        };
        let frames = if cat == Category::Fragment { 2 } else { steps as u32 };
        let port = self.alloc_port(client);
        let o = Other {
            cat,
            step: 0,
            steps,
            client,
            port,
            seq: self.rng.next_u64() as u32,
            ack: self.rng.next_u64() as u32,
            ident: self.rng.next_u64() as u16,
        };
        let idx = self.others.len() as u32;
        self.others.push(o);
        let at = ts + US + self.rng.below(300 * MSEC);
        self.push(at, Ev::Other(idx));
        frames
    }
}
