//! `buffering` through bridge-runtime and Traefik: the request and answer limits (declared,
//! chunked and lying lengths, the 413/500 answers), what the server receives (a length, never a
//! transfer coding), a client that stops sending (499), and the retry loop counted at the
//! backend: the condition, requests without a body never replayed, oxy's cap of 11 attempts,
//! `RequestMethod()`, and replays that go through the load balancer again.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use bridge_tests::backends::{Backend, Reply, backend};
use bridge_tests::traefik::{
    Answer, Probe, Twin, agree, fetch, free_port, oracle, parse_answer, serve_twice,
};

const FIELDS: &[&str] = &[
    "content-type",
    "content-length",
    "transfer-encoding",
    "x-backend",
];

/// Answers `?status=N` with that status, `?size=N` with N bytes of `x`; otherwise
/// `<name> <METHOD> <target> len=<body> cl=<Content-Length> te=<Transfer-Encoding> tr=<Trailer>`.
fn app(name: &'static str) -> Backend {
    backend(name)
        .answer(move |r| {
            let query = r.target.split_once('?').map(|(_, q)| q).unwrap_or_default();
            let param = |k: &str| {
                query
                    .split('&')
                    .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
                    .map(str::to_owned)
            };
            let mut reply = match param("size") {
                Some(n) => Reply::ok("x".repeat(n.parse().unwrap())),
                None => Reply::ok(format!(
                    "{name} {} {} len={} cl={} te={} tr={}",
                    r.method,
                    r.target,
                    r.body.len(),
                    r.header("content-length").unwrap_or("-"),
                    r.header("transfer-encoding").unwrap_or("-"),
                    r.header("trailer").unwrap_or("-"),
                )),
            };
            if let Some(s) = param("status") {
                reply.status = format!("{s} Status");
            }
            reply.fields.push_str(&format!("X-Backend: {name}\r\n"));
            reply
        })
        .start()
}

fn dynamic(a: u16, b: u16, closed: u16) -> String {
    let router = |name: &str, service: &str| {
        format!(
            "    {name}:\n      rule: \"PathPrefix(`/{name}/`)\"\n      entryPoints: [web]\n      middlewares: [{name}]\n      service: {service}\n"
        )
    };
    let mut out = String::from("http:\n  routers:\n");
    for (name, service) in [
        ("limits", "a"),
        ("small", "a"),
        ("retry", "a"),
        ("always", "a"),
        ("post", "a"),
        ("lb", "pair"),
        ("big", "a"),
        ("dead", "halfdead"),
    ] {
        out.push_str(&router(name, service));
    }
    out.push_str(&format!(
        r#"  middlewares:
    limits:
      buffering:
        maxRequestBodyBytes: 10
        memRequestBodyBytes: 4
    small:
      buffering:
        maxResponseBodyBytes: 10
    retry:
      buffering:
        retryExpression: "IsNetworkError() && Attempts() <= 2"
    always:
      buffering:
        retryExpression: "IsNetworkError()"
    post:
      buffering:
        retryExpression: 'RequestMethod() == "POST" && ResponseCode() >= 500 && Attempts() < 3'
    big:
      buffering:
        maxRequestBodyBytes: 0
    lb:
      buffering:
        retryExpression: "ResponseCode() == 502"
    dead:
      buffering:
        retryExpression: "IsNetworkError() && Attempts() < 3"
  services:
    a:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{a}"
    pair:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{a}"
          - url: "http://127.0.0.1:{b}"
    halfdead:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{closed}"
          - url: "http://127.0.0.1:{a}"
"#
    ));
    out
}

/// Sends `raw` as is (after the request head the test wrote itself), half-closing the
/// connection when `close_write`; the answer read to the end of the connection.
fn raw(addr: SocketAddr, raw: &[u8], close_write: bool) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(raw).unwrap();
    if close_write {
        s.shutdown(std::net::Shutdown::Write).unwrap();
    }
    let mut got = Vec::new();
    // A connection reset after the answer still leaves the answer read.
    let _ = s.read_to_end(&mut got);
    parse_answer(&got, false)
        .unwrap_or_else(|| panic!("no answer: {:?}", String::from_utf8_lossy(&got)))
}

/// The answer from every proxy of `twin` to the same raw request, compared.
fn raw_agree(twin: &Twin, request: &[u8], close_write: bool) -> Answer {
    let answers: Vec<(&str, Answer)> = twin
        .targets()
        .into_iter()
        .map(|(who, addr)| (who, raw(addr, request, close_write)))
        .collect();
    let (_, mine) = &answers[0];
    for (who, theirs) in &answers[1..] {
        let what = String::from_utf8_lossy(request);
        assert_eq!(
            mine.status, theirs.status,
            "status, bridge vs {who}: {what}"
        );
        assert_eq!(mine.text(), theirs.text(), "body, bridge vs {who}: {what}");
        for f in FIELDS {
            assert_eq!(
                mine.header_all(f),
                theirs.header_all(f),
                "{f}, bridge vs {who}: {what}"
            );
        }
    }
    answers.into_iter().next().map(|(_, a)| a).unwrap()
}

fn post(twin: &Twin, target: &str, body: &[u8]) -> Answer {
    agree(
        twin,
        &Probe {
            method: "POST",
            target,
            headers: &[],
            compare: FIELDS,
            body,
        },
    )
}

/// How many requests for targets holding `marker` the backends received.
fn count(backends: &[&Backend], marker: &str) -> usize {
    backends
        .iter()
        .flat_map(|b| b.seen())
        .filter(|s| s.contains(marker))
        .count()
}

/// `method target` with `body` through each proxy, marked with the proxy's name: each
/// proxy's status and how many requests the backends got for it.
fn attempts(
    twin: &Twin,
    backends: &[&Backend],
    method: &str,
    target: &str,
    body: &[u8],
) -> Vec<(u16, usize)> {
    twin.targets()
        .into_iter()
        .map(|(who, addr)| {
            let marked = format!("{target}&who={who}");
            let a = fetch(addr, method, &marked, &[], body).unwrap();
            (a.status, count(backends, &format!("{marked} ")))
        })
        .collect()
}

#[test]
fn buffering_limits_and_replays_as_traefik_does() {
    let oracle = oracle("buffering_limits_and_replays_as_traefik_does");
    let (a, b) = (app("A"), app("B"));
    let closed = free_port();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic(a.port(), b.port(), closed),
        &[
            "limits", "small", "retry", "always", "post", "lb", "big", "dead",
        ],
    );

    // Request limits: exactly the limit passes (with a length, 4 bytes in memory and the rest
    // in the temporary file), one byte more is refused before anything is forwarded.
    let ok = post(&twin, "/limits/x", b"0123456789");
    assert_eq!(ok.text(), "A POST /limits/x len=10 cl=10 te=- tr=-");
    let before = a.seen().len();
    let big = post(&twin, "/limits/x", b"0123456789a");
    assert_eq!(
        (big.status, big.text().as_str()),
        (413, "Request Entity Too Large")
    );
    assert_eq!(big.header("content-type"), None);
    assert_eq!(a.seen().len(), before, "a refused body reaches no server");

    // A chunked body goes on with its length, without its trailer; one too long is refused
    // when its bytes pass the limit.
    let chunked = raw_agree(
        &twin,
        b"POST /limits/c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\nConnection: close\r\n\r\n5\r\n01234\r\n5\r\n56789\r\n0\r\nX-T: v\r\n\r\n",
        false,
    );
    assert_eq!(chunked.text(), "A POST /limits/c len=10 cl=10 te=- tr=-");
    let over = raw_agree(
        &twin,
        b"POST /limits/c HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\n01234\r\n6\r\n56789a\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(over.status, 413);
    // An empty chunked POST goes on as `Content-Length: 0`.
    let empty = raw_agree(
        &twin,
        b"POST /limits/e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n",
        false,
    );
    assert_eq!(empty.text(), "A POST /limits/e len=0 cl=0 te=- tr=-");
    // A client that stops before its declared length: 499.
    let gone = raw_agree(
        &twin,
        b"POST /limits/g HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n01234",
        true,
    );
    assert_eq!(
        (gone.status, gone.text().as_str()),
        (499, "Client Closed Request")
    );

    // Answer limits: exactly the limit passes, more is a 500 whatever the server's status.
    let fits = agree(
        &twin,
        &Probe {
            compare: FIELDS,
            ..Probe::get("/small/s?size=10")
        },
    );
    assert_eq!(fits.text(), "xxxxxxxxxx");
    let long = agree(
        &twin,
        &Probe {
            compare: FIELDS,
            ..Probe::get("/small/s?size=11")
        },
    );
    assert_eq!(
        (long.status, long.text().as_str()),
        (500, "Internal Server Error")
    );
    let long404 = agree(
        &twin,
        &Probe {
            compare: FIELDS,
            ..Probe::get("/small/s?size=11&status=404")
        },
    );
    assert_eq!(long404.status, 500);
    let head = agree(
        &twin,
        &Probe {
            method: "HEAD",
            compare: FIELDS,
            ..Probe::get("/small/s?size=5")
        },
    );
    assert_eq!(head.header("content-length"), Some("5"));

    // Past the default 1 MiB in memory, bodies wait in a temporary file: both ways intact.
    let upload: Vec<u8> = (0..1_500_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let up = post(&twin, "/big/u", &upload);
    assert_eq!(up.text(), "A POST /big/u len=1500000 cl=1500000 te=- tr=-");
    let seen = a.seen();
    let last = seen.iter().rev().find(|s| s.contains("/big/u")).unwrap();
    assert!(
        last.ends_with(std::str::from_utf8(&upload).unwrap()),
        "the upload arrived intact"
    );
    let down = agree(
        &twin,
        &Probe {
            compare: FIELDS,
            ..Probe::get("/big/d?size=1500000")
        },
    );
    assert_eq!(down.body.len(), 1_500_000);

    // Replays, counted at the backend for each proxy.
    let backends = [&a, &b];
    let each = |method: &str, target: &str, body: &[u8], want: (u16, usize)| {
        let got = attempts(&twin, &backends, method, target, body);
        for (i, (who, _)) in twin.targets().iter().enumerate() {
            assert_eq!(got[i], want, "{who}: {method} {target}");
        }
    };
    // `Attempts() <= 2`: three requests in all; none replayed without a body or for a 500.
    each("POST", "/retry/1?status=502", b"abc", (502, 3));
    each("GET", "/retry/2?status=502", b"", (502, 1));
    each("POST", "/retry/3?status=500", b"abc", (500, 1));
    // A condition that always holds: the first attempt and ten replays.
    each("POST", "/always/4?status=504", b"abc", (504, 11));
    // RequestMethod(): POST replayed, PUT not.
    each("POST", "/post/5?status=503", b"abc", (503, 3));
    each("PUT", "/post/6?status=503", b"abc", (503, 1));
    // Each replay goes through the load balancer again: both servers got some of the 11.
    let lb = attempts(&twin, &backends, "POST", "/lb/7?status=502", b"abc");
    for (i, (who, _)) in twin.targets().iter().enumerate() {
        assert_eq!(lb[i], (502, 11), "{who}");
        let on_b = b
            .seen()
            .iter()
            .filter(|s| s.contains(&format!("/lb/7?status=502&who={who} ")))
            .count();
        assert!((4..=7).contains(&on_b), "{who}: {on_b} of 11 attempts on B");
    }
    // A refused server is a network error: the replay reaches the live one.
    for i in 0..4 {
        let answer = post(&twin, &format!("/dead/{i}"), b"abc");
        assert_eq!(answer.status, 200, "POST /dead/{i}");
    }
}
