//! `SSL_GET` (keepalived's check/check_ssl.c with check_http.c): `HTTP_GET`
//! over TLS. The TCP connection opens within `connect_timeout`, the TLS
//! handshake and every read and write after it have `connect_timeout`
//! each; then the request and the response are [`super::http`]'s.
//!
//! As keepalived 2.2.7 (whose OpenSSL context keeps `SSL_VERIFY_NONE`),
//! any server certificate is accepted: expired, self-signed, for another
//! name. The handshake signatures are still checked against it (the
//! server must hold the certificate's key). With `enable_sni` the
//! `virtualhost` is sent as the server name (none without a
//! `virtualhost`, or when it is an IP address); the top-level `SSL`
//! block's `certificate` and `key` are offered when the server asks for a
//! client certificate. TLS 1.2 and 1.3 are spoken (rustls, ring).

use super::config::{ClientCert, Target, UrlCheck};
use super::{http, tcp, Outcome};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{ring, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, SignatureScheme, StreamOwned};
use std::net::TcpStream;
use std::sync::Arc;

/// One `SSL_GET`.
pub fn check(
    t: &Target,
    urls: &[UrlCheck],
    virtualhost: Option<&str>,
    enable_sni: bool,
    client_cert: Option<&ClientCert>,
) -> Outcome {
    let cfg = match client_config(client_cert) {
        Ok(c) => c,
        Err(why) => return Outcome::down(format!("SSL_GET to {}: {why}", t.addr)),
    };
    let name = server_name(t, virtualhost, enable_sni);
    http::check_with(t, urls, virtualhost, |t| connect(t, &cfg, name.clone()))
}

/// A TLS connection to `t`, handshake done.
fn connect(t: &Target, cfg: &Arc<ClientConfig>, name: ServerName<'static>) -> Result<StreamOwned<ClientConnection, TcpStream>, String> {
    let s = tcp::connect(t).map_err(|e| format!("connect: {e}"))?;
    http::timeouts(&s, t)?;
    let conn = ClientConnection::new(cfg.clone(), name).map_err(|e| format!("TLS: {e}"))?;
    let mut tls = StreamOwned::new(conn, s);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).map_err(|e| match e.kind() {
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                format!("TLS handshake: timed out after {:?}", t.timeout)
            }
            _ => format!("TLS handshake: {e}"),
        })?;
    }
    Ok(tls)
}

/// The name given to rustls: the `virtualhost` with `enable_sni` (sent as
/// SNI when it is a DNS name), else the target address (no SNI: rustls
/// sends none for an address).
pub fn server_name(t: &Target, virtualhost: Option<&str>, enable_sni: bool) -> ServerName<'static> {
    match virtualhost {
        Some(h) if enable_sni => match ServerName::try_from(h.to_string()) {
            Ok(n) => n,
            Err(_) => ServerName::IpAddress(t.addr.ip().into()),
        },
        _ => ServerName::IpAddress(t.addr.ip().into()),
    }
}

/// The client configuration: ring, TLS 1.2 and 1.3, every server
/// certificate accepted, the client certificate if any.
pub fn client_config(client_cert: Option<&ClientCert>) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)));
    let cfg = match client_cert {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let (chain, key) = load_client_cert(c)?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("SSL certificate/key: {e}"))?
        }
    };
    Ok(Arc::new(cfg))
}

/// Reads `c`'s certificate chain and key (PEM).
pub fn load_client_cert(c: &ClientCert) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let chain = CertificateDer::pem_file_iter(&c.certificate)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("SSL certificate {}: {e}", c.certificate.display()))?;
    if chain.is_empty() {
        return Err(format!("SSL certificate {}: no certificate in it", c.certificate.display()));
    }
    let key = PrivateKeyDer::from_pem_file(&c.key).map_err(|e| format!("SSL key {}: {e}", c.key.display()))?;
    Ok((chain, key))
}

/// keepalived's `SSL_VERIFY_NONE`: any certificate, any name; the
/// handshake signatures are verified with the certificate's key.
#[derive(Debug)]
struct AcceptAny(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAny {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn sni_only_with_enable_sni_and_a_host_name() {
        let t = Target { addr: "10.0.0.1:443".parse().unwrap(), timeout: Duration::from_secs(1), bind: None, bind_if: None };
        let ip = ServerName::IpAddress(t.addr.ip().into());
        assert_eq!(server_name(&t, Some("www.example.org"), false), ip);
        assert_eq!(server_name(&t, None, true), ip);
        assert_eq!(server_name(&t, Some("www.example.org"), true), ServerName::try_from("www.example.org").unwrap());
        assert_eq!(server_name(&t, Some("10.9.9.9"), true), ServerName::try_from("10.9.9.9").unwrap());
        assert!(client_config(None).is_ok());
    }
}
