//! `TCP_CHECK` (keepalived's check/check_tcp.c): the check succeeds when a
//! TCP connection to the target opens within `connect_timeout`; it is
//! closed at once.

use super::config::Target;
use super::Outcome;
use std::net::TcpStream;

/// A TCP connection to `t.addr` within `t.timeout`.
pub fn connect(t: &Target) -> std::io::Result<TcpStream> {
    TcpStream::connect_timeout(&t.addr, t.timeout)
}

/// One `TCP_CHECK`.
pub fn check(t: &Target) -> Outcome {
    match connect(t) {
        Ok(_) => Outcome::up(format!("connected to {}", t.addr)),
        Err(e) => Outcome::down(format!("connect to {}: {e}", t.addr)),
    }
}
