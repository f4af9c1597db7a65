//! A plan made ready to serve: everything the request path needs, resolved once at load.
//!
//! Entry points, routers, middlewares, services and servers are looked up by name here and
//! nowhere else: an entry point holds its route tables and trusted forwarders, a matched route
//! leads to its [`Router`] with its built middleware chain and its resolved service, and a picked
//! server leads to its client, its address and its `passHostHeader` by position
//! ([`Runtime::server`]). What this runtime cannot serve is refused here, listing every reason,
//! so a plan is never served half-way.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bridge_plan::{InternalService, Plan, ServiceKind, ServiceRef};
use bytes::Bytes;
use http::{HeaderValue, Uri};
use http_body_util::Full;

use crate::FastMap;
use crate::acme::Acme;
use crate::body::ReqBody;
use crate::middleware::{Chain, Middleware, MiddlewareError};
use crate::observe::Observer;
use crate::observe::metrics::Metrics;
use crate::proxy::forwarded_headers::Trust;
use crate::proxy::mirror::Mirroring;
use crate::routing::RouteTable;
use crate::transport::{ClientFactory, ServerClient};
use crate::upstream::{ServerRef, ServiceId, Upstreams};

/// Why a plan cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The plan uses features this runtime version does not implement.
    #[error("this bridge-runtime cannot serve the plan:\n  - {}", .0.join("\n  - "))]
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
    /// A middleware could not be built (users file, a regex the engine refuses).
    #[error("middleware `{name}`: {source}")]
    Middleware {
        /// The middleware's key.
        name: String,
        /// What went wrong.
        source: MiddlewareError,
    },
    /// The access log file cannot be opened.
    #[error("{0}")]
    AccessLog(std::io::Error),
    /// TLS could not be set up (certificates, options).
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// ACME could not be set up (storage, the ACME server's TLS settings).
    #[error(transparent)]
    Acme(#[from] crate::acme::AcmeError),
    /// Connections to servers could not be set up (servers transports, server URLs).
    #[error(transparent)]
    Transport(#[from] crate::transport::TransportError),
    /// Binding a listener failed.
    #[error("entry point `{name}`: cannot listen on {addr}: {source}")]
    Bind {
        /// The entry point's key.
        name: String,
        /// The address it should listen on.
        addr: SocketAddr,
        /// What the system said.
        source: std::io::Error,
    },
}

/// Everything needed to answer requests; shared by all connections.
#[derive(Debug)]
pub struct Runtime {
    pub(crate) plan: Arc<Plan>,
    pub(crate) upstreams: Upstreams,
    /// By [`EntryId`]: the plan's entry points in key order.
    pub(crate) entries: Vec<Entry>,
    /// By load balancer node and server position (as in [`ServerRef`]).
    servers: Vec<Vec<ServerTarget>>,
    /// By service node: the mirroring services with mirrors.
    mirrors: Vec<Option<Arc<Mirroring>>>,
    /// By service node: a service with middlewares of its own, as a router with that chain
    /// sending to the service (run when a pick reaches it from a service above, or as an
    /// `errors` page service).
    service_routers: Vec<Option<Arc<Router>>>,
    /// Per health-check probe URL: its client, with the load balancer's servers transport.
    pub(crate) probe_clients: Arc<HashMap<String, ServerClient<Full<Bytes>>>>,
    /// This host's name, the `X-Forwarded-Server` value.
    pub(crate) server_name_value: HeaderValue,
    /// When this plan started serving, for `/api/version`.
    pub(crate) started: String,
    /// Metrics and access log (kept across reloads that do not change their settings).
    pub(crate) observer: Option<Arc<Observer>>,
    /// ACME certificates and challenges (kept across reloads).
    pub(crate) acme: Arc<Acme>,
    /// OCSP staples of the certificate files (kept across reloads).
    pub(crate) stapler: Arc<crate::ocsp::Stapler>,
    /// Upgraded connections, by server (kept across reloads).
    pub(crate) tunnels: Arc<crate::proxy::tunnel::Tunnels>,
    /// Set once shutdown began (SIGTERM): `/ping` answers `terminatingStatusCode` while the
    /// entry points still accept for their `requestAcceptGraceTimeout` (kept across reloads).
    pub(crate) terminating: Arc<std::sync::atomic::AtomicBool>,
    /// The plan's hash as a field value, for `/ping` answers.
    pub(crate) plan_hash_value: HeaderValue,
    /// The other appliance of a pair (`--peer`), watched for the plan it serves (kept across
    /// reloads).
    pub(crate) peer: Option<Arc<crate::peer::Peer>>,
    /// This runtime, once shared ([`Runtime::shared`]): mirror copies that go through a
    /// service's middlewares run in a task of their own, which holds it.
    pub(crate) this: std::sync::Weak<Self>,
}

/// An entry point, by its position among the plan's entry points (stable across reloads, which
/// must keep the entry points).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntryId(pub(crate) usize);

/// An entry point resolved for the request path.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) name: Arc<str>,
    pub(crate) redirect: Option<bridge_plan::Redirect>,
    pub(crate) port: u16,
    /// `http.sanitizePath`: dot segments and duplicate slashes leave request paths.
    pub(crate) sanitize_path: bool,
    /// `http.encodedCharacters`: checked after routing, before the router's middlewares.
    pub(crate) encoded: crate::middleware::encoded_characters::Denied,
    /// `allowACMEByPass`: routers may answer ACME's HTTP challenge path.
    pub(crate) acme_bypass: bool,
    /// Which records requests no router takes are kept out of (`observability`).
    pub(crate) quiet: crate::observe::Quiet,
    /// `http.encodeQuerySemicolons`: what a `;` in the query becomes before routing.
    pub(crate) query_semicolons: bridge_plan::QuerySemicolons,
    /// `http.underscoreHeadersStrategy`: fields named with `_`, before anything else.
    pub(crate) underscore_headers: bridge_plan::UnderscoreHeaders,
    pub(crate) timeouts: bridge_plan::Timeouts,
    pub(crate) trust: Trust,
    /// `proxyProtocol`: the peers whose PROXY header is read.
    pub(crate) proxy_protocol: Option<Trust>,
    /// Routers without TLS, for plain connections.
    pub(crate) plain: Table,
    /// With TLS: its configuration and the routers with TLS.
    pub(crate) tls: Option<(Arc<crate::tls::TlsChoice>, Table)>,
    /// `prometheus@internal` answers `/metrics` here (metrics on this entry point, not
    /// `manualRouting`).
    pub(crate) metrics_here: bool,
    /// `api.insecure` serves the API and `/ping` here.
    pub(crate) api_here: bool,
    /// A resolver answers HTTP-01 here, before the redirect and routing.
    pub(crate) acme_http: Option<Arc<crate::acme::challenge::Challenges>>,
    /// `ping` is served here (its entry point, without `manualRouting`).
    pub(crate) ping_here: bool,
    /// With `http3`: the `Alt-Svc` value added to answers over TLS on TCP.
    pub(crate) alt_svc: Option<HeaderValue>,
}

/// The priority of Traefik's `acme-http-bypass` router, the length of its rule
/// ``PathPrefix(`/.well-known/acme-challenge/`)``.
const ACME_BYPASS_PRIORITY: i64 = 42;

impl Entry {
    /// The route table for a connection with or without TLS.
    #[inline]
    pub(crate) fn table(&self, tls: bool) -> &Table {
        match &self.tls {
            Some((_, table)) if tls => table,
            _ => &self.plain,
        }
    }
}

/// The routers of one entry point for one kind of connection.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) routes: RouteTable,
    /// By route position in `routes`.
    pub(crate) routers: Vec<Arc<Router>>,
    /// How many routes, from the first, outrank the entry point's redirect (their priority is
    /// higher): one of them that matches is served instead of redirected. `0` without redirect.
    pub(crate) above_redirect: usize,
    /// With `allowACMEByPass`: how many routes, from the first, come before the certificate
    /// resolvers' HTTP-01 answers (priority 42 or more; a tie goes to the router, the external
    /// solver the option is for). `0` without it.
    pub(crate) above_acme: usize,
    /// By route position: which records the router's requests are kept out of.
    pub(crate) quiet: Vec<crate::observe::Quiet>,
    /// By route position, on an entry point with several TLS option sets: the one a router's
    /// requests need (index into the entry point's [`crate::tls::TlsChoice`]); empty otherwise.
    pub(crate) tls_options: Vec<u16>,
}

/// A router resolved: its chain built, its service found.
#[derive(Debug)]
pub(crate) struct Router {
    pub(crate) name: Arc<str>,
    pub(crate) chain: Chain,
    /// The service's key as written (`api@internal` included), for the access log.
    pub(crate) service_name: Arc<str>,
    pub(crate) service: Dispatch,
}

/// Where a router sends what its chain lets through.
#[derive(Debug)]
pub(crate) enum Dispatch {
    /// A service of the plan.
    Service(ServiceId),
    /// `ping@internal`: `OK`, before the chain.
    Ping,
    /// `prometheus@internal`: the metrics, before the chain.
    Prometheus,
    /// `api@internal`, `dashboard@internal` and the other internal services: the API, after the
    /// chain (basicAuth in prod).
    Api,
    /// `noop@internal`: `418 I'm a teapot` without a body, after the chain, as Traefik answers.
    Noop,
    /// Child routers (Traefik's `parentRefs`): the request, as the chain left it, is routed
    /// again among them; `404` when none matches.
    Children(Box<Table>),
    /// A name no service has (the plan checker prevents it): 500.
    Missing,
}

/// A load balancer server resolved at load.
#[derive(Debug)]
pub(crate) struct ServerTarget {
    pub(crate) client: ServerClient<ReqBody>,
    pub(crate) addr: ServerAddr,
    /// The client's `Host` goes to the server (`passHostHeader`).
    pub(crate) pass_host: bool,
    /// The URL's path, sent before the request's path (`preservePath`); `None` when it is not
    /// preserved or adds nothing (empty or `/`).
    pub(crate) path_prefix: Option<Box<str>>,
}

impl ServerTarget {
    /// The request target this server gets for the request's `path_and_query`: as it is, or
    /// after the server URL's path, joined with one slash (Go's `singleJoiningSlash`, which
    /// Traefik's `preservePath` uses on the escaped paths).
    #[inline]
    pub(crate) fn target<'a>(&self, path_and_query: &'a str) -> std::borrow::Cow<'a, str> {
        match &self.path_prefix {
            None => std::borrow::Cow::Borrowed(path_and_query),
            Some(prefix) => std::borrow::Cow::Owned(join_path(prefix, path_and_query)),
        }
    }
}

/// `prefix` (a path without query) joined with `path_and_query` by exactly one slash.
fn join_path(prefix: &str, path_and_query: &str) -> String {
    let mut out = String::with_capacity(prefix.len() + path_and_query.len() + 1);
    out.push_str(prefix);
    match (prefix.ends_with('/'), path_and_query.starts_with('/')) {
        (true, true) => out.push_str(&path_and_query[1..]),
        (false, false) => {
            out.push('/');
            out.push_str(path_and_query);
        }
        _ => out.push_str(path_and_query),
    }
    out
}

/// A server URL resolved once at load.
#[derive(Debug, Clone)]
pub(crate) struct ServerAddr {
    /// `host:port` as written, for the `Host` header when it is not passed through.
    pub(crate) authority: String,
    /// `host:port` to connect to (the pinned IP with `--resolve`).
    pub(crate) connect: String,
    /// `authority` as a header value, made once.
    pub(crate) host_value: HeaderValue,
}

impl ServerAddr {
    fn new(url: &str, resolve: &HashMap<String, IpAddr>) -> Option<Self> {
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
        Some(Self {
            authority,
            connect,
            host_value,
        })
    }
}

impl Runtime {
    /// Builds everything the plan needs to be served; `resolve` pins server host names to
    /// addresses (`--resolve`).
    pub fn new(plan: Arc<Plan>, resolve: HashMap<String, IpAddr>) -> Result<Self, ServeError> {
        Self::build(plan, &resolve, None)
    }

    /// [`Runtime::new`] for a reload: metrics and the access log of `old` carry over when the new
    /// plan configures them the same way, so counters do not reset.
    pub fn reload(
        old: &Self,
        plan: Arc<Plan>,
        resolve: &HashMap<String, IpAddr>,
    ) -> Result<Self, ServeError> {
        Self::build(plan, resolve, Some(old))
    }

    fn build(
        plan: Arc<Plan>,
        resolve: &HashMap<String, IpAddr>,
        old: Option<&Self>,
    ) -> Result<Self, ServeError> {
        let unsupported = crate::proxy::mirror::too_deep(&plan);
        if !unsupported.is_empty() {
            return Err(ServeError::Unsupported(unsupported));
        }
        let upstreams = Upstreams::from_plan(&plan)?;
        let mut factory = ClientFactory::default();
        let (routers, service_routers) = routers(&plan, &upstreams, &mut factory, resolve)?;
        // ACME state outlives reloads: accounts, open orders and certificates carry over.
        let acme = old.map_or_else(|| Arc::new(Acme::default()), |o| o.acme.clone());
        let with_acme = !plan.certificate_resolvers.is_empty();
        let stapler = old.map_or_else(Default::default, |o| o.stapler.clone());
        let mut staples = plan.ocsp.as_ref().map(crate::ocsp::Batch::new);
        let (mut tls, covered) =
            crate::tls::configs(&plan, with_acme.then_some(&acme), staples.as_mut())?;
        let entries = plan
            .entrypoints
            .iter()
            .map(|(name, ep)| {
                let challenge = plan.certificate_resolvers.values().any(|r| {
                    r.http_challenge
                        .as_ref()
                        .is_some_and(|h| &h.entrypoint == name)
                });
                let mut e = entry(&plan, name, ep, &routers, tls.remove(name))?;
                e.acme_http = challenge.then(|| acme.challenges.clone());
                Ok(e)
            })
            .collect::<Result<_, ServeError>>()?;
        let servers = servers(&plan, resolve, &mut factory)?;
        let probe_clients = Arc::new(crate::upstream::probe::clients(
            &plan,
            resolve,
            &mut factory,
        )?);
        let mut mirrors = crate::proxy::mirror::from_plan(&upstreams, &plan);
        let mirrors = plan.services.keys().map(|k| mirrors.remove(k)).collect();
        let server_name = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "bridge-runtime".into());
        let observer = match old {
            Some(o) if o.plan.metrics == plan.metrics && o.plan.access_log == plan.access_log => {
                o.observer.clone()
            }
            _ => Observer::new(
                plan.metrics.as_ref().map(|m| Arc::new(Metrics::new(m))),
                plan.metrics.as_ref().is_some_and(|m| m.add_internals),
                plan.access_log.as_ref(),
            )
            .map_err(ServeError::AccessLog)?,
        };
        // Last, so a reload that fails before leaves ACME as it was; stored certificates are
        // served from here on, missing ones ordered in the background.
        if with_acme || old.is_some() {
            acme.configure(&plan, covered, &stapler)?;
        }
        stapler.commit(staples);
        let tunnels = old.map_or_else(Default::default, |o| o.tunnels.clone());
        let terminating = old.map_or_else(Default::default, |o| o.terminating.clone());
        let peer = old.and_then(|o| o.peer.clone());
        let plan_hash_value = HeaderValue::from_str(&plan.hash)
            .unwrap_or_else(|_| HeaderValue::from_static("unknown"));
        Ok(Self {
            this: std::sync::Weak::new(),
            peer,
            plan_hash_value,
            acme,
            stapler,
            tunnels,
            terminating,
            plan,
            upstreams,
            entries,
            servers,
            mirrors,
            service_routers,
            probe_clients,
            server_name_value: HeaderValue::from_str(&server_name)
                .unwrap_or_else(|_| HeaderValue::from_static("bridge-runtime")),
            started: crate::observe::rfc3339_now(),
            observer,
        })
    }

    /// This runtime behind an `Arc` that knows itself: a mirror copy through a service's
    /// middlewares is served by the runtime in a task of its own.
    pub fn shared(self) -> Arc<Self> {
        Arc::new_cyclic(|this| {
            let mut me = self;
            me.this = this.clone();
            me
        })
    }

    /// Shutdown began.
    pub(crate) fn is_terminating(&self) -> bool {
        self.terminating.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The upstream state (for health checking and the API).
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// The plan being served.
    pub fn plan(&self) -> &Arc<Plan> {
        &self.plan
    }

    /// Metrics, when the plan enables them.
    pub fn metrics(&self) -> Option<&Arc<Metrics>> {
        self.observer.as_ref().and_then(|o| o.metrics.as_ref())
    }

    /// A prober for this plan's health checks: each probe with its load balancer's scheme and
    /// servers transport.
    pub fn prober(&self) -> crate::upstream::probe::HttpProber {
        crate::upstream::probe::HttpProber::new(self.probe_clients.clone())
    }

    /// The entry point named `name`.
    pub fn entry_id(&self, name: &str) -> Option<EntryId> {
        self.entries
            .iter()
            .position(|e| &*e.name == name)
            .map(EntryId)
    }

    /// Whether a connection from `peer` to the entry point may start with a PROXY protocol
    /// header (`None`: the entry point has no `proxyProtocol`), and whether the client it names
    /// is believed (`Some(true)`: a trusted peer). As in Traefik, a header from any other peer
    /// is read and dropped, and the connection's own peer stays the client.
    pub(crate) fn proxy_header(&self, id: EntryId, peer: IpAddr) -> Option<bool> {
        self.entries
            .get(id.0)
            .and_then(|e| e.proxy_protocol.as_ref())
            .map(|t| t.trusts(peer))
    }

    /// The TLS configuration of an entry point, if it serves TLS.
    pub(crate) fn tls_config(&self, id: EntryId) -> Option<Arc<crate::tls::TlsChoice>> {
        self.entries
            .get(id.0)
            .and_then(|e| e.tls.as_ref())
            .map(|(c, _)| c.clone())
    }

    /// What the proxy knows of a picked server.
    pub(crate) fn server(&self, s: &ServerRef) -> Option<&ServerTarget> {
        self.servers.get(s.node())?.get(s.index())
    }

    /// The mirroring settings of a service node, if it mirrors.
    pub(crate) fn mirroring(&self, node: usize) -> Option<&Arc<Mirroring>> {
        self.mirrors.get(node)?.as_ref()
    }

    /// The chain of a service with middlewares of its own, as a router sending to it.
    pub(crate) fn service_router(&self, id: ServiceId) -> Option<&Router> {
        self.service_routers.get(id.index())?.as_deref()
    }

    /// Copies the health state of servers that exist, unchanged, in `old` (same service, same URL),
    /// so a reload does not send traffic back to nodes known to be down, nor hold it from nodes known
    /// to be up. Returns how many states were carried over.
    pub fn carry_health_from(&self, old: &Self) -> usize {
        let mut carried = 0;
        for name in self.plan.services.keys() {
            let Some(states) = old.upstreams.server_states(name) else {
                continue;
            };
            for (server, _, state) in states {
                if let Some(new_ref) = self.upstreams.server_ref(name, server.url()) {
                    self.upstreams
                        .set_state(&new_ref, state, "kept across reload");
                    // An operator's drain or maintenance survives the reload too.
                    if let Some(admin) = old.upstreams.admin_state(&server) {
                        self.upstreams.set_admin_state(&new_ref, admin);
                    }
                    carried += 1;
                }
            }
        }
        carried
    }
}

/// One middleware of the plan, built.
fn build_middleware(
    name: &str,
    m: &bridge_plan::Middleware,
    upstreams: &Upstreams,
    clients: &mut ClientFactory,
    resolve: &HashMap<String, IpAddr>,
) -> Result<Arc<Middleware>, ServeError> {
    let service_id = |s: &str| upstreams.service_id(s);
    let mut at = crate::middleware::Build {
        name,
        service_id: &service_id,
        clients,
        resolve,
    };
    Middleware::from_plan(m, &mut at)
        .map(Arc::new)
        .map_err(|source| ServeError::Middleware {
            name: name.to_owned(),
            source,
        })
}

/// The chain of `names`: the shared instances, except kinds with state of their own per chain
/// (Traefik builds those per router, and per service for a service's middlewares), built anew.
/// A name without a middleware is skipped, as it always was (the plan checker refuses such
/// plans).
fn chain_of(
    names: &[String],
    plan: &Plan,
    shared: &FastMap<&str, Arc<Middleware>>,
    upstreams: &Upstreams,
    clients: &mut ClientFactory,
    resolve: &HashMap<String, IpAddr>,
) -> Result<Vec<Arc<Middleware>>, ServeError> {
    let mut chain = Vec::with_capacity(names.len());
    for m in names {
        let Some(one) = shared.get(m.as_str()) else {
            continue;
        };
        match plan
            .middlewares
            .get(m)
            .filter(|p| Middleware::per_router(&p.kind))
        {
            Some(p) => chain.push(build_middleware(m, p, upstreams, clients, resolve)?),
            None => chain.push(one.clone()),
        }
    }
    Ok(chain)
}

/// Every router of the plan with its chain and service (or its children's table), by key. A
/// middleware named by several routers is built once and shared; a child router named by
/// several parents is built once (one chain, as Traefik builds one handler per router). Also,
/// by service node, each service with middlewares of its own as a router sending to it (its
/// chain the instance the routers to it share).
type Routers = (FastMap<String, Arc<Router>>, Vec<Option<Arc<Router>>>);

fn routers(
    plan: &Plan,
    upstreams: &Upstreams,
    clients: &mut ClientFactory,
    resolve: &HashMap<String, IpAddr>,
) -> Result<Routers, ServeError> {
    let mut middlewares: FastMap<&str, Arc<Middleware>> = FastMap::default();
    for (name, m) in &plan.middlewares {
        middlewares.insert(
            name,
            build_middleware(name, m, upstreams, clients, resolve)?,
        );
    }
    let mut b = RouterBuilder {
        plan,
        upstreams,
        clients,
        resolve,
        middlewares,
        service_chains: FastMap::default(),
        built: FastMap::default(),
    };
    for name in plan.routers.keys() {
        b.router(name, 0)?;
    }
    let mut services = Vec::with_capacity(plan.services.len());
    for (name, svc) in &plan.services {
        if svc.middlewares.is_empty() {
            services.push(None);
            continue;
        }
        let chain = b.service_chain(name)?.into_boxed_slice();
        services.push(Some(Arc::new(Router {
            name: Arc::from(name.as_str()),
            chain,
            service_name: Arc::from(name.as_str()),
            service: upstreams
                .service_id(name)
                .map_or(Dispatch::Missing, Dispatch::Service),
        })));
    }
    Ok((b.built, services))
}

/// What [`routers`] builds routers with.
struct RouterBuilder<'p, 'c> {
    plan: &'p Plan,
    upstreams: &'p Upstreams,
    clients: &'c mut ClientFactory,
    resolve: &'p HashMap<String, IpAddr>,
    /// The shared middleware instances.
    middlewares: FastMap<&'p str, Arc<Middleware>>,
    /// Services' own chains, one per service.
    service_chains: FastMap<&'p str, Vec<Arc<Middleware>>>,
    /// Routers built so far, by key.
    built: FastMap<String, Arc<Router>>,
}

impl<'p> RouterBuilder<'p, '_> {
    /// The chain of a service's own middlewares: one instance per service.
    fn service_chain(&mut self, name: &'p str) -> Result<Vec<Arc<Middleware>>, ServeError> {
        if let Some(built) = self.service_chains.get(name) {
            return Ok(built.clone());
        }
        let names = self
            .plan
            .services
            .get(name)
            .map(|s| s.middlewares.as_slice())
            .unwrap_or_default();
        let built = chain_of(
            names,
            self.plan,
            &self.middlewares,
            self.upstreams,
            self.clients,
            self.resolve,
        )?;
        self.service_chains.insert(name, built.clone());
        Ok(built)
    }

    /// The router `name`, built with its children first; `depth` guards against a plan whose
    /// children form a cycle (the plan checker refuses those).
    fn router(&mut self, name: &str, depth: usize) -> Result<Arc<Router>, ServeError> {
        if let Some(r) = self.built.get(name) {
            return Ok(r.clone());
        }
        let plan = self.plan;
        let Some((key, r)) = plan.routers.get_key_value(name) else {
            return Err(ServeError::Routing(
                crate::routing::RoutingError::UnknownParent {
                    parent: name.to_owned(),
                    router: name.to_owned(),
                },
            ));
        };
        if depth > plan.routers.len() {
            return Err(ServeError::Unsupported(vec![format!(
                "router `{name}`: its child routers form a cycle"
            )]));
        }
        let mut chain = chain_of(
            &r.middlewares,
            plan,
            &self.middlewares,
            self.upstreams,
            self.clients,
            self.resolve,
        )?;
        // The service's own middlewares (Traefik v3.7) run after the router's, one instance per
        // service whichever router sends to it.
        if let Some(ServiceRef::Service(s)) = &r.service
            && plan
                .services
                .get(s)
                .is_some_and(|svc| !svc.middlewares.is_empty())
        {
            chain.extend(self.service_chain(s)?);
        }
        let chain = chain.into_boxed_slice();
        let service = match &r.service {
            Some(ServiceRef::Internal(InternalService::Ping)) => Dispatch::Ping,
            Some(ServiceRef::Internal(InternalService::Prometheus)) => Dispatch::Prometheus,
            Some(ServiceRef::Internal(InternalService::Noop)) => Dispatch::Noop,
            // api, dashboard; rest answers what the API answers for its path (Traefik's REST
            // provider, which it belongs to, is not served).
            Some(ServiceRef::Internal(_)) => Dispatch::Api,
            Some(ServiceRef::Service(s)) => self
                .upstreams
                .service_id(s)
                .map_or(Dispatch::Missing, Dispatch::Service),
            None if r.children.is_empty() => Dispatch::Missing,
            None => {
                let routes = RouteTable::for_children(plan, key)?;
                let routers = r
                    .children
                    .iter()
                    .map(|c| self.router(c, depth + 1))
                    .collect::<Result<_, _>>()?;
                // A child's requests are recorded as its root router says.
                Dispatch::Children(Box::new(Table {
                    routes,
                    routers,
                    above_redirect: 0,
                    above_acme: 0,
                    quiet: Vec::new(),
                    tls_options: Vec::new(),
                }))
            }
        };
        let router = Arc::new(Router {
            name: Arc::from(key.as_str()),
            chain,
            service_name: Arc::from(
                r.service
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default(),
            ),
            service,
        });
        self.built.insert(key.clone(), router.clone());
        Ok(router)
    }
}

/// One entry point: its route tables (plain, and TLS when it serves TLS), its trusted
/// forwarders and what Traefik serves on it before routing.
fn entry(
    plan: &Plan,
    name: &str,
    ep: &bridge_plan::EntryPoint,
    routers: &FastMap<String, Arc<Router>>,
    tls: Option<Arc<crate::tls::TlsChoice>>,
) -> Result<Entry, ServeError> {
    let choice = tls.clone();
    let table = |tls: bool| -> Result<Table, ServeError> {
        let routes = RouteTable::build(plan, name, tls)?;
        let routers = routes
            .keys()
            .map(|k| {
                routers.get(k).cloned().ok_or_else(|| {
                    ServeError::Routing(crate::routing::RoutingError::UnknownRouter {
                        entrypoint: name.to_owned(),
                        router: k.to_owned(),
                    })
                })
            })
            .collect::<Result<_, _>>()?;
        // Routes are in matching order, priority descending: those above the redirect (or the
        // ACME answers) are the first ones.
        let above = |outranks: &dyn Fn(i64) -> bool| {
            routes
                .keys()
                .take_while(|k| plan.routers.get(*k).is_some_and(|x| outranks(x.priority)))
                .count()
        };
        let above_redirect = ep
            .redirect
            .as_ref()
            .map_or(0, |r| above(&|p| p > r.priority));
        let above_acme = if ep.acme_bypass {
            above(&|p| p >= ACME_BYPASS_PRIORITY)
        } else {
            0
        };
        let quiet = routes
            .keys()
            .map(|k| {
                let r = plan.routers.get(k);
                crate::observe::Quiet::of(
                    &ep.observability,
                    r.and_then(|r| r.observability.as_ref()),
                    matches!(
                        r.and_then(|r| r.service.as_ref()),
                        Some(ServiceRef::Internal(_))
                    ),
                )
            })
            .collect();
        let tls_options = match &choice {
            Some(c) if tls && c.single().is_none() => {
                routes.keys().map(|k| c.of_router(k).unwrap_or(0)).collect()
            }
            _ => Vec::new(),
        };
        Ok(Table {
            routes,
            routers,
            above_redirect,
            above_acme,
            quiet,
            tls_options,
        })
    };
    let tls = match tls {
        Some(cfg) => Some((cfg, table(true)?)),
        None => None,
    };
    Ok(Entry {
        name: Arc::from(name),
        redirect: ep.redirect.clone(),
        port: ep.port,
        sanitize_path: ep.sanitize_path,
        encoded: crate::middleware::encoded_characters::Denied::of(&ep.encoded_characters),
        acme_bypass: ep.acme_bypass,
        quiet: crate::observe::Quiet::of(&ep.observability, None, false),
        query_semicolons: ep.query_semicolons,
        underscore_headers: ep.underscore_headers,
        timeouts: ep.timeouts.clone(),
        trust: Trust::new(&ep.forwarded_headers),
        proxy_protocol: ep.proxy_protocol.as_ref().map(Trust::new),
        // quic-go's value, which Traefik sends: `h3` only, kept for 30 days.
        alt_svc: ep.http3.as_ref().and_then(|h| {
            HeaderValue::try_from(format!("h3=\":{}\"; ma=2592000", h.advertised_port)).ok()
        }),
        plain: table(false)?,
        tls,
        metrics_here: plan
            .metrics
            .as_ref()
            .is_some_and(|m| !m.manual_routing && m.entrypoint == name),
        api_here: plan
            .api
            .as_ref()
            .is_some_and(|a| a.insecure && a.entrypoint == name),
        acme_http: None,
        ping_here: plan
            .ping
            .as_ref()
            .is_some_and(|p| !p.manual_routing && p.entrypoint == name),
    })
}

/// The client, address and `passHostHeader` of every load balancer server, by node and position.
fn servers(
    plan: &Plan,
    resolve: &HashMap<String, IpAddr>,
    factory: &mut ClientFactory,
) -> Result<Vec<Vec<ServerTarget>>, ServeError> {
    let mut out = Vec::with_capacity(plan.services.len());
    for s in plan.services.values() {
        let ServiceKind::LoadBalancer(lb) = &s.kind else {
            out.push(Vec::new());
            continue;
        };
        let (transport, t) = crate::transport::transport_of(plan, lb)?;
        let mut servers = Vec::with_capacity(lb.servers.len());
        for srv in &lb.servers {
            let client = factory.client(&srv.url, transport, t, resolve)?;
            let Some(addr) = ServerAddr::new(&srv.url, resolve) else {
                return Err(ServeError::Unsupported(vec![format!(
                    "server `{}`: the URL has no host this runtime can connect to",
                    srv.url
                )]));
            };
            let path_prefix = srv
                .preserve_path
                .then(|| srv.url.parse::<Uri>().ok())
                .flatten()
                .map(|u| u.path().to_owned())
                .filter(|p| !p.is_empty() && p != "/")
                .map(String::into_boxed_str);
            servers.push(ServerTarget {
                client,
                addr,
                pass_host: lb.pass_host_header,
                path_prefix,
            });
        }
        out.push(servers);
    }
    Ok(out)
}

#[cfg(test)]
mod preserve_path_tests {
    use super::join_path;

    #[test]
    fn the_server_path_and_the_request_path_meet_at_one_slash() {
        // Go's singleJoiningSlash, as Traefik's preservePath applies it.
        for (prefix, pq, want) in [
            ("/hmi", "/a?b=c", "/hmi/a?b=c"),
            ("/hmi/", "/a", "/hmi/a"),
            ("/hmi", "/", "/hmi/"),
            ("/hmi/", "/", "/hmi/"),
            ("/a%2Fb", "/c%20d", "/a%2Fb/c%20d"),
            ("/hmi", "*", "/hmi/*"),
        ] {
            assert_eq!(join_path(prefix, pq), want, "{prefix} + {pq}");
        }
    }
}
