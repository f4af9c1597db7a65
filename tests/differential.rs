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

/// `/status/N` answers N with `X-App: 1`, a cookie and a body of its own.
fn status_app() -> bridge_tests::backends::Backend {
    backend("app")
        .answer(|r| {
            let code: u16 = r
                .path()
                .strip_prefix("/status/")
                .and_then(|c| c.parse().ok())
                .unwrap_or(200);
            Reply {
                status: format!("{code} Whatever"),
                fields: "X-App: 1\r\nSet-Cookie: app=1\r\nContent-Type: application/x-app\r\n"
                    .into(),
                body: format!("app says {code}"),
            }
        })
        .start()
}

#[test]
fn errors_replaces_caught_answers_with_the_page_services_as_traefik_does() {
    let oracle = oracle("errors_replaces_caught_answers_with_the_page_services_as_traefik_does");
    let app = status_app();
    let pages = backend("pages")
        .answer(|r| Reply {
            status: "200 OK".into(),
            fields: "Content-Type: text/html\r\nX-Page: 1\r\n".into(),
            body: format!(
                "page {} {} host={} cookie={}",
                r.method,
                r.target,
                r.host,
                r.header("cookie").unwrap_or("-")
            ),
        })
        .start();
    // A page service whose only server is gone: the client gets Traefik's 502 text, with the
    // caught status.
    let gone = bridge_tests::traefik::free_port();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    plain:
      rule: "PathPrefix(`/p/`)"
      entryPoints: [web]
      middlewares: [strip, pages]
      service: app
    query:
      rule: "PathPrefix(`/q/`)"
      entryPoints: [web]
      middlewares: [strip, detailed]
      service: app
    dead:
      rule: "PathPrefix(`/d/`)"
      entryPoints: [web]
      middlewares: [strip, deadpages]
      service: app
    unreachable:
      rule: "PathPrefix(`/gone`)"
      entryPoints: [web]
      service: gone
    guarded:
      rule: "PathPrefix(`/g/`)"
      entryPoints: [web]
      middlewares: [authpages, auth]
      service: app
  middlewares:
    strip:
      stripPrefixRegex:
        regex: ["^/[pqd]"]
    pages:
      errors:
        status: ["500-599", "404"]
        service: pages
    detailed:
      errors:
        status: ["500-599"]
        statusRewrites:
          "502-503": 500
        service: pages
        query: "err/{{status}}?o={{originalStatus}}&u={{url}}"
    authpages:
      errors:
        status: ["401"]
        service: pages
        query: "/login"
    auth:
      basicAuth:
        users: ["admin:{{SHA}}qUqP5cyxm6YcTAhz05Hph5gvu9M="]
    deadpages:
      errors:
        status: ["500-599"]
        service: gone
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app}"
    pages:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{pages}"
    gone:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{gone}"
"#,
        app = app.port(),
        pages = pages.port(),
    );
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["plain", "query", "dead", "unreachable", "guarded"],
    );
    let compare = &["content-type", "x-page", "x-app", "set-cookie"];
    let probe = |target| Probe {
        method: "GET",
        target,
        headers: &[("Cookie", "c=1")],
        compare,
    };
    // Caught: the page's fields and body, the caught status; nothing of the app's answer.
    let got = agree(&twin, &probe("/p/status/503"));
    assert_eq!(got.status, 503);
    assert_eq!(got.text(), "page GET / host=test.local cookie=c=1");
    assert_eq!(got.header("x-page"), Some("1"));
    assert_eq!(got.header("x-app"), None);
    let got = agree(&twin, &probe("/p/status/404"));
    assert_eq!((got.status, got.header("x-page")), (404, Some("1")));
    // Not caught: the app's answer untouched.
    let got = agree(&twin, &probe("/p/status/403"));
    assert_eq!((got.status, got.text().as_str()), (403, "app says 403"));
    assert_eq!(got.header("x-app"), Some("1"));
    let got = agree(&twin, &probe("/p/status/200"));
    assert_eq!(got.text(), "app says 200");
    // The page request is a GET whatever the method was.
    let got = agree(
        &twin,
        &Probe {
            method: "POST",
            ..probe("/p/status/500")
        },
    );
    assert_eq!(got.text(), "page GET / host=test.local cookie=c=1");
    // Rewrites and placeholders.
    let got = agree(&twin, &probe("/q/status/502?a=b%20c"));
    assert_eq!(got.status, 500);
    assert_eq!(
        got.text(),
        "page GET /err/500?o=502&u=http%3A%2F%2Ftest.local%2Fstatus%2F502%3Fa%3Db%2520c host=test.local cookie=c=1"
    );
    let got = agree(&twin, &probe("/q/status/504"));
    assert_eq!(got.status, 504);
    // The page service cannot be reached: its 502 text with the caught status.
    let got = agree(&twin, &probe("/d/status/500"));
    assert_eq!(got.status, 500);
    assert_eq!(got.header("x-page"), None);
    // ... which is what a server that cannot be reached gives without the middleware.
    let got = agree(&twin, &probe("/gone"));
    assert_eq!((got.status, got.text().as_str()), (502, "Bad Gateway"));
    // A later middleware's own answer is caught too: basicAuth's 401 becomes a login page
    // (without basicAuth's challenge, as the page's fields replace it).
    let got = agree(
        &twin,
        &Probe {
            compare: &["content-type", "x-page", "www-authenticate"],
            ..probe("/g/x")
        },
    );
    assert_eq!(got.status, 401);
    assert_eq!(got.text(), "page GET /login host=test.local cookie=c=1");
}
