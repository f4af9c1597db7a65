//! HTTPS: the prod profile served end to end (redirect, HSTS, TLS versions, ALPN, the secured
//! dashboard, failover), mutual TLS, certificate rotation on SIGHUP.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::{Backend, backend};
use bridge_tests::process::{KillOnDrop, bridge_runtime, bridgectl, signal};
use bridge_tests::prod::{DOMAIN, Prod, curl, write_test_cert};
use bridge_tests::tls::{TestCa, served_leaf, tls_connect, tls_get};

use crate::harness::{Runtime, get, websocket_echo};

/// The prod build of the example with a test certificate (`support/prod.rs`), served in front of `a`
/// and `b`.
fn start_prod(a: &Backend, b: &Backend) -> Prod {
    bridge_tests::prod::start_prod(a.addr.port(), b.addr.port())
}

fn s_client(addr: SocketAddr, args: &[&str]) -> String {
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            "-servername",
            DOMAIN,
        ])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl is installed");
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn prod_profile_serves_https_with_redirect_hsts_secured_dashboard_and_failover() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let p = start_prod(&a, &b);

    // HTTPS, HTTP/1.1 and HTTP/2 (ALPN), to the active node, with HSTS.
    let (status, head, body) = curl(&p, p.websecure, "/ui?x=1", &["--http1.1"]);
    assert_eq!(status, 200, "{head}{body}");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.starts_with("a /ui?x=1"), "{body}");
    assert!(
        head.contains("strict-transport-security: max-age=31536000; includesubdomains"),
        "{head}"
    );
    let (status, head, body) = curl(&p, p.websecure, "/ui", &["--http2"]);
    assert_eq!(status, 200, "{head}");
    assert!(head.starts_with("http/2 200"), "{head}");
    assert!(body.starts_with("a /ui"), "{body}");

    // Plain HTTP on :80 is redirected permanently to HTTPS, path and query kept, without HSTS.
    let mut s = TcpStream::connect(p.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /ui/page?tab=2&x=%20 HTTP/1.1\r\nHost: {DOMAIN}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let lower = out.to_ascii_lowercase();
    assert!(out.starts_with("HTTP/1.1 301"), "{out}");
    assert!(
        lower.contains(&format!(
            "location: https://{DOMAIN}/ui/page?tab=2&x=%20\r\n"
        )),
        "{out}"
    );
    assert!(!lower.contains("strict-transport-security"), "{out}");

    // Protocol versions and ALPN.
    let old = s_client(p.websecure, &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]);
    assert!(
        old.contains("Cipher is (NONE)") && old.contains("alert"),
        "TLS 1.1 must be refused: {old}"
    );
    let v12 = s_client(p.websecure, &["-tls1_2"]);
    assert!(v12.contains("New, TLSv1.2, Cipher is ECDHE-"), "{v12}");
    let v13 = s_client(p.websecure, &["-tls1_3", "-alpn", "h2"]);
    assert!(v13.contains("New, TLSv1.3, Cipher is TLS_"), "{v13}");
    assert!(v13.contains("ALPN protocol: h2"), "{v13}");

    // Dashboard: over TLS, behind basicAuth; plain HTTP on its port never serves it.
    let (status, head, _) = curl(&p, p.api, "/dashboard/", &[]);
    assert_eq!(status, 401, "{head}");
    assert!(
        head.contains("www-authenticate: basic realm=\"bridgectl\""),
        "{head}"
    );
    let (status, _, _) = curl(&p, p.api, "/dashboard/", &["-u", "admin:wrong"]);
    assert_eq!(status, 401);
    let (status, _, body) = curl(&p, p.api, "/dashboard/", &["-u", "admin:s3cret"]);
    assert_eq!(status, 200);
    assert!(
        body.contains("<html") || body.contains("<!doctype"),
        "{body}"
    );
    let (status, _, body) = curl(&p, p.api, "/api/http/services", &["-u", "admin:s3cret"]);
    assert_eq!(status, 200);
    assert!(body.contains("serverStatus"), "{body}");
    let (status, _) = get(p.api, "/dashboard/");
    assert_ne!(
        status, 200,
        "the dashboard must not be served over plain HTTP"
    );
    let (status, _) = get(p.api, "/api/http/services");
    assert_ne!(status, 200, "the API must not be served over plain HTTP");

    // Failover over HTTPS.
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    let started = Instant::now();
    loop {
        let (_, _, body) = curl(&p, p.websecure, "/ui", &[]);
        if body.starts_with("b ") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "b never got HTTPS traffic"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `curl` for `https://DOMAIN/ui` at `addr`, trusting the CA file `ca`, with `extra` arguments.
fn curl_ui(addr: SocketAddr, ca: &str, extra: &[&str]) -> std::process::Output {
    Command::new("curl")
        .args(["-sS", "--max-time", "10", "--cacert", ca])
        .arg("--resolve")
        .arg(format!("{DOMAIN}:{}:127.0.0.1", addr.port()))
        .args(extra)
        .arg(format!("https://{DOMAIN}:{}/ui", addr.port()))
        .output()
        .unwrap()
}

#[test]
fn mutual_tls_accepts_only_clients_with_a_certificate_from_the_ca() {
    let a = backend("a").start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &[DOMAIN]);
    ca.issue(d, "client", &[]);
    std::fs::write(
        d.join("traefik.yml"),
        "entryPoints:\n  websecure:\n    address: \":443\"\n    http:\n      tls:\n        options: mtls\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    let p = |n: &str| d.join(n).to_string_lossy().into_owned();
    std::fs::write(
        d.join("dynamic.yml"),
        format!(
            "http:\n  routers:\n    central:\n      rule: \"PathPrefix(`/`)\"\n      service: central\n  services:\n    central:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\ntls:\n  certificates:\n    - certFile: {}\n      keyFile: {}\n  options:\n    mtls:\n      clientAuth:\n        caFiles: [{}]\n        clientAuthType: RequireAndVerifyClientCert\n",
            a.addr.port(),
            p("server.crt"),
            p("server.key"),
            p("ca.crt")
        ),
    )
    .unwrap();
    let plan = bridge_tests::build_plan(d, "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan).args(["--bind", "websecure=127.0.0.1:0"]),
        &["websecure"],
    );
    let _rt = Runtime {
        child: KillOnDrop(child),
        web: addrs[0],
        api: addrs[0],
    };
    let curl = |extra: &[&str]| curl_ui(addrs[0], &p("ca.crt"), extra);
    let with = curl(&["--cert", &p("client.crt"), "--key", &p("client.key")]);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(String::from_utf8_lossy(&with.stdout).starts_with("a /ui"));
    let without = curl(&[]);
    assert!(
        !without.status.success(),
        "a client without a certificate was served"
    );
    // A certificate from another CA is refused too.
    let other = tempfile::tempdir().unwrap();
    let other_ca = TestCa::new(other.path());
    other_ca.issue(other.path(), "client", &[]);
    let od = |n: &str| other.path().join(n).to_string_lossy().into_owned();
    let foreign = curl(&["--cert", &od("client.crt"), "--key", &od("client.key")]);
    assert!(
        !foreign.status.success(),
        "a client of another CA was served"
    );
}

/// Inline PEM, which Traefik takes wherever it takes a file: the entry point's certificate and
/// key, the client CA of mutual TLS and a servers transport's rootCAs written into the dynamic
/// file serve exactly as the files would; a broken inline value is refused by `check`.
#[test]
fn inline_pem_serves_like_files_and_a_broken_one_is_refused_by_check() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &[DOMAIN]);
    ca.issue(d, "client", &[]);
    ca.issue(d, "backend", &["backend.test"]);
    let tls_backend = backend("tls")
        .tls(&d.join("backend.crt"), &d.join("backend.key"))
        .start();
    let p = |n: &str| d.join(n).to_string_lossy().into_owned();
    // A YAML block scalar holding the file's PEM, its lines indented by `indent` spaces.
    let block = |file: &str, indent: usize| {
        let pem = std::fs::read_to_string(d.join(file)).unwrap();
        let pad = " ".repeat(indent);
        let lines: String = pem.lines().map(|l| format!("{pad}{l}\n")).collect();
        format!("|\n{lines}")
    };
    std::fs::write(
        d.join("traefik.yml"),
        "entryPoints:\n  websecure:\n    address: \":443\"\n    http:\n      tls:\n        options: mtls\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    central:\n      rule: \"PathPrefix(`/`)\"\n      service: central\n  services:\n    central:\n      loadBalancer:\n        serversTransport: inline\n        servers:\n          - url: \"https://backend.test:{}\"\n  serversTransports:\n    inline:\n      rootCAs:\n        - {}tls:\n  certificates:\n    - certFile: {}      keyFile: {}  options:\n    mtls:\n      clientAuth:\n        caFiles:\n          - {}        clientAuthType: RequireAndVerifyClientCert\n",
        tls_backend.addr.port(),
        block("ca.crt", 10),
        block("server.crt", 8),
        block("server.key", 8),
        block("ca.crt", 12),
    );
    std::fs::write(d.join("dynamic.yml"), &dynamic).unwrap();
    let plan = bridge_tests::build_plan(d, "dev", "plan.json", &[]);
    let text = std::fs::read_to_string(&plan).unwrap();
    assert!(
        text.contains("\"inline\""),
        "the PEM values are inline in the plan"
    );
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan).args([
            "--bind",
            "websecure=127.0.0.1:0",
            "--resolve",
            "backend.test=127.0.0.1",
        ]),
        &["websecure"],
    );
    let _rt = Runtime {
        child: KillOnDrop(child),
        web: addrs[0],
        api: addrs[0],
    };
    let curl = |extra: &[&str]| curl_ui(addrs[0], &p("ca.crt"), extra);
    let with = curl(&["--cert", &p("client.crt"), "--key", &p("client.key")]);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    // Served with the inline certificate, verified by the inline client CA, and the backend's
    // certificate verified against the inline rootCAs.
    assert!(
        String::from_utf8_lossy(&with.stdout).starts_with("tls /ui"),
        "{}",
        String::from_utf8_lossy(&with.stdout)
    );
    assert!(
        !curl(&[]).status.success(),
        "a client without a certificate was served"
    );
    // A cut key is found by check, with its place.
    let key = std::fs::read_to_string(d.join("server.key")).unwrap();
    let cut: String = key.lines().take(3).map(|l| format!("{l}\n")).collect();
    let broken = dynamic.replace(&block("server.key", 8), &{
        let lines: String = cut.lines().map(|l| format!("        {l}\n")).collect();
        format!("|\n{lines}")
    });
    assert_ne!(broken, dynamic);
    std::fs::write(d.join("dynamic.yml"), &broken).unwrap();
    let out = bridgectl().arg("check").arg(d).output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("the inline private key PEM is not usable")
            && report.contains("dynamic.yml:"),
        "{report}"
    );
}

#[test]
fn sighup_rotates_the_certificate_without_dropping_established_connections() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let p = start_prod(&a, &b);
    let mut kept = tls_connect(p.websecure);
    let first = served_leaf(&kept);
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));

    // A new certificate at the same paths, then SIGHUP.
    write_test_cert(p.dir.path(), "bridge");
    let pid = p.child.id();
    signal(pid, "-HUP");
    let started = Instant::now();
    let rotated = loop {
        let leaf = served_leaf(&tls_connect(p.websecure));
        if leaf != first {
            break leaf;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the certificate was not rotated"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The connection made before the reload still works.
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));
    // WebSocket over TLS (the central UI's SignalR circuit).
    websocket_echo(&mut tls_connect(p.websecure), DOMAIN);

    // A broken certificate is rejected on reload: the rotated one keeps being served.
    std::fs::write(p.dir.path().join("bridge.crt"), "not a certificate").unwrap();
    signal(pid, "-HUP");
    std::thread::sleep(Duration::from_millis(700));
    let mut fresh = tls_connect(p.websecure);
    assert_eq!(served_leaf(&fresh), rotated);
    assert!(tls_get(&mut fresh, "/ui").1.starts_with("a /ui"));
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));
}
