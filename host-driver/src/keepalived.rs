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
//! protocol to TCP, the weight to 1; `persistence_timeout` without a value
//! and `persistence_granularity` alone mean 360 s; for DR and TUN the real
//! server port is the service's. Health checkers (`HTTP_GET`, `SSL_GET`,
//! `TCP_CHECK`, `SMTP_CHECK`, `DNS_CHECK`, `MISC_CHECK`, `BFD_CHECK`,
//! `UDP_CHECK`, `PING_CHECK`, `FILE_CHECK`) are not run: each is reported
//! (with its real server) and the server is taken as up, except a server
//! starting down (`alpha`, with a checker), which is left out, or added
//! with weight 0 under `inhibit_on_failure`. The `sorry_server` is added
//! when the live weight is below `quorum` (default 1), e.g. a service with
//! no real servers, as keepalived does.
//!
//! Diagnostics name the file and line: unknown keywords and ignored values
//! are warnings; syntax errors (unbalanced braces, missing or invalid
//! values, unreadable includes) are errors, and no rules are printed.

use crate::daemon::proto::{self, Request};
use lvsnic_model::rules::ipvsadm::{format_save, DEFAULT_SCHEDULER, KNOWN_PES, KNOWN_SCHEDULERS, MAX_TIMEOUT};
use lvsnic_model::rules::{
    AddressFamily, DestRule, FwdMethod, Netmask, Protocol, RuleSet, SchedFlags, ServiceKey, ServiceRule, TunnelCsum,
    TunnelType, DEFAULT_PERSISTENT_TIMEOUT,
};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

/// Where a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: PathBuf,
    pub line: usize,
}

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file.display(), self.line)
    }
}

/// A warning or an error, one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    pub loc: Loc,
    pub msg: String,
}

/// What an import produced.
#[derive(Clone, Debug, Default)]
pub struct Import {
    /// Services in configuration order, servers in configuration order.
    pub rules: RuleSet,
    pub warnings: Vec<Diag>,
}

/// The import failed: the errors (and the warnings seen so far).
#[derive(Clone, Debug, Default)]
pub struct ImportError {
    pub errors: Vec<Diag>,
    pub warnings: Vec<Diag>,
}

// ---------------------------------------------------------------------------
// Reading: files → logical lines

#[derive(Clone, Debug)]
struct Line {
    words: Vec<String>,
    loc: Loc,
}

struct Reader {
    lines: Vec<Line>,
    errors: Vec<Diag>,
    warnings: Vec<Diag>,
}

/// Removes a comment (`#` or `!` outside double quotes).
fn decomment(s: &str) -> &str {
    let mut quote = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quote = !quote,
            '#' | '!' if !quote => return &s[..i],
            _ => {}
        }
    }
    s
}

/// Splits a decommented line into words; braces are words of their own.
fn words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '{' | '}' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

impl Reader {
    fn read_file(&mut self, path: &Path, from: Option<&Loc>, depth: usize) {
        let err_loc = from.cloned().unwrap_or(Loc { file: path.to_path_buf(), line: 0 });
        if depth > 32 {
            self.errors.push(Diag { loc: err_loc, msg: format!("include nesting too deep at {}", path.display()) });
            return;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.errors.push(Diag { loc: err_loc, msg: format!("cannot read {}: {e}", path.display()) });
                return;
            }
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        for (i, raw) in text.lines().enumerate() {
            let loc = Loc { file: path.to_path_buf(), line: i + 1 };
            let line = decomment(raw);
            // `include` is recognised before braces split the line (a glob may hold `{a,b}`).
            let ws: Vec<&str> = line.split_whitespace().collect();
            if ws.first() == Some(&"include") {
                if ws.len() != 2 {
                    self.errors.push(Diag { loc, msg: "include needs exactly one file name or pattern".into() });
                    continue;
                }
                let name = ws[1].trim_matches('"');
                let pat = if Path::new(name).is_absolute() { PathBuf::from(name) } else { dir.join(name) };
                let files = glob(&pat.to_string_lossy());
                if files.is_empty() {
                    self.warnings.push(Diag { loc: loc.clone(), msg: format!("no config files matched '{name}'") });
                }
                for f in files {
                    self.read_file(&f, Some(&loc), depth + 1);
                }
                continue;
            }
            let w = match words(line) {
                Ok(w) => w,
                Err(e) => {
                    self.errors.push(Diag { loc, msg: e });
                    continue;
                }
            };
            if w.is_empty() {
                continue;
            }
            // Braces split the line: `a b { c }` is `a b`, `{`, `c`, `}`.
            let mut cur: Vec<String> = Vec::new();
            for x in w {
                if x == "{" || x == "}" {
                    if !cur.is_empty() {
                        self.lines.push(Line { words: std::mem::take(&mut cur), loc: loc.clone() });
                    }
                    self.lines.push(Line { words: vec![x], loc: loc.clone() });
                } else {
                    cur.push(x);
                }
            }
            if !cur.is_empty() {
                self.lines.push(Line { words: cur, loc: loc.clone() });
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Globbing (glob(3) with GLOB_BRACE, sorted; directories skipped)

fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_string()] };
    let Some(close_rel) = p[open..].find('}') else { return vec![p.to_string()] };
    let close = open + close_rel;
    let (pre, alts, post) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    alts.split(',').flat_map(|a| expand_braces(&format!("{pre}{a}{post}"))).collect()
}

/// fnmatch(3) of one path component: `*`, `?`, `[...]` (`!`/`^` negate).
fn fnmatch(pat: &[char], name: &[char]) -> bool {
    if pat.is_empty() {
        return name.is_empty();
    }
    match pat[0] {
        '*' => (0..=name.len()).any(|k| fnmatch(&pat[1..], &name[k..])),
        '?' => !name.is_empty() && fnmatch(&pat[1..], &name[1..]),
        '[' => {
            let Some(end) = pat.iter().skip(2).position(|&c| c == ']').map(|e| e + 2) else {
                return !name.is_empty() && name[0] == '[' && fnmatch(&pat[1..], &name[1..]);
            };
            if name.is_empty() {
                return false;
            }
            let mut set = &pat[1..end];
            let neg = matches!(set.first(), Some('!' | '^'));
            if neg {
                set = &set[1..];
            }
            let c = name[0];
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != neg && fnmatch(&pat[end + 1..], &name[1..])
        }
        c => !name.is_empty() && name[0] == c && fnmatch(&pat[1..], &name[1..]),
    }
}

/// Regular files matching `pattern`, sorted.
pub fn glob(pattern: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in expand_braces(pattern) {
        let abs = p.starts_with('/');
        let mut paths = vec![if abs { PathBuf::from("/") } else { PathBuf::new() }];
        let comps: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
        for comp in comps {
            let mut next = Vec::new();
            for base in &paths {
                if !comp.contains(['*', '?', '[']) {
                    next.push(base.join(comp));
                    continue;
                }
                let dir = if base.as_os_str().is_empty() { Path::new(".") } else { base.as_path() };
                let Ok(rd) = std::fs::read_dir(dir) else { continue };
                let pat: Vec<char> = comp.chars().collect();
                let mut names: Vec<String> =
                    rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                for n in names {
                    if n.starts_with('.') && !comp.starts_with('.') {
                        continue;
                    }
                    let nc: Vec<char> = n.chars().collect();
                    if fnmatch(&pat, &nc) {
                        next.push(base.join(&n));
                    }
                }
            }
            paths = next;
        }
        let mut files: Vec<PathBuf> = paths.into_iter().filter(|p| p.is_file()).collect();
        files.sort();
        out.extend(files);
    }
    out
}

// ---------------------------------------------------------------------------
// Blocks

#[derive(Clone, Debug)]
struct Node {
    words: Vec<String>,
    loc: Loc,
    children: Option<Vec<Node>>,
}

impl Node {
    fn kw(&self) -> &str {
        &self.words[0]
    }
    fn arg(&self, i: usize) -> Option<&str> {
        self.words.get(i).map(String::as_str)
    }
}

/// Builds the block tree; unbalanced braces are errors.
fn tree(lines: &[Line], errors: &mut Vec<Diag>) -> Vec<Node> {
    fn block(lines: &[Line], i: &mut usize, open: Option<&Loc>, errors: &mut Vec<Diag>) -> Vec<Node> {
        let mut out: Vec<Node> = Vec::new();
        while *i < lines.len() {
            let l = &lines[*i];
            *i += 1;
            match l.words[0].as_str() {
                "}" => {
                    if open.is_some() {
                        return out;
                    }
                    errors.push(Diag { loc: l.loc.clone(), msg: "extra '}' found".into() });
                }
                "{" => {
                    // A block for the previous keyword (braces on a line of their own).
                    match out.last_mut() {
                        Some(prev) if prev.children.is_none() => {
                            let b = block(lines, i, Some(&l.loc), errors);
                            prev.children = Some(b);
                        }
                        _ => {
                            errors.push(Diag { loc: l.loc.clone(), msg: "unexpected '{'".into() });
                            let _ = block(lines, i, Some(&l.loc), errors);
                        }
                    }
                }
                _ => out.push(Node { words: l.words.clone(), loc: l.loc.clone(), children: None }),
            }
        }
        if let Some(o) = open {
            errors.push(Diag { loc: o.clone(), msg: "missing '}' for the block opened here".into() });
        }
        out
    }
    let mut i = 0;
    block(lines, &mut i, None, errors)
}

// ---------------------------------------------------------------------------
// Interpretation

const CHECKERS: &[&str] = &[
    "HTTP_GET",
    "SSL_GET",
    "TCP_CHECK",
    "SMTP_CHECK",
    "DNS_CHECK",
    "MISC_CHECK",
    "BFD_CHECK",
    "UDP_CHECK",
    "PING_CHECK",
    "FILE_CHECK",
];

/// Top-level keywords of keepalived that are not about LVS (skipped).
const OTHER_TOP: &[&str] = &[
    "global_defs",
    "static_ipaddress",
    "static_routes",
    "static_rules",
    "vrrp_script",
    "vrrp_sync_group",
    "vrrp_instance",
    "vrrp_track_process",
    "vrrp_track_file",
    "track_file",
    "track_process",
    "garp_group",
    "linkbeat_interfaces",
    "net_namespace",
    "net_namespace_ipvs",
    "use_pid_dir",
    "instance",
    "SSL",
    "bfd_instance",
    "namespace_with_ipsets",
    "vrrp_garp_interval",
];

/// Virtual-server keywords that change nothing in the rules (health
/// checking, notification, SNMP...).
const VS_INERT: &[&str] = &[
    "delay_loop",
    "retry",
    "delay_before_retry",
    "warmup",
    "connect_timeout",
    "ha_suspend",
    "smtp_alert",
    "virtualhost",
    "alpha",
    "omega",
    "quorum_up",
    "quorum_down",
    "hysteresis",
    "weight",
    "inhibit_on_failure",
    "sorry_server_inhibit",
    "hashed",
    "ip_family",
    "quorum",
    "nb_get_retry",
];

const RS_INERT: &[&str] = &[
    "notify_up",
    "notify_down",
    "retry",
    "delay_before_retry",
    "warmup",
    "delay_loop",
    "smtp_alert",
    "virtualhost",
    "connect_timeout",
    "nb_get_retry",
    "alpha",
    "inhibit_on_failure",
];

#[derive(Clone, Debug)]
struct Fwd {
    method: String,
    tun: TunnelType,
    csum: TunnelCsum,
}

#[derive(Clone, Debug)]
struct Rs {
    addr: IpAddr,
    port: Option<u16>,
    weight: u32,
    fwd: Option<Fwd>,
    uth: u32,
    lth: u32,
    inhibit: bool,
    alpha: Option<bool>,
    /// Checkers found (where, what), reported once the server's state is known.
    checkers: Vec<(Loc, String)>,
    loc: Loc,
}

struct Ctx {
    errors: Vec<Diag>,
    warnings: Vec<Diag>,
}

impl Ctx {
    fn err(&mut self, loc: &Loc, msg: impl Into<String>) {
        self.errors.push(Diag { loc: loc.clone(), msg: msg.into() });
    }
    fn warn(&mut self, loc: &Loc, msg: impl Into<String>) {
        self.warnings.push(Diag { loc: loc.clone(), msg: msg.into() });
    }
    /// The value at word `i`, or an error.
    fn val<'a>(&mut self, n: &'a Node, i: usize) -> Option<&'a str> {
        let v = n.arg(i);
        if v.is_none() {
            self.err(&n.loc, format!("{}: missing value", n.kw()));
        }
        v
    }
    fn num(&mut self, n: &Node, i: usize, min: u64, max: u64) -> Option<u64> {
        let v = self.val(n, i)?;
        match v.parse::<u64>() {
            Ok(x) if (min..=max).contains(&x) => Some(x),
            _ => {
                self.err(&n.loc, format!("{}: invalid value '{v}' (expected {min}..{max})", n.kw()));
                None
            }
        }
    }
    fn bool_opt(&mut self, n: &Node) -> bool {
        match n.arg(1) {
            None => true,
            Some("true" | "on" | "yes") => true,
            Some("false" | "off" | "no") => false,
            Some(v) => {
                self.err(&n.loc, format!("{}: invalid value '{v}' (expected true/false, on/off, yes/no)", n.kw()));
                false
            }
        }
    }
    fn no_block(&mut self, n: &Node) {
        if n.children.is_some() {
            self.warn(&n.loc, format!("{} takes no block: block ignored", n.kw()));
        }
    }

    /// `lvs_method NAT|DR|TUN [type ipip|gue port N|gre] [nocsum|csum|remcsum]`.
    fn fwd(&mut self, n: &Node) -> Option<Fwd> {
        let m = self.val(n, 1)?;
        if !matches!(m, "NAT" | "DR" | "TUN") {
            self.err(&n.loc, format!("{}: unknown forwarding method '{m}' (expected NAT, DR or TUN)", n.kw()));
            return None;
        }
        let mut f = Fwd { method: m.to_string(), tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum };
        let mut i = 2;
        while let Some(w) = n.arg(i) {
            match w {
                "type" if m == "TUN" => {
                    match n.arg(i + 1) {
                        Some("ipip") => f.tun = TunnelType::Ipip,
                        Some("gre") => f.tun = TunnelType::Gre,
                        Some("gue") => {
                            if n.arg(i + 2) != Some("port") {
                                self.err(&n.loc, "TUN type gue: missing 'port N'");
                                return None;
                            }
                            let p = self.num(n, i + 3, 1, 65535)? as u16;
                            f.tun = TunnelType::Gue { port: p };
                            i += 2;
                        }
                        other => {
                            self.err(&n.loc, format!("TUN type: invalid value '{}'", other.unwrap_or("")));
                            return None;
                        }
                    }
                    i += 2;
                }
                "nocsum" if m == "TUN" => {
                    f.csum = TunnelCsum::NoCsum;
                    i += 1;
                }
                "csum" if m == "TUN" => {
                    f.csum = TunnelCsum::Csum;
                    i += 1;
                }
                "remcsum" if m == "TUN" => {
                    f.csum = TunnelCsum::RemCsum;
                    i += 1;
                }
                other => {
                    self.err(&n.loc, format!("{}: unexpected '{other}'", n.kw()));
                    return None;
                }
            }
        }
        Some(f)
    }
}

fn parse_ip(s: &str) -> Option<IpAddr> {
    s.parse().ok()
}

/// The services a `virtual_server` (or group entry) line names.
enum VsTarget {
    Keys(Vec<(ServiceKeyProto, Loc)>),
    Group(String),
}

/// A service key whose protocol is not known yet (`protocol` comes later).
#[derive(Clone, Debug)]
enum ServiceKeyProto {
    Addr(IpAddr, u16),
    Fwmark(u32),
}

/// Entries of a `virtual_server_group`.
fn group_entries(ctx: &mut Ctx, g: &Node) -> Vec<(ServiceKeyProto, Loc)> {
    let mut out = Vec::new();
    for e in g.children.iter().flatten() {
        if e.kw() == "fwmark" {
            if let Some(m) = ctx.num(e, 1, 1, u32::MAX as u64) {
                out.push((ServiceKeyProto::Fwmark(m as u32), e.loc.clone()));
            }
            continue;
        }
        // `IP PORT` or `IP-LAST PORT` (a range of the last IPv4 octet).
        let (first, last) = match e.kw().split_once('-') {
            Some((a, b)) => (a, Some(b)),
            None => (e.kw(), None),
        };
        let Some(addr) = parse_ip(first) else {
            ctx.err(&e.loc, format!("virtual_server_group {}: invalid address '{}'", g.arg(1).unwrap_or(""), e.kw()));
            continue;
        };
        let port = match e.arg(1) {
            None => 0,
            Some(_) => match ctx.num(e, 1, 0, 65535) {
                Some(p) => p as u16,
                None => continue,
            },
        };
        match (addr, last) {
            (a, None) => out.push((ServiceKeyProto::Addr(a, port), e.loc.clone())),
            (IpAddr::V4(a), Some(l)) => {
                let o = a.octets();
                match l.parse::<u8>() {
                    Ok(l) if l >= o[3] => {
                        for x in o[3]..=l {
                            out.push((
                                ServiceKeyProto::Addr(IpAddr::V4(Ipv4Addr::new(o[0], o[1], o[2], x)), port),
                                e.loc.clone(),
                            ));
                        }
                    }
                    _ => ctx.err(&e.loc, format!("invalid address range '{}'", e.kw())),
                }
            }
            (IpAddr::V6(_), Some(_)) => ctx.err(&e.loc, "IPv6 address ranges are not supported"),
        }
    }
    out
}

/// Imports the keepalived configuration at `path`.
pub fn import(path: &Path) -> Result<Import, ImportError> {
    let mut rd = Reader { lines: Vec::new(), errors: Vec::new(), warnings: Vec::new() };
    rd.read_file(path, None, 0);
    let mut ctx = Ctx { errors: rd.errors, warnings: rd.warnings };
    let nodes = tree(&rd.lines, &mut ctx.errors);

    // Groups first: a virtual_server may name a group defined after it.
    let mut groups: std::collections::HashMap<String, Vec<(ServiceKeyProto, Loc)>> = Default::default();
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
            "virtual_server" => virtual_server(&mut ctx, n, &groups, &mut rules),
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

fn virtual_server(
    ctx: &mut Ctx,
    n: &Node,
    groups: &std::collections::HashMap<String, Vec<(ServiceKeyProto, Loc)>>,
    rules: &mut RuleSet,
) {
    let target = match (n.arg(1), n.arg(2)) {
        (None, _) => {
            ctx.err(&n.loc, "virtual_server: missing address");
            return;
        }
        (Some("group"), Some(g)) => VsTarget::Group(g.to_string()),
        (Some("group"), None) => {
            ctx.err(&n.loc, "virtual_server group: missing group name");
            return;
        }
        (Some("fwmark"), _) => match ctx.num(n, 2, 1, u32::MAX as u64) {
            Some(m) => VsTarget::Keys(vec![(ServiceKeyProto::Fwmark(m as u32), n.loc.clone())]),
            None => return,
        },
        (Some(a), p) => {
            let Some(addr) = parse_ip(a) else {
                ctx.err(&n.loc, format!("virtual_server: invalid address '{a}'"));
                return;
            };
            let port = match p {
                None => 0,
                Some(_) => match ctx.num(n, 2, 0, 65535) {
                    Some(p) => p as u16,
                    None => return,
                },
            };
            VsTarget::Keys(vec![(ServiceKeyProto::Addr(addr, port), n.loc.clone())])
        }
    };
    if n.words.len() > 3 {
        ctx.warn(&n.loc, format!("virtual_server: extra values '{}' ignored", n.words[3..].join(" ")));
    }
    let Some(body) = &n.children else {
        ctx.err(&n.loc, "virtual_server: missing '{' block");
        return;
    };
    let vs_name = n.words[1..].join(" ");

    let mut sched: Option<String> = None;
    let mut fwd = Fwd { method: "NAT".into(), tun: TunnelType::Ipip, csum: TunnelCsum::NoCsum };
    let mut persistent: Option<u32> = None;
    let mut granularity: Option<(Netmask, Loc)> = None;
    let mut pe: Option<String> = None;
    let mut proto = Protocol::Tcp;
    let mut inet6 = false;
    let mut ops = false;
    let mut flags: Vec<(String, Loc)> = Vec::new();
    let mut alpha = false;
    let mut quorum: u64 = 1;
    let mut sorry: Option<(IpAddr, u16, Loc)> = None;
    let mut sorry_fwd: Option<Fwd> = None;
    let mut rss: Vec<Rs> = Vec::new();

    for k in body {
        match k.kw() {
            "lb_algo" | "lvs_sched" => {
                if let Some(s) = ctx.val(k, 1) {
                    if !KNOWN_SCHEDULERS.contains(&s) {
                        ctx.warn(&k.loc, format!("unknown scheduler '{s}'"));
                    }
                    sched = Some(s.to_string());
                }
            }
            "lb_kind" | "lvs_method" => {
                if let Some(f) = ctx.fwd(k) {
                    fwd = f;
                }
            }
            "persistence_timeout" => {
                persistent = Some(match k.arg(1) {
                    None => DEFAULT_PERSISTENT_TIMEOUT,
                    Some(_) => match ctx.num(k, 1, 1, MAX_TIMEOUT as u64) {
                        Some(t) => t as u32,
                        None => continue,
                    },
                })
            }
            "persistence_granularity" => {
                let Some(v) = ctx.val(k, 1) else { continue };
                if v.contains('.') {
                    match v.parse::<Ipv4Addr>() {
                        Ok(m) if u32::from(m).leading_ones() + u32::from(m).trailing_zeros() == 32 => {
                            granularity = Some((Netmask::V4(u32::from(m)), k.loc.clone()))
                        }
                        _ => ctx.err(&k.loc, format!("persistence_granularity: invalid netmask '{v}'")),
                    }
                } else {
                    match v.parse::<u8>() {
                        Ok(p) if (1..=128).contains(&p) => granularity = Some((Netmask::V6(p), k.loc.clone())),
                        _ => ctx.err(&k.loc, format!("persistence_granularity: invalid IPv6 prefix '{v}'")),
                    }
                }
            }
            "persistence_engine" => {
                if let Some(v) = ctx.val(k, 1) {
                    if !KNOWN_PES.contains(&v) {
                        ctx.warn(&k.loc, format!("unknown persistence engine '{v}'"));
                    }
                    pe = Some(v.to_string());
                }
            }
            "protocol" => {
                if let Some(v) = ctx.val(k, 1) {
                    proto = match v.to_ascii_uppercase().as_str() {
                        "TCP" => Protocol::Tcp,
                        "UDP" => Protocol::Udp,
                        "SCTP" => Protocol::Sctp,
                        _ => {
                            ctx.err(&k.loc, format!("protocol: unknown protocol '{v}'"));
                            continue;
                        }
                    }
                }
            }
            "ip_family" => match ctx.val(k, 1) {
                Some("inet") => inet6 = false,
                Some("inet6") => inet6 = true,
                Some(v) => ctx.err(&k.loc, format!("ip_family: unknown address family '{v}'")),
                None => {}
            },
            "ops" => ops = true,
            "flag-1" | "flag-2" | "flag-3" | "sh-port" | "sh-fallback" | "mh-port" | "mh-fallback" => {
                flags.push((k.kw().to_string(), k.loc.clone()))
            }
            "alpha" => alpha = true,
            "quorum" => {
                if let Some(q) = ctx.num(k, 1, 0, u32::MAX as u64) {
                    quorum = q.max(1);
                }
            }
            "sorry_server" => {
                let (Some(a), p) = (ctx.val(k, 1), k.arg(2)) else { continue };
                let Some(addr) = parse_ip(a) else {
                    ctx.err(&k.loc, format!("sorry_server: invalid address '{a}'"));
                    continue;
                };
                let port = match p {
                    None => 0,
                    Some(_) => match ctx.num(k, 2, 0, 65535) {
                        Some(p) => p as u16,
                        None => continue,
                    },
                };
                sorry = Some((addr, port, k.loc.clone()));
            }
            "sorry_server_lvs_method" => sorry_fwd = ctx.fwd(k),
            "real_server" => {
                if let Some(r) = real_server(ctx, k, &vs_name) {
                    rss.push(r);
                }
                continue;
            }
            c if CHECKERS.contains(&c) => {
                ctx.warn(&k.loc, format!("{c} outside a real_server ignored"));
                continue;
            }
            k2 if VS_INERT.contains(&k2) => {}
            other => {
                ctx.warn(&k.loc, format!("unknown keyword '{other}' in virtual_server {vs_name}"));
                continue;
            }
        }
        ctx.no_block(k);
    }

    let sched = sched.unwrap_or_else(|| {
        ctx.warn(&n.loc, format!("virtual_server {vs_name}: no lb_algo/lvs_sched, using {DEFAULT_SCHEDULER}"));
        DEFAULT_SCHEDULER.to_string()
    });
    let mut sf = 0u32;
    for (f, loc) in &flags {
        // Only known flag names were collected.
        let Some((bit, only)) = SchedFlags::by_name(f) else { continue };
        match only {
            Some(s) if s != sched => ctx.warn(loc, format!("{f} only applies to the {s} scheduler - ignored")),
            _ => sf |= bit,
        }
    }
    if granularity.is_some() && persistent.is_none() {
        persistent = Some(DEFAULT_PERSISTENT_TIMEOUT);
    }

    let keys = match target {
        VsTarget::Keys(k) => k,
        VsTarget::Group(g) => match groups.get(&g) {
            Some(e) => e.clone(),
            None => {
                ctx.err(&n.loc, format!("virtual_server group {g}: no such virtual_server_group"));
                return;
            }
        },
    };
    for (kp, kloc) in keys {
        let key = match kp {
            ServiceKeyProto::Addr(a, port) => ServiceKey::Addr { proto, addr: a, port },
            ServiceKeyProto::Fwmark(m) => {
                let v6 = inet6 || rss.iter().any(|r| r.addr.is_ipv6());
                ServiceKey::Fwmark { mark: m, af: if v6 { AddressFamily::Inet6 } else { AddressFamily::Inet } }
            }
        };
        let mut rule = ServiceRule::new(key);
        rule.scheduler = sched.clone();
        rule.flags = SchedFlags(sf);
        rule.persistent = persistent;
        rule.pe = pe.clone();
        rule.ops = ops;
        if let Some((m, gloc)) = &granularity {
            match (m, rule.netmask) {
                (Netmask::V4(_), Netmask::V4(_)) | (Netmask::V6(_), Netmask::V6(_)) => rule.netmask = *m,
                _ => ctx.err(gloc, "persistence_granularity: address family does not match the service"),
            }
        }
        let (vport, is_fwmark) = match key {
            ServiceKey::Addr { port, .. } => (port, false),
            ServiceKey::Fwmark { .. } => (0, true),
        };
        if !is_fwmark && vport == 0 && persistent.is_none() {
            ctx.err(&kloc, "Zero port specified for non-persistent service");
        }
        if ops && !is_fwmark && proto != Protocol::Udp {
            ctx.err(&kloc, "One-Packet Scheduling is only for UDP virtual services");
        }
        if rules.services.iter().any(|s| s.key == key) {
            ctx.err(&kloc, format!("virtual server {key} defined twice"));
            continue;
        }
        let mk_dest = |ctx: &mut Ctx, addr: IpAddr, port: Option<u16>, f: &Fwd, loc: &Loc| -> DestRule {
            let fwdm = match f.method.as_str() {
                "NAT" => FwdMethod::Masq,
                "DR" => FwdMethod::Route,
                _ => FwdMethod::Tunnel { tun: f.tun, csum: f.csum },
            };
            let mut port = port.unwrap_or(vport);
            if !is_fwmark && f.method != "NAT" && port != vport {
                ctx.warn(
                    loc,
                    format!(
                        "{} server {addr} port {port} becomes {vport}: {} forwarding keeps the service port",
                        f.method, f.method
                    ),
                );
                port = vport;
            }
            DestRule { addr, port, fwd: fwdm, weight: 1, u_threshold: 0, l_threshold: 0 }
        };
        let mut live_weight: u64 = 0;
        for r in &rss {
            let f = r.fwd.clone().unwrap_or_else(|| fwd.clone());
            let mut d = mk_dest(ctx, r.addr, r.port, &f, &r.loc);
            d.weight = r.weight;
            d.u_threshold = r.uth;
            d.l_threshold = r.lth;
            let down = r.alpha.unwrap_or(alpha) && !r.checkers.is_empty();
            for (cloc, what) in &r.checkers {
                let state = if down { "the server stays down (alpha)" } else { "the server is taken as up" };
                ctx.warn(cloc, format!("{what}: {state}"));
            }
            if down {
                if r.inhibit {
                    ctx.warn(&r.loc, format!("real server {} starts down (alpha) and no checker runs here: added with weight 0 (inhibit_on_failure)", r.addr));
                    d.weight = 0;
                } else {
                    ctx.warn(
                        &r.loc,
                        format!("real server {} starts down (alpha) and no checker runs here: not added", r.addr),
                    );
                    continue;
                }
            } else {
                live_weight += r.weight as u64;
            }
            if rule.dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
                ctx.err(&r.loc, format!("real server {} port {} defined twice", d.addr, d.port));
                continue;
            }
            rule.dests.push(d);
        }
        if let Some((a, p, sloc)) = &sorry {
            if live_weight < quorum {
                let f = sorry_fwd.clone().unwrap_or_else(|| fwd.clone());
                let d = mk_dest(ctx, *a, Some(*p), &f, sloc);
                if !rule.dests.iter().any(|x| x.addr == d.addr && x.port == d.port) {
                    rule.dests.push(d);
                }
            } else {
                ctx.warn(sloc, format!("sorry_server {a} {p} not added: it only serves while the real servers' live weight is below quorum ({quorum})"));
            }
        }
        rules.services.push(rule);
    }
}

fn real_server(ctx: &mut Ctx, k: &Node, vs_name: &str) -> Option<Rs> {
    let a = ctx.val(k, 1)?;
    let Some(addr) = parse_ip(a) else {
        ctx.err(&k.loc, format!("real_server: invalid address '{a}'"));
        return None;
    };
    let port = match k.arg(2) {
        None => None,
        Some(_) => Some(ctx.num(k, 2, 0, 65535)? as u16),
    };
    let mut r = Rs {
        addr,
        port,
        weight: 1,
        fwd: None,
        uth: 0,
        lth: 0,
        inhibit: false,
        alpha: None,
        checkers: Vec::new(),
        loc: k.loc.clone(),
    };
    let name = match port {
        Some(p) => format!("{a} {p}"),
        None => a.to_string(),
    };
    for x in k.children.iter().flatten() {
        match x.kw() {
            "weight" => {
                if let Some(w) = ctx.num(x, 1, 0, 65535) {
                    r.weight = w as u32;
                }
            }
            "lvs_method" => r.fwd = ctx.fwd(x),
            "uthreshold" => {
                if let Some(v) = ctx.num(x, 1, 0, i32::MAX as u64) {
                    r.uth = v as u32;
                }
            }
            "lthreshold" => {
                if let Some(v) = ctx.num(x, 1, 0, i32::MAX as u64) {
                    r.lth = v as u32;
                }
            }
            "inhibit_on_failure" => r.inhibit = ctx.bool_opt(x),
            "alpha" => r.alpha = Some(ctx.bool_opt(x)),
            c if CHECKERS.contains(&c) => {
                r.checkers
                    .push((x.loc.clone(), format!("{c} of real server {name} (virtual_server {vs_name}) is not run")));
                continue;
            }
            k2 if RS_INERT.contains(&k2) => {}
            other => {
                ctx.warn(&x.loc, format!("unknown keyword '{other}' in real_server {name}"));
                continue;
            }
        }
        ctx.no_block(x);
    }
    if r.lth > r.uth && r.uth != 0 {
        ctx.err(&k.loc, format!("real_server {name}: lthreshold {} is higher than uthreshold {}", r.lth, r.uth));
    }
    Some(r)
}

/// The `ipvsadm -R` script that loads `rules` in configuration order
/// (thresholds included, which `-S` does not show).
pub fn restore_script(rules: &RuleSet) -> String {
    let mut out = String::new();
    for s in &rules.services {
        let mut svc = s.clone();
        svc.dests.clear();
        out.push_str(&format_save(&RuleSet { services: vec![svc.clone()] }));
        for d in &s.dests {
            let mut one = svc.clone();
            one.dests = vec![d.clone()];
            let text = format_save(&RuleSet { services: vec![one] });
            let line = text.lines().nth(1).unwrap_or_default();
            out.push_str(line);
            if d.u_threshold != 0 {
                out.push_str(&format!(" -x {}", d.u_threshold));
            }
            if d.l_threshold != 0 {
                out.push_str(&format!(" -y {}", d.l_threshold));
            }
            out.push('\n');
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexing() {
        assert_eq!(decomment("a b # c"), "a b ");
        assert_eq!(decomment("a \"x # y\" ! c"), "a \"x # y\" ");
        assert_eq!(
            words("real_server 1.2.3.4 80{weight 3}").unwrap(),
            ["real_server", "1.2.3.4", "80", "{", "weight", "3", "}"]
        );
        assert_eq!(words("path \"/a b\"").unwrap(), ["path", "/a b"]);
        assert!(words("x \"open").is_err());
    }

    #[test]
    fn glob_matching() {
        let m = |p: &str, n: &str| fnmatch(&p.chars().collect::<Vec<_>>(), &n.chars().collect::<Vec<_>>());
        assert!(m("*.conf", "a.conf"));
        assert!(!m("*.conf", "a.conf.bak"));
        assert!(m("vs[0-9].conf", "vs3.conf"));
        assert!(!m("vs[!0-9].conf", "vs3.conf"));
        assert!(m("?s.conf", "vs.conf"));
        assert_eq!(expand_braces("a/{x,y}.conf"), ["a/x.conf", "a/y.conf"]);
    }
}
