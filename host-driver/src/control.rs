//! The control plane of the daemon: ipvsadm commands applied to the running
//! director (golden model + flow manager + data plane), between frames.
//!
//! [`Control::ipvsadm`] takes an ipvsadm argument list (and, for `-R`, the
//! text ipvsadm would read from standard input) and returns what ipvsadm
//! would print on stdout and stderr and its exit status:
//!
//! * listings (`-L`/`-l` with `-n -c --stats --rate --thresholds
//!   --persistent-conn --tun-info --timeout --daemon --exact --nosort`,
//!   `-L -t VIP:port`, and no arguments at all) and `-S` use the byte-exact
//!   printers of `lvsnic_model::rules::ipvsadm`; rates print 0 (the kernel's
//!   rate estimator is not modelled);
//! * rule changes (`-A -E -D -C -a -e -d -Z --set`) go to the golden model
//!   with the kernel's checks in the kernel's order; deleting real servers
//!   (`-d`, and `-D`/`-C` for every server of the services) removes their
//!   offloaded flows from the data plane so it stops forwarding them, and
//!   every change rewrites the data plane's VIP table;
//! * errors are printed as ipvsadm prints them (ipvsadm.c): `fail()`
//!   messages verbatim with status 2, libipvs `ipvs_strerror()` messages
//!   for what the kernel refuses with status 255 (`process_options` returns
//!   -1), popt errors as `OPTION: reason` with status 255, "Try `PROG -h'
//!   or 'PROG --help' for more information." with status 255 when there is
//!   no command, and "No such service" with status 1 for `-L` of a missing
//!   service;
//! * `-R` runs each line as ipvsadm's `restore_table` does: a `fail()`
//!   ends the restore (status 2), kernel and popt errors are printed and the
//!   restore goes on, and the status is that of the last line. There are
//!   no comments: a line starting with `#` is not a command, so it ends the
//!   restore with "Try `PROG -h' ..." and status 255, as in ipvsadm 1.31
//!   (seen in the VM; `parse_rules`, for rules files, skips such lines).
//!
//! Heavy operations run a slice at a time, so that the daemon can forward
//! frames between slices ([`Control::ipvsadm_begin`]): `-R` a slice of
//! lines at a time ([`Control::restore_step`]; the kernel's ipvsadm also
//! sends one netlink command per line, with packets flowing between them),
//! `-L -c` a slice of the connection table at a time
//! ([`Control::conns_step`], as the kernel's `/proc/net/ip_vs_conn`
//! seq_file reads it: not an atomic snapshot). [`Control::ipvsadm`] runs
//! them to the end at once.
//!
//! What the lvsnic director cannot do (fwmark, IPv6 and SCTP services,
//! persistence engines, GUE/GRE tunnels, real servers without a
//! `[neighbors]` entry) is refused with one clear line and status 255,
//! where a kernel would have accepted it. `--start-daemon`/`--stop-daemon`
//! run the connection sync daemons of [`crate::sync`].

use crate::device::{Device, DeviceError, RxFrame, Wire};
use crate::flows::OffloadView;
pub use crate::invocation::Output;
use crate::invocation::{usage, version};
use crate::limits::{self, Limiter, Limits};
use crate::slowpath::{FrameResult, SlowPath};
use lvsnic_model::conn::ConnId;
use lvsnic_model::director::Offload;
use lvsnic_model::director::DirectorError;
use lvsnic_model::ipvs::{DestId, RuleError};
use lvsnic_model::rules::ipvsadm::{
    format_connections, format_daemon, format_list, format_save, format_timeout, parse_command, Command, CommandError,
    ConnListing, ListOptions, KNOWN_PES, KNOWN_SCHEDULERS,
};
use lvsnic_model::config::DirectorConfig;
use lvsnic_model::director::Director;
use lvsnic_model::rules::ipvsadm::first_option_fails;
use lvsnic_model::rules::ipvsadm::SyncDaemon;
use lvsnic_model::rules::{ServiceKey, ServiceRule};
use lvsnic_model::stats::{connection_listing, listings, Report};
use lvsnic_model::time::Time;
use serde::Serialize;
use std::net::IpAddr;
use std::time::Instant;

/// ipvsadm's `fail(2, ...)`.
pub const EXIT_FAIL: i32 = 2;
/// `process_options` returning -1 (kernel or popt error), as an exit status.
pub const EXIT_ERR: i32 = 255;
/// `exit(1)` of the listing functions.
pub const EXIT_LIST: i32 = 1;

/// Counters of the exception loop.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct LoopCounters {
    /// Frames received from the wire.
    pub frames: u64,
    /// Of those, forwarded by the data plane without the host.
    pub in_hardware: u64,
    /// Handed up by the data plane (exceptions).
    pub exceptions: u64,
    /// New-connection exceptions dropped by the rate limit.
    pub rate_limited: u64,
    /// Frames transmitted on the wire.
    pub transmitted: u64,
    /// Frames given to the director's own stack.
    pub to_host: u64,
    /// Frames dropped on receive (empty, runt, oversize, receive ring), by reason.
    pub dropped_on_receive: lvsnic_model::stats::ReceiveDrops,
}

/// The director's state as `lvsnic status` shows it
/// ([`Control::status`]); the daemon adds its own sections beside these.
#[derive(Clone, Debug, Serialize)]
pub struct Status {
    /// The director's clock (model time, ns).
    pub now_ns: Time,
    /// The director report, as `lvsnic replay --stats` writes it
    /// (`director.total.inpkts`, `director.connections.created`, ...).
    pub director: Report,
    /// The exception loop's counters (`exception_loop.frames`,
    /// `exception_loop.dropped_on_receive`, ...).
    pub exception_loop: LoopCounters,
    /// The data plane's flow table.
    pub offload: OffloadStatus,
    /// The new-connection rate limit (`[limits]`).
    pub limits: LimitsStatus,
    /// The connection sync daemons.
    pub sync: crate::sync::SyncStatus,
}

/// The data plane's flow table, in [`Status`].
#[derive(Clone, Copy, Debug, Serialize)]
pub struct OffloadStatus {
    /// Connections offloaded to the card now.
    pub connections: usize,
    /// Flows that did not fit in the card's table (their connection stays in software).
    pub table_full: u64,
    /// Table commands that found the device busy for too long.
    pub busy_timeouts: u64,
}

/// The new-connection rate limit, in [`Status`].
#[derive(Clone, Debug, Serialize)]
pub struct LimitsStatus {
    /// `[limits] new_conn_per_sec` (none: no limit).
    pub new_conn_per_sec: Option<u64>,
    /// The bucket's depth (`[limits] burst`, or its default).
    pub burst: u64,
    /// Frames dropped by any service's bucket.
    pub limited: u64,
    /// Each service's bucket counters, by service name.
    pub services: std::collections::BTreeMap<String, limits::BucketCounters>,
}

/// How an ipvsadm run ended: `process_options` returned, or `exit()` was called.
enum Done {
    Ret(i32),
    Exit(i32),
}

/// An ipvsadm command begun by [`Control::ipvsadm_begin`].
pub enum Step {
    /// It ran: what it printed and its status.
    Done(Output),
    /// `-R`: run its lines with [`Control::restore_step`].
    Restore(Restore),
    /// `-L -c`: take the table's rows with [`Control::conns_step`].
    Conns(ConnList),
}

/// A `-R` being applied a slice of lines at a time.
pub struct Restore {
    prog: String,
    text: String,
    /// Byte offset of the next line in `text`.
    pos: usize,
    /// The status of the last line run.
    result: i32,
    out: Output,
}

impl Restore {
    /// Lines of `text` not yet run (for progress reports).
    pub fn bytes_left(&self) -> usize {
        self.text.len().saturating_sub(self.pos)
    }
}

/// A `-L -c` listing being taken a slice of the connection table at a time.
pub struct ConnList {
    /// The next connection id to look at.
    next: u32,
    /// `--persistent-conn`.
    pub persistent: bool,
}

/// The text of a `-L -c` listing, formatted a slice of rows at a time
/// (byte for byte what [`format_connections`] prints of all of them).
#[derive(Default)]
pub struct ConnText {
    text: String,
    started: bool,
}

impl ConnText {
    /// Appends the lines of `rows` (the header first, once).
    pub fn push(&mut self, rows: &[ConnListing], persistent: bool) {
        let t = self.chunk(rows, persistent);
        self.text.push_str(&t);
    }

    /// The lines of `rows`, after the header if no slice came before
    /// (for a caller that writes the listing as it comes).
    pub fn chunk(&mut self, rows: &[ConnListing], persistent: bool) -> String {
        let t = format_connections(rows, persistent);
        if self.started {
            // Every slice is formatted with the header lines; they are printed once.
            let head = format_connections(&[], persistent);
            t.strip_prefix(head.as_str()).map(str::to_string).unwrap_or(t)
        } else {
            self.started = true;
            t
        }
    }

    /// The listing.
    pub fn finish(self, persistent: bool) -> String {
        if self.started {
            self.text
        } else {
            format_connections(&[], persistent)
        }
    }
}

/// The director as the daemon runs it. Its parts are private: rule
/// changes go through [`Control::ipvsadm`], everything else through the
/// named methods below (the state keeper's snapshots reach the slow path
/// through [`Control::slow_path_mut`], crate-private).
pub struct Control<D: Device> {
    /// The golden model and flow manager in front of the card.
    sp: SlowPath<D>,
    /// VIP table entries of the data plane.
    vip_count: u32,
    /// The per-service new-connection rate limit.
    limiter: Limiter,
    /// The exception loop's counters.
    counters: LoopCounters,
    /// The connection sync daemons (`--start-daemon`).
    sync: crate::sync::SyncDaemons,
}

fn dir_err_line(e: &DirectorError) -> String {
    match e {
        DirectorError::Rule { error: RuleError::Unsupported(m), .. } => m.clone(),
        other => other.to_string(),
    }
}

impl<D: Device> Control<D> {
    /// The control plane over `sp`, with `vip_count` VIP table entries and the rate limit `limits`.
    pub fn new(sp: SlowPath<D>, vip_count: u32, limits: Limits) -> Self {
        // The sync daemons follow DIRECTOR.toml's `[sysctl] sync_*`.
        let mut sync = crate::sync::SyncDaemons::new(sp.director.cfg.sysctl.sync);
        sync.set_limits(limits); // a backup's entries obey `[limits]` too
        Control { sp, vip_count, limiter: Limiter::new(limits), counters: LoopCounters::default(), sync }
    }

    /// The golden model (read only: rules change through [`ipvsadm`](Self::ipvsadm)).
    pub fn director(&self) -> &Director {
        &self.sp.director
    }

    /// The exception loop's counters.
    pub fn counters(&self) -> LoopCounters {
        self.counters
    }

    /// Connections whose flows are on the card now.
    pub fn offloaded(&self) -> usize {
        self.sp.flows.len()
    }

    /// Connections whose flows did not fit in the card's tables.
    pub fn table_full(&self) -> u64 {
        self.sp.flows.table_full
    }

    /// Credits the data plane's counters to the director's statistics and
    /// runs the flow manager's pending work (before reading them).
    pub fn settle(&mut self) {
        self.sp.settle();
    }

    /// `ipvsadm --set tcp tcpfin udp` (0 keeps a value).
    pub fn set_timeouts(&mut self, tcp: u32, tcpfin: u32, udp: u32) {
        self.sp.director.cfg.timeouts.set(tcp, tcpfin, udp);
    }

    /// Takes `vip` (VRRP master) or releases it (backup, fault), in the
    /// golden model and on the card; whether that changed anything.
    pub fn set_vip_owned(&mut self, vip: std::net::Ipv4Addr, owned: bool) -> bool {
        self.sp.set_vip_owned(vip, owned)
    }

    /// The director's configuration, for what a reload changes at run time
    /// (neighbors, timeouts); rules change through [`ipvsadm`](Self::ipvsadm).
    pub fn config_mut(&mut self) -> &mut DirectorConfig {
        &mut self.sp.director.cfg
    }

    /// The connection sync daemons.
    pub fn sync_daemons(&self) -> &crate::sync::SyncDaemons {
        &self.sync
    }

    /// Starts a sync daemon, or restarts it with another configuration
    /// (`lvsnic sync`, keepalived's `lvs_sync_daemon`).
    pub fn ensure_sync(&mut self, d: &SyncDaemon) -> Result<crate::sync::Ensured, crate::sync::SyncError> {
        self.sync.ensure(d)
    }

    /// Runs the sync daemons: what the backup received, what the master sends.
    pub fn run_sync(&mut self) {
        self.sync.run(&mut self.sp);
    }

    /// The slow path itself, for the state keeper's connection snapshots
    /// and their restore ([`crate::state`]).
    pub(crate) fn slow_path_mut(&mut self) -> &mut SlowPath<D> {
        &mut self.sp
    }

    /// Runs the director's timers up to `ts` (frames do it themselves; the
    /// daemon calls it when idle in live mode and before requests).
    pub fn advance(&mut self, ts: Time) {
        self.sp.advance(ts);
    }

    /// Handles the exception frames the card handed up on its receive ring
    /// by itself (a real card's, from its own ports; a simulated card's
    /// exceptions are taken by [`frame`](Self::frame)): up to `max` per call;
    /// returns how many.
    pub fn poll_device(&mut self, max: usize) -> Result<usize, DeviceError> {
        let mut batch = Vec::new();
        let n = self.sp.dp.recv(&mut batch, max)?;
        for RxFrame { meta, data: frame } in batch {
            self.counters.frames += 1;
            self.counters.exceptions += 1;
            if let Some(svc) = limits::new_conn_service(&self.sp.director, &frame) {
                if !self.limiter.admit(svc, meta.ts) {
                    self.counters.rate_limited += 1;
                    continue;
                }
            }
            // The sync master looks at the frame after the golden model.
            let copy = self.sync.master_running().then(|| frame.clone());
            let r = self.sp.device_exception(meta.ts, frame, meta.seq)?;
            if let Some(f) = copy {
                self.sync.after_frame(&self.sp, &f);
            }
            self.counters.transmitted += r.injected as u64;
            self.counters.to_host += r.host.is_some() as u64;
        }
        Ok(n)
    }

    /// A frame the director's own stack sends: down the card's transmit
    /// ring, out of its network port.
    pub fn host_tx(&mut self, frame: &[u8]) -> Result<(), DeviceError> {
        self.sp.host_tx(frame)?;
        self.counters.transmitted += 1;
        Ok(())
    }

    /// The director's state (`lvsnic status`): the director report (as
    /// `replay --stats` writes it), the loop counters, the rate limit, the
    /// offload state and the sync daemons. Runs the flow manager's pending
    /// work first, so that the counters include it.
    pub fn status(&mut self) -> Status {
        self.sp.settle();
        Status {
            now_ns: self.sp.director.now(),
            director: Report::of(&self.sp.director),
            exception_loop: self.counters,
            offload: OffloadStatus {
                connections: self.sp.flows.len(),
                table_full: self.sp.flows.table_full,
                busy_timeouts: crate::flows::BUSY_TIMEOUTS.load(std::sync::atomic::Ordering::Relaxed),
            },
            limits: LimitsStatus {
                new_conn_per_sec: self.limiter.limits.new_conn_per_sec,
                burst: self.limiter.limits.burst(),
                limited: self.limiter.limited_total,
                services: self.limiter.counters(),
            },
            sync: self.sync.status(),
        }
    }

    /// One ipvsadm invocation: `prog` is the program name ipvsadm would
    /// print in its messages (its `argv[0]`), `args` the arguments after
    /// it, `stdin` what `-R` reads.
    pub fn ipvsadm(&mut self, prog: &str, args: &[String], stdin: Option<&str>) -> Output {
        match self.ipvsadm_begin(prog, args, stdin.map(str::to_string)) {
            Step::Done(out) => out,
            Step::Restore(mut r) => loop {
                if let Some(out) = self.restore_step(&mut r, None) {
                    break out;
                }
            },
            Step::Conns(mut l) => {
                let mut text = ConnText::default();
                loop {
                    let (rows, done) = self.conns_step(&mut l, None);
                    text.push(&rows, l.persistent);
                    if done {
                        break Output { stdout: text.finish(l.persistent), ..Default::default() };
                    }
                }
            }
        }
    }

    /// [`ipvsadm`](Self::ipvsadm), except that a `-R` or a `-L -c` is only
    /// begun: the caller runs it with [`restore_step`](Self::restore_step)
    /// or [`conns_step`](Self::conns_step), a slice at a time.
    pub fn ipvsadm_begin(&mut self, prog: &str, args: &[String], stdin: Option<String>) -> Step {
        // A NUL would silently cut an argument or a `-R` line (ipvsadm's C
        // strings): refused, naming it, before anything changes.
        use lvsnic_model::rules::ipvsadm::find_nul;
        let nul = args.iter().enumerate().find_map(|(i, a)| {
            find_nul(a).map(|(_, col)| format!("argument {} {:?} has a NUL byte at column {col}", i + 1, a))
        });
        let nul = nul.or_else(|| find_nul(stdin.as_deref().unwrap_or("")).map(|(l, c)| format!("-R input line {l} has a NUL byte at column {c}")));
        if let Some(what) = nul {
            return Step::Done(Output {
                stderr: format!("{prog}: {what} (ipvsadm would silently cut it there); nothing was changed\n"),
                exit: EXIT_FAIL,
                ..Default::default()
            });
        }
        let words: Vec<&str> = args.iter().map(String::as_str).collect();
        match parse_command(&words) {
            Ok(Command::Restore) => {
                return Step::Restore(Restore {
                    prog: prog.to_string(),
                    text: stdin.unwrap_or_default(),
                    pos: 0,
                    result: 0,
                    out: Output::default(),
                })
            }
            Ok(Command::List(opts)) if opts.connections => {
                self.sp.settle();
                return Step::Conns(ConnList { next: 0, persistent: opts.persistent_conn });
            }
            _ => {}
        }
        Step::Done(self.ipvsadm_now(prog, &words, stdin.as_deref()))
    }

    /// Runs lines of a `-R` until `until` (if given) has passed or the
    /// restore has ended; its output and status once it has ended. The
    /// data plane's VIP table is written once per call.
    pub fn restore_step(&mut self, r: &mut Restore, until: Option<Instant>) -> Option<Output> {
        let mut ended = None;
        while r.pos <= r.text.len() {
            let end = r.text[r.pos..].find('\n').map_or(r.text.len(), |i| r.pos + i);
            let words = lvsnic_model::rules::ipvsadm::split_line(&r.text[r.pos..end]);
            r.pos = end + 1;
            // Blank lines are skipped; anything else, a `# comment` too, is
            // a command line: ipvsadm 1.31 has no comments in `-R` (a `#`
            // line ends the restore with "Try `ipvsadm -h' ...", status 255).
            if words.is_empty() {
                continue;
            }
            match self.run_words(&r.prog, &words, "", true, &mut r.out) {
                Done::Ret(c) => r.result = c,
                Done::Exit(c) => {
                    ended = Some(c);
                    break;
                }
            }
            if until.is_some_and(|u| Instant::now() >= u) {
                break;
            }
        }
        self.sp.sync_vips(self.vip_count);
        if ended.is_none() && r.pos > r.text.len() {
            ended = Some(r.result);
        }
        let code = ended?;
        let mut out = std::mem::take(&mut r.out);
        out.exit = code;
        Some(out)
    }

    /// Rows of the connection table from where the last call stopped until
    /// `until` (if given) has passed or the table's end; whether the end
    /// was reached. Packets the data plane forwarded re-arm a connection's
    /// timer as they would in the kernel: a row shows the expiry they imply.
    pub fn conns_step(&mut self, l: &mut ConnList, until: Option<Instant>) -> (Vec<ConnListing>, bool) {
        let d = &self.sp.director;
        let bound = d.conns.id_bound();
        let now = d.now();
        let mut view = OffloadView { flows: &mut self.sp.flows, hw: &mut self.sp.dp, removed: Vec::new() };
        let mut rows = Vec::new();
        while l.next < bound {
            let id = ConnId(l.next);
            l.next += 1;
            if !d.conns.is_live(id) {
                continue;
            }
            let c = d.conns.get(id);
            let mut row = connection_listing(d, c);
            if let Some(t) = view.last_use(id, c) {
                let exp = (t + c.timeout()).max(c.expires);
                row.expires_secs = (exp.saturating_sub(now) / lvsnic_model::time::SEC).min(u32::MAX as u64) as u32;
            }
            rows.push(row);
            if rows.len() % 64 == 0 && until.is_some_and(|u| Instant::now() >= u) {
                break;
            }
        }
        (rows, l.next >= bound)
    }

    /// Runs one ipvsadm command to the end.
    fn ipvsadm_now(&mut self, prog: &str, words: &[&str], stdin: Option<&str>) -> Output {
        let mut out = Output::default();
        out.exit = if words.is_empty() {
            self.list(&ListOptions::default(), &mut out);
            0
        } else {
            match self.run_words(prog, words, stdin.unwrap_or(""), false, &mut out) {
                Done::Ret(c) | Done::Exit(c) => c,
            }
        };
        out
    }

    fn tryhelp(prog: &str, out: &mut Output) -> Done {
        out.stderr.push_str(&format!("Try `{prog} -h' or '{prog} --help' for more information.\n"));
        Done::Exit(EXIT_ERR)
    }

    /// `process_options()` for one argument list.
    fn run_words(&mut self, prog: &str, words: &[&str], stdin: &str, reading_stdin: bool, out: &mut Output) -> Done {
        let cmd = match parse_command(words) {
            Ok(c) => c,
            Err(CommandError::Usage(_)) => return Self::tryhelp(prog, out),
            Err(CommandError::BadOption { option, reason }) => {
                if first_option_fails(words) {
                    return Self::tryhelp(prog, out);
                }
                out.stderr.push_str(&format!("{option}: {reason}\n"));
                return Done::Ret(EXIT_ERR);
            }
            Err(CommandError::Invalid(m)) => {
                out.stderr.push_str(&m);
                // fail(2, "-6 used before -f\n") prints its own newline too.
                out.stderr.push_str(if m == "-6 used before -f" { "\n\n" } else { "\n" });
                return Done::Exit(EXIT_FAIL);
            }
            // ipvsadm prints only its own message for a name it cannot
            // resolve; lvsnic resolves none, so the message is the same.
            Err(CommandError::NotNumeric { context, .. }) => {
                out.stderr.push_str(context);
                out.stderr.push('\n');
                return Done::Exit(EXIT_FAIL);
            }
        };
        let r = self.execute(prog, cmd, stdin, reading_stdin, out);
        // A restore writes the VIP table once per slice of lines
        // ([`restore_step`](Self::restore_step)), not once per line.
        if !reading_stdin {
            self.sp.sync_vips(self.vip_count);
        }
        r
    }

    fn kernel_err(out: &mut Output, msg: impl std::fmt::Display) -> Done {
        out.stderr.push_str(&format!("{msg}\n"));
        Done::Ret(EXIT_ERR)
    }

    fn execute(&mut self, prog: &str, cmd: Command, stdin: &str, reading_stdin: bool, out: &mut Output) -> Done {
        match cmd {
            Command::List(opts) => {
                if let Some(key) = &opts.service {
                    if !opts.connections && self.sp.director.services.lookup_key(key).is_none() {
                        out.stderr.push_str("No such service\n");
                        return Done::Exit(EXIT_LIST);
                    }
                }
                self.list(&opts, out);
                Done::Ret(0)
            }
            Command::Save { .. } => {
                out.stdout.push_str(&format_save(&self.sp.director.services.to_rules()));
                Done::Ret(0)
            }
            Command::Restore => {
                if reading_stdin {
                    return Self::tryhelp(prog, out);
                }
                self.restore(prog, stdin, out)
            }
            Command::Help => {
                out.stdout.push_str(&usage(prog));
                Done::Exit(0)
            }
            Command::Version => {
                out.stdout.push_str(&version(prog));
                Done::Exit(0)
            }
            Command::StartDaemon(d) => match self.sync.start(&d) {
                Ok(()) => Done::Ret(0),
                Err(e) => Self::kernel_err(out, e),
            },
            Command::StopDaemon(d) => match self.sync.stop(d.state) {
                Ok(()) => Done::Ret(0),
                Err(e) => Self::kernel_err(out, e),
            },
            Command::SetTimeouts { tcp, tcpfin, udp } => {
                self.sp.director.cfg.timeouts.set(tcp, tcpfin, udp);
                Done::Ret(0)
            }
            Command::Zero(key) => {
                self.sp.settle();
                let d = &mut self.sp.director;
                match d.zero_stats(key.as_ref()) {
                    Ok(()) => Done::Ret(0),
                    Err(_) => Self::kernel_err(out, "No such service"),
                }
            }
            Command::Clear => {
                let dests: Vec<DestId> =
                    self.sp.director.services.live_services().flat_map(|s| s.order.iter().copied()).collect();
                self.sp.director.clear();
                self.drop_flows(&dests);
                Done::Ret(0)
            }
            Command::AddService(rule) => {
                if self.sp.director.services.lookup_key(&rule.key).is_some() {
                    return Self::kernel_err(out, "Service already exists");
                }
                if let Some(e) = Self::check_sched(&rule) {
                    return Self::kernel_err(out, e);
                }
                match self.sp.director.add_service(&rule) {
                    Ok(_) => Done::Ret(0),
                    Err(DirectorError::Rule { error: RuleError::UnknownScheduler(_), .. }) => {
                        Self::kernel_err(out, "Scheduler or persistence engine not found")
                    }
                    Err(e) => Self::kernel_err(out, dir_err_line(&e)),
                }
            }
            Command::EditService(rule) => {
                if self.sp.director.services.lookup_key(&rule.key).is_none() {
                    return Self::kernel_err(out, "No such service");
                }
                if let Some(e) = Self::check_sched(&rule) {
                    return Self::kernel_err(out, e);
                }
                match self.sp.director.edit_service(&rule) {
                    Ok(()) => Done::Ret(0),
                    Err(DirectorError::Rule { error: RuleError::UnknownScheduler(_), .. }) => {
                        Self::kernel_err(out, "Scheduler or persistence engine not found")
                    }
                    Err(e) => Self::kernel_err(out, dir_err_line(&e)),
                }
            }
            Command::DeleteService(key) => {
                let Some(id) = self.sp.director.services.lookup_key(&key) else {
                    return Self::kernel_err(out, "No such service");
                };
                let dests = self.sp.director.services.service(id).order.clone();
                match self.sp.director.del_service(&key) {
                    Ok(()) => {
                        self.drop_flows(&dests);
                        Done::Ret(0)
                    }
                    Err(e) => Self::kernel_err(out, dir_err_line(&e)),
                }
            }
            Command::AddDest(key, dest) => {
                if self.sp.director.services.lookup_key(&key).is_none() {
                    return Self::kernel_err(out, "Service not defined");
                }
                match self.sp.director.add_dest(&key, &dest) {
                    Ok(_) => Done::Ret(0),
                    Err(e) => Self::dest_err(out, &e),
                }
            }
            Command::EditDest(key, dest) => {
                if self.sp.director.services.lookup_key(&key).is_none() {
                    return Self::kernel_err(out, "Service not defined");
                }
                match self.sp.director.edit_dest(&key, &dest) {
                    Ok(()) => Done::Ret(0),
                    Err(e) => Self::dest_err(out, &e),
                }
            }
            Command::DeleteDest(key, addr, port) => {
                let Some(id) = self.sp.director.services.lookup_key(&key) else {
                    return Self::kernel_err(out, "Service not defined");
                };
                let IpAddr::V4(a) = addr else {
                    return Self::kernel_err(out, "No such destination");
                };
                let d = &self.sp.director.services;
                let Some(dest) =
                    d.service(id).order.iter().copied().find(|&x| d.dest(x).addr == a && d.dest(x).port == port)
                else {
                    return Self::kernel_err(out, "No such destination");
                };
                match self.sp.director.del_dest(&key, a, port) {
                    Ok(()) => {
                        self.drop_flows(&[dest]);
                        Done::Ret(0)
                    }
                    Err(e) => Self::dest_err(out, &e),
                }
            }
        }
    }

    /// The kernel's ENOENT for an unknown scheduler or persistence engine.
    fn check_sched(rule: &ServiceRule) -> Option<&'static str> {
        let unknown_pe = rule.pe.as_ref().is_some_and(|p| !KNOWN_PES.contains(&p.as_str()));
        (!KNOWN_SCHEDULERS.contains(&rule.scheduler.as_str()) || unknown_pe)
            .then_some("Scheduler or persistence engine not found")
    }

    fn dest_err(out: &mut Output, e: &DirectorError) -> Done {
        let msg = match e {
            DirectorError::Rule { error, .. } => match error {
                RuleError::NoSuchService => "Service not defined".to_string(),
                RuleError::DestExists => "Destination already exists".to_string(),
                RuleError::NoSuchDest => "No such destination".to_string(),
                // ip_vs_add_dest/ip_vs_edit_dest: -ERANGE, which libipvs leaves to strerror().
                RuleError::Thresholds => "Numerical result out of range".to_string(),
                _ => dir_err_line(e),
            },
            other => dir_err_line(other),
        };
        Self::kernel_err(out, msg)
    }

    /// Removes the offloaded flows of deleted real servers.
    fn drop_flows(&mut self, dests: &[DestId]) {
        for &d in dests {
            self.sp.flows.drop_dest(&mut self.sp.dp, &mut self.sp.director, d);
        }
    }

    /// `list_conn` / `list_service` / `list_timeout` / `list_daemon` / `list_all`.
    fn list(&mut self, opts: &ListOptions, out: &mut Output) {
        self.sp.settle();
        let text = if opts.connections {
            let mut l = ConnList { next: 0, persistent: opts.persistent_conn };
            let mut text = ConnText::default();
            loop {
                let (rows, done) = self.conns_step(&mut l, None);
                text.push(&rows, l.persistent);
                if done {
                    break text.finish(l.persistent);
                }
            }
        } else if opts.service.is_some() {
            let (h, s) = listings(&self.sp.director);
            format_list(&h, &s, opts)
        } else if opts.timeout {
            let (t, f, u) = self.sp.director.cfg.timeouts.get();
            format_timeout(t, f, u)
        } else if opts.daemon {
            format_daemon(&self.sync.listing())
        } else {
            let (h, s) = listings(&self.sp.director);
            format_list(&h, &s, opts)
        };
        out.stdout.push_str(&text);
    }

    /// `restore_table()`: each line of `text` as one ipvsadm command.
    fn restore(&mut self, prog: &str, text: &str, out: &mut Output) -> Done {
        let mut r = Restore { prog: prog.to_string(), text: text.to_string(), pos: 0, result: 0, out: Output::default() };
        let o = loop {
            if let Some(o) = self.restore_step(&mut r, None) {
                break o;
            }
        };
        out.stdout.push_str(&o.stdout);
        out.stderr.push_str(&o.stderr);
        Done::Ret(o.exit)
    }

    /// The live rules as a service key list (for tests and status).
    pub fn service_keys(&self) -> Vec<ServiceKey> {
        self.sp.director.services.live_services().map(|s| s.rule.key).collect()
    }
}

/// The exception loop over a card whose network is simulated.
impl<D: Device + Wire> Control<D> {
    /// One frame from the wire at `ts`: the data plane forwards it, or hands
    /// it up; a new-connection exception passes the service's rate limit,
    /// then the golden model decides and the connection's flows are synced
    /// (`SlowPath::frame_gated`).
    pub fn frame(&mut self, ts: Time, frame: &[u8]) -> Result<FrameResult, DeviceError> {
        self.counters.frames += 1;
        let limiter = &mut self.limiter;
        let r = self.sp.frame_gated(ts, frame, |d, f| match limits::new_conn_service(d, f) {
            Some(svc) => limiter.admit(svc, ts),
            None => true,
        })?;
        if let Some(why) = r.dropped {
            self.counters.dropped_on_receive.count(why);
            return Ok(r);
        }
        if r.in_hardware {
            self.counters.in_hardware += 1;
        } else {
            self.counters.exceptions += 1;
        }
        if r.refused {
            self.counters.rate_limited += 1;
        }
        if !r.in_hardware && !r.refused {
            self.sync.after_frame(&self.sp, frame);
        }
        self.counters.transmitted += r.tx.len() as u64;
        self.counters.to_host += r.host.is_some() as u64;
        Ok(r)
    }

    /// [`host_tx`](Control::host_tx), returning the frame as it left the
    /// card's MAC.
    pub fn host_tx_observed(&mut self, frame: &[u8]) -> Result<Vec<u8>, DeviceError> {
        let f = self.sp.host_tx_observed(frame)?;
        self.counters.transmitted += 1;
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_formatted_in_slices_is_the_listing_formatted_whole() {
        use lvsnic_model::rules::Protocol;
        let row = |i: u32| ConnListing {
            proto: if i % 3 == 0 { Protocol::Udp } else { Protocol::Tcp },
            caddr: IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)),
            cport: 40000 + i as u16,
            vaddr: IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 100)),
            vport: 80,
            daddr: IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 10, 1)),
            dport: 8080,
            state: if i % 3 == 0 { "UDP".into() } else { "ESTABLISHED".into() },
            expires_secs: 60 * i,
            pe_name: None,
            pe_data: None,
        };
        let rows: Vec<ConnListing> = (0..10).map(row).collect();
        for persistent in [false, true] {
            let whole = format_connections(&rows, persistent);
            for cut in [&[][..], &[0, 3, 3, 9][..], &[1, 2, 3, 4, 5, 6, 7, 8, 9][..]] {
                let mut t = ConnText::default();
                let mut from = 0;
                for &c in cut.iter().chain([&10]) {
                    t.push(&rows[from..c], persistent);
                    from = c;
                }
                assert_eq!(t.finish(persistent), whole, "slices at {cut:?}");
            }
            assert_eq!(ConnText::default().finish(persistent), format_connections(&[], persistent));
        }
    }

    /// `status` reports what the frames did: the loop's counters, the
    /// director's, the rate limit's and the flow table's.
    #[test]
    fn status_counts_what_the_frames_did() {
        use crate::device::model::{ModelDevice, MODEL_PARAMS};
        use crate::device::rings::RingConfig;
        use lvsnic_fixtures::{director, tcp, Ip, DIRECTOR_MAC, GATEWAY_MAC, T0, VIP};
        use lvsnic_model::wire::{TCP_ACK, TCP_SYN};
        let d = director("-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 192.168.10.1:8080 -m -w 1\n", "");
        let dev = ModelDevice::model(MODEL_PARAMS, RingConfig::default()).unwrap();
        let sp = SlowPath::new(d, dev, MODEL_PARAMS).unwrap();
        let limits = Limits { new_conn_per_sec: Some(1), burst: Some(1) };
        let mut ctl = Control::new(sp, MODEL_PARAMS.vip_count, limits);
        let client = |n: u8| std::net::Ipv4Addr::new(198, 51, 100, n);
        let syn = |n: u8| tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(n), VIP), 40000, 80, TCP_SYN, 1, 0, b"");
        let ack = tcp(GATEWAY_MAC, DIRECTOR_MAC, Ip::new(client(1), VIP), 40000, 80, TCP_ACK, 2, 1, b"");
        let ms = lvsnic_model::time::MSEC;
        ctl.frame(T0, &syn(1)).unwrap(); // admitted: the bucket's one token
        ctl.frame(T0 + ms, &syn(2)).unwrap(); // refused by the rate limit
        ctl.frame(T0 + 2 * ms, &ack).unwrap();
        ctl.frame(T0 + 3 * ms, &[0u8; 5]).unwrap(); // a runt
        let s = ctl.status();
        assert_eq!(s.now_ns, T0 + 2 * ms, "the last frame the director saw (not the runt)");
        let l = s.exception_loop;
        assert_eq!((l.frames, l.rate_limited, l.dropped_on_receive.runt), (4, 1, 1));
        assert_eq!(l.in_hardware + l.exceptions, 3);
        assert_eq!(l.transmitted, 2, "the SYN and the ACK, NATed");
        assert_eq!(s.director.connections.created, 1);
        assert_eq!(s.director.total.inpkts, 2);
        assert_eq!(s.director.services.len(), 1);
        assert_eq!((s.limits.new_conn_per_sec, s.limits.burst, s.limits.limited), (Some(1), 1, 1));
        let b = s.limits.services["TCP 10.0.0.100:80"];
        assert_eq!((b.admitted, b.limited), (1, 1));
        assert_eq!(s.offload.connections, 1, "the connection's flows are on the card");
        assert!(s.sync.master.is_none() && s.sync.backup.is_none());
        // The JSON names `lvsnic status` prints.
        let j = serde_json::to_value(&s).unwrap();
        assert_eq!(j["director"]["total"]["inpkts"], 2);
        assert_eq!(j["exception_loop"]["dropped_on_receive"]["runt"], 1);
        assert_eq!(j["limits"]["services"]["TCP 10.0.0.100:80"]["limited"], 1);
        assert_eq!(j["offload"]["connections"], 1);
        assert_eq!(j["now_ns"], T0 + 2 * ms);
    }
}
