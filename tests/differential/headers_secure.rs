//! The `headers` middleware's host and HTTPS options, compared with Traefik 3.7.15 (which runs
//! them through unrolled/secure): `allowedHosts` with `hostsProxyHeaders` (`500 Bad Host`),
//! `sslProxyHeaders` deciding where HSTS and `Public-Key-Pins` go, `customBrowserXSSValue`,
//! `contentSecurityPolicyReportOnly`, `isDevelopment`, and the deprecated `sslRedirect`,
//! `sslHost` and `featurePolicy`, which Traefik v3 no longer acts on.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

const FIELDS: &[&str] = &[
    "content-type",
    "x-content-type-options",
    "strict-transport-security",
    "public-key-pins",
    "x-xss-protection",
    "content-security-policy-report-only",
    "feature-policy",
    "location",
];

/// Target, request fields, status.
type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);

#[test]
fn headers_host_and_https_options_answer_as_traefik_does() {
    let oracle = oracle("headers_host_and_https_options_answer_as_traefik_does");
    let app = backend("app").answer(|_| Reply::ok("app")).start();
    let dynamic = format!(
        r#"http:
  routers:
    hosts:
      rule: PathPrefix(`/hosts`)
      service: app
      middlewares: [hosts]
    https:
      rule: PathPrefix(`/https`)
      service: app
      middlewares: [https]
    dev:
      rule: PathPrefix(`/dev`)
      service: app
      middlewares: [dev]
    old:
      rule: PathPrefix(`/old`)
      service: app
      middlewares: [old]
  middlewares:
    hosts:
      headers:
        allowedHosts: ["plant.test", "Other.Test:8080"]
        hostsProxyHeaders: ["X-Original-Host", "X-Forwarded-Host"]
    https:
      headers:
        sslProxyHeaders:
          X-Ssl: "on"
        stsSeconds: 60
        publicKey: 'pin-sha256="cUPcTAZWKaASuYWhhneDttWpY3oBAkE3h2+soZS7sWs="; max-age=5184000'
        customBrowserXSSValue: "0"
        browserXssFilter: true
        contentSecurityPolicyReportOnly: "default-src 'self'"
    dev:
      headers:
        isDevelopment: true
        allowedHosts: ["nowhere.test"]
        stsSeconds: 60
        forceSTSHeader: true
        sslProxyHeaders:
          X-Ssl: "on"
        publicKey: 'pin-sha256="x"'
    old:
      headers:
        sslRedirect: true
        sslTemporaryRedirect: true
        sslHost: secure.test
        sslForceHost: true
        featurePolicy: "camera 'none'"
        frameDeny: true
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
        &["hosts", "https", "dev", "old"],
    );
    let probe = |target, headers| Probe {
        method: "GET",
        target,
        headers,
        compare: FIELDS,
        body: b"",
    };
    let cases: &[Case<'_>] = &[
        ("/hosts", &[("Host", "plant.test")], 200),
        ("/hosts", &[("Host", "PLANT.test")], 200),
        ("/hosts", &[("Host", "plant.test:80")], 500),
        ("/hosts", &[("Host", "other.test:8080")], 200),
        ("/hosts", &[("Host", "other.test")], 500),
        // The first non-empty proxy field names the host; the entry point drops a forged
        // X-Forwarded-Host (untrusted client), so only the other one counts.
        (
            "/hosts",
            &[("Host", "evil.test"), ("X-Original-Host", "plant.test")],
            200,
        ),
        (
            "/hosts",
            &[("Host", "plant.test"), ("X-Original-Host", "evil.test")],
            500,
        ),
        (
            "/hosts",
            &[
                ("Host", "evil.test"),
                ("X-Original-Host", ""),
                ("X-Forwarded-Host", "plant.test"),
            ],
            500,
        ),
        // Plain HTTP: no HSTS nor pins unless a TLS terminator says it was HTTPS.
        ("/https", &[("Host", "plant.test")], 200),
        ("/https", &[("Host", "plant.test"), ("X-Ssl", "on")], 200),
        ("/https", &[("Host", "plant.test"), ("X-Ssl", "ON")], 200),
        // isDevelopment: no host check, no HSTS (even forced), no pins.
        ("/dev", &[("Host", "plant.test"), ("X-Ssl", "on")], 200),
        // Deprecated SSL redirect options and featurePolicy do nothing in Traefik v3.
        ("/old", &[("Host", "plant.test")], 200),
    ];
    for (target, headers, status) in cases {
        let a = agree(&twin, &probe(target, headers));
        assert_eq!(a.status, *status, "{target} {headers:?}: {}", a.text());
    }
    let bad = agree(&twin, &probe("/hosts", &[("Host", "other.test")]));
    assert_eq!(bad.text(), "Bad Host\n");
    let ssl = agree(
        &twin,
        &probe("/https", &[("Host", "plant.test"), ("X-Ssl", "on")]),
    );
    assert_eq!(ssl.header("strict-transport-security"), Some("max-age=60"));
    assert!(ssl.header("public-key-pins").is_some());
    assert_eq!(ssl.header("x-xss-protection"), Some("0"));
    assert_eq!(
        ssl.header("content-security-policy-report-only"),
        Some("default-src 'self'")
    );
    let plain = agree(&twin, &probe("/https", &[("Host", "plant.test")]));
    assert_eq!(plain.header("strict-transport-security"), None);
    assert_eq!(plain.header("public-key-pins"), None);
}

/// Each `headers` middleware edits the answer as it passes back through it, so the outermost
/// one's value of a field wins; within one middleware the custom fields win over its security
/// headers and HSTS, and its CORS fields come last.
#[test]
fn the_outer_headers_middleware_and_custom_fields_have_the_last_word() {
    let oracle = oracle("the_outer_headers_middleware_and_custom_fields_have_the_last_word");
    let app = backend("app").answer(|_| Reply::ok("app")).start();
    let dynamic = format!(
        r#"http:
  routers:
    two:
      rule: PathPrefix(`/two`)
      middlewares: [outer, inner]
      service: app
    one:
      rule: PathPrefix(`/one`)
      middlewares: [custom-over-secure]
      service: app
  middlewares:
    outer:
      headers:
        customResponseHeaders:
          X-Layer: outer
          X-Only-Outer: a
        stsSeconds: 100
        forceSTSHeader: true
        customFrameOptionsValue: SAMEORIGIN
        referrerPolicy: origin
    inner:
      headers:
        customResponseHeaders:
          X-Layer: inner
          X-Only-Inner: b
          X-Only-Outer: ""
        stsSeconds: 200
        forceSTSHeader: true
        frameDeny: true
        referrerPolicy: no-referrer
    custom-over-secure:
      headers:
        customResponseHeaders:
          X-Frame-Options: ALLOWALL
          Strict-Transport-Security: custom
          Access-Control-Allow-Origin: custom
        frameDeny: true
        stsSeconds: 5
        forceSTSHeader: true
        accessControlAllowOriginList: ["*"]
  services:
    app:
      loadBalancer:
        servers:
          - url: http://{}
"#,
        app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["two", "one"]);
    let fields = &[
        "x-layer",
        "x-only-outer",
        "x-only-inner",
        "strict-transport-security",
        "x-frame-options",
        "referrer-policy",
        "access-control-allow-origin",
    ];
    let two = agree(
        &twin,
        &Probe {
            method: "GET",
            target: "/two",
            headers: &[],
            compare: fields,
            body: b"",
        },
    );
    assert_eq!(two.header("x-layer"), Some("outer"));
    assert_eq!(two.header("x-only-outer"), Some("a"));
    assert_eq!(two.header("x-only-inner"), Some("b"));
    assert_eq!(two.header("strict-transport-security"), Some("max-age=100"));
    assert_eq!(two.header("x-frame-options"), Some("SAMEORIGIN"));
    assert_eq!(two.header("referrer-policy"), Some("origin"));
    let one = agree(
        &twin,
        &Probe {
            method: "GET",
            target: "/one",
            headers: &[("origin", "http://ui.example")],
            compare: fields,
            body: b"",
        },
    );
    assert_eq!(one.header("x-frame-options"), Some("ALLOWALL"));
    assert_eq!(one.header("strict-transport-security"), Some("custom"));
    assert_eq!(one.header("access-control-allow-origin"), Some("*"));
}
