//! The `vfio` backend: a real lvsnic card through Linux VFIO.
//!
//! Opening a card ([`VfioDevice::open`]):
//!
//! 1. sysfs: the device exists, has an IOMMU group, is bound to vfio-pci,
//!    and no other member of its group is bound to a host driver;
//! 2. `/dev/vfio/vfio`: a container, API version 0, a type-1 IOMMU
//!    (`VFIO_TYPE1v2_IOMMU`, else `VFIO_TYPE1_IOMMU`);
//! 3. `/dev/vfio/<group>`: viable, attached to the container, IOMMU set;
//! 4. the device file; BAR0's region info; memory decoding and bus
//!    mastering switched on in the command register; BAR0 mapped;
//! 5. `ID`, `VERSION`, `CAPS0/1`, `DMA_CAPS` checked;
//! 6. DMA memory allocated (hugepages if any are free), mapped into the
//!    IOMMU at IOVA = its virtual address, the rings started.
//!
//! Interrupts: the driver polls the completion rings (the exception loop
//! is busy anyway while traffic flows); §8's `IRQ` registers and MSI-X
//! vectors 0 (receive) and 1 (transmit) are for a later event-driven loop
//! (`VFIO_DEVICE_SET_IRQS` with an eventfd).
//!
//! Every failure a user can meet is one [`VfioError`] with one line saying
//! what to do.

use super::format;
use super::memory::DmaRegion;
use super::mmio::Bar;
use super::pci::{Bdf, GroupMember, PciDevice, PciError, Sysfs};
use super::rings::{RingConfig, RingError, RingLayout, Rings, RxFrame};
use super::sys::{self, RegionInfo};
use super::{check_identity, read_counters, Device, DeviceCounters, DeviceError, Identity, IdentityError};
use lvsnic_model::hw::Csr;
use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Where VFIO's files are (tests use fake trees).
#[derive(Clone, Debug)]
pub struct VfioPaths {
    /// The sysfs root (`/sys`).
    pub sysfs: PathBuf,
    /// The VFIO device directory (`/dev/vfio`).
    pub dev: PathBuf,
}

impl Default for VfioPaths {
    fn default() -> Self {
        VfioPaths { sysfs: PathBuf::from("/sys"), dev: PathBuf::from("/dev/vfio") }
    }
}

/// Opening or running a card through VFIO failed.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// A sysfs lookup failed (bad address, no such device, unreadable
    /// attribute).
    #[error("{0}")]
    Pci(#[from] PciError),
    /// The device has no `iommu_group` link: no IOMMU is on.
    #[error("{bdf} has no IOMMU group: the IOMMU is off or absent (enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on or amd_iommu=on)")]
    NoIommu {
        /// The card's PCI address.
        bdf: Bdf,
    },
    /// The device is bound to another driver, or to none, instead of
    /// vfio-pci.
    #[error("{}", not_bound(.bdf, .driver.as_deref(), *.vendor, *.device))]
    NotBound {
        /// The card's PCI address.
        bdf: Bdf,
        /// The driver it is bound to (None: unbound).
        driver: Option<String>,
        /// Its PCI vendor ID (for the `new_id` command in the message).
        vendor: u16,
        /// Its PCI device ID (for the `new_id` command in the message).
        device: u16,
    },
    /// Another member of the device's IOMMU group is bound to a host
    /// driver (or the kernel says the group is not viable).
    #[error("{}", not_viable(*.group, .bdf, .blockers))]
    GroupNotViable {
        /// The IOMMU group number.
        group: u32,
        /// The card's PCI address.
        bdf: Bdf,
        /// The group members bound to host drivers (empty if only the
        /// kernel's `VFIO_GROUP_GET_STATUS` said so).
        blockers: Vec<GroupMember>,
    },
    /// `/dev/vfio/vfio` is missing: the VFIO modules are not loaded.
    #[error("no {path}: the VFIO driver is not loaded (run `modprobe vfio-pci`)")]
    NoVfio {
        /// The container path looked for.
        path: String,
    },
    /// `/dev/vfio/<group>` is missing.
    #[error("no {path}: IOMMU group {group} of {bdf} has no VFIO device file (is {bdf} bound to vfio-pci?)")]
    NoGroupFile {
        /// The group file looked for.
        path: String,
        /// The IOMMU group number.
        group: u32,
        /// The card's PCI address.
        bdf: Bdf,
    },
    /// A VFIO file could not be opened for lack of permission.
    #[error("{path}: permission denied (run as root, or `chown $USER {path}`)")]
    Permission {
        /// The file.
        path: String,
    },
    /// The group file is open in another process (`EBUSY`).
    #[error("IOMMU group {group} of {bdf} is in use by another process ({path} is busy)")]
    GroupBusy {
        /// The group file.
        path: String,
        /// The IOMMU group number.
        group: u32,
        /// The card's PCI address.
        bdf: Bdf,
    },
    /// A VFIO file could not be opened for another reason.
    #[error("{path}: {source}")]
    Open {
        /// The file.
        path: String,
        /// The error from `open(2)`.
        source: io::Error,
    },
    /// `VFIO_GET_API_VERSION` returned a version other than
    /// `VFIO_API_VERSION` (0); holds the version returned.
    #[error("VFIO API version {0} is not supported (this driver speaks version 0)")]
    ApiVersion(i32),
    /// The container supports neither `VFIO_TYPE1v2_IOMMU` nor
    /// `VFIO_TYPE1_IOMMU`.
    #[error("the VFIO container offers no type-1 IOMMU (VFIO_TYPE1v2_IOMMU or VFIO_TYPE1_IOMMU)")]
    NoType1,
    /// A VFIO ioctl failed.
    #[error("{what} failed: {source}")]
    Ioctl {
        /// The ioctl (and on what), e.g. `VFIO_SET_IOMMU`.
        what: &'static str,
        /// The error it returned.
        source: io::Error,
    },
    /// `VFIO_DEVICE_GET_INFO` does not describe a vfio-pci device with a
    /// config region.
    #[error("{bdf} is not a PCI device to vfio (VFIO_DEVICE_GET_INFO flags {flags:#x}, {regions} regions)")]
    NotPci {
        /// The card's PCI address.
        bdf: Bdf,
        /// `vfio_device_info.flags` as returned.
        flags: u32,
        /// `vfio_device_info.num_regions` as returned.
        regions: u32,
    },
    /// BAR0's region info fails the checks of [`bar0_mapping`].
    #[error("BAR0 of {bdf} cannot be used: {why}")]
    Bar0 {
        /// The card's PCI address.
        bdf: Bdf,
        /// Which check failed.
        why: String,
    },
    /// Reading or writing the PCI command register in config space failed.
    #[error("PCI config space of {bdf}: {why}")]
    Config {
        /// The card's PCI address.
        bdf: Bdf,
        /// What failed.
        why: String,
    },
    /// `mmap` of BAR0 failed.
    #[error("mapping BAR0 of {bdf} failed: {source}")]
    MapBar {
        /// The card's PCI address.
        bdf: Bdf,
        /// The error from `mmap(2)`.
        source: io::Error,
    },
    /// The `ID`/`VERSION`/`CAPS` registers do not show a supported lvsnic
    /// card.
    #[error("{bdf}: {source}")]
    Identity {
        /// The card's PCI address.
        bdf: Bdf,
        /// Which register read wrong, and its value.
        source: IdentityError,
    },
    /// The DMA memory for the rings could not be allocated.
    #[error("allocating {len} bytes of DMA memory failed: {source}")]
    DmaAlloc {
        /// Bytes asked for.
        len: usize,
        /// The error from `mmap(2)`.
        source: io::Error,
    },
    /// `VFIO_IOMMU_MAP_DMA` of the DMA memory failed.
    #[error("mapping {size} bytes of DMA memory at IOVA {iova:#x} into the IOMMU failed: {source}{}", memlock_hint(.source))]
    DmaMap {
        /// The IOVA asked for (the memory's virtual address).
        iova: u64,
        /// Bytes to map.
        size: u64,
        /// The error from the ioctl.
        source: io::Error,
    },
    /// Starting the DMA rings failed.
    #[error("{bdf}: {source}")]
    Rings {
        /// The card's PCI address.
        bdf: Bdf,
        /// What the ring start-up found wrong (capabilities, sizes, a queue
        /// that did not start).
        source: RingError,
    },
}

fn not_bound(bdf: &Bdf, driver: Option<&str>, vendor: u16, device: u16) -> String {
    let new_id = format!("echo {vendor:04x} {device:04x} > /sys/bus/pci/drivers/vfio-pci/new_id");
    match driver {
        Some(d) => format!(
            "{bdf} is bound to {d}, not vfio-pci: run `driverctl set-override {bdf} vfio-pci` (or `echo {bdf} > /sys/bus/pci/devices/{bdf}/driver/unbind; {new_id}`)"
        ),
        None => format!("{bdf} is not bound to any driver: run `{new_id}` (or `driverctl set-override {bdf} vfio-pci`)"),
    }
}

fn not_viable(group: u32, bdf: &Bdf, blockers: &[GroupMember]) -> String {
    if blockers.is_empty() {
        return format!("IOMMU group {group} of {bdf} is not viable: a device in the group is bound to a host driver (see /sys/kernel/iommu_groups/{group}/devices)");
    }
    let list: Vec<String> =
        blockers.iter().map(|m| format!("{} ({})", m.name, m.driver.as_deref().unwrap_or("?"))).collect();
    format!(
        "IOMMU group {group} of {bdf} is not viable: {} {} in the group and bound to a host driver; bind {} to vfio-pci too or unbind {}",
        list.join(", "),
        if list.len() == 1 { "is" } else { "are" },
        if list.len() == 1 { "it" } else { "them" },
        if list.len() == 1 { "it" } else { "them" },
    )
}

fn memlock_hint(e: &io::Error) -> &'static str {
    match e.raw_os_error() {
        Some(libc::ENOMEM) | Some(libc::EPERM) => " (locked-memory limit too low? raise `ulimit -l` or run as root)",
        _ => "",
    }
}

fn open_rw(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(path)
}

fn ioctl_err(what: &'static str) -> impl FnOnce(io::Error) -> VfioError {
    move |source| VfioError::Ioctl { what, source }
}

/// The checks of step 1, from sysfs alone: the device and its group's
/// members.
pub fn preflight(sysfs: &Sysfs, bdf: Bdf) -> Result<(PciDevice, u32), VfioError> {
    let dev = sysfs.device(bdf)?;
    let Some(group) = dev.iommu_group else { return Err(VfioError::NoIommu { bdf }) };
    if !dev.on_vfio() {
        return Err(VfioError::NotBound { bdf, driver: dev.driver.clone(), vendor: dev.vendor, device: dev.device });
    }
    let blockers = group_blockers(sysfs, group)?;
    if !blockers.is_empty() {
        return Err(VfioError::GroupNotViable { group, bdf, blockers });
    }
    Ok((dev, group))
}

fn group_blockers(sysfs: &Sysfs, group: u32) -> Result<Vec<GroupMember>, VfioError> {
    Ok(sysfs.group_members(group)?.into_iter().filter(GroupMember::blocks_vfio).collect())
}

/// Opens `/dev/vfio/vfio` (as a container) or `/dev/vfio/<group>`.
fn open_vfio_file(path: &Path, group: Option<(u32, Bdf)>) -> Result<File, VfioError> {
    open_rw(path).map_err(|e| open_error(path, e, group))
}

/// The error for failing to open `path` (the container when `group` is
/// None, else that group's file): missing, permission, busy, other.
pub fn open_error(path: &Path, e: io::Error, group: Option<(u32, Bdf)>) -> VfioError {
    let p = path.display().to_string();
    match (e.kind(), e.raw_os_error(), group) {
        (io::ErrorKind::NotFound, _, None) => VfioError::NoVfio { path: p },
        (io::ErrorKind::NotFound, _, Some((group, bdf))) => VfioError::NoGroupFile { path: p, group, bdf },
        (io::ErrorKind::PermissionDenied, _, _) => VfioError::Permission { path: p },
        (_, Some(libc::EBUSY), Some((group, bdf))) => VfioError::GroupBusy { path: p, group, bdf },
        _ => VfioError::Open { path: p, source: e },
    }
}

/// A VFIO container with a type-1 IOMMU chosen (not yet set).
#[derive(Debug)]
pub struct Container {
    file: File,
    iommu: u32,
}

impl Container {
    /// Opens `<dev>/vfio` and checks the API version and type-1 support.
    pub fn open(dev: &Path) -> Result<Container, VfioError> {
        let file = open_vfio_file(&dev.join("vfio"), None)?;
        let v = sys::get_api_version(file.as_fd()).map_err(ioctl_err("VFIO_GET_API_VERSION on the container"))?;
        if v != sys::VFIO_API_VERSION {
            return Err(VfioError::ApiVersion(v));
        }
        let mut iommu = 0;
        for t in [sys::VFIO_TYPE1V2_IOMMU, sys::VFIO_TYPE1_IOMMU] {
            if sys::check_extension(file.as_fd(), t).map_err(ioctl_err("VFIO_CHECK_EXTENSION"))? {
                iommu = t;
                break;
            }
        }
        if iommu == 0 {
            return Err(VfioError::NoType1);
        }
        Ok(Container { file, iommu })
    }

    /// Removes `region` from the IOMMU (best effort: closing the container
    /// removes it too).
    pub fn unmap(&self, region: &DmaRegion) {
        use super::memory::DmaMemory;
        let _ = sys::iommu_unmap_dma(self.file.as_fd(), region.base(), region.len() as u64);
    }

    /// Maps `region` into the IOMMU at its IOVA.
    pub fn map(&self, region: &DmaRegion) -> Result<(), VfioError> {
        use super::memory::DmaMemory;
        let (iova, size) = (region.base(), region.len() as u64);
        sys::iommu_map_dma(self.file.as_fd(), sys::dma_map_arg(region.vaddr(), iova, size))
            .map_err(|source| VfioError::DmaMap { iova, size, source })
    }
}

/// Checks BAR0's region info: readable, writable, mappable, at least 4 KiB
/// (the DMA registers end at 0x900), page-aligned offset. Returns the
/// offset in the device file and the length to map.
pub fn bar0_mapping(info: &RegionInfo) -> Result<(u64, usize), String> {
    let need = sys::VFIO_REGION_INFO_FLAG_READ | sys::VFIO_REGION_INFO_FLAG_WRITE | sys::VFIO_REGION_INFO_FLAG_MMAP;
    if info.flags & need != need {
        return Err(format!("region flags {:#x} lack read/write/mmap (is BAR0 an I/O port BAR?)", info.flags));
    }
    if info.size < 0x1000 {
        return Err(format!("{} bytes, the registers need 4096", info.size));
    }
    if info.offset % 4096 != 0 {
        return Err(format!("region offset {:#x} is not page aligned", info.offset));
    }
    let len = usize::try_from(info.size).map_err(|_| format!("{} bytes do not fit the address space", info.size))?;
    Ok((info.offset, len))
}

/// vfio-pci's fixed layout of the device file: region `index` at
/// `index << 40` (`VFIO_PCI_INDEX_TO_OFFSET`). The driver uses the offset
/// the kernel reports; this is for checking it.
pub const fn vfio_pci_index_to_offset(index: u32) -> u64 {
    (index as u64) << 40
}

/// `PCI_COMMAND`: offset of the command register in PCI config space
/// (the driver sets its memory and bus-master bits).
pub const PCI_COMMAND: u64 = 0x04;
/// `PCI_COMMAND_MEMORY`: the command register's Memory Space Enable bit
/// (BAR0 decoded).
pub const PCI_COMMAND_MEMORY: u16 = 1 << 1;
/// `PCI_COMMAND_MASTER`: the command register's Bus Master Enable bit
/// (the card may DMA).
pub const PCI_COMMAND_MASTER: u16 = 1 << 2;

/// The device-file offset of config-space register `reg` (`width` bytes),
/// checked against the config region's size.
pub fn config_offset(info: &RegionInfo, reg: u64, width: u64) -> Result<u64, String> {
    if reg + width > info.size {
        return Err(format!("register {reg:#x} past the {}-byte config region", info.size));
    }
    info.offset.checked_add(reg).ok_or_else(|| format!("config region offset {:#x} overflows", info.offset))
}

/// A card opened through VFIO, rings running.
pub struct VfioDevice {
    // Field order is drop order: rings stopped (Drop), BAR unmapped, DMA
    // memory unmapped from the process (the IOMMU mapping goes with the
    // container), device, group, container closed.
    /// The card's PCI address.
    pub bdf: Bdf,
    /// What the identity registers read when the card was opened.
    pub identity: Identity,
    /// The receive and transmit rings (started).
    pub rings: Rings,
    bar: Bar,
    dma: DmaRegion,
    _device: File,
    _group: File,
    _container: Container,
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

    /// [`open`](Self::open) with other sysfs and `/dev/vfio` roots.
    pub fn open_with(paths: &VfioPaths, bdf: &str, cfg: RingConfig) -> Result<VfioDevice, VfioError> {
        let bdf: Bdf = bdf.parse()?;
        let sysfs = Sysfs::new(&paths.sysfs);
        let (_dev, group) = preflight(&sysfs, bdf)?;

        let container = Container::open(&paths.dev)?;
        let group_file = open_vfio_file(&paths.dev.join(group.to_string()), Some((group, bdf)))?;
        let status = sys::group_get_status(group_file.as_fd()).map_err(ioctl_err("VFIO_GROUP_GET_STATUS"))?;
        if status.flags & sys::VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable { group, bdf, blockers: group_blockers(&sysfs, group)? });
        }
        sys::group_set_container(group_file.as_fd(), container.file.as_fd())
            .map_err(ioctl_err("VFIO_GROUP_SET_CONTAINER"))?;
        sys::set_iommu(container.file.as_fd(), container.iommu).map_err(ioctl_err("VFIO_SET_IOMMU"))?;
        let name = CString::new(bdf.to_string()).map_err(|_| VfioError::Pci(PciError::BadBdf(bdf.to_string())))?;
        let device: OwnedFd =
            sys::group_get_device_fd(group_file.as_fd(), &name).map_err(ioctl_err("VFIO_GROUP_GET_DEVICE_FD"))?;
        let device = File::from(device);

        let info = sys::device_get_info(device.as_fd()).map_err(ioctl_err("VFIO_DEVICE_GET_INFO"))?;
        if info.flags & sys::VFIO_DEVICE_FLAGS_PCI == 0 || info.num_regions <= sys::VFIO_PCI_CONFIG_REGION_INDEX {
            return Err(VfioError::NotPci { bdf, flags: info.flags, regions: info.num_regions });
        }
        let bar0 = sys::device_get_region_info(device.as_fd(), sys::VFIO_PCI_BAR0_REGION_INDEX)
            .map_err(ioctl_err("VFIO_DEVICE_GET_REGION_INFO (BAR0)"))?;
        let (bar_off, bar_len) = bar0_mapping(&bar0).map_err(|why| VfioError::Bar0 { bdf, why })?;
        let cfg_region = sys::device_get_region_info(device.as_fd(), sys::VFIO_PCI_CONFIG_REGION_INDEX)
            .map_err(ioctl_err("VFIO_DEVICE_GET_REGION_INFO (config)"))?;
        enable_dma(&device, &cfg_region).map_err(|why| VfioError::Config { bdf, why })?;
        let mut bar = Bar::map(&device, bar_off, bar_len).map_err(|source| VfioError::MapBar { bdf, source })?;

        let identity = check_identity(&mut bar).map_err(|source| VfioError::Identity { bdf, source })?;

        let len = RingLayout::new(0, &cfg).len;
        let dma = DmaRegion::alloc(len).map_err(|source| VfioError::DmaAlloc { len, source })?;
        container.map(&dma)?;
        let rings = Rings::start(&mut bar, &dma, &cfg).map_err(|source| VfioError::Rings { bdf, source })?;
        Ok(VfioDevice { bdf, identity, rings, bar, dma, _device: device, _group: group_file, _container: container })
    }
}

/// Sets memory decoding and bus mastering in the command register.
fn enable_dma(device: &File, cfg: &RegionInfo) -> Result<(), String> {
    let at = config_offset(cfg, PCI_COMMAND, 2)?;
    let mut b = [0u8; 2];
    device.read_exact_at(&mut b, at).map_err(|e| format!("reading the command register: {e}"))?;
    let cmd = u16::from_le_bytes(b) | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
    device.write_all_at(&cmd.to_le_bytes(), at).map_err(|e| format!("writing the command register: {e}"))
}

impl Drop for VfioDevice {
    /// Stops both queues, then takes the DMA memory out of the IOMMU
    /// before it is unmapped from the process.
    fn drop(&mut self) {
        self.rings.stop(&mut self.bar);
        self._container.unmap(&self.dma);
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

    fn region(flags: u32, size: u64, offset: u64) -> RegionInfo {
        RegionInfo { argsz: 32, flags, index: 0, cap_offset: 0, size, offset }
    }

    #[test]
    fn bar0_region_checks() {
        let rwm = 0b111;
        assert_eq!(bar0_mapping(&region(rwm, 0x1_0000, vfio_pci_index_to_offset(0))), Ok((0, 0x1_0000)));
        assert_eq!(bar0_mapping(&region(rwm | 8, 0x10_0000, 0x1000)), Ok((0x1000, 0x10_0000)));
        assert!(bar0_mapping(&region(0b011, 0x1_0000, 0)).unwrap_err().contains("mmap"));
        assert!(bar0_mapping(&region(rwm, 0x800, 0)).unwrap_err().contains("4096"));
        assert!(bar0_mapping(&region(rwm, 0x1000, 0x10)).unwrap_err().contains("page aligned"));
    }

    #[test]
    fn region_offsets() {
        assert_eq!(vfio_pci_index_to_offset(0), 0);
        assert_eq!(vfio_pci_index_to_offset(sys::VFIO_PCI_CONFIG_REGION_INDEX), 0x700_0000_0000);
        let cfg = region(0b011, 256, vfio_pci_index_to_offset(7));
        assert_eq!(config_offset(&cfg, PCI_COMMAND, 2), Ok(0x700_0000_0004));
        assert!(config_offset(&cfg, 0xFF, 2).is_err());
        assert!(config_offset(&region(3, 4096, 0x700_0000_0000), 0x100, 4).is_ok());
        assert!(config_offset(&region(3, 4096, u64::MAX), 4, 2).is_err());
        assert_eq!(PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER, 0x6);
    }

    #[test]
    fn open_errors_each_have_their_line() {
        let bdf: Bdf = "0000:3b:00.0".parse().unwrap();
        let g = Some((42, bdf));
        let os = io::Error::from_raw_os_error;
        let line = |e: VfioError| {
            let s = e.to_string();
            assert!(!s.contains('\n'));
            s
        };
        assert_eq!(
            line(open_error(Path::new("/dev/vfio/vfio"), os(libc::ENOENT), None)),
            "no /dev/vfio/vfio: the VFIO driver is not loaded (run `modprobe vfio-pci`)"
        );
        assert_eq!(
            line(open_error(Path::new("/dev/vfio/42"), os(libc::ENOENT), g)),
            "no /dev/vfio/42: IOMMU group 42 of 0000:3b:00.0 has no VFIO device file (is 0000:3b:00.0 bound to vfio-pci?)"
        );
        assert_eq!(
            line(open_error(Path::new("/dev/vfio/42"), os(libc::EACCES), g)),
            "/dev/vfio/42: permission denied (run as root, or `chown $USER /dev/vfio/42`)"
        );
        assert_eq!(
            line(open_error(Path::new("/dev/vfio/42"), os(libc::EBUSY), g)),
            "IOMMU group 42 of 0000:3b:00.0 is in use by another process (/dev/vfio/42 is busy)"
        );
        assert!(matches!(open_error(Path::new("/dev/vfio/vfio"), os(libc::EIO), None), VfioError::Open { .. }));
    }

    #[test]
    fn later_errors_each_have_their_line() {
        let bdf: Bdf = "0000:3b:00.0".parse().unwrap();
        let os = io::Error::from_raw_os_error;
        let cases: Vec<(VfioError, &str)> = vec![
            (VfioError::ApiVersion(1), "VFIO API version 1 is not supported (this driver speaks version 0)"),
            (VfioError::NoType1, "the VFIO container offers no type-1 IOMMU (VFIO_TYPE1v2_IOMMU or VFIO_TYPE1_IOMMU)"),
            (
                VfioError::GroupNotViable { group: 5, bdf, blockers: vec![] },
                "IOMMU group 5 of 0000:3b:00.0 is not viable: a device in the group is bound to a host driver (see /sys/kernel/iommu_groups/5/devices)",
            ),
            (
                VfioError::NotPci { bdf, flags: 4, regions: 2 },
                "0000:3b:00.0 is not a PCI device to vfio (VFIO_DEVICE_GET_INFO flags 0x4, 2 regions)",
            ),
            (
                VfioError::Bar0 { bdf, why: bar0_mapping(&region(0b011, 0x1000, 0)).unwrap_err() },
                "BAR0 of 0000:3b:00.0 cannot be used: region flags 0x3 lack read/write/mmap (is BAR0 an I/O port BAR?)",
            ),
            (
                VfioError::DmaMap { iova: 0x7f00_0000_0000, size: 0x80_0000, source: os(libc::ENOMEM) },
                "mapping 8388608 bytes of DMA memory at IOVA 0x7f0000000000 into the IOMMU failed: Cannot allocate memory (os error 12) \
                 (locked-memory limit too low? raise `ulimit -l` or run as root)",
            ),
            (
                VfioError::Identity { bdf, source: IdentityError::WrongId(0x1234_5678) },
                "0000:3b:00.0: not an lvsnic card: ID register reads 0x12345678, expected 0x4c56534e (\"LVSN\")",
            ),
            (
                VfioError::Identity { bdf, source: IdentityError::Version { major: 2, minor: 0 } },
                "0000:3b:00.0: unsupported register map version 2.0 (this driver supports 1.x)",
            ),
            (
                VfioError::Ioctl { what: "VFIO_SET_IOMMU", source: os(libc::EINVAL) },
                "VFIO_SET_IOMMU failed: Invalid argument (os error 22)",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }

    #[test]
    fn dma_registers() {
        assert!(is_dma_register(0x800) && is_dma_register(0x8BC) && !is_dma_register(0x7FC) && !is_dma_register(0x900));
    }
}
