//! `MISC_CHECK` (keepalived's check/check_misc.c): `misc_path` is run (its
//! words: the program and its arguments, no shell); exit status 0 is up,
//! anything else down, and a program still running after `misc_timeout` is
//! killed (with its process group) and counts as down. With
//! `misc_dynamic`, status 1 is down and 2..=255 is up with weight status-2
//! (0 restores the configured weight).
//!
//! Scripts run as keepalived 2.2.7 runs them (lib/notify.c), checked once
//! when the checkers start ([`vet`]); a script that is not checked is not
//! run:
//!
//! * **Who**: a `MISC_CHECK`'s own `user USER [GROUP]`, else `global_defs`'
//!   `script_user USER [GROUP]`, else the user `keepalived_script` if it
//!   exists (the group: the user's primary group unless named). Notify
//!   scripts (`notify_up/down`, `quorum_up/down`) run as the last two say.
//!   The child drops to that user before exec (setgid, supplementary groups
//!   cleared, setuid: std's `CommandExt::uid/gid`) in a process group of
//!   its own. A user or group that does not exist disables the scripts
//!   that would run as it, as in keepalived.
//! * **Never root unless configured** (where lvsnic is stricter than
//!   keepalived): with no `script_user` and no `keepalived_script` user,
//!   keepalived runs scripts as root (logging "SECURITY VIOLATION") unless
//!   `enable_script_security` is set, when it refuses them; lvsnic always
//!   refuses them. `script_user root` runs them as root. A daemon that is
//!   not root runs scripts as itself and cannot run them as anyone else.
//! * **Where** (`check_script_secure`): a program without a `/` is looked
//!   for in `PATH` (a warning names what was found); the path is resolved
//!   (symbolic links, `..`) and the resolved path is run; it must be a
//!   file the user may execute (keepalived's `is_executable`) under
//!   directories the user may search. When it would run as root (uid or
//!   gid 0, or a set-uid/set-gid-root file), every component of the path
//!   from `/` must be owned by root and not writable by a non-root group or
//!   by others (a directory with the sticky bit, such as /tmp, may be
//!   world-writable); otherwise, with `enable_script_security` it is not
//!   run, without it a warning says so and it runs (keepalived's
//!   "Unsafe permissions found for script").

use super::config::{CheckKind, HealthConfig, RunAs, ScriptUser};
use super::Outcome;
use crate::sys;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// keepalived's default script user.
pub const DEFAULT_SCRIPT_USER: &str = "keepalived_script";

/// `_CS_PATH`: where a program is looked for when `PATH` is not set.
const CS_PATH: &str = "/bin:/usr/bin";

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_ISVTX: u32 = 0o1000;
const S_IXUSR: u32 = 0o100;
const S_IXGRP: u32 = 0o010;
const S_IXOTH: u32 = 0o001;
const S_IWGRP: u32 = 0o020;
const S_IWOTH: u32 = 0o002;

/// What the path checks need of a file (from lstat(2)).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMeta {
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Permission bits, set-id and sticky bits.
    pub mode: u32,
    /// A directory.
    pub dir: bool,
    /// A regular file.
    pub file: bool,
    /// A symbolic link.
    pub link: bool,
}

impl FileMeta {
    fn lstat(p: &Path) -> std::io::Result<FileMeta> {
        let m = std::fs::symlink_metadata(p)?;
        let t = m.file_type();
        Ok(FileMeta { uid: m.uid(), gid: m.gid(), mode: m.permissions().mode() & 0o7777, dir: t.is_dir(), file: t.is_file(), link: t.is_symlink() })
    }
}

/// keepalived's `is_executable`: whether `who` may execute a file (root:
/// any execute bit; the owner: the owner's; the file's group: the group's;
/// others: the others').
pub fn is_executable(m: &FileMeta, who: RunAs) -> bool {
    (who.uid == 0 && m.mode & (S_IXUSR | S_IXGRP | S_IXOTH) != 0)
        || (who.uid == m.uid && m.mode & S_IXUSR != 0)
        || (who.uid != m.uid && ((who.gid == m.gid && m.mode & S_IXGRP != 0) || (who.gid != m.gid && m.mode & S_IXOTH != 0)))
}

/// Whether a script run by `who` needs its path protected: it runs as
/// root (uid or gid 0) or is set-uid/set-gid root.
pub fn needs_protection(m: &FileMeta, who: RunAs) -> bool {
    who.uid == 0
        || who.gid == 0
        || (m.uid == 0 && m.mode & S_IXUSR != 0 && m.mode & S_ISUID != 0)
        || (m.gid == 0 && m.mode & S_IXGRP != 0 && m.mode & S_ISGID != 0)
}

/// The paths `/`, `/a`, `/a/b`, ... of an absolute path.
fn prefixes(path: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = PathBuf::new();
    for c in path.components() {
        cur.push(c);
        out.push(cur.clone());
    }
    out
}

/// keepalived's `check_security`: the first component of `path` (from `/`)
/// that a non-root user could change (owner not root; group-writable with
/// a non-root group, or world-writable, unless a directory with the sticky
/// bit), as an error; also a component of the wrong type (not a directory
/// before the last, not a file or link at the end) or one `lstat` fails on.
pub fn check_security(path: &Path, lstat: impl Fn(&Path) -> std::io::Result<FileMeta>) -> Result<(), String> {
    let all = prefixes(path);
    for (i, p) in all.iter().enumerate() {
        let last = i + 1 == all.len();
        let m = lstat(p).map_err(|e| format!("{}: {e}", p.display()))?;
        if (!last && !m.dir) || (last && !m.file && !m.link) {
            return Err(format!("wrong file type in the script's path: {}", p.display()));
        }
        let writable = (m.gid != 0 && m.mode & S_IWGRP != 0) || m.mode & S_IWOTH != 0;
        if m.uid != 0 || (((m.dir && m.mode & S_ISVTX == 0) || m.file) && writable) {
            let why = if m.uid != 0 {
                format!("owned by uid {}", m.uid)
            } else {
                format!("writable by {} (mode {:04o})", if m.mode & S_IWOTH != 0 { "others" } else { "group" }, m.mode)
            };
            return Err(format!("unsafe permissions: {} is {why}", p.display()));
        }
    }
    Ok(())
}

/// Whether `who` may search directory `m`.
fn searchable(m: &FileMeta, who: RunAs) -> bool {
    who.uid == 0
        || (who.uid == m.uid && m.mode & S_IXUSR != 0)
        || (who.uid != m.uid && ((who.gid == m.gid && m.mode & S_IXGRP != 0) || (who.gid != m.gid && m.mode & S_IXOTH != 0)))
}

/// `find_path`: a program without a `/`, looked for in `path_var` as
/// execve(3) would, as `who` may execute it.
fn find_in_path(prog: &str, path_var: &str, who: RunAs) -> Result<PathBuf, String> {
    let mut denied = false;
    for dir in path_var.split(':') {
        let cand = Path::new(if dir.is_empty() { "." } else { dir }).join(prog);
        let Ok(m) = std::fs::metadata(&cand) else { continue };
        let fm = FileMeta { uid: m.uid(), gid: m.gid(), mode: m.permissions().mode() & 0o7777, dir: m.is_dir(), file: m.is_file(), link: false };
        if fm.file && is_executable(&fm, who) {
            return Ok(cand);
        }
        denied = true;
    }
    Err(if denied { format!("permission denied finding {prog} in PATH") } else { format!("cannot find {prog} in PATH") })
}

/// `check_script_secure` for the program of `argv` run as `who`: the path
/// to run, and a warning (path search, unsafe permissions tolerated
/// without `security`); an error when it must not run.
pub fn check_script(argv: &[String], who: RunAs, security: bool) -> Result<(PathBuf, Option<String>), String> {
    let Some(prog) = argv.first().filter(|p| !p.is_empty()) else {
        return Err("misc_path is empty".into());
    };
    let mut warning = None;
    let given = if prog.contains('/') {
        PathBuf::from(prog)
    } else {
        let path_var = std::env::var("PATH").unwrap_or_else(|_| CS_PATH.into());
        let found = find_in_path(prog, &path_var, who)?;
        warning = Some(format!("script `{prog}` resolved by path search to `{}`: please give the full path", found.display()));
        found
    };
    let real = std::fs::canonicalize(&given).map_err(|e| format!("{prog}: {e}"))?;
    let m = FileMeta::lstat(&real).map_err(|e| format!("{}: {e}", real.display()))?;
    if let Some(dir) = prefixes(&real).iter().rev().skip(1).find(|d| FileMeta::lstat(d).map_or(true, |dm| !searchable(&dm, who))) {
        return Err(format!("{}: not reachable for uid:gid {}:{} ({} cannot be searched)", real.display(), who.uid, who.gid, dir.display()));
    }
    if !m.file || !is_executable(&m, who) {
        return Err(format!("{} is not executable for uid:gid {}:{}", real.display(), who.uid, who.gid));
    }
    if needs_protection(&m, who) {
        if let Err(e) = check_security(&real, FileMeta::lstat) {
            if security {
                return Err(format!("{e} (enable_script_security: scripts run as root must be under root-only directories)"));
            }
            warning = Some(format!(
                "{e}: the script runs as uid {} anyway (enable_script_security would refuse it)",
                who.uid
            ));
        }
    }
    Ok((real, warning))
}

/// Resolves a named user (and group).
pub fn resolve_user(u: &ScriptUser) -> Result<RunAs, String> {
    let e = match sys::user_by_name(&u.user) {
        Ok(Some(e)) => e,
        Ok(None) => return Err(format!("script user '{}' does not exist", u.user)),
        Err(e) => return Err(format!("script user '{}': {e}", u.user)),
    };
    let gid = match &u.group {
        None => e.gid,
        Some(g) => match sys::group_by_name(g) {
            Ok(Some(gid)) => gid,
            Ok(None) => return Err(format!("script group '{g}' does not exist")),
            Err(err) => return Err(format!("script group '{g}': {err}")),
        },
    };
    Ok(RunAs { uid: e.uid, gid })
}

/// Whether a daemon running as `our` can run a script as `who`.
fn can_become(who: RunAs, our: RunAs) -> Result<RunAs, String> {
    if our.uid == 0 || who == our {
        Ok(who)
    } else {
        Err(format!("the daemon runs as uid {} and cannot run scripts as uid:gid {}:{}", our.uid, who.uid, who.gid))
    }
}

/// Who runs the scripts that name no user of their own: `script_user`,
/// else `keepalived_script` (as `keepalived_script` is looked up by
/// `lookup`), else the daemon itself when it is not root; never root
/// unless `script_user` says so.
pub fn default_run_as(
    script_user: Option<&ScriptUser>,
    our: RunAs,
    lookup: impl Fn(&ScriptUser) -> Result<RunAs, String>,
) -> Result<RunAs, String> {
    if let Some(u) = script_user {
        return lookup(u).and_then(|w| can_become(w, our));
    }
    match lookup(&ScriptUser { user: DEFAULT_SCRIPT_USER.into(), group: None }) {
        Ok(w) => can_become(w, our),
        Err(_) if our.uid != 0 => Ok(our),
        Err(_) => Err(format!(
            "no script user: the user {DEFAULT_SCRIPT_USER} does not exist and global_defs has no script_user \
             (lvsnic runs no script as root unless `script_user root` says so)"
        )),
    }
}

/// Checks every script of `cfg` before any runs: decides who runs each
/// and from which path (rewriting the program to the resolved path),
/// removes the `MISC_CHECK`s and notify scripts that must not run (as
/// keepalived frees them); returns one line per script refused or warned
/// about.
pub fn vet(cfg: &mut HealthConfig) -> Vec<String> {
    let our = RunAs { uid: sys::euid(), gid: sys::egid() };
    let security = cfg.script_security;
    let default = default_run_as(cfg.script_user.as_ref(), our, resolve_user);
    let mut notes = Vec::new();
    let mut check = |argv: &mut Vec<String>, who: Result<RunAs, String>, what: &str| -> Option<RunAs> {
        let shown = argv.join(" ");
        match who.and_then(|w| check_script(argv, w, security).map(|r| (w, r))) {
            Ok((w, (path, warning))) => {
                if let Some(x) = warning {
                    notes.push(format!("{what} {shown}: warning: {x}"));
                }
                argv[0] = path.display().to_string();
                Some(w)
            }
            Err(e) => {
                notes.push(format!("{what} {shown}: {e}: not run"));
                None
            }
        }
    };
    for vs in &mut cfg.services {
        for rs in &mut vs.reals {
            rs.checkers.retain_mut(|c| {
                let origin = c.origin.clone();
                let CheckKind::Misc { argv, user, run_as, .. } = &mut c.kind else { return true };
                let who = match user {
                    Some(u) => resolve_user(u).and_then(|w| can_become(w, our)),
                    None => default.clone(),
                };
                *run_as = check(argv, who, &format!("MISC_CHECK ({origin})"));
                run_as.is_some()
            });
            for (s, what) in [(&mut rs.notify_up, "notify_up"), (&mut rs.notify_down, "notify_down")] {
                if let Some(argv) = s {
                    if check(argv, default.clone(), what).is_none() {
                        *s = None;
                    }
                }
            }
        }
        for (s, what) in [(&mut vs.quorum_up, "quorum_up"), (&mut vs.quorum_down, "quorum_down")] {
            if let Some(argv) = s {
                if check(argv, default.clone(), what).is_none() {
                    *s = None;
                }
            }
        }
    }
    cfg.notify_as = default.ok();
    for n in &notes {
        eprintln!("lvsnic daemon: {n}");
    }
    notes
}

/// The command for a checked script: its own process group, no input or
/// output, run as `who` (the identity changes in the child before exec).
fn command(argv: &[String], who: RunAs) -> Option<Command> {
    let (prog, args) = argv.split_first()?;
    let mut c = Command::new(prog);
    c.args(args).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0);
    if who.gid != sys::egid() {
        c.gid(who.gid);
    }
    if who.uid != sys::euid() {
        // std clears the supplementary groups (setgroups) before setuid.
        c.uid(who.uid);
    }
    Some(c)
}

/// One `MISC_CHECK` of a server whose configured weight is `weight`, run
/// as `run_as` ([`vet`]; None: not run).
pub fn check(argv: &[String], timeout: Duration, dynamic: bool, weight: u32, run_as: Option<RunAs>) -> Outcome {
    let Some(prog) = argv.first() else {
        return Outcome::down("misc_path is empty".into());
    };
    let Some(who) = run_as else {
        return Outcome::down(format!("{prog}: not run (its user and path were not checked)"));
    };
    let Some(mut cmd) = command(argv, who) else {
        return Outcome::down("misc_path is empty".into());
    };
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return Outcome::down(format!("running {prog}: {e}")),
    };
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if t0.elapsed() >= timeout => {
                if sys::kill_process_group(child.id()).is_err() {
                    let _ = child.kill();
                }
                let _ = child.wait();
                return Outcome::down(format!("{prog} timed out after {:?}", timeout));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => return Outcome::down(format!("waiting for {prog}: {e}")),
        }
    };
    match status.code() {
        Some(0) => {
            let mut o = Outcome::up(format!("{prog} exited 0"));
            if dynamic {
                o.weight = Some(weight);
            }
            o
        }
        Some(c) if dynamic && c >= 2 => {
            let mut o = Outcome::up(format!("{prog} exited {c}: weight {}", c - 2));
            o.weight = Some(c as u32 - 2);
            o
        }
        Some(c) => Outcome::down(format!("{prog} exited {c}")),
        None => Outcome::down(format!("{prog} killed by a signal")),
    }
}

/// Starts a notify script as `run_as` ([`vet`]; None: not run) without
/// waiting for it (a thread reaps it); returns how many were started.
pub fn notify(script: &Option<Vec<String>>, run_as: Option<RunAs>) -> u64 {
    let (Some(argv), Some(who)) = (script.as_ref(), run_as) else { return 0 };
    let Some(mut cmd) = command(argv, who) else { return 0 };
    match cmd.spawn() {
        Ok(mut c) => {
            std::thread::spawn(move || c.wait());
            1
        }
        Err(e) => {
            eprintln!("lvsnic daemon: notify script {}: {e}", argv[0]);
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(uid: u32, gid: u32, mode: u32, kind: char) -> FileMeta {
        FileMeta { uid, gid, mode, dir: kind == 'd', file: kind == 'f', link: kind == 'l' }
    }
    const ROOT: RunAs = RunAs { uid: 0, gid: 0 };
    const NOBODY: RunAs = RunAs { uid: 65534, gid: 65534 };

    #[test]
    fn executable_as_keepalived_decides() {
        assert!(is_executable(&meta(5, 5, 0o010, 'f'), ROOT), "root: any x bit");
        assert!(!is_executable(&meta(5, 5, 0o644, 'f'), ROOT));
        assert!(is_executable(&meta(65534, 1, 0o700, 'f'), NOBODY));
        assert!(!is_executable(&meta(65534, 65534, 0o077, 'f'), NOBODY), "the owner's bits only");
        assert!(is_executable(&meta(0, 65534, 0o750, 'f'), NOBODY));
        assert!(!is_executable(&meta(0, 65534, 0o705, 'f'), NOBODY), "the group's bits only");
        assert!(is_executable(&meta(0, 0, 0o755, 'f'), NOBODY));
        assert!(!is_executable(&meta(0, 0, 0o750, 'f'), NOBODY));
    }

    #[test]
    fn protection_when_root_or_setid_root() {
        let plain = meta(0, 0, 0o755, 'f');
        assert!(needs_protection(&plain, ROOT));
        assert!(needs_protection(&plain, RunAs { uid: 65534, gid: 0 }));
        assert!(!needs_protection(&plain, NOBODY));
        assert!(needs_protection(&meta(0, 0, 0o4755, 'f'), NOBODY), "set-uid root");
        assert!(needs_protection(&meta(5, 0, 0o2755, 'f'), NOBODY), "set-gid root");
        assert!(!needs_protection(&meta(5, 5, 0o4755, 'f'), NOBODY));
    }

    /// A fake tree for [`check_security`].
    fn tree<'a>(entries: &'a [(&'a str, FileMeta)]) -> impl Fn(&Path) -> std::io::Result<FileMeta> + 'a {
        move |p: &Path| {
            entries
                .iter()
                .find(|(n, _)| Path::new(n) == p)
                .map(|(_, m)| *m)
                .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::NotFound))
        }
    }

    #[test]
    fn path_security_as_keepalived_checks_it() {
        let root_dir = meta(0, 0, 0o755, 'd');
        let script = meta(0, 0, 0o755, 'f');
        let ok = [("/", root_dir), ("/etc", root_dir), ("/etc/k", root_dir), ("/etc/k/c.sh", script)];
        assert_eq!(check_security(Path::new("/etc/k/c.sh"), tree(&ok)), Ok(()));
        // /tmp: world-writable with the sticky bit is fine.
        let tmp = [("/", root_dir), ("/tmp", meta(0, 0, 0o1777, 'd')), ("/tmp/c.sh", script)];
        assert_eq!(check_security(Path::new("/tmp/c.sh"), tree(&tmp)), Ok(()));
        // A world-writable directory without it is not.
        let ww = [("/", root_dir), ("/srv", meta(0, 0, 0o777, 'd')), ("/srv/c.sh", script)];
        assert_eq!(check_security(Path::new("/srv/c.sh"), tree(&ww)), Err("unsafe permissions: /srv is writable by others (mode 0777)".into()));
        // Group-writable with a non-root group; with group root it is fine.
        let gw = [("/", root_dir), ("/srv", meta(0, 50, 0o775, 'd')), ("/srv/c.sh", script)];
        assert!(check_security(Path::new("/srv/c.sh"), tree(&gw)).unwrap_err().contains("writable by group"));
        let gw0 = [("/", root_dir), ("/srv", meta(0, 0, 0o775, 'd')), ("/srv/c.sh", script)];
        assert_eq!(check_security(Path::new("/srv/c.sh"), tree(&gw0)), Ok(()));
        // A non-root owner anywhere on the path, the script itself included.
        let owned = [("/", root_dir), ("/home", root_dir), ("/home/u", meta(1000, 1000, 0o755, 'd')), ("/home/u/c.sh", script)];
        assert_eq!(check_security(Path::new("/home/u/c.sh"), tree(&owned)), Err("unsafe permissions: /home/u is owned by uid 1000".into()));
        let file = [("/", root_dir), ("/c.sh", meta(1000, 0, 0o755, 'f'))];
        assert!(check_security(Path::new("/c.sh"), tree(&file)).is_err());
        // A world-writable script, even with the sticky bit.
        let wf = [("/", root_dir), ("/c.sh", meta(0, 0, 0o1757, 'f'))];
        assert!(check_security(Path::new("/c.sh"), tree(&wf)).is_err());
        // Wrong types, missing components.
        let ty = [("/", root_dir), ("/x", script), ("/x/c.sh", script)];
        assert!(check_security(Path::new("/x/c.sh"), tree(&ty)).unwrap_err().starts_with("wrong file type"));
        let dir_end = [("/", root_dir), ("/d", root_dir)];
        assert!(check_security(Path::new("/d"), tree(&dir_end)).unwrap_err().starts_with("wrong file type"));
        assert!(check_security(Path::new("/nope/c.sh"), tree(&ok)).is_err());
    }

    #[test]
    fn default_user_never_root_unless_configured() {
        let ks = RunAs { uid: 990, gid: 990 };
        let exists = |u: &ScriptUser| match u.user.as_str() {
            "keepalived_script" => Ok(ks),
            "root" => Ok(ROOT),
            "nobody" => Ok(NOBODY),
            other => Err(format!("script user '{other}' does not exist")),
        };
        let missing = |u: &ScriptUser| if u.user == "keepalived_script" { Err("no".into()) } else { exists(u) };
        let named = |n: &str| ScriptUser { user: n.into(), group: None };
        // keepalived_script when it exists.
        assert_eq!(default_run_as(None, ROOT, exists), Ok(ks));
        // Not root when it does not (keepalived would run as root).
        let e = default_run_as(None, ROOT, missing).unwrap_err();
        assert!(e.starts_with("no script user: the user keepalived_script does not exist"), "{e}");
        // script_user wins, root included when named.
        assert_eq!(default_run_as(Some(&named("nobody")), ROOT, missing), Ok(NOBODY));
        assert_eq!(default_run_as(Some(&named("root")), ROOT, missing), Ok(ROOT));
        assert!(default_run_as(Some(&named("ghost")), ROOT, exists).unwrap_err().contains("does not exist"));
        // A daemon that is not root runs scripts as itself, and as nobody else.
        let me = RunAs { uid: 1000, gid: 1000 };
        assert_eq!(default_run_as(None, me, missing), Ok(me));
        assert!(default_run_as(None, me, exists).is_err());
        assert!(default_run_as(Some(&named("root")), me, exists).is_err());
    }

    #[test]
    fn unchecked_scripts_do_not_run() {
        let dir = std::env::temp_dir().join(format!("lvsnic-misc-unchecked-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mark = dir.join("ran");
        let _ = std::fs::remove_file(&mark);
        let argv = vec!["/usr/bin/touch".to_string(), mark.display().to_string()];
        let o = check(&argv, Duration::from_secs(5), false, 1, None);
        assert!(!o.ok && o.detail.contains("not run"), "{o:?}");
        assert_eq!(notify(&Some(argv.clone()), None), 0);
        std::thread::sleep(Duration::from_millis(100));
        assert!(!mark.exists());
        // Checked, as the daemon's own user, it runs.
        let me = RunAs { uid: sys::euid(), gid: sys::egid() };
        assert!(check(&argv, Duration::from_secs(5), false, 1, Some(me)).ok);
        assert!(mark.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn script_checks_on_real_files() {
        let me = RunAs { uid: sys::euid(), gid: sys::egid() };
        // A bare name is looked for in PATH.
        let (p, w) = check_script(&["sh".into()], me, true).unwrap();
        assert!(p.is_absolute() && w.unwrap().contains("resolved by path search"));
        assert!(check_script(&["no-such-program-lvsnic".into()], me, true).unwrap_err().contains("cannot find"));
        assert!(check_script(&["/no/such/file".into()], me, true).is_err());
        let dir = std::env::temp_dir().join(format!("lvsnic-misc-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("not-exec.sh");
        std::fs::write(&f, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(check_script(&[f.display().to_string()], me, true).unwrap_err().contains("is not executable"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
