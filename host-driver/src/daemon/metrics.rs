//! `lvsnic daemon --metrics ADDR:PORT`: the director's counters as
//! Prometheus metrics.
//!
//! The forwarding loop takes a [`Snapshot`] (the copy `lvsnic status` and
//! `-L -n --stats --rate` are made from, the connection table counted by
//! state a slice at a time, the checkers' and VIPs' states) and hands it
//! to the metrics server's thread ([`super::metrics_http`]), which formats
//! it with [`render`]: the loop never formats metrics nor touches their
//! sockets.
//!
//! Every family the daemon exports is in [`FAMILIES`] (the user guide's
//! list and the Grafana dashboard are checked against it). Labels: `proto`
//! (`TCP`, `UDP`, `SCTP`, `FWM`), `vip`, `port` (or `fwmark`) for a
//! service, plus `rip`, `rport` for a real server; IPv6 addresses without
//! brackets.

use super::exposition::{Family, Format, Kind, Labels, Writer};
use super::DaemonStatus;
use crate::control::ConnStates;
use crate::health::CheckerState;
use lvsnic_model::rules::ipvsadm::{RateView, ServiceListing, StatsView};
use lvsnic_model::rules::ServiceKey;
use std::net::IpAddr;

/// What the loop copies for one scrape.
pub struct Snapshot {
    /// What `lvsnic status` prints.
    pub(super) status: DaemonStatus,
    /// What `-L -n --stats --rate` prints.
    pub services: Vec<ServiceListing>,
    /// The connection table by protocol and state.
    pub conn_states: ConnStates,
    /// The health checkers.
    pub checkers: Vec<CheckerState>,
    /// The health-checked services' quorums.
    pub quorums: Vec<(Vec<String>, bool)>,
    /// Every VIP and whether it is this director's.
    pub vips: Vec<(IpAddr, bool)>,
}

macro_rules! families {
    ($($id:ident: $kind:ident $name:literal $help:literal;)*) => {
        $(const $id: Family = Family { name: $name, kind: Kind::$kind, help: $help };)*
        /// Every metric family the daemon exports, in the order written.
        pub const FAMILIES: &[Family] = &[$($id),*];
    };
}

families! {
    SVC_CONNS: Counter "lvsnic_service_connections_total" "Connections scheduled by the virtual service (ipvsadm -L --stats Conns).";
    SVC_INPKTS: Counter "lvsnic_service_incoming_packets_total" "Packets from clients to the virtual service (InPkts).";
    SVC_OUTPKTS: Counter "lvsnic_service_outgoing_packets_total" "Packets from the real servers to clients (OutPkts).";
    SVC_INBYTES: Counter "lvsnic_service_incoming_bytes_total" "Bytes from clients to the virtual service (InBytes).";
    SVC_OUTBYTES: Counter "lvsnic_service_outgoing_bytes_total" "Bytes from the real servers to clients (OutBytes).";
    SVC_CPS: Gauge "lvsnic_service_connections_per_second" "Connection rate of the virtual service (ipvsadm -L --rate CPS).";
    SVC_INPPS: Gauge "lvsnic_service_incoming_packets_per_second" "Incoming packet rate (InPPS).";
    SVC_OUTPPS: Gauge "lvsnic_service_outgoing_packets_per_second" "Outgoing packet rate (OutPPS).";
    SVC_INBPS: Gauge "lvsnic_service_incoming_bytes_per_second" "Incoming byte rate (InBPS).";
    SVC_OUTBPS: Gauge "lvsnic_service_outgoing_bytes_per_second" "Outgoing byte rate (OutBPS).";
    RS_CONNS: Counter "lvsnic_real_server_connections_total" "Connections scheduled to the real server (ipvsadm -L --stats Conns).";
    RS_INPKTS: Counter "lvsnic_real_server_incoming_packets_total" "Packets from clients to the real server (InPkts).";
    RS_OUTPKTS: Counter "lvsnic_real_server_outgoing_packets_total" "Packets from the real server to clients (OutPkts).";
    RS_INBYTES: Counter "lvsnic_real_server_incoming_bytes_total" "Bytes from clients to the real server (InBytes).";
    RS_OUTBYTES: Counter "lvsnic_real_server_outgoing_bytes_total" "Bytes from the real server to clients (OutBytes).";
    RS_CPS: Gauge "lvsnic_real_server_connections_per_second" "Connection rate of the real server (ipvsadm -L --rate CPS).";
    RS_INPPS: Gauge "lvsnic_real_server_incoming_packets_per_second" "Incoming packet rate (InPPS).";
    RS_OUTPPS: Gauge "lvsnic_real_server_outgoing_packets_per_second" "Outgoing packet rate (OutPPS).";
    RS_INBPS: Gauge "lvsnic_real_server_incoming_bytes_per_second" "Incoming byte rate (InBPS).";
    RS_OUTBPS: Gauge "lvsnic_real_server_outgoing_bytes_per_second" "Outgoing byte rate (OutBPS).";
    RS_ACTIVE: Gauge "lvsnic_real_server_active_connections" "Connections in an active state (ipvsadm -L ActiveConn).";
    RS_INACTIVE: Gauge "lvsnic_real_server_inactive_connections" "Connections in an inactive state (ipvsadm -L InActConn).";
    RS_PERSIST: Gauge "lvsnic_real_server_persistent_connections" "Persistence templates bound to the real server (--persistent-conn).";
    RS_WEIGHT: Gauge "lvsnic_real_server_weight" "The real server's weight.";
    TOT_CONNS: Counter "lvsnic_director_connections_total" "Connections scheduled by the director, all services.";
    TOT_INPKTS: Counter "lvsnic_director_incoming_packets_total" "Packets from clients, all services.";
    TOT_OUTPKTS: Counter "lvsnic_director_outgoing_packets_total" "Packets to clients, all services.";
    TOT_INBYTES: Counter "lvsnic_director_incoming_bytes_total" "Bytes from clients, all services.";
    TOT_OUTBYTES: Counter "lvsnic_director_outgoing_bytes_total" "Bytes to clients, all services.";
    CONN_STATES: Gauge "lvsnic_connections" "Connections by protocol and state, as ipvsadm -L -n -c names them (templates not included).";
    TEMPLATES: Gauge "lvsnic_persistence_templates" "Persistence templates in the connection table.";
    CONN_ENTRIES: Gauge "lvsnic_connection_table_entries" "Entries in the connection table (connections and templates).";
    CONN_CREATED: Counter "lvsnic_connections_created_total" "Connections created.";
    CONN_EXPIRED: Counter "lvsnic_connections_expired_total" "Connections expired.";
    TEMPL_CREATED: Counter "lvsnic_persistence_templates_created_total" "Persistence templates created.";
    FRAMES: Counter "lvsnic_received_frames_total" "Frames received from the wire or the card.";
    IN_HW: Counter "lvsnic_hardware_forwarded_frames_total" "Frames the data plane forwarded without the host.";
    EXCEPTIONS: Counter "lvsnic_exception_frames_total" "Frames the data plane handed to the host, by its reason code.";
    RATE_LIMITED: Counter "lvsnic_rate_limited_frames_total" "New-connection exceptions dropped by the [limits] rate limit.";
    TRANSMITTED: Counter "lvsnic_transmitted_frames_total" "Frames transmitted on the wire.";
    TO_HOST: Counter "lvsnic_host_frames_total" "Frames given to the director's own stack.";
    RX_DROPS: Counter "lvsnic_receive_dropped_frames_total" "Frames dropped on receive (empty, runt, oversize, receive ring).";
    HOST_DROPPED: Counter "lvsnic_host_dropped_frames_total" "Frames for the host stack dropped (no --host-tap) or not written.";
    TAP_DROPPED: Counter "lvsnic_tap_dropped_frames_total" "Frames the wire's TAP device could not take.";
    DIR_INPUT: Counter "lvsnic_director_received_frames_total" "Frames the director saw (in software or credited from the hardware).";
    DIR_TX: Counter "lvsnic_director_transmitted_frames_total" "Frames the director transmitted (fragments and generated replies included).";
    DIR_TO_HOST: Counter "lvsnic_director_host_frames_total" "Frames the director handed to its own stack, by reason.";
    DIR_DROPPED: Counter "lvsnic_director_dropped_frames_total" "Frames the director dropped, by reason.";
    REASM: Counter "lvsnic_reassembly_events_total" "IPv4 and IPv6 reassembly: fragments held, datagrams reassembled, and drops by kind.";
    ICMP_SENT: Counter "lvsnic_icmp_sent_total" "ICMP messages generated, by type and code.";
    ICMP_LIMITED: Counter "lvsnic_icmp_rate_limited_total" "ICMP errors suppressed by the per-destination rate limit.";
    ARP_REPLIES: Counter "lvsnic_arp_replies_total" "ARP replies sent.";
    ICMP6_SENT: Counter "lvsnic_icmp6_sent_total" "ICMPv6 messages generated, by type and code.";
    ND_ADVERTS: Counter "lvsnic_nd_adverts_total" "Neighbour Advertisements sent.";
    OFFLOADED: Gauge "lvsnic_offloaded_connections" "Connections offloaded to the card.";
    DIVERTED: Gauge "lvsnic_diverted_connections" "Connections of deleted real servers queued for removal from the card.";
    FLOW_USED: Gauge "lvsnic_flow_table_used_entries" "Flow-table entries in use (an IPv6 flow takes two).";
    FLOW_SIZE: Gauge "lvsnic_flow_table_size_entries" "The card's flow-table entries.";
    ACTION_USED: Gauge "lvsnic_action_table_used_entries" "Action-table entries in use.";
    ACTION_SIZE: Gauge "lvsnic_action_table_size_entries" "The card's usable action-table entries.";
    TABLE_FULL: Counter "lvsnic_flow_table_full_total" "Flows that did not fit in the card's table (their connection stays in software).";
    EVICTED: Counter "lvsnic_flow_table_evicted_total" "Idle offloaded connections evicted from the card for a connection that did not fit.";
    BUSY: Counter "lvsnic_device_busy_timeouts_total" "Table commands that found the device busy for too long.";
    NEIGHBOR_MISMATCH: Counter "lvsnic_neighbor_mismatches_total" "ARP frames from a [neighbors] address with another MAC than configured.";
    NEIGHBOR_EVENTS: Counter "lvsnic_neighbor_events_total" "Real servers' next hops whose MAC was learned, changed, or not found (resolution failed).";
    NEIGHBOR_UNRESOLVED: Gauge "lvsnic_neighbor_unresolved" "Real servers (and a learned gateway) whose next hop has no known MAC.";
    NEIGHBOR_HELD: Counter "lvsnic_neighbor_held_frames_total" "Frames held while their real server's next hop was resolved.";
    NEIGHBOR_RELEASED: Counter "lvsnic_neighbor_released_frames_total" "Held frames sent once the MAC was known.";
    NEIGHBOR_UNRES_DROPS: Counter "lvsnic_neighbor_unresolved_dropped_frames_total" "Frames dropped for want of a MAC (queue full, resolution failed).";
    NEIGHBOR_ARP: Counter "lvsnic_neighbor_arp_requests_total" "ARP requests the daemon sent to resolve or confirm next hops.";
    NEIGHBOR_ARP_LIMITED: Counter "lvsnic_neighbor_arp_rate_limited_total" "ARP requests postponed by the rate limit.";
    NEIGHBOR_BAD: Counter "lvsnic_neighbor_bad_input_total" "Neighbour inputs refused: a MAC no host can have, a netlink message that did not parse.";
    NEIGHBOR_FULL: Counter "lvsnic_neighbor_table_full_total" "Next hops not tracked because the neighbour table was full.";
    NEIGHBOR_QUEUE: Counter "lvsnic_neighbor_queue_refused_total" "Requests to or answers from the rtnetlink thread its bounded queues refused.";
    LIMIT_RATE: Gauge "lvsnic_rate_limit_connections_per_second" "The [limits] new-connection rate per service (absent: no limit).";
    LIMIT_BURST: Gauge "lvsnic_rate_limit_burst_connections" "The [limits] bucket depth.";
    LIMIT_ADMITTED: Counter "lvsnic_rate_limit_admitted_total" "New-connection frames that found a token, by service bucket.";
    LIMIT_LIMITED: Counter "lvsnic_rate_limit_dropped_total" "New-connection frames dropped for want of a token, by service bucket.";
    CTL_ACCEPTED: Counter "lvsnic_control_connections_total" "Control-socket connections accepted.";
    CTL_REFUSED: Counter "lvsnic_control_refused_total" "Control-socket requests refused, by reason.";
    CTL_ACTIVE: Gauge "lvsnic_control_clients" "Control clients being served.";
    CTL_LONGEST: Gauge "lvsnic_control_longest_work_seconds" "The longest time one loop iteration spent on control work.";
    CTL_PERM: Counter "lvsnic_control_permission_refused_total" "Requests refused for their sender's credentials.";
    STATE_WRITES: Counter "lvsnic_state_writes_total" "Files of the state directory written.";
    STATE_FAILED: Counter "lvsnic_state_write_failures_total" "State-directory writes that failed.";
    PCAP_LEFT: Gauge "lvsnic_pcap_frames_left" "Frames of a pcap wire not yet played.";
    H_CHECKERS: Gauge "lvsnic_health_checkers" "Health checkers running.";
    H_CHECKS: Counter "lvsnic_health_checks_total" "Health checks run.";
    H_FAILURES: Counter "lvsnic_health_check_failures_total" "Health checks that failed.";
    H_TRANSITIONS: Counter "lvsnic_health_checker_transitions_total" "Checkers that went up or down.";
    H_WEIGHTS: Counter "lvsnic_health_weight_changes_total" "Weights misc_dynamic changed.";
    H_SORRY: Counter "lvsnic_health_sorry_server_transitions_total" "Sorry servers put in (quorum lost) or taken out (quorum back).";
    H_NOTIFIES: Counter "lvsnic_health_notifies_total" "Notify scripts started.";
    H_COMMANDS: Counter "lvsnic_health_commands_total" "ipvsadm commands the checkers ran.";
    H_CMD_ERRORS: Counter "lvsnic_health_command_errors_total" "Checker commands the control plane refused.";
    H_SCRIPTS_REFUSED: Counter "lvsnic_health_scripts_refused_total" "Scripts not run: their user or path failed keepalived's checks.";
    H_UP: Gauge "lvsnic_health_checker_up" "1 while the checker finds its real server up.";
    H_CHECKER_CHECKS: Counter "lvsnic_health_checker_checks_total" "Checks the checker ran.";
    H_CHECKER_FAILURES: Counter "lvsnic_health_checker_failures_total" "Checks of the checker that failed.";
    H_QUORUM: Gauge "lvsnic_health_quorum_up" "1 while the health-checked service has its quorum.";
    SYNC_RUNNING: Gauge "lvsnic_sync_daemon_running" "1 while the connection sync daemon of the role runs.";
    SYNC_M_CONNS: Counter "lvsnic_sync_master_connections_synced_total" "Connection entries the master wrote into sync messages.";
    SYNC_M_SENT: Counter "lvsnic_sync_master_sent_messages_total" "Sync messages the master handed out.";
    SYNC_M_DROPPED: Counter "lvsnic_sync_master_dropped_messages_total" "Sync messages the master dropped (queue full) or the socket refused.";
    SYNC_B_RECEIVED: Counter "lvsnic_sync_backup_received_messages_total" "Sync messages the backup received.";
    SYNC_B_ENTRIES: Counter "lvsnic_sync_backup_entries_total" "Sync entries the backup applied, by result.";
    SYNC_B_DROPPED: Counter "lvsnic_sync_backup_dropped_total" "Sync messages, rests of messages and entries the backup dropped, by reason.";
    SYNC_B_RECV_ERR: Counter "lvsnic_sync_backup_receive_errors_total" "Receive errors of the backup's socket.";
    SYNC_B_SOFT: Counter "lvsnic_sync_backup_kept_in_software_total" "Synced connections not offloaded (the card's budget for sync was used).";
    SYNC_B_QUEUED: Gauge "lvsnic_sync_backup_queue_messages" "Sync messages waiting in the backup's queue.";
    SYNC_B_QCAP: Gauge "lvsnic_sync_backup_queue_capacity_messages" "The backup's queue size.";
    VIP_OWNED: Gauge "lvsnic_vip_owned" "1 while the VIP is this director's (VRRP master), 0 while another's.";
    VIPS_MODE: Gauge "lvsnic_vips_mode" "1 for the --vips mode the daemon runs with.";
    HTTP_REQUESTS: Counter "lvsnic_metrics_requests_total" "Requests to the metrics server, by result.";
}

/// `proto`, `vip`, `port` (or `fwmark`) of a service.
fn service_labels(key: &ServiceKey) -> Labels {
    match key {
        ServiceKey::Addr { proto, addr, port } => {
            vec![("proto", proto.list_name().to_string()), ("vip", addr.to_string()), ("port", port.to_string())]
        }
        ServiceKey::Fwmark { mark, .. } => vec![("proto", "FWM".into()), ("fwmark", mark.to_string())],
    }
}

/// [`service_labels`] of a service as ipvsadm names it (`-t 10.0.0.1:80`,
/// `-f 5`), as the health checkers keep it.
fn service_labels_of_args(svc: &[String]) -> Labels {
    let proto = match svc.first().map(String::as_str) {
        Some("-t") => "TCP",
        Some("-u") => "UDP",
        Some("--sctp-service") => "SCTP",
        Some("-f") => "FWM",
        _ => "?",
    };
    let arg = svc.get(1).map(String::as_str).unwrap_or("");
    if proto == "FWM" {
        return vec![("proto", proto.into()), ("fwmark", arg.to_string())];
    }
    let (vip, port) = split_addr(arg);
    vec![("proto", proto.into()), ("vip", vip), ("port", port)]
}

/// `ADDR:PORT` or `[V6]:PORT` as (address without brackets, port).
fn split_addr(s: &str) -> (String, String) {
    match s.parse::<std::net::SocketAddr>() {
        Ok(a) => (a.ip().to_string(), a.port().to_string()),
        Err(_) => match s.rsplit_once(':') {
            Some((a, p)) => (a.trim_start_matches('[').trim_end_matches(']').to_string(), p.to_string()),
            None => (s.to_string(), String::new()),
        },
    }
}

fn with(mut l: Labels, more: &[(&'static str, String)]) -> Labels {
    l.extend(more.iter().cloned());
    l
}

/// The ten `--stats`/`--rate` families of one kind of row.
struct StatsFamilies([&'static Family; 10]);

const SVC_STATS: StatsFamilies =
    StatsFamilies([&SVC_CONNS, &SVC_INPKTS, &SVC_OUTPKTS, &SVC_INBYTES, &SVC_OUTBYTES, &SVC_CPS, &SVC_INPPS, &SVC_OUTPPS, &SVC_INBPS, &SVC_OUTBPS]);
const RS_STATS: StatsFamilies =
    StatsFamilies([&RS_CONNS, &RS_INPKTS, &RS_OUTPKTS, &RS_INBYTES, &RS_OUTBYTES, &RS_CPS, &RS_INPPS, &RS_OUTPPS, &RS_INBPS, &RS_OUTBPS]);

fn stats_values(s: &StatsView, r: &RateView) -> [u64; 10] {
    [s.conns, s.inpkts, s.outpkts, s.inbytes, s.outbytes, r.cps, r.inpps, r.outpps, r.inbps, r.outbps]
}

fn write_stats(w: &mut Writer, fams: &StatsFamilies, rows: &[(Labels, [u64; 10])]) {
    for (i, f) in fams.0.iter().enumerate() {
        w.family(f, rows.iter().map(|(l, v)| (l.clone(), v[i])));
    }
}

/// Counters of `(label value, count)` pairs under one label.
fn by(label: &'static str, pairs: impl IntoIterator<Item = (impl Into<String>, u64)>) -> Vec<(Labels, u64)> {
    pairs.into_iter().map(|(k, v)| (vec![(label, k.into())], v)).collect()
}

/// The exposition of `s` in `format`.
pub fn render(s: &Snapshot, format: Format) -> String {
    let mut w = Writer::new(format);
    let st = &s.status;
    let rep = &st.director.director;

    // ipvsadm -L -n --stats --rate, per service and real server.
    let svc_rows: Vec<(Labels, [u64; 10])> = s.services.iter().map(|v| (service_labels(&v.key), stats_values(&v.stats, &v.rates))).collect();
    write_stats(&mut w, &SVC_STATS, &svc_rows);
    let dests: Vec<(Labels, &lvsnic_model::rules::ipvsadm::DestListing)> = s
        .services
        .iter()
        .flat_map(|v| {
            v.dests.iter().map(move |d| (with(service_labels(&v.key), &[("rip", d.addr.to_string()), ("rport", d.port.to_string())]), d))
        })
        .collect();
    let rs_rows: Vec<(Labels, [u64; 10])> = dests.iter().map(|(l, d)| (l.clone(), stats_values(&d.stats, &d.rates))).collect();
    write_stats(&mut w, &RS_STATS, &rs_rows);
    w.family(&RS_ACTIVE, dests.iter().map(|(l, d)| (l.clone(), d.activeconns)));
    w.family(&RS_INACTIVE, dests.iter().map(|(l, d)| (l.clone(), d.inactconns)));
    w.family(&RS_PERSIST, dests.iter().map(|(l, d)| (l.clone(), d.persistconns)));
    w.family(&RS_WEIGHT, dests.iter().map(|(l, d)| (l.clone(), d.weight)));
    let t = &rep.total;
    w.one(&TOT_CONNS, t.conns);
    w.one(&TOT_INPKTS, t.inpkts);
    w.one(&TOT_OUTPKTS, t.outpkts);
    w.one(&TOT_INBYTES, t.inbytes);
    w.one(&TOT_OUTBYTES, t.outbytes);

    // The connection table.
    let states = s.conn_states.counts.iter().map(|((p, st), n)| (vec![("proto", p.to_string()), ("state", st.to_string())], *n));
    w.family(&CONN_STATES, states);
    w.one(&TEMPLATES, s.conn_states.templates);
    w.one(&CONN_ENTRIES, rep.connections.live);
    w.one(&CONN_CREATED, rep.connections.created);
    w.one(&CONN_EXPIRED, rep.connections.expired);
    w.one(&TEMPL_CREATED, rep.connections.templates_created);

    // The exception loop.
    let l = &st.director.exception_loop;
    w.one(&FRAMES, l.frames);
    w.one(&IN_HW, l.in_hardware);
    w.family(&EXCEPTIONS, by("reason", l.exceptions_by_reason.iter().filter(|&(n, _)| n != "forwarded")));
    w.one(&RATE_LIMITED, l.rate_limited);
    w.one(&TRANSMITTED, l.transmitted);
    w.one(&TO_HOST, l.to_host);
    let rx = &l.dropped_on_receive;
    w.family(&RX_DROPS, by("reason", [("empty", rx.empty), ("runt", rx.runt), ("oversize", rx.oversize), ("ring", rx.ring)]));
    w.one(&HOST_DROPPED, st.host_dropped);
    w.one(&TAP_DROPPED, st.tx_dropped);

    // The director's own counters.
    w.one(&DIR_INPUT, rep.frames.input);
    w.one(&DIR_TX, rep.frames.transmitted);
    w.family(&DIR_TO_HOST, by("reason", rep.to_host.iter().map(|(k, v)| (k.clone(), *v))));
    w.family(&DIR_DROPPED, by("reason", rep.dropped.iter().map(|(k, v)| (k.clone(), *v))));
    let r = &rep.reassembly;
    w.family(
        &REASM,
        by(
            "event",
            [
                ("held", r.held),
                ("reassembled", r.reassembled),
                ("timeout", r.timeouts),
                ("duplicate", r.duplicates),
                ("overlap", r.overlaps),
                ("invalid", r.invalid),
                ("oversize", r.oversize),
                ("ecn_mix", r.ecn_mix),
                ("no_memory", r.no_memory),
            ],
        ),
    );
    // Keyed `type T code C`.
    let by_type_code = |m: &std::collections::BTreeMap<String, u64>| -> Vec<(Labels, u64)> {
        m.iter()
            .map(|(k, n)| {
                let w: Vec<&str> = k.split_whitespace().collect();
                let (t, c) = match w.as_slice() {
                    ["type", t, "code", c] => (t.to_string(), c.to_string()),
                    _ => (k.clone(), String::new()),
                };
                (vec![("type", t), ("code", c)], *n)
            })
            .collect()
    };
    w.family(&ICMP_SENT, by_type_code(&rep.icmp_sent));
    w.one(&ICMP_LIMITED, rep.icmp_rate_limited);
    w.one(&ARP_REPLIES, rep.arp_replies);
    w.family(&ICMP6_SENT, by_type_code(&rep.icmp6_sent));
    w.one(&ND_ADVERTS, rep.nd_adverts);

    // The card's tables.
    let o = &st.director.offload;
    w.one(&OFFLOADED, o.connections);
    w.one(&DIVERTED, o.diverted);
    w.one(&FLOW_USED, o.flow_entries);
    w.one(&FLOW_SIZE, o.flow_capacity);
    w.one(&ACTION_USED, o.action_entries);
    w.one(&ACTION_SIZE, o.action_capacity);
    w.one(&TABLE_FULL, o.table_full);
    w.one(&EVICTED, o.evicted);
    w.one(&BUSY, o.busy_timeouts);
    let nb = &st.director.neighbors;
    w.one(&NEIGHBOR_MISMATCH, nb.mismatches);
    let c = &nb.counters;
    w.family(&NEIGHBOR_EVENTS, by("event", [("learned", c.learned), ("changed", c.changed), ("failed", c.failed)]));
    w.one(&NEIGHBOR_UNRESOLVED, nb.entries.values().filter(|e| e.mac.is_none()).count() as u64);
    w.one(&NEIGHBOR_HELD, c.held);
    w.one(&NEIGHBOR_RELEASED, c.released);
    w.one(&NEIGHBOR_UNRES_DROPS, c.unresolved_drops);
    w.one(&NEIGHBOR_ARP, c.arp_requests);
    w.one(&NEIGHBOR_ARP_LIMITED, c.arp_limited);
    w.one(&NEIGHBOR_BAD, c.bad_input);
    w.one(&NEIGHBOR_FULL, c.table_full);
    w.one(&NEIGHBOR_QUEUE, c.queue_refused);

    // The rate limit.
    let lim = &st.director.limits;
    w.family(&LIMIT_RATE, lim.new_conn_per_sec.map(|r| (Labels::new(), r)));
    w.one(&LIMIT_BURST, lim.burst);
    w.family(&LIMIT_ADMITTED, by("service", lim.services.iter().map(|(k, c)| (k.clone(), c.admitted))));
    w.family(&LIMIT_LIMITED, by("service", lim.services.iter().map(|(k, c)| (k.clone(), c.limited))));

    // The control socket and the state directory.
    if let Some(c) = &st.control {
        let k = &c.clients;
        w.one(&CTL_ACCEPTED, k.accepted);
        w.family(
            &CTL_REFUSED,
            by(
                "reason",
                [
                    ("busy", k.refused_busy),
                    ("deadline", k.deadline_cut),
                    ("too_large", k.too_large),
                    ("bad_request", k.bad_request),
                    ("unauthorized", k.unauthorized),
                    ("queue_full", k.queue_full),
                ],
            ),
        );
        w.one(&CTL_ACTIVE, k.active);
        w.one(&CTL_LONGEST, c.longest_control_us as f64 / 1e6);
    }
    w.one(&CTL_PERM, st.control_refused);
    if let Some(sd) = &st.state {
        w.one(&STATE_WRITES, sd.written);
        w.one(&STATE_FAILED, sd.failed);
    }
    w.family(&PCAP_LEFT, st.pcap_frames_left.map(|n| (Labels::new(), n)));

    // Health checkers.
    if let Some(h) = &st.health {
        w.one(&H_CHECKERS, h.checkers);
        w.one(&H_CHECKS, h.checks);
        w.one(&H_FAILURES, h.failures);
        w.family(&H_TRANSITIONS, by("to", [("up", h.checker_up), ("down", h.checker_down)]));
        w.one(&H_WEIGHTS, h.weight_changes);
        w.family(&H_SORRY, by("change", [("in", h.sorry_in), ("out", h.sorry_out)]));
        w.one(&H_NOTIFIES, h.notifies);
        w.one(&H_COMMANDS, h.commands);
        w.one(&H_CMD_ERRORS, h.command_errors);
        w.one(&H_SCRIPTS_REFUSED, h.scripts_refused);
    }
    let checker_labels = |c: &CheckerState| {
        let (rip, rport) = split_addr(&c.real_server);
        with(service_labels_of_args(&c.service), &[("rip", rip), ("rport", rport), ("checker", c.checker.into()), ("target", c.target.clone())])
    };
    w.family(&H_UP, s.checkers.iter().map(|c| (checker_labels(c), c.up)));
    w.family(&H_CHECKER_CHECKS, s.checkers.iter().map(|c| (checker_labels(c), c.checks)));
    w.family(&H_CHECKER_FAILURES, s.checkers.iter().map(|c| (checker_labels(c), c.failures)));
    w.family(&H_QUORUM, s.quorums.iter().map(|(svc, up)| (service_labels_of_args(svc), *up)));

    // Connection sync.
    let sync = &st.director.sync;
    w.family(&SYNC_RUNNING, by("role", [("master", sync.master.is_some() as u64), ("backup", sync.backup.is_some() as u64)]));
    if let Some(m) = &sync.master {
        w.one(&SYNC_M_CONNS, m.counters.conns_synced);
        w.one(&SYNC_M_SENT, m.counters.messages);
        w.family(&SYNC_M_DROPPED, by("reason", [("queue_full", m.counters.queue_full), ("send_error", m.send_errors)]));
    }
    if let Some(b) = &sync.backup {
        let c = &b.counters;
        w.one(&SYNC_B_RECEIVED, c.messages);
        w.family(&SYNC_B_ENTRIES, by("result", [("created", c.created), ("updated", c.updated), ("ignored", c.ignored), ("unbound", c.unbound)]));
        w.family(&SYNC_B_DROPPED, by("reason", c.dropped.iter().map(|(k, v)| (k.to_string(), *v))));
        w.one(&SYNC_B_RECV_ERR, b.recv_errors);
        w.one(&SYNC_B_SOFT, b.kept_in_software);
        w.one(&SYNC_B_QUEUED, b.queued);
        w.one(&SYNC_B_QCAP, b.queue_capacity);
    }

    // VIPs.
    w.family(&VIP_OWNED, s.vips.iter().map(|(a, o)| (vec![("vip", a.to_string())], *o)));
    w.family(&VIPS_MODE, by("mode", ["master", "backup", "host"].map(|m| (m, (m == st.vips) as u64))));
    w.family(&HTTP_REQUESTS, by("result", st.metrics.iter().flat_map(|m| m.pairs())));
    w.finish()
}

#[cfg(test)]
mod tests {
    use super::super::exposition::parse::parse;
    use super::*;
    use std::collections::BTreeSet;

    /// A snapshot with every section present: a director with two
    /// services (the UDP one with a real server of an IPv6 address), counters
    /// set from `k`, health checkers, both sync roles and VIPs.
    pub(crate) fn full_snapshot(k: u64) -> Snapshot {
        let cfg = lvsnic_model::config::DirectorConfig::parse(
            "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nmtu = 1500\ngateway_mac = \"02:00:00:00:00:fe\"\n\
             [neighbors]\n\"192.168.10.1\" = \"02:00:00:00:01:01\"\n\"192.168.10.2\" = \"02:00:00:00:01:02\"\n",
        )
        .unwrap();
        let rules = lvsnic_model::rules::ipvsadm::parse_rules_full(
            "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:80 -g -w 3\n-a -t 10.0.0.100:80 -r 192.168.10.2:8080 -m\n\
             -A -u 10.0.0.100:53 -s wlc\n",
        )
        .unwrap()
        .rules;
        let d = lvsnic_model::director::Director::new(cfg, &rules, 0).unwrap();
        let (_, mut services) = lvsnic_model::stats::listings(&d);
        for (i, s) in services.iter_mut().enumerate() {
            s.stats = StatsView { conns: k + i as u64, inpkts: 2 * k, outpkts: 3 * k, inbytes: 100 * k, outbytes: 200 * k };
            for dl in &mut s.dests {
                dl.stats = StatsView { conns: k, inpkts: k, outpkts: k, inbytes: k, outbytes: k };
                dl.activeconns = k as u32;
            }
        }
        // A real server with an IPv6 address (listings can hold one).
        let v6 = lvsnic_model::rules::ipvsadm::DestListing { addr: "2001:db8::7".parse().unwrap(), ..services[0].dests[0].clone() };
        services[1].dests.push(v6);
        let mut report = lvsnic_model::stats::Report::of(&d);
        report.total.conns = k;
        report.dropped.insert("no_real_server".into(), k);
        report.to_host.insert("local".into(), k);
        report.icmp_sent.insert("type 3 code 4".into(), k);
        report.icmp6_sent.insert("type 1 code 4".into(), k);
        let mut exceptions = crate::control::ExceptionReasons::default();
        for _ in 0..k {
            exceptions.count(lvsnic_model::hw::Reason::MissVip);
        }
        let director = crate::control::Status {
            now_ns: 0,
            director: report,
            exception_loop: crate::control::LoopCounters { frames: 5 * k, exceptions_by_reason: exceptions, rate_limited: k, ..Default::default() },
            offload: crate::control::OffloadStatus {
                connections: 1,
                diverted: 0,
                table_full: k,
                evicted: 0,
                busy_timeouts: 0,
                flow_entries: 2,
                flow_capacity: 4096,
                action_entries: 1,
                action_capacity: 255,
            },
            limits: crate::control::LimitsStatus {
                new_conn_per_sec: Some(100),
                burst: 200,
                limited: k,
                services: [("TCP 10.0.0.100:80".to_string(), crate::limits::BucketCounters { admitted: k, limited: k })].into(),
            },
            sync: Default::default(),
            neighbors: Default::default(),
        };
        let mut director = director;
        director.sync.master = Some(Default::default());
        director.sync.backup = Some(Default::default());
        if let Some(b) = &mut director.sync.backup {
            b.counters.messages = k;
            b.counters.dropped.insert("bad_version", k);
        }
        let status = DaemonStatus {
            director,
            host_dropped: k,
            tx_dropped: k,
            vips: "backup",
            control: Some(super::super::ControlStatus { clients: Default::default(), longest_control_us: 1500, bulk_promoted: 0 }),
            control_refused: k,
            health: Some(crate::health::HealthCounters { checks: k, checker_up: k, ..Default::default() }),
            pcap_frames_left: Some(k),
            state: Some(super::super::StateStatus { written: k, failed: 0 }),
            metrics: Some(super::super::metrics_http::HttpCounters { ok: k, ..Default::default() }),
            placement: None,
            loop_nice: 0,
            loop_steps: Default::default(),
        };
        let mut conn_states = ConnStates::default();
        conn_states.counts.insert(("TCP", "ESTABLISHED"), k);
        conn_states.counts.insert(("UDP", "UDP"), 1);
        conn_states.templates = 1;
        let checker = |rs: &str, up| CheckerState {
            service: vec!["-t".into(), "10.0.0.100:80".into()],
            real_server: rs.into(),
            checker: "HTTP_GET",
            target: "http://x/\"q\"".into(),
            up,
            checks: k,
            failures: 1,
        };
        Snapshot {
            status,
            services,
            conn_states,
            checkers: vec![checker("192.168.10.1:80", true), checker("[2001:db8::7]:80", false)],
            quorums: vec![(vec!["-f".into(), "7".into()], true)],
            vips: vec![("10.0.0.100".parse().unwrap(), true), ("10.0.0.200".parse().unwrap(), false)],
        }
    }

    fn samples(text: &str, format: Format) -> Vec<(String, std::collections::BTreeMap<String, String>, f64)> {
        parse(text, format).unwrap().into_iter().flat_map(|(_, p)| p.samples).collect()
    }

    #[test]
    fn every_family_is_written_once_with_help_and_type_in_both_formats() {
        for format in [Format::Text, Format::OpenMetrics] {
            let text = render(&full_snapshot(3), format);
            let fams = parse(&text, format).unwrap_or_else(|e| panic!("{e}\n{text}"));
            let got: BTreeSet<&str> = fams.iter().map(|(n, _)| n.as_str()).collect();
            let want: BTreeSet<&str> = FAMILIES.iter().map(|f| f.family_name(format)).collect();
            assert_eq!(got, want, "every family of FAMILIES, and no other, with this snapshot");
            for (name, p) in &fams {
                let f = FAMILIES.iter().find(|f| f.family_name(format) == name).unwrap();
                assert_eq!(p.kind, f.kind.name(), "{name}");
                assert!(!p.help.is_empty(), "{name}");
                assert!(name.starts_with("lvsnic_"), "{name}");
                assert_eq!(f.kind == Kind::Counter, f.name.ends_with("_total"), "{name}: counters and only counters end in _total");
            }
        }
    }

    #[test]
    fn services_and_real_servers_have_their_listing_values_and_labels() {
        let text = render(&full_snapshot(7), Format::Text);
        let s = samples(&text, Format::Text);
        let find = |name: &str, labels: &[(&str, &str)]| {
            s.iter()
                .find(|(n, l, _)| n == name && labels.iter().all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v)) && l.len() == labels.len())
                .map(|x| x.2)
                .unwrap_or_else(|| panic!("no {name} {labels:?} in\n{text}"))
        };
        let svc = [("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "80")];
        assert_eq!(find("lvsnic_service_connections_total", &svc), 7.0);
        assert_eq!(find("lvsnic_service_incoming_bytes_total", &svc), 700.0);
        assert_eq!(find("lvsnic_service_connections_total", &[("proto", "UDP"), ("vip", "10.0.0.100"), ("port", "53")]), 8.0);
        let rs = [("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "80"), ("rip", "192.168.10.2"), ("rport", "8080")];
        assert_eq!(find("lvsnic_real_server_active_connections", &rs), 7.0);
        assert_eq!(find("lvsnic_real_server_weight", &rs), 1.0);
        let v6 = [("proto", "UDP"), ("vip", "10.0.0.100"), ("port", "53"), ("rip", "2001:db8::7"), ("rport", "8080")];
        assert_eq!(find("lvsnic_real_server_connections_total", &v6), 7.0, "IPv6 without brackets");
        assert_eq!(find("lvsnic_connections", &[("proto", "TCP"), ("state", "ESTABLISHED")]), 7.0);
        assert_eq!(find("lvsnic_exception_frames_total", &[("reason", "miss_vip")]), 7.0);
        assert_eq!(find("lvsnic_exception_frames_total", &[("reason", "ttl")]), 0.0);
        assert_eq!(find("lvsnic_icmp_sent_total", &[("type", "3"), ("code", "4")]), 7.0);
        assert_eq!(find("lvsnic_control_longest_work_seconds", &[]), 0.0015);
        let chk = [("proto", "TCP"), ("vip", "10.0.0.100"), ("port", "80"), ("rip", "2001:db8::7"), ("rport", "80"), ("checker", "HTTP_GET"), ("target", "http://x/\"q\"")];
        assert_eq!(find("lvsnic_health_checker_up", &chk), 0.0);
        assert_eq!(find("lvsnic_health_quorum_up", &[("proto", "FWM"), ("fwmark", "7")]), 1.0);
        assert_eq!(find("lvsnic_vip_owned", &[("vip", "10.0.0.200")]), 0.0);
        assert_eq!(find("lvsnic_vips_mode", &[("mode", "backup")]), 1.0);
        assert_eq!(find("lvsnic_sync_backup_dropped_total", &[("reason", "bad_version")]), 7.0);
    }

    #[test]
    fn counters_only_grow_as_the_director_counts() {
        // Two scrapes of a director whose counters grew: every counter
        // sample of the first is in the second, not smaller.
        let (a, b) = (render(&full_snapshot(3), Format::Text), render(&full_snapshot(4), Format::Text));
        let counters: BTreeSet<&str> = FAMILIES.iter().filter(|f| f.kind == Kind::Counter).map(|f| f.name).collect();
        let later = samples(&b, Format::Text);
        let mut compared = 0;
        for (name, labels, v) in samples(&a, Format::Text).into_iter().filter(|(n, _, _)| counters.contains(n.as_str())) {
            let (_, _, w) = later.iter().find(|(n, l, _)| *n == name && *l == labels).unwrap_or_else(|| panic!("{name} {labels:?} gone"));
            assert!(*w >= v, "{name} {labels:?}: {v} then {w}");
            compared += 1;
        }
        assert!(compared > 50, "{compared}");
    }

    #[test]
    fn the_grafana_dashboard_queries_only_exported_metrics() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/grafana-dashboard.json");
        let text = std::fs::read_to_string(path).unwrap();
        let dash: serde_json::Value = serde_json::from_str(&text).unwrap();
        let known: BTreeSet<&str> = FAMILIES.iter().map(|f| f.name).collect();
        let mut exprs = Vec::new();
        fn walk<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, x) in m {
                        match (k.as_str(), x) {
                            ("expr" | "query", serde_json::Value::String(s)) => out.push(s),
                            _ => walk(x, out),
                        }
                    }
                }
                serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
                _ => {}
            }
        }
        walk(&dash, &mut exprs);
        assert!(dash["panels"].as_array().is_some_and(|p| p.len() >= 6), "a dashboard with panels");
        assert!(exprs.len() >= 10, "{exprs:?}");
        let mut used = BTreeSet::new();
        for e in &exprs {
            let mut names = 0;
            for (i, _) in e.match_indices("lvsnic_") {
                let before = e[..i].chars().next_back();
                if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                    continue;
                }
                let name: String = e[i..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                assert!(known.contains(name.as_str()), "the dashboard queries {name}, which the daemon does not export: {e}");
                used.insert(name);
                names += 1;
            }
            assert!(names > 0, "a query of no lvsnic metric: {e}");
        }
        for must in ["lvsnic_service_connections_total", "lvsnic_real_server_active_connections", "lvsnic_health_checker_up", "lvsnic_vip_owned"] {
            assert!(used.contains(must), "the dashboard shows {must}");
        }
    }

    #[test]
    fn the_user_guide_lists_every_family() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/user-guide.md");
        let guide = std::fs::read_to_string(path).unwrap();
        for f in FAMILIES {
            assert!(guide.contains(&format!("`{}`", f.name)), "docs/user-guide.md does not list {}", f.name);
        }
    }
}
