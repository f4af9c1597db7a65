//! Cross-reference and value checks on the typed model (after the schema has passed).
//!
//! This is where Traefik's runtime errors (`the service "x@file" does not exist`, `recursion
//! detected`, `error while parsing rule`) become located diagnostics before anything runs, plus the
//! checks Traefik never makes (files that must exist, password hash kinds, URLs, addresses).
//! References are global across the dynamic files, as in Traefik's file provider.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;
use std::path::Path;

use crate::canon::escape;
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::loaded::{
    EntityRef, Found, Loaded, Section, Symbols, display_name, resolve_config_path,
};
use crate::model::dynamic::{Middleware, Router, Service};
use crate::rule::{RuleSyntax, parse_rule};
use crate::source::{SourceMap, Span};

/// Parses an access-log status filter: `404` or an inclusive range `400-499`, within 100-599.
pub fn parse_status_range(text: &str) -> Option<(u16, u16)> {
    let (a, b) = text.split_once('-').unwrap_or((text, text));
    let (a, b): (u16, u16) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
    ((100..=599).contains(&a) && (100..=599).contains(&b) && a <= b).then_some((a, b))
}

/// Names Traefik provides itself under `@internal`.
pub const INTERNAL_SERVICES: &[&str] = &["api", "dashboard", "ping", "prometheus", "noop", "rest"];
/// Internal middlewares Traefik defines.
pub const INTERNAL_MIDDLEWARES: &[&str] = &["dashboard_redirect", "dashboard_stripprefix"];

struct Ctx<'a> {
    loaded: &'a Loaded,
    /// The names defined in `loaded`.
    symbols: &'a Symbols,
    sources: &'a SourceMap,
    diags: &'a mut Vec<Diagnostic>,
}

/// Runs every semantic check; `symbols` is the index of `loaded` ([`Symbols::build`]).
pub fn check(loaded: &Loaded, symbols: &Symbols, sources: &SourceMap, diags: &mut Vec<Diagnostic>) {
    let mut ctx = Ctx {
        loaded,
        symbols,
        sources,
        diags,
    };
    ctx.duplicates();
    ctx.check_static();
    ctx.check_routers();
    ctx.check_services();
    ctx.check_middlewares();
    ctx.check_tls();
    ctx.check_transports();
    ctx.check_bridge();
}

impl<'a> Ctx<'a> {
    fn span(&self, file: usize, pointer: &str) -> Option<Span> {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| f.canon.value_span(pointer))
    }

    fn key_span(&self, file: usize, pointer: &str) -> Option<Span> {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| f.canon.key_span(pointer))
    }

    fn static_span(&self, pointer: &str) -> Option<Span> {
        self.loaded.static_canon.value_span(pointer)
    }

    fn err(
        &mut self,
        code: Code,
        msg: String,
        span: Option<Span>,
        pointer: String,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::error(code, msg).at(span).pointer(pointer));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn warn(
        &mut self,
        code: Code,
        msg: String,
        span: Option<Span>,
        pointer: String,
    ) -> &mut Diagnostic {
        self.diags
            .push(Diagnostic::warning(code, msg).at(span).pointer(pointer));
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    fn file_name(&self, file: usize) -> String {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| self.sources.get(f.file))
            .map(|f| f.name.clone())
            .unwrap_or_default()
    }

    fn position(&self, span: Option<Span>) -> String {
        span.and_then(|s| self.sources.get(s.file).map(|f| (f, s)))
            .map(|(f, s)| {
                let (l, c) = f.line_col(s.start);
                format!("{}:{l}:{c}", f.name)
            })
            .unwrap_or_default()
    }

    /// A name defined twice is an error (Traefik keeps the first definition).
    fn duplicates(&mut self) {
        let symbols = self.symbols;
        for d in &symbols.duplicates {
            let first_at = self.position(self.key_span(d.first.file, &d.first.pointer));
            let span = self.key_span(d.at.file, &d.at.pointer);
            self.err(
                Code::DuplicateName,
                format!(
                    "{} `{}` is already defined in {}",
                    d.section.noun(),
                    d.name,
                    self.file_name(d.first.file)
                ),
                span,
                d.at.pointer.clone(),
            )
            .hint = Some(format!(
                "Traefik keeps the first definition ({first_at}) and drops this one; rename or remove one of them"
            ));
        }
    }

    fn entry_points(&self) -> BTreeSet<String> {
        let mut eps: BTreeSet<String> = self
            .loaded
            .static_cfg
            .entry_points
            .iter()
            .flatten()
            .map(|(n, _)| n.clone())
            .collect();
        // Traefik creates `traefik` on :8080 for the API, ping and metrics when they ask for it.
        let api_insecure =
            self.loaded.static_cfg.api.as_ref().and_then(|a| a.insecure) == Some(true);
        if api_insecure
            || self.loaded.static_cfg.ping.is_some()
            || self.loaded.static_cfg.metrics.is_some()
        {
            eps.insert("traefik".into());
        }
        if self.loaded.static_cfg.entry_points.is_none() && self.loaded.static_file.is_some() {
            eps.insert("http".into());
        }
        eps
    }

    // ---- static ---------------------------------------------------------------------------------

    fn check_static(&mut self) {
        let cfg = &self.loaded.static_cfg;
        let eps = self.entry_points();
        let mut ports: BTreeMap<(u16, String), String> = BTreeMap::new();
        for (name, ep) in cfg.entry_points.iter().flatten() {
            let base = format!("/entryPoints/{}", escape(name));
            match &ep.address {
                None => {
                    let span = self.loaded.static_canon.key_span(&base);
                    self.err(
                        Code::MissingKey,
                        format!("entry point `{name}` has no address"),
                        span,
                        format!("{base}/address"),
                    )
                    .hint = Some("for example `address: \":80\"`".into());
                }
                Some(addr) => {
                    match parse_address(addr) {
                        Ok((port, proto)) => {
                            if proto == "udp" {
                                let span = self.static_span(&format!("{base}/address"));
                                self.err(Code::Unsupported, format!("UDP entry point `{name}` is valid Traefik, but not supported by bridgectl"), span, format!("{base}/address"));
                            }
                            if let Some(other) =
                                ports.insert((port, proto.to_owned()), name.clone())
                            {
                                let span = self.static_span(&format!("{base}/address"));
                                self.err(Code::InvalidAddress, format!("entry points `{other}` and `{name}` both listen on port {port}"), span, format!("{base}/address"));
                            }
                        }
                        Err(why) => {
                            let span = self.static_span(&format!("{base}/address"));
                            self.err(
                                Code::InvalidAddress,
                                format!("entry point `{name}`: invalid address `{addr}`: {why}"),
                                span,
                                format!("{base}/address"),
                            )
                            .hint = Some(
                                "use `:PORT`, `HOST:PORT` or `[IPv6]:PORT`, optionally with /tcp"
                                    .into(),
                            );
                        }
                    }
                }
            }
            if let Some(http) = &ep.http {
                if let Some(to) = http
                    .redirections
                    .as_ref()
                    .and_then(|r| r.entry_point.as_ref())
                {
                    let p = format!("{base}/http/redirections/entryPoint");
                    match &to.to {
                        None => {
                            let span = self.loaded.static_canon.key_span(&p);
                            self.err(
                                Code::MissingKey,
                                format!("entry point `{name}`: redirection needs `to`"),
                                span,
                                format!("{p}/to"),
                            );
                        }
                        Some(t) if t.starts_with(':') => {
                            if t[1..].parse::<u16>().map_or(true, |p| p == 0) {
                                let span = self.static_span(&format!("{p}/to"));
                                self.err(
                                    Code::InvalidAddress,
                                    format!("redirection target `{t}` is not a valid port"),
                                    span,
                                    format!("{p}/to"),
                                );
                            }
                        }
                        Some(t) if !eps.contains(t) => {
                            let span = self.static_span(&format!("{p}/to"));
                            let hint = did_you_mean(t, eps.iter().map(String::as_str))
                                .map(|s| format!("did you mean `{s}`?"));
                            self.err(
                                Code::UndefinedReference,
                                format!("redirection target entry point `{t}` is not defined"),
                                span,
                                format!("{p}/to"),
                            )
                            .hint = hint;
                        }
                        Some(_) => {}
                    }
                    if let Some(s) = &to.scheme
                        && !matches!(s.as_str(), "http" | "https")
                    {
                        let span = self.static_span(&format!("{p}/scheme"));
                        self.err(
                            Code::InvalidValue,
                            format!("redirection scheme `{s}` must be http or https"),
                            span,
                            format!("{p}/scheme"),
                        );
                    }
                }
                if let Some(opts) = http.tls.as_ref().and_then(|t| t.options.clone()) {
                    self.tls_option_ref(&opts, None, &format!("{base}/http/tls/options"));
                }
                for (i, m) in http.middlewares.iter().flatten().enumerate() {
                    self.entity_ref(
                        Section::Middlewares,
                        m,
                        None,
                        &format!("{base}/http/middlewares/{i}"),
                    );
                }
            }
            if let Some(fh) = &ep.forwarded_headers {
                for (i, ip) in fh.trusted_ips.iter().flatten().enumerate() {
                    let p = format!("{base}/forwardedHeaders/trustedIPs/{i}");
                    if parse_ip_or_cidr(ip).is_err() {
                        let span = self.static_span(&p);
                        self.err(
                            Code::InvalidIp,
                            format!("`{ip}` is not an IP address or CIDR range"),
                            span,
                            p,
                        );
                    }
                }
            }
        }
        if let Some(bp) = cfg.api.as_ref().and_then(|a| a.base_path.as_ref()) {
            {
                let ok = bp.starts_with('/')
                    && bp
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "/_.:~-".contains(c));
                if !ok {
                    let span = self.static_span("/api/basePath");
                    self.err(
                        Code::InvalidValue,
                        format!("api.basePath `{bp}` must match ^/[a-zA-Z0-9/_.:~-]*$"),
                        span,
                        "/api/basePath".into(),
                    );
                }
            }
        }
        if let Some(syntax) = cfg
            .core
            .as_ref()
            .and_then(|c| c.default_rule_syntax.as_deref())
            && !matches!(syntax, "v2" | "v3")
        {
            let span = self.static_span("/core/defaultRuleSyntax");
            self.err(
                Code::InvalidValue,
                format!("core.defaultRuleSyntax `{syntax}` must be v2 or v3"),
                span,
                "/core/defaultRuleSyntax".into(),
            );
        }
        if let Some(level) = cfg.log.as_ref().and_then(|l| l.level.as_deref())
            && !["trace", "debug", "info", "warn", "error", "fatal", "panic"]
                .contains(&level.to_ascii_lowercase().as_str())
        {
            let span = self.static_span("/log/level");
            self.err(Code::InvalidValue, format!("log.level `{level}` is not one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, PANIC"), span, "/log/level".into());
        }
        self.check_observability();
        for (what, ep, p) in [
            (
                "ping",
                cfg.ping.as_ref().and_then(|x| x.entry_point.clone()),
                "/ping/entryPoint",
            ),
            (
                "metrics.prometheus",
                cfg.metrics
                    .as_ref()
                    .and_then(|m| m.prometheus.as_ref())
                    .and_then(|x| x.entry_point.clone()),
                "/metrics/prometheus/entryPoint",
            ),
        ] {
            if let Some(ep) = ep
                && !eps.contains(&ep)
            {
                let span = self.static_span(p);
                self.err(
                    Code::UndefinedReference,
                    format!("{what} uses entry point `{ep}`, which is not defined"),
                    span,
                    p.into(),
                );
            }
        }
    }

    // ---- routers --------------------------------------------------------------------------------

    /// `log`, `accessLog` and `metrics.prometheus` values the runtime must understand.
    fn check_observability(&mut self) {
        let cfg = &self.loaded.static_cfg;
        let mut found: Vec<(Code, String, &'static str)> = Vec::new();
        if let Some(f) = cfg.log.as_ref().and_then(|l| l.format.as_deref())
            && !matches!(f, "common" | "json")
        {
            found.push((
                Code::InvalidValue,
                format!("log.format `{f}` must be common or json"),
                "/log/format",
            ));
        }
        if let Some(al) = &cfg.access_log {
            if let Some(f) = al.format.as_deref()
                && !matches!(f, "common" | "json" | "genericCLF")
            {
                found.push((
                    Code::InvalidValue,
                    format!("accessLog.format `{f}` must be common, genericCLF or json"),
                    "/accessLog/format",
                ));
            }
            if let Some(fields) = &al.fields {
                let modes = fields
                    .default_mode
                    .iter()
                    .map(|m| (m, "/accessLog/fields/defaultMode"))
                    .chain(
                        fields
                            .names
                            .iter()
                            .flatten()
                            .map(|(_, m)| (m, "/accessLog/fields/names")),
                    );
                for (m, pointer) in modes {
                    if !matches!(m.as_str(), "keep" | "drop") {
                        found.push((
                            Code::InvalidValue,
                            format!("accessLog.fields: mode `{m}` must be keep or drop"),
                            pointer,
                        ));
                    }
                }
                if let Some(h) = &fields.headers {
                    let modes = h
                        .default_mode
                        .iter()
                        .map(|m| (m, "/accessLog/fields/headers/defaultMode"))
                        .chain(
                            h.names
                                .iter()
                                .flatten()
                                .map(|(_, m)| (m, "/accessLog/fields/headers/names")),
                        );
                    for (m, pointer) in modes {
                        if !matches!(m.as_str(), "keep" | "drop" | "redact") {
                            found.push((
                                Code::InvalidValue,
                                format!(
                                    "accessLog.fields.headers: mode `{m}` must be keep, drop or redact"
                                ),
                                pointer,
                            ));
                        }
                    }
                }
            }
            for code in al
                .filters
                .as_ref()
                .and_then(|f| f.status_codes.as_ref())
                .into_iter()
                .flatten()
            {
                if parse_status_range(code).is_none() {
                    found.push((
                        Code::InvalidValue,
                        format!("accessLog.filters.statusCodes: `{code}` is not a status code or a range such as 400-499"),
                        "/accessLog/filters/statusCodes",
                    ));
                }
            }
        }
        if let Some(p) = cfg.metrics.as_ref().and_then(|m| m.prometheus.as_ref()) {
            if let Some(b) = &p.buckets
                && (b.iter().any(|x| !x.is_finite() || *x <= 0.0)
                    || b.windows(2).any(|w| w[0] >= w[1]))
            {
                found.push((
                    Code::InvalidValue,
                    "metrics.prometheus.buckets must be positive numbers of seconds in ascending order".into(),
                    "/metrics/prometheus/buckets",
                ));
            }
            if p.header_labels.as_ref().is_some_and(|h| !h.is_empty()) {
                found.push((
                    Code::Unsupported,
                    "metrics.prometheus.headerLabels is valid Traefik, but not supported by bridgectl".into(),
                    "/metrics/prometheus/headerLabels",
                ));
            }
        }
        for (code, msg, pointer) in found {
            let span = self.static_span(pointer);
            self.err(code, msg, span, pointer.into());
        }
        if cfg
            .log
            .as_ref()
            .and_then(|l| l.file_path.as_deref())
            .is_some_and(|p| !p.is_empty())
        {
            let span = self.static_span("/log/filePath");
            self.warn(
                Code::Ignored,
                "log.filePath is ignored: bridge-runtime writes its logs to standard error (the service manager or container runtime collects them)".into(),
                span,
                "/log/filePath".into(),
            );
        }
    }

    fn default_syntax(&self) -> RuleSyntax {
        match self
            .loaded
            .static_cfg
            .core
            .as_ref()
            .and_then(|c| c.default_rule_syntax.as_deref())
        {
            Some("v2") => RuleSyntax::V2,
            _ => RuleSyntax::V3,
        }
    }

    fn check_routers(&mut self) {
        let eps = self.entry_points();
        let have_static = self.loaded.static_file.is_some();
        let routers: Vec<Found<'a, Router>> = self.symbols.iter(self.loaded).collect();
        let default_syntax = self.default_syntax();
        for def in routers {
            let (name, r) = (def.name, def.value);
            let base = def.pointer.to_owned();
            let fi = def.file;
            // Rule.
            let syntax = RuleSyntax::from_router(r.rule_syntax.as_deref(), default_syntax);
            if r.rule.trim().is_empty() {
                let span = self.span(fi, &format!("{base}/rule"));
                self.err(
                    Code::Rule,
                    format!("router `{name}` has an empty rule"),
                    span,
                    format!("{base}/rule"),
                )
                .hint = Some("for example rule: \"PathPrefix(`/`)\"".into());
            } else if let Err(errors) = parse_rule(&r.rule, syntax) {
                let vspan = self.span(fi, &format!("{base}/rule"));
                for e in errors {
                    let span = vspan.map(|s| self.rule_span(s, &r.rule, e.offset, e.len));
                    self.err(
                        Code::Rule,
                        format!("router `{name}`: {}", e.message),
                        span,
                        format!("{base}/rule"),
                    )
                    .hint = e.hint.clone();
                }
            }
            if let Some(p) = r.priority
                && p > i64::from(i32::MAX) - 1000
            {
                let span = self.span(fi, &format!("{base}/priority"));
                self.err(Code::Priority, format!("router `{name}`: priority {p} exceeds the maximum user-defined priority {}", i64::from(i32::MAX) - 1000), span, format!("{base}/priority"))
                    .hint = Some("Traefik disables such a router; higher values are reserved for internal routers".into());
            }
            // Service.
            self.entity_ref(
                Section::Services,
                &r.service,
                Some(fi),
                &format!("{base}/service"),
            );
            for (i, m) in r.middlewares.iter().flatten().enumerate() {
                self.entity_ref(
                    Section::Middlewares,
                    m,
                    Some(fi),
                    &format!("{base}/middlewares/{i}"),
                );
            }
            // Entry points.
            if have_static {
                match &r.entry_points {
                    Some(list) => {
                        for (i, ep) in list.iter().enumerate() {
                            if !eps.contains(ep) {
                                let p = format!("{base}/entryPoints/{i}");
                                let span = self.span(fi, &p);
                                let hint = did_you_mean(ep, eps.iter().map(String::as_str))
                                    .map(|s| format!("did you mean `{s}`?"))
                                    .unwrap_or_else(|| {
                                        format!(
                                            "defined entry points: {}",
                                            eps.iter().cloned().collect::<Vec<_>>().join(", ")
                                        )
                                    });
                                self.err(Code::UndefinedReference, format!("router `{name}`: entry point `{ep}` is not defined in the static configuration"), span, p).hint = Some(hint);
                            }
                        }
                    }
                    None => {
                        let defaults = self.default_entry_points();
                        if defaults.is_empty() {
                            let span = self.key_span(fi, &base);
                            self.warn(Code::NoEntryPoint, format!("router `{name}` lists no entryPoints and no entry point is a default; it is never served"), span, base.clone())
                                .hint = Some("add `entryPoints: [web]`".into());
                        }
                    }
                }
            }
            if let Some(tls) = &r.tls {
                if let Some(opt) = &tls.options {
                    self.tls_option_ref(opt, Some(fi), &format!("{base}/tls/options"));
                }
                if let Some(res) = &tls.cert_resolver {
                    let known = self
                        .loaded
                        .static_cfg
                        .certificates_resolvers
                        .as_ref()
                        .is_some_and(|m| m.contains_key(res));
                    let p = format!("{base}/tls/certResolver");
                    let span = self.span(fi, &p);
                    if known {
                        self.err(Code::Unsupported, format!("router `{name}`: certificate resolvers (ACME) are valid Traefik, but not supported by bridgectl"), span, p);
                    } else {
                        self.err(Code::UndefinedReference, format!("router `{name}`: certificate resolver `{res}` is not defined in the static configuration"), span, p);
                    }
                }
            }
        }
    }

    fn default_entry_points(&self) -> Vec<String> {
        self.loaded.default_entry_points()
    }

    /// Maps a byte range inside a rule string to the source, accounting for the opening quote.
    fn rule_span(&self, value: Span, rule: &str, offset: usize, len: usize) -> Span {
        let text = self
            .sources
            .get(value.file)
            .map(|f| f.text.as_str())
            .unwrap_or("");
        let raw = text.get(value.start..).unwrap_or("");
        let quoted = raw.starts_with('"') || raw.starts_with('\'');
        let start = value.start + usize::from(quoted);
        // Only exact when the written form equals the value (no escapes, single line).
        if raw.get(usize::from(quoted)..usize::from(quoted) + rule.len()) == Some(rule) {
            Span::new(value.file, start + offset, start + offset + len.max(1))
        } else {
            value
        }
    }

    // ---- references -----------------------------------------------------------------------------

    fn ref_span(&self, file: Option<usize>, pointer: &str) -> Option<Span> {
        match file {
            Some(fi) => self.span(fi, pointer),
            None => self.static_span(pointer),
        }
    }

    /// A reference to a service or middleware: `@internal` ones must be Traefik's, file ones
    /// defined (or broken, already reported), other providers are not supported.
    fn entity_ref(&mut self, section: Section, name: &str, file: Option<usize>, pointer: &str) {
        let r = EntityRef::parse(name);
        let noun = section.noun();
        let span = self.ref_span(file, pointer);
        let internal = match section {
            Section::Services => INTERNAL_SERVICES,
            _ => INTERNAL_MIDDLEWARES,
        };
        match r.provider {
            Some("internal") => {
                if !internal.contains(&r.name) {
                    let message = match section {
                        Section::Services => format!(
                            "service `{name}` does not exist; internal services are {}",
                            INTERNAL_SERVICES
                                .iter()
                                .map(|s| format!("{s}@internal"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        _ => format!("{noun} `{name}` does not exist"),
                    };
                    self.err(Code::UndefinedReference, message, span, pointer.into());
                }
            }
            Some("file") | None => {
                let table = self.symbols.table(section);
                if !table.contains_key(r.name) && !self.symbols.is_broken(section, r.name) {
                    let hint = did_you_mean(r.name, table.keys().map(String::as_str))
                        .map(|s| format!("did you mean `{s}`?"));
                    self.err(
                        Code::UndefinedReference,
                        format!("{noun} `{name}` is not defined"),
                        span,
                        pointer.into(),
                    )
                    .hint = hint;
                }
            }
            Some(p) => {
                let only = match section {
                    Section::Services => " (only `file` and `internal`)",
                    _ => "",
                };
                self.err(Code::Unsupported, format!("{noun} `{name}` comes from provider `{p}`, which is valid Traefik, but not supported by bridgectl{only}"), span, pointer.into());
            }
        }
    }

    fn tls_option_ref(&mut self, name: &str, file: Option<usize>, pointer: &str) {
        let n = EntityRef::parse(name).name;
        if n == "default" || self.symbols.tls_options.contains(n) {
            return;
        }
        let span = self.ref_span(file, pointer);
        let hint = did_you_mean(n, self.symbols.tls_options.iter().map(String::as_str))
            .map(|s| format!("did you mean `{s}`?"));
        self.err(
            Code::UndefinedReference,
            format!("TLS options `{name}` are not defined under tls.options"),
            span,
            pointer.into(),
        )
        .hint = hint;
    }

    // ---- services -------------------------------------------------------------------------------

    fn check_services(&mut self) {
        let services: Vec<Found<'a, Service>> = self.symbols.iter(self.loaded).collect();
        let mut graph: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for def in &services {
            let (name, s) = (def.name, def.value);
            let base = def.pointer.to_owned();
            let fi = def.file;
            let kinds = [
                s.load_balancer.is_some(),
                s.weighted.is_some(),
                s.mirroring.is_some(),
                s.failover.is_some(),
                s.highest_random_weight.is_some(),
            ];
            if !kinds.iter().any(|k| *k) {
                let span = self.key_span(fi, &base);
                self.err(
                    Code::KindCount,
                    format!("service `{name}` defines no kind"),
                    span,
                    base.clone(),
                )
                .hint = Some("add one of loadBalancer, weighted, mirroring or failover".into());
            }
            for (i, m) in s.middlewares.iter().flatten().enumerate() {
                self.entity_ref(
                    Section::Middlewares,
                    m,
                    Some(fi),
                    &format!("{base}/middlewares/{i}"),
                );
            }
            let mut children: Vec<(String, String)> = Vec::new();
            if let Some(lb) = &s.load_balancer {
                let lbp = format!("{base}/loadBalancer");
                let servers = lb.servers.as_deref().unwrap_or(&[]);
                if servers.is_empty() {
                    let span = self.key_span(fi, &lbp);
                    self.warn(
                        Code::MissingKey,
                        format!("service `{name}` has no servers; every request gets 503"),
                        span,
                        format!("{lbp}/servers"),
                    );
                }
                for (i, srv) in servers.iter().enumerate() {
                    let p = format!("{lbp}/servers/{i}/url");
                    match &srv.url {
                        None => {
                            let span = self.span(fi, &format!("{lbp}/servers/{i}"));
                            self.err(
                                Code::MissingKey,
                                format!("service `{name}`: server {i} has no url"),
                                span,
                                p,
                            );
                        }
                        Some(u) => {
                            if let Err(why) = check_server_url(u) {
                                let span = self.span(fi, &p);
                                self.err(
                                    Code::InvalidUrl,
                                    format!("service `{name}`: server url `{u}` {why}"),
                                    span,
                                    p,
                                )
                                .hint = Some(
                                    "write an absolute URL such as http://backend:5000".into(),
                                );
                            }
                        }
                    }
                }
                if let Some(strategy) = &lb.strategy {
                    let p = format!("{lbp}/strategy");
                    let span = self.span(fi, &p);
                    match strategy.as_str() {
                        "wrr" => {}
                        "p2c" | "hrw" | "leasttime" => {
                            self.err(Code::Unsupported, format!("service `{name}`: strategy `{strategy}` is valid Traefik, but not supported by bridgectl (only wrr)"), span, p);
                        }
                        _ => {
                            self.err(
                                Code::InvalidValue,
                                format!("service `{name}`: unknown strategy `{strategy}`"),
                                span,
                                p,
                            )
                            .hint = Some("Traefik accepts wrr, p2c, hrw and leasttime".into());
                        }
                    }
                }
                if let Some(hc) = &lb.health_check {
                    self.check_health_check(name, fi, &format!("{lbp}/healthCheck"), hc);
                }
                if let Some(t) = &lb.servers_transport {
                    let r = EntityRef::parse(t);
                    let builtin = r.provider == Some("internal") && r.name == "default";
                    if !builtin && !self.symbols.transports.contains_key(r.name) {
                        let p = format!("{lbp}/serversTransport");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::UndefinedReference,
                            format!("service `{name}`: serversTransport `{t}` is not defined"),
                            span,
                            p,
                        );
                    }
                }
            }
            if let Some(w) = &s.weighted {
                for (i, ws) in w.services.iter().flatten().enumerate() {
                    let p = format!("{base}/weighted/services/{i}/name");
                    if let Some(n) = &ws.name {
                        children.push((n.clone(), p));
                    } else {
                        let span = self.span(fi, &format!("{base}/weighted/services/{i}"));
                        self.err(
                            Code::MissingKey,
                            format!("service `{name}`: weighted entry {i} has no name"),
                            span,
                            p,
                        );
                    }
                }
            }
            if let Some(m) = &s.mirroring {
                match &m.service {
                    Some(n) => children.push((n.clone(), format!("{base}/mirroring/service"))),
                    None => {
                        let span = self.key_span(fi, &format!("{base}/mirroring"));
                        self.err(
                            Code::MissingKey,
                            format!("service `{name}`: mirroring needs `service`"),
                            span,
                            format!("{base}/mirroring/service"),
                        );
                    }
                }
                for (i, ms) in m.mirrors.iter().flatten().enumerate() {
                    if let Some(n) = &ms.name {
                        children.push((n.clone(), format!("{base}/mirroring/mirrors/{i}/name")));
                    }
                    if let Some(pct) = ms.percent
                        && !(0..=100).contains(&pct)
                    {
                        let p = format!("{base}/mirroring/mirrors/{i}/percent");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::InvalidValue,
                            format!(
                                "service `{name}`: mirror percent {pct} must be between 0 and 100"
                            ),
                            span,
                            p,
                        );
                    }
                }
            }
            if let Some(f) = &s.failover {
                for (field, v) in [("service", &f.service), ("fallback", &f.fallback)] {
                    match v {
                        Some(n) => children.push((n.clone(), format!("{base}/failover/{field}"))),
                        None => {
                            let span = self.key_span(fi, &format!("{base}/failover"));
                            self.err(
                                Code::MissingKey,
                                format!("service `{name}`: failover needs `{field}`"),
                                span,
                                format!("{base}/failover/{field}"),
                            );
                        }
                    }
                }
                if let Some(main) = &f.service {
                    let main_checked = self.is_health_checked(main);
                    if main_checked == Some(false) && f.errors.is_none() {
                        let p = format!("{base}/failover/service");
                        let span = self.span(fi, &p);
                        self.warn(Code::InvalidValue, format!("service `{name}`: failover main service `{main}` has no health check, so traffic never moves to the fallback"), span, p)
                            .hint = Some("add a healthCheck to the main service's loadBalancer".into());
                    }
                }
            }
            if let Some(h) = &s.highest_random_weight {
                for (i, ws) in h.services.iter().flatten().enumerate() {
                    if let Some(n) = &ws.name {
                        children.push((
                            n.clone(),
                            format!("{base}/highestRandomWeight/services/{i}/name"),
                        ));
                    }
                }
            }
            for (child, p) in &children {
                self.entity_ref(Section::Services, child, Some(fi), p);
            }
            graph.insert(name.to_owned(), children);
        }
        // Cycles: a service may not reach itself through weighted/mirroring/failover children.
        let mut reported = BTreeSet::new();
        for start in graph.keys() {
            if let Some(cycle) = find_cycle(start, &graph)
                && reported.insert(canonical_cycle(&cycle))
            {
                let (first, p) = (&cycle[0], cycle_pointer(&graph, &cycle));
                let Some(def) = self.symbols.services.get(first) else {
                    continue;
                };
                let span = self.span(def.file, &p);
                self.err(
                    Code::ReferenceCycle,
                    format!(
                        "services refer to each other in a loop: {}",
                        cycle.join(" -> ")
                    ),
                    span,
                    p,
                );
            }
        }
    }

    /// Whether a service (by reference) reports health: a health-checked load balancer, or a parent
    /// with `healthCheck: {}`. `None` when unknown (internal or undefined).
    fn is_health_checked(&self, name: &str) -> Option<bool> {
        let n = EntityRef::parse(name).file_name()?;
        let s = self.symbols.get::<Service>(self.loaded, n)?.value;
        Some(
            s.load_balancer
                .as_ref()
                .is_some_and(|l| l.health_check.is_some())
                || s.weighted
                    .as_ref()
                    .is_some_and(|w| w.health_check.is_some())
                || s.mirroring
                    .as_ref()
                    .is_some_and(|m| m.health_check.is_some())
                || s.failover
                    .as_ref()
                    .is_some_and(|f| f.health_check.is_some()),
        )
    }

    fn check_health_check(
        &mut self,
        name: &str,
        fi: usize,
        p: &str,
        hc: &crate::model::dynamic::ServerHealthCheck,
    ) {
        if let Some(path) = &hc.path
            && (path.contains("://") || !path.starts_with('/'))
        {
            let span = self.span(fi, &format!("{p}/path"));
            self.err(
                Code::InvalidValue,
                format!(
                    "service `{name}`: health check path `{path}` must be a path starting with `/`"
                ),
                span,
                format!("{p}/path"),
            );
        }
        if hc.path.is_none() {
            let span = self.key_span(fi, p);
            self.warn(
                Code::MissingKey,
                format!("service `{name}`: health check without `path` probes `/`"),
                span,
                format!("{p}/path"),
            );
        }
        if let Some(s) = &hc.scheme
            && !matches!(s.as_str(), "http" | "https" | "h2c")
        {
            let span = self.span(fi, &format!("{p}/scheme"));
            self.err(
                Code::InvalidValue,
                format!("service `{name}`: health check scheme `{s}` must be http, https or h2c"),
                span,
                format!("{p}/scheme"),
            );
        }
        if let Some(m) = &hc.mode {
            let span = self.span(fi, &format!("{p}/mode"));
            match m.as_str() {
                "http" => {}
                "grpc" => {
                    self.err(Code::Unsupported, format!("service `{name}`: gRPC health checks are valid Traefik, but not supported by bridgectl"), span, format!("{p}/mode"));
                }
                _ => {
                    self.err(
                        Code::InvalidValue,
                        format!("service `{name}`: health check mode `{m}` must be http or grpc"),
                        span,
                        format!("{p}/mode"),
                    );
                }
            }
        }
        if let Some(st) = hc.status
            && !(100..=599).contains(&st)
        {
            let span = self.span(fi, &format!("{p}/status"));
            self.err(
                Code::InvalidValue,
                format!("service `{name}`: health check status {st} is not an HTTP status"),
                span,
                format!("{p}/status"),
            );
        }
        if let Some(port) = hc.port
            && !(1..=65535).contains(&port)
        {
            let span = self.span(fi, &format!("{p}/port"));
            self.err(
                Code::InvalidAddress,
                format!("service `{name}`: health check port {port} is outside 1-65535"),
                span,
                format!("{p}/port"),
            );
        }
        for field in ["interval", "timeout", "unhealthyInterval"] {
            let v = match field {
                "interval" => hc.interval,
                "timeout" => hc.timeout,
                _ => hc.unhealthy_interval,
            };
            if let Some(d) = v
                && d.nanos <= 0
            {
                let span = self.span(fi, &format!("{p}/{field}"));
                self.err(Code::InvalidDuration, format!("service `{name}`: health check {field} must be positive (Traefik falls back to its default and logs an error)"), span, format!("{p}/{field}"));
            }
        }
        if let Some(m) = &hc.method
            && (m.is_empty() || !m.chars().all(|c| c.is_ascii_alphabetic()))
        {
            let span = self.span(fi, &format!("{p}/method"));
            self.err(
                Code::InvalidValue,
                format!("service `{name}`: health check method `{m}` is not an HTTP method"),
                span,
                format!("{p}/method"),
            );
        }
    }

    // ---- bridge: (bridgectl extensions) ---------------------------------------------------------

    /// The `bridge:` section: at most one file sets the defaults, each named service exists (in
    /// some file) and is a load balancer with a health check, durations are not negative.
    fn check_bridge(&mut self) {
        let mut defaults_at: Option<usize> = None;
        let mut named: BTreeMap<String, usize> = BTreeMap::new();
        for (fi, f) in self.loaded.dynamic.iter().enumerate() {
            let Some(b) = &f.model.bridge else { continue };
            if let Some(hc) = &b.health_check {
                if let Some(first) = defaults_at {
                    let span = self.key_span(fi, "/bridge/healthCheck");
                    let other = self.file_name(first);
                    self.err(
                        Code::DuplicateName,
                        format!("`bridge.healthCheck` is also set in {other}; set the defaults in one file"),
                        span,
                        "/bridge/healthCheck".into(),
                    );
                } else {
                    defaults_at = Some(fi);
                }
                self.check_bridge_durations(fi, "/bridge/healthCheck", "bridge.healthCheck", hc);
            }
            for (name, hc) in b.services.iter().flatten() {
                let p = format!("/bridge/services/{}", escape(name));
                let span = self.key_span(fi, &p);
                if let Some(first) = named.get(name) {
                    let other = self.file_name(*first);
                    self.err(
                        Code::DuplicateName,
                        format!("`bridge.services.{name}` is also set in {other}"),
                        span,
                        p.clone(),
                    );
                } else {
                    named.insert(name.clone(), fi);
                }
                match self
                    .symbols
                    .get::<Service>(self.loaded, name)
                    .map(|d| d.value)
                {
                    None if self.symbols.broken.contains(name.as_str()) => {}
                    None => {
                        let hint =
                            did_you_mean(name, self.symbols.services.keys().map(String::as_str))
                                .map(|s| format!("did you mean `{s}`?"));
                        self.err(
                            Code::UndefinedReference,
                            format!("`bridge.services.{name}`: service `{name}` is not defined"),
                            span,
                            p.clone(),
                        )
                        .hint = hint;
                    }
                    Some(s)
                        if s.load_balancer
                            .as_ref()
                            .is_none_or(|l| l.health_check.is_none()) =>
                    {
                        self.err(
                            Code::InvalidValue,
                            format!("`bridge.services.{name}`: service `{name}` is not a load balancer with a health check, so these settings would have no effect"),
                            span,
                            p.clone(),
                        );
                    }
                    Some(_) => {}
                }
                self.check_bridge_durations(fi, &p, &format!("bridge.services.{name}"), hc);
            }
        }
    }

    fn check_bridge_durations(
        &mut self,
        fi: usize,
        p: &str,
        label: &str,
        hc: &crate::model::dynamic::BridgeHealthCheck,
    ) {
        for (field, v) in [
            ("downReprobeInterval", hc.down_reprobe_interval),
            ("hold", hc.hold),
        ] {
            if let Some(d) = v
                && d.nanos < 0
            {
                let ptr = format!("{p}/{field}");
                let span = self.span(fi, &ptr);
                self.err(
                    Code::InvalidDuration,
                    format!("`{label}.{field}` must not be negative"),
                    span,
                    ptr,
                );
            }
        }
        if let Some(d) = hc.hold
            && d.nanos > 60_000_000_000
        {
            let ptr = format!("{p}/hold");
            let span = self.span(fi, &ptr);
            self.err(
                Code::InvalidDuration,
                format!("`{label}.hold` is longer than 60s, longer than most clients wait; use at most 60s"),
                span,
                ptr,
            );
        }
    }

    // ---- middlewares ----------------------------------------------------------------------------

    fn check_middlewares(&mut self) {
        let mws: Vec<Found<'a, Middleware>> = self.symbols.iter(self.loaded).collect();
        let mut graph: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for def in &mws {
            let (name, m) = (def.name, def.value);
            let base = def.pointer.to_owned();
            let fi = def.file;
            let kinds = serde_json::to_value(m)
                .ok()
                .and_then(|v| v.as_object().map(|o| o.len()))
                .unwrap_or(0);
            if kinds == 0 {
                let span = self.key_span(fi, &base);
                self.err(
                    Code::KindCount,
                    format!("middleware `{name}` defines no kind"),
                    span,
                    base.clone(),
                );
            }
            if let Some(ba) = &m.basic_auth {
                self.check_basic_auth(name, fi, &format!("{base}/basicAuth"), ba);
            }
            if let Some(c) = &m.chain {
                let mut children = Vec::new();
                for (i, n) in c.middlewares.iter().flatten().enumerate() {
                    let p = format!("{base}/chain/middlewares/{i}");
                    self.entity_ref(Section::Middlewares, n, Some(fi), &p);
                    children.push((EntityRef::parse(n).name.to_owned(), p));
                }
                graph.insert(name.to_owned(), children);
            }
            let mut regexes: Vec<(String, String)> = Vec::new();
            if let Some(r) = &m.redirect_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .map(|x| (x.clone(), format!("{base}/redirectRegex/regex"))),
                );
            }
            if let Some(r) = &m.replace_path_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .map(|x| (x.clone(), format!("{base}/replacePathRegex/regex"))),
                );
            }
            if let Some(r) = &m.strip_prefix_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, x)| (x.clone(), format!("{base}/stripPrefixRegex/regex/{i}"))),
                );
            }
            if let Some(h) = &m.headers {
                regexes.extend(
                    h.access_control_allow_origin_list_regex
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, x)| {
                            (
                                x.clone(),
                                format!("{base}/headers/accessControlAllowOriginListRegex/{i}"),
                            )
                        }),
                );
            }
            for (re, p) in regexes {
                if let Err(e) = regex::Regex::new(&re) {
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidRegex,
                        format!(
                            "middleware `{name}`: invalid regex: {}",
                            last_line(&e.to_string())
                        ),
                        span,
                        p,
                    );
                }
            }
            if let Some(rs) = &m.redirect_scheme {
                match rs.scheme.as_deref() {
                    None | Some("") => {
                        let span = self.key_span(fi, &format!("{base}/redirectScheme"));
                        self.err(Code::MissingKey, format!("middleware `{name}`: redirectScheme needs `scheme` (Traefik: \"you must provide a target scheme\")"), span, format!("{base}/redirectScheme/scheme"));
                    }
                    Some(_) => {}
                }
                if let Some(port) = &rs.port
                    && port.parse::<u16>().map_or(true, |p| p == 0)
                {
                    let p = format!("{base}/redirectScheme/port");
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidAddress,
                        format!("middleware `{name}`: redirect port `{port}` is not a port number"),
                        span,
                        p,
                    );
                }
            }
            if let Some(sp) = &m.strip_prefix {
                for (i, pre) in sp.prefixes.iter().flatten().enumerate() {
                    if !pre.starts_with('/') {
                        let p = format!("{base}/stripPrefix/prefixes/{i}");
                        let span = self.span(fi, &p);
                        self.warn(Code::InvalidValue, format!("middleware `{name}`: prefix `{pre}` does not start with `/` and never matches a path"), span, p);
                    }
                }
            }
            if let Some(r) = &m.retry
                && r.attempts.is_none_or(|a| a <= 0)
            {
                let p = format!("{base}/retry/attempts");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: retry needs `attempts` greater than 0"),
                    span,
                    p,
                );
            }
            let allow = m
                .ip_allow_list
                .as_ref()
                .map(|a| (a.source_range.as_ref(), "ipAllowList"))
                .or_else(|| {
                    m.ip_white_list
                        .as_ref()
                        .map(|a| (a.source_range.as_ref(), "ipWhiteList"))
                });
            if let Some((ranges, kind)) = allow {
                if ranges.is_none_or(|r| r.is_empty()) {
                    let span = self.key_span(fi, &format!("{base}/{kind}"));
                    self.err(
                        Code::MissingKey,
                        format!("middleware `{name}`: {kind} needs at least one sourceRange"),
                        span,
                        format!("{base}/{kind}/sourceRange"),
                    );
                }
                for (i, r) in ranges.into_iter().flatten().enumerate() {
                    if parse_ip_or_cidr(r).is_err() {
                        let p = format!("{base}/{kind}/sourceRange/{i}");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::InvalidIp,
                            format!(
                                "middleware `{name}`: `{r}` is not an IP address or CIDR range"
                            ),
                            span,
                            p,
                        );
                    }
                }
            }
        }
        let mut reported = BTreeSet::new();
        for start in graph.keys() {
            if let Some(cycle) = find_cycle(start, &graph)
                && reported.insert(canonical_cycle(&cycle))
            {
                let p = cycle_pointer(&graph, &cycle);
                let Some(def) = self.symbols.middlewares.get(&cycle[0]) else {
                    continue;
                };
                let span = self.span(def.file, &p);
                self.err(
                    Code::ReferenceCycle,
                    format!(
                        "middleware chains refer to each other in a loop: {}",
                        cycle.join(" -> ")
                    ),
                    span,
                    p,
                );
            }
        }
    }

    fn check_basic_auth(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        ba: &crate::model::dynamic::BasicAuth,
    ) {
        let mut users = 0;
        for (i, u) in ba.users.iter().flatten().enumerate() {
            users += 1;
            if let Err(why) = check_htpasswd_line(u) {
                let p = format!("{base}/users/{i}");
                let span = self.span(fi, &p);
                self.err(Code::InvalidHash, format!("middleware `{name}`: user entry {}: {why}", i + 1), span, p)
                    .hint = Some("generate entries with `htpasswd -nB USER` (bcrypt); plain-text passwords never match in Traefik".into());
            }
        }
        if let Some(file) = &ba.users_file {
            let p = format!("{base}/usersFile");
            let span = self.span(fi, &p);
            let path = resolve_config_path(&self.loaded.dir, file);
            match std::fs::read_to_string(&path) {
                Err(e) => {
                    self.err(Code::FileNotFound, format!("middleware `{name}`: usersFile `{file}` cannot be read ({e}; looked for {})", display_name(&self.loaded.dir, &path)), span, p);
                }
                Ok(text) => {
                    for (ln, line) in text.lines().enumerate() {
                        let line = line.trim();
                        if line.is_empty() || line.starts_with('#') {
                            continue;
                        }
                        users += 1;
                        if let Err(why) = check_htpasswd_line(line) {
                            self.err(
                                Code::InvalidHash,
                                format!(
                                    "middleware `{name}`: {}:{}: {why}",
                                    display(&path),
                                    ln + 1
                                ),
                                span,
                                p.clone(),
                            )
                            .hint =
                                Some("generate entries with `htpasswd -nB USER` (bcrypt)".into());
                        }
                    }
                }
            }
        }
        if users == 0 && ba.users_file.is_none() {
            let span = self.key_span(fi, base);
            self.err(
                Code::MissingKey,
                format!(
                    "middleware `{name}`: basicAuth has no users (Traefik: \"no users found\")"
                ),
                span,
                format!("{base}/users"),
            );
        }
    }

    // ---- tls ------------------------------------------------------------------------------------

    fn check_tls(&mut self) {
        let loaded = self.loaded;
        for (fi, f) in loaded.dynamic.iter().enumerate() {
            let Some(tls) = &f.model.tls else { continue };
            for (i, c) in tls.certificates.iter().flatten().enumerate() {
                let base = format!("/tls/certificates/{i}");
                self.pem_ref(
                    fi,
                    &format!("{base}/certFile"),
                    c.cert_file.as_deref(),
                    "certificate",
                );
                self.pem_ref(
                    fi,
                    &format!("{base}/keyFile"),
                    c.key_file.as_deref(),
                    "private key",
                );
            }
            for (sname, store) in tls.stores.iter().flatten() {
                let base = format!("/tls/stores/{}", escape(sname));
                if sname != "default" {
                    let span = self.key_span(fi, &base);
                    self.warn(
                        Code::Ignored,
                        format!(
                            "TLS store `{sname}` is ignored; Traefik only uses the `default` store"
                        ),
                        span,
                        base.clone(),
                    );
                }
                if let Some(c) = &store.default_certificate {
                    self.pem_ref(
                        fi,
                        &format!("{base}/defaultCertificate/certFile"),
                        c.cert_file.as_deref(),
                        "certificate",
                    );
                    self.pem_ref(
                        fi,
                        &format!("{base}/defaultCertificate/keyFile"),
                        c.key_file.as_deref(),
                        "private key",
                    );
                }
                if store.default_generated_cert.is_some() {
                    let p = format!("{base}/defaultGeneratedCert");
                    let span = self.key_span(fi, &p);
                    self.err(Code::Unsupported, "defaultGeneratedCert (ACME) is valid Traefik, but not supported by bridgectl".into(), span, p);
                }
            }
            for (oname, o) in tls.options.iter().flatten() {
                let base = format!("/tls/options/{}", escape(oname));
                for (field, v) in [
                    ("minVersion", &o.min_version),
                    ("maxVersion", &o.max_version),
                ] {
                    let Some(v) = v else { continue };
                    let p = format!("{base}/{field}");
                    let span = self.span(fi, &p);
                    use bridge_plan::TlsVersion;
                    match TlsVersion::from_go_name(v) {
                        Some(TlsVersion::Tls12 | TlsVersion::Tls13) => {}
                        Some(TlsVersion::Tls10 | TlsVersion::Tls11) => {
                            self.warn(Code::Unsupported, format!("TLS options `{oname}`: {v} is valid Traefik, but bridgectl (rustls) only speaks TLS 1.2 and 1.3; older clients are refused"), span, p);
                        }
                        None => {
                            self.err(Code::InvalidValue, format!("TLS options `{oname}`: {field} `{v}` must be VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13"), span, p);
                        }
                    }
                }
                for (i, cs) in o.cipher_suites.iter().flatten().enumerate() {
                    if bridge_plan::CipherSuite::from_go_name(cs).is_none() {
                        let p = format!("{base}/cipherSuites/{i}");
                        let span = self.span(fi, &p);
                        let hint = did_you_mean(cs, bridge_plan::CipherSuite::go_names())
                            .map(|s| format!("did you mean `{s}`?"));
                        self.err(Code::InvalidValue, format!("TLS options `{oname}`: cipher suite `{cs}` is not one bridgectl can offer"), span, p).hint = hint;
                    }
                }
                if let Some(ca) = &o.client_auth {
                    if let Some(t) = &ca.client_auth_type
                        && bridge_plan::ClientAuthType::from_name(t).is_none()
                    {
                        let p = format!("{base}/clientAuth/clientAuthType");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::InvalidValue,
                            format!("TLS options `{oname}`: unknown clientAuthType `{t}`"),
                            span,
                            p,
                        );
                    } else if let Some(t) = &ca.client_auth_type
                        && matches!(t.as_str(), "RequestClientCert" | "RequireAnyClientCert")
                    {
                        let p = format!("{base}/clientAuth/clientAuthType");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::Unsupported,
                            format!("TLS options `{oname}`: clientAuthType `{t}` accepts client certificates without verifying them; it is valid Traefik, but bridgectl only verifies (use VerifyClientCertIfGiven or RequireAndVerifyClientCert)"),
                            span,
                            p,
                        );
                    }
                    for (i, f) in ca.ca_files.iter().flatten().enumerate() {
                        self.pem_ref(
                            fi,
                            &format!("{base}/clientAuth/caFiles/{i}"),
                            Some(f),
                            "CA certificate",
                        );
                    }
                }
            }
        }
    }

    fn check_transports(&mut self) {
        let loaded = self.loaded;
        for (fi, f) in loaded.dynamic.iter().enumerate() {
            for (tname, t) in f
                .model
                .http
                .iter()
                .flat_map(|h| h.servers_transports.iter().flatten())
            {
                let base = format!("/http/serversTransports/{}", escape(tname));
                for (i, ca) in t.root_cas.iter().flatten().enumerate() {
                    self.pem_ref(
                        fi,
                        &format!("{base}/rootCAs/{i}"),
                        Some(ca),
                        "CA certificate",
                    );
                }
                for (i, c) in t.certificates.iter().flatten().enumerate() {
                    self.pem_ref(
                        fi,
                        &format!("{base}/certificates/{i}/certFile"),
                        c.cert_file.as_deref(),
                        "certificate",
                    );
                    self.pem_ref(
                        fi,
                        &format!("{base}/certificates/{i}/keyFile"),
                        c.key_file.as_deref(),
                        "private key",
                    );
                }
            }
        }
    }

    /// A PEM value: a path (must exist) or inline PEM text (Traefik's FileOrContent).
    fn pem_ref(&mut self, fi: usize, pointer: &str, value: Option<&str>, what: &str) {
        let span = self.span(fi, pointer);
        let Some(v) = value.filter(|v| !v.trim().is_empty()) else {
            let parent = pointer.rsplit_once('/').map_or(pointer, |(p, _)| p);
            let span = self.key_span(fi, parent);
            self.err(
                Code::MissingKey,
                format!("{what} file is missing"),
                span,
                pointer.into(),
            );
            return;
        };
        if v.contains("-----BEGIN") {
            return;
        }
        let path = resolve_config_path(&self.loaded.dir, v);
        if !path.is_file() {
            self.err(
                Code::FileNotFound,
                format!(
                    "{what} file `{v}` does not exist (looked for {})",
                    display_name(&self.loaded.dir, &path)
                ),
                span,
                pointer.into(),
            )
            .hint = Some("paths under /etc/traefik/ are looked up in the checked directory".into());
        }
    }
}

fn display(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The last non-empty line: the regex crate puts the actual complaint there.
fn last_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_owned()
}

/// Validates an entry point address: `[host]:port[/tcp|/udp]`. Returns the port and protocol.
pub fn parse_address(addr: &str) -> Result<(u16, &str), String> {
    let (hostport, proto) = match addr.rsplit_once('/') {
        Some((hp, p)) => (hp, p),
        None => (addr, "tcp"),
    };
    let proto = match proto.to_ascii_lowercase().as_str() {
        "tcp" => "tcp",
        "udp" => "udp",
        _ => return Err(format!("unknown protocol `{proto}` (use tcp or udp)")),
    };
    let (host, port) = hostport.rsplit_once(':').ok_or("missing `:PORT`")?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("port `{port}` is not a number between 1 and 65535"))?;
    if port == 0 {
        return Err("port 0 is not allowed".into());
    }
    if !host.is_empty() {
        let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
        match h {
            Some(v6) => {
                v6.parse::<std::net::Ipv6Addr>()
                    .map_err(|_| format!("`{host}` is not an IPv6 address"))?;
            }
            None => {
                if host.parse::<IpAddr>().is_err() && !is_hostname(host) {
                    return Err(format!("`{host}` is not an IP address or host name"));
                }
            }
        }
    }
    Ok((port, proto))
}

fn is_hostname(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
        })
}

/// An IP or a CIDR range.
pub fn parse_ip_or_cidr(s: &str) -> Result<ipnet::IpNet, String> {
    if let Ok(net) = s.parse::<ipnet::IpNet>() {
        return Ok(net);
    }
    s.parse::<IpAddr>()
        .map(ipnet::IpNet::from)
        .map_err(|_| format!("`{s}` is not an IP or CIDR"))
}

/// A server URL must be absolute http, https or h2c with a host.
pub fn check_server_url(u: &str) -> Result<url::Url, String> {
    if !u.contains("://") {
        return Err("is not an absolute URL (missing `http://`)".into());
    }
    let url = url::Url::parse(u).map_err(|e| format!("is not an absolute URL ({e})"))?;
    if !matches!(url.scheme(), "http" | "https" | "h2c") {
        return Err(format!(
            "has scheme `{}`; use http, https or h2c",
            url.scheme()
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("has no host".into());
    }
    Ok(url)
}

/// Password hash kinds Traefik verifies (go-http-auth): bcrypt, MD5-crypt (`$apr1$`, `$1$`), `{SHA}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// `$2a$`, `$2b$`, `$2x$`, `$2y$`.
    Bcrypt,
    /// `$apr1$` or `$1$`.
    Md5Crypt,
    /// `{SHA}` + base64 of SHA-1.
    Sha1,
}

/// Classifies the hash of a `user:hash` line.
pub fn check_htpasswd_line(line: &str) -> Result<(String, HashKind), String> {
    let (user, hash) = line.split_once(':').ok_or("expected `user:hash`")?;
    if user.is_empty() {
        return Err("empty user name".into());
    }
    let kind = hash_kind(hash)?;
    Ok((user.to_owned(), kind))
}

/// Classifies a password hash.
pub fn hash_kind(hash: &str) -> Result<HashKind, String> {
    use base64::Engine as _;
    if let Some(b64) = hash.strip_prefix("{SHA}") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| "{SHA} hash is not valid base64".to_owned())?;
        return if bytes.len() == 20 {
            Ok(HashKind::Sha1)
        } else {
            Err("{SHA} hash is not 20 bytes".into())
        };
    }
    for prefix in ["$2a$", "$2b$", "$2x$", "$2y$"] {
        if let Some(rest) = hash.strip_prefix(prefix) {
            let ok = rest.len() == 56
                && rest.as_bytes()[2] == b'$'
                && rest[..2].parse::<u8>().is_ok_and(|c| (4..=31).contains(&c));
            return if ok {
                Ok(HashKind::Bcrypt)
            } else {
                Err("malformed bcrypt hash".into())
            };
        }
    }
    for prefix in ["$apr1$", "$1$"] {
        if let Some(rest) = hash.strip_prefix(prefix) {
            let ok = rest
                .split_once('$')
                .is_some_and(|(salt, h)| !salt.is_empty() && salt.len() <= 8 && h.len() == 22);
            return if ok {
                Ok(HashKind::Md5Crypt)
            } else {
                Err("malformed MD5-crypt hash".into())
            };
        }
    }
    if hash.is_empty() {
        return Err("no password hash".into());
    }
    if hash.starts_with('$') {
        return Err("unsupported hash kind (use bcrypt, $apr1$ or {SHA})".into());
    }
    Err("the password is not hashed (plain text never matches in Traefik)".into())
}

/// A cycle reachable from `start` that returns to `start`, as a list of names ending with `start`.
fn find_cycle(start: &str, graph: &BTreeMap<String, Vec<(String, String)>>) -> Option<Vec<String>> {
    let mut stack: Vec<(String, usize)> = vec![(start.to_owned(), 0)];
    let mut on_path: Vec<String> = vec![start.to_owned()];
    let mut visited: BTreeSet<String> = BTreeSet::new();
    while let Some((node, idx)) = stack.pop() {
        let children = graph.get(&node).map(Vec::as_slice).unwrap_or(&[]);
        if let Some((child, _)) = children.get(idx) {
            stack.push((node.clone(), idx + 1));
            let child = EntityRef::parse(child).name.to_owned();
            if child == start {
                let mut c = on_path.clone();
                c.push(start.to_owned());
                return Some(c);
            }
            if visited.insert(child.clone()) && graph.contains_key(&child) {
                on_path.push(child.clone());
                stack.push((child, 0));
            }
        } else {
            on_path.pop();
        }
    }
    None
}

fn canonical_cycle(cycle: &[String]) -> Vec<String> {
    let mut v: Vec<String> = cycle[..cycle.len().saturating_sub(1)].to_vec();
    v.sort();
    v
}

/// The pointer of the edge leaving the first node of a cycle.
fn cycle_pointer(graph: &BTreeMap<String, Vec<(String, String)>>, cycle: &[String]) -> String {
    let (from, to) = (&cycle[0], cycle.get(1).cloned().unwrap_or_default());
    graph
        .get(from)
        .and_then(|edges| edges.iter().find(|(c, _)| EntityRef::parse(c).name == to))
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        assert_eq!(parse_address(":80"), Ok((80, "tcp")));
        assert_eq!(parse_address("0.0.0.0:443/tcp"), Ok((443, "tcp")));
        assert_eq!(parse_address("[::]:8080"), Ok((8080, "tcp")));
        assert_eq!(parse_address(":53/udp"), Ok((53, "udp")));
        assert!(parse_address("80").is_err());
        assert!(parse_address(":99999").is_err());
        assert!(parse_address(":0").is_err());
        assert!(parse_address("bad host:80").is_err());
        assert!(parse_address(":80/sctp").is_err());
    }

    #[test]
    fn hashes() {
        assert_eq!(
            hash_kind("$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"),
            Ok(HashKind::Md5Crypt)
        );
        assert_eq!(
            hash_kind("$2y$05$.2Ldnmvxj2Aa.LPz7xFjAuWGdBLT.kqPRHRMpjAXlVDT0Y1Qek0AW"),
            Ok(HashKind::Bcrypt)
        );
        assert_eq!(
            hash_kind("{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="),
            Ok(HashKind::Sha1)
        );
        assert!(hash_kind("secret").is_err());
        assert!(hash_kind("$5$abc$def").is_err());
        assert!(check_htpasswd_line("nocolon").is_err());
    }

    #[test]
    fn urls() {
        assert!(check_server_url("http://scadabridge-central-a:5000").is_ok());
        assert!(check_server_url("h2c://x:80").is_ok());
        assert!(check_server_url("ftp://x").is_err());
        assert!(check_server_url("scadabridge-central-a:5000").is_err());
        assert!(check_server_url("/relative").is_err());
    }

    #[test]
    fn cycles() {
        let mut g: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        g.insert("a".into(), vec![("b".into(), "/pa".into())]);
        g.insert("b".into(), vec![("a@file".into(), "/pb".into())]);
        g.insert("c".into(), vec![("a".into(), "/pc".into())]);
        assert_eq!(
            find_cycle("a", &g),
            Some(vec!["a".into(), "b".into(), "a".into()])
        );
        assert_eq!(find_cycle("c", &g), None);
    }
}
