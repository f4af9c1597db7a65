//! `forwardAuth`: each request is first asked about at an authentication server, as Traefik 3.7
//! asks (`docs/traefik-behaviour/errors-forwardauth.md`).
//!
//! The auth request is a `GET` (or the request's method) to `address` as written, without body
//! unless `forwardBody` (then the body is read whole, up to `maxBodySize`, and sent to both),
//! carrying the request's fields as Traefik's entry point left them (with its forwarding fields)
//! minus hop-by-hop ones, its `X-Forwarded-*` handled by `trustForwardHeader`'s three modes, and
//! what Go's client adds (`User-Agent`, `Accept-Encoding: gzip` with transparent decoding). A 2xx
//! lets the request through with the listed fields of the answer replacing its own, and, when the
//! answer sets cookies, the client's answer gets its `Set-Cookie` lines rewritten
//! ([`cookie`], a response [`Stage`](super::Stage)). Any other answer is what the client gets
//! (a 401 may become a redirect to `authSigninURL`); an auth server that cannot be reached, a
//! 500 without body. 30 s for the whole exchange, as Go's client in Traefik.

use std::io::Read as _;
use std::time::Duration;

use bridge_plan::ForwardHeaderTrust;
use bytes::Bytes;
use http::{
    HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri, header,
};
use http_body_util::BodyExt as _;

use super::{Build, Flow, MiddlewareError, RequestCtx};
use crate::body::{Body, ReqBody};
use crate::http1::server::RequestBody;
use crate::proxy::forwarded_headers::{FORWARDED_HEADERS, is_forwarding};
use crate::transport::ServerClient;

pub(crate) mod cookie;

/// Go's client gives up on the whole exchange after this long (`http.Client.Timeout` in Traefik).
const TIMEOUT: Duration = Duration::from_secs(30);

/// The fields Traefik removes from the auth request (its own list: `Trailers`, not `Trailer`).
const HOP: [&str; 6] = [
    "connection",
    "keep-alive",
    "te",
    "trailers",
    "transfer-encoding",
    "upgrade",
];

/// What Go's client sends when a request has no `User-Agent`.
const GO_USER_AGENT: &str = "Go-http-client/1.1";

/// One built `forwardAuth`.
pub(crate) struct ForwardAuth {
    address: Uri,
    /// `address` as written (for resolving a relative `Location`).
    base: url::Url,
    host: HeaderValue,
    client: ServerClient<ReqBody>,
    trust: ForwardHeaderTrust,
    response_fields: Box<[HeaderName]>,
    response_regex: Option<regex::Regex>,
    /// Empty: every field.
    request_fields: Box<[HeaderName]>,
    cookies: Box<[Box<str>]>,
    header_field: Option<HeaderName>,
    max_response: Option<u64>,
    forward_body: bool,
    max_body: Option<u64>,
    preserve_location: bool,
    preserve_method: bool,
    signin: Option<String>,
}

impl std::fmt::Debug for ForwardAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForwardAuth")
            .field("address", &self.address)
            .field("trust", &self.trust)
            .finish_non_exhaustive()
    }
}

fn field_names(
    option: &'static str,
    names: &[String],
) -> Result<Box<[HeaderName]>, MiddlewareError> {
    names
        .iter()
        .map(|n| {
            HeaderName::from_bytes(n.as_bytes()).map_err(|_| MiddlewareError::Value {
                option,
                value: n.clone(),
            })
        })
        .collect()
}

impl ForwardAuth {
    pub(crate) fn from_plan(
        c: &bridge_plan::ForwardAuth,
        at: &mut Build<'_>,
    ) -> Result<Self, MiddlewareError> {
        let bad = |value: &str| MiddlewareError::Value {
            option: "forwardAuth.address",
            value: value.to_owned(),
        };
        let address: Uri = c.address.parse().map_err(|_| bad(&c.address))?;
        let base = url::Url::parse(&c.address).map_err(|_| bad(&c.address))?;
        let authority = address.authority().ok_or_else(|| bad(&c.address))?.as_str();
        let host = HeaderValue::from_str(authority).map_err(|_| bad(&c.address))?;
        // Go's default transport: 30 s to connect, 2 idle connections kept, 90 s idle.
        let transport = bridge_plan::ServersTransport {
            insecure_skip_verify: c.tls.insecure_skip_verify,
            root_cas: c.tls.ca.iter().cloned().collect(),
            max_idle_conns_per_host: 2,
            certificates: c.tls.certificate.iter().cloned().collect(),
            ..bridge_plan::ServersTransport::default()
        };
        let client = at.clients.client(
            &c.address,
            &format!("forwardAuth@{}", at.name),
            &transport,
            at.resolve,
        )?;
        let mut request_fields = field_names("authRequestHeaders", &c.auth_request_headers)?;
        if c.trust_forward_header == ForwardHeaderTrust::Trusted && !request_fields.is_empty() {
            // Traefik lets its forwarding fields through a list when it trusts them.
            let mut all = request_fields.into_vec();
            all.extend(FORWARDED_HEADERS.iter().cloned());
            request_fields = all.into();
        }
        Ok(Self {
            address,
            base,
            host,
            client,
            trust: c.trust_forward_header,
            response_fields: field_names("authResponseHeaders", &c.auth_response_headers)?,
            response_regex: c
                .auth_response_headers_regex
                .as_deref()
                .map(|r| super::compile("forwardAuth.authResponseHeadersRegex", r))
                .transpose()?,
            request_fields,
            cookies: c
                .add_auth_cookies_to_response
                .iter()
                .map(|n| n.as_str().into())
                .collect(),
            header_field: c
                .header_field
                .as_deref()
                .and_then(|h| HeaderName::from_bytes(h.as_bytes()).ok()),
            max_response: c.max_response_body_size,
            forward_body: c.forward_body,
            max_body: c.max_body_size,
            preserve_location: c.preserve_location_header,
            preserve_method: c.preserve_request_method,
            signin: c.auth_signin_url.clone(),
        })
    }

    /// The fields of the auth request, by Traefik's `writeHeader` (both trust modes) or
    /// `oldWriteHeader` (unset); `gzip` is whether Go's client would ask for gzip itself.
    fn auth_fields<B>(&self, req: &Request<B>, ctx: &RequestCtx<'_>) -> (HeaderMap, bool) {
        let mut f = req.headers().clone();
        f.remove(header::HOST);
        f.remove(header::CONTENT_LENGTH);
        if let Some(src) = &ctx.sources {
            for (name, value) in ctx.forwarded.visible(src) {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    f.insert(name, v);
                }
            }
        }
        for h in HOP {
            f.remove(h);
        }
        if self.trust == ForwardHeaderTrust::Untrusted {
            let names: Vec<HeaderName> = f.keys().filter(|k| is_forwarding(k)).cloned().collect();
            for n in names {
                f.remove(n);
            }
        }
        let had_agent = req.headers().contains_key(header::USER_AGENT);
        if !self.request_fields.is_empty() {
            let mut kept = HeaderMap::new();
            for n in &self.request_fields {
                for v in f.get_all(n) {
                    kept.append(n.clone(), v.clone());
                }
            }
            f = kept;
        }
        // Traefik blanks a missing User-Agent in both trust modes (Go then sends none); a
        // missing one, or one the list filtered out, is otherwise Go's own.
        let blanked = self.trust != ForwardHeaderTrust::Unset
            && !had_agent
            && (self.request_fields.is_empty()
                || self.request_fields.contains(&header::USER_AGENT));
        if !blanked && !f.contains_key(header::USER_AGENT) {
            f.insert(header::USER_AGENT, HeaderValue::from_static(GO_USER_AGENT));
        }
        let client_ip = ctx.peer.to_string();
        let xff = match self.trust {
            ForwardHeaderTrust::Trusted if f.contains_key("x-forwarded-for") => {
                let prior: Vec<&str> = f
                    .get_all("x-forwarded-for")
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .collect();
                format!("{}, {client_ip}", prior.join(", "))
            }
            _ => client_ip,
        };
        if let Ok(v) = HeaderValue::from_str(&xff) {
            f.insert("x-forwarded-for", v);
        }
        let method = req.method().as_str();
        let proto = if ctx.tls { "https" } else { "http" };
        let host = ctx.host.unwrap_or_default();
        let uri: &str = &ctx.path_and_query;
        let port = forwarded_port(host, &f, ctx.tls);
        let mut set = |name: &'static str, value: &str, always: bool| {
            if (always || !f.contains_key(name))
                && let Ok(v) = HeaderValue::from_str(value)
            {
                f.insert(name, v);
            }
        };
        let legacy = self.trust == ForwardHeaderTrust::Unset;
        set("x-forwarded-method", method, legacy);
        set("x-forwarded-proto", proto, legacy);
        if !legacy {
            set("x-forwarded-port", &port, false);
        }
        set("x-forwarded-host", host, legacy);
        set("x-forwarded-uri", uri, legacy);
        let gzip = !f.contains_key(header::ACCEPT_ENCODING) && !f.contains_key(header::RANGE);
        if gzip {
            f.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        }
        (f, gzip)
    }

    /// Asks the auth server about `req`; changes `req` on a 2xx.
    pub(crate) async fn apply<'a>(
        &'a self,
        req: &mut Request<RequestBody>,
        ctx: &mut RequestCtx<'a>,
    ) -> Flow {
        let (mut fields, gzip) = self.auth_fields(req, ctx);
        let method = if self.preserve_method {
            req.method().clone()
        } else {
            Method::GET
        };
        let deadline = tokio::time::Instant::now() + TIMEOUT;
        let mut body = crate::body::empty_request();
        if self.forward_body && !hyper::body::Body::is_end_stream(req.body()) {
            let read = tokio::time::timeout_at(deadline, read_body(req.body_mut(), self.max_body));
            match read.await {
                Ok(Ok(bytes)) => {
                    // The same bytes go to the auth server and then upstream.
                    fields.insert(header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
                    *req.body_mut() = RequestBody::Buffered(Some(bytes.clone()));
                    body = crate::body::full_request(bytes);
                }
                Ok(Err(Failure::TooLarge)) => {
                    tracing::debug!("forwardAuth: request body over maxBodySize");
                    return Flow::Respond(empty(StatusCode::UNAUTHORIZED));
                }
                Ok(Err(Failure::Exchange(why))) => {
                    tracing::debug!("forwardAuth: reading the request body: {why}");
                    return Flow::Respond(empty(StatusCode::INTERNAL_SERVER_ERROR));
                }
                Err(_) => return Flow::Respond(empty(StatusCode::INTERNAL_SERVER_ERROR)),
            }
        }
        let mut auth = Request::new(body);
        *auth.method_mut() = method;
        *auth.uri_mut() = self.address.clone();
        *auth.headers_mut() = fields;
        auth.headers_mut().insert(header::HOST, self.host.clone());
        let answer = match tokio::time::timeout_at(deadline, self.exchange(auth, gzip)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(Failure::TooLarge)) => return Flow::Respond(empty(StatusCode::UNAUTHORIZED)),
            Ok(Err(Failure::Exchange(why))) => {
                tracing::error!("forwardAuth: error calling {}: {why}", self.address);
                return Flow::Respond(empty(StatusCode::INTERNAL_SERVER_ERROR));
            }
            Err(_) => {
                tracing::error!(
                    "forwardAuth: error calling {}: no answer within 30 s",
                    self.address
                );
                return Flow::Respond(empty(StatusCode::INTERNAL_SERVER_ERROR));
            }
        };
        let (parts, body) = answer;
        if let Some(h) = &self.header_field
            && let Some(user) = parts.headers.get(h).and_then(|v| v.to_str().ok())
        {
            let user = user.to_owned();
            crate::observe::note(|s| s.user = Some(user));
        }
        if parts.status == StatusCode::UNAUTHORIZED
            && let Some(signin) = &self.signin
        {
            return Flow::Respond(self.signin_redirect(signin, ctx));
        }
        if !parts.status.is_success() {
            return Flow::Respond(self.refusal(parts, body));
        }
        self.let_through(&parts.headers, req, ctx);
        let cookies = cookies(&parts.headers);
        if !cookies.is_empty() {
            ctx.response
                .stages
                .push(super::Stage::AuthCookies(self, cookies));
        }
        Flow::Continue
    }

    /// Sends the auth request and reads its answer (Go's transparent gzip decoding included).
    async fn exchange(
        &self,
        auth: Request<ReqBody>,
        gzip: bool,
    ) -> Result<(http::response::Parts, Bytes), Failure> {
        let resp = self
            .client
            .send(auth, false, None)
            .await
            .map_err(|e| Failure::Exchange(crate::transport::error_text(&e)))?;
        let (mut parts, mut body) = resp.into_parts();
        let mut read: Vec<u8> = Vec::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| Failure::Exchange(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                read.extend_from_slice(&data);
                if self.max_response.is_some_and(|m| read.len() as u64 > m) {
                    return Err(Failure::TooLarge);
                }
            }
        }
        let encoded_gzip = parts
            .headers
            .get(header::CONTENT_ENCODING)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"gzip"));
        if gzip && encoded_gzip {
            let mut plain = Vec::new();
            flate2::read::MultiGzDecoder::new(&read[..])
                .read_to_end(&mut plain)
                .map_err(|e| Failure::Exchange(format!("gzip: {e}")))?;
            parts.headers.remove(header::CONTENT_ENCODING);
            parts.headers.remove(header::CONTENT_LENGTH);
            read = plain;
        }
        Ok((parts, Bytes::from(read)))
    }

    /// A 2xx: the listed fields (and those the expression finds) of the answer replace the
    /// request's.
    fn let_through<B>(&self, answer: &HeaderMap, req: &mut Request<B>, ctx: &mut RequestCtx<'_>) {
        let fields = req.headers_mut();
        for name in &self.response_fields {
            fields.remove(name);
            for v in answer.get_all(name) {
                fields.append(name.clone(), v.clone());
            }
            ctx.forwarded.forget(name);
        }
        if let Some(re) = &self.response_regex {
            let found = |n: &HeaderName| re.is_match(&bridge_plan::go_canonical_header(n.as_str()));
            let gone: Vec<HeaderName> = fields.keys().filter(|n| found(n)).cloned().collect();
            for n in gone {
                fields.remove(&n);
            }
            for (n, v) in answer {
                if found(n) {
                    fields.append(n.clone(), v.clone());
                    ctx.forwarded.forget(n);
                }
            }
        }
        ctx.fields_changed = true;
    }

    /// Any other answer: its status, fields (but hop-by-hop ones) and body, `Location` resolved.
    fn refusal(&self, parts: http::response::Parts, body: Bytes) -> Response<Body> {
        let mut fields = parts.headers;
        for h in HOP {
            fields.remove(h);
        }
        if let Some(loc) = fields.get(header::LOCATION).cloned() {
            let resolved = match loc.to_str() {
                Ok(l) if self.preserve_location => Some(l.to_owned()),
                Ok(l) => self.base.join(l).ok().map(String::from),
                Err(_) => None,
            };
            match resolved.and_then(|l| HeaderValue::from_str(&l).ok()) {
                Some(v) => {
                    fields.insert(header::LOCATION, v);
                }
                None => return empty(StatusCode::INTERNAL_SERVER_ERROR),
            }
        }
        if !fields.contains_key(header::CONTENT_LENGTH) {
            fields.insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
        }
        let mut resp = Response::new(crate::body::full(body));
        *resp.status_mut() = parts.status;
        *resp.headers_mut() = fields;
        resp
    }

    /// `http.Redirect` to `authSigninURL` as Traefik writes it: 302, no body (Traefik's entry
    /// point keeps Go from writing its little HTML page).
    fn signin_redirect(&self, signin: &str, ctx: &RequestCtx<'_>) -> Response<Body> {
        let mut resp = empty(StatusCode::FOUND);
        let path = ctx.path_and_query.split('?').next().unwrap_or("/");
        if let Ok(v) = HeaderValue::from_str(&go_redirect_target(signin, path)) {
            resp.headers_mut().insert(header::LOCATION, v);
        }
        resp
    }

    /// The cookie rewrite of a 2xx with cookies, on the client's answer.
    pub(crate) fn rewrite_cookies(&self, auth: &[cookie::Cookie], fields: &mut HeaderMap) {
        let listed = |name: &str| self.cookies.iter().any(|c| &**c == name);
        let theirs = cookies(fields);
        fields.remove(header::SET_COOKIE);
        for c in theirs.iter().filter(|c| !listed(&c.name)) {
            if let Ok(v) = HeaderValue::from_str(&c.to_header_value()) {
                fields.append(header::SET_COOKIE, v);
            }
        }
        for c in auth.iter().filter(|c| listed(&c.name)) {
            if let Ok(v) = HeaderValue::from_str(&c.to_header_value()) {
                fields.append(header::SET_COOKIE, v);
            }
        }
    }
}

/// Go's `Response.Cookies()`: the `Set-Cookie` lines it can parse, none at all past 3000 lines
/// (Go's `httpcookiemaxnum`).
fn cookies(fields: &HeaderMap) -> Vec<cookie::Cookie> {
    let lines = fields.get_all(header::SET_COOKIE);
    if lines.iter().count() > 3000 {
        return Vec::new();
    }
    lines
        .iter()
        .filter_map(|v| cookie::parse_set_cookie_bytes(v.as_bytes()))
        .collect()
}

/// The request body, whole; more than `max` bytes is [`Failure::TooLarge`].
async fn read_body(body: &mut RequestBody, max: Option<u64>) -> Result<Bytes, Failure> {
    let mut read: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| Failure::Exchange(e.to_string()))?;
        if let Ok(data) = frame.into_data() {
            read.extend_from_slice(&data);
            if max.is_some_and(|m| read.len() as u64 > m) {
                return Err(Failure::TooLarge);
            }
        }
    }
    Ok(Bytes::from(read))
}

/// Why the auth exchange gave no answer to use.
#[derive(Debug)]
enum Failure {
    /// The answer's body is over `maxResponseBodySize`.
    TooLarge,
    /// Connecting or the exchange failed.
    Exchange(String),
}

/// A status without body, with `Content-Length: 0`, as Go's server answers `WriteHeader` alone.
fn empty(status: StatusCode) -> Response<Body> {
    crate::body::answer(status, Bytes::new())
}

/// Traefik's `forwardedPort`: the `Host` port, else 443 for an https/wss proto or TLS, else 80.
fn forwarded_port(host: &str, fields: &HeaderMap, tls: bool) -> String {
    if let Some(p) = crate::proxy::forwarded_headers::host_port(host) {
        return p.to_string();
    }
    let proto = fields
        .get("x-forwarded-proto")
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if proto == b"https" || proto == b"wss" || tls {
        "443".into()
    } else {
        "80".into()
    }
}

/// Where Go's `http.Redirect` points for `target` from a request for `path`: an absolute URL
/// as it is; a path made absolute against the request's directory and cleaned (a trailing `/`
/// kept).
fn go_redirect_target(target: &str, path: &str) -> String {
    if url::Url::parse(target).is_ok() || target.starts_with("//") {
        return target.to_owned();
    }
    let (target_path, query) = match target.find('?') {
        Some(i) => (&target[..i], &target[i..]),
        None => (target, ""),
    };
    let joined = if target_path.starts_with('/') {
        target_path.to_owned()
    } else {
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{dir}{target_path}")
    };
    let trailing = joined.ends_with('/');
    let mut cleaned = clean_path(&joined);
    if trailing && !cleaned.ends_with('/') {
        cleaned.push('/');
    }
    cleaned + query
}

/// Go's `path.Clean` for an absolute path.
fn clean_path(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_forwarding_fields_in_any_spelling() {
        for n in [
            "x-forwarded-for",
            "x-real-ip",
            "x_forwarded_uri",
            "x-forwarded-prefix",
        ] {
            assert!(is_forwarding(&HeaderName::from_static(n)), "{n}");
        }
        for n in ["x-forwarded-user", "x-auth-user", "forwarded"] {
            assert!(!is_forwarding(&HeaderName::from_static(n)), "{n}");
        }
    }

    #[test]
    fn redirect_targets_as_go_writes_them() {
        for (target, path, want) in [
            (
                "https://signin.example/login?rd=1",
                "/a/b",
                "https://signin.example/login?rd=1",
            ),
            ("/login", "/a/b", "/login"),
            ("login", "/a/b", "/a/login"),
            ("../up/", "/a/b/c", "/a/up/"),
            ("login?x=1", "/", "/login?x=1"),
        ] {
            assert_eq!(
                go_redirect_target(target, path),
                want,
                "{target} from {path}"
            );
        }
    }

    #[test]
    fn canonical_names_for_the_expression() {
        assert_eq!(bridge_plan::go_canonical_header("x-rx-one"), "X-Rx-One");
        assert_eq!(
            bridge_plan::go_canonical_header("www-authenticate"),
            "Www-Authenticate"
        );
    }
}
