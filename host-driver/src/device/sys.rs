//! The VFIO kernel ABI (`<linux/vfio.h>`): ioctl request numbers, the
//! argument structs, and one typed function per ioctl. Each function holds
//! the one `unsafe` block of its system call; nothing else in the driver
//! calls `ioctl`.
//!
//! The structs mirror the kernel's byte for byte (`#[repr(C)]`, sizes and
//! field offsets pinned in tests and compared with the installed kernel
//! header by `tests/device_vfio.rs`). Every struct passed by pointer
//! carries `argsz` = its full size, so the kernel never writes past it.
// `unsafe` allowed here (the crate denies it): the VFIO ioctl(2) calls.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// `_IO(type, nr)`: no direction, no size; VFIO passes sizes in `argsz`.
pub const fn io(ty: u8, nr: u8) -> u32 {
    // _IOC(dir = 0, type, nr, size = 0) = dir << 30 | size << 16 | type << 8 | nr
    (ty as u32) << 8 | nr as u32
}

/// `VFIO_TYPE`: `';'`.
pub const VFIO_TYPE: u8 = b';';
/// `VFIO_BASE`.
pub const VFIO_BASE: u8 = 100;
/// `VFIO_API_VERSION`.
pub const VFIO_API_VERSION: i32 = 0;

/// `VFIO_GET_API_VERSION` (container): returns the API version, 0.
pub const VFIO_GET_API_VERSION: u32 = io(VFIO_TYPE, VFIO_BASE);
/// `VFIO_CHECK_EXTENSION` (container): whether an extension (an IOMMU
/// model) is supported.
pub const VFIO_CHECK_EXTENSION: u32 = io(VFIO_TYPE, VFIO_BASE + 1);
/// `VFIO_SET_IOMMU` (container): selects the IOMMU model once a group is
/// attached.
pub const VFIO_SET_IOMMU: u32 = io(VFIO_TYPE, VFIO_BASE + 2);
/// `VFIO_GROUP_GET_STATUS` (group): fills a `struct vfio_group_status`.
pub const VFIO_GROUP_GET_STATUS: u32 = io(VFIO_TYPE, VFIO_BASE + 3);
/// `VFIO_GROUP_SET_CONTAINER` (group): attaches the group to the container
/// whose fd the argument points at.
pub const VFIO_GROUP_SET_CONTAINER: u32 = io(VFIO_TYPE, VFIO_BASE + 4);
/// `VFIO_GROUP_UNSET_CONTAINER` (group): detaches the group (unused: closing
/// the group file detaches it).
pub const VFIO_GROUP_UNSET_CONTAINER: u32 = io(VFIO_TYPE, VFIO_BASE + 5);
/// `VFIO_GROUP_GET_DEVICE_FD` (group): returns a device fd for a device name
/// (its BDF string).
pub const VFIO_GROUP_GET_DEVICE_FD: u32 = io(VFIO_TYPE, VFIO_BASE + 6);
/// `VFIO_DEVICE_GET_INFO` (device): fills a `struct vfio_device_info`.
pub const VFIO_DEVICE_GET_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 7);
/// `VFIO_DEVICE_GET_REGION_INFO` (device): fills a `struct vfio_region_info`
/// for the region in its `index`.
pub const VFIO_DEVICE_GET_REGION_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 8);
/// `VFIO_DEVICE_GET_IRQ_INFO` (device): describes one IRQ index (unused
/// yet: the driver polls).
pub const VFIO_DEVICE_GET_IRQ_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 9);
/// `VFIO_DEVICE_SET_IRQS` (device): wires MSI-X vectors to eventfds (unused
/// yet: the driver polls).
pub const VFIO_DEVICE_SET_IRQS: u32 = io(VFIO_TYPE, VFIO_BASE + 10);
/// `VFIO_DEVICE_RESET` (device): function-level reset, if the device info
/// has `VFIO_DEVICE_FLAGS_RESET`.
pub const VFIO_DEVICE_RESET: u32 = io(VFIO_TYPE, VFIO_BASE + 11);
/// `VFIO_IOMMU_GET_INFO` (container): fills a `struct
/// vfio_iommu_type1_info`.
pub const VFIO_IOMMU_GET_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 12);
/// `VFIO_IOMMU_MAP_DMA` (container): maps process memory into the IOMMU
/// (`struct vfio_iommu_type1_dma_map`).
pub const VFIO_IOMMU_MAP_DMA: u32 = io(VFIO_TYPE, VFIO_BASE + 13);
/// `VFIO_IOMMU_UNMAP_DMA` (container): removes an IOVA range from the IOMMU
/// (`struct vfio_iommu_type1_dma_unmap`).
pub const VFIO_IOMMU_UNMAP_DMA: u32 = io(VFIO_TYPE, VFIO_BASE + 14);

/// `VFIO_TYPE1_IOMMU`: the type-1 IOMMU model (`VFIO_CHECK_EXTENSION` /
/// `VFIO_SET_IOMMU` argument), the fallback when v2 is missing.
pub const VFIO_TYPE1_IOMMU: u32 = 1;
/// `VFIO_TYPE1v2_IOMMU`: the type-1 v2 IOMMU model, preferred.
pub const VFIO_TYPE1V2_IOMMU: u32 = 3;

/// `VFIO_GROUP_FLAGS_VIABLE` in `vfio_group_status.flags`: every device of
/// the group is bound to vfio (or to no driver).
pub const VFIO_GROUP_FLAGS_VIABLE: u32 = 1 << 0;
/// `VFIO_GROUP_FLAGS_CONTAINER_SET` in `vfio_group_status.flags`: the group
/// is attached to a container.
pub const VFIO_GROUP_FLAGS_CONTAINER_SET: u32 = 1 << 1;
/// `VFIO_DEVICE_FLAGS_RESET` in `vfio_device_info.flags`: the device
/// supports `VFIO_DEVICE_RESET`.
pub const VFIO_DEVICE_FLAGS_RESET: u32 = 1 << 0;
/// `VFIO_DEVICE_FLAGS_PCI` in `vfio_device_info.flags`: a vfio-pci device.
pub const VFIO_DEVICE_FLAGS_PCI: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_READ` in `vfio_region_info.flags`: the region
/// can be read.
pub const VFIO_REGION_INFO_FLAG_READ: u32 = 1 << 0;
/// `VFIO_REGION_INFO_FLAG_WRITE` in `vfio_region_info.flags`: the region
/// can be written.
pub const VFIO_REGION_INFO_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_REGION_INFO_FLAG_MMAP` in `vfio_region_info.flags`: the region
/// can be mmap'ed.
pub const VFIO_REGION_INFO_FLAG_MMAP: u32 = 1 << 2;
/// `VFIO_DMA_MAP_FLAG_READ` in `vfio_iommu_type1_dma_map.flags`: the device
/// may read the mapping.
pub const VFIO_DMA_MAP_FLAG_READ: u32 = 1 << 0;
/// `VFIO_DMA_MAP_FLAG_WRITE` in `vfio_iommu_type1_dma_map.flags`: the
/// device may write the mapping.
pub const VFIO_DMA_MAP_FLAG_WRITE: u32 = 1 << 1;
/// `VFIO_IOMMU_INFO_PGSIZES` in `vfio_iommu_type1_info.flags`:
/// `iova_pgsizes` is valid.
pub const VFIO_IOMMU_INFO_PGSIZES: u32 = 1 << 0;

/// `VFIO_PCI_BAR0_REGION_INDEX`: vfio-pci region index of BAR0 (the
/// card's registers).
pub const VFIO_PCI_BAR0_REGION_INDEX: u32 = 0;
/// `VFIO_PCI_CONFIG_REGION_INDEX`: vfio-pci region index of PCI config
/// space.
pub const VFIO_PCI_CONFIG_REGION_INDEX: u32 = 7;
/// `VFIO_PCI_NUM_REGIONS`: number of vfio-pci region indices (BAR0-5, ROM,
/// config, VGA).
pub const VFIO_PCI_NUM_REGIONS: u32 = 9;

/// `struct vfio_group_status` (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupStatus {
    /// `argsz`: size of this struct in bytes (8), set by the caller.
    pub argsz: u32,
    /// `flags`: `VFIO_GROUP_FLAGS_*`, written by the kernel.
    pub flags: u32,
}

/// `struct vfio_device_info` (20 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `argsz`: size of this struct in bytes (20), set by the caller.
    pub argsz: u32,
    /// `flags`: `VFIO_DEVICE_FLAGS_*` (`PCI`, `RESET`, ...).
    pub flags: u32,
    /// `num_regions`: how many region indices the device has (9 for
    /// vfio-pci).
    pub num_regions: u32,
    /// `num_irqs`: how many IRQ indices the device has.
    pub num_irqs: u32,
    /// `cap_offset`: offset in the argument of the first capability (0 =
    /// none; only with `VFIO_DEVICE_FLAGS_CAPS`).
    pub cap_offset: u32,
}

/// `struct vfio_region_info` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionInfo {
    /// `argsz`: size of this struct in bytes (32), set by the caller.
    pub argsz: u32,
    /// `flags`: `VFIO_REGION_INFO_FLAG_*` (read, write, mmap, caps).
    pub flags: u32,
    /// `index`: the region asked about (`VFIO_PCI_*_REGION_INDEX`), set by
    /// the caller.
    pub index: u32,
    /// `cap_offset`: offset in the argument of the first capability (0 =
    /// none).
    pub cap_offset: u32,
    /// `size`: region size in bytes (0 if the region is absent).
    pub size: u64,
    /// `offset`: where the region starts in the device file, in bytes (for
    /// `pread`/`pwrite`/`mmap`).
    pub offset: u64,
}

/// `struct vfio_iommu_type1_info` (24 bytes: 4 bytes of tail padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IommuType1Info {
    /// `argsz`: size of this struct in bytes (24), set by the caller.
    pub argsz: u32,
    /// `flags`: `VFIO_IOMMU_INFO_*` (`PGSIZES`, `CAPS`).
    pub flags: u32,
    /// `iova_pgsizes`: bitmap of the IOMMU page sizes supported (bit n =
    /// 2^n bytes).
    pub iova_pgsizes: u64,
    /// `cap_offset`: offset in the argument of the first capability (0 =
    /// none).
    pub cap_offset: u32,
    /// `pad`: the kernel's explicit padding to 8 bytes; always 0.
    pub pad: u32,
}

/// `struct vfio_iommu_type1_dma_map` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaMap {
    /// `argsz`: size of this struct in bytes (32).
    pub argsz: u32,
    /// `flags`: `VFIO_DMA_MAP_FLAG_READ` / `_WRITE`: what the device may do
    /// with the mapping.
    pub flags: u32,
    /// `vaddr`: process virtual address of the memory to map.
    pub vaddr: u64,
    /// `iova`: I/O virtual address the device will use (this driver: the
    /// same as `vaddr`).
    pub iova: u64,
    /// `size`: length of the mapping in bytes.
    pub size: u64,
}

/// `struct vfio_iommu_type1_dma_unmap` (24 bytes; the flexible `data[]`
/// is only used with dirty-bitmap flags, which this driver never sets).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DmaUnmap {
    /// `argsz`: size of this struct in bytes (24).
    pub argsz: u32,
    /// `flags`: `VFIO_DMA_UNMAP_FLAG_*`; always 0 here (no dirty bitmap).
    pub flags: u32,
    /// `iova`: start of the IOVA range to unmap.
    pub iova: u64,
    /// `size`: length in bytes to unmap; the kernel writes back how many
    /// bytes it unmapped.
    pub size: u64,
}

/// `argsz` of `T`.
fn argsz<T>() -> u32 {
    std::mem::size_of::<T>() as u32
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An ioctl whose argument is an integer (or absent).
fn ioctl_int(fd: BorrowedFd<'_>, req: u32, arg: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: `fd` is an open descriptor (borrowed for the call), and the
    // argument is passed by value: the kernel reads no user memory for
    // the requests this is called with (GET_API_VERSION,
    // CHECK_EXTENSION, SET_IOMMU, DEVICE_RESET).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::Ioctl, arg) })
}

/// The types [`ioctl_ptr`] accepts: this module's `repr(C)` integer-only
/// argument structs (whose `argsz` is their size) and `c_int`. Private, so
/// no other type can be passed.
trait IoctlArg {}
impl IoctlArg for GroupStatus {}
impl IoctlArg for DeviceInfo {}
impl IoctlArg for RegionInfo {}
impl IoctlArg for IommuType1Info {}
impl IoctlArg for DmaMap {}
impl IoctlArg for DmaUnmap {}
impl IoctlArg for libc::c_int {}

/// An ioctl whose argument points at a `T` the kernel reads and/or writes.
fn ioctl_ptr<T: IoctlArg>(fd: BorrowedFd<'_>, req: u32, arg: &mut T) -> io::Result<libc::c_int> {
    // SAFETY: `arg` is a live, exclusive, properly aligned `T` for the
    // whole call. `T: IoctlArg` is one of this module's `repr(C)`
    // integer-only structs (any bit pattern is valid) built with `argsz` =
    // `size_of::<T>()`, or a `c_int`: the kernel accesses at most that many
    // bytes.
    check(unsafe { libc::ioctl(fd.as_raw_fd(), req as libc::Ioctl, arg as *mut T) })
}

/// `VFIO_GET_API_VERSION` on the container.
pub fn get_api_version(container: BorrowedFd<'_>) -> io::Result<i32> {
    ioctl_int(container, VFIO_GET_API_VERSION, 0)
}

/// `VFIO_CHECK_EXTENSION`: whether the container supports `ext`.
pub fn check_extension(container: BorrowedFd<'_>, ext: u32) -> io::Result<bool> {
    Ok(ioctl_int(container, VFIO_CHECK_EXTENSION, ext as libc::c_ulong)? > 0)
}

/// `VFIO_SET_IOMMU`.
pub fn set_iommu(container: BorrowedFd<'_>, model: u32) -> io::Result<()> {
    ioctl_int(container, VFIO_SET_IOMMU, model as libc::c_ulong).map(drop)
}

/// `VFIO_GROUP_GET_STATUS`.
pub fn group_get_status(group: BorrowedFd<'_>) -> io::Result<GroupStatus> {
    let mut s = GroupStatus { argsz: argsz::<GroupStatus>(), flags: 0 };
    ioctl_ptr(group, VFIO_GROUP_GET_STATUS, &mut s)?;
    Ok(s)
}

/// `VFIO_GROUP_SET_CONTAINER`.
pub fn group_set_container(group: BorrowedFd<'_>, container: BorrowedFd<'_>) -> io::Result<()> {
    let mut fd: libc::c_int = container.as_raw_fd();
    ioctl_ptr(group, VFIO_GROUP_SET_CONTAINER, &mut fd).map(drop)
}

/// `VFIO_GROUP_GET_DEVICE_FD` for the device named `name` (its BDF).
pub fn group_get_device_fd(group: BorrowedFd<'_>, name: &CStr) -> io::Result<OwnedFd> {
    // SAFETY: `name` is a NUL-terminated string alive for the call; the
    // kernel only reads it (up to the NUL).
    let fd = check(unsafe { libc::ioctl(group.as_raw_fd(), VFIO_GROUP_GET_DEVICE_FD as libc::Ioctl, name.as_ptr()) })?;
    // SAFETY: on success the ioctl returns a new descriptor that nothing
    // else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `VFIO_DEVICE_GET_INFO`.
pub fn device_get_info(device: BorrowedFd<'_>) -> io::Result<DeviceInfo> {
    let mut i = DeviceInfo { argsz: argsz::<DeviceInfo>(), ..Default::default() };
    ioctl_ptr(device, VFIO_DEVICE_GET_INFO, &mut i)?;
    Ok(i)
}

/// `VFIO_DEVICE_GET_REGION_INFO` for region `index`.
pub fn device_get_region_info(device: BorrowedFd<'_>, index: u32) -> io::Result<RegionInfo> {
    let mut r = RegionInfo { argsz: argsz::<RegionInfo>(), index, ..Default::default() };
    ioctl_ptr(device, VFIO_DEVICE_GET_REGION_INFO, &mut r)?;
    Ok(r)
}

/// `VFIO_DEVICE_RESET`.
pub fn device_reset(device: BorrowedFd<'_>) -> io::Result<()> {
    ioctl_int(device, VFIO_DEVICE_RESET, 0).map(drop)
}

/// `VFIO_IOMMU_GET_INFO`.
pub fn iommu_get_info(container: BorrowedFd<'_>) -> io::Result<IommuType1Info> {
    let mut i = IommuType1Info { argsz: argsz::<IommuType1Info>(), ..Default::default() };
    ioctl_ptr(container, VFIO_IOMMU_GET_INFO, &mut i)?;
    Ok(i)
}

/// The `VFIO_IOMMU_MAP_DMA` argument for a read-write mapping.
pub fn dma_map_arg(vaddr: u64, iova: u64, size: u64) -> DmaMap {
    DmaMap { argsz: argsz::<DmaMap>(), flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE, vaddr, iova, size }
}

/// `VFIO_IOMMU_MAP_DMA`.
pub fn iommu_map_dma(container: BorrowedFd<'_>, mut map: DmaMap) -> io::Result<()> {
    ioctl_ptr(container, VFIO_IOMMU_MAP_DMA, &mut map).map(drop)
}

/// `VFIO_IOMMU_UNMAP_DMA`; returns the bytes unmapped.
pub fn iommu_unmap_dma(container: BorrowedFd<'_>, iova: u64, size: u64) -> io::Result<u64> {
    let mut u = DmaUnmap { argsz: argsz::<DmaUnmap>(), flags: 0, iova, size };
    ioctl_ptr(container, VFIO_IOMMU_UNMAP_DMA, &mut u)?;
    Ok(u.size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::{offset_of, size_of};

    #[test]
    fn request_numbers_are_io_semicolon_100_plus_n() {
        assert_eq!(io(b';', 100), 0x3B64);
        assert_eq!(VFIO_GET_API_VERSION, 0x3B64);
        assert_eq!(VFIO_CHECK_EXTENSION, 0x3B65);
        assert_eq!(VFIO_SET_IOMMU, 0x3B66);
        assert_eq!(VFIO_GROUP_GET_STATUS, 0x3B67);
        assert_eq!(VFIO_GROUP_SET_CONTAINER, 0x3B68);
        assert_eq!(VFIO_GROUP_UNSET_CONTAINER, 0x3B69);
        assert_eq!(VFIO_GROUP_GET_DEVICE_FD, 0x3B6A);
        assert_eq!(VFIO_DEVICE_GET_INFO, 0x3B6B);
        assert_eq!(VFIO_DEVICE_GET_REGION_INFO, 0x3B6C);
        assert_eq!(VFIO_DEVICE_GET_IRQ_INFO, 0x3B6D);
        assert_eq!(VFIO_DEVICE_SET_IRQS, 0x3B6E);
        assert_eq!(VFIO_DEVICE_RESET, 0x3B6F);
        assert_eq!(VFIO_IOMMU_GET_INFO, 0x3B70);
        assert_eq!(VFIO_IOMMU_MAP_DMA, 0x3B71);
        assert_eq!(VFIO_IOMMU_UNMAP_DMA, 0x3B72);
    }

    #[test]
    fn argument_structs_match_the_kernel_layout() {
        assert_eq!(size_of::<GroupStatus>(), 8);
        assert_eq!((offset_of!(GroupStatus, argsz), offset_of!(GroupStatus, flags)), (0, 4));
        assert_eq!(size_of::<DeviceInfo>(), 20);
        assert_eq!(offset_of!(DeviceInfo, num_regions), 8);
        assert_eq!(offset_of!(DeviceInfo, num_irqs), 12);
        assert_eq!(offset_of!(DeviceInfo, cap_offset), 16);
        assert_eq!(size_of::<RegionInfo>(), 32);
        assert_eq!(offset_of!(RegionInfo, index), 8);
        assert_eq!(offset_of!(RegionInfo, cap_offset), 12);
        assert_eq!(offset_of!(RegionInfo, size), 16);
        assert_eq!(offset_of!(RegionInfo, offset), 24);
        assert_eq!(size_of::<IommuType1Info>(), 24);
        assert_eq!(offset_of!(IommuType1Info, iova_pgsizes), 8);
        assert_eq!(offset_of!(IommuType1Info, cap_offset), 16);
        assert_eq!(size_of::<DmaMap>(), 32);
        assert_eq!(offset_of!(DmaMap, vaddr), 8);
        assert_eq!(offset_of!(DmaMap, iova), 16);
        assert_eq!(offset_of!(DmaMap, size), 24);
        assert_eq!(size_of::<DmaUnmap>(), 24);
        assert_eq!(offset_of!(DmaUnmap, iova), 8);
        assert_eq!(offset_of!(DmaUnmap, size), 16);
        let m = dma_map_arg(0x7f00_0000_0000, 0x1000_0000, 0x20_0000);
        assert_eq!((m.argsz, m.flags), (32, 3));
    }

    #[test]
    fn ioctls_on_a_non_vfio_file_fail_cleanly() {
        let f = std::fs::File::open("/dev/null").unwrap();
        use std::os::fd::AsFd;
        let e = get_api_version(f.as_fd()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
        assert!(group_get_status(f.as_fd()).is_err());
        assert!(iommu_map_dma(f.as_fd(), dma_map_arg(0, 0, 4096)).is_err());
    }
}
