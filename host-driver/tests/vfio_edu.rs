//! The VFIO layer against the kernel's real VFIO: QEMU's `edu` device
//! (docs/specs/edu.rst in QEMU) behind an emulated Intel IOMMU, in a VM
//! booted by scripts/vm/vfio.sh, which binds two `edu` devices to vfio-pci
//! and runs these tests inside with their addresses:
//!
//! * `LVSNIC_EDU`: an `edu` behind a PCIe root port, alone on its bus, so
//!   the kernel offers a (bus) reset: the whole path (group, container,
//!   IOMMU mapping, BAR mapping, reset, MSI to an eventfd);
//! * `LVSNIC_EDU_NORESET`: an `edu` on the root bus, for which the kernel
//!   has no reset method: the error paths, and the lvsnic card backend
//!   refusing a device that is not an lvsnic card.
//!
//! `#[ignore]`d: they need that VM (root, an IOMMU, the devices); a run
//! without the variables fails, saying so.

use lvsnic::device::memory::{DmaMemory, DmaRegion};
use lvsnic::device::mmio::Bar;
use lvsnic::device::pci::{Bdf, Sysfs};
use lvsnic::device::rings::RingConfig;
use lvsnic::device::vfio::VfioDevice;
use lvsnic::device::vfio_pci::{
    self, wait_eventfd, EventFd, VfioError, VfioPci, EFD_NONBLOCK, PCI_COMMAND, PCI_COMMAND_MASTER, PCI_COMMAND_MEMORY,
};
use lvsnic_model::hw::Csr;
use std::time::{Duration, Instant};

// edu's BAR0 registers (QEMU docs/specs/edu.rst).
const ID: u32 = 0x00;
const LIVENESS: u32 = 0x04;
const FACTORIAL: u32 = 0x08;
const STATUS: u32 = 0x20;
const IRQ_STATUS: u32 = 0x24;
const IRQ_RAISE: u32 = 0x60;
const IRQ_ACK: u32 = 0x64;
const DMA_SRC: u32 = 0x80;
const DMA_DST: u32 = 0x88;
const DMA_COUNT: u32 = 0x90;
const DMA_CMD: u32 = 0x98;
const ID_VALUE: u32 = 0x0100_00ed;
const STATUS_COMPUTING: u32 = 0x01;
const STATUS_IRQ_FACT: u32 = 0x80;
const DMA_RUN: u32 = 0x1;
const DMA_TO_RAM: u32 = 0x2;
const DMA_IRQ: u32 = 0x4;
const IRQ_FACT: u32 = 0x001;
const IRQ_DMA: u32 = 0x100;
/// edu's DMA buffer, in the device's own address space (4 KiB).
const EDU_BUF: u64 = 0x40000;
/// Where the test maps its DMA memory: below edu's 28-bit DMA mask.
const IOVA: u64 = 0x0100_0000;
/// An interrupt that does not come within this long is not coming.
const IRQ_WAIT: Duration = Duration::from_secs(3);

fn bdf_from_env(var: &str) -> Bdf {
    let v = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: this test runs in the VM of scripts/vm/vfio.sh, which binds QEMU's edu devices to vfio-pci")
    });
    v.parse().unwrap_or_else(|e| panic!("{var}: {e}"))
}

fn open(bdf: Bdf) -> VfioPci {
    VfioPci::open(&Sysfs::default(), bdf).unwrap_or_else(|e| panic!("opening {bdf}: {e}"))
}

/// Polls `reg` until `done(value)`, at most 5 s; returns the last value.
fn poll(bar: &mut Bar, reg: u32, done: impl Fn(u32) -> bool, what: &str) -> u32 {
    let end = Instant::now() + Duration::from_secs(5);
    loop {
        let v = bar.read32(reg);
        if done(v) {
            return v;
        }
        assert!(Instant::now() < end, "{what}: register {reg:#x} still reads {v:#x} after 5 s");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One edu DMA transfer of `count` bytes (`cmd`: direction and interrupt
/// bits), waited for.
fn dma(bar: &mut Bar, src: u64, dst: u64, count: u32, cmd: u32) {
    bar.write32(DMA_SRC, src as u32);
    bar.write32(DMA_DST, dst as u32);
    bar.write32(DMA_COUNT, count);
    bar.write32(DMA_CMD, cmd | DMA_RUN);
    poll(bar, DMA_CMD, |c| c & DMA_RUN == 0, "DMA transfer");
}

fn pattern(seed: u8, n: usize) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

fn read(mem: &DmaRegion, iova: u64, n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    mem.read(iova, &mut v).unwrap();
    v
}

fn factorial(bar: &mut Bar, n: u32) -> u32 {
    bar.write32(FACTORIAL, n);
    poll(bar, STATUS, |s| s & STATUS_COMPUTING == 0, "factorial");
    bar.read32(FACTORIAL)
}

#[test]
#[ignore = "needs QEMU's edu device bound to vfio-pci: scripts/vm/vfio.sh runs it in a VM"]
fn vfio_edu_whole_path() {
    let bdf = bdf_from_env("LVSNIC_EDU");
    let t0 = Instant::now();

    // Group, container, type-1 IOMMU, device file: what sysfs says agrees
    // with what the kernel's VFIO says.
    let pci = open(bdf);
    assert_eq!((pci.pci.vendor, pci.pci.device), (0x1234, 0x11e8), "an edu device");
    assert_eq!(pci.pci.driver.as_deref(), Some("vfio-pci"));
    assert_eq!(Some(pci.group), Sysfs::default().device(bdf).unwrap().iommu_group);
    assert!(std::path::Path::new(&format!("/dev/vfio/{}", pci.group)).exists());
    let bar0 = pci.region(0);
    assert_eq!(bar0.size, 1 << 20, "edu's BAR0 is 1 MiB");
    assert_eq!(bar0.flags & 0b111, 0b111, "BAR0 readable, writable, mappable: {bar0:?}");
    assert_eq!(bar0.offset, vfio_pci::vfio_pci_index_to_offset(0));
    assert_eq!(pci.region(1).size, 0, "edu has one BAR");
    assert_eq!(pci.irq(vfio_pci::MSI).count, 1, "edu has one MSI vector");
    assert_eq!(pci.irq(vfio_pci::MSIX).count, 0, "and no MSI-X");
    assert!(pci.can_reset(), "behind its own root port the kernel offers a bus reset (flags {:#x})", pci.device_flags());

    // BAR0 mapped; memory decoding and bus mastering on.
    let mut bar = pci.map_bar(0, 4096).unwrap();
    assert_eq!(bar.len(), 1 << 20);
    let cmd = pci.enable_bus_master().unwrap();
    assert_eq!(cmd & (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER), PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER);
    assert_eq!(pci.config_read16(0).unwrap(), 0x1234, "vendor ID through the config region");

    // Identification and liveness through the mapping.
    assert_eq!(bar.read32(ID), ID_VALUE);
    for v in [0x1234_5678u32, 0, 0xFFFF_FFFF, 0xA5A5_0F0F] {
        bar.write32(LIVENESS, v);
        assert_eq!(bar.read32(LIVENESS), !v, "liveness inverts {v:#x}");
    }
    assert_eq!(bar.bad_accesses(), 0);

    // The device computes.
    assert_eq!(factorial(&mut bar, 10), 3_628_800);
    assert_eq!(factorial(&mut bar, 12), 479_001_600);
    assert_eq!(factorial(&mut bar, 0), 1);

    // Reset: the kernel resets the bus and restores config space; the
    // mapping (zapped during the reset) faults back in.
    bar.write32(LIVENESS, 0x0BAD_F00D);
    pci.reset().unwrap();
    assert_eq!(bar.read32(ID), ID_VALUE, "BAR0 answers after the reset");
    let cmd = pci.config_read16(PCI_COMMAND).unwrap();
    assert_eq!(cmd & PCI_COMMAND_MEMORY, PCI_COMMAND_MEMORY, "the kernel restored the command register ({cmd:#06x})");
    pci.enable_bus_master().unwrap();
    bar.write32(LIVENESS, 7);
    assert_eq!(bar.read32(LIVENESS), !7);

    // DMA memory in the IOMMU at an IOVA of our choosing; edu reads it
    // into its buffer and writes it back elsewhere: the bytes arrive only
    // through the IOMMU's translation of IOVA to these pages.
    let mut mem = DmaRegion::alloc(64 * 1024).unwrap();
    mem.set_iova(IOVA);
    pci.map_dma(&mem).unwrap();
    let p1 = pattern(1, 1024);
    let p2 = pattern(2, 512);
    mem.write(IOVA + 0x100, &p1).unwrap();
    mem.write(IOVA + 0x2000, &p2).unwrap();
    dma(&mut bar, IOVA + 0x100, EDU_BUF, 1024, 0);
    dma(&mut bar, IOVA + 0x2000, EDU_BUF + 0x400, 512, 0);
    dma(&mut bar, EDU_BUF, IOVA + 0x1000, 1536, DMA_TO_RAM);
    let back = read(&mem, IOVA + 0x1000, 1536);
    assert!(back[..1024] == p1[..], "RAM -> edu -> RAM at buffer offset 0 came back different");
    assert!(back[1024..] == p2[..], "RAM -> edu -> RAM at buffer offset 0x400 came back different");
    assert!(read(&mem, IOVA + 0x1000 + 1536, 16).iter().all(|&b| b == 0), "nothing written past the transfer");

    // Unmapped, the same IOVAs reach nothing: edu's write to RAM does not
    // arrive, and what it reads from RAM is not our data.
    pci.unmap_dma(&mem).unwrap();
    mem.write(IOVA + 0x5000, &[0xEE; 1024]).unwrap();
    dma(&mut bar, EDU_BUF, IOVA + 0x5000, 1024, DMA_TO_RAM);
    assert_eq!(read(&mem, IOVA + 0x5000, 1024), vec![0xEE; 1024], "edu wrote through an unmapped IOVA");
    let p3 = pattern(3, 512);
    mem.write(IOVA + 0x6000, &p3).unwrap();
    dma(&mut bar, IOVA + 0x6000, EDU_BUF + 0x800, 512, 0);
    pci.map_dma(&mem).unwrap();
    dma(&mut bar, EDU_BUF + 0x800, IOVA + 0x7000, 512, DMA_TO_RAM);
    let got = read(&mem, IOVA + 0x7000, 512);
    assert!(got != p3, "edu read our data through an unmapped IOVA");
    eprintln!("vfio_edu: from an unmapped IOVA edu's buffer received {:02x?}...", &got[..8]);
    // Mapped again, the device reaches the pages again (and its buffer
    // still holds the first transfer).
    dma(&mut bar, EDU_BUF, IOVA + 0x8000, 1024, DMA_TO_RAM);
    assert!(read(&mem, IOVA + 0x8000, 1024) == p1, "after mapping again the DMA did not arrive");

    // MSI to an eventfd.
    let efd = EventFd::new(EFD_NONBLOCK).unwrap();
    pci.enable_msi(&[&efd]).unwrap();
    assert_eq!(wait_eventfd(&efd, Duration::from_millis(100)).unwrap(), 0, "no interrupt before one is raised");
    bar.write32(IRQ_RAISE, 0x8000_0000);
    assert!(wait_eventfd(&efd, IRQ_WAIT).unwrap() >= 1, "the raised interrupt did not reach the eventfd");
    assert_eq!(bar.read32(IRQ_STATUS), 0x8000_0000);
    bar.write32(IRQ_ACK, 0x8000_0000);
    assert_eq!(bar.read32(IRQ_STATUS), 0);
    assert_eq!(wait_eventfd(&efd, Duration::from_millis(300)).unwrap(), 0, "no interrupt after the acknowledgement");
    // The DMA-completion interrupt.
    dma(&mut bar, EDU_BUF + 0x400, IOVA + 0x9000, 512, DMA_TO_RAM | DMA_IRQ);
    assert!(wait_eventfd(&efd, IRQ_WAIT).unwrap() >= 1, "the DMA-completion interrupt did not reach the eventfd");
    assert_eq!(bar.read32(IRQ_STATUS), IRQ_DMA);
    assert!(read(&mem, IOVA + 0x9000, 512) == p2);
    bar.write32(IRQ_ACK, IRQ_DMA);
    assert_eq!(bar.read32(IRQ_STATUS), 0);
    // The factorial-done interrupt.
    bar.write32(STATUS, STATUS_IRQ_FACT);
    assert_eq!(factorial(&mut bar, 5), 120);
    assert!(wait_eventfd(&efd, IRQ_WAIT).unwrap() >= 1, "the factorial interrupt did not reach the eventfd");
    assert_eq!(bar.read32(IRQ_STATUS), IRQ_FACT);
    bar.write32(IRQ_ACK, IRQ_FACT);
    bar.write32(STATUS, 0);
    assert_eq!(bar.read32(IRQ_STATUS), 0);
    pci.disable_msi().unwrap();

    // Close: unmap, drop the mapping, the device, the group, the
    // container; the group is free again.
    pci.unmap_dma(&mem).unwrap();
    drop(bar);
    drop(mem);
    drop(pci);
    let again = open(bdf);
    let mut bar = again.map_bar(0, 4096).unwrap();
    assert_eq!(bar.read32(ID), ID_VALUE, "reopened after a clean close");
    drop(bar);
    drop(again);
    eprintln!("vfio_edu: whole path on {bdf} in {} ms", t0.elapsed().as_millis());
}

#[test]
#[ignore = "needs QEMU's edu device bound to vfio-pci: scripts/vm/vfio.sh runs it in a VM"]
fn vfio_edu_errors_from_the_real_kernel() {
    let bdf = bdf_from_env("LVSNIC_EDU_NORESET");
    let pci = open(bdf);
    let mut bar = pci.map_bar(0, 4096).unwrap();
    assert_eq!(bar.read32(ID), ID_VALUE);

    // No reset method for a device on the root bus: the kernel says so in
    // the device flags, and VFIO_DEVICE_RESET answers EINVAL.
    assert_eq!(pci.device_flags() & vfio_pci::DEVICE_FLAGS_RESET, 0, "flags {:#x}", pci.device_flags());
    let e = pci.reset().unwrap_err();
    assert!(matches!(e, VfioError::NoReset { .. }), "{e}");
    eprintln!("vfio_edu: {e}");
    assert_eq!(pci.reset_unchecked().unwrap_err().raw_os_error(), Some(libc::EINVAL), "the kernel's answer to VFIO_DEVICE_RESET");

    // What the device lacks is a one-line error.
    let e = pci.map_bar(1, 4096).unwrap_err();
    assert_eq!(e.to_string(), format!("BAR1 of {bdf} cannot be used: the device has no such BAR"));
    let efd = EventFd::new(EFD_NONBLOCK).unwrap();
    let e = pci.enable_msix(&[&efd]).unwrap_err();
    assert_eq!(e.to_string(), format!("{bdf}: 1 MSI-X vectors asked for, the device has 0"));
    let e = pci.enable_msi(&[&efd, &efd]).unwrap_err();
    assert_eq!(e.to_string(), format!("{bdf}: 2 MSI vectors asked for, the device has 1"));

    // The group is ours while it is open: a second open is refused by the
    // kernel (EBUSY on /dev/vfio/<group>).
    let e = VfioPci::open(&Sysfs::default(), bdf).unwrap_err();
    assert!(matches!(e, VfioError::GroupBusy { .. }), "{e}");
    assert_eq!(
        e.to_string(),
        format!("IOMMU group {g} of {bdf} is in use by another process (/dev/vfio/{g} is busy)", g = pci.group)
    );
    drop(bar);
    drop(pci);

    // The lvsnic card backend goes the whole way through the kernel's VFIO
    // to the identity check, and refuses a device that is not a card.
    let e = VfioDevice::open(&bdf.to_string(), RingConfig::default()).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{bdf}: not an lvsnic card: ID register reads 0x010000ed, expected 0x4c56534e (\"LVSN\")")
    );
    // ... and closed it cleanly: it opens again.
    drop(open(bdf));

    // Sysfs checks against the real sysfs: a device bound to no driver
    // (the host bridge), an address with no device.
    let host_bridge: Bdf = "0000:00:00.0".parse().unwrap();
    let e = VfioPci::open(&Sysfs::default(), host_bridge).unwrap_err();
    assert!(matches!(e, VfioError::NotBound { .. }), "{e}");
    eprintln!("vfio_edu: {e}");
    let e = VfioPci::open(&Sysfs::default(), "0000:00:1e.7".parse().unwrap()).unwrap_err();
    assert!(e.to_string().starts_with("no PCI device 0000:00:1e.7: nothing at /sys/bus/pci/devices/0000:00:1e.7"), "{e}");
}
