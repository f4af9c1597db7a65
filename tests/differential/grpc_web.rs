//! `grpcWeb` through bridge-runtime and Traefik, in front of a small h2c gRPC server written
//! here (hyper; data frames and real HTTP/2 trailers, no length, as gRPC servers answer): what
//! the server receives (the type rewritten, a text body decoded, no length, HTTP/2), the
//! answers byte for byte (binary and base64 text, the trailer message, a trailers-only answer),
//! the CORS preflight and fields, and requests that pass untouched.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bridge_tests::traefik::{Answer, Twin, fetch, oracle, serve_twice};
use bytes::Bytes;
use hyper::body::Frame;

/// A body of the frames given, of no known length.
struct Frames(VecDeque<Frame<Bytes>>);

impl hyper::body::Body for Frames {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Poll::Ready(self.get_mut().0.pop_front().map(Ok))
    }
}

/// A gRPC message: flag 0, big-endian length, payload.
fn message(payload: &[u8]) -> Vec<u8> {
    let mut m = vec![0u8];
    m.extend_from_slice(&u32::try_from(payload.len()).unwrap().to_be_bytes());
    m.extend_from_slice(payload);
    m
}

/// An h2c server: `/missing` is a trailers-only answer (status 5 as fields); anything else one
/// message saying what arrived (`v= ct= cl= te= body=<hex>`), then trailers.
fn grpc_server() -> SocketAddr {
    bridge_tests::serve_h2c(hyper::service::service_fn(
        |req: hyper::Request<hyper::body::Incoming>| async move {
            use http_body_util::BodyExt as _;
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let field = |n: &str| {
                parts.headers.get(n).map_or("-".to_owned(), |v| {
                    String::from_utf8_lossy(v.as_bytes()).into_owned()
                })
            };
            let mut resp = hyper::Response::builder()
                .header("content-type", "application/grpc+proto")
                .header("x-h", "1");
            if parts.uri.path() == "/missing" {
                resp = resp
                    .header("grpc-status", "5")
                    .header("grpc-message", "not found");
                let b = Frames(VecDeque::new());
                return Ok::<_, std::convert::Infallible>(resp.body(b).unwrap());
            }
            let hex: String = body.iter().map(|b| format!("{b:02x}")).collect();
            let said = format!(
                "v={:?} ct={} cl={} te={} body={hex}",
                parts.version,
                field("content-type"),
                field("content-length"),
                field("te"),
            );
            let mut trailers = http::HeaderMap::new();
            trailers.insert("grpc-status", "0".parse().unwrap());
            trailers.insert("grpc-message", "OK done".parse().unwrap());
            trailers.insert("x-trailer-extra", "e1".parse().unwrap());
            let frames = Frames(
                [
                    Frame::data(Bytes::from(message(said.as_bytes()))),
                    Frame::trailers(trailers),
                ]
                .into(),
            );
            Ok(resp.body(frames).unwrap())
        },
    ))
}

fn dynamic(grpc: SocketAddr) -> String {
    format!(
        r#"http:
  routers:
    g:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      middlewares: [gw]
      service: grpc
  middlewares:
    gw:
      grpcWeb:
        allowOrigins: ["https://a.example"]
  services:
    grpc:
      loadBalancer:
        servers:
          - url: "h2c://{grpc}"
"#
    )
}

/// The same request through both proxies; status, body bytes and `fields` must agree
/// (`access-control-expose-headers` as a set: Traefik's order is Go's map order).
fn both(twin: &Twin, method: &str, target: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    const FIELDS: &[&str] = &[
        "content-type",
        "content-length",
        "transfer-encoding",
        "vary",
        "access-control-allow-origin",
        "access-control-allow-credentials",
        "access-control-allow-methods",
        "access-control-allow-headers",
        "access-control-max-age",
        "grpc-status",
        "grpc-message",
        "x-h",
    ];
    let answers: Vec<(&str, Answer)> = twin
        .targets()
        .into_iter()
        .map(|(who, addr)| (who, fetch(addr, method, target, headers, body).unwrap()))
        .collect();
    let exposed = |a: &Answer| {
        a.header("access-control-expose-headers").map(|v| {
            let mut names: Vec<String> = v.split(", ").map(str::to_owned).collect();
            let tail = names.split_off(names.len().saturating_sub(2));
            names.sort();
            (names, tail)
        })
    };
    let (_, mine) = &answers[0];
    for (who, theirs) in &answers[1..] {
        let what = format!("{method} {target} {headers:?}");
        assert_eq!(
            mine.status, theirs.status,
            "status, bridge vs {who}: {what}"
        );
        assert_eq!(mine.body, theirs.body, "body, bridge vs {who}: {what}");
        for f in FIELDS {
            assert_eq!(
                mine.header_all(f),
                theirs.header_all(f),
                "{f}, bridge vs {who}: {what}"
            );
        }
        assert_eq!(
            exposed(mine),
            exposed(theirs),
            "exposed fields, bridge vs {who}: {what}"
        );
    }
    answers.into_iter().next().map(|(_, a)| a).unwrap()
}

/// The messages of a gRPC-Web body: (flag, payload).
fn messages(mut body: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while body.len() >= 5 {
        let len = u32::from_be_bytes(body[1..5].try_into().unwrap()) as usize;
        out.push((body[0], body[5..5 + len].to_vec()));
        body = &body[5 + len..];
    }
    out
}

#[test]
fn grpc_web_translates_as_traefik_does() {
    let oracle = oracle("grpc_web_translates_as_traefik_does");
    let grpc = grpc_server();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic(grpc), &["g"]);
    let origin = ("Origin", "https://a.example");

    // Binary: the server gets gRPC over HTTP/2 without a length; the client the message, then
    // the trailers as a last message, with the CORS fields.
    let request = message(b"abc");
    let bin = both(
        &twin,
        "POST",
        "/pkg.Svc/Call",
        &[("Content-Type", "application/grpc-web+proto"), origin],
        &request,
    );
    assert_eq!(bin.status, 200);
    assert_eq!(
        bin.header("content-type"),
        Some("application/grpc-web+proto")
    );
    assert_eq!(
        bin.header("access-control-allow-origin"),
        Some("https://a.example")
    );
    let got = messages(&bin.body);
    assert_eq!(got.len(), 2, "{:?}", bin.text());
    assert_eq!(
        String::from_utf8_lossy(&got[0].1),
        "v=HTTP/2.0 ct=application/grpc+proto cl=- te=- body=0000000003616263"
    );
    assert_eq!(
        got[1],
        (
            0x80,
            b"grpc-message: OK done\r\ngrpc-status: 0\r\nx-trailer-extra: e1\r\n".to_vec()
        )
    );
    assert!(
        bin.header("access-control-expose-headers")
            .is_some_and(|e| e.ends_with(", grpc-status, grpc-message"))
    );

    // Text: the request base64-decoded on the way, the answer encoded piece by piece.
    let text = both(
        &twin,
        "POST",
        "/pkg.Svc/Call",
        &[("Content-Type", "application/grpc-web-text"), origin],
        STANDARD.encode(&request).as_bytes(),
    );
    assert_eq!(
        text.header("content-type"),
        Some("application/grpc-web-text+proto")
    );
    let first = text.text();
    let (head, _) = first.split_once("==").unwrap_or((&first, ""));
    let decoded = STANDARD.decode(format!("{head}==")).unwrap_or_default();
    assert!(
        String::from_utf8_lossy(&decoded)
            .ends_with("ct=application/grpc cl=- te=- body=0000000003616263"),
        "{first}"
    );

    // A trailers-only answer keeps its status fields and ends with an empty trailer message.
    let missing = both(
        &twin,
        "POST",
        "/missing",
        &[("Content-Type", "application/grpc-web"), origin],
        &request,
    );
    assert_eq!(missing.header("grpc-status"), Some("5"));
    assert_eq!(missing.body, b"\x80\x00\x00\x00\x00");

    // The preflight is answered by the proxy; an origin not allowed gets no allow fields.
    let pre = both(
        &twin,
        "OPTIONS",
        "/pkg.Svc/Call",
        &[
            origin,
            ("Access-Control-Request-Method", "POST"),
            (
                "Access-Control-Request-Headers",
                "x-grpc-web,content-type, x-user-agent",
            ),
        ],
        b"",
    );
    assert_eq!(
        pre.header("access-control-allow-headers"),
        Some("X-Grpc-Web, Content-Type, X-User-Agent")
    );
    let stranger = both(
        &twin,
        "POST",
        "/pkg.Svc/Call",
        &[
            ("Content-Type", "application/grpc-web"),
            ("Origin", "https://b.example"),
        ],
        &request,
    );
    assert_eq!(stranger.header("vary"), Some("Origin"));
    assert_eq!(stranger.header("access-control-allow-origin"), None);

    // Not gRPC-Web: passed on as it is (the server answers it as gRPC).
    let plain = both(
        &twin,
        "POST",
        "/pkg.Svc/Call",
        &[("Content-Type", "application/grpc")],
        &request,
    );
    assert_eq!(plain.header("vary"), None);
    assert_eq!(plain.header("content-type"), Some("application/grpc+proto"));
}
