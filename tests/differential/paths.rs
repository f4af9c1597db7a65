//! The request path as Traefik's entry point hands it on (`http.sanitizePath`, default true):
//! routing, middlewares and the server see the path with dot segments and duplicate slashes
//! removed, escapes with upper-case hex and unreserved characters decoded.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

#[test]
fn paths_are_cleaned_before_routing_as_traefik_cleans_them() {
    let oracle = oracle("paths_are_cleaned_before_routing_as_traefik_cleans_them");
    let echo = |name: &'static str| {
        backend(name)
            .answer(move |r| Reply::ok(format!("{name} {}", r.target)))
            .start()
    };
    let (api, admin) = (echo("api"), echo("admin"));
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    api:
      rule: "PathPrefix(`/api`)"
      entryPoints: [web]
      service: api
    admin:
      rule: "PathPrefix(`/admin`)"
      entryPoints: [web]
      service: admin
  services:
    api:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
    admin:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        api.port(),
        admin.port()
    );
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["api", "admin"]);
    for (target, want) in [
        // The router for /api must not take a path that leaves it.
        ("/api/../admin/x", "admin /admin/x"),
        ("/api/%2e%2e/admin", "admin /admin"),
        ("/api/%2E%2e/admin/", "admin /admin/"),
        ("/api/./x", "api /api/x"),
        ("/api//x?q=a//b/../c", "api /api/x?q=a//b/../c"),
        ("//api/x", "api /api/x"),
        ("/api/x/", "api /api/x/"),
        ("/api/x/.", "api /api/x"),
        ("/admin/../../../api", "api /api"),
        ("/api/a%2fb", "api /api/a%2Fb"),
        ("/api/%7e%41", "api /api/~A"),
        ("/api/a%2Fb/../c", "api /api/c"),
        ("/api/x/..%2Fa", "api /api/x/..%2Fa"),
        ("/api/a;b", "api /api/a;b"),
        ("/api/a%c3%a9", "api /api/a%C3%A9"),
        ("/api/a%2Fb{", "api /api/a/b%7B"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!(got.status, 200, "{target}");
        assert_eq!(got.text(), want, "{target}");
    }
    let refused = agree(&twin, &Probe::get("/api/a#b"));
    assert_eq!((refused.status, refused.text().as_str()), (400, ""));
}
