//! Traefik v3 static configuration (`traefik.yml`) as Rust types.
//!
//! Every key Traefik v3.7 accepts deserializes here; the parts bridgectl serves (entry points, API,
//! ping, file provider, log, access log, Prometheus, servers transport, core) are fully typed, the rest
//! are open objects carrying an `x-bridgectl` marker. Nothing is defaulted by serde: an absent key stays
//! `None`, and Traefik's defaults are the `DEFAULT_*` constants next to the types that use them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::common::Duration;

// ------------------------------------------------------------------------------------------------
// Root
// ------------------------------------------------------------------------------------------------

/// Name of Traefik's internal entry point (API with `insecure`, ping, Prometheus).
pub const DEFAULT_INTERNAL_ENTRYPOINT_NAME: &str = "traefik";
/// Address of the internal `traefik` entry point when Traefik creates it.
pub const DEFAULT_INTERNAL_ENTRYPOINT_ADDRESS: &str = ":8080";
/// Name of the entry point Traefik creates when none is defined.
pub const DEFAULT_ENTRYPOINT_NAME: &str = "http";
/// Address of the entry point Traefik creates when none is defined.
pub const DEFAULT_ENTRYPOINT_ADDRESS: &str = ":80";

/// Traefik v3 static configuration (`traefik.yml`): entry points, providers, API, observability, ACME.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StaticConfig {
    /// Global options (version check, anonymous usage statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub global: Option<serde_json::Value>,

    /// Default transport to the backend servers for every HTTP service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub servers_transport: Option<ServersTransport>,

    /// Default transport to the backend servers for every TCP service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub tcp_servers_transport: Option<serde_json::Value>,

    /// Entry points (listening addresses) by name; none defined means `http` on `:80`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_points: Option<BTreeMap<String, EntryPoint>>,

    /// Providers of dynamic configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub providers: Option<Providers>,

    /// Enables the API and dashboard (`api@internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub api: Option<Api>,

    /// Metrics exporters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,

    /// Enables the health-check endpoint `/ping` (`ping@internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub ping: Option<Ping>,

    /// Traefik's own log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub log: Option<Log>,

    /// Access log (one line per request).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub access_log: Option<AccessLog>,

    /// OpenTelemetry tracing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub tracing: Option<serde_json::Value>,

    /// DNS resolution settings for CNAME flattening (`cnameFlattening: true` is refused; see
    /// docs/compatibility.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub host_resolver: Option<HostResolver>,

    /// Certificate resolvers (ACME / Tailscale) by name, referenced by `tls.certResolver`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificates_resolvers: Option<BTreeMap<String, CertificateResolver>>,

    /// Experimental features (plugins, local plugins, fast proxy, feature flags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub experimental: Option<serde_json::Value>,

    /// Core behaviour controls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<Core>,

    /// SPIFFE workload API client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub spiffe: Option<serde_json::Value>,

    /// OCSP stapling: `ocsp: {}` turns it on for every certificate whose leaf names an OCSP
    /// responder (Authority Information Access).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub ocsp: Option<Ocsp>,
}

/// OCSP stapling (Traefik's static `ocsp`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ocsp {
    /// Responder URL to ask instead, by a certificate's OCSP URL exactly as it is written in the
    /// certificate (`"http://ocsp.example.com": "http://127.0.0.1:8888"`); a value may not be
    /// empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_overrides: Option<BTreeMap<String, String>>,
}

// ------------------------------------------------------------------------------------------------
// Entry points
// ------------------------------------------------------------------------------------------------

/// Default `transport.respondingTimeouts.readTimeout`.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(60);
/// Default `transport.respondingTimeouts.writeTimeout` (0 = no timeout).
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(0);
/// Default `transport.respondingTimeouts.idleTimeout`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(180);
/// Default `transport.lifeCycle.requestAcceptGraceTimeout`.
pub const DEFAULT_REQUEST_ACCEPT_GRACE_TIMEOUT: Duration = Duration::from_secs(0);
/// Default `transport.lifeCycle.graceTimeOut`.
pub const DEFAULT_GRACE_TIMEOUT: Duration = Duration::from_secs(10);
/// Default `http.maxHeaderBytes` (Go's `http.DefaultMaxHeaderBytes`, 1 MiB).
pub const DEFAULT_MAX_HEADER_BYTES: i64 = 1 << 20;
/// Default `http.sanitizePath`.
pub const DEFAULT_SANITIZE_PATH: bool = true;
/// Accepted values of `http.underscoreHeadersStrategy`.
pub const UNDERSCORE_HEADERS_STRATEGIES: [&str; 3] = ["keep", "delete", "reject"];
/// Default `http.redirections.entryPoint.scheme`.
pub const DEFAULT_REDIRECT_SCHEME: &str = "https";
/// Default `http.redirections.entryPoint.permanent`.
pub const DEFAULT_REDIRECT_PERMANENT: bool = true;
/// Default `http.redirections.entryPoint.priority` (Go `math.MaxInt - 1`).
pub const DEFAULT_REDIRECT_PRIORITY: i64 = i64::MAX - 1;
/// Default `http2.maxConcurrentStreams`.
pub const DEFAULT_HTTP2_MAX_CONCURRENT_STREAMS: i32 = 250;
/// Default `http2.maxDecoderHeaderTableSize` / `maxEncoderHeaderTableSize`.
pub const DEFAULT_HTTP2_HEADER_TABLE_SIZE: i32 = 4096;
/// Default `udp.timeout`.
pub const DEFAULT_UDP_TIMEOUT: Duration = Duration::from_secs(3);

/// One entry point: a listening address plus its HTTP, TLS, transport and header-trust settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryPoint {
    /// Listening address `[host]:port[/tcp|/udp]`, e.g. `":80"`, `"10.0.0.1:443"`, `":53/udp"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,

    /// Lets routers answer ACME's HTTP challenge path `/.well-known/acme-challenge/` (an external
    /// solver): the entry point's redirect leaves it alone, and the certificate resolvers' own
    /// HTTP-01 answers rank as a router of priority 42 instead of above every router (default
    /// false).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "allowACMEByPass"
    )]
    pub allow_acme_by_pass: Option<bool>,

    /// Sets SO_REUSEPORT so several processes can listen on the same port (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub reuse_port: Option<bool>,

    /// Adds this entry point to the defaults for routers without `entryPoints` (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_default: Option<bool>,

    /// Client-side connection timeouts and keep-alive limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<EntryPointsTransport>,

    /// Accepts the PROXY protocol header from the listed (or all) peers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub proxy_protocol: Option<ProxyProtocol>,

    /// Which peers' `X-Forwarded-*` headers are trusted (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarded_headers: Option<ForwardedHeaders>,

    /// HTTP settings applied to every router on this entry point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<EntryPointHttp>,

    /// HTTP/2 server settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Config>,

    /// Enables HTTP/3 (QUIC) on the same port over UDP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub http3: Option<Http3Config>,

    /// UDP session settings (for `/udp` addresses).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub udp: Option<UdpConfig>,

    /// Whether the access log and the request metrics record this entry point's requests (its
    /// routers may say otherwise); tracing is not served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observability: Option<EntryPointObservability>,
}

/// Client-facing transport settings of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryPointsTransport {
    /// Timeouts around graceful shutdown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub life_cycle: Option<LifeCycle>,

    /// Timeouts for reading requests and writing responses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responding_timeouts: Option<RespondingTimeouts>,

    /// Maximum lifetime of a keep-alive connection (default 0 = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_max_time: Option<Duration>,

    /// Maximum number of requests on one keep-alive connection (default 0 = unlimited).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keep_alive_max_requests: Option<i64>,
}

/// Graceful-shutdown timeouts of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LifeCycle {
    /// How long to keep accepting requests after a stop signal (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_accept_grace_timeout: Option<Duration>,

    /// How long active requests may finish before Traefik stops (default 10s).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "graceTimeOut"
    )]
    pub grace_time_out: Option<Duration>,
}

/// Timeouts for incoming requests on an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RespondingTimeouts {
    /// Maximum time to read the whole request, body included (default 60s; 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_timeout: Option<Duration>,

    /// Maximum time to write the response (default 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_timeout: Option<Duration>,

    /// Maximum idle time of a keep-alive connection (default 180s; 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<Duration>,
}

/// PROXY protocol acceptance on an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProxyProtocol {
    /// Trusts the PROXY header from any peer (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,

    /// Peers (IPs or CIDRs) whose PROXY header is trusted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "trustedIPs"
    )]
    pub trusted_ips: Option<Vec<String>>,
}

/// Trust of client `X-Forwarded-*` headers on an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardedHeaders {
    /// Trusts forwarded headers from any peer (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,

    /// Peers (IPs or CIDRs) whose forwarded headers are trusted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "trustedIPs"
    )]
    pub trusted_ips: Option<Vec<String>>,

    /// Headers listed in `Connection` that survive the middleware chain before being removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub connection: Option<Vec<String>>,

    /// Stops appending the client address to `X-Forwarded-For` (default false: append).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "notAppendXForwardedFor"
    )]
    pub not_append_x_forwarded_for: Option<bool>,
}

/// HTTP settings of an entry point, applied to every router attached to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryPointHttp {
    /// Redirects every request on this entry point (generated router `<ep>-to-<to>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirections: Option<Redirections>,

    /// Middlewares prepended to every router on this entry point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub middlewares: Option<Vec<String>>,

    /// Default TLS for routers on this entry point; `{}` enables TLS with defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub tls: Option<EntryPointTls>,

    /// Encoded characters allowed in request paths, checked after routing and before the
    /// router's middlewares. Once the section is written each option defaults to true (allowed):
    /// only those set to false are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encoded_characters: Option<EncodedCharacters>,

    /// A `;` in a request's query becomes `%3B` (part of a value) instead of `&` (a parameter
    /// separator, the default) before routing; the server sees the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encode_query_semicolons: Option<bool>,

    /// Removes `/./`, `/../` and duplicate slashes from request paths (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitize_path: Option<bool>,

    /// Maximum size of request headers in bytes (default 1048576).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_header_bytes: Option<i64>,

    /// Request header fields whose name holds `_`: `keep` them (the default), `delete` them
    /// before routing, or `reject` the request with 400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub underscore_headers_strategy: Option<String>,
}

/// Redirections of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Redirections {
    /// Redirects every request to another entry point (or `:port`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_point: Option<RedirectEntryPoint>,
}

/// Redirection of every request of an entry point to another one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedirectEntryPoint {
    /// Target entry point name, or a `:port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,

    /// Scheme of the redirect target (default `https`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,

    /// Uses a permanent redirect, 301/308 (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permanent: Option<bool>,

    /// Priority of the redirect among the entry point's routers (default MaxInt-1, above every
    /// router): a matching router of higher priority is served instead of redirected; 0 is the
    /// length of the generated rule ``HostRegexp(`^.+$`)``, 18.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
}

/// Default TLS settings for the routers of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryPointTls {
    /// Name of the TLS options (`tls.options.<name>`) to use (default `default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<String>,

    /// Certificate resolver for the routers' domains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cert_resolver: Option<String>,

    /// Domains to obtain certificates for with the resolver (for routers without `tls` of their
    /// own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domains: Option<Vec<Domain>>,
}

/// A certificate domain: main name plus subject alternative names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Domain {
    /// Main domain (common name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main: Option<String>,

    /// Subject alternative names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sans: Option<Vec<String>>,
}

/// Encoded characters in request paths at an entry point (each allowed unless set to false).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EncodedCharacters {
    /// Allows `%2F` (slash) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_slash: Option<bool>,

    /// Allows `%5C` (backslash) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_back_slash: Option<bool>,

    /// Allows `%00` (null character) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_null_character: Option<bool>,

    /// Allows `%3B` (semicolon) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_semicolon: Option<bool>,

    /// Allows `%25` (percent) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_percent: Option<bool>,

    /// Allows `%3F` (question mark) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_question_mark: Option<bool>,

    /// Allows `%23` (hash) in the path (default true here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_encoded_hash: Option<bool>,
}

/// HTTP/2 server settings of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Http2Config {
    /// Concurrent streams a client may open per connection (default 250).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrent_streams: Option<i32>,

    /// Maximum HPACK header table size when decoding client headers (default 4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_decoder_header_table_size: Option<i32>,

    /// Maximum HPACK header table size when encoding response headers (default 4096). Ignored by
    /// bridgectl: the table follows the client's own setting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub max_encoder_header_table_size: Option<i32>,
}

/// HTTP/3 settings of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Http3Config {
    /// UDP port advertised in `Alt-Svc` (default: the entry point's port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advertised_port: Option<i64>,
}

/// UDP settings of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UdpConfig {
    /// Idle time before a UDP session is released (default 3s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<Duration>,
}

/// Observability defaults for the routers of an entry point.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EntryPointObservability {
    /// Produces access logs for routers on this entry point (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_logs: Option<bool>,

    /// Produces metrics for routers on this entry point (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<bool>,

    /// Produces traces for routers on this entry point (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub tracing: Option<bool>,

    /// Tracing verbosity: `minimal` or `detailed` (default `minimal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub trace_verbosity: Option<String>,
}

// ------------------------------------------------------------------------------------------------
// API, ping, core
// ------------------------------------------------------------------------------------------------

/// Default `api.basePath`.
pub const DEFAULT_API_BASE_PATH: &str = "/";
/// Default `api.dashboard` once `api` is enabled.
pub const DEFAULT_API_DASHBOARD: bool = true;
/// Default `ping.terminatingStatusCode`.
pub const DEFAULT_PING_TERMINATING_STATUS_CODE: i64 = 503;
/// Default `core.defaultRuleSyntax`.
pub const DEFAULT_RULE_SYNTAX: &str = "v3";

/// The API and dashboard (`api@internal`, `dashboard@internal`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Api {
    /// Serves the dashboard under `/dashboard/` (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard: Option<bool>,

    /// Serves the API unauthenticated on entry point `traefik` (`:8080`) (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure: Option<bool>,

    /// Serves the `/debug` endpoints (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub debug: Option<bool>,

    /// Base path of the API and dashboard, matching `^/[a-zA-Z0-9/_.:~-]*$` (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_path: Option<String>,

    /// Hides the advertisement in the dashboard (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub disable_dashboard_ad: Option<bool>,

    /// Custom name shown in the dashboard (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dashboard_name: Option<String>,
}

/// `hostResolver`: Traefik's CNAME flattening of request hosts before `Host` rules match.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostResolver {
    /// Resolve the request's host through its CNAME chain and match rules on the end too
    /// (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cname_flattening: Option<bool>,

    /// resolv.conf naming the DNS servers asked (default `/etc/resolv.conf`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolv_config: Option<String>,

    /// Most CNAME links followed (default 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolv_depth: Option<i64>,
}

/// The health-check endpoint `/ping` (`ping@internal`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ping {
    /// Entry point serving `/ping` (default `traefik`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_point: Option<String>,

    /// Skips the generated router; route to `ping@internal` yourself (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_routing: Option<bool>,

    /// Status returned by `/ping` during graceful shutdown (default 503).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating_status_code: Option<i64>,
}

/// Core behaviour controls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Core {
    /// Default rule syntax for routers: `v3` or `v2` (deprecated) (default `v3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub default_rule_syntax: Option<String>,
}

// ------------------------------------------------------------------------------------------------
// Providers
// ------------------------------------------------------------------------------------------------

/// Default `providers.providersThrottleDuration`.
pub const DEFAULT_PROVIDERS_THROTTLE_DURATION: Duration = Duration::from_secs(2);
/// Default `providers.file.watch`.
pub const DEFAULT_FILE_WATCH: bool = true;

/// Providers of dynamic configuration; bridgectl serves only `file`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Providers {
    /// Minimum time between two configuration reloads from providers (default 2s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub providers_throttle_duration: Option<Duration>,

    /// Provider names in order of routing precedence for routers of equal priority (v3.7).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precedence: Option<Vec<String>>,

    /// File provider: dynamic configuration from a YAML/TOML file or directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<FileProvider>,

    /// Docker provider (container labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub docker: Option<serde_json::Value>,

    /// Docker Swarm provider (service labels).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub swarm: Option<serde_json::Value>,

    /// Kubernetes Ingress provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub kubernetes_ingress: Option<serde_json::Value>,

    /// Kubernetes Ingress provider understanding ingress-nginx annotations.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "kubernetesIngressNGINX"
    )]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub kubernetes_ingress_nginx: Option<serde_json::Value>,

    /// Kubernetes CRD provider (IngressRoute and friends).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "kubernetesCRD"
    )]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub kubernetes_crd: Option<serde_json::Value>,

    /// Kubernetes Gateway API provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub kubernetes_gateway: Option<serde_json::Value>,

    /// Knative Serving provider (experimental since v3.6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub knative: Option<serde_json::Value>,

    /// REST provider (configuration pushed to the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub rest: Option<serde_json::Value>,

    /// Consul Catalog provider (service tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub consul_catalog: Option<serde_json::Value>,

    /// Nomad provider (service tags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub nomad: Option<serde_json::Value>,

    /// AWS ECS provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub ecs: Option<serde_json::Value>,

    /// Consul key-value provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub consul: Option<serde_json::Value>,

    /// etcd key-value provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub etcd: Option<serde_json::Value>,

    /// ZooKeeper key-value provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub zoo_keeper: Option<serde_json::Value>,

    /// Redis key-value provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub redis: Option<serde_json::Value>,

    /// HTTP provider (configuration polled from an endpoint).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub http: Option<serde_json::Value>,

    /// Provider plugins by name, with their settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-bridgectl" = "unsupported"))]
    pub plugin: Option<serde_json::Value>,
}

/// The file provider: dynamic configuration read from a file or a directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileProvider {
    /// Dynamic configuration file (`.yml`, `.yaml` or `.toml`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,

    /// Directory of dynamic configuration files, read recursively (wins over `filename`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub directory: Option<String>,

    /// Reloads on file changes (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub watch: Option<bool>,

    /// Logs the files after Go-template rendering (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub debug_log_generated_template: Option<bool>,
}

// ------------------------------------------------------------------------------------------------
// Certificate resolvers
// ------------------------------------------------------------------------------------------------

/// Default `acme.caServer` (Let's Encrypt production).
pub const DEFAULT_ACME_CA_SERVER: &str = "https://acme-v02.api.letsencrypt.org/directory";
/// Default `acme.storage`.
pub const DEFAULT_ACME_STORAGE: &str = "acme.json";
/// Default `acme.keyType`.
pub const DEFAULT_ACME_KEY_TYPE: &str = "RSA4096";
/// Default `acme.certificatesDuration`, in hours.
pub const DEFAULT_ACME_CERTIFICATES_DURATION: i64 = 2160;
/// Default `acme.clientTimeout`.
pub const DEFAULT_ACME_CLIENT_TIMEOUT: Duration = Duration::from_secs(120);
/// Default `acme.clientResponseHeaderTimeout`.
pub const DEFAULT_ACME_CLIENT_RESPONSE_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// A certificate resolver: ACME or Tailscale (mutually exclusive).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateResolver {
    /// ACME (Let's Encrypt) certificate resolution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acme: Option<Acme>,

    /// Tailscale certificate resolution (`{}` enables it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub tailscale: Option<serde_json::Value>,
}

/// ACME account, storage and challenge settings of a resolver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Acme {
    /// Account email address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,

    /// ACME directory URL (default Let's Encrypt production).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_server: Option<String>,

    /// Preferred chain, by issuer common name (default: the CA's default chain). Ignored by
    /// bridgectl: the CA's default chain is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub preferred_chain: Option<String>,

    /// ACME certificate profile to request (default none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,

    /// Extra contact email addresses for the account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email_addresses: Option<Vec<String>>,

    /// Omits the common name from certificate requests (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_common_name: Option<bool>,

    /// File (or KV key) storing account and certificates; required (default `acme.json`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,

    /// Private key type: EC256, EC384, RSA2048, RSA4096 or RSA8192 (default RSA4096).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_type: Option<String>,

    /// External account binding credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eab: Option<Eab>,

    /// Certificate lifetime in hours, drives renewal (default 2160).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificates_duration: Option<i64>,

    /// Timeout of a whole HTTP exchange with the ACME server (default 2m).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_timeout: Option<Duration>,

    /// Timeout for the ACME server's response headers (default 30s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_response_header_timeout: Option<Duration>,

    /// Timeout for obtaining one certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub certificate_timeout: Option<Duration>,

    /// CA certificates (files or PEM) trusted for the ACME server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificates: Option<Vec<String>>,

    /// Also trusts the system certificate pool for the ACME server (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_system_cert_pool: Option<bool>,

    /// Server name for TLS verification of the ACME server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_server_name: Option<String>,

    /// DNS-01 challenge (bridgectl runs lego's generic `exec` and `httpreq` providers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub dns_challenge: Option<DnsChallenge>,

    /// HTTP-01 challenge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub http_challenge: Option<HttpChallenge>,

    /// TLS-ALPN-01 challenge; `{}` enables it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub tls_challenge: Option<TlsChallenge>,
}

/// ACME external account binding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Eab {
    /// Key identifier from the CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kid: Option<String>,

    /// Base64 URL-encoded HMAC key from the CA.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac_encoded: Option<String>,
}

impl Acme {
    /// The DNS-01 provider bridgectl runs for this resolver: `dnsChallenge.provider` when it is
    /// one of lego's generic providers; `None` without one (Traefik then registers no DNS-01
    /// solver) or for any other provider (reported by `check`).
    #[must_use]
    pub fn dns_provider(&self) -> Option<bridge_plan::DnsProvider> {
        match self.dns_challenge.as_ref()?.provider.as_deref()? {
            "exec" => Some(bridge_plan::DnsProvider::Exec),
            "httpreq" => Some(bridge_plan::DnsProvider::Httpreq),
            _ => None,
        }
    }
}

/// ACME DNS-01 challenge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DnsChallenge {
    /// DNS provider name (lego code): bridgectl runs `exec` and `httpreq`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,

    /// DNS servers (`host:port`) used to resolve the FQDN authority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolvers: Option<Vec<String>>,

    /// DNS propagation checks before telling the CA the challenge is ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation: Option<Propagation>,

    /// Deprecated: use `propagation.delayBeforeChecks` (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub delay_before_check: Option<Duration>,

    /// Deprecated: use `propagation.disableChecks` (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("deprecated" = true))]
    pub disable_propagation_check: Option<bool>,
}

/// DNS propagation checks of the DNS-01 challenge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Propagation {
    /// Skips all propagation checks (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disable_checks: Option<bool>,

    /// Skips the authoritative-nameserver checks (default false).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "disableANSChecks"
    )]
    pub disable_ans_checks: Option<bool>,

    /// Requires every recursive nameserver to see the record (default false).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "requireAllRNS"
    )]
    pub require_all_rns: Option<bool>,

    /// Delay before the propagation checks start (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_before_checks: Option<Duration>,
}

/// ACME HTTP-01 challenge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpChallenge {
    /// Entry point (port 80) answering the challenge; required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_point: Option<String>,

    /// Delay before telling the CA the challenge is ready (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
}

/// ACME TLS-ALPN-01 challenge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TlsChallenge {
    /// Delay before telling the CA the challenge is ready (default 0s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<Duration>,
}

// ------------------------------------------------------------------------------------------------
// Log, access log, metrics
// ------------------------------------------------------------------------------------------------

/// Default `log.level`.
pub const DEFAULT_LOG_LEVEL: &str = "ERROR";
/// Default `log.format` and `accessLog.format`.
pub const DEFAULT_LOG_FORMAT: &str = "common";
/// Default `metrics.prometheus.buckets`, in seconds.
pub const DEFAULT_PROMETHEUS_BUCKETS: [f64; 4] = [0.1, 0.3, 1.2, 5.0];
/// Default `metrics.prometheus.entryPoint`.
pub const DEFAULT_PROMETHEUS_ENTRYPOINT: &str = "traefik";

/// Traefik's own log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Log {
    /// Level: TRACE, DEBUG, INFO, WARN, ERROR, FATAL or PANIC (default ERROR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub level: Option<String>,

    /// Format: `common` or `json` (default `common`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,

    /// Disables colors in the `common` format (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_color: Option<bool>,

    /// Log file path (default: stdout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,

    /// Maximum log file size in megabytes before rotation (default 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub max_size: Option<i64>,

    /// Maximum days to keep rotated log files (default 0 = forever).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub max_age: Option<i64>,

    /// Maximum number of rotated log files kept (default 0 = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub max_backups: Option<i64>,

    /// Gzips rotated log files (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub compress: Option<bool>,

    /// Exports logs with OpenTelemetry (OTLP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub otlp: Option<serde_json::Value>,
}

/// The access log.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessLog {
    /// Access log file path (default: stdout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_path: Option<String>,

    /// Format: `common`, `genericCLF` or `json` (default `common`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,

    /// Keeps only the matching requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filters: Option<AccessLogFilters>,

    /// Fields and headers to keep, drop or redact (JSON format).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<AccessLogFields>,

    /// Number of lines buffered before writing (default 0 = unbuffered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-bridgectl" = "ignored"))]
    pub buffering_size: Option<i64>,

    /// Also logs requests to internal services (ping, dashboard, ...) (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_internals: Option<bool>,

    /// Writes to the file/stdout as well when `otlp` is set (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dual_output: Option<bool>,

    /// Exports access logs with OpenTelemetry (OTLP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub otlp: Option<serde_json::Value>,
}

/// Access log filters: a request is logged when any filter matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessLogFilters {
    /// Status codes or ranges to keep, e.g. `"200"`, `"400-499"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_codes: Option<Vec<String>>,

    /// Keeps requests that were retried at least once (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_attempts: Option<bool>,

    /// Keeps requests slower than this (default 0 = no filter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_duration: Option<Duration>,
}

/// Access log fields to keep or drop.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessLogFields {
    /// Default for fields: `keep` or `drop` (default `keep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,

    /// Per-field override: field name to `keep` or `drop`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<BTreeMap<String, String>>,

    /// Request headers to keep, drop or redact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<AccessLogHeaders>,
}

/// Access log header fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessLogHeaders {
    /// Default for headers: `keep`, `drop` or `redact` (default `drop`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_mode: Option<String>,

    /// Per-header override: header name to `keep`, `drop` or `redact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub names: Option<BTreeMap<String, String>>,
}

/// Metrics exporters; bridgectl serves only Prometheus.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metrics {
    /// Also records metrics for internal services (ping, dashboard, ...) (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_internals: Option<bool>,

    /// Prometheus exporter on `/metrics` (`prometheus@internal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true))]
    pub prometheus: Option<Prometheus>,

    /// Datadog exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub datadog: Option<serde_json::Value>,

    /// StatsD exporter.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "statsD")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub stats_d: Option<serde_json::Value>,

    /// InfluxDB v2 exporter.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "influxDB2")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub influx_db2: Option<serde_json::Value>,

    /// OpenTelemetry (OTLP) exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub otlp: Option<serde_json::Value>,
}

/// The Prometheus exporter.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Prometheus {
    /// Latency histogram buckets in seconds (default 0.1, 0.3, 1.2, 5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<Vec<f64>>,

    /// Adds entry point metrics (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_entry_points_labels: Option<bool>,

    /// Adds router metrics (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_routers_labels: Option<bool>,

    /// Adds service metrics (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub add_services_labels: Option<bool>,

    /// Entry point serving `/metrics` (default `traefik`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry_point: Option<String>,

    /// Skips the generated router; route to `prometheus@internal` yourself (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_routing: Option<bool>,

    /// Extra labels taken from request headers: label name to header name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_labels: Option<BTreeMap<String, String>>,
}

// ------------------------------------------------------------------------------------------------
// Servers transport
// ------------------------------------------------------------------------------------------------

/// Default `serversTransport.maxIdleConnsPerHost`.
pub const DEFAULT_MAX_IDLE_CONNS_PER_HOST: i64 = 200;
/// Default `serversTransport.forwardingTimeouts.dialTimeout`.
pub const DEFAULT_DIAL_TIMEOUT: Duration = Duration::from_secs(30);
/// Default `serversTransport.forwardingTimeouts.responseHeaderTimeout` (0 = none).
pub const DEFAULT_RESPONSE_HEADER_TIMEOUT: Duration = Duration::from_secs(0);
/// Default `serversTransport.forwardingTimeouts.idleConnTimeout`.
pub const DEFAULT_IDLE_CONN_TIMEOUT: Duration = Duration::from_secs(90);

/// Default transport to backend servers, used by services without their own `serversTransport`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServersTransport {
    /// Skips TLS certificate verification of backends (default false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub insecure_skip_verify: Option<bool>,

    /// Extra CA certificates (files or PEM) trusted for backends.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "rootCAs")]
    pub root_cas: Option<Vec<String>>,

    /// Maximum idle keep-alive connections per backend host (default 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_idle_conns_per_host: Option<i64>,

    /// Timeouts for requests forwarded to backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding_timeouts: Option<ForwardingTimeouts>,

    /// SPIFFE identities accepted from backends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-allow-empty" = true, "x-bridgectl" = "unsupported"))]
    pub spiffe: Option<ServersTransportSpiffe>,
}

/// Timeouts for requests forwarded to backend servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForwardingTimeouts {
    /// Maximum time to establish a backend connection (default 30s; 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dial_timeout: Option<Duration>,

    /// Maximum wait for response headers after the request is sent (default 0 = none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_header_timeout: Option<Duration>,

    /// Maximum idle time of a pooled backend connection (default 90s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_conn_timeout: Option<Duration>,
}

/// SPIFFE verification of backend servers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServersTransportSpiffe {
    /// Accepted SPIFFE IDs (take precedence over `trustDomain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<Vec<String>>,

    /// Accepted SPIFFE trust domain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust_domain: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_json() -> serde_json::Value {
        let schema =
            schemars::SchemaGenerator::new(schemars::generate::SchemaSettings::draft2020_12())
                .into_root_schema_for::<StaticConfig>();
        serde_json::to_value(&schema).unwrap_or_default()
    }

    #[test]
    fn deserializes_seed_static_config() {
        let value = serde_json::json!({
            "entryPoints": { "web": { "address": ":80" } },
            "api": { "dashboard": true, "insecure": true },
            "providers": { "file": { "filename": "/etc/traefik/dynamic.yml" } }
        });
        let config: StaticConfig = match serde_json::from_value(value) {
            Ok(config) => config,
            Err(err) => panic!("seed config must deserialize: {err}"),
        };
        let web = config.entry_points.as_ref().and_then(|eps| eps.get("web"));
        assert_eq!(web.and_then(|ep| ep.address.as_deref()), Some(":80"));
        let api = config.api.as_ref();
        assert_eq!(api.and_then(|a| a.dashboard), Some(true));
        assert_eq!(api.and_then(|a| a.insecure), Some(true));
        assert_eq!(api.and_then(|a| a.base_path.as_deref()), None);
        let file = config.providers.as_ref().and_then(|p| p.file.as_ref());
        assert_eq!(
            file.and_then(|f| f.filename.as_deref()),
            Some("/etc/traefik/dynamic.yml")
        );
        assert!(config.ping.is_none());
    }

    #[test]
    fn accepts_traefik_spellings() {
        let value = serde_json::json!({
            "entryPoints": { "websecure": {
                "address": ":443",
                "allowACMEByPass": true,
                "forwardedHeaders": { "trustedIPs": ["10.0.0.0/8"], "notAppendXForwardedFor": true },
                "transport": { "lifeCycle": { "graceTimeOut": "5s" }, "respondingTimeouts": { "readTimeout": 30 } },
                "http": { "tls": {}, "redirections": { "entryPoint": { "to": "web", "priority": 10 } } },
                "http3": {}
            } },
            "providers": { "kubernetesCRD": {}, "kubernetesIngressNGINX": { "watchNamespace": "x" } },
            "metrics": { "statsD": {}, "influxDB2": {}, "prometheus": { "buckets": [0.1, 1] } },
            "certificatesResolvers": { "le": {
                "acme": { "caServer": "https://x", "dnsChallenge": { "propagation": { "disableANSChecks": true, "requireAllRNS": true } } },
                "tailscale": {}
            } }
        });
        let config: StaticConfig = match serde_json::from_value(value) {
            Ok(config) => config,
            Err(err) => panic!("Traefik spellings must deserialize: {err}"),
        };
        let ep = config
            .entry_points
            .as_ref()
            .and_then(|eps| eps.get("websecure"));
        let grace = ep
            .and_then(|ep| ep.transport.as_ref())
            .and_then(|t| t.life_cycle.as_ref())
            .and_then(|l| l.grace_time_out);
        assert_eq!(grace, Some(Duration::from_secs(5)));
        let read = ep
            .and_then(|ep| ep.transport.as_ref())
            .and_then(|t| t.responding_timeouts.as_ref())
            .and_then(|r| r.read_timeout);
        assert_eq!(read, Some(Duration::from_secs(30)));
        assert_eq!(ep.and_then(|ep| ep.allow_acme_by_pass), Some(true));
    }

    #[test]
    fn rejects_unknown_nested_key() {
        let value = serde_json::json!({
            "entryPoints": { "web": { "address": ":80", "adress": ":81" } }
        });
        assert!(serde_json::from_value::<StaticConfig>(value).is_err());
        let value = serde_json::json!({
            "providers": { "file": { "filename": "x.yml", "watchh": true } }
        });
        assert!(serde_json::from_value::<StaticConfig>(value).is_err());
        let value = serde_json::json!({ "api": { "insecure": true, "middlewares": ["a"] } });
        assert!(serde_json::from_value::<StaticConfig>(value).is_err());
    }

    #[test]
    fn schema_is_closed_and_marked() {
        let schema = schema_json();
        let defs = &schema["$defs"];
        assert_eq!(
            defs["EntryPoint"]["additionalProperties"],
            serde_json::Value::Bool(false)
        );
        assert_eq!(
            schema["additionalProperties"],
            serde_json::Value::Bool(false)
        );
        let docker = &defs["Providers"]["properties"]["docker"];
        assert_eq!(docker["x-bridgectl"], "unsupported");
        assert_eq!(docker["x-allow-empty"], true);
        assert_eq!(docker["type"], "object");
        assert_eq!(schema["properties"]["api"]["x-allow-empty"], true);
        assert_eq!(schema["properties"]["global"]["x-bridgectl"], "ignored");
        assert_eq!(
            defs["Core"]["properties"]["defaultRuleSyntax"]["deprecated"],
            true
        );
        let lifecycle = &defs["LifeCycle"]["properties"];
        assert!(lifecycle.get("graceTimeOut").is_some());
        assert!(
            defs["EntryPoint"]["properties"]["address"]["description"]
                .as_str()
                .is_some_and(|d| d.contains(":80"))
        );
    }

    #[test]
    fn every_reference_top_level_key_is_declared() {
        let schema = schema_json();
        let props = &schema["properties"];
        for key in [
            "global",
            "serversTransport",
            "tcpServersTransport",
            "entryPoints",
            "providers",
            "api",
            "metrics",
            "ping",
            "log",
            "accessLog",
            "tracing",
            "hostResolver",
            "certificatesResolvers",
            "experimental",
            "core",
            "spiffe",
            "ocsp",
        ] {
            assert!(props.get(key).is_some(), "missing top-level key {key}");
        }
        let providers = &schema["$defs"]["Providers"]["properties"];
        for key in [
            "providersThrottleDuration",
            "docker",
            "swarm",
            "file",
            "kubernetesIngress",
            "kubernetesIngressNGINX",
            "kubernetesCRD",
            "kubernetesGateway",
            "rest",
            "consulCatalog",
            "nomad",
            "ecs",
            "consul",
            "etcd",
            "zooKeeper",
            "redis",
            "http",
            "plugin",
        ] {
            assert!(providers.get(key).is_some(), "missing provider {key}");
        }
    }

    #[test]
    fn defaults_are_traefiks() {
        assert_eq!(DEFAULT_READ_TIMEOUT.to_string(), "1m0s");
        assert_eq!(DEFAULT_IDLE_TIMEOUT.to_string(), "3m0s");
        assert_eq!(DEFAULT_GRACE_TIMEOUT.to_string(), "10s");
        assert_eq!(DEFAULT_MAX_HEADER_BYTES, 1_048_576);
        assert_eq!(DEFAULT_REDIRECT_PRIORITY, 9_223_372_036_854_775_806);
    }
}
