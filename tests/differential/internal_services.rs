//! Internal services where a configuration names them besides the API: a router to
//! `noop@internal` (Traefik answers `418` without a body), and `errors` pages from
//! `ping@internal` and `noop@internal` (the caught status with their body).

use bridge_tests::traefik::{Probe, agree, oracle, serve_twice_static};

#[test]
fn noop_and_internal_error_pages_answer_as_traefik_does() {
    let oracle = oracle("noop_and_internal_error_pages_answer_as_traefik_does");
    // A server that refuses connections: 502, caught by the errors middlewares.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let dynamic = format!(
        r#"http:
  routers:
    noop:
      rule: PathPrefix(`/noop`)
      service: noop@internal
    ping-page:
      rule: PathPrefix(`/ping-page`)
      service: down
      middlewares: [ping-page]
    noop-page:
      rule: PathPrefix(`/noop-page`)
      service: down
      middlewares: [noop-page]
  middlewares:
    ping-page:
      errors:
        status: ["500-599"]
        service: ping@internal
        query: /ping
    noop-page:
      errors:
        status: ["500-599"]
        service: noop@internal
  services:
    down:
      loadBalancer:
        servers:
          - url: http://127.0.0.1:{port}
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_static(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["noop", "ping-page", "noop-page"],
        "ping:\n  entryPoint: web\n  manualRouting: true\n",
    );
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[],
        compare: &["content-length", "content-type"],
        body: b"",
    };
    let noop = agree(&twin, &probe("/noop"));
    assert_eq!((noop.status, noop.text().as_str()), (418, ""));
    let ping = agree(&twin, &probe("/ping-page"));
    assert_eq!((ping.status, ping.text().as_str()), (502, "OK"));
    let empty = agree(&twin, &probe("/noop-page"));
    assert_eq!((empty.status, empty.text().as_str()), (502, ""));
}
