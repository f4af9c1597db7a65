//! The request path above the codecs, as explicit phases over one request:
//!
//! 1. **accept** — the field checks every request passes ([`strict`]);
//! 2. **arrive** — the entry point's step: hop-by-hop fields leave, forged forwarding fields are
//!    removed and the proxy's decided ([`forwarded_headers`]);
//! 3. **route** — the entry point's redirect and internal routes, then its route table;
//! 4. **middlewares** — the router's built chain ([`crate::middleware`]);
//! 5. **pick, forward / upgrade, retry** — [`forward`], with request mirroring ([`mirror`]);
//! 6. **respond** — the chain's response edits, then its stages innermost first (`errors`
//!    replaces a caught answer by its page service's, `compress` encodes the body);
//! 7. **observe** — metrics and the access log when the response body ends
//!    ([`crate::observe`]).
//!
//! Every name was resolved at load ([`crate::runtime`]); this module looks nothing up by name.

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::BodyExt as _;

use crate::body::{Body, not_found, text};
use crate::http1::server::RequestBody;
use crate::middleware::{ErrorsAt, RequestCtx, Stage};
use crate::observe::Quiet;
use crate::routing::RequestInfo;
use crate::runtime::{Dispatch, Entry, EntryId, Router, Runtime, Table};

pub(crate) mod buffered;
pub(crate) mod classify;
pub(crate) mod forward;
pub(crate) mod forwarded_headers;
pub(crate) mod mirror;
pub(crate) mod request_path;
pub(crate) mod strict;
pub(crate) mod tunnel;

use forwarded_headers as fwd;

/// The client end of a connection, with its address formatted once for `X-Forwarded-For`.
#[derive(Debug, Clone)]
pub struct Peer {
    /// TCP peer address.
    pub addr: SocketAddr,
    /// The peer's IP as `X-Forwarded-For` / `X-Real-Ip` carry it.
    pub ip_value: HeaderValue,
    /// The certificates the client sent in its TLS handshake, leaf first (`passTLSClientCert`).
    pub client_certs: Option<Arc<[rustls_pki_types::CertificateDer<'static>]>>,
    /// Which of its entry point's TLS option sets the connection's handshake got (an index
    /// into [`crate::tls::TlsChoice`]; 0 with one set).
    pub(crate) tls_options: u16,
    /// Where this request's interim (1xx) responses go as they arrive: the client's connection
    /// ([`crate::interim`]); none where the server cannot send them (hyper's HTTP/1.1 server).
    pub(crate) interims: Option<crate::interim::Relay>,
}

impl Peer {
    /// The peer at `addr`.
    pub fn new(addr: SocketAddr) -> Self {
        Self {
            addr,
            ip_value: fwd::peer_value(addr.ip()),
            client_certs: None,
            tls_options: 0,
            interims: None,
        }
    }
}

/// Puts the path Traefik's entry point hands on into the request ([`request_path`]); the
/// refusal's answer when it has none.
#[allow(
    clippy::result_large_err,
    reason = "the error is the answer, returned at once; most requests take the Ok(()) path"
)]
#[inline]
fn with_entry_path(req: &mut Request<RequestBody>, sanitize: bool) -> Result<(), Response<Body>> {
    // Without sanitizePath a path the strict scan sent here may need nothing.
    if request_path::untouched(req.uri().path().as_bytes(), sanitize) {
        return Ok(());
    }
    match request_path::entry_path(req.uri().path(), sanitize) {
        Ok(std::borrow::Cow::Borrowed(_)) => Ok(()),
        Ok(std::borrow::Cow::Owned(p)) => put_path(req, p),
        Err(request_path::PathRefusal::Fragment | request_path::PathRefusal::Unrepresentable) => {
            Err(crate::body::answer(StatusCode::BAD_REQUEST, ""))
        }
    }
}

/// The request with `new_path` for its path, the query kept.
#[cold]
#[allow(
    clippy::result_large_err,
    reason = "the error is the answer, returned at once"
)]
fn put_path(req: &mut Request<RequestBody>, new_path: String) -> Result<(), Response<Body>> {
    let pq = match req.uri().query() {
        Some(q) => format!("{new_path}?{q}"),
        None => new_path,
    };
    put_path_and_query(req, pq)
}

/// Traefik's query step after the path's (`http.encodeQuerySemicolons`): every `;` of the query
/// becomes `&` (Go's `AllowQuerySemicolons`, the default) or `%3B`, so rules, middlewares and the
/// server all read the same parameters — a server that split on `;` where the proxy did not
/// could be handed a parameter the proxy never saw.
#[allow(
    clippy::result_large_err,
    reason = "the error is the answer, returned at once; most requests take the Ok(()) path"
)]
#[inline]
fn with_entry_query(
    req: &mut Request<RequestBody>,
    how: bridge_plan::QuerySemicolons,
) -> Result<(), Response<Body>> {
    match req.uri().query() {
        Some(q) if q.as_bytes().contains(&b';') => {
            let with = match how {
                bridge_plan::QuerySemicolons::Separate => "&",
                bridge_plan::QuerySemicolons::Encode => "%3B",
            };
            let pq = format!("{}?{}", req.uri().path(), q.replace(';', with));
            put_path_and_query(req, pq)
        }
        _ => Ok(()),
    }
}

/// Traefik's first step (`http.underscoreHeadersStrategy`), before the fragment and path
/// checks: fields whose name holds `_` are removed, or refuse the request with Go's
/// `http.Error` 400.
#[allow(
    clippy::result_large_err,
    reason = "the error is the answer, returned at once; most requests take the Ok(()) path"
)]
#[inline]
fn with_entry_fields(
    req: &mut Request<RequestBody>,
    how: bridge_plan::UnderscoreHeaders,
) -> Result<(), Response<Body>> {
    use bridge_plan::UnderscoreHeaders as U;
    let underscored = |name: &http::HeaderName| name.as_str().as_bytes().contains(&b'_');
    match how {
        U::Keep => Ok(()),
        U::Reject if req.headers().keys().any(underscored) => {
            Err(text(StatusCode::BAD_REQUEST, "Bad Request\n"))
        }
        U::Reject => Ok(()),
        U::Delete => {
            if req.headers().keys().any(underscored) {
                let names: Vec<http::HeaderName> = req
                    .headers()
                    .keys()
                    .filter(|n| underscored(n))
                    .cloned()
                    .collect();
                for name in names {
                    req.headers_mut().remove(&name);
                }
            }
            Ok(())
        }
    }
}

/// The request with `pq` for its path and query.
#[cold]
#[allow(
    clippy::result_large_err,
    reason = "the error is the answer, returned at once"
)]
fn put_path_and_query(req: &mut Request<RequestBody>, pq: String) -> Result<(), Response<Body>> {
    let mut parts = req.uri().clone().into_parts();
    // The new path is made of bytes the old one was accepted with, or escapes.
    parts.path_and_query = Some(match pq.parse() {
        Ok(pq) => pq,
        Err(_) => return Err(crate::body::answer(StatusCode::BAD_REQUEST, "")),
    });
    // Refused rather than routed with the untreated path, should `http` ever disagree.
    *req.uri_mut() = http::Uri::from_parts(parts)
        .map_err(|_| crate::body::answer(StatusCode::BAD_REQUEST, ""))?;
    Ok(())
}

/// The entry point's redirect of `req` (Traefik's router to `noop@internal`).
#[cold]
fn redirect_answer(
    entry: &Entry,
    r: &bridge_plan::Redirect,
    host: Option<&str>,
    req: &Request<RequestBody>,
) -> Response<Body> {
    internal_answer(entry);
    let pq = req.uri().path_and_query().map_or("/", |p| p.as_str());
    crate::middleware::redirect::entry_point(r, host, req.method(), pq)
}

/// Notes that an internal service answers the request: the access log and the metrics record
/// it only with their `addInternals`.
fn internal_answer(entry: &Entry) {
    Quiet {
        internal: true,
        ..entry.quiet
    }
    .note_over(entry.quiet);
}

/// Marks an answer whose `Alt-Svc` the chain's response edits already decided.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AltSvcDone;

/// `resp` with the entry point's `Alt-Svc` value before its own ones (Traefik sets it before
/// its handler runs), unless the chain's response edits already put it (or took it away).
fn with_alt_svc(mut resp: Response<Body>, alt_svc: Option<&HeaderValue>) -> Response<Body> {
    if let Some(v) = alt_svc
        && resp.extensions_mut().remove::<AltSvcDone>().is_none()
    {
        crate::middleware::prepend(resp.headers_mut(), http::header::ALT_SVC, v);
    }
    resp
}

/// What the arrive phase decided about a request before routing.
#[derive(Debug)]
pub(crate) struct Arrival {
    /// The request's host (absolute-form authority, else `Host`), as a shared header value.
    pub(crate) host: Option<HeaderValue>,
    /// The request asks to switch protocols (its `Upgrade`/`Connection: upgrade` kept).
    pub(crate) upgrade: bool,
    /// The forwarding fields the proxy adds.
    pub(crate) forwarded: fwd::Forwarded,
    /// What the request's fields say about how it is carried (looked up again after a
    /// middleware changed the fields).
    pub(crate) fields: strict::Fields,
    /// The entry point's `Alt-Svc` value for this answer (HTTP/3 announced).
    pub(crate) alt_svc: Option<HeaderValue>,
}

/// Notes the router a request reached, for metrics and the access log: a parent router goes
/// to the routers above the one that serves it (`parent@file -> child@file` in the access log).
fn note_router(router: &Router) {
    crate::observe::note(|s| match &router.service {
        Dispatch::Children(_) => s.parents.push(router.name.to_string()),
        _ => {
            s.router = Some(router.name.to_string());
            s.service = Some(router.service_name.to_string());
        }
    });
}

/// Where a request arrived, for what the response stages send themselves.
struct Here<'a> {
    entry: &'a Entry,
    peer: &'a Peer,
    host: Option<&'a HeaderValue>,
    tls: bool,
    /// The request asks to switch protocols.
    upgrade: bool,
}

/// The router's chain from middleware `$from` on, its service, and on the way back the edits and
/// stages of those middlewares: `(answer, sniff)`, or `return $done(answer, false)` for an
/// answer the chain does not edit (the API's). A macro, not a function, so the request path
/// (`respond`, a chain without `buffering`) keeps the request and its context in its own future
/// instead of moving them into another one; `serve_chain` runs the same for each attempt of a
/// `buffering` middleware.
macro_rules! chain_and_service {
    ($self:ident, $router:expr, $from:expr, $req:ident, $ctx:ident, $fields:ident, $at:expr, $done:expr) => {{
            let chain = $router.chain.get($from..).unwrap_or_default();
            // A router without middlewares does not enter the chain's future at all.
            let ran = if chain.is_empty() {
                crate::middleware::Ran::Through
            } else {
                crate::middleware::run(chain, &mut $req, &mut $ctx).await
            };
            let resp = match ran {
                // A middleware's own answer (401, 403, 429…) passes back through the ones
                // before it, as in Traefik: their response headers apply to it too.
                crate::middleware::Ran::Answered(mut answer) => {
                    $ctx.response.apply_to(&mut answer);
                    answer
                }
                crate::middleware::Ran::Buffer(b, rest) => {
                    let slots = std::mem::take(&mut $ctx.slots);
                    let (mut resp, sniff) =
                        Box::pin($self.buffered(b, $router, $from + rest, $req, &$ctx, $at)).await;
                    $ctx.response.sniff |= sniff;
                    $ctx.response.apply_to(&mut resp);
                    if slots.is_empty() {
                        resp
                    } else {
                        resp.map(|b| crate::body::Held::wrap(b, slots))
                    }
                }
                crate::middleware::Ran::Through => {
                    if $ctx.fields_changed {
                        $fields = strict::Fields::of($req.headers());
                    }
                    let mut resp = match &$router.service {
                        Dispatch::Service(id) => {
                            let out = forward::Outbound {
                                service: *id,
                                service_name: &$router.service_name,
                                peer: $at.peer,
                                entry: $at.entry,
                                tls: $at.tls,
                                host: $at.host,
                                path_and_query: &$ctx.path_and_query,
                                retry: $ctx.retry,
                                upgrade: $at.upgrade,
                                fields: &$fields,
                                slots: std::mem::take(&mut $ctx.slots),
                                append_for: true,
                            };
                            let forwarded = std::mem::take(&mut $ctx.forwarded);
                            // The common case, a server at once, holds `forward_to`'s future
                            // here; the rest is boxed (see `Runtime::first_pick`).
                            let (via, first) = $self.first_pick(&out, &$req);
                            match Runtime::direct(&via, first) {
                                Ok(server) => {
                                    $self.forward_to(out, forwarded, $req, via, server, false).await.0
                                }
                                Err(first) => {
                                    Box::pin($self.forward_picked(out, forwarded, $req, via, first))
                                        .await
                                }
                            }
                        }
                        // api@internal / dashboard@internal, after the router's middlewares (basicAuth in
                        // prod); their answers are not edited by the chain.
                        Dispatch::Api => {
                            let resp = $self.api($req.method(), $req.uri()).unwrap_or_else(not_found);
                            return $done(resp, false);
                        }
                        Dispatch::Noop => crate::body::answer(StatusCode::IM_A_TEAPOT, bytes::Bytes::new()),
                        Dispatch::Missing => {
                            text(StatusCode::INTERNAL_SERVER_ERROR, "unknown service\n")
                        }
                        Dispatch::Ping | Dispatch::Prometheus => return $done(not_found(), false),
                        // A parent router: its children are routed on the request as its chain
                        // left it; the child's chain and service run with the same context, so
                        // the parent's response edits and stages wrap the child's.
                        Dispatch::Children(table) => match $self.child_route(table, &$req, &$ctx, $at) {
                            // Go's NotFoundHandler, with the parent's response edits.
                            None => not_found(),
                            Some(child) => {
                                note_router(child);
                                if let Some(early) = $self.before_chain(child, &$req) {
                                    return $done(early, false);
                                }
                                let (resp, sniff) = Box::pin($self.serve_chain(
                                    child, 0, $req, $ctx, $fields, $at,
                                ))
                                .await;
                                let resp = if sniff {
                                    Box::pin(crate::middleware::content_type::sniffed(resp)).await
                                } else {
                                    resp
                                };
                                return $done(resp, false);
                            }
                        },
                    };
                    $ctx.response.apply_to(&mut resp);
                    resp
                }
            };
            let sniff = $ctx.response.sniff;
            let resp = if $ctx.response.stages.is_empty() {
                resp
            } else {
                let stages = std::mem::take(&mut $ctx.response.stages);
                $self.through_stages(resp, stages, $at, sniff).await
            };
            (resp, sniff)
    }};
}

impl Runtime {
    /// Answers one request that arrived on entry point `ep` from `peer`, over TLS when `tls`;
    /// with metrics or an access log, the request is recorded when its response has been sent.
    ///
    /// One heap allocation per request holds the whole state of answering it; it is boxed here
    /// (not by the caller) so a request without metrics or access log does not carry the
    /// observed variant's state, and hyper moves a pointer instead of kilobytes.
    pub fn handle(
        self: Arc<Self>,
        ep: EntryId,
        peer: Peer,
        tls: bool,
        mut req: Request<RequestBody>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        let fields = match strict::check_request(&mut req) {
            Ok(fields) => fields,
            Err(refused) => return Box::pin(std::future::ready(refused.response())),
        };
        let Some(entry) = self.entries.get(ep.0) else {
            return Box::pin(std::future::ready(not_found()));
        };
        // HTTP/3 is announced on answers over TLS on TCP (as Traefik: not over plain HTTP, and
        // not over HTTP/3 itself), on every answer of the entry point's handler: Traefik sets
        // the field before calling it, so the answer's own values come after it and a
        // `headers` middleware may change or remove it (see [`with_alt_svc`]).
        let alt_svc = if tls && req.version() != http::Version::HTTP_3 {
            entry.alt_svc.clone()
        } else {
            None
        };
        // Traefik's entry point handler, outermost first: underscored fields, then the
        // fragment and path, then the query.
        let mut entered = with_entry_fields(&mut req, entry.underscore_headers);
        if entered.is_ok() && !fields.plain_path {
            entered = with_entry_path(&mut req, entry.sanitize_path);
        }
        if entered.is_ok() {
            entered = with_entry_query(&mut req, entry.query_semicolons);
        }
        if let Err(refused) = entered {
            return Box::pin(std::future::ready(with_alt_svc(refused, alt_svc.as_ref())));
        }
        let mut arrival = self.arrive(entry, &peer, tls, &mut req, fields);
        arrival.alt_svc = alt_svc.clone();
        let answer: Pin<Box<dyn Future<Output = Response<Body>> + Send>> =
            match self.observer.clone() {
                None => Box::pin(self.respond(ep, peer, tls, req, arrival)),
                Some(observer) => Box::pin(self.observed(observer, ep, peer, tls, req, arrival)),
            };
        match alt_svc {
            None => answer,
            Some(value) => Box::pin(async move { with_alt_svc(answer.await, Some(&value)) }),
        }
    }

    /// Where the values of the forwarding fields come from for a request of `peer`.
    pub(crate) fn sources<'a>(
        &'a self,
        host: Option<&'a HeaderValue>,
        peer: &'a Peer,
    ) -> fwd::Sources<'a> {
        fwd::Sources {
            host,
            peer: &peer.ip_value,
            server_name: &self.server_name_value,
        }
    }

    /// The arrive phase, in Traefik's order (its entry point handler): hop-by-hop fields and
    /// the ones `Connection` names leave, then the entry point's `forwardedHeaders` step removes
    /// forged forwarding fields and decides the proxy's. So rules, middlewares (ipAllowList),
    /// the access log and the server all see the same, sanitised values.
    fn arrive(
        &self,
        entry: &Entry,
        peer: &Peer,
        tls: bool,
        req: &mut Request<RequestBody>,
        mut fields: strict::Fields,
    ) -> Arrival {
        // The host as a header value: a reference-counted copy of the request's, so it outlives
        // the changes middlewares make to the request without being copied.
        let host: Option<HeaderValue> = match req.uri().authority() {
            Some(a) => HeaderValue::from_str(a.as_str()).ok(),
            None => fields.host.take().filter(|h| h.to_str().is_ok()),
        };
        let upgrade = fields.upgrade && fwd::is_upgrade(req.headers());
        let headers = req.headers_mut();
        fwd::strip_hop_by_hop(headers, upgrade);
        let forwarded = fwd::forwarded(
            headers,
            &fwd::Incoming {
                peer: peer.addr.ip(),
                tls,
                upgrade,
                host: host.as_ref(),
                // Only used without a host (HTTP/1.0).
                entrypoint_port: entry.port,
            },
            &entry.trust,
        );
        Arrival {
            host,
            upgrade,
            forwarded,
            fields,
            alt_svc: None,
        }
    }

    /// The observe phase around [`Runtime::respond`]: what the access log needs of the request
    /// is taken before it is handled, the rest when the response body ends.
    async fn observed(
        self: Arc<Self>,
        observer: Arc<crate::observe::Observer>,
        ep: EntryId,
        peer: Peer,
        tls: bool,
        req: Request<RequestBody>,
        arrival: Arrival,
    ) -> Response<Body> {
        let name = self.entries.get(ep.0).map_or("", |e| &*e.name);
        let headers = observer.wants_headers().then(|| {
            let src = self.sources(arrival.host.as_ref(), &peer);
            arrival.forwarded.visible(&src)
        });
        let mut facts = crate::observe::RequestFacts::of(
            &req,
            crate::observe::metrics::Name::from(name),
            peer.addr,
            tls,
            arrival.upgrade,
            headers,
        );
        if let Some(m) = &observer.metrics {
            facts.header_values = m.header_values(req.headers());
        }
        let (resp, served) =
            crate::observe::scoped(self.respond(ep, peer, tls, req, arrival)).await;
        let status = resp.status().as_u16();
        resp.map(|b| crate::observe::Observed::new(b, observer, facts, served, status).boxed())
    }

    /// Route, middlewares, dispatch and respond.
    async fn respond(
        self: Arc<Self>,
        ep: EntryId,
        peer: Peer,
        tls: bool,
        mut req: Request<RequestBody>,
        mut arrival: Arrival,
    ) -> Response<Body> {
        let Some(entry) = self.entries.get(ep.0) else {
            return not_found();
        };
        let host_value = arrival.host.take();
        let host: Option<&str> = host_value.as_ref().and_then(|h| h.to_str().ok());
        entry.quiet.note_over(Quiet::default());
        let acme_path = (entry.acme_http.is_some() || entry.acme_bypass)
            && req
                .uri()
                .path()
                .starts_with(crate::acme::challenge::HTTP_PREFIX);
        // ACME HTTP-01 first, as Traefik's highest-priority internal router on the challenge
        // entry point: before the redirect to HTTPS and before any router (unless
        // `allowACMEByPass`: see below).
        if acme_path
            && !entry.acme_bypass
            && let Some(challenges) = &entry.acme_http
        {
            return self.acme_answer(entry, challenges, host, &req).await;
        }
        // The redirect is Traefik's router `<ep>-to-<target>` for any host, at its priority: by
        // default above every router (and first among the internal ones, which tie with it).
        // With `allowACMEByPass` its rule leaves ACME's challenge path out.
        let redirect = entry
            .redirect
            .as_ref()
            .filter(|_| !(acme_path && entry.acme_bypass));
        if let Some(r) = redirect
            && entry.table(tls).above_redirect == 0
            && r.priority >= crate::admin::api::INTERNAL_PRIORITY
        {
            return redirect_answer(entry, r, host, &req);
        }
        if let Some(r) = self.before_routing(entry, tls, &req) {
            internal_answer(entry);
            return r;
        }
        let routed = self.route(entry, tls, &req, &arrival, host_value.as_ref(), &peer);
        if let Some(r) = redirect
            && routed.is_none_or(|(at, _)| at >= entry.table(tls).above_redirect)
        {
            return redirect_answer(entry, r, host, &req);
        }
        // With `allowACMEByPass` the resolvers' HTTP-01 answers are a router of priority 42.
        if acme_path
            && let Some(challenges) = &entry.acme_http
            && routed.is_none_or(|(at, _)| at >= entry.table(tls).above_acme)
        {
            return self.acme_answer(entry, challenges, host, &req).await;
        }
        let Some((at, router)) = routed else {
            return not_found();
        };
        let table = entry.table(tls);
        if let Some(q) = table.quiet.get(at) {
            q.note_over(entry.quiet);
        }
        note_router(router);
        // The entry point's encodedCharacters, in each of its routers before their middlewares
        // (Traefik's deny handler).
        if !entry.encoded.is_empty() && entry.encoded.refuses(req.uri().path()) {
            return crate::middleware::encoded_characters::refusal();
        }
        // Traefik's SNI check: the router's TLS options must be those the handshake got (a
        // client that asked for one name and sends another `Host`).
        if tls
            && let Some(&need) = table.tls_options.get(at)
            && need != peer.tls_options
        {
            return text(StatusCode::MISDIRECTED_REQUEST, "Misdirected Request\n");
        }
        if let Some(early) = self.before_chain(router, &req) {
            return early;
        }
        // Borrowed from a reference-counted copy of the request's until a middleware rewrites it.
        let original_pq = req.uri().path_and_query().cloned();
        let pq = original_pq.as_ref().map_or("/", |p| p.as_str());
        let mut ctx = RequestCtx::new(tls, host, peer.addr.ip(), pq, arrival.forwarded);
        ctx.response.alt_svc = arrival.alt_svc;
        ctx.sources = Some(self.sources(host_value.as_ref(), &peer));
        ctx.client_certs = peer.client_certs.as_deref();
        let upgrade = arrival.upgrade;
        let mut fields = arrival.fields;
        let done = |r, _| r;
        // Made where it is used (a buffering middleware, a response stage): a request that
        // needs neither does not carry it.
        let (resp, sniff) = chain_and_service!(
            self,
            router,
            0,
            req,
            ctx,
            fields,
            &Here {
                entry,
                peer: &peer,
                host: host_value.as_ref(),
                tls,
                upgrade,
            },
            done
        );
        if sniff {
            return Box::pin(crate::middleware::content_type::sniffed(resp)).await;
        }
        resp
    }

    /// The certificate resolvers' answer to an HTTP-01 challenge request: the key authorization
    /// of one of this process's orders or, in a pair, of the peer's; else 404.
    async fn acme_answer(
        &self,
        entry: &Entry,
        challenges: &crate::acme::challenge::Challenges,
        host: Option<&str>,
        req: &Request<RequestBody>,
    ) -> Response<Body> {
        internal_answer(entry);
        let bare = host.map_or("", |h| crate::routing::strip_port(h));
        if let Some(key_auth) = challenges.http_answer(req.uri().path(), bare) {
            return crate::body::text_owned(StatusCode::OK, key_auth);
        }
        // A pair: the order may be the other appliance's (the CA reaches only the one
        // holding the virtual address).
        if let Some(peer) = &self.peer
            && !req.headers().contains_key(crate::peer::RELAYED_FIELD)
            && let Some(key_auth) = peer
                .relay_challenge(entry.port, req.uri().path(), host.unwrap_or(bare))
                .await
        {
            tracing::info!(
                "ACME HTTP-01 for {bare}: answered with the peer's token ({})",
                peer.url
            );
            return crate::body::text_owned(StatusCode::OK, key_auth);
        }
        not_found()
    }

    /// What `ping@internal` and `prometheus@internal` answer, before the router's chain.
    fn before_chain(&self, router: &Router, req: &Request<RequestBody>) -> Option<Response<Body>> {
        match &router.service {
            Dispatch::Ping => Some(crate::admin::ping(
                self.plan.ping.as_ref(),
                self.is_terminating(),
                &self.plan_hash_value,
            )),
            Dispatch::Prometheus => Some(self.metrics_response(req.headers())),
            _ => None,
        }
    }

    /// The child of a parent router whose rule matches the request as the parent's chain left
    /// it: its path and query after the path middlewares, its fields after the headers
    /// middlewares, with the forwarding fields the proxy will add visible to `Header` rules.
    fn child_route<'t>(
        &self,
        table: &'t Table,
        req: &Request<RequestBody>,
        ctx: &RequestCtx<'_>,
        at: &Here<'_>,
    ) -> Option<&'t Arc<Router>> {
        let (path, query) = match ctx.path_and_query.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (&*ctx.path_and_query, None),
        };
        let mut digits = [0u8; 5];
        let mut header_refs: Vec<(&str, &str)> = Vec::new();
        let src = self.sources(at.host, at.peer);
        if table.routes.uses_headers() {
            header_refs.extend(
                req.headers()
                    .iter()
                    .filter_map(|(k, v)| v.to_str().ok().map(|v| (k.as_str(), v))),
            );
            ctx.forwarded
                .visible_each(&src, &mut digits, |k, v| header_refs.push((k, v)));
        }
        let info = RequestInfo {
            method: req.method().as_str(),
            host: ctx.host,
            path,
            query,
            headers: &header_refs,
            peer: at.peer.addr.ip(),
        };
        table
            .routes
            .route_index(&info)
            .and_then(|i| table.routers.get(i))
    }

    /// The router's chain from middleware `from` on, its service, and on the way back the
    /// edits and stages of those middlewares; also whether a `contentType` asked for sniffing.
    /// `buffering` runs what follows it once per attempt ([`Runtime::buffered`]).
    async fn serve_chain<'a>(
        &'a self,
        router: &'a Router,
        from: usize,
        mut req: Request<RequestBody>,
        mut ctx: RequestCtx<'a>,
        mut fields: strict::Fields,
        at: &Here<'a>,
    ) -> (Response<Body>, bool) {
        let done = |r, sniff| (r, sniff);
        chain_and_service!(self, router, from, req, ctx, fields, at, done)
    }

    /// The answer back through the chain's stages, innermost first.
    async fn through_stages(
        &self,
        mut resp: Response<Body>,
        stages: Vec<Stage<'_>>,
        at: &Here<'_>,
        sniff: bool,
    ) -> Response<Body> {
        for stage in stages.into_iter().rev() {
            match stage {
                Stage::Errors(e) => {
                    let Some(sent) = e.pages.catches(resp.status()) else {
                        continue;
                    };
                    let original = resp.status();
                    // Dropped unread, as Traefik discards it (the connection is not reused).
                    drop(resp);
                    tracing::debug!(
                        "caught HTTP status {original} (sent as {sent}): page from {}",
                        e.pages.service_name
                    );
                    resp = Box::pin(self.error_page(e, sent, original, at)).await;
                    *resp.status_mut() = sent;
                }
                Stage::AuthCookies(m, cookies) => m.rewrite_cookies(&cookies, resp.headers_mut()),
                Stage::GrpcWeb(t) => resp = crate::middleware::grpc_web::respond(t, resp),
                Stage::Breaker(m, start) => {
                    // Recorded when the body is done with: oxy times the whole answer.
                    let probe = m.probe(resp.status(), start);
                    resp = resp.map(|b| crate::body::Held::wrap(b, probe));
                }
                Stage::Compress(m, choice) => {
                    resp = Box::pin(crate::middleware::compress::encode::respond(
                        m, choice, resp, sniff,
                    ))
                    .await;
                }
            }
        }
        resp
    }

    /// `GET` of the page for a caught status from the `errors` middleware's service.
    async fn error_page(
        &self,
        e: ErrorsAt<'_>,
        sent: StatusCode,
        original: StatusCode,
        at: &Here<'_>,
    ) -> Response<Body> {
        let target = e.pages.target(sent, original, || {
            let scheme = if at.tls { "https" } else { "http" };
            let host = at.host.and_then(|h| h.to_str().ok()).unwrap_or_default();
            format!("{scheme}://{host}{}", e.path_and_query)
        });
        let Ok(uri) = target.parse::<http::Uri>() else {
            // Traefik: the page request cannot be made; the status text answers.
            let reason = sent.canonical_reason().unwrap_or_default();
            return crate::body::text_owned(sent, format!("{reason}\n"));
        };
        let service = match e.pages.service {
            crate::middleware::errors::PageService::Service(id) => id,
            crate::middleware::errors::PageService::Ping => {
                let mut page = crate::admin::ping(
                    self.plan.ping.as_ref(),
                    self.is_terminating(),
                    &self.plan_hash_value,
                );
                // Traefik's ping handler sets no type (Go's server sniffs one only for answers
                // it writes itself), so its page carries none.
                page.headers_mut().remove(http::header::CONTENT_TYPE);
                return page;
            }
            crate::middleware::errors::PageService::Prometheus => {
                return self.metrics_response(&e.fields);
            }
            crate::middleware::errors::PageService::Noop => {
                return crate::body::answer(StatusCode::IM_A_TEAPOT, bytes::Bytes::new());
            }
            crate::middleware::errors::PageService::Api => {
                return self.api(&http::Method::GET, &uri).unwrap_or_else(not_found);
            }
        };
        let mut req = Request::new(RequestBody::Empty);
        *req.uri_mut() = uri;
        *req.headers_mut() = e.fields;
        let fields = strict::Fields::of(req.headers());
        let out = forward::Outbound {
            service,
            service_name: &e.pages.service_name,
            peer: at.peer,
            entry: at.entry,
            tls: at.tls,
            host: at.host,
            path_and_query: &target,
            retry: crate::middleware::retry::Retry::DEFAULT,
            upgrade: false,
            fields: &fields,
            slots: Vec::new(),
            append_for: false,
        };
        // A page service with middlewares of its own runs them first, as Traefik builds it.
        if self.service_router(service).is_some() {
            let via = crate::upstream::Via::default();
            return Box::pin(self.through_service(service, &out, e.forwarded, req, &via, false))
                .await;
        }
        self.forward(out, e.forwarded, req).await
    }

    /// The route phase: the entry point's table for this kind of connection, with the
    /// forwarding fields the proxy will add visible to `Header` rules.
    fn route<'e>(
        &self,
        entry: &'e Entry,
        tls: bool,
        req: &Request<RequestBody>,
        arrival: &Arrival,
        host_value: Option<&HeaderValue>,
        peer: &Peer,
    ) -> Option<(usize, &'e Arc<Router>)> {
        let table = entry.table(tls);
        let src = self.sources(host_value, peer);
        let mut digits = [0u8; 5];
        let mut header_refs: Vec<(&str, &str)> = Vec::new();
        if table.routes.uses_headers() {
            header_refs.extend(
                req.headers()
                    .iter()
                    .filter_map(|(k, v)| v.to_str().ok().map(|v| (k.as_str(), v))),
            );
            arrival
                .forwarded
                .visible_each(&src, &mut digits, |k, v| header_refs.push((k, v)));
        }
        let info = RequestInfo {
            method: req.method().as_str(),
            host: host_value.and_then(|h| h.to_str().ok()),
            path: req.uri().path(),
            query: req.uri().query(),
            headers: &header_refs,
            peer: peer.addr.ip(),
        };
        table
            .routes
            .route_index(&info)
            .and_then(|i| Some((i, table.routers.get(i)?)))
    }
}
