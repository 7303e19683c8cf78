//! A PCI device through Linux VFIO, whatever the device: the layer the
//! lvsnic card backend ([`super::vfio`]) is built on, and what
//! `tests/vfio_edu.rs` drives against QEMU's `edu` device in a VM
//! (scripts/vm/vfio.sh).
//!
//! Opening ([`VfioPci::open`]):
//!
//! 1. sysfs ([`preflight`]): the device exists, has an IOMMU group, is bound
//!    to vfio-pci, and no other member of its group is bound to a host
//!    driver; each a one-line [`VfioError`] saying what to do;
//! 2. rust-vmm's `vfio-ioctls`: the container (`/dev/vfio/vfio`, API
//!    version 0, `VFIO_TYPE1v2_IOMMU`), the group (`/dev/vfio/<group>`,
//!    viable, attached, IOMMU set), the device file, its region and
//!    interrupt infos;
//! 3. `VFIO_DEVICE_GET_INFO`'s flags ourselves ([`super::sys`]: the crate
//!    keeps them private), for [`VfioPci::reset`].
//!
//! Then: BAR region info and mapping ([`VfioPci::map_bar`]), the command
//! register ([`VfioPci::enable_bus_master`]), DMA memory in the IOMMU
//! ([`VfioPci::map_dma`], [`VfioPci::unmap_dma`]), reset, and MSI/MSI-X
//! delivered to eventfds ([`VfioPci::enable_msi`], [`VfioPci::enable_msix`]).
//!
//! Closing is dropping: whoever holds a [`Bar`] or mapped DMA memory drops
//! the `Bar` and unmaps the memory first (the lvsnic backend's field order
//! and `Drop` do); then the device file, the group (detached from the
//! container) and the container close.

use super::memory::{DmaMemory, DmaRegion};
use super::mmio::Bar;
use super::pci::{Bdf, GroupMember, PciDevice, PciError, Sysfs};
use super::rings::RingError;
use super::{sys, IdentityError};
use std::io;
use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use vfio_bindings::bindings::vfio as abi;
pub use vmm_sys_util::eventfd::{EventFd, EFD_NONBLOCK};

/// Opening or running a device (an lvsnic card or any other) through VFIO
/// failed.
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
    /// `VFIO_API_VERSION` (0).
    #[error("the kernel's VFIO API version is not 0, the only one this driver speaks")]
    ApiVersion,
    /// The container does not offer `VFIO_TYPE1v2_IOMMU` (the IOMMU model
    /// vfio-ioctls sets; every kernel since 3.x has it).
    #[error("the VFIO container offers no type-1 v2 IOMMU (VFIO_TYPE1v2_IOMMU)")]
    NoType1,
    /// A VFIO ioctl failed.
    #[error("{what} failed: {source}")]
    Ioctl {
        /// The ioctl (and on what), e.g. `VFIO_SET_IOMMU`.
        what: &'static str,
        /// The error it returned.
        source: io::Error,
    },
    /// A VFIO step of vfio-ioctls failed with an error that carries no
    /// errno (group status, attaching the group to the container, ...).
    #[error("{bdf}: {source}")]
    Vfio {
        /// The device's PCI address.
        bdf: Bdf,
        /// The error vfio-ioctls returned.
        source: vfio_ioctls::VfioError,
    },
    /// `VFIO_DEVICE_GET_INFO` does not describe a vfio-pci device with a
    /// config region and the INTx/MSI/MSI-X interrupt indices.
    #[error("{bdf} is not a PCI device to vfio (VFIO_DEVICE_GET_INFO: not a vfio-pci device, or too few regions or interrupt indices)")]
    NotPci {
        /// The device's PCI address.
        bdf: Bdf,
    },
    /// A BAR's region info fails the checks of [`bar_mapping`].
    #[error("BAR{index} of {bdf} cannot be used: {why}")]
    Bar {
        /// The device's PCI address.
        bdf: Bdf,
        /// The BAR (0-5).
        index: u32,
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
    /// `mmap` of a BAR failed.
    #[error("mapping BAR{index} of {bdf} failed: {source}")]
    MapBar {
        /// The device's PCI address.
        bdf: Bdf,
        /// The BAR (0-5).
        index: u32,
        /// The error from `mmap(2)`.
        source: io::Error,
    },
    /// The kernel offers no reset for the device: `VFIO_DEVICE_GET_INFO`
    /// lacks `VFIO_DEVICE_FLAGS_RESET` (no FLR, no PM reset, and not
    /// alone on a bus or slot that can be reset).
    #[error("{bdf} cannot be reset: the kernel offers no reset method for it (no function-level, power-management, slot or bus reset; see /sys/bus/pci/devices/{bdf}/reset_method)")]
    NoReset {
        /// The device's PCI address.
        bdf: Bdf,
    },
    /// Enabling or disabling MSI/MSI-X (`VFIO_DEVICE_SET_IRQS`) failed.
    #[error("{bdf}: {what} failed ({source})")]
    Irq {
        /// The device's PCI address.
        bdf: Bdf,
        /// What was asked, e.g. `enabling MSI with 1 eventfd`.
        what: String,
        /// The error vfio-ioctls returned.
        source: vfio_ioctls::VfioError,
    },
    /// The device does not have the interrupts asked for.
    #[error("{bdf}: {why}")]
    NoIrq {
        /// The device's PCI address.
        bdf: Bdf,
        /// What is missing.
        why: String,
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
    /// `VFIO_IOMMU_UNMAP_DMA` failed or unmapped another size.
    #[error("unmapping {size} bytes at IOVA {iova:#x} from the IOMMU failed: {source}")]
    DmaUnmap {
        /// The IOVA.
        iova: u64,
        /// Bytes to unmap.
        size: u64,
        /// The error vfio-ioctls returned.
        source: vfio_ioctls::VfioError,
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

/// Where vfio-ioctls opens the container (fixed in the crate).
pub const CONTAINER_PATH: &str = "/dev/vfio/vfio";

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

fn errno(e: &vmm_sys_util::errno::Error) -> io::Error {
    io::Error::from_raw_os_error(e.errno())
}

/// One of our errors for an error of vfio-ioctls while opening `bdf`
/// (group `group`): the open errors and those that carry an errno get
/// their own line, the rest say what vfio-ioctls said.
pub fn crate_error(e: vfio_ioctls::VfioError, bdf: Bdf, group: u32) -> VfioError {
    use vfio_ioctls::VfioError as E;
    match e {
        E::OpenContainer(io) => open_error(Path::new(CONTAINER_PATH), io, None),
        E::OpenGroup(io, _) => open_error(&Path::new("/dev/vfio").join(group.to_string()), io, Some((group, bdf))),
        E::GroupViable => VfioError::GroupNotViable { group, bdf, blockers: vec![] },
        E::VfioApiVersion => VfioError::ApiVersion,
        E::VfioExtension | E::VfioType1V2 => VfioError::NoType1,
        E::ContainerSetIOMMU(s) => VfioError::Ioctl { what: "VFIO_SET_IOMMU", source: errno(&s) },
        E::GroupGetDeviceFD(s) => VfioError::Ioctl { what: "VFIO_GROUP_GET_DEVICE_FD", source: errno(&s) },
        E::VfioDeviceGetInfo(s) => VfioError::Ioctl { what: "VFIO_DEVICE_GET_INFO", source: errno(&s) },
        E::VfioDeviceGetRegionInfo(s) => VfioError::Ioctl { what: "VFIO_DEVICE_GET_REGION_INFO", source: errno(&s) },
        E::VfioDeviceGetInfoPCI | E::VfioDeviceGetInfoOther => VfioError::NotPci { bdf },
        other => VfioError::Vfio { bdf, source: other },
    }
}

/// Checks a BAR's region info: readable, writable, mappable, at least
/// `min` bytes, page-aligned offset. Returns the offset in the device file
/// and the length to map.
pub fn bar_mapping(info: &RegionInfo, min: u64) -> Result<(u64, usize), String> {
    let need = abi::VFIO_REGION_INFO_FLAG_READ | abi::VFIO_REGION_INFO_FLAG_WRITE | abi::VFIO_REGION_INFO_FLAG_MMAP;
    if info.size == 0 {
        return Err("the device has no such BAR".into());
    }
    if info.flags & need != need {
        return Err(format!("region flags {:#x} lack read/write/mmap (an I/O port BAR?)", info.flags));
    }
    if info.size < min {
        return Err(format!("{} bytes, the registers need {min}", info.size));
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

/// `PCI_COMMAND`: offset of the command register in PCI config space.
pub const PCI_COMMAND: u64 = 0x04;
/// `PCI_COMMAND_MEMORY`: the command register's Memory Space Enable bit
/// (BARs decoded).
pub const PCI_COMMAND_MEMORY: u16 = 1 << 1;
/// `PCI_COMMAND_MASTER`: the command register's Bus Master Enable bit
/// (the device may DMA and send MSIs).
pub const PCI_COMMAND_MASTER: u16 = 1 << 2;

/// The device-file offset of config-space register `reg` (`width` bytes),
/// checked against the config region's size.
pub fn config_offset(info: &RegionInfo, reg: u64, width: u64) -> Result<u64, String> {
    if reg + width > info.size {
        return Err(format!("register {reg:#x} past the {}-byte config region", info.size));
    }
    info.offset.checked_add(reg).ok_or_else(|| format!("config region offset {:#x} overflows", info.offset))
}

/// What `VFIO_DEVICE_GET_REGION_INFO` said about a region.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionInfo {
    /// `VFIO_REGION_INFO_FLAG_*` (read, write, mmap, caps).
    pub flags: u32,
    /// Size in bytes (0: the device has no such region).
    pub size: u64,
    /// Where the region starts in the device file.
    pub offset: u64,
}

/// What `VFIO_DEVICE_GET_IRQ_INFO` said about an interrupt index.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqInfo {
    /// `VFIO_IRQ_INFO_*` (eventfd, maskable, automasked, noresize).
    pub flags: u32,
    /// How many vectors the index has (0: none).
    pub count: u32,
}

/// `VFIO_PCI_INTX_IRQ_INDEX`: the legacy interrupt.
pub const INTX: u32 = abi::VFIO_PCI_INTX_IRQ_INDEX;
/// `VFIO_PCI_MSI_IRQ_INDEX`: MSI.
pub const MSI: u32 = abi::VFIO_PCI_MSI_IRQ_INDEX;
/// `VFIO_PCI_MSIX_IRQ_INDEX`: MSI-X.
pub const MSIX: u32 = abi::VFIO_PCI_MSIX_IRQ_INDEX;
/// `VFIO_PCI_CONFIG_REGION_INDEX`: PCI config space.
pub const CONFIG_REGION: u32 = abi::VFIO_PCI_CONFIG_REGION_INDEX;
/// `VFIO_DEVICE_FLAGS_RESET` in the device info flags.
pub const DEVICE_FLAGS_RESET: u32 = abi::VFIO_DEVICE_FLAGS_RESET;
/// `VFIO_DEVICE_FLAGS_PCI` in the device info flags.
pub const DEVICE_FLAGS_PCI: u32 = abi::VFIO_DEVICE_FLAGS_PCI;

/// A PCI device opened through VFIO.
pub struct VfioPci {
    /// Its PCI address.
    pub bdf: Bdf,
    /// What sysfs said about it when it was opened.
    pub pci: PciDevice,
    /// Its IOMMU group.
    pub group: u32,
    flags: u32,
    // Drop order: the device (closing its file and detaching the group
    // from the container), then the container.
    device: vfio_ioctls::VfioDevice,
    container: Arc<vfio_ioctls::VfioContainer>,
}

impl std::fmt::Debug for VfioPci {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VfioPci").field("bdf", &self.bdf).field("group", &self.group).field("flags", &self.flags).finish()
    }
}

impl VfioPci {
    /// Opens the device at `bdf` under the sysfs tree `sysfs` (`/sys`, or
    /// a fake tree in tests; the VFIO files are always `/dev/vfio/*`,
    /// where vfio-ioctls opens them).
    pub fn open(sysfs: &Sysfs, bdf: Bdf) -> Result<VfioPci, VfioError> {
        let (pci, group) = preflight(sysfs, bdf)?;
        let container = vfio_ioctls::VfioContainer::new(None).map_err(|e| crate_error(e, bdf, group))?;
        let container = Arc::new(container);
        let device = vfio_ioctls::VfioDevice::new(&sysfs.device_dir(bdf), container.clone(), false).map_err(|e| {
            match crate_error(e, bdf, group) {
                VfioError::GroupNotViable { group, bdf, .. } => match group_blockers(sysfs, group) {
                    Ok(blockers) => VfioError::GroupNotViable { group, bdf, blockers },
                    Err(e) => e,
                },
                e => e,
            }
        })?;
        let info = sys::device_get_info(sys::borrow_fd(&device)).map_err(|source| VfioError::Ioctl { what: "VFIO_DEVICE_GET_INFO", source })?;
        if info.flags & DEVICE_FLAGS_PCI == 0 || info.num_regions <= CONFIG_REGION {
            return Err(VfioError::NotPci { bdf });
        }
        Ok(VfioPci { bdf, pci, group, flags: info.flags, device, container })
    }

    /// `VFIO_DEVICE_GET_INFO`'s flags (`VFIO_DEVICE_FLAGS_*`).
    pub fn device_flags(&self) -> u32 {
        self.flags
    }

    /// Region `index` (`VFIO_PCI_BAR0_REGION_INDEX` .. config, VGA) as the
    /// kernel described it at open.
    pub fn region(&self, index: u32) -> RegionInfo {
        RegionInfo {
            flags: self.device.get_region_flags(index),
            size: self.device.get_region_size(index),
            offset: self.device.get_region_offset(index),
        }
    }

    /// Interrupt index `index` ([`INTX`], [`MSI`], [`MSIX`]) as the kernel
    /// described it at open (count 0: none).
    pub fn irq(&self, index: u32) -> IrqInfo {
        self.device.get_irq_info(index).map(|i| IrqInfo { flags: i.flags, count: i.count }).unwrap_or_default()
    }

    /// Maps BAR `index` (at least `min` bytes) for 32-bit register access.
    /// Drop the [`Bar`] before `self`.
    pub fn map_bar(&self, index: u32, min: u64) -> Result<Bar, VfioError> {
        let bdf = self.bdf;
        if index > 5 {
            return Err(VfioError::Bar { bdf, index, why: "BARs are numbered 0 to 5".into() });
        }
        let (off, len) = bar_mapping(&self.region(index), min).map_err(|why| VfioError::Bar { bdf, index, why })?;
        Bar::map(&self.device, off, len).map_err(|source| VfioError::MapBar { bdf, index, source })
    }

    /// A second descriptor of the device file, for positioned reads and
    /// writes that report their errors (the crate's `region_read` and
    /// `region_write` only log them); closed when dropped.
    fn config_file(&self) -> Result<std::fs::File, VfioError> {
        let fd = sys::borrow_fd(&self.device)
            .try_clone_to_owned()
            .map_err(|e| VfioError::Config { bdf: self.bdf, why: format!("duplicating the device descriptor: {e}") })?;
        Ok(std::fs::File::from(fd))
    }

    /// Reads a 16-bit register of PCI config space.
    pub fn config_read16(&self, reg: u64) -> Result<u16, VfioError> {
        let bdf = self.bdf;
        let at = config_offset(&self.region(CONFIG_REGION), reg, 2).map_err(|why| VfioError::Config { bdf, why })?;
        let mut b = [0u8; 2];
        self.config_file()?.read_exact_at(&mut b, at).map_err(|e| VfioError::Config { bdf, why: format!("reading {reg:#x}: {e}") })?;
        Ok(u16::from_le_bytes(b))
    }

    /// Writes a 16-bit register of PCI config space.
    pub fn config_write16(&self, reg: u64, value: u16) -> Result<(), VfioError> {
        let bdf = self.bdf;
        let at = config_offset(&self.region(CONFIG_REGION), reg, 2).map_err(|why| VfioError::Config { bdf, why })?;
        self.config_file()?
            .write_all_at(&value.to_le_bytes(), at)
            .map_err(|e| VfioError::Config { bdf, why: format!("writing {reg:#x}: {e}") })
    }

    /// Sets memory decoding and bus mastering in the command register and
    /// reads it back; returns the register.
    pub fn enable_bus_master(&self) -> Result<u16, VfioError> {
        let cmd = self.config_read16(PCI_COMMAND)?;
        self.config_write16(PCI_COMMAND, cmd | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER)?;
        let back = self.config_read16(PCI_COMMAND)?;
        if back & (PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER) != PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER {
            return Err(VfioError::Config { bdf: self.bdf, why: format!("the command register reads {back:#06x} after setting memory and bus-master enable") });
        }
        Ok(back)
    }

    /// Maps `region` into the IOMMU at its IOVA ([`DmaRegion::set_iova`];
    /// by default its virtual address). Unmap it ([`unmap_dma`](Self::unmap_dma))
    /// before dropping it.
    pub fn map_dma(&self, region: &DmaRegion) -> Result<(), VfioError> {
        let (iova, size) = (region.base(), region.len() as u64);
        region.map_into(&self.container).map_err(|e| VfioError::DmaMap {
            iova,
            size,
            source: match e {
                vfio_ioctls::VfioError::IommuDmaMap(s) => errno(&s),
                other => io::Error::other(other.to_string()),
            },
        })
    }

    /// Removes `region` from the IOMMU (`VFIO_IOMMU_UNMAP_DMA`); the device
    /// can no longer reach it.
    pub fn unmap_dma(&self, region: &DmaRegion) -> Result<(), VfioError> {
        let (iova, size) = (region.base(), region.len());
        self.container.vfio_dma_unmap(iova, size).map_err(|source| VfioError::DmaUnmap { iova, size: size as u64, source })
    }

    /// Whether the kernel offers a reset for the device.
    pub fn can_reset(&self) -> bool {
        self.flags & DEVICE_FLAGS_RESET != 0
    }

    /// Resets the device (`VFIO_DEVICE_RESET`; the kernel saves and
    /// restores its config space around the reset). [`VfioError::NoReset`]
    /// if the kernel offers none.
    pub fn reset(&self) -> Result<(), VfioError> {
        if !self.can_reset() {
            return Err(VfioError::NoReset { bdf: self.bdf });
        }
        sys::device_reset(sys::borrow_fd(&self.device)).map_err(|source| VfioError::Ioctl { what: "VFIO_DEVICE_RESET", source })
    }

    /// `VFIO_DEVICE_RESET` even when the kernel says it offers none, for
    /// showing what it answers (`EINVAL`).
    pub fn reset_unchecked(&self) -> io::Result<()> {
        sys::device_reset(sys::borrow_fd(&self.device))
    }

    fn enable(&self, index: u32, name: &str, fds: &[&EventFd]) -> Result<(), VfioError> {
        let bdf = self.bdf;
        let have = self.irq(index).count as usize;
        if fds.is_empty() || have < fds.len() {
            return Err(VfioError::NoIrq { bdf, why: format!("{} {name} vectors asked for, the device has {have}", fds.len()) });
        }
        let r = if index == MSI { self.device.enable_msi(fds.to_vec()) } else { self.device.enable_msix(fds.to_vec()) };
        r.map_err(|source| VfioError::Irq { bdf, what: format!("enabling {name} with {} eventfds (VFIO_DEVICE_SET_IRQS)", fds.len()), source })
    }

    /// Enables MSI: vector `i` signals `fds[i]` (`VFIO_DEVICE_SET_IRQS`).
    pub fn enable_msi(&self, fds: &[&EventFd]) -> Result<(), VfioError> {
        self.enable(MSI, "MSI", fds)
    }

    /// Enables MSI-X: vector `i` signals `fds[i]`.
    pub fn enable_msix(&self, fds: &[&EventFd]) -> Result<(), VfioError> {
        self.enable(MSIX, "MSI-X", fds)
    }

    /// Disables MSI.
    pub fn disable_msi(&self) -> Result<(), VfioError> {
        let bdf = self.bdf;
        self.device.disable_msi().map_err(|source| VfioError::Irq { bdf, what: "disabling MSI".into(), source })
    }

    /// Disables MSI-X.
    pub fn disable_msix(&self) -> Result<(), VfioError> {
        let bdf = self.bdf;
        self.device.disable_msix().map_err(|source| VfioError::Irq { bdf, what: "disabling MSI-X".into(), source })
    }
}

/// Waits up to `timeout` for `efd` (made with [`EFD_NONBLOCK`]) to be
/// signalled; returns its count (how many interrupts arrived since the
/// last read), 0 if none arrived in time.
pub fn wait_eventfd(efd: &EventFd, timeout: Duration) -> io::Result<u64> {
    let end = Instant::now() + timeout;
    loop {
        match efd.read() {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if Instant::now() >= end {
                    return Ok(0);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The sysfs root the VFIO layer reads (`/sys`; tests use fake trees).
#[derive(Clone, Debug)]
pub struct VfioPaths {
    /// The sysfs root (`/sys`).
    pub sysfs: PathBuf,
}

impl Default for VfioPaths {
    fn default() -> Self {
        VfioPaths { sysfs: PathBuf::from("/sys") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(flags: u32, size: u64, offset: u64) -> RegionInfo {
        RegionInfo { flags, size, offset }
    }

    #[test]
    fn bar_region_checks() {
        let rwm = 0b111;
        assert_eq!(bar_mapping(&region(rwm, 0x1_0000, vfio_pci_index_to_offset(0)), 4096), Ok((0, 0x1_0000)));
        assert_eq!(bar_mapping(&region(rwm | 8, 0x10_0000, 0x1000), 4096), Ok((0x1000, 0x10_0000)));
        assert!(bar_mapping(&region(0b011, 0x1_0000, 0), 4096).unwrap_err().contains("mmap"));
        assert!(bar_mapping(&region(rwm, 0x800, 0), 4096).unwrap_err().contains("4096"));
        assert!(bar_mapping(&region(rwm, 0x1000, 0x10), 4096).unwrap_err().contains("page aligned"));
        assert_eq!(bar_mapping(&region(0, 0, 0), 4096).unwrap_err(), "the device has no such BAR");
        assert_eq!((abi::VFIO_REGION_INFO_FLAG_READ, abi::VFIO_REGION_INFO_FLAG_WRITE, abi::VFIO_REGION_INFO_FLAG_MMAP), (1, 2, 4));
    }

    #[test]
    fn region_offsets() {
        assert_eq!(vfio_pci_index_to_offset(0), 0);
        assert_eq!(vfio_pci_index_to_offset(CONFIG_REGION), 0x700_0000_0000);
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
            (VfioError::ApiVersion, "the kernel's VFIO API version is not 0, the only one this driver speaks"),
            (VfioError::NoType1, "the VFIO container offers no type-1 v2 IOMMU (VFIO_TYPE1v2_IOMMU)"),
            (
                VfioError::GroupNotViable { group: 5, bdf, blockers: vec![] },
                "IOMMU group 5 of 0000:3b:00.0 is not viable: a device in the group is bound to a host driver (see /sys/kernel/iommu_groups/5/devices)",
            ),
            (
                VfioError::NotPci { bdf },
                "0000:3b:00.0 is not a PCI device to vfio (VFIO_DEVICE_GET_INFO: not a vfio-pci device, or too few regions or interrupt indices)",
            ),
            (
                VfioError::Bar { bdf, index: 0, why: bar_mapping(&region(0b011, 0x1000, 0), 4096).unwrap_err() },
                "BAR0 of 0000:3b:00.0 cannot be used: region flags 0x3 lack read/write/mmap (an I/O port BAR?)",
            ),
            (
                VfioError::NoReset { bdf },
                "0000:3b:00.0 cannot be reset: the kernel offers no reset method for it (no function-level, power-management, slot or bus reset; see /sys/bus/pci/devices/0000:3b:00.0/reset_method)",
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

    /// Every error vfio-ioctls returns while opening maps to one line; the
    /// open errors and those with an errno to our own.
    #[test]
    fn crate_errors_map_to_our_lines() {
        use vfio_ioctls::VfioError as E;
        let bdf: Bdf = "0000:00:0a.0".parse().unwrap();
        let os = io::Error::from_raw_os_error;
        let sys = |n| vmm_sys_util::errno::Error::new(n);
        let line = |e: E| {
            let s = crate_error(e, bdf, 10).to_string();
            assert!(!s.contains('\n'), "{s}");
            s
        };
        assert_eq!(line(E::OpenContainer(os(libc::ENOENT))), "no /dev/vfio/vfio: the VFIO driver is not loaded (run `modprobe vfio-pci`)");
        assert_eq!(line(E::OpenGroup(os(libc::EBUSY), "10".into())), "IOMMU group 10 of 0000:00:0a.0 is in use by another process (/dev/vfio/10 is busy)");
        assert_eq!(
            line(E::OpenGroup(os(libc::ENOENT), "10".into())),
            "no /dev/vfio/10: IOMMU group 10 of 0000:00:0a.0 has no VFIO device file (is 0000:00:0a.0 bound to vfio-pci?)"
        );
        assert_eq!(line(E::OpenGroup(os(libc::EACCES), "10".into())), "/dev/vfio/10: permission denied (run as root, or `chown $USER /dev/vfio/10`)");
        assert!(matches!(crate_error(E::GroupViable, bdf, 10), VfioError::GroupNotViable { group: 10, .. }));
        assert!(matches!(crate_error(E::VfioApiVersion, bdf, 10), VfioError::ApiVersion));
        assert!(matches!(crate_error(E::VfioExtension, bdf, 10), VfioError::NoType1));
        assert_eq!(line(E::ContainerSetIOMMU(sys(libc::EPERM))), "VFIO_SET_IOMMU failed: Operation not permitted (os error 1)");
        assert_eq!(line(E::GroupGetDeviceFD(sys(libc::ENODEV))), "VFIO_GROUP_GET_DEVICE_FD failed: No such device (os error 19)");
        assert!(matches!(crate_error(E::VfioDeviceGetInfoPCI, bdf, 10), VfioError::NotPci { .. }));
        assert_eq!(line(E::GroupSetContainer), "0000:00:0a.0: failed to add vfio group into vfio container");
        assert_eq!(line(E::GetGroupStatus), "0000:00:0a.0: failed to get Group Status");
    }

    #[test]
    fn waiting_for_an_eventfd() {
        let efd = EventFd::new(EFD_NONBLOCK).unwrap();
        assert_eq!(wait_eventfd(&efd, Duration::from_millis(20)).unwrap(), 0);
        efd.write(1).unwrap();
        efd.write(2).unwrap();
        assert_eq!(wait_eventfd(&efd, Duration::from_millis(20)).unwrap(), 3);
        assert_eq!(wait_eventfd(&efd, Duration::from_millis(1)).unwrap(), 0);
    }
}
