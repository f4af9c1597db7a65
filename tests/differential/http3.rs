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

/// Traefik sets `Alt-Svc` before its handler runs: a server's own values come after it, and a
/// `headers` middleware that removes the field removes the announcement too.
#[test]
fn alt_svc_comes_first_and_a_headers_middleware_may_remove_it() {
    let oracle = oracle("alt_svc_comes_first_and_a_headers_middleware_may_remove_it");
    let app = backend("app")
        .answer(|_| {
            let mut reply = Reply::ok("app");
            reply.fields = "Alt-Svc: h2=\":9999\"\r\n".into();
            reply
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path());
    ca.issue(dir.path(), "h3", &["h3.test"]);
    let crt = dir.path().join("h3.crt");
    let key = dir.path().join("h3.key");
    let dynamic = format!(
        "http:\n  routers:\n    loud:\n      rule: Host(`h3.test`) && PathPrefix(`/loud`)\n      service: app\n    quiet:\n      rule: Host(`h3.test`) && PathPrefix(`/quiet`)\n      service: app\n      middlewares: [no-alt]\n  middlewares:\n    no-alt:\n      headers:\n        customResponseHeaders:\n          Alt-Svc: \"\"\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://{}\n\
         tls:\n  certificates:\n    - certFile: {}\n      keyFile: {}\n",
        app.addr,
        crt.display(),
        key.display()
    );
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["loud", "quiet"],
        "    http:\n      tls: {}\n    http3:\n      advertisedPort: 8443\n",
    );
    let alt_svc = |head: &str| -> Vec<String> {
        head.split("\r\n")
            .filter_map(|l| l.strip_prefix("alt-svc: "))
            .map(str::to_owned)
            .collect()
    };
    let mut seen = Vec::new();
    for (who, addr) in twin.targets() {
        let loud = alt_svc(&tls_head(addr, "h3.test", "/loud"));
        let quiet = alt_svc(&tls_head(addr, "h3.test", "/quiet"));
        assert_eq!(
            loud,
            ["h3=\":8443\"; ma=2592000", "h2=\":9999\""],
            "{who}: /loud"
        );
        assert!(quiet.is_empty(), "{who}: /quiet: {quiet:?}");
        seen.push((loud, quiet));
    }
    if seen.len() == 2 {
        assert_eq!(seen[0], seen[1], "bridge-runtime and Traefik");
    }
}
