//! Resolution: the checked, profiled configuration → a frozen [`bridge_plan::Plan`].
//!
//! Everything the runtime would otherwise have to decide is decided here: Traefik's defaults are
//! filled in (health-check interval 30s and timeout 5s, entry point timeouts, priorities from rule
//! length), entry-point middlewares and TLS are pushed into routers, chains are flattened, internal
//! entry points (`traefik` for the API) are created, and each router is indexed under its entry
//! points in matching order. Only called when `check` found no errors; anything the plan cannot
//! express is still reported as a located error rather than dropped.

use std::collections::{BTreeMap, BTreeSet};

use bridge_plan as plan;

use crate::canon::escape;
use crate::check::CheckReport;
use crate::diag::{Code, Diagnostic};
use crate::loaded::{EntityRef, Loaded, Symbols};
use crate::model::Duration;
use crate::model::dynamic as dy;
use crate::rule::{RuleSyntax, default_priority, parse_rule};
use crate::source::{SourceMap, Span};

/// bridgectl's re-probe interval for down servers (Traefik waits a whole `unhealthyInterval`).
pub const DOWN_REPROBE_INTERVAL_MS: u64 = 250;
/// bridgectl's default wait before the tunnels of a server that went down are closed: short
/// enough that a browser on the seed's setup is on the new active node within 2 s of the
/// standby turning active (detection ~0.25 s + this + the client's reconnect).
pub const TUNNEL_GRACE_MS: u64 = 500;
/// Bound on reading request headers (slowloris); Traefik has no separate knob.
pub const HEADER_READ_TIMEOUT_MS: u64 = 10_000;

/// The rule of the router Traefik generates for an entry point's redirect: its length is the
/// redirect's priority when `priority: 0` is written.
const REDIRECT_RULE: &str = "HostRegexp(`^.+$`)";
/// [`REDIRECT_RULE`] on an entry point with `allowACMEByPass`.
const REDIRECT_RULE_ACME_BYPASS: &str =
    "HostRegexp(`^.+$`) && !PathPrefix(`/.well-known/acme-challenge/`)";

/// Traefik's `transport.keepAliveMax*` and `http2` settings of an entry point, its defaults
/// filled (HTTP/2: Go's 250 streams and 4096-byte table; `0` streams also means 250 there).
fn connection_limits(ep: &crate::model::static_config::EntryPoint) -> plan::ConnectionLimits {
    let t = ep.transport.as_ref();
    let h2 = ep.http2.as_ref();
    let positive = |v: Option<i32>, default: u32| {
        v.and_then(|v| u32::try_from(v).ok())
            .filter(|&v| v > 0)
            .unwrap_or(default)
    };
    plan::ConnectionLimits {
        max_requests: t
            .and_then(|t| t.keep_alive_max_requests)
            .and_then(|n| u64::try_from(n).ok())
            .unwrap_or(0),
        max_time_ms: ms(t.and_then(|t| t.keep_alive_max_time), 0),
        h2_max_concurrent_streams: positive(h2.and_then(|h| h.max_concurrent_streams), 250),
        h2_max_decoder_header_table_size: h2
            .and_then(|h| h.max_decoder_header_table_size)
            .and_then(|v| u32::try_from(v).ok())
            .unwrap_or(4096),
    }
}

fn ms(d: Option<Duration>, default_ms: u64) -> u64 {
    d.map_or(default_ms, |d| {
        u64::try_from(d.nanos.max(0) / 1_000_000).unwrap_or(0)
    })
}

/// A sticky cookie as Traefik writes it (Go's `http.Cookie.String`): a name of token characters
/// only (others become `_`), or `_` and 5 hex digits of the SHA-1 of `_TRAEFIK_BACKEND_<service>@file`;
/// a path without the bytes Go drops, a domain Go accepts (else none), `Max-Age` only when not 0
/// (a negative one is 0), `SameSite` only for the three values Go knows.
fn sticky_cookie(c: &dy::Cookie, service: &str) -> plan::StickyCookie {
    use sha1::Digest as _;
    let name = match c.name.as_deref().filter(|n| !n.is_empty()) {
        Some(n) => n
            .chars()
            .map(|ch| if is_token_char(ch) { ch } else { '_' })
            .collect(),
        None => {
            let digest = sha1::Sha1::digest(format!("_TRAEFIK_BACKEND_{service}@file"));
            let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
            format!("_{}", &hex[..5])
        }
    };
    let path = match c.path.as_deref() {
        None => Some("/".to_owned()),
        Some("") => None,
        Some(p) => Some(
            p.chars()
                .filter(|&ch| (' '..'\u{7f}').contains(&ch) && ch != ';')
                .collect(),
        ),
    };
    let domain = c
        .domain
        .as_deref()
        .filter(|d| valid_cookie_domain(d))
        .map(|d| d.strip_prefix('.').unwrap_or(d).to_owned());
    plan::StickyCookie {
        name,
        path,
        domain,
        max_age: match c.max_age.unwrap_or(0) {
            0 => None,
            n => Some(u64::try_from(n).unwrap_or(0)),
        },
        http_only: c.http_only.unwrap_or(false),
        secure: c.secure.unwrap_or(false),
        same_site: match c
            .same_site
            .as_deref()
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("none") => Some(plan::SameSite::None),
            Some("lax") => Some(plan::SameSite::Lax),
            Some("strict") => Some(plan::SameSite::Strict),
            _ => None,
        },
    }
}

/// RFC 2616's token characters (Go's `isCookieNameValid` rune test).
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Go's `validCookieDomain`: a host name by `isCookieDomainName`, or an IPv4 address.
pub(crate) fn valid_cookie_domain(d: &str) -> bool {
    if d.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    if d.is_empty() || d.len() > 255 {
        return false;
    }
    let s = d.strip_prefix('.').unwrap_or(d);
    let (mut last, mut letter, mut part) = (b'.', false, 0usize);
    for &c in s.as_bytes() {
        match c {
            b'a'..=b'z' | b'A'..=b'Z' => {
                letter = true;
                part += 1;
            }
            b'0'..=b'9' => part += 1,
            b'-' if last != b'.' => part += 1,
            b'.' if last != b'.' && last != b'-' && (1..=63).contains(&part) => part = 0,
            _ => return false,
        }
        last = c;
    }
    last != b'-' && part <= 63 && letter
}

/// `circuitBreaker` as Traefik builds it: a duration of zero or less is the default, so is a
/// missing code; `None` when the expression does not parse (reported by `check`).
fn circuit_breaker(x: &dy::CircuitBreaker) -> Option<plan::CircuitBreaker> {
    // Sub-millisecond durations round up: a positive duration never becomes "none".
    let positive_ms = |d: Option<Duration>, default_ms: u64| match d {
        Some(d) if d.nanos > 0 => {
            u64::try_from(d.nanos).map_or(u64::MAX, |n| n.div_ceil(1_000_000))
        }
        _ => default_ms,
    };
    let expression = x.expression.clone().unwrap_or_default();
    let condition = crate::breaker_expr::parse(&expression).ok()?;
    Some(plan::CircuitBreaker {
        expression,
        condition,
        check_period_ms: positive_ms(x.check_period, 100),
        fallback_duration_ms: positive_ms(x.fallback_duration, 10_000),
        recovery_duration_ms: positive_ms(x.recovery_duration, 10_000),
        response_code: x
            .response_code
            .and_then(|c| u16::try_from(c).ok())
            .filter(|c| (200..=999).contains(c))
            .unwrap_or(503),
    })
}

/// `buffering` as oxy and multibuf set it up: a limit of 0 is none, a memory size of 0 is
/// 1 MiB and one over its limit is the limit; `None` when a size is negative or the expression
/// does not parse (both reported by `check`).
fn buffering(x: &dy::Buffering) -> Option<plan::Buffering> {
    const MIB: u64 = 1 << 20;
    let size = |v: Option<i64>| u64::try_from(v.unwrap_or(0)).ok();
    let limit = |v: Option<i64>| size(v).map(|n| (n > 0).then_some(n));
    let mem = |v: Option<i64>, max: Option<u64>| {
        size(v).map(|n| {
            let n = if n == 0 { MIB } else { n };
            max.map_or(n, |m| n.min(m))
        })
    };
    let max_request_body_bytes = limit(x.max_request_body_bytes)?;
    let max_response_body_bytes = limit(x.max_response_body_bytes)?;
    let retry_expression = x.retry_expression.clone().unwrap_or_default();
    let retry = if retry_expression.is_empty() {
        None
    } else {
        Some(crate::breaker_expr::parse_retry(&retry_expression).ok()?)
    };
    Some(plan::Buffering {
        max_request_body_bytes,
        mem_request_body_bytes: mem(x.mem_request_body_bytes, max_request_body_bytes)?,
        max_response_body_bytes,
        mem_response_body_bytes: mem(x.mem_response_body_bytes, max_response_body_bytes)?,
        retry_expression,
        retry,
    })
}

/// The characters an `encodedCharacters` section denies: those whose `allow…` option is false,
/// or unset when `default_allow` is false (the middleware; an entry point's options default to
/// true once its section is written).
fn encoded_characters(allow: [Option<bool>; 7], default_allow: bool) -> plan::EncodedCharacters {
    plan::EncodedCharacters {
        denied: plan::EncodedCharacter::ALL
            .into_iter()
            .zip(allow)
            .filter(|(_, a)| !a.unwrap_or(default_allow))
            .map(|(c, _)| c)
            .collect(),
    }
}

/// `compress` as Traefik builds it: unknown names were refused by check; a coding written twice
/// ranks by its last place (Traefik's priority map), while `*` stands for the default encoding or
/// else the first one as written; `application/grpc` always leads the excluded types.
fn compress(x: &dy::Compress) -> plan::Compress {
    let coding = |s: &str| match s {
        "gzip" => Some(plan::ContentCoding::Gzip),
        "br" => Some(plan::ContentCoding::Br),
        "zstd" => Some(plan::ContentCoding::Zstd),
        _ => None,
    };
    let written: Vec<plan::ContentCoding> = x
        .encodings
        .iter()
        .flatten()
        .filter_map(|s| coding(s))
        .collect();
    let written = if written.is_empty() {
        vec![
            plan::ContentCoding::Gzip,
            plan::ContentCoding::Br,
            plan::ContentCoding::Zstd,
        ]
    } else {
        written
    };
    let mut ranked: Vec<(usize, plan::ContentCoding)> = Vec::new();
    for (i, c) in written.iter().enumerate() {
        ranked.retain(|(_, seen)| seen != c);
        ranked.push((i, *c));
    }
    let default_encoding = x.default_encoding.as_deref().and_then(coding);
    let types = |list: &Option<Vec<String>>| -> Vec<String> {
        list.iter()
            .flatten()
            .filter_map(|t| bridge_plan::media_type::parse(t).ok())
            .collect()
    };
    let included = types(&x.included_content_types);
    let media_types = if included.is_empty() {
        let mut excluded = vec!["application/grpc".to_owned()];
        excluded.extend(types(&x.excluded_content_types));
        plan::MediaTypeFilter::Exclude(excluded)
    } else {
        plan::MediaTypeFilter::Include(included)
    };
    plan::Compress {
        encodings: ranked.into_iter().map(|(_, c)| c).collect(),
        wildcard: default_encoding
            .or_else(|| written.first().copied())
            .unwrap_or(plan::ContentCoding::Gzip),
        default_encoding,
        min_response_body_bytes: x
            .min_response_body_bytes
            .and_then(|n| u64::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(1024),
        media_types,
    }
}

/// Traefik's sourceCriterion; none set means the client address (rateLimit) or the request
/// host (inFlightReq, `host_by_default`). More than one set was refused by `check`.
fn source_criterion(
    c: Option<&dy::SourceCriterion>,
    host_by_default: bool,
) -> plan::SourceCriterion {
    let ip = |s: Option<&dy::IpStrategy>| {
        plan::SourceCriterion::Ip(plan::IpStrategy {
            depth: s
                .and_then(|s| s.depth)
                .and_then(|d| u32::try_from(d).ok())
                .unwrap_or(0),
            excluded_ips: s.and_then(|s| s.excluded_ips.clone()).unwrap_or_default(),
            ipv6_subnet: s
                .and_then(|s| s.ipv6_subnet)
                .and_then(|n| u8::try_from(n).ok()),
        })
    };
    match c {
        Some(c) if c.ip_strategy.is_some() => ip(c.ip_strategy.as_ref()),
        Some(c)
            if c.request_header_name
                .as_deref()
                .is_some_and(|h| !h.is_empty()) =>
        {
            plan::SourceCriterion::RequestHeader(c.request_header_name.clone().unwrap_or_default())
        }
        Some(c) if c.request_host == Some(true) => plan::SourceCriterion::RequestHost,
        _ if host_by_default => plan::SourceCriterion::RequestHost,
        _ => ip(None),
    }
}

/// The plan's name for a written reference: a file-provider name without `@file`, any other
/// (`api@internal`, `default@internal`) as written.
fn plan_name(written: &str) -> &str {
    EntityRef::parse(written).file_name().unwrap_or(written)
}

struct Resolver<'a> {
    loaded: &'a Loaded,
    symbols: &'a Symbols,
    sources: &'a SourceMap,
    diags: Vec<Diagnostic>,
    /// Certificates routers need from ACME resolvers, gathered while routers are resolved.
    acme_wants: Vec<AcmeWant>,
}

/// One router's certificates from one resolver.
struct AcmeWant {
    resolver: String,
    router: String,
    names: Vec<crate::acme::Names>,
}

/// The certificate of `domains` for exactly `names` (in any order), added when there is none:
/// Traefik orders one certificate per set of names.
fn acme_domain<'d>(
    domains: &'d mut Vec<plan::AcmeDomain>,
    names: &[String],
) -> &'d mut plan::AcmeDomain {
    let mut sorted = names.to_vec();
    sorted.sort();
    let at = domains.iter().position(|d| {
        let mut theirs: Vec<&str> = d.names().collect();
        theirs.sort_unstable();
        theirs == sorted
    });
    let at = at.unwrap_or_else(|| {
        domains.push(plan::AcmeDomain {
            main: names.first().cloned().unwrap_or_default(),
            sans: names.get(1..).unwrap_or_default().to_vec(),
            routers: Vec::new(),
            default_certificate: false,
        });
        domains.len() - 1
    });
    &mut domains[at]
}

impl Resolver<'_> {
    fn provenance(&self, span: Option<Span>) -> plan::Provenance {
        let Some(span) = span else {
            return plan::Provenance {
                file: String::new(),
                line: 0,
                column: 0,
            };
        };
        let Some(f) = self.sources.get(span.file) else {
            return plan::Provenance {
                file: String::new(),
                line: 0,
                column: 0,
            };
        };
        let (line, column) = f.line_col(span.start);
        plan::Provenance {
            file: f.name.clone(),
            line: u32::try_from(line).unwrap_or(u32::MAX),
            column: u32::try_from(column).unwrap_or(u32::MAX),
        }
    }

    fn error(&mut self, span: Option<Span>, pointer: String, message: String) {
        self.diags.push(
            Diagnostic::error(Code::Unsupported, message)
                .at(span)
                .pointer(pointer),
        );
    }

    fn key_span(&self, file: usize, pointer: &str) -> Option<Span> {
        self.loaded
            .dynamic
            .get(file)
            .and_then(|f| f.canon.key_span(pointer))
    }
}

/// Builds and seals the plan. Returns the findings if the configuration cannot become a plan.
pub fn build_plan(report: &CheckReport, profile_name: &str) -> Result<plan::Plan, Vec<Diagnostic>> {
    let mut r = Resolver {
        loaded: &report.loaded,
        symbols: &report.symbols,
        sources: &report.sources,
        diags: Vec::new(),
        acme_wants: Vec::new(),
    };
    let plan = r.plan(profile_name);
    if r.diags
        .iter()
        .any(|d| d.severity == crate::diag::Severity::Error)
    {
        return Err(r.diags);
    }
    let mut plan = plan;
    plan.index_entrypoint_routers();
    if let Err(e) = plan.check_consistency() {
        return Err(vec![Diagnostic::error(
            Code::Internal,
            format!("the resolved plan is inconsistent: {e}"),
        )]);
    }
    if let Err(e) = plan.seal() {
        return Err(vec![Diagnostic::error(
            Code::Internal,
            format!("the plan could not be sealed: {e}"),
        )]);
    }
    Ok(plan)
}

impl Resolver<'_> {
    fn plan(&mut self, profile_name: &str) -> plan::Plan {
        let entrypoints = self.entrypoints();
        let (middlewares, mw_index) = self.middlewares();
        let services = self.services(&mw_index);
        let routers = self.routers(&entrypoints, &mw_index);
        let tls = self.tls();
        let certificate_resolvers = self.certificate_resolvers();
        let (api, ping) = self.api_ping(&routers);
        let servers_transports = self.servers_transports(&services);
        let (log, access_log, metrics) = self.observability();
        let inputs = self.inputs();
        plan::Plan {
            plan_version: plan::PLAN_VERSION,
            hash: String::new(),
            profile: profile_name.to_owned(),
            inputs,
            entrypoints,
            routers,
            services,
            middlewares,
            tls,
            certificate_resolvers,
            api,
            ping,
            servers_transports,
            log,
            access_log,
            metrics,
            ocsp: self.loaded.static_cfg.ocsp.as_ref().map(|o| plan::Ocsp {
                responder_overrides: o.responder_overrides.clone().unwrap_or_default(),
            }),
        }
    }

    /// `log`, `accessLog` and `metrics.prometheus`, with Traefik's defaults (the log level
    /// default is `info`, not Traefik's ERROR, so start-up, health changes and reloads show).
    fn observability(&self) -> (plan::Log, Option<plan::AccessLog>, Option<plan::Metrics>) {
        let st = &self.loaded.static_cfg;
        let level = match st
            .log
            .as_ref()
            .and_then(|l| l.level.as_deref())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("trace" | "debug") => plan::LogLevel::Debug,
            Some("warn") => plan::LogLevel::Warn,
            Some("error" | "fatal" | "panic") => plan::LogLevel::Error,
            _ => plan::LogLevel::Info,
        };
        // Other values were refused by the checker (`check_observability`).
        let log = plan::Log {
            level,
            format: match st.log.as_ref().and_then(|l| l.format.as_deref()) {
                Some("json") => plan::LogFormat::Json,
                _ => plan::LogFormat::Common,
            },
        };
        let access_log = st.access_log.as_ref().map(|a| {
            let filters = a.filters.as_ref();
            plan::AccessLog {
                file_path: a.file_path.clone().filter(|p| !p.is_empty()),
                format: match a.format.as_deref() {
                    Some("json") => plan::AccessLogFormat::Json,
                    Some("genericCLF") => plan::AccessLogFormat::GenericClf,
                    _ => plan::AccessLogFormat::Common,
                },
                status_codes: filters
                    .and_then(|f| f.status_codes.as_ref())
                    .into_iter()
                    .flatten()
                    .filter_map(|c| crate::semantic::parse_status_range(c))
                    .map(|(from, to)| plan::StatusRange { from, to })
                    .collect(),
                retry_attempts: filters.and_then(|f| f.retry_attempts).unwrap_or(false),
                min_duration_ms: ms(filters.and_then(|f| f.min_duration), 0),
                fields: a.fields.as_ref().map(|f| {
                    let headers = f.headers.as_ref();
                    plan::AccessLogFields {
                        default_mode: field_mode(f.default_mode.as_deref())
                            .unwrap_or(plan::FieldMode::Keep),
                        names: f
                            .names
                            .iter()
                            .flatten()
                            .filter_map(|(k, m)| Some((k.clone(), field_mode(Some(m))?)))
                            .collect(),
                        headers_default_mode: header_mode(
                            headers.and_then(|h| h.default_mode.as_deref()),
                        )
                        .unwrap_or(plan::HeaderMode::Drop),
                        header_names: headers
                            .and_then(|h| h.names.as_ref())
                            .into_iter()
                            .flatten()
                            .filter_map(|(k, m)| Some((k.clone(), header_mode(Some(m))?)))
                            .collect(),
                    }
                }),
                add_internals: a.add_internals.unwrap_or(false),
            }
        });
        let metrics = st
            .metrics
            .as_ref()
            .and_then(|m| m.prometheus.as_ref())
            .map(|p| plan::Metrics {
                entrypoint: p.entry_point.clone().unwrap_or_else(|| "traefik".into()),
                buckets_us: p
                    .buckets
                    .clone()
                    .unwrap_or_else(|| vec![0.1, 0.3, 1.2, 5.0])
                    .into_iter()
                    .map(|s| {
                        // Rounded to whole microseconds; the checker made sure they are positive.
                        let us = (s * 1_000_000.0).round();
                        if (1.0..1.8e19).contains(&us) {
                            us as u64
                        } else {
                            1
                        }
                    })
                    .collect(),
                entrypoint_labels: p.add_entry_points_labels.unwrap_or(true),
                router_labels: p.add_routers_labels.unwrap_or(false),
                service_labels: p.add_services_labels.unwrap_or(true),
                manual_routing: p.manual_routing.unwrap_or(false),
                add_internals: st
                    .metrics
                    .as_ref()
                    .and_then(|m| m.add_internals)
                    .unwrap_or(false),
                header_labels: p
                    .header_labels
                    .iter()
                    .flatten()
                    .map(|(label, header)| plan::HeaderLabel {
                        label: label.clone(),
                        header: header.clone(),
                    })
                    .collect(),
            });
        (log, access_log, metrics)
    }

    // ---- servers transports ---------------------------------------------------------------------

    /// The default transport (static `serversTransport`) and every dynamic one a load balancer
    /// uses, with Traefik's defaults; options a plan cannot carry are located errors.
    fn servers_transports(
        &mut self,
        services: &BTreeMap<String, plan::Service>,
    ) -> BTreeMap<String, plan::ServersTransport> {
        use crate::model::static_config as st;
        let mut out = BTreeMap::new();
        let defaults = plan::ServersTransport::default();
        let static_t = self.loaded.static_cfg.servers_transport.clone();
        let mut default = defaults.clone();
        if let Some(t) = &static_t {
            default.insecure_skip_verify = t.insecure_skip_verify.unwrap_or(false);
            default.max_idle_conns_per_host = idle_conns(
                t.max_idle_conns_per_host
                    .unwrap_or(st::DEFAULT_MAX_IDLE_CONNS_PER_HOST),
            );
            let ft = t.forwarding_timeouts.clone().unwrap_or_default();
            default.dial_timeout_ms = ms(ft.dial_timeout, defaults.dial_timeout_ms);
            default.response_header_timeout_ms = ms(
                ft.response_header_timeout,
                defaults.response_header_timeout_ms,
            );
            default.idle_conn_timeout_ms = ms(ft.idle_conn_timeout, defaults.idle_conn_timeout_ms);
            default
                .root_cas
                .extend(t.root_cas.iter().flatten().map(|ca| plan::Pem::of(ca)));
        }
        out.insert(plan::DEFAULT_SERVERS_TRANSPORT.to_owned(), default);
        let used: BTreeSet<String> = services
            .values()
            .filter_map(|s| match &s.kind {
                plan::ServiceKind::LoadBalancer(lb) => lb.servers_transport.clone(),
                _ => None,
            })
            .filter(|n| n != plan::DEFAULT_SERVERS_TRANSPORT)
            .collect();
        for name in used {
            let Some(found) = self.symbols.get::<dy::ServersTransport>(self.loaded, &name) else {
                continue; // undefined: already reported by `check`.
            };
            let (fi, t) = (found.file, found.value.clone());
            let base = format!("/http/serversTransports/{}", escape(&name));
            let ft = t.forwarding_timeouts.clone().unwrap_or_default();
            let mut certificates = Vec::new();
            for (i, c) in t.certificates.iter().flatten().enumerate() {
                let (cert, key) = (
                    c.cert_file.clone().unwrap_or_default(),
                    c.key_file.clone().unwrap_or_default(),
                );
                let p = format!("{base}/certificates/{i}");
                if cert.is_empty() || key.is_empty() {
                    let span = self.key_span(fi, &p);
                    self.error(
                        span,
                        p,
                        "a client certificate needs both `certFile` and `keyFile`".into(),
                    );
                } else {
                    certificates.push(plan::Certificate {
                        cert: plan::Pem::of(&cert),
                        key: plan::Pem::of(&key),
                    });
                }
            }
            let root_cas = t
                .root_cas
                .iter()
                .flatten()
                .map(|ca| plan::Pem::of(ca))
                .collect();
            out.insert(
                name,
                plan::ServersTransport {
                    server_name: t.server_name.clone().filter(|n| !n.is_empty()),
                    insecure_skip_verify: t.insecure_skip_verify.unwrap_or(false),
                    root_cas,
                    max_idle_conns_per_host: idle_conns(
                        t.max_idle_conns_per_host
                            .unwrap_or(st::DEFAULT_MAX_IDLE_CONNS_PER_HOST),
                    ),
                    disable_http2: t.disable_http2.unwrap_or(false),
                    dial_timeout_ms: ms(ft.dial_timeout, defaults.dial_timeout_ms),
                    response_header_timeout_ms: ms(
                        ft.response_header_timeout,
                        defaults.response_header_timeout_ms,
                    ),
                    idle_conn_timeout_ms: ms(ft.idle_conn_timeout, defaults.idle_conn_timeout_ms),
                    certificates,
                    min_version: tls_version(t.min_version.as_deref())
                        .unwrap_or(plan::TlsVersion::Tls12),
                    max_version: tls_version(t.max_version.as_deref()),
                    // Names the checker did not know were refused there.
                    cipher_suites: t
                        .cipher_suites
                        .iter()
                        .flatten()
                        .filter_map(|c| plan::CipherSuite::from_go_name(c))
                        .collect(),
                    peer_cert_uri: t.peer_cert_uri.clone().filter(|u| !u.is_empty()),
                    read_idle_timeout_ms: ms(ft.read_idle_timeout, 0),
                    // Go: 0 means its default of 15 s.
                    ping_timeout_ms: match ms(ft.ping_timeout, defaults.ping_timeout_ms) {
                        0 => defaults.ping_timeout_ms,
                        n => n,
                    },
                },
            );
        }
        out
    }

    fn inputs(&self) -> plan::Inputs {
        use sha2::Digest as _;
        let files: Vec<plan::InputFile> = self
            .sources
            .iter()
            .map(|(_, f)| plan::InputFile {
                path: f.name.clone(),
                sha256: hex(&sha2::Sha256::digest(f.text.as_bytes())),
            })
            .collect();
        let vars = self
            .loaded
            .profile
            .as_ref()
            .map(|p| p.vars.clone())
            .unwrap_or_default();
        plan::Inputs::new(files.clone(), vars.clone()).unwrap_or(plan::Inputs {
            digest: String::new(),
            files,
            vars,
        })
    }

    // ---- entry points ---------------------------------------------------------------------------

    fn entrypoints(&self) -> BTreeMap<String, plan::EntryPoint> {
        let st = &self.loaded.static_cfg;
        let sc = &self.loaded.static_canon;
        let mut out = BTreeMap::new();
        let ports: BTreeMap<String, u16> = st
            .entry_points
            .iter()
            .flatten()
            .filter_map(|(n, e)| {
                e.address
                    .as_deref()
                    .and_then(|a| crate::semantic::parse_address(a).ok())
                    .map(|(p, _)| (n.clone(), p))
            })
            .collect();
        for (name, ep) in st.entry_points.iter().flatten() {
            let base = format!("/entryPoints/{}", escape(name));
            let address = ep.address.clone().unwrap_or_default();
            let Ok((port, _)) = crate::semantic::parse_address(&address) else {
                continue;
            };
            let host = address
                .rsplit_once(':')
                .map(|(h, _)| h.trim_start_matches('[').trim_end_matches(']').to_owned())
                .filter(|h| !h.is_empty());
            let http = ep.http.as_ref();
            let tls = http
                .and_then(|h| h.tls.as_ref())
                .map(|t| plan::EntryPointTls {
                    // `strict@file` names the plan's `strict`, as on a router.
                    options: plan_name(t.options.as_deref().unwrap_or("default")).to_owned(),
                });
            let redirect = http
                .and_then(|h| h.redirections.as_ref())
                .and_then(|r| r.entry_point.as_ref())
                .map(|r| {
                    let to = r.to.clone().unwrap_or_default();
                    let port = to
                        .strip_prefix(':')
                        .and_then(|p| p.parse().ok())
                        .or_else(|| ports.get(&to).copied())
                        .unwrap_or(443);
                    plan::Redirect {
                        scheme: r.scheme.clone().unwrap_or_else(|| "https".into()),
                        port,
                        permanent: r.permanent.unwrap_or(true),
                        // 0 is a router's default priority, the length of the generated rule
                        // ``HostRegexp(`^.+$`)``.
                        priority: match r.priority {
                            None => crate::model::static_config::DEFAULT_REDIRECT_PRIORITY,
                            Some(0) if ep.allow_acme_by_pass == Some(true) => {
                                REDIRECT_RULE_ACME_BYPASS.len() as i64
                            }
                            Some(0) => REDIRECT_RULE.len() as i64,
                            Some(p) => p,
                        },
                    }
                });
            let fh = ep.forwarded_headers.as_ref();
            let transport = ep.transport.as_ref();
            let rt = transport.and_then(|t| t.responding_timeouts.as_ref());
            let lc = transport.and_then(|t| t.life_cycle.as_ref());
            out.insert(
                name.clone(),
                plan::EntryPoint {
                    address,
                    port,
                    host,
                    tls,
                    redirect,
                    forwarded_headers: plan::ForwardedHeaders {
                        insecure: fh.and_then(|f| f.insecure).unwrap_or(false),
                        trusted_ips: fh.and_then(|f| f.trusted_ips.clone()).unwrap_or_default(),
                    },
                    proxy_protocol: ep.proxy_protocol.as_ref().map(|p| plan::ForwardedHeaders {
                        insecure: p.insecure.unwrap_or(false),
                        trusted_ips: p.trusted_ips.clone().unwrap_or_default(),
                    }),
                    http3: ep.http3.as_ref().map(|h| plan::Http3 {
                        advertised_port: h
                            .advertised_port
                            .and_then(|p| u16::try_from(p).ok())
                            .filter(|p| *p > 0)
                            .unwrap_or(port),
                    }),
                    timeouts: plan::Timeouts {
                        read_ms: ms(rt.and_then(|t| t.read_timeout), 60_000),
                        write_ms: ms(rt.and_then(|t| t.write_timeout), 0),
                        idle_ms: ms(rt.and_then(|t| t.idle_timeout), 180_000),
                        header_read_ms: HEADER_READ_TIMEOUT_MS,
                        grace_ms: ms(lc.and_then(|l| l.grace_time_out), 10_000),
                        request_accept_grace_ms: ms(
                            lc.and_then(|l| l.request_accept_grace_timeout),
                            0,
                        ),
                    },
                    max_header_bytes: http
                        .and_then(|h| h.max_header_bytes)
                        .and_then(|b| u64::try_from(b).ok())
                        .unwrap_or(1 << 20),
                    connections: connection_limits(ep),
                    sanitize_path: http
                        .and_then(|h| h.sanitize_path)
                        .unwrap_or(crate::model::static_config::DEFAULT_SANITIZE_PATH),
                    encoded_characters: encoded_characters(
                        http.and_then(|h| h.encoded_characters.as_ref()).map_or(
                            [Some(true); 7],
                            |x| {
                                [
                                    x.allow_encoded_slash,
                                    x.allow_encoded_back_slash,
                                    x.allow_encoded_null_character,
                                    x.allow_encoded_semicolon,
                                    x.allow_encoded_percent,
                                    x.allow_encoded_question_mark,
                                    x.allow_encoded_hash,
                                ]
                            },
                        ),
                        true,
                    ),
                    observability: plan::Observability {
                        access_logs: ep
                            .observability
                            .as_ref()
                            .and_then(|o| o.access_logs)
                            .unwrap_or(true),
                        metrics: ep
                            .observability
                            .as_ref()
                            .and_then(|o| o.metrics)
                            .unwrap_or(true),
                    },
                    acme_bypass: ep.allow_acme_by_pass == Some(true),
                    query_semicolons: if http.and_then(|h| h.encode_query_semicolons) == Some(true)
                    {
                        plan::QuerySemicolons::Encode
                    } else {
                        plan::QuerySemicolons::Separate
                    },
                    // `check` refused any other value.
                    underscore_headers: match http
                        .and_then(|h| h.underscore_headers_strategy.as_deref())
                    {
                        Some("delete") => plan::UnderscoreHeaders::Delete,
                        Some("reject") => plan::UnderscoreHeaders::Reject,
                        _ => plan::UnderscoreHeaders::Keep,
                    },
                    routers: Vec::new(),
                    source: self.provenance(sc.key_span(&base)),
                },
            );
        }
        // Traefik creates `traefik` on :8080 for the insecure API, ping and metrics.
        let api_insecure = st.api.as_ref().and_then(|a| a.insecure) == Some(true);
        let needs_traefik = api_insecure
            || st
                .ping
                .as_ref()
                .is_some_and(|p| p.entry_point.as_deref().unwrap_or("traefik") == "traefik")
            || st
                .metrics
                .as_ref()
                .and_then(|m| m.prometheus.as_ref())
                .is_some_and(|p| p.entry_point.as_deref().unwrap_or("traefik") == "traefik");
        if needs_traefik && !out.contains_key("traefik") {
            let at = if api_insecure {
                sc.key_span("/api/insecure")
            } else if st.ping.is_some() {
                sc.key_span("/ping")
            } else {
                sc.key_span("/metrics")
            };
            out.insert(
                "traefik".into(),
                plan::EntryPoint {
                    address: ":8080".into(),
                    port: 8080,
                    host: None,
                    tls: None,
                    redirect: None,
                    forwarded_headers: plan::ForwardedHeaders {
                        insecure: false,
                        trusted_ips: Vec::new(),
                    },
                    proxy_protocol: None,
                    http3: None,
                    timeouts: plan::Timeouts {
                        read_ms: 60_000,
                        write_ms: 0,
                        idle_ms: 180_000,
                        header_read_ms: HEADER_READ_TIMEOUT_MS,
                        grace_ms: 10_000,
                        request_accept_grace_ms: 0,
                    },
                    max_header_bytes: 1 << 20,
                    connections: connection_limits(&Default::default()),
                    sanitize_path: crate::model::static_config::DEFAULT_SANITIZE_PATH,
                    encoded_characters: plan::EncodedCharacters { denied: Vec::new() },
                    observability: plan::Observability {
                        access_logs: true,
                        metrics: true,
                    },
                    acme_bypass: false,
                    query_semicolons: plan::QuerySemicolons::Separate,
                    underscore_headers: plan::UnderscoreHeaders::Keep,
                    routers: Vec::new(),
                    source: self.provenance(at),
                },
            );
        }
        out
    }

    // ---- middlewares ----------------------------------------------------------------------------

    /// All file-provider middlewares except chains, plus an index name → flattened list.
    fn middlewares(
        &self,
    ) -> (
        BTreeMap<String, plan::Middleware>,
        BTreeMap<String, Vec<String>>,
    ) {
        let mut out = BTreeMap::new();
        let all = self.symbols.in_reading_order::<dy::Middleware>(self.loaded);
        for m in &all {
            let base = m.pointer;
            let source = self.provenance(self.key_span(m.file, base));
            let Some(kind) = self.middleware_kind(m.value) else {
                continue;
            };
            out.insert(m.name.to_owned(), plan::Middleware { source, kind });
        }
        // Flatten chains (cycles were rejected by `check`).
        let mut index = BTreeMap::new();
        for m in &all {
            let mut flat = Vec::new();
            self.flatten(m.name, &mut flat, 0);
            index.insert(m.name.to_owned(), flat);
        }
        (out, index)
    }

    fn flatten(&self, name: &str, out: &mut Vec<String>, depth: usize) {
        let bare = plan_name(name);
        if depth > 64 {
            return;
        }
        match self.symbols.get::<dy::Middleware>(self.loaded, bare) {
            Some(m) => match &m.value.chain {
                Some(c) => {
                    for child in c.middlewares.iter().flatten() {
                        self.flatten(child, out, depth + 1);
                    }
                }
                None => out.push(bare.to_owned()),
            },
            None => out.push(name.to_owned()),
        }
    }

    fn middleware_kind(&self, m: &dy::Middleware) -> Option<plan::MiddlewareKind> {
        use plan::MiddlewareKind as K;
        if let Some(x) = &m.strip_prefix {
            return Some(K::StripPrefix(plan::StripPrefix {
                prefixes: x.prefixes.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.strip_prefix_regex {
            return Some(K::StripPrefixRegex(plan::StripPrefixRegex {
                regex: x.regex.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.add_prefix {
            return Some(K::AddPrefix(plan::AddPrefix {
                prefix: x.prefix.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.replace_path {
            return Some(K::ReplacePath(plan::ReplacePath {
                path: x.path.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.replace_path_regex {
            return Some(K::ReplacePathRegex(plan::ReplacePathRegex {
                regex: x.regex.clone().unwrap_or_default(),
                replacement: x.replacement.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.redirect_scheme {
            return Some(K::RedirectScheme(plan::RedirectScheme {
                scheme: x.scheme.clone().unwrap_or_else(|| "https".into()),
                port: x.port.clone(),
                permanent: x.permanent.unwrap_or(false),
            }));
        }
        if let Some(x) = &m.redirect_regex {
            return Some(K::RedirectRegex(plan::RedirectRegex {
                regex: x.regex.clone().unwrap_or_default(),
                replacement: x.replacement.clone().unwrap_or_default(),
                permanent: x.permanent.unwrap_or(false),
            }));
        }
        if let Some(x) = &m.basic_auth {
            return Some(K::BasicAuth(plan::BasicAuth {
                users: x.users.clone().unwrap_or_default(),
                users_file: x.users_file.clone(),
                realm: x.realm.clone().unwrap_or_else(|| "traefik".into()),
                header_field: x.header_field.clone(),
                remove_header: x.remove_header.unwrap_or(false),
            }));
        }
        if let Some(x) = &m.errors {
            let range = |text: &str| {
                crate::semantic::parse_status_range(text)
                    .map(|(from, to)| plan::StatusRange { from, to })
            };
            let query = x.query.as_deref().unwrap_or_default();
            return Some(K::Errors(plan::Errors {
                status: x.status.iter().flatten().filter_map(|s| range(s)).collect(),
                status_rewrites: x
                    .status_rewrites
                    .iter()
                    .flatten()
                    .filter_map(|(k, code)| {
                        Some(plan::StatusRewrite {
                            range: range(k)?,
                            status: u16::try_from(*code).ok()?,
                        })
                    })
                    .collect(),
                service: plan_name(x.service.as_deref().unwrap_or_default()).to_owned(),
                query: format!("/{}", query.trim_start_matches('/')),
                // Traefik's file provider reads an empty list as not set: all fields go.
                error_request_headers: x.error_request_headers.clone().filter(|h| !h.is_empty()),
            }));
        }
        if let Some(x) = &m.retry {
            return Some(K::Retry(plan::Retry {
                attempts: u32::try_from(x.attempts.unwrap_or(0).max(0)).unwrap_or(u32::MAX),
                initial_interval_ms: ms(x.initial_interval, 100),
            }));
        }
        let allow = m
            .ip_allow_list
            .as_ref()
            .map(|a| {
                (
                    a.source_range.clone(),
                    a.ip_strategy.clone(),
                    a.reject_status_code,
                )
            })
            .or_else(|| {
                m.ip_white_list
                    .as_ref()
                    .map(|a| (a.source_range.clone(), a.ip_strategy.clone(), None))
            });
        if let Some((ranges, strategy, reject)) = allow {
            return Some(K::IpAllowList(plan::IpAllowList {
                source_range: ranges.unwrap_or_default(),
                reject_status_code: reject.and_then(|c| u16::try_from(c).ok()).unwrap_or(403),
                depth: strategy
                    .as_ref()
                    .and_then(|s| s.depth)
                    .and_then(|d| u32::try_from(d).ok())
                    .unwrap_or(0),
                excluded_ips: strategy
                    .as_ref()
                    .and_then(|s| s.excluded_ips.clone())
                    .unwrap_or_default(),
                ipv6_subnet: strategy
                    .and_then(|s| s.ipv6_subnet)
                    .and_then(|n| u8::try_from(n).ok()),
            }));
        }
        if let Some(x) = &m.rate_limit {
            let period = ms(x.period, 1000);
            return Some(K::RateLimit(plan::RateLimit {
                average: x.average.and_then(|a| u64::try_from(a).ok()).unwrap_or(0),
                // Traefik: a zero period is the default second.
                period_ms: if period == 0 { 1000 } else { period },
                burst: x
                    .burst
                    .and_then(|b| u64::try_from(b).ok())
                    .unwrap_or(1)
                    .max(1),
                source: source_criterion(x.source_criterion.as_ref(), false),
            }));
        }
        if let Some(x) = &m.forward_auth {
            let tls = x.tls.clone().unwrap_or_default();
            let set = |v: &Option<String>| v.as_deref().is_some_and(|s| !s.is_empty());
            let certificate = (set(&tls.cert) && set(&tls.key)).then(|| plan::Certificate {
                cert: plan::Pem::of(tls.cert.as_deref().unwrap_or_default()),
                key: plan::Pem::of(tls.key.as_deref().unwrap_or_default()),
            });
            let names = |v: &Option<Vec<String>>| -> Vec<String> {
                v.iter()
                    .flatten()
                    .filter(|h| !h.is_empty())
                    .map(|h| plan::go_canonical_header(h))
                    .collect()
            };
            return Some(K::ForwardAuth(plan::ForwardAuth {
                address: x.address.clone().unwrap_or_default(),
                tls: plan::AuthTls {
                    ca: tls
                        .ca
                        .as_deref()
                        .filter(|c| !c.is_empty())
                        .map(plan::Pem::of),
                    insecure_skip_verify: tls.insecure_skip_verify.unwrap_or(false),
                    certificate,
                },
                trust_forward_header: match x.trust_forward_header {
                    None => plan::ForwardHeaderTrust::Unset,
                    Some(true) => plan::ForwardHeaderTrust::Trusted,
                    Some(false) => plan::ForwardHeaderTrust::Untrusted,
                },
                auth_response_headers: names(&x.auth_response_headers),
                auth_response_headers_regex: x
                    .auth_response_headers_regex
                    .clone()
                    .filter(|r| !r.is_empty()),
                auth_request_headers: names(&x.auth_request_headers),
                add_auth_cookies_to_response: x
                    .add_auth_cookies_to_response
                    .clone()
                    .unwrap_or_default(),
                header_field: x.header_field.clone().filter(|h| !h.is_empty()),
                forward_body: x.forward_body.unwrap_or(false),
                // Traefik: a negative limit is no limit (its default, -1).
                max_body_size: x.max_body_size.and_then(|n| u64::try_from(n).ok()),
                // Traefik: a negative limit is no limit.
                max_response_body_size: x
                    .max_response_body_size
                    .and_then(|n| u64::try_from(n).ok()),
                preserve_location_header: x.preserve_location_header.unwrap_or(false),
                preserve_request_method: x.preserve_request_method.unwrap_or(false),
                auth_signin_url: x.auth_signin_url.clone().filter(|u| !u.is_empty()),
            }));
        }
        if let Some(x) = &m.digest_auth {
            return Some(K::DigestAuth(plan::DigestAuth {
                users: x
                    .users
                    .iter()
                    .flatten()
                    .map(|u| u.trim().to_owned())
                    .collect(),
                users_file: x.users_file.clone().filter(|f| !f.is_empty()),
                realm: x
                    .realm
                    .clone()
                    .filter(|r| !r.is_empty())
                    .unwrap_or_else(|| "traefik".to_owned()),
                header_field: x.header_field.clone().filter(|h| !h.is_empty()),
                remove_header: x.remove_header.unwrap_or(false),
            }));
        }
        if let Some(x) = &m.pass_tls_client_cert {
            let on = |b: Option<bool>| b.unwrap_or(false);
            return Some(K::PassTlsClientCert(plan::PassTlsClientCert {
                pem: on(x.pem),
                info: x.info.as_ref().map(|i| plan::ClientCertInfo {
                    not_after: on(i.not_after),
                    not_before: on(i.not_before),
                    sans: on(i.sans),
                    serial_number: on(i.serial_number),
                    subject: i.subject.as_ref().map_or_else(Default::default, |s| {
                        plan::DistinguishedNameFields {
                            country: on(s.country),
                            province: on(s.province),
                            locality: on(s.locality),
                            organization: on(s.organization),
                            organizational_unit: on(s.organizational_unit),
                            common_name: on(s.common_name),
                            serial_number: on(s.serial_number),
                            domain_component: on(s.domain_component),
                        }
                    }),
                    issuer: i.issuer.as_ref().map_or_else(Default::default, |s| {
                        plan::DistinguishedNameFields {
                            country: on(s.country),
                            province: on(s.province),
                            locality: on(s.locality),
                            organization: on(s.organization),
                            organizational_unit: false,
                            common_name: on(s.common_name),
                            serial_number: on(s.serial_number),
                            domain_component: on(s.domain_component),
                        }
                    }),
                }),
            }));
        }
        if let Some(x) = &m.encoded_characters {
            return Some(K::EncodedCharacters(encoded_characters(
                [
                    x.allow_encoded_slash,
                    x.allow_encoded_back_slash,
                    x.allow_encoded_null_character,
                    x.allow_encoded_semicolon,
                    x.allow_encoded_percent,
                    x.allow_encoded_question_mark,
                    x.allow_encoded_hash,
                ],
                false,
            )));
        }
        if let Some(x) = &m.content_type {
            return Some(K::ContentType(plan::ContentType {
                detect: x.auto_detect != Some(false),
            }));
        }
        if let Some(x) = &m.compress {
            return Some(K::Compress(compress(x)));
        }
        if let Some(x) = &m.circuit_breaker {
            return circuit_breaker(x).map(K::CircuitBreaker);
        }
        if let Some(x) = &m.grpc_web {
            return Some(K::GrpcWeb(plan::GrpcWeb {
                allow_origins: x.allow_origins.clone().unwrap_or_default(),
            }));
        }
        if let Some(x) = &m.buffering {
            return buffering(x).map(K::Buffering);
        }
        if let Some(x) = &m.in_flight_req {
            return Some(K::InFlightReq(plan::InFlightReq {
                amount: x.amount.and_then(|a| u64::try_from(a).ok()).unwrap_or(0),
                source: source_criterion(x.source_criterion.as_ref(), true),
            }));
        }
        if let Some(h) = &m.headers {
            return Some(K::Headers(plan::Headers {
                custom_request_headers: h.custom_request_headers.clone().unwrap_or_default(),
                custom_response_headers: h.custom_response_headers.clone().unwrap_or_default(),
                sts_seconds: h
                    .sts_seconds
                    .and_then(|s| u64::try_from(s).ok())
                    .unwrap_or(0),
                sts_include_subdomains: h.sts_include_subdomains.unwrap_or(false),
                sts_preload: h.sts_preload.unwrap_or(false),
                force_sts_header: h.force_sts_header.unwrap_or(false),
                frame_deny: h.frame_deny.unwrap_or(false),
                custom_frame_options_value: h.custom_frame_options_value.clone(),
                content_type_nosniff: h.content_type_nosniff.unwrap_or(false),
                browser_xss_filter: h.browser_xss_filter.unwrap_or(false),
                content_security_policy: h.content_security_policy.clone(),
                referrer_policy: h.referrer_policy.clone(),
                permissions_policy: h.permissions_policy.clone(),
                access_control_allow_credentials: h
                    .access_control_allow_credentials
                    .unwrap_or(false),
                access_control_allow_headers: h
                    .access_control_allow_headers
                    .clone()
                    .unwrap_or_default(),
                access_control_allow_methods: h
                    .access_control_allow_methods
                    .clone()
                    .unwrap_or_default(),
                access_control_allow_origin_list: h
                    .access_control_allow_origin_list
                    .clone()
                    .unwrap_or_default(),
                access_control_allow_origin_list_regex: h
                    .access_control_allow_origin_list_regex
                    .clone()
                    .unwrap_or_default(),
                access_control_expose_headers: h
                    .access_control_expose_headers
                    .clone()
                    .unwrap_or_default(),
                access_control_max_age: h
                    .access_control_max_age
                    .and_then(|s| u64::try_from(s).ok())
                    .unwrap_or(0),
                add_vary_header: h.add_vary_header.unwrap_or(false),
                allowed_hosts: h.allowed_hosts.clone().unwrap_or_default(),
                hosts_proxy_headers: h.hosts_proxy_headers.clone().unwrap_or_default(),
                ssl_proxy_headers: h.ssl_proxy_headers.clone().unwrap_or_default(),
                custom_browser_xss_value: h
                    .custom_browser_xss_value
                    .clone()
                    .filter(|v| !v.is_empty()),
                content_security_policy_report_only: h
                    .content_security_policy_report_only
                    .clone()
                    .filter(|v| !v.is_empty()),
                public_key: h.public_key.clone().filter(|v| !v.is_empty()),
                is_development: h.is_development.unwrap_or(false),
            }));
        }
        // chain (flattened elsewhere) or an unsupported kind (already reported by `check`).
        None
    }

    // ---- services -------------------------------------------------------------------------------

    fn services(
        &mut self,
        mw_index: &BTreeMap<String, Vec<String>>,
    ) -> BTreeMap<String, plan::Service> {
        let mut out = BTreeMap::new();
        for found in self.symbols.in_reading_order::<dy::Service>(self.loaded) {
            let (fi, name, s) = (found.file, found.name, found.value);
            let base = found.pointer;
            let source = self.provenance(self.key_span(fi, base));
            let mut middlewares = Vec::new();
            for m in s.middlewares.iter().flatten() {
                match mw_index.get(plan_name(m)) {
                    Some(flat) => middlewares.extend(flat.iter().cloned()),
                    None => {
                        let p = format!("{base}/middlewares");
                        let span = self.key_span(fi, &p);
                        self.error(
                            span,
                            p,
                            format!("service `{name}`: middleware `{m}` cannot be part of a plan"),
                        );
                    }
                }
            }
            let strip = |n: &Option<String>| plan_name(n.as_deref().unwrap_or_default()).to_owned();
            let weighted_refs =
                |services: &Option<Vec<dy::WeightedService>>| -> Vec<plan::WeightedRef> {
                    services
                        .iter()
                        .flatten()
                        .map(|ws| plan::WeightedRef {
                            service: strip(&ws.name),
                            name: ws.name.clone().unwrap_or_default(),
                            weight: u32::try_from(ws.weight.unwrap_or(1).max(0)).unwrap_or(1),
                        })
                        .collect()
                };
            let kind = if let Some(lb) = &s.load_balancer {
                // p2c reads no weight: Traefik keeps a server of weight 0 (the others drop it).
                let p2c = lb.strategy.as_deref() == Some("p2c");
                plan::ServiceKind::LoadBalancer(plan::LoadBalancer {
                    servers: lb
                        .servers
                        .iter()
                        .flatten()
                        .filter(|sv| p2c || sv.weight.unwrap_or(1) > 0)
                        .map(|sv| plan::Server {
                            url: sv.url.clone().unwrap_or_default(),
                            weight: u32::try_from(sv.weight.unwrap_or(1).max(0)).unwrap_or(1),
                            preserve_path: sv.preserve_path.unwrap_or(false),
                        })
                        .collect(),
                    pass_host_header: lb.pass_host_header.unwrap_or(true),
                    health_check: lb
                        .health_check
                        .as_ref()
                        .map(|hc| health_check(hc, &self.bridge_settings(name))),
                    servers_transport: lb
                        .servers_transport
                        .as_deref()
                        .map(|t| plan_name(t).to_owned()),
                    // Traefik's hrw never writes the cookie (check warns).
                    sticky: lb
                        .sticky
                        .as_ref()
                        .and_then(|s| s.cookie.as_ref())
                        .filter(|_| lb.strategy.as_deref() != Some("hrw"))
                        .map(|c| Box::new(sticky_cookie(c, name))),
                    strategy: match lb.strategy.as_deref() {
                        Some("hrw") => plan::Strategy::Hrw,
                        Some("p2c") => plan::Strategy::P2c,
                        Some("leasttime") => plan::Strategy::Leasttime,
                        // Another name is refused by check.
                        _ => plan::Strategy::Wrr,
                    },
                })
            } else if let Some(w) = &s.weighted {
                plan::ServiceKind::Weighted(plan::Weighted {
                    services: weighted_refs(&w.services),
                    health_check: w.health_check.is_some(),
                    sticky: w
                        .sticky
                        .as_ref()
                        .and_then(|s| s.cookie.as_ref())
                        .map(|c| Box::new(sticky_cookie(c, name))),
                })
            } else if let Some(h) = &s.highest_random_weight {
                plan::ServiceKind::HighestRandomWeight(plan::HighestRandomWeight {
                    services: weighted_refs(&h.services),
                    health_check: h.health_check.is_some(),
                })
            } else if let Some(fo) = &s.failover {
                plan::ServiceKind::Failover(plan::Failover {
                    service: strip(&fo.service),
                    fallback: strip(&fo.fallback),
                    health_check: fo.health_check.is_some(),
                    errors: fo.errors.as_ref().and_then(|e| {
                        // Codes the checker refused are left out; none left: no replay, as
                        // Traefik without statuses.
                        let status: Vec<plan::StatusRange> = e
                            .status
                            .iter()
                            .flatten()
                            .filter_map(|c| crate::semantic::parse_status_range(c))
                            .map(|(from, to)| plan::StatusRange { from, to })
                            .collect();
                        (!status.is_empty()).then(|| plan::FailoverErrors {
                            status,
                            // Traefik: any negative value means no limit.
                            max_request_body_bytes: e
                                .max_request_body_bytes
                                .and_then(|n| u64::try_from(n).ok()),
                        })
                    }),
                })
            } else if let Some(m) = &s.mirroring {
                plan::ServiceKind::Mirroring(plan::Mirroring {
                    service: strip(&m.service),
                    mirrors: m
                        .mirrors
                        .iter()
                        .flatten()
                        .map(|x| plan::Mirror {
                            service: strip(&x.name),
                            percent: u8::try_from(x.percent.unwrap_or(0).clamp(0, 100))
                                .unwrap_or(0),
                        })
                        .collect(),
                    mirror_body: m.mirror_body.unwrap_or(true),
                    max_body_size: m.max_body_size.and_then(|b| u64::try_from(b).ok()),
                })
            } else {
                continue; // none: already reported by `check`.
            };
            out.insert(
                name.to_owned(),
                plan::Service {
                    source,
                    kind,
                    middlewares,
                },
            );
        }
        out
    }

    // ---- routers --------------------------------------------------------------------------------

    fn routers(
        &mut self,
        entrypoints: &BTreeMap<String, plan::EntryPoint>,
        mw_index: &BTreeMap<String, Vec<String>>,
    ) -> BTreeMap<String, plan::Router> {
        let st = &self.loaded.static_cfg;
        let default_syntax = match st
            .core
            .as_ref()
            .and_then(|c| c.default_rule_syntax.as_deref())
        {
            Some("v2") => RuleSyntax::V2,
            _ => RuleSyntax::V3,
        };
        let defaults = self.loaded.default_entry_points();
        let ep_mws: BTreeMap<String, Vec<String>> = st
            .entry_points
            .iter()
            .flatten()
            .map(|(n, e)| {
                (
                    n.clone(),
                    e.http
                        .as_ref()
                        .and_then(|h| h.middlewares.clone())
                        .unwrap_or_default(),
                )
            })
            .collect();
        let mut out: BTreeMap<String, plan::Router> = BTreeMap::new();
        // (parent name, child router key) for every `parentRefs` entry.
        let mut child_of: Vec<(String, String)> = Vec::new();
        // The plan keys each router became (more than one when entry points split it).
        let mut split_keys: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for found in self.symbols.in_reading_order::<dy::Router>(self.loaded) {
            let (fi, name, r) = (found.file, found.name, found.value);
            let base = found.pointer;
            let source = self.provenance(self.key_span(fi, base));
            let syntax = RuleSyntax::from_router(r.rule_syntax.as_deref(), default_syntax);
            let Ok(matcher) = parse_rule(&r.rule, syntax) else {
                continue;
            };
            let priority = r
                .priority
                .filter(|p| *p != 0)
                .unwrap_or_else(|| default_priority(&r.rule));
            // A child router (`parentRefs`) has no entry points: it is served where its parents
            // are, with their TLS, after their middlewares (entry point middlewares included).
            let child = r.parent_refs.is_some();
            let eps: Vec<String> = if child {
                Vec::new()
            } else {
                r.entry_points
                    .clone()
                    .unwrap_or_else(|| defaults.clone())
                    .into_iter()
                    .filter(|e| entrypoints.contains_key(e))
                    .collect()
            };
            if eps.is_empty() && !child {
                continue;
            }
            if child {
                for p in r.parent_refs.iter().flatten() {
                    child_of.push((plan_name(p).to_owned(), name.to_owned()));
                }
            }
            // Entry points with different entry-point middlewares split the router, as Traefik does.
            let mut groups: BTreeMap<Vec<String>, Vec<String>> = BTreeMap::new();
            for ep in &eps {
                groups
                    .entry(ep_mws.get(ep).cloned().unwrap_or_default())
                    .or_default()
                    .push(ep.clone());
            }
            if child {
                groups.insert(Vec::new(), Vec::new());
            }
            let split = groups.len() > 1;
            split_keys.insert(name.to_owned(), Vec::new());
            for (epm, group) in groups {
                let mut mws = Vec::new();
                for m in epm.iter().chain(r.middlewares.iter().flatten()) {
                    match mw_index.get(plan_name(m)) {
                        Some(flat) => mws.extend(flat.iter().cloned()),
                        None => {
                            let p = format!("{base}/middlewares");
                            let span = self.key_span(fi, &p);
                            self.error(
                                span,
                                p,
                                format!(
                                    "router `{name}`: middleware `{m}` cannot be part of a plan"
                                ),
                            );
                        }
                    }
                }
                // Traefik gives a router without `tls` its entry point's `http.tls` as a whole
                // (options, certResolver, domains).
                let ep_tls = group.iter().find_map(|e| {
                    entrypoints.get(e)?;
                    st.entry_points
                        .as_ref()?
                        .get(e)?
                        .http
                        .as_ref()?
                        .tls
                        .as_ref()
                });
                let effective = match (&r.tls, ep_tls) {
                    (Some(t), _) => Some((
                        t.options.as_deref(),
                        t.cert_resolver.as_deref(),
                        t.domains.clone(),
                    )),
                    (None, Some(t)) => Some((
                        t.options.as_deref(),
                        t.cert_resolver.as_deref(),
                        t.domains.as_ref().map(|ds| {
                            ds.iter()
                                .map(|d| dy::Domain {
                                    main: d.main.clone(),
                                    sans: d.sans.clone(),
                                })
                                .collect()
                        }),
                    )),
                    (None, None) => None,
                };
                let key = if split {
                    format!("{}-{name}", group.join("-"))
                } else {
                    name.to_owned()
                };
                if let Some(keys) = split_keys.get_mut(name) {
                    keys.push(key.clone());
                }
                let tls = effective.map(|(options, resolver, domains)| {
                    if let Some(res) = resolver {
                        self.acme_wants.push(AcmeWant {
                            resolver: res.to_owned(),
                            router: key.clone(),
                            names: crate::acme::router_domains(domains.as_deref(), &matcher),
                        });
                    }
                    plan::RouterTls {
                        options: plan_name(options.unwrap_or("default")).to_owned(),
                        cert_resolver: resolver.map(str::to_owned),
                    }
                });
                let service =
                    (!r.service.is_empty()).then(|| plan::ServiceRef::from(plan_name(&r.service)));
                out.insert(
                    key,
                    plan::Router {
                        children: Vec::new(),
                        entrypoints: group,
                        rule: r.rule.clone(),
                        rule_syntax: match syntax {
                            RuleSyntax::V2 => plan::RuleSyntax::V2,
                            RuleSyntax::V3 => plan::RuleSyntax::V3,
                        },
                        matcher: matcher.clone(),
                        priority,
                        middlewares: mws,
                        service,
                        tls,
                        observability: r.observability.as_ref().and_then(|o| {
                            (o.access_logs.is_some() || o.metrics.is_some()).then_some(
                                plan::RouterObservability {
                                    access_logs: o.access_logs,
                                    metrics: o.metrics,
                                },
                            )
                        }),
                        source: source.clone(),
                    },
                );
            }
        }
        // Each child goes under every router its parents became (a parent split by entry point
        // middlewares is one router per group), in matching order.
        for (parent, child) in &child_of {
            for key in split_keys.get(parent).into_iter().flatten() {
                if let Some(p) = out.get_mut(key)
                    && !p.children.contains(child)
                {
                    p.children.push(child.clone());
                }
            }
        }
        // Routers left without a way in (a parent served on no entry point, so none of its
        // children either) are left out, as routers on no entry point are.
        loop {
            let reached: BTreeSet<String> = out
                .values()
                .flat_map(|r| r.children.iter().cloned())
                .collect();
            let orphans: Vec<String> = out
                .iter()
                .filter(|(k, r)| r.entrypoints.is_empty() && !reached.contains(*k))
                .map(|(k, _)| k.clone())
                .collect();
            if orphans.is_empty() {
                break;
            }
            for k in orphans {
                out.remove(&k);
            }
        }
        let order: BTreeMap<String, (i64, String)> = out
            .iter()
            .map(|(k, r)| (k.clone(), (r.priority, k.clone())))
            .collect();
        for r in out.values_mut() {
            r.children.retain(|c| order.contains_key(c));
            r.children.sort_by(|a, b| {
                let (pa, pb) = (order.get(a), order.get(b));
                pb.map(|x| x.0)
                    .cmp(&pa.map(|x| x.0))
                    .then_with(|| a.as_bytes().cmp(b.as_bytes()))
            });
        }
        out
    }

    // ---- certificate resolvers ------------------------------------------------------------------

    /// The ACME resolvers with Traefik's defaults, and the certificates routers need from each
    /// (identical name sets merged, routers listed). Resolvers `check` refused are absent (the
    /// plan is only built without errors).
    fn certificate_resolvers(&self) -> BTreeMap<String, plan::CertificateResolver> {
        use crate::model::static_config as sc;
        let mut out = BTreeMap::new();
        let Some(all) = self.loaded.static_cfg.certificates_resolvers.as_ref() else {
            return out;
        };
        for (name, res) in all {
            let Some(a) = &res.acme else { continue };
            let Some(key_type) = plan::AcmeKeyType::from_traefik(
                a.key_type.as_deref().unwrap_or(sc::DEFAULT_ACME_KEY_TYPE),
            ) else {
                continue;
            };
            let pointer = format!("/certificatesResolvers/{}", escape(name));
            let source = self.provenance(self.loaded.static_canon.key_span(&pointer));
            let mut domains: Vec<plan::AcmeDomain> = Vec::new();
            for want in self.acme_wants.iter().filter(|w| &w.resolver == name) {
                for names in &want.names {
                    let d = acme_domain(&mut domains, names);
                    if !d.routers.contains(&want.router) {
                        d.routers.push(want.router.clone());
                        d.routers.sort();
                    }
                }
            }
            if let Some(names) = self.generated_default(name) {
                acme_domain(&mut domains, &names).default_certificate = true;
            }
            let delay = |d: Option<&Duration>| ms(d.copied(), 0);
            out.insert(
                name.clone(),
                plan::CertificateResolver {
                    email: a.email.clone().filter(|e| !e.is_empty()),
                    ca_server: a
                        .ca_server
                        .clone()
                        .unwrap_or_else(|| sc::DEFAULT_ACME_CA_SERVER.to_owned()),
                    ca_certificates: a.ca_certificates.clone().unwrap_or_default(),
                    ca_system_cert_pool: a.ca_system_cert_pool.unwrap_or(false),
                    ca_server_name: a.ca_server_name.clone().filter(|n| !n.is_empty()),
                    storage: a
                        .storage
                        .clone()
                        .unwrap_or_else(|| sc::DEFAULT_ACME_STORAGE.to_owned()),
                    key_type,
                    certificates_duration_hours: u64::try_from(
                        a.certificates_duration
                            .unwrap_or(sc::DEFAULT_ACME_CERTIFICATES_DURATION),
                    )
                    .unwrap_or(1),
                    profile: a.profile.clone().filter(|p| !p.is_empty()),
                    email_addresses: a.email_addresses.clone().unwrap_or_default(),
                    disable_common_name: a.disable_common_name.unwrap_or(false),
                    eab: a.eab.as_ref().and_then(|e| {
                        Some(plan::Eab {
                            kid: e.kid.clone()?,
                            hmac_encoded: e.hmac_encoded.clone()?,
                        })
                    }),
                    http_challenge: a.http_challenge.as_ref().and_then(|h| {
                        Some(plan::HttpChallenge {
                            entrypoint: h.entry_point.clone()?,
                            delay_ms: delay(h.delay.as_ref()),
                        })
                    }),
                    tls_challenge: a.tls_challenge.as_ref().map(|t| plan::TlsChallenge {
                        delay_ms: delay(t.delay.as_ref()),
                    }),
                    dns_challenge: dns_challenge(a),
                    client_timeout_ms: ms(
                        a.client_timeout,
                        ms(Some(sc::DEFAULT_ACME_CLIENT_TIMEOUT), 0),
                    ),
                    client_response_header_timeout_ms: ms(
                        a.client_response_header_timeout,
                        ms(Some(sc::DEFAULT_ACME_CLIENT_RESPONSE_HEADER_TIMEOUT), 0),
                    ),
                    certificate_timeout_ms: ms(a.certificate_timeout, 30_000),
                    domains,
                    source,
                },
            );
        }
        out
    }

    /// The names of the default store's `defaultGeneratedCert` when it names `resolver` and no
    /// `defaultCertificate` is set (which Traefik serves instead, ordering nothing), main first.
    fn generated_default(&self, resolver: &str) -> Option<Vec<String>> {
        let stores = || {
            self.loaded
                .dynamic
                .iter()
                .filter_map(|f| f.model.tls.as_ref()?.stores.as_ref()?.get("default"))
        };
        if stores().any(|s| s.default_certificate.is_some()) {
            return None;
        }
        stores().find_map(|s| {
            let g = s.default_generated_cert.as_ref()?;
            if g.resolver.as_deref() != Some(resolver) {
                return None;
            }
            let d = g.domain.as_ref()?;
            let main = d.main.clone().filter(|m| !m.is_empty())?;
            let mut names = vec![main.to_ascii_lowercase()];
            for san in d.sans.iter().flatten() {
                let san = san.to_ascii_lowercase();
                if !san.is_empty() && !names.contains(&san) {
                    names.push(san);
                }
            }
            Some(names)
        })
    }

    // ---- tls, api -------------------------------------------------------------------------------

    fn tls(&self) -> plan::Tls {
        let mut certificates = Vec::new();
        let mut default_certificate = None;
        let mut options = BTreeMap::new();
        for f in &self.loaded.dynamic {
            let Some(t) = &f.model.tls else { continue };
            for c in t.certificates.iter().flatten() {
                let (cert, key) = (
                    c.cert_file.clone().unwrap_or_default(),
                    c.key_file.clone().unwrap_or_default(),
                );
                let c = plan::Certificate {
                    cert: plan::Pem::of(&cert),
                    key: plan::Pem::of(&key),
                };
                if !certificates.contains(&c) {
                    certificates.push(c);
                }
            }
            if let Some(dc) = t
                .stores
                .as_ref()
                .and_then(|s| s.get("default"))
                .and_then(|s| s.default_certificate.as_ref())
            {
                default_certificate = Some(plan::Certificate {
                    cert: plan::Pem::of(dc.cert_file.as_deref().unwrap_or_default()),
                    key: plan::Pem::of(dc.key_file.as_deref().unwrap_or_default()),
                });
            }
            for (name, o) in t.options.iter().flatten() {
                options
                    .entry(name.clone())
                    .or_insert_with(|| plan::TlsOptions {
                        min_version: tls_version(o.min_version.as_deref())
                            .unwrap_or(plan::TlsVersion::Tls12),
                        max_version: tls_version(o.max_version.as_deref()),
                        // Names the checker did not know were refused there.
                        cipher_suites: o
                            .cipher_suites
                            .iter()
                            .flatten()
                            .filter_map(|c| plan::CipherSuite::from_go_name(c))
                            .collect(),
                        alpn_protocols: o
                            .alpn_protocols
                            .clone()
                            .unwrap_or_else(|| vec!["h2".into(), "http/1.1".into()]),
                        sni_strict: o.sni_strict.unwrap_or(false),
                        client_auth: o.client_auth.as_ref().map(|ca| plan::ClientAuth {
                            cas: ca
                                .ca_files
                                .iter()
                                .flatten()
                                .map(|f| plan::Pem::of(f))
                                .collect(),
                            auth_type: ca
                                .client_auth_type
                                .as_deref()
                                .and_then(plan::ClientAuthType::from_name)
                                .unwrap_or(plan::ClientAuthType::NoClientCert),
                        }),
                        // Names the runtime cannot offer were reported by the checker.
                        curve_preferences: o
                            .curve_preferences
                            .iter()
                            .flatten()
                            .filter_map(|c| plan::KxGroup::from_go_name(c).ok())
                            .collect(),
                        session_resumption: o.disable_session_tickets != Some(true),
                    });
            }
        }
        options
            .entry("default".into())
            .or_insert_with(|| plan::TlsOptions {
                min_version: plan::TlsVersion::Tls12,
                max_version: None,
                cipher_suites: Vec::new(),
                alpn_protocols: vec!["h2".into(), "http/1.1".into()],
                sni_strict: false,
                client_auth: None,
                curve_preferences: Vec::new(),
                session_resumption: true,
            });
        plan::Tls {
            certificates,
            default_certificate,
            options,
        }
    }

    fn api_ping(
        &self,
        routers: &BTreeMap<String, plan::Router>,
    ) -> (Option<plan::Api>, Option<plan::Ping>) {
        let st = &self.loaded.static_cfg;
        let api = st.api.as_ref().and_then(|a| {
            let insecure = a.insecure.unwrap_or(false);
            // Without `insecure` the API is served only where a router sends it; with no such
            // router nothing serves it, as in Traefik (and there may be no `traefik` entry point).
            let entrypoint = if insecure {
                "traefik".to_owned()
            } else {
                routers
                    .values()
                    .filter(|r| {
                        r.service
                            .as_ref()
                            .is_some_and(|s| s == "api@internal" || s == "dashboard@internal")
                    })
                    .find_map(|r| r.entrypoints.first().cloned())?
            };
            Some(plan::Api {
                entrypoint,
                dashboard: a.dashboard.unwrap_or(true),
                insecure,
                base_path: a.base_path.clone().unwrap_or_else(|| "/".into()),
                middlewares: Vec::new(),
            })
        });
        let ping = st.ping.as_ref().map(|p| plan::Ping {
            entrypoint: p.entry_point.clone().unwrap_or_else(|| "traefik".into()),
            manual_routing: p.manual_routing.unwrap_or(false),
            terminating_status_code: p
                .terminating_status_code
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(503),
        });
        (api, ping)
    }
}

/// Go's `MaxIdleConnsPerHost`: `0` means Go's default of 2, a negative value keeps none.
fn idle_conns(v: i64) -> u32 {
    match v {
        0 => 2,
        v if v < 0 => 0,
        v => u32::try_from(v).unwrap_or(u32::MAX),
    }
}

/// Traefik's `VersionTLS12` as a plan version; the checker refused other names.
fn tls_version(v: Option<&str>) -> Option<plan::TlsVersion> {
    plan::TlsVersion::from_go_name(v?)
}

/// An access-log field mode; the checker refused other values.
fn field_mode(m: Option<&str>) -> Option<plan::FieldMode> {
    match m? {
        "keep" => Some(plan::FieldMode::Keep),
        "drop" => Some(plan::FieldMode::Drop),
        _ => None,
    }
}

/// An access-log header mode; the checker refused other values.
fn header_mode(m: Option<&str>) -> Option<plan::HeaderMode> {
    match m? {
        "keep" => Some(plan::HeaderMode::Keep),
        "drop" => Some(plan::HeaderMode::Drop),
        "redact" => Some(plan::HeaderMode::Redact),
        _ => None,
    }
}

impl Resolver<'_> {
    /// The `bridge:` settings of one service: its own entries over the file-wide defaults (the
    /// checker made sure each is set at most once).
    fn bridge_settings(&self, service: &str) -> dy::BridgeHealthCheck {
        let bridges = || {
            self.loaded
                .dynamic
                .iter()
                .filter_map(|f| f.model.bridge.as_ref())
        };
        let defaults = bridges()
            .find_map(|b| b.health_check.clone())
            .unwrap_or_default();
        let own = bridges()
            .find_map(|b| b.services.as_ref().and_then(|s| s.get(service)).cloned())
            .unwrap_or_default();
        dy::BridgeHealthCheck {
            down_reprobe_interval: own.down_reprobe_interval.or(defaults.down_reprobe_interval),
            probe_before_traffic: own.probe_before_traffic.or(defaults.probe_before_traffic),
            hold: own.hold.or(defaults.hold),
            close_tunnels_on_down: own.close_tunnels_on_down.or(defaults.close_tunnels_on_down),
            tunnel_grace: own.tunnel_grace.or(defaults.tunnel_grace),
        }
    }
}

fn health_check(hc: &dy::ServerHealthCheck, bridge: &dy::BridgeHealthCheck) -> plan::HealthCheck {
    let interval = ms(hc.interval, 30_000);
    plan::HealthCheck {
        path: hc.path.clone().unwrap_or_else(|| "/".into()),
        scheme: hc.scheme.clone(),
        port: hc.port.and_then(|p| u16::try_from(p).ok()),
        hostname: hc.hostname.clone(),
        method: hc
            .method
            .clone()
            .unwrap_or_else(|| "GET".into())
            .to_ascii_uppercase(),
        headers: hc.headers.clone().unwrap_or_default(),
        status: hc.status.and_then(|s| u16::try_from(s).ok()),
        interval_ms: interval,
        unhealthy_interval_ms: ms(hc.unhealthy_interval, interval),
        timeout_ms: ms(hc.timeout, 5_000),
        follow_redirects: hc.follow_redirects.unwrap_or(true),
        down_reprobe_interval_ms: ms(bridge.down_reprobe_interval, DOWN_REPROBE_INTERVAL_MS),
        probe_before_traffic: bridge.probe_before_traffic.unwrap_or(true),
        hold_ms: ms(bridge.hold, 0),
        close_tunnels_after_ms: bridge
            .close_tunnels_on_down
            .unwrap_or(true)
            .then(|| ms(bridge.tunnel_grace, TUNNEL_GRACE_MS)),
        // Traefik compares the mode with `grpc` exactly; anything else probes over HTTP (other
        // spellings are errors of `check`).
        mode: if hc.mode.as_deref() == Some("grpc") {
            plan::HealthCheckMode::Grpc
        } else {
            plan::HealthCheckMode::Http
        },
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `dnsChallenge` as Traefik resolves it (static_config.go `SetEffectiveConfiguration`, then
/// provider.go `getClient`): the deprecated `delayBeforeCheck` (when positive) and
/// `disablePropagationCheck: true` create the `propagation` section and override its keys; with
/// no section lego's defaults hold (every recursive and every authoritative server must see the
/// record), with one the recursive check is off unless `requireAllRNS`. `None` without a provider
/// bridgectl runs (`check` reports that).
fn dns_challenge(a: &crate::model::static_config::Acme) -> Option<plan::DnsChallenge> {
    let provider = a.dns_provider()?;
    let d = a.dns_challenge.as_ref()?;
    let deprecated_delay = d.delay_before_check.filter(|x| x.nanos > 0);
    let deprecated_disable = d.disable_propagation_check == Some(true);
    let section = d.propagation.is_some() || deprecated_delay.is_some() || deprecated_disable;
    let p = d.propagation.clone().unwrap_or_default();
    Some(plan::DnsChallenge {
        provider,
        resolvers: d
            .resolvers
            .iter()
            .flatten()
            .filter_map(|r| crate::acme::nameserver(r).ok())
            .collect(),
        check_recursive: !section || p.require_all_rns == Some(true),
        check_authoritative: !section || p.disable_ans_checks != Some(true),
        disable_checks: deprecated_disable || p.disable_checks == Some(true),
        delay_before_checks_ms: ms(deprecated_delay.or(p.delay_before_checks), 0),
    })
}
