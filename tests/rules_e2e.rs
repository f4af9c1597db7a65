//! Rule semantics through the real server: a table of routers with Traefik v3 (and v2) rules, each
//! tagging the request with its name, and raw HTTP requests that must land on the expected router
//! (or 404). This checks the whole path — parsing in bridgectl, the plan, routing in bridge-runtime
//! — against the acceptance cases in shared/docs/traefik-semantics.md §3.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::process::{KillOnDrop, bridge_runtime};

/// (router name, rule, extra router keys)
const ROUTERS: &[(&str, &str, &str)] = &[
    ("host", "Host(`example.com`)", ""),
    ("host-upper", "Host(`UPPER.example.com`)", ""),
    ("wildcard", "Host(`*.wild.example`)", ""),
    (
        "hostregexp",
        "HostRegexp(`^[a-z]+\\\\.regex\\\\.example$`)",
        "",
    ),
    ("path-exact", "Host(`paths.example`) && Path(`/css`)", ""),
    (
        "path-prefix",
        "Host(`paths.example`) && PathPrefix(`/js`)",
        "",
    ),
    (
        "path-regexp",
        "Host(`paths.example`) && PathRegexp(`^/(img|font)s/`)",
        "",
    ),
    ("method", "Host(`methods.example`) && Method(`POST`)", ""),
    (
        "header",
        "Host(`headers.example`) && Header(`X-Env`, `prod`)",
        "",
    ),
    (
        "query",
        "Host(`query.example`) && Query(`q`, `traefik`)",
        "",
    ),
    (
        "query-present",
        "Host(`query.example`) && Query(`mobile`)",
        "",
    ),
    (
        "clientip-local",
        "Host(`ip.example`) && ClientIP(`127.0.0.0/8`)",
        "",
    ),
    (
        "clientip-other",
        "Host(`ip2.example`) && ClientIP(`10.0.0.0/8`)",
        "",
    ),
    ("short", "Host(`prio.example`) && PathPrefix(`/my`)", ""),
    ("long", "Host(`prio.example`) && PathPrefix(`/mypath`)", ""),
    (
        "forced-short",
        "Host(`prio2.example`) && PathPrefix(`/my`)",
        "      priority: 100\n",
    ),
    (
        "forced-long",
        "Host(`prio2.example`) && PathPrefix(`/mypath`)",
        "      priority: 10\n",
    ),
    (
        "or-and",
        "Host(`a.logic`) || Host(`b.logic`) && Path(`/css`)",
        "",
    ),
    ("not", "Host(`not.logic`) && !PathPrefix(`/private`)", ""),
    (
        "spaces",
        "Host(`decode.example`) && PathPrefix(`/foo bar`)",
        "",
    ),
    (
        "v2-multi",
        "Host(`v2a.example`, `v2b.example`)",
        "      ruleSyntax: v2\n",
    ),
    (
        "lowercase-matcher",
        "host(`lower.example`) && PATHPREFIX(`/x`)",
        "",
    ),
];

/// (request line path or absolute URI, Host header, extra headers, method, expected router or "404")
const CASES: &[(&str, &str, &str, &str, &str)] = &[
    ("/", "example.com", "", "GET", "host"),
    ("/", "example.com:8080", "", "GET", "host"),
    ("/", "EXAMPLE.COM", "", "GET", "host"),
    ("/", "example.com.", "", "GET", "host"),
    ("/", "upper.example.com", "", "GET", "host-upper"),
    ("/", "example.org", "", "GET", "404"),
    ("/", "a.wild.example", "", "GET", "wildcard"),
    ("/", "wild.example", "", "GET", "404"),
    ("/", "a.b.wild.example", "", "GET", "404"),
    ("/", "abc.regex.example", "", "GET", "hostregexp"),
    ("/", "ABC.regex.example", "", "GET", "hostregexp"),
    ("/", "a1.regex.example", "", "GET", "404"),
    ("/css", "paths.example", "", "GET", "path-exact"),
    ("/css/", "paths.example", "", "GET", "404"),
    ("/js/app.js", "paths.example", "", "GET", "path-prefix"),
    ("/jsx", "paths.example", "", "GET", "path-prefix"),
    ("/imgs/a.png", "paths.example", "", "GET", "path-regexp"),
    ("/IMGS/a.png", "paths.example", "", "GET", "404"),
    ("/", "methods.example", "", "POST", "method"),
    ("/", "methods.example", "", "GET", "404"),
    ("/", "headers.example", "X-Env: prod\r\n", "GET", "header"),
    ("/", "headers.example", "x-env: prod\r\n", "GET", "header"),
    ("/", "headers.example", "X-Env: dev\r\n", "GET", "404"),
    ("/?q=awesome&q=traefik", "query.example", "", "GET", "query"),
    ("/?q=TRAEFIK", "query.example", "", "GET", "404"),
    ("/?Q=traefik", "query.example", "", "GET", "404"),
    ("/?mobile", "query.example", "", "GET", "query-present"),
    ("/?mobile=true", "query.example", "", "GET", "404"),
    ("/", "ip.example", "", "GET", "clientip-local"),
    (
        "/",
        "ip2.example",
        "X-Forwarded-For: 10.1.2.3\r\n",
        "GET",
        "404",
    ),
    ("/mypath", "prio.example", "", "GET", "long"),
    ("/my", "prio.example", "", "GET", "short"),
    ("/mypath", "prio2.example", "", "GET", "forced-short"),
    ("/js", "a.logic", "", "GET", "or-and"),
    ("/js", "b.logic", "", "GET", "404"),
    ("/css", "b.logic", "", "GET", "or-and"),
    ("/public", "not.logic", "", "GET", "not"),
    ("/private/x", "not.logic", "", "GET", "404"),
    ("/foo%20bar/x", "decode.example", "", "GET", "spaces"),
    ("/", "v2b.example", "", "GET", "v2-multi"),
    ("/x/y", "lower.example", "", "GET", "lowercase-matcher"),
    ("http://example.com/", "example.org", "", "GET", "host"),
    ("http://example.org/", "example.com", "", "GET", "404"),
];

#[test]
fn rule_table_through_the_real_server() {
    // Answers with the `X-Router` field it received (lower-cased), `-` without one.
    let backend = backend("echo")
        .answer(|r| Reply::ok(r.header("x-router").unwrap_or("-").to_ascii_lowercase()))
        .start()
        .addr;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("traefik.yml"), "entryPoints:\n  web:\n    address: \":80\"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n").unwrap();
    let mut dynamic = String::from("http:\n  routers:\n");
    let mut middlewares = String::from("  middlewares:\n");
    for (name, rule, extra) in ROUTERS {
        dynamic.push_str(&format!("    {name}:\n      rule: \"{rule}\"\n      service: echo\n      entryPoints: [web]\n      middlewares: [tag-{name}]\n{extra}"));
        middlewares.push_str(&format!("    tag-{name}:\n      headers:\n        customRequestHeaders:\n          X-Router: {name}\n"));
    }
    dynamic.push_str(&middlewares);
    dynamic.push_str(&format!("  services:\n    echo:\n      loadBalancer:\n        servers:\n          - url: \"http://{backend}\"\n"));
    std::fs::write(dir.path().join("dynamic.yml"), &dynamic).unwrap();
    let plan = bridge_tests::build_plan(dir.path(), "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan).args(["--bind", "web=127.0.0.1:0"]),
        &["web"],
    );
    let child = KillOnDrop(child);
    let web = addrs[0];
    let mut failures = Vec::new();
    for (target, host, extra, method, want) in CASES {
        let mut s = TcpStream::connect(web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "{method} {target} HTTP/1.1\r\nHost: {host}\r\n{extra}Content-Length: 0\r\nConnection: close\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let status = resp.split_whitespace().nth(1).unwrap_or("");
        let body = resp.split("\r\n\r\n").nth(1).unwrap_or("");
        let got = if status == "404" { "404" } else { body };
        if got != *want {
            failures.push(format!(
                "{method} {target} Host: {host} {extra:?} → {got} (want {want})"
            ));
        }
    }
    drop(child);
    assert!(CASES.len() >= 40, "the table holds {} cases", CASES.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
