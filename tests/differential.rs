//! Differential tests: the same files served by bridge-runtime and by the real Traefik
//! (`bridge_tests::traefik`), the same requests sent to both, status, body and the fields that
//! matter compared. Without a Traefik binary each test still checks bridge-runtime's own
//! answers and says the comparison was skipped (under `CI=true` it fails instead).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

#[path = "differential/acme_dns01.rs"]
mod acme_dns01;
#[path = "differential/balancing.rs"]
mod balancing;
#[path = "differential/buffering.rs"]
mod buffering;
#[path = "differential/circuit_breaker.rs"]
mod circuit_breaker;
#[path = "differential/client_cert.rs"]
mod client_cert;
#[path = "differential/compress.rs"]
mod compress;
#[path = "differential/digest_auth.rs"]
mod digest_auth;
#[path = "differential/failover_errors.rs"]
mod failover_errors;
#[path = "differential/forward_auth.rs"]
mod forward_auth;
#[path = "differential/grpc_health.rs"]
mod grpc_health;
#[path = "differential/grpc_web.rs"]
mod grpc_web;
#[path = "differential/header_labels.rs"]
mod header_labels;
#[path = "differential/headers_secure.rs"]
mod headers_secure;
#[path = "differential/http3.rs"]
mod http3;
#[path = "differential/internal_services.rs"]
mod internal_services;
#[path = "differential/ocsp.rs"]
mod ocsp;
#[path = "differential/parent_refs.rs"]
mod parent_refs;
#[path = "differential/paths.rs"]
mod paths;
#[path = "differential/proxy_protocol.rs"]
mod proxy_protocol;
#[path = "differential/redirections.rs"]
mod redirections;
#[path = "differential/service_middlewares.rs"]
mod service_middlewares;
#[path = "differential/tls_options.rs"]
mod tls_options;
#[path = "differential/transports.rs"]
mod transports;

/// A backend that answers `<target> replaced=<X-Replaced-Path>`.
fn path_echo() -> bridge_tests::backends::Backend {
    backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "{} replaced={}",
                r.target,
                r.header("x-replaced-path").unwrap_or("-")
            ))
        })
        .start()
}

#[test]
fn replace_path_regex_rewrites_as_traefik_does() {
    let oracle = oracle("replace_path_regex_rewrites_as_traefik_does");
    let app = path_echo();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    r:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      middlewares: [rewrite]
      service: app
  middlewares:
    rewrite:
      replacePathRegex:
        regex: "^/foo/(.*)"
        replacement: "/bar/$1"
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        app.port()
    );
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["r"]);
    for (target, want) in [
        ("/foo/x/y?q=1", "/bar/x/y?q=1 replaced=/foo/x/y"),
        ("/foo/", "/bar/ replaced=/foo/"),
        ("/other", "/other replaced=-"),
        ("/foo/a%20b", "/bar/a%20b replaced=/foo/a%20b"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!(got.status, 200, "{target}");
        assert_eq!(got.text(), want, "{target}");
    }
}

/// `/status/N` answers N with `X-App: 1`, a cookie and a body of its own.
fn status_app() -> bridge_tests::backends::Backend {
    backend("app")
        .answer(|r| {
            let code: u16 = r
                .path()
                .strip_prefix("/status/")
                .and_then(|c| c.parse().ok())
                .unwrap_or(200);
            Reply {
                status: format!("{code} Whatever"),
                fields: "X-App: 1\r\nSet-Cookie: app=1\r\nContent-Type: application/x-app\r\n"
                    .into(),
                body: format!("app says {code}"),
            }
        })
        .start()
}

#[test]
fn errors_replaces_caught_answers_with_the_page_services_as_traefik_does() {
    let oracle = oracle("errors_replaces_caught_answers_with_the_page_services_as_traefik_does");
    let app = status_app();
    let pages = backend("pages")
        .answer(|r| Reply {
            status: "200 OK".into(),
            fields: format!(
                "Content-Type: text/html\r\nX-Page: 1\r\nX-Seen-Xff: {}\r\n",
                r.header("x-forwarded-for").unwrap_or("none")
            ),
            body: format!(
                "page {} {} host={} cookie={}",
                r.method,
                r.target,
                r.host,
                r.header("cookie").unwrap_or("-")
            ),
        })
        .start();
    // A page service whose only server is gone: the client gets Traefik's 502 text, with the
    // caught status.
    let gone = bridge_tests::traefik::free_port();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    plain:
      rule: "PathPrefix(`/p/`)"
      entryPoints: [web]
      middlewares: [strip, pages]
      service: app
    query:
      rule: "PathPrefix(`/q/`)"
      entryPoints: [web]
      middlewares: [strip, detailed]
      service: app
    dead:
      rule: "PathPrefix(`/d/`)"
      entryPoints: [web]
      middlewares: [strip, deadpages]
      service: app
    unreachable:
      rule: "PathPrefix(`/gone`)"
      entryPoints: [web]
      service: gone
    guarded:
      rule: "PathPrefix(`/g/`)"
      entryPoints: [web]
      middlewares: [authpages, auth]
      service: app
  middlewares:
    strip:
      stripPrefixRegex:
        regex: ["^/[pqd]"]
    pages:
      errors:
        status: ["500-599", "404"]
        service: pages
    detailed:
      errors:
        status: ["500-599"]
        statusRewrites:
          "502-503": 500
        service: pages
        query: "err/{{status}}?o={{originalStatus}}&u={{url}}"
    authpages:
      errors:
        status: ["401"]
        service: pages
        query: "/login"
    auth:
      basicAuth:
        users: ["admin:{{SHA}}qUqP5cyxm6YcTAhz05Hph5gvu9M="]
    deadpages:
      errors:
        status: ["500-599"]
        service: gone
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app}"
    pages:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{pages}"
    gone:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{gone}"
"#,
        app = app.port(),
        pages = pages.port(),
    );
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["plain", "query", "dead", "unreachable", "guarded"],
    );
    let compare = &[
        "content-type",
        "x-page",
        "x-app",
        "set-cookie",
        "x-seen-xff",
    ];
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[("Cookie", "c=1")],
        compare,
        body: b"",
    };
    // Caught: the page's fields and body, the caught status; nothing of the app's answer.
    let got = agree(&twin, &probe("/p/status/503"));
    assert_eq!(got.status, 503);
    assert_eq!(got.text(), "page GET / host=test.local cookie=c=1");
    assert_eq!(got.header("x-page"), Some("1"));
    assert_eq!(got.header("x-app"), None);
    // Traefik's page request carries no X-Forwarded-For.
    assert_eq!(got.header("x-seen-xff"), Some("none"));
    let got = agree(&twin, &probe("/p/status/404"));
    assert_eq!((got.status, got.header("x-page")), (404, Some("1")));
    // Not caught: the app's answer untouched.
    let got = agree(&twin, &probe("/p/status/403"));
    assert_eq!((got.status, got.text().as_str()), (403, "app says 403"));
    assert_eq!(got.header("x-app"), Some("1"));
    let got = agree(&twin, &probe("/p/status/200"));
    assert_eq!(got.text(), "app says 200");
    // The page request is a GET whatever the method was.
    let got = agree(
        &twin,
        &Probe {
            method: "POST",
            ..probe("/p/status/500")
        },
    );
    assert_eq!(got.text(), "page GET / host=test.local cookie=c=1");
    // Rewrites and placeholders.
    let got = agree(&twin, &probe("/q/status/502?a=b%20c"));
    assert_eq!(got.status, 500);
    assert_eq!(
        got.text(),
        "page GET /err/500?o=502&u=http%3A%2F%2Ftest.local%2Fstatus%2F502%3Fa%3Db%2520c host=test.local cookie=c=1"
    );
    let got = agree(&twin, &probe("/q/status/504"));
    assert_eq!(got.status, 504);
    // The page service cannot be reached: its 502 text with the caught status.
    let got = agree(&twin, &probe("/d/status/500"));
    assert_eq!(got.status, 500);
    assert_eq!(got.header("x-page"), None);
    // ... which is what a server that cannot be reached gives without the middleware.
    let got = agree(&twin, &probe("/gone"));
    assert_eq!((got.status, got.text().as_str()), (502, "Bad Gateway"));
    // A later middleware's own answer is caught too: basicAuth's 401 becomes a login page
    // (without basicAuth's challenge, as the page's fields replace it).
    let got = agree(
        &twin,
        &Probe {
            compare: &["content-type", "x-page", "www-authenticate"],
            ..probe("/g/x")
        },
    );
    assert_eq!(got.status, 401);
    assert_eq!(got.text(), "page GET /login host=test.local cookie=c=1");
}

/// The answers to `n` requests in a row, as (status, body, Retry-After).
fn statuses(
    addr: std::net::SocketAddr,
    target: &str,
    headers: &[(&str, &str)],
    n: usize,
) -> Vec<(u16, String, Option<String>)> {
    (0..n)
        .map(|_| {
            let a = bridge_tests::traefik::fetch(addr, "GET", target, headers, b"").unwrap();
            (
                a.status,
                a.text(),
                a.header("retry-after").map(str::to_owned),
            )
        })
        .collect()
}

#[test]
fn rate_limit_refuses_and_keeps_per_source_and_per_router_buckets_as_traefik_does() {
    let oracle =
        oracle("rate_limit_refuses_and_keeps_per_source_and_per_router_buckets_as_traefik_does");
    let app = path_echo();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    a:
      rule: "PathPrefix(`/a`)"
      entryPoints: [web]
      middlewares: [slow]
      service: app
    b:
      rule: "PathPrefix(`/b`)"
      entryPoints: [web]
      middlewares: [slow]
      service: app
    keyed:
      rule: "PathPrefix(`/k`)"
      entryPoints: [web]
      middlewares: [bykey]
      service: app
  middlewares:
    slow:
      rateLimit:
        average: 1
        burst: 2
    bykey:
      rateLimit:
        average: 1
        period: 1m
        sourceCriterion:
          requestHeaderName: X-Key
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        app.port()
    );
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["a", "b", "keyed"],
    );
    let mut seen = Vec::new();
    for (who, addr) in twin.targets() {
        // Burst 2, then a wait of about a second, beyond the 500 ms Traefik waits out: 429.
        let a = statuses(addr, "/a", &[], 4);
        // Router b has buckets of its own although it names the same middleware.
        let b = statuses(addr, "/b", &[], 3);
        // One bucket per X-Key value; no field is a source of its own (the empty one).
        let k = [
            statuses(addr, "/k", &[("X-Key", "one")], 2),
            statuses(addr, "/k", &[("X-Key", "two")], 1),
            statuses(addr, "/k", &[], 2),
        ]
        .concat();
        seen.push((who, a, b, k));
    }
    let (_, a, b, k) = &seen[0];
    let ok = |body: &str| (200, body.to_owned(), None);
    let refused = (429, "Too Many Requests".to_owned(), Some("1".to_owned()));
    assert_eq!(
        a,
        &vec![
            ok("/a replaced=-"),
            ok("/a replaced=-"),
            refused.clone(),
            refused.clone()
        ]
    );
    assert_eq!(b, &vec![ok("/b replaced=-"), ok("/b replaced=-"), refused]);
    let refused_minute = (429, "Too Many Requests".to_owned(), Some("60".to_owned()));
    assert_eq!(
        k,
        &vec![
            ok("/k replaced=-"),
            refused_minute.clone(),
            ok("/k replaced=-"),
            ok("/k replaced=-"),
            refused_minute,
        ]
    );
    for (who, a2, b2, k2) in &seen[1..] {
        assert_eq!((a2, b2, k2), (a, b, k), "bridge vs {who}");
    }
}

/// Sends a WebSocket upgrade for `/ws` and reads the `101`; the connection is the tunnel.
fn open_tunnel(addr: std::net::SocketAddr) -> std::net::TcpStream {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    write!(
        s,
        "GET /ws HTTP/1.1\r\nHost: test.local\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    s.write_all(b"ping").unwrap();
    let mut back = [0u8; 4];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"ping");
    s
}

#[test]
fn in_flight_req_holds_a_slot_for_the_whole_answer_and_tunnel_as_traefik_does() {
    let oracle =
        oracle("in_flight_req_holds_a_slot_for_the_whole_answer_and_tunnel_as_traefik_does");
    let app = backend("app").start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    r:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      middlewares: [one]
      service: app
  middlewares:
    one:
      inFlightReq:
        amount: 1
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        app.port()
    );
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["r"]);
    for (who, addr) in twin.targets() {
        // A request in flight (the backend holds `/slow` for 1.5 s) takes the host's slot.
        let slow = std::thread::spawn(move || {
            bridge_tests::traefik::fetch(addr, "GET", "/slow", &[], b"").unwrap()
        });
        std::thread::sleep(std::time::Duration::from_millis(400));
        let busy = bridge_tests::traefik::fetch(addr, "GET", "/x", &[], b"").unwrap();
        assert_eq!(
            (
                busy.status,
                busy.text().as_str(),
                busy.header("content-type")
            ),
            (429, "max connections reached: 1", None),
            "{who}"
        );
        // Another host is another source.
        let other =
            bridge_tests::traefik::fetch(addr, "GET", "/x", &[("Host", "other.local")], b"")
                .unwrap();
        assert_eq!(other.status, 200, "{who}");
        assert_eq!(slow.join().unwrap().status, 200, "{who}");
        let free = bridge_tests::traefik::fetch(addr, "GET", "/x", &[], b"").unwrap();
        assert_eq!(
            free.status, 200,
            "{who}: the slot is given back when the answer is sent"
        );
        // A tunnel holds its slot until it closes.
        let tunnel = open_tunnel(addr);
        let busy = bridge_tests::traefik::fetch(addr, "GET", "/x", &[], b"").unwrap();
        assert_eq!(busy.status, 429, "{who}: the tunnel holds the slot");
        drop(tunnel);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        loop {
            let a = bridge_tests::traefik::fetch(addr, "GET", "/x", &[], b"").unwrap();
            if a.status == 200 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{who}: the slot came back after the tunnel closed"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}
