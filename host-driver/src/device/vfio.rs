//! The `vfio` backend: a real lvsnic card through Linux VFIO, built on the
//! generic VFIO PCI layer ([`super::vfio_pci`]).
//!
//! Opening a card ([`VfioDevice::open`]):
//!
//! 1. [`VfioPci::open`]: the sysfs checks, the container, the group, the
//!    type-1 IOMMU and the device file (rust-vmm's `vfio-ioctls`);
//! 2. BAR0 mapped (at least 4 KiB: the DMA registers end at 0x900); memory
//!    decoding and bus mastering switched on in the command register;
//! 3. `ID`, `VERSION`, `CAPS0/1`, `DMA_CAPS` checked;
//! 4. DMA memory allocated (hugepages if any are free), mapped into the
//!    IOMMU at IOVA = its virtual address, the rings started.
//!
//! Interrupts: the driver polls the completion rings (the exception loop
//! is busy anyway while traffic flows); §8's `IRQ` registers and MSI-X
//! vectors 0 (receive) and 1 (transmit) are for a later event-driven loop
//! ([`VfioPci::enable_msix`] with eventfds, which the VM test exercises on
//! QEMU's `edu` device with MSI).
//!
//! Every failure a user can meet is one [`VfioError`] with one line saying
//! what to do.

use super::format;
use super::memory::DmaRegion;
use super::mmio::Bar;
use super::pci::{Bdf, Sysfs};
use super::rings::{RingConfig, RingLayout, Rings, RxFrame};
use super::{check_identity, read_counters, Device, DeviceCounters, DeviceError, Identity};
use lvsnic_model::hw::Csr;
pub use super::vfio_pci::{bar_mapping, open_error, preflight, VfioError, VfioPaths, VfioPci};

/// Bytes of BAR0 the driver needs: the DMA registers end at 0x900.
pub const BAR0_MIN: u64 = 0x1000;

/// A card opened through VFIO, rings running.
pub struct VfioDevice {
    // Field order is drop order: rings stopped and the DMA memory taken out
    // of the IOMMU (Drop), BAR unmapped, DMA memory unmapped from the
    // process, then the device, group and container closed (VfioPci).
    /// The card's PCI address.
    pub bdf: Bdf,
    /// What the identity registers read when the card was opened.
    pub identity: Identity,
    /// The receive and transmit rings (started).
    pub rings: Rings,
    bar: Bar,
    dma: DmaRegion,
    pci: VfioPci,
}

impl std::fmt::Debug for VfioDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioDevice")
            .field("bdf", &self.bdf)
            .field("identity", &self.identity)
            .field("bar", &self.bar)
            .field("dma", &self.dma)
            .finish()
    }
}

impl VfioDevice {
    /// Opens the card at `bdf` (e.g. `0000:3b:00.0`) with rings of `cfg`.
    pub fn open(bdf: &str, cfg: RingConfig) -> Result<VfioDevice, VfioError> {
        Self::open_with(&VfioPaths::default(), bdf, cfg)
    }

    /// [`open`](Self::open) with another sysfs root.
    pub fn open_with(paths: &VfioPaths, bdf: &str, cfg: RingConfig) -> Result<VfioDevice, VfioError> {
        let bdf: Bdf = bdf.parse()?;
        let pci = VfioPci::open(&Sysfs::new(&paths.sysfs), bdf)?;
        let mut bar = pci.map_bar(0, BAR0_MIN)?;
        pci.enable_bus_master()?;
        let identity = check_identity(&mut bar).map_err(|source| VfioError::Identity { bdf, source })?;

        let len = RingLayout::new(0, &cfg).len;
        let dma = DmaRegion::alloc(len).map_err(|source| VfioError::DmaAlloc { len, source })?;
        pci.map_dma(&dma)?;
        let rings = match Rings::start(&mut bar, &dma, &cfg) {
            Ok(r) => r,
            Err(source) => {
                let _ = pci.unmap_dma(&dma);
                return Err(VfioError::Rings { bdf, source });
            }
        };
        Ok(VfioDevice { bdf, identity, rings, bar, dma, pci })
    }

    /// The VFIO PCI device under the card.
    pub fn pci(&self) -> &VfioPci {
        &self.pci
    }
}

impl Drop for VfioDevice {
    /// Stops both queues, then takes the DMA memory out of the IOMMU
    /// before it is unmapped from the process.
    fn drop(&mut self) {
        self.rings.stop(&mut self.bar);
        // Best effort: if it fails the pages stay pinned until the
        // container closes, right after.
        let _ = self.pci.unmap_dma(&self.dma);
    }
}

impl Csr for VfioDevice {
    fn write32(&mut self, addr: u32, value: u32) {
        self.bar.write32(addr, value)
    }
    fn read32(&mut self, addr: u32) -> u32 {
        self.bar.read32(addr)
    }
}

impl Device for VfioDevice {
    fn backend(&self) -> &'static str {
        "vfio"
    }
    fn recv(&mut self, out: &mut Vec<RxFrame>, max: usize) -> Result<usize, DeviceError> {
        Ok(self.rings.rx.poll(&mut self.bar, &self.dma, out, max)?)
    }
    fn send(&mut self, frames: &[(&[u8], u32)]) -> Result<usize, DeviceError> {
        let n = self.rings.send(&mut self.bar, &self.dma, frames.iter().copied())?;
        self.rings.tx.reap(&mut self.bar, &self.dma)?;
        Ok(n)
    }
    fn counters(&mut self) -> DeviceCounters {
        read_counters(&mut self.bar, &self.rings)
    }
}

/// Whether `addr` is one of the DMA engine's registers (for tools that
/// dump BAR0).
pub fn is_dma_register(addr: u32) -> bool {
    (format::DMA_BASE..format::DMA_END).contains(&addr)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_registers() {
        assert!(is_dma_register(0x800) && is_dma_register(0x8BC) && !is_dma_register(0x7FC) && !is_dma_register(0x900));
        assert!(BAR0_MIN >= format::DMA_END as u64);
    }
}
