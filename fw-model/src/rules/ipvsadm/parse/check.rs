//! Validation: ipvsadm's `commands_v_options` and `tunnel_types_v_options`
//! tables with `generic_opt_check()` / `tunnel_opt_check()`, and the checks
//! `process_options()` makes once every option is known.

use super::assemble::Fwd;
use super::options::Scan;
use super::{fail, CommandError, DEFAULT_SCHEDULER, SVC_F_ONEPACKET, SVC_F_PERSISTENT};
use crate::rules::Protocol;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Cmd {
    Add = 0,
    Edit,
    Del,
    Flush,
    List,
    AddDest,
    DelDest,
    EditDest,
    Timeout,
    StartDaemon,
    StopDaemon,
    Restore,
    Save,
    Zero,
}

pub(super) const CMD_NAMES: [&str; 14] = [
    "add-service",
    "edit-service",
    "delete-service",
    "flush",
    "list",
    "add-server",
    "delete-server",
    "edit-server",
    "set",
    "start-daemon",
    "stop-daemon",
    "restore",
    "save",
    "zero",
];

// Option bit numbers (OPTC_*).
pub(super) const O_NUMERIC: u32 = 0;
pub(super) const O_CONNECTION: u32 = 1;
pub(super) const O_SERVICE: u32 = 2;
pub(super) const O_SCHEDULER: u32 = 3;
pub(super) const O_PERSISTENT: u32 = 4;
pub(super) const O_NETMASK: u32 = 5;
pub(super) const O_SERVER: u32 = 6;
pub(super) const O_FORWARD: u32 = 7;
pub(super) const O_WEIGHT: u32 = 8;
pub(super) const O_UTHRESHOLD: u32 = 9;
pub(super) const O_LTHRESHOLD: u32 = 10;
pub(super) const O_MCAST: u32 = 11;
pub(super) const O_TIMEOUT: u32 = 12;
pub(super) const O_DAEMON: u32 = 13;
pub(super) const O_STATS: u32 = 14;
pub(super) const O_RATE: u32 = 15;
pub(super) const O_THRESHOLDS: u32 = 16;
pub(super) const O_PERSISTENTCONN: u32 = 17;
pub(super) const O_NOSORT: u32 = 18;
pub(super) const O_SYNCID: u32 = 19;
pub(super) const O_EXACT: u32 = 20;
pub(super) const O_ONEPACKET: u32 = 21;
pub(super) const O_PE: u32 = 22;
pub(super) const O_SCHED_FLAGS: u32 = 23;
pub(super) const O_MCAST_GROUP: u32 = 24;
pub(super) const O_MCAST_PORT: u32 = 25;
pub(super) const O_MCAST_TTL: u32 = 26;
pub(super) const O_SYNC_MAXLEN: u32 = 27;
pub(super) const O_TUN_INFO: u32 = 28;
pub(super) const O_TUN_TYPE: u32 = 29;
pub(super) const O_TUN_PORT: u32 = 30;
pub(super) const O_TUN_NOCSUM: u32 = 31;
pub(super) const O_TUN_CSUM: u32 = 32;
pub(super) const O_TUN_REMCSUM: u32 = 33;
pub(super) const NUMBER_OF_OPT: u32 = 34;

pub(super) const OPT_NAMES: [&str; NUMBER_OF_OPT as usize] = [
    "numeric",
    "connection",
    "service-address",
    "scheduler",
    "persistent",
    "netmask",
    "real-server",
    "forwarding-method",
    "weight",
    "u-threshold",
    "l-threshold",
    "mcast-interface",
    "timeout",
    "daemon",
    "stats",
    "rate",
    "thresholds",
    "persistent-conn",
    "nosort",
    "syncid",
    "exact",
    "ops",
    "pe",
    "sched-flags",
    "mcast-group",
    "mcast-port",
    "mcast-ttl",
    "sync-maxlen",
    "tun-info",
    "tun-type",
    "tun-port",
    "tun-nocsum",
    "tun-csum",
    "tun-remcsum",
];

/// Legal option/command combinations, one row per command, one column per
/// option bit: '+' compulsory, 'x' illegal, '1' mutually exclusive, ' ' optional.
/// Columns: -n -c svc -s -p -M -r fwd -w -x -y mcast timeout daemon stats rate
/// thresholds persistent-conn nosort syncid exact ops pe -b mcast-group
/// mcast-port mcast-ttl sync-maxlen tun-info tun-type tun-port tun-nocsum
/// tun-csum tun-remcsum.
pub(super) const LEGALITY: [&[u8; 34]; 14] = [
    b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx", // add-service
    b"xx+   xxxxxxxxxxxxxxx   xxxxxxxxxx", // edit-service
    b"xx+xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // delete-service
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // flush
    b" 11xxxxxxxxx11       xxxxxxx xxxxx", // list
    b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ", // add-server
    b"xx+xxx+xxxxxxxxxxxxxxxxxxxxxxxxxxx", // delete-server
    b"xx+xxx+    xxxxxxxxxxxxxxxxxx     ", // edit-server
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // set
    b"xxxxxxxxxxx xxxxxxx xxxx    xxxxxx", // start-daemon
    b"xxxxxxxxxxxxxxxxxxx xxxxxxxxxxxxxx", // stop-daemon
    b"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // restore
    b" xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // save
    b"xx xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", // zero
];

/// `generic_opt_check()`
pub(super) fn generic_opt_check(cmd: Cmd, options: u64) -> Result<(), CommandError> {
    let i = cmd as usize;
    check_row(LEGALITY[i], 0..NUMBER_OF_OPT as usize, options, &format!("'{}' command", CMD_NAMES[i]))
}

/// One row of a legality table (`+` required, `x` illegal, `1` at most one
/// of the `1`s, space optional) against the options given; `opts` are the
/// option numbers of the row's columns, `target` names the row in messages.
fn check_row(row: &[u8], opts: impl Iterator<Item = usize>, options: u64, target: &str) -> Result<(), CommandError> {
    let mut last = 0usize;
    let mut count = 0;
    for (j, k) in opts.enumerate() {
        if options & (1u64 << k) == 0 {
            if row[j] == b'+' {
                return Err(fail(format!("You need to supply the '{}' option for the {target}", OPT_NAMES[k])));
            }
        } else {
            if row[j] == b'x' {
                return Err(fail(format!("Illegal '{}' option with the {target}", OPT_NAMES[k])));
            }
            if row[j] == b'1' {
                count += 1;
                if count == 1 {
                    last = k;
                    continue;
                }
                return Err(fail(format!(
                    "The option '{}' conflicts with the '{}' option in the {target}",
                    OPT_NAMES[k], OPT_NAMES[last]
                )));
            }
        }
    }
    Ok(())
}

pub(super) const TUN_NAMES: [&str; 3] = ["ipip", "gue", "gre"];
/// tunnel_types_v_options: columns tun-port, tun-nocsum, tun-csum, tun-remcsum.
pub(super) const TUN_LEGALITY: [&[u8; 4]; 3] = [b"xxxx", b"+111", b"x11x"];
pub(super) const TUN_OPTS: [u32; 4] = [O_TUN_PORT, O_TUN_NOCSUM, O_TUN_CSUM, O_TUN_REMCSUM];

/// `tunnel_opt_check()`
pub(super) fn tunnel_opt_check(tun_type: usize, options: u64) -> Result<(), CommandError> {
    let opts = TUN_OPTS.iter().map(|&k| k as usize);
    check_row(TUN_LEGALITY[tun_type], opts, options, &format!("'{}' tunnel type", TUN_NAMES[tun_type]))
}

pub(super) fn set_option(options: &mut u64, optc: u32) -> Result<(), CommandError> {
    let bit = 1u64 << optc;
    if *options & bit != 0 {
        return Err(fail(format!("multiple '{}' options specified", OPT_NAMES[optc as usize])));
    }
    *options |= bit;
    Ok(())
}

/// `process_options()`: the legality table, then the checks and defaults
/// of the service, daemon and real-server commands.
pub(super) fn process_options(cmd: Cmd, s: &mut Scan) -> Result<(), CommandError> {
    generic_opt_check(cmd, s.options)?;
    let ce = &mut s.ce;
    if cmd == Cmd::Add || cmd == Cmd::Edit {
        if ce.fwmark == 0 && ce.svc_port == 0 && ce.flags & SVC_F_PERSISTENT == 0 {
            return Err(fail("Zero port specified for non-persistent service"));
        }
        if ce.flags & SVC_F_ONEPACKET != 0 && ce.fwmark == 0 && ce.protocol != Some(Protocol::Udp) {
            return Err(fail("One-Packet Scheduling is only for UDP virtual services"));
        }
        if ce.sched.is_empty() {
            ce.sched = DEFAULT_SCHEDULER.to_string();
        }
    }
    if cmd == Cmd::StartDaemon && ce.mcast_ifn.is_empty() {
        ce.mcast_ifn = "eth0".to_string();
    }
    if cmd == Cmd::AddDest || cmd == Cmd::EditDest {
        // The destination port must equal the service port for DR and TUN
        // (not for fwmark services).
        if ce.fwmark == 0 && (ce.fwd == Fwd::Tunnel || ce.fwd == Fwd::Route) {
            ce.dest_port = ce.svc_port;
        }
        if ce.dest_af() != ce.svc_af && ce.fwd != Fwd::Tunnel {
            return Err(fail("Different address family is allowed only for tunneling servers"));
        }
        let tun_opts = (1u64 << O_TUN_TYPE)
            | (1u64 << O_TUN_PORT)
            | (1u64 << O_TUN_NOCSUM)
            | (1u64 << O_TUN_CSUM)
            | (1u64 << O_TUN_REMCSUM);
        if s.options & tun_opts != 0 && ce.fwd != Fwd::Tunnel {
            return Err(fail("Tunnel options conflict with forward method"));
        }
        tunnel_opt_check(ce.tun_type, s.options)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_rows_have_34_columns() {
        for row in LEGALITY {
            assert_eq!(row.len(), NUMBER_OF_OPT as usize);
        }
    }
}
