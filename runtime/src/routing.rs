//! Request routing: which router of an entry point serves a request, with Traefik v3's semantics.
//!
//! A [`RouteTable`] is built once per entry point (and per connection kind, TLS or plain) from a
//! sealed plan. Every regex and CIDR is compiled at build time, so matching never fails and never
//! allocates more than the request's normalised host, routing path and (lazily) parsed query.
//!
//! # Matching semantics (Traefik v3, `pkg/muxer/http`)
//!
//! - The request host is Traefik's canonical host: the `Host` header, or the authority of an
//!   absolute-form request URI (the caller passes the authority when there is one), with the port
//!   stripped as Go's `net.SplitHostPort` does (`[v6]:port` and a bare `[v6]` give the address
//!   without brackets), surrounding spaces trimmed and lower-cased.
//! - `Host(h)` compares that host with one trailing dot removed (`normalize_host`, the reference the tests hold the index to);
//!   `*.example.com` matches exactly one extra label, `*` matches every non-empty host. A request
//!   without a host matches no `Host` matcher.
//! - `HostRegexp` runs (unanchored) on the canonical host, trailing dot kept, as Traefik does.
//!   Traefik also tries the CNAME-flattened host, which is empty unless CNAME flattening is on: a
//!   regex that matches the empty string therefore matches every request, and so it does here.
//! - `Path`, `PathPrefix` and `PathRegexp` use the routing path ([`routing_path`]).
//! - `Method` is compared case-sensitively with the method as received.
//! - `Header` / `HeaderRegexp`: header names compare case-insensitively (Go canonicalises both);
//!   the request matches when any one value (one header line) equals / matches. Go's server
//!   removes `Host` from the header map, so a `Host` header never matches a header matcher.
//! - `Query` / `QueryRegexp`: the query is parsed like Go's `url.ParseQuery` ([`parse_query`]);
//!   some value of the key (case-sensitive) must equal / match.
//! - `ClientIP`: the TCP peer only (never `X-Forwarded-For`); an IPv4-mapped IPv6 peer is treated
//!   as the IPv4 address, like Go's `net.IPNet.Contains`.
//!
//! # Index
//!
//! Routers are kept in the plan's matching order (priority descending, then key). A router whose
//! rule can only match one of a few exact hosts (a `Host(h)` matcher, a conjunction containing
//! one, or a disjunction of such rules) is filed under each of those hosts; every other router is
//! "generic". A lookup walks the request host's bucket merged with the generic list, both sorted
//! by matching order, and returns the first router whose rule matches: the same answer as trying
//! every router in order, without looking at routers for other hosts.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::net::IpAddr;
use std::str::FromStr;

use bridge_plan::Plan;
use bridge_plan::rule::{Matcher, Rule};
use ipnet::IpNet;
use regex::Regex;

/// What routing needs to know about a request (borrowed from the HTTP layer).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RequestInfo<'a> {
    /// The method as received (HTTP methods are case-sensitive).
    pub method: &'a str,
    /// The `Host` header, or the authority of an absolute-form request URI when there is one (it
    /// wins over the header, as in Traefik). Port, case and trailing dot are dealt with here.
    pub host: Option<&'a str>,
    /// The raw path as received, still percent-encoded.
    pub path: &'a str,
    /// The raw query string without the `?`.
    pub query: Option<&'a str>,
    /// Request headers as (name in any case, value), one entry per header line.
    pub headers: &'a [(&'a str, &'a str)],
    /// The TCP peer address; `ClientIP` never looks at forwarded headers.
    pub peer: IpAddr,
}

/// Why a route table could not be built from a plan.
#[derive(Debug, thiserror::Error)]
pub enum RoutingError {
    /// The plan has no entry point of that name.
    #[error("the plan has no entry point `{entrypoint}`")]
    UnknownEntryPoint {
        /// The entry point asked for.
        entrypoint: String,
    },
    /// An entry point lists a router the plan does not define.
    #[error("entry point `{entrypoint}` lists router `{router}`, which the plan does not define")]
    UnknownRouter {
        /// The entry point.
        entrypoint: String,
        /// The missing router key.
        router: String,
    },
    /// A parent router lists a child router the plan does not define.
    #[error("router `{parent}` lists child router `{router}`, which the plan does not define")]
    UnknownParent {
        /// The parent router.
        parent: String,
        /// The missing router key.
        router: String,
    },
    /// A regex of a router's rule does not compile.
    #[error("router `{router}`: invalid regex `{regex}`: {message}")]
    BadRegex {
        /// The router key.
        router: String,
        /// The regex as written in the plan.
        regex: String,
        /// The regex engine's message.
        message: String,
    },
    /// A `ClientIP` network of a router's rule is not an IP address or CIDR.
    #[error("router `{router}`: invalid ClientIP network `{cidr}`: {message}")]
    BadCidr {
        /// The router key.
        router: String,
        /// The network as written in the plan.
        cidr: String,
        /// Why it does not parse.
        message: String,
    },
}

/// The routers of one entry point, compiled and indexed for matching.
#[derive(Debug)]
pub(crate) struct RouteTable {
    /// Every router in matching order; indices into this list are the global order.
    routes: Vec<Route>,
    /// Routers that can only match one of a few exact hosts, by normalised host; each list is
    /// sorted by index.
    by_host: HashMap<String, Vec<u32>>,
    /// Routers without a host key that can only match paths starting with one of a few literal
    /// prefixes (`PathPrefix`, `Path`), by prefix; each list is sorted by index.
    by_prefix: HashMap<String, Vec<u32>>,
    /// The distinct lengths of the keys of `by_prefix`, ascending: a lookup tries each.
    prefix_lengths: Vec<usize>,
    /// Every other router, sorted by index.
    generic: Vec<u32>,
    /// Some rule looks at request headers (callers may skip collecting them otherwise).
    uses_headers: bool,
}

#[derive(Debug)]
struct Route {
    key: String,
    node: CompiledRule,
}

/// A compiled rule.
#[derive(Debug)]
enum CompiledRule {
    And(Vec<Self>),
    Or(Vec<Self>),
    Not(Box<Self>),
    Host(HostPattern),
    HostRegexp { re: Regex, matches_empty: bool },
    Path(String),
    PathPrefix(String),
    PathRegexp(Regex),
    Method(String),
    Header { name: String, value: String },
    HeaderRegexp { name: String, re: Regex },
    Query { key: String, value: String },
    QueryRegexp { key: String, re: Regex },
    ClientIp(IpNet),
}

/// A `Host` expression, lower-cased and without a trailing dot.
#[derive(Debug)]
enum HostPattern {
    /// `*`: every host.
    Any,
    /// An expression starting with `*` (`*.example.com`): the host with its first label replaced
    /// by `*` must equal it, so exactly one label stands in for the star.
    Wildcard(String),
    /// Any other expression: the host must equal it.
    Exact(String),
}

impl HostPattern {
    fn new(host: &str) -> Self {
        let lower = host.to_lowercase();
        let expr = lower.strip_suffix('.').unwrap_or(&lower);
        if expr == "*" {
            Self::Any
        } else if expr.starts_with('*') {
            Self::Wildcard(expr.to_owned())
        } else {
            Self::Exact(expr.to_owned())
        }
    }

    /// `host` is normalised (as `normalize_host` does).
    fn matches(&self, host: &str) -> bool {
        if host.is_empty() {
            return false;
        }
        match self {
            Self::Any => true,
            Self::Exact(h) => host == h,
            Self::Wildcard(expr) => match host.find('.') {
                // Traefik: split on dots, replace the first label by `*`, compare.
                Some(dot) => expr.strip_prefix('*') == host.get(dot..),
                None => expr == "*",
            },
        }
    }
}

impl RouteTable {
    /// Compiles the routers of `entrypoint` in the plan's matching order
    /// ([`bridge_plan::EntryPoint::routers`]). On a TLS connection (`tls`) only routers with
    /// `tls` apply; on a plain connection only routers without it (a router with TLS is
    /// HTTPS-only in Traefik).
    pub(crate) fn build(plan: &Plan, entrypoint: &str, tls: bool) -> Result<Self, RoutingError> {
        let ep =
            plan.entrypoints
                .get(entrypoint)
                .ok_or_else(|| RoutingError::UnknownEntryPoint {
                    entrypoint: entrypoint.to_owned(),
                })?;
        let mut rules = Vec::with_capacity(ep.routers.len());
        for key in &ep.routers {
            let router = plan
                .routers
                .get(key)
                .ok_or_else(|| RoutingError::UnknownRouter {
                    entrypoint: entrypoint.to_owned(),
                    router: key.clone(),
                })?;
            if router.tls.is_some() == tls {
                rules.push((key.as_str(), &router.matcher));
            }
        }
        Self::from_rules(rules)
    }

    /// The table of a parent router's `children` (already in matching order in the plan).
    pub(crate) fn for_children(plan: &Plan, parent: &str) -> Result<Self, RoutingError> {
        let Some(p) = plan.routers.get(parent) else {
            return Err(RoutingError::UnknownParent {
                parent: parent.to_owned(),
                router: parent.to_owned(),
            });
        };
        let mut rules = Vec::with_capacity(p.children.len());
        for key in &p.children {
            let child = plan
                .routers
                .get(key)
                .ok_or_else(|| RoutingError::UnknownParent {
                    parent: parent.to_owned(),
                    router: key.clone(),
                })?;
            rules.push((key.as_str(), &child.matcher));
        }
        Self::from_rules(rules)
    }

    /// Compiles and indexes `(key, rule)` pairs given in matching order.
    fn from_rules<'p>(
        rules: impl IntoIterator<Item = (&'p str, &'p Rule)>,
    ) -> Result<Self, RoutingError> {
        let mut routes = Vec::new();
        let mut by_host: HashMap<String, Vec<u32>> = HashMap::new();
        let mut by_prefix: HashMap<String, Vec<u32>> = HashMap::new();
        let mut generic = Vec::new();
        for (index, (key, rule)) in (0u32..).zip(rules) {
            let node = compile(key, rule)?;
            match (host_keys(&node), prefix_keys(&node)) {
                (Some(mut hosts), _) => {
                    hosts.sort_unstable();
                    hosts.dedup();
                    for host in hosts {
                        by_host.entry(host.to_owned()).or_default().push(index);
                    }
                }
                (None, Some(mut prefixes)) => {
                    prefixes.sort_unstable();
                    prefixes.dedup();
                    for prefix in prefixes {
                        by_prefix.entry(prefix.to_owned()).or_default().push(index);
                    }
                }
                (None, None) => generic.push(index),
            }
            routes.push(Route {
                key: key.to_owned(),
                node,
            });
        }
        let uses_headers = routes.iter().any(|r| r.node.uses_headers());
        let mut prefix_lengths: Vec<usize> = by_prefix.keys().map(String::len).collect();
        prefix_lengths.sort_unstable();
        prefix_lengths.dedup();
        Ok(Self {
            routes,
            by_host,
            by_prefix,
            prefix_lengths,
            generic,
            uses_headers,
        })
    }

    /// Whether some rule matches on request headers; when not, [`RequestInfo::headers`] may be
    /// empty.
    pub(crate) fn uses_headers(&self) -> bool {
        self.uses_headers
    }

    /// The key of the first router, in matching order, whose rule matches the request.
    #[cfg(test)]
    pub(crate) fn route(&self, req: &RequestInfo<'_>) -> Option<&str> {
        let i = self.route_index(req)?;
        self.routes.get(i).map(|r| r.key.as_str())
    }

    /// The router keys in matching order: [`RouteTable::route_index`] is a position in it.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        self.routes.iter().map(|r| r.key.as_str())
    }

    /// The position, in [`RouteTable::keys`], of the first router whose rule matches.
    pub(crate) fn route_index(&self, req: &RequestInfo<'_>) -> Option<usize> {
        let cx = Context::new(req);
        let merged;
        let generic: &[u32] = if self.by_prefix.is_empty() {
            &self.generic
        } else {
            merged = self.path_candidates(&cx);
            &merged
        };
        Merge {
            a: self.bucket(&cx),
            b: generic,
        }
        .map(|i| i as usize)
        .find(|&i| {
            self.routes
                .get(i)
                .is_some_and(|route| route.node.matches(&cx))
        })
    }

    /// The routers without a host key that may match the request's path: those whose literal
    /// prefix starts the path (one hash lookup per distinct prefix length), and every router
    /// with no key at all, in matching order.
    fn path_candidates(&self, cx: &Context<'_>) -> Vec<u32> {
        let path: &str = &cx.path;
        let mut out: Vec<u32> = Vec::with_capacity(self.generic.len() + 4);
        out.extend_from_slice(&self.generic);
        for &len in &self.prefix_lengths {
            let Some(head) = path.get(..len) else {
                break;
            };
            if let Some(hits) = self.by_prefix.get(head) {
                out.extend_from_slice(hits);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// How many routers [`RouteTable::route`] may have to evaluate for this request at most: the
    /// routers filed under its host plus the generic ones.
    #[cfg(test)]
    pub(crate) fn candidates_for(&self, req: &RequestInfo<'_>) -> usize {
        let cx = Context::new(req);
        let generic = if self.by_prefix.is_empty() {
            self.generic.len()
        } else {
            self.path_candidates(&cx).len()
        };
        self.bucket(&cx).len() + generic
    }

    /// The number of routers in the table.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.routes.len()
    }

    /// Whether the table has no router (every request is unrouted).
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    fn bucket(&self, cx: &Context<'_>) -> &[u32] {
        let host = cx.host();
        if host.is_empty() {
            return &[];
        }
        self.by_host.get(host).map_or(&[], Vec::as_slice)
    }
}

/// Two ascending index lists merged into one ascending sequence.
struct Merge<'t> {
    a: &'t [u32],
    b: &'t [u32],
}

impl Iterator for Merge<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        match (self.a.split_first(), self.b.split_first()) {
            (Some((&x, rest_a)), Some((&y, rest_b))) => {
                if x <= y {
                    self.a = rest_a;
                    Some(x)
                } else {
                    self.b = rest_b;
                    Some(y)
                }
            }
            (Some((&x, rest)), None) => {
                self.a = rest;
                Some(x)
            }
            (None, Some((&y, rest))) => {
                self.b = rest;
                Some(y)
            }
            (None, None) => None,
        }
    }
}

/// The exact hosts one of which a request must have for `node` to match, or `None` when the rule
/// is not tied to a finite set of exact hosts.
fn host_keys(node: &CompiledRule) -> Option<Vec<&str>> {
    match node {
        CompiledRule::Host(HostPattern::Exact(h)) if !h.is_empty() => Some(vec![h.as_str()]),
        // Every operand must match, so any one keyed operand bounds the hosts; take the smallest.
        CompiledRule::And(parts) => parts.iter().filter_map(host_keys).min_by_key(Vec::len),
        // Some operand must match, so the rule is bounded only if every operand is.
        CompiledRule::Or(parts) if !parts.is_empty() => {
            let mut all = Vec::new();
            for part in parts {
                all.extend(host_keys(part)?);
            }
            Some(all)
        }
        _ => None,
    }
}

/// The literal path prefixes one of which every path matching `node` starts with, if bounded:
/// `PathPrefix(p)` and `Path(p)` give `p`; `And` takes its most selective keyed operand; `Or`
/// is bounded only if every operand is. (Same shape as [`host_keys`].)
fn prefix_keys(node: &CompiledRule) -> Option<Vec<&str>> {
    match node {
        CompiledRule::PathPrefix(p) | CompiledRule::Path(p) if !p.is_empty() => {
            Some(vec![p.as_str()])
        }
        CompiledRule::And(parts) => parts.iter().filter_map(prefix_keys).min_by_key(|keys| {
            (
                keys.len(),
                std::cmp::Reverse(keys.iter().map(|k| k.len()).min()),
            )
        }),
        CompiledRule::Or(parts) if !parts.is_empty() => {
            let mut all = Vec::new();
            for part in parts {
                all.extend(prefix_keys(part)?);
            }
            Some(all)
        }
        _ => None,
    }
}

fn compile(router: &str, rule: &Rule) -> Result<CompiledRule, RoutingError> {
    let regex = |re: &str| {
        Regex::new(re).map_err(|e| RoutingError::BadRegex {
            router: router.to_owned(),
            regex: re.to_owned(),
            message: e.to_string(),
        })
    };
    Ok(match rule {
        Rule::And(parts) => CompiledRule::And(
            parts
                .iter()
                .map(|p| compile(router, p))
                .collect::<Result<_, _>>()?,
        ),
        Rule::Or(parts) => CompiledRule::Or(
            parts
                .iter()
                .map(|p| compile(router, p))
                .collect::<Result<_, _>>()?,
        ),
        Rule::Not(inner) => CompiledRule::Not(Box::new(compile(router, inner)?)),
        Rule::Match(m) => match m {
            Matcher::Host { host } => CompiledRule::Host(HostPattern::new(host)),
            Matcher::HostRegexp { regex: re } => {
                let re = regex(re)?;
                let matches_empty = re.is_match("");
                CompiledRule::HostRegexp { re, matches_empty }
            }
            Matcher::Path { path } => CompiledRule::Path(path.clone()),
            Matcher::PathPrefix { prefix } => CompiledRule::PathPrefix(prefix.clone()),
            Matcher::PathRegexp { regex: re } => CompiledRule::PathRegexp(regex(re)?),
            Matcher::Method { method } => CompiledRule::Method(method.clone()),
            Matcher::Header { name, value } => CompiledRule::Header {
                name: name.clone(),
                value: value.clone(),
            },
            Matcher::HeaderRegexp { name, regex: re } => CompiledRule::HeaderRegexp {
                name: name.clone(),
                re: regex(re)?,
            },
            Matcher::Query { key, value } => CompiledRule::Query {
                key: key.clone(),
                value: value.clone(),
            },
            Matcher::QueryRegexp { key, regex: re } => CompiledRule::QueryRegexp {
                key: key.clone(),
                re: regex(re)?,
            },
            Matcher::ClientIp { cidr } => {
                CompiledRule::ClientIp(parse_cidr(cidr).map_err(|message| {
                    RoutingError::BadCidr {
                        router: router.to_owned(),
                        cidr: cidr.clone(),
                        message,
                    }
                })?)
            }
        },
    })
}

/// A CIDR, or a single address as a /32 or /128 network.
fn parse_cidr(cidr: &str) -> Result<IpNet, String> {
    if cidr.contains('/') {
        IpNet::from_str(cidr)
            .map(|net| net.trunc())
            .map_err(|e| e.to_string())
    } else {
        IpAddr::from_str(cidr)
            .map(IpNet::from)
            .map_err(|e| e.to_string())
    }
}

/// The parts of a request the matchers look at, computed once per lookup.
struct Context<'r> {
    method: &'r str,
    /// Traefik's canonical host: port stripped, trimmed, lower-cased, trailing dot kept.
    host: Cow<'r, str>,
    path: Cow<'r, str>,
    raw_query: Option<&'r str>,
    query: OnceCell<Vec<(Vec<u8>, Vec<u8>)>>,
    headers: &'r [(&'r str, &'r str)],
    peer: IpAddr,
}

impl<'r> Context<'r> {
    fn new(req: &RequestInfo<'r>) -> Self {
        let peer = match req.peer {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(req.peer, IpAddr::V4),
            v4 => v4,
        };
        Context {
            method: req.method,
            host: req.host.map_or(Cow::Borrowed(""), canonical_host),
            path: routing_path(req.path),
            raw_query: req.query,
            query: OnceCell::new(),
            headers: req.headers,
            peer,
        }
    }

    /// The normalised host (as `normalize_host` gives it).
    fn host(&self) -> &str {
        self.host.strip_suffix('.').unwrap_or(&self.host)
    }

    fn query(&self) -> &[(Vec<u8>, Vec<u8>)] {
        self.query
            .get_or_init(|| self.raw_query.map(parse_query).unwrap_or_default())
    }

    /// The values of the header `name` (any case), one per header line. `Host` never has values:
    /// Go's server moves it out of the header map.
    fn header_values<'s>(&'s self, name: &'s str) -> impl Iterator<Item = &'r str> + 's {
        let host = name.eq_ignore_ascii_case("host");
        self.headers
            .iter()
            .filter(move |(n, _)| !host && n.eq_ignore_ascii_case(name))
            .map(|(_, v)| *v)
    }
}

impl CompiledRule {
    fn uses_headers(&self) -> bool {
        match self {
            Self::And(v) | Self::Or(v) => v.iter().any(Self::uses_headers),
            Self::Not(n) => n.uses_headers(),
            Self::Header { .. } | Self::HeaderRegexp { .. } => true,
            _ => false,
        }
    }

    fn matches(&self, cx: &Context<'_>) -> bool {
        match self {
            Self::And(parts) => parts.iter().all(|p| p.matches(cx)),
            Self::Or(parts) => parts.iter().any(|p| p.matches(cx)),
            Self::Not(inner) => !inner.matches(cx),
            Self::Host(pattern) => pattern.matches(cx.host()),
            Self::HostRegexp { re, matches_empty } => *matches_empty || re.is_match(&cx.host),
            Self::Path(path) => *cx.path == **path,
            Self::PathPrefix(prefix) => cx.path.starts_with(prefix.as_str()),
            Self::PathRegexp(re) => re.is_match(&cx.path),
            Self::Method(method) => cx.method == method,
            Self::Header { name, value } => cx.header_values(name).any(|v| v == value),
            Self::HeaderRegexp { name, re } => cx.header_values(name).any(|v| re.is_match(v)),
            Self::Query { key, value } => cx
                .query()
                .iter()
                .any(|(k, v)| k == key.as_bytes() && v == value.as_bytes()),
            Self::QueryRegexp { key, re } => cx
                .query()
                .iter()
                .any(|(k, v)| k == key.as_bytes() && re.is_match(&String::from_utf8_lossy(v))),
            Self::ClientIp(net) => net.contains(&cx.peer),
        }
    }
}

/// The normalised host used for `Host` matching: port stripped (also for `[v6]:port` and `[v6]`),
/// surrounding spaces trimmed, lower-cased, one trailing dot removed.
#[cfg(test)]
pub(crate) fn normalize_host(host: &str) -> String {
    let canonical = canonical_host(host);
    canonical.strip_suffix('.').unwrap_or(&canonical).to_owned()
}

/// Traefik's canonical request host (`requestdecorator`): `parseHost` then lower-cased and
/// trimmed; the trailing dot is kept.
fn canonical_host(host: &str) -> Cow<'_, str> {
    let host = strip_port(host).trim();
    if host.bytes().any(|b| b.is_ascii_uppercase()) || !host.is_ascii() {
        Cow::Owned(host.chars().flat_map(char::to_lowercase).collect())
    } else {
        Cow::Borrowed(host)
    }
}

/// Traefik's `parseHost`: the host part of `net.SplitHostPort`, else the bracketed address
/// without brackets, else the input.
pub(crate) fn strip_port(addr: &str) -> &str {
    if !addr.contains(':') {
        return addr;
    }
    match split_host_port(addr) {
        Some(host) => host,
        None => addr
            .strip_prefix('[')
            .and_then(|a| a.strip_suffix(']'))
            .unwrap_or(addr),
    }
}

/// The host part of Go's `net.SplitHostPort`, or `None` where it returns an error.
fn split_host_port(hostport: &str) -> Option<&str> {
    let last_colon = hostport.rfind(':')?;
    let (host, j, k) = if hostport.starts_with('[') {
        let end = hostport.find(']')?;
        if end + 1 != last_colon {
            return None;
        }
        (hostport.get(1..end)?, 1, end + 1)
    } else {
        let host = hostport.get(..last_colon)?;
        if host.contains(':') {
            return None;
        }
        (host, 0, 0)
    };
    if hostport.get(j..)?.contains('[') || hostport.get(k..)?.contains(']') {
        return None;
    }
    Some(host)
}

/// Reserved characters (RFC 3986 gen-delims and sub-delims, plus `%`) whose escapes stay encoded
/// in the routing path.
fn is_reserved(b: u8) -> bool {
    matches!(
        b,
        b':' | b'/'
            | b'?'
            | b'#'
            | b'['
            | b']'
            | b'@'
            | b'!'
            | b'$'
            | b'&'
            | b'\''
            | b'('
            | b')'
            | b'*'
            | b'+'
            | b','
            | b';'
            | b'='
            | b'%'
    )
}

pub(crate) fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The escape at the start of `s` (`%XY`), decoded.
pub(crate) fn escape_at(s: &[u8]) -> Option<u8> {
    match s {
        [b'%', hi, lo, ..] => Some(hex_value(*hi)? << 4 | hex_value(*lo)?),
        _ => None,
    }
}

/// Traefik's routing path: the raw path with every percent-escape decoded except those of
/// reserved characters (`%2F %3F %23 %25`, the other gen-delims `: [ ] @` and the sub-delims
/// `! $ & ' ( ) * + , ; =`), which stay encoded with upper-case hex digits. So
/// ``PathPrefix(`/foo bar`)`` matches `/foo%20bar`, `/%61dmin` is `/admin`, and `/a%2fb` is
/// `/a%2Fb`, never `/a/b`.
///
/// A malformed escape (`%` not followed by two hex digits) never gets here: such requests are
/// answered 400 before routing, as Traefik answers them ([`valid_percent_encoding`], called by
/// `proxy::strict`). Decoded bytes that are not
/// UTF-8 become U+FFFD.
pub(crate) fn routing_path(raw: &str) -> Cow<'_, str> {
    if !raw.contains('%') {
        return Cow::Borrowed(raw);
    }
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw.as_bytes();
    while let [first, tail @ ..] = rest {
        match escape_at(rest) {
            Some(b) => {
                if is_reserved(b) {
                    out.extend([b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 0xf)]]);
                } else {
                    out.push(b);
                }
                rest = rest.get(3..).unwrap_or_default();
            }
            None => {
                out.push(*first);
                rest = tail;
            }
        }
    }
    match String::from_utf8(out) {
        Ok(s) => Cow::Owned(s),
        Err(e) => Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// Whether every `%` in `s` starts a well-formed escape (`%` and two hex digits). Go's server,
/// and so Traefik, answers 400 Bad Request to a request whose path is not well-formed, and so
/// does `proxy::strict::check_request`.
pub(crate) fn valid_percent_encoding(s: &str) -> bool {
    let bytes = s.as_bytes();
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'%')
        .all(|(i, _)| bytes.get(i..).and_then(escape_at).is_some())
}

/// Go's `url.ParseQuery`, errors ignored (as `req.URL.Query()` does): pairs are separated by `&`
/// only; a pair containing `;` is dropped, as is an empty pair or one with a malformed escape;
/// `+` decodes to a space and `%XY` to its byte, in keys and values. A pair without `=` has an
/// empty value. Pairs are returned in order, keys repeated.
pub(crate) fn parse_query(query: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty() && !pair.contains(';'))
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            Some((query_unescape(key)?, query_unescape(value)?))
        })
        .collect()
}

/// Go's `url.QueryUnescape`: `+` is a space, `%XY` a byte; `None` on a malformed escape.
fn query_unescape(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut rest = s.as_bytes();
    while let [first, tail @ ..] = rest {
        match first {
            b'%' => {
                out.push(escape_at(rest)?);
                rest = rest.get(3..).unwrap_or_default();
            }
            b'+' => {
                out.push(b' ');
                rest = tail;
            }
            b => {
                out.push(*b);
                rest = tail;
            }
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, Ipv6Addr};

    use bridge_plan::{Router, RouterTls};
    use proptest::prelude::*;

    use super::*;

    // --- helpers ---

    fn m(matcher: Matcher) -> Rule {
        Rule::Match(matcher)
    }
    fn host(h: &str) -> Rule {
        m(Matcher::Host { host: h.into() })
    }
    fn host_re(re: &str) -> Rule {
        m(Matcher::HostRegexp { regex: re.into() })
    }
    fn path(p: &str) -> Rule {
        m(Matcher::Path { path: p.into() })
    }
    fn prefix(p: &str) -> Rule {
        m(Matcher::PathPrefix { prefix: p.into() })
    }
    fn path_re(re: &str) -> Rule {
        m(Matcher::PathRegexp { regex: re.into() })
    }
    fn method(x: &str) -> Rule {
        m(Matcher::Method { method: x.into() })
    }
    fn header(n: &str, v: &str) -> Rule {
        m(Matcher::Header {
            name: n.into(),
            value: v.into(),
        })
    }
    fn header_re(n: &str, re: &str) -> Rule {
        m(Matcher::HeaderRegexp {
            name: n.into(),
            regex: re.into(),
        })
    }
    fn query(k: &str, v: &str) -> Rule {
        m(Matcher::Query {
            key: k.into(),
            value: v.into(),
        })
    }
    fn query_re(k: &str, re: &str) -> Rule {
        m(Matcher::QueryRegexp {
            key: k.into(),
            regex: re.into(),
        })
    }
    fn client_ip(c: &str) -> Rule {
        m(Matcher::ClientIp { cidr: c.into() })
    }
    fn and(parts: Vec<Rule>) -> Rule {
        Rule::And(parts)
    }
    fn or(parts: Vec<Rule>) -> Rule {
        Rule::Or(parts)
    }
    fn not(r: Rule) -> Rule {
        Rule::Not(Box::new(r))
    }

    /// A request; adjust fields with struct update syntax.
    fn req<'a>(host: Option<&'a str>, path: &'a str) -> RequestInfo<'a> {
        RequestInfo {
            method: "GET",
            host,
            path,
            query: None,
            headers: &[],
            peer: IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7)),
        }
    }

    fn table(rules: &[(&str, Rule)]) -> RouteTable {
        RouteTable::from_rules(rules.iter().map(|(k, r)| (*k, r))).unwrap()
    }

    /// Whether a one-router table with `rule` routes `r`.
    fn hit(rule: Rule, r: &RequestInfo<'_>) -> bool {
        table(&[("r", rule)]).route(r) == Some("r")
    }

    /// The linear scan the index must agree with.
    fn naive<'t>(t: &'t RouteTable, r: &RequestInfo<'_>) -> Option<&'t str> {
        let cx = Context::new(r);
        t.routes
            .iter()
            .find(|route| route.node.matches(&cx))
            .map(|route| route.key.as_str())
    }

    /// A plan whose `web` entry point serves the given routers: (key, rule text, rule, priority
    /// or `None` for Traefik's default `len(rule)`, tls).
    fn plan(routers: &[(&str, &str, Rule, Option<i64>, bool)]) -> Plan {
        let mut plan = Plan::example();
        let template: Router = plan.routers["whoami"].clone();
        plan.routers.clear();
        for (key, text, rule, priority, tls) in routers {
            let mut r = template.clone();
            r.rule = (*text).to_owned();
            r.matcher = rule.clone();
            r.priority = priority.unwrap_or(text.len() as i64);
            r.tls = tls.then(|| RouterTls {
                options: "default".into(),
                cert_resolver: None,
            });
            plan.routers.insert((*key).to_owned(), r);
        }
        plan.index_entrypoint_routers();
        plan
    }

    // --- helpers under test ---

    #[test]
    fn normalize_host_strips_port_case_and_trailing_dot() {
        for (raw, want) in [
            ("example.com", "example.com"),
            ("example.com:8080", "example.com"),
            ("EXAMPLE.COM", "example.com"),
            ("Example.Com.:443", "example.com"),
            ("example.com.", "example.com"),
            ("example.com..", "example.com."),
            ("[10::10]", "10::10"),
            ("[10::10]:8080", "10::10"),
            ("[::FFFF:1.2.3.4]:80", "::ffff:1.2.3.4"),
            ("10::10", "10::10"),
            ("127.0.0.1:80", "127.0.0.1"),
            ("example.com:", "example.com"),
            (" example.com ", "example.com"),
            ("", ""),
        ] {
            assert_eq!(normalize_host(raw), want, "{raw:?}");
        }
    }

    #[test]
    fn routing_path_decodes_all_but_reserved() {
        for (raw, want) in [
            ("/", "/"),
            ("/foo%20bar", "/foo bar"),
            ("/foo%2Fbar", "/foo%2Fbar"),
            ("/foo%2fbar", "/foo%2Fbar"),
            ("/foo%20bar%2Fbaz%23qux", "/foo bar%2Fbaz%23qux"),
            ("/%61dmin", "/admin"),
            ("/%61%64%6d%69%6E", "/admin"),
            (
                "/%3f%3a%40%21%24%26%27%28%29%2a%2b%2c%3b%3d%5b%5d%25",
                "/%3F%3A%40%21%24%26%27%28%29%2A%2B%2C%3B%3D%5B%5D%25",
            ),
            ("/%2541", "/%2541"),
            ("/%7Bpath:css%7D", "/{path:css}"),
            ("/caf%C3%A9", "/café"),
            ("/%FF", "/\u{FFFD}"),
            ("/bad%zz%4", "/bad%zz%4"),
            ("/trailing%", "/trailing%"),
        ] {
            assert_eq!(routing_path(raw), want, "{raw:?}");
        }
        assert!(matches!(routing_path("/plain"), Cow::Borrowed(_)));
        assert!(valid_percent_encoding("/a%20b%2F"));
        assert!(!valid_percent_encoding("/a%2"));
        assert!(!valid_percent_encoding("/a%zz"));
    }

    #[test]
    fn query_parsing_is_gos() {
        let q = |s: &str| {
            parse_query(s)
                .into_iter()
                .map(|(k, v)| (String::from_utf8(k).unwrap(), String::from_utf8(v).unwrap()))
                .collect::<Vec<_>>()
        };
        let pairs = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            q("a=1&b=2&a=3"),
            pairs(&[("a", "1"), ("b", "2"), ("a", "3")])
        );
        assert_eq!(q("mobile"), pairs(&[("mobile", "")]));
        assert_eq!(q("a+b=c+d%20e"), pairs(&[("a b", "c d e")]));
        assert_eq!(q("k%3D=v%26w"), pairs(&[("k=", "v&w")]));
        // `;` is not a separator: the whole pair is dropped.
        assert_eq!(q("a=1;b=2&c=3"), pairs(&[("c", "3")]));
        // Empty pairs and malformed escapes are skipped.
        assert_eq!(q("&&a=%zz&b=%4&c=ok&"), pairs(&[("c", "ok")]));
        assert_eq!(q("=v&x==y"), pairs(&[("", "v"), ("x", "=y")]));
    }

    // --- acceptance table (traefik-semantics.md §3) ---

    #[test]
    fn rows_01_to_04_host_port_case_trailing_dot() {
        let rule = host("example.com");
        assert!(hit(rule.clone(), &req(Some("example.com:8080"), "/")));
        assert!(hit(rule.clone(), &req(Some("EXAMPLE.COM"), "/path")));
        assert!(hit(rule.clone(), &req(Some("example.com."), "/")));
        assert!(!hit(rule.clone(), &req(Some("example.org."), "/")));
        assert!(!hit(rule, &req(None, "/")));
        // Rule hosts are normalised by the compiler; the table is robust to raw ones too.
        assert!(hit(host("EXAMPLE.COM"), &req(Some("example.com"), "/")));
        assert!(hit(host("example.com."), &req(Some("example.com"), "/")));
        assert!(hit(host("example.com."), &req(Some("example.com."), "/")));
    }

    #[test]
    fn row_05_and_20_v2_lists_are_disjunctions() {
        let rule = or(vec![host("example.com"), host("example.org")]);
        assert!(hit(rule.clone(), &req(Some("example.com"), "/")));
        assert!(hit(rule.clone(), &req(Some("example.org"), "/")));
        assert!(!hit(rule, &req(Some("example.net"), "/")));
        let rule = or(vec![method("GET"), method("POST")]);
        assert!(hit(rule.clone(), &req(Some("a"), "/")));
        assert!(hit(
            rule.clone(),
            &RequestInfo {
                method: "POST",
                ..req(Some("a"), "/")
            }
        ));
        assert!(!hit(
            rule,
            &RequestInfo {
                method: "PUT",
                ..req(Some("a"), "/")
            }
        ));
    }

    #[test]
    fn row_06_punycode_host_is_literal() {
        let rule = host("xn--9t9h.com");
        assert!(hit(rule.clone(), &req(Some("xn--9t9h.com"), "/")));
        assert!(!hit(rule, &req(Some("🦭.com"), "/")));
    }

    #[test]
    fn row_07_wildcard_is_exactly_one_label() {
        let rule = host("*.example.com");
        assert!(hit(rule.clone(), &req(Some("test.example.com"), "/")));
        assert!(hit(rule.clone(), &req(Some("TEST.example.com.:443"), "/")));
        assert!(!hit(rule.clone(), &req(Some("example.com"), "/")));
        assert!(!hit(rule.clone(), &req(Some("a.b.example.com"), "/")));
        assert!(!hit(rule.clone(), &req(Some("test.otherexample.com"), "/")));
        assert!(!hit(rule, &req(None, "/")));
    }

    #[test]
    fn row_08_star_matches_every_host() {
        let rule = host("*");
        for h in [
            "localhost",
            "example.com",
            "a.b.c.example.com:8080",
            "[::1]",
        ] {
            assert!(hit(rule.clone(), &req(Some(h), "/")), "{h}");
        }
        // Traefik's Host matcher rejects a request without a host before anything else.
        assert!(!hit(rule, &req(None, "/")));
    }

    #[test]
    fn row_09_ip_hosts() {
        assert!(hit(host("10::10"), &req(Some("[10::10]"), "/foo")));
        assert!(hit(host("10::10"), &req(Some("[10::10]:8080"), "/foo")));
        assert!(hit(host("10::10"), &req(Some("10::10"), "/foo")));
        assert!(hit(host("127.0.0.1"), &req(Some("127.0.0.1"), "/foo")));
        assert!(hit(host("127.0.0.1"), &req(Some("127.0.0.1:80"), "/foo")));
    }

    #[test]
    fn rows_10_to_13_host_regexp() {
        let rule = host_re(r"^[a-zA-Z-]+\.com$");
        assert!(hit(rule.clone(), &req(Some("example.com:8080"), "/")));
        assert!(!hit(rule, &req(Some("example.org"), "/")));
        // The host is lower-cased before matching, the regex is not.
        assert!(!hit(
            host_re(r"^[A-Z]+\.com$"),
            &req(Some("EXAMPLE.com"), "/")
        ));
        assert!(hit(
            host_re(r"^[a-z]+\.com$"),
            &req(Some("EXAMPLE.com"), "/")
        ));
        // Unanchored.
        assert!(hit(host_re(r"example"), &req(Some("www.example.com"), "/")));
        // Row 12, v2: the compiler turns `{domain:[a-zA-Z-]+\.com}` into an anchored regex.
        assert!(hit(
            host_re(r"^(?P<domain>[a-zA-Z-]+\.com)$"),
            &req(Some("example.com"), "/")
        ));
        // Row 13: a bad regex is a build error, not a panic.
        let err = RouteTable::from_rules([("bad", &host_re("(example.com"))]).unwrap_err();
        assert!(
            matches!(&err, RoutingError::BadRegex { router, regex, .. } if router == "bad" && regex == "(example.com"),
            "{err}"
        );
    }

    #[test]
    fn host_regexp_sees_the_trailing_dot_and_traefiks_empty_flattened_host() {
        // Traefik matches the canonical host, which keeps a trailing dot.
        assert!(!hit(
            host_re(r"^example\.com$"),
            &req(Some("example.com."), "/")
        ));
        assert!(hit(
            host_re(r"^example\.com\.?$"),
            &req(Some("example.com."), "/")
        ));
        // It also tries the CNAME-flattened host, "" without flattening: a regex matching the
        // empty string matches every request, even one without a host.
        assert!(hit(
            host_re(r"^[a-z]*$"),
            &req(Some("not-letters.com"), "/")
        ));
        assert!(hit(host_re(r"^$"), &req(None, "/")));
        assert!(!hit(host_re(r"^.+$"), &req(None, "/")));
    }

    #[test]
    fn rows_14_to_16_path_and_prefix() {
        let rule = path("/css");
        assert!(hit(rule.clone(), &req(Some("a"), "/css")));
        assert!(!hit(rule.clone(), &req(Some("a"), "/css/")));
        assert!(!hit(rule, &req(Some("a"), "/css/main.css")));
        let rule = prefix("/css");
        assert!(hit(rule.clone(), &req(Some("a"), "/css/main.css")));
        assert!(hit(rule.clone(), &req(Some("a"), "/css")));
        assert!(hit(rule.clone(), &req(Some("a"), "/cssx")));
        assert!(!hit(rule, &req(Some("a"), "/html")));
        // A plain string prefix, not a segment prefix.
        assert!(hit(
            prefix("/products"),
            &req(Some("a"), "/products-for-sale")
        ));
    }

    #[test]
    fn rows_17_18_40_path_regexp() {
        let rule = path_re("^/(css|js)");
        assert!(hit(rule.clone(), &req(Some("a"), "/js/main.js")));
        assert!(!hit(rule, &req(Some("a"), "/CSS")));
        // Unanchored.
        assert!(hit(path_re("main"), &req(Some("a"), "/js/main.js")));
        // Row 18: in v3 a v2 template is literal text (the compiler escapes the braces).
        let rule = path_re(r"/\{path:(css|js)\}");
        assert!(hit(rule.clone(), &req(Some("a"), "/{path:css}")));
        assert!(hit(rule.clone(), &req(Some("a"), "/%7Bpath:css%7D")));
        assert!(!hit(rule, &req(Some("a"), "/css")));
        // Row 40: v2 `Path(`/css{path:(/.*)?}`)` compiles to an anchored regex.
        let rule = path_re(r"^/css(?P<path>(/.*)?)$");
        assert!(hit(rule.clone(), &req(Some("a"), "/css/main.css")));
        assert!(!hit(rule, &req(Some("a"), "/css.css")));
    }

    #[test]
    fn row_19_method_is_case_sensitive() {
        let rule = method("GET");
        assert!(hit(rule.clone(), &req(Some("a"), "/")));
        assert!(!hit(
            rule.clone(),
            &RequestInfo {
                method: "POST",
                ..req(Some("a"), "/")
            }
        ));
        assert!(!hit(
            rule,
            &RequestInfo {
                method: "get",
                ..req(Some("a"), "/")
            }
        ));
    }

    #[test]
    fn row_21_header_any_value() {
        let rule = header("X-Forwarded-Proto", "https");
        let both = [
            ("X-Forwarded-Proto", "http"),
            ("x-forwarded-proto", "https"),
        ];
        assert!(hit(
            rule.clone(),
            &RequestInfo {
                headers: &both,
                ..req(Some("a"), "/")
            }
        ));
        let other = [("X-Forwarded-Host", "https")];
        assert!(!hit(
            rule.clone(),
            &RequestInfo {
                headers: &other,
                ..req(Some("a"), "/")
            }
        ));
        // One header line is one value: a comma-separated line is not split.
        let joined = [("X-Forwarded-Proto", "http, https")];
        assert!(!hit(
            rule,
            &RequestInfo {
                headers: &joined,
                ..req(Some("a"), "/")
            }
        ));
        // Go's server moves `Host` out of the header map.
        let host_hdr = [("Host", "example.com")];
        assert!(!hit(
            header("Host", "example.com"),
            &RequestInfo {
                headers: &host_hdr,
                ..req(Some("example.com"), "/")
            }
        ));
    }

    #[test]
    fn row_23_header_regexp_any_value() {
        let rule = header_re("X-Forwarded-Proto", "^https?$");
        let upper = [("X-Forwarded-Proto", "HTTPS")];
        assert!(!hit(
            rule.clone(),
            &RequestInfo {
                headers: &upper,
                ..req(Some("a"), "/")
            }
        ));
        let two = [("X-FORWARDED-PROTO", "ws"), ("X-Forwarded-Proto", "https")];
        assert!(hit(
            rule,
            &RequestInfo {
                headers: &two,
                ..req(Some("a"), "/")
            }
        ));
    }

    #[test]
    fn rows_24_to_26_query() {
        let with = |q: &'static str| RequestInfo {
            query: Some(q),
            ..req(Some("a"), "/")
        };
        let rule = query("q", "traefik");
        assert!(hit(rule.clone(), &with("q=awesome&q=traefik")));
        assert!(!hit(rule.clone(), &with("q=TRAEFIK")));
        assert!(!hit(rule.clone(), &with("Q=traefik")));
        assert!(!hit(rule.clone(), &req(Some("a"), "/")));
        assert!(hit(rule.clone(), &with("q=tra%65fik")));
        // `;` is no separator: `x=1;q=traefik` is one (dropped) pair.
        assert!(!hit(rule, &with("x=1;q=traefik")));
        assert!(hit(query("q", "a b"), &with("q=a+b")));
        // Query(`mobile`): present with an empty value.
        let rule = query("mobile", "");
        assert!(hit(rule.clone(), &with("mobile")));
        assert!(hit(rule.clone(), &with("mobile=")));
        assert!(!hit(rule, &with("mobile=true")));
        let rule = query_re("q", "^.*$");
        assert!(hit(rule.clone(), &with("q=NGINX")));
        assert!(!hit(rule, &with("rel=ddg")));
    }

    #[test]
    fn row_27_client_ip() {
        let with = |ip: IpAddr| RequestInfo {
            peer: ip,
            ..req(Some("a"), "/")
        };
        let rule = client_ip("192.168.1.0/24");
        assert!(hit(
            rule.clone(),
            &with(Ipv4Addr::new(192, 168, 1, 100).into())
        ));
        assert!(!hit(
            rule.clone(),
            &with(Ipv4Addr::new(192, 168, 2, 1).into())
        ));
        // An IPv4-mapped IPv6 peer is its IPv4 address.
        let mapped = Ipv4Addr::new(192, 168, 1, 100).to_ipv6_mapped();
        assert!(hit(rule.clone(), &with(mapped.into())));
        // Forwarded headers are never consulted.
        let xff = [("X-Forwarded-For", "192.168.1.100")];
        assert!(!hit(
            rule,
            &RequestInfo {
                headers: &xff,
                ..with(Ipv4Addr::new(10, 0, 0, 1).into())
            }
        ));
        assert!(hit(
            client_ip("10.0.0.1/32"),
            &with(Ipv4Addr::new(10, 0, 0, 1).into())
        ));
        assert!(hit(
            client_ip("10.0.0.1"),
            &with(Ipv4Addr::new(10, 0, 0, 1).into())
        ));
        assert!(hit(
            client_ip("2001:db8::/32"),
            &with(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).into())
        ));
        assert!(!hit(
            client_ip("2001:db8::/32"),
            &with(Ipv4Addr::new(10, 0, 0, 1).into())
        ));
        // Row 28: not an address is a build error.
        let err = RouteTable::from_rules([("ip", &client_ip("1"))]).unwrap_err();
        assert!(
            matches!(err, RoutingError::BadCidr { ref cidr, .. } if cidr == "1"),
            "{err}"
        );
    }

    #[test]
    fn rows_29_to_32_operators() {
        // Row 29.
        let rule = and(vec![host("localhost"), prefix("/css")]);
        assert!(hit(rule.clone(), &req(Some("localhost"), "/css")));
        assert!(!hit(rule, &req(Some("localhost"), "/js")));
        // Row 30: `&&` binds tighter than `||`: A || (B && C).
        let rule = or(vec![
            host("example.com"),
            and(vec![host("example.org"), path("/css")]),
        ]);
        assert!(hit(rule.clone(), &req(Some("example.com"), "/js")));
        assert!(!hit(rule.clone(), &req(Some("example.org"), "/js")));
        assert!(hit(rule.clone(), &req(Some("example.org"), "/css")));
        assert!(!hit(rule, &req(Some("example.eu"), "/css")));
        // Row 31: (A || B) && C.
        let rule = and(vec![
            or(vec![host("example.com"), host("example.org")]),
            path("/css"),
        ]);
        assert!(!hit(rule.clone(), &req(Some("example.com"), "/js")));
        assert!(hit(rule, &req(Some("example.org"), "/css")));
        // Row 32: !(A && !B).
        let rule = not(and(vec![host("example.com"), not(path("/css"))]));
        assert!(hit(rule.clone(), &req(Some("example.com"), "/css")));
        assert!(hit(rule.clone(), &req(Some("example.org"), "/css")));
        assert!(!hit(rule, &req(Some("example.com"), "/js")));
        // `!Host(...)` matches requests without a host.
        assert!(hit(not(host("example.com")), &req(None, "/")));
    }

    #[test]
    fn row_35_percent_decoded_routing_path() {
        assert!(hit(prefix("/foo bar"), &req(Some("a"), "/foo%20bar")));
        assert!(hit(path("/admin"), &req(Some("a"), "/%61dmin")));
        // `%2F` stays encoded, whatever its case.
        assert!(!hit(path("/foo/bar"), &req(Some("a"), "/foo%2Fbar")));
        assert!(!hit(path("/foo/bar"), &req(Some("a"), "/foo%2fbar")));
        assert!(hit(path("/foo%2Fbar"), &req(Some("a"), "/foo%2fbar")));
        assert!(hit(prefix("/foo"), &req(Some("a"), "/foo%2Fbar")));
        assert!(hit(path_re("^/a%3Fb$"), &req(Some("a"), "/a%3fb")));
    }

    #[test]
    fn row_36_authority_host_is_what_the_caller_passes() {
        // The HTTP layer passes the absolute-form URI's authority instead of the Host header.
        let hdr = [("Host", "example.org")];
        let r = RequestInfo {
            headers: &hdr,
            ..req(Some("example.com"), "/")
        };
        assert!(hit(host("example.com"), &r));
        assert!(!hit(host("example.org"), &r));
    }

    #[test]
    fn rows_37_38_priority_order() {
        let a = ("a", "PathPrefix(`/my`)", prefix("/my"));
        let b = ("b", "PathPrefix(`/mypath`)", prefix("/mypath"));
        // Row 37: default priorities, the longer rule wins.
        let p = plan(&[
            (a.0, a.1, a.2.clone(), None, false),
            (b.0, b.1, b.2.clone(), None, false),
        ]);
        let t = RouteTable::build(&p, "web", false).unwrap();
        assert_eq!(t.route(&req(Some("x"), "/mypath")), Some("b"));
        assert_eq!(t.route(&req(Some("x"), "/my")), Some("a"));
        // Row 38: explicit priorities.
        let p = plan(&[
            (a.0, a.1, a.2.clone(), Some(20), false),
            (b.0, b.1, b.2.clone(), Some(10), false),
        ]);
        let t = RouteTable::build(&p, "web", false).unwrap();
        assert_eq!(t.route(&req(Some("x"), "/mypath")), Some("a"));
        // Equal priority: key order.
        let p = plan(&[
            ("z", "x", prefix("/"), Some(5), false),
            ("m", "x", prefix("/"), Some(5), false),
        ]);
        let t = RouteTable::build(&p, "web", false).unwrap();
        assert_eq!(t.route(&req(Some("x"), "/")), Some("m"));
    }

    #[test]
    fn tls_routers_serve_tls_connections_only() {
        let p = plan(&[
            ("secure", "Host(`a.com`)", host("a.com"), Some(10), true),
            ("plain", "Host(`a.com`)", host("a.com"), Some(5), false),
            (
                "https-only",
                "PathPrefix(`/s`)",
                prefix("/s"),
                Some(100),
                true,
            ),
        ]);
        let on_tls = RouteTable::build(&p, "web", true).unwrap();
        let on_plain = RouteTable::build(&p, "web", false).unwrap();
        assert_eq!(on_tls.len(), 2);
        assert_eq!(on_plain.len(), 1);
        assert_eq!(on_tls.route(&req(Some("a.com"), "/")), Some("secure"));
        assert_eq!(on_tls.route(&req(Some("a.com"), "/s")), Some("https-only"));
        assert_eq!(on_plain.route(&req(Some("a.com"), "/")), Some("plain"));
        assert_eq!(on_plain.route(&req(Some("a.com"), "/s")), Some("plain"));
        assert_eq!(on_plain.route(&req(Some("b.com"), "/s")), None);
    }

    #[test]
    fn build_errors_and_empty_tables() {
        let p = plan(&[("r", "x", path_re("(unclosed"), Some(1), false)]);
        assert!(matches!(
            RouteTable::build(&p, "web", false),
            Err(RoutingError::BadRegex { router, .. }) if router == "r"
        ));
        // The TLS table does not contain the router, so nothing to compile.
        let t = RouteTable::build(&p, "web", true).unwrap();
        assert!(t.is_empty());
        assert_eq!(t.route(&req(Some("a"), "/")), None);
        assert!(matches!(
            RouteTable::build(&p, "nope", false),
            Err(RoutingError::UnknownEntryPoint { entrypoint }) if entrypoint == "nope"
        ));
        let mut p = Plan::example();
        p.entrypoints
            .get_mut("web")
            .unwrap()
            .routers
            .push("ghost".into());
        assert!(matches!(
            RouteTable::build(&p, "web", false),
            Err(RoutingError::UnknownRouter { router, .. }) if router == "ghost"
        ));
        let t = RouteTable::build(&Plan::example(), "web", false).unwrap();
        assert_eq!(
            t.route(&req(Some("whoami.example.com"), "/")),
            Some("whoami")
        );
    }

    #[test]
    fn index_files_host_rules_by_host() {
        let t = table(&[
            (
                "or",
                or(vec![host("a.com"), and(vec![host("b.com"), path("/x")])]),
            ),
            ("and", and(vec![prefix("/"), host("c.com")])),
            ("wild", host("*.a.com")),
            ("neg", not(host("a.com"))),
            ("mixed", or(vec![host("a.com"), prefix("/")])),
        ]);
        assert_eq!(t.generic, vec![2, 3, 4]);
        assert_eq!(t.by_host["a.com"], vec![0]);
        assert_eq!(t.by_host["b.com"], vec![0]);
        assert_eq!(t.by_host["c.com"], vec![1]);
        assert_eq!(t.route(&req(Some("b.com"), "/x")), Some("or"));
        assert_eq!(t.route(&req(Some("b.com"), "/y")), Some("neg"));
        assert_eq!(t.route(&req(Some("C.com:80"), "/")), Some("and"));
        assert_eq!(t.route(&req(Some("x.a.com"), "/")), Some("wild"));
        assert_eq!(t.route(&req(Some("a.com"), "/")), Some("or"));
        assert_eq!(t.route(&req(None, "/")), Some("neg"));
    }

    /// Not timed: counts the candidates a lookup evaluates among 10,000 host routers.
    #[test]
    fn ten_thousand_host_routers_look_at_a_handful() {
        let rules: Vec<(String, Rule)> = (0..10_000)
            .map(|i| {
                (
                    format!("app{i}"),
                    and(vec![host(&format!("app{i}.example.com")), prefix("/api")]),
                )
            })
            .chain([
                ("health".to_owned(), path("/health")),
                ("fallback".to_owned(), prefix("/")),
            ])
            .collect();
        let t = RouteTable::from_rules(rules.iter().map(|(k, r)| (k.as_str(), r))).unwrap();
        assert_eq!(t.len(), 10_002);
        for i in [0, 1, 4_999, 9_999] {
            let h = format!("app{i}.example.com");
            let r = req(Some(&h), "/api/users");
            assert!(t.candidates_for(&r) <= 3, "{}", t.candidates_for(&r));
            assert_eq!(t.route(&r), Some(format!("app{i}").as_str()));
            assert_eq!(t.route(&req(Some(&h), "/web")), Some("fallback"));
            assert_eq!(t.route(&req(Some(&h), "/health")), Some("health"));
        }
        // The path index leaves out `health` for paths that do not start with `/health`.
        let r = req(Some("unknown.example.com"), "/api");
        assert_eq!(t.candidates_for(&r), 1);
        assert_eq!(t.route(&r), Some("fallback"));
        assert_eq!(t.candidates_for(&req(None, "/")), 1);
        assert_eq!(t.candidates_for(&req(None, "/health")), 2);
    }

    #[test]
    fn ten_thousand_path_prefix_routers_are_not_scanned_one_by_one() {
        let rules: Vec<(String, Rule)> = (0..10_000)
            .map(|i| (format!("r{i:05}"), prefix(&format!("/p{i}/"))))
            .collect();
        let t = RouteTable::from_rules(rules.iter().map(|(k, r)| (k.as_str(), r))).unwrap();
        let r = RequestInfo {
            method: "GET",
            host: Some("any.example.com"),
            path: "/p5000/x",
            query: None,
            headers: &[],
            peer: IpAddr::V4(Ipv4Addr::LOCALHOST),
        };
        assert_eq!(t.route(&r), Some("r05000"));
        assert!(t.candidates_for(&r) <= 2, "{}", t.candidates_for(&r));
    }

    // --- property: the index answers like a linear scan ---

    fn leaf() -> impl Strategy<Value = Rule> {
        prop_oneof![
            3 => prop::sample::select(vec!["a.com", "b.com", "c.com", "A.com", "b.com.", "*.a.com", "*"])
                .prop_map(host),
            1 => prop::sample::select(vec![r"^a\.com$", "b", "^[a-z]*$", r"\.$"]).prop_map(host_re),
            1 => prop::sample::select(vec!["/", "/x", "/x/y", "/a b"]).prop_map(path),
            2 => prop::sample::select(vec!["/", "/x", "/y", "/x/"]).prop_map(prefix),
            1 => prop::sample::select(vec!["^/x", "y$"]).prop_map(path_re),
            1 => prop::sample::select(vec!["GET", "POST"]).prop_map(method),
            1 => prop::sample::select(vec![("X-A", "1"), ("x-a", "2"), ("Host", "a.com")])
                .prop_map(|(n, v)| header(n, v)),
            1 => prop::sample::select(vec![("X-A", "^1"), ("X-B", "")]).prop_map(|(n, r)| header_re(n, r)),
            1 => prop::sample::select(vec![("q", "1"), ("q", ""), ("Q", "1")]).prop_map(|(k, v)| query(k, v)),
            1 => prop::sample::select(vec![("q", "^[0-9]+$")]).prop_map(|(k, r)| query_re(k, r)),
            1 => prop::sample::select(vec!["10.0.0.0/8", "192.168.1.1/32", "::1/128"]).prop_map(client_ip),
        ]
    }

    fn rule() -> impl Strategy<Value = Rule> {
        let tree = leaf().prop_recursive(3, 12, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 1..4).prop_map(Rule::And),
                prop::collection::vec(inner.clone(), 1..4).prop_map(Rule::Or),
                inner.prop_map(not),
            ]
        });
        let hosts = prop::sample::select(vec!["a.com", "b.com", "c.com", "B.COM"]);
        prop_oneof![
            // The common shape: Host(h) && something.
            2 => (hosts.clone(), tree.clone()).prop_map(|(h, r)| and(vec![host(h), r])),
            1 => (hosts.clone(), hosts).prop_map(|(h1, h2)| or(vec![host(h1), host(h2)])),
            // The path-indexed shapes: PathPrefix(p) && something, Path(a) || PathPrefix(b).
            2 => (prop::sample::select(vec!["/", "/x", "/x/", "/y", "/x/y"]), tree.clone())
                .prop_map(|(p, r)| and(vec![prefix(p), r])),
            1 => (prop::sample::select(vec!["/x", "/x/y"]), prop::sample::select(vec!["/y", "/x/"]))
                .prop_map(|(a, b)| or(vec![path(a), prefix(b)])),
            2 => tree,
        ]
    }

    /// host, path, method, query, headers, peer.
    type Req = (
        Option<&'static str>,
        &'static str,
        &'static str,
        Option<&'static str>,
        Vec<(&'static str, &'static str)>,
        IpAddr,
    );

    fn request() -> impl Strategy<Value = Req> {
        (
            prop::sample::select(vec![
                None,
                Some("a.com"),
                Some("A.COM:8080"),
                Some("a.com."),
                Some("x.a.com"),
                Some("b.com"),
                Some("c.com"),
                Some("[::1]:80"),
                Some("zzz"),
                Some(""),
            ]),
            prop::sample::select(vec!["/", "/x", "/x/y", "/y", "/%78", "/a%20b", "/x%2F"]),
            prop::sample::select(vec!["GET", "POST", "get"]),
            prop::sample::select(vec![
                None,
                Some("q=1"),
                Some("q"),
                Some("q=2&q=1"),
                Some("Q=1"),
            ]),
            prop::sample::subsequence(
                vec![("X-A", "1"), ("x-a", "2"), ("X-B", "z"), ("host", "a.com")],
                0..=4,
            ),
            prop::sample::select(vec![
                IpAddr::V4(Ipv4Addr::new(10, 1, 2, 3)),
                IpAddr::V4(Ipv4Addr::new(192, 168, 1, 1)),
                IpAddr::V6(Ipv6Addr::LOCALHOST),
                IpAddr::V6(Ipv4Addr::new(10, 0, 0, 1).to_ipv6_mapped()),
            ]),
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn index_agrees_with_linear_scan(
            rules in prop::collection::vec(rule(), 0..24),
            requests in prop::collection::vec(request(), 1..16),
        ) {
            let named: Vec<(String, Rule)> =
                rules.into_iter().enumerate().map(|(i, r)| (format!("r{i:02}"), r)).collect();
            let t = RouteTable::from_rules(named.iter().map(|(k, r)| (k.as_str(), r))).unwrap();
            prop_assert_eq!(t.len(), named.len());
            for (host, path, method, query, headers, peer) in &requests {
                let r = RequestInfo { method, host: *host, path, query: *query, headers, peer: *peer };
                prop_assert_eq!(t.route(&r), naive(&t, &r), "request {:?}", r);
                prop_assert!(t.candidates_for(&r) <= t.len());
            }
        }
    }
}
