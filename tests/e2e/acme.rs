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
use bridge_tests::ocsp::{OcspCa, Responder, handshake, serial_of};
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

/// pebble validating on these two ports, with its defaults (no EAB, no OCSP, 5-year
/// certificates); `None` (with the reason printed) where it is not installed.
fn plain_pebble(web: u16, websecure: u16) -> Option<Pebble> {
    Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: None,
        eab: None,
        ocsp_responder: None,
    })
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
        Site::with_ca(
            &pebble.directory_url(),
            pebble.ca_file(),
            (web, websecure),
            challenge,
            host,
            be,
        )
    }

    /// [`Site::new`] for any CA URL and CA file.
    fn with_ca(
        ca: &str,
        ca_file: &Path,
        (web, websecure): (u16, u16),
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
                cafile = ca_file.display(),
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

    fn plan(&self) -> PathBuf {
        bridge_tests::build_plan(self.dir.path(), "dev", "plan.json", &[])
    }

    fn serve(&self) -> KillOnDrop {
        let (child, _) = spawn_serving(&mut bridge_runtime(&self.plan()), &["web", "websecure"]);
        KillOnDrop(child)
    }

    /// Also the API and metrics (`api.insecure`, Prometheus) on a free `traefik` entry point.
    fn serve_with_api(&self) -> (KillOnDrop, SocketAddr) {
        let path = self.dir.path().join("traefik.yml");
        let mut text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("\napi:") {
            text.push_str("api:\n  insecure: true\nmetrics:\n  prometheus: {}\n");
            std::fs::write(&path, text).unwrap();
        }
        let (child, addrs) = spawn_serving(
            bridge_runtime(&self.plan()).args(["--bind", "traefik=127.0.0.1:0"]),
            &["web", "websecure", "traefik"],
        );
        (KillOnDrop(child), addrs[2])
    }

    fn websecure(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.websecure))
    }
}

/// A TLS client that trusts only `roots_pem` (pebble's issuing root) and checks the name; no
/// session resumption.
fn verifying(roots_pem: &str) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(roots_pem.as_bytes()) {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    // Every handshake must show the certificate served now, not a resumed session's.
    cfg.resumption = rustls::client::Resumption::disabled();
    Arc::new(cfg)
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
    let Some(mut pebble) = plain_pebble(web, websecure) else {
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
    let (rt, api) = site.serve_with_api();
    let (leaf, status, body) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("a /"), "{body}");

    // The API lists it with its issuer; the metrics carry its expiry and the order.
    let (status, certs) = crate::harness::get(api, "/api/bridge/certificates");
    assert_eq!(status, 200, "{certs}");
    let certs: serde_json::Value = serde_json::from_str(&certs).unwrap();
    assert_eq!(certs[0]["resolver"], "le");
    assert_eq!(certs[0]["names"], serde_json::json!([host]));
    assert!(
        certs[0]["issuer"].as_str().unwrap().contains("Pebble"),
        "{certs}"
    );
    let (_, metrics) = crate::harness::get(api, "/metrics");
    assert!(
        metrics.contains(&format!("traefik_tls_certs_not_after{{cn=\"{host}\"")),
        "{metrics}"
    );
    assert!(
        metrics.contains("bridge_acme_orders_total{resolver=\"le\",outcome=\"obtained\"} 1"),
        "{metrics}"
    );

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
fn with_allow_acme_bypass_a_router_above_42_answers_its_challenges_and_the_resolver_the_rest() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let be = backend("a").start();
    let solver = backend("solver").start();
    let host = "bypass.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      httpChallenge:\n        entryPoint: web\n",
        host,
        &be,
    );
    // web redirects to websecure but lets routers take ACME's path; an external solver answers
    // the challenges of another name (its rule is longer than 42: it outranks the resolver).
    let statics = site.dir.path().join("traefik.yml");
    let text = std::fs::read_to_string(&statics).unwrap().replacen(
        &format!("address: \"127.0.0.1:{web}\"\n"),
        &format!(
            "address: \"127.0.0.1:{web}\"\n    allowACMEByPass: true\n    http:\n      redirections:\n        \
             entryPoint:\n          to: websecure\n"
        ),
        1,
    );
    std::fs::write(&statics, text).unwrap();
    let dynamic = site.dir.path().join("dynamic.yml");
    let text = std::fs::read_to_string(&dynamic).unwrap().replacen(
        "  services:\n",
        &format!(
            "    solver:\n      rule: Host(`other.acme.test`) && PathPrefix(`/.well-known/acme-challenge/`)\n      \
             entryPoints: [web]\n      service: solver\n  services:\n    solver:\n      loadBalancer:\n        \
             servers:\n          - url: http://{}\n",
            solver.addr
        ),
        1,
    );
    std::fs::write(&dynamic, text).unwrap();
    let _rt = site.serve();
    let (_, status, body) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!((status, body.starts_with("a /")), (200, true), "{body}");

    let web_addr = SocketAddr::from(([127, 0, 0, 1], web));
    let get = |host: &str, target: &str| {
        bridge_tests::traefik::fetch(web_addr, "GET", target, &[("Host", host)], b"").unwrap()
    };
    let solved = get("other.acme.test", "/.well-known/acme-challenge/t0k3n");
    assert_eq!(
        (solved.status, solved.text()),
        (
            200,
            "solver /.well-known/acme-challenge/t0k3n xff=127.0.0.1".to_owned()
        )
    );
    // The resolver's own answer for a token it does not hold, not the redirect.
    let unknown = get(host, "/.well-known/acme-challenge/t0k3n");
    assert_eq!(unknown.status, 404, "{}", unknown.text());
    let redirected = get(host, "/hmi");
    assert_eq!(redirected.status, 301);
    assert_eq!(
        redirected.header("location"),
        Some(format!("https://{host}:{websecure}/hmi").as_str())
    );
}

#[test]
fn tls_alpn01_certificate_arrives_by_itself_once_the_ca_is_up() {
    let (web, websecure) = two_free_ports();
    let Some(mut pebble) = plain_pebble(web, websecure) else {
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

#[test]
fn a_short_lived_certificate_is_renewed_without_a_restart() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: Some(30),
        eab: None,
        ocsp_responder: None,
    }) else {
        return;
    };
    let be = backend("a").start();
    let host = "renew.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      httpChallenge:\n        entryPoint: web\n",
        host,
        &be,
    );
    let _rt = site.serve();
    let (first, _, _) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    // Due when a third of the 30 s lifetime is left: a new certificate within ~20 s, served
    // and stored in place of the old one (one entry for the names).
    let deadline = Instant::now() + Duration::from_secs(40);
    let cfg = verifying(&pebble.issuer_roots_pem());
    loop {
        let (leaf, status, _) = https_get(site.websecure(), host, cfg.clone()).unwrap();
        assert_eq!(status, 200);
        if leaf != first {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not renewed within 40 s of a 30 s certificate"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let file = stored(&site.storage());
    assert_eq!(file["le"]["Certificates"].as_array().unwrap().len(), 1);
}

/// A Traefik acme.json (Traefik's RSA account, a certificate from another CA) for `host`.
fn traefik_acme_json(dir: &Path, host: &str) -> (PathBuf, Vec<u8>) {
    use base64::Engine as _;
    let ca = bridge_tests::tls::TestCa::new(dir);
    ca.issue(dir, "imported", &[host]);
    let pem = std::fs::read(dir.join("imported.crt")).unwrap();
    let key = std::fs::read(dir.join("imported.key")).unwrap();
    let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
    let json = serde_json::json!({
        "le": {
            "Account": {
                "Email": "ops@acme.test",
                "Registration": {"body": {"status": "valid"}, "uri": "https://acme.example/acct/7"},
                "PrivateKey": "MIIJKAIBAAKCAgEAtraefikRSA",
                "KeyType": "4096"
            },
            "Certificates": [
                {"domain": {"main": host}, "certificate": b64(&pem), "key": b64(&key), "Store": "default"}
            ]
        }
    });
    let path = dir.join("acme.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let der = rustls::pki_types::CertificateDer::pem_slice_iter(&pem)
        .next()
        .unwrap()
        .unwrap()
        .to_vec();
    (path, der)
}

use rustls::pki_types::pem::PemObject as _;

#[test]
fn an_imported_traefik_acme_json_is_served_as_it_is() {
    let be = backend("a").start();
    let host = "hmi.acme.test";
    let ports = two_free_ports();
    let ca_dir = tempfile::tempdir().unwrap();
    bridge_tests::tls::TestCa::new(ca_dir.path());
    // A CA nobody listens on: nothing may be ordered, the imported certificate must do.
    let site = Site::with_ca(
        "https://127.0.0.1:9/dir",
        &ca_dir.path().join("ca.crt"),
        ports,
        "      httpChallenge:\n        entryPoint: web\n",
        host,
        &be,
    );
    let (path, der) = traefik_acme_json(site.dir.path(), host);
    let before = std::fs::read(&path).unwrap();
    let _rt = site.serve();
    let (leaf, status, body) =
        https_get(site.websecure(), host, bridge_tests::tls::insecure_client()).unwrap();
    assert_eq!(leaf, der, "the imported certificate is served");
    assert_eq!(status, 200, "{body}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "nothing was due, so the file is untouched (Traefik's account included)"
    );
}

#[test]
fn a_storage_file_with_a_wide_mode_or_corrupt_content_stops_the_start_with_its_path() {
    use std::os::unix::fs::PermissionsExt as _;
    let be = backend("a").start();
    let ca_dir = tempfile::tempdir().unwrap();
    bridge_tests::tls::TestCa::new(ca_dir.path());
    let site = Site::with_ca(
        "https://127.0.0.1:9/dir",
        &ca_dir.path().join("ca.crt"),
        two_free_ports(),
        "      tlsChallenge: {}\n",
        "hmi.acme.test",
        &be,
    );
    let plan = site.plan();
    let storage = site.storage();
    for (content, mode, want) in [
        ("{}", 0o644, "permissions 644"),
        ("{\"le\": [", 0o600, "is not an acme.json file"),
    ] {
        std::fs::write(&storage, content).unwrap();
        std::fs::set_permissions(&storage, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = bridge_runtime(&plan).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(want), "{stderr}");
        assert!(stderr.contains(&storage.display().to_string()), "{stderr}");
        assert_eq!(
            std::fs::read_to_string(&storage).unwrap(),
            content,
            "left untouched"
        );
    }
}

#[test]
fn an_imported_file_gets_our_account_beside_traefiks_and_a_reload_orders_a_new_host() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let be = backend("a").start();
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      httpChallenge:\n        entryPoint: web\n",
        "hmi.acme.test",
        &be,
    );
    let (path, imported) = traefik_acme_json(site.dir.path(), "hmi.acme.test");
    let mut rt = site.serve();
    let any = bridge_tests::tls::insecure_client();
    let (leaf, _, _) = https_get(site.websecure(), "hmi.acme.test", any.clone()).unwrap();
    assert_eq!(leaf, imported);

    // A second router arrives by SIGHUP: its certificate is ordered without a restart.
    let dynamic = site.dir.path().join("dynamic.yml");
    let text = std::fs::read_to_string(&dynamic).unwrap().replace(
        "  services:\n",
        "    new:\n      rule: Host(`new.acme.test`)\n      entryPoints: [websecure]\n      service: hmi\n      tls:\n        certResolver: le\n  services:\n",
    );
    std::fs::write(&dynamic, text).unwrap();
    site.plan();
    bridge_tests::process::signal(rt.id(), "-HUP");
    wait_for_issued(&site, &pebble, "new.acme.test", Duration::from_secs(60));
    assert!(rt.try_wait().unwrap().is_none(), "still running");

    // Traefik's RSA account is kept as it was, ours sits beside it; both certificates stored.
    let file = stored(&path);
    assert_eq!(
        file["le"]["Account"]["PrivateKey"],
        "MIIJKAIBAAKCAgEAtraefikRSA"
    );
    assert!(file["le"]["BridgeAccount"]["Credentials"]["id"].is_string());
    let mains: Vec<&str> = file["le"]["Certificates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["domain"]["main"].as_str().unwrap())
        .collect();
    assert_eq!(mains, ["hmi.acme.test", "new.acme.test"]);
    let (leaf, _, _) = https_get(site.websecure(), "hmi.acme.test", any).unwrap();
    assert_eq!(leaf, imported, "the imported certificate is still served");
}

#[test]
fn a_ca_requiring_external_account_binding_issues_with_the_configured_eab() {
    const KID: &str = "kid-1";
    const HMAC: &str = "zWNDZM6eQGHWpSRTPal5eIUYFTu7EajVIoguysqZ9wG44nMEtx3MUAsUDkMTQ12W";
    let (web, websecure) = two_free_ports();
    let Some(pebble) = Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: None,
        eab: Some((KID, HMAC)),
        ocsp_responder: None,
    }) else {
        return;
    };
    assert_eq!(pebble.directory()["meta"]["externalAccountRequired"], true);
    let be = backend("a").start();
    let host = "eab.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        &format!(
            "      eab:\n        kid: {KID}\n        hmacEncoded: {HMAC}\n      tlsChallenge: {{}}\n"
        ),
        host,
        &be,
    );
    let _rt = site.serve();
    let (_, status, _) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!(status, 200);
}

#[test]
fn the_prod_profile_with_cert_resolver_builds_and_serves_https_from_acme() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let seed = bridge_tests::repo_root().join("examples/scadabridge");
    // The example's static file with a Let's Encrypt resolver added, HTTP-01 on `web` — which
    // prod redirects to HTTPS: the challenge must be answered before the redirect.
    let static_yml = format!(
        "{}\ncertificatesResolvers:\n  le:\n    acme:\n      email: ops@acme.test\n      storage: {}\n      caServer: {}\n      caCertificates: [{}]\n      httpChallenge:\n        entryPoint: web\n",
        std::fs::read_to_string(seed.join("traefik.yml")).unwrap(),
        d.join("acme.json").display(),
        pebble.directory_url(),
        pebble.ca_file().display(),
    );
    std::fs::write(d.join("traefik.yml"), static_yml).unwrap();
    let dynamic = std::fs::read_to_string(seed.join("dynamic.yml"))
        .unwrap()
        .replace(
            "http://scadabridge-central-a:5000",
            &format!("http://scadabridge-central-a:{}", a.addr.port()),
        )
        .replace(
            "http://scadabridge-central-b:5000",
            &format!("http://scadabridge-central-b:{}", b.addr.port()),
        )
        .replace("interval: 5s", "interval: 1s");
    std::fs::write(d.join("dynamic.yml"), dynamic).unwrap();
    std::fs::write(
        d.join("dashboard.htpasswd"),
        "admin:$apr1$abcdefgh$M2T3erDstkD7SsE2QQnfH0\n",
    )
    .unwrap();
    let domain = "scada.acme.test";
    let users = format!(
        "dashboard_users_file={}",
        d.join("dashboard.htpasswd").display()
    );
    let plan = bridge_tests::build_plan(
        d,
        "prod",
        "plan.json",
        &[
            "--var",
            &format!("domain={domain}"),
            "--var",
            "cert_resolver=le",
            "--var",
            &users,
        ],
    );
    let (child, addrs) = spawn_serving(
        bridge_runtime(&plan).args([
            "--bind",
            &format!("web=127.0.0.1:{web}"),
            "--bind",
            &format!("websecure=127.0.0.1:{websecure}"),
            "--bind",
            "traefik=127.0.0.1:0",
            "--resolve",
            "scadabridge-central-a=127.0.0.1",
            "--resolve",
            "scadabridge-central-b=127.0.0.1",
        ]),
        &["web", "websecure", "traefik"],
    );
    let _rt = KillOnDrop(child);
    let site = Site { dir, websecure };
    let (_, status, body) = wait_for_issued(&site, &pebble, domain, Duration::from_secs(60));
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("a /"), "served by the active node: {body}");
    // The dashboard's entry point (:8080) is served with the same ACME certificate: the verifying
    // handshake succeeds (`/` itself is no dashboard path there: 404).
    let (_, status, _) =
        https_get(addrs[2], domain, verifying(&pebble.issuer_roots_pem())).unwrap();
    assert_eq!(status, 404);
    // Plain HTTP is still redirected.
    let (status, _) = crate::harness::get(addrs[0], "/");
    assert_eq!(status, 301);
}

/// POSTs `body` to pebble-challtestsrv's management API at `path`.
fn challtestsrv_post(pebble: &Pebble, path: &str, body: &str) {
    let url = pebble.challtestsrv_url();
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{path}: {out}");
}

/// A pair (two appliances, one plan, each its own acme.json): the name points at appliance a only,
/// as the virtual address does, yet b obtains its certificate too — a relays the CA's HTTP-01
/// request for b's token to its peer.
#[test]
fn in_a_pair_the_address_holder_relays_the_peers_http01_challenge() {
    let (web, websecure) = two_free_ports();
    let api = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let host = "pair.acme.test";
    challtestsrv_post(
        &pebble,
        "/add-a",
        &format!(r#"{{"host":"{host}.","addresses":["127.0.0.2"]}}"#),
    );
    let be = backend("a").start();
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      httpChallenge:\n        entryPoint: web\n",
        host,
        &be,
    );
    // The storage is relative: each appliance runs in its own state directory.
    let path = site.dir.path().join("traefik.yml");
    let text = std::fs::read_to_string(&path).unwrap().replace(
        &format!("storage: {}", site.storage().display()),
        "storage: acme.json",
    ) + "api:\n  insecure: true\nping: {}\n";
    std::fs::write(&path, text).unwrap();
    let plan = site.plan();
    let appliance = |me: &str, peer: &str| {
        let state = tempfile::tempdir().unwrap();
        let (child, _) = spawn_serving(
            bridge_runtime(&plan)
                .current_dir(state.path())
                .args(["--bind", &format!("web={me}:{web}")])
                .args(["--bind", &format!("websecure={me}:{websecure}")])
                .args(["--bind", &format!("traefik={me}:{api}")])
                .args(["--peer", &format!("http://{peer}:{api}/ping")]),
            &["web", "websecure", "traefik"],
        );
        (KillOnDrop(child), state)
    };
    let (_a, a_state) = appliance("127.0.0.2", "127.0.0.3");
    let (_b, b_state) = appliance("127.0.0.3", "127.0.0.2");
    let cfg = verifying(&pebble.issuer_roots_pem());
    for (me, state) in [("127.0.0.2", &a_state), ("127.0.0.3", &b_state)] {
        let addr: SocketAddr = format!("{me}:{websecure}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut last: String;
        loop {
            match https_get(addr, host, cfg.clone()) {
                Ok((_, status, body)) => {
                    assert_eq!(status, 200, "{body}");
                    break;
                }
                Err(e) => last = e,
            }
            assert!(
                Instant::now() < deadline,
                "appliance {me} got no certificate (last: {last})\npebble log:\n{}",
                pebble.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        let file = stored(&state.path().join("acme.json"));
        assert_eq!(
            file["le"]["Certificates"][0]["domain"]["main"], host,
            "{me}"
        );
    }
    // A token neither holds: one relay hop, then 404 (the peer never relays a relayed request back).
    let started = Instant::now();
    let answer = crate::harness::request_raw(
        format!("127.0.0.2:{web}").parse().unwrap(),
        "GET",
        "/.well-known/acme-challenge/nobody-has-this",
        "",
    );
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn an_acme_certificate_naming_an_ocsp_responder_is_asked_for_with_its_issuer() {
    let (web, websecure) = two_free_ports();
    let scratch = tempfile::tempdir().unwrap();
    // Answers signed by another CA than pebble's: the requests are what this test looks at.
    let responder = Responder::start(OcspCa::new(scratch.path()), Duration::from_secs(3600));
    let Some(pebble) = Pebble::start(PebbleOptions {
        http_port: web,
        tls_port: websecure,
        validity_secs: None,
        eab: None,
        ocsp_responder: Some(responder.url("/acme")),
    }) else {
        return;
    };
    let be = backend("a").start();
    let host = "ocsp.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        "      tlsChallenge: {}\n",
        host,
        &be,
    );
    let path = site.dir.path().join("traefik.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}ocsp: {{}}\n")).unwrap();
    let _rt = site.serve();
    let (leaf, status, _) = wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    assert_eq!(status, 200);
    let serial = serial_of(&leaf).unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    while !responder
        .asked()
        .iter()
        .any(|(target, s)| target == "/acme" && s == &serial)
    {
        assert!(
            Instant::now() < deadline,
            "the stapler did not ask for the ACME certificate (serial {serial:02x?}): {:?}",
            responder.asked()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Pebble's answer would come from pebble's issuer; this responder's is refused (another
    // CA signed it), so nothing is stapled.
    let (_, staple) = handshake(site.websecure(), host, false);
    assert_eq!(staple, None);
}

/// The default store's `defaultGeneratedCert`: its names are ordered from the resolver with the
/// routers' and, once obtained, that certificate answers handshakes no other certificate
/// matches (before: the self-signed default), as Traefik serves it.
#[test]
fn default_generated_cert_is_ordered_and_answers_unmatched_handshakes() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
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
    let dynamic = site.dir.path().join("dynamic.yml");
    let mut text = std::fs::read_to_string(&dynamic).unwrap();
    text.push_str("tls:\n  stores:\n    default:\n      defaultGeneratedCert:\n        resolver: le\n        domain:\n          main: default.acme.test\n          sans: [alt.acme.test]\n");
    std::fs::write(&dynamic, text).unwrap();
    let _rt = site.serve();
    wait_for_issued(&site, &pebble, host, Duration::from_secs(60));
    // A name nothing covers gets the generated default once it is there.
    let any = bridge_tests::tls::insecure_client();
    let deadline = Instant::now() + Duration::from_secs(60);
    let covers = |leaf: &[u8], name: &str| leaf.windows(name.len()).any(|w| w == name.as_bytes());
    loop {
        let (leaf, _, _) = https_get(site.websecure(), "unknown.other.test", any.clone()).unwrap();
        if covers(&leaf, "default.acme.test") {
            assert!(covers(&leaf, "alt.acme.test"), "the SANs are on it too");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the default certificate was not replaced by the generated one\npebble log:\n{}",
            pebble.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // It verifies for its own names (no router serves them: 404 over a verified handshake), and
    // is stored like any other.
    let (_, status, _) = https_get(
        site.websecure(),
        "alt.acme.test",
        verifying(&pebble.issuer_roots_pem()),
    )
    .unwrap();
    assert_eq!(status, 404);
    let file = stored(&site.storage());
    let mains: Vec<&str> = file["le"]["Certificates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["domain"]["main"].as_str())
        .collect();
    assert!(mains.contains(&"default.acme.test"), "{mains:?}");
}

/// A resolver answering DNS-01 through pebble-challtestsrv's DNS server (pebble's validator asks
/// it too): the recursive check really asks it; the authoritative check is off (challtestsrv
/// answers NOTIMP to SOA and NS, and would need port 53).
fn dns_challenge(pebble: &Pebble, provider: &str) -> String {
    format!(
        "      dnsChallenge:\n        provider: {provider}\n        resolvers: [\"{}\"]\n        propagation:\n          requireAllRNS: true\n          disableANSChecks: true\n",
        pebble.dns_addr()
    )
}

/// The router asks for `*.{base}` with `{base}` as a SAN: two authorizations whose records share
/// one name, `_acme-challenge.{base}.`.
fn ask_for_wildcard(site: &Site, base: &str) {
    let dynamic = site.dir.path().join("dynamic.yml");
    let text = std::fs::read_to_string(&dynamic).unwrap().replace(
        "        certResolver: le\n",
        &format!("        certResolver: le\n        domains:\n          - main: \"*.{base}\"\n            sans: [{base}]\n"),
    );
    std::fs::write(&dynamic, text).unwrap();
}

/// An `EXEC_PATH` program: appends its arguments to `dir/argv`, then writes the record into
/// challtestsrv (`present`) or removes it (`cleanup`) — unless `write` is false.
fn exec_script(dir: &Path, pebble: &Pebble, write: bool) -> (PathBuf, PathBuf) {
    let log = dir.join("argv");
    let script = dir.join("dns-hook.sh");
    let api = pebble.challtestsrv_url();
    let act = if write {
        format!(
            "case \"$1\" in\n  present) curl -sf -X POST -d \"{{\\\"host\\\":\\\"$2\\\",\\\"value\\\":\\\"$3\\\"}}\" {api}/set-txt ;;\n  cleanup) curl -sf -X POST -d \"{{\\\"host\\\":\\\"$2\\\"}}\" {api}/clear-txt ;;\nesac\n"
        )
    } else {
        String::new()
    };
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$@\" >> {}\n{act}", log.display()),
    )
    .unwrap();
    let mut perm = std::fs::metadata(&script).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o755);
    std::fs::set_permissions(&script, perm).unwrap();
    (script, log)
}

impl Site {
    fn serve_with_env(&self, env: &[(&str, &str)]) -> KillOnDrop {
        let mut cmd = bridge_runtime(&self.plan());
        cmd.envs(env.iter().copied());
        let (child, _) = spawn_serving(&mut cmd, &["web", "websecure"]);
        KillOnDrop(child)
    }
}

/// The names a served leaf carries (its DER searched for each).
fn leaf_names(leaf: &[u8], names: &[&str]) -> Vec<bool> {
    names
        .iter()
        .map(|n| leaf.windows(n.len()).any(|w| w == n.as_bytes()))
        .collect()
}

#[test]
fn dns01_by_exec_obtains_a_wildcard_one_authorization_at_a_time() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    if bridge_tests::process::find_binary("curl").is_none() {
        eprintln!("curl is not installed; skipping the DNS-01 exec test");
        return;
    }
    let be = backend("a").start();
    let base = "dns.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        &dns_challenge(&pebble, "exec"),
        base,
        &be,
    );
    ask_for_wildcard(&site, base);
    let (script, log) = exec_script(site.dir.path(), &pebble, true);
    let _rt = site.serve_with_env(&[
        ("EXEC_PATH", script.to_str().unwrap()),
        ("EXEC_POLLING_INTERVAL", "1"),
        ("EXEC_PROPAGATION_TIMEOUT", "20"),
        ("EXEC_SEQUENCE_INTERVAL", "0"),
    ]);
    // Any name under the wildcard verifies with pebble's root, and the base name too.
    let (leaf, status, _) =
        wait_for_issued(&site, &pebble, "hmi.dns.acme.test", Duration::from_secs(90));
    assert_eq!(
        status, 404,
        "no router for hmi.dns.acme.test, but a verified handshake"
    );
    assert_eq!(
        leaf_names(&leaf, &["*.dns.acme.test", "dns.acme.test"]),
        [true, true]
    );
    let (_, status, body) = https_get(
        site.websecure(),
        base,
        verifying(&pebble.issuer_roots_pem()),
    )
    .unwrap();
    assert_eq!(status, 200, "{body}");
    // lego's default exec arguments, and its sequential solve: each record is validated and
    // removed before the next is written (both live at the same name).
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<Vec<&str>> = calls.lines().map(|l| l.split(' ').collect()).collect();
    let verbs: Vec<&str> = calls.iter().map(|c| c[0]).collect();
    assert_eq!(
        verbs,
        ["present", "cleanup", "present", "cleanup"],
        "{calls:?}"
    );
    for c in &calls {
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(c[1], "_acme-challenge.dns.acme.test.");
        assert_eq!(c[2].len(), 43, "base64url SHA-256: {c:?}");
    }
    assert_ne!(calls[0][2], calls[2][2], "one value per authorization");
    let file = stored(&site.storage());
    let main = file["le"]["Certificates"][0]["domain"]["main"].as_str();
    assert_eq!(main, Some("*.dns.acme.test"));
}

#[test]
fn dns01_by_exec_raw_that_never_writes_the_record_fails_after_the_timeout_and_cleans_up() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let be = backend("a").start();
    let host = "norecord.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        &dns_challenge(&pebble, "exec"),
        host,
        &be,
    );
    let (script, log) = exec_script(site.dir.path(), &pebble, false);
    let started = Instant::now();
    let _rt = site.serve_with_env(&[
        ("EXEC_PATH", script.to_str().unwrap()),
        ("EXEC_MODE", "RAW"),
        ("EXEC_POLLING_INTERVAL", "1"),
        ("EXEC_PROPAGATION_TIMEOUT", "3"),
    ]);
    // RAW mode: `present -- <domain> <token> <keyAuth>`; the check never sees the value, so the
    // order fails once the timeout is over, and the record is removed all the same.
    let deadline = Instant::now() + Duration::from_secs(30);
    let calls = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().any(|l| l.starts_with("cleanup")) {
            break text;
        }
        assert!(
            Instant::now() < deadline,
            "no cleanup after the timeout: {text:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        started.elapsed() >= Duration::from_secs(4),
        "interval 1s + timeout 3s first"
    );
    let lines: Vec<Vec<&str>> = calls
        .lines()
        .take(2)
        .map(|l| l.split(' ').collect())
        .collect();
    assert_eq!(lines[0][..3], ["present", "--", host]);
    assert_eq!(lines[1][..3], ["cleanup", "--", host]);
    let (token, key_auth) = (lines[0][3], lines[0][4]);
    assert!(key_auth.starts_with(&format!("{token}.")), "{key_auth}");
    assert_eq!(
        lines[0],
        lines[1][..]
            .iter()
            .map(|s| if *s == "cleanup" { "present" } else { s })
            .collect::<Vec<_>>()
    );
    // Nothing was issued: the router is still served with the default certificate.
    let verified = https_get(
        site.websecure(),
        host,
        verifying(&pebble.issuer_roots_pem()),
    );
    assert!(
        verified.is_err(),
        "no certificate from pebble: {verified:?}"
    );
}

/// The httpreq endpoint of the test: records every request (path, headers, body) and writes or
/// removes the record in challtestsrv, answering 200 (or 500 for `fail` in the body's value).
struct Endpoint {
    addr: SocketAddr,
    seen: Arc<std::sync::Mutex<Vec<(String, String, serde_json::Value)>>>,
}

fn httpreq_endpoint(pebble: &Pebble) -> Endpoint {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let api = pebble.challtestsrv_url();
    let api: SocketAddr = api.trim_start_matches("http://").parse().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut c) = conn else { return };
            c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let n = c.read(&mut chunk).unwrap_or(0);
                if n == 0 {
                    break (String::new(), Vec::new());
                }
                buf.extend_from_slice(&chunk[..n]);
                if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                    let len: usize = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse().unwrap())
                        })
                        .unwrap_or(0);
                    while buf.len() < end + 4 + len {
                        let n = c.read(&mut chunk).unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                    }
                    break (head, buf[end + 4..].to_vec());
                }
            };
            let path = head.split(' ').nth(1).unwrap_or_default().to_owned();
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            record
                .lock()
                .unwrap()
                .push((path.clone(), head.clone(), json.clone()));
            let host = json["fqdn"].as_str().unwrap_or_default();
            let forward = match path.as_str() {
                "/api/present" => Some((
                    "/set-txt",
                    format!(
                        "{{\"host\":\"{host}\",\"value\":\"{}\"}}",
                        json["value"].as_str().unwrap_or_default()
                    ),
                )),
                "/api/cleanup" => Some(("/clear-txt", format!("{{\"host\":\"{host}\"}}"))),
                _ => None,
            };
            if let Some((p, b)) = forward {
                let mut s = TcpStream::connect(api).unwrap();
                write!(s, "POST {p} HTTP/1.1\r\nHost: {api}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{b}", b.len()).unwrap();
                let mut out = String::new();
                let _ = s.read_to_string(&mut out);
            }
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        }
    });
    Endpoint { addr, seen }
}

#[test]
fn dns01_by_httpreq_presents_every_record_first_with_basic_auth() {
    let (web, websecure) = two_free_ports();
    let Some(pebble) = plain_pebble(web, websecure) else {
        return;
    };
    let be = backend("a").start();
    let host = "one.acme.test";
    let site = Site::new(
        &pebble,
        web,
        websecure,
        &dns_challenge(&pebble, "httpreq"),
        host,
        &be,
    );
    // Two names, two record names: both presented before either is validated (lego's parallel
    // solve), removed at the end.
    let dynamic = site.dir.path().join("dynamic.yml");
    let text = std::fs::read_to_string(&dynamic).unwrap().replace(
        "Host(`one.acme.test`)",
        "Host(`one.acme.test`) || Host(`two.acme.test`)",
    );
    std::fs::write(&dynamic, text).unwrap();
    let endpoint = httpreq_endpoint(&pebble);
    let password = site.dir.path().join("password");
    std::fs::write(&password, "pa55\n").unwrap();
    let url = format!("http://{}/api/", endpoint.addr);
    let _rt = site.serve_with_env(&[
        ("HTTPREQ_ENDPOINT", url.as_str()),
        ("HTTPREQ_USERNAME", "lego"),
        ("HTTPREQ_PASSWORD_FILE", password.to_str().unwrap()),
        ("HTTPREQ_POLLING_INTERVAL", "1"),
        ("HTTPREQ_PROPAGATION_TIMEOUT", "20"),
    ]);
    let (leaf, status, _) =
        wait_for_issued(&site, &pebble, "two.acme.test", Duration::from_secs(90));
    assert_eq!(status, 200);
    assert_eq!(
        leaf_names(&leaf, &["one.acme.test", "two.acme.test"]),
        [true, true]
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while endpoint.seen.lock().unwrap().len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let seen = endpoint.seen.lock().unwrap().clone();
    let paths: Vec<&str> = seen.iter().map(|(p, _, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/api/present",
            "/api/present",
            "/api/cleanup",
            "/api/cleanup"
        ]
    );
    let mut fqdns: Vec<&str> = seen[..2]
        .iter()
        .map(|(_, _, j)| j["fqdn"].as_str().unwrap())
        .collect();
    fqdns.sort_unstable();
    assert_eq!(
        fqdns,
        [
            "_acme-challenge.one.acme.test.",
            "_acme-challenge.two.acme.test."
        ]
    );
    for (_, head, json) in &seen {
        let head = head.to_ascii_lowercase();
        // base64("lego:pa55"): the password file's line end is not part of it.
        assert!(head.contains("authorization: basic bgvnbzpwytu1"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("accept: application/json"), "{head}");
        assert_eq!(json["value"].as_str().map(str::len), Some(43), "{json}");
        assert_eq!(
            json.as_object().map(|o| o.len()),
            Some(2),
            "only fqdn and value: {json}"
        );
    }
}
