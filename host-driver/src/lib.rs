//! # lvsnic — host driver and command-line tool
//!
//! The `lvsnic` binary runs the director: `replay` feeds a packet capture
//! through a backend (the golden model today) and writes what the director
//! transmits; `traffic` writes realistic test captures; `daemon` runs the
//! director with its control socket, which `lvsnic` followed by ipvsadm's
//! own syntax drives (`cli`, `control`); `keepalived` imports keepalived
//! virtual servers.

//!
//! Module dependencies point one way (`scripts/modgraph.py --check`, the
//! graph in docs/architecture.md): commands (`cli`, `replay`, `vectors`,
//! `daemon`, `keepalived`) → the exception loop and control plane
//! (`control`, `slowpath`, `flows`, `limits`) → the card (`device`), with
//! the control socket's protocol (`daemon::proto`) and the ipvsadm text
//! (`invocation`) as leaves both sides use.
//!
//! Cargo feature `sim` (default): the `sim` backend, the verilated RTL core
//! (`lvsnic-sim`, which needs Verilator to build). Without it the binary
//! has the `model` and `vfio` backends only, and `--backend sim` says so.

pub mod bulk;
pub mod changes;
pub mod cli;
pub mod conformance;
pub mod control;
pub mod daemon;
pub mod deadline;
pub mod device;
pub mod drain;
pub mod flows;
pub mod health;
pub mod invocation;
pub mod keepalived;
pub mod limits;
pub mod logging;
pub mod manpages;
pub mod neighbors;
pub mod outfile;
pub mod reload;
pub mod replay;
pub mod rtnl;
pub mod setup;
#[cfg(feature = "sim")]
pub mod sim_bench;
pub mod slowpath;
pub mod state;
pub mod sync;
pub mod sys;
pub mod vectors;

/// The one-line error of `--backend sim` in a build without the `sim`
/// feature.
pub const NO_SIM_BACKEND: &str =
    "the sim backend is not in this build of lvsnic (built without the `sim` feature; rebuild with default features and Verilator installed)";
