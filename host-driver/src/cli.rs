//! `lvsnic` as `ipvsadm`: any argument list whose first argument starts
//! with `-` (and no arguments at all) is an ipvsadm command line, sent to
//! the daemon; its reply is printed as ipvsadm prints it and its status is
//! the exit status.
//!
//! ```text
//! lvsnic -A -t 10.0.0.1:80 -s rr
//! lvsnic -a -t 10.0.0.1:80 -r 192.168.10.1:80 -m -w 2
//! lvsnic -L -n --stats
//! lvsnic -S -n > rules; lvsnic -C; lvsnic -R < rules
//! lvsnic --set 900 120 300
//! lvsnic                       # as `ipvsadm`: lists
//! ```
//!
//! The socket is `/run/lvsnic.sock` unless `LVSNIC_SOCKET` names another
//! (ipvsadm's syntax leaves no room for a `--socket` option). `-h` and `-v`
//! are answered locally, so they work without a daemon. When the daemon
//! cannot be reached the client prints why on stderr and exits 2, as
//! ipvsadm does when it cannot initialise IPVS.

use crate::daemon::proto::{self, Reply, Request};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// Default control socket.
pub const DEFAULT_SOCKET: &str = "/run/lvsnic.sock";

/// The control socket: `explicit`, else `$LVSNIC_SOCKET`, else [`DEFAULT_SOCKET`].
pub fn socket_path(explicit: Option<&Path>) -> PathBuf {
    if let Some(p) = explicit {
        return p.to_path_buf();
    }
    match std::env::var_os("LVSNIC_SOCKET") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => PathBuf::from(DEFAULT_SOCKET),
    }
}

/// ipvsadm's `version()` line, for lvsnic.
pub fn version(prog: &str) -> String {
    format!("{prog} v{} (ipvsadm v1.31 command syntax and output, IPVS v1.2.1)\n", env!("CARGO_PKG_VERSION"))
}

/// ipvsadm's `usage_exit()` text, with `prog` for the program name.
pub fn usage(prog: &str) -> String {
    let p = prog;
    let mut s = version(prog);
    s.push_str(&format!(
        "Usage:\n  {p} -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] [--pe persistence_engine] [-b sched-flags]\n  {p} -D virtual-service\n  {p} -C\n  {p} -R\n  {p} -S [-n]\n  {p} -a|e virtual-service -r server-address [options]\n  {p} -d virtual-service -r server-address\n  {p} -L|l [virtual-service] [options]\n  {p} -Z [virtual-service]\n  {p} --set tcp tcpfin udp\n  {p} --start-daemon {{master|backup}} [daemon-options]\n  {p} --stop-daemon {{master|backup}}\n  {p} -h\n\n"
    ));
    s.push_str(
        "Commands:\n\
Either long or short options are allowed.\n\
\x20 --add-service     -A        add virtual service with options\n\
\x20 --edit-service    -E        edit virtual service with options\n\
\x20 --delete-service  -D        delete virtual service\n\
\x20 --clear           -C        clear the whole table\n\
\x20 --restore         -R        restore rules from stdin\n\
\x20 --save            -S        save rules to stdout\n\
\x20 --add-server      -a        add real server with options\n\
\x20 --edit-server     -e        edit real server with options\n\
\x20 --delete-server   -d        delete real server\n\
\x20 --list            -L|-l     list the table\n\
\x20 --zero            -Z        zero counters in a service or all services\n\
\x20 --set tcp tcpfin udp        set connection timeout values\n\
\x20 --start-daemon              start connection sync daemon\n\
\x20 --stop-daemon               stop connection sync daemon\n\
\x20 --help            -h        display this help message\n\n",
    );
    s.push_str(
        "virtual-service:\n\
\x20 --tcp-service|-t  service-address   service-address is host[:port]\n\
\x20 --udp-service|-u  service-address   service-address is host[:port]\n\
\x20 --sctp-service    service-address   service-address is host[:port]\n\
\x20 --fwmark-service|-f fwmark          fwmark is an integer greater than zero\n\n",
    );
    s.push_str(
        "Options:\n\
\x20 --ipv6         -6                   fwmark entry uses IPv6\n\
\x20 --scheduler    -s scheduler         one of rr|wrr|lc|wlc|lblc|lblcr|dh|sh|sed|nq|fo|ovf|mh,\n\
\x20                                     the default scheduler is wlc.\n\
\x20 --pe            engine              alternate persistence engine may be sip,\n\
\x20                                     not set by default.\n\
\x20 --persistent   -p [timeout]         persistent service\n\
\x20 --netmask      -M netmask           persistent granularity mask\n\
\x20 --real-server  -r server-address    server-address is host (and port)\n\
\x20 --gatewaying   -g                   gatewaying (direct routing) (default)\n\
\x20 --ipip         -i                   ipip encapsulation (tunneling)\n\
\x20 --masquerading -m                   masquerading (NAT)\n\
\x20 --tun-type      type                one of ipip|gue|gre,\n\
\x20                                     the default tunnel type is ipip.\n\
\x20 --tun-port      port                tunnel destination port\n\
\x20 --tun-nocsum                        tunnel encapsulation without checksum\n\
\x20 --tun-csum                          tunnel encapsulation with checksum\n\
\x20 --tun-remcsum                       tunnel encapsulation with remote checksum\n\
\x20 --weight       -w weight            capacity of real server\n\
\x20 --u-threshold  -x uthreshold        upper threshold of connections\n\
\x20 --l-threshold  -y lthreshold        lower threshold of connections\n\
\x20 --connection   -c                   output of current IPVS connections\n\
\x20 --timeout                           output of timeout (tcp tcpfin udp)\n\
\x20 --daemon                            output of daemon information\n\
\x20 --stats                             output of statistics information\n\
\x20 --rate                              output of rate information\n\
\x20 --exact                             expand numbers (display exact values)\n\
\x20 --thresholds                        output of thresholds information\n\
\x20 --persistent-conn                   output of persistent connection info\n\
\x20 --tun-info                          output of tunnel information\n\
\x20 --nosort                            disable sorting output of service/server entries\n\
\x20 --sort                              does nothing, for backwards compatibility\n\
\x20 --ops          -o                   one-packet scheduling\n\
\x20 --numeric      -n                   numeric output of addresses and ports\n\
\x20 --sched-flags  -b flags             scheduler flags (comma-separated)\n",
    );
    s.push_str(
        "Daemon Options:\n\
\x20 --syncid sid                        syncid for connection sync (default=255)\n\
\x20 --sync-maxlen length                Max sync message length (default=1472)\n\
\x20 --mcast-interface interface         multicast interface for connection sync\n\
\x20 --mcast-group address               IPv4/IPv6 group (default=224.0.0.81)\n\
\x20 --mcast-port port                   UDP port (default=8848)\n\
\x20 --mcast-ttl ttl                     Multicast TTL (default=1)\n",
    );
    s
}

/// Whether an argument list is an ipvsadm command line (rather than an
/// lvsnic subcommand).
pub fn is_ipvsadm_mode(args: &[String]) -> bool {
    args.is_empty() || args[0].starts_with('-')
}

/// Whether ipvsadm's first option is `-h`/`--help` or `-v`/`--version`
/// (answered without the daemon).
fn local_answer(prog: &str, args: &[String]) -> Option<String> {
    let first = args.first()?.as_str();
    match first {
        "-h" | "--help" => Some(usage(prog)),
        "-v" | "--version" => Some(version(prog)),
        _ => None,
    }
}

/// Whether the command is `-R`/`--restore` (which reads standard input).
fn reads_stdin(args: &[String]) -> bool {
    matches!(args.first().map(String::as_str), Some("-R" | "--restore"))
        || args.first().is_some_and(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].starts_with('R'))
}

/// Runs the ipvsadm-mode client: returns the exit status.
pub fn run_ipvsadm(prog: &str, args: &[String]) -> i32 {
    if let Some(text) = local_answer(prog, args) {
        print!("{text}");
        return 0;
    }
    let stdin = if reads_stdin(args) {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            eprintln!("{prog}: reading standard input: {e}");
            return 2;
        }
        Some(s)
    } else {
        None
    };
    let path = socket_path(None);
    let req = Request::Ipvsadm { prog: Some(prog.to_string()), argv: args.to_vec(), stdin };
    match proto::call(&path, &req) {
        Ok(r) => emit(&r),
        Err(e) => {
            eprintln!("Can't reach the lvsnic daemon: {e}\nIs `lvsnic daemon` running (socket {}; set LVSNIC_SOCKET to use another)?", path.display());
            2
        }
    }
}

/// Prints a reply as the command would have, returns its status.
pub fn emit(r: &Reply) -> i32 {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(r.stdout.as_bytes());
    let _ = o.flush();
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(r.stderr.as_bytes());
    r.exit
}
