//! Redirects: the `redirectScheme` and `redirectRegex` middlewares and an entry point's
//! `http.redirections.entryPoint`, with Traefik's status choice (permanent: 301 for GET/HEAD,
//! 308 otherwise; else 302 / 307) and its body (the status's reason phrase).

use http::{HeaderValue, Method, Response, StatusCode, header};

use super::{Flow, MiddlewareError, RequestCtx};
use crate::body::Body;

/// `redirectScheme`: a request that did not arrive with `scheme` is sent there.
#[derive(Debug)]
pub(crate) struct RedirectScheme {
    scheme: String,
    /// `:port` when the location carries one (not the scheme's default).
    port: String,
    permanent: bool,
}

/// `redirectRegex`: the request URL (`scheme://host/path?query`) matched against `regex` is
/// rewritten with `replacement`; a rewrite that changes it is a redirect.
#[derive(Debug)]
pub(crate) struct RedirectRegex {
    regex: regex::Regex,
    replacement: String,
    permanent: bool,
}

impl RedirectScheme {
    pub(crate) fn from_plan(c: &bridge_plan::RedirectScheme) -> Self {
        let scheme = c.scheme.as_str();
        let port = c
            .port
            .as_deref()
            .filter(|p| !((scheme == "https" && *p == "443") || (scheme == "http" && *p == "80")))
            .map_or_else(String::new, |p| format!(":{p}"));
        Self {
            scheme: c.scheme.clone(),
            port,
            permanent: c.permanent,
        }
    }

    pub(crate) fn apply(&self, method: &Method, ctx: &RequestCtx<'_>) -> Flow {
        if self.scheme == ctx.scheme() {
            return Flow::Continue;
        }
        let bare = without_port(ctx.host.unwrap_or(""));
        let location = format!(
            "{}://{bare}{}{}",
            self.scheme, self.port, ctx.path_and_query
        );
        Flow::Respond(redirect(&location, self.permanent, method))
    }
}

impl RedirectRegex {
    pub(crate) fn from_plan(c: &bridge_plan::RedirectRegex) -> Result<Self, MiddlewareError> {
        Ok(Self {
            regex: super::compile("regex", &c.regex)?,
            replacement: c.replacement.clone(),
            permanent: c.permanent,
        })
    }

    pub(crate) fn apply(&self, method: &Method, ctx: &RequestCtx<'_>) -> Flow {
        let url = format!(
            "{}://{}{}",
            ctx.scheme(),
            ctx.host.unwrap_or(""),
            ctx.path_and_query
        );
        if !self.regex.is_match(&url) {
            return Flow::Continue;
        }
        let location = self.regex.replace(&url, self.replacement.as_str());
        if location == url {
            return Flow::Continue;
        }
        Flow::Respond(redirect(&location, self.permanent, method))
    }
}

/// An entry point's redirection, answered before routing; `pq` is the request's path and query.
pub(crate) fn entry_point(
    r: &bridge_plan::Redirect,
    host: Option<&str>,
    method: &Method,
    pq: &str,
) -> Response<Body> {
    let host = without_port(host.unwrap_or(""));
    let default_port = if r.scheme == "https" { 443 } else { 80 };
    let location = if r.port == default_port {
        format!("{}://{host}{pq}", r.scheme)
    } else {
        format!("{}://{host}:{}{pq}", r.scheme, r.port)
    };
    let mut resp = redirect(&location, r.permanent, method);
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// Traefik's redirect status: permanent ⇒ 301 for GET/HEAD, 308 otherwise; else 302 / 307.
pub(crate) fn status(permanent: bool, method: &Method) -> StatusCode {
    let get = method == Method::GET || method == Method::HEAD;
    match (permanent, get) {
        (true, true) => StatusCode::MOVED_PERMANENTLY,
        (true, false) => StatusCode::PERMANENT_REDIRECT,
        (false, true) => StatusCode::FOUND,
        (false, false) => StatusCode::TEMPORARY_REDIRECT,
    }
}

fn redirect(location: &str, permanent: bool, method: &Method) -> Response<Body> {
    let status = status(permanent, method);
    let mut resp = crate::body::answer(status, status.canonical_reason().unwrap_or(""));
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// A host without its port: `example.com:8080` → `example.com`, `[::1]:80` → `[::1]`.
pub(crate) fn without_port(host: &str) -> &str {
    if let Some(end) = host.rfind(']') {
        return &host[..=end];
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_support::{body_text, ctx};

    fn respond(flow: Flow) -> Response<Body> {
        match flow {
            Flow::Respond(r) => r,
            Flow::Continue | Flow::Wait(_) => panic!("expected an answer"),
        }
    }

    #[test]
    fn the_redirect_status_follows_permanence_and_method() {
        for (permanent, method, want) in [
            (true, Method::GET, 301),
            (true, Method::HEAD, 301),
            (true, Method::POST, 308),
            (false, Method::GET, 302),
            (false, Method::PUT, 307),
        ] {
            assert_eq!(
                status(permanent, &method).as_u16(),
                want,
                "{permanent} {method}"
            );
        }
    }

    #[test]
    fn hosts_lose_their_port_but_keep_ipv6_brackets() {
        for (host, want) in [
            ("example.com", "example.com"),
            ("example.com:8080", "example.com"),
            ("[::1]:80", "[::1]"),
            ("[::1]", "[::1]"),
            ("10.0.0.1:1", "10.0.0.1"),
            ("", ""),
        ] {
            assert_eq!(without_port(host), want);
        }
    }

    #[test]
    fn redirect_scheme_sends_plain_requests_to_https_without_the_default_port() {
        for (port, want) in [
            (None, "https://app.example/a?b"),
            (Some("443"), "https://app.example/a?b"),
            (Some("8443"), "https://app.example:8443/a?b"),
        ] {
            let m = RedirectScheme::from_plan(&bridge_plan::RedirectScheme {
                scheme: "https".into(),
                port: port.map(str::to_owned),
                permanent: true,
            });
            let c = ctx(Some("app.example:80"), "/a?b");
            let r = respond(m.apply(&Method::GET, &c));
            assert_eq!(r.status(), 301);
            assert_eq!(r.headers()[header::LOCATION], want);
            assert_eq!(body_text(r), "Moved Permanently");
        }
    }

    #[test]
    fn redirect_scheme_lets_requests_that_arrived_with_the_scheme_through() {
        let m = RedirectScheme::from_plan(&bridge_plan::RedirectScheme {
            scheme: "https".into(),
            port: None,
            permanent: false,
        });
        let mut c = ctx(Some("app.example"), "/");
        c.tls = true;
        assert!(matches!(m.apply(&Method::GET, &c), Flow::Continue));
    }

    #[test]
    fn redirect_regex_redirects_only_when_the_rewrite_changes_the_url() {
        let m = RedirectRegex::from_plan(&bridge_plan::RedirectRegex {
            regex: "^http://old\\.example/(.*)".into(),
            replacement: "https://new.example/${1}".into(),
            permanent: false,
        })
        .unwrap();
        let c = ctx(Some("old.example"), "/x?y");
        let r = respond(m.apply(&Method::POST, &c));
        assert_eq!(r.status(), 307);
        assert_eq!(r.headers()[header::LOCATION], "https://new.example/x?y");
        let c = ctx(Some("other.example"), "/x");
        assert!(matches!(m.apply(&Method::GET, &c), Flow::Continue));

        let same = RedirectRegex::from_plan(&bridge_plan::RedirectRegex {
            regex: ".*".into(),
            replacement: "$0".into(),
            permanent: false,
        })
        .unwrap();
        let c = ctx(Some("a"), "/");
        assert!(matches!(same.apply(&Method::GET, &c), Flow::Continue));
    }

    #[test]
    fn an_entry_point_redirect_keeps_path_and_query_and_names_a_non_default_port() {
        let r = entry_point(
            &bridge_plan::Redirect {
                scheme: "https".into(),
                port: 8443,
                permanent: true,
                priority: i64::MAX - 1,
            },
            Some("[::1]:8080"),
            &Method::GET,
            "/p?q=1",
        );
        assert_eq!(r.status(), 301);
        assert_eq!(r.headers()[header::LOCATION], "https://[::1]:8443/p?q=1");
        assert_eq!(
            r.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
    }
}
