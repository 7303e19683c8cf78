//! Man pages from the command-line definitions (`lvsnic manpages DIR`, run
//! by scripts/package-deb.sh): `lvsnic.8` and one `lvsnic-SUBCOMMAND.8`
//! per subcommand, rendered by clap_mangen from the same clap definitions
//! `--help` prints, so the pages cannot drift from the options. Section 8
//! (system administration), as ipvsadm(8) and keepalived(8).
//!
//! `lvsnic.8` also carries what clap does not know: the ipvsadm command
//! line (the usage text `lvsnic -h` prints, [`crate::invocation::usage`]),
//! the files and environment the daemon uses, its signals, and where to
//! read more.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The section the pages are in.
pub const SECTION: &str = "8";

/// Text as a roff line: backslashes doubled, a leading `.` or `'` escaped
/// (it would be read as a request).
fn roff_line(line: &str) -> String {
    let s = line.replace('\\', "\\e");
    if s.starts_with('.') || s.starts_with('\'') {
        format!("\\&{s}")
    } else {
        s
    }
}

/// The sections `lvsnic.8` adds after clap's.
fn extra_sections(prog: &str) -> String {
    let mut r = String::new();
    r.push_str(".SH \"IPVSADM COMMAND LINE\"\n");
    r.push_str(
        "Any argument list whose first argument starts with \\- (and no argument at all) is an ipvsadm(8) command line, \
         sent to the running daemon over its control socket; the reply is printed as ipvsadm prints it and its status is \
         the exit status. \\-h and \\-v are answered without a daemon.\n",
    );
    r.push_str(".PP\n.nf\n");
    for line in crate::invocation::usage(prog).lines() {
        r.push_str(&roff_line(line));
        r.push('\n');
    }
    r.push_str(".fi\n");
    r.push_str(".SH FILES\n");
    for (path, what) in [
        ("/etc/lvsnic/director.toml", "the director's configuration (\\-\\-director)"),
        ("/etc/lvsnic/rules", "rules loaded at start, in ipvsadm \\-S \\-n format (\\-\\-rules), as the package's unit passes them"),
        ("/etc/default/lvsnic", "LVSNIC_OPTS: the daemon's options for the systemd unit (backend, device, wire)"),
        ("/run/lvsnic/lvsnic.sock", "the control socket (mode 0600, or 0660 with \\-\\-socket\\-group); LVSNIC_SOCKET names another"),
        ("/var/lib/lvsnic", "the running configuration and the connection table, kept across restarts (\\-\\-state\\-dir)"),
    ] {
        r.push_str(&format!(".TP\n.I {path}\n{what}\n"));
    }
    r.push_str(".SH ENVIRONMENT\n");
    for (var, what) in [
        ("LVSNIC_SOCKET", "the control socket clients and the daemon use when \\-\\-socket is not given"),
        ("NOTIFY_SOCKET, WATCHDOG_USEC", "set by systemd for a Type=notify unit: the daemon reports READY, RELOADING and STOPPING and pings the watchdog from its forwarding loop"),
    ] {
        r.push_str(&format!(".TP\n.B {var}\n{what}\n"));
    }
    r.push_str(".SH SIGNALS\n");
    r.push_str(".TP\n.B SIGTERM, SIGINT, SIGQUIT\nstop: output captures are closed on a record boundary, the state is saved, the socket file removed\n");
    r.push_str(".TP\n.B SIGHUP\nreload: DIRECTOR.toml and the rules file are applied again as differences (as lvsnic reload)\n");
    r.push_str(".SH \"SEE ALSO\"\nipvsadm(8), keepalived(8), keepalived.conf(5), systemd.service(5)\n");
    r
}

/// Writes the pages of `cmd` (the `lvsnic` command) into `dir`: returns
/// their paths.
pub fn write(cmd: clap::Command, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut cmd = cmd.disable_help_subcommand(true);
    cmd.build();
    let mut out = Vec::new();
    let prog = cmd.get_name().to_string();
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let man = clap_mangen::Man::new(sub.clone()).section(SECTION);
        out.push(man.generate_to(dir)?);
    }
    let man = clap_mangen::Man::new(cmd).section(SECTION);
    let path = dir.join(man.get_filename());
    let mut f = std::fs::File::create(&path)?;
    man.render(&mut f)?;
    f.write_all(extra_sections(&prog).as_bytes())?;
    f.flush()?;
    out.push(path);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roff_lines_cannot_become_requests() {
        assert_eq!(roff_line(".SH x"), "\\&.SH x");
        assert_eq!(roff_line("'br"), "\\&'br");
        assert_eq!(roff_line("a\\b"), "a\\eb");
        assert_eq!(roff_line("  -A|E"), "  -A|E");
    }

    #[test]
    fn pages_for_the_command_and_each_visible_subcommand() {
        let cmd = clap::Command::new("lvsnic")
            .about("LVS director")
            .subcommand(clap::Command::new("daemon").about("Run the director").arg(clap::Arg::new("backend").long("backend")))
            .subcommand(clap::Command::new("hidden").hide(true));
        let dir = std::env::temp_dir().join(format!("lvsnic-man-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let paths = write(cmd, &dir).unwrap();
        let names: Vec<String> = paths.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["lvsnic-daemon.8", "lvsnic.8"]);
        let top = std::fs::read_to_string(dir.join("lvsnic.8")).unwrap();
        assert!(top.contains(".TH lvsnic 8"), "{top}");
        assert!(top.contains("lvsnic\\-daemon(8)"), "{top}");
        // The ipvsadm usage, every line of it, inside a no-fill block.
        for line in crate::invocation::usage("lvsnic").lines() {
            assert!(top.contains(&roff_line(line)), "missing {line:?}");
        }
        assert!(top.contains(".SH FILES") && top.contains("/run/lvsnic/lvsnic.sock"));
        let daemon = std::fs::read_to_string(dir.join("lvsnic-daemon.8")).unwrap();
        assert!(daemon.contains("\\-\\-backend"), "{daemon}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
