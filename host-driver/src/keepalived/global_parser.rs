//! `global_defs` keywords lvsnic acts on, as keepalived 2.2.7 reads them
//! (keepalived/core/global_parser.c): `lvs_sync_daemon`, which makes
//! `--load` start the connection sync daemons, and `script_user USER
//! [GROUP]` and `enable_script_security`, who runs the checkers' scripts
//! and how their paths are checked (`crate::health::misc`; [`scripts`]).
//!
//! ```text
//! lvs_sync_daemon INTERFACE [[inst] VRRP_INSTANCE] [id SYNC_ID] [maxlen LEN]
//!                 [port PORT] [ttl TTL] [group IP_ADDR]
//! ```
//!
//! keepalived reports every problem of the line as a configuration error
//! and goes on (`report_config_error`), ignoring the bad value or the whole
//! line; lvsnic warns with the same words and does the same. Ranges as
//! `lvs_syncd_handler` reads them: `id` 0..=255, `maxlen` 1..=65507,
//! `port` 1..=65535, `ttl` 1..=255, `group` a multicast address; an
//! interface name of 16 characters or more ignores the line, as does a
//! second `lvs_sync_daemon`. A bare third word is the VRRP instance and a
//! bare fourth the sync id (the old syntax; keepalived asks for `id`).
//!
//! Which daemons, with which sync id (`vrrp_complete_init` in vrrp/vrrp.c,
//! `start_check` in check/check_daemon.c):
//!
//! * With a VRRP instance, the id defaults to the instance's
//!   `virtual_router_id`. keepalived's VRRP process then runs *one* role,
//!   following the instance: backup, and master while the instance is
//!   MASTER (`ipvs_syncd_master`/`ipvs_syncd_backup` in
//!   check/ipvswrapper.c stop one role and start the other). An instance
//!   that does not exist clears the line ("Unable to find vrrp instance
//!   ... for lvs_syncd"): no daemon.
//! * Without one, keepalived's checker process starts both roles at once
//!   (`IPVS_MASTER_BACKUP`) with id 0 unless `id` is given.
//!
//! lvsnic starts **both** roles in either case: keepalived runs only VRRP
//! beside it and lvsnic does not see the instance's state, and both
//! daemons on each director is lvsnic's HA setup (docs/ha.md): the master
//! sends only what this director forwards (its socket does not loop its
//! own messages back), the backup installs what the other one sends.

use super::parser::{Ctx, Loc, Node};
use crate::health::config::HealthConfig;
use std::net::IpAddr;

/// `IP_VS_IFNAME_MAXLEN`: interface names are shorter.
const IFNAME_MAXLEN: usize = 16;

/// An `lvs_sync_daemon` line as keepalived keeps it (`struct
/// lvs_syncd_config`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct LvsSyncd {
    /// The line.
    pub(super) loc: Loc,
    /// `--mcast-interface`.
    pub(super) ifname: String,
    /// The VRRP instance named.
    pub(super) vrrp_name: Option<String>,
    /// `id`, when given (valid).
    pub(super) syncid: Option<u8>,
    /// `maxlen`.
    pub(super) maxlen: Option<u16>,
    /// `port`.
    pub(super) port: Option<u16>,
    /// `ttl`.
    pub(super) ttl: Option<u8>,
    /// `group` (a multicast address).
    pub(super) group: Option<IpAddr>,
}

/// The sync daemons an import asks for: both roles with these settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyncDaemonsConfig {
    /// The `lvs_sync_daemon` line.
    pub loc: Loc,
    /// The interface.
    pub ifname: String,
    /// The sync id (given, the VRRP instance's `virtual_router_id`, or 0).
    pub syncid: u8,
    /// The VRRP instance the line named (keepalived would run one role
    /// following it).
    pub vrrp_instance: Option<String>,
    /// `maxlen`.
    pub maxlen: Option<u16>,
    /// `port`.
    pub port: Option<u16>,
    /// `ttl`.
    pub ttl: Option<u8>,
    /// `group`.
    pub group: Option<IpAddr>,
}

/// `read_unsigned_strvec` of word `i` within `min..=max`: None (and the
/// warning keepalived writes before its own) when not a number in range.
fn unsigned(ctx: &mut Ctx, n: &Node, i: usize, min: u64, max: u64) -> Option<u64> {
    let w = n.arg(i)?;
    match w.parse::<u64>() {
        Ok(v) if (min..=max).contains(&v) => Some(v),
        Ok(_) => {
            ctx.warn(&n.loc, format!("lvs_sync_daemon: number '{w}' outside range [{min}, {max}]"));
            None
        }
        Err(_) => {
            ctx.warn(&n.loc, format!("lvs_sync_daemon: invalid number '{w}'"));
            None
        }
    }
}

/// `lvs_syncd_handler`: one `lvs_sync_daemon` line into `slot`.
pub(super) fn lvs_sync_daemon(ctx: &mut Ctx, n: &Node, slot: &mut Option<LvsSyncd>) {
    ctx.no_block(n);
    if let Some(s) = slot {
        let inst = s.vrrp_name.as_deref().unwrap_or("");
        ctx.warn(&n.loc, format!("lvs_sync_daemon has already been specified as {} {inst} - ignoring", s.ifname));
        return;
    }
    let Some(ifname) = n.arg(1) else {
        ctx.warn(&n.loc, "lvs_sync_daemon requires interface");
        return;
    };
    if ifname.len() >= IFNAME_MAXLEN {
        ctx.warn(&n.loc, format!("lvs_sync_daemon interface name '{ifname}' too long - ignoring"));
        return;
    }
    let mut s = LvsSyncd {
        loc: n.loc.clone(),
        ifname: ifname.to_string(),
        vrrp_name: None,
        syncid: None,
        maxlen: None,
        port: None,
        ttl: None,
        group: None,
    };
    let size = n.words.len();
    let mut i = 2;
    while i < size {
        let w = n.words[i].as_str();
        let last = i == size - 1;
        let no_value = |ctx: &mut Ctx, what: &str| ctx.warn(&n.loc, format!("No value specified for lvs_sync_daemon {what}"));
        match w {
            "inst" => {
                match (&s.vrrp_name, n.arg(i + 1)) {
                    (Some(v), _) => ctx.warn(&n.loc, format!("lvs_sync_daemon vrrp instance has already been specified as {v} - ignoring")),
                    (None, Some(v)) => s.vrrp_name = Some(v.to_string()),
                    (None, None) => no_value(ctx, "inst"),
                }
                i += 2;
                continue;
            }
            "id" => {
                if last {
                    no_value(ctx, "id, defaulting to vrid");
                } else {
                    match unsigned(ctx, n, i + 1, 0, 255) {
                        Some(v) => s.syncid = Some(v as u8),
                        None => ctx.warn(&n.loc, format!("Invalid syncid ({}) - defaulting to vrid", n.words[i + 1])),
                    }
                }
                i += 2;
                continue;
            }
            "maxlen" | "port" | "ttl" => {
                if last {
                    no_value(ctx, &format!("{w} - ignoring"));
                } else {
                    let max = match w {
                        "maxlen" => 65535 - 20 - 8,
                        "port" => 65535,
                        _ => 255,
                    };
                    match unsigned(ctx, n, i + 1, 1, max) {
                        Some(v) if w == "maxlen" => s.maxlen = Some(v as u16),
                        Some(v) if w == "port" => s.port = Some(v as u16),
                        Some(v) => s.ttl = Some(v as u8),
                        None => ctx.warn(&n.loc, format!("Invalid lvs_sync_daemon {w} ({}) - ignoring", n.words[i + 1])),
                    }
                }
                i += 2;
                continue;
            }
            "group" => {
                if last {
                    no_value(ctx, "group - ignoring");
                } else {
                    let v = &n.words[i + 1];
                    match v.parse::<IpAddr>() {
                        Err(_) => ctx.warn(&n.loc, format!("Invalid lvs_sync_daemon group ({v}) - ignoring")),
                        Ok(a) if !a.is_multicast() => {
                            ctx.warn(&n.loc, format!("lvs_sync_daemon group address {v} is not multicast - ignoring"))
                        }
                        Ok(a) => s.group = Some(a),
                    }
                }
                i += 2;
                continue;
            }
            _ => {}
        }
        // The old syntax: lvs_sync_daemon IF VRRP_INSTANCE [SYNC_ID].
        if i == 2 {
            s.vrrp_name = Some(w.to_string());
        } else if i == 3 {
            match unsigned(ctx, n, 3, 0, 255) {
                Some(v) => {
                    ctx.warn(&n.loc, "Please use keyword \"id\" before lvs_sync_daemon SYNCID");
                    s.syncid = Some(v as u8);
                }
                None => ctx.warn(&n.loc, format!("Invalid syncid ({w}) - defaulting to vrid")),
            }
        } else {
            ctx.warn(&n.loc, format!("Unknown option {w} specified for lvs_sync_daemon"));
        }
        i += 1;
    }
    *slot = Some(s);
}

/// `vrrp_complete_init`'s part for the sync daemon: the VRRP instance the
/// line names and the sync id it defaults to. None: no daemon (the
/// instance does not exist, or has no valid `virtual_router_id`, which
/// keepalived refuses the instance for).
pub(super) fn resolve(ctx: &mut Ctx, s: LvsSyncd, top: &[Node]) -> Option<SyncDaemonsConfig> {
    let syncid = match &s.vrrp_name {
        None => s.syncid.unwrap_or(0),
        Some(name) => {
            let inst = top.iter().find(|t| t.kw() == "vrrp_instance" && t.arg(1) == Some(name.as_str()));
            let vrid = inst.and_then(|t| {
                let c = t.children.as_ref()?.iter().rev().find(|c| c.kw() == "virtual_router_id")?;
                c.arg(1)?.parse::<u8>().ok().filter(|v| *v >= 1)
            });
            match (inst, vrid) {
                (None, _) => {
                    ctx.warn(&s.loc, format!("Unable to find vrrp instance {name} for lvs_syncd - clearing lvs_syncd config (no sync daemon started)"));
                    return None;
                }
                (Some(_), None) => {
                    ctx.warn(&s.loc, format!("vrrp instance {name} has no valid virtual_router_id (1..255), keepalived does not run it - clearing lvs_syncd config (no sync daemon started)"));
                    return None;
                }
                (Some(_), Some(v)) => s.syncid.unwrap_or(v),
            }
        }
    };
    Some(SyncDaemonsConfig {
        loc: s.loc,
        ifname: s.ifname,
        syncid,
        vrrp_instance: s.vrrp_name,
        maxlen: s.maxlen,
        port: s.port,
        ttl: s.ttl,
        group: s.group,
    })
}

/// `script_user_handler` and `script_security_handler`: a `global_defs`
/// keyword about scripts into `health`; false when `n` is neither. A
/// second `script_user` replaces the first, as in keepalived.
pub(super) fn scripts(ctx: &mut Ctx, n: &Node, health: &mut HealthConfig) -> bool {
    match n.kw() {
        "script_user" => {
            ctx.no_block(n);
            match super::checkers::script_user(n) {
                Some(u) => health.script_user = Some(u),
                None => ctx.warn(&n.loc, "No script username specified"),
            }
            if n.words.len() > 3 {
                ctx.warn(&n.loc, format!("script_user: extra values '{}' ignored", n.words[3..].join(" ")));
            }
        }
        "enable_script_security" => {
            ctx.no_block(n);
            health.script_security = true;
        }
        _ => return false,
    }
    true
}

#[cfg(test)]
mod tests {
    use crate::health::config::{CheckKind, ScriptUser};

    fn import(text: &str) -> Result<super::super::Import, super::super::ImportError> {
        let dir = std::env::temp_dir().join(format!("lvsnic-ka-scripts-{}-{}", std::process::id(), text.len()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("keepalived.conf");
        std::fs::write(&f, text).unwrap();
        let r = super::super::import(&f);
        let _ = std::fs::remove_dir_all(&dir);
        r
    }

    const VS: &str = "virtual_server 10.0.0.1 80 {\n    protocol TCP\n    real_server 10.0.1.1 80 {\n        MISC_CHECK {\n            misc_path \"/bin/check a\"\n            USER\n        }\n    }\n}\n";

    #[test]
    fn script_user_security_and_misc_user() {
        let i = import(&format!("{}global_defs {{\n    script_user nobody nogroup\n    enable_script_security\n}}\n", VS.replace("USER", ""))).unwrap();
        assert_eq!(i.health.script_user, Some(ScriptUser { user: "nobody".into(), group: Some("nogroup".into()) }));
        assert!(i.health.script_security);
        let c = &i.health.services[0].reals[0].checkers[0];
        assert!(matches!(&c.kind, CheckKind::Misc { user: None, run_as: None, .. }), "{c:?}");
        // Neither: keepalived's defaults (the daemon decides who).
        let i = import(&VS.replace("USER", "user www-data")).unwrap();
        assert_eq!((i.health.script_user.as_ref(), i.health.script_security), (None, false));
        let c = &i.health.services[0].reals[0].checkers[0];
        let CheckKind::Misc { user, .. } = &c.kind else { panic!("{c:?}") };
        assert_eq!(user, &Some(ScriptUser { user: "www-data".into(), group: None }));
        // A `user` without a name is an error; `script_user` without one a warning.
        assert!(import(&VS.replace("USER", "user")).unwrap_err().errors.iter().any(|d| d.msg == "MISC_CHECK user: no user specified"));
        let i = import(&format!("{}global_defs {{\n    script_user\n}}\n", VS.replace("USER", ""))).unwrap();
        assert!(i.warnings.iter().any(|d| d.msg == "No script username specified"), "{:?}", i.warnings);
        // The scripts settings travel to the daemon; who runs them does not.
        let mut cfg = i.health.clone();
        cfg.script_user = Some(ScriptUser { user: "root".into(), group: None });
        cfg.notify_as = Some(crate::health::config::RunAs { uid: 0, gid: 0 });
        if let CheckKind::Misc { run_as, .. } = &mut cfg.services[0].reals[0].checkers[0].kind {
            *run_as = Some(crate::health::config::RunAs { uid: 0, gid: 0 });
        }
        let back: crate::health::config::HealthConfig = serde_json::from_str(&serde_json::to_string(&cfg).unwrap()).unwrap();
        assert_eq!(back.script_user, cfg.script_user);
        assert_eq!(back.notify_as, None);
        assert!(matches!(&back.services[0].reals[0].checkers[0].kind, CheckKind::Misc { run_as: None, .. }));
    }
}
