//! The VFIO backend without a card: the kernel ABI against the installed
//! `<linux/vfio.h>`, and every error a user can meet while opening a card,
//! against fake sysfs and `/dev/vfio` trees.

use lvsnic::device::pci::{Bdf, Sysfs};
use lvsnic::device::rings::RingConfig;
use lvsnic::device::sys;
use lvsnic::device::vfio::{preflight, VfioDevice, VfioError, VfioPaths};
use std::mem::{offset_of, size_of};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};
use std::process::Command;

fn tmpdir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("lvsnic-vfio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Compiles a C program against the installed kernel header that prints
/// the sizes, offsets and request numbers, and compares them with ours.
/// Needs a C compiler and the kernel's UAPI headers, which every machine
/// that links Rust programs on Linux has (`cc`, libc6-dev → linux-libc-dev).
#[test]
fn abi_matches_the_installed_kernel_header() {
    assert!(
        Path::new("/usr/include/linux/vfio.h").exists(),
        "no /usr/include/linux/vfio.h: install the kernel UAPI headers (linux-libc-dev)"
    );
    let dir = tmpdir("abi");
    let src = dir.join("abi.c");
    std::fs::write(
        &src,
        r#"
#include <stdio.h>
#include <stddef.h>
#include <linux/vfio.h>
#define S(t) printf(#t " %zu\n", sizeof(struct t));
#define O(t, f) printf(#t "." #f " %zu\n", offsetof(struct t, f));
#define N(x) printf(#x " %lu\n", (unsigned long)(x));
int main(void) {
  S(vfio_group_status) S(vfio_device_info) S(vfio_region_info) S(vfio_iommu_type1_info)
  S(vfio_iommu_type1_dma_map) S(vfio_iommu_type1_dma_unmap)
  O(vfio_device_info, num_regions) O(vfio_device_info, num_irqs) O(vfio_device_info, cap_offset)
  O(vfio_region_info, index) O(vfio_region_info, cap_offset) O(vfio_region_info, size) O(vfio_region_info, offset)
  O(vfio_iommu_type1_info, iova_pgsizes) O(vfio_iommu_type1_info, cap_offset)
  O(vfio_iommu_type1_dma_map, vaddr) O(vfio_iommu_type1_dma_map, iova) O(vfio_iommu_type1_dma_map, size)
  O(vfio_iommu_type1_dma_unmap, iova) O(vfio_iommu_type1_dma_unmap, size)
  N(VFIO_API_VERSION) N(VFIO_TYPE1_IOMMU) N(VFIO_TYPE1v2_IOMMU)
  N(VFIO_GET_API_VERSION) N(VFIO_CHECK_EXTENSION) N(VFIO_SET_IOMMU) N(VFIO_GROUP_GET_STATUS)
  N(VFIO_GROUP_SET_CONTAINER) N(VFIO_GROUP_UNSET_CONTAINER) N(VFIO_GROUP_GET_DEVICE_FD)
  N(VFIO_DEVICE_GET_INFO) N(VFIO_DEVICE_GET_REGION_INFO) N(VFIO_DEVICE_GET_IRQ_INFO) N(VFIO_DEVICE_SET_IRQS)
  N(VFIO_DEVICE_RESET) N(VFIO_IOMMU_GET_INFO) N(VFIO_IOMMU_MAP_DMA) N(VFIO_IOMMU_UNMAP_DMA)
  N(VFIO_GROUP_FLAGS_VIABLE) N(VFIO_GROUP_FLAGS_CONTAINER_SET) N(VFIO_DEVICE_FLAGS_RESET) N(VFIO_DEVICE_FLAGS_PCI)
  N(VFIO_REGION_INFO_FLAG_READ) N(VFIO_REGION_INFO_FLAG_WRITE) N(VFIO_REGION_INFO_FLAG_MMAP)
  N(VFIO_DMA_MAP_FLAG_READ) N(VFIO_DMA_MAP_FLAG_WRITE) N(VFIO_IOMMU_INFO_PGSIZES)
  N(VFIO_PCI_BAR0_REGION_INDEX) N(VFIO_PCI_CONFIG_REGION_INDEX) N(VFIO_PCI_NUM_REGIONS)
  return 0;
}
"#,
    )
    .unwrap();
    let exe = dir.join("abi");
    let cc = Command::new("cc").arg("-o").arg(&exe).arg(&src).output().expect("running the C compiler `cc`");
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
    let out = String::from_utf8(Command::new(&exe).output().unwrap().stdout).unwrap();
    let kernel: std::collections::HashMap<&str, u64> =
        out.lines().map(|l| l.split_once(' ').map(|(k, v)| (k, v.parse().unwrap())).unwrap()).collect();
    let ours: Vec<(&str, u64)> = vec![
        ("vfio_group_status", size_of::<sys::GroupStatus>() as u64),
        ("vfio_device_info", size_of::<sys::DeviceInfo>() as u64),
        ("vfio_region_info", size_of::<sys::RegionInfo>() as u64),
        ("vfio_iommu_type1_info", size_of::<sys::IommuType1Info>() as u64),
        ("vfio_iommu_type1_dma_map", size_of::<sys::DmaMap>() as u64),
        ("vfio_iommu_type1_dma_unmap", size_of::<sys::DmaUnmap>() as u64),
        ("vfio_device_info.num_regions", offset_of!(sys::DeviceInfo, num_regions) as u64),
        ("vfio_device_info.num_irqs", offset_of!(sys::DeviceInfo, num_irqs) as u64),
        ("vfio_device_info.cap_offset", offset_of!(sys::DeviceInfo, cap_offset) as u64),
        ("vfio_region_info.index", offset_of!(sys::RegionInfo, index) as u64),
        ("vfio_region_info.cap_offset", offset_of!(sys::RegionInfo, cap_offset) as u64),
        ("vfio_region_info.size", offset_of!(sys::RegionInfo, size) as u64),
        ("vfio_region_info.offset", offset_of!(sys::RegionInfo, offset) as u64),
        ("vfio_iommu_type1_info.iova_pgsizes", offset_of!(sys::IommuType1Info, iova_pgsizes) as u64),
        ("vfio_iommu_type1_info.cap_offset", offset_of!(sys::IommuType1Info, cap_offset) as u64),
        ("vfio_iommu_type1_dma_map.vaddr", offset_of!(sys::DmaMap, vaddr) as u64),
        ("vfio_iommu_type1_dma_map.iova", offset_of!(sys::DmaMap, iova) as u64),
        ("vfio_iommu_type1_dma_map.size", offset_of!(sys::DmaMap, size) as u64),
        ("vfio_iommu_type1_dma_unmap.iova", offset_of!(sys::DmaUnmap, iova) as u64),
        ("vfio_iommu_type1_dma_unmap.size", offset_of!(sys::DmaUnmap, size) as u64),
        ("VFIO_API_VERSION", sys::VFIO_API_VERSION as u64),
        ("VFIO_TYPE1_IOMMU", sys::VFIO_TYPE1_IOMMU as u64),
        ("VFIO_TYPE1v2_IOMMU", sys::VFIO_TYPE1V2_IOMMU as u64),
        ("VFIO_GET_API_VERSION", sys::VFIO_GET_API_VERSION as u64),
        ("VFIO_CHECK_EXTENSION", sys::VFIO_CHECK_EXTENSION as u64),
        ("VFIO_SET_IOMMU", sys::VFIO_SET_IOMMU as u64),
        ("VFIO_GROUP_GET_STATUS", sys::VFIO_GROUP_GET_STATUS as u64),
        ("VFIO_GROUP_SET_CONTAINER", sys::VFIO_GROUP_SET_CONTAINER as u64),
        ("VFIO_GROUP_UNSET_CONTAINER", sys::VFIO_GROUP_UNSET_CONTAINER as u64),
        ("VFIO_GROUP_GET_DEVICE_FD", sys::VFIO_GROUP_GET_DEVICE_FD as u64),
        ("VFIO_DEVICE_GET_INFO", sys::VFIO_DEVICE_GET_INFO as u64),
        ("VFIO_DEVICE_GET_REGION_INFO", sys::VFIO_DEVICE_GET_REGION_INFO as u64),
        ("VFIO_DEVICE_GET_IRQ_INFO", sys::VFIO_DEVICE_GET_IRQ_INFO as u64),
        ("VFIO_DEVICE_SET_IRQS", sys::VFIO_DEVICE_SET_IRQS as u64),
        ("VFIO_DEVICE_RESET", sys::VFIO_DEVICE_RESET as u64),
        ("VFIO_IOMMU_GET_INFO", sys::VFIO_IOMMU_GET_INFO as u64),
        ("VFIO_IOMMU_MAP_DMA", sys::VFIO_IOMMU_MAP_DMA as u64),
        ("VFIO_IOMMU_UNMAP_DMA", sys::VFIO_IOMMU_UNMAP_DMA as u64),
        ("VFIO_GROUP_FLAGS_VIABLE", sys::VFIO_GROUP_FLAGS_VIABLE as u64),
        ("VFIO_GROUP_FLAGS_CONTAINER_SET", sys::VFIO_GROUP_FLAGS_CONTAINER_SET as u64),
        ("VFIO_DEVICE_FLAGS_RESET", sys::VFIO_DEVICE_FLAGS_RESET as u64),
        ("VFIO_DEVICE_FLAGS_PCI", sys::VFIO_DEVICE_FLAGS_PCI as u64),
        ("VFIO_REGION_INFO_FLAG_READ", sys::VFIO_REGION_INFO_FLAG_READ as u64),
        ("VFIO_REGION_INFO_FLAG_WRITE", sys::VFIO_REGION_INFO_FLAG_WRITE as u64),
        ("VFIO_REGION_INFO_FLAG_MMAP", sys::VFIO_REGION_INFO_FLAG_MMAP as u64),
        ("VFIO_DMA_MAP_FLAG_READ", sys::VFIO_DMA_MAP_FLAG_READ as u64),
        ("VFIO_DMA_MAP_FLAG_WRITE", sys::VFIO_DMA_MAP_FLAG_WRITE as u64),
        ("VFIO_IOMMU_INFO_PGSIZES", sys::VFIO_IOMMU_INFO_PGSIZES as u64),
        ("VFIO_PCI_BAR0_REGION_INDEX", sys::VFIO_PCI_BAR0_REGION_INDEX as u64),
        ("VFIO_PCI_CONFIG_REGION_INDEX", sys::VFIO_PCI_CONFIG_REGION_INDEX as u64),
        ("VFIO_PCI_NUM_REGIONS", sys::VFIO_PCI_NUM_REGIONS as u64),
    ];
    for (k, v) in &ours {
        assert_eq!(kernel.get(k), Some(v), "{k}: kernel header says {:?}, ours {v}", kernel.get(k));
    }
    assert_eq!(kernel.len(), ours.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fake `/sys` and `/dev/vfio`.
struct Fake {
    root: PathBuf,
}

const BDF: &str = "0000:3b:00.0";

impl Fake {
    fn new(name: &str) -> Fake {
        let root = tmpdir(name);
        for d in ["sys/bus/pci/devices", "sys/bus/pci/drivers", "sys/kernel/iommu_groups", "dev/vfio"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Fake { root }
    }
    fn sys(&self) -> PathBuf {
        self.root.join("sys")
    }
    fn paths(&self) -> VfioPaths {
        VfioPaths { sysfs: self.sys(), dev: self.root.join("dev/vfio") }
    }
    /// A PCI function with IDs, optionally a driver and an IOMMU group.
    fn device(&self, bdf: &str, vendor: u16, device: u16, class: u32, driver: Option<&str>, group: Option<u32>) {
        let dir = self.sys().join("bus/pci/devices").join(bdf);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("vendor"), format!("0x{vendor:04x}\n")).unwrap();
        std::fs::write(dir.join("device"), format!("0x{device:04x}\n")).unwrap();
        std::fs::write(dir.join("class"), format!("0x{class:06x}\n")).unwrap();
        if let Some(d) = driver {
            let ddir = self.sys().join("bus/pci/drivers").join(d);
            std::fs::create_dir_all(&ddir).unwrap();
            symlink(&ddir, dir.join("driver")).unwrap();
        }
        if let Some(g) = group {
            let gdir = self.sys().join("kernel/iommu_groups").join(g.to_string());
            std::fs::create_dir_all(gdir.join("devices")).unwrap();
            symlink(&gdir, dir.join("iommu_group")).unwrap();
            symlink(&dir, gdir.join("devices").join(bdf)).unwrap();
        }
    }
    fn open(&self) -> VfioError {
        VfioDevice::open_with(&self.paths(), BDF, RingConfig::default()).unwrap_err()
    }
}

impl Drop for Fake {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

fn one_line(e: &VfioError) -> String {
    let s = e.to_string();
    assert!(!s.contains('\n'), "one line: {s}");
    s
}

#[test]
fn malformed_address() {
    let f = Fake::new("bdf");
    let e = VfioDevice::open_with(&f.paths(), "eth0", RingConfig::default()).unwrap_err();
    assert_eq!(one_line(&e), "`eth0` is not a PCI address (expected DDDD:BB:DD.F, e.g. 0000:3b:00.0)");
}

#[test]
fn device_not_in_sysfs() {
    let f = Fake::new("missing");
    let e = f.open();
    let s = one_line(&e);
    assert!(s.starts_with("no PCI device 0000:3b:00.0: nothing at "), "{s}");
    assert!(s.ends_with("(list devices with `lspci -D`)"), "{s}");
}

#[test]
fn no_iommu_group() {
    let f = Fake::new("noiommu");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), None);
    let e = f.open();
    assert!(matches!(e, VfioError::NoIommu { .. }));
    assert_eq!(
        one_line(&e),
        "0000:3b:00.0 has no IOMMU group: the IOMMU is off or absent (enable VT-d/AMD-Vi in the firmware and boot with intel_iommu=on or amd_iommu=on)"
    );
}

#[test]
fn bound_to_a_host_driver() {
    let f = Fake::new("ixgbe");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("ixgbe"), Some(42));
    assert_eq!(
        one_line(&f.open()),
        "0000:3b:00.0 is bound to ixgbe, not vfio-pci: run `driverctl set-override 0000:3b:00.0 vfio-pci` \
         (or `echo 0000:3b:00.0 > /sys/bus/pci/devices/0000:3b:00.0/driver/unbind; echo 10ee 903f > /sys/bus/pci/drivers/vfio-pci/new_id`)"
    );
}

#[test]
fn bound_to_no_driver() {
    let f = Fake::new("unbound");
    f.device(BDF, 0x1d0f, 0xf000, 0x020000, None, Some(42));
    assert_eq!(
        one_line(&f.open()),
        "0000:3b:00.0 is not bound to any driver: run `echo 1d0f f000 > /sys/bus/pci/drivers/vfio-pci/new_id` (or `driverctl set-override 0000:3b:00.0 vfio-pci`)"
    );
}

#[test]
fn group_not_viable_names_the_culprits() {
    let f = Fake::new("group");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(7));
    f.device("0000:3b:00.1", 0x8086, 0x10fb, 0x020000, Some("ixgbe"), Some(7));
    f.device("0000:3b:00.2", 0x8086, 0x10fb, 0x020000, None, Some(7));
    f.device("0000:3a:00.0", 0x8086, 0x2030, 0x060400, Some("pcieport"), Some(7));
    let e = f.open();
    let VfioError::GroupNotViable { group, ref blockers, .. } = e else { panic!("{e}") };
    assert_eq!(group, 7);
    assert_eq!(blockers.len(), 1, "unbound functions and bridges do not block");
    assert_eq!(
        one_line(&e),
        "IOMMU group 7 of 0000:3b:00.0 is not viable: 0000:3b:00.1 (ixgbe) is in the group and bound to a host driver; bind it to vfio-pci too or unbind it"
    );
    f.device("0000:3b:00.3", 0x8086, 0x10fb, 0x020000, Some("i40e"), Some(7));
    assert!(one_line(&f.open()).contains("0000:3b:00.1 (ixgbe), 0000:3b:00.3 (i40e) are in the group"));
}

#[test]
fn no_vfio_container_device() {
    let f = Fake::new("novfio");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(3));
    let e = f.open();
    assert!(matches!(e, VfioError::NoVfio { .. }));
    let s = one_line(&e);
    assert!(
        s.starts_with("no ") && s.ends_with("dev/vfio/vfio: the VFIO driver is not loaded (run `modprobe vfio-pci`)"),
        "{s}"
    );
}

#[test]
fn container_that_is_not_vfio() {
    let f = Fake::new("notvfio");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(3));
    std::fs::write(f.root.join("dev/vfio/vfio"), b"").unwrap();
    let e = f.open();
    assert!(matches!(e, VfioError::Ioctl { what: "VFIO_GET_API_VERSION on the container", .. }), "{e}");
    assert!(one_line(&e).starts_with("VFIO_GET_API_VERSION on the container failed: "));
}

#[test]
fn preflight_accepts_a_clean_group() {
    let f = Fake::new("clean");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(9));
    f.device("0000:3b:00.1", 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(9));
    let (dev, group) = preflight(&Sysfs::new(f.sys()), BDF.parse::<Bdf>().unwrap()).unwrap();
    assert_eq!((dev.vendor, dev.device, dev.class, group), (0x10ee, 0x903f, 0x020000, 9));
    assert_eq!(dev.driver.as_deref(), Some("vfio-pci"));
    let members = Sysfs::new(f.sys()).group_members(9).unwrap();
    assert_eq!(members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(), ["0000:3b:00.0", "0000:3b:00.1"]);
}

#[test]
fn this_machine_has_no_vfio_and_says_so() {
    // Whatever this machine has, opening a card that is not there gives one line.
    match VfioDevice::open("0000:ff:1f.7", RingConfig::default()) {
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'));
            eprintln!("{s}");
        }
        Ok(_) => panic!("a card at 0000:ff:1f.7?"),
    }
}
