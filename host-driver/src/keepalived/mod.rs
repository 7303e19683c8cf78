//! `lvsnic keepalived FILE [--load]`: the LVS part of a keepalived
//! configuration (`virtual_server`, `virtual_server_group`, `real_server`,
//! `sorry_server`) as ipvsadm rules.
//!
//! Without `--load` the rules are printed as `ipvsadm -S -n` prints them
//! (what `ipvsadm -S -n` shows once keepalived has loaded the file and
//! every real server is up); with `--load` they are sent to the running
//! daemon as an `ipvsadm -R` (in configuration order, thresholds
//! included) and its answer is printed.
//!
//! The file is read as keepalived's parser reads it (lib/parser.c): `#`
//! and `!` start comments (outside double quotes), `"..."` is one word,
//! `{` and `}` are words of their own wherever they are, a line holds one
//! keyword and its values, `include PATTERN` reads the files the glob
//! matches (relative to the including file's directory, `{a,b}` braces
//! too) in sorted order.
//!
//! keepalived's semantics (keepalived/check/check_parser.c, check_data.c,
//! ipwrapper.c), which differ from ipvsadm's: the forwarding method
//! defaults to NAT (`lb_kind`/`lvs_method`, real servers inherit it unless
//! they set `lvs_method`), the scheduler to `wlc` (warned about), the
//! protocol to UDP (keepalived 2.2.7's default, warned about), the weight to 1; `persistence_timeout` without a value
//! and `persistence_granularity` alone mean 360 s; for DR and TUN the real
//! server port is the service's. The rules are those at start, as
//! keepalived's `init_services` makes them: a server with an `alpha`
//! checker starts down (left out, or added with weight 0 under
//! `inhibit_on_failure`); below `quorum` (default 1, with `hysteresis`)
//! the `sorry_server` is the pool. `TCP_CHECK`, `HTTP_GET`, `SSL_GET` and
//! `MISC_CHECK` become the [`Import::health`] configuration, which `--load`
//! starts in the daemon (`crate::health`) once the rules are in (the
//! top-level `SSL` block gives every `SSL_GET` its client certificate);
//! the other checkers (`SMTP_CHECK`, `DNS_CHECK`, `BFD_CHECK`,
//! `UDP_CHECK`, `PING_CHECK`, `FILE_CHECK`) are reported with their real
//! server, which is taken as up. A virtual server without real servers is
//! ignored (sorry server or not), and a `quorum` above the real servers'
//! total weight is reduced to it, as keepalived 2.2.7 does.
//!
//! `global_defs`' `lvs_sync_daemon` becomes [`Import::sync`]: `--load`
//! then starts both connection sync daemons in the daemon (keepalived
//! 2.2.7's reading of the line and why both: `global_parser`).
//!
//! Diagnostics name the file and line: unknown keywords and ignored values
//! are warnings; syntax errors (unbalanced braces, missing or invalid
//! values, unreadable includes) are errors, and no rules are printed.
//!
//! The modules follow keepalived's own files: `parser` (lib/parser.c:
//! lexing, `include`, blocks) with `glob`, `check_parser`
//! (check/check_parser.c: the `virtual_server` and `real_server` keywords
//! and what is ignored), `checkers` (check/check_tcp.c, check_http.c,
//! check_ssl.c, check_misc.c, check_api.c: the checker blocks, timing
//! keywords and the `SSL` block) and
//! `ipvswrapper` (check/ipwrapper.c, ipvswrapper.c: the services and real
//! servers that result).

mod check_parser;
mod checkers;
mod glob;
mod global_parser;
mod ipvswrapper;
mod parser;

pub use glob::glob;
pub use global_parser::SyncDaemonsConfig;
pub use parser::{Diag, Loc};
pub use ipvswrapper::restore_script;

use check_parser::{group_entries, virtual_server, Groups, OTHER_TOP};
use checkers::{client_cert, ssl_block, SslBlock};
use ipvswrapper::add_services;
use crate::daemon::proto::{self, Request};
use crate::health::config::{CheckKind, ClientCert, HealthConfig};
use lvsnic_model::rules::ipvsadm::format_save;
use lvsnic_model::rules::RuleSet;
use std::path::Path;

/// The start of the warning about a `vrrp_instance` lvsnic is not told about.
const VRRP_WARNING: &str = "vrrp_instance is run by keepalived (--vrrp), not lvsnic";

/// What an import produced.
#[derive(Clone, Debug, Default)]
pub struct Import {
    /// Services in configuration order, servers in configuration order.
    pub rules: RuleSet,
    /// Warnings in the order they were found.
    pub warnings: Vec<Diag>,
    /// The health checkers of the services that have any.
    pub health: HealthConfig,
    /// The connection sync daemons `global_defs`' `lvs_sync_daemon` asks
    /// for (`--load` starts both roles).
    pub sync: Option<SyncDaemonsConfig>,
}

/// The import failed: the errors (and the warnings seen so far).
#[derive(Clone, Debug, Default)]
pub struct ImportError {
    /// Errors in the order they were found.
    pub errors: Vec<Diag>,
    /// Warnings in the order they were found.
    pub warnings: Vec<Diag>,
}

/// Imports the keepalived configuration at `path`.
pub fn import(path: &Path) -> Result<Import, ImportError> {
    let (nodes, mut ctx) = parser::read(path);

    // Groups first: a virtual_server may name a group defined after it.
    let mut groups = Groups::new();
    for n in &nodes {
        if n.kw() == "virtual_server_group" {
            let Some(name) = ctx.val(n, 1).map(str::to_string) else { continue };
            let e = group_entries(&mut ctx, n);
            if e.is_empty() {
                ctx.warn(&n.loc, format!("virtual server group {name} has no entries"));
            }
            groups.insert(name, e);
        }
    }

    let mut rules = RuleSet::default();
    let mut health = HealthConfig::default();
    let mut ssl = SslBlock::default();
    let mut syncd = None;
    for n in &nodes {
        match n.kw() {
            "SSL" => ssl = ssl_block(&mut ctx, n),
            "global_defs" => {
                for c in n.children.iter().flatten() {
                    if c.kw() == "lvs_sync_daemon" {
                        global_parser::lvs_sync_daemon(&mut ctx, c, &mut syncd);
                    } else {
                        global_parser::scripts(&mut ctx, c, &mut health);
                    }
                }
            }
            "virtual_server" => {
                if let Some(v) = virtual_server(&mut ctx, n, &groups) {
                    add_services(&mut ctx, v, &mut rules, &mut health);
                }
            }
            "virtual_server_group" => {}
            k if OTHER_TOP.contains(&k) => {
                // VRRP stays keepalived's (`keepalived --vrrp`); an instance
                // whose notify lines tell lvsnic which VIPs it owns
                // (`lvsnic vip master|backup ...`, docs/ha.md) needs nothing more.
                let tells_lvsnic = n
                    .children
                    .iter()
                    .flatten()
                    .any(|c| (c.kw() == "notify" || c.kw().starts_with("notify_")) && c.words[1..].iter().any(|w| calls_lvsnic_vip(w)));
                if k == "vrrp_instance" && !tells_lvsnic {
                    ctx.warn(&n.loc, format!("{VRRP_WARNING}: run the daemon with --vips host, or add notify_master/notify_backup lines calling `lvsnic vip master|backup VIP...` (docs/ha.md)"));
                } else if k.starts_with("vrrp_") && k != "vrrp_instance" {
                    ctx.warn(&n.loc, format!("{k} ignored: VRRP is run by keepalived (--vrrp), not lvsnic"));
                }
            }
            k => ctx.warn(&n.loc, format!("unknown keyword '{k}'")),
        }
    }
    // keepalived's SSL context is global: every SSL_GET offers its client
    // certificate, wherever the block is.
    let any = ssl_gets(&mut health).next().is_some();
    if let Some(cert) = client_cert(&mut ctx, &ssl, any) {
        for c in ssl_gets(&mut health) {
            *c = Some(cert.clone());
        }
    }
    let sync = syncd.and_then(|s| global_parser::resolve(&mut ctx, s, &nodes));
    if ctx.errors.is_empty() {
        Ok(Import { rules, warnings: ctx.warnings, health, sync })
    } else {
        Err(ImportError { errors: ctx.errors, warnings: ctx.warnings })
    }
}

/// The client certificates of every `SSL_GET`.
fn ssl_gets(health: &mut HealthConfig) -> impl Iterator<Item = &mut Option<ClientCert>> {
    health.services.iter_mut().flat_map(|s| &mut s.reals).flat_map(|r| &mut r.checkers).filter_map(|c| match &mut c.kind {
        CheckKind::Ssl { client_cert, .. } => Some(client_cert),
        _ => None,
    })
}

/// The whole `lvsnic keepalived` command; returns the exit status.
pub fn run(prog: &str, file: &Path, load: bool, socket: Option<&Path>) -> u8 {
    let print = |kind: &str, d: &Diag| eprintln!("{}: {kind}: {}", d.loc, d.msg);
    let imp = match import(file) {
        Ok(i) => i,
        Err(e) => {
            for w in &e.warnings {
                print("warning", w);
            }
            for x in &e.errors {
                print("error", x);
            }
            eprintln!("{prog} keepalived: {} error(s), no rules produced", e.errors.len());
            return 1;
        }
    };
    let path = crate::cli::socket_path(socket);
    // A daemon that follows its stack's addresses (`--vips host`) needs no
    // notify lines: keepalived's virtual_ipaddress is all it takes.
    let follows_host = load
        && proto::call(&path, &Request::Status).is_ok_and(|r| {
            serde_json::from_str::<serde_json::Value>(&r.stdout).is_ok_and(|j| j["vips"] == "host")
        });
    for w in &imp.warnings {
        if !(follows_host && w.msg.starts_with(VRRP_WARNING)) {
            print("warning", w);
        }
    }
    if !load {
        print!("{}", format_save(&imp.rules));
        return 0;
    }
    // A load is a reload: the daemon applies the difference between its
    // rules and the file's, all of it or nothing (`crate::reload`).
    let n: usize = imp.health.services.iter().flat_map(|s| &s.reals).map(|r| r.checkers.len()).sum();
    let req = Request::Reload { rules: Some(restore_script(&imp.rules)), health: Some(imp.health) };
    let r = match proto::call(&path, &req) {
        Ok(r) => r,
        Err(e) if !e.unreachable() => {
            eprintln!("{prog}: {e}");
            return 2;
        }
        Err(e) => {
            eprintln!("{prog}: {}", proto::reach_text(&path, &e));
            return 2;
        }
    };
    if r.exit != 0 {
        eprint!("{}", r.stderr);
        eprintln!("{prog} keepalived: {}: not loaded, the daemon's rules are unchanged", file.display());
        return r.exit.clamp(1, 255) as u8;
    }
    let changes = r.stdout.lines().filter(|l| l.starts_with("lvsnic ")).count();
    eprintln!("{prog} keepalived: {changes} rule change(s) applied");
    // Notes of the checkers' start: MISC_CHECKs the daemon would not run
    // (their user or path), which do not count as running.
    eprint!("{}", r.stderr);
    let n = n.saturating_sub(r.stderr.lines().filter(|l| l.contains(": MISC_CHECK (") && l.ends_with(": not run")).count());
    // The rules are in and the daemon's checkers took over (replacing
    // any from an earlier load).
    if n > 0 {
        eprintln!("{prog} keepalived: {n} health checker(s) running in the daemon (`{prog} checkers` lists them)");
    }
    match &imp.sync {
        Some(s) => start_sync_daemons(prog, &path, s),
        None => 0,
    }
}

/// `--load` of an `lvs_sync_daemon`: both sync daemons in the daemon (see
/// [`global_parser`] for why both). A second `--load` keeps daemons that
/// run with the same settings (their sockets, the master's buffer and
/// per-connection sync state) and replaces those whose settings changed,
/// as keepalived does on a reload; a file without `lvs_sync_daemon`
/// leaves running daemons alone (they may have been started by hand).
fn start_sync_daemons(prog: &str, path: &Path, s: &SyncDaemonsConfig) -> u8 {
    let spec = |role| proto::SyncDaemonSpec {
        role,
        ifname: s.ifname.clone(),
        syncid: s.syncid,
        maxlen: s.maxlen,
        group: s.group,
        port: s.port,
        ttl: s.ttl,
    };
    let req = Request::SyncDaemons { daemons: vec![spec(proto::SyncRole::Master), spec(proto::SyncRole::Backup)] };
    let r = match proto::call(path, &req) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{prog}: {}", proto::reach_text(&path, &e));
            return 2;
        }
    };
    let done: Vec<String> = r.stdout.lines().map(|l| l.replacen(' ', " sync daemon ", 1)).collect();
    if r.exit != 0 {
        for l in r.stderr.lines() {
            let l = l.replacen(": ", " sync daemon: ", 1);
            eprintln!("{}: error: lvs_sync_daemon {}: {l}", s.loc, s.ifname);
        }
        if !done.is_empty() {
            eprintln!("{prog} keepalived: {}", done.join(", "));
        }
        return r.exit as u8;
    }
    eprintln!("{prog} keepalived: {} (mcast={}, syncid={}; `{prog} -L --daemon` lists them)", done.join(", "), s.ifname, s.syncid);
    0
}

/// Whether a keepalived notify command tells lvsnic about VIP ownership:
/// it runs `lvsnic vip ...` itself, or its program is a script (a
/// readable text file of at most 64 KiB) that does.
fn calls_lvsnic_vip(command: &str) -> bool {
    let says = |text: &str| text.lines().any(|l| l.contains("lvsnic") && l.split_whitespace().any(|w| w == "vip"));
    if says(command) {
        return true;
    }
    let Some(program) = command.split_whitespace().next() else { return false };
    match std::fs::metadata(program) {
        Ok(m) if m.is_file() && m.len() <= 64 * 1024 => std::fs::read_to_string(program).is_ok_and(|t| says(&t)),
        _ => false,
    }
}
