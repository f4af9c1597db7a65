//! Differential tests: the same files served by bridge-runtime and by the real Traefik
//! (`bridge_tests::traefik`), the same requests sent to both, status, body and the fields that
//! matter compared. Without a Traefik binary each test still checks bridge-runtime's own
//! answers and says the comparison was skipped (under `CI=true` it fails instead).

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

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
