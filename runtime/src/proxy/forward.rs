//! The pick, forward and retry phases: a server is picked for the router's service, the request
//! goes out on that server's client (the own HTTP/1.1 codec for a request without a body to an
//! `http://` server, else an owned request through the pool or hyper's client), and a safe
//! request that could not reach a server is tried again on another one. The answer comes back
//! with its hop-by-hop fields removed, under the entry point's write deadline; a `101` is
//! tunnelled in both directions.

use std::time::Duration;

use http::uri::PathAndQuery;
use http::{HeaderValue, Request, Response, StatusCode, Uri, header};
use http_body_util::BodyExt as _;

use super::classify::{ClientBodyError, classify, not_the_servers};
use super::forwarded_headers::{self as fwd, Forwarded};
use super::{Peer, strict};
use crate::body::{Body, ReqBody, bad_gateway, empty_request, gateway_timeout, text};
use crate::http1::server::RequestBody;
use crate::middleware::retry::Retry;
use crate::runtime::{Entry, Runtime, ServerTarget};
use crate::transport::{SendError, error_text};
use crate::upstream::{FailureKind, Pick, ServerRef, ServiceId, Via};

/// Response body type received from servers.
type UpstreamBody = crate::http1::pool::UpstreamBody<ReqBody>;

/// Where and how a request that passed its chain goes out.
#[derive(Debug)]
pub(crate) struct Outbound<'a> {
    pub(crate) service: ServiceId,
    pub(crate) service_name: &'a str,
    pub(crate) peer: &'a Peer,
    pub(crate) entry: &'a Entry,
    /// The request came over TLS (for a service's own middlewares: redirects, HSTS).
    pub(crate) tls: bool,
    /// The request's host, for `Host` when the server takes the client's.
    pub(crate) host: Option<&'a HeaderValue>,
    /// Path and query after the middlewares.
    pub(crate) path_and_query: &'a str,
    pub(crate) retry: Retry,
    pub(crate) upgrade: bool,
    pub(crate) fields: &'a strict::Fields,
    /// inFlightReq slots, held until the answer is sent or the tunnel closes.
    pub(crate) slots: Vec<crate::middleware::in_flight::Slot>,
    /// The peer goes into `X-Forwarded-For` (all but an `errors` page request, which Traefik
    /// sends without it).
    pub(crate) append_for: bool,
}

/// Where a pick sends a request: a server, or a service with middlewares of its own that run
/// first ([`Pick::Chained`]).
#[derive(Debug)]
enum Target {
    Server(ServerRef),
    Chained(ServiceId),
}

/// True for requests that may be sent again when the first server could not be reached: safe
/// methods without a body (nothing was consumed, repeating cannot change state).
fn retryable(method: &http::Method, fields: &strict::Fields) -> bool {
    let safe = matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    safe && fields.bodiless()
}

/// One request's state across its attempts.
struct Attempts<'a> {
    out: Outbound<'a>,
    parts: http::request::Parts,
    body: Option<RequestBody>,
    /// Origin-form target for the server.
    uri: Uri,
    via: Via,
    forwarding: Option<Forwarded>,
    bodiless: bool,
    may_retry: bool,
    max_attempts: u32,
    backoff: Duration,
    read_deadline: Option<tokio::time::Instant>,
    /// The answer may be replaced (a failover's `errors`): its interim responses stay here.
    quiet: bool,
}

impl Attempts<'_> {
    /// Where the server's interim responses go: the client's connection, unless quiet.
    fn interims(&self) -> Option<&crate::interim::Relay> {
        if self.quiet {
            None
        } else {
            self.out.peer.interims.as_ref()
        }
    }
}

impl Runtime {
    /// Picks a server for `out.service` and forwards the request to it, trying another one for
    /// safe requests that could not reach theirs.
    pub(crate) async fn forward(
        &self,
        out: Outbound<'_>,
        forwarded: Forwarded,
        req: Request<RequestBody>,
    ) -> Response<Body> {
        let (via, first) = self.first_pick(&out, &req);
        self.forward_picked(out, forwarded, req, via, first).await
    }

    /// The pick of a request without waiting: the mirroring services on the way to the server
    /// (each copies the request) and where it goes. The router's path forwards at once when
    /// this gives a server and no failover replay ([`Runtime::direct`]), so that path's future
    /// holds [`Runtime::forward_to`]'s directly: a nested `forward` future copied per request
    /// cost 5.7 % of the request's instructions (`bench/results/instructions-20261206-session20.md`).
    pub(crate) fn first_pick(&self, out: &Outbound<'_>, req: &Request<RequestBody>) -> (Via, Pick) {
        let mut via = Via::for_client(Some(out.peer.addr.ip()));
        if self.upstreams.sticky(out.service) {
            via.cookies = crate::upstream::sticky::cookies(req.headers());
        }
        let first = self.upstreams.pick_via(out.service, &mut via);
        (via, first)
    }

    /// The server of a first pick that needs nothing else (no hold, no chained service, no
    /// failover replay); else the pick, for [`Runtime::forward_picked`].
    #[allow(
        clippy::result_large_err,
        reason = "both sides are moved on at once; the error side is the rare path"
    )]
    pub(crate) fn direct(via: &Via, first: Pick) -> Result<ServerRef, Pick> {
        match first {
            Pick::Server(s) if via.failovers_taken().next().is_none() => Ok(s),
            other => Err(other),
        }
    }

    /// [`Runtime::forward`] after its [`Runtime::first_pick`].
    pub(crate) async fn forward_picked(
        &self,
        out: Outbound<'_>,
        forwarded: Forwarded,
        req: Request<RequestBody>,
        mut via: Via,
        first: Pick,
    ) -> Response<Body> {
        let pick = if first == Pick::NoAvailableServer {
            self.upstreams.hold_for(out.service, &mut via).await
        } else {
            first
        };
        let target = match pick {
            Pick::Server(s) => Target::Server(s),
            Pick::Chained(node) => Target::Chained(node),
            Pick::NoAvailableServer => {
                // Traefik's answer, plus when to try again: health is re-checked every 250 ms
                // by default, so a second is a fair bet (clients and crawlers honour it).
                let mut resp = text(StatusCode::SERVICE_UNAVAILABLE, "no available server\n");
                resp.headers_mut()
                    .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                return resp;
            }
            Pick::UnknownService => {
                return text(StatusCode::INTERNAL_SERVER_ERROR, "unknown service\n");
            }
        };
        if via.failovers_taken().next().is_some() {
            // Boxed: the replay's state would enlarge every request's future.
            return Box::pin(self.forward_replaying(out, forwarded, req, via, target)).await;
        }
        match target {
            Target::Server(server) => {
                self.forward_to(out, forwarded, req, via, server, false)
                    .await
                    .0
            }
            // Boxed: the service's chain runs the request path again (recursion).
            Target::Chained(node) => {
                let mut out = out;
                let slots = std::mem::take(&mut out.slots);
                let resp =
                    Box::pin(self.through_service(node, &out, forwarded, req, &via, false)).await;
                if slots.is_empty() {
                    resp
                } else {
                    resp.map(|b| crate::body::Held::wrap(b, slots))
                }
            }
        }
    }

    /// A service below the router's with middlewares of its own (Traefik v3.7), which the pick
    /// reached through `via`: its chain runs on the request as it came, with a context of its
    /// own, so its response edits and stages apply first and the router's after them (Traefik
    /// wraps each service's handler in its chain); then the pick goes on from that service.
    /// The cookies of sticky weighted services above it go first, as Traefik writes them
    /// before calling the child.
    /// `quiet`: the answer may be replaced (a failover's `errors` above), so the interim
    /// responses of what the chain reaches stay here.
    pub(crate) async fn through_service(
        &self,
        node: ServiceId,
        out: &Outbound<'_>,
        forwarded: Forwarded,
        req: Request<RequestBody>,
        via: &Via,
        quiet: bool,
    ) -> Response<Body> {
        let Some(router) = self.service_router(node) else {
            return text(StatusCode::INTERNAL_SERVER_ERROR, "unknown service\n");
        };
        // Mirroring services the pick went through copy the request as it reached them, before
        // this service's middlewares (Traefik's mirror copies, then calls its main handler).
        let req = if via.is_empty() || out.upgrade {
            req
        } else {
            self.mirror_before_chain(via, out, &forwarded, req)
        };
        let quiet_peer;
        let peer = if quiet && out.peer.interims.is_some() {
            quiet_peer = Peer {
                interims: None,
                ..out.peer.clone()
            };
            &quiet_peer
        } else {
            out.peer
        };
        let host = out.host.and_then(|h| h.to_str().ok());
        let mut ctx = crate::middleware::RequestCtx::new(
            out.tls,
            host,
            out.peer.addr.ip(),
            out.path_and_query,
            forwarded,
        );
        ctx.retry = out.retry;
        ctx.sources = Some(self.sources(out.host, out.peer));
        ctx.client_certs = out.peer.client_certs.as_deref();
        let at = super::Here {
            entry: out.entry,
            peer,
            host: out.host,
            tls: out.tls,
            upgrade: out.upgrade,
        };
        let fields = out.fields.clone();
        let (mut resp, sniff) = self.serve_chain(router, 0, req, ctx, fields, &at).await;
        if sniff {
            resp = Box::pin(crate::middleware::content_type::sniffed(resp)).await;
        }
        let above: Vec<HeaderValue> = self.upstreams.level_cookies(via).collect();
        if !above.is_empty() {
            let fields = resp.headers_mut();
            let below: Vec<HeaderValue> =
                fields.get_all(header::SET_COOKIE).iter().cloned().collect();
            fields.remove(header::SET_COOKIE);
            for cookie in above.into_iter().chain(below) {
                fields.append(header::SET_COOKIE, cookie);
            }
        }
        resp
    }

    /// The copies of the mirroring services in `via`, taken from `req` as it is now, with the
    /// forwarding fields the proxy adds; the request goes on with its body teed to them.
    fn mirror_before_chain(
        &self,
        via: &Via,
        out: &Outbound<'_>,
        forwarded: &Forwarded,
        req: Request<RequestBody>,
    ) -> Request<RequestBody> {
        let (parts, body) = req.into_parts();
        let mut fields = parts.headers.clone();
        let mut f = forwarded.clone();
        if out.append_for {
            f.append_for(&mut fields, &out.peer.ip_value);
        }
        f.apply(&self.sources(out.host, out.peer), &mut fields);
        let mut copy = Request::new(());
        *copy.method_mut() = parts.method.clone();
        *copy.headers_mut() = fields;
        let (copy, ()) = copy.into_parts();
        let mut body: Body = body.boxed();
        for node in via.nodes() {
            if let Some(m) = self.mirroring(node) {
                body = super::mirror::fan_out(self, m, &copy, out, body).boxed();
            }
        }
        Request::from_parts(parts, RequestBody::Translated(body))
    }

    /// Forwards the request to `server`, picked by `via`, and its retries; `quiet`: its interim
    /// responses are not relayed (a failover's `errors` may replace its answer). The answer, and
    /// `out` for another pass.
    pub(crate) async fn forward_to<'a>(
        &self,
        out: Outbound<'a>,
        mut forwarded: Forwarded,
        mut req: Request<RequestBody>,
        via: Via,
        server: ServerRef,
        quiet: bool,
    ) -> (Response<Body>, Outbound<'a>) {
        let sticky = self.upstreams.sticky(out.service);
        let client_upgrade = out.upgrade.then(|| hyper::upgrade::on(&mut req));
        let may_retry = !out.upgrade && retryable(req.method(), out.fields);
        if out.append_for {
            forwarded.append_for(req.headers_mut(), &out.peer.ip_value);
        }
        let (mut parts, body) = req.into_parts();
        let timeouts = &out.entry.timeouts;
        let started = tokio::time::Instant::now();
        let write_deadline = (timeouts.write_ms > 0 && !out.upgrade)
            .then(|| started + Duration::from_millis(timeouts.write_ms));
        let read_deadline =
            (timeouts.read_ms > 0).then(|| started + Duration::from_millis(timeouts.read_ms));
        // A request without a body to an `http://` server is written from borrowed parts by the
        // proxy's own codec: no owned copy of the fields for a retry, no boxed body. Mirrored
        // requests keep the owned path: their copies go out when the body has been read.
        let bodiless = !out.upgrade
            && hyper::body::Body::is_end_stream(&body)
            && !via.nodes().any(|m| self.mirroring(m).is_some())
            && crate::http1::client::eligible_by(&parts.method, out.fields);
        // Origin-form for the server (the client dials the server's address itself): the
        // request's own URI when middlewares left its path alone, which saves parsing it again.
        let uri = if parts.uri.scheme().is_none()
            && parts.uri.path_and_query().map(PathAndQuery::as_str) == Some(out.path_and_query)
        {
            std::mem::take(&mut parts.uri)
        } else {
            match out.path_and_query.parse::<PathAndQuery>() {
                Ok(pq) => Uri::from(pq),
                Err(_) => return (bad_gateway(), out),
            }
        };
        let mut attempts = Attempts {
            max_attempts: out.retry.attempts,
            backoff: out.retry.initial_interval,
            out,
            parts,
            body: Some(body),
            uri,
            via,
            forwarding: Some(forwarded),
            bodiless,
            may_retry,
            read_deadline,
            quiet,
        };
        // Only a sticky service needs the first server after a failed attempt.
        let first = sticky.then(|| server.clone());
        let resp = match self.attempt_all(&mut attempts, server).await {
            Ok((result, server, counted)) => {
                crate::observe::note(|s| s.server = Some(server.url().to_owned()));
                let slots = std::mem::take(&mut attempts.out.slots);
                let mut resp = self.finish(
                    result,
                    &server,
                    &attempts.out,
                    (client_upgrade, slots, counted),
                    write_deadline,
                );
                if sticky {
                    self.set_cookie(&mut resp, &server, &attempts.via);
                }
                resp
            }
            Err(mut answer) => {
                if let Some(first) = first {
                    self.set_cookie(&mut answer, &first, &attempts.via);
                }
                answer
            }
        };
        (resp, attempts.out)
    }

    /// A failover service with `errors` took its main service: the request body is stored (up to
    /// the smallest `maxRequestBodyBytes` on the way; more: 413), the request goes to the main
    /// service without relaying its interim responses, and when its answer's status is one the
    /// innermost such failover replays, that answer is dropped and the same request goes to the
    /// failover's fallback — again for the failovers further out, as Traefik's nested handlers do.
    async fn forward_replaying(
        &self,
        mut out: Outbound<'_>,
        forwarded: Forwarded,
        req: Request<RequestBody>,
        mut via: Via,
        mut target: Target,
    ) -> Response<Body> {
        use crate::middleware::buffering as buf;
        let limit = via
            .failovers_taken()
            .filter_map(|n| self.upstreams.failover_errors(n))
            .filter_map(|e| e.max_request_body_bytes)
            .min();
        let (mut parts, mut body) = req.into_parts();
        let stored = if hyper::body::Body::is_end_stream(&body) {
            buf::store::Stored::default()
        } else {
            let replay = buf::Buffering::for_replay(limit);
            let read = replay.read_request(&mut body);
            let read = match out.entry.timeouts.read_ms {
                0 => read.await,
                ms => tokio::time::timeout(Duration::from_millis(ms), read)
                    .await
                    .unwrap_or(Err(buf::RequestRefusal::ClientGone)),
            };
            match read {
                Ok(stored) => stored,
                Err(buf::RequestRefusal::TooLarge) => {
                    tracing::debug!("failover errors: request body over maxRequestBodyBytes");
                    let drained = buf::drain(&parts.headers, &mut body).await;
                    let mut resp = text(StatusCode::PAYLOAD_TOO_LARGE, "Request body too large\n");
                    if !drained {
                        resp.headers_mut()
                            .insert(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    return resp;
                }
                // Traefik answers a body it could not read with 500.
                Err(_) => {
                    return text(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n");
                }
            }
        };
        buf::request_fields(&mut parts.headers, &parts.method, stored.len());
        // Held until the last pass's answer has been sent.
        let slots = std::mem::take(&mut out.slots);
        loop {
            let copy = buf::stored_request(&parts, &stored);
            let taken: Vec<usize> = via.failovers_taken().collect();
            let quiet = !taken.is_empty();
            let previous = via.clone();
            let resp = match target {
                Target::Server(server) => {
                    let (resp, back) = self
                        .forward_to(out, forwarded.clone(), copy, via, server, quiet)
                        .await;
                    out = back;
                    resp
                }
                // A service with middlewares of its own: they run on each pass, as Traefik's
                // failover calls the fallback's whole handler.
                Target::Chained(node) => {
                    Box::pin(self.through_service(node, &out, forwarded.clone(), copy, &via, quiet))
                        .await
                }
            };
            let status = resp.status().as_u16();
            let replayed = taken.into_iter().find(|n| {
                self.upstreams
                    .failover_errors(*n)
                    .is_some_and(|e| e.status.iter().any(|r| (r.from..=r.to).contains(&status)))
            });
            let Some(node) = replayed else {
                return if slots.is_empty() {
                    resp
                } else {
                    resp.map(|b| crate::body::Held::wrap(b, slots))
                };
            };
            tracing::debug!(
                "{}: the main service answered {status}; replaying to the failover's fallback",
                out.service_name
            );
            drop(resp);
            via = previous.replaying(node);
            target = match self.upstreams.pick_holding(out.service, &mut via).await {
                Pick::Server(s) => Target::Server(s),
                Pick::Chained(n) => Target::Chained(n),
                // As Traefik's failover when its fallback is down.
                Pick::NoAvailableServer => {
                    return text(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable\n");
                }
                Pick::UnknownService => {
                    return text(StatusCode::INTERNAL_SERVER_ERROR, "unknown service\n");
                }
            };
        }
    }

    /// Sends the client back to `server` next time: its load balancer is sticky and the
    /// request's cookie did not name it.
    fn set_cookie(&self, resp: &mut Response<Body>, server: &ServerRef, via: &Via) {
        let fields = resp.headers_mut();
        for cookie in self.upstreams.level_cookies(via) {
            fields.append(header::SET_COOKIE, cookie);
        }
        if let Some(cookie) = self.upstreams.set_cookie(server, via) {
            fields.append(header::SET_COOKIE, cookie);
        }
    }

    /// Sends to `server`, then to the next server while a retryable attempt fails; the last
    /// result with the server it came from, or the proxy's answer when none is left.
    async fn attempt_all(
        &self,
        a: &mut Attempts<'_>,
        mut server: ServerRef,
    ) -> Result<
        (
            Result<Response<UpstreamBody>, SendError>,
            ServerRef,
            Option<crate::upstream::load::Counted>,
        ),
        Response<Body>,
    > {
        let mut attempt = 0;
        loop {
            attempt += 1;
            let Some(target) = self.server(&server) else {
                return Err(bad_gateway());
            };
            let last = !(a.may_retry && attempt < a.max_attempts);
            let counted = self.upstreams.count(&server, &a.via);
            // Only leasttime and p2c read the time to the first byte.
            let sent_at = counted.as_ref().map(|_| tokio::time::Instant::now());
            let sent = self.send_once(a, target, last).await;
            if let (Some(c), Some(at), Ok(_)) = (&counted, sent_at, &sent) {
                c.first_byte(at.elapsed());
            }
            match sent {
                Err(e) if !last => {
                    crate::observe::note(|s| s.retries += 1);
                    let (kind, timed_out) = classify(&e);
                    self.upstreams.report_failure(&server, kind);
                    tracing::warn!(
                        "{} → {}: {e}; retrying on another server",
                        a.out.service_name,
                        server.url()
                    );
                    if !a.backoff.is_zero() {
                        Box::pin(tokio::time::sleep(a.backoff)).await;
                        a.backoff = (a.backoff * 2).min(Duration::from_secs(10));
                    }
                    match self.next_server(a, &server, kind).await {
                        Some(next) => server = next,
                        None if timed_out => return Err(gateway_timeout()),
                        None => return Err(bad_gateway()),
                    }
                }
                result => return Ok((result, server, counted)),
            }
        }
    }

    /// The server for the next attempt: another one if there is one (the failed one is down
    /// now if it refused), else the same one when the retry middleware asks for more than one
    /// retry (its semantics). The body went (or goes) to the mirrors of the first pick only.
    async fn next_server(
        &self,
        a: &Attempts<'_>,
        failed: &ServerRef,
        kind: FailureKind,
    ) -> Option<ServerRef> {
        let id = a.out.service;
        let mut again = a.via.again();
        let next = match self.upstreams.pick_holding(id, &mut again).await {
            // The server just died and none is left: the re-probe round that failure
            // triggered may find the standby promoted.
            Pick::NoAvailableServer if kind.marks_down() => {
                self.upstreams
                    .pick_after_failure(id, &mut again, failed)
                    .await
            }
            other => other,
        };
        match next {
            Pick::Server(next) if next.url() != failed.url() || a.max_attempts > 2 => Some(next),
            _ => None,
        }
    }

    /// One attempt on `target`; `last`: no attempt follows, so the request's fields move out
    /// instead of being copied.
    async fn send_once(
        &self,
        a: &mut Attempts<'_>,
        target: &ServerTarget,
        last: bool,
    ) -> Result<Response<UpstreamBody>, SendError> {
        let host_field = match a.out.host {
            Some(h) if target.pass_host => h,
            _ => &target.addr.host_value,
        };
        let src = self.sources(a.out.host, a.out.peer);
        let client = &target.client;
        if a.bodiless && client.takes_bodiless() {
            let pq = target.target(a.uri.path_and_query().map_or("/", |pq| pq.as_str()));
            let req = crate::http1::client::Bodiless {
                method: &a.parts.method,
                target: &pq,
                host: Some(host_field),
                headers: &a.parts.headers,
                extra: a.forwarding.as_ref().map(|f| (f, src)),
            };
            return client
                .send_bodiless(req, a.interims())
                .await
                .unwrap_or(Err(SendError::NoClient));
        }
        if let Some(f) = a.forwarding.take() {
            f.apply(&src, &mut a.parts.headers);
        }
        // Keep the fields for a possible retry; the last attempt takes them.
        let mut headers = if last {
            std::mem::take(&mut a.parts.headers)
        } else {
            a.parts.headers.clone()
        };
        headers.insert(header::HOST, host_field.clone());
        let body = match a.body.take() {
            Some(b) => self.request_body(a, b),
            None => empty_request(),
        };
        let mut upstream_req = Request::new(body);
        *upstream_req.method_mut() = a.parts.method.clone();
        *upstream_req.uri_mut() = match &target.path_prefix {
            None => a.uri.clone(),
            Some(_) => {
                let pq = a.uri.path_and_query().map_or("/", |pq| pq.as_str());
                target
                    .target(pq)
                    .parse::<Uri>()
                    .unwrap_or_else(|_| a.uri.clone())
            }
        };
        *upstream_req.version_mut() = http::Version::HTTP_11;
        *upstream_req.headers_mut() = headers;
        client.send(upstream_req, a.out.upgrade, a.interims()).await
    }

    /// The body sent upstream on the owned path: under the entry point's read deadline (none
    /// for a request without a body: nothing is left to read), teed to the mirrors if any.
    fn request_body(&self, a: &Attempts<'_>, body: RequestBody) -> ReqBody {
        // Only a body still coming from the client is read under its deadline (buffering's was
        // read whole before the first attempt).
        let from_client = matches!(
            body,
            RequestBody::Hyper(_)
                | RequestBody::H2(_)
                | RequestBody::H3(_)
                | RequestBody::Own(_)
                | RequestBody::Translated(_)
        );
        // Marked as the client's, so a failure reading it is not blamed on the server.
        let body = body.map_err(ClientBodyError);
        let body = match a.read_deadline {
            Some(at)
                if from_client && !a.out.upgrade && !hyper::body::Body::is_end_stream(&body) =>
            {
                crate::deadline::Deadline::new(body, at, "read").boxed_unsync()
            }
            _ => body
                .map_err(|e| Box::new(e) as crate::body::BoxError)
                .boxed_unsync(),
        };
        if a.out.upgrade {
            return body;
        }
        a.via
            .nodes()
            .fold(body, |body, node| match self.mirroring(node) {
                Some(m) => super::mirror::fan_out(self, m, &a.parts, &a.out, body).boxed_unsync(),
                None => body,
            })
    }

    /// The respond phase for a server's answer: 5xx reported to passive health, an unasked
    /// `101` refused, an asked one tunnelled, hop-by-hop fields removed, the write deadline set.
    fn finish(
        &self,
        result: Result<Response<UpstreamBody>, SendError>,
        server: &ServerRef,
        out: &Outbound<'_>,
        // inFlightReq slots and the p2c / leasttime count: held until the answer has been sent,
        // or for a tunnel until it closes.
        (client_upgrade, slots, counted): (
            Option<hyper::upgrade::OnUpgrade>,
            Vec<crate::middleware::in_flight::Slot>,
            Option<crate::upstream::load::Counted>,
        ),
        write_deadline: Option<tokio::time::Instant>,
    ) -> Response<Body> {
        let mut resp = match result {
            Ok(resp) => resp,
            Err(e) if not_the_servers(&e) => {
                tracing::debug!(
                    "{} → {}: {}",
                    out.service_name,
                    server.url(),
                    error_text(&e)
                );
                return bad_gateway();
            }
            Err(e) => {
                let (kind, timed_out) = classify(&e);
                self.upstreams.report_failure(server, kind);
                tracing::warn!(
                    "{} → {}: {}",
                    out.service_name,
                    server.url(),
                    error_text(&e)
                );
                return if timed_out {
                    gateway_timeout()
                } else {
                    bad_gateway()
                };
            }
        };
        if resp.status().is_server_error() {
            self.upstreams
                .report_failure(server, FailureKind::Status5xx);
        }
        if resp.status() == StatusCode::SWITCHING_PROTOCOLS {
            let Some(client_upgrade) = client_upgrade else {
                // A switch nobody asked for: tunnelling it would hand the client's connection
                // to whatever the server speaks next.
                tracing::warn!(
                    "{} → {}: 101 Switching Protocols without an upgrade request",
                    out.service_name,
                    server.url()
                );
                return bad_gateway();
            };
            let upstream_upgrade = hyper::upgrade::on(&mut resp);
            self.tunnels.spawn(
                client_upgrade,
                upstream_upgrade,
                server.names(),
                self.upstreams.tunnel_grace(server),
                Duration::from_millis(out.entry.timeouts.grace_ms),
                (slots, counted),
            );
            return resp.map(|b| b.boxed());
        } else if !resp.body().hop_by_hop_removed() {
            // The body is framed anew for the client: a length beside a transfer coding must
            // not reach it (RFC 9112 §6.3 item 3).
            if resp.headers().contains_key(header::TRANSFER_ENCODING) {
                resp.headers_mut().remove(header::CONTENT_LENGTH);
            }
            fwd::strip_hop_by_hop(resp.headers_mut(), false);
        }
        let resp = resp.map(|b| match write_deadline {
            Some(at) => crate::deadline::Deadline::new(b, at, "write").boxed(),
            None => b.boxed(),
        });
        match (slots.is_empty(), counted) {
            (true, None) => resp,
            (false, None) => resp.map(|b| crate::body::Held::wrap(b, slots)),
            (_, Some(c)) => resp.map(|b| crate::body::Held::wrap(b, (slots, c))),
        }
    }
}
