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
//! server port is the service's. Health checkers (`HTTP_GET`, `SSL_GET`,
//! `TCP_CHECK`, `SMTP_CHECK`, `DNS_CHECK`, `MISC_CHECK`, `BFD_CHECK`,
//! `UDP_CHECK`, `PING_CHECK`, `FILE_CHECK`) are not run: each is reported
//! (with its real server) and the server is taken as up, except a server
//! starting down (`alpha`, with a checker), which is left out, or added
//! with weight 0 under `inhibit_on_failure`. A virtual server without real
//! servers is ignored (sorry server or not), as keepalived 2.2.7 does. The
//! `sorry_server` is added when the live weight is below `quorum` (default
//! 1), e.g. every server at weight 0, as keepalived does.
//!
//! Diagnostics name the file and line: unknown keywords and ignored values
//! are warnings; syntax errors (unbalanced braces, missing or invalid
//! values, unreadable includes) are errors, and no rules are printed.
//!
//! The modules follow keepalived's own files: `parser` (lib/parser.c:
//! lexing, `include`, blocks) with `glob`, `check_parser`
//! (check/check_parser.c: the `virtual_server` and `real_server` keywords
//! and what is ignored) and `ipvswrapper` (check/ipwrapper.c,
//! ipvswrapper.c: the services and real servers that result).

mod check_parser;
mod glob;
mod ipvswrapper;
mod parser;

pub use glob::glob;
pub use parser::{Diag, Loc};
pub use ipvswrapper::restore_script;

use check_parser::{group_entries, virtual_server, Groups, OTHER_TOP};
use ipvswrapper::add_services;
use crate::daemon::proto::{self, Request};
use lvsnic_model::rules::ipvsadm::format_save;
use lvsnic_model::rules::RuleSet;
use std::path::Path;

/// What an import produced.
#[derive(Clone, Debug, Default)]
pub struct Import {
    /// Services in configuration order, servers in configuration order.
    pub rules: RuleSet,
    /// Warnings in the order they were found.
    pub warnings: Vec<Diag>,
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
    for n in &nodes {
        match n.kw() {
            "virtual_server" => {
                if let Some(v) = virtual_server(&mut ctx, n, &groups) {
                    add_services(&mut ctx, v, &mut rules);
                }
            }
            "virtual_server_group" => {}
            k if OTHER_TOP.contains(&k) => {
                if k.starts_with("vrrp_") {
                    ctx.warn(&n.loc, format!("{k} ignored: lvsnic does not run VRRP"));
                }
            }
            k => ctx.warn(&n.loc, format!("unknown keyword '{k}'")),
        }
    }
    if ctx.errors.is_empty() {
        Ok(Import { rules, warnings: ctx.warnings })
    } else {
        Err(ImportError { errors: ctx.errors, warnings: ctx.warnings })
    }
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
    for w in &imp.warnings {
        print("warning", w);
    }
    if !load {
        print!("{}", format_save(&imp.rules));
        return 0;
    }
    let path = crate::cli::socket_path(socket);
    let req = Request::Ipvsadm {
        prog: Some(prog.to_string()),
        argv: vec!["-R".into()],
        stdin: Some(restore_script(&imp.rules)),
    };
    match proto::call(&path, &req) {
        Ok(r) => crate::cli::emit(&r) as u8,
        Err(e) => {
            eprintln!("{prog}: can't reach the daemon: {e}");
            2
        }
    }
}
