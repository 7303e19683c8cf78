//! `HTTP_GET` (keepalived's check/check_http.c): for every `url`, an
//! HTTP/1.0 `GET path` to the target (`Host:` the `virtualhost`, else the
//! target address), read to the end within `connect_timeout` per step; the
//! url passes when the status is one of its `status_code`s (200..=299 when
//! none is given) and, with a `digest`, the MD5 of the body matches. The
//! check succeeds when every url passes.

use super::config::{Target, UrlCheck};
use super::{md5, tcp, Outcome};
use std::io::{Read, Write};

/// Largest response read (a bigger body fails the check).
const MAX_RESPONSE: usize = 16 << 20;

/// One `HTTP_GET`.
pub fn check(t: &Target, urls: &[UrlCheck], virtualhost: Option<&str>) -> Outcome {
    for u in urls {
        if let Err(why) = fetch(t, u, virtualhost) {
            return Outcome::down(format!("GET {} from {}: {why}", u.path, t.addr));
        }
    }
    let paths: Vec<&str> = urls.iter().map(|u| u.path.as_str()).collect();
    Outcome::up(format!("GET {} from {}: ok", paths.join(","), t.addr))
}

fn fetch(t: &Target, u: &UrlCheck, virtualhost: Option<&str>) -> Result<(), String> {
    let mut s = tcp::connect(t).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(t.timeout)).map_err(|e| e.to_string())?;
    s.set_write_timeout(Some(t.timeout)).map_err(|e| e.to_string())?;
    let host = match virtualhost {
        Some(h) => h.to_string(),
        None if t.addr.is_ipv6() => format!("[{}]:{}", t.addr.ip(), t.addr.port()),
        None => t.addr.to_string(),
    };
    let req = format!("GET {} HTTP/1.0\r\nUser-Agent: KeepAliveClient\r\nHost: {host}\r\n\r\n", u.path);
    s.write_all(req.as_bytes()).map_err(|e| format!("sending the request: {e}"))?;
    let mut resp = Vec::new();
    s.take(MAX_RESPONSE as u64 + 1).read_to_end(&mut resp).map_err(|e| format!("reading the response: {e}"))?;
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
