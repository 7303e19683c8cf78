//! What a director starts from, read the same way by the daemon,
//! `lvsnic replay` and `lvsnic conformance`: DIRECTOR.toml with its
//! `[limits]` ([`crate::limits::load_director`]) and a rules file in
//! `ipvsadm -S -n` format, whose `--set` lines override DIRECTOR.toml's
//! timeouts (the real `ipvsadm -R` applies them after the sysctls).

use crate::limits::{self, Limits};
use lvsnic_model::config::{ConfigError, DirectorConfig};
use lvsnic_model::rules::ipvsadm::parse_rules_full;
use lvsnic_model::rules::RuleSet;
use std::path::Path;

/// DIRECTOR.toml and the rules, ready to build a director from.
#[derive(Debug)]
pub struct Loaded {
    /// The director configuration, with the rules' `--set` timeouts applied.
    pub cfg: DirectorConfig,
    /// DIRECTOR.toml's `[limits]`.
    pub limits: Limits,
    /// The rules (none without a rules file).
    pub rules: RuleSet,
    /// The rules file's text (empty without one).
    pub rules_text: String,
}

/// Why [`load_director_and_rules`] failed. `Display` is one line naming the file.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// DIRECTOR.toml cannot be read or is not valid.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The rules file cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The rules file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The rules file is not valid.
    #[error("{path}: {msg}")]
    Rules {
        /// The rules file.
        path: String,
        /// What is wrong with it (with its line).
        msg: String,
    },
}

/// Reads DIRECTOR.toml at `director` and, if given, the rules file at `rules`.
pub fn load_director_and_rules(director: &Path, rules: Option<&Path>) -> Result<Loaded, LoadError> {
    let (mut cfg, limits) = limits::load_director(director)?;
    let Some(path) = rules else {
        return Ok(Loaded { cfg, limits, rules: RuleSet::default(), rules_text: String::new() });
    };
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io { path: p.clone(), source })?;
    let script = parse_rules_full(&text).map_err(|e| LoadError::Rules { path: p, msg: e.to_string() })?;
    if let Some(t) = script.timeouts {
        cfg.timeouts.set(t.tcp, t.tcpfin, t.udp);
    }
    Ok(Loaded { cfg, limits, rules: script.rules, rules_text: text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_set_timeouts_override_the_director_and_errors_name_the_file() {
        let dir = std::env::temp_dir().join(format!("lvsnic-setup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.join("director.toml");
        let toml = "[director]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\ngateway_mac = \"02:00:00:00:00:fe\"\n\
                    [limits]\nnew_conn_per_sec = 7\n";
        std::fs::write(&d, toml).unwrap();
        let r = dir.join("rules");
        std::fs::write(&r, "-A -t 10.0.0.100:80 -s rr\n--set 10 20 30\n").unwrap();
        let l = load_director_and_rules(&d, Some(&r)).unwrap();
        assert_eq!(l.cfg.timeouts.get(), (10, 20, 30));
        assert_eq!(l.limits.new_conn_per_sec, Some(7));
        assert_eq!(l.rules.services.len(), 1);
        assert!(l.rules_text.starts_with("-A -t"));
        let none = load_director_and_rules(&d, None).unwrap();
        assert!(none.rules.services.is_empty() && none.rules_text.is_empty());
        assert_ne!(none.cfg.timeouts.get(), (10, 20, 30), "DIRECTOR.toml's timeouts");
        std::fs::write(&r, "-A -t 10.0.0.100:80 -s rr\n-a -t 10.0.0.100:80 -r 1.2.3.4 -w x\n").unwrap();
        let e = load_director_and_rules(&d, Some(&r)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", r.display())) && e.contains("line 2"), "{e}");
        let e = load_director_and_rules(&d, Some(&dir.join("missing"))).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: ", dir.join("missing").display())), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
