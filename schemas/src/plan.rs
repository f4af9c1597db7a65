//! The routing plan: everything the runtime needs to serve traffic, resolved and frozen.
//!
//! The compiler fills every default, flattens middleware chains, converts durations to integer
//! milliseconds and parses rules into [`Rule`] trees, so the runtime never interprets Traefik
//! configuration. Maps are [`BTreeMap`]s and lists are ordered deliberately, so the same inputs always
//! give the same plan and the same hash (see [`crate::canonical`] and `docs/plan.md`).
//!
//! Conventions: field names are snake_case; durations are `u64` milliseconds in fields ending in
//! `_ms`, where `0` means "no limit" unless the field says otherwise; there are no floating-point
//! numbers anywhere; optional values are written as `null`, never omitted.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::rule::{Matcher, Rule};

/// The plan format version this build reads and writes.
///
/// It is bumped on every change that an older runtime could misread: a new, removed or renamed
/// field, a changed meaning or unit. The runtime refuses any other version.
pub const PLAN_VERSION: u32 = 27;

/// A complete, sealed routing plan (the content of `plan.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Plan {
    /// Format version; always [`PLAN_VERSION`] for plans written by this build.
    #[cfg_attr(feature = "schema", schemars(extend("const" = 6)))]
    pub plan_version: u32,
    /// `sha256:` followed by 64 lower-case hex digits: SHA-256 of the canonical JSON of the plan
    /// without this field (see [`Plan::seal`]).
    #[cfg_attr(feature = "schema", schemars(pattern(r"^sha256:[0-9a-f]{64}$")))]
    pub hash: String,
    /// The profile the plan was built with: a built-in profile name (`dev`, `prod`) or the path of a
    /// profile file as given to the compiler.
    pub profile: String,
    /// What the plan was built from.
    pub inputs: Inputs,
    /// Entry points (listening sockets) by name.
    pub entrypoints: BTreeMap<String, EntryPoint>,
    /// HTTP routers by key.
    pub routers: BTreeMap<String, Router>,
    /// Services by key.
    pub services: BTreeMap<String, Service>,
    /// Middlewares by key (only those some router or the API uses).
    pub middlewares: BTreeMap<String, Middleware>,
    /// Certificates and TLS options.
    pub tls: Tls,
    /// ACME certificate resolvers by name (Traefik's static `certificatesResolvers`), with the
    /// domains each must obtain certificates for. Never holds a private key: keys live in each
    /// resolver's storage file, written by the runtime.
    pub certificate_resolvers: BTreeMap<String, CertificateResolver>,
    /// The API and dashboard, when enabled.
    pub api: Option<Api>,
    /// The ping endpoint, when enabled.
    pub ping: Option<Ping>,
    /// Application logs of the runtime.
    pub log: Log,
    /// The access log, when enabled.
    pub access_log: Option<AccessLog>,
    /// Prometheus metrics, when enabled.
    pub metrics: Option<Metrics>,
    /// How to connect to servers, by name: the dynamic `http.serversTransports` that some load
    /// balancer uses (`@file` stripped) and always [`DEFAULT_SERVERS_TRANSPORT`], the static
    /// `serversTransport` with Traefik's defaults filled in.
    pub servers_transports: BTreeMap<String, ServersTransport>,
    /// OCSP stapling (Traefik's static `ocsp`), when enabled: the runtime asks each certificate's
    /// OCSP responder for its status and staples the answer to the handshakes that serve it.
    pub ocsp: Option<Ocsp>,
}

/// OCSP stapling settings (Traefik's static `ocsp` section).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Ocsp {
    /// Responder URLs to ask instead of those a certificate names: the key is an OCSP URL exactly
    /// as written in a certificate's Authority Information Access (compared byte for byte), the
    /// value the URL the request is sent to.
    pub responder_overrides: BTreeMap<String, String>,
}

/// Key of the default servers transport in [`Plan::servers_transports`] (Traefik's name for it).
pub const DEFAULT_SERVERS_TRANSPORT: &str = "default@internal";

/// How the runtime connects to a load balancer's servers (Traefik's `serversTransport`), with
/// every default filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ServersTransport {
    /// TLS server name (SNI and certificate check) for `https` servers; `null`: the server URL's
    /// host.
    pub server_name: Option<String>,
    /// Accept any certificate from `https` servers.
    pub insecure_skip_verify: bool,
    /// PEM of the CAs that verify `https` servers (files or inline); empty: the system's trust
    /// store.
    pub root_cas: Vec<Pem>,
    /// Idle keep-alive connections kept per server (`0`: none are kept).
    pub max_idle_conns_per_host: u32,
    /// Speak only HTTP/1.1 to `https` servers (no ALPN `h2`).
    pub disable_http2: bool,
    /// Connect timeout (`0`: none).
    pub dial_timeout_ms: u64,
    /// Time allowed from sending a request to its response headers (`0`: none).
    pub response_header_timeout_ms: u64,
    /// Idle keep-alive connections are closed after this long (`0`: never).
    pub idle_conn_timeout_ms: u64,
    /// Client certificates presented to `https` servers that ask for one: the first whose key
    /// can sign as the server asks, else the first (as Go's client picks).
    pub certificates: Vec<Certificate>,
    /// Lowest TLS version spoken to `https` servers (Go's client default: 1.2).
    pub min_version: TlsVersion,
    /// Highest TLS version; `null`: the highest known (1.3).
    pub max_version: Option<TlsVersion>,
    /// TLS 1.2 cipher suites offered (empty: the defaults); TLS 1.3 suites are always offered,
    /// as by Go.
    pub cipher_suites: Vec<CipherSuite>,
    /// A URI the server's certificate must carry among its SAN URIs (compared without regard to
    /// case); its chain is then verified against the CAs even with `insecure_skip_verify`, as
    /// Traefik's `peerCertURI` check does.
    pub peer_cert_uri: Option<String>,
    /// HTTP/2 connections to the servers: after this long without a frame from the server a
    /// ping is sent (`0`: never; Traefik's `forwardingTimeouts.readIdleTimeout`).
    pub read_idle_timeout_ms: u64,
    /// An unanswered ping closes the connection after this long (Traefik's `pingTimeout`,
    /// default 15 s).
    pub ping_timeout_ms: u64,
}

impl Default for ServersTransport {
    /// Traefik's defaults: verified TLS with the system roots, 200 idle connections per host,
    /// 30 s connect timeout, no response-header timeout, 90 s idle timeout.
    fn default() -> Self {
        ServersTransport {
            server_name: None,
            insecure_skip_verify: false,
            root_cas: vec![],
            max_idle_conns_per_host: 200,
            disable_http2: false,
            dial_timeout_ms: 30_000,
            response_header_timeout_ms: 0,
            idle_conn_timeout_ms: 90_000,
            certificates: vec![],
            min_version: TlsVersion::Tls12,
            max_version: None,
            cipher_suites: vec![],
            peer_cert_uri: None,
            read_idle_timeout_ms: 0,
            ping_timeout_ms: 15_000,
        }
    }
}

/// The inputs a plan was compiled from, so a plan can be traced back to (and rebuilt from) them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    /// `sha256:` + hex SHA-256 of the canonical JSON of `{"files": …, "vars": …}` (this object
    /// without `digest`); see [`Inputs::compute_digest`].
    #[cfg_attr(feature = "schema", schemars(pattern(r"^sha256:[0-9a-f]{64}$")))]
    pub digest: String,
    /// Every file read (static, dynamic, profile, files referenced for hashing), sorted by path.
    pub files: Vec<InputFile>,
    /// Template variables (`--var NAME=VALUE` and profile defaults) as used.
    pub vars: BTreeMap<String, String>,
}

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    /// Path relative to the configuration directory, `/`-separated (a file outside it keeps the
    /// path it was given).
    pub path: String,
    /// 64 lower-case hex digits: SHA-256 of the file's bytes as read (before templating).
    #[cfg_attr(feature = "schema", schemars(pattern(r"^[0-9a-f]{64}$")))]
    pub sha256: String,
}

/// Where an entity was defined: the position of its name in the source file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Provenance {
    /// File path, as in [`InputFile::path`].
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column, counted in Unicode characters (not bytes).
    pub column: u32,
}

/// A listening socket and how connections on it are handled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EntryPoint {
    /// The address as written in the configuration, e.g. `":80"` or `"127.0.0.1:8080"`.
    pub address: String,
    /// TCP port to listen on.
    pub port: u16,
    /// IP address to bind (without brackets for IPv6); `null` binds every address.
    pub host: Option<String>,
    /// TLS termination on this entry point, if any.
    pub tls: Option<EntryPointTls>,
    /// When set, every request on this entry point is answered with this redirect.
    pub redirect: Option<Redirect>,
    /// Which `X-Forwarded-*` request headers are trusted.
    pub forwarded_headers: ForwardedHeaders,
    /// Which peers' PROXY protocol header (v1 or v2, optional from them) names the client
    /// (`proxyProtocol`); left out when the entry point has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_protocol: Option<ForwardedHeaders>,
    /// HTTP/3 (Traefik's `http3`): QUIC on the same address over UDP, with the TLS of the
    /// entry point's routers, and `Alt-Svc` on answers over TLS on TCP; left out when the entry
    /// point has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3>,
    /// Connection timeouts.
    pub timeouts: Timeouts,
    /// Largest request header section accepted, in bytes.
    pub max_header_bytes: u64,
    /// Connection limits: Traefik's `transport.keepAliveMaxRequests`/`keepAliveMaxTime` and
    /// `http2` settings.
    pub connections: ConnectionLimits,
    /// Dot segments and duplicate slashes are removed from request paths before routing
    /// (Traefik's `http.sanitizePath`, default true).
    pub sanitize_path: bool,
    /// `http.encodedCharacters`: checked after routing, before the router's middlewares; empty
    /// `denied` when the section is absent.
    pub encoded_characters: EncodedCharacters,
    /// Whether the access log and the request metrics record this entry point's requests
    /// (Traefik's `observability`), unless their router says otherwise; requests no router
    /// takes follow it.
    pub observability: Observability,
    /// Routers may answer ACME's HTTP challenge path `/.well-known/acme-challenge/` (Traefik's
    /// `allowACMEByPass`): the redirect leaves that path alone, and the certificate resolvers'
    /// own HTTP-01 answers rank as a router of priority 42 (the length of their rule) instead of
    /// above every router.
    pub acme_bypass: bool,
    /// What becomes of a `;` in a request's query before routing (Traefik's
    /// `http.encodeQuerySemicolons`): rules, middlewares and the server see the result.
    pub query_semicolons: QuerySemicolons,
    /// What becomes of request fields whose name holds `_` (Traefik's
    /// `http.underscoreHeadersStrategy`), decided before anything else looks at the request.
    pub underscore_headers: UnderscoreHeaders,
    /// Keys of the routers served here, in matching order: priority descending, then key ascending
    /// (bytewise). Exactly the routers whose `entrypoints` name this entry point.
    pub routers: Vec<String>,
    /// Where the entry point was defined.
    pub source: Provenance,
}

/// What an entry point does with a `;` in a request's query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuerySemicolons {
    /// Each `;` becomes `&`, a parameter separator (Traefik's default, Go's
    /// `AllowQuerySemicolons`): `?a=1;b=2` is forwarded as `?a=1&b=2`.
    Separate,
    /// Each `;` becomes `%3B`, part of a value (`encodeQuerySemicolons: true`): `?a=1;b=2` is
    /// forwarded as `?a=1%3Bb=2`.
    Encode,
}

/// What an entry point does with request fields whose name holds an underscore (which some
/// servers read as a dash, so `X_User` could pass for `X-User`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum UnderscoreHeaders {
    /// Handed on as they are (`keep`, the default).
    Keep,
    /// Removed from the request before routing (`delete`).
    Delete,
    /// The request is answered 400 `Bad Request` (`reject`).
    Reject,
}

/// HTTP/3 on an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Http3 {
    /// The UDP port `Alt-Svc` names: `advertisedPort`, else the entry point's port.
    pub advertised_port: u16,
}

/// TLS on an entry point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EntryPointTls {
    /// Key into [`Tls::options`].
    pub options: String,
}

/// An entry-point-wide redirect (Traefik's `http.redirections.entryPoint`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Redirect {
    /// Target scheme, e.g. `"https"`.
    pub scheme: String,
    /// Target port; left out of the `Location` URL when it is the scheme's default port.
    pub port: u16,
    /// Permanent (301/308) rather than temporary (302/307) redirect.
    pub permanent: bool,
    /// Priority of the redirect among the entry point's routers (Traefik's router
    /// `<ep>-to-<target>`, `http.redirections.entryPoint.priority`, default `i64::MAX - 1`):
    /// a router of higher priority that matches is served instead of redirected.
    pub priority: i64,
}

/// Trust in `X-Forwarded-*` headers sent by clients.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ForwardedHeaders {
    /// Trust the headers from every peer.
    pub insecure: bool,
    /// Peers (CIDRs) whose headers are trusted; others' are replaced.
    pub trusted_ips: Vec<String>,
}

/// How long client connections live and how much they may carry at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ConnectionLimits {
    /// The answer to a connection's request number this many carries `Connection: close` (HTTP/2:
    /// a GOAWAY after its stream); `0`: no limit.
    pub max_requests: u64,
    /// The first answer once a connection is this old carries `Connection: close` (HTTP/2: a
    /// GOAWAY); `0`: no limit.
    pub max_time_ms: u64,
    /// HTTP/2 streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS).
    pub h2_max_concurrent_streams: u32,
    /// HPACK table size for decoding a client's header blocks (SETTINGS_HEADER_TABLE_SIZE).
    pub h2_max_decoder_header_table_size: u32,
}

/// Entry point timeouts, in milliseconds; `0` means no timeout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Timeouts {
    /// Time to read a whole request, body included.
    pub read_ms: u64,
    /// Time to write a whole response.
    pub write_ms: u64,
    /// Time a keep-alive connection may stay idle.
    pub idle_ms: u64,
    /// Time to read the request header section (bridgectl extension).
    pub header_read_ms: u64,
    /// On shutdown, time given to in-flight requests before connections are closed.
    pub grace_ms: u64,
    /// On shutdown, time during which new requests are still accepted.
    pub request_accept_grace_ms: u64,
}

/// An HTTP router: a rule, a middleware chain and a service, or child routers (Traefik's
/// multi-layer routing, `parentRefs`: after this router's middlewares, the modified request is
/// routed again among its children).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Router {
    /// Entry points (keys into [`Plan::entrypoints`]) the router is served on; empty exactly for
    /// a child router, which is reached through its parents (their entry points and TLS).
    pub entrypoints: Vec<String>,
    /// The rule as written, for logs and the dashboard.
    pub rule: String,
    /// Syntax the rule was written in.
    pub rule_syntax: RuleSyntax,
    /// The parsed rule; the runtime matches with this, never with `rule`.
    pub matcher: Rule,
    /// Resolved priority (Traefik's default is the length of `rule`).
    pub priority: i64,
    /// The flattened middleware chain, applied in order: keys into [`Plan::middlewares`].
    pub middlewares: Vec<String>,
    /// A service of the plan, or an internal service (`api@internal`, ...); left out exactly
    /// when the router has `children`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service: Option<ServiceRef>,
    /// Child routers (those naming this one in their `parentRefs`), keys into
    /// [`Plan::routers`] in matching order ([`Router::matching_order`]); a request no child
    /// matches is answered 404. Left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub children: Vec<String>,
    /// TLS for this router, if any (never on a child router).
    pub tls: Option<RouterTls>,
    /// The router's own `observability` switches, over its entry point's; left out when it
    /// has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observability: Option<RouterObservability>,
    /// Where the router was defined.
    pub source: Provenance,
}

/// A router's `observability`: each switch set overrides its entry point's for the requests
/// it serves (a child router's requests follow its root router's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RouterObservability {
    /// The access log records its requests; `null`: as its entry point says.
    pub access_logs: Option<bool>,
    /// The request metrics count its requests; `null`: as its entry point says.
    pub metrics: Option<bool>,
}

/// Whether requests are recorded (an entry point's `observability`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Observability {
    /// The access log records them.
    pub access_logs: bool,
    /// The request metrics (entry point, router, service) count them.
    pub metrics: bool,
}

/// TLS on a router.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RouterTls {
    /// Key into [`Tls::options`].
    pub options: String,
    /// Key into [`Plan::certificate_resolvers`]: the resolver that obtains this router's
    /// certificate; until it has one, the router is served with the default certificate.
    pub cert_resolver: Option<String>,
}

/// A service: where its definition came from and what kind it is.
///
/// Serialized as `{"kind": {"load_balancer": {…}}, "source": {…}}`: the kind is an externally
/// tagged enum so each kind's fields stay closed (`deny_unknown_fields`) and the source is found at
/// the same place for every kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Service {
    /// Where the service was defined.
    pub source: Provenance,
    /// What the service does.
    pub kind: ServiceKind,
    /// Middlewares in front of the service (Traefik's service `middlewares`, v3.7): keys into
    /// [`Plan::middlewares`], `chain`s expanded, run after the router's; one instance per
    /// service, shared by every router that sends to it. Left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub middlewares: Vec<String>,
}

/// The kinds of service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ServiceKind {
    /// Balances requests over servers.
    LoadBalancer(LoadBalancer),
    /// Weighted round robin over other services.
    Weighted(Weighted),
    /// Sends to `service` while it is healthy, else to `fallback`.
    Failover(Failover),
    /// Sends to `service` and copies a share of requests to mirrors.
    Mirroring(Mirroring),
    /// Rendezvous hashing of the client's address over other services.
    HighestRandomWeight(HighestRandomWeight),
}

/// A load balancer over servers (weighted round robin).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LoadBalancer {
    /// The servers, in configuration order.
    pub servers: Vec<Server>,
    /// Forward the client's `Host` header (else the server URL's host is sent).
    pub pass_host_header: bool,
    /// Active health checking, if configured.
    pub health_check: Option<HealthCheck>,
    /// Key into [`Plan::servers_transports`] (`@file` stripped); `null`: the default transport,
    /// [`DEFAULT_SERVERS_TRANSPORT`].
    pub servers_transport: Option<String>,
    /// Sticky sessions: a client whose cookie names an available server keeps it; `null`: none.
    /// Boxed: most load balancers have none, and it would double the size of every service.
    pub sticky: Option<Box<StickyCookie>>,
    /// How a server is chosen.
    pub strategy: Strategy,
}

/// A load balancer's strategy (Traefik's `strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// Weighted round robin.
    Wrr,
    /// Highest random weight (rendezvous hashing) of the client's address: each client stays on
    /// one server while the set of available servers stays the same.
    Hrw,
    /// Power of two choices: of two servers drawn at random, the one with fewer requests in
    /// flight through this load balancer (weights are not read; a weight of 0 still takes
    /// requests).
    P2c,
    /// Least time: the lowest mean time to the first response byte over the last 100 answers,
    /// times one more than the requests in flight, over the weight; ties by weighted rotation.
    Leasttime,
}

/// The cookie of sticky sessions, as Traefik writes it: `name=<first 16 hex digits of the
/// SHA-256 of the server URL as written>` and the attributes below, in Go's order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StickyCookie {
    /// The cookie's name (a token: the compiler replaced other characters, or derived it from
    /// the service name as Traefik does).
    pub name: String,
    /// `Path`; `null`: no attribute.
    pub path: Option<String>,
    /// `Domain`, without a leading dot; `null`: no attribute.
    pub domain: Option<String>,
    /// `Max-Age` in seconds; `null`: no attribute (a session cookie).
    pub max_age: Option<u64>,
    /// `HttpOnly`.
    pub http_only: bool,
    /// `Secure`.
    pub secure: bool,
    /// `SameSite`; `null`: no attribute.
    pub same_site: Option<SameSite>,
}

/// A cookie's `SameSite` attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum SameSite {
    /// `SameSite=None`
    None,
    /// `SameSite=Lax`
    Lax,
    /// `SameSite=Strict`
    Strict,
}

impl SameSite {
    /// As the attribute writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            SameSite::None => "None",
            SameSite::Lax => "Lax",
            SameSite::Strict => "Strict",
        }
    }
}

/// One upstream server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Server {
    /// Absolute `http`, `https` or `h2c` URL.
    pub url: String,
    /// Relative weight; `0` takes the server out of rotation.
    pub weight: u32,
    /// The URL's path goes before the request's path (`preservePath`); otherwise the URL's path
    /// is not sent. Left out when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub preserve_path: bool,
}

/// Active health check of a load balancer's servers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HealthCheck {
    /// Request path (with query, if any) of the probe.
    pub path: String,
    /// Scheme of the probe; `null`: the server URL's scheme.
    pub scheme: Option<String>,
    /// Port of the probe; `null`: the server URL's port.
    pub port: Option<u16>,
    /// `Host` header of the probe; `null`: the server URL's host.
    pub hostname: Option<String>,
    /// HTTP method of the probe, upper-case.
    pub method: String,
    /// Extra request headers of the probe.
    pub headers: BTreeMap<String, String>,
    /// The only status counted as healthy; `null`: any 2xx or 3xx.
    pub status: Option<u16>,
    /// Probe interval for healthy servers.
    pub interval_ms: u64,
    /// Probe interval for unhealthy servers (Traefik's `unhealthyInterval`).
    pub unhealthy_interval_ms: u64,
    /// Probe timeout.
    pub timeout_ms: u64,
    /// Follow redirects returned by the probe.
    pub follow_redirects: bool,
    /// bridgectl extension: a server marked down is re-probed this often until it answers
    /// (default 250).
    pub down_reprobe_interval_ms: u64,
    /// bridgectl extension: no request is sent to a server before it has answered a probe.
    pub probe_before_traffic: bool,
    /// bridgectl extension: while no server of the service a request is routed to is available,
    /// the request waits up to this long for one to become available before 503 (`0`: answer 503
    /// at once, as Traefik does).
    pub hold_ms: u64,
    /// bridgectl extension: the upgraded connections (WebSocket, any `Upgrade`) tunnelled to a
    /// server are closed once it has been down (or out of the plan) this long; `null`: they are
    /// left open, as Traefik leaves them.
    pub close_tunnels_after_ms: Option<u64>,
    /// How a server is probed; left out for `http`.
    #[serde(default, skip_serializing_if = "HealthCheckMode::is_http")]
    pub mode: HealthCheckMode,
}

/// How a health check probes a server (Traefik's `healthCheck.mode`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HealthCheckMode {
    /// An HTTP request (`method`, `path`, `hostname`, `headers`), healthy by its status.
    #[default]
    Http,
    /// The gRPC Health Checking Protocol v1 (`grpc.health.v1.Health/Check` for the whole
    /// server) over HTTP/2 without TLS to the server's host and port (`port` overrides it);
    /// healthy when it answers `SERVING`. `path`, `method`, `hostname`, `headers`, `status` and
    /// `follow_redirects` are not used, as in Traefik.
    Grpc,
}

impl HealthCheckMode {
    /// True for the default, [`HealthCheckMode::Http`].
    pub fn is_http(&self) -> bool {
        *self == Self::Http
    }
}

/// Weighted round robin over services.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Weighted {
    /// The services and their weights.
    pub services: Vec<WeightedRef>,
    /// Propagate health: the service is down when every child is down.
    pub health_check: bool,
    /// Sticky sessions: a client whose cookie names an available child keeps it (the value
    /// hashes the child's name as written); `null`: none.
    pub sticky: Option<Box<StickyCookie>>,
}

/// A service with a weight.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct WeightedRef {
    /// Key into [`Plan::services`].
    pub service: String,
    /// The name as written (`@file` kept when it was): what `highest_random_weight` hashes.
    pub name: String,
    /// Relative weight.
    pub weight: u32,
}

/// Highest random weight over services: every available child of weight 1 or more scores
/// `weight / −ln(FNV-1a-64(client IP + name as written) / 2^64)`, the highest wins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HighestRandomWeight {
    /// The services and their weights.
    pub services: Vec<WeightedRef>,
    /// Propagate health: a child counts only while it is available, and the service is down
    /// when every child is down.
    pub health_check: bool,
}

/// Failover between two services.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Failover {
    /// Main service: key into [`Plan::services`].
    pub service: String,
    /// Used while the main service is down: key into [`Plan::services`].
    pub fallback: String,
    /// Propagate health: the service is down when both are down.
    pub health_check: bool,
    /// `errors`: while the main service is up, answers of these statuses from it are replaced
    /// by the fallback's answer to the same request (replayed); `null`: no such replay.
    pub errors: Option<FailoverErrors>,
}

/// A failover service's `errors` (Traefik v3.7): status-based fallback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FailoverErrors {
    /// Statuses of the main service's answer that go to the fallback, as inclusive ranges;
    /// never empty (without statuses `errors` changes nothing and is left out).
    pub status: Vec<StatusRange>,
    /// The request body is stored to be replayed, up to this many bytes (more: 413); `null`: no
    /// limit (Traefik's default, `-1`).
    pub max_request_body_bytes: Option<u64>,
}

/// Traffic mirroring.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Mirroring {
    /// The service that answers: key into [`Plan::services`].
    pub service: String,
    /// Services that receive copies.
    pub mirrors: Vec<Mirror>,
    /// Copy request bodies to the mirrors.
    pub mirror_body: bool,
    /// Largest body copied, in bytes; `null`: no limit.
    pub max_body_size: Option<u64>,
}

/// A mirror.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Mirror {
    /// Key into [`Plan::services`].
    pub service: String,
    /// Share of requests copied, `0` to `100`.
    #[cfg_attr(feature = "schema", schemars(range(max = 100)))]
    pub percent: u8,
}

/// A middleware: where its definition came from and what kind it is.
///
/// Same shape as [`Service`]: `{"kind": {"strip_prefix": {…}}, "source": {…}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Middleware {
    /// Where the middleware was defined (for a middleware added by the profile, the profile file).
    pub source: Provenance,
    /// What the middleware does.
    pub kind: MiddlewareKind,
}

/// The kinds of middleware the runtime implements. Chains are flattened by the compiler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MiddlewareKind {
    /// Removes a path prefix.
    StripPrefix(StripPrefix),
    /// Removes a path prefix matched by a regex.
    StripPrefixRegex(StripPrefixRegex),
    /// Adds a path prefix.
    AddPrefix(AddPrefix),
    /// Replaces the path.
    ReplacePath(ReplacePath),
    /// Replaces the path by a regex and a replacement.
    ReplacePathRegex(ReplacePathRegex),
    /// Sets request and response headers (custom, security, CORS).
    Headers(Headers),
    /// Redirects to another scheme.
    RedirectScheme(RedirectScheme),
    /// Redirects by rewriting the URL with a regex.
    RedirectRegex(RedirectRegex),
    /// HTTP basic authentication.
    BasicAuth(BasicAuth),
    /// Retries failed requests.
    Retry(Retry),
    /// Allows only some client IPs.
    IpAllowList(IpAllowList),
    /// Replaces answers with some status codes by a page from another service.
    Errors(Errors),
    /// Limits the request rate per source (a token bucket).
    RateLimit(RateLimit),
    /// Limits the requests in flight at once per source.
    InFlightReq(InFlightReq),
    /// Compresses answers (gzip, brotli, zstd) as the client accepts them.
    Compress(Compress),
    /// Gives an answer without `Content-Type` the type sniffed from its first bytes.
    ContentType(ContentType),
    /// Asks an authentication server about each request; a 2xx lets it through.
    ForwardAuth(ForwardAuth),
    /// Answers with a fallback status, without asking the service, while the service's recent
    /// answers meet a condition.
    CircuitBreaker(CircuitBreaker),
    /// Refuses (400) a request whose path holds an escape of a denied character.
    EncodedCharacters(EncodedCharacters),
    /// Passes the client's TLS certificates (or fields of them) to the server.
    PassTlsClientCert(PassTlsClientCert),
    /// HTTP Digest authentication (MD5, `qop=auth`).
    DigestAuth(DigestAuth),
    /// Reads the whole request body before the rest of the chain, holds the whole answer before
    /// the client gets it, and replays the request while a condition holds.
    Buffering(Buffering),
    /// Translates gRPC-Web requests (binary or base64 text) to gRPC and the answers back, with
    /// the trailers as a final message; answers CORS preflights for gRPC-Web.
    GrpcWeb(GrpcWeb),
}

/// `grpcWeb`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GrpcWeb {
    /// Origins allowed CORS access, compared exactly (case included); `*` allows every one.
    pub allow_origins: Vec<String>,
}

/// `buffering` (Traefik's vulcand/oxy buffer): limits of 0 are the `None`s, the memory sizes are
/// the effective ones (Traefik's 0 is 1 MiB; more than the limit is the limit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Buffering {
    /// Largest request body, in bytes; a larger one is answered 413 (`None`: no limit).
    pub max_request_body_bytes: Option<u64>,
    /// Request body bytes held in memory; the rest waits in an unlinked temporary file.
    pub mem_request_body_bytes: u64,
    /// Largest response body, in bytes; a larger one is answered 500 (`None`: no limit).
    pub max_response_body_bytes: Option<u64>,
    /// Response body bytes held in memory; the rest waits in an unlinked temporary file.
    pub mem_response_body_bytes: u64,
    /// `retryExpression` as written (logs and `explain`; empty: none).
    pub retry_expression: String,
    /// What it means, parsed by the compiler (`None`: the request is never replayed).
    pub retry: Option<RetryCondition>,
}

/// When `buffering` replays a request, asked after each attempt: comparisons of the attempt's
/// facts with literals, joined by `and`/`or` (Traefik's `&&`/`||`, left to right, short-circuit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RetryCondition {
    /// Either holds (`||`).
    Or(Box<RetryCondition>, Box<RetryCondition>),
    /// Both hold (`&&`).
    And(Box<RetryCondition>, Box<RetryCondition>),
    /// `IsNetworkError()`: the attempt's status is 502 or 504, whoever sent it.
    NetworkError,
    /// `Attempts()` or `ResponseCode()` compared with a whole number.
    Count {
        /// Which number.
        counter: RetryCounter,
        /// How it is compared.
        op: Comparison,
        /// The number it is compared with.
        value: i64,
    },
    /// `RequestMethod() == "…"` (`equal`) or `!= "…"`.
    Method {
        /// `==` rather than `!=`.
        equal: bool,
        /// The method, compared byte for byte.
        method: String,
    },
}

/// The numbers a retry condition reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RetryCounter {
    /// `Attempts()`: the attempt that just ended, the first being 1.
    Attempts,
    /// `ResponseCode()`: its status (502 when no server answered, 504 on a timeout).
    ResponseCode,
}

/// `digestAuth`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DigestAuth {
    /// Inline users, `name:realm:HA1` (htdigest lines; HA1 the lower-case hex MD5 of
    /// `name:realm:password`); they win over the file's.
    pub users: Vec<String>,
    /// htdigest file read by the runtime at start, path as referenced in the configuration.
    pub users_file: Option<String>,
    /// Realm of the challenge; only users of this realm can log in.
    pub realm: String,
    /// Request header that receives the authenticated user name (the client's copies removed).
    pub header_field: Option<String>,
    /// Remove the `Authorization` header before forwarding.
    pub remove_header: bool,
}

/// `passTLSClientCert`: on a TLS connection where the client sent certificates, what the server
/// gets of them (nothing is set, nor removed, without one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct PassTlsClientCert {
    /// `X-Forwarded-Tls-Client-Cert`: each certificate's DER in base64, joined with `,`.
    pub pem: bool,
    /// `X-Forwarded-Tls-Client-Cert-Info`: the chosen fields of each certificate; set (even
    /// empty) whenever the section is written.
    pub info: Option<ClientCertInfo>,
}

/// The fields of `passTLSClientCert.info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientCertInfo {
    /// `NA="<unix seconds>"`.
    pub not_after: bool,
    /// `NB="<unix seconds>"`.
    pub not_before: bool,
    /// `SAN="…"`: DNS names, e-mail addresses, IP addresses, URIs.
    pub sans: bool,
    /// `SerialNumber="<decimal>"`.
    pub serial_number: bool,
    /// `Subject="…"`: the chosen parts of the subject.
    pub subject: DistinguishedNameFields,
    /// `Issuer="…"`: the chosen parts of the issuer (never `organizational_unit`: Traefik has
    /// no such issuer option).
    pub issuer: DistinguishedNameFields,
}

/// Which parts of a distinguished name `passTLSClientCert` writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DistinguishedNameFields {
    /// `C=`.
    pub country: bool,
    /// `ST=`.
    pub province: bool,
    /// `L=`.
    pub locality: bool,
    /// `O=`.
    pub organization: bool,
    /// `OU=` (subjects only).
    pub organizational_unit: bool,
    /// `CN=`.
    pub common_name: bool,
    /// `SN=`: the name's serialNumber attribute, not the certificate's serial.
    pub serial_number: bool,
    /// `DC=`.
    pub domain_component: bool,
}

/// `encodedCharacters` (the middleware, and an entry point's `http.encodedCharacters`): the
/// characters whose escapes a request path may not hold.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct EncodedCharacters {
    /// Denied, in this order, without repeats; empty: the check is off.
    pub denied: Vec<EncodedCharacter>,
}

/// A character whose escape `encodedCharacters` can deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum EncodedCharacter {
    /// `%2F`, `%2f` (`allowEncodedSlash`).
    Slash,
    /// `%5C`, `%5c` (`allowEncodedBackSlash`).
    BackSlash,
    /// `%00` (`allowEncodedNullCharacter`).
    NullCharacter,
    /// `%3B`, `%3b` (`allowEncodedSemicolon`).
    Semicolon,
    /// `%25` (`allowEncodedPercent`).
    Percent,
    /// `%3F`, `%3f` (`allowEncodedQuestionMark`).
    QuestionMark,
    /// `%23` (`allowEncodedHash`).
    Hash,
}

impl EncodedCharacter {
    /// Every one, in the order of Traefik's `allowEncoded…` options.
    pub const ALL: [Self; 7] = [
        Self::Slash,
        Self::BackSlash,
        Self::NullCharacter,
        Self::Semicolon,
        Self::Percent,
        Self::QuestionMark,
        Self::Hash,
    ];

    /// The escape with upper-case hex digits, e.g. `%2F`.
    pub const fn escape(self) -> &'static str {
        match self {
            Self::Slash => "%2F",
            Self::BackSlash => "%5C",
            Self::NullCharacter => "%00",
            Self::Semicolon => "%3B",
            Self::Percent => "%25",
            Self::QuestionMark => "%3F",
            Self::Hash => "%23",
        }
    }
}

/// `stripPrefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StripPrefix {
    /// Prefixes tried in order; the first that matches is removed.
    pub prefixes: Vec<String>,
}

/// `stripPrefixRegex`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StripPrefixRegex {
    /// Regexes (`regex` crate syntax) tried in order; the first match at the start is removed.
    pub regex: Vec<String>,
}

/// `addPrefix`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AddPrefix {
    /// Prefix added in front of the path.
    pub prefix: String,
}

/// `replacePath`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReplacePath {
    /// The new path.
    pub path: String,
}

/// `errors`: answers whose status is in `status` are replaced by what `service` answers to
/// `GET query`, with the caught status (or its rewrite).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Errors {
    /// Caught status codes, as inclusive ranges (a single code is a range of one).
    pub status: Vec<StatusRange>,
    /// What the client gets instead of a caught code: the first rewrite whose range holds it.
    pub status_rewrites: Vec<StatusRewrite>,
    /// The service that serves the pages: a key of `services`.
    pub service: String,
    /// Path and query of the page request, starting with `/`; `{status}` (the code sent to the
    /// client), `{originalStatus}` and `{url}` (the request's URL, query-escaped) are replaced.
    pub query: String,
    /// Request fields copied to the page request; `null`: all of them.
    pub error_request_headers: Option<Vec<String>>,
}

/// A caught code in `range` is sent as `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StatusRewrite {
    /// The caught codes this applies to.
    pub range: StatusRange,
    /// The code sent instead.
    pub status: u16,
}

/// `replacePathRegex`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ReplacePathRegex {
    /// Expression (`regex` crate syntax) matched against the escaped path; every match is
    /// replaced.
    pub regex: String,
    /// What replaces each match; `$1`, `${1}` and `${name}` are the expression's groups. Empty:
    /// the path is left as it is (Traefik's behaviour).
    pub replacement: String,
}

/// `headers`, with every option resolved (empty list, `false`, `0` or `null` when not set).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Headers {
    /// Request headers to set; an empty value removes the header.
    pub custom_request_headers: BTreeMap<String, String>,
    /// Response headers to set; an empty value removes the header.
    pub custom_response_headers: BTreeMap<String, String>,
    /// `max-age` of `Strict-Transport-Security`, in seconds; `0`: no header.
    pub sts_seconds: u64,
    /// Add `includeSubDomains` to `Strict-Transport-Security`.
    pub sts_include_subdomains: bool,
    /// Add `preload` to `Strict-Transport-Security`.
    pub sts_preload: bool,
    /// Send `Strict-Transport-Security` on plain HTTP responses too.
    pub force_sts_header: bool,
    /// `X-Frame-Options: DENY`.
    pub frame_deny: bool,
    /// `X-Frame-Options` value, overriding `frame_deny`.
    pub custom_frame_options_value: Option<String>,
    /// `X-Content-Type-Options: nosniff`.
    pub content_type_nosniff: bool,
    /// `X-XSS-Protection: 1; mode=block`.
    pub browser_xss_filter: bool,
    /// `Content-Security-Policy` value.
    pub content_security_policy: Option<String>,
    /// `Referrer-Policy` value.
    pub referrer_policy: Option<String>,
    /// `Permissions-Policy` value.
    pub permissions_policy: Option<String>,
    /// `Access-Control-Allow-Credentials: true`.
    pub access_control_allow_credentials: bool,
    /// `Access-Control-Allow-Headers` values.
    pub access_control_allow_headers: Vec<String>,
    /// `Access-Control-Allow-Methods` values.
    pub access_control_allow_methods: Vec<String>,
    /// Origins allowed (`*` for any).
    pub access_control_allow_origin_list: Vec<String>,
    /// Regexes (`regex` crate syntax, unanchored as in Traefik) of further allowed origins; a
    /// matching origin is echoed.
    pub access_control_allow_origin_list_regex: Vec<String>,
    /// `Access-Control-Expose-Headers` values.
    pub access_control_expose_headers: Vec<String>,
    /// `Access-Control-Max-Age`, in seconds.
    pub access_control_max_age: u64,
    /// Add `Vary: Origin` when the allowed origin depends on the request.
    pub add_vary_header: bool,
    /// Hosts a request may name (compared without regard to case, port included as sent); any
    /// other is answered `500 Bad Host`. Empty: every host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_hosts: Vec<String>,
    /// Request fields that carry the host for `allowed_hosts` instead of `Host` (the first one
    /// present wins).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts_proxy_headers: Vec<String>,
    /// Request fields (name: exact value) that mark a plain-HTTP request as HTTPS for HSTS and
    /// `Public-Key-Pins` (a TLS terminator in front).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ssl_proxy_headers: BTreeMap<String, String>,
    /// `X-XSS-Protection` value, overriding `browser_xss_filter`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom_browser_xss_value: Option<String>,
    /// `Content-Security-Policy-Report-Only` value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_security_policy_report_only: Option<String>,
    /// `Public-Key-Pins` value, sent over HTTPS only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_key: Option<String>,
    /// `isDevelopment`: no `allowed_hosts` check, no HSTS, no `Public-Key-Pins`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_development: bool,
}

/// `redirectScheme`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedirectScheme {
    /// Target scheme.
    pub scheme: String,
    /// Target port as written; `null`: no port in the `Location` URL.
    pub port: Option<String>,
    /// Permanent (301/308) rather than temporary (302/307) redirect.
    pub permanent: bool,
}

/// `redirectRegex`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RedirectRegex {
    /// Regex (`regex` crate syntax) matched against the full request URL.
    pub regex: String,
    /// Replacement with `${1}`-style group references.
    pub replacement: String,
    /// Permanent (301/308) rather than temporary (302/307) redirect.
    pub permanent: bool,
}

/// `basicAuth`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// Inline users, `user:hash` (bcrypt, `$apr1$` or `{SHA}` hashes).
    pub users: Vec<String>,
    /// htpasswd file read by the runtime at start, path as referenced in the configuration.
    pub users_file: Option<String>,
    /// Realm of the `WWW-Authenticate` challenge.
    pub realm: String,
    /// Request header that receives the authenticated user name.
    pub header_field: Option<String>,
    /// Remove the `Authorization` header before forwarding.
    pub remove_header: bool,
}

/// `retry`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Retry {
    /// Total number of attempts (the first included).
    pub attempts: u32,
    /// First back-off interval; it doubles after each attempt. `0`: no back-off.
    pub initial_interval_ms: u64,
}

/// `ipAllowList`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct IpAllowList {
    /// Allowed client networks (CIDRs).
    pub source_range: Vec<String>,
    /// Status of the rejection response (Traefik's default is 403).
    pub reject_status_code: u16,
    /// `0`: use the peer address; `n > 0`: use the n-th address from the right of
    /// `X-Forwarded-For`.
    pub depth: u32,
    /// Addresses skipped when walking `X-Forwarded-For` from the right.
    pub excluded_ips: Vec<String>,
    /// IPv6 addresses judged by their network of this prefix length (1-128); `null`: as they are.
    pub ipv6_subnet: Option<u8>,
}

/// `rateLimit`: Traefik's token bucket per source, `burst` deep, refilled at `average` per
/// `period_ms`; a request that would wait longer than Traefik's maximum delay is refused with
/// 429, a shorter wait is waited out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct RateLimit {
    /// Requests per period; `0`: no limit (Traefik's reading of a zero or negative average).
    pub average: u64,
    /// The period, in milliseconds (Traefik's default 1000).
    pub period_ms: u64,
    /// Bucket depth: requests that may come at once (at least 1).
    pub burst: u64,
    /// What a source is.
    pub source: SourceCriterion,
}

/// `inFlightReq`: at most `amount` requests of one source at a time; more get 429 at once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct InFlightReq {
    /// Requests at once per source (at least 1).
    pub amount: u64,
    /// What a source is (Traefik's default for inFlightReq: the request's host).
    pub source: SourceCriterion,
}

/// `compress`: answers are encoded with the coding the client's `Accept-Encoding` and this
/// middleware's priorities agree on, once at least `min_response_body_bytes` of the body came.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Compress {
    /// Codings by priority, highest first; a tie in the client's weights goes to the earlier.
    pub encodings: Vec<ContentCoding>,
    /// What `*` in `Accept-Encoding` stands for (Traefik: the default encoding, else the first
    /// encoding as written).
    pub wildcard: ContentCoding,
    /// The coding used when the request has no `Accept-Encoding` at all; `null`: none.
    pub default_encoding: Option<ContentCoding>,
    /// Smallest body, in bytes, that is compressed (Traefik's default 1024).
    #[cfg_attr(feature = "schema", schemars(range(min = 1)))]
    pub min_response_body_bytes: u64,
    /// Which media types (lower case, without parameters) are compressed.
    pub media_types: MediaTypeFilter,
}

/// `contentType`: Traefik turns Go's sniffing of untyped answers off at its entry points; this
/// middleware turns it back on for the routers using it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ContentType {
    /// Sniff (`false`: the middleware does nothing, Traefik's reading of the deprecated
    /// `autoDetect: false`).
    pub detect: bool,
}

/// `circuitBreaker`: after each forwarded answer (at most once per `check_period_ms`) the
/// condition is evaluated over the router's recent answers; when it holds, the breaker trips:
/// for `fallback_duration_ms` every request gets `response_code`, then for
/// `recovery_duration_ms` a growing share is let through again (Traefik's oxy v2.1.0 breaker).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CircuitBreaker {
    /// The expression as written (logs and `explain`).
    pub expression: String,
    /// What the expression means, parsed by the compiler.
    pub condition: BreakerCondition,
    /// Least time between two evaluations, in milliseconds (Traefik's default 100).
    pub check_period_ms: u64,
    /// How long a tripped breaker answers with the fallback, in milliseconds (default 10000).
    pub fallback_duration_ms: u64,
    /// How long the recovery ramp lasts, in milliseconds (default 10000).
    pub recovery_duration_ms: u64,
    /// The fallback's status (default 503); its body is the status text.
    #[cfg_attr(feature = "schema", schemars(range(min = 100, max = 999)))]
    pub response_code: u16,
}

/// A circuit breaker's trip condition: comparisons of the breaker's metrics with literals,
/// joined by `and`/`or` (Traefik's `&&`/`||`, evaluated left to right, short-circuit).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BreakerCondition {
    /// Either holds (`||`).
    Or(Box<BreakerCondition>, Box<BreakerCondition>),
    /// Both hold (`&&`).
    And(Box<BreakerCondition>, Box<BreakerCondition>),
    /// A ratio compared with a number.
    Ratio {
        /// Which ratio.
        ratio: BreakerRatio,
        /// How it is compared.
        op: Comparison,
        /// The number it is compared with.
        threshold: Float,
    },
    /// `LatencyAtQuantileMS(quantile)`, whole milliseconds, compared with a whole number.
    Latency {
        /// Percentile, on the 0–100 scale (`50.0` is the median).
        quantile: Float,
        /// How it is compared.
        op: Comparison,
        /// Milliseconds.
        threshold_ms: i64,
    },
}

/// The ratios a circuit breaker computes over the answers of its last 10 seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum BreakerRatio {
    /// `NetworkErrorRatio()`: share of answers with status 502 or 504.
    NetworkErrors,
    /// `ResponseCodeRatio(a, b, c, d)`: answers with `a <= status < b` over answers with
    /// `c <= status < d` (0 when there are none of the latter).
    ResponseCodes {
        /// `[a, b)`.
        numerator: [i64; 2],
        /// `[c, d)`.
        denominator: [i64; 2],
    },
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Comparison {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Comparison {
    /// How Traefik writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
            Comparison::Eq => "==",
            Comparison::Ne => "!=",
        }
    }

    /// `value <op> threshold`.
    pub fn holds<T: PartialOrd>(self, value: T, threshold: T) -> bool {
        match self {
            Comparison::Lt => value < threshold,
            Comparison::Le => value <= threshold,
            Comparison::Gt => value > threshold,
            Comparison::Ge => value >= threshold,
            Comparison::Eq => value == threshold,
            Comparison::Ne => value != threshold,
        }
    }
}

/// A finite number that is not a whole one. Plans hold only integers, so it is written as the
/// shortest decimal text that reads back as the same `f64` (`"0.5"`, `"1e-7"`).
#[derive(Debug, Clone, Copy)]
pub struct Float(f64);

impl Float {
    /// `v`, when it is finite.
    pub fn new(v: f64) -> Option<Float> {
        v.is_finite().then_some(Float(v))
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

impl std::fmt::Display for Float {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `{:?}` is the shortest text that reads back exactly, and always looks like a float
        // (`50.0`, not `50`).
        write!(f, "{:?}", self.0)
    }
}

impl Serialize for Float {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Float {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = String::deserialize(deserializer)?;
        written
            .parse::<f64>()
            .ok()
            .and_then(Float::new)
            .ok_or_else(|| serde::de::Error::custom(format!("`{written}` is not a finite number")))
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for Float {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Float".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A finite number written as decimal text, e.g. `0.5`, `50.0`, `1e-7`.",
            "type": "string",
            "pattern": "^-?(0|[1-9][0-9]*)(\\.[0-9]+)?(e-?[0-9]+)?$"
        })
    }
}

impl std::fmt::Display for BreakerCondition {
    /// As a Traefik expression that means the same (parenthesised where needed).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            // Go's `||` and `&&` group to the left, and `&&` binds tighter: a right operand of
            // the same kind, and an `||` under `&&`, need parentheses to read back as this tree.
            BreakerCondition::Or(a, b) => match &**b {
                BreakerCondition::Or(..) => write!(f, "{a} || ({b})"),
                _ => write!(f, "{a} || {b}"),
            },
            BreakerCondition::And(a, b) => {
                match &**a {
                    BreakerCondition::Or(..) => write!(f, "({a})")?,
                    _ => write!(f, "{a}")?,
                }
                match &**b {
                    BreakerCondition::Or(..) | BreakerCondition::And(..) => write!(f, " && ({b})"),
                    _ => write!(f, " && {b}"),
                }
            }
            BreakerCondition::Ratio {
                ratio,
                op,
                threshold,
            } => {
                match ratio {
                    BreakerRatio::NetworkErrors => f.write_str("NetworkErrorRatio()")?,
                    BreakerRatio::ResponseCodes {
                        numerator: [a, b],
                        denominator: [c, d],
                    } => write!(f, "ResponseCodeRatio({a}, {b}, {c}, {d})")?,
                }
                write!(f, " {} {threshold}", op.as_str())
            }
            BreakerCondition::Latency {
                quantile,
                op,
                threshold_ms,
            } => write!(
                f,
                "LatencyAtQuantileMS({quantile}) {} {threshold_ms}",
                op.as_str()
            ),
        }
    }
}

/// `forwardAuth`: each request is first sent (without body) to `address`; a 2xx answer lets it
/// through with some of the answer's fields, any other answer is what the client gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ForwardAuth {
    /// The authentication server's URL, path and query used as written (`http` or `https`).
    pub address: String,
    /// TLS to an `https` address.
    pub tls: AuthTls,
    /// What is done with the request's `X-Forwarded-*` fields.
    pub trust_forward_header: ForwardHeaderTrust,
    /// Fields of a 2xx answer that replace the request's own (canonical names).
    pub auth_response_headers: Vec<String>,
    /// Fields of a 2xx answer whose canonical name this expression finds (unanchored) replace
    /// the request's fields it finds; `null`: none.
    pub auth_response_headers_regex: Option<String>,
    /// Request fields sent to the authentication server; empty: all of them.
    pub auth_request_headers: Vec<String>,
    /// Cookies of a 2xx answer added to the client's answer, by name.
    pub add_auth_cookies_to_response: Vec<String>,
    /// Field of a 2xx answer whose first value is the access log's user; `null`: none.
    pub header_field: Option<String>,
    /// The request's body is read whole and sent to the authentication server too.
    pub forward_body: bool,
    /// Largest request body read for `forward_body` (more: 401, the server is not asked);
    /// `null`: no limit.
    pub max_body_size: Option<u64>,
    /// Largest answer body read from the authentication server (more: 401); `null`: no limit.
    pub max_response_body_size: Option<u64>,
    /// A relative `Location` of a refusal is passed on as written (else resolved against
    /// `address`).
    pub preserve_location_header: bool,
    /// The authentication request uses the request's method (else `GET`).
    pub preserve_request_method: bool,
    /// A 401 becomes a 302 to this URL; `null`: the 401 is passed on.
    pub auth_signin_url: Option<String>,
}

/// TLS to a `forwardAuth` server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AuthTls {
    /// PEM of the CA that verifies the server (a file or inline); `null`: the system's trust
    /// store.
    pub ca: Option<Pem>,
    /// Accept any certificate.
    pub insecure_skip_verify: bool,
    /// The client certificate presented when the server asks for one; `null`: none.
    pub certificate: Option<Certificate>,
}

/// `forwardAuth`'s `trustForwardHeader`, whose three states Traefik reads differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ForwardHeaderTrust {
    /// Not set: the request's `X-Forwarded-*` fields are sent on, `X-Forwarded-For`, `-Proto`,
    /// `-Method`, `-Host` and `-Uri` overwritten, `-Port` never set.
    Unset,
    /// `true`: kept; the client appended to `X-Forwarded-For`, the others set when absent.
    Trusted,
    /// `false`: every `X-Forwarded-*` field (and `X-Real-Ip`) removed, then all set anew.
    Untrusted,
}

/// A content coding the runtime can produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ContentCoding {
    /// `gzip` (RFC 1952).
    Gzip,
    /// `br`, brotli (RFC 7932).
    Br,
    /// `zstd`, Zstandard (RFC 8878).
    Zstd,
}

impl ContentCoding {
    /// The coding's token in `Accept-Encoding` and `Content-Encoding`.
    pub const fn token(self) -> &'static str {
        match self {
            Self::Gzip => "gzip",
            Self::Br => "br",
            Self::Zstd => "zstd",
        }
    }
}

/// `compress`'s content-type lists, mutually exclusive in Traefik.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum MediaTypeFilter {
    /// Every type but these; `application/grpc` is always among them, and a request whose own
    /// `Content-Type` is one of them is not compressed either.
    Exclude(Vec<String>),
    /// Only these types (a request of type `application/grpc` is still not compressed).
    Include(Vec<String>),
}

/// How requests are grouped into sources (Traefik's `sourceCriterion`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum SourceCriterion {
    /// The client address, by Traefik's ipStrategy.
    Ip(IpStrategy),
    /// The first value of this request field (a missing field is the empty source).
    RequestHeader(String),
    /// The `Host` as sent, port included.
    RequestHost,
}

/// Traefik's ipStrategy: which address is the client's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct IpStrategy {
    /// `0`: the peer address; `n > 0`: the n-th entry from the right of `X-Forwarded-For`.
    pub depth: u32,
    /// With `depth` 0: the rightmost `X-Forwarded-For` entry not in these addresses and CIDRs.
    pub excluded_ips: Vec<String>,
    /// IPv6 addresses grouped by their network of this prefix length (1-128); `null`: not.
    pub ipv6_subnet: Option<u8>,
}

/// Certificates and TLS options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Tls {
    /// Certificates chosen by SNI.
    pub certificates: Vec<Certificate>,
    /// Certificate used when no other matches; `null`: the runtime's self-signed default.
    pub default_certificate: Option<Certificate>,
    /// TLS option sets by name; the compiler always includes `default`.
    pub options: BTreeMap<String, TlsOptions>,
}

/// A certificate and its key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Certificate {
    /// PEM certificate chain (leaf first).
    pub cert: Pem,
    /// PEM private key.
    pub key: Pem,
}

/// PEM data where Traefik takes a file or the PEM itself (its `FileOrContent`): a value holding
/// a PEM block (`-----BEGIN`) is the PEM, anything else a file path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Pem {
    /// A file path as written in the configuration, read by the runtime at start and on reload.
    File(String),
    /// The PEM text as written in the configuration. It travels in the plan: a private key
    /// written inline makes the plan file a secret, as the configuration file was.
    Inline(String),
}

impl Pem {
    /// The PEM a configuration value names: the value itself when it holds a PEM block, else
    /// the file at that path.
    pub fn of(value: &str) -> Self {
        if Self::is_inline(value) {
            Self::Inline(value.to_owned())
        } else {
            Self::File(value.to_owned())
        }
    }

    /// True when a configuration value is PEM text rather than a path (see [`Pem::of`]).
    pub fn is_inline(value: &str) -> bool {
        value.contains("-----BEGIN")
    }

    /// The bytes: the file's content, or the inline text.
    pub fn read(&self) -> std::io::Result<std::borrow::Cow<'_, [u8]>> {
        match self {
            Self::File(path) => std::fs::read(path).map(std::borrow::Cow::Owned),
            Self::Inline(text) => Ok(std::borrow::Cow::Borrowed(text.as_bytes())),
        }
    }

    /// The file path, if it is one.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::File(path) => Some(path),
            Self::Inline(_) => None,
        }
    }
}

impl std::fmt::Display for Pem {
    /// The path, or `inline PEM`: what messages name (never the PEM itself, which may be a key).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::File(path) => f.write_str(path),
            Self::Inline(_) => f.write_str("inline PEM"),
        }
    }
}

/// An ACME certificate resolver (Traefik's `certificatesResolvers.<name>.acme`), every default
/// filled in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct CertificateResolver {
    /// Account contact address; `null`: an account without contact.
    pub email: Option<String>,
    /// ACME directory URL.
    pub ca_server: String,
    /// PEM files (paths as written) trusted for the ACME server's own TLS certificate.
    pub ca_certificates: Vec<String>,
    /// Also trust the system's certificate store for the ACME server (always the case when
    /// `ca_certificates` is empty).
    pub ca_system_cert_pool: bool,
    /// Name checked in the ACME server's certificate instead of the URL's host.
    pub ca_server_name: Option<String>,
    /// The storage file (Traefik's acme.json format), path as written; shared by every resolver
    /// naming the same file, each under its own key.
    pub storage: String,
    /// Private key type of the certificates.
    pub key_type: AcmeKeyType,
    /// Traefik's `certificatesDuration` in hours: the lifetime the operator expects. Renewal is
    /// timed from each certificate's real lifetime; this only bounds how often it is checked.
    pub certificates_duration_hours: u64,
    /// ACME profile to order certificates with; `null`: the CA's default.
    pub profile: Option<String>,
    /// Email addresses put into the certificate requests.
    pub email_addresses: Vec<String>,
    /// Leave the common name out of the certificate requests.
    pub disable_common_name: bool,
    /// External account binding, when the CA requires one.
    pub eab: Option<Eab>,
    /// HTTP-01: answered on this entry point.
    pub http_challenge: Option<HttpChallenge>,
    /// TLS-ALPN-01: answered on every TLS entry point.
    pub tls_challenge: Option<TlsChallenge>,
    /// DNS-01: a TXT record written through a DNS provider (the only way to a wildcard).
    pub dns_challenge: Option<DnsChallenge>,
    /// Timeout of one whole exchange with the ACME server.
    pub client_timeout_ms: u64,
    /// Timeout for the response header of the ACME server.
    pub client_response_header_timeout_ms: u64,
    /// Timeout for the certificate once an order is finalized.
    pub certificate_timeout_ms: u64,
    /// The certificates routers need, deduplicated as Traefik does: a router's `tls.domains`, or
    /// the hosts of its rule's `Host` matchers as one certificate (first host main).
    pub domains: Vec<AcmeDomain>,
    /// Where the resolver was defined.
    pub source: Provenance,
}

/// Key types Traefik's `keyType` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum AcmeKeyType {
    /// ECDSA P-256.
    #[serde(rename = "EC256")]
    Ec256,
    /// ECDSA P-384.
    #[serde(rename = "EC384")]
    Ec384,
    /// RSA 2048 bits.
    #[serde(rename = "RSA2048")]
    Rsa2048,
    /// RSA 4096 bits (Traefik's default).
    #[serde(rename = "RSA4096")]
    Rsa4096,
    /// RSA 8192 bits (slow to make: seconds per certificate).
    #[serde(rename = "RSA8192")]
    Rsa8192,
}

impl AcmeKeyType {
    /// The key type of a Traefik `keyType` value; RSA8192 is not offered (no supported crypto
    /// library generates it).
    pub fn from_traefik(name: &str) -> Option<AcmeKeyType> {
        Some(match name {
            "EC256" => AcmeKeyType::Ec256,
            "EC384" => AcmeKeyType::Ec384,
            "RSA2048" => AcmeKeyType::Rsa2048,
            "RSA4096" => AcmeKeyType::Rsa4096,
            "RSA8192" => AcmeKeyType::Rsa8192,
            _ => return None,
        })
    }

    /// Traefik's name of the key type.
    pub fn as_str(self) -> &'static str {
        match self {
            AcmeKeyType::Ec256 => "EC256",
            AcmeKeyType::Ec384 => "EC384",
            AcmeKeyType::Rsa2048 => "RSA2048",
            AcmeKeyType::Rsa4096 => "RSA4096",
            AcmeKeyType::Rsa8192 => "RSA8192",
        }
    }
}

/// ACME external account binding credentials (the HMAC key is a credential: a plan with `eab`
/// is as secret as the static configuration it came from).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Eab {
    /// Key identifier from the CA.
    pub kid: String,
    /// The HMAC key, base64url as the CA gave it.
    pub hmac_encoded: String,
}

/// HTTP-01 challenge settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HttpChallenge {
    /// Entry point (key into [`Plan::entrypoints`]) answering `/.well-known/acme-challenge/`.
    pub entrypoint: String,
    /// Wait between presenting the answer and telling the CA to check it.
    pub delay_ms: u64,
}

/// TLS-ALPN-01 challenge settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TlsChallenge {
    /// Wait between presenting the answer and telling the CA to check it.
    pub delay_ms: u64,
}

/// DNS-01 challenge settings, Traefik's `dnsChallenge` resolved: the deprecated keys folded in and
/// the propagation flags made effective (their defaults depend on whether `propagation` was
/// written). The provider's own settings (`EXEC_PATH`, `HTTPREQ_ENDPOINT`, credentials, timeouts)
/// are read from the runtime's environment when an order needs them, as Traefik reads lego's, so
/// no secret is in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct DnsChallenge {
    /// Which of lego's generic providers writes and removes the record.
    pub provider: DnsProvider,
    /// Recursive resolvers (`host:port`) for CNAME following and the checks; empty: the
    /// nameservers of the runtime's `/etc/resolv.conf`.
    pub resolvers: Vec<String>,
    /// Every recursive resolver must answer the record before the CA is told.
    pub check_recursive: bool,
    /// Every authoritative nameserver of the record's zone (asked on port 53) must answer it.
    pub check_authoritative: bool,
    /// No propagation check at all: only the waits.
    pub disable_checks: bool,
    /// Wait before each check attempt.
    pub delay_before_checks_ms: u64,
}

/// lego's generic DNS providers: the ones that need no vendor API in the appliance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum DnsProvider {
    /// Runs `EXEC_PATH present|cleanup <fqdn> <value>` (or the `RAW` form), one authorization
    /// at a time.
    #[serde(rename = "exec")]
    Exec,
    /// POSTs JSON to `HTTPREQ_ENDPOINT/present` and `/cleanup`.
    #[serde(rename = "httpreq")]
    Httpreq,
}

impl DnsProvider {
    /// The provider's name in Traefik's configuration.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exec => "exec",
            Self::Httpreq => "httpreq",
        }
    }
}

/// One certificate a resolver must obtain: its names, in request order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AcmeDomain {
    /// Main name (the certificate's common name unless `disable_common_name`).
    pub main: String,
    /// Further names (subject alternative names).
    pub sans: Vec<String>,
    /// Keys of the routers that need it, sorted.
    pub routers: Vec<String>,
    /// It is also the default certificate (the default TLS store's `defaultGeneratedCert`),
    /// served to handshakes no other certificate matches once obtained.
    pub default_certificate: bool,
}

impl AcmeDomain {
    /// Main name then the further names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.main.as_str()).chain(self.sans.iter().map(String::as_str))
    }
}

/// A TLS option set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TlsOptions {
    /// Lowest protocol version (the runtime speaks 1.2 and 1.3: a lower one means 1.2).
    pub min_version: TlsVersion,
    /// Highest protocol version; `null`: the newest supported.
    pub max_version: Option<TlsVersion>,
    /// TLS 1.2 cipher suites; empty: the runtime's defaults (TLS 1.3 suites are always offered).
    pub cipher_suites: Vec<CipherSuite>,
    /// ALPN protocols in preference order, e.g. `["h2", "http/1.1"]`.
    pub alpn_protocols: Vec<String>,
    /// Reject handshakes without SNI or whose SNI matches no certificate.
    pub sni_strict: bool,
    /// Client certificate authentication, if any.
    pub client_auth: Option<ClientAuth>,
    /// Key-exchange groups offered, in preference order (`curvePreferences`); empty: the
    /// runtime's defaults.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub curve_preferences: Vec<KxGroup>,
    /// Sessions may be resumed (TLS 1.3 tickets, TLS 1.2 session IDs); false with
    /// `disableSessionTickets`.
    pub session_resumption: bool,
}

/// A key-exchange group of Traefik's `curvePreferences` that the runtime can offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum KxGroup {
    /// `X25519` / `x25519`.
    X25519,
    /// `CurveP256` / `secp256r1`.
    Secp256r1,
    /// `CurveP384` / `secp384r1`.
    Secp384r1,
    /// `X25519MLKEM768` / `x25519mlkem768` (post-quantum hybrid).
    X25519Mlkem768,
    /// `SecP256r1MLKEM768` / `secp256r1mlkem768` (post-quantum hybrid).
    Secp256r1Mlkem768,
}

impl KxGroup {
    /// The group a name of Traefik's `curvePreferences` means; `Err(true)` for a name Traefik
    /// knows but the runtime cannot offer (`CurveP521`, `SecP384r1MLKEM1024`), `Err(false)` for
    /// a name Traefik refuses.
    pub fn from_go_name(name: &str) -> Result<KxGroup, bool> {
        match name {
            "x25519" | "X25519" => Ok(KxGroup::X25519),
            "secp256r1" | "CurveP256" => Ok(KxGroup::Secp256r1),
            "secp384r1" | "CurveP384" => Ok(KxGroup::Secp384r1),
            "x25519mlkem768" | "X25519MLKEM768" => Ok(KxGroup::X25519Mlkem768),
            "secp256r1mlkem768" | "SecP256r1MLKEM768" => Ok(KxGroup::Secp256r1Mlkem768),
            "secp521r1" | "CurveP521" | "secp384r1mlkem1024" | "SecP384r1MLKEM1024" => Err(true),
            _ => Err(false),
        }
    }

    /// Every name Traefik accepts.
    pub const GO_NAMES: [&'static str; 14] = [
        "CurveP256",
        "CurveP384",
        "CurveP521",
        "X25519",
        "X25519MLKEM768",
        "SecP256r1MLKEM768",
        "SecP384r1MLKEM1024",
        "secp256r1",
        "secp384r1",
        "secp521r1",
        "x25519",
        "x25519mlkem768",
        "secp256r1mlkem768",
        "secp384r1mlkem1024",
    ];
}

/// Client certificate authentication.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClientAuth {
    /// PEM of the accepted CAs (files or inline).
    pub cas: Vec<Pem>,
    /// Traefik's client auth type.
    pub auth_type: ClientAuthType,
}

/// The API and dashboard.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Api {
    /// Entry point (key into [`Plan::entrypoints`]) serving the API.
    pub entrypoint: String,
    /// Serve the dashboard.
    pub dashboard: bool,
    /// Traefik's `api.insecure`: serve on the entry point without a router.
    pub insecure: bool,
    /// Path prefix of the API and dashboard, e.g. `"/"`.
    pub base_path: String,
    /// Middlewares applied to API requests, in order: keys into [`Plan::middlewares`].
    pub middlewares: Vec<String>,
}

/// The ping endpoint (`GET /ping` answers `OK`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Ping {
    /// Entry point (key into [`Plan::entrypoints`]) serving ping.
    pub entrypoint: String,
    /// Traefik's `manualRouting`: no `/ping` on the entry point; only routers sending to
    /// `ping@internal` answer it.
    pub manual_routing: bool,
    /// Status `/ping` answers once shutdown began (Traefik's `terminatingStatusCode`, default 503),
    /// so a checker in front moves traffic away while requests are still accepted.
    pub terminating_status_code: u16,
}

/// Application logging (Traefik's `log`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Log {
    /// Lowest level written (Traefik's TRACE is `debug`, FATAL and PANIC are `error`).
    pub level: LogLevel,
    /// How each event is written.
    pub format: LogFormat,
}

/// The access log (Traefik's `accessLog`): one record per request, written when its response
/// has been sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AccessLog {
    /// File the records are appended to; `null`: standard output.
    pub file_path: Option<String>,
    /// How each record is written.
    pub format: AccessLogFormat,
    /// Keep only records whose status is in one of these inclusive ranges (empty: no status
    /// filter).
    pub status_codes: Vec<StatusRange>,
    /// Keep records of requests that were retried.
    pub retry_attempts: bool,
    /// Keep records of requests that took longer than this (`0`: no duration filter).
    pub min_duration_ms: u64,
    /// Which fields and request headers JSON records carry (Traefik's `fields`); absent: every
    /// field and no header, Traefik's defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<AccessLogFields>,
    /// Requests answered by the proxy's internal services (the entry point's redirect, ping,
    /// the API and dashboard, `/metrics`, ACME's HTTP-01 answers) are recorded too
    /// (`addInternals`).
    pub add_internals: bool,
}

/// Traefik's `accessLog.fields`: which fields and request headers a JSON record carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AccessLogFields {
    /// The fields `names` does not mention.
    pub default_mode: FieldMode,
    /// Per field, by Traefik's name (`ClientUsername`, `RequestPath`, ...).
    pub names: BTreeMap<String, FieldMode>,
    /// The request headers `header_names` does not mention.
    pub headers_default_mode: HeaderMode,
    /// Per request header (names compared case-insensitively).
    pub header_names: BTreeMap<String, HeaderMode>,
}

/// The syntax a router's rule was written in (Traefik's `ruleSyntax`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum RuleSyntax {
    /// Traefik v3's matchers.
    V3,
    /// Traefik v2's matchers (`HostRegexp` with `{name:re}` templates, comma lists).
    V2,
}

impl RuleSyntax {
    /// `v3` or `v2`, as Traefik writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            RuleSyntax::V3 => "v3",
            RuleSyntax::V2 => "v2",
        }
    }
}

/// A TLS protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum TlsVersion {
    /// TLS 1.0 (Traefik's `VersionTLS10`); not spoken by the runtime: a minimum of 1.0 means 1.2.
    #[serde(rename = "1.0")]
    Tls10,
    /// TLS 1.1 (`VersionTLS11`); not spoken by the runtime: a minimum of 1.1 means 1.2.
    #[serde(rename = "1.1")]
    Tls11,
    /// TLS 1.2 (`VersionTLS12`).
    #[serde(rename = "1.2")]
    Tls12,
    /// TLS 1.3 (`VersionTLS13`).
    #[serde(rename = "1.3")]
    Tls13,
}

impl TlsVersion {
    /// Traefik's (Go's) name: `VersionTLS12`.
    pub fn from_go_name(name: &str) -> Option<TlsVersion> {
        Some(match name {
            "VersionTLS10" => TlsVersion::Tls10,
            "VersionTLS11" => TlsVersion::Tls11,
            "VersionTLS12" => TlsVersion::Tls12,
            "VersionTLS13" => TlsVersion::Tls13,
            _ => return None,
        })
    }

    /// `1.2`, as the plan writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            TlsVersion::Tls10 => "1.0",
            TlsVersion::Tls11 => "1.1",
            TlsVersion::Tls12 => "1.2",
            TlsVersion::Tls13 => "1.3",
        }
    }
}

/// A cipher suite the runtime can offer, by Traefik's (Go's) name. The plan writes the current
/// Go name; Go's older spellings of the ChaCha20 suites are accepted as aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[allow(
    non_camel_case_types,
    reason = "the variants are the Go constant names users write"
)]
pub enum CipherSuite {
    /// TLS 1.2, ECDHE with ECDSA, AES-128-GCM.
    TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
    /// TLS 1.2, ECDHE with ECDSA, AES-256-GCM.
    TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
    /// TLS 1.2, ECDHE with ECDSA, ChaCha20-Poly1305.
    #[serde(alias = "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305")]
    TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
    /// TLS 1.2, ECDHE with RSA, AES-128-GCM.
    TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
    /// TLS 1.2, ECDHE with RSA, AES-256-GCM.
    TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
    /// TLS 1.2, ECDHE with RSA, ChaCha20-Poly1305.
    #[serde(alias = "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305")]
    TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
    /// TLS 1.3, AES-128-GCM (always offered with TLS 1.3, as in Go).
    TLS_AES_128_GCM_SHA256,
    /// TLS 1.3, AES-256-GCM.
    TLS_AES_256_GCM_SHA384,
    /// TLS 1.3, ChaCha20-Poly1305.
    TLS_CHACHA20_POLY1305_SHA256,
}

impl CipherSuite {
    /// Every suite, in the order the runtime lists them.
    pub const ALL: [CipherSuite; 9] = [
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
        CipherSuite::TLS_AES_128_GCM_SHA256,
        CipherSuite::TLS_AES_256_GCM_SHA384,
        CipherSuite::TLS_CHACHA20_POLY1305_SHA256,
    ];

    /// The Go name the plan writes.
    pub fn go_name(self) -> &'static str {
        match self {
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => {
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"
            }
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => {
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
            }
            CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
            }
            CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => {
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            }
            CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => {
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"
            }
            CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => {
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
            }
            CipherSuite::TLS_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
            CipherSuite::TLS_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
            CipherSuite::TLS_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        }
    }

    /// The suite a Go name (current or older spelling) stands for.
    pub fn from_go_name(name: &str) -> Option<CipherSuite> {
        match name {
            "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
                Some(CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256)
            }
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
                Some(CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256)
            }
            _ => CipherSuite::ALL.into_iter().find(|c| c.go_name() == name),
        }
    }

    /// Every name [`CipherSuite::from_go_name`] accepts.
    pub fn go_names() -> impl Iterator<Item = &'static str> {
        CipherSuite::ALL
            .into_iter()
            .map(CipherSuite::go_name)
            .chain([
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
            ])
    }
}

/// Traefik's `clientAuthType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum ClientAuthType {
    /// No client certificate is asked for.
    NoClientCert,
    /// Asked for, not required, not checked against a CA (the key is still proven).
    RequestClientCert,
    /// Required, not checked against a CA (the key is still proven).
    RequireAnyClientCert,
    /// Verified when given.
    VerifyClientCertIfGiven,
    /// Required and verified.
    RequireAndVerifyClientCert,
}

impl ClientAuthType {
    /// Every type, as Traefik names them.
    pub const ALL: [ClientAuthType; 5] = [
        ClientAuthType::NoClientCert,
        ClientAuthType::RequestClientCert,
        ClientAuthType::RequireAnyClientCert,
        ClientAuthType::VerifyClientCertIfGiven,
        ClientAuthType::RequireAndVerifyClientCert,
    ];

    /// Traefik's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuthType::NoClientCert => "NoClientCert",
            ClientAuthType::RequestClientCert => "RequestClientCert",
            ClientAuthType::RequireAnyClientCert => "RequireAnyClientCert",
            ClientAuthType::VerifyClientCertIfGiven => "VerifyClientCertIfGiven",
            ClientAuthType::RequireAndVerifyClientCert => "RequireAndVerifyClientCert",
        }
    }

    /// The type Traefik's name stands for.
    pub fn from_name(name: &str) -> Option<ClientAuthType> {
        ClientAuthType::ALL.into_iter().find(|t| t.as_str() == name)
    }
}

/// The runtime's log level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Everything.
    Debug,
    /// Start, stop, reloads, state changes.
    Info,
    /// Problems the runtime works around.
    Warn,
    /// Problems it cannot.
    Error,
}

/// How the runtime writes its log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One human-readable line per event.
    Common,
    /// One JSON object per line.
    Json,
}

/// How the access log writes a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum AccessLogFormat {
    /// Traefik's CLF line (with request count, router, server URL and duration).
    #[serde(rename = "common")]
    Common,
    /// CLF without Traefik's extra fields.
    #[serde(rename = "genericCLF")]
    GenericClf,
    /// One JSON object per line, Traefik's field names.
    #[serde(rename = "json")]
    Json,
}

/// Whether a JSON access-log record carries a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum FieldMode {
    /// Written.
    Keep,
    /// Left out.
    Drop,
}

/// Whether a JSON access-log record carries a request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HeaderMode {
    /// Written with its value.
    Keep,
    /// Left out.
    Drop,
    /// Written as `REDACTED`.
    Redact,
}

macro_rules! display_as {
    ($($t:ty => $f:ident),* $(,)?) => {
        $(impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.$f())
            }
        })*
    };
}

display_as!(
    AcmeKeyType => as_str,
    RuleSyntax => as_str,
    TlsVersion => as_str,
    CipherSuite => go_name,
    ClientAuthType => as_str,
);

/// Where a router sends what its chain lets through: a key into [`Plan::services`], or a service
/// Traefik serves itself. Written as Traefik writes it, `name` or `name@internal`; an internal
/// name outside [`InternalService`] is refused when the plan is read.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ServiceRef {
    /// A service of the plan, by key.
    Service(String),
    /// One of Traefik's internal services.
    Internal(InternalService),
}

/// Traefik's internal services.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InternalService {
    /// `api@internal`: the API.
    Api,
    /// `dashboard@internal`: the dashboard.
    Dashboard,
    /// `ping@internal`: `OK`.
    Ping,
    /// `prometheus@internal`: the metrics.
    Prometheus,
    /// `noop@internal`: answers nothing of its own (Traefik uses it for redirect routers).
    Noop,
    /// `rest@internal`: Traefik's REST provider (refused by the compiler).
    Rest,
}

impl InternalService {
    /// Every internal service.
    pub const ALL: [InternalService; 6] = [
        InternalService::Api,
        InternalService::Dashboard,
        InternalService::Ping,
        InternalService::Prometheus,
        InternalService::Noop,
        InternalService::Rest,
    ];

    /// The name before `@internal`.
    pub fn name(self) -> &'static str {
        match self {
            InternalService::Api => "api",
            InternalService::Dashboard => "dashboard",
            InternalService::Ping => "ping",
            InternalService::Prometheus => "prometheus",
            InternalService::Noop => "noop",
            InternalService::Rest => "rest",
        }
    }
}

impl ServiceRef {
    /// Reads `name` or `name@internal`; `None` for an internal name Traefik does not have.
    pub fn parse(written: &str) -> Option<ServiceRef> {
        match written.strip_suffix(INTERNAL_SERVICE_SUFFIX) {
            Some(name) => InternalService::ALL
                .into_iter()
                .find(|s| s.name() == name)
                .map(ServiceRef::Internal),
            None => Some(ServiceRef::Service(written.to_owned())),
        }
    }

    /// The plan's service key, when it is one.
    pub fn service(&self) -> Option<&str> {
        match self {
            ServiceRef::Service(s) => Some(s),
            ServiceRef::Internal(_) => None,
        }
    }
}

impl From<&str> for ServiceRef {
    /// For plans built in code: an unknown `name@internal` becomes a service key, which
    /// [`Plan::check_consistency`] then refuses (no such service).
    fn from(written: &str) -> ServiceRef {
        ServiceRef::parse(written).unwrap_or_else(|| ServiceRef::Service(written.to_owned()))
    }
}

impl std::fmt::Display for ServiceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServiceRef::Service(s) => f.write_str(s),
            ServiceRef::Internal(i) => write!(f, "{}{INTERNAL_SERVICE_SUFFIX}", i.name()),
        }
    }
}

impl PartialEq<str> for ServiceRef {
    fn eq(&self, other: &str) -> bool {
        match self {
            ServiceRef::Service(s) => s == other,
            ServiceRef::Internal(i) => other
                .strip_suffix(INTERNAL_SERVICE_SUFFIX)
                .is_some_and(|n| n == i.name()),
        }
    }
}

impl PartialEq<&str> for ServiceRef {
    fn eq(&self, other: &&str) -> bool {
        self == *other
    }
}

impl Serialize for ServiceRef {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ServiceRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let written = String::deserialize(deserializer)?;
        ServiceRef::parse(&written).ok_or_else(|| {
            serde::de::Error::custom(format!("`{written}` is not an internal service"))
        })
    }
}

#[cfg(feature = "schema")]
impl schemars::JsonSchema for ServiceRef {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ServiceRef".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A service key, or `api@internal`, `dashboard@internal`, `ping@internal`, `prometheus@internal`, `noop@internal`, `rest@internal`.",
            "type": "string"
        })
    }
}

/// An inclusive range of HTTP status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct StatusRange {
    /// Lowest status in the range.
    pub from: u16,
    /// Highest status in the range.
    pub to: u16,
}

impl std::fmt::Display for StatusRange {
    /// As Traefik writes it: `404` or `500-599`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.from == self.to {
            write!(f, "{}", self.from)
        } else {
            write!(f, "{}-{}", self.from, self.to)
        }
    }
}

/// Prometheus metrics (Traefik's `metrics.prometheus`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct Metrics {
    /// Entry point (key into [`Plan::entrypoints`]) serving `GET /metrics`, unless
    /// `manual_routing`.
    pub entrypoint: String,
    /// Upper bounds of the request-duration histogram buckets, in microseconds, ascending.
    pub buckets_us: Vec<u64>,
    /// Per-entry-point request metrics.
    pub entrypoint_labels: bool,
    /// Per-router request metrics.
    pub router_labels: bool,
    /// Per-service request metrics.
    pub service_labels: bool,
    /// Serve metrics only through routers to `prometheus@internal`.
    pub manual_routing: bool,
    /// `headerLabels`: extra labels of the `*_requests_total` counters, each the value of a
    /// request field (empty when absent), sorted by label; left out when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub header_labels: Vec<HeaderLabel>,
    /// Requests answered by the proxy's internal services are counted too (`addInternals`).
    pub add_internals: bool,
}

/// One `headerLabels` entry: a label and the request field whose value it takes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct HeaderLabel {
    /// The Prometheus label name.
    pub label: String,
    /// The request field, as written (matched without regard to case).
    pub header: String,
}

/// Suffix of the internal services a router may name instead of a key of [`Plan::services`].
pub const INTERNAL_SERVICE_SUFFIX: &str = "@internal";

impl Router {
    /// Order of routers on an entry point: priority descending, then key ascending (bytewise).
    pub fn matching_order(a: (&str, &Router), b: (&str, &Router)) -> std::cmp::Ordering {
        b.1.priority
            .cmp(&a.1.priority)
            .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
    }
}

impl Plan {
    /// For each child router, the routers listing it among their `children`.
    pub fn router_parents(&self) -> BTreeMap<&str, Vec<&str>> {
        let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for (key, r) in &self.routers {
            for c in &r.children {
                out.entry(c.as_str()).or_default().push(key.as_str());
            }
        }
        out
    }

    /// A router on a cycle of `children` links, if any (the runtime would route forever).
    fn router_cycle(&self) -> Option<&str> {
        // 0: not seen, 1: on the current path, 2: done.
        let mut mark: BTreeMap<&str, u8> = BTreeMap::new();
        fn visit<'p>(
            plan: &'p Plan,
            key: &'p str,
            mark: &mut BTreeMap<&'p str, u8>,
        ) -> Option<&'p str> {
            match mark.get(key) {
                Some(1) => return Some(key),
                Some(_) => return None,
                None => {}
            }
            mark.insert(key, 1);
            if let Some(r) = plan.routers.get(key) {
                for c in &r.children {
                    if let Some(found) = visit(plan, c, mark) {
                        return Some(found);
                    }
                }
            }
            mark.insert(key, 2);
            None
        }
        for key in self.routers.keys() {
            if let Some(found) = visit(self, key, &mut mark) {
                return Some(found);
            }
        }
        None
    }

    /// Fills every entry point's [`EntryPoint::routers`] from the routers' `entrypoints`, in
    /// matching order ([`Router::matching_order`]). The compiler calls this before [`Plan::seal`].
    pub fn index_entrypoint_routers(&mut self) {
        let mut lists = self.entrypoint_router_lists();
        for (name, ep) in &mut self.entrypoints {
            ep.routers = lists.remove(name).unwrap_or_default();
        }
    }

    /// For each entry point named by some router, the keys of the routers on it in matching order.
    fn entrypoint_router_lists(&self) -> BTreeMap<String, Vec<String>> {
        let mut lists: BTreeMap<&str, Vec<(&str, &Router)>> = BTreeMap::new();
        for (key, router) in &self.routers {
            let eps: BTreeSet<&str> = router.entrypoints.iter().map(String::as_str).collect();
            for ep in eps {
                lists.entry(ep).or_default().push((key.as_str(), router));
            }
        }
        lists
            .into_iter()
            .map(|(ep, mut list)| {
                list.sort_by(|a, b| Router::matching_order(*a, *b));
                (
                    ep.to_owned(),
                    list.into_iter().map(|(k, _)| k.to_owned()).collect(),
                )
            })
            .collect()
    }

    /// Checks that the plan is self-consistent, so the runtime can follow every reference:
    ///
    /// - router entry points, middlewares, services and TLS options exist (a router's service may
    ///   also be an internal service, `name@internal`);
    /// - each entry point's `routers` lists exactly the routers naming it, in matching order;
    /// - entry point TLS options, API and ping entry points, API middlewares exist;
    /// - services referenced by weighted, failover and mirroring services exist and form no cycle;
    /// - load balancers' servers transports exist;
    /// - mirror percentages are at most 100.
    ///
    /// [`crate::load_verified`] runs this after checking the hash.
    pub fn check_consistency(&self) -> Result<(), PlanError> {
        let bad = |pointer: String, message: String| PlanError::Inconsistent { pointer, message };
        let need = |map_has: bool, pointer: String, what: &str, name: &str| {
            if map_has {
                Ok(())
            } else {
                Err(bad(pointer, format!("{what} `{name}` is not defined")))
            }
        };
        let parents = self.router_parents();
        for (key, router) in &self.routers {
            let at = format!("/routers/{}", pointer_escape(key));
            let child = parents.contains_key(key.as_str());
            match (router.entrypoints.is_empty(), child) {
                (true, false) => {
                    return Err(bad(
                        format!("{at}/entrypoints"),
                        "a router needs at least one entry point, or a parent router".into(),
                    ));
                }
                (false, true) => {
                    return Err(bad(
                        format!("{at}/entrypoints"),
                        "a child router has no entry points of its own".into(),
                    ));
                }
                _ => {}
            }
            if child && router.tls.is_some() {
                return Err(bad(
                    format!("{at}/tls"),
                    "a child router has no TLS of its own".into(),
                ));
            }
            match (&router.service, router.children.is_empty()) {
                (Some(_), false) => {
                    return Err(bad(
                        format!("{at}/children"),
                        "a router has a service or child routers, not both".into(),
                    ));
                }
                (None, true) => {
                    return Err(bad(
                        format!("{at}/service"),
                        "a router needs a service or child routers".into(),
                    ));
                }
                _ => {}
            }
            for (i, c) in router.children.iter().enumerate() {
                need(
                    self.routers.contains_key(c),
                    format!("{at}/children/{i}"),
                    "router",
                    c,
                )?;
            }
            let mut order: Vec<(&str, &Router)> = router
                .children
                .iter()
                .filter_map(|c| self.routers.get_key_value(c))
                .map(|(k, r)| (k.as_str(), r))
                .collect();
            order.sort_by(|a, b| Router::matching_order(*a, *b));
            order.dedup_by(|a, b| a.0 == b.0);
            if !order
                .iter()
                .map(|(k, _)| *k)
                .eq(router.children.iter().map(String::as_str))
            {
                return Err(bad(
                    format!("{at}/children"),
                    "must list each child router once, priority descending then key ascending"
                        .into(),
                ));
            }
            for (i, ep) in router.entrypoints.iter().enumerate() {
                need(
                    self.entrypoints.contains_key(ep),
                    format!("{at}/entrypoints/{i}"),
                    "entry point",
                    ep,
                )?;
            }
            for (i, mw) in router.middlewares.iter().enumerate() {
                need(
                    self.middlewares.contains_key(mw),
                    format!("{at}/middlewares/{i}"),
                    "middleware",
                    mw,
                )?;
            }
            if let Some(service) = &router.service {
                need(
                    service
                        .service()
                        .is_none_or(|s| self.services.contains_key(s)),
                    format!("{at}/service"),
                    "service",
                    &service.to_string(),
                )?;
            }
            if let Some(tls) = &router.tls {
                need(
                    self.tls.options.contains_key(&tls.options),
                    format!("{at}/tls/options"),
                    "TLS options",
                    &tls.options,
                )?;
                if let Some(res) = &tls.cert_resolver {
                    need(
                        self.certificate_resolvers.contains_key(res),
                        format!("{at}/tls/cert_resolver"),
                        "certificate resolver",
                        res,
                    )?;
                }
            }
        }

        if let Some(key) = self.router_cycle() {
            return Err(bad(
                format!("/routers/{}/children", pointer_escape(key)),
                "child routers form a cycle".into(),
            ));
        }

        for (name, res) in &self.certificate_resolvers {
            let at = format!("/certificate_resolvers/{}", pointer_escape(name));
            if let Some(h) = &res.http_challenge {
                need(
                    self.entrypoints.contains_key(&h.entrypoint),
                    format!("{at}/http_challenge/entrypoint"),
                    "entry point",
                    &h.entrypoint,
                )?;
            }
            if res.http_challenge.is_none()
                && res.tls_challenge.is_none()
                && res.dns_challenge.is_none()
            {
                return Err(bad(
                    at,
                    "names no challenge (http_challenge, tls_challenge or dns_challenge)".into(),
                ));
            }
            for (i, d) in res.domains.iter().enumerate() {
                for (j, r) in d.routers.iter().enumerate() {
                    need(
                        self.routers.contains_key(r),
                        format!("{at}/domains/{i}/routers/{j}"),
                        "router",
                        r,
                    )?;
                }
            }
        }

        let expected = self.entrypoint_router_lists();
        for (name, ep) in &self.entrypoints {
            let at = format!("/entrypoints/{}", pointer_escape(name));
            if let Some(tls) = &ep.tls {
                need(
                    self.tls.options.contains_key(&tls.options),
                    format!("{at}/tls/options"),
                    "TLS options",
                    &tls.options,
                )?;
            }
            let want = expected.get(name).map(Vec::as_slice).unwrap_or_default();
            if ep.routers != want {
                return Err(bad(
                    format!("{at}/routers"),
                    format!(
                        "must list exactly the routers on this entry point, priority descending then key ascending: {want:?}"
                    ),
                ));
            }
        }

        if let Some(api) = &self.api {
            need(
                self.entrypoints.contains_key(&api.entrypoint),
                "/api/entrypoint".into(),
                "entry point",
                &api.entrypoint,
            )?;
            for (i, mw) in api.middlewares.iter().enumerate() {
                need(
                    self.middlewares.contains_key(mw),
                    format!("/api/middlewares/{i}"),
                    "middleware",
                    mw,
                )?;
            }
        }
        if let Some(ping) = &self.ping {
            need(
                self.entrypoints.contains_key(&ping.entrypoint),
                "/ping/entrypoint".into(),
                "entry point",
                &ping.entrypoint,
            )?;
        }
        if let Some(m) = &self.metrics {
            need(
                self.entrypoints.contains_key(&m.entrypoint),
                "/metrics/entrypoint".into(),
                "entry point",
                &m.entrypoint,
            )?;
        }

        for (key, service) in &self.services {
            for (i, mw) in service.middlewares.iter().enumerate() {
                need(
                    self.middlewares.contains_key(mw),
                    format!("/services/{}/middlewares/{i}", pointer_escape(key)),
                    "middleware",
                    mw,
                )?;
            }
            let at = format!("/services/{}/kind", pointer_escape(key));
            for (path, child) in service.kind.children() {
                need(
                    self.services.contains_key(child),
                    format!("{at}/{path}"),
                    "service",
                    child,
                )?;
            }
            if let ServiceKind::LoadBalancer(lb) = &service.kind {
                let transport = lb
                    .servers_transport
                    .as_deref()
                    .unwrap_or(DEFAULT_SERVERS_TRANSPORT);
                need(
                    self.servers_transports.contains_key(transport),
                    format!("{at}/load_balancer/servers_transport"),
                    "servers transport",
                    transport,
                )?;
            }
            if let ServiceKind::Mirroring(m) = &service.kind {
                for (i, mirror) in m.mirrors.iter().enumerate() {
                    if mirror.percent > 100 {
                        return Err(bad(
                            format!("{at}/mirroring/mirrors/{i}/percent"),
                            format!("percent {} is above 100", mirror.percent),
                        ));
                    }
                }
            }
        }
        self.check_service_cycles()
    }

    /// Rejects services that reach themselves through weighted, failover or mirroring references
    /// (the runtime would loop forever picking a server).
    fn check_service_cycles(&self) -> Result<(), PlanError> {
        #[derive(Clone, Copy, PartialEq)]
        enum Mark {
            Active,
            Done,
        }
        let mut marks: BTreeMap<&str, Mark> = BTreeMap::new();
        for start in self.services.keys() {
            if marks.contains_key(start.as_str()) {
                continue;
            }
            // Iterative depth-first search: (service, its children, next child index).
            let mut stack: Vec<(&str, Vec<&str>, usize)> = Vec::new();
            let children = |name: &str| -> Vec<&str> {
                self.services
                    .get(name)
                    .map(|s| s.kind.children().into_iter().map(|(_, c)| c).collect())
                    .unwrap_or_default()
            };
            marks.insert(start, Mark::Active);
            stack.push((start, children(start), 0));
            while let Some((name, kids, next)) = stack.last_mut() {
                let Some(child) = kids.get(*next).copied() else {
                    marks.insert(*name, Mark::Done);
                    stack.pop();
                    continue;
                };
                *next += 1;
                match marks.get(child) {
                    Some(Mark::Active) => {
                        return Err(PlanError::Inconsistent {
                            pointer: format!("/services/{}", pointer_escape(child)),
                            message: format!(
                                "service `{child}` refers to itself through other services"
                            ),
                        });
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(child, Mark::Active);
                        let grandchildren = children(child);
                        stack.push((child, grandchildren, 0));
                    }
                }
            }
        }
        Ok(())
    }

    /// A minimal valid plan for tests and docs: entry point `web` on `:80`, router `whoami` for
    /// ``Host(`whoami.example.com`)``, and load balancer `whoami` over two servers with a health
    /// check. It is sealed and passes [`Plan::check_consistency`].
    pub fn example() -> Plan {
        let source = |file: &str, line: u32, column: u32| Provenance {
            file: file.into(),
            line,
            column,
        };
        let files = vec![
            InputFile {
                path: "dynamic/whoami.yml".into(),
                sha256: "9f2c1a4be8d35e6a0c7b1f4d2e8a6c3b5d7f9e1a2c4b6d8f0e2a4c6b8d0f2e4a".into(),
            },
            InputFile {
                path: "traefik.yml".into(),
                sha256: "4b7e0d2f6a8c1e3b5d9f7a2c4e6b8d0f1a3c5e7b9d2f4a6c8e0b2d4f6a8c0e1b".into(),
            },
        ];
        let mut inputs = Inputs {
            digest: String::new(),
            files,
            vars: BTreeMap::new(),
        };
        // Cannot fail: the inputs hold strings only.
        inputs.digest = inputs.compute_digest().unwrap_or_default();

        let rule = "Host(`whoami.example.com`)";
        let router = Router {
            entrypoints: vec!["web".into()],
            rule: rule.into(),
            rule_syntax: RuleSyntax::V3,
            matcher: Rule::Match(Matcher::Host {
                host: "whoami.example.com".into(),
            }),
            priority: rule.len() as i64,
            middlewares: vec![],
            service: Some("whoami".into()),
            children: Vec::new(),
            tls: None,
            observability: None,
            source: source("dynamic/whoami.yml", 3, 5),
        };
        let service = Service {
            middlewares: Vec::new(),
            source: source("dynamic/whoami.yml", 9, 5),
            kind: ServiceKind::LoadBalancer(LoadBalancer {
                servers: vec![
                    Server {
                        url: "http://10.0.0.11:8080".into(),
                        weight: 1,
                        preserve_path: false,
                    },
                    Server {
                        url: "http://10.0.0.12:8080".into(),
                        weight: 1,
                        preserve_path: false,
                    },
                ],
                pass_host_header: true,
                health_check: Some(HealthCheck {
                    path: "/health".into(),
                    scheme: None,
                    port: None,
                    hostname: None,
                    method: "GET".into(),
                    headers: BTreeMap::new(),
                    status: None,
                    interval_ms: 30_000,
                    unhealthy_interval_ms: 30_000,
                    timeout_ms: 5_000,
                    follow_redirects: true,
                    down_reprobe_interval_ms: 250,
                    probe_before_traffic: true,
                    hold_ms: 0,
                    close_tunnels_after_ms: Some(500),
                    mode: Default::default(),
                }),
                servers_transport: None,
                sticky: None,
                strategy: Strategy::Wrr,
            }),
        };
        let entrypoint = EntryPoint {
            address: ":80".into(),
            port: 80,
            host: None,
            tls: None,
            redirect: None,
            forwarded_headers: ForwardedHeaders {
                insecure: false,
                trusted_ips: vec![],
            },
            proxy_protocol: None,
            http3: None,
            timeouts: Timeouts {
                read_ms: 60_000,
                write_ms: 0,
                idle_ms: 180_000,
                header_read_ms: 0,
                grace_ms: 10_000,
                request_accept_grace_ms: 0,
            },
            max_header_bytes: 1_048_576,
            connections: ConnectionLimits {
                max_requests: 0,
                max_time_ms: 0,
                h2_max_concurrent_streams: 250,
                h2_max_decoder_header_table_size: 4096,
            },
            sanitize_path: true,
            encoded_characters: EncodedCharacters { denied: vec![] },
            observability: Observability {
                access_logs: true,
                metrics: true,
            },
            acme_bypass: false,
            query_semicolons: QuerySemicolons::Separate,
            underscore_headers: UnderscoreHeaders::Keep,
            routers: vec![],
            source: source("traefik.yml", 2, 3),
        };
        let mut plan = Plan {
            plan_version: PLAN_VERSION,
            hash: String::new(),
            profile: "dev".into(),
            inputs,
            entrypoints: BTreeMap::from([("web".to_owned(), entrypoint)]),
            routers: BTreeMap::from([("whoami".to_owned(), router)]),
            services: BTreeMap::from([("whoami".to_owned(), service)]),
            middlewares: BTreeMap::new(),
            tls: Tls {
                certificates: vec![],
                default_certificate: None,
                options: BTreeMap::from([(
                    "default".to_owned(),
                    TlsOptions {
                        min_version: TlsVersion::Tls12,
                        max_version: None,
                        cipher_suites: vec![],
                        alpn_protocols: vec!["h2".into(), "http/1.1".into()],
                        sni_strict: false,
                        client_auth: None,
                        curve_preferences: Vec::new(),
                        session_resumption: true,
                    },
                )]),
            },
            certificate_resolvers: BTreeMap::new(),
            api: None,
            ping: None,
            servers_transports: BTreeMap::from([(
                DEFAULT_SERVERS_TRANSPORT.to_owned(),
                ServersTransport::default(),
            )]),
            log: Log {
                level: LogLevel::Info,
                format: LogFormat::Common,
            },
            access_log: None,
            metrics: None,
            ocsp: None,
        };
        plan.index_entrypoint_routers();
        // Cannot fail: the plan holds integers only, every map has string keys, and it is shallow.
        let _ = plan.seal();
        plan
    }
}

impl ServiceKind {
    /// The services this one forwards to, with their JSON pointer below `kind`.
    pub fn children(&self) -> Vec<(String, &str)> {
        match self {
            ServiceKind::LoadBalancer(_) => vec![],
            ServiceKind::Weighted(w) => w
                .services
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("weighted/services/{i}/service"), r.service.as_str()))
                .collect(),
            ServiceKind::HighestRandomWeight(h) => h
                .services
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    (
                        format!("highest_random_weight/services/{i}/service"),
                        r.service.as_str(),
                    )
                })
                .collect(),
            ServiceKind::Failover(f) => vec![
                ("failover/service".into(), f.service.as_str()),
                ("failover/fallback".into(), f.fallback.as_str()),
            ],
            ServiceKind::Mirroring(m) => {
                std::iter::once(("mirroring/service".into(), m.service.as_str()))
                    .chain(m.mirrors.iter().enumerate().map(|(i, r)| {
                        (format!("mirroring/mirrors/{i}/service"), r.service.as_str())
                    }))
                    .collect()
            }
        }
    }
}

impl Inputs {
    /// Builds the inputs record: files sorted by path (bytewise), digest computed.
    pub fn new(
        mut files: Vec<InputFile>,
        vars: BTreeMap<String, String>,
    ) -> Result<Inputs, PlanError> {
        files.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        let mut inputs = Inputs {
            digest: String::new(),
            files,
            vars,
        };
        inputs.digest = inputs.compute_digest()?;
        Ok(inputs)
    }

    /// `sha256:` + hex SHA-256 of the canonical JSON of this object without `digest`, i.e. of
    /// `{"files":[{"path":…,"sha256":…},…],"vars":{…}}`.
    pub fn compute_digest(&self) -> Result<String, PlanError> {
        let mut value =
            serde_json::to_value(self).map_err(|e| PlanError::Invalid(e.to_string()))?;
        if let serde_json::Value::Object(obj) = &mut value {
            obj.remove("digest");
        }
        crate::canonical::sha256_of(&value)
    }
}

/// Go's `http.CanonicalHeaderKey`: the first letter and each after `-` upper case, the rest
/// lower case; a name with a byte outside a token is left as it is. The compiler writes field
/// names of the plan this way, and the runtime matches expressions Traefik applies to canonical
/// names (`forwardAuth`'s `authResponseHeadersRegex`) against it.
pub fn go_canonical_header(name: &str) -> String {
    let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !name.bytes().all(token) {
        return name.to_owned();
    }
    let mut upper = true;
    name.chars()
        .map(|c| {
            let out = if upper {
                c.to_ascii_uppercase()
            } else {
                c.to_ascii_lowercase()
            };
            upper = c == '-';
            out
        })
        .collect()
}

/// Milliseconds the way Go's `time.Duration.String()` prints them (`0s`, `250ms`, `5s`, `1.5s`,
/// `1m30s`, `1h0m0s`): how Traefik's API and `bridgectl explain` show plan durations.
pub fn go_duration(ms: u64) -> String {
    if ms == 0 {
        return "0s".to_owned();
    }
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let hours = ms / 3_600_000;
    let minutes = ms / 60_000 % 60;
    let millis = ms % 60_000;
    let mut seconds = (millis / 1000).to_string();
    let frac = millis % 1000;
    if frac != 0 {
        let digits = format!("{frac:03}");
        seconds.push('.');
        seconds.push_str(digits.trim_end_matches('0'));
    }
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}s")
    } else {
        format!("{seconds}s")
    }
}

/// Escapes one JSON Pointer reference token (RFC 6901): `~` → `~0`, `/` → `~1`.
pub fn pointer_escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(priority: i64, entrypoints: &[&str]) -> Router {
        let mut r = Plan::example().routers["whoami"].clone();
        r.priority = priority;
        r.entrypoints = entrypoints.iter().map(|s| (*s).to_owned()).collect();
        r
    }

    #[test]
    fn example_is_sealed_and_consistent() {
        let plan = Plan::example();
        assert_eq!(plan.hash, plan.content_hash().unwrap());
        assert_eq!(plan.inputs.digest, plan.inputs.compute_digest().unwrap());
        plan.check_consistency().unwrap();
        assert_eq!(plan.entrypoints["web"].routers, ["whoami"]);
    }

    #[test]
    fn closed_choices_read_traefiks_names_and_refuse_others() {
        for name in CipherSuite::go_names() {
            let suite = CipherSuite::from_go_name(name).unwrap();
            let read: CipherSuite = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(read, suite, "{name}");
        }
        // The older Go spelling is read, the current one written.
        let read: CipherSuite =
            serde_json::from_value(serde_json::json!("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305"))
                .unwrap();
        assert_eq!(
            serde_json::to_value(read).unwrap(),
            "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
        );
        for bad in ["TLS_RSA_WITH_AES_128_CBC_SHA", "tls_aes_128_gcm_sha256"] {
            assert!(serde_json::from_value::<CipherSuite>(serde_json::json!(bad)).is_err());
        }
        assert_eq!(
            TlsVersion::from_go_name("VersionTLS13"),
            Some(TlsVersion::Tls13)
        );
        assert_eq!(serde_json::to_value(TlsVersion::Tls12).unwrap(), "1.2");
        assert!(serde_json::from_value::<TlsVersion>(serde_json::json!("1.4")).is_err());
        for t in ClientAuthType::ALL {
            assert_eq!(ClientAuthType::from_name(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).unwrap(), t.as_str());
        }
        assert_eq!(
            serde_json::to_value(AccessLogFormat::GenericClf).unwrap(),
            "genericCLF"
        );
        assert_eq!(serde_json::to_value(RuleSyntax::V2).unwrap(), "v2");
        assert_eq!(serde_json::to_value(HeaderMode::Redact).unwrap(), "redact");
        for internal in InternalService::ALL {
            let written = format!("{}@internal", internal.name());
            let read: ServiceRef = serde_json::from_value(serde_json::json!(written)).unwrap();
            assert_eq!(read, ServiceRef::Internal(internal));
            assert_eq!(serde_json::to_value(&read).unwrap(), written.as_str());
        }
        let read: ServiceRef = serde_json::from_value(serde_json::json!("whoami")).unwrap();
        assert_eq!(read, ServiceRef::Service("whoami".into()));
        let err =
            serde_json::from_value::<ServiceRef>(serde_json::json!("bogus@internal")).unwrap_err();
        assert!(err.to_string().contains("not an internal service"), "{err}");
    }

    #[test]
    fn entrypoint_routers_are_ordered_by_priority_then_key() {
        let mut plan = Plan::example();
        let mut api = plan.entrypoints["web"].clone();
        api.address = ":8080".into();
        api.port = 8080;
        plan.entrypoints.insert("api".into(), api);
        plan.routers.insert("b".into(), router(10, &["web"]));
        plan.routers
            .insert("a".into(), router(10, &["web", "api", "web"]));
        plan.routers.insert("Z".into(), router(10, &["web"]));
        plan.routers.insert("low".into(), router(-5, &["web"]));
        plan.routers.insert("high".into(), router(1000, &["web"]));
        plan.index_entrypoint_routers();
        assert_eq!(
            plan.entrypoints["web"].routers,
            ["high", "whoami", "Z", "a", "b", "low"]
        );
        assert_eq!(plan.entrypoints["api"].routers, ["a"]);
        plan.check_consistency().unwrap();

        plan.entrypoints.get_mut("web").unwrap().routers.swap(2, 3);
        assert!(matches!(
            plan.check_consistency(),
            Err(PlanError::Inconsistent { pointer, .. }) if pointer == "/entrypoints/web/routers"
        ));
    }

    #[test]
    fn references_are_checked() {
        let mut plan = Plan::example();
        plan.routers.get_mut("whoami").unwrap().middlewares = vec!["nope".into()];
        assert!(matches!(
            plan.check_consistency(),
            Err(PlanError::Inconsistent { pointer, .. }) if pointer == "/routers/whoami/middlewares/0"
        ));

        let mut plan = Plan::example();
        plan.routers.get_mut("whoami").unwrap().tls = Some(RouterTls {
            options: "strict".into(),
            cert_resolver: None,
        });
        assert!(plan.check_consistency().is_err());

        let mut plan = Plan::example();
        plan.ping = Some(Ping {
            entrypoint: "traefik".into(),
            manual_routing: false,
            terminating_status_code: 503,
        });
        assert!(matches!(
            plan.check_consistency(),
            Err(PlanError::Inconsistent { pointer, .. }) if pointer == "/ping/entrypoint"
        ));
    }

    #[test]
    fn inputs_are_sorted_and_digested() {
        let file = |p: &str| InputFile {
            path: p.into(),
            sha256: "0".repeat(64),
        };
        let a = Inputs::new(vec![file("b.yml"), file("a.yml")], BTreeMap::new()).unwrap();
        let b = Inputs::new(vec![file("a.yml"), file("b.yml")], BTreeMap::new()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a.files[0].path, "a.yml");
        let c = Inputs::new(
            vec![file("a.yml"), file("b.yml")],
            BTreeMap::from([("domain".to_owned(), "example.com".to_owned())]),
        )
        .unwrap();
        assert_ne!(a.digest, c.digest);
        let expected = crate::canonical::sha256_of(&serde_json::json!({
            "files": [{"path": "a.yml", "sha256": "0".repeat(64)}, {"path": "b.yml", "sha256": "0".repeat(64)}],
            "vars": {"domain": "example.com"}
        }))
        .unwrap();
        assert_eq!(c.digest, expected);
    }

    #[test]
    fn service_and_middleware_shapes() {
        let svc = &Plan::example().services["whoami"];
        let v = serde_json::to_value(svc).unwrap();
        assert!(v["kind"]["load_balancer"]["servers"].is_array());
        assert_eq!(v["source"]["file"], "dynamic/whoami.yml");
        let mw = Middleware {
            source: svc.source.clone(),
            kind: MiddlewareKind::IpAllowList(IpAllowList {
                source_range: vec!["10.0.0.0/8".into()],
                reject_status_code: 403,
                depth: 0,
                excluded_ips: vec![],
                ipv6_subnet: None,
            }),
        };
        let v = serde_json::to_value(&mw).unwrap();
        assert_eq!(v["kind"]["ip_allow_list"]["reject_status_code"], 403);
        let back: Middleware = serde_json::from_value(v).unwrap();
        assert_eq!(back, mw);
        let err = serde_json::from_str::<Middleware>(
            r#"{"source":{"file":"a","line":1,"column":1},"kind":{"chain":{}}}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("unknown variant `chain`"), "{err}");
    }

    const EXAMPLE_START: &str = "<!-- example-plan:start -->\n";
    const EXAMPLE_END: &str = "<!-- example-plan:end -->";

    /// `docs/plan.md` shows [`Plan::example`] exactly as the compiler would write it (so its hash
    /// verifies). Run with `BRIDGECTL_UPDATE_DOCS=1` to rewrite the block.
    #[test]
    fn docs_example_is_the_example_plan() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/plan.md");
        let doc = std::fs::read_to_string(&path).unwrap();
        let start = doc.find(EXAMPLE_START).expect("start marker") + EXAMPLE_START.len();
        let end = doc.find(EXAMPLE_END).expect("end marker");
        let want = format!(
            "```json\n{}```\n",
            Plan::example().to_file_string().unwrap()
        );
        if doc[start..end] != want && std::env::var_os("BRIDGECTL_UPDATE_DOCS").is_some() {
            let updated = format!("{}{want}{}", &doc[..start], &doc[end..]);
            std::fs::write(&path, updated).unwrap();
            return;
        }
        assert!(
            doc[start..end] == want,
            "the example in docs/plan.md is out of date; run `BRIDGECTL_UPDATE_DOCS=1 cargo test -p bridge-plan docs_example`"
        );
        // The block verifies as a plan.
        let block = &want["```json\n".len()..want.len() - "```\n".len()];
        assert_eq!(
            crate::load_verified(block.as_bytes()).unwrap(),
            Plan::example()
        );
    }
}
