//! `ipvsadm -R` input (the `-S -n` format): line splitting as ipvsadm's
//! `config_stream_read()` does it, each line parsed as one ipvsadm command
//! and applied to a [`RuleSet`] with the kernel's checks and libipvs's
//! `ipvs_strerror()` wording.

use std::fmt;

use super::libc::c_str;
use super::parse::{parse_command, Command, CommandError};
use crate::rules::{RuleSet, ServiceKey};

/// Schedulers a stock kernel provides (net/netfilter/ipvs/ip_vs_*.c), plus
/// `none`, which `ip_vs_add_service`/`ip_vs_edit_service` accept without a
/// module.
pub const KNOWN_SCHEDULERS: &[&str] =
    &["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "dh", "sh", "sed", "nq", "fo", "ovf", "mh", "twos", "none"];

/// Persistence engines a stock kernel provides (`ip_vs_pe_sip`).
pub const KNOWN_PES: &[&str] = &["sip"];

/// What the kernel refused, in libipvs `ipvs_strerror()` wording
/// (libipvs/libipvs.c), or strerror() where libipvs has no entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// `-A` of an existing service (EEXIST).
    #[error("Service already exists")]
    ServiceExists,
    /// `-A`/`-E` with a scheduler the kernel has no module for (ENOENT).
    #[error("Scheduler or persistence engine not found (scheduler `{0}')")]
    SchedulerNotFound(String),
    /// `-A`/`-E` with an unknown `--pe` (ENOENT).
    #[error("Scheduler or persistence engine not found (persistence engine `{0}')")]
    PeNotFound(String),
    /// `-E`, `-D`, `-Z` of a missing service (ESRCH).
    #[error("No such service")]
    NoSuchService,
    /// `-a`, `-e`, `-d` on a missing service (ESRCH).
    #[error("Service not defined")]
    ServiceNotDefined,
    /// `-a` of an existing real server (EEXIST).
    #[error("Destination already exists")]
    DestExists,
    /// `-e`, `-d` of a missing real server (ENOENT).
    #[error("No such destination")]
    NoSuchDest,
    /// `-a`/`-e` with `-y` above `-x` (ERANGE from ip_vs_add_dest /
    /// ip_vs_edit_dest; an unset `-x` is 0).
    #[error("Numerical result out of range (lower threshold {lower} is higher than upper threshold {upper})")]
    ThresholdRange {
        /// `-y`.
        lower: u32,
        /// `-x`.
        upper: u32,
    },
    /// A command that is not a rule change (`-L`, `-S`, `-R`, `-h`, daemons).
    #[error("{0}")]
    NotARule(&'static str),
    /// Any EINVAL of the kernel's, in libipvs' words: an IPv6 real server
    /// that is not global unicast (`ip_vs_new_dest`), a real server of the
    /// other family than its service's while a sync daemon runs, or a sync
    /// daemon while one exists (`ip_vs_genl_set_cmd`,
    /// `ip_vs_genl_new_daemon`).
    #[error("Invalid operation.  Possibly wrong module version, address not unicast, ...")]
    InvalidOperation,
}

impl ApplyError {
    /// The line ipvsadm prints for this refusal, byte for byte: libipvs'
    /// `ipvs_strerror()` text, or `strerror()` where libipvs has none (the
    /// `Display` text adds what was refused, for a rules file's errors).
    pub fn ipvsadm_text(&self) -> String {
        match self {
            ApplyError::SchedulerNotFound(_) | ApplyError::PeNotFound(_) => "Scheduler or persistence engine not found".into(),
            ApplyError::ThresholdRange { .. } => "Numerical result out of range".into(),
            other => other.to_string(),
        }
    }
}

/// The kernel's ENOENT for a scheduler or persistence engine it has no
/// module for (`ip_vs_add_service`/`ip_vs_edit_service`).
pub fn check_scheduler(rule: &crate::rules::ServiceRule) -> Result<(), ApplyError> {
    if !KNOWN_SCHEDULERS.contains(&rule.scheduler.as_str()) {
        return Err(ApplyError::SchedulerNotFound(rule.scheduler.clone()));
    }
    if let Some(pe) = &rule.pe {
        if !KNOWN_PES.contains(&pe.as_str()) {
            return Err(ApplyError::PeNotFound(pe.clone()));
        }
    }
    Ok(())
}

/// Apply one parsed command to `rules` as the kernel would.
///
/// Rule commands (`-A -E -D -C -a -e -d -Z`) change `rules` or fail with the
/// kernel's error; `--set` is accepted and changes nothing here (see
/// [`parse_rules_full`]); the others are refused with
/// [`ApplyError::NotARule`].
pub fn apply_command(rules: &mut RuleSet, cmd: &Command) -> Result<(), ApplyError> {
    fn svc_index(rules: &RuleSet, key: &ServiceKey) -> Option<usize> {
        rules.services.iter().position(|s| s.key == *key)
    }
    match cmd {
        Command::AddService(rule) => {
            if svc_index(rules, &rule.key).is_some() {
                return Err(ApplyError::ServiceExists);
            }
            check_scheduler(rule)?;
            let mut r = rule.clone();
            r.dests.clear();
            rules.services.push(r);
        }
        Command::EditService(rule) => {
            let i = svc_index(rules, &rule.key).ok_or(ApplyError::NoSuchService)?;
            check_scheduler(rule)?;
            let s = &mut rules.services[i];
            s.scheduler = rule.scheduler.clone();
            s.flags = rule.flags;
            s.persistent = rule.persistent;
            s.netmask = rule.netmask;
            s.pe = rule.pe.clone();
            s.ops = rule.ops;
        }
        Command::DeleteService(key) => {
            let i = svc_index(rules, key).ok_or(ApplyError::NoSuchService)?;
            rules.services.remove(i);
        }
        Command::Clear => rules.services.clear(),
        Command::AddDest(key, dest) => {
            let i = svc_index(rules, key).ok_or(ApplyError::ServiceNotDefined)?;
            if dest.l_threshold > dest.u_threshold {
                return Err(ApplyError::ThresholdRange { lower: dest.l_threshold, upper: dest.u_threshold });
            }
            let s = &mut rules.services[i];
            if s.dests.iter().any(|d| d.addr == dest.addr && d.port == dest.port) {
                return Err(ApplyError::DestExists);
            }
            s.dests.push(dest.clone());
        }
        Command::EditDest(key, dest) => {
            let i = svc_index(rules, key).ok_or(ApplyError::ServiceNotDefined)?;
            if dest.l_threshold > dest.u_threshold {
                return Err(ApplyError::ThresholdRange { lower: dest.l_threshold, upper: dest.u_threshold });
            }
            let s = &mut rules.services[i];
            let d = s
                .dests
                .iter_mut()
                .find(|d| d.addr == dest.addr && d.port == dest.port)
                .ok_or(ApplyError::NoSuchDest)?;
            *d = dest.clone();
        }
        Command::DeleteDest(key, addr, port) => {
            let i = svc_index(rules, key).ok_or(ApplyError::ServiceNotDefined)?;
            let s = &mut rules.services[i];
            let j = s.dests.iter().position(|d| d.addr == *addr && d.port == *port).ok_or(ApplyError::NoSuchDest)?;
            s.dests.remove(j);
        }
        Command::Zero(Some(key)) => {
            svc_index(rules, key).ok_or(ApplyError::NoSuchService)?;
        }
        Command::Zero(None) | Command::SetTimeouts { .. } => {}
        Command::List(_) => return Err(ApplyError::NotARule("`-L' (list) is not a rule command")),
        Command::Save { .. } => return Err(ApplyError::NotARule("`-S' (save) is not a rule command")),
        Command::Restore => return Err(ApplyError::NotARule("`-R' (restore) cannot be nested")),
        Command::Help => return Err(ApplyError::NotARule("`-h' (help) is not a rule command")),
        Command::Version => return Err(ApplyError::NotARule("`-v' (version) is not a rule command")),
        Command::StartDaemon(_) | Command::StopDaemon(_) => {
            return Err(ApplyError::NotARule("the connection sync daemon is not supported"))
        }
    }
    Ok(())
}

/// `--set tcp tcpfin udp` values in seconds; 0 leaves a timeout unchanged
/// (kernel `ip_vs_set_timeout`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timeouts {
    /// TCP established timeout.
    pub tcp: u32,
    /// TCP FIN_WAIT timeout.
    pub tcpfin: u32,
    /// UDP timeout.
    pub udp: u32,
}

/// A whole `ipvsadm -R` input: the rules, and the `--set` timeouts if any
/// line set them (several `--set` lines merge, non-zero values winning in
/// file order, as successive kernel calls would).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RestoreScript {
    /// The rules, services in file order.
    pub rules: RuleSet,
    /// The merged `--set` timeouts, if any line set them.
    pub timeouts: Option<Timeouts>,
}

/// What went wrong with a rules file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RulesErrorKind {
    /// The line is not a valid ipvsadm command.
    Command(CommandError),
    /// The command is valid but the kernel would refuse it here.
    Apply(ApplyError),
    /// The line holds a NUL byte at this 1-based column (ipvsadm reads
    /// lines as C strings, so it would silently cut the line there;
    /// lvsnic refuses it).
    Nul(usize),
}

impl fmt::Display for RulesErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RulesErrorKind::Command(e) => e.fmt(f),
            RulesErrorKind::Apply(e) => e.fmt(f),
            RulesErrorKind::Nul(col) => {
                write!(f, "a NUL byte at column {col} (ipvsadm would silently cut the line there); remove it")
            }
        }
    }
}

/// A rules file error: one line naming the line number, its text and the
/// problem, e.g.
/// `line 3: "-a -t 10.0.0.1:80 -r 10.1.0.1 -w 2147483648": illegal weight specified`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: \"{text}\": {kind}")]
pub struct RulesError {
    /// 1-based line number.
    pub line: usize,
    /// The line, trimmed, control characters escaped.
    pub text: String,
    /// The problem.
    pub kind: RulesErrorKind,
}

/// Split one line into words as `config_stream_read()` does: separators are
/// space, tab, CR and LF only; every word exactly `ipvsadm` is dropped
/// (wherever it is); a word ends at a NUL.
pub fn split_line(line: &str) -> Vec<&str> {
    line.split([' ', '\t', '\r', '\n'])
        .filter(|w| !w.is_empty())
        .map(c_str)
        .filter(|w| *w != "ipvsadm")
        .collect()
}

fn printable(line: &str) -> String {
    let t = line.trim_matches([' ', '\t', '\r', '\n']);
    let mut s = String::with_capacity(t.len());
    for c in t.chars() {
        if c.is_control() || c == '"' || c == '\\' {
            s.extend(c.escape_default());
        } else {
            s.push(c);
        }
    }
    s
}

/// The first NUL byte of `text`, as a 1-based line and column (in
/// characters): a rules text or a command argument holding one is
/// refused, since ipvsadm's C strings would silently end there.
pub fn find_nul(text: &str) -> Option<(usize, usize)> {
    let i = text.find('\0')?;
    let before = &text[..i];
    let line_start = before.rfind('\n').map_or(0, |j| j + 1);
    Some((before.matches('\n').count() + 1, before[line_start..].chars().count() + 1))
}

/// Parse an `ipvsadm -S -n` / `ipvsadm -R` text into a [`RuleSet`],
/// applying each line in file order. `--set` lines are accepted and ignored
/// here (see [`parse_rules_full`]).
pub fn parse_rules(text: &str) -> Result<RuleSet, RulesError> {
    parse_rules_full(text).map(|s| s.rules)
}

/// [`parse_rules`], also returning the `--set` timeouts.
///
/// Lines: words as [`split_line`] gives them (an optional `ipvsadm` word is
/// dropped); blank lines are skipped; a line whose first word starts with
/// `#` is a comment. A `#` later in a line is not a comment (ipvsadm's
/// reader does not strip it either), so `-C # flush` fails with
/// "unexpected argument #". Processing stops at the first error. A NUL
/// byte anywhere is refused before any line is applied
/// ([`RulesErrorKind::Nul`]), where ipvsadm would cut the line there.
pub fn parse_rules_full(text: &str) -> Result<RestoreScript, RulesError> {
    if let Some((line, col)) = find_nul(text) {
        let l = text.split('\n').nth(line - 1).unwrap_or("");
        return Err(RulesError { line, text: printable(l), kind: RulesErrorKind::Nul(col) });
    }
    let mut script = RestoreScript::default();
    for (idx, line) in text.split('\n').enumerate() {
        let words = split_line(line);
        if words.is_empty() || words[0].starts_with('#') {
            continue;
        }
        let err = |kind| RulesError { line: idx + 1, text: printable(line), kind };
        let cmd = parse_command(&words).map_err(|e| err(RulesErrorKind::Command(e)))?;
        apply_command(&mut script.rules, &cmd).map_err(|e| err(RulesErrorKind::Apply(e)))?;
        if let Command::SetTimeouts { tcp, tcpfin, udp } = cmd {
            let t = script.timeouts.get_or_insert_with(Timeouts::default);
            if tcp != 0 {
                t.tcp = tcp;
            }
            if tcpfin != 0 {
                t.tcpfin = tcpfin;
            }
            if udp != 0 {
                t.udp = udp;
            }
        }
    }
    Ok(script)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nul_byte_in_a_rules_line_is_refused_with_its_line() {
        // ipvsadm would read "-A -t 10.0.0.2:80" and add the service with
        // the default scheduler (wlc): lvsnic refuses the line instead.
        let text = "-A -t 10.0.0.1:80 -s rr\n-A -t 10.0.0.2:80\0 -s sh\n-a -t 10.0.0.1:80 -r 10.1.0.1:80 -m\n";
        let e = parse_rules_full(text).unwrap_err();
        assert_eq!((e.line, &e.kind), (2, &RulesErrorKind::Nul(18)));
        assert_eq!(
            e.to_string(),
            "line 2: \"-A -t 10.0.0.2:80\\u{0} -s sh\": a NUL byte at column 18 (ipvsadm would silently cut the line there); remove it"
        );
        // Anywhere: in a comment, at the end of the text.
        assert_eq!(parse_rules("# a \0 comment\n").unwrap_err().line, 1);
        assert_eq!(parse_rules("-C\n\n\0").unwrap_err().kind, RulesErrorKind::Nul(1));
        assert_eq!(find_nul("ab\ncé\0"), Some((2, 3)));
        assert_eq!(find_nul("ab\ncé"), None);
        assert!(parse_rules("-A -t 10.0.0.1:80 -s rr\n").is_ok());
    }
}
