//! The two VFIO ioctls that `vfio-ioctls` (rust-vmm, [`super::vfio_pci`]
//! uses it for everything else) does not serve with a result:
//!
//! * `VFIO_DEVICE_GET_INFO`'s `flags`: the crate reads them but keeps them
//!   private, so whether the kernel offers a reset
//!   (`VFIO_DEVICE_FLAGS_RESET`) cannot be asked of it;
//! * `VFIO_DEVICE_RESET`: the crate's `VfioDevice::reset()` returns `()`:
//!   it skips the call silently when the flag is clear and drops the
//!   ioctl's error, so a reset that did not happen looks like one that
//!   did.
//!
//! The argument struct comes from `vfio-bindings` (generated from the
//! kernel header); the request numbers are built as the kernel header
//! builds them and compared with the installed header by
//! `tests/device_vfio.rs`. Each function holds the one `unsafe` block of
//! its system call.
// `unsafe` allowed here (the crate denies it): the two VFIO ioctl(2) calls.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
pub use vfio_bindings::bindings::vfio::vfio_device_info;

/// `_IO(type, nr)`: no direction, no size; VFIO passes sizes in `argsz`.
pub const fn io(ty: u8, nr: u8) -> u32 {
    // _IOC(dir = 0, type, nr, size = 0) = dir << 30 | size << 16 | type << 8 | nr
    (ty as u32) << 8 | nr as u32
}

/// `VFIO_TYPE`: `';'`.
pub const VFIO_TYPE: u8 = b';';
/// `VFIO_BASE`.
pub const VFIO_BASE: u8 = 100;

/// `VFIO_DEVICE_GET_INFO` (device): fills a `struct vfio_device_info`.
pub const VFIO_DEVICE_GET_INFO: u32 = io(VFIO_TYPE, VFIO_BASE + 7);
/// `VFIO_DEVICE_RESET` (device): resets the function, if the device info
/// has `VFIO_DEVICE_FLAGS_RESET` (else the kernel answers `EINVAL`).
pub const VFIO_DEVICE_RESET: u32 = io(VFIO_TYPE, VFIO_BASE + 11);

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `VFIO_DEVICE_GET_INFO`.
pub fn device_get_info(device: BorrowedFd<'_>) -> io::Result<vfio_device_info> {
    let mut i = vfio_device_info { argsz: std::mem::size_of::<vfio_device_info>() as u32, ..Default::default() };
    // SAFETY: `device` is an open descriptor borrowed for the call; `i` is
    // a live, exclusive, aligned `vfio_device_info` (bindgen's `repr(C)`,
    // integers only) whose `argsz` is its size, so the kernel writes at
    // most that many bytes into it.
    check(unsafe { libc::ioctl(device.as_raw_fd(), VFIO_DEVICE_GET_INFO as libc::Ioctl, &mut i as *mut vfio_device_info) })?;
    Ok(i)
}

/// `VFIO_DEVICE_RESET`.
pub fn device_reset(device: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: `device` is an open descriptor borrowed for the call; the
    // request takes no argument, so the kernel reads no user memory.
    check(unsafe { libc::ioctl(device.as_raw_fd(), VFIO_DEVICE_RESET as libc::Ioctl, 0 as libc::c_ulong) }).map(drop)
}

/// Borrows the descriptor of an object that owns it (the crate's
/// `VfioDevice`, which gives only `AsRawFd`) for as long as the object is
/// borrowed.
pub fn borrow_fd<T: AsRawFd>(owner: &T) -> BorrowedFd<'_> {
    // SAFETY: `owner` owns the descriptor and keeps it open while it
    // lives; the returned borrow cannot outlive `owner`'s borrow.
    unsafe { BorrowedFd::borrow_raw(owner.as_raw_fd()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_are_io_semicolon_100_plus_n() {
        assert_eq!(io(b';', 100), 0x3B64);
        assert_eq!(VFIO_DEVICE_GET_INFO, 0x3B6B);
        assert_eq!(VFIO_DEVICE_RESET, 0x3B6F);
        assert_eq!(std::mem::size_of::<vfio_device_info>(), 24, "20 bytes in Linux 6.1 plus the later `pad`");
    }

    #[test]
    fn ioctls_on_a_non_vfio_file_fail_cleanly() {
        let f = std::fs::File::open("/dev/null").unwrap();
        use std::os::fd::AsFd;
        assert_eq!(device_get_info(f.as_fd()).unwrap_err().raw_os_error(), Some(libc::ENOTTY));
        assert_eq!(device_reset(f.as_fd()).unwrap_err().raw_os_error(), Some(libc::ENOTTY));
        assert_eq!(borrow_fd(&f).as_raw_fd(), f.as_raw_fd());
    }
}
