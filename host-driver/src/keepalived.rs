//! keepalived import (stub).
pub fn run(_prog: &str, _file: &std::path::Path, _load: bool, _socket: Option<&std::path::Path>) -> u8 { 0 }
