//! The ipvsadm command line: popt option syntax, `parse_options()` and
//! `process_options()` of ipvsadm.c (1.31), with the same checks in the same
//! order and ipvsadm's own error wording.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::libc::{atoi, c_str, inet_aton, inet_pton4, inet_pton6, string_to_number, strtol10, truncate_bytes};
use crate::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, SchedFlags, ServiceKey, ServiceRule, TunnelCsum,
    TunnelType, DEFAULT_PERSISTENT_TIMEOUT,
};

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
    SetTimeouts { tcp: u32, tcpfin: u32, udp: u32 },
    /// `-S [-n]`
    Save { numeric: bool },
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
    Master,
    Backup,
}

/// `--start-daemon`/`--stop-daemon` and their options.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncDaemon {
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
    BadOption { option: String, reason: &'static str },
    /// One of ipvsadm's own `fail()` messages, verbatim.
    #[error("{0}")]
    Invalid(String),
    /// A host or service name where ipvsadm would have done a lookup:
    /// lvsnic takes numeric addresses and ports only.
    #[error("{context}: {what} `{name}' is not numeric; numeric addresses and ports are required (no name lookups)")]
    NotNumeric { context: &'static str, what: &'static str, name: String },
}

fn fail(msg: impl Into<String>) -> CommandError {
    CommandError::Invalid(msg.into())
}

// ---------------------------------------------------------------------------
// Option table (ipvsadm's poptOption table)

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tag {
    AddService,
    EditService,
    DeleteService,
    Clear,
    List,
    Zero,
    AddServer,
    EditServer,
    DeleteServer,
    Set,
    Help,
    Version,
    Restore,
    Save,
    StartDaemon,
    StopDaemon,
    Tcp,
    Udp,
    Sctp,
    Fwmark,
    Scheduler,
    Persistent,
    Netmask,
    RealServer,
    Masq,
    Ipip,
    Gate,
    Weight,
    UThreshold,
    LThreshold,
    Numeric,
    Connection,
    McastInterface,
    SyncId,
    Timeout,
    Daemon,
    Stats,
    Rate,
    Thresholds,
    PersistentConn,
    NoSort,
    Sort,
    Exact,
    Ipv6,
    Ops,
    Pe,
    SchedFlags,
    McastGroup,
    McastPort,
    McastTtl,
    SyncMaxlen,
    TunInfo,
    TunType,
    TunPort,
    TunNocsum,
    TunCsum,
    TunRemcsum,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    None,
    Required,
    Optional,
}

struct OptDef {
    long: &'static str,
    short: Option<char>,
    arg: ArgKind,
    tag: Tag,
}

const fn o(long: &'static str, short: Option<char>, arg: ArgKind, tag: Tag) -> OptDef {
    OptDef { long, short, arg, tag }
}

use ArgKind::{None as N, Optional as Opt, Required as Req};

/// In ipvsadm's table order (popt takes the first match).
const OPTIONS: &[OptDef] = &[
    o("add-service", Some('A'), N, Tag::AddService),
    o("edit-service", Some('E'), N, Tag::EditService),
    o("delete-service", Some('D'), N, Tag::DeleteService),
    o("clear", Some('C'), N, Tag::Clear),
    o("list", Some('L'), N, Tag::List),
    o("list", Some('l'), N, Tag::List),
    o("zero", Some('Z'), N, Tag::Zero),
    o("add-server", Some('a'), N, Tag::AddServer),
    o("edit-server", Some('e'), N, Tag::EditServer),
    o("delete-server", Some('d'), N, Tag::DeleteServer),
    o("set", None, N, Tag::Set),
    o("help", Some('h'), N, Tag::Help),
    o("version", Some('v'), N, Tag::Version),
    o("restore", Some('R'), N, Tag::Restore),
    o("save", Some('S'), N, Tag::Save),
    o("start-daemon", None, Req, Tag::StartDaemon),
    o("stop-daemon", None, Req, Tag::StopDaemon),
    o("tcp-service", Some('t'), Req, Tag::Tcp),
    o("udp-service", Some('u'), Req, Tag::Udp),
    o("sctp-service", None, Req, Tag::Sctp),
    o("fwmark-service", Some('f'), Req, Tag::Fwmark),
    o("scheduler", Some('s'), Req, Tag::Scheduler),
    o("persistent", Some('p'), Opt, Tag::Persistent),
    o("netmask", Some('M'), Req, Tag::Netmask),
    o("real-server", Some('r'), Req, Tag::RealServer),
    o("masquerading", Some('m'), N, Tag::Masq),
    o("ipip", Some('i'), N, Tag::Ipip),
    o("gatewaying", Some('g'), N, Tag::Gate),
    o("weight", Some('w'), Req, Tag::Weight),
    o("u-threshold", Some('x'), Req, Tag::UThreshold),
    o("l-threshold", Some('y'), Req, Tag::LThreshold),
    o("numeric", Some('n'), N, Tag::Numeric),
    o("connection", Some('c'), N, Tag::Connection),
    o("mcast-interface", None, Req, Tag::McastInterface),
    o("syncid", None, Req, Tag::SyncId),
    o("timeout", None, N, Tag::Timeout),
    o("daemon", None, N, Tag::Daemon),
    o("stats", None, N, Tag::Stats),
    o("rate", None, N, Tag::Rate),
    o("thresholds", None, N, Tag::Thresholds),
    o("persistent-conn", None, N, Tag::PersistentConn),
    o("nosort", None, N, Tag::NoSort),
    o("sort", None, N, Tag::Sort),
    o("exact", Some('X'), N, Tag::Exact),
    o("ipv6", Some('6'), N, Tag::Ipv6),
    o("ops", Some('o'), N, Tag::Ops),
    o("pe", None, Req, Tag::Pe),
    o("sched-flags", Some('b'), Req, Tag::SchedFlags),
    o("mcast-group", None, Req, Tag::McastGroup),
    o("mcast-port", None, Req, Tag::McastPort),
    o("mcast-ttl", None, Req, Tag::McastTtl),
    o("sync-maxlen", None, Req, Tag::SyncMaxlen),
    o("tun-info", None, N, Tag::TunInfo),
    o("tun-type", None, Req, Tag::TunType),
    o("tun-port", None, Req, Tag::TunPort),
    o("tun-nocsum", None, N, Tag::TunNocsum),
    o("tun-csum", None, N, Tag::TunCsum),
    o("tun-remcsum", None, N, Tag::TunRemcsum),
];

// ---------------------------------------------------------------------------
// A small popt: `--long[=arg]`, clustered short options (`-Ln`, `-p600`,
// `-w=3`), optional arguments that are not taken when the next word starts
// with '-', `--` ending the options, and non-option words kept as leftovers.

enum Event<'a> {
    Opt(Tag, Option<&'a str>),
    End,
    BadOpt,
    NoArg,
}

struct Popt<'a> {
    args: &'a [&'a str],
    next: usize,
    cluster: Option<&'a str>,
    rest_leftover: bool,
    leftovers: Vec<&'a str>,
    next_leftover: usize,
}

impl<'a> Popt<'a> {
    fn new(args: &'a [&'a str]) -> Self {
        Popt { args, next: 0, cluster: None, rest_leftover: false, leftovers: Vec::new(), next_leftover: 0 }
    }

    /// `poptBadOption()`: the argument word consumed last.
    fn bad_option(&self) -> String {
        if self.next == 0 {
            String::new()
        } else {
            self.args[self.next - 1].to_string()
        }
    }

    fn get_arg(&mut self) -> Option<&'a str> {
        let r = self.leftovers.get(self.next_leftover).copied();
        if r.is_some() {
            self.next_leftover += 1;
        }
        r
    }

    fn next_opt(&mut self) -> Event<'a> {
        loop {
            let mut long_arg: Option<&'a str> = None;
            let def: &OptDef;
            if self.cluster.is_none() {
                if self.next == self.args.len() {
                    return Event::End;
                }
                let word = self.args[self.next];
                self.next += 1;
                if self.rest_leftover || !word.starts_with('-') || word == "-" {
                    self.leftovers.push(word);
                    continue;
                }
                if word == "--" {
                    self.rest_leftover = true;
                    continue;
                }
                if let Some(body) = word.strip_prefix("--") {
                    let (name, arg) = match body.find('=') {
                        Some(i) => (&body[..i], Some(&body[i + 1..])),
                        None => (body, None),
                    };
                    match OPTIONS.iter().find(|d| d.long == name) {
                        Some(d) => {
                            def = d;
                            long_arg = arg;
                        }
                        None => return Event::BadOpt,
                    }
                } else {
                    // "-xyz": single-dash long names never match ipvsadm's
                    // table (no POPT_ARGFLAG_ONEDASH), so it is a cluster.
                    self.cluster = Some(&word[1..]);
                    continue;
                }
            } else {
                let c = self.cluster.take().unwrap_or("");
                let ch = match c.chars().next() {
                    Some(ch) => ch,
                    None => return Event::BadOpt,
                };
                match OPTIONS.iter().find(|d| d.short == Some(ch)) {
                    Some(d) => def = d,
                    None => return Event::BadOpt,
                }
                let rest = &c[ch.len_utf8()..];
                if !rest.is_empty() {
                    self.cluster = Some(rest.strip_prefix('=').unwrap_or(rest));
                }
            }
            if def.arg == ArgKind::None {
                return Event::Opt(def.tag, None);
            }
            let arg = if let Some(a) = long_arg {
                Some(a)
            } else if let Some(rest) = self.cluster.take() {
                Some(rest)
            } else if self.next == self.args.len() {
                if def.arg == ArgKind::Optional {
                    None
                } else {
                    return Event::NoArg;
                }
            } else if def.arg == ArgKind::Optional && self.args[self.next].starts_with('-') {
                None
            } else {
                let a = self.args[self.next];
                self.next += 1;
                Some(a)
            };
            return Event::Opt(def.tag, arg);
        }
    }
}

// ---------------------------------------------------------------------------
// commands_v_options

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cmd {
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

const CMD_NAMES: [&str; 14] = [
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
const O_NUMERIC: u32 = 0;
const O_CONNECTION: u32 = 1;
const O_SERVICE: u32 = 2;
const O_SCHEDULER: u32 = 3;
const O_PERSISTENT: u32 = 4;
const O_NETMASK: u32 = 5;
const O_SERVER: u32 = 6;
const O_FORWARD: u32 = 7;
const O_WEIGHT: u32 = 8;
const O_UTHRESHOLD: u32 = 9;
const O_LTHRESHOLD: u32 = 10;
const O_MCAST: u32 = 11;
const O_TIMEOUT: u32 = 12;
const O_DAEMON: u32 = 13;
const O_STATS: u32 = 14;
const O_RATE: u32 = 15;
const O_THRESHOLDS: u32 = 16;
const O_PERSISTENTCONN: u32 = 17;
const O_NOSORT: u32 = 18;
const O_SYNCID: u32 = 19;
const O_EXACT: u32 = 20;
const O_ONEPACKET: u32 = 21;
const O_PE: u32 = 22;
const O_SCHED_FLAGS: u32 = 23;
const O_MCAST_GROUP: u32 = 24;
const O_MCAST_PORT: u32 = 25;
const O_MCAST_TTL: u32 = 26;
const O_SYNC_MAXLEN: u32 = 27;
const O_TUN_INFO: u32 = 28;
const O_TUN_TYPE: u32 = 29;
const O_TUN_PORT: u32 = 30;
const O_TUN_NOCSUM: u32 = 31;
const O_TUN_CSUM: u32 = 32;
const O_TUN_REMCSUM: u32 = 33;
const NUMBER_OF_OPT: u32 = 34;

const OPT_NAMES: [&str; NUMBER_OF_OPT as usize] = [
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
const LEGALITY: [&[u8; 34]; 14] = [
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
fn generic_opt_check(cmd: Cmd, options: u64) -> Result<(), CommandError> {
    let i = cmd as usize;
    let row = LEGALITY[i];
    let mut last = 0usize;
    let mut count = 0;
    for j in 0..NUMBER_OF_OPT as usize {
        let set = options & (1u64 << j) != 0;
        if !set {
            if row[j] == b'+' {
                return Err(fail(format!(
                    "You need to supply the '{}' option for the '{}' command",
                    OPT_NAMES[j], CMD_NAMES[i]
                )));
            }
        } else {
            if row[j] == b'x' {
                return Err(fail(format!("Illegal '{}' option with the '{}' command", OPT_NAMES[j], CMD_NAMES[i])));
            }
            if row[j] == b'1' {
                count += 1;
                if count == 1 {
                    last = j;
                    continue;
                }
                return Err(fail(format!(
                    "The option '{}' conflicts with the '{}' option in the '{}' command",
                    OPT_NAMES[j], OPT_NAMES[last], CMD_NAMES[i]
                )));
            }
        }
    }
    Ok(())
}

const TUN_NAMES: [&str; 3] = ["ipip", "gue", "gre"];
/// tunnel_types_v_options: columns tun-port, tun-nocsum, tun-csum, tun-remcsum.
const TUN_LEGALITY: [&[u8; 4]; 3] = [b"xxxx", b"+111", b"x11x"];
const TUN_OPTS: [u32; 4] = [O_TUN_PORT, O_TUN_NOCSUM, O_TUN_CSUM, O_TUN_REMCSUM];

/// `tunnel_opt_check()`
fn tunnel_opt_check(tun_type: usize, options: u64) -> Result<(), CommandError> {
    let row = TUN_LEGALITY[tun_type];
    let mut last = 0usize;
    let mut count = 0;
    for (j, &k) in TUN_OPTS.iter().enumerate() {
        let k = k as usize;
        if options & (1u64 << k) == 0 {
            if row[j] == b'+' {
                return Err(fail(format!(
                    "You need to supply the '{}' option for the '{}' tunnel type",
                    OPT_NAMES[k], TUN_NAMES[tun_type]
                )));
            }
        } else {
            if row[j] == b'x' {
                return Err(fail(format!(
                    "Illegal '{}' option with the '{}' tunnel type",
                    OPT_NAMES[k], TUN_NAMES[tun_type]
                )));
            }
            if row[j] == b'1' {
                count += 1;
                if count == 1 {
                    last = k;
                    continue;
                }
                return Err(fail(format!(
                    "The option '{}' conflicts with the '{}' option in the '{}' tunnel type",
                    OPT_NAMES[k], OPT_NAMES[last], TUN_NAMES[tun_type]
                )));
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// parse_service and friends

/// Why `parse_service` found no address.
enum SvcParseError {
    /// ipvsadm's SERVICE_NONE.
    Illegal,
    /// A host name (ipvsadm would call gethostbyname).
    HostName(String),
    /// A service name (ipvsadm would call getservbyname).
    ServiceName(String),
}

/// What looks like a DNS name rather than a malformed number.
fn looks_like_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().any(|b| b.is_ascii_alphabetic())
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

fn str_is_digit(s: &str) -> bool {
    s.bytes().all(|b| b.is_ascii_digit())
}

/// ipvsadm's `parse_service()`: `host[:port]`, `[v6]:port`, bare IPv6.
/// Returns the address and the port when one was given.
fn parse_service(buf: &str) -> Result<(IpAddr, Option<u16>), SvcParseError> {
    if str_is_digit(buf) {
        return Err(SvcParseError::Illegal);
    }
    let mut host = buf;
    let mut port: Option<&str> = None;
    if let Some(inner) = buf.strip_prefix('[') {
        let close = inner.find(']').ok_or(SvcParseError::Illegal)?;
        let after = &inner[close + 1..];
        if !after.starts_with(':') {
            return Err(SvcParseError::Illegal);
        }
        host = &inner[..close];
        port = Some(&after[1..]);
    }
    let addr = if let Some(v6) = inet_pton6(host) {
        IpAddr::V6(v6)
    } else {
        // ipvsadm re-splits the (bracket-stripped) host at its last ':';
        // a port after a bracket is then forgotten.
        match host.rfind(':') {
            Some(i) => {
                port = Some(&host[i + 1..]);
                host = &host[..i];
            }
            None => port = None,
        }
        match inet_aton(host) {
            Some(a) => IpAddr::V4(Ipv4Addr::from(a)),
            None if looks_like_name(host) => return Err(SvcParseError::HostName(host.to_string())),
            None => return Err(SvcParseError::Illegal),
        }
    };
    let port = match port {
        None => None,
        Some(p) => match string_to_number(p, 0, 65535) {
            Some(n) => Some(n as u16),
            None if looks_like_name(p) => return Err(SvcParseError::ServiceName(p.to_string())),
            None => return Err(SvcParseError::Illegal),
        },
    };
    Ok((addr, port))
}

fn svc_parse_error(e: SvcParseError, illegal_msg: &'static str) -> CommandError {
    match e {
        SvcParseError::Illegal => fail(illegal_msg),
        SvcParseError::HostName(name) => CommandError::NotNumeric { context: illegal_msg, what: "host name", name },
        SvcParseError::ServiceName(name) => {
            CommandError::NotNumeric { context: illegal_msg, what: "service name", name }
        }
    }
}

/// `parse_timeout()`
fn parse_timeout(buf: Option<&str>, min: u32, max: u32) -> Result<u32, CommandError> {
    match buf {
        None => Ok(DEFAULT_PERSISTENT_TIMEOUT),
        Some(b) => string_to_number(b, i64::from(min), i64::from(max))
            .map(|v| v as u32)
            .ok_or_else(|| fail(format!("invalid timeout value `{b}' specified"))),
    }
}

/// `parse_fwmark()`: 1..=UINT_MAX.
fn parse_fwmark(buf: &str) -> Result<u32, CommandError> {
    let r = strtol10(buf);
    let l = r.value as u64;
    if r.end != buf.len() || r.end == 0 || r.overflow || l == 0 || l > u64::from(u32::MAX) {
        return Err(fail(format!("invalid fwmark value `{buf}' specified")));
    }
    Ok(l as u32)
}

/// `parse_sched_flags()`: `sched` is the (possibly empty) `-s` value.
fn parse_sched_flags(sched: &str, arg: &str) -> Result<u32, CommandError> {
    let sched = if sched.is_empty() { DEFAULT_SCHEDULER } else { sched };
    let mut flags = 0u32;
    let mut any = false;
    for flag in arg.split(',').filter(|f| !f.is_empty()) {
        any = true;
        let Some((bit, only)) = SchedFlags::by_name(flag) else {
            return Err(fail(format!("invalid scheduler flag `{flag}'")));
        };
        flags |= bit;
        if let Some(s) = only {
            if sched != s {
                return Err(fail(format!("incompatible scheduler flag `{flag}'")));
            }
        }
    }
    if !any {
        // ipvsadm's strtok() loop would dereference NULL here (e.g. `-b ,`).
        return Err(fail(format!("invalid scheduler flag `{arg}'")));
    }
    Ok(flags)
}

// ---------------------------------------------------------------------------
// The command entry being built (ipvsadm's struct ipvs_command_entry)

const AF_UNSPEC: u16 = 0;
const AF_INET: u16 = 2;
const AF_INET6: u16 = 10;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fwd {
    Masq,
    Tunnel,
    Route,
}

struct Entry {
    cmd: Option<Cmd>,
    // service
    svc_af: u16,
    protocol: Option<Protocol>,
    svc_addr: Option<IpAddr>,
    svc_port: u16,
    fwmark: u32,
    sched: String,
    flags: u32,
    timeout: u32,
    /// Host-order IPv4 mask, or IPv6 prefix length when the service is IPv6.
    netmask: u32,
    pe: String,
    // destination
    dest_addr: Option<IpAddr>,
    dest_port: u16,
    fwd: Fwd,
    weight: u32,
    u_threshold: u32,
    l_threshold: u32,
    tun_type: usize,
    tun_port: u16,
    tun_flags: u16,
    // --set
    timeouts: (u32, u32, u32),
    // daemon
    daemon_state: DaemonState,
    mcast_ifn: String,
    syncid: u8,
    sync_maxlen: Option<u16>,
    mcast_group: Option<IpAddr>,
    mcast_port: Option<u16>,
    mcast_ttl: Option<u8>,
}

impl Entry {
    fn new() -> Self {
        Entry {
            cmd: None,
            svc_af: AF_UNSPEC,
            protocol: None,
            svc_addr: None,
            svc_port: 0,
            fwmark: 0,
            sched: String::new(),
            flags: 0,
            timeout: 0,
            netmask: 0xffff_ffff,
            pe: String::new(),
            dest_addr: None,
            dest_port: 0,
            fwd: Fwd::Route,
            weight: 1,
            u_threshold: 0,
            l_threshold: 0,
            tun_type: 0,
            tun_port: 0,
            tun_flags: 0,
            timeouts: (0, 0, 0),
            daemon_state: DaemonState::Master,
            mcast_ifn: String::new(),
            syncid: 0,
            sync_maxlen: None,
            mcast_group: None,
            mcast_port: None,
            mcast_ttl: None,
        }
    }

    fn service_key(&self) -> ServiceKey {
        if self.fwmark != 0 {
            let af = if self.svc_af == AF_INET6 { AddressFamily::Inet6 } else { AddressFamily::Inet };
            ServiceKey::Fwmark { mark: self.fwmark, af }
        } else {
            let addr = self.svc_addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
            ServiceKey::Addr { proto: self.protocol.unwrap_or(Protocol::Tcp), addr, port: self.svc_port }
        }
    }

    fn service_rule(&self) -> ServiceRule {
        let key = self.service_key();
        let netmask = if self.svc_af == AF_INET6 {
            Netmask::V6(u8::try_from(self.netmask).unwrap_or(128))
        } else {
            Netmask::V4(self.netmask)
        };
        ServiceRule {
            key,
            scheduler: self.sched.clone(),
            flags: SchedFlags(self.flags & SVC_F_SCHED_MASK),
            persistent: if self.flags & SVC_F_PERSISTENT != 0 { Some(self.timeout) } else { None },
            netmask,
            pe: if self.pe.is_empty() { None } else { Some(self.pe.clone()) },
            ops: self.flags & SVC_F_ONEPACKET != 0,
            dests: Vec::new(),
        }
    }

    fn dest_rule(&self) -> DestRule {
        let fwd = match self.fwd {
            Fwd::Masq => FwdMethod::Masq,
            Fwd::Route => FwdMethod::Route,
            Fwd::Tunnel => {
                let tun = match self.tun_type {
                    1 => TunnelType::Gue { port: self.tun_port },
                    2 => TunnelType::Gre,
                    _ => TunnelType::Ipip,
                };
                let csum = match self.tun_flags {
                    1 => TunnelCsum::Csum,
                    2 => TunnelCsum::RemCsum,
                    _ => TunnelCsum::NoCsum,
                };
                FwdMethod::Tunnel { tun, csum }
            }
        };
        DestRule {
            addr: self.dest_addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)),
            port: self.dest_port,
            fwd,
            weight: self.weight,
            u_threshold: self.u_threshold,
            l_threshold: self.l_threshold,
        }
    }

    fn dest_af(&self) -> u16 {
        match self.dest_addr {
            Some(IpAddr::V4(_)) => AF_INET,
            Some(IpAddr::V6(_)) => AF_INET6,
            None => AF_UNSPEC,
        }
    }
}

fn set_option(options: &mut u64, optc: u32) -> Result<(), CommandError> {
    let bit = 1u64 << optc;
    if *options & bit != 0 {
        return Err(fail(format!("multiple '{}' options specified", OPT_NAMES[optc as usize])));
    }
    *options |= bit;
    Ok(())
}

fn first_command(tag: Tag) -> Option<Cmd> {
    Some(match tag {
        Tag::AddService => Cmd::Add,
        Tag::EditService => Cmd::Edit,
        Tag::DeleteService => Cmd::Del,
        Tag::AddServer => Cmd::AddDest,
        Tag::EditServer => Cmd::EditDest,
        Tag::DeleteServer => Cmd::DelDest,
        Tag::Clear => Cmd::Flush,
        Tag::List => Cmd::List,
        Tag::Zero => Cmd::Zero,
        Tag::Set => Cmd::Timeout,
        Tag::Restore => Cmd::Restore,
        Tag::Save => Cmd::Save,
        Tag::StartDaemon => Cmd::StartDaemon,
        Tag::StopDaemon => Cmd::StopDaemon,
        _ => return None,
    })
}

fn protocol_of(tag: Tag) -> Protocol {
    match tag {
        Tag::Udp => Protocol::Udp,
        Tag::Sctp => Protocol::Sctp,
        _ => Protocol::Tcp,
    }
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
    let mut ce = Entry::new();
    let mut options: u64 = 0;
    let mut list = ListOptions::default();
    let mut sched_flags_arg = String::new();
    let mut p = Popt::new(&args);

    // parse_options(): the first option must be the command.
    match p.next_opt() {
        Event::End => return Err(CommandError::Usage("no command specified".into())),
        Event::BadOpt => {
            return Err(CommandError::BadOption { option: p.bad_option(), reason: "unknown option" });
        }
        Event::NoArg => {
            return Err(CommandError::BadOption { option: p.bad_option(), reason: "missing argument" });
        }
        Event::Opt(Tag::Help, _) => return Ok(Command::Help),
        Event::Opt(Tag::Version, _) => return Ok(Command::Version),
        Event::Opt(tag, arg) => {
            let cmd = match first_command(tag) {
                Some(c) => c,
                None => {
                    return Err(CommandError::Usage(format!(
                        "the first option must be a command (-A, -E, -D, -C, -a, -e, -d, -L, -Z, -S, -R, --set, \
                         --start-daemon, --stop-daemon), not `{}'",
                        p.bad_option()
                    )))
                }
            };
            ce.cmd = Some(cmd);
            match tag {
                Tag::StartDaemon | Tag::StopDaemon => {
                    ce.daemon_state = match arg.unwrap_or("") {
                        "master" => DaemonState::Master,
                        "backup" => DaemonState::Backup,
                        _ if tag == Tag::StartDaemon => {
                            return Err(fail("illegal start-daemon parameter specified"))
                        }
                        _ => return Err(fail("illegal start_daemon specified")),
                    }
                }
                _ => {}
            }
        }
    }
    let cmd = ce.cmd.unwrap_or(Cmd::List);

    loop {
        let (tag, arg) = match p.next_opt() {
            Event::End => break,
            Event::BadOpt => {
                return Err(CommandError::BadOption { option: p.bad_option(), reason: "unknown option" })
            }
            Event::NoArg => {
                return Err(CommandError::BadOption { option: p.bad_option(), reason: "missing argument" })
            }
            Event::Opt(t, a) => (t, a),
        };
        let a = arg.unwrap_or("");
        match tag {
            Tag::Tcp | Tag::Udp | Tag::Sctp => {
                set_option(&mut options, O_SERVICE)?;
                ce.protocol = Some(protocol_of(tag));
                let (addr, port) = parse_service(a)
                    .map_err(|e| svc_parse_error(e, "illegal virtual server address[:port] specified"))?;
                ce.svc_addr = Some(addr);
                match addr {
                    IpAddr::V4(_) => ce.svc_af = AF_INET,
                    IpAddr::V6(_) => {
                        ce.svc_af = AF_INET6;
                        ce.netmask = 128;
                    }
                }
                if let Some(port) = port {
                    ce.svc_port = port;
                }
            }
            Tag::Fwmark => {
                set_option(&mut options, O_SERVICE)?;
                ce.svc_af = AF_INET;
                ce.protocol = Some(Protocol::Tcp);
                ce.fwmark = parse_fwmark(a)?;
            }
            Tag::Scheduler => {
                set_option(&mut options, O_SCHEDULER)?;
                // strncpy(sched_name, optarg, IP_VS_SCHEDNAME_MAXLEN - 1)
                ce.sched = truncate_bytes(a, 15).to_string();
            }
            Tag::Persistent => {
                set_option(&mut options, O_PERSISTENT)?;
                ce.flags |= SVC_F_PERSISTENT;
                ce.timeout = parse_timeout(arg, 1, MAX_TIMEOUT)?;
            }
            Tag::Netmask => {
                set_option(&mut options, O_NETMASK)?;
                if ce.svc_af != AF_INET6 {
                    ce.netmask =
                        inet_aton(a).ok_or_else(|| fail("illegal virtual server persistent mask specified"))?;
                } else {
                    let n = atoi(a) as u32;
                    if !(1..=128).contains(&n) {
                        return Err(fail("illegal ipv6 netmask specified"));
                    }
                    ce.netmask = n;
                }
            }
            Tag::RealServer => {
                set_option(&mut options, O_SERVER)?;
                let (addr, port) =
                    parse_service(a).map_err(|e| svc_parse_error(e, "illegal real server address[:port] specified"))?;
                ce.dest_addr = Some(addr);
                // copy vport to dport if not specified
                ce.dest_port = port.unwrap_or(ce.svc_port);
            }
            Tag::Ipip => {
                set_option(&mut options, O_FORWARD)?;
                ce.fwd = Fwd::Tunnel;
            }
            Tag::Gate => {
                set_option(&mut options, O_FORWARD)?;
                ce.fwd = Fwd::Route;
            }
            Tag::Masq => {
                set_option(&mut options, O_FORWARD)?;
                ce.fwd = Fwd::Masq;
            }
            Tag::Weight => {
                set_option(&mut options, O_WEIGHT)?;
                ce.weight =
                    string_to_number(a, 0, 65535).ok_or_else(|| fail("illegal weight specified"))? as u32;
            }
            Tag::UThreshold => {
                set_option(&mut options, O_UTHRESHOLD)?;
                ce.u_threshold = string_to_number(a, 0, i64::from(i32::MAX))
                    .ok_or_else(|| fail("illegal u_threshold specified"))? as u32;
            }
            Tag::LThreshold => {
                set_option(&mut options, O_LTHRESHOLD)?;
                ce.l_threshold = string_to_number(a, 0, i64::from(i32::MAX))
                    .ok_or_else(|| fail("illegal l_threshold specified"))? as u32;
            }
            Tag::Connection => {
                set_option(&mut options, O_CONNECTION)?;
                list.connections = true;
            }
            Tag::Numeric => {
                set_option(&mut options, O_NUMERIC)?;
                list.numeric = true;
            }
            Tag::McastInterface => {
                set_option(&mut options, O_MCAST)?;
                ce.mcast_ifn = truncate_bytes(a, 15).to_string();
            }
            Tag::SyncId => {
                set_option(&mut options, O_SYNCID)?;
                ce.syncid = string_to_number(a, 0, 255).ok_or_else(|| fail("illegal syncid specified"))? as u8;
            }
            Tag::Timeout => {
                set_option(&mut options, O_TIMEOUT)?;
                list.timeout = true;
            }
            Tag::Daemon => {
                set_option(&mut options, O_DAEMON)?;
                list.daemon = true;
            }
            Tag::Stats => {
                set_option(&mut options, O_STATS)?;
                list.stats = true;
            }
            Tag::Rate => {
                set_option(&mut options, O_RATE)?;
                list.rate = true;
            }
            Tag::Thresholds => {
                set_option(&mut options, O_THRESHOLDS)?;
                list.thresholds = true;
            }
            Tag::PersistentConn => {
                set_option(&mut options, O_PERSISTENTCONN)?;
                list.persistent_conn = true;
            }
            Tag::NoSort => {
                set_option(&mut options, O_NOSORT)?;
                list.nosort = true;
            }
            Tag::Sort => {}
            Tag::Exact => {
                set_option(&mut options, O_EXACT)?;
                list.exact = true;
            }
            Tag::Ipv6 => {
                if ce.fwmark != 0 {
                    ce.svc_af = AF_INET6;
                    ce.netmask = 128;
                } else {
                    return Err(fail("-6 used before -f"));
                }
            }
            Tag::Ops => {
                set_option(&mut options, O_ONEPACKET)?;
                ce.flags |= SVC_F_ONEPACKET;
            }
            Tag::Pe => {
                set_option(&mut options, O_PE)?;
                ce.pe = truncate_bytes(a, 16).to_string();
            }
            Tag::SchedFlags => {
                set_option(&mut options, O_SCHED_FLAGS)?;
                // snprintf(sched_flags_arg, 128, "%s", optarg)
                sched_flags_arg = truncate_bytes(a, 127).to_string();
            }
            Tag::McastGroup => {
                set_option(&mut options, O_MCAST_GROUP)?;
                if a.contains(':') {
                    match inet_pton6(a) {
                        Some(g) if g.octets()[0] == 0xff => ce.mcast_group = Some(IpAddr::V6(g)),
                        _ => return Err(fail(format!("invalid IPv6 mcast-group `{a}'"))),
                    }
                } else {
                    match inet_pton4(a) {
                        Some(g) if g.is_multicast() => ce.mcast_group = Some(IpAddr::V4(g)),
                        _ => return Err(fail(format!("invalid IPv4 mcast-group `{a}'"))),
                    }
                }
            }
            Tag::McastPort => {
                set_option(&mut options, O_MCAST_PORT)?;
                ce.mcast_port = Some(
                    string_to_number(a, 1, 65535).ok_or_else(|| fail("illegal mcast-port specified"))? as u16,
                );
            }
            Tag::McastTtl => {
                set_option(&mut options, O_MCAST_TTL)?;
                ce.mcast_ttl =
                    Some(string_to_number(a, 1, 255).ok_or_else(|| fail("illegal mcast-ttl specified"))? as u8);
            }
            Tag::SyncMaxlen => {
                set_option(&mut options, O_SYNC_MAXLEN)?;
                ce.sync_maxlen = Some(
                    string_to_number(a, 1, 65535 - 20 - 8).ok_or_else(|| fail("illegal sync-maxlen specified"))?
                        as u16,
                );
            }
            Tag::TunInfo => {
                set_option(&mut options, O_TUN_INFO)?;
                list.tun_info = true;
            }
            Tag::TunType => {
                set_option(&mut options, O_TUN_TYPE)?;
                ce.tun_type = TUN_NAMES
                    .iter()
                    .position(|n| *n == a)
                    .ok_or_else(|| fail("illegal tunnel type specified"))?;
            }
            Tag::TunPort => {
                set_option(&mut options, O_TUN_PORT)?;
                ce.tun_port =
                    string_to_number(a, 1, 65535).ok_or_else(|| fail("illegal tunnel port specified"))? as u16;
            }
            Tag::TunNocsum => {
                set_option(&mut options, O_TUN_NOCSUM)?;
            }
            Tag::TunCsum => {
                set_option(&mut options, O_TUN_CSUM)?;
                ce.tun_flags |= 1;
            }
            Tag::TunRemcsum => {
                set_option(&mut options, O_TUN_REMCSUM)?;
                ce.tun_flags |= 2;
            }
            // A second command (or -h/-v) after the first one.
            _ => return Err(fail(format!("invalid option `{}'", p.bad_option()))),
        }
    }

    if cmd == Cmd::Timeout {
        match (p.get_arg(), p.get_arg(), p.get_arg()) {
            (Some(t0), Some(t1), Some(t2)) => {
                ce.timeouts = (
                    parse_timeout(Some(t0), 0, MAX_TIMEOUT)?,
                    parse_timeout(Some(t1), 0, MAX_TIMEOUT)?,
                    parse_timeout(Some(t2), 0, MAX_TIMEOUT)?,
                );
            }
            _ => return Err(fail("--set option requires 3 timeout values")),
        }
    }
    if let Some(extra) = p.get_arg() {
        return Err(fail(format!("unexpected argument {extra}")));
    }
    if !sched_flags_arg.is_empty() {
        ce.flags &= !SVC_F_SCHED_MASK;
        ce.flags |= parse_sched_flags(&ce.sched, &sched_flags_arg)?;
    }

    // process_options()
    generic_opt_check(cmd, options)?;

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
        if options & tun_opts != 0 && ce.fwd != Fwd::Tunnel {
            return Err(fail("Tunnel options conflict with forward method"));
        }
        tunnel_opt_check(ce.tun_type, options)?;
    }

    Ok(match cmd {
        Cmd::List => {
            let has = |o: u32| options & (1u64 << o) != 0;
            if ((has(O_CONNECTION) || has(O_TIMEOUT) || has(O_DAEMON))
                && (has(O_STATS) || has(O_RATE) || has(O_THRESHOLDS)))
                || ((has(O_TIMEOUT) || has(O_DAEMON)) && has(O_PERSISTENTCONN))
            {
                return Err(fail("options conflicts in the list command"));
            }
            if has(O_SERVICE) {
                list.service = Some(ce.service_key());
            }
            Command::List(list)
        }
        Cmd::Restore => Command::Restore,
        Cmd::Save => Command::Save { numeric: list.numeric },
        Cmd::Flush => Command::Clear,
        Cmd::Add => Command::AddService(ce.service_rule()),
        Cmd::Edit => Command::EditService(ce.service_rule()),
        Cmd::Del => Command::DeleteService(ce.service_key()),
        Cmd::Zero => {
            let all = options & (1u64 << O_SERVICE) == 0
                || (ce.fwmark == 0 && ce.svc_port == 0 && match ce.svc_addr {
                    None => true,
                    Some(a) => a.is_unspecified(),
                });
            Command::Zero(if all { None } else { Some(ce.service_key()) })
        }
        Cmd::AddDest => Command::AddDest(ce.service_key(), ce.dest_rule()),
        Cmd::EditDest => Command::EditDest(ce.service_key(), ce.dest_rule()),
        Cmd::DelDest => Command::DeleteDest(
            ce.service_key(),
            ce.dest_addr.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)),
            ce.dest_port,
        ),
        Cmd::Timeout => {
            let (tcp, tcpfin, udp) = ce.timeouts;
            Command::SetTimeouts { tcp, tcpfin, udp }
        }
        Cmd::StartDaemon | Cmd::StopDaemon => {
            let d = SyncDaemon {
                state: ce.daemon_state,
                mcast_ifn: ce.mcast_ifn.clone(),
                syncid: ce.syncid,
                sync_maxlen: ce.sync_maxlen,
                mcast_group: ce.mcast_group,
                mcast_port: ce.mcast_port,
                mcast_ttl: ce.mcast_ttl,
            };
            if cmd == Cmd::StartDaemon {
                Command::StartDaemon(d)
            } else {
                Command::StopDaemon(d)
            }
        }
    })
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

    #[test]
    fn service_forms() {
        let ok = |s: &str| parse_service(s).ok();
        assert_eq!(ok("10.0.0.1:80"), Some(("10.0.0.1".parse().unwrap(), Some(80))));
        assert_eq!(ok("10.0.0.1"), Some(("10.0.0.1".parse().unwrap(), None)));
        assert_eq!(ok("[2001:db8::1]:53"), Some(("2001:db8::1".parse().unwrap(), Some(53))));
        assert_eq!(ok("2001:db8::1"), Some(("2001:db8::1".parse().unwrap(), None)));
        // bracketed IPv4: ipvsadm forgets the port
        assert_eq!(ok("[1.2.3.4]:80"), Some(("1.2.3.4".parse().unwrap(), None)));
        assert!(ok("80").is_none());
        assert!(ok("").is_none());
        assert!(ok("[::1]").is_none());
        assert!(ok("1.2.3.4:").is_none());
        assert!(ok("1.2.3.4:65536").is_none());
        assert!(matches!(parse_service("www.example.com:80"), Err(SvcParseError::HostName(_))));
        assert!(matches!(parse_service("10.0.0.1:http"), Err(SvcParseError::ServiceName(_))));
    }
}
