//! The health checker blocks as keepalived's check/check_*.c read them:
//! `TCP_CHECK`, `HTTP_GET`, `SSL_GET` and `MISC_CHECK` (run by the daemon,
//! see `crate::health`), their timing keywords at checker, real server and
//! virtual server level, the top-level `SSL` block (check_parser.c's
//! `SSL`: `SSL_GET`'s client certificate), and named warnings for what
//! lvsnic does not run.

use super::parser::{Ctx, Loc, Node};
use crate::health::config::{ClientCert, ScriptUser, UrlCheck};
use std::net::IpAddr;
use std::time::Duration;

/// Checkers lvsnic runs.
pub(super) const RUN: &[&str] = &["TCP_CHECK", "HTTP_GET", "SSL_GET", "MISC_CHECK"];

/// Timing keywords; unset ones inherit from the enclosing block.
#[derive(Clone, Debug, Default)]
pub(super) struct Timing {
    pub(super) delay_loop: Option<Duration>,
    pub(super) retry: Option<u32>,
    pub(super) delay_before_retry: Option<Duration>,
    pub(super) connect_timeout: Option<Duration>,
    pub(super) warmup: Option<Duration>,
    pub(super) alpha: Option<bool>,
}

impl Timing {
    /// `self`, with `outer`'s values where `self` has none.
    pub(super) fn or(&self, outer: &Timing) -> Timing {
        Timing {
            delay_loop: self.delay_loop.or(outer.delay_loop),
            retry: self.retry.or(outer.retry),
            delay_before_retry: self.delay_before_retry.or(outer.delay_before_retry),
            connect_timeout: self.connect_timeout.or(outer.connect_timeout),
            warmup: self.warmup.or(outer.warmup),
            alpha: self.alpha.or(outer.alpha),
        }
    }
}

/// A timing keyword into `t`; false when `k` is not one.
pub(super) fn timing_keyword(ctx: &mut Ctx, k: &Node, t: &mut Timing) -> bool {
    match k.kw() {
        "delay_loop" => t.delay_loop = secs(ctx, k).or(t.delay_loop),
        "delay_before_retry" => t.delay_before_retry = secs(ctx, k).or(t.delay_before_retry),
        "connect_timeout" => t.connect_timeout = secs(ctx, k).or(t.connect_timeout),
        "warmup" => t.warmup = secs(ctx, k).or(t.warmup),
        "retry" | "nb_get_retry" => {
            if let Some(v) = ctx.num(k, 1, 0, u32::MAX as u64) {
                t.retry = Some(v as u32);
            }
        }
        "alpha" => t.alpha = Some(ctx.bool_opt(k)),
        _ => return false,
    }
    true
}

/// A time in seconds, decimals allowed (keepalived's `read_timer`).
fn secs(ctx: &mut Ctx, k: &Node) -> Option<Duration> {
    let v = ctx.val(k, 1)?;
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && (0.0..=86_400.0 * 365.0).contains(&x) => Some(Duration::from_secs_f64(x)),
        _ => {
            ctx.err(&k.loc, format!("{}: invalid time '{v}' (expected seconds, e.g. 1 or 0.5)", k.kw()));
            None
        }
    }
}

/// What a checker block says; the defaults are resolved by `ipvswrapper`.
#[derive(Clone, Debug)]
pub(super) struct ParsedChecker {
    /// `TCP_CHECK`, `HTTP_GET`, `SSL_GET` or `MISC_CHECK`.
    pub(super) kw: String,
    pub(super) connect_ip: Option<IpAddr>,
    pub(super) connect_port: Option<u16>,
    /// `bindto`, `bind_port`, `bind_if` (check_api.c's conn_opts).
    pub(super) bindto: Option<IpAddr>,
    pub(super) bind_port: Option<u16>,
    pub(super) bind_if: Option<String>,
    pub(super) urls: Vec<UrlCheck>,
    pub(super) virtualhost: Option<String>,
    /// `enable_sni` (`SSL_GET`).
    pub(super) enable_sni: bool,
    pub(super) misc_argv: Vec<String>,
    pub(super) misc_timeout: Option<Duration>,
    pub(super) misc_dynamic: bool,
    /// `MISC_CHECK`'s `user USER [GROUP]`.
    pub(super) misc_user: Option<ScriptUser>,
    pub(super) timing: Timing,
    pub(super) loc: Loc,
}

/// Keywords keepalived accepts in checker blocks that change nothing here.
const INERT: &[&str] = &["log_all_failures", "http_protocol", "enable_sni", "fast_recovery"];

/// A checker block (`k.kw()` is in [`RUN`]).
pub(super) fn checker(ctx: &mut Ctx, k: &Node) -> ParsedChecker {
    let mut c = ParsedChecker {
        kw: k.kw().to_string(),
        connect_ip: None,
        connect_port: None,
        bindto: None,
        bind_port: None,
        bind_if: None,
        urls: Vec::new(),
        virtualhost: None,
        enable_sni: false,
        misc_argv: Vec::new(),
        misc_timeout: None,
        misc_dynamic: false,
        misc_user: None,
        timing: Timing::default(),
        loc: k.loc.clone(),
    };
    let http = c.kw == "HTTP_GET" || c.kw == "SSL_GET";
    let ssl = c.kw == "SSL_GET";
    let misc = c.kw == "MISC_CHECK";
    for x in k.children.iter().flatten() {
        if timing_keyword(ctx, x, &mut c.timing) {
            ctx.no_block(x);
            continue;
        }
        match x.kw() {
            // co_ip_handler / co_srcip_handler: an address of the other
            // family than the one given before is skipped, with an error
            // keepalived reports and runs on without (a warning here).
            "connect_ip" if !misc => match ctx.val(x, 1).map(|v| (v, v.parse::<IpAddr>())) {
                Some((v, Ok(a))) if c.bindto.is_some_and(|b| b.is_ipv4() != a.is_ipv4()) => {
                    ctx.warn(&x.loc, format!("connect_ip address {v} does not match address family of bindto - skipping"))
                }
                Some((_, Ok(a))) => c.connect_ip = Some(a),
                Some((v, Err(_))) => ctx.err(&x.loc, format!("connect_ip: invalid address '{v}'")),
                None => {}
            },
            "bindto" if !misc => match ctx.val(x, 1).map(|v| (v, v.parse::<IpAddr>())) {
                Some((v, Ok(a))) if c.connect_ip.is_some_and(|d| d.is_ipv4() != a.is_ipv4()) => {
                    ctx.warn(&x.loc, format!("bindto address {v} does not match address family of connect_ip - skipping"))
                }
                Some((_, Ok(a))) => c.bindto = Some(a),
                Some((v, Err(_))) => ctx.err(&x.loc, format!("bindto: invalid address '{v}'")),
                None => {}
            },
            "bind_port" if !misc => {
                if let Some(p) = ctx.num(x, 1, 1, 65535) {
                    c.bind_port = Some(p as u16);
                }
            }
            "bind_if" if !misc => match ctx.val(x, 1) {
                // IFNAMSIZ - 1.
                Some(v) if v.len() > 15 => ctx.err(&x.loc, format!("bind_if: interface name {v} is too long")),
                Some(v) => c.bind_if = Some(v.to_string()),
                None => {}
            },
            "connect_port" if !misc => {
                if let Some(p) = ctx.num(x, 1, 1, 65535) {
                    c.connect_port = Some(p as u16);
                }
            }
            "url" if http => {
                if let Some(u) = url(ctx, x) {
                    c.urls.push(u);
                }
                continue;
            }
            "virtualhost" if http => c.virtualhost = ctx.val(x, 1).map(str::to_string),
            "enable_sni" if ssl => c.enable_sni = ctx.bool_opt(x),
            "misc_path" if misc => {
                c.misc_argv = x.words[1..].iter().flat_map(|w| w.split_whitespace()).map(str::to_string).collect();
                if c.misc_argv.is_empty() {
                    ctx.err(&x.loc, "misc_path: missing value");
                }
            }
            "misc_timeout" if misc => c.misc_timeout = secs(ctx, x),
            "misc_dynamic" if misc => c.misc_dynamic = ctx.bool_opt(x),
            // check_misc.c's misc_user_handler: the script's own user.
            "user" if misc => match script_user(x) {
                Some(u) => c.misc_user = Some(u),
                None => ctx.err(&x.loc, "MISC_CHECK user: no user specified"),
            },
            i if INERT.contains(&i) => {}
            other => ctx.warn(&x.loc, format!("{other} in {} is not supported by lvsnic: ignored", c.kw)),
        }
        ctx.no_block(x);
    }
    if http && c.urls.is_empty() {
        ctx.err(&k.loc, format!("{}: no url block", c.kw));
    }
    if misc && c.misc_argv.is_empty() {
        ctx.err(&k.loc, "MISC_CHECK: no misc_path");
    }
    c
}

/// `USER [GROUP]` after a keyword (`script_user`, `MISC_CHECK`'s `user`);
/// None when no user is named. The names are resolved by the daemon, which
/// runs the scripts (`crate::health::misc`).
pub(super) fn script_user(k: &Node) -> Option<ScriptUser> {
    Some(ScriptUser { user: k.arg(1)?.to_string(), group: k.arg(2).map(str::to_string) })
}

/// `url { path P; status_code N|N-M ...; digest HEX }`.
fn url(ctx: &mut Ctx, k: &Node) -> Option<UrlCheck> {
    let mut u = UrlCheck { path: String::new(), status: Vec::new(), digest: None };
    for x in k.children.iter().flatten() {
        match x.kw() {
            "path" => u.path = ctx.val(x, 1)?.to_string(),
            "digest" => {
                let d = ctx.val(x, 1)?;
                if d.len() != 32 || !d.chars().all(|c| c.is_ascii_hexdigit()) {
                    ctx.err(&x.loc, format!("digest: '{d}' is not an MD5 (32 hex digits)"));
                    return None;
                }
                u.digest = Some(d.to_ascii_lowercase());
            }
            "status_code" => {
                if x.words.len() < 2 {
                    ctx.err(&x.loc, "status_code: missing value");
                }
                for w in &x.words[1..] {
                    let r = match w.split_once('-') {
                        Some((a, b)) => a.parse::<u16>().ok().zip(b.parse::<u16>().ok()),
                        None => w.parse::<u16>().ok().map(|a| (a, a)),
                    };
                    match r {
                        Some((a, b)) if (100..=599).contains(&a) && (a..=599).contains(&b) => u.status.push((a, b)),
                        _ => ctx.err(&x.loc, format!("status_code: invalid value '{w}' (expected 100..599 or a range)")),
                    }
                }
            }
            other => ctx.warn(&x.loc, format!("{other} in url is not supported by lvsnic: ignored")),
        }
    }
    if u.path.is_empty() {
        ctx.err(&k.loc, "url: no path");
        return None;
    }
    Some(u)
}

/// The top-level `SSL { password; ca; certificate; key }` block (the
/// last one wins, as in keepalived).
#[derive(Clone, Debug, Default)]
pub(super) struct SslBlock {
    pub(super) password: Option<Loc>,
    pub(super) ca: Option<Loc>,
    pub(super) certificate: Option<(String, Loc)>,
    pub(super) key: Option<(String, Loc)>,
}

/// Reads an `SSL` block.
pub(super) fn ssl_block(ctx: &mut Ctx, n: &Node) -> SslBlock {
    let mut b = SslBlock::default();
    for x in n.children.iter().flatten() {
        let file = |ctx: &mut Ctx| ctx.val(x, 1).map(|v| (v.to_string(), x.loc.clone()));
        match x.kw() {
            "password" => b.password = file(ctx).map(|(_, l)| l),
            "ca" => b.ca = file(ctx).map(|(_, l)| l),
            "certificate" => b.certificate = file(ctx),
            "key" => b.key = file(ctx),
            other => {
                ctx.warn(&x.loc, format!("unknown keyword '{other}' in SSL"));
                continue;
            }
        }
        ctx.no_block(x);
    }
    b
}

/// What the `SSL` block means for `SSL_GET` (`ssl_get` says whether any
/// is configured): the client certificate, read now (keepalived reads it
/// at start and does not start when it cannot); warnings for what lvsnic
/// does not do.
pub(super) fn client_cert(ctx: &mut Ctx, b: &SslBlock, ssl_get: bool) -> Option<ClientCert> {
    if let Some(l) = &b.ca {
        ctx.warn(
            l,
            "SSL ca: not used: keepalived 2.2.7 loads it but never verifies the server certificate (SSL_VERIFY_NONE), and neither does lvsnic",
        );
    }
    if let Some(l) = &b.password {
        ctx.warn(l, "SSL password is not supported by lvsnic (encrypted keys are not read): ignored");
    }
    let (cert, key) = match (&b.certificate, &b.key) {
        (None, None) => return None,
        (Some(c), Some(k)) => (c, k),
        (Some((_, l)), None) | (None, Some((_, l))) => {
            ctx.warn(l, "SSL: certificate and key go together: the client certificate is not used");
            return None;
        }
    };
    if !ssl_get {
        return None;
    }
    let abs = |ctx: &mut Ctx, (p, l): &(String, Loc)| match std::fs::canonicalize(p) {
        Ok(a) => Some(a),
        Err(e) => {
            ctx.err(l, format!("SSL: can't read {p}: {e}"));
            None
        }
    };
    let c = ClientCert { certificate: abs(ctx, cert)?, key: abs(ctx, key)? };
    if let Err(e) = crate::health::ssl::client_config(Some(&c)) {
        ctx.err(&cert.1, e);
        return None;
    }
    Some(c)
}
