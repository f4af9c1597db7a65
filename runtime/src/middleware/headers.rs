//! The `headers` middleware: custom request and response fields (an empty value removes the
//! field), the security headers (frame options, nosniff, XSS filter, CSP, referrer and
//! permissions policies), HSTS, and CORS ([`super::cors`]). Every name and value is parsed at
//! load; one that is not a valid field is left out, as it always was.

use http::{HeaderMap, HeaderName, HeaderValue, Request};

use super::cors::{self, Cors};
use super::{Flow, MiddlewareError, RequestCtx};
use crate::body::{Body, full, text};
use http::StatusCode;

/// What a custom request field does.
#[derive(Debug)]
enum RequestEdit {
    Set(HeaderValue),
    Remove,
    /// A value that is not a valid field: the proxy's own value for that name is still dropped.
    Skip,
}

#[derive(Debug)]
pub(crate) struct Headers {
    request: Vec<(HeaderName, RequestEdit)>,
    /// The security headers (frame options, nosniff, …); `None` removes the field.
    security: Vec<(HeaderName, Option<HeaderValue>)>,
    /// Custom response fields, set after the security headers (Traefik's custom-headers
    /// handler wraps its secure one, so its value wins); `None` removes the field.
    response: Vec<(HeaderName, Option<HeaderValue>)>,
    /// `Strict-Transport-Security`, when `stsSeconds` is set.
    sts: Option<HeaderValue>,
    /// HSTS also over plain HTTP (`forceSTSHeader`).
    force_sts: bool,
    /// `Public-Key-Pins`, sent where HSTS would be (HTTPS, or a matching `sslProxyHeaders`).
    hpkp: Option<HeaderValue>,
    /// `sslProxyHeaders`: a request carrying one of these exact values counts as HTTPS.
    ssl_proxy: Vec<(HeaderName, HeaderValue)>,
    /// `allowedHosts`, lower-cased; empty: every host (also under `isDevelopment`).
    allowed_hosts: Vec<String>,
    /// `hostsProxyHeaders`: where the host for `allowedHosts` is read first.
    hosts_proxy: Vec<HeaderName>,
    cors: Option<Cors>,
}

impl Headers {
    pub(crate) fn from_plan(h: &bridge_plan::Headers) -> Result<Self, MiddlewareError> {
        let request = h
            .custom_request_headers
            .iter()
            .filter_map(|(k, v)| {
                let name = HeaderName::from_bytes(k.as_bytes()).ok()?;
                let edit = if v.is_empty() {
                    RequestEdit::Remove
                } else {
                    HeaderValue::from_str(v).map_or(RequestEdit::Skip, RequestEdit::Set)
                };
                Some((name, edit))
            })
            .collect();
        let response: Vec<(HeaderName, Option<HeaderValue>)> = h
            .custom_response_headers
            .iter()
            .filter_map(|(k, v)| {
                let name = HeaderName::from_bytes(k.as_bytes()).ok()?;
                if v.is_empty() {
                    return Some((name, None));
                }
                HeaderValue::from_str(v).ok().map(|v| (name, Some(v)))
            })
            .collect();
        let security = [
            (
                "x-frame-options",
                h.custom_frame_options_value
                    .clone()
                    .or_else(|| h.frame_deny.then(|| "DENY".to_owned())),
            ),
            (
                "x-content-type-options",
                h.content_type_nosniff.then(|| "nosniff".to_owned()),
            ),
            (
                "x-xss-protection",
                h.custom_browser_xss_value
                    .clone()
                    .or_else(|| h.browser_xss_filter.then(|| "1; mode=block".to_owned())),
            ),
            ("content-security-policy", h.content_security_policy.clone()),
            (
                "content-security-policy-report-only",
                h.content_security_policy_report_only.clone(),
            ),
            ("referrer-policy", h.referrer_policy.clone()),
            ("permissions-policy", h.permissions_policy.clone()),
        ];
        let mut secure = Vec::new();
        for (name, value) in security {
            let Some(value) = value else { continue };
            let name = HeaderName::from_static(name);
            if value.is_empty() {
                secure.push((name, None));
            } else if let Ok(v) = HeaderValue::from_str(&value) {
                secure.push((name, Some(v)));
            }
        }
        let sts = (h.sts_seconds > 0 && !h.is_development).then(|| {
            let mut v = format!("max-age={}", h.sts_seconds);
            if h.sts_include_subdomains {
                v.push_str("; includeSubDomains");
            }
            if h.sts_preload {
                v.push_str("; preload");
            }
            HeaderValue::from_str(&v).ok()
        });
        let cors = Cors::from_plan(h).map_err(|source| MiddlewareError::Regex {
            field: "accessControlAllowOriginListRegex",
            regex: h.access_control_allow_origin_list_regex.join(", "),
            source,
        })?;
        let hpkp = h
            .public_key
            .as_deref()
            .filter(|_| !h.is_development)
            .and_then(|v| HeaderValue::from_str(v).ok());
        let ssl_proxy = h
            .ssl_proxy_headers
            .iter()
            .filter_map(|(k, v)| {
                Some((
                    HeaderName::from_bytes(k.as_bytes()).ok()?,
                    HeaderValue::from_str(v).ok()?,
                ))
            })
            .collect();
        let allowed_hosts = if h.is_development {
            Vec::new()
        } else {
            h.allowed_hosts
                .iter()
                .map(|a| a.to_ascii_lowercase())
                .collect()
        };
        let hosts_proxy = h
            .hosts_proxy_headers
            .iter()
            .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
            .collect();
        Ok(Self {
            request,
            security: secure,
            response,
            sts: sts.flatten(),
            force_sts: h.force_sts_header,
            hpkp,
            ssl_proxy,
            allowed_hosts,
            hosts_proxy,
            cors,
        })
    }

    pub(crate) fn apply<'a, B>(&'a self, req: &mut Request<B>, ctx: &mut RequestCtx<'a>) -> Flow {
        // As Traefik (unrolled/secure): the host check comes first, before CORS and before any
        // field is changed; the host is the first non-empty `hostsProxyHeaders` field, else the
        // request's, port included, compared without regard to case.
        if !self.allowed_hosts.is_empty() {
            let proxied = self.hosts_proxy.iter().find_map(|n| {
                req.headers()
                    .get(n)
                    .map(HeaderValue::as_bytes)
                    .filter(|v| !v.is_empty())
            });
            let host = proxied
                .or_else(|| ctx.host.map(str::as_bytes))
                .unwrap_or_default();
            if !self
                .allowed_hosts
                .iter()
                .any(|a| a.as_bytes().eq_ignore_ascii_case(host))
            {
                return Flow::Respond(text(StatusCode::INTERNAL_SERVER_ERROR, "Bad Host\n"));
            }
        }
        let mut origin = None;
        if let Some(c) = &self.cors {
            if cors::is_preflight(req.method(), req.headers()) {
                return Flow::Respond(preflight(c, req.headers()));
            }
            origin = Some(cors::origin(req.headers()).to_owned());
        }
        let fields = req.headers_mut();
        for (name, edit) in &self.request {
            // The middleware's value (or removal) wins over the proxy's own.
            ctx.forwarded.forget(name);
            ctx.fields_changed = true;
            match edit {
                RequestEdit::Set(v) => {
                    fields.insert(name.clone(), v.clone());
                }
                RequestEdit::Remove => {
                    fields.remove(name);
                }
                RequestEdit::Skip => {}
            }
        }
        // HSTS only means something over HTTPS (RFC 6797 §7.2), unless forced; a TLS terminator
        // in front says so with `sslProxyHeaders` (read after this middleware's own request
        // edits, as Traefik's secure handler, inside its custom-headers one, reads them).
        let https = ctx.tls || self.https_by_proxy(req.headers());
        ctx.response.headers.push(super::HeadersEdit {
            headers: self,
            sts: self.sts.is_some() && (https || self.force_sts),
            hpkp: https && self.hpkp.is_some(),
            origin,
        });
        Flow::Continue
    }

    /// This middleware's edits of an answer, in Traefik's order: the security headers and
    /// HSTS (its secure handler's), then the custom fields, then CORS (its custom-headers
    /// handler's, which wraps the secure one).
    pub(crate) fn respond(&self, at: &super::HeadersEdit<'_>, fields: &mut HeaderMap) {
        set_all(&self.security, fields);
        if at.sts
            && let Some(v) = &self.sts
        {
            fields.insert(http::header::STRICT_TRANSPORT_SECURITY, v.clone());
        }
        if at.hpkp
            && let Some(v) = &self.hpkp
        {
            fields.insert(HeaderName::from_static("public-key-pins"), v.clone());
        }
        set_all(&self.response, fields);
        if let (Some(c), Some(origin)) = (&self.cors, &at.origin) {
            c.apply(origin, fields);
        }
    }

    /// A `sslProxyHeaders` field carries its exact value (the first value of the field, as
    /// Go's `Header.Get`).
    fn https_by_proxy(&self, fields: &HeaderMap) -> bool {
        self.ssl_proxy.iter().any(|(n, v)| fields.get(n) == Some(v))
    }
}

/// Sets (or, for `None`, removes) each field.
fn set_all(edits: &[(HeaderName, Option<HeaderValue>)], fields: &mut HeaderMap) {
    for (name, value) in edits {
        match value {
            Some(v) => {
                fields.insert(name.clone(), v.clone());
            }
            None => {
                fields.remove(name);
            }
        }
    }
}

/// The proxy's own answer to a CORS preflight: 200, empty body, the CORS headers. The
/// middlewares before this one edit it on its way back, as any answer of the chain (they wrap
/// it, as in Traefik).
fn preflight(c: &Cors, request: &HeaderMap) -> http::Response<Body> {
    let mut resp = http::Response::new(full(bytes::Bytes::new()));
    resp.headers_mut().extend(c.preflight_headers(request));
    resp.headers_mut()
        .insert(http::header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_support::{ctx, plan_headers};

    fn headers(json: serde_json::Value) -> Headers {
        Headers::from_plan(&plan_headers(json)).unwrap()
    }

    fn request() -> Request<()> {
        let mut r = Request::new(());
        r.headers_mut()
            .insert("x-remove-me", HeaderValue::from_static("1"));
        r.headers_mut()
            .insert("x-keep", HeaderValue::from_static("1"));
        r
    }

    #[test]
    fn custom_request_fields_are_set_or_removed() {
        let h = headers(serde_json::json!({
            "custom_request_headers": {"X-Remove-Me": "", "X-Added": "yes"}
        }));
        let mut req = request();
        let mut c = ctx(None, "/");
        assert!(matches!(h.apply(&mut req, &mut c), Flow::Continue));
        assert!(!req.headers().contains_key("x-remove-me"));
        assert_eq!(req.headers()["x-added"], "yes");
        assert_eq!(req.headers()["x-keep"], "1");
        assert!(c.fields_changed);
    }

    #[test]
    fn response_fields_security_headers_and_hsts_apply_in_traefiks_order() {
        let h = headers(serde_json::json!({
            "custom_response_headers": {"Server": "", "X-Custom": "c"},
            "frame_deny": true, "content_type_nosniff": true, "sts_seconds": 60,
            "sts_include_subdomains": true, "sts_preload": true
        }));
        let mut req = request();
        // Over plain HTTP: no HSTS.
        let mut c = ctx(None, "/");
        h.apply(&mut req, &mut c);
        let mut resp = HeaderMap::new();
        resp.insert("server", HeaderValue::from_static("kestrel"));
        c.response.apply(&mut resp);
        assert!(!resp.contains_key("server"));
        assert_eq!(resp["x-custom"], "c");
        assert_eq!(resp["x-frame-options"], "DENY");
        assert_eq!(resp["x-content-type-options"], "nosniff");
        assert!(!resp.contains_key("strict-transport-security"));
        // Over TLS: HSTS with its options.
        let mut c = ctx(None, "/");
        c.tls = true;
        h.apply(&mut req, &mut c);
        let mut resp = HeaderMap::new();
        c.response.apply(&mut resp);
        assert_eq!(
            resp["strict-transport-security"],
            "max-age=60; includeSubDomains; preload"
        );
    }

    #[test]
    fn a_preflight_is_answered_by_the_middleware_with_the_earlier_response_headers() {
        let earlier = headers(serde_json::json!({"custom_response_headers": {"X-Outer": "1"}}));
        let h = headers(serde_json::json!({
            "access_control_allow_methods": ["GET", "POST"],
            "access_control_allow_origin_list": ["https://ui.example"]
        }));
        let mut req = Request::new(());
        *req.method_mut() = http::Method::OPTIONS;
        req.headers_mut()
            .insert("origin", HeaderValue::from_static("https://ui.example"));
        req.headers_mut().insert(
            "access-control-request-method",
            HeaderValue::from_static("POST"),
        );
        let mut c = ctx(None, "/");
        earlier.apply(&mut req, &mut c);
        let Flow::Respond(mut r) = h.apply(&mut req, &mut c) else {
            panic!("a preflight is answered");
        };
        // As the proxy does with a middleware's own answer.
        c.response.apply(r.headers_mut());
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["x-outer"], "1");
        assert_eq!(r.headers()["access-control-allow-methods"], "GET,POST");
        assert_eq!(
            r.headers()["access-control-allow-origin"],
            "https://ui.example"
        );
        assert_eq!(r.headers()["content-length"], "0");
    }

    #[test]
    fn a_cors_origin_regex_that_does_not_compile_is_refused_at_load() {
        let plan = plan_headers(serde_json::json!({
            "access_control_allow_origin_list_regex": ["("]
        }));
        let err = Headers::from_plan(&plan).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("accessControlAllowOriginListRegex `(` does not compile"),
            "{err}"
        );
    }
}
