//! The static configuration: entry points (addresses, redirections, entry-point TLS and
//! middlewares, forwarded headers), the API, the rule syntax, and `log`, `accessLog` and
//! `metrics.prometheus` values the runtime must understand.

use std::collections::{BTreeMap, BTreeSet};

use crate::canon::escape;
use crate::diag::{Code, did_you_mean};
use crate::loaded::Section;
use crate::model::static_config::UNDERSCORE_HEADERS_STRATEGIES;

use super::{Ctx, parse_address, parse_ip_or_cidr, parse_status_range};

impl Ctx<'_> {
    pub(super) fn entry_points(&self) -> BTreeSet<String> {
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

    /// `http3` on an entry point where no router has TLS (neither the entry point's `http.tls`
    /// nor a router's own `tls`): every QUIC handshake fails there, in Traefik as here.
    pub(super) fn check_http3(&mut self) {
        let loaded = self.loaded;
        let defaults = loaded.default_entry_points();
        for (name, ep) in loaded.static_cfg.entry_points.iter().flatten() {
            if ep.http3.is_none() || ep.http.as_ref().and_then(|h| h.tls.as_ref()).is_some() {
                continue;
            }
            let router_tls = loaded
                .dynamic
                .iter()
                .flat_map(|f| f.model.http.iter().flat_map(|h| h.routers.iter().flatten()))
                .any(|(_, r)| {
                    r.tls.is_some() && r.entry_points.as_ref().unwrap_or(&defaults).contains(name)
                });
            if !router_tls {
                let p = format!("/entryPoints/{}/http3", escape(name));
                let span = loaded.static_canon.key_span(&p);
                self.warn(
                    Code::Ignored,
                    format!("entry point `{name}`: http3 serves nothing — no router here has TLS, and HTTP/3 is always TLS (every QUIC handshake fails, as in Traefik)"),
                    span,
                    p,
                )
                .hint = Some("give the entry point `http.tls: {}` or its routers `tls: {}`".into());
            }
        }
    }

    pub(super) fn check_static(&mut self) {
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
                if let Some(v) = &http.underscore_headers_strategy
                    && !v.is_empty()
                    && !UNDERSCORE_HEADERS_STRATEGIES.contains(&v.as_str())
                {
                    let p = format!("{base}/http/underscoreHeadersStrategy");
                    let span = self.static_span(&p);
                    self.err(
                        Code::InvalidValue,
                        format!(
                            "`http.underscoreHeadersStrategy` `{v}` is not keep, delete or reject \
                             (Traefik refuses to start)"
                        ),
                        span,
                        p,
                    )
                    .hint = Some(
                        "keep: handed on (the default); delete: removed before routing; \
                         reject: the request is answered 400"
                            .into(),
                    );
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
            // Traefik refuses to start with a negative HTTP/2 setting.
            if let Some(h2) = &ep.http2 {
                for (key, v) in [
                    ("maxConcurrentStreams", h2.max_concurrent_streams),
                    (
                        "maxDecoderHeaderTableSize",
                        h2.max_decoder_header_table_size,
                    ),
                    (
                        "maxEncoderHeaderTableSize",
                        h2.max_encoder_header_table_size,
                    ),
                ] {
                    if v.is_some_and(|v| v < 0) {
                        let p = format!("{base}/http2/{key}");
                        let span = self.static_span(&p);
                        self.err(
                            Code::InvalidValue,
                            format!("`http2.{key}` must be 0 or more (Traefik refuses to start)"),
                            span,
                            p,
                        );
                    }
                }
            }
            if let Some(port) = ep.http3.as_ref().and_then(|h| h.advertised_port)
                && !(0..=65535).contains(&port)
            {
                let p = format!("{base}/http3/advertisedPort");
                let span = self.static_span(&p);
                self.err(
                    Code::InvalidValue,
                    format!("`http3.advertisedPort` {port} is not a port (Traefik refuses to start below 0)"),
                    span,
                    p,
                )
                .hint = Some("the UDP port clients reach HTTP/3 on, e.g. 443; 0 or left out: the entry point's port".into());
            }
            if let Some(pp) = &ep.proxy_protocol
                && !pp.insecure.unwrap_or(false)
                && pp.trusted_ips.as_ref().is_none_or(Vec::is_empty)
            {
                let p = format!("{base}/proxyProtocol");
                let span = self.static_span(&p);
                self.err(
                    Code::InvalidValue,
                    "`proxyProtocol` needs `trustedIPs` or `insecure: true` (Traefik refuses to \
                     start without either: \"no trusted IPs provided\")"
                        .to_owned(),
                    span,
                    p,
                );
            }
            let trusted = [
                ep.forwarded_headers
                    .as_ref()
                    .map(|f| ("forwardedHeaders", &f.trusted_ips)),
                ep.proxy_protocol
                    .as_ref()
                    .map(|p| ("proxyProtocol", &p.trusted_ips)),
            ];
            for (section, ips) in trusted.into_iter().flatten() {
                for (i, ip) in ips.iter().flatten().enumerate() {
                    let p = format!("{base}/{section}/trustedIPs/{i}");
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
        for (key, value) in cfg
            .ocsp
            .iter()
            .flat_map(|o| o.responder_overrides.iter().flatten())
        {
            if value.is_empty() {
                let pointer = format!(
                    "/ocsp/responderOverrides/{}",
                    key.replace('~', "~0").replace('/', "~1")
                );
                let span = self.static_span(&pointer);
                self.err(
                    Code::InvalidValue,
                    format!("OCSP responder override value for {key} cannot be empty"),
                    span,
                    pointer,
                )
                .hint = Some(
                    "give the URL to ask instead, or remove the entry to ask the certificate's own responder".into(),
                );
            }
        }
        if let Some(code) = cfg.ping.as_ref().and_then(|p| p.terminating_status_code)
            && !(100..=599).contains(&code)
        {
            let span = self.static_span("/ping/terminatingStatusCode");
            self.err(
                Code::InvalidValue,
                format!("ping.terminatingStatusCode {code} is not an HTTP status (100-599)"),
                span,
                "/ping/terminatingStatusCode".into(),
            )
            .hint = Some("503, Traefik's default, tells a load balancer to move away".into());
        }
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
        let mut labels_wrong: Vec<(String, String)> = Vec::new();
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
            // Traefik registers the counters with these labels beside its own: a name that
            // repeats one of them fails the registration (Traefik then serves no Prometheus
            // metrics at all, logging an error); a name outside the classic rules it exposes,
            // and scrapers that keep those rules reject the whole page (stricter here).
            for (label, header) in p.header_labels.iter().flatten() {
                let valid = label.chars().enumerate().all(|(i, c)| {
                    c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit())
                }) && !label.is_empty()
                    && !label.starts_with("__");
                let why = if !valid {
                    Some(format!(
                        "metrics.prometheus.headerLabels: `{label}` is not a classic Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __); Traefik exposes it, and scrapers that keep the classic rules reject the whole page"
                    ))
                } else if [
                    "code",
                    "method",
                    "protocol",
                    "entrypoint",
                    "router",
                    "service",
                ]
                .contains(&label.as_str())
                {
                    Some(format!(
                        "metrics.prometheus.headerLabels: `{label}` is already a label of the request counters (Traefik then fails to register its metrics and serves none)"
                    ))
                } else if header.is_empty()
                    || !header
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
                {
                    Some(format!(
                        "metrics.prometheus.headerLabels: `{header}` (for `{label}`) is not a header field name"
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    labels_wrong.push((
                        format!("/metrics/prometheus/headerLabels/{}", escape(label)),
                        why,
                    ));
                }
            }
        }
        // hostResolver without flattening does nothing in Traefik either (its resolver is only
        // asked when cnameFlattening is on): accepted as the no-op it is.
        if cfg
            .host_resolver
            .as_ref()
            .is_some_and(|h| h.cname_flattening == Some(true))
        {
            found.push((
                Code::Unsupported,
                "hostResolver.cnameFlattening is valid Traefik, but not supported by bridgectl: it makes every request's client-chosen Host a DNS lookup before routing; write the names that point at the proxy into the Host rules instead".into(),
                "/hostResolver/cnameFlattening",
            ));
        }
        for (code, msg, pointer) in found {
            let span = self.static_span(pointer);
            self.err(code, msg, span, pointer.into());
        }
        for (pointer, msg) in labels_wrong {
            let span = self.static_span(&pointer);
            self.err(Code::InvalidValue, msg, span, pointer);
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
}
