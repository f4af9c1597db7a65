//! What the proxy serves about itself: the Traefik-compatible API and the dashboard ([`api`],
//! pure), `/metrics`, `/ping`, and Traefik's internal routes that answer before routing on the
//! entry points that carry them (`prometheus@internal` on the metrics entry point, the API on
//! the `api.insecure` entry point).

use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, Uri, header};

use crate::body::{Body, full, not_found};
use crate::runtime::{Entry, Runtime};

pub(crate) mod api;

impl Runtime {
    /// Traefik's internal routers that come before the plan's on this entry point: `/metrics`
    /// (TLS-only when the entry point serves TLS, like the routers there), then `/ping` and the
    /// API with `api.insecure`.
    pub(crate) fn before_routing<B>(
        &self,
        entry: &Entry,
        tls: bool,
        req: &Request<B>,
    ) -> Option<Response<Body>> {
        let path = req.uri().path();
        if path == "/metrics" && entry.metrics_here && (tls || entry.tls.is_none()) {
            return Some(self.metrics_response(req.headers()));
        }
        // Traefik's ping router (`PathPrefix(`/ping`)`, on `ping.entryPoint` unless
        // `manualRouting`); `api.insecure` alone serves no ping.
        if entry.ping_here && path.starts_with("/ping") {
            return Some(ping(
                self.plan.ping.as_ref(),
                self.is_terminating(),
                &self.plan_hash_value,
            ));
        }
        if entry.api_here {
            return self.api(req.method(), req.uri());
        }
        None
    }

    /// The Traefik-compatible API and the dashboard, if `uri` is one of their paths.
    pub(crate) fn api(&self, method: &Method, uri: &Uri) -> Option<Response<Body>> {
        if let Some(r) = self.certificates(method, uri.path()) {
            return Some(r);
        }
        if let Some(r) = self.peer_status(method, uri.path()) {
            return Some(r);
        }
        if let Some(r) = self.server_admin(method, uri) {
            return Some(r);
        }
        let r = api::handle(
            &self.plan,
            &self.upstreams,
            method,
            uri.path(),
            uri.query(),
            &self.started,
        )?;
        let mut resp = Response::new(full(r.body));
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

    /// What `path` names under `{base}/api/bridge/` (bridgectl's own endpoints), if anything.
    fn bridge_endpoint<'p>(&self, path: &'p str) -> Option<&'p str> {
        let base = self
            .plan
            .api
            .as_ref()
            .map_or("", |a| a.base_path.trim_end_matches('/'));
        path.strip_prefix(base)?.strip_prefix("/api/bridge/")
    }

    /// `GET {base}/api/bridge/certificates` (bridgectl's extension; Traefik's API lists no
    /// certificates): what each ACME resolver holds, issuer and validity included.
    fn certificates(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        if self.bridge_endpoint(path)? != "certificates"
            || (method != Method::GET && method != Method::HEAD)
        {
            return None;
        }
        let time = |secs: i64| {
            crate::observe::rfc3339_secs(std::time::Duration::from_secs(
                u64::try_from(secs).unwrap_or(0),
            ))
        };
        let list: Vec<serde_json::Value> = self
            .acme
            .held()
            .into_iter()
            .map(|(resolver, h)| {
                serde_json::json!({
                    "resolver": resolver,
                    "main": h.stored.domain.main,
                    "sans": h.stored.domain.sans,
                    "names": h.names,
                    "issuer": h.issuer,
                    "serial": h.serial,
                    "notBefore": time(h.not_before),
                    "notAfter": time(h.not_after),
                })
            })
            .collect();
        Some(json_answer(StatusCode::OK, &serde_json::Value::from(list)))
    }

    /// `GET {base}/api/bridge/peer` (bridgectl's extension): the other appliance of the pair
    /// (`--peer`) and whether it serves this plan; `{"configured": false}` without one.
    fn peer_status(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        if self.bridge_endpoint(path)? != "peer"
            || (method != Method::GET && method != Method::HEAD)
        {
            return None;
        }
        let value = match &self.peer {
            None => serde_json::json!({"configured": false}),
            Some(p) => {
                let seen = p.seen();
                serde_json::json!({
                    "configured": true,
                    "url": p.url,
                    "planHash": self.plan.hash,
                    "peerPlanHash": seen.plan_hash,
                    "state": seen.verdict(&self.plan.hash).as_str(),
                    "checkedAt": seen.checked,
                    "error": seen.error,
                })
            }
        };
        Some(json_answer(StatusCode::OK, &value))
    }

    /// `{base}/api/bridge/servers` (bridgectl's extension): `GET` lists every load-balancer
    /// server with its health and operator state; `POST ?service=S&url=U&state=drain|maintenance|ready`
    /// sets one. The state is the process's, never the plan's: it survives reloads (the server
    /// kept by service and URL) but not a restart.
    fn server_admin(&self, method: &Method, uri: &Uri) -> Option<Response<Body>> {
        if self.bridge_endpoint(uri.path())? != "servers" {
            return None;
        }
        let entry = |server: &crate::upstream::ServerRef| {
            let health = self.upstreams.state(server).map(|s| s.as_str());
            let admin = self.upstreams.admin_state(server).map(|a| a.as_str());
            serde_json::json!({
                "service": server.service(),
                "url": server.url(),
                "health": health,
                "state": admin,
            })
        };
        if method == Method::GET || method == Method::HEAD {
            let list: Vec<serde_json::Value> = self
                .plan
                .services
                .keys()
                .filter_map(|name| self.upstreams.server_states(name))
                .flatten()
                .map(|(server, _, _)| entry(&server))
                .collect();
            return Some(json_answer(StatusCode::OK, &serde_json::Value::from(list)));
        }
        if method != Method::POST && method != Method::PUT {
            return Some(json_answer(
                StatusCode::METHOD_NOT_ALLOWED,
                &serde_json::json!({"message": "use GET, or POST with service, url and state"}),
            ));
        }
        let mut service = None;
        let mut url = None;
        let mut state = None;
        for (k, v) in url::form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
            match &*k {
                "service" => service = Some(v.into_owned()),
                "url" => url = Some(v.into_owned()),
                "state" => state = Some(v.into_owned()),
                _ => {}
            }
        }
        let (Some(service), Some(url), Some(state)) = (service, url, state) else {
            return Some(json_answer(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"message": "service, url and state (ready, drain or maintenance) are required"}),
            ));
        };
        let Some(to) = crate::upstream::AdminState::parse(&state) else {
            return Some(json_answer(
                StatusCode::BAD_REQUEST,
                &serde_json::json!({"message": format!("state `{state}` is not ready, drain or maintenance")}),
            ));
        };
        let service = service.strip_suffix("@file").unwrap_or(&service).to_owned();
        let Some(server) = self.upstreams.server_ref(&service, &url) else {
            return Some(json_answer(
                StatusCode::NOT_FOUND,
                &serde_json::json!({"message": format!("service `{service}` has no server `{url}`")}),
            ));
        };
        let from = self.upstreams.set_admin_state(&server, to);
        self.tunnels
            .admin_changed(server.service(), server.url(), to);
        tracing::info!(
            service = server.service(),
            server = server.url(),
            "server state {} → {} (operator)",
            from.map_or("?", |f| f.as_str()),
            to.as_str()
        );
        Some(json_answer(StatusCode::OK, &entry(&server)))
    }

    /// `/metrics`: OpenMetrics when the scraper asks for it (Prometheus does), else the classic
    /// text format.
    pub(crate) fn metrics_response(&self, request: &HeaderMap) -> Response<Body> {
        let Some(m) = self.metrics() else {
            return not_found();
        };
        let openmetrics = m.render_with(&self.plan, &self.upstreams, Some(&self.acme));
        let wants_openmetrics = request
            .get(header::ACCEPT)
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
        let mut resp = Response::new(full(body));
        resp.headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        resp
    }
}

/// A JSON answer of bridgectl's own endpoints.
fn json_answer(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    let mut resp = Response::new(full(serde_json::to_vec(value).unwrap_or_default()));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The field of `/ping` answers naming the plan this process serves (bridgectl's extension), so
/// the appliances of a pair can compare plans without credentials for the API.
pub(crate) const PLAN_HASH_FIELD: &str = "bridge-plan-hash";

/// `ping@internal`'s answer.
pub(crate) fn ping(
    cfg: Option<&bridge_plan::Ping>,
    terminating: bool,
    plan_hash: &HeaderValue,
) -> Response<Body> {
    let mut resp = if terminating {
        let code = cfg.map_or(503, |p| p.terminating_status_code);
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        crate::body::text_owned(status, status.canonical_reason().unwrap_or("").to_owned())
    } else {
        // Traefik writes the status text itself: no `http.Error` fields (nosniff).
        crate::body::text_owned(StatusCode::OK, "OK".to_owned())
    };
    resp.headers_mut()
        .insert(PLAN_HASH_FIELD, plan_hash.clone());
    resp
}
