//! `bridgectl explain` and `bridgectl diff`: a plan for human eyes, and what changed between two
//! plans.
//!
//! Both are pure and deterministic (no colours, no clock, maps in key order, lists in plan order),
//! so their output can be pasted into a review and snapshot-tested. [`explain`] prints aligned
//! plain-text tables no wider than [`MAX_LINE`] characters; [`diff()`] compares the plans' JSON
//! structurally, ignoring what moves without changing routing (the hash, the inputs and every
//! entity's `source` position).
//!
//! This file is the `explain` report, section by section; `table` is the text-table engine it
//! prints with, `diff` the plan comparison, `tests` both (insta snapshots in `snapshots/`).

use std::collections::BTreeSet;

use bridge_plan::{
    BasicAuth, EntryPoint, Headers, HealthCheck, IpAllowList, LoadBalancer, Middleware,
    MiddlewareKind, Plan, Router, Service, ServiceKind, Timeouts, TlsOptions,
};

use crate::rule::to_rule_string;

mod diff;
mod table;
#[cfg(test)]
mod tests;

pub use diff::{Change, EntryDiff, FieldChange, PlanDiff, SectionDiff, diff};
use table::{Table, truncate};

/// Longest line [`explain`] prints, in characters; longer cells are cut with `…`.
pub const MAX_LINE: usize = 140;

/// Indentation of table rows under their section title.
const INDENT: usize = 2;
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
    // Child routers (`parentRefs`): matched, after their parent's middlewares, among its other
    // children.
    for (parent, r) in &plan.routers {
        if r.children.is_empty() {
            continue;
        }
        section(
            lines,
            &format!("CHILD ROUTERS OF {parent} (matching order)"),
        );
        let keys: Vec<&String> = r.children.iter().collect();
        listed.extend(keys.iter().map(|k| k.as_str()));
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
    let target = match &r.service {
        Some(s) => s.to_string(),
        None => format!("child routers ({})", r.children.len()),
    };
    if r.middlewares.is_empty() {
        format!("→ {target}")
    } else {
        format!("{} → {target}", r.middlewares.join(", "))
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
                match &w.sticky {
                    Some(c) => format!("{}, sticky cookie {}", propagation(w.health_check), c.name),
                    None => propagation(w.health_check),
                },
                None,
            ),
            ServiceKind::HighestRandomWeight(h) => (
                "highest_random_weight",
                h.services
                    .iter()
                    .map(|c| (format!("→ {}", c.service), format!("weight {}", c.weight)))
                    .collect(),
                propagation(h.health_check),
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
    if let Some(c) = &lb.sticky {
        parts.push(format!("sticky cookie {}", c.name));
    }
    match lb.strategy {
        bridge_plan::Strategy::Wrr => {}
        bridge_plan::Strategy::Hrw => parts.push("hrw by client address".to_owned()),
        bridge_plan::Strategy::P2c => parts.push("p2c by requests in flight".to_owned()),
        bridge_plan::Strategy::Leasttime => {
            parts.push("leasttime by time to first byte".to_owned())
        }
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

/// A sourceCriterion in a few words.
fn criterion(c: &bridge_plan::SourceCriterion) -> String {
    match c {
        bridge_plan::SourceCriterion::Ip(s) if s.depth > 0 => {
            format!("client (X-Forwarded-For depth {})", s.depth)
        }
        bridge_plan::SourceCriterion::Ip(s) if !s.excluded_ips.is_empty() => {
            format!(
                "client (X-Forwarded-For without {})",
                s.excluded_ips.join(",")
            )
        }
        bridge_plan::SourceCriterion::Ip(_) => "client address".to_owned(),
        bridge_plan::SourceCriterion::RequestHeader(h) => format!("header {h}"),
        bridge_plan::SourceCriterion::RequestHost => "host".to_owned(),
    }
}

fn compress(c: &bridge_plan::Compress) -> String {
    let codings: Vec<&str> = c.encodings.iter().map(|e| e.token()).collect();
    let mut out = format!(
        "{} from {} bytes",
        codings.join(","),
        c.min_response_body_bytes
    );
    if let Some(d) = c.default_encoding {
        out.push_str(&format!(", {} without Accept-Encoding", d.token()));
    }
    match &c.media_types {
        bridge_plan::MediaTypeFilter::Exclude(t) => out.push_str(&format!(", not {}", t.join(","))),
        bridge_plan::MediaTypeFilter::Include(t) => {
            out.push_str(&format!(", only {}", t.join(",")))
        }
    }
    out
}

/// `buffering` in one line: the limits (memory sizes only when not the 1 MiB default) and the
/// retry expression as written.
fn buffering(b: &bridge_plan::Buffering) -> String {
    let side = |name: &str, max: Option<u64>, mem: u64| {
        let mut s = match max {
            Some(m) => format!("{name} up to {m} bytes"),
            None => format!("{name} unlimited"),
        };
        if mem != 1 << 20 {
            s.push_str(&format!(" ({mem} in memory)"));
        }
        s
    };
    let mut out = format!(
        "{}, {}",
        side(
            "requests",
            b.max_request_body_bytes,
            b.mem_request_body_bytes
        ),
        side(
            "answers",
            b.max_response_body_bytes,
            b.mem_response_body_bytes
        )
    );
    if !b.retry_expression.is_empty() {
        out.push_str(&format!(", replayed while {}", b.retry_expression));
    }
    out
}

fn middleware(mw: &Middleware) -> (&'static str, String) {
    match &mw.kind {
        MiddlewareKind::StripPrefix(m) => ("strip_prefix", list("prefixes", &m.prefixes)),
        MiddlewareKind::StripPrefixRegex(m) => ("strip_prefix_regex", list("regex", &m.regex)),
        MiddlewareKind::AddPrefix(m) => ("add_prefix", format!("prefix {}", m.prefix)),
        MiddlewareKind::ReplacePath(m) => ("replace_path", format!("path {}", m.path)),
        MiddlewareKind::ReplacePathRegex(m) => (
            "replace_path_regex",
            format!("{} -> {}", m.regex, m.replacement),
        ),
        MiddlewareKind::Headers(h) => ("headers", headers(h)),
        MiddlewareKind::RateLimit(r) => (
            "rate_limit",
            format!(
                "{}/{}ms burst {} per {}",
                r.average,
                r.period_ms,
                r.burst,
                criterion(&r.source)
            ),
        ),
        MiddlewareKind::InFlightReq(f) => (
            "in_flight_req",
            format!("{} at once per {}", f.amount, criterion(&f.source)),
        ),
        MiddlewareKind::Compress(c) => ("compress", compress(c)),
        MiddlewareKind::ForwardAuth(f) => (
            "forward_auth",
            format!(
                "{} ({:?}){}",
                f.address,
                f.trust_forward_header,
                if f.auth_response_headers.is_empty() {
                    String::new()
                } else {
                    format!(" → {}", f.auth_response_headers.join(","))
                }
            ),
        ),
        MiddlewareKind::Buffering(b) => ("buffering", buffering(b)),
        MiddlewareKind::GrpcWeb(g) => ("grpc_web", list("origins", &g.allow_origins)),
        MiddlewareKind::CircuitBreaker(c) => (
            "circuit_breaker",
            format!(
                "trips on {}: {} for {}ms, recovers over {}ms, checked every {}ms",
                c.condition,
                c.response_code,
                c.fallback_duration_ms,
                c.recovery_duration_ms,
                c.check_period_ms
            ),
        ),
        MiddlewareKind::DigestAuth(d) => (
            "digest_auth",
            format!(
                "realm \"{}\", {} inline user(s){}",
                d.realm,
                d.users.len(),
                d.users_file
                    .as_deref()
                    .map(|f| format!(" and {f}"))
                    .unwrap_or_default()
            ),
        ),
        MiddlewareKind::PassTlsClientCert(p) => (
            "pass_tls_client_cert",
            match (p.pem, p.info.is_some()) {
                (true, true) => "certificates and their info to the server",
                (true, false) => "certificates to the server",
                (false, true) => "certificate info to the server",
                (false, false) => "nothing (neither pem nor info)",
            }
            .to_owned(),
        ),
        MiddlewareKind::EncodedCharacters(e) => (
            "encoded_characters",
            if e.denied.is_empty() {
                "allows every escape".to_owned()
            } else {
                let escapes: Vec<&str> = e.denied.iter().map(|c| c.escape()).collect();
                format!("refuses paths with {}", escapes.join(" "))
            },
        ),
        MiddlewareKind::ContentType(c) => (
            "content_type",
            if c.detect {
                "sniff untyped answers"
            } else {
                "off (autoDetect: false)"
            }
            .to_owned(),
        ),
        MiddlewareKind::Errors(e) => {
            let codes: Vec<String> = e.status.iter().map(ToString::to_string).collect();
            (
                "errors",
                format!("{} → {} {}", codes.join(","), e.service, e.query),
            )
        }
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
                cert.cert.to_string(),
                cert.key.to_string(),
                "by SNI".into(),
            ]);
        }
        if let Some(cert) = &tls.default_certificate {
            table.row(vec![
                cert.cert.to_string(),
                cert.key.to_string(),
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
                    if c.cas.is_empty() {
                        c.auth_type.to_string()
                    } else {
                        let cas: Vec<String> = c.cas.iter().map(ToString::to_string).collect();
                        format!("{} (CA {})", c.auth_type, cas.join(", "))
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
