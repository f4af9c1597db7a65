//! The middlewares of Traefik parity that shape traffic rather than rewrite requests: `errors`
//! (its status ranges, rewrites and page service), `rateLimit` and `inFlightReq` (their numbers
//! and Traefik's sourceCriterion, whose ipStrategy `ipAllowList` shares), with Traefik's constraints as located
//! diagnostics and, where Traefik accepts a value it then mishandles (a rewrite to a code Go
//! panics on, a range that never matches), an error or a warning before anything runs.

use crate::diag::Code;
use crate::loaded::{EntityRef, Section};
use crate::model::dynamic::{ErrorPage, InFlightReq, IpStrategy, RateLimit, SourceCriterion};

use super::{Ctx, parse_ip_or_cidr, parse_status_range};

impl Ctx<'_> {
    /// `errors`: `status` and `statusRewrites` as ranges within 100-599, a page service of the
    /// file provider, field names that can be copied.
    pub(super) fn check_errors(&mut self, name: &str, fi: usize, base: &str, e: &ErrorPage) {
        let statuses = e.status.as_deref().unwrap_or_default();
        if statuses.is_empty() {
            let span = self.key_span(fi, base);
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: errors without `status` catches nothing (Traefik passes every answer through)"),
                span,
                format!("{base}/status"),
            );
        }
        for (i, s) in statuses.iter().enumerate() {
            if parse_status_range(s).is_none() {
                let p = format!("{base}/status/{i}");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: status `{s}` is not a code or an ascending range `A-B` within 100-599 (Traefik disables the middleware and its routers, or never matches)"),
                    span,
                    p,
                );
            }
        }
        let mut seen: Vec<((u16, u16), String)> = Vec::new();
        for (key, code) in e.status_rewrites.iter().flatten() {
            let p = format!("{base}/statusRewrites/{}", crate::canon::escape(key));
            let Some(range) = parse_status_range(key) else {
                let span = self.key_span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: statusRewrites key `{key}` is not a code or an ascending range within 100-599"),
                    span,
                    p,
                );
                continue;
            };
            if !(100..=599).contains(code) {
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: statusRewrites `{key}` rewrites to {code}, not a status code (Traefik's Go server panics on it and closes the connection)"),
                    span,
                    p.clone(),
                );
            }
            if let Some((_, other)) = seen
                .iter()
                .find(|((a, b), _)| range.0 <= *b && *a <= range.1)
            {
                let span = self.key_span(fi, &p);
                self.warn(
                    Code::InvalidValue,
                    format!("middleware `{name}`: statusRewrites `{key}` overlaps `{other}`; Traefik picks either at random, bridgectl the one that sorts first"),
                    span,
                    p.clone(),
                );
            }
            seen.push((range, key.clone()));
        }
        match e.service.as_deref() {
            None | Some("") => {
                let span = self.key_span(fi, base);
                self.err(
                    Code::MissingKey,
                    format!("middleware `{name}`: errors needs `service` (Traefik: the service \"@file\" does not exist)"),
                    span,
                    format!("{base}/service"),
                );
            }
            Some(service) => {
                let p = format!("{base}/service");
                if EntityRef::parse(service).provider == Some("internal") {
                    // Served: the page is what a router to that internal service would answer.
                    if bridge_plan::ServiceRef::parse(service).is_none() {
                        let span = self.span(fi, &p);
                        self.err(
                            Code::UndefinedReference,
                            format!("middleware `{name}`: `{service}` is not one of Traefik's internal services"),
                            span,
                            p,
                        )
                        .hint = Some("api@internal, dashboard@internal, ping@internal, prometheus@internal, noop@internal or rest@internal".into());
                    }
                } else {
                    self.entity_ref(Section::Services, service, Some(fi), &p);
                }
            }
        }
        for (i, h) in e.error_request_headers.iter().flatten().enumerate() {
            if !is_field_name(h) {
                let p = format!("{base}/errorRequestHeaders/{i}");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: `{h}` is not a header field name"),
                    span,
                    p,
                );
            }
        }
    }
}

/// RFC 9110 §5.1: a field name is a non-empty token.
pub(super) fn is_field_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

impl Ctx<'_> {
    /// `rateLimit`: Traefik's readings of its numbers (a zero average limits nothing, a zero
    /// burst is one), a negative period refused as Traefik refuses it, Redis not served.
    pub(super) fn check_rate_limit(&mut self, name: &str, fi: usize, base: &str, r: &RateLimit) {
        if r.average.is_none_or(|a| a <= 0) {
            let p = format!("{base}/average");
            let span = if r.average.is_some() {
                self.span(fi, &p)
            } else {
                self.key_span(fi, base)
            };
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: rateLimit without a positive `average` limits nothing (Traefik's reading)"),
                span,
                p,
            );
        }
        if let Some(p) = r.period
            && p.nanos < 0
        {
            let ptr = format!("{base}/period");
            let span = self.span(fi, &ptr);
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: rateLimit `period` is negative (Traefik: negative value not valid for period)"),
                span,
                ptr,
            );
        }
        if r.burst.is_some_and(|b| b <= 0) {
            let p = format!("{base}/burst");
            let span = self.span(fi, &p);
            self.warn(
                Code::InvalidValue,
                format!("middleware `{name}`: rateLimit `burst` below 1 is taken as 1, as Traefik takes it"),
                span,
                p,
            );
        }
        if let Some(c) = &r.source_criterion {
            self.check_source_criterion(name, fi, &format!("{base}/sourceCriterion"), c);
        }
    }

    /// `inFlightReq`: an `amount` of at least 1 (Traefik refuses every request otherwise).
    pub(super) fn check_in_flight(&mut self, name: &str, fi: usize, base: &str, f: &InFlightReq) {
        if f.amount.is_none_or(|a| a <= 0) {
            let p = format!("{base}/amount");
            let span = if f.amount.is_some() {
                self.span(fi, &p)
            } else {
                self.key_span(fi, base)
            };
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: inFlightReq needs an `amount` of at least 1 (Traefik then refuses every request with 429)"),
                span,
                p,
            );
        }
        if let Some(c) = &f.source_criterion {
            self.check_source_criterion(name, fi, &format!("{base}/sourceCriterion"), c);
        }
    }

    /// One criterion at most, each valid, as Traefik's source extractor requires.
    fn check_source_criterion(&mut self, name: &str, fi: usize, base: &str, c: &SourceCriterion) {
        let set: Vec<&str> = [
            ("ipStrategy", c.ip_strategy.is_some()),
            (
                "requestHeaderName",
                c.request_header_name
                    .as_deref()
                    .is_some_and(|h| !h.is_empty()),
            ),
            ("requestHost", c.request_host == Some(true)),
        ]
        .into_iter()
        .filter(|(_, on)| *on)
        .map(|(n, _)| n)
        .collect();
        if set.len() > 1 {
            let span = self.key_span(fi, base);
            self.err(
                Code::InvalidValue,
                format!(
                    "middleware `{name}`: sourceCriterion sets {}; Traefik allows one (they are mutually exclusive)",
                    set.join(" and ")
                ),
                span,
                base.to_owned(),
            );
        }
        if let Some(h) = &c.request_header_name
            && !h.is_empty()
            && !is_field_name(h)
        {
            let p = format!("{base}/requestHeaderName");
            let span = self.span(fi, &p);
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: `{h}` is not a header field name"),
                span,
                p,
            );
        }
        if let Some(s) = &c.ip_strategy {
            self.check_ip_strategy(name, fi, &format!("{base}/ipStrategy"), s);
        }
    }

    /// `excludedIPs` are addresses or networks; `ipv6Subnet` within 1-128.
    pub(super) fn check_ip_strategy(&mut self, name: &str, fi: usize, base: &str, s: &IpStrategy) {
        for (i, e) in s.excluded_ips.iter().flatten().enumerate() {
            if parse_ip_or_cidr(e).is_err() {
                let p = format!("{base}/excludedIPs/{i}");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidIp,
                    format!("middleware `{name}`: `{e}` is not an IP address or CIDR range"),
                    span,
                    p,
                );
            }
        }
        if let Some(n) = s.ipv6_subnet
            && !(1..=128).contains(&n)
        {
            let p = format!("{base}/ipv6Subnet");
            let span = self.span(fi, &p);
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: ipv6Subnet {n} is not between 1 and 128 (Traefik: invalid IPv6 subnet)"),
                span,
                p,
            );
        }
        if s.depth.is_some_and(|d| d < 0) {
            let p = format!("{base}/depth");
            let span = self.span(fi, &p);
            self.err(
                Code::InvalidValue,
                format!("middleware `{name}`: ipStrategy depth is negative"),
                span,
                p,
            );
        }
    }
}
