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

/// Middlewares of services inside a service tree: a weighted service's children and a
/// failover's fallback run their own chains inside the router's, on the request as the
/// router's middlewares left it.
#[test]
fn middlewares_of_services_below_weighted_and_failover_services_run_inside_the_router_s() {
    let oracle = oracle(
        "middlewares_of_services_below_weighted_and_failover_services_run_inside_the_router_s",
    );
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "{} {} {}",
                r.path(),
                r.header("x-child").unwrap_or("-"),
                r.header("x-router").unwrap_or("-")
            ))
        })
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    split:
      rule: PathPrefix(`/split`)
      service: canary
      middlewares: [router-mark]
    standby:
      rule: PathPrefix(`/standby`)
      service: main-or-fallback
  middlewares:
    router-mark:
      headers:
        customRequestHeaders:
          X-Router: "yes"
        customResponseHeaders:
          X-Layer: router
    stable-mark:
      headers:
        customRequestHeaders:
          X-Child: stable
        customResponseHeaders:
          X-Layer: stable
          X-Stable: "yes"
    to-maintenance:
      replacePath:
        path: /maintenance
  services:
    canary:
      weighted:
        services:
          - name: stable
            weight: 1
    stable:
      middlewares: [stable-mark]
      loadBalancer:
        servers:
          - url: http://{app}
    main-or-fallback:
      failover:
        service: down
        fallback: maintenance
    down:
      loadBalancer:
        healthCheck:
          path: /health
          interval: 100ms
          timeout: 50ms
        servers:
          - url: http://127.0.0.1:1
    maintenance:
      middlewares: [to-maintenance]
      loadBalancer:
        servers:
          - url: http://{app}
"#,
        app = app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["split", "standby"],
    );
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[],
        compare: &["x-layer", "x-stable"],
        body: b"",
    };
    let split = agree(&twin, &probe("/split/a"));
    assert_eq!(
        (split.status, split.text().as_str()),
        (200, "/split/a stable yes")
    );
    // The router's response header is set after the child service's.
    assert_eq!(split.header("x-layer"), Some("router"));
    assert_eq!(split.header("x-stable"), Some("yes"));
    // The main service is down (its health check fails, every 100 ms; both proxies have seen it
    // after a second): the fallback's chain rewrites the path.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let standby = agree(&twin, &probe("/standby/x"));
    assert_eq!(
        (standby.status, standby.text().as_str()),
        (200, "/maintenance - -")
    );
}

/// Middlewares below a mirroring service: the copy is taken where the mirroring service is,
/// before the main service's middlewares, and goes through the mirror service's own
/// middlewares; the main request through the main service's.
#[test]
fn mirror_copies_are_taken_before_the_main_service_s_middlewares_and_run_the_mirror_s() {
    let oracle = oracle(
        "mirror_copies_are_taken_before_the_main_service_s_middlewares_and_run_the_mirror_s",
    );
    let main = backend("main")
        .answer(|r| Reply::ok(format!("main {}", r.path())))
        .start();
    let copy = backend("copy")
        .answer(|r| Reply::ok(format!("copy {}", r.path())))
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    shadowed:
      rule: PathPrefix(`/`)
      service: shadow
  middlewares:
    to-main:
      addPrefix:
        prefix: /main
    to-copy:
      addPrefix:
        prefix: /copy
  services:
    shadow:
      mirroring:
        service: primary
        mirrors:
          - name: mirror
            percent: 100
    primary:
      middlewares: [to-main]
      loadBalancer:
        servers:
          - url: http://{}
    mirror:
      middlewares: [to-copy]
      weighted:
        services:
          - name: mirror-lb
            weight: 1
    mirror-lb:
      loadBalancer:
        servers:
          - url: http://{}
"#,
        main.addr, copy.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["shadowed"]);
    let proxies = if oracle.is_some() { 2 } else { 1 };
    let body = |target| {
        agree(
            &twin,
            &Probe {
                method: "POST",
                target,
                headers: &[],
                compare: &[],
                body: b"payload",
            },
        )
        .text()
    };
    assert_eq!(body("/x"), "main /main/x");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while copy.seen().len() < proxies {
        assert!(std::time::Instant::now() < deadline, "{:?}", copy.seen());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // Each proxy's copy: the mirror's prefix only, the body whole.
    for seen in copy.seen() {
        let mut words = seen.split(' ');
        assert_eq!(words.next(), Some("POST"), "{seen}");
        assert_eq!(words.next(), Some("/copy/x"), "{seen}");
        assert!(seen.ends_with(" payload"), "{seen}");
    }
    assert_eq!(copy.seen().len(), proxies);
}

/// An `errors` middleware's page service with middlewares of its own runs them on the page
/// request, as Traefik builds the page service's handler.
#[test]
fn an_error_page_service_runs_its_own_middlewares() {
    let oracle = oracle("an_error_page_service_runs_its_own_middlewares");
    let app = backend("app")
        .answer(|r| {
            if r.path().starts_with("/pages/") {
                Reply::ok(format!(
                    "page {} via={}",
                    r.path(),
                    r.header("x-page-chain").unwrap_or("-")
                ))
            } else {
                let mut reply = Reply::ok("broken");
                reply.status = "503 Service Unavailable".into();
                reply
            }
        })
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    site:
      rule: PathPrefix(`/`)
      service: app
      middlewares: [pages]
  middlewares:
    pages:
      errors:
        status: ["500-599"]
        service: page-service
        query: /{{status}}.html
    page-prefix:
      addPrefix:
        prefix: /pages
    page-mark:
      headers:
        customRequestHeaders:
          X-Page-Chain: "yes"
        customResponseHeaders:
          X-Page: "yes"
  services:
    app:
      loadBalancer:
        servers:
          - url: http://{addr}
    page-service:
      middlewares: [page-prefix, page-mark]
      loadBalancer:
        servers:
          - url: http://{addr}
"#,
        addr = app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["site"]);
    let page = agree(
        &twin,
        &Probe {
            method: "GET",
            target: "/anything",
            headers: &[],
            compare: &["x-page"],
            body: b"",
        },
    );
    assert_eq!(page.status, 503);
    assert_eq!(page.text(), "page /pages/503.html via=yes");
    assert_eq!(page.header("x-page"), Some("yes"));
}
