//! `proxyProtocol` on an entry point: the PROXY header (v1 text, v2 binary) a trusted peer
//! sends before anything else names the client for `X-Forwarded-For`, `X-Real-Ip` and
//! `ipAllowList`, as in Traefik. Raw sockets, the same bytes to both proxies; an "other" peer
//! is a client socket bound to 127.0.0.2.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{oracle, parse_answer, serve_twice_with};

/// What a connection that starts with `bytes` gets: `"<status> <body>"`, or `"closed"` when the
/// proxy closed it without an answer.
fn outcome(addr: SocketAddr, from: &str, bytes: &[u8]) -> String {
    let socket =
        socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).expect("socket");
    let local: SocketAddr = format!("{from}:0").parse().expect("address");
    socket.bind(&local.into()).expect("bind the client address");
    socket.connect(&addr.into()).expect("connect");
    let mut s: TcpStream = socket.into();
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let _ = s.write_all(bytes);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    match parse_answer(&raw, false) {
        Some(a) => format!("{} {}", a.status, a.text()),
        None if raw.is_empty() => "closed".to_owned(),
        None => format!("unparsable {:?}", String::from_utf8_lossy(&raw)),
    }
}

const GET: &[u8] = b"GET /who HTTP/1.1\r\nHost: test.local\r\nConnection: close\r\n\r\n";

fn v2_inet(command: u8, src: [u8; 4], port: u16) -> Vec<u8> {
    let mut out = b"\r\n\r\n\0\r\nQUIT\n".to_vec();
    out.extend_from_slice(&[0x20 | command, 0x11, 0, 12]);
    out.extend_from_slice(&src);
    out.extend_from_slice(&[127, 0, 0, 1]);
    out.extend_from_slice(&port.to_be_bytes());
    out.extend_from_slice(&80u16.to_be_bytes());
    out
}

#[test]
fn the_proxy_header_names_the_client_as_in_traefik() {
    let oracle = oracle("the_proxy_header_names_the_client_as_in_traefik");
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "xff={} real={}",
                r.header("x-forwarded-for").unwrap_or("-"),
                r.header("x-real-ip").unwrap_or("-")
            ))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    who:
      rule: "PathPrefix(`/who`)"
      entryPoints: [web]
      service: app
    allowed:
      rule: "PathPrefix(`/allowed`)"
      entryPoints: [web]
      middlewares: [only]
      service: app
  middlewares:
    only:
      ipAllowList:
        sourceRange: ["203.0.113.7/32"]
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        app.port()
    );
    let web_extra = "    proxyProtocol:\n      trustedIPs: [\"127.0.0.1\"]\n";
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["who", "allowed"],
        web_extra,
    );
    let cat = |a: &[u8], b: &[u8]| [a, b].concat();
    let v1 = b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 80\r\n";
    let allowed = b"GET /allowed HTTP/1.1\r\nHost: test.local\r\nConnection: close\r\n\r\n";
    let cases: Vec<(&str, &str, Vec<u8>, Option<&str>)> = vec![
        (
            "v1 from a trusted peer",
            "127.0.0.1",
            cat(v1, GET),
            Some("200 xff=203.0.113.7 real=203.0.113.7"),
        ),
        (
            "v1 TCP6",
            "127.0.0.1",
            cat(b"PROXY TCP6 2001:db8::7 ::1 5555 80\r\n", GET),
            Some("200 xff=2001:db8::7 real=2001:db8::7"),
        ),
        (
            "no header from a trusted peer",
            "127.0.0.1",
            GET.to_vec(),
            Some("200 xff=127.0.0.1 real=127.0.0.1"),
        ),
        (
            "v1 UNKNOWN",
            "127.0.0.1",
            cat(b"PROXY UNKNOWN\r\n", GET),
            Some("200 xff=127.0.0.1 real=127.0.0.1"),
        ),
        (
            "v2 PROXY",
            "127.0.0.1",
            cat(&v2_inet(1, [203, 0, 113, 9], 4000), GET),
            Some("200 xff=203.0.113.9 real=203.0.113.9"),
        ),
        (
            "v2 LOCAL",
            "127.0.0.1",
            cat(&v2_inet(0, [203, 0, 113, 9], 4000), GET),
            Some("200 xff=127.0.0.1 real=127.0.0.1"),
        ),
        (
            "ipAllowList sees the header's client",
            "127.0.0.1",
            cat(v1, allowed),
            Some("200 xff=203.0.113.7 real=203.0.113.7"),
        ),
        (
            "ipAllowList without the header",
            "127.0.0.1",
            allowed.to_vec(),
            None,
        ),
        (
            "a malformed v1 header",
            "127.0.0.1",
            cat(b"PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n", GET),
            None,
        ),
        (
            "v1 from a peer that is not trusted",
            "127.0.0.2",
            cat(v1, GET),
            None,
        ),
        (
            "no header from a peer that is not trusted",
            "127.0.0.2",
            GET.to_vec(),
            Some("200 xff=127.0.0.2 real=127.0.0.2"),
        ),
    ];
    for (case, from, bytes, want) in cases {
        let mine = outcome(twin.bridge, from, &bytes);
        if let Some(traefik) = twin.traefik {
            let theirs = outcome(traefik, from, &bytes);
            assert_eq!(mine, theirs, "{case}: bridge vs traefik");
        }
        if let Some(want) = want {
            assert_eq!(mine, want, "{case}");
        }
    }
}

#[test]
fn the_proxy_header_comes_before_the_tls_handshake_as_in_traefik() {
    let oracle = oracle("the_proxy_header_comes_before_the_tls_handshake_as_in_traefik");
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "xff={}",
                r.header("x-forwarded-for").unwrap_or("-")
            ))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    who:\n      rule: \"PathPrefix(`/who`)\"\n      entryPoints: [web]\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        app.port()
    );
    let web_extra =
        "    http:\n      tls: {}\n    proxyProtocol:\n      trustedIPs: [\"127.0.0.1\"]\n";
    let twin = serve_twice_with(dir.path(), oracle.as_deref(), &dynamic, &["who"], web_extra);
    for (who, addr) in twin.targets() {
        let mut tcp = TcpStream::connect(addr).expect("connect");
        tcp.set_read_timeout(Some(Duration::from_secs(10))).ok();
        tcp.write_all(b"PROXY TCP4 203.0.113.7 127.0.0.1 5555 443\r\n")
            .expect("header");
        let name = rustls::pki_types::ServerName::try_from("test.local").expect("name");
        let conn = rustls::ClientConnection::new(bridge_tests::tls::insecure_client(), name)
            .expect("client");
        let mut tls = rustls::StreamOwned::new(conn, tcp);
        tls.write_all(GET).expect("request over TLS");
        let mut raw = Vec::new();
        let _ = tls.read_to_end(&mut raw);
        let got = parse_answer(&raw, false).map(|a| format!("{} {}", a.status, a.text()));
        assert_eq!(got.as_deref(), Some("200 xff=203.0.113.7"), "{who}");
    }
}
