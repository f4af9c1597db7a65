//! A service's own `middlewares` (Traefik v3.7): they run after the router's, and one instance
//! serves every router that sends to the service (a rate limit is shared by them).

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

#[test]
fn service_middlewares_run_after_the_router_s_and_are_shared_by_its_routers() {
    let oracle = oracle("service_middlewares_run_after_the_router_s_and_are_shared_by_its_routers");
    let app = backend("app")
        .answer(|r| Reply::ok(format!("order={}", r.header("x-order").unwrap_or("-"))))
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    a:
      rule: PathPrefix(`/a`)
      service: app
      middlewares: [router-mark]
    b:
      rule: PathPrefix(`/b`)
      service: app
  middlewares:
    router-mark:
      headers:
        customRequestHeaders:
          X-Order: router
    service-mark:
      headers:
        customRequestHeaders:
          X-Order: service
        customResponseHeaders:
          X-Service-Chain: "yes"
    one-per-minute:
      rateLimit:
        average: 1
        period: 1m
        burst: 1
  services:
    app:
      middlewares: [service-mark, one-per-minute]
      loadBalancer:
        servers:
          - url: http://{}
"#,
        app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["a", "b"]);
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[],
        compare: &["x-service-chain"],
        body: b"",
    };
    // The service's headers middleware runs after the router's: its value wins.
    let first = agree(&twin, &probe("/a"));
    assert_eq!(
        (first.status, first.text().as_str()),
        (200, "order=service")
    );
    assert_eq!(first.header("x-service-chain"), Some("yes"));
    // The same limiter for both routers: router b's request finds the token spent.
    let second = agree(&twin, &probe("/b"));
    assert_eq!(second.status, 429, "{}", second.text());
}
