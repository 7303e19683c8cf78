//! # lvsnic — host driver and command-line tool
//!
//! The `lvsnic` binary runs the director: `replay` feeds a packet capture
//! through a backend (the golden model today) and writes what the director
//! transmits; `traffic` writes realistic test captures; `daemon` runs the
//! director with its control socket, which `lvsnic` followed by ipvsadm's
//! own syntax drives (`cli`, `control`); `keepalived` imports keepalived
//! virtual servers.

pub mod replay;
pub mod datapath;
pub mod regmap;
pub mod flows;
pub mod sim_bench;
pub mod slowpath;
pub mod vectors;
pub mod cli;
pub mod control;
pub mod daemon;
pub mod keepalived;
pub mod limits;
pub mod device;
pub mod conformance;
