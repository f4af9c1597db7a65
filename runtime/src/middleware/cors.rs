//! CORS headers of the `headers` middleware, with Traefik's behaviour:
//!
//! - A preflight — `OPTIONS` with `Origin` and `Access-Control-Request-Method` — is answered by
//!   the proxy (200, empty body, never forwarded) with `Access-Control-Allow-Credentials` (when
//!   set), `-Allow-Headers` and `-Allow-Methods` (comma-joined, when not empty),
//!   `-Allow-Origin` (when the origin is allowed) and always `-Max-Age`.
//! - On every other response: `Access-Control-Allow-Origin` replaces the server's when the
//!   request's origin is allowed; `-Allow-Credentials` and `-Expose-Headers` are set when
//!   configured; with `addVaryHeader`, `Origin` is appended to `Vary`.
//! - An origin is allowed by the first match in `accessControlAllowOriginList` — `*` (answered as
//!   `*`, also for a request without `Origin`, as Traefik does) or the exact origin (echoed) — else
//!   by any regex of `accessControlAllowOriginListRegex` (unanchored, as Go's `MatchString`; the
//!   origin is echoed).

use bridge_plan::Headers;
use http::{HeaderMap, HeaderValue, Method, header};

/// The CORS part of one `headers` middleware.
#[derive(Debug)]
pub(crate) struct Cors {
    allow_credentials: bool,
    allow_headers: String,
    allow_methods: String,
    origins: Vec<String>,
    regexes: Vec<regex::Regex>,
    expose_headers: String,
    max_age: u64,
    add_vary: bool,
}

impl Cors {
    /// The CORS settings of `h`; `None` when it sets none (Traefik's `HasCorsHeadersDefined`).
    pub(crate) fn from_plan(h: &Headers) -> Result<Option<Self>, regex::Error> {
        let any = h.access_control_allow_credentials
            || !h.access_control_allow_headers.is_empty()
            || !h.access_control_allow_methods.is_empty()
            || !h.access_control_allow_origin_list.is_empty()
            || !h.access_control_allow_origin_list_regex.is_empty()
            || !h.access_control_expose_headers.is_empty()
            || h.access_control_max_age != 0
            || h.add_vary_header;
        if !any {
            return Ok(None);
        }
        let regexes = h
            .access_control_allow_origin_list_regex
            .iter()
            .map(|r| regex::Regex::new(r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Self {
            allow_credentials: h.access_control_allow_credentials,
            allow_headers: h.access_control_allow_headers.join(","),
            allow_methods: h.access_control_allow_methods.join(","),
            origins: h.access_control_allow_origin_list.clone(),
            regexes,
            expose_headers: h.access_control_expose_headers.join(","),
            max_age: h.access_control_max_age,
            add_vary: h.add_vary_header,
        }))
    }

    /// The `Access-Control-Allow-Origin` value for a request with this `Origin` (empty when the
    /// request has none), if the origin is allowed.
    pub(crate) fn allowed_origin(&self, origin: &str) -> Option<String> {
        if let Some(item) = self.origins.iter().find(|o| *o == "*" || *o == origin) {
            return Some(item.clone());
        }
        self.regexes
            .iter()
            .any(|re| re.is_match(origin))
            .then(|| origin.to_owned())
    }

    /// The headers of the answer to a preflight request (see [`is_preflight`]).
    pub(crate) fn preflight_headers(&self, request: &HeaderMap) -> HeaderMap {
        let mut out = HeaderMap::new();
        if self.allow_credentials {
            out.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        set(
            &mut out,
            header::ACCESS_CONTROL_ALLOW_HEADERS,
            &self.allow_headers,
        );
        set(
            &mut out,
            header::ACCESS_CONTROL_ALLOW_METHODS,
            &self.allow_methods,
        );
        if let Some(o) = self.allowed_origin(origin(request)) {
            set(&mut out, header::ACCESS_CONTROL_ALLOW_ORIGIN, &o);
        }
        out.insert(
            header::ACCESS_CONTROL_MAX_AGE,
            HeaderValue::from(self.max_age),
        );
        out
    }

    /// Adds the CORS headers to a response to a request that had `origin` (empty: none).
    pub(crate) fn apply(&self, origin: &str, response: &mut HeaderMap) {
        if let Some(o) = self.allowed_origin(origin) {
            set(response, header::ACCESS_CONTROL_ALLOW_ORIGIN, &o);
        }
        if self.allow_credentials {
            response.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        set(
            response,
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            &self.expose_headers,
        );
        if !self.add_vary {
            return;
        }
        // Go's `Header.Get` reads the first value and `Set` replaces them all.
        let first = response
            .get(header::VARY)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        if first == "Origin" {
            return;
        }
        let vary = if first.is_empty() {
            "Origin".to_owned()
        } else {
            format!("{first},Origin")
        };
        set(response, header::VARY, &vary);
    }
}

/// Sets `name` to `value` unless `value` is empty (or not a valid header value).
fn set(map: &mut HeaderMap, name: header::HeaderName, value: &str) {
    if value.is_empty() {
        return;
    }
    if let Ok(v) = HeaderValue::from_str(value) {
        map.insert(name, v);
    }
}

/// The request's `Origin` (first value), empty when absent or not text.
pub(crate) fn origin(request: &HeaderMap) -> &str {
    request
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

/// True for a CORS preflight: `OPTIONS` with a non-empty `Origin` and
/// `Access-Control-Request-Method`.
pub(crate) fn is_preflight(method: &Method, request: &HeaderMap) -> bool {
    let non_empty = |name| request.get(name).is_some_and(|v| !v.is_empty());
    *method == Method::OPTIONS
        && non_empty(header::ORIGIN)
        && non_empty(header::ACCESS_CONTROL_REQUEST_METHOD)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers() -> Headers {
        crate::middleware::test_support::plan_headers(serde_json::json!({}))
    }

    fn req(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut m = HeaderMap::new();
        for (k, v) in pairs {
            m.append(*k, HeaderValue::from_static(v));
        }
        m
    }

    fn get<'a>(m: &'a HeaderMap, k: &str) -> Option<&'a str> {
        m.get(k).and_then(|v| v.to_str().ok())
    }

    #[test]
    fn no_cors_option_means_no_cors() {
        assert!(Cors::from_plan(&headers()).unwrap().is_none());
        let mut h = headers();
        h.access_control_max_age = 1;
        assert!(Cors::from_plan(&h).unwrap().is_some());
        let mut h = headers();
        h.access_control_allow_origin_list_regex = vec!["a(b".into()];
        assert!(Cors::from_plan(&h).is_err());
    }

    #[test]
    fn preflight_detection_needs_options_origin_and_request_method() {
        let full = req(&[
            ("origin", "https://a.example"),
            ("access-control-request-method", "PUT"),
        ]);
        assert!(is_preflight(&Method::OPTIONS, &full));
        assert!(!is_preflight(&Method::GET, &full));
        assert!(!is_preflight(
            &Method::OPTIONS,
            &req(&[("origin", "https://a.example")])
        ));
        assert!(!is_preflight(
            &Method::OPTIONS,
            &req(&[("access-control-request-method", "PUT")])
        ));
    }

    #[test]
    fn preflight_answer_as_traefik() {
        let mut h = headers();
        h.access_control_allow_methods = vec!["GET".into(), "OPTIONS".into(), "PUT".into()];
        h.access_control_allow_origin_list = vec!["https://foo.bar.org".into()];
        h.access_control_max_age = 600;
        let c = Cors::from_plan(&h).unwrap().unwrap();
        let out = c.preflight_headers(&req(&[
            ("origin", "https://foo.bar.org"),
            ("access-control-request-method", "GET"),
        ]));
        assert_eq!(
            get(&out, "access-control-allow-origin"),
            Some("https://foo.bar.org")
        );
        assert_eq!(get(&out, "access-control-max-age"), Some("600"));
        assert_eq!(
            get(&out, "access-control-allow-methods"),
            Some("GET,OPTIONS,PUT")
        );
        assert_eq!(out.len(), 3, "{out:?}");

        // Another origin: no Allow-Origin, but Max-Age is always sent.
        let out = c.preflight_headers(&req(&[("origin", "https://evil.example")]));
        assert_eq!(get(&out, "access-control-allow-origin"), None);
        assert_eq!(get(&out, "access-control-max-age"), Some("600"));

        h.access_control_allow_origin_list = vec!["*".into()];
        h.access_control_allow_credentials = true;
        h.access_control_allow_headers = vec!["origin".into(), "X-Forwarded-For".into()];
        h.access_control_max_age = 0;
        let c = Cors::from_plan(&h).unwrap().unwrap();
        let out = c.preflight_headers(&req(&[("origin", "https://foo.bar.org")]));
        assert_eq!(get(&out, "access-control-allow-origin"), Some("*"));
        assert_eq!(get(&out, "access-control-allow-credentials"), Some("true"));
        assert_eq!(
            get(&out, "access-control-allow-headers"),
            Some("origin,X-Forwarded-For")
        );
        assert_eq!(get(&out, "access-control-max-age"), Some("0"));
    }

    #[test]
    fn origins_match_exactly_by_wildcard_or_unanchored_regex() {
        let mut h = headers();
        h.access_control_allow_origin_list = vec!["https://a.example".into()];
        h.access_control_allow_origin_list_regex = vec![r"([a-z]+)\.bar".into()];
        let c = Cors::from_plan(&h).unwrap().unwrap();
        assert_eq!(
            c.allowed_origin("https://a.example").as_deref(),
            Some("https://a.example")
        );
        assert_eq!(c.allowed_origin("https://A.example"), None);
        assert_eq!(c.allowed_origin("https://a.example.evil"), None);
        // Unanchored, as Go's MatchString: a partial match is enough and the origin is echoed.
        assert_eq!(
            c.allowed_origin("https://foo.bar.org").as_deref(),
            Some("https://foo.bar.org")
        );
        assert_eq!(c.allowed_origin("https://bar.org"), None);
        assert_eq!(c.allowed_origin(""), None);
    }

    #[test]
    fn responses_get_origin_credentials_expose_and_vary() {
        let mut h = headers();
        h.access_control_allow_origin_list = vec!["https://foo.bar.org".into()];
        h.add_vary_header = true;
        let c = Cors::from_plan(&h).unwrap().unwrap();
        let mut resp = HeaderMap::new();
        c.apply("https://foo.bar.org", &mut resp);
        assert_eq!(
            get(&resp, "access-control-allow-origin"),
            Some("https://foo.bar.org")
        );
        assert_eq!(get(&resp, "vary"), Some("Origin"));

        let mut resp = req(&[("vary", "Testing")]);
        c.apply("https://foo.bar.org", &mut resp);
        assert_eq!(get(&resp, "vary"), Some("Testing,Origin"));
        let mut resp = req(&[("vary", "Origin")]);
        c.apply("https://foo.bar.org", &mut resp);
        assert_eq!(resp.get_all("vary").iter().count(), 1);
        assert_eq!(get(&resp, "vary"), Some("Origin"));

        // Not allowed: no Allow-Origin (the server's is kept), but Vary all the same.
        let mut resp = req(&[("access-control-allow-origin", "https://server.example")]);
        c.apply("https://evil.example", &mut resp);
        assert_eq!(
            get(&resp, "access-control-allow-origin"),
            Some("https://server.example")
        );
        assert_eq!(get(&resp, "vary"), Some("Origin"));

        let mut h = headers();
        h.access_control_allow_origin_list = vec!["*".into()];
        h.access_control_allow_credentials = true;
        h.access_control_expose_headers = vec!["origin".into(), "X-Forwarded-For".into()];
        let c = Cors::from_plan(&h).unwrap().unwrap();
        // `*` replaces the server's value, and applies without an Origin too (as in Traefik).
        let mut resp = req(&[("access-control-allow-origin", "http://foo.bar.org")]);
        c.apply("", &mut resp);
        assert_eq!(get(&resp, "access-control-allow-origin"), Some("*"));
        assert_eq!(get(&resp, "access-control-allow-credentials"), Some("true"));
        assert_eq!(
            get(&resp, "access-control-expose-headers"),
            Some("origin,X-Forwarded-For")
        );
        assert_eq!(get(&resp, "vary"), None);
    }
}
