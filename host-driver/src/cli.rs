//! `lvsnic` as `ipvsadm`: any argument list whose first argument starts
//! with `-` (and no arguments at all) is an ipvsadm command line, sent to
//! the daemon; its reply is printed as ipvsadm prints it and its status is
//! the exit status.
//!
//! ```text
//! lvsnic -A -t 10.0.0.1:80 -s rr
//! lvsnic -a -t 10.0.0.1:80 -r 192.168.10.1:80 -m -w 2
//! lvsnic -L -n --stats
//! lvsnic -S -n > rules; lvsnic -C; lvsnic -R < rules
//! lvsnic --set 900 120 300
//! lvsnic                       # as `ipvsadm`: lists
//! ```
//!
//! The socket is `/run/lvsnic/lvsnic.sock` unless `LVSNIC_SOCKET` names another
//! (ipvsadm's syntax leaves no room for a `--socket` option). `-h` and `-v`
//! are answered locally, so they work without a daemon. When the daemon
//! cannot be reached the client prints why on stderr and exits 2, as
//! ipvsadm does when it cannot initialise IPVS. A request larger than the
//! daemon reads (a `-R` of more than 64 MiB) is refused before it is sent:
//! `request too large (N bytes, limit M)`, exit 2.

pub use crate::daemon::proto::{socket_path, DEFAULT_SOCKET};
use crate::daemon::proto::{self, Reply, Request};
use crate::invocation::{usage, version};
use std::io::{Read, Write};

/// Whether an argument list is an ipvsadm command line (rather than an
/// lvsnic subcommand).
pub fn is_ipvsadm_mode(args: &[String]) -> bool {
    args.is_empty() || args[0].starts_with('-')
}

/// Whether ipvsadm's first option is `-h`/`--help` or `-v`/`--version`
/// (answered without the daemon).
fn local_answer(prog: &str, args: &[String]) -> Option<String> {
    let first = args.first()?.as_str();
    match first {
        "-h" | "--help" => Some(usage(prog)),
        "-v" | "--version" => Some(version(prog)),
        _ => None,
    }
}

/// Whether the command is `-R`/`--restore` (which reads standard input).
fn reads_stdin(args: &[String]) -> bool {
    matches!(args.first().map(String::as_str), Some("-R" | "--restore"))
        || args.first().is_some_and(|a| a.starts_with('-') && !a.starts_with("--") && a[1..].starts_with('R'))
}

/// Runs the ipvsadm-mode client: returns the exit status.
pub fn run_ipvsadm(prog: &str, args: &[String]) -> i32 {
    if let Some(text) = local_answer(prog, args) {
        print!("{text}");
        return 0;
    }
    let stdin = if reads_stdin(args) {
        let mut s = String::new();
        if let Err(e) = std::io::stdin().read_to_string(&mut s) {
            eprintln!("{prog}: reading standard input: {e}");
            return 2;
        }
        Some(s)
    } else {
        None
    };
    let path = socket_path(None);
    let req = Request::Ipvsadm { prog: Some(prog.to_string()), argv: args.to_vec(), stdin };
    match proto::call(&path, &req) {
        Ok(r) => emit(&r),
        Err(e) if e.permission_denied() => {
            eprintln!("lvsnic: {}", proto::permission_text(&path));
            2
        }
        Err(e) if !e.unreachable() => {
            eprintln!("{prog}: {e}");
            2
        }
        Err(e) => {
            eprintln!("Can't reach the lvsnic daemon: {e}\nIs `lvsnic daemon` running (socket {}; set LVSNIC_SOCKET to use another)?", path.display());
            2
        }
    }
}

/// Prints a reply as the command would have, returns its status.
pub fn emit(r: &Reply) -> i32 {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(r.stdout.as_bytes());
    let _ = o.flush();
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(r.stderr.as_bytes());
    r.exit
}
