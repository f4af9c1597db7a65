//! Serving a plan: one listener per entry point, routing, forwarding with streamed bodies, protocol
//! upgrades (WebSocket), Traefik's error answers, and graceful shutdown.
//!
//! What this runtime version serves and what it refuses is decided at start
//! ([`Runtime::new`] returns [`ServeError::Unsupported`] listing every feature of the plan it cannot
//! honour yet), so a plan is never served half-way: TLS entry points, basic auth and the dashboard
//! come with the next issues.

use crate::FastMap;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::http1::server::RequestBody;
use bridge_plan::{MiddlewareKind, Plan, ServiceKind};
use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, Uri, header};
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::proxy::forwarded_headers::{self as forward, Incoming as IncomingInfo};
use crate::upstream::health::{ProbeResult, ProbeTarget, Prober};
use crate::routing::{RequestInfo, RouteTable};
use crate::upstream::{FailureKind, Pick, Upstreams};

/// Response body type for everything the proxy answers.
pub type Body = BoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;
/// Request body type sent upstream: the client's streamed body, or empty for a retry.
pub type ReqBody =
    http_body_util::combinators::UnsyncBoxBody<Bytes, Box<dyn std::error::Error + Send + Sync>>;
/// Response body type received from servers.
type UpstreamBody = crate::http1::pool::UpstreamBody<ReqBody>;

/// True for requests that may be sent again when the first server could not be reached: safe
/// methods without a body (nothing was consumed, repeating cannot change state).
fn retryable(method: &http::Method, fields: &crate::proxy::strict::Fields) -> bool {
    let safe = matches!(
        *method,
        http::Method::GET | http::Method::HEAD | http::Method::OPTIONS
    );
    safe && fields.bodiless()
}

/// Why a plan cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The plan uses features this runtime version does not implement yet.
    #[error("this bridge-runtime cannot serve the plan yet:\n  - {}", .0.join("\n  - "))]
    Unsupported(Vec<String>),
    /// Routing tables could not be built.
    #[error(transparent)]
    Routing(#[from] crate::routing::RoutingError),
    /// Upstreams could not be built.
    #[error(transparent)]
    Upstream(#[from] crate::upstream::UpstreamError),
    /// An entry point address is invalid.
    #[error("entry point `{0}`: cannot listen on `{1}`")]
    Address(String, String),
    /// A basicAuth middleware's users could not be loaded.
    #[error("middleware `{0}`: {1}")]
    Auth(String, crate::middleware::basic_auth::AuthError),
    /// The access log file cannot be opened.
    #[error("{0}")]
    AccessLog(std::io::Error),
    /// TLS could not be set up (certificates, options).
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// Connections to servers could not be set up (servers transports, server URLs).
    #[error(transparent)]
    Transport(#[from] crate::transport::TransportError),
    /// Binding a listener failed.
    #[error("entry point `{name}`: cannot listen on {addr}: {source}")]
    Bind {
        /// Entry point.
        name: String,
        /// Address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// Everything needed to answer requests; shared by all connections.
#[derive(Debug)]
pub struct Runtime {
    plan: Arc<Plan>,
    upstreams: Upstreams,
    tables: FastMap<String, RouteTable>,
    /// Per load balancer server: its pooled client (http, https or h2c, with its transport).
    clients: crate::transport::Clients<ReqBody>,
    /// Per health-check probe URL: its client, with the load balancer's servers transport.
    probe_clients: Arc<HashMap<String, crate::transport::Upstream<Full<Bytes>>>>,
    /// This host's name, the `X-Forwarded-Server` value.
    server_name_value: HeaderValue,
    auth: FastMap<String, Arc<crate::middleware::basic_auth::BasicAuth>>,
    started: String,
    regexes: FastMap<String, Vec<regex::Regex>>,
    /// Per entry point: parsed `forwardedHeaders`.
    trust: FastMap<String, forward::Trust>,
    /// Per ipAllowList middleware: parsed `sourceRange`.
    allow: FastMap<String, Vec<ipnet::IpNet>>,
    /// Per server URL: what to send as `Host` and where to connect (after `--resolve`).
    targets: FastMap<String, Target>,
    /// Per entry point serving TLS: its rustls configuration (certificates read at load).
    tls: FastMap<String, Arc<rustls::ServerConfig>>,
    /// Per entry point serving TLS: the routers with TLS, for connections that are TLS.
    tls_tables: FastMap<String, RouteTable>,
    /// Per headers middleware with CORS options.
    cors: FastMap<String, Arc<crate::middleware::cors::Cors>>,
    /// Per mirroring service with mirrors: which requests are copied where.
    mirrors: FastMap<String, Arc<crate::proxy::mirror::Mirroring>>,
    /// Metrics and access log (kept across reloads that do not change their settings).
    observer: Option<Arc<crate::observe::Observer>>,
}

/// What [`Runtime::arrive`] decided about a request before routing.
#[derive(Debug)]
struct Arrival {
    /// The request's host (absolute-form authority, else `Host`), as a shared header value.
    host: Option<HeaderValue>,
    /// The request asks to switch protocols (its `Upgrade`/`Connection: upgrade` kept).
    upgrade: bool,
    /// The forwarding fields the proxy adds.
    forwarded: forward::Forwarded,
    /// What the request's fields say about how it is carried (looked up again after a
    /// middleware changed the fields).
    fields: crate::proxy::strict::Fields,
}

/// The client end of a connection, with its address formatted once for `X-Forwarded-For`.
#[derive(Debug, Clone)]
pub struct Peer {
    /// TCP peer address.
    pub addr: SocketAddr,
    /// The peer's IP as `X-Forwarded-For` / `X-Real-Ip` carry it.
    pub ip_value: HeaderValue,
}

impl Peer {
    /// The peer at `addr`.
    pub fn new(addr: SocketAddr) -> Peer {
        Peer {
            addr,
            ip_value: forward::peer_value(addr.ip()),
        }
    }
}

/// A server URL resolved once at load.
#[derive(Debug, Clone)]
struct Target {
    /// `host:port` as written, for the `Host` header when it is not passed through.
    authority: String,
    /// `host:port` to connect to (the pinned IP with `--resolve`).
    connect: String,
    /// `authority` as a header value, made once.
    host_value: HeaderValue,
}

impl Target {
    fn new(url: &str, resolve: &HashMap<String, IpAddr>) -> Option<Target> {
        let uri = url.parse::<Uri>().ok()?;
        let authority = uri.authority()?.as_str().to_owned();
        let connect = match uri.host().and_then(|h| resolve.get(h)) {
            Some(ip) => {
                let ip = if ip.is_ipv6() {
                    format!("[{ip}]")
                } else {
                    ip.to_string()
                };
                uri.port_u16().map_or(ip.clone(), |p| format!("{ip}:{p}"))
            }
            None => authority.clone(),
        };
        let host_value = HeaderValue::from_str(&authority).ok()?;
        Some(Target {
            authority,
            connect,
            host_value,
        })
    }
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from_static(body.as_bytes()))
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

impl Runtime {
    /// Checks that every feature of the plan is implemented, then builds routing and upstreams.
    pub fn new(plan: Arc<Plan>, resolve: HashMap<String, IpAddr>) -> Result<Runtime, ServeError> {
        Runtime::new_after(plan, resolve, None)
    }

    /// [`Runtime::new`] for a reload: metrics and the access log of `old` carry over when the new
    /// plan configures them the same way, so counters do not reset.
    pub fn new_after(
        plan: Arc<Plan>,
        resolve: HashMap<String, IpAddr>,
        old: Option<&Runtime>,
    ) -> Result<Runtime, ServeError> {
        let mut missing = Vec::new();
        for (name, m) in &plan.middlewares {
            let ok = matches!(
                m.kind,
                MiddlewareKind::Headers(_)
                    | MiddlewareKind::BasicAuth(_)
                    | MiddlewareKind::StripPrefix(_)
                    | MiddlewareKind::AddPrefix(_)
                    | MiddlewareKind::ReplacePath(_)
                    | MiddlewareKind::StripPrefixRegex(_)
                    | MiddlewareKind::RedirectScheme(_)
                    | MiddlewareKind::RedirectRegex(_)
                    | MiddlewareKind::IpAllowList(_)
                    | MiddlewareKind::Retry(_)
            );
            if !ok {
                missing.push(format!(
                    "middleware `{name}`: this kind is not implemented yet"
                ));
            }
        }
        missing.extend(crate::proxy::mirror::too_deep(&plan));
        if !missing.is_empty() {
            return Err(ServeError::Unsupported(missing));
        }
        let upstreams = Upstreams::from_plan(&plan)?;
        let mut tables = FastMap::default();
        for name in plan.entrypoints.keys() {
            tables.insert(name.clone(), RouteTable::build(&plan, name, false)?);
        }
        let tls = crate::tls::configs(&plan)?;
        let mut tls_tables = FastMap::default();
        for name in tls.keys() {
            tls_tables.insert(name.clone(), RouteTable::build(&plan, name, true)?);
        }
        let mut transports = crate::transport::Builder::default();
        let clients = crate::transport::Clients::from_plan(&plan, &resolve, &mut transports)?;
        let probe_clients = Arc::new(probe_clients(&plan, &resolve, &mut transports)?);
        let server_name = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "bridge-runtime".into());
        let mut auth = FastMap::default();
        for (name, m) in &plan.middlewares {
            if let MiddlewareKind::BasicAuth(cfg) = &m.kind {
                let a = crate::middleware::basic_auth::BasicAuth::from_plan(cfg)
                    .map_err(|e| ServeError::Auth(name.clone(), e))?;
                auth.insert(name.clone(), Arc::new(a));
            }
        }
        let mut regexes = FastMap::default();
        for (name, m) in &plan.middlewares {
            let sources: Vec<&String> = match &m.kind {
                MiddlewareKind::StripPrefixRegex(x) => x.regex.iter().collect(),
                MiddlewareKind::RedirectRegex(x) => vec![&x.regex],
                _ => continue,
            };
            let compiled = sources
                .into_iter()
                .map(|r| {
                    regex::Regex::new(r).map_err(|e| {
                        ServeError::Unsupported(vec![format!(
                            "middleware `{name}`: regex `{r}` does not compile: {e}"
                        )])
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            regexes.insert(name.clone(), compiled);
        }
        let trust = plan
            .entrypoints
            .iter()
            .map(|(n, e)| (n.clone(), forward::Trust::new(&e.forwarded_headers)))
            .collect();
        let allow = plan
            .middlewares
            .iter()
            .filter_map(|(n, m)| match &m.kind {
                MiddlewareKind::IpAllowList(al) => {
                    Some((n.clone(), forward::parse_nets(&al.source_range)))
                }
                _ => None,
            })
            .collect();
        let targets = plan
            .services
            .values()
            .filter_map(|s| match &s.kind {
                ServiceKind::LoadBalancer(lb) => Some(lb.servers.iter()),
                _ => None,
            })
            .flatten()
            .filter_map(|srv| Target::new(&srv.url, &resolve).map(|t| (srv.url.clone(), t)))
            .collect();
        let cors = cors_settings(&plan)?;
        let observer = match old {
            Some(o) if o.plan.metrics == plan.metrics && o.plan.access_log == plan.access_log => {
                o.observer.clone()
            }
            _ => crate::observe::Observer::new(
                plan.metrics
                    .as_ref()
                    .map(|m| Arc::new(crate::observe::metrics::Metrics::new(m))),
                plan.access_log.as_ref(),
            )
            .map_err(ServeError::AccessLog)?,
        };
        Ok(Runtime {
            mirrors: crate::proxy::mirror::from_plan(&plan).into_iter().collect(),
            cors: cors.into_iter().collect(),
            observer,
            tls: tls.into_iter().collect(),
            tls_tables,
            trust,
            allow,
            targets,
            regexes,
            plan,
            upstreams,
            tables,
            clients,
            probe_clients,
            server_name_value: HeaderValue::from_str(&server_name)
                .unwrap_or_else(|_| HeaderValue::from_static("bridge-runtime")),
            auth,
            started: rfc3339_now(),
        })
    }

    /// The upstream state (for health checking and the API).
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// A prober for this plan's health checks: each probe with its load balancer's scheme and
    /// servers transport; `resolve` pins host names like `--resolve`.
    pub fn prober(&self, resolve: HashMap<String, IpAddr>) -> HttpProber {
        let mut p = HttpProber::new(resolve);
        p.clients = self.probe_clients.clone();
        p
    }

    /// The Traefik-compatible API and the dashboard, if `uri` is one of their paths.
    fn api(&self, method: &http::Method, uri: &Uri) -> Option<Response<Body>> {
        let r = crate::admin::api::handle(
            &self.plan,
            &self.upstreams,
            method,
            uri.path(),
            uri.query(),
            &self.started,
        )?;
        let mut resp = Response::new(
            Full::new(r.body)
                .map_err(|never: Infallible| match never {})
                .boxed(),
        );
        *resp.status_mut() = r.status;
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(r.content_type),
        );
        if let Some(p) = r
            .next_page
            .and_then(|p| HeaderValue::from_str(&p.to_string()).ok())
        {
            resp.headers_mut().insert("x-next-page", p);
        }
        if let Some(l) = r.location.and_then(|l| HeaderValue::from_str(&l).ok()) {
            resp.headers_mut().insert(header::LOCATION, l);
        }
        Some(resp)
    }

    /// The plan being served.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// Copies the health state of servers that exist, unchanged, in `old` (same service, same URL),
    /// so a reload does not send traffic back to nodes known to be down, nor hold it from nodes known
    /// to be up. Returns how many states were carried over.
    pub fn carry_health_from(&self, old: &Runtime) -> usize {
        let mut carried = 0;
        for name in self.plan.services.keys() {
            let Some(states) = old.upstreams.server_states(name) else {
                continue;
            };
            for (server, _, state) in states {
                if let Some(new_ref) = self.upstreams.server_ref(name, server.url()) {
                    self.upstreams
                        .set_state(&new_ref, state, "kept across reload");
                    carried += 1;
                }
            }
        }
        carried
    }

    /// Metrics, when the plan enables them.
    pub fn metrics(&self) -> Option<&Arc<crate::observe::metrics::Metrics>> {
        self.observer.as_ref().and_then(|o| o.metrics.as_ref())
    }

    /// Answers one request that arrived on entry point `ep` from `peer`, over TLS when `tls`;
    /// with metrics or an access log, the request is recorded when its response has been sent.
    ///
    /// One heap allocation per request holds the whole state of answering it; it is boxed here
    /// (not by the caller) so a request without metrics or access log does not carry the
    /// observed variant's state, and hyper moves a pointer instead of kilobytes.
    pub fn handle(
        self: Arc<Self>,
        ep: Arc<str>,
        peer: Peer,
        tls: bool,
        mut req: Request<RequestBody>,
    ) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> {
        let fields = match crate::proxy::strict::check_request(&mut req) {
            Ok(fields) => fields,
            Err(refused) => return Box::pin(std::future::ready(refused.response())),
        };
        let arrival = self.arrive(&ep, &peer, tls, &mut req, fields);
        match self.observer.clone() {
            None => Box::pin(self.respond(ep, peer, tls, req, arrival)),
            Some(observer) => Box::pin(self.observed(observer, ep, peer, tls, req, arrival)),
        }
    }

    /// Where the values of the forwarding fields come from for a request of `peer`.
    fn sources<'a>(
        &'a self,
        host: Option<&'a HeaderValue>,
        peer: &'a Peer,
    ) -> forward::Sources<'a> {
        forward::Sources {
            host,
            peer: &peer.ip_value,
            server_name: &self.server_name_value,
        }
    }

    /// What happens to every request before routing, in Traefik's order (its entry point
    /// handler): hop-by-hop fields and the ones `Connection` names leave, then the entry
    /// point's `forwardedHeaders` step removes forged forwarding fields and decides the
    /// proxy's. So rules, middlewares (ipAllowList), the access log and the server all see the
    /// same, sanitised values.
    fn arrive(
        &self,
        ep: &str,
        peer: &Peer,
        tls: bool,
        req: &mut Request<RequestBody>,
        mut fields: crate::proxy::strict::Fields,
    ) -> Arrival {
        // The host as a header value: a reference-counted copy of the request's, so it outlives
        // the changes middlewares make to the request without being copied.
        let host: Option<HeaderValue> = match req.uri().authority() {
            Some(a) => HeaderValue::from_str(a.as_str()).ok(),
            None => fields.host.take().filter(|h| h.to_str().is_ok()),
        };
        let upgrade = fields.upgrade && forward::is_upgrade(req.headers());
        let headers = req.headers_mut();
        forward::strip_hop_by_hop(headers, upgrade);
        let forwarded = forward::forwarded(
            headers,
            &IncomingInfo {
                peer: peer.addr.ip(),
                peer_value: &peer.ip_value,
                tls,
                upgrade,
                host: host.as_ref(),
                // Only needed without a host (HTTP/1.0): no lookup otherwise.
                entrypoint_port: if host.is_none() {
                    self.plan.entrypoints.get(ep).map_or(0, |e| e.port)
                } else {
                    0
                },
                server_name: &self.server_name_value,
            },
            self.trust.get(ep).unwrap_or(&forward::Trust::NONE),
        );
        Arrival {
            host,
            upgrade,
            forwarded,
            fields,
        }
    }

    async fn observed(
        self: Arc<Self>,
        observer: Arc<crate::observe::Observer>,
        ep: Arc<str>,
        peer: Peer,
        tls: bool,
        req: Request<RequestBody>,
        arrival: Arrival,
    ) -> Response<Body> {
        let header = |h: header::HeaderName| {
            req.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let facts = crate::observe::RequestFacts {
            entrypoint: crate::observe::metrics::Name::from(&*ep),
            peer: peer.addr,
            method: req.method().as_str().to_owned(),
            path: req
                .uri()
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
            protocol: match req.version() {
                http::Version::HTTP_2 => "HTTP/2.0",
                http::Version::HTTP_10 => "HTTP/1.0",
                _ => "HTTP/1.1",
            },
            scheme: if tls { "https" } else { "http" },
            host: req
                .uri()
                .authority()
                .map(|a| a.as_str().to_owned())
                .or_else(|| header(header::HOST)),
            referer: header(header::REFERER),
            user_agent: header(header::USER_AGENT),
            websocket: arrival.upgrade,
            headers: if observer.wants_headers() {
                // Go keeps `Host` out of the header map, so Traefik never logs it as a header.
                let mut all: Vec<(String, String)> = req
                    .headers()
                    .iter()
                    .filter(|(k, _)| *k != header::HOST)
                    .filter_map(|(k, v)| {
                        v.to_str()
                            .ok()
                            .map(|v| (k.as_str().to_owned(), v.to_owned()))
                    })
                    .collect();
                let src = self.sources(arrival.host.as_ref(), &peer);
                all.extend(
                    arrival
                        .forwarded
                        .visible(&src)
                        .into_iter()
                        .map(|(k, v)| (k.to_owned(), v)),
                );
                all
            } else {
                Vec::new()
            },
            start: tokio::time::Instant::now(),
            start_wall: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        };
        let (resp, served) =
            crate::observe::scoped(self.respond(ep, peer, tls, req, arrival)).await;
        let status = resp.status().as_u16();
        resp.map(|b| crate::observe::Observed::new(b, observer, facts, served, status).boxed())
    }

    async fn respond(
        self: Arc<Self>,
        ep: Arc<str>,
        peer: Peer,
        tls: bool,
        mut req: Request<RequestBody>,
        mut arrival: Arrival,
    ) -> Response<Body> {
        let Some(entry) = self.plan.entrypoints.get(&*ep) else {
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        let scheme = if tls { "https" } else { "http" };
        let host_value = arrival.host.take();
        let host_owned: Option<&str> = host_value.as_ref().and_then(|h| h.to_str().ok());
        if let Some(redirect) = &entry.redirect {
            return redirect_response(redirect, host_owned, req.method(), req.uri());
        }
        // Traefik's `prometheus@internal` router on the metrics entry point (TLS-only when the
        // entry point serves TLS, like the routers there).
        if req.uri().path() == "/metrics"
            && self.plan.metrics.as_ref().is_some_and(|m| {
                !m.manual_routing && m.entrypoint == *ep && (tls || !self.tls.contains_key(&*ep))
            })
        {
            return self.metrics_response(req.headers().get(header::ACCEPT));
        }
        if self
            .plan
            .api
            .as_ref()
            .is_some_and(|a| a.insecure && a.entrypoint == *ep)
        {
            let path = req.uri().path();
            if path == "/ping" {
                return text(StatusCode::OK, "OK");
            }
            if let Some(r) = self.api(req.method(), req.uri()) {
                return r;
            }
        }
        // Routing borrows the request; the borrow ends before middlewares change it.
        let router_key: Option<&str> = {
            let tables = if tls { &self.tls_tables } else { &self.tables };
            let table = tables.get(&*ep);
            let src = self.sources(host_value.as_ref(), &peer);
            let mut digits = [0u8; 5];
            let mut header_refs: Vec<(&str, &str)> = Vec::new();
            if table.is_some_and(RouteTable::uses_headers) {
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
                host: host_owned,
                path: req.uri().path(),
                query: req.uri().query(),
                headers: &header_refs,
                peer: peer.addr.ip(),
            };
            table.and_then(|t| t.route(&info))
        };
        let Some(router_key) = router_key else {
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        let Some(router) = self.plan.routers.get(router_key) else {
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        crate::observe::note(|s| {
            s.router = Some(router_key.to_owned());
            s.service = Some(router.service.clone());
        });
        if router.service == "ping@internal" {
            return text(StatusCode::OK, "OK");
        }
        if router.service == "prometheus@internal" {
            return self.metrics_response(req.headers().get(header::ACCEPT));
        }
        // Request middlewares, in chain order.
        // Borrowed from a reference-counted copy of the request's until a middleware rewrites it.
        let original_pq = req.uri().path_and_query().cloned();
        let mut path_and_query: std::borrow::Cow<'_, str> =
            std::borrow::Cow::Borrowed(original_pq.as_ref().map_or("/", |p| p.as_str()));
        let mut response_headers: Vec<(String, String)> = Vec::new();
        // Attempts for safe requests that cannot reach a server: the retry middleware's, else 2
        // (bridgectl retries once on another server by default).
        let mut retry = (2u32, Duration::ZERO);
        let mut sts: Option<String> = None;
        let mut cors_after: Vec<(Arc<crate::middleware::cors::Cors>, String)> = Vec::new();
        let mut changed_fields = false;
        for m in &router.middlewares {
            let Some(mw) = self.plan.middlewares.get(m) else {
                continue;
            };
            if let Some(a) = self.auth.get(m) {
                match Box::pin(a.verify(req.headers().get(header::AUTHORIZATION))).await {
                    crate::middleware::basic_auth::Verdict::Allowed { user } => {
                        crate::observe::note(|s| s.user = Some(user.clone()));
                        if let Some(field) = a.header_field()
                            && let (Ok(name), Ok(value)) = (
                                http::HeaderName::from_bytes(field.as_bytes()),
                                HeaderValue::from_str(&user),
                            )
                        {
                            req.headers_mut().insert(name, value);
                        }
                        if a.remove_header() {
                            req.headers_mut().remove(header::AUTHORIZATION);
                        }
                    }
                    crate::middleware::basic_auth::Verdict::Denied => {
                        return crate::middleware::basic_auth::unauthorized(a.realm()).map(|b| {
                            Full::new(b)
                                .map_err(|never: Infallible| match never {})
                                .boxed()
                        });
                    }
                }
                continue;
            }
            match &mw.kind {
                MiddlewareKind::StripPrefix(sp) => {
                    let (p, q) = split_pq(&path_and_query);
                    if let Some(prefix) = sp.prefixes.iter().find(|pre| p.starts_with(pre.as_str()))
                    {
                        let rest = &p[prefix.len()..];
                        let rest = if rest.starts_with('/') {
                            rest.to_owned()
                        } else {
                            format!("/{rest}")
                        };
                        if let Ok(v) = HeaderValue::from_str(prefix) {
                            req.headers_mut().insert("x-forwarded-prefix", v);
                        }
                        path_and_query = std::borrow::Cow::Owned(join_pq(&rest, q));
                    }
                }
                MiddlewareKind::AddPrefix(ap) => {
                    let (p, q) = split_pq(&path_and_query);
                    path_and_query = std::borrow::Cow::Owned(join_pq(
                        &format!("{}{}", ap.prefix.trim_end_matches('/'), p),
                        q,
                    ));
                }
                MiddlewareKind::StripPrefixRegex(_) => {
                    let (p, q) = split_pq(&path_and_query);
                    let stripped = self.regexes.get(m).and_then(|res| {
                        res.iter().find_map(|re| {
                            re.find(p)
                                .filter(|f| f.start() == 0)
                                .map(|f| f.as_str().to_owned())
                        })
                    });
                    if let Some(prefix) = stripped {
                        let rest = &p[prefix.len()..];
                        let rest = if rest.starts_with('/') {
                            rest.to_owned()
                        } else {
                            format!("/{rest}")
                        };
                        if let Ok(v) = HeaderValue::from_str(&prefix) {
                            req.headers_mut().insert("x-forwarded-prefix", v);
                        }
                        path_and_query = std::borrow::Cow::Owned(join_pq(&rest, q));
                    }
                }
                MiddlewareKind::RedirectScheme(rs) if rs.scheme != scheme => {
                    let host = host_owned.unwrap_or("");
                    let bare = strip_port(host);
                    let port = rs.port.as_deref().filter(|p| {
                        !((rs.scheme == "https" && *p == "443")
                            || (rs.scheme == "http" && *p == "80"))
                    });
                    let location = match port {
                        Some(p) => format!("{}://{bare}:{p}{path_and_query}", rs.scheme),
                        None => format!("{}://{bare}{path_and_query}", rs.scheme),
                    };
                    return redirect_to(&location, rs.permanent, req.method());
                }
                MiddlewareKind::RedirectRegex(rr) => {
                    let url = format!("{scheme}://{}{path_and_query}", host_owned.unwrap_or(""));
                    if let Some(re) = self.regexes.get(m).and_then(|r| r.first())
                        && re.is_match(&url)
                    {
                        let location = re.replace(&url, rr.replacement.as_str()).into_owned();
                        if location != url {
                            return redirect_to(&location, rr.permanent, req.method());
                        }
                    }
                }
                MiddlewareKind::IpAllowList(al) => {
                    let client =
                        client_ip(peer.addr.ip(), req.headers(), al.depth, &al.excluded_ips);
                    let nets = self.allow.get(m).map_or(&[][..], Vec::as_slice);
                    let allowed = client.is_some_and(|ip| forward::in_nets(nets, ip));
                    if !allowed {
                        let status = StatusCode::from_u16(al.reject_status_code)
                            .unwrap_or(StatusCode::FORBIDDEN);
                        return text(status, "Forbidden");
                    }
                }
                MiddlewareKind::Retry(r) => {
                    retry = (
                        r.attempts.max(1),
                        Duration::from_millis(r.initial_interval_ms),
                    );
                }
                MiddlewareKind::ReplacePath(rp) => {
                    let (p, q) = split_pq(&path_and_query);
                    if let Ok(v) = HeaderValue::from_str(p) {
                        req.headers_mut().insert("x-replaced-path", v);
                    }
                    path_and_query = std::borrow::Cow::Owned(join_pq(&rp.path, q));
                }
                MiddlewareKind::Headers(h) => {
                    if let Some(c) = self.cors.get(m) {
                        if crate::middleware::cors::is_preflight(req.method(), req.headers()) {
                            return preflight_response(c, req.headers(), &response_headers);
                        }
                        cors_after.push((c.clone(), crate::middleware::cors::origin(req.headers()).to_owned()));
                    }
                    for (k, v) in &h.custom_request_headers {
                        let Ok(name) = http::HeaderName::from_bytes(k.as_bytes()) else {
                            continue;
                        };
                        // The middleware's value (or removal) wins over the proxy's own.
                        arrival.forwarded.forget(&name);
                        changed_fields = true;
                        if v.is_empty() {
                            req.headers_mut().remove(name);
                        } else if let Ok(val) = HeaderValue::from_str(v) {
                            req.headers_mut().insert(name, val);
                        }
                    }
                    response_headers.extend(
                        h.custom_response_headers
                            .iter()
                            .map(|(k, v)| (k.clone(), v.clone())),
                    );
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
                            h.browser_xss_filter.then(|| "1; mode=block".to_owned()),
                        ),
                        ("content-security-policy", h.content_security_policy.clone()),
                        ("referrer-policy", h.referrer_policy.clone()),
                        ("permissions-policy", h.permissions_policy.clone()),
                    ];
                    response_headers.extend(
                        security
                            .into_iter()
                            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v))),
                    );
                    // HSTS only means something over HTTPS (RFC 6797 §7.2), unless forced.
                    if h.sts_seconds > 0 && (tls || h.force_sts_header) {
                        let mut v = format!("max-age={}", h.sts_seconds);
                        if h.sts_include_subdomains {
                            v.push_str("; includeSubDomains");
                        }
                        if h.sts_preload {
                            v.push_str("; preload");
                        }
                        sts = Some(v);
                    }
                }
                _ => {}
            }
        }
        if changed_fields {
            arrival.fields = crate::proxy::strict::Fields::of(req.headers());
        }
        if router.service.ends_with("@internal") {
            // api@internal / dashboard@internal, after the router's middlewares (basicAuth in prod).
            return self
                .api(req.method(), req.uri())
                .unwrap_or_else(|| text(StatusCode::NOT_FOUND, "404 page not found\n"));
        }
        let mut resp = self
            .forward(
                &router.service,
                req,
                &peer,
                entry,
                (host_value.as_ref(), arrival),
                &path_and_query,
                retry,
            )
            .await;
        for (k, v) in response_headers {
            if v.is_empty() {
                resp.headers_mut().remove(k.as_str());
            } else if let (Ok(name), Ok(val)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                HeaderValue::from_str(&v),
            ) {
                resp.headers_mut().insert(name, val);
            }
        }
        if let Some(v) = sts.and_then(|v| HeaderValue::from_str(&v).ok()) {
            resp.headers_mut()
                .insert(header::STRICT_TRANSPORT_SECURITY, v);
        }
        for (c, origin) in cors_after {
            c.apply(&origin, resp.headers_mut());
        }
        resp
    }

    #[allow(
        clippy::too_many_arguments,
        reason = "one call site; a struct would only rename these"
    )]
    async fn forward(
        &self,
        service: &str,
        mut req: Request<RequestBody>,
        peer: &Peer,
        entry: &bridge_plan::EntryPoint,
        (host_value, arrival): (Option<&HeaderValue>, Arrival),
        path_and_query: &str,
        (max_attempts, mut backoff): (u32, Duration),
    ) -> Response<Body> {
        // The mirroring services on the way to the server: each copies the request.
        let mut via = crate::upstream::Via::default();
        let pick = match self.upstreams.service_id(service) {
            Some(id) => self.upstreams.pick_holding(id, &mut via).await,
            None => Pick::UnknownService,
        };
        let server = match pick {
            Pick::Server(s) => s,
            Pick::NoAvailableServer => {
                return text(StatusCode::SERVICE_UNAVAILABLE, "no available server\n");
            }
            Pick::UnknownService => {
                return text(StatusCode::INTERNAL_SERVER_ERROR, "unknown service\n");
            }
        };
        let pass_host = self.plan.services.get(server.service()).is_none_or(
            |s| !matches!(&s.kind, ServiceKind::LoadBalancer(lb) if !lb.pass_host_header),
        );
        let Some(target) = self.targets.get(server.url()) else {
            return text(StatusCode::BAD_GATEWAY, "Bad Gateway\n");
        };
        let upgrade = arrival.upgrade;
        let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
        let may_retry = !upgrade && retryable(req.method(), &arrival.fields);
        let mut forwarding = {
            let mut f = arrival.forwarded;
            f.append_for(req.headers_mut(), &peer.ip_value);
            Some(f)
        };
        let src = self.sources(host_value, peer);
        let (mut parts, body) = req.into_parts();
        let host = host_value.and_then(|h| h.to_str().ok());
        let timeouts = &entry.timeouts;
        let started = tokio::time::Instant::now();
        let write_deadline = (timeouts.write_ms > 0 && !upgrade)
            .then(|| started + Duration::from_millis(timeouts.write_ms));
        let read_deadline =
            (timeouts.read_ms > 0).then(|| started + Duration::from_millis(timeouts.read_ms));
        // A request without a body to an `http://` server is written from borrowed parts by the
        // proxy's own codec: no owned copy of the fields for a retry, no boxed body. Mirrored
        // requests keep the owned path: their copies go out when the body has been read.
        let bodiless = !upgrade
            && hyper::body::Body::is_end_stream(&body)
            && !via.names().any(|m| self.mirrors.contains_key(m))
            && crate::http1::client::eligible_by(&parts.method, &arrival.fields);
        let mut body = Some(body);
        let mut server = server;
        let mut target = target;
        // Origin-form for the server (the client dials the server's address itself): the
        // request's own URI when middlewares left its path alone, which saves parsing it again.
        let uri = if parts.uri.scheme().is_none()
            && parts
                .uri
                .path_and_query()
                .map(http::uri::PathAndQuery::as_str)
                == Some(path_and_query)
        {
            std::mem::take(&mut parts.uri)
        } else {
            match path_and_query.parse::<http::uri::PathAndQuery>() {
                Ok(pq) => Uri::from(pq),
                Err(_) => return text(StatusCode::BAD_GATEWAY, "Bad Gateway\n"),
            }
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let host_field = match host_value {
                Some(h) if pass_host => h,
                _ => &target.host_value,
            };
            let sent = match self.clients.get(server.service(), server.url()) {
                Some(c) if bodiless && c.takes_bodiless() => {
                    let req = crate::http1::client::Bodiless {
                        method: &parts.method,
                        target: uri.path_and_query().map_or("/", |pq| pq.as_str()),
                        host: Some(host_field),
                        headers: &parts.headers,
                        extra: forwarding.as_ref().map(|f| (f, src)),
                    };
                    c.send_bodiless(req)
                        .await
                        .unwrap_or(Err(crate::transport::SendError::NoClient))
                }
                Some(c) => {
                    if let Some(f) = forwarding.take() {
                        f.apply(&src, &mut parts.headers);
                    }
                    // Keep the headers for a possible retry; the last attempt takes them.
                    let mut headers = if may_retry && attempt < max_attempts {
                        parts.headers.clone()
                    } else {
                        std::mem::take(&mut parts.headers)
                    };
                    headers.insert(header::HOST, host_field.clone());
                    let b = match body.take() {
                        Some(b) => self.request_body(
                            b,
                            (&via, &parts, host, path_and_query),
                            upgrade,
                            read_deadline,
                        ),
                        None => http_body_util::Empty::new()
                            .map_err(|never: Infallible| match never {})
                            .boxed_unsync(),
                    };
                    let mut upstream_req = Request::new(b);
                    *upstream_req.method_mut() = parts.method.clone();
                    *upstream_req.uri_mut() = uri.clone();
                    *upstream_req.version_mut() = http::Version::HTTP_11;
                    *upstream_req.headers_mut() = headers;
                    c.send(upstream_req, upgrade).await
                }
                None => Err(crate::transport::SendError::NoClient),
            };
            match sent {
                Err(e) if may_retry && attempt < max_attempts => {
                    crate::observe::note(|s| s.retries += 1);
                    let (kind, timed_out) = classify(&e);
                    self.upstreams.report_failure(&server, kind);
                    tracing::warn!(
                        "{service} → {}: {e}; retrying on another server",
                        server.url()
                    );
                    if !backoff.is_zero() {
                        Box::pin(tokio::time::sleep(backoff)).await;
                        backoff = (backoff * 2).min(Duration::from_secs(10));
                    }
                    // Retry on another server if there is one (the failed one is down now if it
                    // refused), else on the same one (the retry middleware's semantics).
                    // The body went (or goes) to the mirrors of the first pick only.
                    let next = match self.upstreams.service_id(service) {
                        Some(id) => {
                            let mut again = crate::upstream::Via::default();
                            match self.upstreams.pick_holding(id, &mut again).await {
                                // The server just died and none is left: the re-probe round
                                // that failure triggered may find the standby promoted.
                                Pick::NoAvailableServer if kind.marks_down() => {
                                    self.upstreams
                                        .pick_after_failure(id, &mut again, &server)
                                        .await
                                }
                                other => other,
                            }
                        }
                        None => Pick::UnknownService,
                    };
                    match next {
                        Pick::Server(next) if next.url() != server.url() || max_attempts > 2 => {
                            let Some(t) = self.targets.get(next.url()) else {
                                return text(StatusCode::BAD_GATEWAY, "Bad Gateway\n");
                            };
                            target = t;
                            server = next;
                            continue;
                        }
                        _ => {
                            return if timed_out {
                                text(StatusCode::GATEWAY_TIMEOUT, "Gateway Timeout\n")
                            } else {
                                text(StatusCode::BAD_GATEWAY, "Bad Gateway\n")
                            };
                        }
                    }
                }
                result => {
                    crate::observe::note(|s| s.server = Some(server.url().to_owned()));
                    return self.finish(result, &server, service, client_upgrade, write_deadline);
                }
            }
        }
    }

    /// The body sent upstream on the owned path: under the entry point's read deadline (none
    /// for a request without a body: nothing is left to read), teed to the mirrors if any.
    fn request_body(
        &self,
        body: RequestBody,
        (via, parts, host, path_and_query): (
            &crate::upstream::Via,
            &http::request::Parts,
            Option<&str>,
            &str,
        ),
        upgrade: bool,
        read_deadline: Option<tokio::time::Instant>,
    ) -> ReqBody {
        let body = match read_deadline {
            Some(at) if !upgrade && !hyper::body::Body::is_end_stream(&body) => {
                crate::deadline::Deadline::new(body, at, "read").boxed_unsync()
            }
            _ => body
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
                .boxed_unsync(),
        };
        via.names().fold(body, |body, mirroring| {
            self.mirror(mirroring, parts, host, path_and_query, upgrade, body)
        })
    }

    /// For a request through a mirroring service: picks the mirrors this request is copied to and
    /// a server in each, and sends the copies from a task once the body is complete (see
    /// [`crate::proxy::mirror`]). Returns the body to forward to the main service.
    fn mirror(
        &self,
        service: &str,
        parts: &http::request::Parts,
        host: Option<&str>,
        path_and_query: &str,
        upgrade: bool,
        body: ReqBody,
    ) -> ReqBody {
        let Some(m) = self.mirrors.get(service) else {
            return body;
        };
        if upgrade {
            return body;
        }
        let mut copies = Vec::new();
        for mirror in m.select() {
            let Some(id) = self.upstreams.service_id(&mirror) else {
                continue;
            };
            let Pick::Server(server) = self.upstreams.pick_id(id) else {
                continue; // no healthy server: no copy
            };
            let (Some(client), Some(target)) = (
                self.clients.get(server.service(), server.url()),
                self.targets.get(server.url()),
            ) else {
                continue;
            };
            let pass_host = self.plan.services.get(server.service()).is_none_or(
                |s| !matches!(&s.kind, ServiceKind::LoadBalancer(lb) if !lb.pass_host_header),
            );
            let host_value = match host {
                Some(h) if pass_host => h.to_owned(),
                _ => target.authority.clone(),
            };
            let uri = format!("http://{}{path_and_query}", target.connect);
            copies.push((client.clone(), uri, host_value, server.url().to_owned()));
        }
        if copies.is_empty() {
            return body;
        }
        let (method, mut headers) = (parts.method.clone(), parts.headers.clone());
        headers.remove(header::CONTENT_LENGTH);
        headers.remove(header::TRANSFER_ENCODING);
        let (body, done) = if m.mirror_body {
            let (tee, rx) = crate::proxy::mirror::Tee::new(body, m.max_body_size);
            (tee.boxed_unsync(), Some(rx))
        } else {
            (body, None)
        };
        tokio::spawn(async move {
            let copy = match done {
                Some(rx) => match rx.await {
                    Ok(b) => b,
                    Err(_) => return, // too large, or cut off: no mirroring
                },
                None => Bytes::new(),
            };
            for (client, uri, host_value, url) in copies {
                let Ok(uri) = uri.parse::<Uri>() else {
                    continue;
                };
                let mut req = Request::new(
                    Full::new(copy.clone())
                        .map_err(|never: Infallible| match never {})
                        .boxed_unsync(),
                );
                *req.method_mut() = method.clone();
                *req.uri_mut() = uri;
                *req.headers_mut() = headers.clone();
                if let Ok(v) = HeaderValue::from_str(&host_value) {
                    req.headers_mut().insert(header::HOST, v);
                }
                let sent = async {
                    let resp = client.send(req, false).await?;
                    // Read and drop the answer, so the connection can be reused.
                    let mut b = resp.into_body();
                    while let Some(frame) = b.frame().await {
                        if frame.is_err() {
                            break;
                        }
                    }
                    Ok::<_, crate::transport::SendError>(())
                };
                match tokio::time::timeout(MIRROR_TIMEOUT, sent).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!("mirror → {url}: {}", error_text(&e)),
                    Err(_) => tracing::warn!(
                        "mirror → {url}: no complete answer within {} s",
                        MIRROR_TIMEOUT.as_secs()
                    ),
                }
            }
        });
        body
    }

    /// `/metrics`: OpenMetrics when the scraper asks for it (Prometheus does), else the classic
    /// text format.
    fn metrics_response(&self, accept: Option<&HeaderValue>) -> Response<Body> {
        let Some(m) = self.metrics() else {
            return text(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        let openmetrics = m.render(&self.plan, &self.upstreams);
        let wants_openmetrics = accept
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("application/openmetrics-text"));
        let (body, content_type) = if wants_openmetrics {
            (
                openmetrics,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
        } else {
            (
                crate::observe::metrics::to_prometheus_text(&openmetrics),
                "text/plain; version=0.0.4; charset=utf-8",
            )
        };
        let mut resp = Response::new(
            Full::new(Bytes::from(body))
                .map_err(|never: Infallible| match never {})
                .boxed(),
        );
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        resp
    }

    fn finish(
        &self,
        result: Result<Response<UpstreamBody>, crate::transport::SendError>,
        server: &crate::upstream::ServerRef,
        service: &str,
        client_upgrade: Option<hyper::upgrade::OnUpgrade>,
        write_deadline: Option<tokio::time::Instant>,
    ) -> Response<Body> {
        let server = server.clone();
        match result {
            Ok(mut resp) => {
                if resp.status().is_server_error() {
                    self.upstreams
                        .report_failure(&server, FailureKind::Status5xx);
                }
                if resp.status() == StatusCode::SWITCHING_PROTOCOLS && client_upgrade.is_none() {
                    // A switch nobody asked for: tunnelling it would hand the client's
                    // connection to whatever the server speaks next.
                    tracing::warn!(
                        "{} → {}: 101 Switching Protocols without an upgrade request",
                        service,
                        server.url()
                    );
                    return text(StatusCode::BAD_GATEWAY, "Bad Gateway\n");
                }
                if resp.status() == StatusCode::SWITCHING_PROTOCOLS
                    && let Some(client_upgrade) = client_upgrade
                {
                    let upstream_upgrade = hyper::upgrade::on(&mut resp);
                    tokio::spawn(async move {
                        if let (Ok(c), Ok(u)) = (client_upgrade.await, upstream_upgrade.await) {
                            let (mut c, mut u) = (TokioIo::new(c), TokioIo::new(u));
                            let _ = tokio::io::copy_bidirectional(&mut c, &mut u).await;
                        }
                    });
                } else if !resp.body().hop_by_hop_removed() {
                    // The body is framed anew for the client: a length beside a transfer
                    // coding must not reach it (RFC 9112 §6.3 item 3).
                    if resp.headers().contains_key(header::TRANSFER_ENCODING) {
                        resp.headers_mut().remove(header::CONTENT_LENGTH);
                    }
                    forward::strip_hop_by_hop(resp.headers_mut(), false);
                }
                resp.map(|b| match write_deadline {
                    Some(at) => crate::deadline::Deadline::new(b, at, "write").boxed(),
                    None => b.boxed(),
                })
            }
            Err(e) => {
                let (kind, timed_out) = classify(&e);
                self.upstreams.report_failure(&server, kind);
                tracing::warn!("{} → {}: {}", service, server.url(), error_text(&e));
                if timed_out {
                    text(StatusCode::GATEWAY_TIMEOUT, "Gateway Timeout\n")
                } else {
                    text(StatusCode::BAD_GATEWAY, "Bad Gateway\n")
                }
            }
        }
    }
}

/// A mirrored copy is abandoned when its answer has not been read completely within this long.
const MIRROR_TIMEOUT: Duration = Duration::from_secs(30);

/// The CORS settings of every headers middleware that has some; a bad origin regex refuses the plan.
fn cors_settings(plan: &Plan) -> Result<HashMap<String, Arc<crate::middleware::cors::Cors>>, ServeError> {
    let mut out = HashMap::new();
    for (name, m) in &plan.middlewares {
        if let MiddlewareKind::Headers(h) = &m.kind {
            match crate::middleware::cors::Cors::from_plan(h) {
                Ok(Some(c)) => {
                    out.insert(name.clone(), Arc::new(c));
                }
                Ok(None) => {}
                Err(e) => {
                    return Err(ServeError::Unsupported(vec![format!(
                        "middleware `{name}`: accessControlAllowOriginListRegex does not compile: {e}"
                    )]));
                }
            }
        }
    }
    Ok(out)
}

/// The proxy's own answer to a CORS preflight: 200, empty body, the CORS headers, plus the
/// response headers of the middlewares before this one (they wrap it, as in Traefik).
fn preflight_response(
    c: &crate::middleware::cors::Cors,
    request: &http::HeaderMap,
    earlier: &[(String, String)],
) -> Response<Body> {
    let mut resp = Response::new(
        Full::new(Bytes::new())
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    for (k, v) in earlier {
        if v.is_empty() {
            resp.headers_mut().remove(k.as_str());
        } else if let (Ok(name), Ok(val)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            resp.headers_mut().insert(name, val);
        }
    }
    resp.headers_mut().extend(c.preflight_headers(request));
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    resp
}

/// What a failed upstream request says about its server, and whether it was a timeout (504).
fn classify(e: &crate::transport::SendError) -> (FailureKind, bool) {
    match e {
        crate::transport::SendError::Client(e) => classify_client(e),
        crate::transport::SendError::Pool(e) => {
            let timed_out = e.is_timeout();
            let kind = match (e.is_connect(), timed_out) {
                (true, true) => FailureKind::Timeout,
                (true, false) => FailureKind::ConnectRefused,
                (false, _) => FailureKind::Reset,
            };
            (kind, timed_out)
        }
        crate::transport::SendError::HeaderTimeout(_) => (FailureKind::Timeout, true),
        crate::transport::SendError::NoClient => (FailureKind::ConnectRefused, false),
    }
}

fn classify_client(e: &hyper_util::client::legacy::Error) -> (FailureKind, bool) {
    let timed_out = error_chain_has(e, std::io::ErrorKind::TimedOut)
        || format!("{e:?}").contains("ConnectTimeout");
    let kind = match (e.is_connect(), timed_out) {
        (true, true) => FailureKind::Timeout,
        (true, false) => FailureKind::ConnectRefused,
        (false, _) => FailureKind::Reset,
    };
    (kind, timed_out)
}

fn error_chain_has(e: &(dyn std::error::Error + 'static), kind: std::io::ErrorKind) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == kind)
        {
            return true;
        }
        cur = err.source();
    }
    false
}

fn split_pq(pq: &str) -> (&str, Option<&str>) {
    match pq.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (pq, None),
    }
}

fn join_pq(p: &str, q: Option<&str>) -> String {
    let p = if p.is_empty() { "/" } else { p };
    match q {
        Some(q) => format!("{p}?{q}"),
        None => p.to_owned(),
    }
}

fn redirect_response(
    r: &bridge_plan::Redirect,
    host: Option<&str>,
    method: &http::Method,
    uri: &Uri,
) -> Response<Body> {
    let host = host
        .unwrap_or("")
        .rsplit_once(':')
        .filter(|(h, _)| !h.ends_with(']') || h.starts_with('['))
        .map_or(host.unwrap_or(""), |(h, _)| h)
        .to_owned();
    let default_port = if r.scheme == "https" { 443 } else { 80 };
    let port = if r.port == default_port {
        String::new()
    } else {
        format!(":{}", r.port)
    };
    let pq = uri.path_and_query().map_or("/", |p| p.as_str());
    let location = format!("{}://{host}{port}{pq}", r.scheme);
    let get = method == http::Method::GET || method == http::Method::HEAD;
    let status = match (r.permanent, get) {
        (true, true) => StatusCode::MOVED_PERMANENTLY,
        (true, false) => StatusCode::PERMANENT_REDIRECT,
        (false, true) => StatusCode::FOUND,
        (false, false) => StatusCode::TEMPORARY_REDIRECT,
    };
    let mut resp = text(status, "");
    *resp.body_mut() = Full::new(Bytes::from(
        status.canonical_reason().unwrap_or("").to_owned(),
    ))
    .map_err(|never: Infallible| match never {})
    .boxed();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// The client of every health-check probe URL, with its load balancer's servers transport.
fn probe_clients(
    plan: &Plan,
    resolve: &HashMap<String, IpAddr>,
    builder: &mut crate::transport::Builder,
) -> Result<HashMap<String, crate::transport::Upstream<Full<Bytes>>>, ServeError> {
    let mut out = HashMap::new();
    for s in plan.services.values() {
        let ServiceKind::LoadBalancer(lb) = &s.kind else {
            continue;
        };
        let Some(check) = &lb.health_check else {
            continue;
        };
        let (name, t) = crate::transport::transport_of(plan, lb)?;
        for srv in &lb.servers {
            let Ok(target) = ProbeTarget::new(check, &srv.url) else {
                continue; // reported by the health checker
            };
            if let std::collections::hash_map::Entry::Vacant(e) = out.entry(target.url) {
                let up = builder.upstream(e.key(), name, t, resolve)?;
                e.insert(up);
            }
        }
    }
    Ok(out)
}

/// Probes servers: with the plan's clients ([`Runtime::prober`]) over the probe's scheme (http,
/// https, h2c) and servers transport; otherwise over plain HTTP with a shared client.
#[derive(Debug, Clone)]
pub struct HttpProber {
    client: Client<HttpConnector, Full<Bytes>>,
    resolve: HashMap<String, IpAddr>,
    clients: Arc<HashMap<String, crate::transport::Upstream<Full<Bytes>>>>,
}

impl HttpProber {
    /// A prober; `resolve` pins host names like `--resolve`.
    pub fn new(resolve: HashMap<String, IpAddr>) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Self {
            client: Client::builder(TokioExecutor::new()).build(connector),
            resolve,
            clients: Arc::default(),
        }
    }
}

impl Prober for HttpProber {
    async fn probe(&self, target: &ProbeTarget) -> ProbeResult {
        if let Some(up) = self.clients.get(&target.url) {
            return probe_with(up, target).await;
        }
        let Ok(uri) = target.url.parse::<Uri>() else {
            return ProbeResult::failed("invalid probe URL");
        };
        if uri.scheme_str() != Some("http") {
            return ProbeResult::failed("only http:// health checks are implemented yet");
        }
        let authority = uri
            .authority()
            .map(|a| a.as_str().to_owned())
            .unwrap_or_default();
        let connect = match uri.host().and_then(|h| self.resolve.get(h)) {
            Some(ip) => uri
                .port_u16()
                .map_or(ip.to_string(), |p| format!("{ip}:{p}")),
            None => authority.clone(),
        };
        let pq = uri.path_and_query().map_or("/", |p| p.as_str());
        let Ok(connect_uri) = format!("http://{connect}{pq}").parse::<Uri>() else {
            return ProbeResult::failed("invalid probe URL");
        };
        let Some(req) = probe_request(target, connect_uri, authority) else {
            return ProbeResult::failed("invalid probe request");
        };
        match tokio::time::timeout(target.timeout, self.client.request(req)).await {
            Err(_) => ProbeResult::failed("timed out"),
            Ok(Err(e)) => ProbeResult::failed(e.to_string()),
            Ok(Ok(resp)) => ProbeResult::status(resp.status().as_u16()),
        }
    }
}

/// The probe request: the check's method and headers, `Host` from `hostname` or the server URL's
/// authority, sent to `uri`.
fn probe_request(
    target: &ProbeTarget,
    uri: Uri,
    authority: String,
) -> Option<Request<Full<Bytes>>> {
    let mut builder = Request::builder()
        .method(target.method.as_str())
        .uri(uri)
        .header(
            header::HOST,
            target.host_header.clone().unwrap_or(authority),
        );
    for (k, v) in &target.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder.body(Full::new(Bytes::new())).ok()
}

/// One probe with a plan client: the URL as the request URI (the client dials the server).
async fn probe_with(
    up: &crate::transport::Upstream<Full<Bytes>>,
    target: &ProbeTarget,
) -> ProbeResult {
    let Ok(uri) = target.url.parse::<Uri>() else {
        return ProbeResult::failed("invalid probe URL");
    };
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let pq = uri.path_and_query().map_or("/", |p| p.as_str());
    // The client decides the wire scheme; the URI only carries host and path.
    let Ok(uri) = format!("http://{authority}{pq}").parse::<Uri>() else {
        return ProbeResult::failed("invalid probe URL");
    };
    let Some(req) = probe_request(target, uri, authority) else {
        return ProbeResult::failed("invalid probe request");
    };
    match tokio::time::timeout(target.timeout, up.send(req, false)).await {
        Err(_) => ProbeResult::failed("timed out"),
        Ok(Err(e)) => ProbeResult::failed(error_text(&e)),
        Ok(Ok(resp)) => ProbeResult::status(resp.status().as_u16()),
    }
}

/// An error with its sources (`connect error: ...: invalid peer certificate`).
fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}

/// Resolves an entry point's listen address: `--bind` override, else the plan's (`:80` → all interfaces).
pub fn listen_addr(
    name: &str,
    address: &str,
    binds: &HashMap<String, SocketAddr>,
) -> Result<SocketAddr, ServeError> {
    if let Some(a) = binds.get(name) {
        return Ok(*a);
    }
    let hostport = address.split('/').next().unwrap_or(address);
    let full = if hostport.starts_with(':') {
        format!("0.0.0.0{hostport}")
    } else {
        hostport.to_owned()
    };
    full.parse()
        .map_err(|_| ServeError::Address(name.to_owned(), address.to_owned()))
}

/// One accepted connection of an entry point, before its protocol is known.
struct Conn {
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: Arc<str>,
    peer: Peer,
    builder: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    /// Changes when the entry point shuts down (connections of the own HTTP/1.1 loop).
    stop: tokio::sync::watch::Receiver<()>,
    handshake_timeout: Duration,
    limits: crate::http1::server::Limits,
}

/// Counts a connection in `traefik_open_connections` while it lives.
struct OpenConnection {
    metrics: Arc<crate::observe::metrics::Metrics>,
    ep: crate::observe::metrics::Name,
}

impl OpenConnection {
    fn new(metrics: Arc<crate::observe::metrics::Metrics>, ep: &str) -> OpenConnection {
        let ep = crate::observe::metrics::Name::from(ep);
        metrics.connection(&ep, 1);
        OpenConnection { metrics, ep }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics.connection(&self.ep, -1);
    }
}

/// First byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

impl Conn {
    /// On an entry point with TLS, the first byte tells a TLS handshake from plain HTTP (as in
    /// Traefik); the handshake must finish within the header-read bound.
    async fn run(self, stream: tokio::net::TcpStream, tls: Option<Arc<rustls::ServerConfig>>) {
        let _open = self
            .current
            .load()
            .metrics()
            .map(|m| OpenConnection::new(m.clone(), &self.ep));
        let Some(cfg) = tls else {
            return self.serve(stream, false).await;
        };
        let mut first = [0u8; 1];
        let deadline = tokio::time::Instant::now() + self.handshake_timeout;
        match tokio::time::timeout_at(deadline, stream.peek(&mut first)).await {
            Ok(Ok(1)) if first[0] == TLS_HANDSHAKE => {}
            Ok(Ok(1)) => return self.serve(stream, false).await,
            _ => return,
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(cfg);
        if let Ok(Ok(tls_stream)) = tokio::time::timeout_at(deadline, acceptor.accept(stream)).await
        {
            self.serve(tls_stream, true).await;
        }
    }

    async fn serve<I>(self, io: I, tls: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Conn {
            current,
            ep,
            peer,
            builder,
            watcher,
            mut stop,
            limits,
            ..
        } = self;
        // Plain keep-alive requests are served by the own loop; the rest of the connection goes
        // to hyper at the first request the loop does not take (see `crate::http1::server`).
        let answered = {
            let (current, ep, peer) = (&current, &ep, &peer);
            crate::http1::server::serve(io, limits, &mut stop, move |req| {
                current
                    .load_full()
                    .handle(ep.clone(), peer.clone(), tls, req)
            })
            .await
        };
        let io = match answered {
            crate::http1::server::Outcome::Done => return,
            crate::http1::server::Outcome::HandOver(io) => io,
        };
        drop(stop);
        let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            // Each request sees the plan current when it arrived (SIGHUP swaps it atomically).
            let rt = current.load_full();
            let ep = ep.clone();
            // Boxed: hyper keeps the future in its dispatcher, and moving the unboxed state
            // machine (kilobytes) there on every request showed as memcpy in profiles.
            let fut = rt.handle(ep, peer.clone(), tls, req.map(RequestBody::Hyper));
            async move { Ok::<_, Infallible>(fut.await) }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
        if let Err(e) = watcher.watch(conn.into_owned()).await {
            crate::proxy::strict::count_connection_error(&*e);
        }
    }
}

/// Header-read bound when the plan sets neither a header-read nor an idle timeout: hyper needs
/// one to stop slowloris connections, so "no limit" is not offered.
const HEADER_READ_FALLBACK_MS: u64 = 60_000;

/// Accepts connections on `listener` for entry point `ep` until `shutdown` resolves, then drains
/// in-flight connections for up to `grace`.
pub async fn serve_entrypoint(
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: Arc<str>,
    listener: tokio::net::TcpListener,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let rt = current.load_full();
    let (grace, header_read, max_header) = rt.plan.entrypoints.get(&*ep).map_or(
        (Duration::from_secs(10), Duration::from_secs(10), 1 << 20),
        |e| {
            // hyper's one HTTP/1 timer runs from the end of a response (or the accept) to the end
            // of the next request's headers: it is both the slowloris bound and the keep-alive
            // idle timeout, so it gets the smaller of the two.
            let t = &e.timeouts;
            let bound = [t.header_read_ms, t.idle_ms]
                .into_iter()
                .filter(|&ms| ms > 0)
                .min()
                .unwrap_or(HEADER_READ_FALLBACK_MS);
            (
                Duration::from_millis(t.grace_ms),
                Duration::from_millis(bound),
                usize::try_from(e.max_header_bytes).unwrap_or(1 << 20),
            )
        },
    );
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read)
        // Larger header sections are answered with 431 by hyper.
        .max_buf_size(max_header.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(max_header).unwrap_or(u32::MAX));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Connections in the own HTTP/1.1 loop hold a receiver; all gone = all drained.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let limits = crate::http1::server::Limits {
        header_read,
        max_header: max_header.max(8192),
    };
    // Set while accepting is paused for lack of descriptors: logged once per episode.
    let mut starved = false;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) if crate::listener::exhausted(&e) => {
                        if !starved {
                            tracing::warn!(
                                "entry point {ep}: cannot accept connections ({e}); pausing \
                                 accepts while serving the open ones"
                            );
                            starved = true;
                        }
                        tokio::select! {
                            () = tokio::time::sleep(crate::listener::EXHAUSTED_PAUSE) => {}
                            _ = shutdown.changed() => break,
                        }
                        continue;
                    }
                    Err(_) => continue,
                };
                if starved {
                    tracing::info!("entry point {ep}: accepting connections again");
                    starved = false;
                }
                let _ = stream.set_nodelay(true);
                // The TLS configuration current at accept time: a reload with a rotated
                // certificate applies to new connections, established ones keep theirs.
                let tls = current.load().tls.get(&*ep).cloned();
                let conn = Conn {
                    current: current.clone(),
                    ep: ep.clone(),
                    peer: Peer::new(peer),
                    builder: builder.clone(),
                    watcher: graceful.watcher(),
                    stop: stop_rx.clone(),
                    handshake_timeout: header_read,
                    limits,
                };
                tokio::spawn(conn.run(stream, tls));
            }
            _ = shutdown.changed() => break,
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(grace, async {
        tokio::join!(graceful.shutdown(), stop_tx.closed());
    })
    .await;
}

/// The current time as RFC 3339 UTC (`2026-11-30T05:00:00Z`), for `/api/version`.
fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = i64::try_from(days).unwrap_or(0) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

fn strip_port(host: &str) -> &str {
    if let Some(end) = host.rfind(']') {
        return &host[..=end];
    }
    match host.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') && p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    }
}

/// Traefik's redirect status: permanent ⇒ 301 for GET/HEAD, 308 otherwise; else 302 / 307.
fn redirect_to(location: &str, permanent: bool, method: &http::Method) -> Response<Body> {
    let get = method == http::Method::GET || method == http::Method::HEAD;
    let status = match (permanent, get) {
        (true, true) => StatusCode::MOVED_PERMANENTLY,
        (true, false) => StatusCode::PERMANENT_REDIRECT,
        (false, true) => StatusCode::FOUND,
        (false, false) => StatusCode::TEMPORARY_REDIRECT,
    };
    let body = status.canonical_reason().unwrap_or("").to_owned();
    let mut resp = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// The client address ipAllowList judges: the peer, or with `depth` > 0 the depth-th address from
/// the right of X-Forwarded-For (skipping `excluded`), as Traefik's ipStrategy does.
fn client_ip(
    peer: IpAddr,
    headers: &http::HeaderMap,
    depth: u32,
    excluded: &[String],
) -> Option<IpAddr> {
    if depth == 0 && excluded.is_empty() {
        return Some(peer);
    }
    let xff: Vec<String> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|s| s.trim().to_owned())
        .collect();
    if depth > 0 {
        let i = xff.len().checked_sub(usize::try_from(depth).ok()?)?;
        return xff.get(i).and_then(|s| s.parse().ok());
    }
    xff.iter()
        .rev()
        .filter(|s| !excluded.contains(s))
        .find_map(|s| s.parse().ok())
}
