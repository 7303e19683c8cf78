//! The file names an `include PATTERN` reads: glob(3) with `GLOB_BRACE`
//! (`{a,b}`), sorted, directories skipped, as keepalived's lib/parser.c
//! calls it. The brace alternatives are expanded here (the `glob` crate
//! has none); each is matched by the `glob` crate, and glob(3)'s rule
//! that a leading `.` is matched only by a literal one is applied to the
//! file name.

use std::path::PathBuf;

fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_string()] };
    let Some(close_rel) = p[open..].find('}') else { return vec![p.to_string()] };
    let close = open + close_rel;
    let (pre, alts, post) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    alts.split(',').flat_map(|a| expand_braces(&format!("{pre}{a}{post}"))).collect()
}

/// glob(3)'s options as keepalived uses them: case-sensitive, `*` not
/// crossing `/` (the leading dot: [`hidden_ok`]).
const OPTIONS: glob::MatchOptions = glob::MatchOptions { case_sensitive: true, require_literal_separator: true, require_literal_leading_dot: false };

/// A file name starting with `.` is matched only by a pattern whose last
/// component starts with a literal `.`.
fn hidden_ok(pattern: &str, f: &std::path::Path) -> bool {
    let hidden = f.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
    !hidden || pattern.rsplit('/').next().is_some_and(|c| c.starts_with('.'))
}

/// Regular files matching `pattern`, sorted (per brace alternative, in
/// the alternatives' order, as GLOB_BRACE does). A pattern that is not
/// valid glob syntax matches the file of that name, if any (glob(3)
/// treats an unmatched `[` as a literal).
pub fn glob(pattern: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in expand_braces(pattern) {
        let mut files: Vec<PathBuf> = match glob::glob_with(&p, OPTIONS) {
            Ok(paths) => paths.filter_map(Result::ok).filter(|f| f.is_file() && hidden_ok(&p, f)).collect(),
            Err(_) => Some(PathBuf::from(&p)).filter(|f| f.is_file()).into_iter().collect(),
        };
        files.sort();
        out.extend(files);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_matching() {
        let d = std::env::temp_dir().join(format!("lvsnic-glob-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("sub.conf")).unwrap();
        for f in ["a.conf", "a.conf.bak", "vs3.conf", "vsx.conf", ".hidden.conf", "x.conf", "y.conf"] {
            std::fs::write(d.join(f), "").unwrap();
        }
        let names = |pat: &str| -> Vec<String> {
            glob(&format!("{}/{pat}", d.display())).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect()
        };
        // Directories skipped, dot files only for a literal dot, sorted.
        assert_eq!(names("*.conf"), ["a.conf", "vs3.conf", "vsx.conf", "x.conf", "y.conf"]);
        assert_eq!(names(".*.conf"), [".hidden.conf"]);
        assert_eq!(names("vs[0-9].conf"), ["vs3.conf"]);
        assert_eq!(names("vs[!0-9].conf"), ["vsx.conf"]);
        assert_eq!(names("?s3.conf"), ["vs3.conf"]);
        // Braces: each alternative in turn.
        assert_eq!(names("{y,x}.conf"), ["y.conf", "x.conf"]);
        assert_eq!(expand_braces("a/{x,y}.conf"), ["a/x.conf", "a/y.conf"]);
        assert!(names("nothing*").is_empty());
        let _ = std::fs::remove_dir_all(&d);
    }
}
