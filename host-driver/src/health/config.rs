//! What the daemon's health checkers run: keepalived's `virtual_server`
//! blocks reduced to what checking needs (read from keepalived.conf by
//! `crate::keepalived`, sent to the daemon on the control socket).
//!
//! Services and real servers are named by their ipvsadm arguments, so the
//! changes the checkers make go through the same control path as
//! `lvsnic -a/-e/-d` commands.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Every checked virtual service.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HealthConfig {
    /// One per IPVS service (a `virtual_server_group` gives several).
    pub services: Vec<VsHealth>,
    /// `global_defs` `script_user USER [GROUP]`: who runs the scripts
    /// (`MISC_CHECK` without a `user` of its own, notify scripts). None:
    /// `keepalived_script` if that user exists (keepalived's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script_user: Option<ScriptUser>,
    /// `global_defs` `enable_script_security`: a script that would run as
    /// root from a path a non-root user can change is not run.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub script_security: bool,
    /// Who runs the notify scripts: set by the daemon when it has checked
    /// them ([`crate::health::misc::vet`]), never taken from a request;
    /// None: they are not run.
    #[serde(skip)]
    pub notify_as: Option<RunAs>,
}

/// A user (and group) scripts run as, by name, as keepalived's
/// `script_user` and `MISC_CHECK`'s `user` name them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScriptUser {
    /// The user name.
    pub user: String,
    /// The group name (default: the user's primary group).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// The identity a checked script runs with (the daemon's resolution of a
/// [`ScriptUser`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunAs {
    /// User id.
    pub uid: u32,
    /// Group id (also its only supplementary group).
    pub gid: u32,
}

/// One IPVS service and its real servers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VsHealth {
    /// The service as ipvsadm names it, e.g. `["-t", "10.0.0.1:80"]`.
    pub service: Vec<String>,
    /// `quorum` (default 1): the live weight the pool needs.
    pub quorum: u64,
    /// `hysteresis` (default 0).
    pub hysteresis: u64,
    /// `sorry_server`: serves while the quorum is down.
    pub sorry: Option<DestHealth>,
    /// The real servers in configuration order.
    pub reals: Vec<RsHealth>,
    /// `quorum_up`: run when the quorum is gained.
    #[serde(default)]
    pub quorum_up: Option<Vec<String>>,
    /// `quorum_down`: run when the quorum is lost.
    #[serde(default)]
    pub quorum_down: Option<Vec<String>>,
}

/// A real server (or the sorry server) as ipvsadm adds it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DestHealth {
    /// `-r ADDR:PORT` and its forwarding method and thresholds, without `-w`.
    pub dest: Vec<String>,
    /// The configured weight.
    pub weight: u32,
    /// `inhibit_on_failure`: weight 0 instead of removal.
    pub inhibit: bool,
}

/// A real server and its checkers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RsHealth {
    /// How it is added.
    pub dest: DestHealth,
    /// `ADDR:PORT`, for listings.
    pub name: String,
    /// Its checkers (a server with none is always up).
    pub checkers: Vec<CheckerConfig>,
    /// `notify_up`: run when the server comes up.
    #[serde(default)]
    pub notify_up: Option<Vec<String>>,
    /// `notify_down`: run when it goes down.
    #[serde(default)]
    pub notify_down: Option<Vec<String>>,
}

/// One checker of a real server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckerConfig {
    /// What it does.
    pub kind: CheckKind,
    /// `delay_loop`: between checks (default 60 s).
    pub delay_loop: Duration,
    /// `retry` / `nb_get_retry`: failures tolerated before down.
    pub retry: u32,
    /// `delay_before_retry` (default 1 s).
    pub delay_before_retry: Duration,
    /// `alpha`: the checker starts down.
    pub alpha: bool,
    /// `warmup`: the first check waits a random time up to this.
    pub warmup: Duration,
    /// Where it was configured (`FILE:LINE`), for listings.
    pub origin: String,
}

/// The checks lvsnic runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum CheckKind {
    /// `TCP_CHECK`: a TCP connection opens.
    Tcp(Target),
    /// `HTTP_GET`: every `url` answers as configured.
    Http {
        /// Where to connect.
        target: Target,
        /// The URLs to fetch.
        urls: Vec<UrlCheck>,
        /// `virtualhost` (the `Host:` header; default the target address).
        virtualhost: Option<String>,
    },
    /// `SSL_GET`: `HTTP_GET` over TLS.
    Ssl {
        /// Where to connect.
        target: Target,
        /// The URLs to fetch.
        urls: Vec<UrlCheck>,
        /// `virtualhost` (the `Host:` header; default the target address).
        virtualhost: Option<String>,
        /// `enable_sni`: the `virtualhost` is sent as the TLS server name.
        enable_sni: bool,
        /// The top-level `SSL` block's `certificate` and `key`: the client
        /// certificate offered when the server asks for one.
        client_cert: Option<ClientCert>,
    },
    /// `MISC_CHECK`: a program's exit status.
    Misc {
        /// `misc_path`: the program and its arguments.
        argv: Vec<String>,
        /// `misc_timeout` (default `delay_loop`).
        timeout: Duration,
        /// `misc_dynamic`: exit status 2..=255 sets weight status-2.
        dynamic: bool,
        /// `user USER [GROUP]`: who runs it (default: the `script_user`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<ScriptUser>,
        /// Who runs it: set by the daemon when it has checked the script
        /// ([`crate::health::misc::vet`]), never taken from a request;
        /// None: it is not run.
        #[serde(skip)]
        run_as: Option<RunAs>,
    },
}

/// Where a network check connects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// `connect_ip:connect_port` (default the real server's).
    pub addr: std::net::SocketAddr,
    /// `connect_timeout` (default 5 s).
    pub timeout: Duration,
    /// `bindto` and `bind_port`: the source the connection is bound to
    /// (address unspecified when only `bind_port` is given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind: Option<std::net::SocketAddr>,
    /// `bind_if`: the interface the connection is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bind_if: Option<String>,
}

/// A client certificate chain and its key (PEM files, absolute paths),
/// read by the checker at every check.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientCert {
    /// `certificate`: the chain, leaf first.
    pub certificate: std::path::PathBuf,
    /// `key`: its private key (unencrypted PKCS#8, PKCS#1 or SEC1).
    pub key: std::path::PathBuf,
}

/// One `url { path; status_code; digest }`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UrlCheck {
    /// `path`.
    pub path: String,
    /// `status_code`s accepted (ranges allowed); empty = 200..=299.
    pub status: Vec<(u16, u16)>,
    /// `digest`: MD5 of the body, lower-case hex (keepalived's genhash).
    pub digest: Option<String>,
}

/// keepalived's defaults.
pub const DEFAULT_DELAY_LOOP: Duration = Duration::from_secs(60);
/// `connect_timeout` default.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// `delay_before_retry` default.
pub const DEFAULT_DELAY_BEFORE_RETRY: Duration = Duration::from_secs(1);
/// `retry` default of TCP_CHECK, HTTP_GET and SSL_GET (MISC_CHECK's is 0).
pub const DEFAULT_RETRY: u32 = 1;

impl CheckKind {
    /// The keepalived keyword.
    pub fn keyword(&self) -> &'static str {
        match self {
            CheckKind::Tcp(_) => "TCP_CHECK",
            CheckKind::Http { .. } => "HTTP_GET",
            CheckKind::Ssl { .. } => "SSL_GET",
            CheckKind::Misc { .. } => "MISC_CHECK",
        }
    }

    /// What it checks, for listings.
    pub fn what(&self) -> String {
        match self {
            CheckKind::Tcp(t) => t.addr.to_string(),
            CheckKind::Http { target, urls, .. } => {
                let paths: Vec<&str> = urls.iter().map(|u| u.path.as_str()).collect();
                format!("{} {}", target.addr, paths.join(","))
            }
            CheckKind::Ssl { target, urls, virtualhost, enable_sni, .. } => {
                let paths: Vec<&str> = urls.iter().map(|u| u.path.as_str()).collect();
                match virtualhost {
                    Some(h) if *enable_sni => format!("{} {} sni {h}", target.addr, paths.join(",")),
                    _ => format!("{} {}", target.addr, paths.join(",")),
                }
            }
            CheckKind::Misc { argv, .. } => argv.join(" "),
        }
    }
}
