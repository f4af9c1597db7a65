use std::collections::BTreeMap;

use bridge_plan::{
    AddPrefix, Api, BasicAuth, Certificate, ClientAuth, EntryPointTls, Failover, Headers,
    IpAllowList, Middleware, MiddlewareKind, Mirror, Mirroring, Ping, Plan, Redirect, Retry,
    Router, RouterTls, Service, ServiceKind, StripPrefix, TlsOptions, Weighted, WeightedRef,
};

use super::*;
use crate::rule::{RuleSyntax, parse_rule};

const ALICE_HASH: &str = "$2y$05$Jk7M0DCPd8sFh1jmRwsF6OqTj0YkSg2bWqk9vPj3aQ5xQmYl8bX2e";
const BOB_HASH: &str = "$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/";

fn router(rule: &str, priority: i64, eps: &[&str], mws: &[&str], service: &str) -> Router {
    let mut r = Plan::example().routers["whoami"].clone();
    r.rule = rule.into();
    r.matcher = parse_rule(rule, RuleSyntax::V3).unwrap();
    r.priority = priority;
    r.entrypoints = eps.iter().map(|s| (*s).to_owned()).collect();
    r.middlewares = mws.iter().map(|s| (*s).to_owned()).collect();
    r.service = Some(service.into());
    r
}

fn no_headers() -> Headers {
    Headers {
        custom_request_headers: BTreeMap::new(),
        custom_response_headers: BTreeMap::new(),
        sts_seconds: 0,
        sts_include_subdomains: false,
        sts_preload: false,
        force_sts_header: false,
        frame_deny: false,
        custom_frame_options_value: None,
        content_type_nosniff: false,
        browser_xss_filter: false,
        content_security_policy: None,
        referrer_policy: None,
        permissions_policy: None,
        access_control_allow_credentials: false,
        access_control_allow_headers: vec![],
        access_control_allow_methods: vec![],
        access_control_allow_origin_list: vec![],
        access_control_allow_origin_list_regex: vec![],
        access_control_expose_headers: vec![],
        access_control_max_age: 0,
        add_vary_header: false,
        allowed_hosts: vec![],
        hosts_proxy_headers: vec![],
        ssl_proxy_headers: BTreeMap::new(),
        custom_browser_xss_value: None,
        content_security_policy_report_only: None,
        public_key: None,
        is_development: false,
    }
}

/// `Plan::example()` grown into a `prod`-like plan: four entry points (one redirecting), a
/// router per kind of situation, every service kind, several middlewares, certificates and
/// two TLS option sets, the API and ping.
fn fixture() -> Plan {
    let mut plan = Plan::example();
    plan.profile = "prod".into();
    let mw_at = |line: u32| bridge_plan::Provenance {
        file: "dynamic/middlewares.yml".into(),
        line,
        column: 5,
    };

    let web = plan.entrypoints["web"].clone();
    let mut websecure = web.clone();
    websecure.address = ":443".into();
    websecure.port = 443;
    websecure.tls = Some(EntryPointTls {
        options: "default".into(),
    });
    websecure.forwarded_headers.trusted_ips = vec!["10.0.0.0/8".into()];
    websecure.source.line = 6;
    let mut legacy = web.clone();
    legacy.address = ":8000".into();
    legacy.port = 8000;
    legacy.redirect = Some(Redirect {
        scheme: "https".into(),
        port: 443,
        permanent: true,
        priority: i64::MAX - 1,
    });
    legacy.source.line = 12;
    let mut traefik = web;
    traefik.address = "127.0.0.1:8080".into();
    traefik.port = 8080;
    traefik.host = Some("127.0.0.1".into());
    traefik.timeouts.write_ms = 30_000;
    traefik.timeouts.read_ms = 1_500;
    traefik.max_header_bytes = 8 * 1024;
    traefik.source.line = 16;
    plan.entrypoints.insert("websecure".into(), websecure);
    plan.entrypoints.insert("legacy".into(), legacy);
    plan.entrypoints.insert("traefik".into(), traefik);

    let whoami = plan.routers.get_mut("whoami").unwrap();
    whoami.entrypoints = vec!["websecure".into()];
    whoami.middlewares = vec!["secure-headers".into()];
    whoami.tls = Some(RouterTls {
        options: "default".into(),
        cert_resolver: None,
    });
    let mut central = router(
        "Host(`central.example.com`) && PathPrefix(`/api`)",
        100,
        &["web"],
        &["auth", "strip-api"],
        "central",
    );
    central.source.line = 20;
    plan.routers.insert("central".into(), central);
    let hosts: Vec<String> = (1..=12)
        .map(|i| format!("Host(`tenant-{i:02}.customers.example.com`)"))
        .collect();
    let long_rule = hosts.join(" || ");
    let mut tenants = router(&long_rule, 10, &["websecure"], &[], "canary");
    tenants.source.line = 30;
    plan.routers.insert("tenants".into(), tenants);
    let mut dashboard = router(
        "PathPrefix(`/dashboard`)",
        1000,
        &["traefik"],
        &["office", "auth"],
        "api@internal",
    );
    dashboard.source.line = 40;
    plan.routers.insert("dashboard".into(), dashboard);

    let mut central_svc = plan.services["whoami"].clone();
    central_svc.source.line = 50;
    if let ServiceKind::LoadBalancer(lb) = &mut central_svc.kind {
        lb.servers = vec![bridge_plan::Server {
            url: "http://central.internal:9000".into(),
            weight: 1,
            preserve_path: false,
        }];
        lb.pass_host_header = false;
        let hc = lb.health_check.as_mut().unwrap();
        hc.path = "/health/active".into();
        hc.interval_ms = 5_000;
        hc.unhealthy_interval_ms = 5_000;
        hc.timeout_ms = 3_000;
    }
    plan.services.insert("central".into(), central_svc);
    let svc_at = |line: u32| bridge_plan::Provenance {
        file: "dynamic/services.yml".into(),
        line,
        column: 5,
    };
    plan.services.insert(
        "canary".into(),
        Service {
            middlewares: Vec::new(),
            source: svc_at(60),
            kind: ServiceKind::Weighted(Weighted {
                services: vec![
                    WeightedRef {
                        service: "whoami".into(),
                        name: "whoami".into(),
                        weight: 3,
                    },
                    WeightedRef {
                        service: "central".into(),
                        name: "central".into(),
                        weight: 1,
                    },
                ],
                health_check: true,
                sticky: None,
            }),
        },
    );
    plan.services.insert(
        "ha".into(),
        Service {
            middlewares: Vec::new(),
            source: svc_at(70),
            kind: ServiceKind::Failover(Failover {
                service: "central".into(),
                fallback: "whoami".into(),
                health_check: false,
                errors: None,
            }),
        },
    );
    plan.services.insert(
        "shadow".into(),
        Service {
            middlewares: Vec::new(),
            source: svc_at(80),
            kind: ServiceKind::Mirroring(Mirroring {
                service: "central".into(),
                mirrors: vec![Mirror {
                    service: "whoami".into(),
                    percent: 10,
                }],
                mirror_body: true,
                max_body_size: Some(1_048_576),
            }),
        },
    );

    plan.middlewares.insert(
        "auth".into(),
        Middleware {
            source: mw_at(3),
            kind: MiddlewareKind::BasicAuth(BasicAuth {
                users: vec![format!("alice:{ALICE_HASH}"), format!("bob:{BOB_HASH}")],
                users_file: None,
                realm: "bridge".into(),
                header_field: Some("X-Auth-User".into()),
                remove_header: true,
            }),
        },
    );
    plan.middlewares.insert(
        "strip-api".into(),
        Middleware {
            source: mw_at(10),
            kind: MiddlewareKind::StripPrefix(StripPrefix {
                prefixes: vec!["/api".into()],
            }),
        },
    );
    let mut headers = no_headers();
    headers.sts_seconds = 31_536_000;
    headers.sts_include_subdomains = true;
    headers.frame_deny = true;
    headers.content_type_nosniff = true;
    headers
        .custom_response_headers
        .insert("X-Served-By".into(), "bridge".into());
    headers
        .custom_response_headers
        .insert("Server".into(), String::new());
    plan.middlewares.insert(
        "secure-headers".into(),
        Middleware {
            source: mw_at(14),
            kind: MiddlewareKind::Headers(headers),
        },
    );
    plan.middlewares.insert(
        "office".into(),
        Middleware {
            source: mw_at(24),
            kind: MiddlewareKind::IpAllowList(IpAllowList {
                source_range: vec!["192.168.0.0/16".into(), "10.1.0.0/16".into()],
                reject_status_code: 403,
                depth: 0,
                excluded_ips: vec![],
                ipv6_subnet: None,
            }),
        },
    );

    plan.tls.certificates = vec![Certificate {
        cert: bridge_plan::Pem::File("certs/example.com.crt".into()),
        key: bridge_plan::Pem::File("certs/example.com.key".into()),
    }];
    plan.tls.default_certificate = Some(Certificate {
        cert: bridge_plan::Pem::File("certs/default.crt".into()),
        key: bridge_plan::Pem::File("certs/default.key".into()),
    });
    plan.tls.options.insert(
        "mtls".into(),
        TlsOptions {
            min_version: bridge_plan::TlsVersion::Tls13,
            max_version: Some(bridge_plan::TlsVersion::Tls13),
            cipher_suites: vec![],
            alpn_protocols: vec!["h2".into()],
            sni_strict: true,
            client_auth: Some(ClientAuth {
                cas: vec![bridge_plan::Pem::File("certs/clients-ca.pem".into())],
                auth_type: bridge_plan::ClientAuthType::RequireAndVerifyClientCert,
            }),
            curve_preferences: Vec::new(),
            session_resumption: true,
        },
    );
    plan.tls.options.get_mut("default").unwrap().cipher_suites = vec![
        bridge_plan::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        bridge_plan::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    ];
    plan.api = Some(Api {
        entrypoint: "traefik".into(),
        dashboard: true,
        insecure: false,
        base_path: "/".into(),
        middlewares: vec!["auth".into()],
    });
    plan.ping = Some(Ping {
        entrypoint: "traefik".into(),
        manual_routing: false,
        terminating_status_code: 503,
    });
    seal(&mut plan);
    plan
}

/// Hashes replaced by a placeholder, so the snapshots survive changes to what the hash covers.
fn redact_hashes(text: &str) -> String {
    let re = regex::Regex::new("sha256:[0-9a-f]+…?").unwrap();
    re.replace_all(text, "sha256:<hash>").into_owned()
}

fn seal(plan: &mut Plan) {
    plan.index_entrypoint_routers();
    plan.seal().unwrap();
    plan.check_consistency().unwrap();
}

#[test]
fn go_durations() {
    let cases = [
        (0, "0s"),
        (250, "250ms"),
        (1_000, "1s"),
        (1_500, "1.5s"),
        (1_050, "1.05s"),
        (60_000, "1m0s"),
        (90_000, "1m30s"),
        (180_000, "3m0s"),
        (3_600_000, "1h0m0s"),
        (3_723_400, "1h2m3.4s"),
    ];
    for (ms, want) in cases {
        assert_eq!(go_duration(ms), want, "{ms} ms");
    }
}

#[test]
fn explain_shows_what_is_served() {
    let plan = fixture();
    let text = explain(&plan);
    assert!(text.starts_with("plan sha256:"), "{text}");
    assert!(text.contains(&format!(
        " · profile prod · plan_version {} · inputs sha256:",
        bridge_plan::PLAN_VERSION
    )));
    // The entry point, its redirect and timeouts.
    let legacy = text.lines().find(|l| l.starts_with("  legacy ")).unwrap();
    assert!(legacy.contains(":8000"), "{legacy}");
    assert!(legacy.contains("→ https :443 permanent"), "{legacy}");
    assert!(
        legacy.contains("read 1m0s, idle 3m0s, grace 10s"),
        "{legacy}"
    );
    assert!(
        text.contains("write timeout 30s, max header 8 KiB"),
        "{text}"
    );
    // A router line: priority, name, rule, chain and service, TLS, source.
    assert!(text.contains("ROUTERS ON web (matching order)"));
    let central = text
        .lines()
        .find(|l| l.contains(" central ") && l.contains("Host("))
        .unwrap();
    assert!(
        central.trim_start().starts_with("100  central"),
        "{central}"
    );
    assert!(central.contains("auth, strip-api → central"), "{central}");
    assert!(central.contains("dynamic/whoami.yml:20"), "{central}");
    assert!(text.contains("→ whoami"));
    // The health-check sentence.
    assert!(text.contains(
            "health check: GET /health/active every 5s, timeout 3s, down servers re-probed every 250ms, probed before traffic"
        ), "{text}");
    // Basic auth: a user count, never a hash.
    assert!(text.contains("2 users"));
    assert!(!text.contains(ALICE_HASH) && !text.contains("$2y$") && !text.contains("$apr1$"));
    // Layout: no trailing spaces, no line over the limit, long rules cut.
    for line in text.lines() {
        assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
        assert!(line.chars().count() <= MAX_LINE, "too long: {line}");
    }
    let tenants = text.lines().find(|l| l.contains(" tenants ")).unwrap();
    assert!(
        tenants.contains('…') && tenants.contains("→ canary"),
        "{tenants}"
    );
    assert_eq!(text, explain(&plan));
}

#[test]
fn explain_snapshot() {
    insta::assert_snapshot!("explain_fixture", redact_hashes(&explain(&fixture())));
}

#[test]
fn explain_example_plan() {
    let text = explain(&Plan::example());
    assert!(text.contains("ROUTERS ON web (matching order)"));
    assert!(text.contains("Host(`whoami.example.com`)"));
    assert!(text.contains(
            "health check: GET /health every 30s, timeout 5s, down servers re-probed every 250ms, probed before traffic"
        ));
    assert!(text.contains("MIDDLEWARES\n  (none)\n"));
    assert!(text.contains("api   disabled"));
}

#[test]
fn diff_with_itself_is_empty() {
    let plan = fixture();
    let d = diff(&plan, &plan);
    assert!(d.is_empty());
    assert!(d.paths().is_empty());
    assert!(d.render().ends_with(
        "\nno routing changes (hashes, inputs and source positions are not compared)\n"
    ));
}

#[test]
fn source_positions_are_not_changes() {
    let old = fixture();
    let mut new = old.clone();
    new.routers.get_mut("central").unwrap().source.line += 3;
    new.services.get_mut("central").unwrap().source.line += 3;
    new.middlewares.get_mut("auth").unwrap().source.column += 1;
    new.entrypoints.get_mut("web").unwrap().source.file = "static.yml".into();
    new.inputs.files[0].sha256 = "0".repeat(64);
    new.inputs.digest = new.inputs.compute_digest().unwrap();
    seal(&mut new);
    assert_ne!(old, new);
    let d = diff(&old, &new);
    assert!(d.is_empty(), "{}", d.render());
    assert!(d.render().contains("no routing changes"));
}

#[test]
fn a_router_named_source_is_a_change() {
    let old = fixture();
    let mut new = old.clone();
    let r = new.routers["central"].clone();
    new.routers.insert("source".into(), r);
    seal(&mut new);
    let d = diff(&old, &new);
    assert_eq!(
        d.paths(),
        ["entrypoints.web.routers", "routers.source"],
        "{}",
        d.render()
    );
}

fn reviewed_change() -> (Plan, Plan) {
    let old = fixture();
    let mut new = old.clone();
    new.routers.get_mut("central").unwrap().entrypoints = vec!["websecure".into()];
    new.middlewares.insert(
        "retry".into(),
        Middleware {
            source: old.middlewares["auth"].source.clone(),
            kind: MiddlewareKind::Retry(Retry {
                attempts: 3,
                initial_interval_ms: 100,
            }),
        },
    );
    if let ServiceKind::LoadBalancer(lb) = &mut new.services.get_mut("central").unwrap().kind {
        lb.health_check.as_mut().unwrap().interval_ms = 2_000;
    }
    seal(&mut new);
    (old, new)
}

#[test]
fn diff_reports_exactly_the_changes() {
    let (old, new) = reviewed_change();
    let d = diff(&old, &new);
    assert!(!d.is_empty());
    // The three edits, plus the entry points' matching lists the move rewrites (the runtime
    // matches with those lists, so they are part of the change).
    assert_eq!(
        d.paths(),
        [
            "entrypoints.web.routers",
            "entrypoints.websecure.routers",
            "routers.central.entrypoints",
            "services.central.load_balancer.health_check.interval_ms",
            "middlewares.retry",
        ]
    );
    let text = d.render();
    assert!(
        text.contains(r#"routers.central.entrypoints: ["web"] → ["websecure"]"#),
        "{text}"
    );
    assert!(text.contains("services.central.load_balancer.health_check.interval_ms: 5000 → 2000"));
    assert!(text.contains("  + retry  retry\n"), "{text}");
    assert!(text.starts_with(&format!(
        "--- old plan {}\n+++ new plan {}\n",
        old.hash, new.hash
    )));
    assert_eq!(text, diff(&old, &new).render());
    insta::assert_snapshot!("diff_reviewed_change", redact_hashes(&text));
}

#[test]
fn order_only_changes_are_reported() {
    let old = fixture();
    let mut new = old.clone();
    // Same routers on websecure, but `tenants` now outranks `whoami`: matching order changes.
    new.routers.get_mut("whoami").unwrap().priority = 1;
    seal(&mut new);
    let d = diff(&old, &new);
    let Change::Changed(fields) = &d.sections[0].entries[0].change else {
        panic!("{}", d.render())
    };
    assert_eq!(fields[0].path, "entrypoints.websecure.routers");
    assert!(fields[0].order_only);
    assert!(d.render().contains("(order only)"));
    assert_eq!(
        d.paths(),
        ["entrypoints.websecure.routers", "routers.whoami.priority"]
    );
}

#[test]
fn password_changes_show_without_hashes() {
    let old = fixture();
    let mut new = old.clone();
    if let MiddlewareKind::BasicAuth(b) = &mut new.middlewares.get_mut("auth").unwrap().kind {
        b.users[1] = "bob:$2y$05$somethingelseentirely".into();
    }
    new.middlewares.get_mut("strip-api").unwrap().kind = MiddlewareKind::AddPrefix(AddPrefix {
        prefix: "/v2".into(),
    });
    new.api = None;
    seal(&mut new);
    let text = diff(&old, &new).render();
    assert!(!text.contains("$2y$") && !text.contains("$apr1$"), "{text}");
    assert!(
        text.contains("middlewares.auth.basic_auth.users: [\"alice:(hash "),
        "{text}"
    );
    assert!(
        text.contains("middlewares.strip-api.add_prefix: (absent) → {\"prefix\":\"/v2\"}"),
        "{text}"
    );
    assert!(text.contains("  - api  on entry point traefik\n"), "{text}");
}
