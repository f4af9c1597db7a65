//! OCSP for the stapling tests: a CA whose leaves name an OCSP responder (Authority Information
//! Access), a responder on 127.0.0.1 that answers for them as a CA's responder does (DER signed
//! by the CA's key, times around now), and a TLS client that shows the staple a server sent.
//!
//! The responder is written here so the tests need no `openssl` and answers are always current;
//! the runtime's own unit tests check its DER against openssl-made answers.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rcgen::SigningKey as _;
use sha1::Digest as _;

use crate::tls::AnyServerCert;

/// What the responder says of a serial number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Good,
    Revoked,
    Unknown,
}

/// A CA (P-256) that issues leaves naming OCSP responders and signs answers for them.
pub struct OcspCa {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

impl std::fmt::Debug for OcspCa {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OcspCa")
    }
}

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(u8::try_from(len).unwrap());
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | u8::try_from(bytes.len() - skip).unwrap());
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// Reads one DER element off `input`: (tag, content, whole encoding).
fn read<'a>(input: &mut &'a [u8]) -> Option<(u8, &'a [u8], &'a [u8])> {
    let data = *input;
    let tag = *data.first()?;
    let first = *data.get(1)?;
    let (len, header) = if first < 0x80 {
        (usize::from(first), 2)
    } else {
        let n = usize::from(first & 0x7f);
        let bytes = data.get(2..2 + n)?;
        (
            bytes.iter().fold(0usize, |v, &b| (v << 8) | usize::from(b)),
            2 + n,
        )
    };
    let whole = data.get(..header + len)?;
    *input = &data[header + len..];
    Some((tag, &whole[header..], whole))
}

fn generalized(t: SystemTime) -> Vec<u8> {
    let t = time::OffsetDateTime::from(t);
    let s = format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    der(0x18, s.as_bytes())
}

impl OcspCa {
    /// A new CA; writes its certificate to `dir/ocsp-ca.crt`.
    pub fn new(dir: &Path) -> OcspCa {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "bridgectl OCSP test CA");
        let cert = params.self_signed(&key).unwrap();
        std::fs::write(dir.join("ocsp-ca.crt"), cert.pem()).unwrap();
        OcspCa {
            pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// Issues `name` (also its DNS name and common name) with serial `serial`, naming `aia` as
    /// its OCSP responders in order: `dir/NAME.crt` (the leaf, then the CA unless `leaf_only`)
    /// and `dir/NAME.key`.
    pub fn leaf(&self, dir: &Path, name: &str, serial: u8, aia: &[&str], leaf_only: bool) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.serial_number = Some(rcgen::SerialNumber::from_slice(&[serial]));
        if !aia.is_empty() {
            // AuthorityInfoAccessSyntax: SEQUENCE OF { id-ad-ocsp, [6] URI }.
            let ocsp_oid = [0x06, 0x08, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01];
            let mut list = Vec::new();
            for url in aia {
                let mut d = ocsp_oid.to_vec();
                d.extend(der(0x86, url.as_bytes()));
                list.extend(der(0x30, &d));
            }
            params
                .custom_extensions
                .push(rcgen::CustomExtension::from_oid_content(
                    &[1, 3, 6, 1, 5, 5, 7, 1, 1],
                    der(0x30, &list),
                ));
        }
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        let mut pem = cert.pem();
        if !leaf_only {
            pem.push_str(&self.pem);
        }
        std::fs::write(dir.join(format!("{name}.crt")), pem).unwrap();
        std::fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
    }

    /// The answer to an OCSPRequest, signed by the CA: the status `status_of` gives its serial,
    /// thisUpdate a minute ago, nextUpdate `valid` later. `None` for bytes that are no request.
    pub fn answer(
        &self,
        request: &[u8],
        mut status_of: impl FnMut(&[u8]) -> Status,
        valid: Duration,
    ) -> Option<Vec<u8>> {
        // OCSPRequest { TBSRequest { requestList { Request { CertID, … } … } } }
        let mut r = request;
        let (_, req, _) = read(&mut r)?;
        let mut req = req;
        let (_, tbs, _) = read(&mut req)?;
        let mut tbs = tbs;
        let (mut tag, mut list, _) = read(&mut tbs)?;
        while tag != 0x30 {
            (tag, list, _) = read(&mut tbs)?;
        }
        let (_, one, _) = read(&mut list)?;
        let mut one = one;
        let (_, id_content, cert_id) = read(&mut one)?;
        let mut id = id_content;
        for _ in 0..3 {
            read(&mut id)?;
        }
        let (_, serial, _) = read(&mut id)?;
        let now = SystemTime::now();
        let this = now - Duration::from_secs(60);
        let status = match status_of(serial) {
            Status::Good => vec![0x80, 0x00],
            Status::Revoked => der(0xa1, &generalized(this - Duration::from_secs(3600))),
            Status::Unknown => vec![0x82, 0x00],
        };
        let mut single = cert_id.to_vec();
        single.extend(status);
        single.extend(generalized(this));
        single.extend(der(0xa0, &generalized(this + valid)));
        let key_hash = sha1::Sha1::digest(self.issuer.key().public_key_raw());
        let mut data = der(0xa2, &der(0x04, &key_hash));
        data.extend(generalized(now));
        data.extend(der(0x30, &der(0x30, &single)));
        let tbs = der(0x30, &data);
        let sig = self.issuer.key().sign(&tbs).unwrap();
        let mut basic = tbs;
        // ecdsa-with-SHA256
        basic.extend([
            0x30, 0x0a, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02,
        ]);
        let mut bits = vec![0];
        bits.extend(sig);
        basic.extend(der(0x03, &bits));
        let basic = der(0x30, &basic);
        // id-pkix-ocsp-basic
        let mut bytes = vec![
            0x06, 0x09, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01,
        ];
        bytes.extend(der(0x04, &basic));
        let mut top = vec![0x0a, 0x01, 0x00];
        top.extend(der(0xa0, &der(0x30, &bytes)));
        Some(der(0x30, &top))
    }
}

/// A request the responder got: its target and the serial asked for.
pub type Asked = (String, Vec<u8>);

/// How the responder answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Signed answers with the statuses set.
    Answer,
    /// HTTP 500.
    Fail,
}

/// An OCSP responder on 127.0.0.1 (HTTP/1.1 POST, one request per connection). Stops when
/// dropped.
pub struct Responder {
    addr: SocketAddr,
    ca: Arc<OcspCa>,
    statuses: Arc<Mutex<HashMap<Vec<u8>, Status>>>,
    mode: Arc<Mutex<Mode>>,
    asked: Arc<Mutex<Vec<Asked>>>,
    stop: Arc<AtomicBool>,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Responder({})", self.addr)
    }
}

impl Responder {
    /// Answers for `ca`, each answer valid for `valid`; serials without a status are `unknown`.
    pub fn start(ca: OcspCa, valid: Duration) -> Responder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let statuses: Arc<Mutex<HashMap<Vec<u8>, Status>>> = Arc::default();
        let mode = Arc::new(Mutex::new(Mode::Answer));
        let asked: Arc<Mutex<Vec<Asked>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let ca = Arc::new(ca);
        let (s, m, a, st) = (statuses.clone(), mode.clone(), asked.clone(), stop.clone());
        let c = ca.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if st.load(Ordering::Acquire) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                let _ = serve_one(conn, &c, valid, &s, &m, &a);
            }
        });
        Responder {
            addr,
            ca,
            statuses,
            mode,
            asked,
            stop,
        }
    }

    /// The CA it answers for.
    pub fn ca(&self) -> &OcspCa {
        &self.ca
    }

    /// `http://127.0.0.1:PORT` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Sets the status of `serial`.
    pub fn set(&self, serial: u8, status: Status) {
        self.statuses.lock().unwrap().insert(vec![serial], status);
    }

    /// Sets how the responder answers.
    pub fn mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    /// The requests so far: (request target, serial asked for).
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        let _ = TcpStream::connect(self.addr);
    }
}

fn serve_one(
    mut conn: TcpStream,
    ca: &OcspCa,
    valid: Duration,
    statuses: &Mutex<HashMap<Vec<u8>, Status>>,
    mode: &Mutex<Mode>,
    asked: &Mutex<Vec<Asked>>,
) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            return Ok(());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let target = head
        .split_whitespace()
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    let length = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = conn.read(&mut chunk)?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = &buf[head_end..(head_end + length).min(buf.len())];
    let statuses = statuses.lock().unwrap().clone();
    let mut serial = Vec::new();
    let answer = ca.answer(
        body,
        |s| {
            serial = s.to_vec();
            statuses.get(s).copied().unwrap_or(Status::Unknown)
        },
        valid,
    );
    asked.lock().unwrap().push((target, serial));
    let reply = match (*mode.lock().unwrap(), answer) {
        (Mode::Answer, Some(a)) => {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/ocsp-response\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                a.len()
            )
            .into_bytes();
            r.extend(a);
            r
        }
        _ => {
            b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                .to_vec()
        }
    };
    conn.write_all(&reply)
}

/// Records the OCSP staple of the handshake, accepting any certificate.
#[derive(Debug)]
struct Capture {
    any: AnyServerCert,
    staple: Arc<Mutex<Option<Vec<u8>>>>,
}

impl rustls::client::danger::ServerCertVerifier for Capture {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        *self.staple.lock().unwrap() = (!ocsp.is_empty()).then(|| ocsp.to_vec());
        self.any
            .verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.any.verify_tls12_signature(message, cert, dss)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.any.verify_tls13_signature(message, cert, dss)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.any.supported_verify_schemes()
    }
}

/// What a handshake with SNI `name` showed: the served leaf's common name... as its DER, and the
/// staple's (serial, status) when one was sent. `tls12` limits the handshake to TLS 1.2.
pub fn handshake(
    addr: SocketAddr,
    name: &str,
    tls12: bool,
) -> (Vec<u8>, Option<(Vec<u8>, Status)>) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let staple = Arc::new(Mutex::new(None));
    let versions: &[&rustls::SupportedProtocolVersion] = if tls12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13]
    };
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(versions)
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Capture {
            any: AnyServerCert(provider),
            staple: staple.clone(),
        }))
        .with_no_client_auth();
    cfg.resumption = rustls::client::Resumption::disabled();
    let conn =
        rustls::ClientConnection::new(Arc::new(cfg), name.to_owned().try_into().unwrap()).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    s.flush().unwrap();
    while s.conn.is_handshaking() {
        s.conn.complete_io(&mut s.sock).unwrap();
    }
    let leaf = s.conn.peer_certificates().unwrap()[0].to_vec();
    let got = staple.lock().unwrap().clone();
    (
        leaf,
        got.map(|d| read_staple(&d).expect("the staple is an OCSP answer")),
    )
}

/// The serial number (INTEGER content) of a certificate.
pub fn serial_of(cert: &[u8]) -> Option<Vec<u8>> {
    let mut c = cert;
    let (_, outer, _) = read(&mut c)?;
    let mut outer = outer;
    let (_, tbs, _) = read(&mut outer)?;
    let mut tbs = tbs;
    let (mut tag, mut serial, _) = read(&mut tbs)?;
    if tag == 0xa0 {
        (tag, serial, _) = read(&mut tbs)?;
    }
    (tag == 0x02).then(|| serial.to_vec())
}

/// The (serial, status) of the first SingleResponse of an OCSPResponse.
pub fn read_staple(answer: &[u8]) -> Option<(Vec<u8>, Status)> {
    let mut a = answer;
    let (_, top, _) = read(&mut a)?;
    let mut top = top;
    read(&mut top)?; // responseStatus
    let (_, bytes, _) = read(&mut top)?;
    let mut bytes = bytes;
    let (_, seq, _) = read(&mut bytes)?;
    let mut seq = seq;
    read(&mut seq)?; // responseType
    let (_, basic, _) = read(&mut seq)?;
    let mut basic = basic;
    let (_, basic, _) = read(&mut basic)?;
    let mut basic = basic;
    let (_, data, _) = read(&mut basic)?;
    let mut data = data;
    let (mut tag, mut part, _) = read(&mut data)?;
    if tag == 0xa0 {
        (tag, part, _) = read(&mut data)?;
    }
    let _ = (tag, part);
    read(&mut data)?; // producedAt
    let (_, responses, _) = read(&mut data)?;
    let mut responses = responses;
    let (_, single, _) = read(&mut responses)?;
    let mut single = single;
    let (_, id, _) = read(&mut single)?;
    let mut id = id;
    for _ in 0..3 {
        read(&mut id)?;
    }
    let (_, serial, _) = read(&mut id)?;
    let (status, _, _) = read(&mut single)?;
    let status = match status {
        0x80 => Status::Good,
        0xa1 => Status::Revoked,
        _ => Status::Unknown,
    };
    Some((serial.to_vec(), status))
}
