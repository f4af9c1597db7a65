//! Upstream state: the plan's services, the health of every server, and server selection.
//!
//! [`Upstreams::from_plan`] turns the plan's services into an immutable tree (names resolved to
//! indices once) whose only mutable parts are
//!
//! - one [`AtomicU8`] per server holding its [`ServerState`] (`Unknown`, `Up`, `Down`), and
//! - one small [`Mutex`] per load balancer / `weighted` service holding the smooth weighted round
//!   robin counters.
//!
//! Why atomics: the state is read on every request (by [`Upstreams::pick`]) and written only by the
//! health checker and the passive failure hook, a few times per second at most. A per-server atomic
//! makes every read a single load with no lock and no allocation, every write a single swap (which
//! also tells whether the state really changed, so each change is broadcast exactly once), and
//! needs no `arc-swap` of a whole state map. The round-robin counters must be updated together, so
//! they sit behind a mutex that is held for a handful of integer additions and never across an
//! `.await`; when only one server (or child) is available — the seed's active/standby case — the
//! pick takes no lock at all.
//!
//! Load balancing is nginx-style *smooth* weighted round robin over the servers that are available
//! (integers only, deterministic): every candidate's counter grows by its weight, the largest wins
//! and loses the total. Weights 1 and 3 give `B A B B` repeated: exact proportions over each cycle
//! of `sum(weights)` picks and no burst of one server. Traefik uses earliest-deadline-first with
//! floating-point deadlines, which spreads the same way; the counters are reset whenever any server
//! changes state so the sequence after a change does not depend on the history before it.
//!
//! Availability (see [`Upstreams::is_available`]): a server of a load balancer with a health check
//! is available when `Up`, or when `Unknown` and the check does not set `probe_before_traffic`
//! (Traefik starts every server up); a load balancer without a health check treats every server as
//! up, as Traefik does. Weight `0` servers and children are never picked. A `weighted` service is
//! available when one of its children is, a `failover` when its main service or its fallback is, a
//! `mirroring` when its main service is. Availability is always computed from the servers' live
//! state, whatever the parents' `health_check` flags say, so a parent never picks a child that has
//! no available server (Traefik only knows a child is down when health propagation is enabled).
//!
//! Every state change is broadcast as a [`StateChange`] (see [`Upstreams::subscribe`]). Passive
//! detection ([`Upstreams::report_failure`]) marks a server down at once on a connect failure or
//! reset seen on live traffic and wakes the health checker of its load balancer
//! ([`crate::upstream::health::HealthChecker`]) for an immediate probe of all its servers.

pub(crate) mod health;
mod hrw;
pub(crate) mod load;
pub(crate) mod probe;
pub(crate) mod sticky;

use crate::FastMap;
use std::fmt;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bridge_plan::{HealthCheck, Plan, ServiceKind};
use tokio::sync::{Notify, broadcast};
use tokio::time::Instant;

use crate::upstream::health::{ProbeTarget, ProbeTargetError};

/// Deepest service nesting followed by [`Upstreams::pick`]; the compiler rejects cycles, this only
/// guards against a plan that slipped through.
pub(crate) const MAX_DEPTH: usize = 32;

/// How many [`StateChange`]s a slow subscriber may fall behind before it misses some (it then gets
/// [`broadcast::error::RecvError::Lagged`] and should re-read [`Upstreams::server_states`]).
pub(crate) const EVENT_CAPACITY: usize = 1024;

/// The health of one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServerState {
    /// Never probed yet (servers of a health-checked load balancer start here).
    Unknown,
    /// The last probe succeeded (or the load balancer has no health check).
    Up,
    /// The last probe failed, or live traffic could not reach the server.
    Down,
}

impl ServerState {
    const fn to_u8(self) -> u8 {
        match self {
            Self::Unknown => 0,
            Self::Up => 1,
            Self::Down => 2,
        }
    }

    const fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Up,
            2 => Self::Down,
            _ => Self::Unknown,
        }
    }

    /// `UNKNOWN`, `UP` or `DOWN`, as the API's `serverStatus` shows it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Unknown => "UNKNOWN",
            Self::Up => "UP",
            Self::Down => "DOWN",
        }
    }
}

impl fmt::Display for ServerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failure seen on live traffic, reported with [`Upstreams::report_failure`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// The connection to the server could not be established.
    ConnectRefused,
    /// The connection was reset (or closed) before a response arrived.
    Reset,
    /// The server did not answer in time.
    Timeout,
    /// The server answered with a 5xx status.
    Status5xx,
}

impl FailureKind {
    /// Whether this failure marks the server down at once. Connect failures and resets do: the
    /// server process or host is gone. Timeouts and 5xx answers do not (a slow request or an
    /// application error says little about the node); they only trigger an immediate probe, which
    /// decides.
    pub const fn marks_down(self) -> bool {
        matches!(self, Self::ConnectRefused | Self::Reset)
    }

    const fn describe(self) -> &'static str {
        match self {
            Self::ConnectRefused => "connection refused on live traffic",
            Self::Reset => "connection reset on live traffic",
            Self::Timeout => "timeout on live traffic",
            Self::Status5xx => "5xx answer on live traffic",
        }
    }
}

/// One change of a server's state, as broadcast to [`Upstreams::subscribe`]rs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateChange {
    /// Key of the load-balancer service.
    pub service: Arc<str>,
    /// The server's URL as written in the plan.
    pub url: Arc<str>,
    /// State before the change.
    pub from: ServerState,
    /// State after the change.
    pub to: ServerState,
    /// When the change happened.
    pub at: Instant,
    /// Why, for logs and the dashboard: e.g. `probe answered 503`, `connection refused on live
    /// traffic`.
    pub reason: String,
}

/// A handle on one server of one load balancer, as returned by [`Upstreams::pick`].
///
/// It is only meaningful for the [`Upstreams`] that produced it; given to another one (after a
/// reload), it is recognised by service key and URL or ignored.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerRef {
    service: Arc<str>,
    url: Arc<str>,
    node: usize,
    index: usize,
}

impl ServerRef {
    /// Key of the load-balancer service the server belongs to.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// The server's URL as written in the plan (the proxy forwards to it).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Position of the server in its load balancer's `servers`.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Position of its load balancer among the plan's services.
    pub(crate) fn node(&self) -> usize {
        self.node
    }

    /// The service key and URL, shared.
    pub(crate) fn names(&self) -> (Arc<str>, Arc<str>) {
        (self.service.clone(), self.url.clone())
    }
}

/// The result of [`Upstreams::pick`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// Forward the request to this server.
    Server(ServerRef),
    /// The service exists but no server is available: the proxy answers 503
    /// `no available server\n` (Traefik's answer).
    NoAvailableServer,
    /// No service has this key (e.g. an `@internal` service, which the proxy serves itself).
    UnknownService,
    /// The pick reached a service below the one asked for that has middlewares of its own
    /// (Traefik v3.7): the proxy runs them, then picks again from that service.
    Chained(ServiceId),
}

/// What one pick takes and records. In: the client's address (`hrw` load balancers hash it) and
/// the request's `Cookie` fields (only when a sticky load balancer is reachable). Out: the
/// mirroring services the pick went through, outermost first (Traefik mirrors a request at every
/// mirroring service on its way, also one below a weighted or failover service), and the server
/// a sticky cookie named. Small and inline, as it lives in every forwarded request's future:
/// most picks go through no mirror, and deeper chains than four are not kept (see
/// [`Via::push`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Via {
    /// Service nodes, outermost first; `None` past the last.
    mirrors: [Option<u32>; 4],
    /// The server the request's cookie named in its current form, as (node, index): its answer
    /// needs no `Set-Cookie`.
    hit: Option<(u32, u32)>,
    /// Sticky weighted services the pick went through, outermost first: (node, child position,
    /// the cookie named that child in its current form). Boxed, and only for such picks: it
    /// would make every request's future larger.
    levels: Option<Box<Levels>>,
    /// The client's address, for `hrw` load balancers.
    pub(crate) client: Option<std::net::IpAddr>,
    /// The request's `Cookie` fields, when the service has a sticky load balancer and the
    /// request has any.
    pub(crate) cookies: Option<Box<[http::HeaderValue]>>,
    /// Failover services with `errors` on the way: boxed, and only for such picks.
    failovers: Option<Box<Failovers>>,
}

/// The failover services with `errors` a pick went through (service nodes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Failovers {
    /// Those where it took the main service, outermost first.
    took_main: Vec<usize>,
    /// Those told to take their fallback (their main service's answer was replayed).
    forced: Vec<usize>,
}

impl Via {
    /// The pick of a request from `client` (`hrw` load balancers hash it).
    pub(crate) fn for_client(client: Option<std::net::IpAddr>) -> Self {
        Self {
            client,
            ..Self::default()
        }
    }

    /// Records a mirroring service; past four, further ones are not recorded (plans with longer
    /// chains are refused at start, see [`crate::proxy::mirror::too_deep`]).
    fn push(&mut self, node: usize) {
        if let (Some(slot), Ok(node)) = (
            self.mirrors.iter_mut().find(|n| n.is_none()),
            u32::try_from(node),
        ) {
            *slot = Some(node);
        }
    }

    /// The mirroring services as service nodes, outermost first.
    pub(crate) fn nodes(&self) -> impl Iterator<Item = usize> + '_ {
        self.mirrors.iter().map_while(|n| n.map(|n| n as usize))
    }

    /// Records that the pick took the main service of `node`, a failover service with
    /// `errors`.
    fn took_main(&mut self, node: usize) {
        self.failovers
            .get_or_insert_with(Box::default)
            .took_main
            .push(node);
    }

    fn forced(&self, node: usize) -> bool {
        self.failovers
            .as_ref()
            .is_some_and(|f| f.forced.contains(&node))
    }

    /// The failover services with `errors` whose main service the pick took, innermost first:
    /// the first whose statuses hold the answer's replays it to its fallback.
    pub(crate) fn failovers_taken(&self) -> impl Iterator<Item = usize> + '_ {
        self.failovers
            .iter()
            .flat_map(|f| f.took_main.iter().rev().copied())
    }

    /// A pick for the same request again, with `node`'s fallback taken this time (and those of
    /// earlier replays).
    pub(crate) fn replaying(&self, node: usize) -> Self {
        let mut forced = self
            .failovers
            .as_ref()
            .map(|f| f.forced.clone())
            .unwrap_or_default();
        forced.push(node);
        Self {
            client: self.client,
            cookies: self.cookies.clone(),
            failovers: Some(Box::new(Failovers {
                took_main: Vec::new(),
                forced,
            })),
            ..Self::default()
        }
    }

    /// A fresh pick for another attempt of the same request: the same client, and the
    /// failover fallbacks a replay chose stay chosen.
    pub(crate) fn again(&self) -> Self {
        Self {
            client: self.client,
            failovers: self.failovers.as_ref().map(|f| {
                Box::new(Failovers {
                    took_main: Vec::new(),
                    forced: f.forced.clone(),
                })
            }),
            ..Self::default()
        }
    }

    /// True when the pick went through no mirroring service.
    pub fn is_empty(&self) -> bool {
        self.mirrors[0].is_none()
    }

    /// Records the child a sticky weighted service chose; past two levels, deeper ones are not
    /// recorded (their answers carry no cookie of theirs).
    fn level(&mut self, node: usize, pos: usize, named: bool) {
        let levels = self.levels.get_or_insert_with(Box::default);
        if let (Some(slot), Ok(node), Ok(pos)) = (
            levels.iter_mut().find(|l| l.is_none()),
            u32::try_from(node),
            u32::try_from(pos),
        ) {
            *slot = Some((node, pos, named));
        }
    }

    /// Whether the request's cookie named `server` in its current form.
    fn named(&self, server: &ServerRef) -> bool {
        self.hit
            .is_some_and(|(n, i)| n as usize == server.node && i as usize == server.index)
    }
}

/// The sticky weighted services of one pick: (node, child position, named by the cookie).
type Levels = [Option<(u32, u32, bool)>; 2];

/// A service resolved once by [`Upstreams::service_id`], to pick without hashing its key on every
/// request. Only meaningful for the [`Upstreams`] that returned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceId(usize);

impl ServiceId {
    /// The service's node: its position among the plan's services.
    pub(crate) fn index(self) -> usize {
        self.0
    }
}

#[cfg(test)]
impl ServiceId {
    /// An id for tests of code that only carries it.
    pub(crate) fn for_tests(n: usize) -> Self {
        Self(n)
    }
}

/// Why a plan's services could not be turned into [`Upstreams`].
#[derive(Debug, thiserror::Error)]
pub enum UpstreamError {
    /// A `weighted`, `failover` or `mirroring` service names a service the plan does not have.
    #[error("service `{service}` refers to unknown service `{child}`")]
    UnknownChild {
        /// The referring service.
        service: String,
        /// The missing service.
        child: String,
    },
    /// A server URL (or the health-check URL derived from it) is not usable.
    #[error("service `{service}`: server `{url}`: {source}")]
    InvalidServerUrl {
        /// The load-balancer service.
        service: String,
        /// The server URL as written in the plan.
        url: String,
        /// What is wrong with it.
        #[source]
        source: ProbeTargetError,
    },
    /// A sticky cookie's name or attributes cannot be written in a `Set-Cookie` field.
    #[error("service `{service}`: its sticky cookie cannot be written as a Set-Cookie field")]
    InvalidCookie {
        /// The load-balancer service.
        service: String,
    },
}

/// All upstream services of a plan with the live state of their servers.
///
/// Cloning is cheap (one `Arc`); every clone sees and changes the same state.
#[derive(Debug, Clone)]
pub struct Upstreams {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    ids: FastMap<String, usize>,
    nodes: Vec<ServiceNode>,
    events: broadcast::Sender<StateChange>,
    /// Bumped on every state change; round-robin counters reset when it moves.
    generation: AtomicU64,
    /// Per service node: a sticky load balancer is reachable from it (decided at load, so a
    /// request that needs no cookie never walks the tree).
    sticky: Vec<bool>,
    /// Some load balancer counts its requests in flight (`p2c`, `leasttime`): without one, an
    /// attempt looks nothing up to count itself.
    counts_load: bool,
    /// Per service node: it has middlewares of its own, so a pick that reaches it from above
    /// stops there ([`Pick::Chained`]).
    chained: Vec<bool>,
    /// Per service node: it, or a service a pick from it can reach, has middlewares of its
    /// own (a mirror copy to it goes through the request path, not straight to a server).
    chains_from: Vec<bool>,
}

#[derive(Debug)]
struct ServiceNode {
    name: Arc<str>,
    kind: NodeKind,
}

#[derive(Debug)]
enum NodeKind {
    LoadBalancer(Box<Lb>),
    Weighted {
        /// (node index, weight)
        children: Vec<(usize, u32)>,
        wrr: Mutex<SmoothWrr>,
        /// Sticky sessions over the children, when configured.
        sticky: Option<sticky::Sticky>,
    },
    Failover {
        main: usize,
        fallback: usize,
        /// `errors`: answers of these statuses from the main service are replayed to the
        /// fallback (the proxy's forward phase does it; see [`Via::took_main`]).
        errors: Option<bridge_plan::FailoverErrors>,
    },
    Mirroring {
        main: usize,
    },
    HighestRandomWeight {
        /// (node index, weight, name as written)
        children: Vec<(usize, u32, Arc<str>)>,
        /// Children count only while available (else always, as in Traefik).
        health_check: bool,
    },
}

/// A load balancer's servers and health-check settings (read by [`crate::upstream::health`]).
#[derive(Debug)]
pub(crate) struct Lb {
    pub(crate) servers: Vec<Slot>,
    pub(crate) health_check: Option<HealthCheck>,
    wrr: Mutex<SmoothWrr>,
    /// Woken by [`Upstreams::report_failure`]: the health checker probes every server at once.
    pub(crate) reprobe: Notify,
    /// Probe results recorded so far, and a wake-up for each ([`Upstreams::probe_recorded`]):
    /// a request waiting for the re-probe round a failure triggered knows when it is over.
    probes: AtomicU64,
    probed: Notify,
    /// Sticky sessions, when configured.
    sticky: Option<sticky::Sticky>,
    strategy: bridge_plan::Strategy,
    /// Requests in flight and answer times, for `p2c` and `leasttime`.
    load: Option<Arc<load::Load>>,
}

/// What an operator decided for a server (never in the plan; kept across reloads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdminState {
    /// Takes requests as its health allows.
    Ready,
    /// Takes no new requests or upgrades; what it serves finishes, its tunnels close after
    /// their grace.
    Drain,
    /// Out at once: no new requests, tunnels closed now.
    Maintenance,
}

impl AdminState {
    const fn to_u8(self) -> u8 {
        match self {
            Self::Ready => 0,
            Self::Drain => 1,
            Self::Maintenance => 2,
        }
    }

    const fn from_u8(v: u8) -> Self {
        match v {
            1 => Self::Drain,
            2 => Self::Maintenance,
            _ => Self::Ready,
        }
    }

    /// `ready`, `drain` or `maintenance`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ready => "ready",
            Self::Drain => "drain",
            Self::Maintenance => "maintenance",
        }
    }

    /// The state a name designates.
    pub fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "ready" => Self::Ready,
            "drain" => Self::Drain,
            "maintenance" => Self::Maintenance,
            _ => return None,
        })
    }
}

/// One server of a load balancer.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) url: Arc<str>,
    weight: u32,
    state: AtomicU8,
    /// [`AdminState`], set by an operator.
    admin: AtomicU8,
    /// The probe request, when the load balancer has a health check.
    pub(crate) probe: Option<Arc<ProbeTarget>>,
}

impl Lb {
    /// Whether a request may be sent to `slot`.
    fn admits(&self, slot: &Slot) -> bool {
        // p2c reads no weight: a server of weight 0 takes requests too.
        let weightless = slot.weight == 0 && self.strategy != bridge_plan::Strategy::P2c;
        if weightless || slot.admin.load(Ordering::Acquire) != AdminState::Ready.to_u8() {
            return false;
        }
        match &self.health_check {
            None => true,
            Some(hc) => match ServerState::from_u8(slot.state.load(Ordering::Acquire)) {
                ServerState::Up => true,
                ServerState::Down => false,
                ServerState::Unknown => !hc.probe_before_traffic,
            },
        }
    }
}

/// nginx-style smooth weighted round robin counters, one per candidate position.
#[derive(Debug, Default)]
struct SmoothWrr {
    generation: u64,
    current: Vec<i64>,
}

impl SmoothWrr {
    /// Picks among `candidates` (position, weight > 0) out of `len` positions; `None` when there is
    /// no candidate. Counters are reset when `generation` differs from the last call's.
    fn next(
        &mut self,
        generation: u64,
        len: usize,
        candidates: impl Iterator<Item = (usize, u32)>,
    ) -> Option<usize> {
        if self.generation != generation || self.current.len() != len {
            self.current.clear();
            self.current.resize(len, 0);
            self.generation = generation;
        }
        let mut total: i64 = 0;
        let mut best: Option<(usize, i64)> = None;
        for (pos, weight) in candidates {
            let Some(counter) = self.current.get_mut(pos) else {
                continue;
            };
            let weight = i64::from(weight);
            *counter += weight;
            total += weight;
            // Strictly greater: ties go to the earlier position, so the order is deterministic.
            if best.is_none_or(|(_, b)| *counter > b) {
                best = Some((pos, *counter));
            }
        }
        let (pos, _) = best?;
        if let Some(counter) = self.current.get_mut(pos) {
            *counter -= total;
        }
        Some(pos)
    }
}

/// Whether a sticky load balancer is reachable from `node`.
/// Whether `node`, or a service a pick from it can reach, has middlewares of its own.
fn node_chains(nodes: &[ServiceNode], chained: &[bool], node: usize, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    if chained.get(node).copied().unwrap_or(false) {
        return true;
    }
    let below = |n: usize| node_chains(nodes, chained, n, depth + 1);
    match nodes.get(node).map(|n| &n.kind) {
        Some(NodeKind::Weighted { children, .. }) => children.iter().any(|(c, _)| below(*c)),
        Some(NodeKind::Failover { main, fallback, .. }) => below(*main) || below(*fallback),
        Some(NodeKind::Mirroring { main }) => below(*main),
        Some(NodeKind::HighestRandomWeight { children, .. }) => {
            children.iter().any(|(c, _, _)| below(*c))
        }
        Some(NodeKind::LoadBalancer(_)) | None => false,
    }
}

fn node_sticky(nodes: &[ServiceNode], node: usize, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match nodes.get(node).map(|n| &n.kind) {
        Some(NodeKind::LoadBalancer(lb)) => lb.sticky.is_some(),
        Some(NodeKind::Weighted {
            children, sticky, ..
        }) => {
            sticky.is_some()
                || children
                    .iter()
                    .any(|(child, _)| node_sticky(nodes, *child, depth + 1))
        }
        Some(NodeKind::Failover { main, fallback, .. }) => {
            node_sticky(nodes, *main, depth + 1) || node_sticky(nodes, *fallback, depth + 1)
        }
        Some(NodeKind::Mirroring { main }) => node_sticky(nodes, *main, depth + 1),
        Some(NodeKind::HighestRandomWeight { children, .. }) => children
            .iter()
            .any(|(child, _, _)| node_sticky(nodes, *child, depth + 1)),
        None => false,
    }
}

/// A seed for a load balancer's random draws: the time of the build, as Traefik seeds them,
/// and the balancer's position.
fn seed(position: usize) -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    now ^ (position as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

fn lock(wrr: &Mutex<SmoothWrr>) -> std::sync::MutexGuard<'_, SmoothWrr> {
    // The counters are always consistent between two statements; a panic elsewhere while holding
    // the lock cannot leave them unusable.
    wrr.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Upstreams {
    /// The `errors` of the failover service at `node`, if it has them.
    pub(crate) fn failover_errors(&self, node: usize) -> Option<&bridge_plan::FailoverErrors> {
        match self.inner.nodes.get(node).map(|n| &n.kind) {
            Some(NodeKind::Failover { errors, .. }) => errors.as_ref(),
            _ => None,
        }
    }

    /// Builds the upstream state of `plan`'s services: servers of load balancers with a health
    /// check start [`ServerState::Unknown`], the others [`ServerState::Up`].
    pub fn from_plan(plan: &Plan) -> Result<Self, UpstreamError> {
        let ids: FastMap<String, usize> = plan
            .services
            .keys()
            .enumerate()
            .map(|(i, name)| (name.clone(), i))
            .collect();
        let resolve = |service: &str, child: &str| {
            ids.get(child)
                .copied()
                .ok_or_else(|| UpstreamError::UnknownChild {
                    service: service.to_owned(),
                    child: child.to_owned(),
                })
        };
        let mut nodes = Vec::with_capacity(plan.services.len());
        for (name, service) in &plan.services {
            let kind = match &service.kind {
                ServiceKind::LoadBalancer(lb) => {
                    let initial = if lb.health_check.is_some() {
                        ServerState::Unknown
                    } else {
                        ServerState::Up
                    };
                    let mut servers = Vec::with_capacity(lb.servers.len());
                    for server in &lb.servers {
                        let probe = match &lb.health_check {
                            Some(hc) => Some(Arc::new(ProbeTarget::new(hc, &server.url).map_err(
                                |source| UpstreamError::InvalidServerUrl {
                                    service: name.clone(),
                                    url: server.url.clone(),
                                    source,
                                },
                            )?)),
                            None => None,
                        };
                        servers.push(Slot {
                            url: Arc::from(server.url.as_str()),
                            weight: server.weight,
                            state: AtomicU8::new(initial.to_u8()),
                            admin: AtomicU8::new(AdminState::Ready.to_u8()),
                            probe,
                        });
                    }
                    let sticky = match &lb.sticky {
                        Some(c) => Some(
                            sticky::Sticky::new(c, lb.servers.iter().map(|s| s.url.as_str()))
                                .ok_or_else(|| UpstreamError::InvalidCookie {
                                    service: name.clone(),
                                })?,
                        ),
                        None => None,
                    };
                    let load = matches!(
                        lb.strategy,
                        bridge_plan::Strategy::P2c | bridge_plan::Strategy::Leasttime
                    )
                    .then(|| {
                        let weights: Vec<u32> = lb.servers.iter().map(|s| s.weight).collect();
                        Arc::new(load::Load::new(&weights, seed(nodes.len())))
                    });
                    NodeKind::LoadBalancer(Box::new(Lb {
                        sticky,
                        load,
                        strategy: lb.strategy,
                        servers,
                        health_check: lb.health_check.clone(),
                        wrr: Mutex::default(),
                        reprobe: Notify::new(),
                        probes: AtomicU64::new(0),
                        probed: Notify::new(),
                    }))
                }
                ServiceKind::Weighted(w) => NodeKind::Weighted {
                    children: w
                        .services
                        .iter()
                        .map(|r| Ok((resolve(name, &r.service)?, r.weight)))
                        .collect::<Result<_, UpstreamError>>()?,
                    wrr: Mutex::default(),
                    sticky: match &w.sticky {
                        Some(c) => Some(
                            sticky::Sticky::new(c, w.services.iter().map(|r| r.name.as_str()))
                                .ok_or_else(|| UpstreamError::InvalidCookie {
                                    service: name.clone(),
                                })?,
                        ),
                        None => None,
                    },
                },
                ServiceKind::HighestRandomWeight(h) => NodeKind::HighestRandomWeight {
                    children: h
                        .services
                        .iter()
                        .map(|r| Ok((resolve(name, &r.service)?, r.weight, Arc::from(&*r.name))))
                        .collect::<Result<_, UpstreamError>>()?,
                    health_check: h.health_check,
                },
                ServiceKind::Failover(f) => NodeKind::Failover {
                    main: resolve(name, &f.service)?,
                    fallback: resolve(name, &f.fallback)?,
                    errors: f.errors.clone(),
                },
                ServiceKind::Mirroring(m) => {
                    // Mirrors must exist too, although only the proxy sends to them.
                    for mirror in &m.mirrors {
                        resolve(name, &mirror.service)?;
                    }
                    NodeKind::Mirroring {
                        main: resolve(name, &m.service)?,
                    }
                }
            };
            nodes.push(ServiceNode {
                name: Arc::from(name.as_str()),
                kind,
            });
        }
        let (events, _) = broadcast::channel(EVENT_CAPACITY);
        let sticky = (0..nodes.len())
            .map(|n| node_sticky(&nodes, n, 0))
            .collect();
        let counts_load = nodes
            .iter()
            .any(|n| matches!(&n.kind, NodeKind::LoadBalancer(lb) if lb.load.is_some()));
        let chained: Vec<bool> = plan
            .services
            .values()
            .map(|s| !s.middlewares.is_empty())
            .collect();
        let chains_from = (0..nodes.len())
            .map(|n| node_chains(&nodes, &chained, n, 0))
            .collect();
        Ok(Self {
            inner: Arc::new(Inner {
                ids,
                nodes,
                events,
                sticky,
                counts_load,
                chained,
                chains_from,
                generation: AtomicU64::new(0),
            }),
        })
    }

    /// Whether `id`, or a service a pick from it can reach, has middlewares of its own.
    pub(crate) fn chains_from(&self, id: ServiceId) -> bool {
        self.inner.chains_from.get(id.0).copied().unwrap_or(false)
    }

    /// Whether a pick for `id` may read the request's cookies (a sticky load balancer is
    /// reachable from it).
    pub(crate) fn sticky(&self, id: ServiceId) -> bool {
        self.inner.sticky.get(id.0).copied().unwrap_or(false)
    }

    /// The `Set-Cookie` value an answer from `server` carries: its load balancer is sticky and
    /// the request's cookie did not already name it (Traefik sets it before forwarding, so
    /// whatever the server answers).
    pub(crate) fn set_cookie(&self, server: &ServerRef, via: &Via) -> Option<http::HeaderValue> {
        if via.named(server) {
            return None;
        }
        let lb = self.lb(server.node)?;
        lb.sticky.as_ref()?.set_cookie(server.index).cloned()
    }

    /// The `Set-Cookie` values of the sticky weighted services the pick went through whose
    /// cookie did not already name the chosen child, outermost first (Traefik's order: each
    /// level writes its own before calling the next).
    pub(crate) fn level_cookies(&self, via: &Via) -> impl Iterator<Item = http::HeaderValue> + '_ {
        let levels: [Option<(u32, u32, bool)>; 2] =
            via.levels.as_deref().copied().unwrap_or_default();
        levels
            .into_iter()
            .map_while(|l| l)
            .filter(|(_, _, named)| !named)
            .filter_map(|(node, pos, _)| match self.inner.nodes.get(node as usize) {
                Some(ServiceNode {
                    kind:
                        NodeKind::Weighted {
                            sticky: Some(st), ..
                        },
                    ..
                }) => st.set_cookie(pos as usize).cloned(),
                _ => None,
            })
    }

    /// Counts a request sent to `server` in flight, when its load balancer's strategy reads
    /// that (`p2c`; `leasttime`, except for a request its cookie sent there, as in Traefik).
    #[inline]
    pub(crate) fn count(&self, server: &ServerRef, via: &Via) -> Option<load::Counted> {
        if !self.inner.counts_load {
            return None;
        }
        self.count_in(server, via)
    }

    fn count_in(&self, server: &ServerRef, via: &Via) -> Option<load::Counted> {
        let lb = self.lb(server.node)?;
        let load = lb.load.as_ref()?;
        if lb.strategy == bridge_plan::Strategy::Leasttime && via.named(server) {
            return None;
        }
        Some(load.start(server.index))
    }

    /// Resolves a service key once, for [`Upstreams::pick_id`].
    pub fn service_id(&self, service: &str) -> Option<ServiceId> {
        self.inner.ids.get(service).copied().map(ServiceId)
    }

    /// Chooses the server for one request to `service` (see the module documentation).
    pub fn pick(&self, service: &str) -> Pick {
        match self.service_id(service) {
            Some(id) => self.pick_id(id),
            None => Pick::UnknownService,
        }
    }

    /// [`Upstreams::pick`] for a service resolved with [`Upstreams::service_id`].
    pub fn pick_id(&self, id: ServiceId) -> Pick {
        self.pick_via(id, &mut Via::default())
    }

    /// [`Upstreams::pick_id`], recording in `via` the mirroring services the pick went through.
    pub fn pick_via(&self, id: ServiceId, via: &mut Via) -> Pick {
        if id.0 >= self.inner.nodes.len() {
            return Pick::UnknownService;
        }
        via.mirrors = Default::default();
        via.hit = None;
        via.levels = None;
        self.pick_node(id.0, 0, via)
    }

    fn pick_node(&self, node: usize, depth: usize, via: &mut Via) -> Pick {
        let Some(n) = self.inner.nodes.get(node) else {
            return Pick::NoAvailableServer;
        };
        if depth > MAX_DEPTH {
            return Pick::NoAvailableServer;
        }
        if depth > 0 && self.inner.chained.get(node).copied().unwrap_or(false) {
            return Pick::Chained(ServiceId(node));
        }
        match &n.kind {
            NodeKind::LoadBalancer(lb) => {
                // A cookie naming an available server wins, without advancing the rotation.
                if let Some(st) = &lb.sticky
                    && let Some(cookies) = via.cookies.as_deref()
                    && let Some(named) = st.named(cookies)
                    && let Some(slot) = lb.servers.get(named.index).filter(|s| lb.admits(s))
                {
                    if !named.legacy {
                        via.hit = u32::try_from(node)
                            .ok()
                            .zip(u32::try_from(named.index).ok());
                    }
                    return Pick::Server(ServerRef {
                        service: n.name.clone(),
                        url: slot.url.clone(),
                        node,
                        index: named.index,
                    });
                }
                let generation = self.inner.generation.load(Ordering::Acquire);
                let mut available = lb.servers.iter().enumerate().filter(|(_, s)| lb.admits(s));
                let chosen = match (available.next(), available.next()) {
                    (None, _) => None,
                    // Only one: no round robin to advance, no lock.
                    (Some((i, _)), None) => Some(i),
                    (Some(_), Some(_)) if lb.strategy == bridge_plan::Strategy::Hrw => hrw::pick(
                        via.client,
                        lb.servers.iter().map(|s| (&*s.url, s.weight, lb.admits(s))),
                    ),
                    (Some(_), Some(_)) if lb.load.is_some() => {
                        let admitted = lb.servers.iter().enumerate().filter(|(_, s)| lb.admits(s));
                        match (&lb.load, lb.strategy) {
                            (Some(load), bridge_plan::Strategy::P2c) => {
                                load.p2c(admitted.map(|(i, _)| i))
                            }
                            (Some(load), _) => {
                                load.least_time(admitted.map(|(i, s)| (i, s.weight)))
                            }
                            (None, _) => None,
                        }
                    }
                    (Some(_), Some(_)) => lock(&lb.wrr).next(
                        generation,
                        lb.servers.len(),
                        lb.servers
                            .iter()
                            .enumerate()
                            .filter(|(_, s)| lb.admits(s))
                            .map(|(i, s)| (i, s.weight)),
                    ),
                };
                match chosen.and_then(|i| lb.servers.get(i).map(|s| (i, s))) {
                    Some((index, slot)) => Pick::Server(ServerRef {
                        service: n.name.clone(),
                        url: slot.url.clone(),
                        node,
                        index,
                    }),
                    None => Pick::NoAvailableServer,
                }
            }
            NodeKind::Weighted {
                children,
                wrr,
                sticky,
            } => {
                // A cookie naming an available child wins, without advancing the rotation.
                if let Some(st) = sticky
                    && let Some(cookies) = via.cookies.as_deref()
                    && let Some(named) = st.named(cookies)
                    && let Some((child, weight)) = children.get(named.index)
                    && *weight > 0
                    && self.node_available(*child, depth + 1)
                {
                    via.level(node, named.index, !named.legacy);
                    return self.pick_node(*child, depth + 1, via);
                }
                let generation = self.inner.generation.load(Ordering::Acquire);
                let candidates = || {
                    children
                        .iter()
                        .enumerate()
                        .filter(|(_, (child, weight))| {
                            *weight > 0 && self.node_available(*child, depth + 1)
                        })
                        .map(|(pos, (_, weight))| (pos, *weight))
                };
                let mut available = candidates();
                let chosen = match (available.next(), available.next()) {
                    (None, _) => None,
                    (Some((pos, _)), None) => Some(pos),
                    // Availability checks are atomic loads only: no other lock is taken under this one.
                    (Some(_), Some(_)) => lock(wrr).next(generation, children.len(), candidates()),
                };
                match chosen.and_then(|pos| children.get(pos).map(|c| (pos, c))) {
                    Some((pos, (child, _))) => {
                        if sticky.is_some() {
                            via.level(node, pos, false);
                        }
                        self.pick_node(*child, depth + 1, via)
                    }
                    None => Pick::NoAvailableServer,
                }
            }
            NodeKind::Failover {
                main,
                fallback,
                errors,
            } => {
                let forced = errors.is_some() && via.forced(node);
                if !forced && self.node_available(*main, depth + 1) {
                    if errors.is_some() {
                        via.took_main(node);
                    }
                    self.pick_node(*main, depth + 1, via)
                } else {
                    self.pick_node(*fallback, depth + 1, via)
                }
            }
            NodeKind::Mirroring { main } => {
                via.push(node);
                self.pick_node(*main, depth + 1, via)
            }
            NodeKind::HighestRandomWeight {
                children,
                health_check,
            } => {
                let chosen = hrw::pick(
                    via.client,
                    children.iter().map(|(child, weight, name)| {
                        let up = !*health_check || self.node_available(*child, depth + 1);
                        (&**name, *weight, up)
                    }),
                );
                match chosen.and_then(|pos| children.get(pos)) {
                    Some((child, _, _)) => self.pick_node(*child, depth + 1, via),
                    None => Pick::NoAvailableServer,
                }
            }
        }
    }

    /// How long a request to `id` may wait for a server while none is available: the longest
    /// `hold_ms` of the health-checked load balancers it can reach (`0` for none).
    pub fn hold(&self, id: ServiceId) -> std::time::Duration {
        std::time::Duration::from_millis(self.node_hold(id.0, 0))
    }

    fn node_hold(&self, node: usize, depth: usize) -> u64 {
        if depth > MAX_DEPTH {
            return 0;
        }
        let Some(n) = self.inner.nodes.get(node) else {
            return 0;
        };
        match &n.kind {
            NodeKind::LoadBalancer(lb) => lb.health_check.as_ref().map_or(0, |hc| hc.hold_ms),
            NodeKind::Weighted { children, .. } => children
                .iter()
                .map(|(child, _)| self.node_hold(*child, depth + 1))
                .max()
                .unwrap_or(0),
            NodeKind::Failover { main, fallback, .. } => self
                .node_hold(*main, depth + 1)
                .max(self.node_hold(*fallback, depth + 1)),
            NodeKind::Mirroring { main } => self.node_hold(*main, depth + 1),
            NodeKind::HighestRandomWeight { children, .. } => children
                .iter()
                .map(|(child, _, _)| self.node_hold(*child, depth + 1))
                .max()
                .unwrap_or(0),
        }
    }

    /// [`Upstreams::pick_id`], but while no server is available it waits up to the service's
    /// [`Upstreams::hold`] for a state change that makes one available (`bridge.hold`), instead of
    /// giving up at once. Woken by state changes only: it never polls.
    pub async fn pick_holding(&self, id: ServiceId, via: &mut Via) -> Pick {
        let first = self.pick_via(id, via);
        if first != Pick::NoAvailableServer {
            return first;
        }
        self.hold_for(id, via).await
    }

    /// After a pick found no server: waits for one up to the service's hold (`bridge:`), else
    /// no available server at once.
    pub async fn hold_for(&self, id: ServiceId, via: &mut Via) -> Pick {
        let hold = self.hold(id);
        if hold.is_zero() {
            return Pick::NoAvailableServer;
        }
        // Boxed: the waiting state would otherwise make every request's future larger.
        Box::pin(self.wait_for_server(id, hold, via)).await
    }

    async fn wait_for_server(
        &self,
        id: ServiceId,
        hold: std::time::Duration,
        via: &mut Via,
    ) -> Pick {
        crate::observe::note(|s| s.held = true);
        let deadline = Instant::now() + hold;
        // Subscribed before looking again, so a change between the two cannot be missed.
        let mut events = self.subscribe();
        loop {
            match self.pick_via(id, via) {
                Pick::NoAvailableServer => {}
                other => return other,
            }
            match tokio::time::timeout_at(deadline, events.recv()).await {
                Err(_) | Ok(Err(broadcast::error::RecvError::Closed)) => {
                    return self.pick_via(id, via);
                }
                Ok(Ok(_) | Err(broadcast::error::RecvError::Lagged(_))) => {}
            }
        }
    }

    /// After a request to `failed` could not connect ([`Upstreams::report_failure`] marked it
    /// down and asked for a re-probe of its load balancer): [`Upstreams::pick_via`], but while
    /// no server is available it waits for that re-probe round — every server of the load
    /// balancer probed once more, bounded by the probe timeout — so a standby promoted at the
    /// moment the active node crashed gets the request instead of a 502. Without a health check
    /// nothing is re-probed and nothing waits.
    pub async fn pick_after_failure(
        &self,
        id: ServiceId,
        via: &mut Via,
        failed: &ServerRef,
    ) -> Pick {
        let first = self.pick_via(id, via);
        if first != Pick::NoAvailableServer {
            return first;
        }
        let Some((lb, _)) = self.resolve(failed) else {
            return first;
        };
        let Some(check) = &lb.health_check else {
            return first;
        };
        let bound = std::time::Duration::from_millis(check.timeout_ms.max(1));
        // Boxed: the waiting state would otherwise make every request's future larger.
        Box::pin(self.wait_for_round(id, via, lb, bound)).await
    }

    async fn wait_for_round(
        &self,
        id: ServiceId,
        via: &mut Via,
        lb: &Lb,
        bound: std::time::Duration,
    ) -> Pick {
        let deadline = Instant::now() + bound;
        let round_over = lb.probes.load(Ordering::Acquire) + lb.servers.len() as u64;
        let mut events = self.subscribe();
        loop {
            // Registered before looking, so a probe recorded in between is not missed.
            let probed = lb.probed.notified();
            tokio::pin!(probed);
            probed.as_mut().enable();
            let pick = self.pick_via(id, via);
            if pick != Pick::NoAvailableServer || lb.probes.load(Ordering::Acquire) >= round_over {
                return pick;
            }
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return self.pick_via(id, via),
                () = &mut probed => {}
                ev = events.recv() => if let Err(broadcast::error::RecvError::Closed) = ev {
                    return self.pick_via(id, via);
                },
            }
        }
    }

    /// A probe result of load balancer `node` was recorded (called by [`crate::upstream::health`]).
    pub(crate) fn probe_recorded(&self, node: usize) {
        if let Some(lb) = self.lb(node) {
            lb.probes.fetch_add(1, Ordering::AcqRel);
            lb.probed.notify_waiters();
        }
    }

    /// Whether `service` has a server a request could be sent to now; `None` for an unknown key.
    pub fn is_available(&self, service: &str) -> Option<bool> {
        let id = self.service_id(service)?;
        Some(self.node_available(id.0, 0))
    }

    fn node_available(&self, node: usize, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        let Some(n) = self.inner.nodes.get(node) else {
            return false;
        };
        match &n.kind {
            NodeKind::LoadBalancer(lb) => lb.servers.iter().any(|s| lb.admits(s)),
            NodeKind::Weighted { children, .. } => children
                .iter()
                .any(|(child, weight)| *weight > 0 && self.node_available(*child, depth + 1)),
            NodeKind::Failover { main, fallback, .. } => {
                self.node_available(*main, depth + 1) || self.node_available(*fallback, depth + 1)
            }
            NodeKind::Mirroring { main } => self.node_available(*main, depth + 1),
            NodeKind::HighestRandomWeight {
                children,
                health_check,
            } => children.iter().any(|(child, weight, _)| {
                *weight > 0 && (!*health_check || self.node_available(*child, depth + 1))
            }),
        }
    }

    /// Reports a failure seen on live traffic to `server`.
    ///
    /// A connect failure or reset (`FailureKind::marks_down`) marks the server down at once; any
    /// kind wakes the health checker of its load balancer for an immediate probe of all its
    /// servers. Returns the key of that load balancer, or `None` when nothing is done: the load
    /// balancer has no health check (nothing would ever mark the server up again, so it is left
    /// up, as Traefik does) or `server` is not one of these upstreams.
    pub fn report_failure(&self, server: &ServerRef, kind: FailureKind) -> Option<Arc<str>> {
        let (lb, _) = self.resolve(server)?;
        lb.health_check.as_ref()?;
        if kind.marks_down() {
            self.set_state_at(
                server.node,
                server.index,
                ServerState::Down,
                kind.describe(),
            );
        }
        lb.reprobe.notify_one();
        Some(server.service.clone())
    }

    /// Receives every later [`StateChange`].
    pub fn subscribe(&self) -> broadcast::Receiver<StateChange> {
        self.inner.events.subscribe()
    }

    /// The state of `server`, or `None` if it is not one of these upstreams.
    pub fn state(&self, server: &ServerRef) -> Option<ServerState> {
        let (_, slot) = self.resolve(server)?;
        Some(ServerState::from_u8(slot.state.load(Ordering::Acquire)))
    }

    /// Sets the state of `server` and broadcasts the change, if any. The health checker and
    /// [`Upstreams::report_failure`] call this; other callers are tests and tools.
    pub fn set_state(
        &self,
        server: &ServerRef,
        to: ServerState,
        reason: &str,
    ) -> Option<StateChange> {
        self.resolve(server)?;
        self.set_state_at(server.node, server.index, to, reason)
    }

    /// The servers of load balancer `service` with their state and weight, in plan order; `None`
    /// when `service` is not a load balancer.
    pub fn server_states(&self, service: &str) -> Option<Vec<(ServerRef, u32, ServerState)>> {
        let node = *self.inner.ids.get(service)?;
        let lb = self.lb(node)?;
        let name = self.inner.nodes.get(node)?.name.clone();
        Some(
            lb.servers
                .iter()
                .enumerate()
                .map(|(index, slot)| {
                    (
                        ServerRef {
                            service: name.clone(),
                            url: slot.url.clone(),
                            node,
                            index,
                        },
                        slot.weight,
                        ServerState::from_u8(slot.state.load(Ordering::Acquire)),
                    )
                })
                .collect(),
        )
    }

    /// The server of load balancer `service` with this URL (the first, if listed twice).
    pub fn server_ref(&self, service: &str, url: &str) -> Option<ServerRef> {
        self.server_states(service)?
            .into_iter()
            .map(|(server, _, _)| server)
            .find(|server| server.url() == url)
    }

    /// The operator's state of a server.
    pub fn admin_state(&self, server: &ServerRef) -> Option<AdminState> {
        let (_, slot) = self.resolve(server)?;
        Some(AdminState::from_u8(slot.admin.load(Ordering::Acquire)))
    }

    /// Sets the operator's state of a server; returns the previous one. Picking restarts (the
    /// round-robin generation moves) so the change applies to the next request.
    pub fn set_admin_state(&self, server: &ServerRef, to: AdminState) -> Option<AdminState> {
        let (_, slot) = self.resolve(server)?;
        let from = AdminState::from_u8(slot.admin.swap(to.to_u8(), Ordering::AcqRel));
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        Some(from)
    }

    fn resolve(&self, server: &ServerRef) -> Option<(&Lb, &Slot)> {
        let node = self.inner.nodes.get(server.node)?;
        let NodeKind::LoadBalancer(lb) = &node.kind else {
            return None;
        };
        let slot = lb.servers.get(server.index)?;
        (node.name == server.service && slot.url == server.url).then_some((lb, slot))
    }

    /// Keys (node indices) of the load balancers that have a health check, in key order.
    pub(crate) fn health_checked(&self) -> Vec<usize> {
        (0..self.inner.nodes.len())
            .filter(|&i| self.lb(i).is_some_and(|lb| lb.health_check.is_some()))
            .collect()
    }

    pub(crate) fn lb(&self, node: usize) -> Option<&Lb> {
        match &self.inner.nodes.get(node)?.kind {
            NodeKind::LoadBalancer(lb) => Some(lb),
            _ => None,
        }
    }

    /// How long `server` may be down before its tunnels are closed (its health check's
    /// `close_tunnels_after_ms`); `None`: its tunnels ignore its state.
    pub(crate) fn tunnel_grace(&self, server: &ServerRef) -> Option<std::time::Duration> {
        let hc = self.lb(server.node)?.health_check.as_ref()?;
        hc.close_tunnels_after_ms
            .map(std::time::Duration::from_millis)
    }

    pub(crate) fn state_at(&self, node: usize, index: usize) -> Option<ServerState> {
        let slot = self.lb(node)?.servers.get(index)?;
        Some(ServerState::from_u8(slot.state.load(Ordering::Acquire)))
    }

    /// Swaps the state in; when it changed, moves the round-robin generation and broadcasts.
    pub(crate) fn set_state_at(
        &self,
        node: usize,
        index: usize,
        to: ServerState,
        reason: &str,
    ) -> Option<StateChange> {
        let name = self.inner.nodes.get(node)?.name.clone();
        let slot = self.lb(node)?.servers.get(index)?;
        let from = ServerState::from_u8(slot.state.swap(to.to_u8(), Ordering::AcqRel));
        if from == to {
            return None;
        }
        self.inner.generation.fetch_add(1, Ordering::AcqRel);
        let change = StateChange {
            service: name,
            url: slot.url.clone(),
            from,
            to,
            at: Instant::now(),
            reason: reason.to_owned(),
        };
        // An error only means nobody is subscribed.
        let _ = self.inner.events.send(change.clone());
        Some(change)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use bridge_plan::{
        Failover, HealthCheck, LoadBalancer, Mirror, Mirroring, Server, Service, Weighted,
        WeightedRef,
    };

    use std::time::Duration;

    use super::*;

    /// The seed's health check: `/health/active` every 5 s, 3 s timeout, down servers re-probed
    /// every 250 ms, nothing sent before a probe answered.
    pub(crate) fn seed_check() -> HealthCheck {
        HealthCheck {
            path: "/health/active".into(),
            scheme: None,
            port: None,
            hostname: None,
            method: "GET".into(),
            headers: BTreeMap::new(),
            status: None,
            interval_ms: 5_000,
            unhealthy_interval_ms: 5_000,
            timeout_ms: 3_000,
            follow_redirects: true,
            down_reprobe_interval_ms: 250,
            probe_before_traffic: true,
            hold_ms: 0,
            close_tunnels_after_ms: Some(500),
            mode: Default::default(),
        }
    }

    pub(crate) fn lb(servers: &[(&str, u32)], health_check: Option<HealthCheck>) -> ServiceKind {
        ServiceKind::LoadBalancer(LoadBalancer {
            servers: servers
                .iter()
                .map(|(url, weight)| Server {
                    url: (*url).into(),
                    weight: *weight,
                    preserve_path: false,
                })
                .collect(),
            pass_host_header: true,
            health_check,
            servers_transport: None,
            sticky: None,
            strategy: bridge_plan::Strategy::Wrr,
        })
    }

    /// The example plan with its services replaced by `services`.
    pub(crate) fn plan(services: Vec<(&str, ServiceKind)>) -> Plan {
        let mut plan = Plan::example();
        let source = plan.services["whoami"].source.clone();
        plan.services = services
            .into_iter()
            .map(|(name, kind)| {
                (
                    name.to_owned(),
                    Service {
                        middlewares: Vec::new(),
                        source: source.clone(),
                        kind,
                    },
                )
            })
            .collect();
        plan
    }

    fn picked_url(pick: Pick) -> String {
        match pick {
            Pick::Server(s) => s.url().to_owned(),
            other => panic!("expected a server, got {other:?}"),
        }
    }

    fn set(up: &Upstreams, service: &str, url: &str, state: ServerState) {
        let server = up.server_ref(service, url).unwrap();
        up.set_state(&server, state, "test");
    }

    const A: &str = "http://10.0.0.11:8080";
    const B: &str = "http://10.0.0.12:8080";

    #[tokio::test(start_paused = true)]
    async fn smooth_wrr_1_3_is_exact_and_smooth() {
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1), (B, 3)], None))])).unwrap();
        let picks: Vec<String> = (0..400).map(|_| picked_url(up.pick("svc"))).collect();
        assert_eq!(picks.iter().filter(|u| *u == A).count(), 100);
        assert_eq!(picks.iter().filter(|u| *u == B).count(), 300);
        assert!(
            picks.windows(2).all(|w| !(w[0] == A && w[1] == A)),
            "the weight-1 server was picked twice in a row"
        );
        // Smooth: B A B B repeated.
        assert_eq!(picks[..8], [B, A, B, B, B, A, B, B]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_sticky_cookie_keeps_its_available_server_without_advancing_the_rotation() {
        let mut kind = lb(&[(A, 1), (B, 1)], Some(seed_check()));
        if let ServiceKind::LoadBalancer(l) = &mut kind {
            l.sticky = Some(
                serde_json::from_value(serde_json::json!({
                    "name": "st", "path": "/", "domain": null, "max_age": null,
                    "http_only": false, "secure": false, "same_site": null
                }))
                .unwrap(),
            );
        }
        let up = Upstreams::from_plan(&plan(vec![("svc", kind)])).unwrap();
        set(&up, "svc", A, ServerState::Up);
        set(&up, "svc", B, ServerState::Up);
        let id = up.service_id("svc").unwrap();
        assert!(up.sticky(id));
        let b_value = "st=ce5e15f57a2dbbd9";
        let pick = |cookie: Option<String>| {
            let mut via = Via {
                cookies: cookie.map(|c| Box::from([http::HeaderValue::from_str(&c).unwrap()])),
                ..Via::default()
            };
            let Pick::Server(s) = up.pick_via(id, &mut via) else {
                panic!("no server")
            };
            let set = up
                .set_cookie(&s, &via)
                .map(|v| v.to_str().unwrap().to_owned());
            (s.url().to_owned(), set)
        };
        // Without a cookie: the rotation, and a cookie for whoever was picked.
        let (first, cookie) = pick(None);
        assert!(cookie.unwrap().ends_with("; Path=/"));
        // The cookie for B: B every time, no new cookie, and the rotation did not move.
        let value = |url: &str| {
            format!("st={}", {
                use sha2::Digest as _;
                let d = sha2::Sha256::digest(url.as_bytes());
                d[..8]
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect::<String>()
            })
        };
        assert_eq!(value(B), b_value);
        for _ in 0..3 {
            assert_eq!(pick(Some(value(B))), (B.to_owned(), None));
        }
        let (second, _) = pick(None);
        assert_ne!(first, second, "sticky hits leave the rotation where it was");
        // The raw URL (an older Traefik's cookie): B, and the cookie in today's form.
        assert_eq!(
            pick(Some(format!("st={B}"))),
            (B.to_owned(), Some(format!("{b_value}; Path=/")))
        );
        // B down: the cookie is ignored, A serves and the client gets A's cookie.
        set(&up, "svc", B, ServerState::Down);
        let (url, cookie) = pick(Some(value(B)));
        assert_eq!(url, A);
        assert_eq!(cookie, Some(format!("{}; Path=/", value(A))));
    }

    #[tokio::test(start_paused = true)]
    async fn wrr_restarts_after_a_state_change() {
        let c = "http://10.0.0.13:8080";
        let up = Upstreams::from_plan(&plan(vec![(
            "svc",
            lb(&[(A, 1), (B, 3), (c, 1)], Some(seed_check())),
        )]))
        .unwrap();
        set(&up, "svc", A, ServerState::Up);
        set(&up, "svc", B, ServerState::Up);
        let picks: Vec<String> = (0..3).map(|_| picked_url(up.pick("svc"))).collect();
        assert_eq!(picks, [B, A, B]);
        // Any change starts the sequence afresh (here: C, never picked, goes down).
        set(&up, "svc", c, ServerState::Down);
        let picks: Vec<String> = (0..4).map(|_| picked_url(up.pick("svc"))).collect();
        assert_eq!(picks, [B, A, B, B]);
    }

    #[tokio::test(start_paused = true)]
    async fn without_health_check_every_server_is_picked() {
        let c = "http://10.0.0.13:8080";
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1), (B, 1), (c, 1)], None))]))
            .unwrap();
        let picks: Vec<String> = (0..6).map(|_| picked_url(up.pick("svc"))).collect();
        assert_eq!(picks, [A, B, c, A, B, c]);
        for (_, _, state) in up.server_states("svc").unwrap() {
            assert_eq!(state, ServerState::Up);
        }
        // Passive failures do not take a server of an unchecked load balancer out for good.
        let a = up.server_ref("svc", A).unwrap();
        assert_eq!(up.report_failure(&a, FailureKind::ConnectRefused), None);
        assert_eq!(up.state(&a), Some(ServerState::Up));
    }

    #[tokio::test(start_paused = true)]
    async fn weight_zero_is_never_picked() {
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 0), (B, 2)], None))])).unwrap();
        for _ in 0..10 {
            assert_eq!(picked_url(up.pick("svc")), B);
        }
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 0)], None))])).unwrap();
        assert_eq!(up.pick("svc"), Pick::NoAvailableServer);
    }

    #[tokio::test(start_paused = true)]
    async fn a_held_request_gets_the_server_that_comes_up_within_the_hold() {
        let mut check = seed_check();
        check.hold_ms = 2_000;
        let up = Upstreams::from_plan(&plan(vec![(
            "svc",
            lb(&[("http://a:1", 1), ("http://b:1", 1)], Some(check)),
        )]))
        .unwrap();
        let id = up.service_id("svc").unwrap();
        assert_eq!(up.hold(id), Duration::from_secs(2));
        set(&up, "svc", "http://a:1", ServerState::Down);
        set(&up, "svc", "http://b:1", ServerState::Down);
        let started = Instant::now();
        let waiter = {
            let up = up.clone();
            tokio::spawn(async move { up.pick_holding(id, &mut Via::default()).await })
        };
        tokio::time::sleep(Duration::from_millis(700)).await;
        assert!(!waiter.is_finished());
        set(&up, "svc", "http://b:1", ServerState::Up);
        let pick = waiter.await.unwrap();
        assert_eq!(picked_url(pick), "http://b:1");
        assert_eq!(started.elapsed(), Duration::from_millis(700));

        // Nothing comes up: 503 exactly when the hold ends, not before.
        set(&up, "svc", "http://b:1", ServerState::Down);
        let started = Instant::now();
        assert_eq!(
            up.pick_holding(id, &mut Via::default()).await,
            Pick::NoAvailableServer
        );
        assert_eq!(started.elapsed(), Duration::from_secs(2));
    }

    #[tokio::test(start_paused = true)]
    async fn after_a_crash_a_request_waits_for_the_reprobe_round_only() {
        let up = Upstreams::from_plan(&plan(vec![(
            "svc",
            lb(&[("http://a:1", 1), ("http://b:1", 1)], Some(seed_check())),
        )]))
        .unwrap();
        let id = up.service_id("svc").unwrap();
        let node = up.server_ref("svc", "http://a:1").unwrap().node;
        set(&up, "svc", "http://a:1", ServerState::Up);
        set(&up, "svc", "http://b:1", ServerState::Down);
        let a = up.server_ref("svc", "http://a:1").unwrap();
        up.report_failure(&a, FailureKind::ConnectRefused);
        // The standby answers the re-probe 120 ms later: the request gets it, not a 502.
        let started = Instant::now();
        let waiter = {
            let (up, a) = (up.clone(), a.clone());
            tokio::spawn(async move { up.pick_after_failure(id, &mut Via::default(), &a).await })
        };
        tokio::time::sleep(Duration::from_millis(120)).await;
        assert!(!waiter.is_finished());
        set(&up, "svc", "http://b:1", ServerState::Up);
        up.probe_recorded(node);
        assert_eq!(picked_url(waiter.await.unwrap()), "http://b:1");
        assert_eq!(started.elapsed(), Duration::from_millis(120));

        // The round ends with nothing up: the answer comes when the last probe is in, not at the
        // probe timeout.
        set(&up, "svc", "http://b:1", ServerState::Down);
        let started = Instant::now();
        let waiter = {
            let (up, a) = (up.clone(), a.clone());
            tokio::spawn(async move { up.pick_after_failure(id, &mut Via::default(), &a).await })
        };
        for _ in 0..2 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            up.probe_recorded(node);
        }
        assert_eq!(waiter.await.unwrap(), Pick::NoAvailableServer);
        assert_eq!(started.elapsed(), Duration::from_millis(100));

        // No probe answers: bounded by the probe timeout (3 s).
        let started = Instant::now();
        assert_eq!(
            up.pick_after_failure(id, &mut Via::default(), &a).await,
            Pick::NoAvailableServer
        );
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_hold_no_available_server_is_immediate() {
        let up = Upstreams::from_plan(&plan(vec![(
            "svc",
            lb(&[("http://a:1", 1)], Some(seed_check())),
        )]))
        .unwrap();
        let id = up.service_id("svc").unwrap();
        set(&up, "svc", "http://a:1", ServerState::Down);
        let started = Instant::now();
        assert_eq!(
            up.pick_holding(id, &mut Via::default()).await,
            Pick::NoAvailableServer
        );
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_counts_only_without_probe_before_traffic() {
        let up =
            Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1)], Some(seed_check())))])).unwrap();
        assert_eq!(up.pick("svc"), Pick::NoAvailableServer);
        assert_eq!(up.is_available("svc"), Some(false));
        assert_eq!(up.pick("nope"), Pick::UnknownService);
        assert_eq!(up.is_available("nope"), None);

        let mut check = seed_check();
        check.probe_before_traffic = false;
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1)], Some(check)))])).unwrap();
        assert_eq!(picked_url(up.pick("svc")), A);
        set(&up, "svc", A, ServerState::Down);
        assert_eq!(up.pick("svc"), Pick::NoAvailableServer);
    }

    fn two_lbs_plus(parent: (&str, ServiceKind)) -> Upstreams {
        Upstreams::from_plan(&plan(vec![
            ("a", lb(&[(A, 1)], Some(seed_check()))),
            ("b", lb(&[(B, 1)], Some(seed_check()))),
            parent,
        ]))
        .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn weighted_skips_the_unavailable_child() {
        let weighted = ServiceKind::Weighted(Weighted {
            services: vec![
                WeightedRef {
                    service: "a".into(),
                    name: "a".into(),
                    weight: 1,
                },
                WeightedRef {
                    service: "b".into(),
                    name: "b".into(),
                    weight: 1,
                },
            ],
            health_check: false,
            sticky: None,
        });
        let up = two_lbs_plus(("w", weighted));
        assert_eq!(up.pick("w"), Pick::NoAvailableServer);
        set(&up, "a", A, ServerState::Down);
        set(&up, "b", B, ServerState::Up);
        for _ in 0..10 {
            assert_eq!(picked_url(up.pick("w")), B);
        }
        set(&up, "a", A, ServerState::Up);
        let picks: Vec<String> = (0..4).map(|_| picked_url(up.pick("w"))).collect();
        assert_eq!(picks, [A, B, A, B]);
        set(&up, "b", B, ServerState::Down);
        for _ in 0..10 {
            assert_eq!(picked_url(up.pick("w")), A);
        }
        set(&up, "a", A, ServerState::Down);
        assert_eq!(up.pick("w"), Pick::NoAvailableServer);
        assert_eq!(up.is_available("w"), Some(false));
    }

    /// Nested failovers with `errors`: the pick records the main services it took, innermost
    /// first, and a replay forces one failover's fallback after another, as Traefik's nested
    /// handlers hand an answer outwards.
    #[tokio::test(start_paused = true)]
    async fn failover_errors_replays_go_from_the_innermost_failover_out() {
        const C: &str = "http://10.0.0.13:8080";
        let errors = || {
            Some(bridge_plan::FailoverErrors {
                status: vec![bridge_plan::StatusRange { from: 500, to: 599 }],
                max_request_body_bytes: None,
            })
        };
        let up = Upstreams::from_plan(&plan(vec![
            ("a", lb(&[(A, 1)], None)),
            ("b", lb(&[(B, 1)], None)),
            ("c", lb(&[(C, 1)], None)),
            (
                "inner",
                ServiceKind::Failover(Failover {
                    service: "a".into(),
                    fallback: "b".into(),
                    health_check: false,
                    errors: errors(),
                }),
            ),
            (
                "outer",
                ServiceKind::Failover(Failover {
                    service: "inner".into(),
                    fallback: "c".into(),
                    health_check: false,
                    errors: errors(),
                }),
            ),
        ]))
        .unwrap();
        let id = up.service_id("outer").unwrap();
        let mut via = Via::default();
        assert_eq!(picked_url(up.pick_via(id, &mut via)), A);
        let taken: Vec<usize> = via.failovers_taken().collect();
        assert_eq!(taken.len(), 2);
        assert!(up.failover_errors(taken[0]).is_some());
        // The inner failover replays to its fallback; the outer one still took its main.
        let mut again = via.replaying(taken[0]);
        assert_eq!(picked_url(up.pick_via(id, &mut again)), B);
        assert_eq!(again.failovers_taken().collect::<Vec<_>>(), [taken[1]]);
        // A retry of that pass keeps the forced fallback.
        let mut retry = again.again();
        assert_eq!(picked_url(up.pick_via(id, &mut retry)), B);
        // Then the outer one replays to its own fallback, and no failover is left to replay.
        let mut last = again.replaying(taken[1]);
        assert_eq!(picked_url(up.pick_via(id, &mut last)), C);
        assert_eq!(last.failovers_taken().count(), 0);
        // Without errors, a failover records nothing.
        let mut plain = Via::default();
        let f = up.service_id("a").unwrap();
        let _ = up.pick_via(f, &mut plain);
        assert_eq!(plain.failovers_taken().count(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn failover_and_mirroring_follow_availability() {
        let failover = ServiceKind::Failover(Failover {
            service: "a".into(),
            fallback: "b".into(),
            health_check: false,
            errors: None,
        });
        let up = two_lbs_plus(("f", failover));
        assert_eq!(up.pick("f"), Pick::NoAvailableServer);
        set(&up, "a", A, ServerState::Up);
        set(&up, "b", B, ServerState::Up);
        assert_eq!(picked_url(up.pick("f")), A);
        set(&up, "a", A, ServerState::Down);
        assert_eq!(picked_url(up.pick("f")), B);
        set(&up, "a", A, ServerState::Up);
        assert_eq!(picked_url(up.pick("f")), A);

        let mirroring = ServiceKind::Mirroring(Mirroring {
            service: "a".into(),
            mirrors: vec![Mirror {
                service: "b".into(),
                percent: 50,
            }],
            mirror_body: false,
            max_body_size: None,
        });
        let up = two_lbs_plus(("m", mirroring));
        set(&up, "b", B, ServerState::Up);
        assert_eq!(up.pick("m"), Pick::NoAvailableServer);
        set(&up, "a", A, ServerState::Up);
        for _ in 0..3 {
            assert_eq!(picked_url(up.pick("m")), A);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_pick_records_the_mirroring_services_on_its_way() {
        let mirroring = |to: &str| {
            ServiceKind::Mirroring(Mirroring {
                service: to.into(),
                mirrors: vec![Mirror {
                    service: "b".into(),
                    percent: 100,
                }],
                mirror_body: true,
                max_body_size: None,
            })
        };
        let weighted = ServiceKind::Weighted(Weighted {
            services: vec![WeightedRef {
                service: "outer".into(),
                name: "outer".into(),
                weight: 1,
            }],
            health_check: false,
            sticky: None,
        });
        let up = Upstreams::from_plan(&plan(vec![
            ("a", lb(&[(A, 1)], Some(seed_check()))),
            ("b", lb(&[(B, 1)], Some(seed_check()))),
            ("inner", mirroring("a")),
            ("outer", mirroring("inner")),
            ("w", weighted),
        ]))
        .unwrap();
        set(&up, "a", A, ServerState::Up);
        let mut via = Via::default();
        let id = up.service_id("w").unwrap();
        assert_eq!(picked_url(up.pick_via(id, &mut via)), A);
        let names: Vec<&str> = via.nodes().map(|n| &*up.inner.nodes[n].name).collect();
        assert_eq!(names, ["outer", "inner"]);
        // A pick starts afresh, and one through no mirroring service records none.
        let id = up.service_id("a").unwrap();
        assert_eq!(picked_url(up.pick_via(id, &mut via)), A);
        assert!(via.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_children_are_refused_and_deep_nesting_is_bounded() {
        let mut p = plan(vec![(
            "f",
            ServiceKind::Failover(Failover {
                service: "a".into(),
                fallback: "nope".into(),
                health_check: false,
                errors: None,
            }),
        )]);
        p.services.insert(
            "a".into(),
            Service {
                middlewares: Vec::new(),
                source: p.services["f"].source.clone(),
                kind: lb(&[(A, 1)], None),
            },
        );
        let err = Upstreams::from_plan(&p).unwrap_err();
        assert!(
            matches!(&err, UpstreamError::UnknownChild { service, child } if service == "f" && child == "nope"),
            "{err}"
        );

        // A cycle (which the compiler rejects) ends in NoAvailableServer instead of a stack overflow.
        let mirror = |to: &str| {
            ServiceKind::Mirroring(Mirroring {
                service: to.into(),
                mirrors: vec![],
                mirror_body: false,
                max_body_size: None,
            })
        };
        let up = Upstreams::from_plan(&plan(vec![("x", mirror("y")), ("y", mirror("x"))])).unwrap();
        assert_eq!(up.pick("x"), Pick::NoAvailableServer);
        assert_eq!(up.is_available("x"), Some(false));
    }

    #[tokio::test(start_paused = true)]
    async fn invalid_server_urls_are_refused() {
        let err = Upstreams::from_plan(&plan(vec![(
            "svc",
            lb(&[("not a url", 1)], Some(seed_check())),
        )]))
        .unwrap_err();
        assert!(
            matches!(err, UpstreamError::InvalidServerUrl { .. }),
            "{err}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn changes_are_broadcast_once_and_foreign_refs_ignored() {
        let up =
            Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1)], Some(seed_check())))])).unwrap();
        let mut rx = up.subscribe();
        let a = up.server_ref("svc", A).unwrap();
        let at = Instant::now();
        assert!(
            up.set_state(&a, ServerState::Up, "probe answered 200")
                .is_some()
        );
        assert!(up.set_state(&a, ServerState::Up, "again").is_none());
        let change = rx.try_recv().unwrap();
        assert_eq!(
            change,
            StateChange {
                service: "svc".into(),
                url: A.into(),
                from: ServerState::Unknown,
                to: ServerState::Up,
                at,
                reason: "probe answered 200".into(),
            }
        );
        assert!(rx.try_recv().is_err());

        // A ref from another plan's upstreams (e.g. before a reload) with another URL is ignored.
        let other =
            Upstreams::from_plan(&plan(vec![("svc", lb(&[(B, 1)], Some(seed_check())))])).unwrap();
        let b = other.server_ref("svc", B).unwrap();
        assert_eq!(up.state(&b), None);
        assert_eq!(up.report_failure(&b, FailureKind::Reset), None);
        assert!(up.set_state(&b, ServerState::Down, "x").is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn report_failure_marks_down_only_on_connect_errors() {
        let up =
            Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1)], Some(seed_check())))])).unwrap();
        set(&up, "svc", A, ServerState::Up);
        let a = up.server_ref("svc", A).unwrap();
        for kind in [FailureKind::Timeout, FailureKind::Status5xx] {
            assert_eq!(up.report_failure(&a, kind).as_deref(), Some("svc"));
            assert_eq!(up.state(&a), Some(ServerState::Up));
        }
        for kind in [FailureKind::Reset, FailureKind::ConnectRefused] {
            set(&up, "svc", A, ServerState::Up);
            assert_eq!(up.report_failure(&a, kind).as_deref(), Some("svc"));
            assert_eq!(up.state(&a), Some(ServerState::Down));
            assert_eq!(up.pick("svc"), Pick::NoAvailableServer);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn service_ids_pick_like_keys() {
        let up = Upstreams::from_plan(&plan(vec![("svc", lb(&[(A, 1), (B, 1)], None))])).unwrap();
        let id = up.service_id("svc").unwrap();
        assert_eq!(picked_url(up.pick_id(id)), A);
        assert_eq!(picked_url(up.pick("svc")), B);
        assert_eq!(up.service_id("nope"), None);
    }
}
