//! Multi-layer routing (`parentRefs`, Traefik v3.6): after a parent's middlewares the request,
//! as they left it, is routed again among the parent's children; the child's middlewares run
//! inside the parent's, and a request no child matches gets 404 with the parent's response
//! headers.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

#[test]
fn child_routers_route_the_request_as_the_parent_s_middlewares_left_it() {
    let oracle = oracle("child_routers_route_the_request_as_the_parent_s_middlewares_left_it");
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "{} path={} tenant={} prefix={}",
                r.header("x-served-by").unwrap_or("-"),
                r.path(),
                r.header("x-tenant").unwrap_or("-"),
                r.header("x-forwarded-prefix").unwrap_or("-"),
            ))
        })
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    api:
      rule: PathPrefix(`/api`)
      middlewares: [strip-api, tenant, parent-mark]
    users:
      rule: PathPrefix(`/users`)
      parentRefs: [api]
      service: app
      middlewares: [by-users]
    admin:
      rule: PathPrefix(`/admin`) && Header(`X-Tenant`, `acme`)
      parentRefs: [api]
      middlewares: [strip-admin, admin-mark]
    audit:
      rule: Path(`/audit`)
      parentRefs: [admin]
      service: app
      middlewares: [by-audit]
    catchall:
      rule: PathPrefix(`/`)
      priority: 1
      parentRefs: [admin]
      service: app
      middlewares: [by-catchall]
    other:
      rule: PathPrefix(`/users`)
      service: app
      middlewares: [by-root]
  middlewares:
    strip-api:
      stripPrefix:
        prefixes: [/api]
    strip-admin:
      stripPrefix:
        prefixes: [/admin]
    tenant:
      headers:
        customRequestHeaders:
          X-Tenant: acme
    parent-mark:
      headers:
        customResponseHeaders:
          X-Layer: parent
          X-Parent: "yes"
    admin-mark:
      headers:
        customResponseHeaders:
          X-Layer: admin
    by-users:
      headers:
        customRequestHeaders:
          X-Served-By: users
        customResponseHeaders:
          X-Layer: users
    by-audit:
      headers:
        customRequestHeaders:
          X-Served-By: audit
    by-catchall:
      headers:
        customRequestHeaders:
          X-Served-By: catchall
    by-root:
      headers:
        customRequestHeaders:
          X-Served-By: root
  services:
    app:
      loadBalancer:
        servers:
          - url: http://{}
"#,
        app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["api", "users", "admin", "audit", "catchall", "other"],
    );
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[],
        compare: &["x-layer", "x-parent"],
        body: b"",
    };
    // The child sees the stripped path; the parent's header reaches the server.
    let users = agree(&twin, &probe("/api/users/7"));
    assert_eq!(users.status, 200);
    assert_eq!(users.text(), "users path=/users/7 tenant=acme prefix=/api");
    // Response headers: the parent's run after the child's, so its value wins.
    assert_eq!(users.header("x-layer"), Some("parent"));
    // Two layers: the grandchild sees both prefixes stripped (`X-Forwarded-Prefix` gets both,
    // the outer first), and a Header rule matches the field the parent's middleware added.
    let audit = agree(&twin, &probe("/api/admin/audit"));
    assert_eq!(audit.status, 200);
    assert_eq!(audit.text(), "audit path=/audit tenant=acme prefix=/api");
    assert_eq!(audit.header("x-parent"), Some("yes"));
    // Priorities among children: the low-priority catch-all takes what `audit` does not.
    let rest = agree(&twin, &probe("/api/admin/else"));
    assert_eq!(rest.text(), "catchall path=/else tenant=acme prefix=/api");
    // No child matches: 404, with the parent's response headers.
    let none = agree(&twin, &probe("/api/nothing"));
    assert_eq!(none.status, 404);
    assert_eq!(none.text(), "404 page not found\n");
    assert_eq!(none.header("x-parent"), Some("yes"));
    // A child is not on any entry point: without the parent's prefix the root router serves.
    let root = agree(&twin, &probe("/users/7"));
    assert_eq!(root.text(), "root path=/users/7 tenant=- prefix=-");
}

#[test]
fn a_parent_s_middleware_answers_before_its_children_are_routed() {
    let oracle = oracle("a_parent_s_middleware_answers_before_its_children_are_routed");
    let app = backend("app")
        .answer(|r| Reply::ok(r.path().to_owned()))
        .start();
    // user / secret
    let dynamic = format!(
        r#"http:
  routers:
    guarded:
      rule: PathPrefix(`/`)
      middlewares: [auth]
    child:
      rule: Path(`/open`)
      parentRefs: [guarded]
      service: app
  middlewares:
    auth:
      basicAuth:
        users:
          - "user:$apr1$q9gxL6J3$Mg2ntvqdP395iC.32.8M4."
  services:
    app:
      loadBalancer:
        servers:
          - url: http://{}
"#,
        app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["guarded", "child"],
    );
    let unauthenticated = agree(
        &twin,
        &Probe {
            method: "GET",
            target: "/open",
            headers: &[],
            compare: &["www-authenticate"],
            body: b"",
        },
    );
    assert_eq!(unauthenticated.status, 401);
    let authenticated = agree(
        &twin,
        &Probe {
            method: "GET",
            target: "/open",
            headers: &[("authorization", "Basic dXNlcjpzZWNyZXQ=")],
            compare: &[],
            body: b"",
        },
    );
    assert_eq!(
        (authenticated.status, authenticated.text().as_str()),
        (200, "/open")
    );
}
