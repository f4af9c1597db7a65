//! Traefik v3 file-provider **dynamic configuration** (`http`, `tcp`, `udp`, `tls`) as Rust types.
//!
//! Key spellings follow `docs/content/reference/dynamic-configuration/file.yaml` of Traefik v3.7.9 plus the
//! v3.7 additions (service `middlewares`, `failover.errors`, the newer `retry` options). Every struct denies
//! unknown keys, as Traefik does ("field not found"). No defaults are filled here: Traefik's defaults are
//! documented on each field and applied by a later stage; `tcp` and `udp` are accepted but left untyped.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::Duration;

/// Default `healthCheck.interval` of a load balancer (Traefik: 30s).
pub const HEALTH_CHECK_DEFAULT_INTERVAL: Duration = Duration::from_secs(30);

/// Default `healthCheck.timeout` of a load balancer (Traefik: 5s).
pub const HEALTH_CHECK_DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

// ---------------------------------------------------------------------------------------------------------
// Root
// ---------------------------------------------------------------------------------------------------------

/// A Traefik file-provider dynamic configuration file (routers, services, middlewares, TLS).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DynamicConfig {
    /// HTTP routers, services, middlewares and servers transports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpConfig>,
    /// TCP routing (routers, services, middlewares, serversTransports); not served by bridgectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub tcp: Option<serde_json::Value>,
    /// UDP routing (routers, services); not served by bridgectl.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub udp: Option<serde_json::Value>,
    /// TLS certificates, TLS options and certificate stores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfig>,
    /// bridgectl settings beyond Traefik's (failover tuning). Traefik ignores unknown top-level
    /// keys, so a file with this section stays valid for Traefik.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bridge: Option<BridgeConfig>,
}

// ---------------------------------------------------------------------------------------------------------
// bridgectl extensions
// ---------------------------------------------------------------------------------------------------------

/// The top-level `bridge:` section: settings Traefik does not have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BridgeConfig {
    /// Defaults for every load balancer with a health check (at most one file may set them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<BridgeHealthCheck>,
    /// Per-service settings by service name (a load balancer with a health check); they override
    /// `healthCheck`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<BTreeMap<String, BridgeHealthCheck>>,
}

/// Failover tuning of a health-checked load balancer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BridgeHealthCheck {
    /// How often a server marked down is probed again until it answers (default: 250ms; the
    /// effective interval is the smaller of this and `unhealthyInterval`; `0s` turns the fast
    /// re-probe off, leaving Traefik's `unhealthyInterval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_reprobe_interval: Option<Duration>,
    /// Send no request to a server before it has answered a probe (default: true; Traefik
    /// starts every server as up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_before_traffic: Option<bool>,
    /// While no server is healthy, a new request waits up to this long for one to become
    /// healthy instead of getting 503 at once (default: 0s, answer 503 at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold: Option<Duration>,
    /// Close the upgraded connections (WebSocket and any `Upgrade`) tunnelled to a server when it
    /// turns down or leaves the plan, so clients reconnect to a healthy one (default: true;
    /// Traefik keeps them open).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close_tunnels_on_down: Option<bool>,
    /// How long a server may stay down before its tunnels are closed; back up within it, they
    /// stay (default: 500ms; at most 60s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tunnel_grace: Option<Duration>,
}

/// The `http` section: named routers, services, middlewares and servers transports.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpConfig {
    /// Routers by name; each matches requests with a rule and sends them to a service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routers: Option<BTreeMap<String, Router>>,
    /// Services by name; each is exactly one of loadBalancer, weighted, mirroring, failover, highestRandomWeight.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<BTreeMap<String, Service>>,
    /// Middlewares by name; each is exactly one middleware kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlewares: Option<BTreeMap<String, Middleware>>,
    /// Servers transports by name: how Traefik connects to backend servers (TLS, timeouts, pooling).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_transports: Option<BTreeMap<String, ServersTransport>>,
}

// ---------------------------------------------------------------------------------------------------------
// Routers
// ---------------------------------------------------------------------------------------------------------

/// An HTTP router: a rule, the entry points it listens on, its middlewares and its target service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Router {
    /// Entry points the router listens on (default: every entry point marked `asDefault`, else all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_points: Option<Vec<String>>,
    /// Middlewares applied in order before the service (names, optionally `name@provider`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlewares: Option<Vec<String>>,
    /// Name of the service requests are sent to (optionally `name@provider`); required, except
    /// for a parent router (one other routers name in their `parentRefs`), which has none.
    #[serde(default)]
    pub service: String,
    /// Matcher expression such as ``Host(`example.com`) && PathPrefix(`/api`)``; required.
    pub rule: String,
    /// Rule syntax of this router, `v3` or `v2` (default: static `core.defaultRuleSyntax`, i.e. `v3`); deprecated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub rule_syntax: Option<String>,
    /// Priority among matching routers; higher wins (default: the length of the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// Makes the router HTTPS-only; `{}` enables TLS with the default options (default: plain HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub tls: Option<RouterTls>,
    /// Per-router access-log and metrics switches (default: inherited from the entry point);
    /// tracing is not served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observability: Option<RouterObservability>,
    /// Parent routers for multi-layer routing (v3.6+): after a parent's middlewares, the request
    /// is routed again among its children; default: none (a root router, on entry points).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_refs: Option<Vec<String>>,
}

/// TLS settings of a router.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouterTls {
    /// Name of the `tls.options` entry to use (default: `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,
    /// Name of the certificate resolver (ACME) that obtains certificates for this router (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_resolver: Option<String>,
    /// Domains to request certificates for from the resolver (default: derived from the rule's Host matchers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<Domain>>,
}

/// A certificate domain: a main name plus subject alternative names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Domain {
    /// Main domain name of the certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main: Option<String>,
    /// Subject alternative names of the certificate (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sans: Option<Vec<String>>,
}

/// Per-router observability switches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RouterObservability {
    /// Writes access logs for this router (default: the entry point's setting, true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_logs: Option<bool>,
    /// Records metrics for this router (default: the entry point's setting, true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<bool>,
    /// Records traces for this router (default: the entry point's setting, true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub tracing: Option<bool>,
    /// Tracing detail, `minimal` or `detailed` (default: `minimal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub trace_verbosity: Option<String>,
}

// ---------------------------------------------------------------------------------------------------------
// Services
// ---------------------------------------------------------------------------------------------------------

/// An HTTP service; exactly one kind must be set (checked by bridgectl, as by Traefik).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Service {
    /// Load-balances requests over a list of backend servers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<ServersLoadBalancer>,
    /// Weighted round robin over other services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weighted: Option<WeightedRoundRobin>,
    /// Sends requests to a main service and copies a share of them to mirror services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirroring: Option<Mirroring>,
    /// Sends requests to a main service, or to a fallback service when the main one is down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failover: Option<Failover>,
    /// Consistent hashing (rendezvous) of client IPs over other services (v3.6+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub highest_random_weight: Option<HighestRandomWeight>,
    /// Middlewares applied in order in front of this service (v3.7+; default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlewares: Option<Vec<String>>,
}

/// A load balancer over backend servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServersLoadBalancer {
    /// Sticky sessions via a cookie naming the chosen server (default: off; `{}` enables it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub sticky: Option<Sticky>,
    /// Backend servers to forward requests to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers: Option<Vec<Server>>,
    /// Balancing strategy: `wrr`, `p2c`, `hrw` or `leasttime` (default: `wrr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
    /// Active health check of every server (default: none; servers are always considered up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check: Option<ServerHealthCheck>,
    /// Passive health check from live traffic failures (v3.6+; default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub passive_health_check: Option<PassiveHealthCheck>,
    /// Forwards the client's Host header to the server (default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_host_header: Option<bool>,
    /// How responses are streamed back to the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_forwarding: Option<ResponseForwarding>,
    /// Name of the servers transport to use (default: `default@internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_transport: Option<String>,
}

/// One backend server of a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Server {
    /// Server URL such as `http://10.0.0.1:8080`; required by the file provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Relative weight in the balancing (default: 1; 0 or less removes the server).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// Keeps the path of the server URL as a prefix of the forwarded path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_path: Option<bool>,
}

/// Active health check of a load balancer's servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerHealthCheck {
    /// Replaces the server URL's scheme for the probe (default: the server's scheme).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Probe protocol, `http` or `grpc` (default: `http`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Relative path probed on each server, e.g. `/health`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// HTTP method of the probe (default: `GET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Exact status code meaning healthy (default: any status from 200 to 399).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    /// Replaces the server URL's port for the probe (default: the server's port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Time between probes of healthy servers (default: 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Duration>,
    /// Time between probes of unhealthy servers (v3.5+; default: `interval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_interval: Option<Duration>,
    /// Time after which a probe without answer counts as failed (default: 5s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Host header sent with the probe (default: the server URL's host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// Follows redirects returned by the probed endpoint (default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_redirects: Option<bool>,
    /// Extra headers sent with the probe (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
}

/// Passive health check: servers failing live requests are taken out for a while.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PassiveHealthCheck {
    /// Window in which failures are counted, and how long a failing server stays out (default: 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_window: Option<Duration>,
    /// Failures within the window that mark a server down (default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_attempts: Option<i64>,
}

/// How the response body is forwarded to the client.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResponseForwarding {
    /// Interval between flushes while copying the body; negative flushes after every write (default: 100ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub flush_interval: Option<Duration>,
}

/// Sticky-session settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sticky {
    /// Cookie-based stickiness; `{}` uses a generated cookie name (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub cookie: Option<Cookie>,
}

/// The sticky-session cookie.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cookie {
    /// Cookie name (default: a short hash derived from the service name, e.g. `_1d52e`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Sets the Secure flag (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secure: Option<bool>,
    /// Sets the HttpOnly flag (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_only: Option<bool>,
    /// SameSite policy: `none`, `lax` or `strict` (default: unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_site: Option<String>,
    /// Max-Age in seconds; 0 means a session cookie, negative expires it now (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<i64>,
    /// Cookie path (default: `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Cookie domain (default: unset, i.e. the request host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// Health-status propagation for service-of-services (`healthCheck: {}`); has no keys.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceHealthCheck {}

/// Weighted round robin over services.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedRoundRobin {
    /// Child services and their weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<WeightedService>>,
    /// Sticky sessions via a cookie naming the chosen child (default: off; `{}` enables it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub sticky: Option<Sticky>,
    /// `{}` skips children reported down and propagates this service's status upward (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub health_check: Option<ServiceHealthCheck>,
}

/// A child service with a weight.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedService {
    /// Name of the child service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Relative weight of the child (default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
}

/// Mirroring: the main service answers, mirrors get copies of a share of the requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mirroring {
    /// Name of the main service, whose responses are returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Copies the request body to the mirrors (default: true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirror_body: Option<bool>,
    /// Largest body in bytes that is still mirrored; -1 means no limit (default: -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<i64>,
    /// Mirror services and the share of requests each receives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mirrors: Option<Vec<MirrorService>>,
    /// `{}` propagates the main service's status upward (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub health_check: Option<ServiceHealthCheck>,
}

/// A mirror target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MirrorService {
    /// Name of the mirror service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Percentage of requests copied to this mirror, 0–100 (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<i64>,
}

/// Failover: the main service while it is up, else the fallback.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Failover {
    /// Name of the main service; it must be health-checked (or `errors` set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Name of the service used while the main one is down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// `{}` tracks the fallback's status and reports down when both are down (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub health_check: Option<ServiceHealthCheck>,
    /// Status-code-based failover: main responses in these ranges are replayed to the fallback (v3.7+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<FailoverErrors>,
}

/// Status-code-based failover settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailoverErrors {
    /// Status codes or ranges that trigger the fallback, e.g. `"500-504"` (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<String>>,
    /// Largest request body buffered for replay; -1 means no limit, larger bodies get 413 (default: -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
}

/// Highest random weight (rendezvous hashing of the client IP) over services.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HighestRandomWeight {
    /// Child services and their weights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services: Option<Vec<WeightedService>>,
    /// `{}` skips children reported down and propagates this service's status upward (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub health_check: Option<ServiceHealthCheck>,
}

// ---------------------------------------------------------------------------------------------------------
// Middlewares
// ---------------------------------------------------------------------------------------------------------

/// An HTTP middleware; exactly one kind must be set (checked by bridgectl, as by Traefik).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("maxProperties" = 1))]
pub struct Middleware {
    /// Adds a prefix to the request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_prefix: Option<AddPrefix>,
    /// HTTP Basic authentication against a list of users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic_auth: Option<BasicAuth>,
    /// Buffers request and response bodies, with size limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buffering: Option<Buffering>,
    /// Applies a list of other middlewares in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<Chain>,
    /// Stops forwarding to a service while an expression over its metrics trips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit_breaker: Option<CircuitBreaker>,
    /// Compresses responses (gzip, brotli, zstd); `{}` enables it with defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub compress: Option<Compress>,
    /// Enables Content-Type auto-detection for responses without one; `{}` enables it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub content_type: Option<ContentType>,
    /// HTTP Digest authentication against a list of users.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest_auth: Option<DigestAuth>,
    /// Controls which ambiguous encoded characters are allowed in the request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoded_characters: Option<EncodedCharacters>,
    /// Replaces error responses with pages fetched from another service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors: Option<ErrorPage>,
    /// Delegates authentication to an external HTTP service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_auth: Option<ForwardAuth>,
    /// Translates gRPC-Web requests to gRPC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_web: Option<GrpcWeb>,
    /// Adds or removes request/response headers, CORS and security headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<Headers>,
    /// Allows only client IPs within the given ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_allow_list: Option<IpAllowList>,
    /// Deprecated alias of `ipAllowList` (without `rejectStatusCode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub ip_white_list: Option<IpWhiteList>,
    /// Limits the number of simultaneous in-flight requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight_req: Option<InFlightReq>,
    /// Passes the client TLS certificate (or parts of it) to the backend in headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "passTLSClientCert")]
    pub pass_tls_client_cert: Option<PassTlsClientCert>,
    /// Plugin middleware: plugin name to its free-form configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub plugin: Option<BTreeMap<String, serde_json::Map<String, serde_json::Value>>>,
    /// Limits the request rate per source (token bucket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Redirects by rewriting the full request URL with a regex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_regex: Option<RedirectRegex>,
    /// Redirects to another scheme (typically http to https).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_scheme: Option<RedirectScheme>,
    /// Replaces the request path (the original goes to `X-Replaced-Path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_path: Option<ReplacePath>,
    /// Replaces the request path using a regex and replacement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replace_path_regex: Option<ReplacePathRegex>,
    /// Retries a request on another attempt when the backend does not answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Retry>,
    /// Removes a prefix from the request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_prefix: Option<StripPrefix>,
    /// Removes a regex-matched prefix from the request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strip_prefix_regex: Option<StripPrefixRegex>,
}

/// `addPrefix` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddPrefix {
    /// Prefix added in front of the request path, e.g. `/api`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
}

/// `basicAuth` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BasicAuth {
    /// Users as `name:hash` (bcrypt, SHA1 or MD5-crypt; plain text never matches); they win over usersFile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<String>>,
    /// Path of a file with one `name:hash` per line (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_file: Option<String>,
    /// Realm sent in the `WWW-Authenticate` challenge (default: `traefik`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
    /// Removes the Authorization header before forwarding (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_header: Option<bool>,
    /// Request header that receives the authenticated user name (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
}

/// `buffering` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Buffering {
    /// Largest accepted request body in bytes; 0 means no limit (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
    /// Request body bytes kept in memory before spilling to disk (default: 1048576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_request_body_bytes: Option<i64>,
    /// Largest accepted response body in bytes; 0 means no limit (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_body_bytes: Option<i64>,
    /// Response body bytes kept in memory before spilling to disk (default: 1048576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_response_body_bytes: Option<i64>,
    /// Expression deciding whether to replay the buffered request, e.g. `IsNetworkError() && Attempts() < 2`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_expression: Option<String>,
    /// Not read by Traefik's file provider (its field is `file:"-"`): the request body is buffered anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub disable_request_buffer: Option<bool>,
    /// Not read by Traefik's file provider (its field is `file:"-"`): the response is buffered anyway.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub disable_response_buffer: Option<bool>,
}

/// `chain` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Chain {
    /// Middleware names applied in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlewares: Option<Vec<String>>,
}

/// `circuitBreaker` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CircuitBreaker {
    /// Trip condition over metrics, e.g. `NetworkErrorRatio() > 0.5`; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// Interval between evaluations of the expression (default: 100ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_period: Option<Duration>,
    /// How long the breaker stays open, serving the fallback (default: 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_duration: Option<Duration>,
    /// How long the breaker spends recovering before closing (default: 10s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_duration: Option<Duration>,
    /// Status code returned while the breaker is open (default: 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_code: Option<i64>,
}

/// `compress` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Compress {
    /// Media types never compressed, parameters ignored (exclusive with includedContentTypes;
    /// `application/grpc` is always excluded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_content_types: Option<Vec<String>>,
    /// Only these media types are compressed, parameters ignored (exclusive with
    /// excludedContentTypes; default: every type).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub included_content_types: Option<Vec<String>>,
    /// Smallest response body in bytes that is compressed (default 1024; 0 or less is the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_response_body_bytes: Option<i64>,
    /// Allowed encodings among `gzip`, `br` and `zstd`; on equal client weights the earlier wins
    /// (default: gzip, br, zstd).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encodings: Option<Vec<String>>,
    /// Encoding used when the request has no Accept-Encoding, and for `*` (one of `encodings`;
    /// default: none, such requests are not compressed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_encoding: Option<String>,
}

/// `contentType` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContentType {
    /// Deprecated: the middleware's presence enables auto-detection; remove this option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub auto_detect: Option<bool>,
}

/// `digestAuth` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DigestAuth {
    /// Users as `name:realm:hash` (htdigest format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<Vec<String>>,
    /// Path of an htdigest file (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users_file: Option<String>,
    /// Removes the Authorization header before forwarding (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remove_header: Option<bool>,
    /// Realm of the digest challenge (default: `traefik`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub realm: Option<String>,
    /// Request header that receives the authenticated user name (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
}

/// `encodedCharacters` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EncodedCharacters {
    /// Allows `%2F` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_slash: Option<bool>,
    /// Allows `%5C` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_back_slash: Option<bool>,
    /// Allows `%00` in the path (default: false; Traefik has it, its documentation does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_null_character: Option<bool>,
    /// Allows `%3B` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_semicolon: Option<bool>,
    /// Allows `%25` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_percent: Option<bool>,
    /// Allows `%3F` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_question_mark: Option<bool>,
    /// Allows `%23` in the path (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_hash: Option<bool>,
}

/// `errors` middleware (custom error pages).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorPage {
    /// Status codes or ranges that trigger the error page, e.g. `"500-599"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<String>>,
    /// Rewrites of the returned status: code or range to new code (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_rewrites: Option<BTreeMap<String, i64>>,
    /// Service that serves the error pages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<String>,
    /// Path requested from the error service; `{status}`/`{originalStatus}`/`{url}` are replaced (default: `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// Original request headers forwarded to the error service (default: all of them; an empty list is the same as none set, as in Traefik's file provider).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_request_headers: Option<Vec<String>>,
}

/// `forwardAuth` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardAuth {
    /// URL of the authentication server; a 2xx answer lets the request through.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// TLS settings for the connection to the authentication server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ForwardAuthTls>,
    /// `true` keeps the request's X-Forwarded-* headers, `false` replaces them all; unset is
    /// Traefik's legacy mode (some overwritten, the others passed on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_forward_header: Option<bool>,
    /// Headers copied from the auth response to the forwarded request (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_response_headers: Option<Vec<String>>,
    /// Regex of auth-response header names copied to the forwarded request (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_response_headers_regex: Option<String>,
    /// Request headers sent to the auth server (default: all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_request_headers: Option<Vec<String>>,
    /// Cookies from the auth response added to the final response (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_auth_cookies_to_response: Option<Vec<String>>,
    /// Request header that receives the authenticated user (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_field: Option<String>,
    /// Sends the request body to the auth server (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forward_body: Option<bool>,
    /// Largest request body forwarded to the auth server; -1 means no limit (default: -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_size: Option<i64>,
    /// Largest auth-server response body read; -1 means no limit (default: -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_response_body_size: Option<i64>,
    /// Keeps a relative Location header of the auth response as is (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_location_header: Option<bool>,
    /// Uses the original request method for the auth request instead of GET (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preserve_request_method: Option<bool>,
    /// A 401 from the auth server becomes a 302 redirect to this URL (default: none, the 401 is
    /// passed on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "authSigninURL")]
    pub auth_signin_url: Option<String>,
}

/// Client TLS settings of `forwardAuth`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardAuthTls {
    /// CA certificate (path or PEM) that verifies the server (default: system roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// Client certificate (path or PEM) for mTLS (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// Client private key (path or PEM) for mTLS (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Skips verification of the server certificate (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
    /// Deprecated and without effect: client authentication is a server-side option.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub ca_optional: Option<bool>,
}

/// `grpcWeb` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GrpcWeb {
    /// Allowed CORS origins; `*` allows all (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_origins: Option<Vec<String>>,
}

/// `headers` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Headers {
    /// Headers set on the forwarded request; an empty value removes the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_request_headers: Option<BTreeMap<String, String>>,
    /// Headers set on the response; an empty value removes the header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_response_headers: Option<BTreeMap<String, String>>,
    /// CORS: sends `Access-Control-Allow-Credentials: true` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_allow_credentials: Option<bool>,
    /// CORS: `Access-Control-Allow-Headers` values (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_allow_headers: Option<Vec<String>>,
    /// CORS: `Access-Control-Allow-Methods` values (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_allow_methods: Option<Vec<String>>,
    /// CORS: allowed origins, `*` for any (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_allow_origin_list: Option<Vec<String>>,
    /// CORS: regexes of allowed origins (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_allow_origin_list_regex: Option<Vec<String>>,
    /// CORS: `Access-Control-Expose-Headers` values (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_expose_headers: Option<Vec<String>>,
    /// CORS: preflight cache duration in seconds (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_control_max_age: Option<i64>,
    /// CORS: adds `Vary: Origin` when the allowed origin depends on the request (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_vary_header: Option<bool>,
    /// Allowed Host values; other hosts get `500 Bad Host` (default: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_hosts: Option<Vec<String>>,
    /// Headers that may carry the original host for allowedHosts checks (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosts_proxy_headers: Option<Vec<String>>,
    /// Header/value pairs meaning the original request was HTTPS, e.g. `X-Forwarded-Proto: https`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssl_proxy_headers: Option<BTreeMap<String, String>>,
    /// HSTS `max-age` in seconds; 0 disables HSTS (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sts_seconds: Option<i64>,
    /// HSTS: adds `includeSubDomains` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sts_include_subdomains: Option<bool>,
    /// HSTS: adds `preload` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sts_preload: Option<bool>,
    /// HSTS: sends the header on plain HTTP too (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "forceSTSHeader")]
    pub force_sts_header: Option<bool>,
    /// Sends `X-Frame-Options: DENY` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_deny: Option<bool>,
    /// Custom `X-Frame-Options` value, overriding frameDeny (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_frame_options_value: Option<String>,
    /// Sends `X-Content-Type-Options: nosniff` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type_nosniff: Option<bool>,
    /// Sends `X-XSS-Protection: 1; mode=block` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub browser_xss_filter: Option<bool>,
    /// Custom `X-XSS-Protection` value, overriding browserXssFilter (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "customBrowserXSSValue")]
    pub custom_browser_xss_value: Option<String>,
    /// `Content-Security-Policy` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_security_policy: Option<String>,
    /// `Content-Security-Policy-Report-Only` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_security_policy_report_only: Option<String>,
    /// `Public-Key-Pins` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// `Referrer-Policy` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrer_policy: Option<String>,
    /// `Permissions-Policy` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions_policy: Option<String>,
    /// Disables allowedHosts, SSL and STS checks for development (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_development: Option<bool>,
    /// Deprecated: use permissionsPolicy; `Feature-Policy` value (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true, "x-no-effect" = true))]
    pub feature_policy: Option<String>,
    /// Deprecated: use a redirectScheme middleware; redirects HTTP to HTTPS (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true, "x-no-effect" = true))]
    pub ssl_redirect: Option<bool>,
    /// Deprecated: use a redirectScheme middleware; makes the HTTPS redirect temporary (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true, "x-no-effect" = true))]
    pub ssl_temporary_redirect: Option<bool>,
    /// Deprecated: use a redirectRegex middleware; host of the HTTPS redirect (default: request host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true, "x-no-effect" = true))]
    pub ssl_host: Option<String>,
    /// Deprecated: use a redirectRegex middleware; redirects to sslHost even over HTTPS (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true, "x-no-effect" = true))]
    pub ssl_force_host: Option<bool>,
}

/// How the client IP is taken from the request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpStrategy {
    /// Uses the n-th IP from the right of `X-Forwarded-For`; 0 uses the remote address (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<i64>,
    /// IPs or CIDRs skipped when scanning `X-Forwarded-For` from the right (ignored if depth is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "excludedIPs")]
    pub excluded_ips: Option<Vec<String>>,
    /// Prefix length grouping IPv6 clients into one subnet, e.g. 64 (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "ipv6Subnet")]
    pub ipv6_subnet: Option<i64>,
}

/// `ipAllowList` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpAllowList {
    /// Allowed client IPs or CIDR ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_range: Option<Vec<String>>,
    /// How the client IP is determined; `{}` uses the remote address (default: remote address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub ip_strategy: Option<IpStrategy>,
    /// Status code returned to rejected clients (default: 403).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reject_status_code: Option<i64>,
}

/// `ipWhiteList` middleware (deprecated alias of ipAllowList).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IpWhiteList {
    /// Allowed client IPs or CIDR ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_range: Option<Vec<String>>,
    /// How the client IP is determined; `{}` uses the remote address (default: remote address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub ip_strategy: Option<IpStrategy>,
}

/// What identifies a request source for rate and in-flight limits.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceCriterion {
    /// Groups requests by client IP, determined by this strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub ip_strategy: Option<IpStrategy>,
    /// Groups requests by the value of this request header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_header_name: Option<String>,
    /// Groups requests by Host (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_host: Option<bool>,
}

/// `inFlightReq` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InFlightReq {
    /// Maximum simultaneous requests per source; more get 429.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<i64>,
    /// How sources are grouped (default: by request host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_criterion: Option<SourceCriterion>,
}

/// `passTLSClientCert` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PassTlsClientCert {
    /// Passes the escaped PEM in `X-Forwarded-Tls-Client-Cert` (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pem: Option<bool>,
    /// Selected certificate fields passed in `X-Forwarded-Tls-Client-Cert-Info`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub info: Option<TlsClientCertInfo>,
}

/// Client certificate fields to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsClientCertInfo {
    /// Adds the NotAfter date (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after: Option<bool>,
    /// Adds the NotBefore date (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before: Option<bool>,
    /// Adds the subject alternative names (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sans: Option<bool>,
    /// Adds the certificate serial number (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<bool>,
    /// Subject fields to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<TlsClientCertSubject>,
    /// Issuer fields to add.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<TlsClientCertIssuer>,
}

/// Subject distinguished-name fields to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsClientCertSubject {
    /// Adds C (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<bool>,
    /// Adds ST (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub province: Option<bool>,
    /// Adds L (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locality: Option<bool>,
    /// Adds O (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<bool>,
    /// Adds OU (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organizational_unit: Option<bool>,
    /// Adds CN (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_name: Option<bool>,
    /// Adds the subject serial number (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<bool>,
    /// Adds DC (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_component: Option<bool>,
}

/// Issuer distinguished-name fields to pass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsClientCertIssuer {
    /// Adds C (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<bool>,
    /// Adds ST (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub province: Option<bool>,
    /// Adds L (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locality: Option<bool>,
    /// Adds O (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organization: Option<bool>,
    /// Adds CN (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_name: Option<bool>,
    /// Adds the issuer serial number (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_number: Option<bool>,
    /// Adds DC (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain_component: Option<bool>,
}

/// `rateLimit` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateLimit {
    /// Allowed requests per period per source; 0 means no limit (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub average: Option<i64>,
    /// Period over which `average` is counted (default: 1s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub period: Option<Duration>,
    /// Largest burst of requests allowed at once (default: 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<i64>,
    /// How sources are grouped (default: by client IP, remote address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_criterion: Option<SourceCriterion>,
    /// Shares the limit across Traefik instances through Redis (default: local, in memory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub redis: Option<Redis>,
}

/// Redis connection of a distributed rate limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redis {
    /// Redis addresses as `host:port` (default: `127.0.0.1:6379`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<String>>,
    /// TLS settings for the Redis connection (default: plain TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<RedisTls>,
    /// Redis user name (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Redis password (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Redis database index (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub db: Option<i64>,
    /// Maximum socket connections (default: the Redis client's, 10 per CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_size: Option<i64>,
    /// Minimum idle connections kept open (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_idle_conns: Option<i64>,
    /// Maximum connections in use at once; 0 means no limit (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_active_conns: Option<i64>,
    /// Timeout for socket reads (default: 3s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_timeout: Option<Duration>,
    /// Timeout for socket writes (default: 3s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_timeout: Option<Duration>,
    /// Timeout for establishing connections (default: 5s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
}

/// Client TLS settings of the Redis connection.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedisTls {
    /// CA certificate (path or PEM) that verifies Redis (default: system roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// Client certificate (path or PEM) for mTLS (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert: Option<String>,
    /// Client private key (path or PEM) for mTLS (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Skips verification of the Redis certificate (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
}

/// `redirectRegex` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedirectRegex {
    /// Regex matched against the full request URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Redirect target; `${1}` etc. refer to capture groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    /// Permanent redirect, 301/308 instead of 302/307 (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permanent: Option<bool>,
}

/// `redirectScheme` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedirectScheme {
    /// Target scheme, e.g. `https`; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Target port as a string; `80` for http and `443` for https are omitted (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<String>,
    /// Permanent redirect, 301/308 instead of 302/307 (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permanent: Option<bool>,
}

/// `replacePath` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplacePath {
    /// New request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// `replacePathRegex` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplacePathRegex {
    /// Regex matched against the request path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// New path; `$1` etc. refer to capture groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
}

/// `retry` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retry {
    /// Number of attempts, the first included; required and positive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i64>,
    /// First wait of the exponential backoff, capped at twice this value (default: 0, retry at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_interval: Option<Duration>,
    /// Total time allowed for all attempts; 0 means no limit (v3.7+; default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
    /// Largest request body buffered for replay; -1 means no limit (v3.7+; default: -1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_request_body_bytes: Option<i64>,
    /// Response status codes or ranges that are retried, e.g. `"500-599"` (v3.7+; default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Vec<String>>,
    /// Does not retry on network errors; then `status` is required (v3.7+; default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_retry_on_network_error: Option<bool>,
    /// Also retries non-idempotent methods such as POST and PATCH (v3.7+; default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_non_idempotent_method: Option<bool>,
}

/// `stripPrefix` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StripPrefix {
    /// Prefixes removed from the path; the removed one goes to `X-Forwarded-Prefix`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefixes: Option<Vec<String>>,
    /// Deprecated: ensured a leading slash after stripping; kept for compatibility.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub force_slash: Option<bool>,
}

/// `stripPrefixRegex` middleware.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StripPrefixRegex {
    /// Regexes whose match at the start of the path is removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<Vec<String>>,
}

// ---------------------------------------------------------------------------------------------------------
// Servers transports
// ---------------------------------------------------------------------------------------------------------

/// How Traefik connects to backend servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServersTransport {
    /// SNI server name sent to backends (default: the server URL's host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_name: Option<String>,
    /// Skips verification of backend certificates (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,
    /// CA certificates (paths or PEM) that verify backends (default: system roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "rootCAs")]
    pub root_cas: Option<Vec<String>>,
    /// Client certificates for mTLS with backends (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificates: Option<Vec<Certificate>>,
    /// Allowed TLS cipher suites, Go names (default: Go's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cipher_suites: Option<Vec<String>>,
    /// Minimum TLS version, e.g. `VersionTLS12` (default: Go's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    /// Maximum TLS version, e.g. `VersionTLS13` (default: Go's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_version: Option<String>,
    /// Idle keep-alive connections kept per host; 0 uses Go's default of 2 (default: 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_idle_conns_per_host: Option<i64>,
    /// Timeouts for requests forwarded to backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding_timeouts: Option<ForwardingTimeouts>,
    /// Disables HTTP/2 towards backends (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "disableHTTP2")]
    pub disable_http2: Option<bool>,
    /// URI that must appear in the backend certificate's SANs (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "peerCertURI")]
    pub peer_cert_uri: Option<String>,
    /// SPIFFE authentication of backends; `{}` accepts any SPIFFE ID (default: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub spiffe: Option<Spiffe>,
}

/// A certificate and its private key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Certificate {
    /// Certificate, as a file path or inline PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// Private key, as a file path or inline PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
}

/// Timeouts of a servers transport.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardingTimeouts {
    /// Time allowed to connect to a backend; 0 means no timeout (default: 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,
    /// Time allowed for response headers after the request is written; 0 means no timeout (default: 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_header_timeout: Option<Duration>,
    /// Time an idle keep-alive connection stays open; 0 means no limit (default: 90s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_conn_timeout: Option<Duration>,
    /// HTTP/2: idle time after which a ping checks the connection; 0 disables it (default: 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_idle_timeout: Option<Duration>,
    /// HTTP/2: time to wait for a ping answer before closing the connection (default: 15s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ping_timeout: Option<Duration>,
}

/// SPIFFE verification of backend certificates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spiffe {
    /// Allowed SPIFFE IDs; takes precedence over trustDomain (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,
    /// Allowed SPIFFE trust domain (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_domain: Option<String>,
}

// ---------------------------------------------------------------------------------------------------------
// TLS
// ---------------------------------------------------------------------------------------------------------

/// The `tls` section: certificates, named TLS options and certificate stores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsConfig {
    /// Certificates served by entry points, chosen by SNI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificates: Option<Vec<CertAndStores>>,
    /// TLS options by name; `default` applies to routers without `tls.options`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<BTreeMap<String, TlsOptions>>,
    /// Certificate stores by name; only `default` is used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<BTreeMap<String, Store>>,
}

/// A certificate with the stores it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertAndStores {
    /// Certificate, as a file path or inline PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_file: Option<String>,
    /// Private key, as a file path or inline PEM.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_file: Option<String>,
    /// Stores the certificate is added to (default: `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stores: Option<Vec<String>>,
}

/// Named TLS options for incoming connections.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsOptions {
    /// Minimum TLS version, `VersionTLS10`…`VersionTLS13` (default: `VersionTLS12`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    /// Maximum TLS version, `VersionTLS10`…`VersionTLS13` (default: `VersionTLS13`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_version: Option<String>,
    /// Allowed cipher suites for TLS 1.2 and below, Go names (default: Go's defaults).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cipher_suites: Option<Vec<String>>,
    /// Key-exchange groups in preference order, e.g. `X25519`, `CurveP256` (default: the
    /// runtime's: X25519MLKEM768, X25519, CurveP256, CurveP384).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub curve_preferences: Option<Vec<String>>,
    /// Client certificate authentication (mTLS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_auth: Option<ClientAuth>,
    /// Rejects connections whose SNI matches no certificate (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "sniStrict")]
    pub sni_strict: Option<bool>,
    /// ALPN protocols offered (default: `h2`, `http/1.1`, `acme-tls/1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpn_protocols: Option<Vec<String>>,
    /// Disables session resumption: no TLS 1.3 tickets, no TLS 1.2 session IDs (default:
    /// false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_session_tickets: Option<bool>,
    /// Deprecated and without effect since Go 1.17.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub prefer_server_cipher_suites: Option<bool>,
}

/// Client certificate authentication settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientAuth {
    /// CA certificates (paths or PEM) that verify client certificates (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_files: Option<Vec<String>>,
    /// `NoClientCert`, `RequestClientCert`, `RequireAnyClientCert`, `VerifyClientCertIfGiven` or `RequireAndVerifyClientCert` (default: `NoClientCert`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_auth_type: Option<String>,
}

/// A certificate store.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Store {
    /// Certificate served when no other matches the SNI (default: a generated self-signed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_certificate: Option<Certificate>,
    /// Obtains the default certificate from a certificate resolver (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_generated_cert: Option<GeneratedCert>,
}

/// A default certificate obtained from a resolver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GeneratedCert {
    /// Name of the certificate resolver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolver: Option<String>,
    /// Domain the certificate is requested for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<Domain>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// The seed configuration `examples/scadabridge/dynamic.yml`, as written.
    const SEED_YAML: &str = r#"http:
  routers:
    central:
      rule: "PathPrefix(`/`)"
      service: central
      entryPoints:
        - web

  services:
    central:
      loadBalancer:
        healthCheck:
          path: /health/active
          interval: 5s
          timeout: 3s
        servers:
          - url: "http://scadabridge-central-a:5000"
          - url: "http://scadabridge-central-b:5000"
"#;

    /// `SEED_YAML` as the JSON value the YAML loader produces.
    fn seed_value() -> Value {
        json!({
            "http": {
                "routers": {
                    "central": {
                        "rule": "PathPrefix(`/`)",
                        "service": "central",
                        "entryPoints": ["web"]
                    }
                },
                "services": {
                    "central": {
                        "loadBalancer": {
                            "healthCheck": {
                                "path": "/health/active",
                                "interval": "5s",
                                "timeout": "3s"
                            },
                            "servers": [
                                { "url": "http://scadabridge-central-a:5000" },
                                { "url": "http://scadabridge-central-b:5000" }
                            ]
                        }
                    }
                }
            }
        })
    }

    fn schema_value() -> Value {
        schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
            .into_root_schema_for::<DynamicConfig>()
            .to_value()
    }

    #[test]
    fn seed_config_deserializes() -> Result<(), serde_json::Error> {
        assert!(SEED_YAML.contains("/health/active"));
        let config: DynamicConfig = serde_json::from_value(seed_value())?;
        let http = config.http.unwrap_or_default();
        let routers = http.routers.unwrap_or_default();
        let router = &routers["central"];
        assert_eq!(router.rule, "PathPrefix(`/`)");
        assert_eq!(router.service, "central");
        assert_eq!(
            router.entry_points.as_deref(),
            Some(&["web".to_owned()][..])
        );
        assert_eq!(router.tls, None);
        assert_eq!(router.priority, None);

        let services = http.services.unwrap_or_default();
        let lb = services["central"]
            .load_balancer
            .clone()
            .unwrap_or_default();
        assert!(services["central"].weighted.is_none());
        let hc = lb.health_check.unwrap_or_default();
        assert_eq!(hc.path.as_deref(), Some("/health/active"));
        assert_eq!(hc.interval, Some(Duration::from_secs(5)));
        assert_eq!(hc.timeout, Some(Duration::from_secs(3)));
        assert_eq!(
            hc.follow_redirects, None,
            "defaults are not filled by serde"
        );
        let urls: Vec<_> = lb
            .servers
            .unwrap_or_default()
            .into_iter()
            .filter_map(|s| s.url)
            .collect();
        assert_eq!(
            urls,
            [
                "http://scadabridge-central-a:5000",
                "http://scadabridge-central-b:5000"
            ]
        );
        assert!(config.tls.is_none() && config.tcp.is_none());
        Ok(())
    }

    #[test]
    fn round_trips_through_json() -> Result<(), serde_json::Error> {
        let config: DynamicConfig = serde_json::from_value(seed_value())?;
        let back = serde_json::to_value(&config)?;
        let again: DynamicConfig = serde_json::from_value(back)?;
        assert_eq!(config, again);
        Ok(())
    }

    #[test]
    fn unknown_router_key_is_rejected() {
        let mut value = seed_value();
        value["http"]["routers"]["central"]["entrypoint"] = json!(["web"]);
        let err = serde_json::from_value::<DynamicConfig>(value)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("unknown field `entrypoint`"), "{err}");
    }

    #[test]
    fn router_requires_a_rule_and_may_leave_out_its_service() {
        // A parent router (named in other routers' `parentRefs`) has no service; whether one
        // without a service has children is checked with the whole configuration.
        let value = json!({ "http": { "routers": { "r": { "service": "s" } } } });
        assert!(serde_json::from_value::<DynamicConfig>(value).is_err());
        let value = json!({ "http": { "routers": { "r": { "rule": "Path(`/`)" } } } });
        assert!(serde_json::from_value::<DynamicConfig>(value).is_ok());
    }

    #[test]
    fn traefik_spellings_are_accepted() -> Result<(), serde_json::Error> {
        let value = json!({
            "http": {
                "middlewares": {
                    "h": { "headers": { "customBrowserXSSValue": "0", "forceSTSHeader": true } },
                    "c": { "passTLSClientCert": { "pem": true } },
                    "ip": { "ipAllowList": { "sourceRange": ["10.0.0.0/8"],
                        "ipStrategy": { "excludedIPs": ["10.0.0.1"], "ipv6Subnet": 64 } } },
                    "p": { "plugin": { "demo": { "any": { "nested": [1, 2] } } } }
                },
                "serversTransports": {
                    "t": { "rootCAs": ["ca.pem"], "disableHTTP2": true, "peerCertURI": "spiffe://x",
                           "forwardingTimeouts": { "dialTimeout": 10, "responseHeaderTimeout": "1m30s" } }
                }
            },
            "tcp": { "routers": {} },
            "tls": { "options": { "default": { "sniStrict": true, "clientAuth": { "caFiles": ["a.pem"] } } } }
        });
        let config: DynamicConfig = serde_json::from_value(value)?;
        let http = config.http.unwrap_or_default();
        let transports = http.servers_transports.unwrap_or_default();
        let timeouts = transports["t"]
            .forwarding_timeouts
            .clone()
            .unwrap_or_default();
        assert_eq!(timeouts.dial_timeout, Some(Duration::from_secs(10)));
        assert_eq!(
            timeouts.response_header_timeout,
            Some(Duration::from_secs(90))
        );
        assert_eq!(transports["t"].disable_http2, Some(true));
        assert!(config.tcp.is_some());
        Ok(())
    }

    #[test]
    fn schema_has_strict_objects_and_markers() {
        let schema = schema_value();
        let defs = &schema["$defs"];
        assert_eq!(defs["Router"]["additionalProperties"], json!(false));
        assert_eq!(defs["Router"]["required"], json!(["rule"]));
        let mw = &defs["Middleware"];
        assert_eq!(mw["maxProperties"], json!(1));
        assert_eq!(
            mw["properties"]["plugin"]["x-bridgectl"],
            json!("unsupported")
        );
        assert_eq!(mw["properties"]["compress"]["x-allow-empty"], json!(true));
        assert_eq!(mw["properties"]["ipWhiteList"]["deprecated"], json!(true));
        assert!(mw["properties"]["headers"].get("x-bridgectl").is_none());
        assert_eq!(
            defs["Router"]["properties"]["tls"]["x-allow-empty"],
            json!(true)
        );
        assert!(
            defs["Router"]["properties"]["observability"]
                .get("x-bridgectl")
                .is_none()
        );
        assert_eq!(
            defs["RouterObservability"]["properties"]["tracing"]["x-bridgectl"],
            json!("ignored")
        );
        assert_eq!(schema["properties"]["tcp"]["type"], json!("object"));
        assert_eq!(
            schema["properties"]["tcp"]["x-bridgectl"],
            json!("unsupported")
        );
        assert!(
            defs["ServerHealthCheck"]["properties"]["mode"]
                .get("x-bridgectl")
                .is_none()
        );
    }
}
