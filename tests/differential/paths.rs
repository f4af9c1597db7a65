//! The request path as Traefik's entry point hands it on (`http.sanitizePath`, default true):
//! routing, middlewares and the server see the path with dot segments and duplicate slashes
//! removed, escapes with upper-case hex and unreserved characters decoded.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice, serve_twice_with};

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

#[test]
fn encoded_characters_refuse_as_traefik_refuses_at_the_entry_point_and_in_the_chain() {
    let oracle =
        oracle("encoded_characters_refuse_as_traefik_refuses_at_the_entry_point_and_in_the_chain");
    let app = backend("app")
        .answer(|r| Reply::ok(r.target.clone()))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    plain:
      rule: "PathPrefix(`/plain`)"
      entryPoints: [web]
      service: app
    mw:
      rule: "PathPrefix(`/mw`)"
      entryPoints: [web]
      middlewares: [only-hash]
      service: app
    all:
      rule: "PathPrefix(`/all`)"
      entryPoints: [web]
      middlewares: [every-escape]
      service: app
  middlewares:
    only-hash:
      encodedCharacters:
        allowEncodedHash: true
    every-escape:
      encodedCharacters:
        allowEncodedSlash: true
        allowEncodedBackSlash: true
        allowEncodedNullCharacter: true
        allowEncodedSemicolon: true
        allowEncodedPercent: true
        allowEncodedQuestionMark: true
        allowEncodedHash: true
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        app.port()
    );
    // The entry point denies only `%2F`: once its section is written, options default to true.
    let web = "    http:\n      encodedCharacters:\n        allowEncodedSlash: false\n";
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["plain", "mw", "all"],
        web,
    );
    for (target, status, body) in [
        ("/plain/a%2Fb", 400, ""),
        ("/plain/a%2fb", 400, ""),
        ("/plain/a%5Cb", 200, "/plain/a%5Cb"),
        ("/plain/a%2Fb/../c", 200, "/plain/c"),
        ("/plain/x?q=%2F", 200, "/plain/x?q=%2F"),
        // The middleware denies all but `%23`, by its defaults.
        ("/mw/a%5Cb", 400, ""),
        ("/mw/a%00b", 400, ""),
        ("/mw/a%3bb", 400, ""),
        ("/mw/a%25b", 400, ""),
        ("/mw/a%3Fb", 400, ""),
        ("/mw/a%23b", 200, "/mw/a%23b"),
        ("/mw/a%20b", 200, "/mw/a%20b"),
        ("/mw/x?q=%2F%25", 200, "/mw/x?q=%2F%25"),
        // Go's re-encoding decodes the escapes of a path with a byte it does not leave raw.
        ("/mw/a%2Fb{", 200, "/mw/a/b%7B"),
        // A middleware that allows everything cannot allow what the entry point refuses.
        ("/all/a%2Fb", 400, ""),
        ("/all/a%3Bb", 200, "/all/a%3Bb"),
        // No router: 404 before any check.
        ("/none/a%2Fb", 404, "404 page not found\n"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!(
            (got.status, got.text().as_str()),
            (status, body),
            "{target}"
        );
    }
}

#[test]
fn preserve_path_puts_the_server_path_first_as_traefik_does() {
    let oracle = oracle("preserve_path_puts_the_server_path_first_as_traefik_does");
    let app = backend("app")
        .answer(|r| Reply::ok(r.target.clone()))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let port = app.port();
    // Three servers of one backend: with the path kept, with a trailing slash, and without
    // preservePath (the URL's path is then not sent at all, in Traefik and here).
    let dynamic = format!(
        r#"http:
  routers:
    kept:
      rule: "PathPrefix(`/k`)"
      entryPoints: [web]
      service: kept
    slash:
      rule: "PathPrefix(`/s`)"
      entryPoints: [web]
      service: slash
    dropped:
      rule: "PathPrefix(`/d`)"
      entryPoints: [web]
      middlewares: [strip]
      service: dropped
  middlewares:
    strip:
      stripPrefix:
        prefixes: ["/d"]
  services:
    kept:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{port}/hmi"
            preservePath: true
    slash:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{port}/base%20dir/"
            preservePath: true
    dropped:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{port}/ignored"
"#
    );
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["kept", "slash", "dropped"],
    );
    for (target, want) in [
        ("/k", "/hmi/k"),
        ("/k/a?b=c", "/hmi/k/a?b=c"),
        ("/k/a%2Fb", "/hmi/k/a%2Fb"),
        ("/s/x", "/base%20dir/s/x"),
        ("/d/x", "/x"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!(got.status, 200, "{target}");
        assert_eq!(got.text(), want, "{target}");
    }
    // A request with a body takes the other client path.
    let post = Probe {
        method: "POST",
        body: b"body",
        ..Probe::get("/k/p")
    };
    let got = agree(&twin, &post);
    assert_eq!((got.status, got.text().as_str()), (200, "/hmi/k/p"));
}

/// Routers `q` (`/q` with `Query(b, 2)`) and `x` (`/x`), each answering its name, the target
/// and the names of the request fields written with `_` the server received.
fn query_and_fields_case() -> (String, [bridge_tests::backends::Backend; 2]) {
    let echo = |name: &'static str| {
        backend(name)
            .answer(move |r| {
                let mut underscored: Vec<String> = r
                    .head
                    .split("\r\n")
                    .filter_map(|l| l.split_once(':'))
                    .map(|(k, _)| k.trim().to_ascii_lowercase())
                    .filter(|k| k.contains('_'))
                    .collect();
                underscored.sort();
                Reply::ok(format!("{name} {} [{}]", r.target, underscored.join(" ")))
            })
            .start()
    };
    let (q, x) = (echo("q"), echo("x"));
    let dynamic = format!(
        r#"http:
  routers:
    q:
      rule: "PathPrefix(`/q`) && Query(`b`, `2`)"
      entryPoints: [web]
      service: q
    x:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      service: x
  services:
    q:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
    x:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        q.port(),
        x.port()
    );
    (dynamic, [q, x])
}

#[test]
fn a_query_s_semicolons_separate_parameters_or_are_encoded_as_traefik_hands_them_on() {
    let oracle =
        oracle("a_query_s_semicolons_separate_parameters_or_are_encoded_as_traefik_hands_them_on");
    let (dynamic, _backends) = query_and_fields_case();
    let dir = tempfile::tempdir().unwrap();
    // By default a `;` is a parameter separator, for the rules and for the server alike.
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["q", "x"]);
    for (target, want) in [
        ("/q?a=1;b=2", "q /q?a=1&b=2 []"),
        ("/q?a;b=2", "q /q?a&b=2 []"),
        ("/q?b=2;", "q /q?b=2& []"),
        ("/q?a=1;;b=3", "x /q?a=1&&b=3 []"),
        ("/q?a=%3B&b=2", "q /q?a=%3B&b=2 []"),
        ("/q/a;b?c=d", "x /q/a;b?c=d []"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!((got.status, got.text().as_str()), (200, want), "{target}");
    }
    // Fields written with `_` are handed on by default.
    let kept = agree(
        &twin,
        &Probe {
            headers: &[("X_User", "admin")],
            ..Probe::get("/x")
        },
    );
    assert_eq!(kept.text(), "x /x [x_user]");

    let dir = tempfile::tempdir().unwrap();
    let web = "    http:\n      encodeQuerySemicolons: true\n";
    let twin = serve_twice_with(dir.path(), oracle.as_deref(), &dynamic, &["q", "x"], web);
    for (target, want) in [
        ("/q?a=1;b=2", "x /q?a=1%3Bb=2 []"),
        ("/q?b=2;a=1", "x /q?b=2%3Ba=1 []"),
        ("/q?a=1&b=2;", "x /q?a=1&b=2%3B []"),
        ("/q?a=1&b=2", "q /q?a=1&b=2 []"),
    ] {
        let got = agree(&twin, &Probe::get(target));
        assert_eq!((got.status, got.text().as_str()), (200, want), "{target}");
    }
}

#[test]
fn fields_named_with_underscores_are_deleted_or_refused_as_traefik_does() {
    let oracle = oracle("fields_named_with_underscores_are_deleted_or_refused_as_traefik_does");
    let (dynamic, _backends) = query_and_fields_case();
    let dir = tempfile::tempdir().unwrap();
    let web = "    http:\n      underscoreHeadersStrategy: delete\n";
    let twin = serve_twice_with(dir.path(), oracle.as_deref(), &dynamic, &["q", "x"], web);
    let got = agree(
        &twin,
        &Probe {
            headers: &[("X_User", "admin"), ("X-Ok_", "1"), ("X-Kept", "1")],
            ..Probe::get("/x")
        },
    );
    assert_eq!((got.status, got.text().as_str()), (200, "x /x []"));
    // Deleted before routing: a rule cannot match on them.
    let dynamic_header_rule = dynamic.replace(
        "PathPrefix(`/q`) && Query(`b`, `2`)",
        "PathPrefix(`/q`) && Header(`X_Route`, `q`)",
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic_header_rule,
        &["q", "x"],
        web,
    );
    let got = agree(
        &twin,
        &Probe {
            headers: &[("X_Route", "q")],
            ..Probe::get("/q")
        },
    );
    assert_eq!(got.text(), "x /q []");

    let dir = tempfile::tempdir().unwrap();
    let web = "    http:\n      underscoreHeadersStrategy: reject\n";
    let twin = serve_twice_with(dir.path(), oracle.as_deref(), &dynamic, &["q", "x"], web);
    let http_error = ["content-type", "x-content-type-options", "content-length"];
    for (target, headers) in [
        ("/x", &[("X_User", "admin")][..]),
        ("/x", &[("X-Kept", "1"), ("a_", "1")][..]),
    ] {
        let got = agree(
            &twin,
            &Probe {
                headers,
                compare: &http_error,
                ..Probe::get(target)
            },
        );
        assert_eq!(
            (got.status, got.text().as_str()),
            (400, "Bad Request\n"),
            "{target} {headers:?}"
        );
        assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
    }
    // With a raw `#` too, both refuse; bridge-runtime's HTTP/1.1 parser refuses the fragment
    // first, with its empty body (a documented difference).
    for (who, addr) in twin.targets() {
        let got = bridge_tests::traefik::fetch(addr, "GET", "/x#frag", &[("X_User", "a")], b"")
            .unwrap_or_else(|e| panic!("{who}: {e}"));
        assert_eq!(got.status, 400, "{who}");
    }
    let passed = agree(
        &twin,
        &Probe {
            headers: &[("X-Kept", "1")],
            ..Probe::get("/q?b=2")
        },
    );
    assert_eq!(passed.text(), "q /q?b=2 []");
}

#[test]
fn the_proxy_s_own_text_answers_carry_go_s_http_error_fields() {
    let oracle = oracle("the_proxy_s_own_text_answers_carry_go_s_http_error_fields");
    let dir = tempfile::tempdir().unwrap();
    let dynamic = r#"http:
  routers:
    empty:
      rule: "Path(`/empty`)"
      entryPoints: [web]
      service: empty
  services:
    empty:
      loadBalancer:
        servers: []
"#;
    let twin = serve_twice(dir.path(), oracle.as_deref(), dynamic, &["empty"]);
    let compare = ["content-type", "x-content-type-options", "content-length"];
    for (target, status, body) in [
        ("/nowhere", 404, "404 page not found\n"),
        ("/empty", 503, "no available server\n"),
    ] {
        let got = agree(
            &twin,
            &Probe {
                compare: &compare,
                ..Probe::get(target)
            },
        );
        assert_eq!((got.status, got.text().as_str()), (status, body));
        assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
    }
}
