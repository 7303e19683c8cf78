//! BAR0 registers of a real card: a mapping of the BAR (through the VFIO
//! device file) and 32-bit volatile reads and writes on it. The two
//! `unsafe` blocks of this file are the whole MMIO edge of the driver.
//!
//! Accesses are bounds- and alignment-checked: an address outside the BAR
//! or not 4-byte aligned is never dereferenced (reads return 0xFFFFFFFF,
//! what PCIe returns for an unsupported request; writes are dropped) and
//! is counted in [`Bar::bad_accesses`].
// `unsafe` allowed here (the crate denies it): volatile loads and stores to the mapped BAR.
#![allow(unsafe_code)]

use lvsnic_model::hw::Csr;
use std::os::fd::AsRawFd;

/// A mapped BAR.
pub struct Bar {
    map: memmap2::MmapRaw,
    len: usize,
    bad: u64,
}

impl std::fmt::Debug for Bar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Bar").field("len", &self.len).field("bad_accesses", &self.bad).finish()
    }
}

impl Bar {
    /// Maps `len` bytes of `file` at `offset` (for VFIO: the device file at
    /// the region's offset), shared, read-write. The mapping holds its own
    /// reference to the file: drop the `Bar` before closing the device, or
    /// the device stays open.
    pub fn map<F: AsRawFd>(file: &F, offset: u64, len: usize) -> std::io::Result<Bar> {
        let map = memmap2::MmapOptions::new().offset(offset).len(len).map_raw(file)?;
        Ok(Bar { map, len, bad: 0 })
    }

    /// Mapped bytes.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the mapping has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Accesses refused for being outside the BAR or misaligned.
    pub fn bad_accesses(&self) -> u64 {
        self.bad
    }

    fn offset(&mut self, addr: u32) -> Option<usize> {
        let a = addr as usize;
        if a % 4 == 0 && a + 4 <= self.len {
            Some(a)
        } else {
            self.bad += 1;
            None
        }
    }
}

impl Csr for Bar {
    fn write32(&mut self, addr: u32, value: u32) {
        let Some(off) = self.offset(addr) else { return };
        // SAFETY: `off + 4 <= self.len` and `off` is 4-aligned (checked by
        // `offset`); the mapping is page-aligned, so the pointer is aligned
        // for u32, and it stays mapped while `self` lives. MMIO is never
        // referenced, only accessed by volatile value.
        unsafe { std::ptr::write_volatile(self.map.as_mut_ptr().add(off).cast::<u32>(), value.to_le()) }
    }

    fn read32(&mut self, addr: u32) -> u32 {
        let Some(off) = self.offset(addr) else { return 0xFFFF_FFFF };
        // SAFETY: as in `write32`.
        u32::from_le(unsafe { std::ptr::read_volatile(self.map.as_ptr().add(off).cast::<u32>()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, Write};

    /// A regular file stands in for the device file: same mapping, same
    /// accesses, little-endian registers.
    #[test]
    fn bar_over_a_file_reads_and_writes_little_endian_registers() {
        let p = std::env::temp_dir().join(format!("lvsnic-bar-{}", std::process::id()));
        let mut f = std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(&p).unwrap();
        let mut img = vec![0u8; 8192];
        img[4096..4100].copy_from_slice(&0x4C56_534Eu32.to_le_bytes());
        f.write_all(&img).unwrap();
        let mut bar = Bar::map(&f, 4096, 4096).unwrap();
        assert_eq!(bar.read32(0), 0x4C56_534E);
        bar.write32(0x840, 0x1234_5678);
        assert_eq!(bar.read32(0x840), 0x1234_5678);
        assert_eq!(bar.read32(0x1000), 0xFFFF_FFFF, "past the end");
        assert_eq!(bar.read32(0x842), 0xFFFF_FFFF, "misaligned");
        bar.write32(0xFFFF_FFFC, 1);
        assert_eq!(bar.bad_accesses(), 3);
        drop(bar);
        let mut back = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut back).unwrap();
        assert_eq!(&back[4096 + 0x840..4096 + 0x844], &[0x78, 0x56, 0x34, 0x12]);
        let _ = std::fs::remove_file(&p);
    }
}
