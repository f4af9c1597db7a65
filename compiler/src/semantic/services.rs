//! Services: one kind each, load-balancer servers and strategy, health checks, servers transports,
//! weighted/mirroring/failover children and the cycles they can form.

use std::collections::{BTreeMap, BTreeSet};

use crate::diag::Code;
use crate::loaded::{EntityRef, Found, Section};
use crate::model::dynamic::Service;

use super::{Ctx, canonical_cycle, check_server_url, cycle_pointer, find_cycle};

impl<'a> Ctx<'a> {
    pub(super) fn check_services(&mut self) {
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
            } else if kinds.iter().filter(|k| **k).count() > 1 {
                // Traefik refuses such a service ("multi-types service not supported").
                let names = [
                    "loadBalancer",
                    "weighted",
                    "mirroring",
                    "failover",
                    "highestRandomWeight",
                ];
                let defined: Vec<&str> = names
                    .iter()
                    .zip(kinds)
                    .filter_map(|(n, k)| k.then_some(*n))
                    .collect();
                let span = self.key_span(fi, &base);
                self.err(
                    Code::KindCount,
                    format!(
                        "service `{name}` defines more than one kind: {}",
                        defined.join(", ")
                    ),
                    span,
                    base.clone(),
                )
                .hint = Some("declare two services, one per kind".into());
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
                if let Some(sticky) = &lb.sticky {
                    self.check_sticky(name, fi, &format!("{lbp}/sticky"), sticky);
                }
                if let Some(strategy) = &lb.strategy {
                    let p = format!("{lbp}/strategy");
                    let span = self.span(fi, &p);
                    match strategy.as_str() {
                        "wrr" | "" => {}
                        "hrw" => {
                            if lb.sticky.as_ref().is_some_and(|s| s.cookie.is_some()) {
                                let sp = format!("{lbp}/sticky");
                                let span = self.key_span(fi, &sp);
                                self.warn(Code::InvalidValue, format!("service `{name}`: the hrw strategy never sets the sticky cookie, as in Traefik: the client's address decides"), span, sp);
                            }
                        }
                        "p2c" | "leasttime" => {}
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
                if let Some(sticky) = &w.sticky {
                    self.check_sticky(name, fi, &format!("{base}/weighted/sticky"), sticky);
                }
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
                if let Some(e) = &f.errors {
                    let statuses = e.status.as_deref().unwrap_or_default();
                    if statuses.is_empty() {
                        let p = format!("{base}/failover/errors");
                        let span = self.key_span(fi, &p);
                        self.warn(
                            Code::InvalidValue,
                            format!("service `{name}`: failover errors without `status` replays nothing (Traefik passes every answer of the main service through)"),
                            span,
                            p,
                        );
                    }
                    for (i, code) in statuses.iter().enumerate() {
                        if crate::semantic::parse_status_range(code).is_none() {
                            let p = format!("{base}/failover/errors/status/{i}");
                            let span = self.span(fi, &p);
                            self.err(
                                Code::InvalidValue,
                                format!("service `{name}`: failover errors status `{code}` is not a code or an ascending range `A-B` within 100-599 (Traefik refuses the service and disables its routers)"),
                                span,
                                p,
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
        if hc.path.is_none() && hc.mode.as_deref() != Some("grpc") {
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
                    // Traefik dials gRPC checks without TLS unless the scheme is something else,
                    // and then without any transport security, which fails: such a server would
                    // never be healthy.
                    if let Some(s) = hc.scheme.as_deref()
                        && !matches!(s, "http" | "h2c")
                    {
                        let span = self.span(fi, &format!("{p}/scheme"));
                        self.err(
                            Code::InvalidValue,
                            format!(
                                "service `{name}`: a gRPC health check runs over HTTP/2 without TLS; with scheme `{s}` Traefik's check always fails (use `h2c` or leave it out)"
                            ),
                            span,
                            format!("{p}/scheme"),
                        );
                    }
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
}

impl Ctx<'_> {
    /// A sticky section Traefik reads otherwise than it is written: without `cookie` it sticks
    /// nothing, an unknown `sameSite` is left out of the cookie, a `domain` Go refuses is dropped.
    fn check_sticky(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        s: &crate::model::dynamic::Sticky,
    ) {
        let Some(c) = &s.cookie else {
            let span = self.key_span(fi, base);
            self.warn(
                Code::InvalidValue,
                format!("service `{name}`: sticky without `cookie` makes no session sticky (as in Traefik)"),
                span,
                base.to_owned(),
            )
            .hint = Some("write `sticky: {cookie: {}}` for a cookie with Traefik's defaults".into());
            return;
        };
        if let Some(v) = &c.same_site
            && !["none", "lax", "strict"].contains(&v.to_ascii_lowercase().as_str())
        {
            let p = format!("{base}/cookie/sameSite");
            let span = self.span(fi, &p);
            self.warn(
                Code::InvalidValue,
                format!("service `{name}`: sameSite `{v}` is not none, lax or strict; the cookie gets no SameSite attribute, as Traefik writes it"),
                span,
                p,
            );
        }
        if let Some(d) = c.domain.as_deref().filter(|d| !d.is_empty())
            && !crate::resolve::valid_cookie_domain(d)
        {
            let p = format!("{base}/cookie/domain");
            let span = self.span(fi, &p);
            self.warn(
                Code::InvalidValue,
                format!("service `{name}`: `{d}` is not a cookie domain; the cookie gets no Domain attribute, as Traefik writes it"),
                span,
                p,
            );
        }
    }
}
