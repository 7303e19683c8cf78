//! The text formats Prometheus scrapes: its own text exposition format
//! 0.0.4 and OpenMetrics 1.0 text (chosen by the scraper's `Accept`).
//!
//! A [`Writer`] takes whole metric families ([`Family`]: name, type,
//! help, then every sample), so that a family's samples are together and
//! each name is written once; label values and help texts are escaped as
//! both formats require (`\\`, `\"`, `\n`). A family with no samples is
//! left out. Counters are named with their `_total` suffix ([`Family::name`]);
//! in OpenMetrics the family's own name (in `# TYPE`, `# HELP`) is that
//! name without the suffix, and the text ends with `# EOF`.

use std::collections::BTreeSet;
use std::fmt::Write;

/// A metric type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (restarts at zero with the daemon).
    Counter,
    /// Goes up and down.
    Gauge,
}

impl Kind {
    /// The name in `# TYPE` lines.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// A metric family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Family {
    /// The samples' name (`lvsnic_…`; a counter's ends in `_total`).
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// One line of help.
    pub help: &'static str,
}

impl Family {
    /// The family's name in `# TYPE`/`# HELP` lines of `format`.
    pub fn family_name(&self, format: Format) -> &'static str {
        match (format, self.kind) {
            (Format::OpenMetrics, Kind::Counter) => self.name.strip_suffix("_total").unwrap_or(self.name),
            _ => self.name,
        }
    }
}

/// Which text format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics 1.0.0 text.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when the `Accept` header names
    /// `application/openmetrics-text` with a quality above zero (as
    /// Prometheus asks by default), else text format 0.0.4.
    pub fn from_accept(accept: Option<&str>) -> Format {
        let Some(a) = accept else { return Format::Text };
        for range in a.split(',') {
            let mut params = range.split(';').map(str::trim);
            let media = params.next().unwrap_or("");
            if !media.eq_ignore_ascii_case("application/openmetrics-text") {
                continue;
            }
            let q = params
                .filter_map(|p| p.split_once('='))
                .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
                .and_then(|(_, v)| v.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            if q > 0.0 {
                return Format::OpenMetrics;
            }
        }
        Format::Text
    }

    /// The `Content-Type` of a reply in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Text => "text/plain; version=0.0.4; charset=utf-8",
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// A sample's value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// An exact integer.
    Int(u64),
    /// A float (seconds and the like).
    Float(f64),
}

impl From<u64> for Value {
    fn from(v: u64) -> Value {
        Value::Int(v)
    }
}

impl From<usize> for Value {
    fn from(v: usize) -> Value {
        Value::Int(v as u64)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Value {
        Value::Int(v.into())
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Int(v.into())
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Float(v)
    }
}

/// A sample's labels, in order.
pub type Labels = Vec<(&'static str, String)>;

/// Builds an exposition, a whole family at a time.
pub struct Writer {
    out: String,
    format: Format,
    seen: BTreeSet<&'static str>,
}

impl Writer {
    /// An empty exposition in `format`.
    pub fn new(format: Format) -> Writer {
        Writer { out: String::new(), format, seen: BTreeSet::new() }
    }

    /// Writes family `f` with `samples`; nothing when there are none. A
    /// family already written is not written again (a name is one family).
    pub fn family<V: Into<Value>>(&mut self, f: &'static Family, samples: impl IntoIterator<Item = (Labels, V)>) {
        let mut samples = samples.into_iter().peekable();
        if samples.peek().is_none() || !self.seen.insert(f.name) {
            return;
        }
        let name = f.family_name(self.format);
        let _ = writeln!(self.out, "# HELP {name} {}", escape_help(f.help, self.format));
        let _ = writeln!(self.out, "# TYPE {name} {}", f.kind.name());
        for (labels, v) in samples {
            self.out.push_str(f.name);
            if !labels.is_empty() {
                self.out.push('{');
                for (i, (k, v)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let _ = write!(self.out, "{k}=\"{}\"", escape_label(v));
                }
                self.out.push('}');
            }
            self.out.push(' ');
            write_value(&mut self.out, v.into());
            self.out.push('\n');
        }
    }

    /// [`family`](Self::family) with one unlabelled sample.
    pub fn one<V: Into<Value>>(&mut self, f: &'static Family, v: V) {
        self.family(f, [(Labels::new(), v)]);
    }

    /// The exposition (with OpenMetrics' `# EOF`).
    pub fn finish(mut self) -> String {
        if self.format == Format::OpenMetrics {
            self.out.push_str("# EOF\n");
        }
        self.out
    }
}

fn write_value(out: &mut String, v: Value) {
    match v {
        Value::Int(n) => {
            let _ = write!(out, "{n}");
        }
        Value::Float(x) if x.is_nan() => out.push_str("NaN"),
        Value::Float(x) if x.is_infinite() => out.push_str(if x > 0.0 { "+Inf" } else { "-Inf" }),
        Value::Float(x) => {
            let _ = write!(out, "{x:?}");
        }
    }
}

/// A label value as both formats quote it: `\`, `"` and newline escaped.
pub fn escape_label(v: &str) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '"' => o.push_str("\\\""),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

/// A help text: `\` and newline escaped (and `"` in OpenMetrics).
fn escape_help(v: &str, format: Format) -> String {
    let mut o = String::with_capacity(v.len());
    for c in v.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '"' if format == Format::OpenMetrics => o.push_str("\\\""),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
pub(crate) mod parse {
    //! A small parser of both formats for the tests: what Prometheus
    //! would read back.
    use super::Format;
    use std::collections::BTreeMap;

    /// A parsed family.
    #[derive(Debug, Default, Clone)]
    pub struct Parsed {
        pub kind: String,
        pub help: String,
        /// (sample name, labels) → value.
        pub samples: Vec<(String, BTreeMap<String, String>, f64)>,
    }

    fn unescape(s: &str) -> Result<String, String> {
        let mut o = String::new();
        let mut it = s.chars();
        while let Some(c) = it.next() {
            if c == '\\' {
                match it.next() {
                    Some('\\') => o.push('\\'),
                    Some('"') => o.push('"'),
                    Some('n') => o.push('\n'),
                    x => return Err(format!("bad escape \\{x:?} in {s:?}")),
                }
            } else {
                o.push(c);
            }
        }
        Ok(o)
    }

    fn valid_name(n: &str) -> bool {
        let mut c = n.chars();
        c.next().is_some_and(|f| f.is_ascii_alphabetic() || f == '_' || f == ':')
            && c.all(|x| x.is_ascii_alphanumeric() || x == '_' || x == ':')
    }

    /// Parses `text`: families by family name, in order. Errors on
    /// anything Prometheus would refuse: a sample before its `# TYPE`, a
    /// family twice, a sample name that is not the family's, a bad escape,
    /// a missing `# EOF` in OpenMetrics.
    pub fn parse(text: &str, format: Format) -> Result<Vec<(String, Parsed)>, String> {
        let mut fams: Vec<(String, Parsed)> = Vec::new();
        let mut eof = false;
        for line in text.lines() {
            if eof {
                return Err(format!("line after # EOF: {line:?}"));
            }
            if line == "# EOF" {
                eof = true;
                continue;
            }
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, help) = rest.split_once(' ').ok_or("HELP without text")?;
                if fams.iter().any(|(n, _)| n == name) {
                    return Err(format!("family {name} twice"));
                }
                fams.push((name.to_string(), Parsed { help: unescape(help)?, ..Default::default() }));
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').ok_or("TYPE without type")?;
                let last = fams.last_mut().filter(|(n, p)| n == name && p.kind.is_empty()).ok_or(format!("TYPE {name} not after its HELP"))?;
                last.1.kind = kind.to_string();
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                return Err(format!("unexpected line {line:?}"));
            }
            let (name_labels, value) = line.rsplit_once(' ').ok_or(format!("no value: {line:?}"))?;
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().map_err(|_| format!("bad value in {line:?}"))?,
            };
            let (name, labels) = match name_labels.split_once('{') {
                None => (name_labels.to_string(), BTreeMap::new()),
                Some((n, rest)) => {
                    let body = rest.strip_suffix('}').ok_or(format!("labels not closed: {line:?}"))?;
                    let mut labels = BTreeMap::new();
                    let mut s = body;
                    while !s.is_empty() {
                        let (k, r) = s.split_once("=\"").ok_or(format!("bad label in {line:?}"))?;
                        // The value ends at the first unescaped quote.
                        let mut end = None;
                        let mut esc = false;
                        for (i, c) in r.char_indices() {
                            match (esc, c) {
                                (true, _) => esc = false,
                                (false, '\\') => esc = true,
                                (false, '"') => {
                                    end = Some(i);
                                    break;
                                }
                                _ => {}
                            }
                        }
                        let end = end.ok_or(format!("label value not closed: {line:?}"))?;
                        if !valid_name(k) || labels.insert(k.to_string(), unescape(&r[..end])?).is_some() {
                            return Err(format!("bad or repeated label {k:?}: {line:?}"));
                        }
                        s = &r[end + 1..];
                        s = s.strip_prefix(',').unwrap_or(s);
                    }
                    (n.to_string(), labels)
                }
            };
            let (fam, p) = fams.last_mut().ok_or(format!("sample before any family: {line:?}"))?;
            let want = match (format, p.kind.as_str()) {
                (Format::OpenMetrics, "counter") => format!("{fam}_total"),
                _ => fam.clone(),
            };
            if name != want || !valid_name(&name) {
                return Err(format!("sample {name} in family {fam}"));
            }
            if p.samples.iter().any(|(n, l, _)| *n == name && *l == labels) {
                return Err(format!("sample repeated: {line:?}"));
            }
            p.samples.push((name, labels, value));
        }
        if format == Format::OpenMetrics && !eof {
            return Err("no # EOF".into());
        }
        Ok(fams)
    }
}

#[cfg(test)]
mod tests {
    use super::parse::parse;
    use super::*;

    const C: Family = Family { name: "lvsnic_test_things_total", kind: Kind::Counter, help: "Things \\ counted\nhere." };
    const G: Family = Family { name: "lvsnic_test_level", kind: Kind::Gauge, help: "A level." };

    #[test]
    fn label_values_are_escaped_and_read_back_unchanged() {
        let hostile = "a\"b\\c\nd}{,=\" x=\"y";
        for format in [Format::Text, Format::OpenMetrics] {
            let mut w = Writer::new(format);
            w.family(&G, [(vec![("vip", hostile.to_string()), ("port", "80".into())], 3u64)]);
            let text = w.finish();
            assert!(text.contains(r#"vip="a\"b\\c\nd}{,=\" x=\"y""#), "{text}");
            let f = parse(&text, format).unwrap();
            assert_eq!(f[0].1.samples[0].1["vip"], hostile);
            assert_eq!(f[0].1.samples[0].1["port"], "80");
            assert_eq!(f[0].1.samples[0].2, 3.0);
        }
    }

    #[test]
    fn families_have_help_and_type_once_and_openmetrics_counters_drop_total() {
        let mut w = Writer::new(Format::Text);
        w.family(&C, [(vec![("r", "a".into())], 1u64), (vec![("r", "b".into())], 2u64)]);
        w.one(&G, 0.5);
        w.one(&C, 9u64); // the same name again: not written
        w.family::<u64>(&G, []); // no samples: nothing
        let text = w.finish();
        assert_eq!(
            text,
            "# HELP lvsnic_test_things_total Things \\\\ counted\\nhere.\n# TYPE lvsnic_test_things_total counter\n\
             lvsnic_test_things_total{r=\"a\"} 1\nlvsnic_test_things_total{r=\"b\"} 2\n\
             # HELP lvsnic_test_level A level.\n# TYPE lvsnic_test_level gauge\nlvsnic_test_level 0.5\n"
        );
        let f = parse(&text, Format::Text).unwrap();
        assert_eq!(f.iter().map(|(n, p)| (n.as_str(), p.kind.as_str())).collect::<Vec<_>>(), [
            ("lvsnic_test_things_total", "counter"),
            ("lvsnic_test_level", "gauge")
        ]);
        assert_eq!(f[0].1.help, "Things \\ counted\nhere.");

        let mut w = Writer::new(Format::OpenMetrics);
        w.one(&C, 7u64);
        let text = w.finish();
        assert_eq!(
            text,
            "# HELP lvsnic_test_things Things \\\\ counted\\nhere.\n# TYPE lvsnic_test_things counter\nlvsnic_test_things_total 7\n# EOF\n"
        );
        assert_eq!(parse(&text, Format::OpenMetrics).unwrap()[0].1.samples[0].0, "lvsnic_test_things_total");
        // The parser is strict: a family twice, or a sample of another name, is refused.
        assert!(parse("# HELP a x\n# TYPE a gauge\na 1\n# HELP a x\n# TYPE a gauge\na 2\n", Format::Text).is_err());
        assert!(parse("# HELP a x\n# TYPE a gauge\nb 1\n", Format::Text).is_err());
        assert!(parse("# HELP a x\n# TYPE a counter\na_total 1\n", Format::OpenMetrics).is_err(), "no # EOF");
    }

    #[test]
    fn values_print_exactly() {
        let mut s = String::new();
        for v in [Value::Int(u64::MAX), Value::Float(0.25), Value::Float(f64::NAN), Value::Float(f64::INFINITY), Value::Float(3.0)] {
            write_value(&mut s, v);
            s.push(' ');
        }
        assert_eq!(s, "18446744073709551615 0.25 NaN +Inf 3.0 ");
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        let prom = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Format::from_accept(Some(prom)), Format::OpenMetrics);
        assert_eq!(Format::from_accept(Some("text/plain;version=0.0.4;q=1,*/*;q=0.1")), Format::Text);
        assert_eq!(Format::from_accept(Some("Application/OpenMetrics-Text; q=0")), Format::Text);
        assert_eq!(Format::from_accept(Some("*/*")), Format::Text);
        assert_eq!(Format::from_accept(None), Format::Text);
    }
}
