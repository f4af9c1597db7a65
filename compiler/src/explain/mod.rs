//! `bridgectl explain` and `bridgectl diff`: a plan for human eyes, and what changed between two
//! plans.
//!
//! Both are pure and deterministic (no colours, no clock, maps in key order, lists in plan order),
//! so their output can be pasted into a review and snapshot-tested. [`explain`] prints aligned
//! plain-text tables no wider than [`MAX_LINE`] characters; [`diff`] compares the plans' JSON
//! structurally, ignoring what moves without changing routing (the hash, the inputs and every
//! entity's `source` position).

use std::collections::BTreeSet;

use bridge_plan::{
    BasicAuth, EntryPoint, Headers, HealthCheck, IpAllowList, LoadBalancer, Middleware,
    MiddlewareKind, Plan, Router, Service, ServiceKind, Timeouts, TlsOptions,
};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::rule::to_rule_string;

/// Longest line [`explain`] prints, in characters; longer cells are cut with `…`.
pub const MAX_LINE: usize = 140;

/// Indentation of table rows under their section title.
const INDENT: usize = 2;
/// Space between two table columns.
const GAP: usize = 2;
/// A truncatable column is never cut below this width.
const MIN_FLEX: usize = 24;
/// Hex digits of a hash shown in the `explain` header.
const SHORT_HASH: usize = 16;

// === explain ===

/// A readable report of a plan, for humans reviewing what will be served: a header line, then
/// entry points, the routers of each entry point in matching order, services, middlewares, TLS,
/// and the API and ping endpoints. Basic-auth password hashes and header values are never printed.
pub fn explain(plan: &Plan) -> String {
    let mut lines = vec![format!(
        "plan {} · profile {} · plan_version {} · inputs {}",
        short_hash(&plan.hash),
        clean(&plan.profile),
        plan.plan_version,
        short_hash(&plan.inputs.digest),
    )];
    entry_points(plan, &mut lines);
    routers(plan, &mut lines);
    services(plan, &mut lines);
    middlewares(plan, &mut lines);
    tls(plan, &mut lines);
    api_and_ping(plan, &mut lines);

    let mut out = String::new();
    for line in lines {
        out.push_str(truncate(&line, MAX_LINE).trim_end());
        out.push('\n');
    }
    out
}

fn entry_points(plan: &Plan, lines: &mut Vec<String>) {
    section(lines, "ENTRY POINTS");
    if plan.entrypoints.is_empty() {
        lines.push(none());
        return;
    }
    let mut table = Table::new(&["NAME", "ADDRESS", "TLS", "REDIRECT", "TIMEOUTS", "SOURCE"]);
    for (name, ep) in &plan.entrypoints {
        table.row(vec![
            name.clone(),
            ep.address.clone(),
            ep.tls
                .as_ref()
                .map_or_else(|| "plain".to_owned(), |t| format!("tls:{}", t.options)),
            ep.redirect.as_ref().map_or_else(dash, |r| {
                format!("→ {} :{} {}", r.scheme, r.port, permanence(r.permanent))
            }),
            timeouts(&ep.timeouts),
            source(&ep.source),
        ]);
        let notes = entry_point_notes(ep);
        if !notes.is_empty() {
            table.span(1, notes.join(", "));
        }
    }
    table.render(lines);
}

/// Read, idle and grace timeouts (`none`: no limit).
fn timeouts(t: &Timeouts) -> String {
    let limit = |ms: u64| {
        if ms == 0 {
            "none".to_owned()
        } else {
            go_duration(ms)
        }
    };
    format!(
        "read {}, idle {}, grace {}",
        limit(t.read_ms),
        limit(t.idle_ms),
        go_duration(t.grace_ms)
    )
}

/// What differs from the usual on an entry point, on a line of its own under it: the other
/// timeouts when set, trusted `X-Forwarded-*` headers, a header size limit other than Go's 1 MiB.
fn entry_point_notes(ep: &EntryPoint) -> Vec<String> {
    let t = &ep.timeouts;
    let mut notes = Vec::new();
    for (label, ms) in [
        ("write timeout", t.write_ms),
        ("header read timeout", t.header_read_ms),
        ("accept grace", t.request_accept_grace_ms),
    ] {
        if ms != 0 {
            notes.push(format!("{label} {}", go_duration(ms)));
        }
    }
    let fh = &ep.forwarded_headers;
    if fh.insecure {
        notes.push("X-Forwarded-* trusted from every peer".to_owned());
    } else if !fh.trusted_ips.is_empty() {
        notes.push(format!(
            "X-Forwarded-* trusted from {}",
            fh.trusted_ips.join(", ")
        ));
    }
    if ep.max_header_bytes != 1 << 20 {
        notes.push(format!("max header {}", bytes(ep.max_header_bytes)));
    }
    notes
}

fn routers(plan: &Plan, lines: &mut Vec<String>) {
    let mut listed = BTreeSet::new();
    for (ep_name, ep) in &plan.entrypoints {
        section(lines, &format!("ROUTERS ON {ep_name} (matching order)"));
        let keys: Vec<&String> = ep.routers.iter().collect();
        listed.extend(keys.iter().map(|k| k.as_str()));
        if keys.is_empty() && ep.redirect.is_some() {
            lines.push(indent("(none: every request is redirected)"));
            continue;
        }
        router_table(plan, &keys, lines);
    }
    // A consistent plan lists every router on some entry point; show strays rather than hide them.
    let strays: Vec<&String> = plan
        .routers
        .keys()
        .filter(|k| !listed.contains(k.as_str()))
        .collect();
    if !strays.is_empty() {
        section(lines, "ROUTERS ON NO ENTRY POINT");
        router_table(plan, &strays, lines);
    }
}

fn router_table(plan: &Plan, keys: &[&String], lines: &mut Vec<String>) {
    if keys.is_empty() {
        lines.push(none());
        return;
    }
    let mut table = Table::new(&[
        "PRIORITY",
        "NAME",
        "RULE",
        "MIDDLEWARES → SERVICE",
        "TLS",
        "SOURCE",
    ])
    .right(0)
    .flex(2);
    for key in keys {
        match plan.routers.get(key.as_str()) {
            Some(r) => table.row(vec![
                r.priority.to_string(),
                (*key).clone(),
                rule_text(r),
                chain(r),
                r.tls
                    .as_ref()
                    .map_or_else(dash, |t| format!("tls:{}", t.options)),
                source(&r.source),
            ]),
            None => table.row(vec![
                "?".into(),
                (*key).clone(),
                "(router missing from the plan)".into(),
            ]),
        }
    }
    table.render(lines);
}

/// The rule as written, on one line; a rule written over several lines has its whitespace
/// collapsed. A v2 rule is marked so.
fn rule_text(r: &Router) -> String {
    let mut rule = if r.rule.trim().is_empty() {
        to_rule_string(&r.matcher)
    } else if r.rule.contains(['\n', '\r', '\t']) {
        r.rule.split_whitespace().collect::<Vec<_>>().join(" ")
    } else {
        r.rule.clone()
    };
    if r.rule_syntax != bridge_plan::RuleSyntax::V3 {
        rule.push_str(&format!(" ({})", r.rule_syntax));
    }
    rule
}

fn chain(r: &Router) -> String {
    if r.middlewares.is_empty() {
        format!("→ {}", r.service)
    } else {
        format!("{} → {}", r.middlewares.join(", "), r.service)
    }
}

fn services(plan: &Plan, lines: &mut Vec<String>) {
    section(lines, "SERVICES");
    if plan.services.is_empty() {
        lines.push(none());
        return;
    }
    let mut table = Table::new(&["NAME", "KIND", "TARGET", "SHARE", "OPTIONS", "SOURCE"]);
    for (name, svc) in &plan.services {
        service_rows(name, svc, &mut table);
    }
    table.render(lines);
}

fn service_rows(name: &str, svc: &Service, table: &mut Table) {
    // (target, share) pairs; the first goes on the service's own row.
    let (kind, targets, options, health): (&str, Vec<(String, String)>, String, Option<String>) =
        match &svc.kind {
            ServiceKind::LoadBalancer(lb) => (
                "load_balancer",
                lb.servers
                    .iter()
                    .map(|s| {
                        let share = if s.weight == 0 {
                            "weight 0 (out of rotation)".to_owned()
                        } else {
                            format!("weight {}", s.weight)
                        };
                        (s.url.clone(), share)
                    })
                    .collect(),
                lb_options(lb),
                lb.health_check.as_ref().map(health_check),
            ),
            ServiceKind::Weighted(w) => (
                "weighted",
                w.services
                    .iter()
                    .map(|c| (format!("→ {}", c.service), format!("weight {}", c.weight)))
                    .collect(),
                propagation(w.health_check),
                None,
            ),
            ServiceKind::Failover(f) => (
                "failover",
                vec![
                    (format!("→ {}", f.service), "primary".to_owned()),
                    (format!("→ {}", f.fallback), "fallback".to_owned()),
                ],
                propagation(f.health_check),
                None,
            ),
            ServiceKind::Mirroring(m) => {
                let mut targets = vec![(format!("→ {}", m.service), "answers".to_owned())];
                targets.extend(
                    m.mirrors
                        .iter()
                        .map(|c| (format!("→ {}", c.service), format!("copy {}%", c.percent))),
                );
                let options = if !m.mirror_body {
                    "bodies not mirrored".to_owned()
                } else if let Some(max) = m.max_body_size {
                    format!("bodies mirrored up to {}", bytes(max))
                } else {
                    "bodies mirrored".to_owned()
                };
                ("mirroring", targets, options, None)
            }
        };
    let mut targets = targets.into_iter();
    let (first_target, first_share) = targets
        .next()
        .unwrap_or_else(|| ("(no servers)".to_owned(), dash()));
    table.row(vec![
        name.to_owned(),
        kind.to_owned(),
        first_target,
        first_share,
        options,
        source(&svc.source),
    ]);
    for (target, share) in targets {
        table.row(vec![String::new(), String::new(), target, share]);
    }
    if let Some(health) = health {
        table.span(2, format!("health check: {health}"));
    }
}

fn lb_options(lb: &LoadBalancer) -> String {
    let mut parts = vec![format!("pass_host_header {}", lb.pass_host_header)];
    if let Some(transport) = &lb.servers_transport {
        parts.push(format!("transport {transport}"));
    }
    parts.join(", ")
}

fn propagation(on: bool) -> String {
    if on {
        "health propagated".to_owned()
    } else {
        dash()
    }
}

/// One sentence, e.g. "GET /health every 5s, timeout 3s, down servers re-probed every 250ms,
/// probed before traffic".
fn health_check(hc: &HealthCheck) -> String {
    let mut parts = vec![format!(
        "{} {} every {}",
        hc.method,
        hc.path,
        go_duration(hc.interval_ms)
    )];
    if hc.unhealthy_interval_ms != hc.interval_ms {
        parts.push(format!(
            "unhealthy every {}",
            go_duration(hc.unhealthy_interval_ms)
        ));
    }
    parts.push(format!("timeout {}", go_duration(hc.timeout_ms)));
    if let Some(scheme) = &hc.scheme {
        parts.push(format!("scheme {scheme}"));
    }
    if let Some(port) = hc.port {
        parts.push(format!("port {port}"));
    }
    if let Some(host) = &hc.hostname {
        parts.push(format!("Host {host}"));
    }
    if !hc.headers.is_empty() {
        let names: Vec<&str> = hc.headers.keys().map(String::as_str).collect();
        parts.push(format!("headers {}", names.join(", ")));
    }
    if let Some(status) = hc.status {
        parts.push(format!("expects {status}"));
    }
    if !hc.follow_redirects {
        parts.push("redirects not followed".to_owned());
    }
    parts.push(format!(
        "down servers re-probed every {}",
        go_duration(hc.down_reprobe_interval_ms)
    ));
    if hc.probe_before_traffic {
        parts.push("probed before traffic".to_owned());
    }
    if hc.hold_ms > 0 {
        parts.push(format!(
            "requests held {} while none is up",
            go_duration(hc.hold_ms)
        ));
    }
    parts.join(", ")
}

fn middlewares(plan: &Plan, lines: &mut Vec<String>) {
    section(lines, "MIDDLEWARES");
    if plan.middlewares.is_empty() {
        lines.push(none());
        return;
    }
    let mut table = Table::new(&["NAME", "KIND", "OPTIONS", "SOURCE"]).flex(2);
    for (name, mw) in &plan.middlewares {
        let (kind, options) = middleware(mw);
        table.row(vec![
            name.clone(),
            kind.to_owned(),
            options,
            source(&mw.source),
        ]);
    }
    table.render(lines);
}

fn middleware(mw: &Middleware) -> (&'static str, String) {
    match &mw.kind {
        MiddlewareKind::StripPrefix(m) => ("strip_prefix", list("prefixes", &m.prefixes)),
        MiddlewareKind::StripPrefixRegex(m) => ("strip_prefix_regex", list("regex", &m.regex)),
        MiddlewareKind::AddPrefix(m) => ("add_prefix", format!("prefix {}", m.prefix)),
        MiddlewareKind::ReplacePath(m) => ("replace_path", format!("path {}", m.path)),
        MiddlewareKind::Headers(h) => ("headers", headers(h)),
        MiddlewareKind::RedirectScheme(m) => {
            let port = m
                .port
                .as_ref()
                .map(|p| format!(" :{p}"))
                .unwrap_or_default();
            (
                "redirect_scheme",
                format!("→ {}{port} {}", m.scheme, permanence(m.permanent)),
            )
        }
        MiddlewareKind::RedirectRegex(m) => (
            "redirect_regex",
            format!(
                "{} → {} {}",
                m.regex,
                m.replacement,
                permanence(m.permanent)
            ),
        ),
        MiddlewareKind::BasicAuth(m) => ("basic_auth", basic_auth(m)),
        MiddlewareKind::Retry(m) => {
            let backoff = if m.initial_interval_ms == 0 {
                "no backoff".to_owned()
            } else {
                format!("backoff from {}", go_duration(m.initial_interval_ms))
            };
            ("retry", format!("{} attempts, {backoff}", m.attempts))
        }
        MiddlewareKind::IpAllowList(m) => ("ip_allow_list", ip_allow_list(m)),
    }
}

fn list(label: &str, items: &[String]) -> String {
    if items.is_empty() {
        format!("no {label}")
    } else {
        format!("{label} {}", items.join(", "))
    }
}

/// Never prints the password hashes: only how many users there are and where the file is.
fn basic_auth(m: &BasicAuth) -> String {
    let mut parts = Vec::new();
    match m.users.len() {
        0 => {}
        1 => parts.push("1 user".to_owned()),
        n => parts.push(format!("{n} users")),
    }
    if let Some(file) = &m.users_file {
        parts.push(format!("users file {file}"));
    }
    if parts.is_empty() {
        parts.push("no users".to_owned());
    }
    parts.push(format!("realm {:?}", m.realm));
    if let Some(field) = &m.header_field {
        parts.push(format!("user name → {field}"));
    }
    if m.remove_header {
        parts.push("Authorization removed".to_owned());
    }
    parts.join(", ")
}

fn ip_allow_list(m: &IpAllowList) -> String {
    let mut parts = vec![
        if m.source_range.is_empty() {
            "allows nobody".to_owned()
        } else {
            format!("allow {}", m.source_range.join(", "))
        },
        format!("else {}", m.reject_status_code),
        if m.depth == 0 {
            "client IP from the peer".to_owned()
        } else {
            format!("client IP from X-Forwarded-For depth {}", m.depth)
        },
    ];
    if !m.excluded_ips.is_empty() {
        parts.push(format!("excluding {}", m.excluded_ips.join(", ")));
    }
    parts.join(", ")
}

/// The header names set or removed and the security options on; values are left out (custom
/// headers may carry credentials).
fn headers(h: &Headers) -> String {
    let mut parts = Vec::new();
    for (label, map) in [
        ("request", &h.custom_request_headers),
        ("response", &h.custom_response_headers),
    ] {
        let set: Vec<&str> = map
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, _)| k.as_str())
            .collect();
        let removed: Vec<&str> = map
            .iter()
            .filter(|(_, v)| v.is_empty())
            .map(|(k, _)| k.as_str())
            .collect();
        if !set.is_empty() {
            parts.push(format!("{label} sets {}", set.join(", ")));
        }
        if !removed.is_empty() {
            parts.push(format!("{label} removes {}", removed.join(", ")));
        }
    }
    if h.sts_seconds > 0 {
        let mut sts = format!("HSTS max-age={}", h.sts_seconds);
        if h.sts_include_subdomains {
            sts.push_str(" includeSubDomains");
        }
        if h.sts_preload {
            sts.push_str(" preload");
        }
        if h.force_sts_header {
            sts.push_str(" (also on http)");
        }
        parts.push(sts);
    }
    if let Some(value) = &h.custom_frame_options_value {
        parts.push(format!("X-Frame-Options {value}"));
    } else if h.frame_deny {
        parts.push("X-Frame-Options DENY".to_owned());
    }
    if h.content_type_nosniff {
        parts.push("nosniff".to_owned());
    }
    if h.browser_xss_filter {
        parts.push("XSS filter".to_owned());
    }
    for (label, value) in [
        ("CSP", &h.content_security_policy),
        ("Referrer-Policy", &h.referrer_policy),
        ("Permissions-Policy", &h.permissions_policy),
    ] {
        if let Some(value) = value {
            parts.push(format!("{label} {value}"));
        }
    }
    let mut cors = Vec::new();
    for (label, items) in [
        ("origins", &h.access_control_allow_origin_list),
        ("methods", &h.access_control_allow_methods),
        ("headers", &h.access_control_allow_headers),
        ("expose", &h.access_control_expose_headers),
    ] {
        if !items.is_empty() {
            cors.push(format!("{label} {}", items.join(" ")));
        }
    }
    if h.access_control_max_age > 0 {
        cors.push(format!("max-age {}s", h.access_control_max_age));
    }
    if h.access_control_allow_credentials {
        cors.push("credentials".to_owned());
    }
    if !cors.is_empty() {
        parts.push(format!("CORS {}", cors.join(", ")));
    }
    if h.add_vary_header {
        parts.push("Vary: Origin".to_owned());
    }
    if parts.is_empty() {
        "(changes nothing)".to_owned()
    } else {
        parts.join("; ")
    }
}

fn tls(plan: &Plan, lines: &mut Vec<String>) {
    section(lines, "TLS");
    let tls = &plan.tls;
    if tls.certificates.is_empty() && tls.default_certificate.is_none() {
        lines.push(indent(
            "no certificates; the default certificate is the runtime's self-signed one",
        ));
    } else {
        let mut table = Table::new(&["CERTIFICATE", "KEY", "USE"]);
        for cert in &tls.certificates {
            table.row(vec![
                cert.cert_file.clone(),
                cert.key_file.clone(),
                "by SNI".into(),
            ]);
        }
        if let Some(cert) = &tls.default_certificate {
            table.row(vec![
                cert.cert_file.clone(),
                cert.key_file.clone(),
                "default".into(),
            ]);
        }
        table.render(lines);
        if tls.default_certificate.is_none() {
            lines.push(indent("default certificate: the runtime's self-signed one"));
        }
    }
    lines.push(String::new());
    if tls.options.is_empty() {
        lines.push(indent("no TLS options"));
        return;
    }
    let mut table = Table::new(&[
        "OPTIONS",
        "VERSIONS",
        "ALPN",
        "CIPHER SUITES",
        "SNI STRICT",
        "CLIENT AUTH",
    ])
    .flex(3);
    for (name, o) in &tls.options {
        table.row(vec![
            name.clone(),
            versions(o),
            if o.alpn_protocols.is_empty() {
                "none".to_owned()
            } else {
                o.alpn_protocols.join(", ")
            },
            if o.cipher_suites.is_empty() {
                "rustls defaults".to_owned()
            } else {
                o.cipher_suites
                    .iter()
                    .map(|c| c.go_name())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            if o.sni_strict { "yes" } else { "no" }.to_owned(),
            o.client_auth.as_ref().map_or_else(
                || "none".to_owned(),
                |c| {
                    if c.ca_files.is_empty() {
                        c.auth_type.to_string()
                    } else {
                        format!("{} (CA {})", c.auth_type, c.ca_files.join(", "))
                    }
                },
            ),
        ]);
    }
    table.render(lines);
}

fn versions(o: &TlsOptions) -> String {
    match &o.max_version {
        None => format!("{}+", o.min_version),
        Some(max) if *max == o.min_version => format!("{max} only"),
        Some(max) => format!("{}–{max}", o.min_version),
    }
}

fn api_and_ping(plan: &Plan, lines: &mut Vec<String>) {
    section(lines, "API / PING");
    let mut table = Table::new(&["", ""]).headless();
    let api = match &plan.api {
        None => "disabled".to_owned(),
        Some(api) => {
            let mut parts = vec![
                format!("on entry point {}", api.entrypoint),
                format!("base path {}", api.base_path),
                if api.dashboard {
                    "dashboard".to_owned()
                } else {
                    "no dashboard".to_owned()
                },
            ];
            if api.insecure {
                parts.push("insecure (served without a router)".to_owned());
            }
            parts.push(if api.middlewares.is_empty() {
                "no middlewares".to_owned()
            } else {
                format!("middlewares {}", api.middlewares.join(", "))
            });
            parts.join(", ")
        }
    };
    table.row(vec!["api".into(), api]);
    table.row(vec![
        "ping".into(),
        plan.ping.as_ref().map_or_else(
            || "disabled".to_owned(),
            |p| format!("GET /ping on entry point {}", p.entrypoint),
        ),
    ]);
    table.render(lines);
}

// --- formatting helpers ---

fn section(lines: &mut Vec<String>, title: &str) {
    lines.push(String::new());
    lines.push(clean(title));
}

fn indent(text: &str) -> String {
    format!("{}{}", " ".repeat(INDENT), clean(text))
}

fn none() -> String {
    indent("(none)")
}

fn dash() -> String {
    "-".to_owned()
}

fn source(p: &bridge_plan::Provenance) -> String {
    format!("{}:{}", p.file, p.line)
}

fn permanence(permanent: bool) -> &'static str {
    if permanent { "permanent" } else { "temporary" }
}

/// `sha256:` and the first hex digits, then `…`.
fn short_hash(hash: &str) -> String {
    let keep = hash.find(':').map_or(0, |i| i + 1) + SHORT_HASH;
    truncate(&clean(hash), keep + 1)
}

/// A byte count, in KiB or MiB when exact.
fn bytes(n: u64) -> String {
    const KIB: u64 = 1024;
    if n >= KIB * KIB && n.is_multiple_of(KIB * KIB) {
        format!("{} MiB", n / (KIB * KIB))
    } else if n >= KIB && n.is_multiple_of(KIB) {
        format!("{} KiB", n / KIB)
    } else {
        format!("{n} B")
    }
}

/// Re-exported for callers of this module; the formatter lives in the plan crate.
pub use bridge_plan::go_duration;

/// Control characters (a rule or value written over several lines) become spaces, so a cell
/// stays on its line.
fn clean(text: &str) -> String {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect()
    } else {
        text.to_owned()
    }
}

/// `text` cut to at most `max` characters, ending in `…` when cut.
fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn width(text: &str) -> usize {
    text.chars().count()
}

/// An aligned plain-text table. One column may be marked flexible: it is cut (with `…`) so that
/// rows fit in [`MAX_LINE`]. A span row writes free text from a column onwards without taking
/// part in the alignment (used for the health-check sentence under a service).
struct Table {
    headers: Vec<&'static str>,
    show_headers: bool,
    right: Vec<usize>,
    flex: Option<usize>,
    rows: Vec<Row>,
}

enum Row {
    Cells(Vec<String>),
    Span { column: usize, text: String },
}

impl Table {
    fn new(headers: &[&'static str]) -> Table {
        Table {
            headers: headers.to_vec(),
            show_headers: true,
            right: Vec::new(),
            flex: None,
            rows: Vec::new(),
        }
    }

    fn right(mut self, column: usize) -> Table {
        self.right.push(column);
        self
    }

    fn flex(mut self, column: usize) -> Table {
        self.flex = Some(column);
        self
    }

    fn headless(mut self) -> Table {
        self.show_headers = false;
        self
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows
            .push(Row::Cells(cells.iter().map(|c| clean(c)).collect()));
    }

    fn span(&mut self, column: usize, text: String) {
        self.rows.push(Row::Span {
            column,
            text: clean(&text),
        });
    }

    fn render(&self, lines: &mut Vec<String>) {
        let columns = self.headers.len();
        let mut widths: Vec<usize> = if self.show_headers {
            self.headers.iter().map(|h| width(h)).collect()
        } else {
            vec![0; columns]
        };
        for row in &self.rows {
            if let Row::Cells(cells) = row {
                for (w, cell) in widths.iter_mut().zip(cells) {
                    *w = (*w).max(width(cell));
                }
            }
        }
        if let Some(flex) = self.flex.filter(|&f| f < columns) {
            let total = INDENT + widths.iter().sum::<usize>() + GAP * columns.saturating_sub(1);
            if total > MAX_LINE {
                let floor = MIN_FLEX.max(width(self.headers[flex]));
                widths[flex] = widths[flex].saturating_sub(total - MAX_LINE).max(floor);
            }
        }
        let line = |cells: &[String]| -> String {
            let mut out = " ".repeat(INDENT);
            for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
                if i > 0 {
                    out.push_str(&" ".repeat(GAP));
                }
                let cell = truncate(cell, *w);
                let pad = " ".repeat(w.saturating_sub(width(&cell)));
                if self.right.contains(&i) {
                    out.push_str(&pad);
                    out.push_str(&cell);
                } else {
                    out.push_str(&cell);
                    out.push_str(&pad);
                }
            }
            out.trim_end().to_owned()
        };
        if self.show_headers {
            let headers: Vec<String> = self.headers.iter().map(|h| (*h).to_owned()).collect();
            lines.push(line(&headers));
        }
        for row in &self.rows {
            match row {
                Row::Cells(cells) => lines.push(line(cells)),
                Row::Span { column, text } => {
                    let column = (*column).min(columns);
                    let offset = INDENT + widths[..column].iter().sum::<usize>() + GAP * column;
                    lines.push(format!("{}{text}", " ".repeat(offset)));
                }
            }
        }
    }
}

// === diff ===

/// What changed between two plans, section by section.
///
/// Built by [`diff`]; `hash`, `inputs` and every entity's `source` are not compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanDiff {
    /// Hash of the old plan, as recorded in it.
    pub old_hash: String,
    /// Hash of the new plan, as recorded in it.
    pub new_hash: String,
    /// Sections with at least one change, in the order `profile`, `plan_version`,
    /// `entrypoints`, `routers`, `services`, `middlewares`, `tls`, `api`, `ping`.
    pub sections: Vec<SectionDiff>,
}

/// The changes in one section of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionDiff {
    /// Top-level key of the plan, e.g. `routers`.
    pub section: String,
    /// Changed entries, sorted by name.
    pub entries: Vec<EntryDiff>,
}

/// One added, removed or changed entry (a router, a service, `tls.options.<name>`, `api`, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntryDiff {
    /// Name within the section, e.g. `central` in `routers`, `options.strict` in `tls`.
    pub name: String,
    /// Full path of the entry, e.g. `routers.central`.
    pub path: String,
    /// What happened to it.
    pub change: Change,
}

/// What happened to an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The entry is new; `summary` describes it in a few words.
    Added {
        /// A few words, e.g. the rule and service of a router.
        summary: String,
    },
    /// The entry is gone.
    Removed {
        /// A few words, e.g. the rule and service of a router.
        summary: String,
    },
    /// The entry exists in both plans with these fields changed, sorted by path.
    Changed(Vec<FieldChange>),
}

/// One changed value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldChange {
    /// Dotted path, e.g. `services.central.load_balancer.health_check.interval_ms`; list
    /// elements as `[i]`. A service's or middleware's `kind` wrapper is left out of the path.
    pub path: String,
    /// Old value (`None`: absent).
    pub old: Option<Value>,
    /// New value (`None`: absent).
    pub new: Option<Value>,
    /// The value is a list holding the same elements in another order (e.g. an entry point's
    /// router matching order).
    pub order_only: bool,
}

impl PlanDiff {
    /// True when the plans differ at most in their hashes, inputs and source positions.
    pub fn is_empty(&self) -> bool {
        self.sections.iter().all(|s| s.entries.is_empty())
    }

    /// Every reported path: an added or removed entry's path, or each changed field's path.
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        for entry in self.sections.iter().flat_map(|s| &s.entries) {
            match &entry.change {
                Change::Added { .. } | Change::Removed { .. } => out.push(entry.path.clone()),
                Change::Changed(fields) => out.extend(fields.iter().map(|f| f.path.clone())),
            }
        }
        out
    }

    /// A review-friendly text: the two hashes, then per section `+` added, `-` removed and `~`
    /// changed entries with each changed field as `path: old → new` (compact JSON values).
    pub fn render(&self) -> String {
        let mut out = format!(
            "--- old plan {}\n+++ new plan {}\n",
            clean(&self.old_hash),
            clean(&self.new_hash)
        );
        if self.is_empty() {
            out.push_str(
                "no routing changes (hashes, inputs and source positions are not compared)\n",
            );
            return out;
        }
        let (mut added, mut removed, mut changed) = (0, 0, 0);
        for section in &self.sections {
            if section.entries.is_empty() {
                continue;
            }
            out.push('\n');
            out.push_str(&clean(&section.section));
            out.push('\n');
            for entry in &section.entries {
                let name = clean(&entry.name);
                match &entry.change {
                    Change::Added { summary } => {
                        added += 1;
                        out.push_str(&titled("+", &name, summary));
                    }
                    Change::Removed { summary } => {
                        removed += 1;
                        out.push_str(&titled("-", &name, summary));
                    }
                    Change::Changed(fields) => {
                        changed += 1;
                        match fields.as_slice() {
                            [field] if field.path == entry.path => {
                                out.push_str(&format!("  ~ {}\n", field_line(field)));
                            }
                            _ => {
                                out.push_str(&format!("  ~ {name}\n"));
                                for field in fields {
                                    out.push_str(&format!("      {}\n", field_line(field)));
                                }
                            }
                        }
                    }
                }
            }
        }
        let total = added + removed + changed;
        out.push_str(&format!(
            "\n{total} {}: {added} added, {removed} removed, {changed} changed\n",
            if total == 1 { "entry" } else { "entries" }
        ));
        out
    }
}

fn titled(mark: &str, name: &str, summary: &str) -> String {
    let summary = clean(summary);
    if summary.is_empty() {
        format!("  {mark} {name}\n")
    } else {
        format!("  {mark} {name}  {summary}\n")
    }
}

fn field_line(field: &FieldChange) -> String {
    let mut line = format!(
        "{}: {} → {}",
        field.path,
        compact(field.old.as_ref()),
        compact(field.new.as_ref())
    );
    if field.order_only {
        line.push_str("  (order only)");
    }
    line
}

/// Compact canonical JSON (keys sorted), or `(absent)`.
fn compact(value: Option<&Value>) -> String {
    match value {
        None => "(absent)".to_owned(),
        Some(v) => bridge_plan::canonical_json(v).unwrap_or_else(|_| v.to_string()),
    }
}

/// Sections in report order; any other top-level key (a field added to the plan later) follows,
/// sorted, so nothing goes unreported.
const SECTIONS: [&str; 9] = [
    "profile",
    "plan_version",
    "entrypoints",
    "routers",
    "services",
    "middlewares",
    "tls",
    "api",
    "ping",
];
/// Top-level keys that never count as a change.
const IGNORED: [&str; 2] = ["hash", "inputs"];
/// Sections that are maps of named entries carrying a `source`.
const NAMED: [&str; 4] = ["entrypoints", "routers", "services", "middlewares"];

/// What changed from `old` to `new`, ignoring `hash`, `inputs` and every entity's `source`
/// (provenance moves whenever a file is edited; that does not change routing).
pub fn diff(old: &Plan, new: &Plan) -> PlanDiff {
    let a = normalized(old);
    let b = normalized(new);
    let mut keys: Vec<String> = SECTIONS.iter().map(|s| (*s).to_owned()).collect();
    let extra: BTreeSet<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| !SECTIONS.contains(&k.as_str()) && !IGNORED.contains(&k.as_str()))
        .collect();
    keys.extend(extra.into_iter().cloned());

    let mut sections = Vec::new();
    for key in keys {
        let (va, vb) = (a.get(&key), b.get(&key));
        if va == vb {
            continue;
        }
        let entries = if NAMED.contains(&key.as_str()) {
            map_entries(&key, &[Seg::Key(key.clone())], va, vb)
        } else if key == "tls" {
            tls_entries(va, vb)
        } else {
            vec![whole_entry(&key, va, vb)]
        };
        if !entries.is_empty() {
            sections.push(SectionDiff {
                section: key,
                entries,
            });
        }
    }
    PlanDiff {
        old_hash: old.hash.clone(),
        new_hash: new.hash.clone(),
        sections,
    }
}

/// The plan as JSON with what is not compared taken out: `source` directly under each entry of
/// the named sections (and only there: a router may be *named* `source`); the `kind` wrapper of
/// services and middlewares lifted into the entry, so paths read `services.x.load_balancer…`;
/// basic-auth password hashes replaced by a short fingerprint.
fn normalized(plan: &Plan) -> Map<String, Value> {
    let Ok(Value::Object(mut top)) = serde_json::to_value(plan) else {
        // Unreachable: a plan always serializes to an object (string keys, integers only).
        return Map::new();
    };
    for section in NAMED {
        let Some(Value::Object(entries)) = top.get_mut(section) else {
            continue;
        };
        for entry in entries.values_mut() {
            let Value::Object(fields) = entry else {
                continue;
            };
            fields.remove("source");
            if let Some(Value::Object(kind)) = fields.remove("kind") {
                for (variant, body) in kind {
                    fields.insert(variant, body);
                }
            }
            if let Some(Value::Array(users)) = fields
                .get_mut("basic_auth")
                .and_then(|b| b.get_mut("users"))
            {
                for user in users.iter_mut() {
                    if let Value::String(text) = user {
                        *text = redact_user(text);
                    }
                }
            }
        }
    }
    top
}

/// `user:hash` → `user:(hash 1a2b3c4d)`: a fingerprint shows that a password changed without
/// printing the hash.
fn redact_user(entry: &str) -> String {
    let (user, hash) = entry.split_once(':').unwrap_or((entry, ""));
    let digest = Sha256::digest(hash.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("{user}:(hash {hex})")
}

/// Entries of a map (`routers`, `tls.options`, …) under `prefix`, named by key.
fn map_entries(
    name_prefix: &str,
    prefix: &[Seg],
    a: Option<&Value>,
    b: Option<&Value>,
) -> Vec<EntryDiff> {
    let empty = Map::new();
    let ma = a.and_then(Value::as_object).unwrap_or(&empty);
    let mb = b.and_then(Value::as_object).unwrap_or(&empty);
    let names: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let mut entries = Vec::new();
    for name in names {
        let mut path = prefix.to_vec();
        path.push(Seg::Key(name.clone()));
        let display = if NAMED.contains(&name_prefix) {
            name.clone()
        } else {
            format!("{name_prefix}.{name}")
        };
        let summary_of = |v: &Value| summary(prefix, v);
        let change = match (ma.get(name), mb.get(name)) {
            (None, Some(v)) => Change::Added {
                summary: summary_of(v),
            },
            (Some(v), None) => Change::Removed {
                summary: summary_of(v),
            },
            (Some(x), Some(y)) if x != y => Change::Changed(fields(&path, Some(x), Some(y))),
            _ => continue,
        };
        entries.push(EntryDiff {
            name: display,
            path: render_path(&path),
            change,
        });
    }
    entries
}

/// `tls`: each option set is an entry (`options.<name>`); every other member (`certificates`,
/// `default_certificate`) is an entry of its own.
fn tls_entries(a: Option<&Value>, b: Option<&Value>) -> Vec<EntryDiff> {
    let empty = Map::new();
    let ma = a.and_then(Value::as_object).unwrap_or(&empty);
    let mb = b.and_then(Value::as_object).unwrap_or(&empty);
    let keys: BTreeSet<&String> = ma.keys().chain(mb.keys()).collect();
    let mut entries = Vec::new();
    for key in keys {
        let (x, y) = (ma.get(key), mb.get(key));
        if x == y {
            continue;
        }
        let path = [Seg::Key("tls".into()), Seg::Key(key.clone())];
        if key == "options" {
            entries.extend(map_entries("options", &path, x, y));
        } else {
            entries.push(EntryDiff {
                name: key.clone(),
                path: render_path(&path),
                change: Change::Changed(fields(&path, x, y)),
            });
        }
    }
    entries
}

/// A section compared as one entry: `profile`, `plan_version`, `api`, `ping`. An optional
/// section switched on or off is added or removed.
fn whole_entry(key: &str, a: Option<&Value>, b: Option<&Value>) -> EntryDiff {
    let path = [Seg::Key(key.to_owned())];
    let present = |v: Option<&Value>| v.is_some_and(|v| !v.is_null());
    let change = match (present(a), present(b), a, b) {
        (false, true, _, Some(v)) if v.is_object() => Change::Added {
            summary: summary(&path, v),
        },
        (true, false, Some(v), _) if v.is_object() => Change::Removed {
            summary: summary(&path, v),
        },
        _ => Change::Changed(fields(&path, a, b)),
    };
    EntryDiff {
        name: key.to_owned(),
        path: render_path(&path),
        change,
    }
}

/// A few words about an added or removed entry.
fn summary(prefix: &[Seg], v: &Value) -> String {
    let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or_default();
    let section: Vec<&str> = prefix
        .iter()
        .filter_map(|s| match s {
            Seg::Key(k) => Some(k.as_str()),
            Seg::Index(_) => None,
        })
        .collect();
    match section.as_slice() {
        ["entrypoints"] => {
            let tls = v
                .get("tls")
                .and_then(|t| t.get("options"))
                .and_then(Value::as_str)
                .map_or_else(|| "plain".to_owned(), |o| format!("tls:{o}"));
            format!("{} {tls}", text("address"))
        }
        ["routers"] => {
            let eps: Vec<&str> = v
                .get("entrypoints")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            format!(
                "{} → {} on {}",
                truncate(&clean(text("rule")), 80),
                text("service"),
                eps.join(", ")
            )
        }
        ["services"] | ["middlewares"] => v
            .as_object()
            .map(|o| o.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default(),
        ["tls", "options"] => format!("min {}", text("min_version")),
        ["api"] | ["ping"] => format!("on entry point {}", text("entrypoint")),
        _ => String::new(),
    }
}

/// A path segment: an object key or a list index. Sorting by segments orders indexes
/// numerically (`[2]` before `[10]`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

fn render_path(path: &[Seg]) -> String {
    let mut out = String::new();
    for (i, seg) in path.iter().enumerate() {
        match seg {
            Seg::Index(n) => out.push_str(&format!("[{n}]")),
            Seg::Key(k) => {
                if i > 0 {
                    out.push('.');
                }
                let plain = !k.is_empty()
                    && !k.chars().any(|c| {
                        matches!(c, '.' | '[' | ']' | '"') || c.is_whitespace() || c.is_control()
                    });
                if plain {
                    out.push_str(k);
                } else {
                    out.push_str(&Value::String(k.clone()).to_string());
                }
            }
        }
    }
    out
}

/// The changed fields below `path`, sorted by path.
fn fields(path: &[Seg], a: Option<&Value>, b: Option<&Value>) -> Vec<FieldChange> {
    let mut found = Vec::new();
    let mut at = path.to_vec();
    walk(&mut at, a, b, &mut found);
    found.sort_by(|x, y| x.0.cmp(&y.0));
    found
        .into_iter()
        .map(|(segs, old, new, order_only)| FieldChange {
            path: render_path(&segs),
            old,
            new,
            order_only,
        })
        .collect()
}

type Found = (Vec<Seg>, Option<Value>, Option<Value>, bool);

/// Objects are compared member by member; lists holding objects or lists element by element when
/// their lengths match; anything else (scalars, lists of scalars, lists whose length changed) as
/// a whole.
fn walk(path: &mut Vec<Seg>, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<Found>) {
    if a == b {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                path.push(Seg::Key(key.clone()));
                walk(path, x.get(key), y.get(key), out);
                path.pop();
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y)))
            if x.len() == y.len() && x.iter().chain(y).any(is_container) =>
        {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                path.push(Seg::Index(i));
                walk(path, Some(p), Some(q), out);
                path.pop();
            }
        }
        _ => {
            let order_only = match (a, b) {
                (Some(Value::Array(x)), Some(Value::Array(y))) => same_elements(x, y),
                _ => false,
            };
            out.push((path.clone(), a.cloned(), b.cloned(), order_only));
        }
    }
}

fn is_container(v: &Value) -> bool {
    v.is_object() || v.is_array()
}

fn same_elements(x: &[Value], y: &[Value]) -> bool {
    let sorted = |v: &[Value]| {
        let mut items: Vec<String> = v.iter().map(|e| compact(Some(e))).collect();
        items.sort();
        items
    };
    x.len() == y.len() && sorted(x) == sorted(y)
}

#[cfg(test)]
mod tests {
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
        r.service = service.into();
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
        });
        legacy.source.line = 12;
        let mut traefik = web.clone();
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
                source: svc_at(60),
                kind: ServiceKind::Weighted(Weighted {
                    services: vec![
                        WeightedRef {
                            service: "whoami".into(),
                            weight: 3,
                        },
                        WeightedRef {
                            service: "central".into(),
                            weight: 1,
                        },
                    ],
                    health_check: true,
                }),
            },
        );
        plan.services.insert(
            "ha".into(),
            Service {
                source: svc_at(70),
                kind: ServiceKind::Failover(Failover {
                    service: "central".into(),
                    fallback: "whoami".into(),
                    health_check: false,
                }),
            },
        );
        plan.services.insert(
            "shadow".into(),
            Service {
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
                }),
            },
        );

        plan.tls.certificates = vec![Certificate {
            cert_file: "certs/example.com.crt".into(),
            key_file: "certs/example.com.key".into(),
        }];
        plan.tls.default_certificate = Some(Certificate {
            cert_file: "certs/default.crt".into(),
            key_file: "certs/default.key".into(),
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
                    ca_files: vec!["certs/clients-ca.pem".into()],
                    auth_type: bridge_plan::ClientAuthType::RequireAndVerifyClientCert,
                }),
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
        assert!(text.contains(" · profile prod · plan_version 3 · inputs sha256:"));
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
        assert_eq!(text, explain(&plan.clone()));
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
        assert!(
            text.contains("services.central.load_balancer.health_check.interval_ms: 5000 → 2000")
        );
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
}
