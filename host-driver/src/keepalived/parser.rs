//! Reading a configuration as keepalived's lib/parser.c does: comments,
//! quoted words, braces as words of their own, `include` (files → logical
//! lines), then the block tree, and the value readers the keywords use.

use super::glob::glob;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where a diagnostic points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loc {
    /// The file, as it was opened.
    pub file: PathBuf,
    /// 1-based line number; 0 for the file as a whole.
    pub line: usize,
}

impl fmt::Display for Loc {
    /// `FILE:LINE`, or `FILE` for the file as a whole (line 0).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}", self.file.display()),
            n => write!(f, "{}:{n}", self.file.display()),
        }
    }
}

/// The longest line read: a longer one (a binary file, a file of NULs
/// included by mistake) is an error and the rest of its file is not read,
/// so that reading never needs more memory than this.
pub const MAX_LINE: usize = 64 * 1024;

/// How much of an offending text a diagnostic quotes.
pub const QUOTE_CHARS: usize = 60;

/// `text` as a diagnostic quotes it: control and other non-printable
/// characters escaped (`\0`, `\u{7f}`), at most [`QUOTE_CHARS`]
/// characters, then `…` and the text's whole length.
pub fn excerpt(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars().take(QUOTE_CHARS) {
        if c.is_control() || c == '\u{fffd}' {
            match c {
                '\0' => out.push_str("\\0"),
                c => out.extend(c.escape_default()),
            }
        } else {
            out.push(c);
        }
    }
    if text.chars().nth(QUOTE_CHARS).is_some() {
        out.push_str(&format!("… ({} bytes)", text.len()));
    }
    out
}

/// A diagnostic's message as printed: each `'quoted'` text through
/// [`excerpt`], and anything else non-printable escaped, so that one line
/// stays one short line whatever the configuration held.
fn clip(msg: String) -> String {
    if msg.len() <= QUOTE_CHARS && !msg.chars().any(char::is_control) {
        return msg;
    }
    let mut out = String::new();
    let mut rest = msg.as_str();
    while let Some(open) = rest.find('\'') {
        out.push_str(&excerpt_long(&rest[..open]));
        let after = &rest[open + 1..];
        let Some(close) = after.find('\'') else {
            // An apostrophe, not a quote.
            out.push('\'');
            rest = after;
            break;
        };
        out.push('\'');
        out.push_str(&excerpt(&after[..close]));
        out.push('\'');
        rest = &after[close + 1..];
    }
    out.push_str(&excerpt_long(rest));
    out
}

/// Unquoted parts of a message: escaped, and cut at 4 × [`QUOTE_CHARS`]
/// characters (our own words are shorter; a path or name may not be).
fn excerpt_long(text: &str) -> String {
    let cut: String = text.chars().take(4 * QUOTE_CHARS).collect();
    let mut out = String::new();
    for c in cut.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    if cut.len() < text.len() {
        out.push_str(&format!("… ({} bytes)", text.len()));
    }
    out
}

impl Diag {
    /// A diagnostic whose message quotes configuration text: see [`clip`].
    pub(super) fn new(loc: Loc, msg: String) -> Diag {
        Diag { loc, msg: clip(msg) }
    }
}

/// A warning or an error, one line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diag {
    /// Where.
    pub loc: Loc,
    /// What, one line.
    pub msg: String,
}

/// Reads `path` (and what it includes) into the block tree, with the
/// diagnostics seen so far.
pub(super) fn read(path: &Path) -> (Vec<Node>, Ctx) {
    let mut rd = Reader { lines: Vec::new(), errors: Vec::new(), warnings: Vec::new() };
    rd.read_file(path, None, 0);
    let mut ctx = Ctx { errors: rd.errors, warnings: rd.warnings };
    let nodes = tree(&rd.lines, &mut ctx.errors);
    (nodes, ctx)
}

#[derive(Clone, Debug)]
struct Line {
    words: Vec<String>,
    loc: Loc,
}

struct Reader {
    lines: Vec<Line>,
    errors: Vec<Diag>,
    warnings: Vec<Diag>,
}

/// Removes a comment (`#` or `!` outside double quotes).
fn decomment(s: &str) -> &str {
    let mut quote = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quote = !quote,
            '#' | '!' if !quote => return &s[..i],
            _ => {}
        }
    }
    s
}

/// Splits a decommented line into words; braces are words of their own.
fn words(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unterminated quote".into()),
                    }
                }
            }
            '{' | '}' => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
                out.push(c.to_string());
            }
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

impl Reader {
    fn read_file(&mut self, path: &Path, from: Option<&Loc>, depth: usize) {
        let err_loc = from.cloned().unwrap_or(Loc { file: path.to_path_buf(), line: 0 });
        if depth > 32 {
            self.errors.push(Diag::new(err_loc, format!("include nesting too deep at {}", path.display())));
            return;
        }
        // The top-level file is named by its location already.
        let what = if from.is_some() { format!("cannot read {}", path.display()) } else { "cannot read".to_string() };
        let mut file = match std::fs::File::open(path) {
            Ok(f) => std::io::BufReader::new(f),
            Err(e) => {
                self.errors.push(Diag { loc: err_loc, msg: format!("{what}: {e}") });
                return;
            }
        };
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let mut buf = Vec::new();
        for i in 0.. {
            let loc = Loc { file: path.to_path_buf(), line: i + 1 };
            buf.clear();
            // One line, at most MAX_LINE bytes of it (and its newline).
            match std::io::BufRead::read_until(&mut std::io::Read::take(&mut file, MAX_LINE as u64 + 1), b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    self.errors.push(Diag { loc, msg: format!("{what}: {e}") });
                    return;
                }
            }
            if buf.last() == Some(&b'\n') {
                buf.pop();
                if buf.last() == Some(&b'\r') {
                    buf.pop();
                }
            } else if buf.len() > MAX_LINE {
                let head = String::from_utf8_lossy(&buf[..QUOTE_CHARS.min(buf.len())]).into_owned();
                let msg = format!(
                    "line longer than {MAX_LINE} bytes, starting '{}…': not a keepalived configuration (the rest of the file is not read)",
                    excerpt(&head)
                );
                self.errors.push(Diag { loc, msg });
                return;
            }
            let raw = match std::str::from_utf8(&buf) {
                Ok(t) => t,
                Err(_) => {
                    let text = String::from_utf8_lossy(&buf).into_owned();
                    let msg = format!(
                        "line is not UTF-8 text: '{}': not a keepalived configuration (the rest of the file is not read)",
                        excerpt(&text)
                    );
                    self.errors.push(Diag { loc, msg });
                    return;
                }
            };
            let line = decomment(raw);
            // `include` is recognised before braces split the line (a glob may hold `{a,b}`).
            let ws: Vec<&str> = line.split_whitespace().collect();
            if ws.first() == Some(&"include") {
                if ws.len() != 2 {
                    self.errors.push(Diag { loc, msg: "include needs exactly one file name or pattern".into() });
                    continue;
                }
                let name = ws[1].trim_matches('"');
                let pat = if Path::new(name).is_absolute() { PathBuf::from(name) } else { dir.join(name) };
                let files = glob(&pat.to_string_lossy());
                if files.is_empty() {
                    self.warnings.push(Diag::new(loc.clone(), format!("no config files matched '{name}'")));
                }
                for f in files {
                    self.read_file(&f, Some(&loc), depth + 1);
                }
                continue;
            }
            let w = match words(line) {
                Ok(w) => w,
                Err(e) => {
                    self.errors.push(Diag { loc, msg: e });
                    continue;
                }
            };
            if w.is_empty() {
                continue;
            }
            // Braces split the line: `a b { c }` is `a b`, `{`, `c`, `}`.
            let mut cur: Vec<String> = Vec::new();
            for x in w {
                if x == "{" || x == "}" {
                    if !cur.is_empty() {
                        self.lines.push(Line { words: std::mem::take(&mut cur), loc: loc.clone() });
                    }
                    self.lines.push(Line { words: vec![x], loc: loc.clone() });
                } else {
                    cur.push(x);
                }
            }
            if !cur.is_empty() {
                self.lines.push(Line { words: cur, loc: loc.clone() });
            }
        }
    }
}

/// A keyword line and, when a `{ ... }` follows it, the block's lines.
#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) words: Vec<String>,
    pub(super) loc: Loc,
    pub(super) children: Option<Vec<Node>>,
}

impl Node {
    pub(super) fn kw(&self) -> &str {
        &self.words[0]
    }
    pub(super) fn arg(&self, i: usize) -> Option<&str> {
        self.words.get(i).map(String::as_str)
    }
}

/// Builds the block tree; unbalanced braces are errors.
fn tree(lines: &[Line], errors: &mut Vec<Diag>) -> Vec<Node> {
    fn block(lines: &[Line], i: &mut usize, open: Option<&Loc>, errors: &mut Vec<Diag>) -> Vec<Node> {
        let mut out: Vec<Node> = Vec::new();
        while *i < lines.len() {
            let l = &lines[*i];
            *i += 1;
            match l.words[0].as_str() {
                "}" => {
                    if open.is_some() {
                        return out;
                    }
                    errors.push(Diag { loc: l.loc.clone(), msg: "extra '}' found".into() });
                }
                "{" => {
                    // A block for the previous keyword (braces on a line of their own).
                    match out.last_mut() {
                        Some(prev) if prev.children.is_none() => {
                            let b = block(lines, i, Some(&l.loc), errors);
                            prev.children = Some(b);
                        }
                        _ => {
                            errors.push(Diag { loc: l.loc.clone(), msg: "unexpected '{'".into() });
                            let _ = block(lines, i, Some(&l.loc), errors);
                        }
                    }
                }
                _ => out.push(Node { words: l.words.clone(), loc: l.loc.clone(), children: None }),
            }
        }
        if let Some(o) = open {
            errors.push(Diag { loc: o.clone(), msg: "missing '}' for the block opened here".into() });
        }
        out
    }
    let mut i = 0;
    block(lines, &mut i, None, errors)
}

/// Diagnostics collected while reading and interpreting, and the value
/// readers every keyword uses.
pub(super) struct Ctx {
    pub(super) errors: Vec<Diag>,
    pub(super) warnings: Vec<Diag>,
}

impl Ctx {
    pub(super) fn err(&mut self, loc: &Loc, msg: impl Into<String>) {
        self.errors.push(Diag::new(loc.clone(), msg.into()));
    }
    pub(super) fn warn(&mut self, loc: &Loc, msg: impl Into<String>) {
        self.warnings.push(Diag::new(loc.clone(), msg.into()));
    }
    /// The value at word `i`, or an error.
    pub(super) fn val<'a>(&mut self, n: &'a Node, i: usize) -> Option<&'a str> {
        let v = n.arg(i);
        if v.is_none() {
            self.err(&n.loc, format!("{}: missing value", n.kw()));
        }
        v
    }
    pub(super) fn num(&mut self, n: &Node, i: usize, min: u64, max: u64) -> Option<u64> {
        let v = self.val(n, i)?;
        match v.parse::<u64>() {
            Ok(x) if (min..=max).contains(&x) => Some(x),
            _ => {
                self.err(&n.loc, format!("{}: invalid value '{v}' (expected {min}..{max})", n.kw()));
                None
            }
        }
    }
    pub(super) fn bool_opt(&mut self, n: &Node) -> bool {
        match n.arg(1) {
            None => true,
            Some("true" | "on" | "yes") => true,
            Some("false" | "off" | "no") => false,
            Some(v) => {
                self.err(&n.loc, format!("{}: invalid value '{v}' (expected true/false, on/off, yes/no)", n.kw()));
                false
            }
        }
    }
    pub(super) fn no_block(&mut self, n: &Node) {
        if n.children.is_some() {
            self.warn(&n.loc, format!("{} takes no block: block ignored", n.kw()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexing() {
        assert_eq!(decomment("a b # c"), "a b ");
        assert_eq!(decomment("a \"x # y\" ! c"), "a \"x # y\" ");
        assert_eq!(
            words("real_server 1.2.3.4 80{weight 3}").unwrap(),
            ["real_server", "1.2.3.4", "80", "{", "weight", "3", "}"]
        );
        assert_eq!(words("path \"/a b\"").unwrap(), ["path", "/a b"]);
        assert!(words("x \"open").is_err());
    }

    #[test]
    fn diagnostics_quote_a_short_escaped_prefix() {
        assert_eq!(excerpt("abc"), "abc");
        assert_eq!(excerpt("a\0b\x7f\n"), "a\\0b\\u{7f}\\n");
        let long = "x".repeat(1000);
        assert_eq!(excerpt(&long), format!("{}… (1000 bytes)", "x".repeat(QUOTE_CHARS)));
        let d = Diag::new(Loc { file: "k.conf".into(), line: 3 }, format!("unknown keyword '{}' in real_server 10.1.0.1 80", "\0".repeat(5000)));
        assert_eq!(d.msg, format!("unknown keyword '{}… (5000 bytes)' in real_server 10.1.0.1 80", "\\0".repeat(QUOTE_CHARS)));
        // An apostrophe is not a quote; short messages are kept as they are.
        let m = "virtual_server 10.0.0.1 80: no protocol, using UDP (keepalived's default)";
        assert_eq!(Diag::new(Loc { file: "k".into(), line: 1 }, m.into()).msg, m);
        assert_eq!(Loc { file: "k.conf".into(), line: 0 }.to_string(), "k.conf");
    }
}
