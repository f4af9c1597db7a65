//! TLS for the end-to-end tests: a test CA issuing certificates as PEM files, a rustls client that
//! accepts any server certificate (to see which one is served), and server configurations for
//! HTTPS backends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;

use crate::prod::DOMAIN;

/// A CA and certificates it signed, as PEM files in `dir`: `ca.crt`, `NAME.crt`, `NAME.key`.
pub struct TestCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl std::fmt::Debug for TestCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TestCa")
    }
}

impl TestCa {
    /// A new CA; writes its certificate to `dir/ca.crt`.
    pub fn new(dir: &Path) -> TestCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "bridgectl test CA");
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("ca.crt"), cert.pem()).unwrap();
        TestCa {
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// Signs `params` (a client certificate with the subject a test wants) as `dir/NAME.crt`
    /// and `dir/NAME.key`; the DER of the certificate.
    pub fn issue_params(
        &self,
        dir: &Path,
        name: &str,
        params: &rcgen::CertificateParams,
    ) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
        cert.der().to_vec()
    }

    /// Issues a certificate for `sans` (none: a client certificate) as `dir/NAME.crt` and
    /// `dir/NAME.key`.
    pub fn issue(&self, dir: &Path, name: &str, sans: &[&str]) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                .unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        std::fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }
}

/// A rustls server configuration serving the chain and key of these PEM files with these ALPN
/// protocols.
pub fn server_config(cert: &Path, key: &Path, alpn: &[&[u8]]) -> rustls::ServerConfig {
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

/// [`server_config`] that also requires a client certificate issued by the CA in `client_ca`.
pub fn mtls_server_config(
    cert: &Path,
    key: &Path,
    client_ca: &Path,
    alpn: &[&[u8]],
) -> rustls::ServerConfig {
    let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(client_ca).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .unwrap();
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .unwrap();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

/// Accepts any server certificate (the test only wants to see which one is served) but still
/// checks the handshake signatures.
#[derive(Debug)]
pub struct AnyServerCert(pub Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyServerCert {
    fn verify_server_cert(
        &self,
        _: &rustls::pki_types::CertificateDer<'_>,
        _: &[rustls::pki_types::CertificateDer<'_>],
        _: &rustls::pki_types::ServerName<'_>,
        _: &[u8],
        _: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A client configuration that accepts any server certificate ([`AnyServerCert`]), without
/// session resumption (each handshake shows the certificate served now).
pub fn insecure_client() -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .expect("the default versions")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)))
        .with_no_client_auth();
    cfg.resumption = rustls::client::Resumption::disabled();
    Arc::new(cfg)
}

/// A TLS client connection over TCP.
pub type TlsStream = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

/// Connects to `addr` with SNI [`DOMAIN`], accepting any server certificate; the handshake is
/// complete on return.
pub fn tls_connect(addr: SocketAddr) -> TlsStream {
    tls_connect_as(addr, None)
}

/// [`tls_connect`], sending the client certificate chain and key of these PEM files when given.
pub fn tls_connect_as(addr: SocketAddr, client: Option<(&Path, &Path)>) -> TlsStream {
    let cfg = insecure_client_as(client);
    let conn = rustls::ClientConnection::new(cfg, DOMAIN.try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    s.flush().unwrap();
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    s
}

/// A client that accepts any server certificate and sends the client certificate chain and key
/// of these PEM files when given.
pub fn insecure_client_as(client: Option<(&Path, &Path)>) -> Arc<rustls::ClientConfig> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServerCert(provider)));
    let cfg = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = rustls::pki_types::CertificateDer::pem_file_iter(cert)
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
    };
    Arc::new(cfg)
}

/// `GET path` with `Host: host` over TLS asking for the server name `sni`, sending the client
/// certificate chain and key of these PEM files when given: (status, body), or the error that
/// ended the exchange (a server requiring a certificate refuses the handshake).
pub fn try_tls_get(
    addr: SocketAddr,
    (sni, host, path): (&str, &str, &str),
    client: Option<(&Path, &Path)>,
) -> Result<(u16, String), String> {
    let cfg = insecure_client_as(client);
    let name = sni.to_owned().try_into().map_err(|e| format!("{e:?}"))?;
    let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no answer: {text:?}"))?;
    Ok((
        status,
        text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned(),
    ))
}

/// The leaf certificate the server presented (DER).
pub fn served_leaf(s: &TlsStream) -> Vec<u8> {
    s.conn.peer_certificates().unwrap()[0].to_vec()
}

/// One keep-alive GET for `path` with `Host: DOMAIN` on an established TLS connection: (status,
/// body).
pub fn tls_get(s: &mut TlsStream, path: &str) -> (u16, String) {
    tls_get_with(s, path, "")
}

/// [`tls_get`] with more field lines (each ending in CRLF).
pub fn tls_get_with(s: &mut TlsStream, path: &str, fields: &str) -> (u16, String) {
    write!(s, "GET {path} HTTP/1.1\r\nHost: {DOMAIN}\r\n{fields}\r\n").unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).to_ascii_lowercase();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, String::from_utf8_lossy(&body).into_owned())
}
