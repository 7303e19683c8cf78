//! DMA memory: bytes both the CPU and the device access, addressed by
//! device (IO virtual) addresses.
//!
//! The ring code never holds a reference into this memory: it copies byte
//! ranges in and out through [`DmaMemory`], so a device writing while the
//! host reads can garble a copy but never violate Rust's aliasing rules.
//!
//! * [`SimMemory`]: plain memory shared by the host rings and a modelled
//!   device (the `model` and `sim` backends, tests).
//! * [`DmaRegion`]: an anonymous mapping (hugepages when available) that
//!   the VFIO backend maps into the IOMMU; the `unsafe` of this file is its
//!   volatile copy loop and the `vfio-ioctls` call that maps it
//!   ([`DmaRegion::map_into`]), whose contract is this type's.
// `unsafe` allowed here (the crate denies it): volatile copies to and from DMA memory, the IOMMU mapping of it.
#![allow(unsafe_code)]

use std::sync::{Arc, Mutex};

/// An access outside the memory (what an IOMMU fault is to a device).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("DMA access of {len} bytes at {addr:#x} is outside [{base:#x}, {end:#x})")]
pub struct MemError {
    /// The device address accessed.
    pub addr: u64,
    /// Bytes accessed.
    pub len: usize,
    /// First device address of the memory.
    pub base: u64,
    /// One past its last device address.
    pub end: u64,
}

/// Byte-range access to DMA memory at device addresses.
pub trait DmaMemory {
    /// Copies `buf.len()` bytes at device address `addr` into `buf`.
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError>;
    /// Copies `data` to device address `addr`.
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError>;
    /// First device address of the memory.
    fn base(&self) -> u64;
    /// Size in bytes.
    fn len(&self) -> usize;
    /// Whether the memory has no bytes.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Offset of `[addr, addr + len)` inside `[base, base + size)`, or the error.
pub fn range_check(base: u64, size: usize, addr: u64, len: usize) -> Result<usize, MemError> {
    let err = MemError { addr, len, base, end: base.saturating_add(size as u64) };
    let off = addr.checked_sub(base).ok_or(err)?;
    let end = off.checked_add(len as u64).ok_or(err)?;
    if end > size as u64 {
        return Err(err);
    }
    Ok(off as usize)
}

/// Plain memory at device addresses `[base, base + len)`, shared by clones
/// (the host's handle and the modelled device's).
#[derive(Clone, Debug)]
pub struct SimMemory {
    base: u64,
    bytes: Arc<Mutex<Vec<u8>>>,
}

impl SimMemory {
    /// Zeroed memory of `len` bytes at device address `base`.
    pub fn new(base: u64, len: usize) -> SimMemory {
        SimMemory { base, bytes: Arc::new(Mutex::new(vec![0; len])) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<u8>> {
        // A panic while holding the lock cannot leave the bytes invalid.
        self.bytes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl DmaMemory for SimMemory {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        let m = self.lock();
        let off = range_check(self.base, m.len(), addr, buf.len())?;
        buf.copy_from_slice(&m[off..off + buf.len()]);
        Ok(())
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let mut m = self.lock();
        let off = range_check(self.base, m.len(), addr, data.len())?;
        m[off..off + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn base(&self) -> u64 {
        self.base
    }
    fn len(&self) -> usize {
        self.lock().len()
    }
}

/// Page sizes tried for [`DmaRegion`]: 2 MiB hugepages, then 4 KiB pages.
pub const HUGEPAGE_BITS: u8 = 21;

/// Anonymous memory for DMA: what the VFIO backend maps into the IOMMU.
/// Its device address (`iova`) is chosen by the mapper
/// ([`set_iova`](DmaRegion::set_iova)); by default the virtual address
/// ("VA as IOVA", as DPDK's iova-mode=va).
pub struct DmaRegion {
    map: memmap2::MmapRaw,
    len: usize,
    iova: u64,
    huge: bool,
}

impl std::fmt::Debug for DmaRegion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DmaRegion")
            .field("vaddr", &self.vaddr())
            .field("len", &self.len)
            .field("iova", &self.iova)
            .field("huge", &self.huge)
            .finish()
    }
}

impl DmaRegion {
    /// Allocates `len` bytes (rounded up to the page size), zeroed and
    /// populated: 2 MiB hugepages if the system has free ones, else 4 KiB
    /// pages (an IOMMU needs no physical contiguity either way).
    pub fn alloc(len: usize) -> std::io::Result<DmaRegion> {
        let huge_len = round_up(len.max(1), 1 << HUGEPAGE_BITS);
        if let Ok(m) = memmap2::MmapOptions::new().len(huge_len).huge(Some(HUGEPAGE_BITS)).populate().map_anon() {
            return Ok(Self::from_map(m.into(), huge_len, true));
        }
        let small = round_up(len.max(1), 4096);
        let m = memmap2::MmapOptions::new().len(small).populate().map_anon()?;
        Ok(Self::from_map(m.into(), small, false))
    }

    fn from_map(map: memmap2::MmapRaw, len: usize, huge: bool) -> DmaRegion {
        let iova = map.as_ptr() as u64;
        DmaRegion { map, len, iova, huge }
    }

    /// The process virtual address of the region (for `VFIO_IOMMU_MAP_DMA`).
    pub fn vaddr(&self) -> u64 {
        self.map.as_ptr() as u64
    }
    /// Whether the region is backed by hugepages.
    pub fn is_huge(&self) -> bool {
        self.huge
    }
    /// Sets the device address the region is mapped at.
    pub fn set_iova(&mut self, iova: u64) {
        self.iova = iova;
    }

    /// Maps the whole region into `container`'s IOMMU at its IOVA
    /// ([`base`](DmaMemory::base)), readable and writable by the device
    /// (`VFIO_IOMMU_MAP_DMA`). The caller unmaps it
    /// (`VfioContainer::vfio_dma_unmap`) before dropping the region.
    pub fn map_into(&self, container: &vfio_ioctls::VfioContainer) -> Result<(), vfio_ioctls::VfioError> {
        // SAFETY: vfio-ioctls requires that, while mapped, the memory is
        // only accessed through raw pointers by volatile operations and
        // that no Rust reference to it exists: `DmaRegion` never hands out
        // a reference into `self.map` (every access is the volatile
        // by-value copy of `read`/`write` below), and the mapping lives
        // until `self` is dropped, after its owner unmapped it
        // (`VfioPci::unmap_dma`; if the owner fails to, the kernel keeps
        // the pages pinned until the container closes, never freed under
        // the device).
        unsafe { container.vfio_dma_map(self.iova, self.len, self.map.as_mut_ptr()) }
    }
}

/// `v` rounded up to a multiple of the power of two `align`.
pub fn round_up(v: usize, align: usize) -> usize {
    (v + align - 1) & !(align - 1)
}

impl DmaMemory for DmaRegion {
    fn read(&self, addr: u64, buf: &mut [u8]) -> Result<(), MemError> {
        let off = range_check(self.iova, self.len, addr, buf.len())?;
        let src = self.map.as_ptr();
        for (i, b) in buf.iter_mut().enumerate() {
            // SAFETY: `off + i < off + buf.len() <= self.len` (range_check),
            // and `self.map` is a live mapping of `self.len` readable bytes
            // for as long as `self` exists. The read is volatile and by
            // value: the device may write these bytes concurrently, so no
            // reference to them is ever formed.
            *b = unsafe { std::ptr::read_volatile(src.add(off + i)) };
        }
        Ok(())
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<(), MemError> {
        let off = range_check(self.iova, self.len, addr, data.len())?;
        let dst = self.map.as_mut_ptr();
        for (i, b) in data.iter().enumerate() {
            // SAFETY: in bounds as above; the mapping is writable
            // (anonymous, PROT_READ|PROT_WRITE); a volatile by-value store
            // to memory no Rust reference points into.
            unsafe { std::ptr::write_volatile(dst.add(off + i), *b) };
        }
        Ok(())
    }
    fn base(&self) -> u64 {
        self.iova
    }
    fn len(&self) -> usize {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_check_rejects_everything_outside() {
        assert_eq!(range_check(0x1000, 0x100, 0x1000, 0x100), Ok(0));
        assert_eq!(range_check(0x1000, 0x100, 0x10FF, 1), Ok(0xFF));
        assert!(range_check(0x1000, 0x100, 0x10FF, 2).is_err());
        assert!(range_check(0x1000, 0x100, 0xFFF, 1).is_err());
        assert!(range_check(0x1000, 0x100, u64::MAX, 2).is_err());
        assert!(range_check(0x1000, 0x100, 0x1100, 0).is_ok());
        let e = range_check(0x1000, 0x100, 0x2000, 4).unwrap_err();
        assert_eq!(e.to_string(), "DMA access of 4 bytes at 0x2000 is outside [0x1000, 0x1100)");
    }

    #[test]
    fn sim_memory_is_shared_and_bounded() {
        let a = SimMemory::new(0x10_0000, 64);
        let b = a.clone();
        a.write(0x10_0004, &[1, 2, 3]).unwrap();
        let mut x = [0u8; 4];
        b.read(0x10_0003, &mut x).unwrap();
        assert_eq!(x, [0, 1, 2, 3]);
        assert!(b.read(0x10_003E, &mut x).is_err());
        assert!(a.write(0x0F_FFFF, &[0]).is_err());
    }

    #[test]
    fn dma_region_round_trips_and_is_bounded() {
        let mut r = DmaRegion::alloc(10_000).unwrap();
        assert!(r.len() >= 10_000);
        assert_eq!(r.base(), r.vaddr());
        r.set_iova(0x4000_0000);
        r.write(0x4000_0000 + 9_000, b"hello").unwrap();
        let mut x = [0u8; 7];
        r.read(0x4000_0000 + 8_999, &mut x).unwrap();
        assert_eq!(&x, b"\0hello\0");
        assert!(r.read(0x3FFF_FFFF, &mut x).is_err());
        assert!(r.write(0x4000_0000 + r.len() as u64 - 2, b"abc").is_err());
    }
}
