//! ACME end to end against Debian's pebble (Let's Encrypt's test CA) with its DNS server: the
//! certificate obtained by HTTP-01 and by TLS-ALPN-01 (pebble really validates: it connects to
//! the proxy's entry points), served by SNI, stored in Traefik's acme.json format, served again
//! from storage at a restart with the CA down, and obtained by itself once a CA that was down at
//! the first start comes up. Skipped, with a printed reason, where pebble is not installed.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bridge_tests::backends::{Backend, backend};
use bridge_tests::pebble::{Pebble, PebbleOptions};
use bridge_tests::process::{KillOnDrop, bridge_runtime, spawn_serving};

/// Two free loopback ports (bound, read, released): the proxy's entry points, which pebble must
/// know before it starts (its validator connects to them).
fn two_free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (
        a.local_addr().unwrap().port(),
        b.local_addr().unwrap().port(),
    )
}

struct Site {
    dir: tempfile::TempDir,
    websecure: u16,
}

impl Site {
    /// The static and dynamic files of a resolver `le` with `challenge` (YAML under `acme:`),
    /// one router for `host` on websecure in front of `be`.
    fn new(
        pebble: &Pebble,
        web: u16,
        websecure: u16,
        challenge: &str,
        host: &str,
        be: &Backend,
    ) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let storage = dir.path().join("acme.json");
        std::fs::write(
            dir.path().join("traefik.yml"),
            format!(
                "entryPoints:\n  web:\n    address: \"127.0.0.1:{web}\"\n  websecure:\n    address: \"127.0.0.1:{websecure}\"\n\
                 certificatesResolvers:\n  le:\n    acme:\n      email: ops@acme.test\n      storage: {storage}\n      caServer: {ca}\n      caCertificates: [{cafile}]\n      keyType: EC256\n{challenge}\
                 providers:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
                storage = storage.display(),
                ca = pebble.directory_url(),
                cafile = pebble.ca_file().display(),
            ),
        )
        .unwrap();
        std::fs::write(
            dir.path().join("dynamic.yml"),
            format!(
                "http:\n  routers:\n    hmi:\n      rule: Host(`{host}`)\n      entryPoints: [websecure]\n      service: hmi\n      tls:\n        certResolver: le\n\
                 \x20 services:\n    hmi:\n      loadBalancer:\n        servers:\n          - url: http://{}\n",
                be.addr
            ),
        )
        .unwrap();
        Site { dir, websecure }
    }

    fn storage(&self) -> PathBuf {
        self.dir.path().join("acme.json")
    }

    fn serve(&self) -> KillOnDrop {
        let plan = bridge_tests::build_plan(self.dir.path(), "dev", "plan.json", &[]);
        let (child, _) = spawn_serving(&mut bridge_runtime(&plan), &["web", "websecure"]);
        KillOnDrop(child)
    }

    fn websecure(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.websecure))
    }
}

/// A TLS client that trusts only `roots_pem` (pebble's issuing root) and checks the name.
fn verifying(roots_pem: &str) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(roots_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    Arc::new(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// `GET /` for `host` over TLS: (served leaf DER, status, body), or why the handshake failed.
fn https_get(
    addr: SocketAddr,
    host: &str,
    cfg: Arc<rustls::ClientConfig>,
) -> Result<(Vec<u8>, u16, String), String> {
    let conn = rustls::ClientConnection::new(cfg, host.to_owned().try_into().unwrap())
        .map_err(|e| e.to_string())?;
    let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let leaf = s
        .conn
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .ok_or("no certificate")?;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    Ok((leaf, status, body))
}

/// Polls until `host` is served with a certificate pebble issued (at most `limit`).
fn wait_for_issued(
    site: &Site,
    pebble: &Pebble,
    host: &str,
    limit: Duration,
) -> (Vec<u8>, u16, String) {
    let deadline = Instant::now() + limit;
    let cfg = verifying(&pebble.issuer_roots_pem());
    let mut last = String::new();
    while Instant::now() < deadline {
        match https_get(site.websecure(), host, cfg.clone()) {
            Ok(r) => return r,
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!(
        "{host} was not served with a certificate from pebble within {limit:?} (last: {last})\npebble log:\n{}",
        pebble.logs()
    );
}

fn stored(path: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn http01_certificate_is_obtained_stored_in_traefik_format_and_served_from_storage_with_the_ca_down()
 {
    let (web, websecure) = two_free_ports();
    let Some(mut pebble) = Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: None,
    }) else {
        return;
    };
    let be = backend("a").start();
    let host = "hmi.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      httpChallenge:\n        entryPoint: web\n",
        host,
        &be,
    );
    let rt = site.serve();
    let (leaf, status, body) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("a /"), "{body}");

    // Traefik's acme.json: mode 0600, the certificate under the resolver's name.
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(site.storage())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);
    let file = stored(&site.storage());
    let certs = file["le"]["Certificates"].as_array().unwrap();
    assert_eq!(certs.len(), 1);
    assert_eq!(certs[0]["domain"]["main"], host);
    assert_eq!(certs[0]["Store"], "default");
    assert!(file["le"]["BridgeAccount"]["Credentials"]["id"].is_string());

    // Restart with the CA down: the stored certificate is served at once.
    drop(rt);
    pebble.stop();
    let _rt = site.serve();
    let any = bridge_tests::tls::insecure_client();
    let (again, status, _) = https_get(site.websecure(), host, any).unwrap();
    assert_eq!(
        again, leaf,
        "the stored certificate is served after a restart"
    );
    assert_eq!(status, 200);
}

#[test]
fn tls_alpn01_certificate_arrives_by_itself_once_the_ca_is_up() {
    let (web, websecure) = two_free_ports();
    let Some(mut pebble) = Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: None,
    }) else {
        return;
    };
    let be = backend("a").start();
    let host = "alpn.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      tlsChallenge: {}\n",
        host,
        &be,
    );
    // The CA is down at the first start: the router is served with the default certificate, the
    // runtime keeps trying and gets the certificate once the CA is back, without a restart.
    pebble.stop();
    let _rt = site.serve();
    let any = bridge_tests::tls::insecure_client();
    let (_, status, _) = https_get(site.websecure(), host, any).unwrap();
    assert_eq!(
        status, 200,
        "served (default certificate) while the CA is down"
    );
    std::thread::sleep(Duration::from_secs(3));
    pebble.restart();
    let (_, status, body) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!(status, 200, "{body}");
}
