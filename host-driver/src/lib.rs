//! # lvsnic — host driver and command-line tool
//!
//! The `lvsnic` binary runs the director: `replay` feeds a packet capture
//! through a backend (the golden model today) and writes what the director
//! transmits; `traffic` writes realistic test captures.

pub mod replay;
pub mod datapath;
pub mod flows;
pub mod slowpath;
pub mod vectors;
pub mod device;
