//! Prometheus metrics with Traefik's names (`metrics.prometheus`), encoded by the official
//! `prometheus-client` crate, plus bridgectl's failover counters.
//!
//! One [`Metrics`] lives for the whole process and is handed from runtime to runtime on reload,
//! so counters never reset when the plan changes. Request metrics are recorded once per request
//! when its response body has been sent ([`crate::observe`]); server states are read from the
//! current upstreams at scrape time, so `traefik_service_server_up` is never stale.
//!
//! Names and labels follow Traefik v3: `traefik_entrypoint_requests_total{code,method,protocol,
//! entrypoint}`, `traefik_entrypoint_request_duration_seconds`, `traefik_router_*` (with
//! `addRoutersLabels`), `traefik_service_*` (with `addServicesLabels`), `traefik_service_retries_total`,
//! `traefik_service_server_up{service,url}`, `traefik_open_connections{entrypoint,protocol}`,
//! `traefik_config_reloads_total`, `traefik_config_last_reload_success`. Ours:
//! `bridge_server_state_changes_total{service,url,state}` and `bridge_requests_held_total{service}`.

use std::sync::Arc;

use prometheus_client::encoding::{
    EncodeLabelKey, EncodeLabelSet, EncodeLabelValue, LabelKeyEncoder, LabelValueEncoder,
};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::upstream::Upstreams;

/// A label value shared without copying (entry point, router, service and server names).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Name(pub Arc<str>);

impl EncodeLabelValue for Name {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&&*self.0, encoder)
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Self {
        Self(Arc::from(s))
    }
}

/// A `headerLabels` label name, shared by every series that carries it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LabelName(Arc<str>);

impl EncodeLabelKey for LabelName {
    fn encode(&self, encoder: &mut LabelKeyEncoder<'_>) -> Result<(), std::fmt::Error> {
        EncodeLabelKey::encode(&&*self.0, encoder)
    }
}

/// The `headerLabels` labels of one request, in the plan's order (empty without any).
pub(crate) type HeaderValues = Vec<(LabelName, String)>;

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct EntryPointLabels {
    code: u16,
    method: String,
    protocol: &'static str,
    entrypoint: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RouterLabels {
    code: u16,
    method: String,
    protocol: &'static str,
    router: Name,
    service: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServiceLabels {
    code: u16,
    method: String,
    protocol: &'static str,
    service: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct AdminLabels {
    service: Name,
    url: Name,
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct CertLabels {
    cn: String,
    serial: String,
    sans: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServiceOnly {
    service: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ServerLabels {
    service: Name,
    url: Name,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct StateLabels {
    service: Name,
    url: Name,
    state: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ConnLabels {
    entrypoint: Name,
    protocol: &'static str,
}

/// Builds histograms with the plan's buckets.
#[derive(Debug, Clone)]
struct Buckets(Arc<[f64]>);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(self.0.iter().copied())
    }
}

/// What one finished request reports.
#[derive(Debug)]
pub struct RequestSample<'a> {
    /// Entry point.
    pub entrypoint: &'a Name,
    /// Status sent to the client.
    pub code: u16,
    /// Request method.
    pub method: &'a str,
    /// `http` or `websocket`.
    pub protocol: &'static str,
    /// Router key (with `@file`), if one matched.
    pub router: Option<&'a Name>,
    /// Service key (with `@file`), if the request reached one.
    pub service: Option<&'a Name>,
    /// The parent routers the request went through (`parentRefs`), with `@file`: each counts
    /// as a router whose service is `<router>-muxer`, as in Traefik.
    pub parents: &'a [Name],
    /// The `headerLabels` values ([`Metrics::header_values`]).
    pub header_values: &'a [(LabelName, String)],
    /// Attempts beyond the first.
    pub retries: u32,
    /// Whole request, until the response body was sent.
    pub seconds: f64,
}

/// The process's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    entrypoint_labels: bool,
    router_labels: bool,
    service_labels: bool,
    /// `headerLabels`: each label and the request field it reads.
    header_labels: Vec<(LabelName, http::HeaderName)>,
    ep_requests: Family<(EntryPointLabels, HeaderValues), Counter>,
    ep_duration: Family<EntryPointLabels, Histogram, Buckets>,
    router_requests: Family<(RouterLabels, HeaderValues), Counter>,
    router_duration: Family<RouterLabels, Histogram, Buckets>,
    service_requests: Family<(ServiceLabels, HeaderValues), Counter>,
    service_duration: Family<ServiceLabels, Histogram, Buckets>,
    retries: Family<ServiceOnly, Counter>,
    server_up: Family<ServerLabels, Gauge>,
    open_connections: Family<ConnLabels, Gauge>,
    reloads: Counter,
    last_reload_success: Gauge,
    state_changes: Family<StateLabels, Counter>,
    held: Family<ServiceOnly, Counter>,
    certs_not_after: Family<CertLabels, Gauge>,
    admin_state: Family<AdminLabels, Gauge>,
}

impl Metrics {
    /// Metrics with the plan's histogram buckets (microseconds) and label switches.
    pub fn new(cfg: &bridge_plan::Metrics) -> Self {
        let bounds: Arc<[f64]> = cfg
            .buckets_us
            .iter()
            .map(|us| u32::try_from(*us).map_or(f64::MAX, f64::from) / 1e6)
            .collect();
        let buckets = Buckets(bounds);
        let mut registry = Registry::default();
        let ep_requests = Family::default();
        let ep_duration = Family::new_with_constructor(buckets.clone());
        let router_requests = Family::default();
        let router_duration = Family::new_with_constructor(buckets.clone());
        let service_requests = Family::default();
        let service_duration = Family::new_with_constructor(buckets);
        let retries = Family::default();
        let server_up = Family::default();
        let open_connections = Family::default();
        let reloads = Counter::default();
        let last_reload_success = Gauge::default();
        let state_changes = Family::default();
        let held = Family::default();
        let certs_not_after = Family::default();
        let admin_state = Family::default();
        if cfg.entrypoint_labels {
            registry.register(
                "traefik_entrypoint_requests",
                "How many HTTP requests processed on an entrypoint, partitioned by status code, protocol, and method.",
                ep_requests.clone(),
            );
            registry.register(
                "traefik_entrypoint_request_duration_seconds",
                "How long it took to process the request on an entrypoint, partitioned by status code, protocol, and method.",
                ep_duration.clone(),
            );
        }
        if cfg.router_labels {
            registry.register(
                "traefik_router_requests",
                "How many HTTP requests are processed on a router, partitioned by service, status code, protocol, and method.",
                router_requests.clone(),
            );
            registry.register(
                "traefik_router_request_duration_seconds",
                "How long it took to process the request on a router, partitioned by service, status code, protocol, and method.",
                router_duration.clone(),
            );
        }
        if cfg.service_labels {
            registry.register(
                "traefik_service_requests",
                "How many HTTP requests processed on a service, partitioned by status code, protocol, and method.",
                service_requests.clone(),
            );
            registry.register(
                "traefik_service_request_duration_seconds",
                "How long it took to process the request on a service, partitioned by status code, protocol, and method.",
                service_duration.clone(),
            );
            registry.register(
                "traefik_service_retries",
                "How many request retries happened on a service.",
                retries.clone(),
            );
            registry.register(
                "traefik_service_server_up",
                "Current service's server status, 0 for a down or 1 for up.",
                server_up.clone(),
            );
        }
        registry.register(
            "traefik_open_connections",
            "How many open connections exist, by entryPoint and protocol.",
            open_connections.clone(),
        );
        registry.register("traefik_config_reloads", "Config reloads.", reloads.clone());
        registry.register(
            "traefik_config_last_reload_success",
            "Last config reload success (1) or failure (0).",
            last_reload_success.clone(),
        );
        registry.register(
            "bridge_server_state_changes",
            "Server health state changes (failovers show as one server going DOWN and another UP).",
            state_changes.clone(),
        );
        registry.register(
            "bridge_requests_held",
            "Requests that waited (bridge hold) because no server of their service was available.",
            held.clone(),
        );
        registry.register(
            "bridge_requests_refused",
            "Requests refused before routing (RFC 9112 rules: Host, transfer codings, lengths), by reason.",
            crate::proxy::strict::REFUSED.clone(),
        );
        registry.register(
            "bridge_upstream_connections_discarded",
            "Connections to servers closed instead of reused because their framing was in doubt, by reason.",
            crate::proxy::strict::DISCARDED.clone(),
        );
        registry.register(
            "bridge_server_operator_state",
            "Servers an operator drained or put in maintenance (1 for the current state; ready servers are not listed).",
            admin_state.clone(),
        );
        registry.register(
            "traefik_tls_certs_not_after",
            "Certificate expiration timestamp (certificates from ACME resolvers).",
            certs_not_after.clone(),
        );
        registry.register(
            "bridge_tunnels_closed",
            "Upgraded connections (WebSocket) the proxy closed, by service and reason (server_down, server_removed, shutdown).",
            crate::proxy::tunnel::CLOSED.clone(),
        );
        registry.register(
            "bridge_tunnels_open",
            "Upgraded connections (WebSocket) open now.",
            crate::proxy::tunnel::OPEN.clone(),
        );
        registry.register(
            "bridge_peer_plan",
            "The other appliance of the pair (--peer) and this one: 1 for the current state (same, different, unreachable).",
            crate::peer::PLAN.clone(),
        );
        registry.register(
            "bridge_acme_orders",
            "ACME orders by resolver and outcome (obtained, renewed, unreachable, refused).",
            crate::acme::ORDERS.clone(),
        );
        last_reload_success.set(1);
        let header_labels = cfg
            .header_labels
            .iter()
            .filter_map(|h| {
                let field = http::HeaderName::from_bytes(h.header.as_bytes()).ok()?;
                Some((LabelName(Arc::from(h.label.as_str())), field))
            })
            .collect();
        Self {
            registry,
            header_labels,
            entrypoint_labels: cfg.entrypoint_labels,
            router_labels: cfg.router_labels,
            service_labels: cfg.service_labels,
            ep_requests,
            ep_duration,
            router_requests,
            router_duration,
            service_requests,
            service_duration,
            retries,
            server_up,
            open_connections,
            reloads,
            last_reload_success,
            state_changes,
            held,
            certs_not_after,
            admin_state,
        }
    }

    /// The `headerLabels` values of a request with these fields: each field's first value, or
    /// empty. `Host` is always empty, as in Traefik (Go keeps it out of the header map).
    pub fn header_values(&self, headers: &http::HeaderMap) -> HeaderValues {
        self.header_labels
            .iter()
            .map(|(label, field)| {
                let value = match headers.get(field) {
                    Some(v) if *field != http::header::HOST => {
                        String::from_utf8_lossy(v.as_bytes()).into_owned()
                    }
                    _ => String::new(),
                };
                (label.clone(), value)
            })
            .collect()
    }

    /// Records one finished request.
    pub fn request(&self, s: &RequestSample<'_>) {
        if self.entrypoint_labels {
            let l = EntryPointLabels {
                code: s.code,
                method: s.method.to_owned(),
                protocol: s.protocol,
                entrypoint: s.entrypoint.clone(),
            };
            self.ep_duration.get_or_create(&l).observe(s.seconds);
            self.ep_requests
                .get_or_create(&(l, s.header_values.to_vec()))
                .inc();
        }
        if self.router_labels {
            let muxers = s
                .parents
                .iter()
                .map(|p| (p.clone(), Name(Arc::from(format!("{}-muxer", p.0)))));
            let own = s.router.zip(s.service).map(|(r, v)| (r.clone(), v.clone()));
            for (router, service) in muxers.chain(own) {
                let l = RouterLabels {
                    code: s.code,
                    method: s.method.to_owned(),
                    protocol: s.protocol,
                    router,
                    service,
                };
                self.router_duration.get_or_create(&l).observe(s.seconds);
                self.router_requests
                    .get_or_create(&(l, s.header_values.to_vec()))
                    .inc();
            }
        }
        if let (true, Some(service)) = (self.service_labels, s.service) {
            let l = ServiceLabels {
                code: s.code,
                method: s.method.to_owned(),
                protocol: s.protocol,
                service: service.clone(),
            };
            self.service_duration.get_or_create(&l).observe(s.seconds);
            self.service_requests
                .get_or_create(&(l, s.header_values.to_vec()))
                .inc();
            if s.retries > 0 {
                self.retries
                    .get_or_create(&ServiceOnly {
                        service: service.clone(),
                    })
                    .inc_by(u64::from(s.retries));
            }
        }
    }

    /// A connection opened (`+1`) or closed (`-1`) on an entry point.
    pub fn connection(&self, entrypoint: &Name, delta: i64) {
        self.open_connections
            .get_or_create(&ConnLabels {
                entrypoint: entrypoint.clone(),
                protocol: "TCP",
            })
            .inc_by(delta);
    }

    /// A request of `service` waited for a server.
    pub fn held(&self, service: &str) {
        self.held
            .get_or_create(&ServiceOnly {
                service: file_name(service),
            })
            .inc();
    }

    /// A server of `service` changed to `state`.
    pub fn state_change(&self, service: &str, url: &str, state: &'static str) {
        self.state_changes
            .get_or_create(&StateLabels {
                service: file_name(service),
                url: Name::from(url),
                state,
            })
            .inc();
    }

    /// A reload attempt finished.
    pub fn reload(&self, ok: bool) {
        self.reloads.inc();
        self.last_reload_success.set(i64::from(ok));
    }

    /// The text exposition (OpenMetrics text, which Prometheus reads), with server states taken
    /// from `upstreams` now.
    pub fn render(&self, plan: &bridge_plan::Plan, upstreams: &Upstreams) -> String {
        self.render_with(plan, upstreams, None)
    }

    /// [`Metrics::render`] with the certificates ACME holds.
    pub(crate) fn render_with(
        &self,
        plan: &bridge_plan::Plan,
        upstreams: &Upstreams,
        acme: Option<&crate::acme::Acme>,
    ) -> String {
        self.admin_state.clear();
        for name in plan.services.keys() {
            for (server, _, _) in upstreams.server_states(name).into_iter().flatten() {
                let Some(state) = upstreams.admin_state(&server) else {
                    continue;
                };
                if state != crate::upstream::AdminState::Ready {
                    self.admin_state
                        .get_or_create(&AdminLabels {
                            service: file_name(name),
                            url: Name::from(server.url()),
                            state: state.as_str(),
                        })
                        .set(1);
                }
            }
        }
        if let Some(acme) = acme {
            self.certs_not_after.clear();
            for (_, h) in acme.held() {
                let mut sans = h.names.clone();
                sans.sort();
                self.certs_not_after
                    .get_or_create(&CertLabels {
                        cn: h.stored.domain.main.clone(),
                        serial: h.serial.clone(),
                        sans: sans.join(","),
                    })
                    .set(h.not_after);
            }
        }
        if self.service_labels {
            self.server_up.clear();
            for name in plan.services.keys() {
                for (server, _, state) in upstreams.server_states(name).into_iter().flatten() {
                    let up = state == crate::upstream::ServerState::Up;
                    self.server_up
                        .get_or_create(&ServerLabels {
                            service: file_name(name),
                            url: Name::from(server.url()),
                        })
                        .set(i64::from(up));
                }
            }
        }
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

/// The classic Prometheus text format (0.0.4) of an OpenMetrics exposition, for scrapers and
/// tools that do not ask for OpenMetrics (`promtool check metrics` among them): counter families
/// are named with their `_total` suffix, and `# UNIT` / `# EOF` lines are left out.
pub(crate) fn to_prometheus_text(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut help: Option<&str> = None;
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if line.starts_with("# HELP ") {
            if let Some(h) = help.replace(line) {
                out.push_str(h);
                out.push('\n');
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, ""));
            let renamed = if kind == "counter" && !name.ends_with("_total") {
                format!("{name}_total")
            } else {
                name.to_owned()
            };
            if let Some(h) = help.take() {
                let text = h
                    .strip_prefix("# HELP ")
                    .and_then(|r| r.split_once(' '))
                    .map_or("", |(_, t)| t);
                out.push_str(&format!("# HELP {renamed} {text}\n"));
            }
            out.push_str(&format!("# TYPE {renamed} {kind}\n"));
            continue;
        }
        if let Some(h) = help.take() {
            out.push_str(h);
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// A plan key as Traefik names it in metrics and the API (`name@file`).
pub(crate) fn file_name(key: &str) -> Name {
    if key.contains('@') {
        Name::from(key)
    } else {
        Name(Arc::from(format!("{key}@file")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> bridge_plan::Metrics {
        bridge_plan::Metrics {
            entrypoint: "traefik".into(),
            buckets_us: vec![100_000, 300_000, 1_200_000, 5_000_000],
            entrypoint_labels: true,
            router_labels: true,
            service_labels: true,
            manual_routing: false,
            header_labels: Vec::new(),
            add_internals: false,
        }
    }

    #[test]
    fn requests_show_up_with_traefiks_names_and_buckets() {
        let m = Metrics::new(&cfg());
        let ep = Name::from("web");
        let (router, service) = (file_name("central"), file_name("central"));
        for code in [200, 200, 503] {
            m.request(&RequestSample {
                parents: &[],
                entrypoint: &ep,
                code,
                method: "GET",
                protocol: "http",
                router: Some(&router),
                service: Some(&service),
                header_values: &[],
                retries: u32::from(code == 503),
                seconds: 0.2,
            });
        }
        m.connection(&ep, 1);
        m.state_change("central", "http://a:5000", "DOWN");
        let plan = bridge_plan::Plan::example();
        let up = Upstreams::from_plan(&plan).ok();
        let text = up.map(|u| m.render(&plan, &u)).unwrap_or_default();
        for want in [
            "traefik_entrypoint_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",entrypoint=\"web\"} 2",
            "traefik_entrypoint_request_duration_seconds_bucket{le=\"0.3\",code=\"503\",method=\"GET\",protocol=\"http\",entrypoint=\"web\"} 1",
            "traefik_router_requests_total{code=\"503\",method=\"GET\",protocol=\"http\",router=\"central@file\",service=\"central@file\"} 1",
            "traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"central@file\"} 2",
            "traefik_service_retries_total{service=\"central@file\"} 1",
            "traefik_open_connections{entrypoint=\"web\",protocol=\"TCP\"} 1",
            "bridge_server_state_changes_total{service=\"central@file\",url=\"http://a:5000\",state=\"DOWN\"} 1",
            "traefik_service_server_up{service=\"whoami@file\"",
        ] {
            assert!(text.contains(want), "missing {want} in\n{text}");
        }
        let classic = to_prometheus_text(&text);
        assert!(classic.contains("# TYPE traefik_entrypoint_requests_total counter\n"));
        assert!(classic.contains("# HELP traefik_entrypoint_requests_total How many"));
        assert!(classic.contains("# TYPE traefik_entrypoint_request_duration_seconds histogram\n"));
        assert!(!classic.contains("# EOF"));
    }

    #[test]
    fn parent_routers_count_as_routers_of_their_muxer() {
        // Traefik 3.7.15: `parent@file` with service `parent@file-muxer`, for answers of its
        // children and for its own 404.
        let m = Metrics::new(&cfg());
        let ep = Name::from("web");
        let parents = [file_name("api")];
        let (child, service) = (file_name("users"), file_name("app"));
        for (code, router) in [(200, Some(&child)), (404, None)] {
            m.request(&RequestSample {
                parents: &parents,
                entrypoint: &ep,
                code,
                method: "GET",
                protocol: "http",
                router,
                service: router.map(|_| &service),
                header_values: &[],
                retries: 0,
                seconds: 0.2,
            });
        }
        let plan = bridge_plan::Plan::example();
        let text = Upstreams::from_plan(&plan)
            .ok()
            .map(|u| m.render(&plan, &u))
            .unwrap_or_default();
        for want in [
            "traefik_router_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",router=\"api@file\",service=\"api@file-muxer\"} 1",
            "traefik_router_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",router=\"users@file\",service=\"app@file\"} 1",
            "traefik_router_requests_total{code=\"404\",method=\"GET\",protocol=\"http\",router=\"api@file\",service=\"api@file-muxer\"} 1",
        ] {
            assert!(text.contains(want), "missing {want} in\n{text}");
        }
        assert!(!text.contains("code=\"404\",method=\"GET\",protocol=\"http\",router=\"users"));
    }

    #[test]
    fn header_labels_partition_the_request_counters_only() {
        let mut c = cfg();
        c.header_labels = vec![
            bridge_plan::HeaderLabel {
                label: "useragent".into(),
                header: "User-Agent".into(),
            },
            bridge_plan::HeaderLabel {
                label: "site".into(),
                header: "host".into(),
            },
        ];
        let m = Metrics::new(&c);
        let ep = Name::from("web");
        let (router, service) = (file_name("central"), file_name("central"));
        for agent in ["curl/8", "curl/8", ""] {
            let mut h = http::HeaderMap::new();
            if !agent.is_empty() {
                h.insert(http::header::USER_AGENT, agent.parse().unwrap());
            }
            h.insert(http::header::HOST, "scada.example".parse().unwrap());
            let values = m.header_values(&h);
            m.request(&RequestSample {
                parents: &[],
                entrypoint: &ep,
                code: 200,
                method: "GET",
                protocol: "http",
                router: Some(&router),
                service: Some(&service),
                header_values: &values,
                retries: 0,
                seconds: 0.2,
            });
        }
        let plan = bridge_plan::Plan::example();
        let text = Upstreams::from_plan(&plan)
            .ok()
            .map(|u| m.render(&plan, &u))
            .unwrap_or_default();
        // A missing field is an empty value; `Host` is always empty (Go keeps it out of the map).
        for want in [
            "traefik_entrypoint_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",entrypoint=\"web\",useragent=\"curl/8\",site=\"\"} 2",
            "traefik_entrypoint_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",entrypoint=\"web\",useragent=\"\",site=\"\"} 1",
            "traefik_router_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",router=\"central@file\",service=\"central@file\",useragent=\"curl/8\",site=\"\"} 2",
            "traefik_service_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",service=\"central@file\",useragent=\"\",site=\"\"} 1",
            // The durations are not partitioned, as in Traefik.
            "traefik_entrypoint_request_duration_seconds_count{code=\"200\",method=\"GET\",protocol=\"http\",entrypoint=\"web\"} 3",
        ] {
            assert!(text.contains(want), "missing {want} in\n{text}");
        }
    }
}
