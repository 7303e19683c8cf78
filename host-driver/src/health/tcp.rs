//! `TCP_CHECK` (keepalived's check/check_tcp.c): the check succeeds when a
//! TCP connection to the target opens within `connect_timeout`; it is
//! closed at once.

use super::config::Target;
use super::Outcome;
use std::net::TcpStream;

/// A TCP connection to `t.addr` within `t.timeout`, bound as `bindto`,
/// `bind_port` and `bind_if` say.
pub fn connect(t: &Target) -> std::io::Result<TcpStream> {
    if t.bind.is_none() && t.bind_if.is_none() {
        return TcpStream::connect_timeout(&t.addr, t.timeout);
    }
    crate::sys::tcp_connect_bound(t.addr, t.bind, t.bind_if.as_deref(), t.timeout)
}

/// One `TCP_CHECK`.
pub fn check(t: &Target) -> Outcome {
    match connect(t) {
        Ok(_) => Outcome::up(format!("connected to {}", t.addr)),
        Err(e) => Outcome::down(format!("connect to {}: {e}", t.addr)),
    }
}
