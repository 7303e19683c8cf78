//! ipvsadm text formats, byte-exact to ipvsadm 1.31.
//!
//! * [`parse_command`]: one ipvsadm command line (popt syntax, ipvsadm's
//!   `parse_options`/`process_options` checks and messages) into a [`Command`].
//! * [`parse_rules`] / [`parse_rules_full`]: an `ipvsadm -S -n` / `ipvsadm -R`
//!   text, each line applied in order to a [`RuleSet`](crate::rules::RuleSet)
//!   with the kernel's errors ([`apply_command`]).
//! * Printers: [`format_save`] (`-S -n`), [`format_list`] (`-L -n` and
//!   `--stats`, `--rate`, `--thresholds`, `--persistent-conn`, `--tun-info`,
//!   `--exact`, `--nosort`, `-L -t VIP:port`), [`format_connections`]
//!   (`-L -n -c`), [`format_timeout`] (`--timeout`), [`format_daemon`]
//!   (`--daemon`), [`print_largenum`].
//!
//! Sources: ipvsadm.c, libipvs/libipvs.c and config_stream.c of ipvsadm
//! (GitHub mirror cezarsa/ipvsadm), popt's `poptGetNextOpt`, glibc's
//! `inet_aton`/`inet_pton`/`inet_ntop`/`strtol`/`qsort`, the kernel's
//! ip_vs_ctl.c. Differences from ipvsadm, all deliberate:
//! * no name lookups: host and service names are refused
//!   ([`CommandError::NotNumeric`]) and output is always numeric (`-n`);
//! * a rules file stops at its first error (ipvsadm goes on after kernel
//!   errors and popt errors, and aborts on `fail()` errors);
//! * lines starting with `#` are comments (ipvsadm's reader means to strip
//!   comments but never does: it would fail on such a line).

mod format;
mod libc;
mod parse;
mod restore;

pub use format::{
    format_connections, format_daemon, format_list, format_save, format_timeout, ipvs_cmp_dests,
    ipvs_cmp_services, ipvsadm_sorted, print_largenum, ConnListing, DaemonListing, DestListing, ListingHeader,
    RateView, ServiceListing, StatsView, DEFAULT_CONN_TAB_SIZE, IP_VS_VERSION_CODE,
};
pub use parse::{
    first_option_fails, parse_command, Command, CommandError, DaemonState, ListOptions, SyncDaemon, DEFAULT_SCHEDULER,
    MAX_TIMEOUT,
};
pub use restore::{
    apply_command, check_scheduler, find_nul, parse_rules, parse_rules_full, split_line, ApplyError, RestoreScript, RulesError,
    RulesErrorKind, Timeouts, KNOWN_PES, KNOWN_SCHEDULERS,
};
