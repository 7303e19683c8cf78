//! The VFIO backend without a card: the kernel ABI against the installed
//! `<linux/vfio.h>`, and every error a user can meet while opening a card,
//! against fake sysfs trees (the VFIO files themselves are always
//! `/dev/vfio/*`, where vfio-ioctls opens them; the whole path against the
//! kernel's real VFIO is `tests/vfio_edu.rs`, run in a VM by
//! scripts/vm/vfio.sh).

use lvsnic::device::pci::{Bdf, Sysfs};
use lvsnic::device::rings::RingConfig;
use lvsnic::device::vfio::{preflight, VfioDevice, VfioError, VfioPaths};
use lvsnic::device::{sys, vfio_pci};
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
/// the request numbers, flags and indices this driver uses itself (the
/// two ioctls of `device::sys`) or takes from `vfio-bindings`, and the
/// part of `struct vfio_device_info` the kernel reads, and compares them
/// with ours. Needs a C compiler and the kernel's UAPI headers, which every
/// machine that links Rust programs on Linux has (`cc`, libc6-dev →
/// linux-libc-dev).
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
#define O(t, f) printf(#t "." #f " %zu\n", offsetof(struct t, f));
#define N(x) printf(#x " %lu\n", (unsigned long)(x));
int main(void) {
  O(vfio_device_info, flags) O(vfio_device_info, num_regions) O(vfio_device_info, num_irqs)
  N(VFIO_DEVICE_GET_INFO) N(VFIO_DEVICE_RESET) N(VFIO_DEVICE_FLAGS_RESET) N(VFIO_DEVICE_FLAGS_PCI)
  N(VFIO_PCI_CONFIG_REGION_INDEX) N(VFIO_PCI_INTX_IRQ_INDEX) N(VFIO_PCI_MSI_IRQ_INDEX) N(VFIO_PCI_MSIX_IRQ_INDEX)
  N(VFIO_REGION_INFO_FLAG_READ) N(VFIO_REGION_INFO_FLAG_WRITE) N(VFIO_REGION_INFO_FLAG_MMAP)
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
        ("vfio_device_info.flags", offset_of!(sys::vfio_device_info, flags) as u64),
        ("vfio_device_info.num_regions", offset_of!(sys::vfio_device_info, num_regions) as u64),
        ("vfio_device_info.num_irqs", offset_of!(sys::vfio_device_info, num_irqs) as u64),
        ("VFIO_DEVICE_GET_INFO", sys::VFIO_DEVICE_GET_INFO as u64),
        ("VFIO_DEVICE_RESET", sys::VFIO_DEVICE_RESET as u64),
        ("VFIO_DEVICE_FLAGS_RESET", vfio_pci::DEVICE_FLAGS_RESET as u64),
        ("VFIO_DEVICE_FLAGS_PCI", vfio_pci::DEVICE_FLAGS_PCI as u64),
        ("VFIO_PCI_CONFIG_REGION_INDEX", vfio_pci::CONFIG_REGION as u64),
        ("VFIO_PCI_INTX_IRQ_INDEX", vfio_pci::INTX as u64),
        ("VFIO_PCI_MSI_IRQ_INDEX", vfio_pci::MSI as u64),
        ("VFIO_PCI_MSIX_IRQ_INDEX", vfio_pci::MSIX as u64),
        ("VFIO_REGION_INFO_FLAG_READ", 1),
        ("VFIO_REGION_INFO_FLAG_WRITE", 2),
        ("VFIO_REGION_INFO_FLAG_MMAP", 4),
    ];
    for (k, v) in &ours {
        assert_eq!(kernel.get(k), Some(v), "{k}: kernel header says {:?}, ours {v}", kernel.get(k));
    }
    assert_eq!(kernel.len(), ours.len());
    assert!(size_of::<sys::vfio_device_info>() >= 20, "at least the 6.1 kernel's struct");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A fake `/sys`.
struct Fake {
    root: PathBuf,
}

const BDF: &str = "0000:3b:00.0";

impl Fake {
    fn new(name: &str) -> Fake {
        let root = tmpdir(name);
        for d in ["sys/bus/pci/devices", "sys/bus/pci/drivers", "sys/kernel/iommu_groups"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        Fake { root }
    }
    fn sys(&self) -> PathBuf {
        self.root.join("sys")
    }
    fn paths(&self) -> VfioPaths {
        VfioPaths { sysfs: self.sys() }
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

/// Past the sysfs checks, vfio-ioctls opens `/dev/vfio/vfio` and then the
/// group's file: on a machine without VFIO the first is missing; with it,
/// the fake group (a number no real machine has) has no file. Either way
/// one line naming the file.
#[test]
fn past_sysfs_the_vfio_files_are_checked() {
    let f = Fake::new("novfio");
    f.device(BDF, 0x10ee, 0x903f, 0x020000, Some("vfio-pci"), Some(4_000_000));
    let e = f.open();
    let s = one_line(&e);
    if Path::new("/dev/vfio/vfio").exists() {
        assert!(matches!(e, VfioError::NoGroupFile { group: 4_000_000, .. }), "{s}");
        assert_eq!(
            s,
            "no /dev/vfio/4000000: IOMMU group 4000000 of 0000:3b:00.0 has no VFIO device file (is 0000:3b:00.0 bound to vfio-pci?)"
        );
    } else {
        assert!(matches!(e, VfioError::NoVfio { .. }), "{s}");
        assert_eq!(s, "no /dev/vfio/vfio: the VFIO driver is not loaded (run `modprobe vfio-pci`)");
    }
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
