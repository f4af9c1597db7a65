//! HTTP/3 (`entryPoints.<name>.http3`): the same requests over QUIC to Traefik and to
//! bridge-runtime — same routing, status and body — and `Alt-Svc` on answers over TLS on TCP
//! exactly as Traefik writes it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::h3client::{H3Request, request};
use bridge_tests::tls::{TestCa, insecure_client};
use bridge_tests::traefik::{oracle, serve_twice_with};

/// `GET path` over TLS on TCP with SNI `host`: the answer's head, lower-cased.
fn tls_head(addr: SocketAddr, host: &str, path: &str) -> String {
    let conn =
        rustls::ClientConnection::new(insecure_client(), host.to_owned().try_into().unwrap())
            .unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).to_ascii_lowercase();
    text.split("\r\n\r\n").next().unwrap_or_default().to_owned()
}

#[test]
fn http3_answers_as_traefik_does_and_tls_answers_announce_it() {
    let oracle = oracle("http3_answers_as_traefik_does_and_tls_answers_announce_it");
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "{} {} host={} proto={} body={}",
                r.method,
                r.target,
                r.header("host").unwrap_or("-"),
                r.header("x-forwarded-proto").unwrap_or("-"),
                String::from_utf8_lossy(&r.body)
            ))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    ca.issue(dir.path(), "h3", &["h3.test", "other.test"]);
    let crt = dir.path().join("h3.crt");
    let key = dir.path().join("h3.key");
    let dynamic = format!(
        "http:\n  routers:\n    app:\n      rule: Host(`h3.test`)\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://{}\n\
         tls:\n  certificates:\n    - certFile: {}\n      keyFile: {}\n",
        app.addr,
        crt.display(),
        key.display()
    );
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["app"],
        "    http:\n      tls: {}\n    http3:\n      advertisedPort: 8443\n",
    );
    let body = vec![b'x'; 70_000];
    let cases: Vec<(&str, &str, H3Request)> = vec![
        ("GET", "h3.test", H3Request::get("/x?y=1")),
        ("POST", "h3.test", H3Request::post("/upload", &body)),
        ("unrouted host", "other.test", H3Request::get("/")),
    ];
    let mut answers: Vec<Vec<(u16, String)>> = Vec::new();
    for (who, addr) in twin.targets() {
        let mut got = Vec::new();
        for (what, host, req) in &cases {
            let a = request(addr, host, req.clone(), insecure_client())
                .unwrap_or_else(|e| panic!("{who}: {what} over HTTP/3: {e}"));
            assert!(
                a.header("alt-svc").is_none(),
                "{who}: no Alt-Svc over HTTP/3 itself: {:?}",
                a.headers
            );
            got.push((a.status, a.text()));
        }
        // Over TCP the same entry point announces HTTP/3 on every answer, its own 404s included.
        for path in ["/x", "/nowhere"] {
            let head = tls_head(addr, "h3.test", path);
            assert!(
                head.contains("\r\nalt-svc: h3=\":8443\"; ma=2592000"),
                "{who}: {path}: {head}"
            );
        }
        answers.push(got);
    }
    let ours = &answers[0];
    assert_eq!(ours[0].0, 200);
    assert_eq!(ours[0].1, "GET /x?y=1 host=h3.test proto=https body=");
    assert_eq!(ours[1].0, 200);
    assert!(
        ours[1]
            .1
            .starts_with("POST /upload host=h3.test proto=https body=xxxx"),
        "{}",
        &ours[1].1[..60]
    );
    assert_eq!(
        ours[1].1.len(),
        "POST /upload host=h3.test proto=https body=".len() + 70_000
    );
    assert_eq!(ours[2].0, 404);
    if let Some(theirs) = answers.get(1) {
        assert_eq!(ours, theirs, "bridge-runtime and Traefik over HTTP/3");
    }
}
