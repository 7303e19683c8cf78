//! PCI devices as sysfs shows them: BDF addresses, IDs, the bound driver,
//! the IOMMU group and its members. Every path is taken relative to a
//! sysfs root so tests run against a fake tree.
