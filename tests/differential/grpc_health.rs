//! `healthCheck.mode: grpc`: servers probed with the gRPC Health Checking Protocol v1 over h2c
//! turn down and up with the serving status they report, in bridge-runtime as in Traefik.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, Instant};

use bridge_tests::traefik::{fetch, oracle, serve_twice};
use bytes::Bytes;

/// An h2c server: `grpc.health.v1.Health/Check` answers the serving status in `status` (one
/// message, then `grpc-status: 0` as a trailer); any other request gets `app`.
fn health_server(status: Arc<AtomicU8>) -> SocketAddr {
    bridge_tests::serve_h2c(hyper::service::service_fn(
        move |req: hyper::Request<hyper::body::Incoming>| {
            let status = status.load(Ordering::SeqCst);
            async move {
                use http_body_util::BodyExt as _;
                let grpc = req.uri().path() == "/grpc.health.v1.Health/Check"
                    && req
                        .headers()
                        .get("content-type")
                        .is_some_and(|v| v == "application/grpc");
                let _ = req.into_body().collect().await;
                let mut trailers = http::HeaderMap::new();
                trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
                let (ct, body) = if grpc {
                    (
                        "application/grpc",
                        Bytes::from(vec![0, 0, 0, 0, 2, 0x08, status]),
                    )
                } else {
                    trailers.clear();
                    ("text/plain", Bytes::from_static(b"app"))
                };
                let body = http_body_util::Full::new(body)
                    .with_trailers(async move { Some(Ok(trailers)) });
                Ok::<_, std::convert::Infallible>(
                    hyper::Response::builder()
                        .header("content-type", ct)
                        .body(body)
                        .unwrap(),
                )
            }
        },
    ))
}

/// Waits (at most 10 s) until `addr` answers `/` with `want`; the last status seen.
fn settles(addr: SocketAddr, want: u16) -> u16 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let got = fetch(addr, "GET", "/", &[], b"").map_or(0, |a| a.status);
        if got == want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn grpc_health_checks_follow_the_serving_status_as_in_traefik() {
    let oracle = oracle("grpc_health_checks_follow_the_serving_status_as_in_traefik");
    let status = Arc::new(AtomicU8::new(1));
    let server = health_server(status.clone());
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    app:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      service: app
  services:
    app:
      loadBalancer:
        servers:
          - url: "h2c://{server}"
        healthCheck:
          mode: grpc
          interval: 300ms
          timeout: 1s
"#
    );
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["app"]);
    // SERVING, then NOT_SERVING, then SERVICE_UNKNOWN, then SERVING again: both proxies follow.
    for (code, want) in [(1u8, 200u16), (2, 503), (1, 200), (3, 503), (1, 200)] {
        status.store(code, Ordering::SeqCst);
        for (who, addr) in twin.targets() {
            assert_eq!(settles(addr, want), want, "{who}: serving status {code}");
        }
    }
}
