//! The sync daemon's UDP multicast sockets, set up as the kernel's
//! `make_send_sock` / `make_receive_sock` do (ip_vs_sync.c).
//!
//! The backup's socket also reports what its receive buffer dropped: with
//! `SO_RXQ_OVFL` each datagram carries the socket's drop count
//! (`sk_drops`) in a control message ([`recv_counting`]), and
//! `SO_MEMINFO` reads it at any time ([`socket_drops`]).
//!
//! The group is IPv4 (224.0.0.81 by default) or IPv6 (`--mcast-group
//! ff02::...`): the kernel makes the sockets of the group's family and sets
//! the same options at the IPv6 level (`IPV6_MULTICAST_IF`, `_LOOP`,
//! `_HOPS`, `IPV6_MTU_DISCOVER`, `ipv6_sock_mc_join`); an IPv6 master's
//! socket is not bound to the interface's address (`make_send_sock` binds
//! only an IPv4 one).
// `unsafe` allowed here (the crate denies it): socket(2) and setsockopt(2)
// for options std does not offer (IP_MULTICAST_IF by index, SO_BINDTODEVICE,
// SO_REUSEADDR before bind, IP_ADD_MEMBERSHIP by index, IP_MTU_DISCOVER and
// their IPv6 forms, SO_RXQ_OVFL), bind(2) of a raw address, recvmsg(2) for
// the drop count, getsockopt(2) SO_MEMINFO, shutdown(2).
#![allow(unsafe_code)]

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// `SO_RXQ_OVFL` (asm-generic/socket.h; not in the libc crate for Linux).
const SO_RXQ_OVFL: libc::c_int = 40;
/// `SO_MEMINFO` (asm-generic/socket.h).
const SO_MEMINFO: libc::c_int = 55;

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

/// A UDP socket of `group`'s family.
fn udp_socket(group: IpAddr) -> io::Result<OwnedFd> {
    let af = if group.is_ipv6() { libc::AF_INET6 } else { libc::AF_INET };
    // SAFETY: socket(2) with constant arguments; the result is checked.
    let fd = unsafe { libc::socket(af, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, libc::IPPROTO_UDP) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn setopt<T>(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, val: &T) -> io::Result<()> {
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

fn mreq6(group: Ipv6Addr, ifindex: u32) -> libc::ipv6_mreq {
    libc::ipv6_mreq { ipv6mr_multiaddr: libc::in6_addr { s6_addr: group.octets() }, ipv6mr_interface: ifindex }
}

/// The master's socket: multicast out of `ifindex`, no loopback copy,
/// `ttl` (IPv6: hop limit), no path-MTU discovery (fragmentation
/// allowed), connected to `group:port`.
pub fn send_socket(ifindex: u32, group: IpAddr, port: u16, ttl: u8) -> io::Result<UdpSocket> {
    let fd = udp_socket(group)?;
    match group {
        IpAddr::V4(_) => {
            setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &mreqn(Ipv4Addr::UNSPECIFIED, ifindex))?;
            setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_LOOP, &0 as &libc::c_int)?;
            setopt(&fd, libc::IPPROTO_IP, libc::IP_MULTICAST_TTL, &(ttl as libc::c_int))?;
            setopt(&fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER, &libc::IP_PMTUDISC_DONT)?;
        }
        IpAddr::V6(_) => {
            setopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_IF, &(ifindex as libc::c_int))?;
            setopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_LOOP, &0 as &libc::c_int)?;
            setopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_MULTICAST_HOPS, &(ttl as libc::c_int))?;
            setopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_MTU_DISCOVER, &libc::IPV6_PMTUDISC_DONT)?;
        }
    }
    let s = UdpSocket::from(fd);
    s.connect(SocketAddr::new(group, port))?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// Binds `fd` to `group:port` (no scope id, as `get_mcast_sockaddr`
/// leaves it; the socket is bound to the interface already).
fn bind_group(fd: &OwnedFd, group: IpAddr, port: u16) -> io::Result<()> {
    // SAFETY: each arm passes a valid sockaddr_in / sockaddr_in6 that lives
    // across the call, with its own length.
    let rc = unsafe {
        match group {
            IpAddr::V4(g) => {
                let sin = libc::sockaddr_in {
                    sin_family: libc::AF_INET as libc::sa_family_t,
                    sin_port: port.to_be(),
                    sin_addr: libc::in_addr { s_addr: u32::from(g).to_be() },
                    sin_zero: [0; 8],
                };
                libc::bind(
                    fd.as_raw_fd(),
                    &sin as *const libc::sockaddr_in as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
                )
            }
            IpAddr::V6(g) => {
                let sin6 = libc::sockaddr_in6 {
                    sin6_family: libc::AF_INET6 as libc::sa_family_t,
                    sin6_port: port.to_be(),
                    sin6_flowinfo: 0,
                    sin6_addr: libc::in6_addr { s6_addr: g.octets() },
                    sin6_scope_id: 0,
                };
                libc::bind(
                    fd.as_raw_fd(),
                    &sin6 as *const libc::sockaddr_in6 as *const libc::sockaddr,
                    std::mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
                )
            }
        }
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The backup's socket: address reuse, bound to interface `ifname` and to
/// `group:port`, member of `group` on `ifindex`, non-blocking.
pub fn recv_socket(ifname: &str, ifindex: u32, group: IpAddr, port: u16) -> io::Result<UdpSocket> {
    let fd = udp_socket(group)?;
    setopt(&fd, libc::SOL_SOCKET, libc::SO_REUSEADDR, &1 as &libc::c_int)?;
    let mut dev = [0u8; libc::IFNAMSIZ];
    let n = ifname.len().min(libc::IFNAMSIZ - 1);
    dev[..n].copy_from_slice(&ifname.as_bytes()[..n]);
    setopt(&fd, libc::SOL_SOCKET, libc::SO_BINDTODEVICE, &dev)?;
    bind_group(&fd, group, port)?;
    match group {
        IpAddr::V4(g) => setopt(&fd, libc::IPPROTO_IP, libc::IP_ADD_MEMBERSHIP, &mreqn(g, ifindex))?,
        IpAddr::V6(g) => setopt(&fd, libc::IPPROTO_IPV6, libc::IPV6_ADD_MEMBERSHIP, &mreq6(g, ifindex))?,
    }
    let s = UdpSocket::from(fd);
    count_drops(&s)?;
    s.set_nonblocking(true)?;
    Ok(s)
}

/// Sets `SO_RXQ_OVFL` on `s`: each datagram queued from now on carries the
/// socket's drop count, read by [`recv_counting`].
pub fn count_drops(s: &UdpSocket) -> io::Result<()> {
    setopt(s, libc::SOL_SOCKET, SO_RXQ_OVFL, &1 as &libc::c_int)
}

/// Receives one datagram into `buf` (truncated to its length, as `recv`
/// does); with it the socket's drop count (`SO_RXQ_OVFL`, cumulative since
/// the socket was made) when the datagram carries one.
pub fn recv_counting(s: &UdpSocket, buf: &mut [u8]) -> io::Result<(usize, Option<u32>)> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr() as *mut libc::c_void, iov_len: buf.len() };
    // Room for a few control messages, 8-byte aligned as cmsghdr needs.
    let mut ctrl = [0u64; 8];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = std::mem::size_of_val(&ctrl) as _;
    // SAFETY: `iov` describes `buf` (writable for its length) and
    // `msg_control` describes `ctrl`; both outlive the call.
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut drops = None;
    // SAFETY: the CMSG macros walk the control buffer the kernel filled,
    // within the `msg_controllen` it set (at most `ctrl`'s size); the data
    // is read unaligned and only from a header whose length covers it.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let h = &*c;
            if h.cmsg_level == libc::SOL_SOCKET
                && h.cmsg_type == SO_RXQ_OVFL
                && h.cmsg_len as usize >= libc::CMSG_LEN(4) as usize
            {
                drops = Some(std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const u32));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, drops))
}

/// The socket's drop count now (`SO_MEMINFO`, `SK_MEMINFO_DROPS`): what
/// its receive buffer refused since it was made.
pub fn socket_drops(s: &UdpSocket) -> io::Result<u32> {
    let mut info = [0u32; 16];
    let mut len = std::mem::size_of_val(&info) as libc::socklen_t;
    // SAFETY: `info` is writable for `len` bytes; the kernel writes at
    // most that and sets `len` to what it wrote.
    let rc = unsafe {
        libc::getsockopt(s.as_raw_fd(), libc::SOL_SOCKET, SO_MEMINFO, info.as_mut_ptr() as *mut libc::c_void, &mut len)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    let i = libc::SK_MEMINFO_DROPS as usize;
    if (len as usize) < (i + 1) * 4 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    Ok(info[i])
}

/// Wakes a thread blocked receiving on `s` (it then reads 0 bytes);
/// the error of an unconnected socket (`ENOTCONN`, after the wake-up) is
/// not one.
pub fn shutdown_read(s: &UdpSocket) {
    // SAFETY: shutdown(2) on a descriptor `s` owns; no memory is passed.
    unsafe {
        libc::shutdown(s.as_raw_fd(), libc::SHUT_RD);
    }
}
