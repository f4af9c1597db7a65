//! The Traefik-compatible read-only API and the live dashboard page.
//!
//! [`handle`] is a pure function of the plan, the live server states and the request line: it does
//! no I/O, so the server decides where it is mounted (the `traefik` entry point when
//! `api.insecure`, or a router to `api@internal` / `dashboard@internal`) and adds nothing but the
//! response headers carried in [`ApiResponse`].
//!
//! Paths are relative to the plan's `api.base_path` (`/` when the plan has no `api`):
//!
//! | path | answer |
//! |---|---|
//! | `/api/overview` | counts per kind, features, providers |
//! | `/api/entrypoints`, `/api/entrypoints/{name}` | entry points, sorted by name |
//! | `/api/http/routers`, `/api/http/routers/{name}` | routers |
//! | `/api/http/services`, `/api/http/services/{name}` | services, with live `serverStatus` |
//! | `/api/http/middlewares`, `/api/http/middlewares/{name}` | middlewares (secrets redacted) |
//! | `/api/tcp/{routers,services,middlewares}`, `/api/udp/{routers,services}` | always `[]` |
//! | `/api/rawdata` | `{routers, services, middlewares}` maps keyed by name |
//! | `/api/version` | `{"Version", "Codename", "startDate"}` |
//! | `/dashboard/` | the dashboard page ([`DASHBOARD_HTML`]) |
//! | `/dashboard` | 301 to `/dashboard/` |
//! | `/` | 302 to `/dashboard/` |
//!
//! The dashboard paths (and `/`) are only answered when `api.dashboard` is set. Other methods than
//! `GET` and `HEAD` get 405; an unknown `/api/…` path gets 404 `{"message": …}`.
//!
//! # Shapes and deliberate differences from Traefik
//!
//! The JSON follows Traefik v3's `pkg/api` (field names, `status`, `usedBy`, `using`, `type`,
//! `priorityStr`, Go durations such as `"30s"` or `"1m30s"`, omitted empty optional fields), with
//! these choices:
//!
//! - **Names.** Entities from the plan are file-provider entities: a key without `@` is shown as
//!   `key@file` with `provider: "file"`; internal ones end in `@internal` (`provider: "internal"`).
//!   References (a router's `service` and `middlewares`, a weighted service's children, …) are shown
//!   qualified too, where Traefik repeats them as written: the plan only keeps resolved keys, and a
//!   qualified name is what `/api/http/services/{name}` expects.
//! - **Internal entities.** With `api.insecure`, the routers Traefik generates are listed:
//!   `api@internal` (``PathPrefix(`{base}/api`)``) and, with the dashboard, `dashboard@internal`
//!   (``PathPrefix(`{base}/`)``), both with the plan's `api.middlewares`; with `ping`, the
//!   `ping@internal` router unless a plan router already routes to `ping@internal`. Every
//!   `…@internal` service some router uses is listed (no `type`, as in Traefik). Traefik's internal
//!   `dashboard_redirect`/`dashboard_stripprefix` middlewares are not: this module answers those
//!   paths itself.
//! - **`serverStatus`** only ever holds `UP` or `DOWN`, as in Traefik (clients and Traefik's own
//!   dashboard know no other value). It says whether the load balancer would send traffic to the
//!   server now: [`ServerState::Up`] is `UP`, [`ServerState::Down`] is `DOWN`, and
//!   [`ServerState::Unknown`] (not probed yet) is `DOWN` when the health check sets
//!   `probe_before_traffic` (no request goes to the server before its first probe) and `UP`
//!   otherwise (Traefik starts every server up). Weight does not matter, as in Traefik.
//! - **Secrets are redacted**, which Traefik does not do: basicAuth `users` are shown as
//!   `name:[REDACTED]` (user names are kept so the configuration can be checked, password hashes
//!   never leave the process), and the values of credential headers (`Authorization`,
//!   `Proxy-Authorization`, `Cookie`) in health-check headers and in the headers middleware are
//!   replaced by `[REDACTED]`.
//! - **Status and counts.** A sealed plan has no invalid entity, so every `status` is `enabled`
//!   and the overview's `warnings` and `errors` are `0`; live health shows in `serverStatus`.
//! - **Lists** (every list endpoint): `search` (case-insensitive substring of the name, and of the
//!   rule for routers), `status`, for routers `serviceName` and `middlewareName`, `direction=desc`,
//!   and `page` / `per_page` (default [`DEFAULT_PER_PAGE`]). Lists are always sorted by name
//!   (`sortBy` is ignored). As in Traefik, [`ApiResponse::next_page`] (the `X-Next-Page` header) is
//!   set on every list answer and is `1` on the last page; a page past the end, or a `page` or
//!   `per_page` that is not a positive integer, gets 400.

use std::collections::{BTreeMap, BTreeSet};

use bridge_plan::{
    EntryPoint, HealthCheck, INTERNAL_SERVICE_SUFFIX, LoadBalancer, MiddlewareKind, Plan,
    ServiceKind,
};
use bytes::Bytes;
use http::{Method, StatusCode};
use serde_json::{Map, Value, json};

use crate::upstream::{ServerState, Upstreams};

/// The dashboard page: plain HTML, inline CSS and script, no external resources. It polls
/// `../api/http/routers`, `../api/http/services`, `../api/entrypoints` and `../api/version` every
/// 2 s (relative URLs, so it works under any base path).
pub(crate) const DASHBOARD_HTML: &str = include_str!("dashboard.html");

/// Page size of list endpoints when `per_page` is not given (Traefik's).
pub(crate) const DEFAULT_PER_PAGE: u32 = 100;

/// `Content-Type` of JSON answers (Traefik's).
pub(crate) const JSON_CONTENT_TYPE: &str = "application/json";

/// `Content-Type` of the dashboard page.
pub(crate) const HTML_CONTENT_TYPE: &str = "text/html; charset=utf-8";

/// `Content-Type` of plain-text answers (redirects, unknown dashboard files).
pub(crate) const TEXT_CONTENT_TYPE: &str = "text/plain; charset=utf-8";

/// Shown instead of secrets (password hashes, credential header values).
pub(crate) const REDACTED: &str = "[REDACTED]";

/// Codename reported by `/api/version`.
pub(crate) const CODENAME: &str = "bridge-runtime";

/// Priority of Traefik's generated `api@internal` and `ping@internal` routers (`math.MaxInt - 1`);
/// `dashboard@internal` has one less.
pub(crate) const INTERNAL_PRIORITY: i64 = i64::MAX - 1;

/// Request headers whose values are never shown.
const CREDENTIAL_HEADERS: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// An answer of [`handle`]: the server turns it into an HTTP response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiResponse {
    /// Response status.
    pub status: StatusCode,
    /// `Content-Type` header value.
    pub content_type: &'static str,
    /// Response body (also returned for `HEAD`; hyper does not send it).
    pub body: Bytes,
    /// `X-Next-Page` header value: set on every list answer, `1` on the last page (Traefik's
    /// convention).
    pub next_page: Option<u32>,
    /// `Location` header value of a redirect.
    pub location: Option<String>,
}

impl ApiResponse {
    fn json(status: StatusCode, value: &Value) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Self {
                status,
                content_type: JSON_CONTENT_TYPE,
                body: Bytes::from(body),
                next_page: None,
                location: None,
            },
            // Cannot happen for a `Value` (string keys only); answer rather than panic.
            Err(e) => Self::text(StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")),
        }
    }

    fn error(status: StatusCode, message: &str) -> Self {
        Self::json(status, &json!({ "message": message }))
    }

    fn text(status: StatusCode, body: String) -> Self {
        Self {
            status,
            content_type: TEXT_CONTENT_TYPE,
            body: Bytes::from(body),
            next_page: None,
            location: None,
        }
    }

    fn redirect(status: StatusCode, location: String) -> Self {
        let body = format!(
            "{} {}\n",
            status.as_u16(),
            status.canonical_reason().unwrap_or("Redirect")
        );
        Self {
            location: Some(location),
            ..Self::text(status, body)
        }
    }
}

/// Answers GET requests under the API base path; `None` when the path is not an API/dashboard path
/// (the server then routes the request as usual).
///
/// `path` is the request path as received (percent-encoded), `query` the raw query string,
/// `started` the runtime's start time in RFC 3339 (reported by `/api/version`).
pub(crate) fn handle(
    plan: &Plan,
    upstreams: &Upstreams,
    method: &Method,
    path: &str,
    query: Option<&str>,
    started: &str,
) -> Option<ApiResponse> {
    let base = plan
        .api
        .as_ref()
        .map_or("", |a| a.base_path.trim_end_matches('/'));
    let dashboard = plan.api.as_ref().is_none_or(|a| a.dashboard);
    let target = Target::of(base, dashboard, path)?;
    if method != Method::GET && method != Method::HEAD {
        return Some(ApiResponse::error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        ));
    }
    Some(match target {
        Target::Root => ApiResponse::redirect(StatusCode::FOUND, format!("{base}/dashboard/")),
        Target::DashboardNoSlash => {
            ApiResponse::redirect(StatusCode::MOVED_PERMANENTLY, format!("{base}/dashboard/"))
        }
        Target::Dashboard => ApiResponse {
            status: StatusCode::OK,
            content_type: HTML_CONTENT_TYPE,
            body: Bytes::from_static(DASHBOARD_HTML.as_bytes()),
            next_page: None,
            location: None,
        },
        Target::DashboardOther => {
            ApiResponse::text(StatusCode::NOT_FOUND, "404 page not found\n".to_owned())
        }
        Target::Api(sub) => match Query::parse(query) {
            Ok(q) => api(plan, upstreams, sub, &q, started),
            Err(message) => ApiResponse::error(StatusCode::BAD_REQUEST, &message),
        },
    })
}

/// What a request path designates, relative to the base path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target<'a> {
    /// The base path itself.
    Root,
    /// `/dashboard`.
    DashboardNoSlash,
    /// `/dashboard/` or `/dashboard/index.html`.
    Dashboard,
    /// Any other `/dashboard/…` path.
    DashboardOther,
    /// `/api` or `/api/…`: the part after `/api`.
    Api(&'a str),
}

impl<'a> Target<'a> {
    /// `base` has no trailing slash (`""` for `/`).
    fn of(base: &str, dashboard: bool, path: &'a str) -> Option<Self> {
        let rest = if base.is_empty() {
            path
        } else if path == base {
            "/"
        } else {
            path.strip_prefix(base).filter(|r| r.starts_with('/'))?
        };
        if let Some(sub) = rest.strip_prefix("/api")
            && (sub.is_empty() || sub.starts_with('/'))
        {
            return Some(Target::Api(sub));
        }
        if !dashboard {
            return None;
        }
        match rest {
            "/" => Some(Target::Root),
            "/dashboard" => Some(Target::DashboardNoSlash),
            "/dashboard/" | "/dashboard/index.html" => Some(Target::Dashboard),
            r if r.starts_with("/dashboard/") => Some(Target::DashboardOther),
            _ => None,
        }
    }
}

/// Answers `/api{sub}`.
fn api(plan: &Plan, ups: &Upstreams, sub: &str, q: &Query, started: &str) -> ApiResponse {
    let ok = |value: Value| ApiResponse::json(StatusCode::OK, &value);
    match sub {
        "/version" => {
            // `planHash` (bridgectl's extension): what this process serves, so the two
            // appliances of a pair can be compared.
            return ok(json!({
                "Version": env!("CARGO_PKG_VERSION"),
                "Codename": CODENAME,
                "startDate": started,
                "planHash": plan.hash,
            }));
        }
        "/overview" => return ok(overview(plan, ups)),
        "/rawdata" => return ok(rawdata(plan, ups)),
        "/entrypoints" => return list(&entrypoints(plan), q),
        "/http/routers" => return list(&routers(plan), q),
        "/http/services" => return list(&services(plan, ups), q),
        "/http/middlewares" => return list(&middlewares(plan), q),
        "/tcp/routers" | "/tcp/services" | "/tcp/middlewares" | "/udp/routers"
        | "/udp/services" => return list(&[], q),
        _ => {}
    }
    let one = |items: &[Item], what: &str, raw_name: &str| {
        let name = percent_decode(raw_name).unwrap_or_else(|| raw_name.to_owned());
        match items.iter().find(|i| i.name == name) {
            Some(item) => ok(item.repr()),
            None => ApiResponse::error(StatusCode::NOT_FOUND, &format!("{what} not found: {name}")),
        }
    };
    let named = |prefix: &str| sub.strip_prefix(prefix).filter(|n| !n.is_empty());
    if let Some(name) = named("/entrypoints/") {
        one(&entrypoints(plan), "entry point", name)
    } else if let Some(name) = named("/http/routers/") {
        one(&routers(plan), "router", name)
    } else if let Some(name) = named("/http/services/") {
        one(&services(plan, ups), "service", name)
    } else if let Some(name) = named("/http/middlewares/") {
        one(&middlewares(plan), "middleware", name)
    } else if let Some(name) = named("/tcp/routers/").or_else(|| named("/udp/routers/")) {
        one(&[], "router", name)
    } else if let Some(name) = named("/tcp/services/").or_else(|| named("/udp/services/")) {
        one(&[], "service", name)
    } else if let Some(name) = named("/tcp/middlewares/") {
        one(&[], "middleware", name)
    } else {
        ApiResponse::error(
            StatusCode::NOT_FOUND,
            &format!("unknown API path: /api{sub}"),
        )
    }
}

// ------------------------------------------------------------------------------------------------
// Lists: filtering and pagination
// ------------------------------------------------------------------------------------------------

/// The list parameters of a request.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Query {
    /// Lower-cased.
    search: String,
    status: String,
    service_name: String,
    middleware_name: String,
    descending: bool,
    page: u32,
    per_page: u32,
}

impl Query {
    /// Parses the query string; the first value of a repeated parameter counts (Go's
    /// `url.Values.Get`). `Err` holds the 400 message.
    fn parse(query: Option<&str>) -> Result<Self, String> {
        let mut values: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            values
                .entry(k.into_owned())
                .or_insert_with(|| v.into_owned());
        }
        let get = |key: &str| values.get(key).cloned().unwrap_or_default();
        let positive = |key: &str, default: u32| -> Result<u32, String> {
            match values.get(key).map(String::as_str) {
                None | Some("") => Ok(default),
                Some(raw) => raw
                    .parse::<u32>()
                    .ok()
                    .filter(|v| *v > 0)
                    .ok_or_else(|| format!("invalid request: {key}: {raw}")),
            }
        };
        Ok(Self {
            search: get("search").to_lowercase(),
            status: get("status"),
            service_name: get("serviceName"),
            middleware_name: get("middlewareName"),
            descending: get("direction").eq_ignore_ascii_case("desc"),
            per_page: positive("per_page", DEFAULT_PER_PAGE)?,
            page: positive("page", 1)?,
        })
    }

    fn keeps(&self, item: &Item) -> bool {
        if !self.status.is_empty() && !self.status.eq_ignore_ascii_case("enabled") {
            return false;
        }
        let router = item.router.as_ref();
        if !self.search.is_empty() {
            let found = item.name.to_lowercase().contains(&self.search)
                || router.is_some_and(|r| r.rule.to_lowercase().contains(&self.search));
            if !found {
                return false;
            }
        }
        if let Some(r) = router {
            if !self.service_name.is_empty() && r.service != qualify(&self.service_name) {
                return false;
            }
            if !self.middleware_name.is_empty()
                && !r.middlewares.contains(&qualify(&self.middleware_name))
            {
                return false;
            }
        }
        true
    }
}

/// One page of `items` (sorted by name) after filtering.
fn list(items: &[Item], q: &Query) -> ApiResponse {
    let mut kept: Vec<&Item> = items.iter().filter(|i| q.keeps(i)).collect();
    if q.descending {
        kept.reverse();
    }
    let len = kept.len();
    let per_page = q.per_page as usize;
    let start = (q.page as usize - 1).saturating_mul(per_page);
    if start != 0 && start >= len {
        return ApiResponse::error(
            StatusCode::BAD_REQUEST,
            &format!(
                "invalid request: page: {}, per_page: {}",
                q.page, q.per_page
            ),
        );
    }
    let end = start.saturating_add(per_page).min(len);
    let next_page = if (q.page as usize).saturating_mul(per_page) < len {
        q.page.saturating_add(1)
    } else {
        1
    };
    let page: Vec<Value> = kept
        .get(start..end)
        .unwrap_or_default()
        .iter()
        .map(|i| i.repr())
        .collect();
    ApiResponse {
        next_page: Some(next_page),
        ..ApiResponse::json(StatusCode::OK, &Value::Array(page))
    }
}

// ------------------------------------------------------------------------------------------------
// The entities
// ------------------------------------------------------------------------------------------------

/// One entity as the API shows it.
#[derive(Debug, Clone)]
struct Item {
    /// Qualified name (`whoami@file`); plain for entry points.
    name: String,
    /// Whether the representation carries `provider` (not for entry points).
    has_provider: bool,
    /// The `type` field of services and middlewares (lower-case kind).
    kind: Option<&'static str>,
    /// What `/api/rawdata` shows: the representation without `name`, `provider` and `type`.
    raw: Map<String, Value>,
    /// Routers only: what the list filters look at.
    router: Option<RouterRefs>,
}

#[derive(Debug, Clone)]
struct RouterRefs {
    rule: String,
    service: String,
    middlewares: Vec<String>,
}

impl Item {
    /// The list / single-entity representation.
    fn repr(&self) -> Value {
        let mut m = self.raw.clone();
        m.insert("name".into(), json!(self.name));
        if self.has_provider {
            m.insert("provider".into(), json!(provider(&self.name)));
        }
        if let Some(kind) = self.kind {
            m.insert("type".into(), json!(kind));
        }
        Value::Object(m)
    }
}

/// `key@file` for a plan key without a provider; keys that have one are kept.
fn qualify(key: &str) -> String {
    if key.contains('@') {
        key.to_owned()
    } else {
        format!("{key}@file")
    }
}

/// The provider part of a qualified name (Traefik: after the first `@`).
fn provider(name: &str) -> &str {
    name.split_once('@').map_or("file", |(_, p)| p)
}

fn sort_by_name(items: &mut [Item]) {
    items.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
}

/// A router as shown, from its parts (plan routers and generated internal routers alike).
struct RouterParts<'a> {
    name: String,
    entrypoints: Vec<String>,
    rule: String,
    rule_syntax: &'a str,
    priority: i64,
    middlewares: Vec<String>,
    /// Empty for a parent router.
    service: String,
    tls_options: Option<&'a str>,
    /// The routers whose child this one is.
    parent_refs: Vec<String>,
}

fn router_item(p: RouterParts<'_>) -> Item {
    let mut raw = Map::new();
    // A child router has no entry points (Traefik leaves the key out), a parent no service.
    if !p.entrypoints.is_empty() {
        raw.insert("entryPoints".into(), json!(p.entrypoints));
    }
    if !p.middlewares.is_empty() {
        raw.insert("middlewares".into(), json!(p.middlewares));
    }
    if !p.service.is_empty() {
        raw.insert("service".into(), json!(p.service));
    }
    if !p.parent_refs.is_empty() {
        raw.insert("parentRefs".into(), json!(p.parent_refs));
    }
    raw.insert("rule".into(), json!(p.rule));
    raw.insert("ruleSyntax".into(), json!(p.rule_syntax));
    raw.insert("priority".into(), json!(p.priority));
    raw.insert("priorityStr".into(), json!(p.priority.to_string()));
    if let Some(options) = p.tls_options {
        raw.insert("tls".into(), json!({ "options": options }));
    }
    raw.insert("status".into(), json!("enabled"));
    if !p.entrypoints.is_empty() {
        let using: BTreeSet<&String> = p.entrypoints.iter().collect();
        raw.insert("using".into(), json!(using));
    }
    Item {
        name: p.name,
        has_provider: true,
        kind: None,
        raw,
        router: Some(RouterRefs {
            rule: p.rule,
            service: p.service,
            middlewares: p.middlewares,
        }),
    }
}

/// The plan's routers and the internal ones Traefik would generate, sorted by name.
fn routers(plan: &Plan) -> Vec<Item> {
    let parents = plan.router_parents();
    let mut items: Vec<Item> = plan
        .routers
        .iter()
        .map(|(key, r)| {
            router_item(RouterParts {
                name: qualify(key),
                entrypoints: r.entrypoints.clone(),
                rule: r.rule.clone(),
                rule_syntax: r.rule_syntax.as_str(),
                priority: r.priority,
                middlewares: r.middlewares.iter().map(|m| qualify(m)).collect(),
                service: r
                    .service
                    .as_ref()
                    .map(|s| qualify(&s.to_string()))
                    .unwrap_or_default(),
                tls_options: r.tls.as_ref().map(|t| t.options.as_str()),
                parent_refs: parents
                    .get(key.as_str())
                    .into_iter()
                    .flatten()
                    .map(|p| qualify(p))
                    .collect(),
            })
        })
        .collect();
    if let Some(api) = plan.api.as_ref().filter(|a| a.insecure) {
        let base = api.base_path.trim_end_matches('/');
        let middlewares: Vec<String> = api.middlewares.iter().map(|m| qualify(m)).collect();
        items.push(router_item(RouterParts {
            name: "api@internal".into(),
            entrypoints: vec![api.entrypoint.clone()],
            rule: format!("PathPrefix(`{base}/api`)"),
            rule_syntax: "v3",
            priority: INTERNAL_PRIORITY,
            middlewares: middlewares.clone(),
            service: "api@internal".into(),
            tls_options: None,
            parent_refs: Vec::new(),
        }));
        if api.dashboard {
            items.push(router_item(RouterParts {
                name: "dashboard@internal".into(),
                entrypoints: vec![api.entrypoint.clone()],
                rule: format!("PathPrefix(`{base}/`)"),
                rule_syntax: "v3",
                priority: INTERNAL_PRIORITY - 1,
                middlewares,
                service: "dashboard@internal".into(),
                tls_options: None,
                parent_refs: Vec::new(),
            }));
        }
    }
    if let Some(ping) = &plan.ping
        && !plan
            .routers
            .values()
            .any(|r| r.service.as_ref().is_some_and(|s| s == "ping@internal"))
    {
        items.push(router_item(RouterParts {
            name: "ping@internal".into(),
            entrypoints: vec![ping.entrypoint.clone()],
            rule: "PathPrefix(`/ping`)".into(),
            rule_syntax: "v3",
            priority: INTERNAL_PRIORITY,
            middlewares: vec![],
            service: "ping@internal".into(),
            tls_options: None,
            parent_refs: Vec::new(),
        }));
    }
    sort_by_name(&mut items);
    items
}

/// Qualified entity name → names of the routers using it, sorted.
fn used_by<'a>(
    routers: &'a [Item],
    refs: impl Fn(&'a RouterRefs) -> Vec<&'a str>,
) -> BTreeMap<&'a str, Vec<&'a str>> {
    let mut map: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for item in routers {
        if let Some(r) = &item.router {
            for target in refs(r) {
                let users = map.entry(target).or_default();
                if !users.contains(&item.name.as_str()) {
                    users.push(&item.name);
                }
            }
        }
    }
    map
}

/// The plan's services and the internal services routers use, sorted by name.
fn services(plan: &Plan, ups: &Upstreams) -> Vec<Item> {
    let routers = routers(plan);
    let used_by = used_by(&routers, |r| {
        (!r.service.is_empty())
            .then_some(r.service.as_str())
            .into_iter()
            .collect()
    });
    let users = |name: &str| json!(used_by.get(name).cloned().unwrap_or_default());
    let mut items = Vec::with_capacity(plan.services.len());
    for (key, service) in &plan.services {
        let name = qualify(key);
        let mut raw = Map::new();
        let kind = match &service.kind {
            ServiceKind::LoadBalancer(lb) => {
                raw.insert("loadBalancer".into(), load_balancer(lb));
                "loadbalancer"
            }
            ServiceKind::Weighted(w) => {
                let mut m = children(&w.services, w.health_check);
                if let Some(c) = &w.sticky {
                    m.insert("sticky".into(), sticky(c));
                }
                raw.insert("weighted".into(), Value::Object(m));
                "weighted"
            }
            ServiceKind::HighestRandomWeight(h) => {
                let m = children(&h.services, h.health_check);
                raw.insert("highestRandomWeight".into(), Value::Object(m));
                "highestrandomweight"
            }
            ServiceKind::Failover(f) => {
                let mut m = Map::new();
                m.insert("service".into(), json!(qualify(&f.service)));
                m.insert("fallback".into(), json!(qualify(&f.fallback)));
                if f.health_check {
                    m.insert("healthCheck".into(), json!({}));
                }
                if let Some(e) = &f.errors {
                    let status: Vec<String> = e
                        .status
                        .iter()
                        .map(|r| {
                            if r.from == r.to {
                                r.from.to_string()
                            } else {
                                format!("{}-{}", r.from, r.to)
                            }
                        })
                        .collect();
                    m.insert(
                        "errors".into(),
                        json!({
                            "status": status,
                            "maxRequestBodyBytes": e
                                .max_request_body_bytes
                                .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
                        }),
                    );
                }
                raw.insert("failover".into(), Value::Object(m));
                "failover"
            }
            ServiceKind::Mirroring(m) => {
                let mirrors: Vec<Value> = m
                    .mirrors
                    .iter()
                    .map(|r| json!({ "name": qualify(&r.service), "percent": r.percent }))
                    .collect();
                raw.insert(
                    "mirroring".into(),
                    json!({
                        "service": qualify(&m.service),
                        "mirrorBody": m.mirror_body,
                        // Traefik's "no limit" is -1.
                        "maxBodySize": m.max_body_size.map_or(json!(-1), |v| json!(v)),
                        "mirrors": mirrors,
                    }),
                );
                "mirroring"
            }
        };
        raw.insert("status".into(), json!("enabled"));
        raw.insert("usedBy".into(), users(&name));
        if let ServiceKind::LoadBalancer(lb) = &service.kind
            && let Some(states) = ups.server_states(key)
        {
            let status: Map<String, Value> = states
                .iter()
                .map(|(server, _, state)| {
                    let shown = server_status(*state, lb.health_check.as_ref());
                    (server.url().to_owned(), json!(shown))
                })
                .collect();
            raw.insert("serverStatus".into(), Value::Object(status));
            // bridgectl's extension: servers an operator drained or put in maintenance (Traefik
            // has no such state; serverStatus keeps Traefik's UP/DOWN).
            let admin: Map<String, Value> = states
                .iter()
                .filter_map(|(server, _, _)| {
                    let a = ups.admin_state(server)?;
                    (a != crate::upstream::AdminState::Ready)
                        .then(|| (server.url().to_owned(), json!(a.as_str())))
                })
                .collect();
            if !admin.is_empty() {
                raw.insert("bridgeServerState".into(), Value::Object(admin));
            }
        }
        items.push(Item {
            name,
            has_provider: true,
            kind: Some(kind),
            raw,
            router: None,
        });
    }
    let internal: BTreeSet<&str> = routers
        .iter()
        .filter_map(|r| r.router.as_ref())
        .map(|r| r.service.as_str())
        .filter(|s| s.ends_with(INTERNAL_SERVICE_SUFFIX))
        .collect();
    for name in internal {
        let mut raw = Map::new();
        raw.insert("status".into(), json!("enabled"));
        raw.insert("usedBy".into(), users(name));
        items.push(Item {
            name: name.to_owned(),
            has_provider: true,
            kind: None,
            raw,
            router: None,
        });
    }
    sort_by_name(&mut items);
    items
}

/// `UP` or `DOWN` for a server: whether its load balancer would send it traffic now (see the
/// module documentation).
pub(crate) fn server_status(
    state: ServerState,
    health_check: Option<&HealthCheck>,
) -> &'static str {
    match state {
        ServerState::Up => "UP",
        ServerState::Down => "DOWN",
        ServerState::Unknown if health_check.is_some_and(|hc| hc.probe_before_traffic) => "DOWN",
        ServerState::Unknown => "UP",
    }
}

fn load_balancer(lb: &LoadBalancer) -> Value {
    let servers: Vec<Value> = lb
        .servers
        .iter()
        .map(|s| {
            let mut m = Map::new();
            m.insert("url".into(), json!(s.url));
            // Traefik only shows a weight that was set; 1 is the default.
            if s.weight != 1 {
                m.insert("weight".into(), json!(s.weight));
            }
            Value::Object(m)
        })
        .collect();
    let mut m = Map::new();
    m.insert("servers".into(), Value::Array(servers));
    m.insert("passHostHeader".into(), json!(lb.pass_host_header));
    m.insert(
        "strategy".into(),
        json!(match lb.strategy {
            bridge_plan::Strategy::Wrr => "wrr",
            bridge_plan::Strategy::Hrw => "hrw",
            bridge_plan::Strategy::P2c => "p2c",
            bridge_plan::Strategy::Leasttime => "leasttime",
        }),
    );
    if let Some(hc) = &lb.health_check {
        m.insert("healthCheck".into(), health_check(hc));
    }
    if let Some(transport) = &lb.servers_transport {
        m.insert("serversTransport".into(), json!(transport));
    }
    if let Some(c) = &lb.sticky {
        m.insert("sticky".into(), sticky(c));
    }
    Value::Object(m)
}

fn health_check(hc: &HealthCheck) -> Value {
    let mut m = Map::new();
    if let Some(scheme) = &hc.scheme {
        m.insert("scheme".into(), json!(scheme));
    }
    m.insert("path".into(), json!(hc.path));
    m.insert("method".into(), json!(hc.method));
    if let Some(status) = hc.status {
        m.insert("status".into(), json!(status));
    }
    if let Some(port) = hc.port {
        m.insert("port".into(), json!(port));
    }
    m.insert("interval".into(), json!(go_duration(hc.interval_ms)));
    m.insert(
        "unhealthyInterval".into(),
        json!(go_duration(hc.unhealthy_interval_ms)),
    );
    m.insert("timeout".into(), json!(go_duration(hc.timeout_ms)));
    if let Some(hostname) = &hc.hostname {
        m.insert("hostname".into(), json!(hostname));
    }
    m.insert("followRedirects".into(), json!(hc.follow_redirects));
    if !hc.headers.is_empty() {
        m.insert("headers".into(), headers_map(&hc.headers));
    }
    Value::Object(m)
}

/// Header name → value, credential header values redacted.
fn headers_map(headers: &BTreeMap<String, String>) -> Value {
    let m: Map<String, Value> = headers
        .iter()
        .map(|(name, value)| {
            let secret = CREDENTIAL_HEADERS
                .iter()
                .any(|c| name.eq_ignore_ascii_case(c));
            let shown = if secret && !value.is_empty() {
                REDACTED
            } else {
                value.as_str()
            };
            (name.clone(), json!(shown))
        })
        .collect();
    Value::Object(m)
}

/// The plan's middlewares, sorted by name.
fn middlewares(plan: &Plan) -> Vec<Item> {
    let routers = routers(plan);
    let used_by = used_by(&routers, |r| {
        r.middlewares.iter().map(String::as_str).collect()
    });
    let mut items: Vec<Item> = plan
        .middlewares
        .iter()
        .map(|(key, mw)| {
            let name = qualify(key);
            let (field, kind, config) = middleware_config(&mw.kind);
            let mut raw = Map::new();
            raw.insert(field.into(), config);
            raw.insert("status".into(), json!("enabled"));
            raw.insert(
                "usedBy".into(),
                json!(used_by.get(name.as_str()).cloned().unwrap_or_default()),
            );
            Item {
                name,
                has_provider: true,
                kind: Some(kind),
                raw,
                router: None,
            }
        })
        .collect();
    sort_by_name(&mut items);
    items
}

/// A weighted or highestRandomWeight service's `services` (and `healthCheck` when it is set).
fn children(services: &[bridge_plan::WeightedRef], health_check: bool) -> Map<String, Value> {
    let list: Vec<Value> = services
        .iter()
        .map(|c| json!({ "name": qualify(&c.service), "weight": c.weight }))
        .collect();
    let mut m = Map::new();
    m.insert("services".into(), Value::Array(list));
    if health_check {
        m.insert("healthCheck".into(), json!({}));
    }
    m
}

/// A sticky cookie as Traefik shows it: the effective cookie (the name it derived, the path it
/// defaults).
fn sticky(c: &bridge_plan::StickyCookie) -> Value {
    let mut cookie = Map::new();
    cookie.insert("name".into(), json!(c.name));
    if c.secure {
        cookie.insert("secure".into(), json!(true));
    }
    if c.http_only {
        cookie.insert("httpOnly".into(), json!(true));
    }
    if let Some(s) = c.same_site {
        cookie.insert("sameSite".into(), json!(s.as_str().to_ascii_lowercase()));
    }
    if let Some(age) = c.max_age {
        cookie.insert("maxAge".into(), json!(age));
    }
    if let Some(p) = &c.path {
        cookie.insert("path".into(), json!(p));
    }
    if let Some(d) = &c.domain {
        cookie.insert("domain".into(), json!(d));
    }
    json!({ "cookie": cookie })
}

/// (Traefik field, `type`, configuration) of a middleware, with Go's `omitempty`: empty strings,
/// lists and maps, `false`, `0` and `null` are left out.
fn middleware_config(kind: &MiddlewareKind) -> (&'static str, &'static str, Value) {
    let (field, kind, value) = match kind {
        MiddlewareKind::StripPrefix(s) => (
            "stripPrefix",
            "stripprefix",
            json!({ "prefixes": s.prefixes }),
        ),
        MiddlewareKind::StripPrefixRegex(s) => (
            "stripPrefixRegex",
            "stripprefixregex",
            json!({ "regex": s.regex }),
        ),
        MiddlewareKind::AddPrefix(a) => ("addPrefix", "addprefix", json!({ "prefix": a.prefix })),
        MiddlewareKind::ReplacePath(r) => ("replacePath", "replacepath", json!({ "path": r.path })),
        MiddlewareKind::ReplacePathRegex(r) => (
            "replacePathRegex",
            "replacepathregex",
            json!({ "regex": r.regex, "replacement": r.replacement }),
        ),
        MiddlewareKind::Headers(h) => (
            "headers",
            "headers",
            json!({
                "customRequestHeaders": headers_map(&h.custom_request_headers),
                "customResponseHeaders": headers_map(&h.custom_response_headers),
                "accessControlAllowCredentials": h.access_control_allow_credentials,
                "accessControlAllowHeaders": h.access_control_allow_headers,
                "accessControlAllowMethods": h.access_control_allow_methods,
                "accessControlAllowOriginList": h.access_control_allow_origin_list,
                "accessControlExposeHeaders": h.access_control_expose_headers,
                "accessControlMaxAge": h.access_control_max_age,
                "addVaryHeader": h.add_vary_header,
                "stsSeconds": h.sts_seconds,
                "stsIncludeSubdomains": h.sts_include_subdomains,
                "stsPreload": h.sts_preload,
                "forceSTSHeader": h.force_sts_header,
                "frameDeny": h.frame_deny,
                "customFrameOptionsValue": h.custom_frame_options_value,
                "contentTypeNosniff": h.content_type_nosniff,
                "browserXssFilter": h.browser_xss_filter,
                "contentSecurityPolicy": h.content_security_policy,
                "referrerPolicy": h.referrer_policy,
                "permissionsPolicy": h.permissions_policy,
            }),
        ),
        MiddlewareKind::RedirectScheme(r) => (
            "redirectScheme",
            "redirectscheme",
            json!({ "scheme": r.scheme, "port": r.port, "permanent": r.permanent }),
        ),
        MiddlewareKind::RedirectRegex(r) => (
            "redirectRegex",
            "redirectregex",
            json!({ "regex": r.regex, "replacement": r.replacement, "permanent": r.permanent }),
        ),
        // Deliberately not Traefik's answer, which shows every `user:hash` entry: password hashes
        // never leave the process (an API reachable by mistake must not hand out material for
        // offline cracking). User names are kept so the configuration can still be checked.
        MiddlewareKind::BasicAuth(b) => {
            let users: Vec<String> = b
                .users
                .iter()
                .map(|entry| match entry.split_once(':') {
                    Some((user, _)) => format!("{user}:{REDACTED}"),
                    None => REDACTED.to_owned(),
                })
                .collect();
            (
                "basicAuth",
                "basicauth",
                json!({
                    "users": users,
                    "usersFile": b.users_file,
                    "realm": b.realm,
                    "headerField": b.header_field,
                    "removeHeader": b.remove_header,
                }),
            )
        }
        // The plan holds the effective memory sizes; Traefik shows what was written, and 1 MiB
        // is what an unwritten one means.
        MiddlewareKind::Buffering(b) => (
            "buffering",
            "buffering",
            json!({
                "maxRequestBodyBytes": b.max_request_body_bytes,
                "memRequestBodyBytes": (b.mem_request_body_bytes != 1 << 20)
                    .then_some(b.mem_request_body_bytes),
                "maxResponseBodyBytes": b.max_response_body_bytes,
                "memResponseBodyBytes": (b.mem_response_body_bytes != 1 << 20)
                    .then_some(b.mem_response_body_bytes),
                "retryExpression": b.retry_expression,
            }),
        ),
        MiddlewareKind::GrpcWeb(g) => (
            "grpcWeb",
            "grpcweb",
            json!({ "allowOrigins": g.allow_origins }),
        ),
        MiddlewareKind::Retry(r) => (
            "retry",
            "retry",
            json!({
                "attempts": r.attempts,
                "initialInterval": (r.initial_interval_ms != 0)
                    .then(|| go_duration(r.initial_interval_ms)),
            }),
        ),
        MiddlewareKind::IpAllowList(a) => (
            "ipAllowList",
            "ipallowlist",
            json!({
                "sourceRange": a.source_range,
                "ipStrategy": omit_empty(json!({ "depth": a.depth, "excludedIPs": a.excluded_ips })),
                "rejectStatusCode": a.reject_status_code,
            }),
        ),
        MiddlewareKind::RateLimit(r) => (
            "rateLimit",
            "ratelimit",
            json!({
                "average": r.average,
                "period": format!("{}ms", r.period_ms),
                "burst": r.burst,
                "sourceCriterion": source_criterion(&r.source),
            }),
        ),
        MiddlewareKind::InFlightReq(f) => (
            "inFlightReq",
            "inflightreq",
            json!({ "amount": f.amount, "sourceCriterion": source_criterion(&f.source) }),
        ),
        MiddlewareKind::ForwardAuth(f) => (
            "forwardAuth",
            "forwardauth",
            json!({
                "address": f.address,
                "tls": omit_empty(json!({
                    "ca": f.tls.ca.as_ref().map(ToString::to_string),
                    "insecureSkipVerify": f.tls.insecure_skip_verify,
                })),
                "trustForwardHeader": match f.trust_forward_header {
                    bridge_plan::ForwardHeaderTrust::Unset => Value::Null,
                    bridge_plan::ForwardHeaderTrust::Trusted => json!(true),
                    bridge_plan::ForwardHeaderTrust::Untrusted => json!(false),
                },
                "authResponseHeaders": f.auth_response_headers,
                "authResponseHeadersRegex": f.auth_response_headers_regex,
                "authRequestHeaders": f.auth_request_headers,
                "addAuthCookiesToResponse": f.add_auth_cookies_to_response,
                "headerField": f.header_field,
                "forwardBody": f.forward_body,
                "maxBodySize": f.max_body_size.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX)),
                "maxResponseBodySize": f.max_response_body_size,
                "preserveLocationHeader": f.preserve_location_header,
                "preserveRequestMethod": f.preserve_request_method,
                "authSigninURL": f.auth_signin_url,
            }),
        ),
        MiddlewareKind::CircuitBreaker(c) => (
            "circuitBreaker",
            "circuitbreaker",
            json!({
                "expression": c.expression,
                "checkPeriod": format!("{}ms", c.check_period_ms),
                "fallbackDuration": format!("{}ms", c.fallback_duration_ms),
                "recoveryDuration": format!("{}ms", c.recovery_duration_ms),
                "responseCode": c.response_code,
            }),
        ),
        MiddlewareKind::DigestAuth(d) => {
            let mut v = Map::new();
            if !d.users.is_empty() {
                // HA1 hashes are redacted as basicAuth's are: an MD5 of the password is as good
                // as the password for digest authentication.
                let users: Vec<String> = d
                    .users
                    .iter()
                    .map(|entry| match entry.rsplit_once(':') {
                        Some((user_realm, _)) => format!("{user_realm}:{REDACTED}"),
                        None => REDACTED.to_owned(),
                    })
                    .collect();
                v.insert("users".into(), json!(users));
            }
            if let Some(f) = &d.users_file {
                v.insert("usersFile".into(), json!(f));
            }
            v.insert("realm".into(), json!(d.realm));
            if let Some(h) = &d.header_field {
                v.insert("headerField".into(), json!(h));
            }
            if d.remove_header {
                v.insert("removeHeader".into(), Value::Bool(true));
            }
            ("digestAuth", "digestauth", Value::Object(v))
        }
        MiddlewareKind::PassTlsClientCert(p) => {
            let dn = |f: &bridge_plan::DistinguishedNameFields, subject: bool| {
                let mut m = Map::new();
                for (on, key) in [
                    (f.country, "country"),
                    (f.province, "province"),
                    (f.locality, "locality"),
                    (f.organization, "organization"),
                    (f.organizational_unit && subject, "organizationalUnit"),
                    (f.common_name, "commonName"),
                    (f.serial_number, "serialNumber"),
                    (f.domain_component, "domainComponent"),
                ] {
                    if on {
                        m.insert(key.to_owned(), Value::Bool(true));
                    }
                }
                m
            };
            let mut v = Map::new();
            if p.pem {
                v.insert("pem".into(), Value::Bool(true));
            }
            if let Some(i) = &p.info {
                let mut info = Map::new();
                for (on, key) in [
                    (i.not_after, "notAfter"),
                    (i.not_before, "notBefore"),
                    (i.sans, "sans"),
                    (i.serial_number, "serialNumber"),
                ] {
                    if on {
                        info.insert(key.to_owned(), Value::Bool(true));
                    }
                }
                for (key, m) in [
                    ("subject", dn(&i.subject, true)),
                    ("issuer", dn(&i.issuer, false)),
                ] {
                    if !m.is_empty() {
                        info.insert(key.to_owned(), Value::Object(m));
                    }
                }
                v.insert("info".into(), Value::Object(info));
            }
            ("passTLSClientCert", "passtlsclientcert", Value::Object(v))
        }
        MiddlewareKind::EncodedCharacters(e) => {
            use bridge_plan::EncodedCharacter as C;
            // Traefik's options are the allowed ones; false ones are omitted.
            let allowed: Map<String, Value> = [
                (C::Slash, "allowEncodedSlash"),
                (C::BackSlash, "allowEncodedBackSlash"),
                (C::NullCharacter, "allowEncodedNullCharacter"),
                (C::Semicolon, "allowEncodedSemicolon"),
                (C::Percent, "allowEncodedPercent"),
                (C::QuestionMark, "allowEncodedQuestionMark"),
                (C::Hash, "allowEncodedHash"),
            ]
            .into_iter()
            .filter(|(c, _)| !e.denied.contains(c))
            .map(|(_, k)| (k.to_owned(), Value::Bool(true)))
            .collect();
            (
                "encodedCharacters",
                "encodedcharacters",
                Value::Object(allowed),
            )
        }
        MiddlewareKind::ContentType(c) => (
            "contentType",
            "contenttype",
            if c.detect {
                json!({})
            } else {
                json!({ "autoDetect": false })
            },
        ),
        MiddlewareKind::Compress(c) => {
            let (excluded, included) = match &c.media_types {
                // Traefik shows the configuration as written; its built-in gRPC entry is not.
                bridge_plan::MediaTypeFilter::Exclude(t) => (
                    t.iter()
                        .filter(|t| *t != "application/grpc")
                        .collect::<Vec<_>>(),
                    Vec::new(),
                ),
                bridge_plan::MediaTypeFilter::Include(t) => (Vec::new(), t.iter().collect()),
            };
            (
                "compress",
                "compress",
                json!({
                    "excludedContentTypes": excluded,
                    "includedContentTypes": included,
                    "minResponseBodyBytes": c.min_response_body_bytes,
                    "encodings": c.encodings.iter().map(|e| e.token()).collect::<Vec<_>>(),
                    "defaultEncoding": c.default_encoding.map(|e| e.token()),
                }),
            )
        }
        MiddlewareKind::Errors(e) => (
            "errors",
            "errors",
            json!({
                "status": e.status.iter().map(ToString::to_string).collect::<Vec<_>>(),
                "statusRewrites": e
                    .status_rewrites
                    .iter()
                    .map(|r| (r.range.to_string(), json!(r.status)))
                    .collect::<Map<_, _>>(),
                "service": e.service,
                "query": e.query,
                "errorRequestHeaders": e.error_request_headers,
            }),
        ),
    };
    (field, kind, omit_empty(value))
}

/// Removes the members Go's `omitempty` would leave out (one level; empty objects included).
/// A sourceCriterion as Traefik's API shows it.
fn source_criterion(c: &bridge_plan::SourceCriterion) -> Value {
    match c {
        bridge_plan::SourceCriterion::Ip(s) => json!({ "ipStrategy": {
            "depth": s.depth,
            "excludedIPs": s.excluded_ips,
            "ipv6Subnet": s.ipv6_subnet,
        }}),
        bridge_plan::SourceCriterion::RequestHeader(h) => json!({ "requestHeaderName": h }),
        bridge_plan::SourceCriterion::RequestHost => json!({ "requestHost": true }),
    }
}

fn omit_empty(value: Value) -> Value {
    match value {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(_, v)| match v {
                    Value::Null => false,
                    Value::Bool(b) => *b,
                    Value::Number(n) => n.as_f64() != Some(0.0),
                    Value::String(s) => !s.is_empty(),
                    Value::Array(a) => !a.is_empty(),
                    Value::Object(o) => !o.is_empty(),
                })
                .collect(),
        ),
        other => other,
    }
}

/// The entry points, sorted by name.
fn entrypoints(plan: &Plan) -> Vec<Item> {
    // BTreeMap: already in name order.
    plan.entrypoints
        .iter()
        .map(|(name, ep)| Item {
            name: name.clone(),
            has_provider: false,
            kind: None,
            raw: entrypoint(plan, ep),
            router: None,
        })
        .collect()
}

fn entrypoint(plan: &Plan, ep: &EntryPoint) -> Map<String, Value> {
    let t = &ep.timeouts;
    let mut forwarded = Map::new();
    forwarded.insert("insecure".into(), json!(ep.forwarded_headers.insecure));
    if !ep.forwarded_headers.trusted_ips.is_empty() {
        forwarded.insert("trustedIPs".into(), json!(ep.forwarded_headers.trusted_ips));
    }
    let mut http = Map::new();
    if let Some(r) = &ep.redirect {
        // Traefik's `to` is an entry point name or an address; name the entry point on that port
        // when there is one.
        let to = plan
            .entrypoints
            .iter()
            .find(|(_, other)| other.port == r.port)
            .map_or_else(|| format!(":{}", r.port), |(name, _)| name.clone());
        http.insert(
            "redirections".into(),
            json!({ "entryPoint": {
                "to": to, "scheme": r.scheme, "permanent": r.permanent, "priority": r.priority
            } }),
        );
    }
    if let Some(tls) = &ep.tls {
        http.insert("tls".into(), json!({ "options": tls.options }));
    }
    http.insert("maxHeaderBytes".into(), json!(ep.max_header_bytes));
    let mut m = Map::new();
    m.insert("address".into(), json!(ep.address));
    m.insert(
        "transport".into(),
        json!({
            "lifeCycle": {
                "requestAcceptGraceTimeout": go_duration(t.request_accept_grace_ms),
                "graceTimeOut": go_duration(t.grace_ms),
            },
            "respondingTimeouts": {
                "readTimeout": go_duration(t.read_ms),
                "writeTimeout": go_duration(t.write_ms),
                "idleTimeout": go_duration(t.idle_ms),
            },
        }),
    );
    m.insert("forwardedHeaders".into(), Value::Object(forwarded));
    m.insert("http".into(), Value::Object(http));
    m
}

// ------------------------------------------------------------------------------------------------
// Overview and raw data
// ------------------------------------------------------------------------------------------------

fn overview(plan: &Plan, ups: &Upstreams) -> Value {
    let counts = |total: usize| json!({ "total": total, "warnings": 0, "errors": 0 });
    json!({
        "http": {
            "routers": counts(routers(plan).len()),
            "services": counts(services(plan, ups).len()),
            "middlewares": counts(middlewares(plan).len()),
        },
        "tcp": { "routers": counts(0), "services": counts(0), "middlewares": counts(0) },
        "udp": { "routers": counts(0), "services": counts(0) },
        "features": { "tracing": "", "metrics": "", "accessLog": false },
        "providers": ["File"],
    })
}

fn rawdata(plan: &Plan, ups: &Upstreams) -> Value {
    let by_name = |items: Vec<Item>| -> Map<String, Value> {
        items
            .into_iter()
            .map(|i| (i.name, Value::Object(i.raw)))
            .collect()
    };
    json!({
        "routers": by_name(routers(plan)),
        "middlewares": by_name(middlewares(plan)),
        "services": by_name(services(plan, ups)),
        "planHash": plan.hash,
    })
}

// ------------------------------------------------------------------------------------------------
// Helpers
// ------------------------------------------------------------------------------------------------

/// Re-exported for callers of this module; the formatter lives in the plan crate.
pub(crate) use bridge_plan::go_duration;

/// Decodes `%XX` escapes of a path segment (`+` stays `+`); `None` when malformed or not UTF-8.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&b) = bytes.get(i) {
        if b == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(b);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_plan::{
        Api, BasicAuth, Failover, Middleware, Ping, Retry, Router, Service, StripPrefix,
    };

    const STARTED: &str = "2026-01-02T03:04:05Z";

    fn get_q(plan: &Plan, ups: &Upstreams, path: &str, query: Option<&str>) -> ApiResponse {
        handle(plan, ups, &Method::GET, path, query, STARTED)
            .unwrap_or_else(|| panic!("{path} is not an API path"))
    }

    fn get(plan: &Plan, ups: &Upstreams, path: &str) -> ApiResponse {
        get_q(plan, ups, path, None)
    }

    fn body(resp: &ApiResponse) -> Value {
        assert_eq!(resp.content_type, JSON_CONTENT_TYPE);
        serde_json::from_slice(&resp.body).unwrap()
    }

    fn example() -> (Plan, Upstreams) {
        let plan = Plan::example();
        let ups = Upstreams::from_plan(&plan).unwrap();
        (plan, ups)
    }

    fn names(v: &Value) -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|i| i["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The example plus an insecure API on `traefik`, ping, a basic-auth and a strip-prefix
    /// middleware, a failover service and two more entry points.
    fn rich() -> (Plan, Upstreams) {
        let mut plan = Plan::example();
        let web = plan.entrypoints["web"].clone();
        let mut traefik = web.clone();
        traefik.address = ":8080".into();
        traefik.port = 8080;
        let mut admin = web;
        admin.address = "127.0.0.1:9000".into();
        admin.port = 9000;
        plan.entrypoints.insert("traefik".into(), traefik);
        plan.entrypoints.insert("admin".into(), admin);
        let source = plan.services["whoami"].source.clone();
        plan.middlewares.insert(
            "auth".into(),
            Middleware {
                source: source.clone(),
                kind: MiddlewareKind::BasicAuth(BasicAuth {
                    users: vec![
                        "alice:$2y$05$abcdefghijklmnopqrstuvABCDEFGHIJKLMNOPQRSTUVWXYZ01234".into(),
                        "bob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=".into(),
                    ],
                    users_file: None,
                    realm: "traefik".into(),
                    header_field: None,
                    remove_header: false,
                }),
            },
        );
        plan.middlewares.insert(
            "strip".into(),
            Middleware {
                source: source.clone(),
                kind: MiddlewareKind::StripPrefix(StripPrefix {
                    prefixes: vec!["/app".into()],
                }),
            },
        );
        plan.middlewares.insert(
            "retry".into(),
            Middleware {
                source: source.clone(),
                kind: MiddlewareKind::Retry(Retry {
                    attempts: 3,
                    initial_interval_ms: 0,
                }),
            },
        );
        plan.services.insert(
            "ha".into(),
            Service {
                middlewares: Vec::new(),
                source,
                kind: ServiceKind::Failover(Failover {
                    service: "whoami".into(),
                    fallback: "whoami".into(),
                    health_check: true,
                    errors: None,
                }),
            },
        );
        let mut app: Router = plan.routers["whoami"].clone();
        app.rule = "PathPrefix(`/app`)".into();
        app.priority = 18;
        app.middlewares = vec!["auth".into(), "strip".into()];
        app.service = Some("ha".into());
        plan.routers.insert("app".into(), app);
        plan.api = Some(Api {
            entrypoint: "traefik".into(),
            dashboard: true,
            insecure: true,
            base_path: "/".into(),
            middlewares: vec![],
        });
        plan.ping = Some(Ping {
            entrypoint: "traefik".into(),
            manual_routing: false,
            terminating_status_code: 503,
        });
        let ups = Upstreams::from_plan(&plan).unwrap();
        (plan, ups)
    }

    #[test]
    fn routers_list_shape_and_file_naming() {
        let (plan, ups) = example();
        let resp = get(&plan, &ups, "/api/http/routers");
        assert_eq!(resp.status, StatusCode::OK);
        assert_eq!(resp.next_page, Some(1));
        let v = body(&resp);
        assert_eq!(
            v,
            json!([{
                "entryPoints": ["web"],
                "service": "whoami@file",
                "rule": "Host(`whoami.example.com`)",
                "ruleSyntax": "v3",
                "priority": 26,
                "priorityStr": "26",
                "status": "enabled",
                "using": ["web"],
                "name": "whoami@file",
                "provider": "file",
            }])
        );

        let one = get(&plan, &ups, "/api/http/routers/whoami@file");
        assert_eq!(one.status, StatusCode::OK);
        assert_eq!(body(&one), v[0]);
        let encoded = get(&plan, &ups, "/api/http/routers/whoami%40file");
        assert_eq!(body(&encoded), v[0]);
        let missing = get(&plan, &ups, "/api/http/routers/whoami");
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        assert_eq!(
            body(&missing),
            json!({"message": "router not found: whoami"})
        );
    }

    #[test]
    fn internal_routers_and_services_with_insecure_api() {
        let (plan, ups) = rich();
        let routers = body(&get(&plan, &ups, "/api/http/routers"));
        assert_eq!(
            names(&routers),
            [
                "api@internal",
                "app@file",
                "dashboard@internal",
                "ping@internal",
                "whoami@file"
            ]
        );
        let api = &routers[0];
        assert_eq!(api["provider"], "internal");
        assert_eq!(api["rule"], "PathPrefix(`/api`)");
        assert_eq!(api["entryPoints"], json!(["traefik"]));
        assert_eq!(api["priorityStr"], (i64::MAX - 1).to_string());
        let app = &routers[1];
        assert_eq!(app["middlewares"], json!(["auth@file", "strip@file"]));
        assert_eq!(app["service"], "ha@file");

        let services = body(&get(&plan, &ups, "/api/http/services"));
        assert_eq!(
            names(&services),
            [
                "api@internal",
                "dashboard@internal",
                "ha@file",
                "ping@internal",
                "whoami@file"
            ]
        );
        assert_eq!(
            services[0],
            json!({"status": "enabled", "usedBy": ["api@internal"], "name": "api@internal", "provider": "internal"})
        );
        assert_eq!(
            services[2]["failover"],
            json!({"service": "whoami@file", "fallback": "whoami@file", "healthCheck": {}})
        );
        assert_eq!(services[2]["type"], "failover");
        assert_eq!(services[2]["usedBy"], json!(["app@file"]));
        assert!(services[2].get("serverStatus").is_none());
    }

    #[test]
    fn services_server_status_follows_live_state() {
        let (plan, ups) = example();
        let status = |ups: &Upstreams| {
            body(&get(&plan, ups, "/api/http/services/whoami@file"))["serverStatus"].clone()
        };
        // Never probed, and the check sets probe_before_traffic: no traffic yet, so DOWN.
        assert_eq!(
            status(&ups),
            json!({"http://10.0.0.11:8080": "DOWN", "http://10.0.0.12:8080": "DOWN"})
        );
        let servers = ups.server_states("whoami").unwrap();
        ups.set_state(&servers[0].0, ServerState::Up, "test");
        ups.set_state(&servers[1].0, ServerState::Down, "test");
        assert_eq!(
            status(&ups),
            json!({"http://10.0.0.11:8080": "UP", "http://10.0.0.12:8080": "DOWN"})
        );
        ups.set_state(&servers[0].0, ServerState::Down, "test");
        ups.set_state(&servers[1].0, ServerState::Up, "test");
        assert_eq!(
            status(&ups),
            json!({"http://10.0.0.11:8080": "DOWN", "http://10.0.0.12:8080": "UP"})
        );

        let svc = body(&get(&plan, &ups, "/api/http/services/whoami@file"));
        assert_eq!(svc["type"], "loadbalancer");
        assert_eq!(svc["provider"], "file");
        assert_eq!(svc["status"], "enabled");
        assert_eq!(svc["usedBy"], json!(["whoami@file"]));
        assert_eq!(
            svc["loadBalancer"],
            json!({
                "servers": [{"url": "http://10.0.0.11:8080"}, {"url": "http://10.0.0.12:8080"}],
                "passHostHeader": true,
                "strategy": "wrr",
                "healthCheck": {
                    "path": "/health",
                    "method": "GET",
                    "interval": "30s",
                    "unhealthyInterval": "30s",
                    "timeout": "5s",
                    "followRedirects": true,
                },
            })
        );

        // Without probe_before_traffic an unprobed server receives traffic: UP, as in Traefik.
        let mut plan = Plan::example();
        if let ServiceKind::LoadBalancer(lb) = &mut plan.services.get_mut("whoami").unwrap().kind {
            lb.health_check.as_mut().unwrap().probe_before_traffic = false;
        }
        let ups = Upstreams::from_plan(&plan).unwrap();
        let svc = body(&get(&plan, &ups, "/api/http/services/whoami@file"));
        assert_eq!(
            svc["serverStatus"],
            json!({"http://10.0.0.11:8080": "UP", "http://10.0.0.12:8080": "UP"})
        );
        assert_eq!(
            get(&plan, &ups, "/api/http/services/nope@file").status,
            StatusCode::NOT_FOUND
        );
    }

    #[test]
    fn middlewares_redact_password_hashes() {
        let (plan, ups) = rich();
        let resp = get(&plan, &ups, "/api/http/middlewares");
        let text = std::str::from_utf8(&resp.body).unwrap().to_owned();
        assert!(!text.contains("$2y$"), "{text}");
        assert!(!text.contains("{SHA}"), "{text}");
        let v = body(&resp);
        assert_eq!(names(&v), ["auth@file", "retry@file", "strip@file"]);
        assert_eq!(
            v[0],
            json!({
                "basicAuth": {"users": ["alice:[REDACTED]", "bob:[REDACTED]"], "realm": "traefik"},
                "status": "enabled",
                "usedBy": ["app@file"],
                "name": "auth@file",
                "provider": "file",
                "type": "basicauth",
            })
        );
        assert_eq!(v[1]["retry"], json!({"attempts": 3}));
        assert_eq!(v[1]["usedBy"], json!([]));
        assert_eq!(v[2]["stripPrefix"], json!({"prefixes": ["/app"]}));
        // Raw data too.
        let raw = get(&plan, &ups, "/api/rawdata");
        assert!(!std::str::from_utf8(&raw.body).unwrap().contains("$2y$"));
    }

    #[test]
    fn credential_headers_are_redacted() {
        let headers = BTreeMap::from([
            ("Authorization".to_owned(), "Bearer secret".to_owned()),
            ("X-Env".to_owned(), "dev".to_owned()),
            ("cookie".to_owned(), String::new()),
        ]);
        assert_eq!(
            headers_map(&headers),
            json!({"Authorization": REDACTED, "X-Env": "dev", "cookie": ""})
        );
    }

    #[test]
    fn overview_counts() {
        let (plan, ups) = example();
        assert_eq!(
            body(&get(&plan, &ups, "/api/overview")),
            json!({
                "http": {
                    "routers": {"total": 1, "warnings": 0, "errors": 0},
                    "services": {"total": 1, "warnings": 0, "errors": 0},
                    "middlewares": {"total": 0, "warnings": 0, "errors": 0},
                },
                "tcp": {
                    "routers": {"total": 0, "warnings": 0, "errors": 0},
                    "services": {"total": 0, "warnings": 0, "errors": 0},
                    "middlewares": {"total": 0, "warnings": 0, "errors": 0},
                },
                "udp": {
                    "routers": {"total": 0, "warnings": 0, "errors": 0},
                    "services": {"total": 0, "warnings": 0, "errors": 0},
                },
                "features": {"tracing": "", "metrics": "", "accessLog": false},
                "providers": ["File"],
            })
        );
        let (plan, ups) = rich();
        let v = body(&get(&plan, &ups, "/api/overview"));
        assert_eq!(v["http"]["routers"]["total"], 5);
        assert_eq!(v["http"]["services"]["total"], 5);
        assert_eq!(v["http"]["middlewares"]["total"], 3);
    }

    #[test]
    fn entrypoints_sorted_with_traefik_shape() {
        let (plan, ups) = rich();
        let resp = get(&plan, &ups, "/api/entrypoints");
        assert_eq!(resp.next_page, Some(1));
        let v = body(&resp);
        assert_eq!(names(&v), ["admin", "traefik", "web"]);
        assert_eq!(
            v[2],
            json!({
                "address": ":80",
                "transport": {
                    "lifeCycle": {"requestAcceptGraceTimeout": "0s", "graceTimeOut": "10s"},
                    "respondingTimeouts": {"readTimeout": "1m0s", "writeTimeout": "0s", "idleTimeout": "3m0s"},
                },
                "forwardedHeaders": {"insecure": false},
                "http": {"maxHeaderBytes": 1_048_576},
                "name": "web",
            })
        );
        assert!(v[0].get("provider").is_none());
        let one = get(&plan, &ups, "/api/entrypoints/traefik");
        assert_eq!(body(&one)["address"], ":8080");
        let missing = get(&plan, &ups, "/api/entrypoints/nope");
        assert_eq!(missing.status, StatusCode::NOT_FOUND);
        assert_eq!(body(&missing)["message"], "entry point not found: nope");
    }

    #[test]
    fn entrypoint_redirect_names_the_target_entry_point() {
        let (mut plan, _) = rich();
        let mut websecure = plan.entrypoints["web"].clone();
        websecure.port = 443;
        websecure.address = ":443".into();
        plan.entrypoints.insert("websecure".into(), websecure);
        plan.entrypoints.get_mut("web").unwrap().redirect = Some(bridge_plan::Redirect {
            scheme: "https".into(),
            port: 443,
            permanent: true,
            priority: i64::MAX - 1,
        });
        let ups = Upstreams::from_plan(&plan).unwrap();
        let v = body(&get(&plan, &ups, "/api/entrypoints/web"));
        assert_eq!(
            v["http"]["redirections"],
            json!({"entryPoint": {
                "to": "websecure", "scheme": "https", "permanent": true, "priority": i64::MAX - 1
            }})
        );
    }

    #[test]
    fn rawdata_maps_by_qualified_name() {
        let (plan, ups) = rich();
        let v = body(&get(&plan, &ups, "/api/rawdata"));
        let keys = |k: &str| -> Vec<String> { v[k].as_object().unwrap().keys().cloned().collect() };
        assert_eq!(
            keys("routers"),
            [
                "api@internal",
                "app@file",
                "dashboard@internal",
                "ping@internal",
                "whoami@file"
            ]
        );
        assert_eq!(
            keys("middlewares"),
            ["auth@file", "retry@file", "strip@file"]
        );
        let whoami = &v["services"]["whoami@file"];
        assert!(whoami.get("name").is_none() && whoami.get("type").is_none());
        assert_eq!(whoami["serverStatus"]["http://10.0.0.11:8080"], "DOWN");
        assert_eq!(v["routers"]["whoami@file"]["using"], json!(["web"]));
    }

    #[test]
    fn version() {
        let (plan, ups) = example();
        assert_eq!(
            body(&get(&plan, &ups, "/api/version")),
            json!({"Version": env!("CARGO_PKG_VERSION"), "Codename": "bridge-runtime", "startDate": STARTED, "planHash": plan.hash})
        );
        assert_eq!(
            body(&get(&plan, &ups, "/api/rawdata"))["planHash"],
            json!(plan.hash)
        );
    }

    #[test]
    fn unknown_paths_and_methods() {
        let (plan, ups) = example();
        for path in [
            "/api",
            "/api/",
            "/api/nope",
            "/api/http/routers/",
            "/api/tls/options",
        ] {
            let resp = get(&plan, &ups, path);
            assert_eq!(resp.status, StatusCode::NOT_FOUND, "{path}");
            assert!(body(&resp)["message"].is_string(), "{path}");
        }
        for method in [Method::POST, Method::PUT, Method::DELETE, Method::PATCH] {
            for path in ["/api/version", "/api/nope", "/dashboard/"] {
                let resp = handle(&plan, &ups, &method, path, None, STARTED).unwrap();
                assert_eq!(
                    resp.status,
                    StatusCode::METHOD_NOT_ALLOWED,
                    "{method} {path}"
                );
                assert!(body(&resp)["message"].is_string());
            }
        }
        let head = handle(&plan, &ups, &Method::HEAD, "/api/version", None, STARTED).unwrap();
        assert_eq!(head.status, StatusCode::OK);
        for path in ["/apix", "/foo", "/ping", "/dashboardx", ""] {
            assert!(
                handle(&plan, &ups, &Method::GET, path, None, STARTED).is_none(),
                "{path}"
            );
        }
        // Empty TCP/UDP lists, and 404 for a name in them.
        let tcp = get(&plan, &ups, "/api/tcp/routers");
        assert_eq!((body(&tcp), tcp.next_page), (json!([]), Some(1)));
        assert_eq!(
            body(&get(&plan, &ups, "/api/udp/services/x@file"))["message"],
            "service not found: x@file"
        );
    }

    #[test]
    fn dashboard_is_served_and_self_contained() {
        let (plan, ups) = example();
        for path in ["/dashboard/", "/dashboard/index.html"] {
            let resp = get(&plan, &ups, path);
            assert_eq!(resp.status, StatusCode::OK);
            assert_eq!(resp.content_type, HTML_CONTENT_TYPE);
            assert_eq!(resp.body, DASHBOARD_HTML.as_bytes());
        }
        let html = DASHBOARD_HTML.to_ascii_lowercase();
        assert!(html.starts_with("<!doctype html>"));
        for needle in [
            "\"../api/\"",
            "\"http/routers\"",
            "\"http/services\"",
            "\"entrypoints\"",
            "\"version\"",
            "refresh_ms = 2000",
            "textcontent",
        ] {
            assert!(html.contains(needle), "{needle}");
        }
        for forbidden in [
            "http://",
            "https://",
            "src=",
            "<link",
            "@import",
            "url(",
            "innerhtml",
            "outerhtml",
            "insertadjacenthtml",
            "document.write",
            "eval(",
        ] {
            assert!(!html.contains(forbidden), "dashboard contains {forbidden}");
        }
        // Every href is relative to this host.
        for (i, _) in html.match_indices("href=\"") {
            let target = &html[i + 6..];
            assert!(
                target.starts_with("../") || target.starts_with('#'),
                "{target}"
            );
        }

        let resp = get(&plan, &ups, "/dashboard");
        assert_eq!(resp.status, StatusCode::MOVED_PERMANENTLY);
        assert_eq!(resp.location.as_deref(), Some("/dashboard/"));
        let resp = get(&plan, &ups, "/");
        assert_eq!(resp.status, StatusCode::FOUND);
        assert_eq!(resp.location.as_deref(), Some("/dashboard/"));
        let resp = get(&plan, &ups, "/dashboard/app.js");
        assert_eq!(resp.status, StatusCode::NOT_FOUND);
    }

    #[test]
    fn dashboard_disabled_and_base_path() {
        let (mut plan, ups) = rich();
        plan.api.as_mut().unwrap().dashboard = false;
        for path in ["/", "/dashboard", "/dashboard/"] {
            assert!(handle(&plan, &ups, &Method::GET, path, None, STARTED).is_none());
        }
        let routers = body(&get(&plan, &ups, "/api/http/routers"));
        assert!(!names(&routers).contains(&"dashboard@internal".to_owned()));

        plan.api.as_mut().unwrap().dashboard = true;
        plan.api.as_mut().unwrap().base_path = "/traefik/".into();
        assert!(handle(&plan, &ups, &Method::GET, "/api/version", None, STARTED).is_none());
        assert!(handle(&plan, &ups, &Method::GET, "/traefikx/api", None, STARTED).is_none());
        assert_eq!(
            get(&plan, &ups, "/traefik/api/version").status,
            StatusCode::OK
        );
        assert_eq!(
            get(&plan, &ups, "/traefik/dashboard").location.as_deref(),
            Some("/traefik/dashboard/")
        );
        assert_eq!(
            get(&plan, &ups, "/traefik").location.as_deref(),
            Some("/traefik/dashboard/")
        );
        assert_eq!(
            get(&plan, &ups, "/traefik/dashboard/").status,
            StatusCode::OK
        );
        let routers = body(&get(&plan, &ups, "/traefik/api/http/routers"));
        assert_eq!(routers[0]["rule"], "PathPrefix(`/traefik/api`)");
    }

    #[test]
    fn search_filters_and_pagination() {
        let mut plan = Plan::example();
        let base = plan.routers["whoami"].clone();
        for i in 0..250 {
            let mut r = base.clone();
            r.rule = format!("Host(`r{i:03}.example.com`)");
            plan.routers.insert(format!("r{i:03}"), r);
        }
        let ups = Upstreams::from_plan(&plan).unwrap();
        let page = |query: &str| {
            let resp = get_q(&plan, &ups, "/api/http/routers", Some(query));
            let next = resp.next_page;
            (resp.status, body(&resp), next)
        };

        let (status, v, next) = page("");
        assert_eq!(
            (status, v.as_array().unwrap().len(), next),
            (StatusCode::OK, 100, Some(2))
        );
        assert_eq!(v[0]["name"], "r000@file");
        let (_, v, next) = page("page=2");
        assert_eq!((v.as_array().unwrap().len(), next), (100, Some(3)));
        assert_eq!(v[0]["name"], "r100@file");
        let (_, v, next) = page("page=3");
        assert_eq!((v.as_array().unwrap().len(), next), (51, Some(1)));
        assert_eq!(v[50]["name"], "whoami@file");
        let (_, v, next) = page("per_page=251");
        assert_eq!((v.as_array().unwrap().len(), next), (251, Some(1)));
        let (_, v, next) = page("per_page=10&page=2&direction=desc");
        assert_eq!(next, Some(3));
        assert_eq!(v[0]["name"], "r240@file");

        for bad in ["page=4", "page=0", "per_page=0", "per_page=x", "page=-1"] {
            let (status, v, _) = page(bad);
            assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
            assert!(
                v["message"]
                    .as_str()
                    .unwrap()
                    .starts_with("invalid request"),
                "{bad}"
            );
        }

        let (_, v, next) = page("search=r01");
        assert_eq!(
            names(&v),
            (10..20).map(|i| format!("r0{i}@file")).collect::<Vec<_>>()
        );
        assert_eq!(next, Some(1));
        // Case-insensitive, and the rule is searched too.
        assert_eq!(names(&page("search=WHOAMI.example").1), ["whoami@file"]);
        assert_eq!(names(&page("search=R249.EXAMPLE.com").1), ["r249@file"]);
        let (status, v, next) = page("search=nothing-matches");
        assert_eq!((status, v, next), (StatusCode::OK, json!([]), Some(1)));
        // Percent-encoded search value.
        assert_eq!(names(&page("search=%60r007").1), ["r007@file"]);

        assert_eq!(page("status=enabled").1.as_array().unwrap().len(), 100);
        assert_eq!(page("status=disabled").1, json!([]));
        assert_eq!(
            page("serviceName=whoami&per_page=1000")
                .1
                .as_array()
                .unwrap()
                .len(),
            251
        );
        assert_eq!(
            page("serviceName=whoami@file&per_page=1000")
                .1
                .as_array()
                .unwrap()
                .len(),
            251
        );
        assert_eq!(page("serviceName=other").1, json!([]));
        assert_eq!(page("middlewareName=auth").1, json!([]));

        // Search on the other lists matches names.
        let (plan, ups) = rich();
        let v = body(&get_q(
            &plan,
            &ups,
            "/api/http/services",
            Some("search=who"),
        ));
        assert_eq!(names(&v), ["whoami@file"]);
        let v = body(&get_q(
            &plan,
            &ups,
            "/api/http/middlewares",
            Some("search=AUTH"),
        ));
        assert_eq!(names(&v), ["auth@file"]);
        let v = body(&get_q(
            &plan,
            &ups,
            "/api/http/routers",
            Some("middlewareName=strip"),
        ));
        assert_eq!(names(&v), ["app@file"]);
        let v = body(&get_q(&plan, &ups, "/api/entrypoints", Some("per_page=2")));
        assert_eq!(names(&v), ["admin", "traefik"]);
    }

    #[test]
    fn go_durations() {
        for (ms, want) in [
            (0, "0s"),
            (1, "1ms"),
            (250, "250ms"),
            (1000, "1s"),
            (1500, "1.5s"),
            (1250, "1.25s"),
            (5_000, "5s"),
            (60_000, "1m0s"),
            (90_000, "1m30s"),
            (180_000, "3m0s"),
            (3_600_000, "1h0m0s"),
            (3_661_001, "1h1m1.001s"),
        ] {
            assert_eq!(go_duration(ms), want, "{ms}");
        }
    }

    #[test]
    fn percent_decoding() {
        assert_eq!(percent_decode("a%40b%2Fc").as_deref(), Some("a@b/c"));
        assert_eq!(percent_decode("a+b").as_deref(), Some("a+b"));
        assert_eq!(percent_decode("%4"), None);
        assert_eq!(percent_decode("%zz"), None);
        assert_eq!(percent_decode("%ff"), None);
    }
}
