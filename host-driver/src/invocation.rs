//! One ipvsadm invocation as lvsnic answers it: what it printed and its
//! exit status ([`Output`], also the control socket's reply), and ipvsadm's
//! usage and version text. The client ([`crate::cli`]) answers `-h`/`-v`
//! with it locally; the daemon's control plane ([`crate::control`]) answers
//! them when they come later in a command line or in a `-R` script. Both
//! point here; this module points nowhere else in the crate.

use serde::Serialize;

/// What one ipvsadm invocation printed and returned.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Output {
    /// What it printed on standard output.
    pub stdout: String,
    /// What it printed on standard error.
    pub stderr: String,
    /// Its exit status.
    pub exit: i32,
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

