//! PCI devices as sysfs shows them: addresses (BDF), IDs, the bound
//! driver, the IOMMU group and the other members of that group. Every path
//! is taken relative to a sysfs root ([`Sysfs`]), so tests run against a
//! fake tree in a temporary directory.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// A PCI address `domain:bus:device.function`, e.g. `0000:3b:00.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bdf {
    /// PCI segment (domain) number, 16 bits (`0000` on most machines).
    pub domain: u16,
    /// Bus number, 0-255.
    pub bus: u8,
    /// Device number on the bus, 0-31.
    pub dev: u8,
    /// Function number of the device, 0-7.
    pub func: u8,
}

impl fmt::Display for Bdf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.dev, self.func)
    }
}

impl FromStr for Bdf {
    type Err = PciError;
    /// `DDDD:BB:DD.F` or `BB:DD.F` (domain 0), hexadecimal, any case.
    fn from_str(s: &str) -> Result<Bdf, PciError> {
        let bad = || PciError::BadBdf(s.to_string());
        let parts: Vec<&str> = s.split(':').collect();
        let (domain, bus, rest) = match parts.as_slice() {
            [d, b, r] if d.len() == 4 => (u16::from_str_radix(d, 16).map_err(|_| bad())?, *b, *r),
            [b, r] => (0, *b, *r),
            _ => return Err(bad()),
        };
        let (dev, func) = rest.split_once('.').ok_or_else(bad)?;
        let hex = |t: &str, n: usize| {
            if t.len() == n && t.bytes().all(|c| c.is_ascii_hexdigit()) {
                u8::from_str_radix(t, 16).map_err(|_| bad())
            } else {
                Err(bad())
            }
        };
        let (bus, dev, func) = (hex(bus, 2)?, hex(dev, 2)?, hex(func, 1)?);
        if dev > 0x1F || func > 7 {
            return Err(bad());
        }
        Ok(Bdf { domain, bus, dev, func })
    }
}

/// A sysfs lookup that failed.
#[derive(Debug, thiserror::Error)]
pub enum PciError {
    /// The text given is not a PCI address; holds the text.
    #[error("`{0}` is not a PCI address (expected DDDD:BB:DD.F, e.g. 0000:3b:00.0)")]
    BadBdf(String),
    /// No `/sys/bus/pci/devices/<bdf>` directory.
    #[error("no PCI device {bdf}: nothing at {path} (list devices with `lspci -D`)")]
    NotFound {
        /// The address looked for.
        bdf: Bdf,
        /// The sysfs directory that is missing.
        path: String,
    },
    /// Reading a sysfs file or link failed.
    #[error("{path}: {source}")]
    Io {
        /// The sysfs path.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A sysfs attribute does not hold the hexadecimal number expected.
    #[error("{path}: unexpected contents `{value}`")]
    BadAttr {
        /// The attribute file.
        path: String,
        /// What it holds (trimmed).
        value: String,
    },
}

/// What sysfs says about one PCI device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciDevice {
    /// Its PCI address.
    pub bdf: Bdf,
    /// PCI vendor ID (sysfs `vendor`).
    pub vendor: u16,
    /// PCI device ID (sysfs `device`).
    pub device: u16,
    /// Class code (`0xCCSSPP`).
    pub class: u32,
    /// Name of the bound driver, if any.
    pub driver: Option<String>,
    /// IOMMU group number; None without an IOMMU.
    pub iommu_group: Option<u32>,
}

impl PciDevice {
    /// Bound to vfio-pci (or a vendor's vfio-pci variant driver).
    pub fn on_vfio(&self) -> bool {
        self.driver.as_deref().is_some_and(is_vfio_driver)
    }
}

/// A vfio-pci driver (`vfio-pci` or a variant like `mlx5_vfio_pci`).
pub fn is_vfio_driver(name: &str) -> bool {
    name == "vfio-pci" || name.contains("vfio")
}

/// One device of an IOMMU group (not necessarily a PCI function).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupMember {
    /// Its sysfs name (the BDF for PCI devices).
    pub name: String,
    /// Name of the driver it is bound to (its `driver` link), if any.
    pub driver: Option<String>,
    /// A PCI bridge (class 0x0604/0x0607): the kernel ignores its driver
    /// when judging the group's viability.
    pub bridge: bool,
}

impl GroupMember {
    /// Whether this member keeps VFIO from using the group: bound to a
    /// host driver other than vfio-pci or pci-stub, and not a bridge.
    pub fn blocks_vfio(&self) -> bool {
        match self.driver.as_deref() {
            None => false,
            Some(d) => !(is_vfio_driver(d) || d == "pci-stub" || self.bridge),
        }
    }
}

/// A sysfs tree (`/sys`, or a fake one).
#[derive(Clone, Debug)]
pub struct Sysfs {
    /// The directory standing for `/sys`.
    pub root: PathBuf,
}

fn io_err(path: &Path, source: std::io::Error) -> PciError {
    PciError::Io { path: path.display().to_string(), source }
}

fn read_attr(path: &Path) -> Result<String, PciError> {
    std::fs::read_to_string(path).map(|s| s.trim().to_string()).map_err(|e| io_err(path, e))
}

/// Parses a sysfs hexadecimal attribute (`0x10ee`).
pub fn parse_hex(path: &Path, text: &str) -> Result<u32, PciError> {
    let t = text.trim();
    let digits = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")).unwrap_or(t);
    u32::from_str_radix(digits, 16)
        .map_err(|_| PciError::BadAttr { path: path.display().to_string(), value: t.to_string() })
}

/// The last component of the target of the symbolic link at `path`, or
/// None if there is no link.
fn link_name(path: &Path) -> Result<Option<String>, PciError> {
    match std::fs::read_link(path) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_err(path, e)),
    }
}

impl Default for Sysfs {
    fn default() -> Self {
        Sysfs { root: PathBuf::from("/sys") }
    }
}

impl Sysfs {
    /// The sysfs tree rooted at `root`.
    pub fn new(root: impl Into<PathBuf>) -> Sysfs {
        Sysfs { root: root.into() }
    }

    /// `/sys/bus/pci/devices/<bdf>`.
    pub fn device_dir(&self, bdf: Bdf) -> PathBuf {
        self.root.join("bus/pci/devices").join(bdf.to_string())
    }

    /// `/sys/kernel/iommu_groups/<group>/devices`.
    pub fn group_dir(&self, group: u32) -> PathBuf {
        self.root.join("kernel/iommu_groups").join(group.to_string()).join("devices")
    }

    /// Reads a device's IDs, driver and IOMMU group.
    pub fn device(&self, bdf: Bdf) -> Result<PciDevice, PciError> {
        let dir = self.device_dir(bdf);
        if !dir.exists() {
            return Err(PciError::NotFound { bdf, path: dir.display().to_string() });
        }
        let hex = |name: &str| {
            let p = dir.join(name);
            parse_hex(&p, &read_attr(&p)?)
        };
        let vendor = hex("vendor")?;
        let device = hex("device")?;
        let class = hex("class")?;
        let group = match link_name(&dir.join("iommu_group"))? {
            None => None,
            Some(n) => Some(
                n.parse::<u32>()
                    .map_err(|_| PciError::BadAttr { path: dir.join("iommu_group").display().to_string(), value: n })?,
            ),
        };
        Ok(PciDevice {
            bdf,
            vendor: vendor as u16,
            device: device as u16,
            class,
            driver: link_name(&dir.join("driver"))?,
            iommu_group: group,
        })
    }

    /// Every device of IOMMU group `group`, sorted by name.
    pub fn group_members(&self, group: u32) -> Result<Vec<GroupMember>, PciError> {
        let dir = self.group_dir(group);
        let rd = std::fs::read_dir(&dir).map_err(|e| io_err(&dir, e))?;
        let mut out = Vec::new();
        for ent in rd {
            let ent = ent.map_err(|e| io_err(&dir, e))?;
            let p = ent.path();
            let class = std::fs::read_to_string(p.join("class")).ok().and_then(|t| parse_hex(&p, &t).ok());
            let bridge = class.is_some_and(|c| matches!(c >> 8, 0x0604 | 0x0607));
            out.push(GroupMember {
                name: ent.file_name().to_string_lossy().into_owned(),
                driver: link_name(&p.join("driver"))?,
                bridge,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bdf_parses_and_prints() {
        let b: Bdf = "0000:3b:00.0".parse().unwrap();
        assert_eq!(b, Bdf { domain: 0, bus: 0x3b, dev: 0, func: 0 });
        assert_eq!(b.to_string(), "0000:3b:00.0");
        assert_eq!("3B:1f.7".parse::<Bdf>().unwrap().to_string(), "0000:3b:1f.7");
        assert!("10000:3b:00.0".parse::<Bdf>().is_err());
        assert_eq!("abcd:3b:00.0".parse::<Bdf>().unwrap().domain, 0xabcd);
        for bad in [
            "",
            "3b:00",
            "0000:3b:20.0",
            "0000:3b:00.8",
            "0000:3b:0.0",
            "000:3b:00.0",
            "zz:00.0",
            "0000:3b:00.0 ",
            "0000:3b:00:0",
        ] {
            let e = bad.parse::<Bdf>().unwrap_err();
            assert!(matches!(e, PciError::BadBdf(_)), "{bad}");
        }
        assert_eq!(
            "eth0".parse::<Bdf>().unwrap_err().to_string(),
            "`eth0` is not a PCI address (expected DDDD:BB:DD.F, e.g. 0000:3b:00.0)"
        );
    }

    #[test]
    fn hex_attributes() {
        let p = Path::new("/x");
        assert_eq!(parse_hex(p, "0x10ee\n").unwrap(), 0x10ee);
        assert_eq!(parse_hex(p, "0x020000").unwrap(), 0x020000);
        assert_eq!(parse_hex(p, "1d0f").unwrap(), 0x1d0f);
        assert_eq!(parse_hex(p, "0xzz").unwrap_err().to_string(), "/x: unexpected contents `0xzz`");
    }

    #[test]
    fn group_members_that_block_vfio() {
        let m = |d: Option<&str>, bridge| GroupMember { name: "x".into(), driver: d.map(String::from), bridge };
        assert!(!m(None, false).blocks_vfio());
        assert!(!m(Some("vfio-pci"), false).blocks_vfio());
        assert!(!m(Some("mlx5_vfio_pci"), false).blocks_vfio());
        assert!(!m(Some("pci-stub"), false).blocks_vfio());
        assert!(!m(Some("pcieport"), true).blocks_vfio());
        assert!(m(Some("ixgbe"), false).blocks_vfio());
        assert!(m(Some("pcieport"), false).blocks_vfio());
    }
}
