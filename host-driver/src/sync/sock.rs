//! The sync daemon's UDP multicast sockets, set up as the kernel's
//! `make_send_sock` / `make_receive_sock` do (ip_vs_sync.c).
// `unsafe` allowed here (the crate denies it): socket(2) and setsockopt(2)
// for options std does not offer (IP_MULTICAST_IF by index, SO_BINDTODEVICE,
// SO_REUSEADDR before bind, IP_ADD_MEMBERSHIP by index, IP_MTU_DISCOVER).
#![allow(unsafe_code)]

use std::io;
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// An interface's index and MTU (from sysfs).
pub fn interface(name: &str) -> io::Result<(u32, u32)> {
    if name.is_empty() || name.contains('/') || name == "." || name == ".." {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    let read = |f: &str| -> io::Result<u32> {
        let t = std::fs::read_to_string(format!("/sys/class/net/{name}/{f}"))
            .map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))?;
        t.trim().parse().map_err(|_| io::Error::from_raw_os_error(libc::ENODEV))
    };
    Ok((read("ifindex")?, read("mtu")?))
}

fn udp_socket() -> io::Result<OwnedFd> {
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::IPPROTO_UDP) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn setopt<T>(fd: &OwnedFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
    // SAFETY: `val` points to a live `T` of the size passed; the kernel
    // only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            val as *const T as *const libc::c_void,
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn mreqn(group: Ipv4Addr, ifindex: u32) -> libc::ip_mreqn {
    libc::ip_mreqn {
        imr_multiaddr: libc::in_addr { s_addr: u32::from(group).to_be() },
        imr_address: libc::in_addr { s_addr: 0 },
        imr_ifindex: ifindex as libc::c_int,
    }
}

/// The master's socket: multicast out of `ifindex`, no loopback copy,
/// `ttl`, no path-MTU discovery (fragmentation allowed), connected to
/// `group:port`.
pub fn send_socket(ifindex: u32, group: Ipv4Addr, port: u16, ttl: u8) -> io::Result<UdpSocket> {
    let fd = udp_socket()?;
    setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &mreqn(Ipv4Addr::UNSPECIFIED, ifindex))?;
    setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, &0 as &libc::c_int)?;
    setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, &(ttl as libc::c_int))?;
    setopt(&fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, &libc::IP_PMTUDISC_DONT)?;
    let s = UdpSocket::from(fd);
    s.connect(SocketAddrV4::new(group, port))?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// The backup's socket: address reuse, bound to interface `ifname` and to
/// `group:port`, member of `group` on `ifindex`, non-blocking.
pub fn recv_socket(ifname: &str, ifindex: u32, group: Ipv4Addr, port: u16) -> io::Result<UdpSocket> {
    let fd = udp_socket()?;
    setopt(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1 as &libc::c_int)?;
    let mut dev = [0u8; libc::IFNAMSIZ];
    let n = ifname.len().min(libc::IFNAMSIZ - 1);
    dev[..n].copy_from_slice(&ifname.as_bytes()[..n]);
    setopt(&fd, libc::SOL_SOCKET, libc::SO_BINDTODEVICE, &dev)?;
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from(group).to_be() },
        sin_zero: [0; 8],
    };
    // SAFETY: `sin` is a valid sockaddr_in of the length passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &sin as *const libc::sockaddr_in as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    setopt(&fd, libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, &mreqn(group, ifindex))?;
    let s = UdpSocket::from(fd);
    s.set_nonblocking(true)?;
    Ok(s)
}
