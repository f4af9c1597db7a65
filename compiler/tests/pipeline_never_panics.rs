//! Property test: whatever text the files hold, `check` returns diagnostics whose positions lie inside
//! the files — it never panics, hangs or reports an impossible place. Inputs mix random bytes with
//! YAML built from real Traefik keys (in random case), so both the parser and the later stages are hit.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use bridgectl::check::{CheckOptions, check};
use proptest::prelude::*;

const KEYS: &[&str] = &[
    "http",
    "routers",
    "services",
    "middlewares",
    "rule",
    "service",
    "entryPoints",
    "entrypoints",
    "loadBalancer",
    "servers",
    "url",
    "healthCheck",
    "healthcheck",
    "interval",
    "timeout",
    "path",
    "weighted",
    "failover",
    "fallback",
    "chain",
    "basicAuth",
    "users",
    "usersFile",
    "stripPrefix",
    "prefixes",
    "tls",
    "options",
    "certificates",
    "certFile",
    "priority",
    "ruleSyntax",
    "tcp",
    "headers",
    "customRequestHeaders",
    "redirectScheme",
    "scheme",
    "port",
    "x",
    "api",
    "insecure",
];
const VALUES: &[&str] = &[
    "\"PathPrefix(`/`)\"",
    "\"Host(`a`) && Path(`/b`)\"",
    "central",
    "web",
    "http://a:80",
    "5s",
    "3",
    "true",
    "~",
    "{}",
    "[]",
    "[web, web]",
    "\"$apr1$a$b\"",
    "/etc/traefik/x",
    "'Host(`x`)'",
    "-1",
    "\"{{ v }}\"",
    "&a x",
    "*a",
    "\"\\u00e9\"",
    "1e9",
    "0x1F",
];

fn yamlish() -> impl Strategy<Value = String> {
    let line = (
        0usize..6,
        prop::sample::select(KEYS),
        prop::option::of(prop::sample::select(VALUES)),
        any::<bool>(),
    )
        .prop_map(|(indent, key, value, dash)| {
            let pad = "  ".repeat(indent);
            let dash = if dash { "- " } else { "" };
            match value {
                Some(v) => format!("{pad}{dash}{key}: {v}\n"),
                None => format!("{pad}{dash}{key}:\n"),
            }
        });
    prop::collection::vec(line, 0..40).prop_map(|lines| lines.concat())
}

fn run(static_text: &[u8], dynamic_text: &[u8]) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("traefik.yml"), static_text).unwrap();
    std::fs::write(dir.path().join("dynamic.yml"), dynamic_text).unwrap();
    let report = check(&CheckOptions {
        dir: dir.path().to_path_buf(),
        dynamic: Some(dir.path().join("dynamic.yml")),
        ..CheckOptions::default()
    })
    .unwrap();
    for d in &report.diagnostics {
        if let Some(span) = d.span {
            let file = report
                .sources
                .get(span.file)
                .expect("span names a known file");
            assert!(
                span.start <= span.end && span.end <= file.text.len(),
                "{d:?}"
            );
        }
        assert!(!d.message.is_empty());
        assert_ne!(d.code, bridgectl::diag::Code::Internal, "{d:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn structured_yaml_never_panics(s in yamlish(), d in yamlish()) {
        run(s.as_bytes(), d.as_bytes());
    }

    #[test]
    fn arbitrary_bytes_never_panic(s in prop::collection::vec(any::<u8>(), 0..512), d in prop::collection::vec(any::<u8>(), 0..512)) {
        run(&s, &d);
    }

    #[test]
    fn arbitrary_text_never_panics(s in ".{0,300}", d in "[ -~\n\t]{0,600}") {
        run(s.as_bytes(), d.as_bytes());
    }
}
