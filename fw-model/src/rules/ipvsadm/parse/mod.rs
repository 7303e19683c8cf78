//! The ipvsadm command line: popt option syntax, `parse_options()` and
//! `process_options()` of ipvsadm.c (1.31), with the same checks in the same
//! order and ipvsadm's own error wording.

//!
//! One submodule per concern: [`popt`] scans the options, [`options`] sets
//! what each service, real-server, list or daemon option says, [`check`]
//! validates (`generic_opt_check()`, `tunnel_opt_check()` and the rest of
//! `process_options()`), [`assemble`] makes the [`Command`].

mod assemble;
mod check;
mod options;
mod popt;

use std::net::IpAddr;

use super::libc::c_str;
use crate::rules::{DestRule, SchedFlags, ServiceKey, ServiceRule};
use options::{First, Scan};
pub use popt::first_option_fails;
use popt::Popt;

/// Largest persistence / `--set` timeout ipvsadm accepts (`MAX_TIMEOUT`, 31 days).
pub const MAX_TIMEOUT: u32 = 86400 * 31;

/// Scheduler used when `-A`/`-E` has no `-s` (`DEF_SCHED`).
pub const DEFAULT_SCHEDULER: &str = "wlc";

/// Kernel service flags (include/uapi/linux/ip_vs.h).
pub(crate) const SVC_F_PERSISTENT: u32 = 0x0001;
pub(crate) const SVC_F_ONEPACKET: u32 = 0x0004;
pub(crate) const SVC_F_SCHED_MASK: u32 = SchedFlags::SCHED1 | SchedFlags::SCHED2 | SchedFlags::SCHED3;

/// One ipvsadm invocation, as `parse_command` understood it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `-A`: add a virtual service (`dests` is empty).
    AddService(ServiceRule),
    /// `-E`: replace a virtual service's settings, keeping its real servers
    /// (`dests` is empty). Options not given take their defaults, as with
    /// ipvsadm (e.g. no `-s` means `wlc`).
    EditService(ServiceRule),
    /// `-D`
    DeleteService(ServiceKey),
    /// `-C`
    Clear,
    /// `-a`
    AddDest(ServiceKey, DestRule),
    /// `-e`: replace a real server's settings (omitted options take defaults).
    EditDest(ServiceKey, DestRule),
    /// `-d`: the server address and port (port not forced, as in ipvsadm).
    DeleteDest(ServiceKey, IpAddr, u16),
    /// `-L`/`-l` (and no arguments at all).
    List(ListOptions),
    /// `-Z [service]`; `None` zeroes everything (also for `-t 0.0.0.0:0`,
    /// which libipvs sends as "all").
    Zero(Option<ServiceKey>),
    /// `--set tcp tcpfin udp` in seconds; 0 leaves a timeout unchanged.
    SetTimeouts {
        /// TCP established timeout.
        tcp: u32,
        /// TCP FIN_WAIT timeout.
        tcpfin: u32,
        /// UDP timeout.
        udp: u32,
    },
    /// `-S [-n]`
    Save {
        /// `-n`: numeric output.
        numeric: bool,
    },
    /// `-R`
    Restore,
    /// `--start-daemon master|backup`: parsed so that callers can reject it.
    StartDaemon(SyncDaemon),
    /// `--stop-daemon master|backup`
    StopDaemon(SyncDaemon),
    /// `-h`: ipvsadm prints its usage and exits 0.
    Help,
    /// `-v`: ipvsadm prints its version and exits 0.
    Version,
}

/// Modifiers of `-L` (`ipvsadm -L|l [virtual-service] [options]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// `-L -t VIP:port`: list one service (no version header line).
    pub service: Option<ServiceKey>,
    /// `-n`
    pub numeric: bool,
    /// `-c`
    pub connections: bool,
    /// `--stats`
    pub stats: bool,
    /// `--rate`
    pub rate: bool,
    /// `--thresholds`
    pub thresholds: bool,
    /// `--persistent-conn`
    pub persistent_conn: bool,
    /// `--tun-info`
    pub tun_info: bool,
    /// `--timeout`
    pub timeout: bool,
    /// `--daemon`
    pub daemon: bool,
    /// `--exact`/`-X`
    pub exact: bool,
    /// `--nosort`
    pub nosort: bool,
}

/// Sync daemon role (`--start-daemon`/`--stop-daemon` argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DaemonState {
    /// `master`: sends connection updates.
    Master,
    /// `backup`: receives them.
    Backup,
}

/// `--start-daemon`/`--stop-daemon` and their options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncDaemon {
    /// Master or backup.
    pub state: DaemonState,
    /// `--mcast-interface` (default `eth0` for start, empty for stop).
    pub mcast_ifn: String,
    /// `--syncid` 0..=255 (default 0).
    pub syncid: u8,
    /// `--sync-maxlen`
    pub sync_maxlen: Option<u16>,
    /// `--mcast-group`
    pub mcast_group: Option<IpAddr>,
    /// `--mcast-port`
    pub mcast_port: Option<u16>,
    /// `--mcast-ttl`
    pub mcast_ttl: Option<u8>,
}

/// Why a command line was refused. `Display` is one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    /// No command, or the first option is not a command. ipvsadm answers
    /// these with "Try `ipvsadm -h' or 'ipvsadm --help' for more information."
    #[error("{0} (try `ipvsadm -h' or 'ipvsadm --help' for more information)")]
    Usage(String),
    /// An option popt could not parse: unknown option, missing argument.
    /// Shown as popt does: `-t: missing argument`.
    #[error("{option}: {reason}")]
    BadOption {
        /// The option as written.
        option: String,
        /// What popt found wrong.
        reason: &'static str,
    },
    /// One of ipvsadm's own `fail()` messages, verbatim.
    #[error("{0}")]
    Invalid(String),
    /// A host or service name where ipvsadm would have done a lookup:
    /// lvsnic takes numeric addresses and ports only.
    #[error("{context}: {what} `{name}' is not numeric; numeric addresses and ports are required (no name lookups)")]
    NotNumeric {
        /// ipvsadm's message for the option.
        context: &'static str,
        /// "host name" or "service name".
        what: &'static str,
        /// The name given.
        name: String,
    },
}

fn fail(msg: impl Into<String>) -> CommandError {
    CommandError::Invalid(msg.into())
}

/// Parse one ipvsadm invocation. `args` are the words after the program
/// name (`["-A", "-t", "10.0.0.1:80", "-s", "rr"]`); no words at all means
/// `-L`, as for ipvsadm. Addresses and ports must be numeric.
pub fn parse_command(args: &[&str]) -> Result<Command, CommandError> {
    // argv strings end at their first NUL.
    let args: Vec<&str> = args.iter().map(|a| c_str(a)).collect();
    if args.is_empty() {
        return Ok(Command::List(ListOptions::default()));
    }
    let mut p = Popt::new(&args);
    let mut s = Scan::new();
    let cmd = match s.command_option(&mut p)? {
        First::Help => return Ok(Command::Help),
        First::Version => return Ok(Command::Version),
        First::Command(cmd) => cmd,
    };
    while let Some((tag, arg)) = p.next_option()? {
        s.apply(tag, arg, &p)?;
    }
    s.leftovers(cmd, &mut p)?;
    check::process_options(cmd, &mut s)?;
    assemble::command(cmd, s)
}
