//! Traefik's HTTP middlewares as values built once from the plan.
//!
//! Each kind has its own module with a `from_plan` that does all parsing and validation at load
//! (regexes, header names and values, CIDRs, users, CORS lists) and an `apply` on the request and
//! a [`RequestCtx`], without sockets, so each is table-tested beside its code. A router holds its
//! chain already resolved ([`Chain`]); [`run`] walks it in order. What a middleware decides for
//! the response (headers, HSTS, CORS) is recorded in [`ResponseEdits`] and applied to whatever
//! answers — the server or an internal service — after the request came back.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderMap, Request, Response, header};

use crate::body::Body;
use crate::proxy::forwarded_headers::Forwarded;

pub(crate) mod basic_auth;
pub(crate) mod buffering;
pub(crate) mod circuit_breaker;
pub(crate) mod compress;
pub(crate) mod content_type;
pub(crate) mod cors;
pub(crate) mod digest_auth;
pub(crate) mod encoded_characters;
pub(crate) mod errors;
pub(crate) mod forward_auth;
pub(crate) mod grpc_web;
pub(crate) mod headers;
pub(crate) mod in_flight;
pub(crate) mod ip_allow_list;
pub(crate) mod pass_tls_client_cert;
pub(crate) mod path;
pub(crate) mod rate_limit;
pub(crate) mod redirect;
pub(crate) mod retry;
pub(crate) mod source;

/// Why a middleware of the plan cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum MiddlewareError {
    /// A basicAuth middleware's users could not be loaded.
    #[error(transparent)]
    Auth(#[from] basic_auth::AuthError),
    /// A middleware names a service the plan does not have.
    #[error("{option} names service `{service}`, which the plan does not have")]
    UnknownService {
        /// The option holding the name.
        option: &'static str,
        /// The name.
        service: String,
    },
    /// A value the compiler accepted is not valid here.
    #[error("{option}: `{value}` is not valid")]
    Value {
        /// The option holding it.
        option: &'static str,
        /// The value as written in the plan.
        value: String,
    },
    /// A client for a server a middleware calls cannot be set up.
    #[error(transparent)]
    Client(#[from] crate::transport::TransportError),
    /// A regular expression the compiler accepted does not compile here.
    #[error("{field} `{regex}` does not compile: {source}")]
    Regex {
        /// The option holding it.
        field: &'static str,
        /// The expression as written in the plan.
        regex: String,
        /// What the regex engine said.
        source: regex::Error,
    },
}

/// Compiles an expression of the plan; `field` names the option in the error.
pub(crate) fn compile(field: &'static str, regex: &str) -> Result<regex::Regex, MiddlewareError> {
    regex::Regex::new(regex).map_err(|source| MiddlewareError::Regex {
        field,
        regex: regex.to_owned(),
        source,
    })
}

/// What building a middleware needs besides its plan entry.
pub(crate) struct Build<'a> {
    /// The middleware's key (names its client's TLS settings in errors).
    pub(crate) name: &'a str,
    /// Resolves the services a middleware sends requests to itself (`errors`).
    pub(crate) service_id: &'a dyn Fn(&str) -> Option<crate::upstream::ServiceId>,
    /// Clients for the servers a middleware calls itself (`forwardAuth`).
    pub(crate) clients: &'a mut crate::transport::ClientFactory,
    /// `--resolve` pins.
    pub(crate) resolve: &'a std::collections::HashMap<String, IpAddr>,
}

impl std::fmt::Debug for Build<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Build")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// One built middleware.
#[derive(Debug)]
pub(crate) enum Middleware {
    BasicAuth(basic_auth::BasicAuth),
    StripPrefix(path::StripPrefix),
    StripPrefixRegex(path::StripPrefixRegex),
    AddPrefix(path::AddPrefix),
    ReplacePath(path::ReplacePath),
    ReplacePathRegex(path::ReplacePathRegex),
    RedirectScheme(redirect::RedirectScheme),
    RedirectRegex(redirect::RedirectRegex),
    IpAllowList(ip_allow_list::IpAllowList),
    Retry(retry::Retry),
    Headers(headers::Headers),
    Errors(errors::ErrorPages),
    RateLimit(rate_limit::RateLimit),
    InFlight(in_flight::InFlight),
    Compress(compress::Compress),
    /// `contentType`: sniff untyped answers (`false`: Traefik's `autoDetect: false`, a no-op).
    ContentType(bool),
    // Boxed: its client (pools, TLS settings) is many times the size of every other kind.
    ForwardAuth(Box<forward_auth::ForwardAuth>),
    CircuitBreaker(circuit_breaker::CircuitBreaker),
    EncodedCharacters(encoded_characters::Denied),
    PassTlsClientCert(pass_tls_client_cert::PassClientCert),
    DigestAuth(digest_auth::DigestAuth),
    /// `buffering`: the chain stops here ([`Ran::Buffer`]); the proxy runs the rest per attempt.
    Buffering(buffering::Buffering),
    GrpcWeb(grpc_web::GrpcWeb),
}

/// A router's middlewares in chain order, shared with every other router that names them (a
/// basicAuth's cache of successful checks is one per middleware, as in Traefik).
pub(crate) type Chain = Box<[Arc<Middleware>]>;

/// What a middleware tells the chain.
#[derive(Debug)]
pub(crate) enum Flow {
    /// Go on with the next middleware, then the service.
    Continue,
    /// Answer with this; the rest of the chain and the service are skipped.
    Respond(Response<Body>),
    /// Wait this long, then go on (rateLimit's short delays).
    Wait(std::time::Duration),
}

/// What the middlewares of one request read and change, besides the request itself.
#[derive(Debug)]
pub(crate) struct RequestCtx<'a> {
    /// The connection is TLS (`https` for redirects, HSTS).
    pub(crate) tls: bool,
    /// The request's host (absolute-form authority, else `Host`), as the router saw it.
    pub(crate) host: Option<&'a str>,
    /// The client's address on this connection.
    pub(crate) peer: IpAddr,
    /// Path and query as the server will receive them; borrowed until a middleware rewrites it.
    pub(crate) path_and_query: Cow<'a, str>,
    /// The forwarding fields the proxy will add; a headers middleware's own value wins.
    pub(crate) forwarded: Forwarded,
    /// A middleware changed request fields that decide how the request is carried.
    pub(crate) fields_changed: bool,
    /// How often a request that could not reach a server is tried.
    pub(crate) retry: retry::Retry,
    /// What the middlewares do to the response.
    pub(crate) response: ResponseEdits<'a>,
    /// inFlightReq places this request holds until its answer is sent (or its tunnel closed).
    pub(crate) slots: Vec<in_flight::Slot>,
    /// Where the forwarding fields' values come from (`forwardAuth` sends them as the request
    /// has them); `None` in unit tests.
    pub(crate) sources: Option<crate::proxy::forwarded_headers::Sources<'a>>,
    /// The certificates the client sent on its TLS connection, leaf first.
    pub(crate) client_certs: Option<&'a [rustls_pki_types::CertificateDer<'static>]>,
}

impl<'a> RequestCtx<'a> {
    /// The context of a request before its chain runs.
    #[inline]
    pub(crate) fn new(
        tls: bool,
        host: Option<&'a str>,
        peer: IpAddr,
        path_and_query: &'a str,
        forwarded: Forwarded,
    ) -> Self {
        RequestCtx {
            tls,
            host,
            peer,
            path_and_query: Cow::Borrowed(path_and_query),
            forwarded,
            fields_changed: false,
            retry: retry::Retry::DEFAULT,
            response: ResponseEdits::default(),
            slots: Vec::new(),
            sources: None,
            client_certs: None,
        }
    }

    /// `http` or `https`, as the request arrived.
    pub(crate) fn scheme(&self) -> &'static str {
        if self.tls { "https" } else { "http" }
    }
}

/// The response side of the chain, applied in Traefik's order once an answer exists: the
/// headers middlewares innermost first (so the outermost's value of a field wins, as each
/// Traefik middleware edits the answer when it passes back through it), each with its
/// security headers and HSTS, then its custom fields, then CORS; then the [`Stage`]s,
/// innermost first, which may replace or wrap the answer (also one a middleware gave itself).
#[derive(Debug, Default)]
pub(crate) struct ResponseEdits<'a> {
    /// In chain order; applied in reverse.
    pub(crate) headers: Vec<HeadersEdit<'a>>,
    /// The entry point's `Alt-Svc` value (HTTP/3), put before the answer's own values and the
    /// edits, as Traefik sets it before its handler runs.
    pub(crate) alt_svc: Option<http::HeaderValue>,
    /// In chain order; applied in reverse.
    pub(crate) stages: Vec<Stage<'a>>,
    /// A `contentType` middleware asked for Go's sniffing of an untyped answer (done last, as
    /// Go's server does it when the answer is written).
    pub(crate) sniff: bool,
}

/// What a middleware does to the answer that comes back through it.
#[derive(Debug)]
pub(crate) enum Stage<'a> {
    /// `errors`: the request as it was at the middleware, for the page request.
    Errors(ErrorsAt<'a>),
    /// `compress`: what the request's negotiation chose.
    Compress(&'a compress::Compress, compress::Choice),
    /// `circuitBreaker` forwarded the request at this instant: the answer that comes back is
    /// measured.
    Breaker(&'a circuit_breaker::CircuitBreaker, tokio::time::Instant),
    /// `forwardAuth` let the request through with an answer that set cookies: the client's
    /// answer gets its `Set-Cookie` lines rewritten.
    AuthCookies(
        &'a forward_auth::ForwardAuth,
        Vec<forward_auth::cookie::Cookie>,
    ),
    /// `grpcWeb` translated the request: the answer goes back as gRPC-Web.
    GrpcWeb(grpc_web::Translated),
}

/// An `errors` middleware and the request as it reached it.
#[derive(Debug)]
pub(crate) struct ErrorsAt<'a> {
    pub(crate) pages: &'a errors::ErrorPages,
    /// The fields the page request carries.
    pub(crate) fields: HeaderMap,
    /// Path and query at the middleware, when the query uses `{url}` (else empty).
    pub(crate) path_and_query: String,
    /// The forwarding fields at the middleware.
    pub(crate) forwarded: Forwarded,
}

/// Puts `value` first among the values of `name` (Go's `Header.Set` before the answer's own
/// `Header.Add`s).
pub(crate) fn prepend(fields: &mut HeaderMap, name: http::HeaderName, value: &http::HeaderValue) {
    let rest: Vec<http::HeaderValue> = fields.get_all(&name).iter().cloned().collect();
    fields.insert(name.clone(), value.clone());
    for v in rest {
        fields.append(name.clone(), v);
    }
}

/// A `headers` middleware a request went through, with what it decided for the answer.
#[derive(Debug)]
pub(crate) struct HeadersEdit<'a> {
    pub(crate) headers: &'a headers::Headers,
    /// HSTS applies (HTTPS, a matching `sslProxyHeaders`, or `forceSTSHeader`).
    pub(crate) sts: bool,
    /// `Public-Key-Pins` applies (HTTPS).
    pub(crate) hpkp: bool,
    /// The request's `Origin`, when the middleware does CORS.
    pub(crate) origin: Option<String>,
}

impl ResponseEdits<'_> {
    /// Applies the edits to an answer's fields (inlined: a chain without headers middlewares,
    /// every request of a router without middlewares, pays one check).
    #[inline]
    pub(crate) fn apply(&self, fields: &mut HeaderMap) {
        if self.headers.is_empty() {
            return;
        }
        self.apply_all(fields);
    }

    /// [`ResponseEdits::apply`] to an answer of the chain, with the entry point's `Alt-Svc`
    /// first; the answer is marked so it is not added again.
    #[inline]
    pub(crate) fn apply_to<B>(&self, resp: &mut Response<B>) {
        if let Some(v) = &self.alt_svc {
            prepend(resp.headers_mut(), header::ALT_SVC, v);
            resp.extensions_mut().insert(crate::proxy::AltSvcDone);
        }
        self.apply(resp.headers_mut());
    }

    fn apply_all(&self, fields: &mut HeaderMap) {
        for at in self.headers.iter().rev() {
            at.headers.respond(at, fields);
        }
    }
}

impl Middleware {
    /// Builds the middleware the plan describes.
    pub(crate) fn from_plan(
        m: &bridge_plan::Middleware,
        at: &mut Build<'_>,
    ) -> Result<Self, MiddlewareError> {
        let service_id = at.service_id;
        use bridge_plan::MiddlewareKind as K;
        // Exhaustive: a kind the plan gains fails to compile here until it is served.
        Ok(match &m.kind {
            K::BasicAuth(c) => Self::BasicAuth(basic_auth::BasicAuth::from_plan(c)?),
            K::StripPrefix(c) => Self::StripPrefix(path::StripPrefix::from_plan(c)),
            K::StripPrefixRegex(c) => Self::StripPrefixRegex(path::StripPrefixRegex::from_plan(c)?),
            K::AddPrefix(c) => Self::AddPrefix(path::AddPrefix::from_plan(c)),
            K::ReplacePath(c) => Self::ReplacePath(path::ReplacePath::from_plan(c)),
            K::ReplacePathRegex(c) => Self::ReplacePathRegex(path::ReplacePathRegex::from_plan(c)?),
            K::RedirectScheme(c) => Self::RedirectScheme(redirect::RedirectScheme::from_plan(c)),
            K::RedirectRegex(c) => Self::RedirectRegex(redirect::RedirectRegex::from_plan(c)?),
            K::IpAllowList(c) => Self::IpAllowList(ip_allow_list::IpAllowList::from_plan(c)),
            K::Retry(c) => Self::Retry(retry::Retry::from_plan(c)),
            K::Headers(c) => Self::Headers(headers::Headers::from_plan(c)?),
            K::Errors(c) => Self::Errors(errors::ErrorPages::from_plan(c, service_id)?),
            K::RateLimit(c) => Self::RateLimit(rate_limit::RateLimit::from_plan(c)?),
            K::InFlightReq(c) => Self::InFlight(in_flight::InFlight::from_plan(c)?),
            K::Compress(c) => Self::Compress(compress::Compress::from_plan(c)),
            K::ContentType(c) => Self::ContentType(c.detect),
            K::ForwardAuth(c) => {
                Self::ForwardAuth(Box::new(forward_auth::ForwardAuth::from_plan(c, at)?))
            }
            K::CircuitBreaker(c) => {
                Self::CircuitBreaker(circuit_breaker::CircuitBreaker::from_plan(c)?)
            }
            K::EncodedCharacters(c) => Self::EncodedCharacters(encoded_characters::Denied::of(c)),
            K::DigestAuth(c) => Self::DigestAuth(digest_auth::DigestAuth::from_plan(c)?),
            K::PassTlsClientCert(c) => {
                Self::PassTlsClientCert(pass_tls_client_cert::PassClientCert::from_plan(c))
            }
            K::Buffering(c) => Self::Buffering(buffering::Buffering::from_plan(c)),
            K::GrpcWeb(c) => Self::GrpcWeb(grpc_web::GrpcWeb::from_plan(c)),
        })
    }

    /// Kinds whose state is one per router, as Traefik builds them (two routers naming one
    /// rateLimit do not share its buckets, nor two naming one circuitBreaker its state).
    pub(crate) fn per_router(kind: &bridge_plan::MiddlewareKind) -> bool {
        use bridge_plan::MiddlewareKind as K;
        matches!(
            kind,
            K::RateLimit(_) | K::InFlightReq(_) | K::CircuitBreaker(_) | K::DigestAuth(_)
        )
    }

    /// Applies every kind that decides without waiting (all but basicAuth, whose hash check may
    /// run on a blocking thread: see [`run`]).
    fn apply_now<'a, B>(&'a self, req: &mut Request<B>, ctx: &mut RequestCtx<'a>) -> Flow {
        match self {
            Self::BasicAuth(_) | Self::ForwardAuth(_) | Self::Buffering(_) | Self::GrpcWeb(_) => {
                Flow::Continue
            }
            Self::StripPrefix(m) => m.apply(req.headers_mut(), ctx),
            Self::StripPrefixRegex(m) => m.apply(req.headers_mut(), ctx),
            Self::AddPrefix(m) => m.apply(ctx),
            Self::ReplacePath(m) => m.apply(req.headers_mut(), ctx),
            Self::ReplacePathRegex(m) => m.apply(req.headers_mut(), ctx),
            Self::RedirectScheme(m) => m.apply(req.method(), ctx),
            Self::RedirectRegex(m) => m.apply(req.method(), ctx),
            Self::IpAllowList(m) => m.apply(req.headers(), ctx),
            Self::Retry(m) => {
                ctx.retry = *m;
                Flow::Continue
            }
            Self::Headers(m) => m.apply(req, ctx),
            Self::RateLimit(m) => {
                let key = m.source.key(ctx.peer, req.headers(), ctx.host);
                match m.decide(key, tokio::time::Instant::now()) {
                    rate_limit::Decision::Pass => Flow::Continue,
                    rate_limit::Decision::Wait(d) => Flow::Wait(d),
                    rate_limit::Decision::Refuse(d) => {
                        Flow::Respond(rate_limit::RateLimit::refusal(d))
                    }
                }
            }
            Self::InFlight(m) => {
                let key = m.source.key(ctx.peer, req.headers(), ctx.host);
                match m.acquire(key) {
                    Some(slot) => {
                        ctx.slots.push(slot);
                        Flow::Continue
                    }
                    None => Flow::Respond(m.refusal()),
                }
            }
            Self::CircuitBreaker(m) => {
                let now = tokio::time::Instant::now();
                match m.gate(now) {
                    circuit_breaker::Gate::Fallback => Flow::Respond(m.fallback()),
                    circuit_breaker::Gate::Forward => {
                        ctx.response.stages.push(Stage::Breaker(m, now));
                        Flow::Continue
                    }
                }
            }
            Self::ContentType(on) => {
                ctx.response.sniff |= *on;
                Flow::Continue
            }
            Self::DigestAuth(m) => {
                let method = req.method().clone();
                m.apply(&method, &ctx.path_and_query, req.headers_mut())
            }
            Self::PassTlsClientCert(m) => {
                m.apply(req.headers_mut(), ctx.client_certs);
                Flow::Continue
            }
            Self::EncodedCharacters(denied) => {
                let path = ctx.path_and_query.split('?').next().unwrap_or_default();
                if denied.refuses(path) {
                    Flow::Respond(encoded_characters::refusal())
                } else {
                    Flow::Continue
                }
            }
            Self::Compress(m) => {
                let choice = m.choose(req.method(), req.headers());
                if choice != compress::Choice::Pass {
                    ctx.response.stages.push(Stage::Compress(m, choice));
                }
                Flow::Continue
            }
            Self::Errors(pages) => {
                ctx.response.stages.push(Stage::Errors(ErrorsAt {
                    pages,
                    fields: pages.fields(req.headers()),
                    path_and_query: if pages.wants_url() {
                        ctx.path_and_query.clone().into_owned()
                    } else {
                        String::new()
                    },
                    forwarded: ctx.forwarded.clone(),
                }));
                Flow::Continue
            }
        }
    }
}

/// How a chain ended.
#[derive(Debug)]
pub(crate) enum Ran<'a> {
    /// Every middleware let the request through: on to the service.
    Through,
    /// A middleware answered itself.
    Answered(Response<Body>),
    /// A `buffering` middleware is next; the chain goes on at `rest` (an index into the chain
    /// given to [`run`]) for each of its attempts.
    Buffer(&'a buffering::Buffering, usize),
}

/// Runs `chain` on a request, up to its end, an answer, or a `buffering` middleware.
pub(crate) async fn run<'a>(
    chain: &'a [Arc<Middleware>],
    req: &mut Request<crate::http1::server::RequestBody>,
    ctx: &mut RequestCtx<'a>,
) -> Ran<'a> {
    for (i, m) in chain.iter().enumerate() {
        let flow = match &**m {
            // Boxed: the hash check's state would make every request's future larger.
            Middleware::BasicAuth(a) => Box::pin(a.apply(req.headers_mut())).await,
            Middleware::ForwardAuth(a) => Box::pin(a.apply(req, ctx)).await,
            // An upgrade has no body to read and its answer is a tunnel: oxy passes it on (only
            // a request that switches protocols keeps its `Upgrade` field this far).
            Middleware::Buffering(_) if req.headers().contains_key(header::UPGRADE) => {
                Flow::Continue
            }
            Middleware::Buffering(b) => return Ran::Buffer(b, i + 1),
            Middleware::GrpcWeb(g) => g.apply(req, ctx),
            other => other.apply_now(req, ctx),
        };
        match flow {
            Flow::Continue => {}
            Flow::Respond(r) => return Ran::Answered(r),
            // Boxed: most requests never wait, and the timer would make every future larger.
            Flow::Wait(d) => Box::pin(tokio::time::sleep(d)).await,
        }
    }
    Ran::Through
}

#[cfg(test)]
pub(crate) mod test_support {
    use std::future::Future;

    use super::*;

    /// A context for a plain-HTTP request from 192.0.2.1 for `host` and `pq`.
    pub(crate) fn ctx<'a>(host: Option<&'a str>, pq: &'a str) -> RequestCtx<'a> {
        RequestCtx::new(
            false,
            host,
            IpAddr::from([192, 0, 2, 1]),
            pq,
            Forwarded::default(),
        )
    }

    /// A plan `headers` middleware with every option at its default, `overrides` applied.
    pub(crate) fn plan_headers(overrides: serde_json::Value) -> bridge_plan::Headers {
        let mut base = serde_json::json!({
            "custom_request_headers": {}, "custom_response_headers": {}, "sts_seconds": 0,
            "sts_include_subdomains": false, "sts_preload": false, "force_sts_header": false,
            "frame_deny": false, "custom_frame_options_value": null, "content_type_nosniff": false,
            "browser_xss_filter": false, "content_security_policy": null, "referrer_policy": null,
            "permissions_policy": null, "access_control_allow_credentials": false,
            "access_control_allow_headers": [], "access_control_allow_methods": [],
            "access_control_allow_origin_list": [], "access_control_allow_origin_list_regex": [],
            "access_control_expose_headers": [], "access_control_max_age": 0,
            "add_vary_header": false
        });
        for (k, v) in overrides.as_object().into_iter().flatten() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    /// The body of an answer, as text.
    pub(crate) fn body_text(resp: Response<Body>) -> String {
        use http_body_util::BodyExt as _;
        let bytes = block_on(resp.into_body().collect())
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    fn block_on<F: Future>(f: F) -> F::Output {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .map(|rt| rt.block_on(f))
            .unwrap_or_else(|e| panic!("test runtime: {e}"))
    }
}
