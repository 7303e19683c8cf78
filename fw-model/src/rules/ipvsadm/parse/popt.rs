//! Option scanning: ipvsadm's option table (its `poptOption` table) and a
//! small popt (`poptGetNextOpt`): `--long[=arg]`, clustered short options
//! (`-Ln`, `-p600`, `-w=3`), optional arguments that are not taken when the
//! next word starts with '-', `--` ending the options, and non-option words
//! kept as leftovers.

use super::CommandError;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tag {
    AddService,
    EditService,
    DeleteService,
    Clear,
    List,
    Zero,
    AddServer,
    EditServer,
    DeleteServer,
    Set,
    Help,
    Version,
    Restore,
    Save,
    StartDaemon,
    StopDaemon,
    Tcp,
    Udp,
    Sctp,
    Fwmark,
    Scheduler,
    Persistent,
    Netmask,
    RealServer,
    Masq,
    Ipip,
    Gate,
    Weight,
    UThreshold,
    LThreshold,
    Numeric,
    Connection,
    McastInterface,
    SyncId,
    Timeout,
    Daemon,
    Stats,
    Rate,
    Thresholds,
    PersistentConn,
    NoSort,
    Sort,
    Exact,
    Ipv6,
    Ops,
    Pe,
    SchedFlags,
    McastGroup,
    McastPort,
    McastTtl,
    SyncMaxlen,
    TunInfo,
    TunType,
    TunPort,
    TunNocsum,
    TunCsum,
    TunRemcsum,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ArgKind {
    None,
    Required,
    Optional,
}

pub(super) struct OptDef {
    long: &'static str,
    short: Option<char>,
    arg: ArgKind,
    tag: Tag,
}

pub(super) const fn o(long: &'static str, short: Option<char>, arg: ArgKind, tag: Tag) -> OptDef {
    OptDef { long, short, arg, tag }
}

use ArgKind::{None as N, Optional as Opt, Required as Req};

/// In ipvsadm's table order (popt takes the first match).
pub(super) const OPTIONS: &[OptDef] = &[
    o("add-service", Some('A'), N, Tag::AddService),
    o("edit-service", Some('E'), N, Tag::EditService),
    o("delete-service", Some('D'), N, Tag::DeleteService),
    o("clear", Some('C'), N, Tag::Clear),
    o("list", Some('L'), N, Tag::List),
    o("list", Some('l'), N, Tag::List),
    o("zero", Some('Z'), N, Tag::Zero),
    o("add-server", Some('a'), N, Tag::AddServer),
    o("edit-server", Some('e'), N, Tag::EditServer),
    o("delete-server", Some('d'), N, Tag::DeleteServer),
    o("set", None, N, Tag::Set),
    o("help", Some('h'), N, Tag::Help),
    o("version", Some('v'), N, Tag::Version),
    o("restore", Some('R'), N, Tag::Restore),
    o("save", Some('S'), N, Tag::Save),
    o("start-daemon", None, Req, Tag::StartDaemon),
    o("stop-daemon", None, Req, Tag::StopDaemon),
    o("tcp-service", Some('t'), Req, Tag::Tcp),
    o("udp-service", Some('u'), Req, Tag::Udp),
    o("sctp-service", None, Req, Tag::Sctp),
    o("fwmark-service", Some('f'), Req, Tag::Fwmark),
    o("scheduler", Some('s'), Req, Tag::Scheduler),
    o("persistent", Some('p'), Opt, Tag::Persistent),
    o("netmask", Some('M'), Req, Tag::Netmask),
    o("real-server", Some('r'), Req, Tag::RealServer),
    o("masquerading", Some('m'), N, Tag::Masq),
    o("ipip", Some('i'), N, Tag::Ipip),
    o("gatewaying", Some('g'), N, Tag::Gate),
    o("weight", Some('w'), Req, Tag::Weight),
    o("u-threshold", Some('x'), Req, Tag::UThreshold),
    o("l-threshold", Some('y'), Req, Tag::LThreshold),
    o("numeric", Some('n'), N, Tag::Numeric),
    o("connection", Some('c'), N, Tag::Connection),
    o("mcast-interface", None, Req, Tag::McastInterface),
    o("syncid", None, Req, Tag::SyncId),
    o("timeout", None, N, Tag::Timeout),
    o("daemon", None, N, Tag::Daemon),
    o("stats", None, N, Tag::Stats),
    o("rate", None, N, Tag::Rate),
    o("thresholds", None, N, Tag::Thresholds),
    o("persistent-conn", None, N, Tag::PersistentConn),
    o("nosort", None, N, Tag::NoSort),
    o("sort", None, N, Tag::Sort),
    o("exact", Some('X'), N, Tag::Exact),
    o("ipv6", Some('6'), N, Tag::Ipv6),
    o("ops", Some('o'), N, Tag::Ops),
    o("pe", None, Req, Tag::Pe),
    o("sched-flags", Some('b'), Req, Tag::SchedFlags),
    o("mcast-group", None, Req, Tag::McastGroup),
    o("mcast-port", None, Req, Tag::McastPort),
    o("mcast-ttl", None, Req, Tag::McastTtl),
    o("sync-maxlen", None, Req, Tag::SyncMaxlen),
    o("tun-info", None, N, Tag::TunInfo),
    o("tun-type", None, Req, Tag::TunType),
    o("tun-port", None, Req, Tag::TunPort),
    o("tun-nocsum", None, N, Tag::TunNocsum),
    o("tun-csum", None, N, Tag::TunCsum),
    o("tun-remcsum", None, N, Tag::TunRemcsum),
];

pub(super) enum Event<'a> {
    Opt(Tag, Option<&'a str>),
    End,
    BadOpt,
    NoArg,
}

pub(super) struct Popt<'a> {
    args: &'a [&'a str],
    next: usize,
    cluster: Option<&'a str>,
    rest_leftover: bool,
    leftovers: Vec<&'a str>,
    next_leftover: usize,
}

impl<'a> Popt<'a> {
    pub(super) fn new(args: &'a [&'a str]) -> Self {
        Popt { args, next: 0, cluster: None, rest_leftover: false, leftovers: Vec::new(), next_leftover: 0 }
    }

    /// `poptBadOption()`: the argument word consumed last.
    pub(super) fn bad_option(&self) -> String {
        if self.next == 0 {
            String::new()
        } else {
            self.args[self.next - 1].to_string()
        }
    }

    pub(super) fn get_arg(&mut self) -> Option<&'a str> {
        let r = self.leftovers.get(self.next_leftover).copied();
        if r.is_some() {
            self.next_leftover += 1;
        }
        r
    }

    pub(super) fn next_opt(&mut self) -> Event<'a> {
        loop {
            let mut long_arg: Option<&'a str> = None;
            let def: &OptDef;
            if self.cluster.is_none() {
                if self.next == self.args.len() {
                    return Event::End;
                }
                let word = self.args[self.next];
                self.next += 1;
                if self.rest_leftover || !word.starts_with('-') || word == "-" {
                    self.leftovers.push(word);
                    continue;
                }
                if word == "--" {
                    self.rest_leftover = true;
                    continue;
                }
                if let Some(body) = word.strip_prefix("--") {
                    let (name, arg) = match body.find('=') {
                        Some(i) => (&body[..i], Some(&body[i + 1..])),
                        None => (body, None),
                    };
                    match OPTIONS.iter().find(|d| d.long == name) {
                        Some(d) => {
                            def = d;
                            long_arg = arg;
                        }
                        None => return Event::BadOpt,
                    }
                } else {
                    // "-xyz": single-dash long names never match ipvsadm's
                    // table (no POPT_ARGFLAG_ONEDASH), so it is a cluster.
                    self.cluster = Some(&word[1..]);
                    continue;
                }
            } else {
                let c = self.cluster.take().unwrap_or("");
                let ch = match c.chars().next() {
                    Some(ch) => ch,
                    None => return Event::BadOpt,
                };
                match OPTIONS.iter().find(|d| d.short == Some(ch)) {
                    Some(d) => def = d,
                    None => return Event::BadOpt,
                }
                let rest = &c[ch.len_utf8()..];
                if !rest.is_empty() {
                    self.cluster = Some(rest.strip_prefix('=').unwrap_or(rest));
                }
            }
            if def.arg == ArgKind::None {
                return Event::Opt(def.tag, None);
            }
            let arg = if let Some(a) = long_arg {
                Some(a)
            } else if let Some(rest) = self.cluster.take() {
                Some(rest)
            } else if self.next == self.args.len() {
                if def.arg == ArgKind::Optional {
                    None
                } else {
                    return Event::NoArg;
                }
            } else if def.arg == ArgKind::Optional && self.args[self.next].starts_with('-') {
                None
            } else {
                let a = self.args[self.next];
                self.next += 1;
                Some(a)
            };
            return Event::Opt(def.tag, arg);
        }
    }
}

/// Whether popt fails on the very first option of `words` (an unknown
/// option, a missing argument) or finds no option at all. ipvsadm then
/// answers with "Try `PROG -h' or 'PROG --help' for more information."
/// only (`tryhelp_exit`), where a bad option after the first one is
/// printed as `OPTION: reason` ([`CommandError::BadOption`]).
pub fn first_option_fails(words: &[&str]) -> bool {
    !matches!(Popt::new(words).next_opt(), Event::Opt(..))
}

impl<'a> Popt<'a> {
    /// The next option and its argument, `None` after the last; popt's
    /// errors (unknown option, missing argument) as a [`CommandError`].
    pub(super) fn next_option(&mut self) -> Result<Option<(Tag, Option<&'a str>)>, CommandError> {
        match self.next_opt() {
            Event::End => Ok(None),
            Event::BadOpt => Err(CommandError::BadOption { option: self.bad_option(), reason: "unknown option" }),
            Event::NoArg => Err(CommandError::BadOption { option: self.bad_option(), reason: "missing argument" }),
            Event::Opt(t, a) => Ok(Some((t, a))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::first_option_fails;

    #[test]
    fn first_option_detection() {
        // Unknown, or missing its argument, or no option at all.
        let fails = [&["-Q"][..], &["--bogus"], &["--bogus=1"], &["-t"], &["--start-daemon"], &["--"], &["--", "-A"], &[]];
        for w in fails {
            assert!(first_option_fails(w), "{w:?}");
        }
        assert!(first_option_fails(&["x", "-Q"]), "words before the first option are skipped");
        // A good first option, whatever follows.
        for w in [
            &["-A", "-Q"][..],
            &["-t", "1.2.3.4:80"],
            &["-t1.2.3.4:80"],
            &["--tcp-service=1.2.3.4:80"],
            &["-Ln"],
            &["-p"],
            &["--persistent"],
            &["--set", "1", "2", "3"],
            &["x", "-L"],
        ] {
            assert!(!first_option_fails(w), "{w:?}");
        }
    }
}
