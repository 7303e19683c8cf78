//! A connection the master's card forwards is sent to the backup when it
//! is offloaded in ESTABLISHED; this holds for a new handshake on an entry
//! that served an earlier connection of the same client port (a real
//! client reusing its port while the director's entry for the last
//! connection is still in FIN_WAIT or CLOSE), as the kernel sends the
//! reused `ip_vs_conn` again. Found by the HA pair's drill under load
//! (e2e_ha: the backup never learned a long-lived connection whose client
//! port an earlier HTTP GET had used). No root: the master sends on `lo`.

#[path = "daemon_harness.rs"]
mod harness;

use harness::*;
use lvsnic_fixtures::*;
use lvsnic_model::pcap::{self, PcapRecord, Resolution};
use lvsnic_model::wire::{TCP_ACK, TCP_FIN, TCP_RST, TCP_SYN};
use std::net::Ipv4Addr;
use std::time::Duration;

const MS: u64 = 1_000_000;
const RULES: &str = "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -g -w 1\n";

/// What the master sent, as (client port, state), until it has sent as
/// many entries as it counted (or 10 s).
fn received(s: &std::net::UdpSocket, d: &Daemon) -> Vec<(u16, u16)> {
    sync_received(s, d).iter().map(|c| (c.cport, c.state)).collect()
}

/// Port 40001: SYN, ACK (ESTABLISHED, offloaded), FIN (FIN_WAIT), then a
/// new SYN on the FIN_WAIT entry (SYN_RECV) and its ACK (ESTABLISHED).
/// Port 40002: the same with a RST (CLOSE) instead of the FIN, so the
/// new SYN replaces the entry (`conn_reuse_mode` 1).
#[test]
fn a_new_handshake_on_a_reused_entry_is_sent_again() {
    let dir = tmpdir("sync-reused-entry");
    let rules = write(&dir, "rules", RULES);
    let mut recs = Vec::new();
    let mut t = 1_700_000_000_000 * MS;
    for (port, close) in [(40001u16, TCP_FIN | TCP_ACK), (40002, TCP_RST)] {
        for f in [TCP_SYN, TCP_ACK, close, TCP_SYN, TCP_ACK] {
            let data = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(Ipv4Addr::new(198, 51, 100, 1), VIP), port, 80, f, 1, 1, b"");
            recs.push(PcapRecord { ts_ns: t, orig_len: data.len() as u32, data });
            t += MS;
        }
    }
    let input = dir.join("in.pcap");
    pcap::write_file(&input, Resolution::Nano, recs.into_iter()).unwrap();
    let port = 30000 + (std::process::id() % 10000) as u16;
    let l = std::net::UdpSocket::bind((Ipv4Addr::UNSPECIFIED, port)).unwrap();
    l.join_multicast_v4(&Ipv4Addr::new(224, 0, 0, 81), &Ipv4Addr::LOCALHOST).unwrap();
    l.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let wire = format!("pcap:{},{}", input.display(), dir.join("out.pcap").display());
    let d = Daemon::start(&dir, &director_toml(), &["--rules", rules.to_str().unwrap(), "--wire", &wire, "--pace", "step"]);
    d.ok(&["--start-daemon", "master", "--mcast-interface", "lo", "--syncid", "3", "--mcast-port", &port.to_string()]);
    let r = d.run(&["wire", "--socket", d.sock.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{r:?}");
    let (es, fw, cl) = (1, 4, 6);
    assert_eq!(
        received(&l, &d),
        [(40001, es), (40001, fw), (40001, es), (40002, es), (40002, cl), (40002, es)],
        "each connection sent when ESTABLISHED, the FIN_WAIT and CLOSE changes at once"
    );
}
