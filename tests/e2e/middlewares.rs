//! Middlewares through the real server: path rewrites, security and CORS headers, basicAuth,
//! redirects, allow lists.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bridge_tests::backends::backend;

use crate::harness::{get, get_raw, request_raw, start_with, wait_for};

#[test]
fn middlewares_rewrite_paths_and_set_security_headers() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [strip, secure]\n")
            .replace(
                "  services:\n",
                "  middlewares:\n    strip:\n      stripPrefix:\n        prefixes: [/central]\n    secure:\n      headers:\n        frameDeny: true\n        contentTypeNosniff: true\n        customResponseHeaders:\n          X-Served-By: bridge\n  services:\n",
            )
    });
    let raw = get_raw(rt.web, "/central/ui?x=1");
    let lower = raw.to_ascii_lowercase();
    assert!(
        raw.contains("a /ui?x=1"),
        "prefix stripped, query kept: {raw}"
    );
    assert!(
        raw.contains("xff=127.0.0.1"),
        "an untrusted client cannot forge X-Forwarded-For: {raw}"
    );
    assert!(lower.contains("x-frame-options: deny"), "{raw}");
    assert!(lower.contains("x-content-type-options: nosniff"), "{raw}");
    assert!(lower.contains("x-served-by: bridge"), "{raw}");
}

#[test]
fn basic_auth_guards_a_router() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [auth]\n").replace(
            "  services:\n",
            "  middlewares:\n    auth:\n      basicAuth:\n        realm: scada\n        users:\n          - \"admin:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\"\n  services:\n",
        )
    });
    let raw = get_raw(rt.web, "/ui");
    assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("www-authenticate: basic realm=\"scada\""),
        "{raw}"
    );
    let send = |auth: &str| {
        let mut s = TcpStream::connect(rt.web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET /ui HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    // admin:test
    assert!(
        send("YWRtaW46dGVzdA==").contains("a /ui"),
        "right password passes"
    );
    // admin:wrong
    assert!(
        send("YWRtaW46d3Jvbmc=").starts_with("HTTP/1.1 401"),
        "wrong password is refused"
    );
}

#[test]
fn redirect_allow_list_and_regex_strip_middlewares() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let routers = "    redir:\n      rule: \"PathPrefix(`/secure`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [to-https]\n    blocked:\n      rule: \"PathPrefix(`/admin`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [lan-only]\n    versioned:\n      rule: \"PathPrefix(`/v1`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [strip-version]\n";
    let middlewares = "  middlewares:\n    to-https:\n      redirectScheme:\n        scheme: https\n        permanent: true\n    lan-only:\n      ipAllowList:\n        sourceRange: [10.0.0.0/8]\n    strip-version:\n      stripPrefixRegex:\n        regex: [\"/v[0-9]+\"]\n";
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replacen(
            "  services:\n",
            &format!("{routers}{middlewares}  services:\n"),
            1,
        )
    });
    let raw = get_raw(rt.web, "/secure/page?x=1");
    assert!(raw.starts_with("HTTP/1.1 301"), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("location: https://scadabridge.local/secure/page?x=1"),
        "{raw}"
    );
    assert_eq!(
        get(rt.web, "/admin").0,
        403,
        "127.0.0.1 is outside 10.0.0.0/8"
    );
    assert!(
        get(rt.web, "/v1/items").1.starts_with("a /items"),
        "version prefix stripped"
    );
}

#[test]
fn cors_preflights_are_answered_by_the_proxy_and_responses_get_allow_origin() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [cors]\n")
            .replace(
                "  services:\n",
                "  middlewares:\n    cors:\n      headers:\n        accessControlAllowMethods: [GET, PUT]\n        accessControlAllowHeaders: [X-Token]\n        accessControlAllowOriginList: [https://ui.example]\n        accessControlAllowOriginListRegex: ['^https://[a-z]+\\.ops\\.example$']\n        accessControlAllowCredentials: true\n        accessControlExposeHeaders: [X-Served-By]\n        accessControlMaxAge: 600\n        addVaryHeader: true\n  services:\n",
            )
    });
    wait_for(&rt, "a ", Duration::from_secs(10));
    // Preflight: answered by the proxy itself (the backend would have answered "a /ui ...").
    let raw = request_raw(
        rt.web,
        "OPTIONS",
        "/ui",
        "Origin: https://ui.example\r\nAccess-Control-Request-Method: PUT\r\n",
    );
    let lower = raw.to_ascii_lowercase();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with("\r\n\r\n"), "no body, not forwarded: {raw}");
    assert!(
        lower.contains("access-control-allow-origin: https://ui.example\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-methods: get,put\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-headers: x-token\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-credentials: true\r\n"),
        "{raw}"
    );
    assert!(lower.contains("access-control-max-age: 600\r\n"), "{raw}");
    // A normal request from an origin matched by the regex: forwarded, origin echoed.
    let raw = request_raw(rt.web, "GET", "/ui", "Origin: https://plc.ops.example\r\n");
    let lower = raw.to_ascii_lowercase();
    assert!(raw.contains("a /ui"), "forwarded: {raw}");
    assert!(
        lower.contains("access-control-allow-origin: https://plc.ops.example\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-expose-headers: x-served-by\r\n"),
        "{raw}"
    );
    assert!(lower.contains("vary: origin\r\n"), "{raw}");
    // An origin that is not allowed gets no Allow-Origin; a plain OPTIONS is forwarded.
    let raw = request_raw(rt.web, "GET", "/ui", "Origin: https://evil.example\r\n");
    assert!(
        !raw.to_ascii_lowercase()
            .contains("access-control-allow-origin"),
        "{raw}"
    );
    let raw = request_raw(rt.web, "OPTIONS", "/ui", "Origin: https://ui.example\r\n");
    assert!(
        raw.contains("a /ui"),
        "not a preflight without the request method: {raw}"
    );
}
