//! IPv6 reassembly as Linux 6.1 does it before IPVS sees a packet:
//! `nf_defrag_ipv6` (`net/ipv6/netfilter/nf_conntrack_reasm.c`,
//! `nf_defrag_ipv6_hooks.c`), which `ip_vs_add_service` turns on for the
//! network namespace when an IPv6 service is added
//! (`nf_defrag_ipv6_enable`). Its PRE_ROUTING hook (priority -400) runs
//! before routing, so every IPv6 fragment the director receives is
//! gathered, whether to a VIP or forwarded (NAT replies); IPVS
//! (`ip_vs_in_hook` at LOCAL_IN, `ip_vs_out_hook` at FORWARD) sees only
//! whole datagrams. A queue is keyed by source, destination and
//! identification (and the user `IP6_DEFRAG_CONNTRACK_IN`, the same for
//! every frame here), and:
//!
//! * lives 60 s from its first fragment (`nf_conntrack_frag6_timeout`),
//!   then is dropped;
//! * a fragment that is not one passes untouched: none after the walk over
//!   Hop-by-Hop, Routing, Destination Options and AH headers
//!   (`find_prev_fhdr`), Payload Length 0 (jumbo), a first fragment that
//!   does not hold the whole upper-layer header (`ipv6frag_thdr_truncated`,
//!   RFC 8200 §4.5), or a non-last fragment whose end is not a multiple of
//!   8 (`-EPROTO`: the queue is dropped too);
//! * a last fragment ending before data already seen or a second,
//!   different end, data past a known end, and a zero-length fragment are
//!   dropped alone: unlike IPv4, the queue stays (`nf_ct_frag6_queue`'s
//!   `err:` path does not kill it); an end past 65535 likewise;
//! * data is kept in runs (`inet_frag_queue_insert`, shared with IPv4): a
//!   fragment wholly inside a run is a duplicate, dropped alone ("pretend
//!   they got queued"); one that overlaps anything kills the queue;
//! * completes when the first and last fragments are in and the data is
//!   contiguous: the datagram is the offset-0 fragment's Ethernet header,
//!   IPv6 header and the extension headers before its Fragment header,
//!   whose Next Header takes the Fragment header's place, Payload Length
//!   set, the ECN bits combined (`ip_frag_ecn_table`; an invalid mix
//!   fails); more than 65535 bytes of payload fails.
//!   `IP6CB(skb)->frag_max_size` is 40 + the largest fragment's Payload
//!   Length, and the fragments stay chained (`inet_frag_reasm_finish`
//!   without coalescing): `ip6_fragment` may send them again as they came.
//!
//! The ICMPv6 "fragment reassembly time exceeded" Linux sends when a queue
//! holding its first fragment expires (`ip6frag_expire_frag_queue`) is not
//! sent (the model emits frames only in answer to frames); memory is
//! bounded by the bytes of the buffered frames
//! (`nf_conntrack_frag6_high_thresh`, 4 MiB: above it no fragment is
//! taken).

use crate::defrag::{ecn_combine, DefragFail, Piece, Queues};
use crate::time::{Time, SEC};
use std::net::Ipv6Addr;

/// `nf_conntrack_frag6_timeout`.
pub const FRAG6_TIMEOUT: Time = 60 * SEC;
/// `nf_conntrack_frag6_high_thresh`.
pub const HIGH_THRESH6: usize = 4 << 20;

/// What a queue itself is charged (`sizeof(struct frag_queue)` rounded
/// up), so that queues holding nothing (made by fragments then refused)
/// are bounded too.
const QUEUE_BYTES: usize = 256;

const IPV6_HDR: usize = 40;
const NEXTHDR_HOP: u8 = 0;
const NEXTHDR_TCP: u8 = 6;
const NEXTHDR_UDP: u8 = 17;
const NEXTHDR_ROUTING: u8 = 43;
const NEXTHDR_FRAGMENT: u8 = 44;
const NEXTHDR_AUTH: u8 = 51;
const NEXTHDR_ICMP: u8 = 58;
const NEXTHDR_DEST: u8 = 60;

/// A reassembled IPv6 datagram and what `ip6_fragment` needs of its
/// fragments.
#[derive(Debug, PartialEq, Eq)]
pub struct Reassembled6 {
    /// The frame: the offset-0 fragment's Ethernet header, IPv6 header and
    /// unfragmentable extension headers, then the data.
    pub frame: Vec<u8>,
    /// `IP6CB(skb)->frag_max_size`: 40 + the largest fragment's Payload
    /// Length.
    pub frag_max_size: u16,
    /// Data length of each fragment in offset order.
    pub pieces: Vec<usize>,
}

/// The result of offering one IPv6 frame.
#[derive(Debug, PartialEq, Eq)]
pub enum Defrag6Result {
    /// Not reassembled: the frame goes on as it is (not a fragment, or one
    /// `nf_ct_frag6_gather` lets through).
    Pass,
    /// Queued; the datagram is not complete yet.
    Queued,
    /// Dropped (the fragment, and for an overlap its queue).
    Failed(DefragFail),
    /// The whole datagram.
    Complete(Reassembled6),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    saddr: Ipv6Addr,
    daddr: Ipv6Addr,
    id: u32,
}

/// The IPv6 reassembly queues (`nf_frags` of the namespace).
#[derive(Debug, Default)]
pub struct Defrag6 {
    queues: Queues<Key>,
}

/// `find_prev_fhdr`: the offsets (from the IPv6 header) of the Next Header
/// byte naming the Fragment header and of the Fragment header, after
/// Hop-by-Hop, Routing, Destination Options and AH headers; `None` when
/// the chain reaches anything else first (not a fragment).
fn find_prev_fhdr(pkt: &[u8]) -> Option<(usize, usize)> {
    let mut next = pkt[6];
    let mut prev_nhoff = 6;
    let mut start = IPV6_HDR;
    while next != NEXTHDR_FRAGMENT {
        if !matches!(next, NEXTHDR_HOP | NEXTHDR_ROUTING | NEXTHDR_DEST | NEXTHDR_AUTH) {
            return None;
        }
        let h = pkt.get(start..start + 2)?;
        let len = if next == NEXTHDR_AUTH { (usize::from(h[1]) + 2) * 4 } else { (usize::from(h[1]) + 1) * 8 };
        prev_nhoff = start;
        next = h[0];
        start += len;
    }
    (start <= pkt.len()).then_some((prev_nhoff, start))
}

/// `ipv6frag_thdr_truncated`: a first fragment whose extension headers
/// after the Fragment header and upper-layer header (TCP 20, UDP 8,
/// ICMPv6 8, anything else 1 byte) do not all fit in it.
fn thdr_truncated(pkt: &[u8], fhoff: usize) -> bool {
    let mut next = NEXTHDR_FRAGMENT;
    let mut start = fhoff;
    loop {
        match next {
            NEXTHDR_FRAGMENT => {
                let Some(f) = pkt.get(start..start + 4) else { return false };
                if u16::from_be_bytes([f[2], f[3]]) & !7 != 0 {
                    return false; // not a first fragment
                }
                next = f[0];
                start += 8;
            }
            NEXTHDR_HOP | NEXTHDR_ROUTING | NEXTHDR_DEST | NEXTHDR_AUTH => {
                let Some(h) = pkt.get(start..start + 2) else { return false };
                start += if next == NEXTHDR_AUTH { (usize::from(h[1]) + 2) * 4 } else { (usize::from(h[1]) + 1) * 8 };
                next = h[0];
            }
            _ => break,
        }
    }
    let need = match next {
        NEXTHDR_TCP => 20,
        NEXTHDR_UDP | NEXTHDR_ICMP => 8,
        _ => 1,
    };
    start + need > pkt.len()
}

impl Defrag6 {
    /// No queue, nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Queues being reassembled.
    pub fn len(&self) -> usize {
        self.queues.map.len()
    }

    /// Whether no datagram is being reassembled.
    pub fn is_empty(&self) -> bool {
        self.queues.map.is_empty()
    }

    /// Bytes buffered.
    pub fn memory_bytes(&self) -> usize {
        self.queues.mem
    }

    /// Drops the queues whose 60 s are over; returns how many.
    pub fn expire(&mut self, now: Time) -> u64 {
        let due = self.queues.due(now);
        for k in &due {
            self.queues.remove(k);
        }
        due.len() as u64
    }

    fn remove(&mut self, k: &Key) {
        self.queues.remove(k);
    }

    /// Offers the IPv6 packet at `frame[l3..]` (its Payload Length within
    /// the frame) at time `now` (`nf_ct_frag6_gather`).
    pub fn gather(&mut self, now: Time, frame: &[u8], l3: usize) -> Defrag6Result {
        let pkt = &frame[l3..];
        if pkt.len() < IPV6_HDR {
            return Defrag6Result::Pass;
        }
        let payload_len = usize::from(u16::from_be_bytes([pkt[4], pkt[5]]));
        if pkt.len() < IPV6_HDR + payload_len {
            return Defrag6Result::Pass; // truncated: not the hook's to take
        }
        let pkt = &pkt[..IPV6_HDR + payload_len];
        if payload_len == 0 {
            return Defrag6Result::Pass; // jumbo payload
        }
        let Some((nhoff, fhoff)) = find_prev_fhdr(pkt) else {
            return Defrag6Result::Pass;
        };
        if thdr_truncated(pkt, fhoff) {
            return Defrag6Result::Pass;
        }
        let Some(fh) = pkt.get(fhoff..fhoff + 8) else {
            return Defrag6Result::Failed(DefragFail::Invalid);
        };
        let key = Key {
            saddr: Ipv6Addr::from(<[u8; 16]>::try_from(&pkt[8..24]).expect("16 bytes")),
            daddr: Ipv6Addr::from(<[u8; 16]>::try_from(&pkt[24..40]).expect("16 bytes")),
            id: u32::from_be_bytes([fh[4], fh[5], fh[6], fh[7]]),
        };
        if self.queues.map.get(&key).is_some_and(|q| q.expires <= now) {
            self.remove(&key);
        }
        // inet_frag_find: above the threshold no fragment is taken.
        if self.queues.mem > HIGH_THRESH6 {
            return Defrag6Result::Failed(DefragFail::NoMemory);
        }
        self.queues.find_or_make(key, now + FRAG6_TIMEOUT, QUEUE_BYTES);
        let q = self.queues.map.get_mut(&key).expect("queue just found or made");

        // nf_ct_frag6_queue
        let frag_off = u16::from_be_bytes([fh[2], fh[3]]);
        let offset = usize::from(frag_off & !7);
        let data_start = fhoff + 8;
        let end = offset + (IPV6_HDR + payload_len).saturating_sub(data_start);
        if end > 65535 {
            return Defrag6Result::Failed(DefragFail::Oversize);
        }
        let ecn = 1u8 << ((pkt[1] >> 4) & 3);
        if frag_off & 1 == 0 {
            if end < q.len || (q.last_in && end != q.len) {
                return Defrag6Result::Failed(DefragFail::Invalid);
            }
            q.last_in = true;
            q.len = end;
        } else {
            if end & 7 != 0 {
                // RFC 8200: a parameter problem, sent by the stack later
                // (`-EPROTO`: the queue dies, the fragment goes on).
                self.remove(&key);
                return Defrag6Result::Pass;
            }
            if end > q.len {
                if q.last_in {
                    return Defrag6Result::Failed(DefragFail::Invalid);
                }
                q.len = end;
            }
        }
        if end == offset {
            return Defrag6Result::Failed(DefragFail::Invalid);
        }
        if let Err(f) = q.insert(offset, end) {
            if f == DefragFail::Overlap {
                self.remove(&key);
            }
            return Defrag6Result::Failed(f);
        }
        let data = pkt[data_start..data_start + (end - offset)].to_vec();
        let pos = q.pieces.partition_point(|p| p.offset < offset);
        q.pieces.insert(pos, Piece { offset, data });
        q.meat += end - offset;
        q.ecn |= ecn;
        q.max_size = q.max_size.max(payload_len);
        q.mem += frame.len();
        self.queues.mem += frame.len();
        if offset == 0 {
            q.first_in = true;
            // The Fragment header's Next Header takes its place in the
            // header before it (the first fragment's is the one kept).
            let mut head = frame[..l3 + fhoff].to_vec();
            head[l3 + nhoff] = fh[0];
            q.head = Some(head);
            q.l3 = l3;
        }
        if !(q.first_in && q.last_in && q.meat == q.len) {
            return Defrag6Result::Queued;
        }

        // nf_ct_frag6_reasm
        let Some(ecn_bits) = ecn_combine(q.ecn) else {
            self.remove(&key);
            return Defrag6Result::Failed(DefragFail::EcnMix);
        };
        let mut f = q.head.take().unwrap_or_default();
        let l3 = q.l3;
        let unfrag = f.len() - l3 - IPV6_HDR;
        let payload = unfrag + q.len;
        if payload > 65535 {
            self.remove(&key);
            return Defrag6Result::Failed(DefragFail::Oversize);
        }
        let mut pieces = Vec::with_capacity(q.pieces.len());
        for p in &q.pieces {
            f.extend_from_slice(&p.data);
            pieces.push(p.data.len());
        }
        f[l3 + 4..l3 + 6].copy_from_slice(&(payload as u16).to_be_bytes());
        f[l3 + 1] |= ecn_bits << 4;
        let frag_max_size = (IPV6_HDR + q.max_size) as u16;
        self.remove(&key);
        Defrag6Result::Complete(Reassembled6 { frame: f, frag_max_size, pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet frame carrying an IPv6 fragment of datagram `id` (next
    /// header `nh` inside), the Fragment header after `before` (extension
    /// headers, the first with next header `first`; empty: none), traffic
    /// class `tc`.
    #[allow(clippy::too_many_arguments)]
    fn frag(first: u8, before: &[u8], nh: u8, id: u32, offset: usize, more: bool, tc: u8, data: &[u8]) -> Vec<u8> {
        let mut f = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 0xfe, 0x86, 0xdd];
        let w = (6u32 << 28) | (u32::from(tc) << 20);
        f.extend_from_slice(&w.to_be_bytes());
        f.extend_from_slice(&((before.len() + 8 + data.len()) as u16).to_be_bytes());
        f.extend_from_slice(&[if before.is_empty() { 44 } else { first }, 64]);
        f.extend_from_slice(&"2001:db8:ff::1".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(&"2001:db8::10".parse::<Ipv6Addr>().unwrap().octets());
        f.extend_from_slice(before);
        f.extend_from_slice(&[nh, 0]);
        f.extend_from_slice(&((offset as u16) | u16::from(more)).to_be_bytes());
        f.extend_from_slice(&id.to_be_bytes());
        f.extend_from_slice(data);
        f
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| seed.wrapping_add((i * 3) as u8)).collect()
    }

    #[test]
    fn the_datagram_keeps_the_headers_before_the_fragment_header_and_combines_ecn() {
        let mut d = Defrag6::new();
        // Destination Options (8 bytes, next header 44) before the Fragment
        // header; the first fragment ECT(0), the second CE: the datagram CE.
        let dst = [44, 0, 1, 4, 0, 0, 0, 0];
        let (a, b) = (bytes(16, 1), bytes(24, 2));
        let second = frag(60, &dst, 17, 7, 16, false, 0x03, &b);
        assert_eq!(d.gather(0, &second, 14), Defrag6Result::Queued);
        let first = frag(60, &dst, 17, 7, 0, true, 0x02, &a);
        let Defrag6Result::Complete(r) = d.gather(1, &first, 14) else { panic!("not complete") };
        let mut want = first[..14 + 40].to_vec();
        want[14 + 1] = 0x30; // traffic class 0x03: CE
        want[14 + 4..14 + 6].copy_from_slice(&(8 + 16 + 24u16).to_be_bytes());
        want.extend_from_slice(&[17, 0, 1, 4, 0, 0, 0, 0]);
        want.extend_from_slice(&a);
        want.extend_from_slice(&b);
        assert_eq!(r, Reassembled6 { frame: want, frag_max_size: 40 + 8 + 8 + 24, pieces: vec![16, 24] });
        assert!(d.is_empty() && d.memory_bytes() == 0);
    }

    #[test]
    fn refused_fragments_leave_the_queue_unlike_ipv4() {
        let mut d = Defrag6::new();
        assert_eq!(d.gather(0, &frag(0, &[], 17, 9, 0, true, 0, &bytes(16, 0)), 14), Defrag6Result::Queued);
        // A zero-length fragment and data past the known end: dropped alone.
        assert_eq!(d.gather(0, &frag(0, &[], 17, 9, 16, true, 0, &[]), 14), Defrag6Result::Failed(DefragFail::Invalid));
        assert_eq!(d.gather(0, &frag(0, &[], 17, 9, 32, false, 0, &bytes(8, 1)), 14), Defrag6Result::Queued);
        assert_eq!(d.gather(0, &frag(0, &[], 17, 9, 40, true, 0, &bytes(8, 1)), 14), Defrag6Result::Failed(DefragFail::Invalid));
        assert_eq!(d.len(), 1);
        // ECT and not-ECT mixed: the queue fails at completion.
        let Defrag6Result::Complete(_) = d.gather(0, &frag(0, &[], 17, 9, 16, true, 0, &bytes(16, 2)), 14) else { panic!() };
        assert_eq!(d.gather(0, &frag(0, &[], 17, 10, 0, true, 0x01, &bytes(8, 0)), 14), Defrag6Result::Queued);
        assert_eq!(d.gather(0, &frag(0, &[], 17, 10, 8, false, 0, &bytes(8, 0)), 14), Defrag6Result::Failed(DefragFail::EcnMix));
        assert!(d.is_empty());
        // Not fragments, and a truncated frame: passed on.
        let mut plain = frag(0, &[], 17, 11, 0, false, 0, &bytes(8, 0));
        plain[14 + 6] = 17;
        assert_eq!(d.gather(0, &plain, 14), Defrag6Result::Pass);
        let short = &frag(0, &[], 17, 12, 0, true, 0, &bytes(64, 0))[..80];
        assert_eq!(d.gather(0, short, 14), Defrag6Result::Pass);
    }
}
