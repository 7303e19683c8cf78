//! Host-side placement of flow entries in the hardware's 2-way, 4-slot
//! bucketed cuckoo table (docs/hardware.md §4).
//!
//! The host keeps a mirror of the table. An insertion uses a free slot in
//! one of the key's two buckets, or else searches breadth-first (up to
//! [`MAX_BFS_NODES`] slots) for a chain of displacements ending in a free
//! slot, and returns the slot writes in the order that keeps every entry
//! findable at every step: the chain is shifted from its free end towards
//! the new key, so an entry is always written at its new slot before its
//! old slot is overwritten.

use super::pipeline::HwParams;
use super::tables::{FlowEntry, FlowKey};
use crate::fasthash::FastMap as HashMap;

/// Slots examined by the breadth-first search before giving up.
pub const MAX_BFS_NODES: usize = 512;

/// One slot write for the hardware (`FLOW_INDEX` + staging + `FLOW_CMD` 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotWrite {
    /// The slot to write (`FLOW_INDEX`: way, bucket, slot).
    pub index: usize,
    /// The entry to write there.
    pub entry: FlowEntry,
    /// For a displaced entry, the slot it moves from (still holding it
    /// until a later write of the same insertion overwrites it).
    pub from: Option<usize>,
}

/// Why an insertion failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PlaceError {
    /// Neither bucket has a free slot and no displacement chain was found
    /// within [`MAX_BFS_NODES`] slots.
    #[error("flow table full (no displacement chain within {MAX_BFS_NODES} slots)")]
    Full,
    /// The key is already installed.
    #[error("flow already installed")]
    Exists,
}

/// The host's mirror of the flow table.
#[derive(Clone, Debug)]
pub struct FlowPlacer {
    params: HwParams,
    slots: Vec<FlowEntry>,
    where_: HashMap<FlowKey, usize>,
}

impl FlowPlacer {
    /// An empty mirror of a flow table of `params`' size.
    pub fn new(params: HwParams) -> Self {
        FlowPlacer { params, slots: vec![FlowEntry::default(); params.flow_slots()], where_: HashMap::default() }
    }

    /// Entries installed.
    pub fn len(&self) -> usize {
        self.where_.len()
    }

    /// No entry is installed.
    pub fn is_empty(&self) -> bool {
        self.where_.is_empty()
    }

    /// Slot of an installed key.
    pub fn slot_of(&self, key: &FlowKey) -> Option<usize> {
        self.where_.get(key).copied()
    }

    /// The entry mirrored at a slot.
    pub fn entry(&self, index: usize) -> &FlowEntry {
        &self.slots[index]
    }

    /// The 8 candidate slots of a key: way 0's bucket then way 1's.
    pub fn candidates(&self, key: &FlowKey) -> [usize; 8] {
        let (h0, h1) = key.hashes();
        let mask = (1u32 << self.params.flow_buckets_log2) - 1;
        let b0 = (h0 & mask) as usize;
        let b1 = (h1 & mask) as usize;
        std::array::from_fn(|i| if i < 4 { self.params.slot_index(0, b0, i) } else { self.params.slot_index(1, b1, i - 4) })
    }

    /// Installs `entry` (valid, with its key); returns the writes to apply
    /// in order.
    pub fn insert(&mut self, entry: FlowEntry) -> Result<Vec<SlotWrite>, PlaceError> {
        let key = entry.key();
        if self.where_.contains_key(&key) {
            return Err(PlaceError::Exists);
        }
        let cands = self.candidates(&key);
        if let Some(&free) = cands.iter().find(|&&i| !self.slots[i].valid) {
            self.put(free, entry);
            return Ok(vec![SlotWrite { index: free, entry, from: None }]);
        }
        // Breadth-first search over displacements: for each slot reached,
        // remember the slot whose entry would move into it.
        let mut parent: HashMap<usize, Option<usize>> = HashMap::default();
        let mut queue = std::collections::VecDeque::new();
        for &c in &cands {
            parent.insert(c, None);
            queue.push_back(c);
        }
        let mut found = None;
        while let Some(s) = queue.pop_front() {
            if parent.len() > MAX_BFS_NODES {
                break;
            }
            // The entry in slot s can move to any slot of its other bucket.
            let e = self.slots[s];
            for alt in self.candidates(&e.key()) {
                if parent.contains_key(&alt) {
                    continue;
                }
                parent.insert(alt, Some(s));
                if !self.slots[alt].valid {
                    found = Some(alt);
                    break;
                }
                queue.push_back(alt);
            }
            if found.is_some() {
                break;
            }
        }
        let Some(free) = found else { return Err(PlaceError::Full) };
        // Walk back from the free slot: each slot takes the entry of its parent.
        let mut writes = Vec::new();
        let mut dst = free;
        while let Some(Some(src)) = parent.get(&dst).copied() {
            let moved = self.slots[src];
            self.put(dst, moved);
            writes.push(SlotWrite { index: dst, entry: moved, from: Some(src) });
            dst = src;
        }
        self.put(dst, entry);
        writes.push(SlotWrite { index: dst, entry, from: None });
        Ok(writes)
    }

    fn put(&mut self, index: usize, e: FlowEntry) {
        let old = self.slots[index];
        if old.valid && self.where_.get(&old.key()) == Some(&index) {
            self.where_.remove(&old.key());
        }
        self.slots[index] = e;
        if e.valid {
            self.where_.insert(e.key(), index);
        }
    }

    /// Replaces the entry of an installed key in place (same slot).
    pub fn update(&mut self, entry: FlowEntry) -> Option<SlotWrite> {
        let i = *self.where_.get(&entry.key())?;
        self.slots[i] = entry;
        Some(SlotWrite { index: i, entry, from: None })
    }

    /// Removes a key; returns the write that invalidates its slot.
    pub fn remove(&mut self, key: &FlowKey) -> Option<SlotWrite> {
        let i = self.where_.remove(key)?;
        self.slots[i] = FlowEntry::default();
        Some(SlotWrite { index: i, entry: FlowEntry::default(), from: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hw::pipeline::HwPipeline;
    use crate::hw::regs::*;
    use crate::hw::Csr;
    use crate::rng::SplitMix64;

    fn key(i: u64) -> FlowKey {
        FlowKey { proto: 6, saddr: 0xC612_0000 + (i as u32 >> 6), daddr: 0x0A00_0064, sport: 1024 + (i as u16 & 63), dport: 80 }
    }

    /// Filling a small table to a high load: every installed key is found by
    /// the hardware model's lookup after each insertion's writes, and the
    /// writes never make an installed key unfindable half-way through.
    #[test]
    fn cuckoo_fills_to_high_load_and_stays_consistent() {
        let params = HwParams { flow_buckets_log2: 6, ..Default::default() };
        let mut p = FlowPlacer::new(params);
        let mut hw = HwPipeline::new(params);
        let total = params.flow_slots();
        let mut installed = Vec::new();
        let mut full_at = None;
        for i in 0..total as u64 {
            let e = FlowEntry::new(key(i), (i % 100) as u16, true);
            match p.insert(e) {
                Ok(writes) => {
                    for w in writes {
                        let b = w.entry.to_bits();
                        for k in 0..4 {
                            hw.write32(FLOW_DATA + 4 * k, (b >> (32 * k)) as u32);
                        }
                        hw.write32(FLOW_INDEX, w.index as u32);
                        hw.write32(FLOW_CMD, CMD_WRITE);
                        // Every previously installed key is still found.
                        for k in &installed {
                            let (h0, h1) = FlowKey::hashes(k);
                            assert!(hw.lookup(k, h0, h1).is_some(), "lost {k:?} during insert {i}");
                        }
                    }
                    installed.push(e.key());
                }
                Err(PlaceError::Full) => {
                    full_at = Some(installed.len());
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let load = full_at.unwrap_or(total) as f64 / total as f64;
        assert!(load > 0.9, "2-way 4-slot cuckoo reaches > 90 % load, got {load}");
        for k in &installed {
            let (h0, h1) = k.hashes();
            let (idx, e) = hw.lookup(k, h0, h1).expect("installed key found");
            assert_eq!(e.key(), *k);
            assert_eq!(p.slot_of(k), Some(idx));
        }
        // Removal frees the slot for reuse.
        let mut rng = SplitMix64::new(3);
        let victim = installed[rng.below(installed.len() as u64) as usize];
        let w = p.remove(&victim).unwrap();
        assert!(!w.entry.valid);
        assert!(p.slot_of(&victim).is_none());
    }
}
