//! IPv4 reassembly as Linux does it before IPVS sees a packet
//! (`net/ipv4/ip_fragment.c`, `net/ipv4/inet_fragment.c`, kernel 6.x).
//!
//! Fragments to a local address (the director or a VIP) are reassembled by
//! `ip_local_deliver` (user `IP_DEFRAG_LOCAL_DELIVER`) before `ip_vs_in`;
//! forwarded TCP/UDP/ICMP fragments (NAT replies from real servers) are
//! gathered by `ip_vs_out` itself (`ip_vs_gather_frags`, user
//! `IP_DEFRAG_VS_OUT`). A queue is keyed by source, destination, IP ID,
//! protocol and user, and:
//!
//! * lives 30 s from its first fragment (`ipfrag_time`; not extended by
//!   later fragments), then is dropped;
//! * takes a fragment's data up to `end` (a non-last fragment's end rounded
//!   down to 8); a zero-length fragment, a last fragment ending before data
//!   already seen, or a second, different end kills the queue;
//! * keeps data in *runs* (fragments appended contiguously at the tail): a
//!   fragment wholly inside a run is a duplicate and is dropped alone; one
//!   that overlaps anything kills the queue (RFC 5722 as Linux applies it
//!   to IPv4 since 4.19);
//! * is re-initialised (data flushed, timer restarted) when more than
//!   `ipfrag_max_dist` (64) fragments from the same source arrived between
//!   two of its own (`ip_frag_too_far`);
//! * completes when the first and last fragments are in and the data is
//!   contiguous: the datagram gets the offset-0 fragment's header with
//!   `tot_len` set, the ECN bits combined (`ip_frag_ecn_table`; invalid
//!   mixes fail), DF set only if the largest fragment had DF
//!   (`max_df_size == max_size`, then `IPSKB_FRAG_PMTU`), a new header
//!   checksum; more than 65535 bytes fails.
//!
//! The model does not send the ICMP "fragment reassembly time exceeded"
//! Linux sends when a queue holding its first fragment expires (it emits
//! frames only in answer to frames); memory is bounded by the bytes of the
//! buffered frames (`ipfrag_high_thresh`, 4 MiB: above it no fragment is
//! taken) rather than by socket-buffer true sizes.

use crate::time::{Time, SEC};
use crate::wire::ipv4::{self, Ipv4Packet};
use std::collections::HashMap;

/// `ipfrag_time`.
pub const FRAG_TIMEOUT: Time = 30 * SEC;
/// `ipfrag_max_dist`.
pub const MAX_DIST: u32 = 64;
/// `ipfrag_high_thresh`.
pub const HIGH_THRESH: usize = 4 << 20;

/// Who reassembles (part of the queue key, as in the kernel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DefragUser {
    /// `IP_DEFRAG_LOCAL_DELIVER`: to the director or a VIP.
    LocalDeliver,
    /// `IP_DEFRAG_VS_OUT`: forwarded, gathered by `ip_vs_out`.
    VsOut,
}

/// Why a fragment or a queue was given up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DefragFail {
    /// A fragment inside data already queued (dropped alone).
    Duplicate,
    /// A fragment overlapping queued data (the queue is dropped).
    Overlap,
    /// Inconsistent length: zero-length fragment, data beyond the end, two ends.
    Invalid,
    /// The datagram would exceed 65535 bytes.
    Oversize,
    /// Fragments with and without ECN capability mixed.
    EcnMix,
    /// Over the memory threshold: no fragment taken.
    NoMemory,
}

/// The result of offering one fragment.
#[derive(Debug, PartialEq, Eq)]
pub enum DefragResult {
    /// Queued; the datagram is not complete yet.
    Queued,
    /// Dropped (the fragment, and for most reasons its queue).
    Failed(DefragFail),
    /// The whole datagram.
    Complete(Reassembled),
}

/// A reassembled datagram and what the output path needs to know of its
/// fragments.
#[derive(Debug, PartialEq, Eq)]
pub struct Reassembled {
    /// The frame: the offset-0 fragment's Ethernet and IP headers, the data.
    pub frame: Vec<u8>,
    /// `IPCB(skb)->frag_max_size`: the largest fragment (IP header + data).
    pub frag_max_size: u16,
    /// `IPSKB_FRAG_PMTU`: DF was set on the largest fragment.
    pub pmtu: bool,
    /// Data length of each fragment in offset order (what the frag-list fast
    /// path of `ip_do_fragment` sends again).
    pub pieces: Vec<usize>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    saddr: u32,
    daddr: u32,
    id: u16,
    proto: u8,
    user: DefragUser,
}

#[derive(Debug)]
pub(crate) struct Piece {
    pub(crate) offset: usize,
    pub(crate) data: Vec<u8>,
}

/// One datagram being reassembled (IPv4 here, IPv6 in [`crate::defrag6`]:
/// `struct inet_frag_queue` serves both).
#[derive(Debug, Default)]
pub(crate) struct Queue {
    pub(crate) expires: Time,
    /// Ethernet + IP header of the offset-0 fragment.
    pub(crate) head: Option<Vec<u8>>,
    pub(crate) l3: usize,
    /// Fragments by offset (non-overlapping).
    pub(crate) pieces: Vec<Piece>,
    /// Runs `[start, end)` of contiguous tail appends, by start.
    pub(crate) runs: Vec<(usize, usize)>,
    /// The tail fragment's end (`fragments_tail`), if any.
    pub(crate) tail_end: Option<usize>,
    pub(crate) len: usize,
    pub(crate) first_in: bool,
    pub(crate) last_in: bool,
    pub(crate) meat: usize,
    pub(crate) ecn: u8,
    pub(crate) max_size: usize,
    pub(crate) max_df_size: usize,
    pub(crate) rid: u32,
    /// Bytes charged against the memory threshold.
    pub(crate) mem: usize,
}

/// Reassembly queues by key and the bytes they hold (a `struct fqdir`:
/// IPv4's here, IPv6's in [`crate::defrag6`]).
#[derive(Debug)]
pub(crate) struct Queues<K> {
    pub(crate) map: HashMap<K, Queue>,
    /// No queue expires before this (a lower bound; `due` scans only then).
    next_due: Option<Time>,
    /// Bytes charged against the memory threshold.
    pub(crate) mem: usize,
}

impl<K> Default for Queues<K> {
    fn default() -> Self {
        Queues { map: HashMap::new(), next_due: None, mem: 0 }
    }
}

impl<K: std::hash::Hash + Eq + Copy> Queues<K> {
    /// The keys of the queues whose timer ran out by `now` (nothing is
    /// scanned before the earliest one is due).
    pub(crate) fn due(&mut self, now: Time) -> Vec<K> {
        match self.next_due {
            Some(t) if t <= now => {}
            _ => return Vec::new(),
        }
        self.next_due = self.map.values().map(|q| q.expires).filter(|&t| t > now).min();
        self.map.iter().filter(|(_, q)| q.expires <= now).map(|(k, _)| *k).collect()
    }

    /// Unhashes a queue and frees its bytes (`inet_frag_kill`): a later
    /// fragment with the same key starts a new queue. Whether there was one.
    pub(crate) fn remove(&mut self, k: &K) -> bool {
        match self.map.remove(k) {
            Some(q) => {
                self.mem -= q.mem;
                true
            }
            None => false,
        }
    }

    /// Makes the queue of `k` (timer `expires`, charged `charge` bytes) if
    /// there is none; returns whether it was made.
    pub(crate) fn find_or_make(&mut self, k: K, expires: Time, charge: usize) -> bool {
        if self.map.contains_key(&k) {
            return false;
        }
        self.map.insert(k, Queue { expires, mem: charge, ..Default::default() });
        self.mem += charge;
        self.next_due = Some(self.next_due.map_or(expires, |t| t.min(expires)));
        true
    }
}

/// The reassembly queues.
#[derive(Debug, Default)]
pub struct Defrag {
    queues: Queues<Key>,
    /// `inet_peer` fragment counters (`rid`) per source, with the number of
    /// queues referring to each.
    peers: HashMap<u32, (u32, u32)>,
}

/// `ip_frag_ecn_table`: the ECN codepoint to OR into the datagram's TOS,
/// `None` for an invalid mix. Bits: 1 not-ECT, 2 ECT(1), 4 ECT(0), 8 CE.
pub(crate) fn ecn_combine(bits: u8) -> Option<u8> {
    const NOT_ECT: u8 = 1;
    const CE: u8 = 8;
    if bits & NOT_ECT != 0 && bits & !NOT_ECT != 0 {
        return None;
    }
    if bits & CE != 0 && bits & !CE != 0 {
        return Some(3); // INET_ECN_CE
    }
    Some(0)
}

impl Queue {
    /// `inet_frag_queue_insert` for data `[offset, end)`: appended at the
    /// tail (extending the last run when contiguous), or placed in a gap.
    /// A fragment wholly inside a run is a duplicate; one overlapping
    /// anything else is an overlap (the caller drops the queue). The data
    /// itself is not stored here.
    pub(crate) fn insert(&mut self, offset: usize, end: usize) -> Result<(), DefragFail> {
        let q = self;
        match q.tail_end {
            None => {
                q.runs.push((offset, end));
                q.tail_end = Some(end);
            }
            Some(tail) if tail < end => {
                if offset < tail {
                    return Err(DefragFail::Overlap);
                }
                if offset == tail {
                    // Appended to the last run (the one ending at the tail).
                    if let Some(r) = q.runs.iter_mut().find(|r| r.1 == tail) {
                        r.1 = end;
                    }
                } else {
                    q.runs.push((offset, end));
                }
                q.tail_end = Some(end);
            }
            Some(_) => {
                let hit = q.runs.iter().find(|&&(s, e)| offset < e && end > s).copied();
                match hit {
                    Some((s, e)) if offset >= s && end <= e => return Err(DefragFail::Duplicate),
                    Some(_) => return Err(DefragFail::Overlap),
                    None => q.runs.push((offset, end)),
                }
            }
        }
        q.runs.sort_unstable();
        Ok(())
    }
}

impl Defrag {
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

    /// Drops the queues whose 30 s are over (`ip_expire`); returns how
    /// many (reassembly timeouts).
    pub fn expire(&mut self, now: Time) -> u64 {
        let due = self.queues.due(now);
        for k in &due {
            self.remove(k);
        }
        due.len() as u64
    }

    /// Unhashes a queue and frees its fragments (`inet_frag_kill`): a later
    /// fragment with the same key starts a new queue.
    fn remove(&mut self, k: &Key) {
        if self.queues.remove(k) {
            if let Some(p) = self.peers.get_mut(&k.saddr) {
                p.1 -= 1;
                if p.1 == 0 {
                    self.peers.remove(&k.saddr);
                }
            }
        }
    }

    /// Offers the IPv4 fragment at `frame[l3..]` (header checksum verified,
    /// `tot_len` within the frame, a fragment) at time `now`.
    pub fn queue(&mut self, now: Time, frame: &[u8], l3: usize, user: DefragUser) -> DefragResult {
        let ip = Ipv4Packet::new_unchecked(&frame[l3..]);
        let ihl = ip.header_len();
        let tot = usize::from(ip.total_len());
        let key = Key {
            saddr: u32::from(ip.src_addr()),
            daddr: u32::from(ip.dst_addr()),
            id: ip.ident(),
            proto: ip.protocol(),
            user,
        };
        // A queue whose timer ran out is gone, whatever `advance` saw.
        if self.queues.map.get(&key).is_some_and(|q| q.expires <= now) {
            self.remove(&key);
        }
        // inet_frag_find: above the threshold no fragment is taken, for a
        // new queue or an existing one, until queues complete or expire.
        if self.queues.mem > HIGH_THRESH {
            return DefragResult::Failed(DefragFail::NoMemory);
        }
        if self.queues.find_or_make(key, now + FRAG_TIMEOUT, 0) {
            self.peers.entry(key.saddr).or_insert((0, 0)).1 += 1;
        }
        // ip_frag_too_far
        let peer = self.peers.get_mut(&key.saddr).expect("a queue holds its peer");
        peer.0 = peer.0.wrapping_add(1);
        let end_rid = peer.0;
        let q = self.queues.map.get_mut(&key).expect("queue just found or made");
        let start_rid = std::mem::replace(&mut q.rid, end_rid);
        if q.tail_end.is_some() && end_rid.wrapping_sub(start_rid) > MAX_DIST {
            // ip_frag_reinit: flush, restart the timer; max sizes are kept.
            self.queues.mem -= q.mem;
            let (max_size, max_df_size) = (q.max_size, q.max_df_size);
            *q = Queue { expires: now + FRAG_TIMEOUT, rid: end_rid, max_size, max_df_size, ..Default::default() };
        }

        let ecn = 1u8 << ip.ecn();
        let offset = usize::from(ip.frag_offset_bytes());
        let mf = ip.more_frags();
        let mut end = offset + tot - ihl;
        if !mf {
            if end < q.len || (q.last_in && end != q.len) {
                self.remove(&key);
                return DefragResult::Failed(DefragFail::Invalid);
            }
            q.last_in = true;
            q.len = end;
        } else {
            end &= !7;
            if end > q.len {
                if q.last_in {
                    self.remove(&key);
                    return DefragResult::Failed(DefragFail::Invalid);
                }
                q.len = end;
            }
        }
        if end == offset {
            self.remove(&key);
            return DefragResult::Failed(DefragFail::Invalid);
        }

        // inet_frag_queue_insert
        if let Err(f) = q.insert(offset, end) {
            if f == DefragFail::Overlap {
                self.remove(&key);
            }
            return DefragResult::Failed(f);
        }
        let data = frame[l3 + ihl..l3 + ihl + (end - offset)].to_vec();
        let pos = q.pieces.partition_point(|p| p.offset < offset);
        q.pieces.insert(pos, Piece { offset, data });
        q.meat += end - offset;
        q.ecn |= ecn;
        q.mem += frame.len();
        self.queues.mem += frame.len();
        if offset == 0 {
            q.first_in = true;
            q.head = Some(frame[..l3 + ihl].to_vec());
            q.l3 = l3;
        }
        let fragsize = end - offset + ihl;
        q.max_size = q.max_size.max(fragsize);
        if ip.dont_frag() {
            q.max_df_size = q.max_df_size.max(fragsize);
        }
        if !(q.first_in && q.last_in && q.meat == q.len) {
            return DefragResult::Queued;
        }

        // ip_frag_reasm
        let Some(ecn_bits) = ecn_combine(q.ecn) else {
            self.remove(&key);
            return DefragResult::Failed(DefragFail::EcnMix);
        };
        let head = q.head.clone().unwrap_or_default();
        let l3 = q.l3;
        let hl = head.len() - l3;
        let len = hl + q.len;
        if len > 65535 {
            self.remove(&key);
            return DefragResult::Failed(DefragFail::Oversize);
        }
        let mut f = head;
        f.reserve(q.len);
        let mut pieces = Vec::with_capacity(q.pieces.len());
        for p in &q.pieces {
            f.extend_from_slice(&p.data);
            pieces.push(p.data.len());
        }
        let pmtu = q.max_df_size == q.max_size;
        let mut ip = Ipv4Packet::new_unchecked(&mut f[l3..]);
        ip.set_total_len(len as u16);
        ip.set_ecn(ip.ecn() | ecn_bits);
        ip.set_flags_frag_offset(if pmtu { ipv4::FLAG_DF } else { 0 });
        ip.fill_checksum();
        let frag_max_size = q.max_size.max(q.max_df_size) as u16;
        // ipq_kill: done with this key (a late duplicate starts a new queue).
        self.remove(&key);
        DefragResult::Complete(Reassembled { frame: f, frag_max_size, pmtu, pieces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An Ethernet frame carrying an IPv4 fragment of datagram `id` with
    /// `data` at byte `offset`.
    fn frag(id: u16, offset: usize, mf: bool, df: bool, tos: u8, data: &[u8]) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 8;
        let tot = 20 + data.len();
        let mut ip = [0x45, tos, (tot >> 8) as u8, tot as u8, (id >> 8) as u8, id as u8, 0, 0, 64, 17, 0, 0, 198, 51, 100, 7, 10, 0, 0, 100];
        let fo = (offset >> 3) as u16 | if mf { ipv4::FLAG_MF } else { 0 } | if df { ipv4::FLAG_DF } else { 0 };
        Ipv4Packet::new_unchecked(&mut ip[..]).set_flags_frag_offset(fo);
        f.extend_from_slice(&ip);
        f.extend_from_slice(data);
        Ipv4Packet::new_unchecked(&mut f[14..]).fill_checksum();
        f
    }

    fn bytes(n: usize, seed: u8) -> Vec<u8> {
        (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    fn complete(r: DefragResult) -> Reassembled {
        match r {
            DefragResult::Complete(r) => r,
            other => panic!("expected a datagram, got {other:?}"),
        }
    }

    #[test]
    fn out_of_order_fragments_make_the_datagram_with_the_first_header() {
        let payload = bytes(3000, 5);
        let mut d = Defrag::new();
        let user = DefragUser::LocalDeliver;
        assert_eq!(d.queue(0, &frag(7, 1480, true, false, 0, &payload[1480..2960]), 14, user), DefragResult::Queued);
        assert_eq!(d.queue(1, &frag(7, 2960, false, false, 0, &payload[2960..]), 14, user), DefragResult::Queued);
        let r = complete(d.queue(2, &frag(7, 0, true, false, 0, &payload[..1480]), 14, user));
        let mut want = frag(7, 0, false, false, 0, &payload);
        want[14 + 6] = 0;
        Ipv4Packet::new_unchecked(&mut want[14..]).fill_checksum();
        assert_eq!(r.frame, want);
        assert_eq!((r.frag_max_size, r.pmtu, r.pieces), (1500, false, vec![1480, 1480, 40]));
        assert_eq!(d.memory_bytes(), 0);
    }

    #[test]
    fn duplicates_are_dropped_overlaps_kill_the_queue() {
        let p = bytes(64, 1);
        let user = DefragUser::VsOut;
        let mut d = Defrag::new();
        assert_eq!(d.queue(0, &frag(1, 0, true, false, 0, &p[..16]), 14, user), DefragResult::Queued);
        assert_eq!(d.queue(0, &frag(1, 16, true, false, 0, &p[16..32]), 14, user), DefragResult::Queued);
        // Inside the run 0..32 (spanning both fragments): a duplicate.
        assert_eq!(d.queue(0, &frag(1, 8, true, false, 0, &p[8..24]), 14, user), DefragResult::Failed(DefragFail::Duplicate));
        // Past a gap, then one overlapping the run 0..32.
        assert_eq!(d.queue(0, &frag(1, 48, false, false, 0, &p[48..]), 14, user), DefragResult::Queued);
        assert_eq!(d.queue(0, &frag(1, 24, true, false, 0, &p[24..40]), 14, user), DefragResult::Failed(DefragFail::Overlap));
        assert!(d.is_empty());
        // The killed queue's key starts afresh.
        assert_eq!(d.queue(0, &frag(1, 32, true, false, 0, &p[32..48]), 14, user), DefragResult::Queued);
        assert_eq!(d.len(), 1);
    }

    #[test]
    fn lengths_and_ends_are_checked() {
        let p = bytes(100, 2);
        let u = DefragUser::LocalDeliver;
        let mut d = Defrag::new();
        // A non-last fragment of 7 bytes rounds down to nothing.
        assert_eq!(d.queue(0, &frag(2, 0, true, false, 0, &p[..7]), 14, u), DefragResult::Failed(DefragFail::Invalid));
        // Two different last fragments.
        d.queue(0, &frag(3, 64, false, false, 0, &p[..8]), 14, u);
        assert_eq!(d.queue(0, &frag(3, 64, false, false, 0, &p[..16]), 14, u), DefragResult::Failed(DefragFail::Invalid));
        // Data beyond a known end.
        d.queue(0, &frag(4, 16, false, false, 0, &p[..8]), 14, u);
        assert_eq!(d.queue(0, &frag(4, 24, true, false, 0, &p[..8]), 14, u), DefragResult::Failed(DefragFail::Invalid));
        // A non-last fragment's odd tail is cut to the 8-byte boundary.
        d.queue(0, &frag(5, 0, true, false, 0, &p[..13]), 14, u);
        let r = complete(d.queue(0, &frag(5, 8, false, false, 0, &p[8..20]), 14, u));
        assert_eq!(&r.frame[34..], &p[..20]);
        assert_eq!(r.pieces, vec![8, 12]);
        // More than 65535 bytes: 20 + 65536.
        let big = bytes(1480, 3);
        for i in 0..44 {
            assert_eq!(d.queue(0, &frag(6, i * 1480, true, false, 0, &big), 14, u), DefragResult::Queued);
        }
        let last = frag(6, 44 * 1480, false, false, 0, &big[..65536 - 44 * 1480]);
        assert_eq!(d.queue(0, &last, 14, u), DefragResult::Failed(DefragFail::Oversize));
        assert!(d.is_empty());
        // 20 + 65515 is the largest datagram.
        for i in 0..44 {
            d.queue(0, &frag(16, i * 1480, true, false, 0, &big), 14, u);
        }
        let r = complete(d.queue(0, &frag(16, 44 * 1480, false, false, 0, &big[..65515 - 44 * 1480]), 14, u));
        assert_eq!(r.frame.len(), 14 + 65535);
    }

    #[test]
    fn df_and_ecn_of_the_datagram() {
        let p = bytes(48, 4);
        let u = DefragUser::LocalDeliver;
        let mut d = Defrag::new();
        // DF on the largest fragment: DF on the datagram, IPSKB_FRAG_PMTU.
        d.queue(0, &frag(8, 0, true, true, 0, &p[..32]), 14, u);
        let r = complete(d.queue(0, &frag(8, 32, false, false, 0, &p[32..]), 14, u));
        assert!(r.pmtu);
        assert_eq!(Ipv4Packet::new_unchecked(&r.frame[14..]).flags_frag_offset(), ipv4::FLAG_DF);
        // DF only on a smaller one: no DF.
        d.queue(0, &frag(9, 0, true, false, 0, &p[..32]), 14, u);
        let r = complete(d.queue(0, &frag(9, 32, false, true, 0, &p[32..]), 14, u));
        assert!(!r.pmtu);
        assert_eq!(Ipv4Packet::new_unchecked(&r.frame[14..]).flags_frag_offset(), 0);
        // ECT(0) + CE: CE.
        d.queue(0, &frag(10, 0, true, false, 2, &p[..32]), 14, u);
        let r = complete(d.queue(0, &frag(10, 32, false, false, 3, &p[32..]), 14, u));
        assert_eq!(r.frame[15] & 3, 3);
        // not-ECT + ECT(0): invalid.
        d.queue(0, &frag(11, 0, true, false, 0, &p[..32]), 14, u);
        assert_eq!(d.queue(0, &frag(11, 32, false, false, 2, &p[32..]), 14, u), DefragResult::Failed(DefragFail::EcnMix));
    }

    #[test]
    fn queues_time_out_after_30_seconds_and_too_far_fragments_restart_them() {
        let p = bytes(64, 6);
        let u = DefragUser::LocalDeliver;
        let mut d = Defrag::new();
        d.queue(0, &frag(12, 0, true, false, 0, &p[..32]), 14, u);
        assert_eq!(d.expire(FRAG_TIMEOUT - 1), 0);
        assert_eq!(d.expire(FRAG_TIMEOUT), 1);
        assert!(d.is_empty());
        assert_eq!(d.memory_bytes(), 0);
        // Too late: the last fragment finds no queue and waits alone.
        assert_eq!(d.queue(FRAG_TIMEOUT, &frag(12, 32, false, false, 0, &p[32..]), 14, u), DefragResult::Queued);

        // 65 fragments of other datagrams from the same source in between.
        let mut d = Defrag::new();
        d.queue(0, &frag(13, 0, true, false, 0, &p[..32]), 14, u);
        for i in 0..65u16 {
            d.queue(0, &frag(100 + i, 8, true, false, 0, &p[..8]), 14, u);
        }
        // Reinitialised: the first fragment's data is gone.
        assert_eq!(d.queue(0, &frag(13, 32, false, false, 0, &p[32..]), 14, u), DefragResult::Queued);
        // 64 in between is not too far.
        let mut d = Defrag::new();
        d.queue(0, &frag(14, 0, true, false, 0, &p[..32]), 14, u);
        for i in 0..63u16 {
            d.queue(0, &frag(200 + i, 8, true, false, 0, &p[..8]), 14, u);
        }
        complete(d.queue(0, &frag(14, 32, false, false, 0, &p[32..]), 14, u));
    }

    #[test]
    fn a_fragment_after_completion_starts_a_new_queue() {
        let p = bytes(40, 7);
        let u = DefragUser::VsOut;
        let mut d = Defrag::new();
        d.queue(0, &frag(15, 0, true, false, 0, &p[..32]), 14, u);
        complete(d.queue(0, &frag(15, 32, false, false, 0, &p[32..]), 14, u));
        assert!(d.is_empty());
        assert_eq!(d.queue(SEC, &frag(15, 32, false, false, 0, &p[32..]), 14, u), DefragResult::Queued);
        assert_eq!(d.expire(SEC + FRAG_TIMEOUT), 1);
        assert!(d.is_empty());
    }

    #[test]
    fn no_new_queue_above_the_memory_threshold() {
        let big = bytes(1480, 8);
        let u = DefragUser::LocalDeliver;
        let mut d = Defrag::new();
        let mut id = 0u16;
        while d.memory_bytes() <= HIGH_THRESH {
            assert_eq!(d.queue(0, &frag(id, 0, true, false, 0, &big), 14, u), DefragResult::Queued);
            id += 1;
        }
        assert_eq!(d.queue(0, &frag(id, 0, true, false, 0, &big), 14, u), DefragResult::Failed(DefragFail::NoMemory));
        // Nor do existing queues, until the memory is released.
        let last = frag(id - 1, 1480, false, false, 0, &big[..8]);
        assert_eq!(d.queue(0, &last, 14, u), DefragResult::Failed(DefragFail::NoMemory));
        assert_eq!(d.expire(FRAG_TIMEOUT), id as u64);
        assert_eq!(d.memory_bytes(), 0);
        assert_eq!(d.queue(FRAG_TIMEOUT, &frag(id, 0, true, false, 0, &big), 14, u), DefragResult::Queued);
    }
}
