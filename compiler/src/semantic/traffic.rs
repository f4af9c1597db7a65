//! The middlewares of Traefik parity that shape traffic rather than rewrite requests: `errors`
//! (its status ranges, rewrites and page service), with Traefik's constraints as located
//! diagnostics and, where Traefik accepts a value it then mishandles (a rewrite to a code Go
//! panics on, a range that never matches), an error or a warning before anything runs.

use crate::diag::Code;
use crate::loaded::{EntityRef, Section};
use crate::model::dynamic::ErrorPage;

use super::{Ctx, parse_status_range};

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
                    let span = self.span(fi, &p);
                    self.err(
                        Code::Unsupported,
                        format!("middleware `{name}`: an internal service (`{service}`) as the error page service is valid Traefik, but not supported by bridgectl"),
                        span,
                        p,
                    );
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
