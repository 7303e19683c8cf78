//! `HTTP_GET` (keepalived's check/check_http.c): for every `url`, an
//! HTTP/1.0 `GET path` to the target (`Host:` the `virtualhost`, else the
//! target address), read to the end within `connect_timeout` per step; the
//! url passes when the status is one of its `status_code`s (200..=299 when
//! none is given) and, with a `digest`, the MD5 of the body matches. The
//! check succeeds when every url passes. `SSL_GET` ([`super::ssl`]) is
//! the same over TLS: [`check_with`] takes the stream to use.

use super::config::{Target, UrlCheck};
use super::{md5, tcp, Outcome};
use std::io::{Read, Write};

/// Largest response read (a bigger body fails the check).
const MAX_RESPONSE: usize = 16 << 20;

/// One `HTTP_GET`.
pub fn check(t: &Target, urls: &[UrlCheck], virtualhost: Option<&str>) -> Outcome {
    check_with(t, urls, virtualhost, |t| {
        let s = tcp::connect(t).map_err(|e| format!("connect: {e}"))?;
        timeouts(&s, t)?;
        Ok(s)
    })
}

/// Every url of `t` fetched over a stream from `open` (a TCP connection
/// for `HTTP_GET`, a TLS one for `SSL_GET`), one connection per url.
pub fn check_with<S: Read + Write>(
    t: &Target,
    urls: &[UrlCheck],
    virtualhost: Option<&str>,
    mut open: impl FnMut(&Target) -> Result<S, String>,
) -> Outcome {
    for u in urls {
        if let Err(why) = open(t).and_then(|mut s| fetch(&mut s, t, u, virtualhost)) {
            return Outcome::down(format!("GET {} from {}: {why}", u.path, t.addr));
        }
    }
    let paths: Vec<&str> = urls.iter().map(|u| u.path.as_str()).collect();
    Outcome::up(format!("GET {} from {}: ok", paths.join(","), t.addr))
}

/// `connect_timeout` for every read and write on `s`.
pub fn timeouts(s: &std::net::TcpStream, t: &Target) -> Result<(), String> {
    s.set_read_timeout(Some(t.timeout)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(t.timeout)).map_err(|e| e.to_string())
}

/// One url over `s`: the request, the whole response, its status and digest.
fn fetch<S: Read + Write>(s: &mut S, t: &Target, u: &UrlCheck, virtualhost: Option<&str>) -> Result<(), String> {
    let host = match virtualhost {
        Some(h) => h.to_string(),
        None if t.addr.is_ipv6() => format!("[{}]:{}", t.addr.ip(), t.addr.port()),
        None => t.addr.to_string(),
    };
    let req = format!("GET {} HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: {host}\r\n\r\n", u.path);
    s.write_all(req.as_bytes()).and_then(|()| s.flush()).map_err(|e| format!("sending the request: {e}"))?;
    let resp = read_response(s).map_err(|e| format!("reading the response: {e}"))?;
    if resp.len() > MAX_RESPONSE {
        return Err(format!("response larger than {MAX_RESPONSE} bytes"));
    }
    let status = status_code(&resp).ok_or("no HTTP status line")?;
    let ok = if u.status.is_empty() {
        (200..=299).contains(&status)
    } else {
        u.status.iter().any(|&(a, b)| (a..=b).contains(&status))
    };
    if !ok {
        return Err(format!("status {status}"));
    }
    if let Some(want) = &u.digest {
        let body = body(&resp);
        let got = md5::hex(body);
        if !got.eq_ignore_ascii_case(want) {
            return Err(format!("digest {got}, expected {want}"));
        }
    }
    Ok(())
}

/// Reads until the server closes (at most [`MAX_RESPONSE`] + 1 bytes). A
/// TLS connection closed without `close_notify` ends the response too, as
/// keepalived takes whatever was read then.
fn read_response<S: Read>(s: &mut S) -> std::io::Result<Vec<u8>> {
    let mut resp = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    while resp.len() <= MAX_RESPONSE {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => resp.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !resp.is_empty() => break,
            Err(e) => return Err(e),
        }
    }
    Ok(resp)
}

/// The status of `HTTP/x.y NNN ...`.
fn status_code(resp: &[u8]) -> Option<u16> {
    let line_end = resp.iter().position(|&b| b == b'\n').unwrap_or(resp.len());
    let line = std::str::from_utf8(&resp[..line_end]).ok()?;
    let mut w = line.split_whitespace();
    if !w.next()?.starts_with("HTTP/") {
        return None;
    }
    w.next()?.parse().ok()
}

/// What follows the header's blank line.
fn body(resp: &[u8]) -> &[u8] {
    if let Some(i) = resp.windows(4).position(|w| w == b"\r\n\r\n") {
        return &resp[i + 4..];
    }
    match resp.windows(2).position(|w| w == b"\n\n") {
        Some(i) => &resp[i + 2..],
        None => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_and_body() {
        let r = b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(status_code(r), Some(404));
        assert_eq!(body(r), b"abc");
        assert_eq!(status_code(b"SSH-2.0-x\r\n"), None);
    }
}
