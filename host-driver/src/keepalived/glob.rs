//! The file names an `include PATTERN` reads: glob(3) with `GLOB_BRACE`
//! (`{a,b}`), sorted, directories skipped, as keepalived's lib/parser.c
//! calls it.

use std::path::{Path, PathBuf};

fn expand_braces(p: &str) -> Vec<String> {
    let Some(open) = p.find('{') else { return vec![p.to_string()] };
    let Some(close_rel) = p[open..].find('}') else { return vec![p.to_string()] };
    let close = open + close_rel;
    let (pre, alts, post) = (&p[..open], &p[open + 1..close], &p[close + 1..]);
    alts.split(',').flat_map(|a| expand_braces(&format!("{pre}{a}{post}"))).collect()
}

/// fnmatch(3) of one path component: `*`, `?`, `[...]` (`!`/`^` negate).
fn fnmatch(pat: &[char], name: &[char]) -> bool {
    if pat.is_empty() {
        return name.is_empty();
    }
    match pat[0] {
        '*' => (0..=name.len()).any(|k| fnmatch(&pat[1..], &name[k..])),
        '?' => !name.is_empty() && fnmatch(&pat[1..], &name[1..]),
        '[' => {
            let Some(end) = pat.iter().skip(2).position(|&c| c == ']').map(|e| e + 2) else {
                return !name.is_empty() && name[0] == '[' && fnmatch(&pat[1..], &name[1..]);
            };
            if name.is_empty() {
                return false;
            }
            let mut set = &pat[1..end];
            let neg = matches!(set.first(), Some('!' | '^'));
            if neg {
                set = &set[1..];
            }
            let c = name[0];
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != neg && fnmatch(&pat[end + 1..], &name[1..])
        }
        c => !name.is_empty() && name[0] == c && fnmatch(&pat[1..], &name[1..]),
    }
}

/// Regular files matching `pattern`, sorted.
pub fn glob(pattern: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in expand_braces(pattern) {
        let abs = p.starts_with('/');
        let mut paths = vec![if abs { PathBuf::from("/") } else { PathBuf::new() }];
        let comps: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).collect();
        for comp in comps {
            let mut next = Vec::new();
            for base in &paths {
                if !comp.contains(['*', '?', '[']) {
                    next.push(base.join(comp));
                    continue;
                }
                let dir = if base.as_os_str().is_empty() { Path::new(".") } else { base.as_path() };
                let Ok(rd) = std::fs::read_dir(dir) else { continue };
                let pat: Vec<char> = comp.chars().collect();
                let mut names: Vec<String> =
                    rd.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect();
                names.sort();
                for n in names {
                    if n.starts_with('.') && !comp.starts_with('.') {
                        continue;
                    }
                    let nc: Vec<char> = n.chars().collect();
                    if fnmatch(&pat, &nc) {
                        next.push(base.join(&n));
                    }
                }
            }
            paths = next;
        }
        let mut files: Vec<PathBuf> = paths.into_iter().filter(|p| p.is_file()).collect();
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
        let m = |p: &str, n: &str| fnmatch(&p.chars().collect::<Vec<_>>(), &n.chars().collect::<Vec<_>>());
        assert!(m("*.conf", "a.conf"));
        assert!(!m("*.conf", "a.conf.bak"));
        assert!(m("vs[0-9].conf", "vs3.conf"));
        assert!(!m("vs[!0-9].conf", "vs3.conf"));
        assert!(m("?s.conf", "vs.conf"));
        assert_eq!(expand_braces("a/{x,y}.conf"), ["a/x.conf", "a/y.conf"]);
    }
}
