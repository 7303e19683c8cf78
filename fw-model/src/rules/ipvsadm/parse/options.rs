//! Service, real-server, list and daemon options: what each option after
//! the command sets (the `switch` of ipvsadm's `parse_options()`), and the
//! parsers of their values (`parse_service`, `parse_timeout`,
//! `parse_fwmark`, `parse_sched_flags`).

use std::net::{IpAddr, Ipv4Addr};

use super::assemble::{Entry, Fwd, AF_INET, AF_INET6};
use super::check::*;
use super::popt::{Popt, Tag};
use super::{fail, CommandError, DaemonState, ListOptions, DEFAULT_SCHEDULER, MAX_TIMEOUT, SVC_F_ONEPACKET, SVC_F_PERSISTENT, SVC_F_SCHED_MASK};
use crate::rules::ipvsadm::libc::{atoi, inet_aton, inet_pton4, inet_pton6, string_to_number, strtol10, truncate_bytes};
use crate::rules::{Protocol, SchedFlags, DEFAULT_PERSISTENT_TIMEOUT};

/// What the command line says so far: ipvsadm's command entry `ce`, the
/// bit set of options seen, the list flags and the raw `--sched-flags`.
pub(super) struct Scan {
    pub(super) ce: Entry,
    pub(super) options: u64,
    pub(super) list: ListOptions,
    sched_flags_arg: String,
}

/// What the first option was.
pub(super) enum First {
    Help,
    Version,
    Command(Cmd),
}

impl Scan {
    pub(super) fn new() -> Self {
        Scan { ce: Entry::new(), options: 0, list: ListOptions::default(), sched_flags_arg: String::new() }
    }

    fn set(&mut self, optc: u32) -> Result<(), CommandError> {
        set_option(&mut self.options, optc)
    }

    /// `parse_options()`: the first option must be the command.
    pub(super) fn command_option(&mut self, p: &mut Popt) -> Result<First, CommandError> {
        let (tag, arg) = match p.next_option()? {
            None => return Err(CommandError::Usage("no command specified".into())),
            Some((Tag::Help, _)) => return Ok(First::Help),
            Some((Tag::Version, _)) => return Ok(First::Version),
            Some(o) => o,
        };
        let Some(cmd) = first_command(tag) else {
            return Err(CommandError::Usage(format!(
                "the first option must be a command (-A, -E, -D, -C, -a, -e, -d, -L, -Z, -S, -R, --set, \
                 --start-daemon, --stop-daemon), not `{}'",
                p.bad_option()
            )));
        };
        self.ce.cmd = Some(cmd);
        if matches!(tag, Tag::StartDaemon | Tag::StopDaemon) {
            self.ce.daemon_state = match arg.unwrap_or("") {
                "master" => DaemonState::Master,
                "backup" => DaemonState::Backup,
                _ if tag == Tag::StartDaemon => return Err(fail("illegal start-daemon parameter specified")),
                _ => return Err(fail("illegal start_daemon specified")),
            }
        }
        Ok(First::Command(cmd))
    }

    /// One option after the command. A second command (or `-h`/`-v`) is
    /// an invalid option.
    pub(super) fn apply(&mut self, tag: Tag, arg: Option<&str>, p: &Popt) -> Result<(), CommandError> {
        let a = arg.unwrap_or("");
        let known = self.service_option(tag, arg)?
            || self.dest_option(tag, a)?
            || self.list_option(tag)?
            || self.daemon_option(tag, a)?
            || self.tunnel_option(tag, a)?;
        if known {
            Ok(())
        } else {
            Err(fail(format!("invalid option `{}'", p.bad_option())))
        }
    }

    /// The words after the options: the three `--set` timeouts, nothing
    /// else; then `--sched-flags`, which needs the scheduler name.
    pub(super) fn leftovers(&mut self, cmd: Cmd, p: &mut Popt) -> Result<(), CommandError> {
        if cmd == Cmd::Timeout {
            match (p.get_arg(), p.get_arg(), p.get_arg()) {
                (Some(t0), Some(t1), Some(t2)) => {
                    self.ce.timeouts = (
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
        if !self.sched_flags_arg.is_empty() {
            self.ce.flags &= !SVC_F_SCHED_MASK;
            self.ce.flags |= parse_sched_flags(&self.ce.sched, &self.sched_flags_arg)?;
        }
        Ok(())
    }

    /// Virtual service options (`-t/-u/--sctp-service/-f`, `-s`, `-p`, `-M`,
    /// `-6`, `-o`, `--pe`, `-b`). False if `tag` is not one.
    fn service_option(&mut self, tag: Tag, arg: Option<&str>) -> Result<bool, CommandError> {
        let a = arg.unwrap_or("");
        match tag {
            Tag::Tcp | Tag::Udp | Tag::Sctp => {
                self.set(O_SERVICE)?;
                self.ce.protocol = Some(protocol_of(tag));
                let (addr, port) = parse_service(a)
                    .map_err(|e| svc_parse_error(e, "illegal virtual server address[:port] specified"))?;
                self.ce.svc_addr = Some(addr);
                match addr {
                    IpAddr::V4(_) => self.ce.svc_af = AF_INET,
                    IpAddr::V6(_) => {
                        self.ce.svc_af = AF_INET6;
                        self.ce.netmask = 128;
                    }
                }
                if let Some(port) = port {
                    self.ce.svc_port = port;
                }
            }
            Tag::Fwmark => {
                self.set(O_SERVICE)?;
                self.ce.svc_af = AF_INET;
                self.ce.protocol = Some(Protocol::Tcp);
                self.ce.fwmark = parse_fwmark(a)?;
            }
            Tag::Scheduler => {
                self.set(O_SCHEDULER)?;
                // strncpy(sched_name, optarg, IP_VS_SCHEDNAME_MAXLEN - 1)
                self.ce.sched = truncate_bytes(a, 15).to_string();
            }
            Tag::Persistent => {
                self.set(O_PERSISTENT)?;
                self.ce.flags |= SVC_F_PERSISTENT;
                self.ce.timeout = parse_timeout(arg, 1, MAX_TIMEOUT)?;
            }
            Tag::Netmask => {
                self.set(O_NETMASK)?;
                if self.ce.svc_af != AF_INET6 {
                    self.ce.netmask =
                        inet_aton(a).ok_or_else(|| fail("illegal virtual server persistent mask specified"))?;
                } else {
                    let n = atoi(a) as u32;
                    if !(1..=128).contains(&n) {
                        return Err(fail("illegal ipv6 netmask specified"));
                    }
                    self.ce.netmask = n;
                }
            }
            Tag::Ipv6 => {
                if self.ce.fwmark != 0 {
                    self.ce.svc_af = AF_INET6;
                    self.ce.netmask = 128;
                } else {
                    return Err(fail("-6 used before -f"));
                }
            }
            Tag::Ops => {
                self.set(O_ONEPACKET)?;
                self.ce.flags |= SVC_F_ONEPACKET;
            }
            Tag::Pe => {
                self.set(O_PE)?;
                self.ce.pe = truncate_bytes(a, 16).to_string();
            }
            Tag::SchedFlags => {
                self.set(O_SCHED_FLAGS)?;
                // snprintf(sched_flags_arg, 128, "%s", optarg)
                self.sched_flags_arg = truncate_bytes(a, 127).to_string();
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Real server options (`-r`, `-i/-g/-m`, `-w`, `-x`, `-y`). False if
    /// `tag` is not one.
    fn dest_option(&mut self, tag: Tag, a: &str) -> Result<bool, CommandError> {
        match tag {
            Tag::RealServer => {
                self.set(O_SERVER)?;
                let (addr, port) =
                    parse_service(a).map_err(|e| svc_parse_error(e, "illegal real server address[:port] specified"))?;
                self.ce.dest_addr = Some(addr);
                // copy vport to dport if not specified
                self.ce.dest_port = port.unwrap_or(self.ce.svc_port);
            }
            Tag::Ipip => {
                self.set(O_FORWARD)?;
                self.ce.fwd = Fwd::Tunnel;
            }
            Tag::Gate => {
                self.set(O_FORWARD)?;
                self.ce.fwd = Fwd::Route;
            }
            Tag::Masq => {
                self.set(O_FORWARD)?;
                self.ce.fwd = Fwd::Masq;
            }
            Tag::Weight => {
                self.set(O_WEIGHT)?;
                // ipvsadm 1.31 takes 0..=INT_MAX (`-w 65536` is accepted by
                // the real ipvsadm and kernel, seen in the VM).
                self.ce.weight = string_to_number(a, 0, i64::from(i32::MAX))
                    .ok_or_else(|| fail("illegal weight specified"))? as u32;
            }
            Tag::UThreshold => {
                self.set(O_UTHRESHOLD)?;
                self.ce.u_threshold = string_to_number(a, 0, i64::from(i32::MAX))
                    .ok_or_else(|| fail("illegal u_threshold specified"))? as u32;
            }
            Tag::LThreshold => {
                self.set(O_LTHRESHOLD)?;
                self.ce.l_threshold = string_to_number(a, 0, i64::from(i32::MAX))
                    .ok_or_else(|| fail("illegal l_threshold specified"))? as u32;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Listing options (`-c`, `-n`, `--timeout`, `--daemon`, `--stats`,
    /// `--rate`, `--thresholds`, `--persistent-conn`, `--nosort`, `--sort`,
    /// `-X`, `--tun-info`). False if `tag` is not one.
    fn list_option(&mut self, tag: Tag) -> Result<bool, CommandError> {
        let (optc, flag) = match tag {
            Tag::Connection => (O_CONNECTION, &mut self.list.connections),
            Tag::Numeric => (O_NUMERIC, &mut self.list.numeric),
            Tag::Timeout => (O_TIMEOUT, &mut self.list.timeout),
            Tag::Daemon => (O_DAEMON, &mut self.list.daemon),
            Tag::Stats => (O_STATS, &mut self.list.stats),
            Tag::Rate => (O_RATE, &mut self.list.rate),
            Tag::Thresholds => (O_THRESHOLDS, &mut self.list.thresholds),
            Tag::PersistentConn => (O_PERSISTENTCONN, &mut self.list.persistent_conn),
            Tag::NoSort => (O_NOSORT, &mut self.list.nosort),
            Tag::Exact => (O_EXACT, &mut self.list.exact),
            Tag::TunInfo => (O_TUN_INFO, &mut self.list.tun_info),
            Tag::Sort => return Ok(true),
            _ => return Ok(false),
        };
        set_option(&mut self.options, optc)?;
        *flag = true;
        Ok(true)
    }

    /// Sync daemon options (`--mcast-interface`, `--syncid`,
    /// `--mcast-group`, `--mcast-port`, `--mcast-ttl`, `--sync-maxlen`).
    /// False if `tag` is not one.
    fn daemon_option(&mut self, tag: Tag, a: &str) -> Result<bool, CommandError> {
        match tag {
            Tag::McastInterface => {
                self.set(O_MCAST)?;
                self.ce.mcast_ifn = truncate_bytes(a, 15).to_string();
            }
            Tag::SyncId => {
                self.set(O_SYNCID)?;
                self.ce.syncid = string_to_number(a, 0, 255).ok_or_else(|| fail("illegal syncid specified"))? as u8;
            }
            Tag::McastGroup => {
                self.set(O_MCAST_GROUP)?;
                if a.contains(':') {
                    match inet_pton6(a) {
                        Some(g) if g.octets()[0] == 0xff => self.ce.mcast_group = Some(IpAddr::V6(g)),
                        _ => return Err(fail(format!("invalid IPv6 mcast-group `{a}'"))),
                    }
                } else {
                    match inet_pton4(a) {
                        Some(g) if g.is_multicast() => self.ce.mcast_group = Some(IpAddr::V4(g)),
                        _ => return Err(fail(format!("invalid IPv4 mcast-group `{a}'"))),
                    }
                }
            }
            Tag::McastPort => {
                self.set(O_MCAST_PORT)?;
                self.ce.mcast_port = Some(
                    string_to_number(a, 1, 65535).ok_or_else(|| fail("illegal mcast-port specified"))? as u16,
                );
            }
            Tag::McastTtl => {
                self.set(O_MCAST_TTL)?;
                self.ce.mcast_ttl =
                    Some(string_to_number(a, 1, 255).ok_or_else(|| fail("illegal mcast-ttl specified"))? as u8);
            }
            Tag::SyncMaxlen => {
                self.set(O_SYNC_MAXLEN)?;
                self.ce.sync_maxlen = Some(
                    string_to_number(a, 1, 65535 - 20 - 8).ok_or_else(|| fail("illegal sync-maxlen specified"))?
                        as u16,
                );
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Tunnel options of a real server (`--tun-type`, `--tun-port`,
    /// `--tun-nocsum`, `--tun-csum`, `--tun-remcsum`). False if `tag` is
    /// not one.
    fn tunnel_option(&mut self, tag: Tag, a: &str) -> Result<bool, CommandError> {
        match tag {
            Tag::TunType => {
                self.set(O_TUN_TYPE)?;
                self.ce.tun_type = TUN_NAMES
                    .iter()
                    .position(|n| *n == a)
                    .ok_or_else(|| fail("illegal tunnel type specified"))?;
            }
            Tag::TunPort => {
                self.set(O_TUN_PORT)?;
                self.ce.tun_port =
                    string_to_number(a, 1, 65535).ok_or_else(|| fail("illegal tunnel port specified"))? as u16;
            }
            Tag::TunNocsum => {
                self.set(O_TUN_NOCSUM)?;
            }
            Tag::TunCsum => {
                self.set(O_TUN_CSUM)?;
                self.ce.tun_flags |= 1;
            }
            Tag::TunRemcsum => {
                self.set(O_TUN_REMCSUM)?;
                self.ce.tun_flags |= 2;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

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
