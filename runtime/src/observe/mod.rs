//! Per-request observation: metrics and the access log, recorded once per request when its
//! response body has been sent (or dropped), with the router, service and server that served it.
//!
//! Request handling notes what it learns (router, service, server URL, retries, basicAuth user)
//! in a task-local [`Served`], so the proxy code needs one line per fact and no extra arguments;
//! [`Observed`] wraps the response body, counts its bytes and reports when it ends. When neither
//! metrics nor an access log are configured nothing is wrapped and nothing is recorded.
//!
//! The access log is written by one thread fed through a bounded queue: a request never waits for
//! the disk; if the queue is full (the disk is slower than the traffic) records are dropped and
//! counted, never blocking the proxy. Formats: Traefik's `common` (CLF plus request count, router,
//! server URL and duration), `genericCLF` and `json` (Traefik's field names). Times are UTC.

pub(crate) mod logging;
pub(crate) mod metrics;

use std::cell::RefCell;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};
use tokio::time::Instant;

use crate::deadline::BoxError;
use crate::observe::metrics::{Metrics, Name, RequestSample, file_name};

/// What request handling learnt about where a request went.
#[derive(Debug, Default, Clone)]
pub(crate) struct Served {
    /// Router key (of the router with the service).
    pub router: Option<String>,
    /// The parent routers the request went through (`parentRefs`), outermost first.
    pub parents: Vec<String>,
    /// Service key.
    pub service: Option<String>,
    /// URL of the server that answered.
    pub server: Option<String>,
    /// Attempts beyond the first.
    pub retries: u32,
    /// The basicAuth user.
    pub user: Option<String>,
    /// The request waited for a server (bridge hold).
    pub held: bool,
    /// Who records it: its router's or entry point's `observability`, and whether an internal
    /// service answered it.
    pub quiet: Quiet,
}

/// Which records a request is kept out of (all `false`: recorded everywhere).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Quiet {
    /// `observability.accessLogs: false` (router, else entry point).
    pub unlogged: bool,
    /// `observability.metrics: false`.
    pub unmetered: bool,
    /// An internal service answered (redirect, ping, API, `/metrics`, ACME): recorded only
    /// with `addInternals`.
    pub internal: bool,
}

impl Quiet {
    /// From an entry point's `observability`, with a router's over it.
    pub(crate) fn of(
        ep: &bridge_plan::Observability,
        router: Option<&bridge_plan::RouterObservability>,
        internal: bool,
    ) -> Self {
        Self {
            unlogged: !router.and_then(|r| r.access_logs).unwrap_or(ep.access_logs),
            unmetered: !router.and_then(|r| r.metrics).unwrap_or(ep.metrics),
            internal,
        }
    }

    /// Notes `self` for the request being handled, unless it is the default; `from` is what
    /// was noted before.
    #[inline]
    pub(crate) fn note_over(self, from: Self) {
        if self != from {
            note(|s| s.quiet = self);
        }
    }
}

impl Served {
    /// The router as the access log names it: with `@file`, after its parent routers
    /// (`parent@file -> child@file`, as Traefik writes it).
    pub(crate) fn router_name(&self) -> Option<String> {
        let names: Vec<String> = self
            .parents
            .iter()
            .chain(&self.router)
            .map(|r| file_name(r).0.to_string())
            .collect();
        (!names.is_empty()).then(|| names.join(" -> "))
    }
}

tokio::task_local! {
    static SERVED: RefCell<Served>;
}

/// Notes a fact about the current request (a no-op when it is not observed).
pub(crate) fn note(f: impl FnOnce(&mut Served)) {
    let _ = SERVED.try_with(|s| f(&mut s.borrow_mut()));
}

/// Runs `fut` with a fresh [`Served`] and returns it with the output.
pub(crate) fn scoped<F: Future>(fut: F) -> impl Future<Output = (F::Output, Served)> {
    // Not an `async fn`: that would hold `fut` once as its argument and again inside the scope.
    SERVED.scope(RefCell::new(Served::default()), async move {
        let out = fut.await;
        let served = SERVED.with(|s| s.take());
        (out, served)
    })
}

/// What the access log and metrics need of a request, taken before it is handled.
#[derive(Debug)]
pub(crate) struct RequestFacts {
    /// Entry point.
    pub entrypoint: Name,
    /// Client address.
    pub peer: SocketAddr,
    /// Method.
    pub method: String,
    /// Path and query as received.
    pub path: String,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub protocol: &'static str,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// Host (header or absolute URL), if any.
    pub host: Option<String>,
    /// `Referer`.
    pub referer: Option<String>,
    /// `User-Agent`.
    pub user_agent: Option<String>,
    /// A WebSocket (Upgrade) request.
    pub websocket: bool,
    /// Request headers (name, value), taken only when the access log writes some
    /// ([`Observer::wants_headers`]).
    pub headers: Vec<(String, String)>,
    /// The `headerLabels` values of the request counters (empty without any).
    pub header_values: metrics::HeaderValues,
    /// When the request arrived.
    pub start: Instant,
    /// Wall-clock arrival, seconds and nanoseconds since the epoch.
    pub start_wall: std::time::Duration,
}

impl RequestFacts {
    /// The facts of `req`, taken when it arrived on entry point `entrypoint`. `forwarded`: the
    /// proxy's forwarding fields, when the access log writes headers (they are not in the
    /// request's map yet).
    pub(crate) fn of<B>(
        req: &http::Request<B>,
        entrypoint: Name,
        peer: SocketAddr,
        tls: bool,
        websocket: bool,
        forwarded: Option<Vec<(&'static str, String)>>,
    ) -> Self {
        let header = |h: http::header::HeaderName| {
            req.headers()
                .get(h)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let headers = match forwarded {
            Some(forwarded) => {
                // Go keeps `Host` out of the header map, so Traefik never logs it as a header.
                let mut all: Vec<(String, String)> = req
                    .headers()
                    .iter()
                    .filter(|(k, _)| *k != http::header::HOST)
                    .filter_map(|(k, v)| {
                        v.to_str()
                            .ok()
                            .map(|v| (k.as_str().to_owned(), v.to_owned()))
                    })
                    .collect();
                all.extend(forwarded.into_iter().map(|(k, v)| (k.to_owned(), v)));
                all
            }
            None => Vec::new(),
        };
        Self {
            entrypoint,
            peer,
            method: req.method().as_str().to_owned(),
            path: req
                .uri()
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned()),
            protocol: match req.version() {
                http::Version::HTTP_2 => "HTTP/2.0",
                http::Version::HTTP_3 => "HTTP/3.0",
                http::Version::HTTP_10 => "HTTP/1.0",
                _ => "HTTP/1.1",
            },
            scheme: if tls { "https" } else { "http" },
            host: req
                .uri()
                .authority()
                .map(|a| a.as_str().to_owned())
                .or_else(|| header(http::header::HOST)),
            referer: header(http::header::REFERER),
            user_agent: header(http::header::USER_AGENT),
            websocket,
            headers,
            header_values: Vec::new(),
            start: Instant::now(),
            start_wall: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default(),
        }
    }
}

/// Metrics and access log of a runtime (shared across reloads).
#[derive(Debug)]
pub(crate) struct Observer {
    /// Metrics, when configured.
    pub metrics: Option<Arc<Metrics>>,
    access: Option<AccessLog>,
    count: AtomicU64,
    /// `metrics.addInternals`.
    meter_internals: bool,
    /// `accessLog.addInternals`.
    log_internals: bool,
}

impl Observer {
    /// An observer for the plan's `metrics` and `access_log` (`None` when neither is set).
    pub(crate) fn new(
        metrics: Option<Arc<Metrics>>,
        meter_internals: bool,
        access: Option<&bridge_plan::AccessLog>,
    ) -> Result<Option<Arc<Self>>, std::io::Error> {
        let log_internals = access;
        let access = access.map(AccessLog::start).transpose()?;
        if metrics.is_none() && access.is_none() {
            return Ok(None);
        }
        Ok(Some(Arc::new(Self {
            metrics,
            access,
            count: AtomicU64::new(0),
            meter_internals,
            log_internals: log_internals.is_some_and(|a| a.add_internals),
        })))
    }

    /// Whether access-log records carry request headers (`fields.headers`), so they must be
    /// taken from each request.
    pub(crate) fn wants_headers(&self) -> bool {
        self.access.as_ref().is_some_and(|a| a.wants_headers)
    }

    fn finish(&self, facts: &RequestFacts, served: &Served, status: u16, bytes: u64) {
        let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let elapsed = facts.start.elapsed();
        let q = served.quiet;
        if let Some(m) = &self.metrics
            && !q.unmetered
            && (!q.internal || self.meter_internals)
        {
            let router = served.router.as_deref().map(file_name);
            let service = served.service.as_deref().map(file_name);
            let parents: Vec<Name> = served.parents.iter().map(|p| file_name(p)).collect();
            m.request(&RequestSample {
                parents: &parents,
                entrypoint: &facts.entrypoint,
                code: status,
                method: &facts.method,
                protocol: if facts.websocket { "websocket" } else { "http" },
                router: router.as_ref(),
                service: service.as_ref(),
                header_values: &facts.header_values,
                retries: served.retries,
                seconds: elapsed.as_secs_f64(),
            });
            if served.held
                && let Some(s) = &served.service
            {
                m.held(s);
            }
        }
        if let Some(a) = &self.access
            && !q.unlogged
            && (!q.internal || self.log_internals)
            && a.keep(status, served.retries, elapsed)
        {
            let line = a.format(facts, served, status, bytes, count, elapsed);
            a.send(line);
        }
    }
}

/// A response body that reports the request to the [`Observer`] when it ends or is dropped.
#[derive(Debug)]
pub(crate) struct Observed<B> {
    inner: B,
    bytes: u64,
    report: Option<(Arc<Observer>, RequestFacts, Served, u16)>,
}

impl<B> Observed<B> {
    /// Wraps the body of a response with `status`.
    pub(crate) fn new(
        inner: B,
        observer: Arc<Observer>,
        facts: RequestFacts,
        served: Served,
        status: u16,
    ) -> Self {
        Self {
            inner,
            bytes: 0,
            report: Some((observer, facts, served, status)),
        }
    }

    fn report(&mut self) {
        if let Some((o, facts, served, status)) = self.report.take() {
            o.finish(&facts, &served, status, self.bytes);
        }
    }
}

impl<B> Drop for Observed<B> {
    fn drop(&mut self) {
        self.report();
    }
}

impl<B> Body for Observed<B>
where
    B: Body<Data = Bytes, Error = BoxError> + Unpin,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(d) = frame.data_ref() {
                    this.bytes += d.len() as u64;
                }
                if this.inner.is_end_stream() {
                    this.report();
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => this.report(),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

// ---- access log ---------------------------------------------------------------------------------

/// Records waiting for the writer thread; beyond this, records are dropped (and counted).
const QUEUE: usize = 8192;

#[derive(Debug)]
struct AccessLog {
    format: Format,
    status_codes: Vec<(u16, u16)>,
    retry_attempts: bool,
    min_duration: std::time::Duration,
    tx: std::sync::mpsc::SyncSender<String>,
    dropped: Arc<AtomicU64>,
    fields: Option<Fields>,
    /// JSON records carry some request header (decided once, asked per request).
    wants_headers: bool,
}

/// `fields` of the plan, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fields {
    keep_by_default: bool,
    /// Field name → kept.
    names: std::collections::HashMap<String, bool>,
    headers_default: HeaderMode,
    /// Lower-case header name → mode.
    headers: std::collections::HashMap<String, HeaderMode>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HeaderMode {
    Keep,
    Drop,
    Redact,
}

impl HeaderMode {
    fn of(mode: bridge_plan::HeaderMode) -> Self {
        match mode {
            bridge_plan::HeaderMode::Keep => Self::Keep,
            bridge_plan::HeaderMode::Redact => Self::Redact,
            bridge_plan::HeaderMode::Drop => Self::Drop,
        }
    }
}

impl Fields {
    fn new(f: &bridge_plan::AccessLogFields) -> Self {
        Self {
            keep_by_default: f.default_mode == bridge_plan::FieldMode::Keep,
            names: f
                .names
                .iter()
                .map(|(k, v)| (k.clone(), *v == bridge_plan::FieldMode::Keep))
                .collect(),
            headers_default: HeaderMode::of(f.headers_default_mode),
            headers: f
                .header_names
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), HeaderMode::of(*v)))
                .collect(),
        }
    }

    /// Drops the fields not kept and adds `request_<Header>` entries, as Traefik does.
    fn apply(
        &self,
        record: &mut serde_json::Map<String, serde_json::Value>,
        headers: &[(String, String)],
    ) {
        record.retain(|k, _| {
            // Traefik's `level`, `msg` and `time` belong to the log line, not to `fields`.
            matches!(k.as_str(), "level" | "msg" | "time")
                || self.names.get(k).copied().unwrap_or(self.keep_by_default)
        });
        for (name, value) in headers {
            // Names come from hyper, already lower-case.
            let mode = self
                .headers
                .get(name.as_str())
                .copied()
                .unwrap_or(self.headers_default);
            let value = match mode {
                HeaderMode::Drop => continue,
                HeaderMode::Redact => "REDACTED".to_owned(),
                HeaderMode::Keep => value.clone(),
            };
            record.insert(
                format!("request_{}", bridge_plan::rule::canonical_header_key(name)),
                value.into(),
            );
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Common,
    GenericClf,
    Json,
}

impl AccessLog {
    fn start(cfg: &bridge_plan::AccessLog) -> Result<Self, std::io::Error> {
        let out: Box<dyn Write + Send> = match &cfg.file_path {
            Some(path) => Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        std::io::Error::new(e.kind(), format!("access log {path}: {e}"))
                    })?,
            ),
            None => Box::new(std::io::stdout()),
        };
        let (tx, rx) = std::sync::mpsc::sync_channel::<String>(QUEUE);
        let dropped = Arc::new(AtomicU64::new(0));
        std::thread::Builder::new()
            .name("access-log".into())
            .spawn(move || write_loop(rx, out))?;
        let format = match cfg.format {
            bridge_plan::AccessLogFormat::Json => Format::Json,
            bridge_plan::AccessLogFormat::GenericClf => Format::GenericClf,
            bridge_plan::AccessLogFormat::Common => Format::Common,
        };
        let fields = cfg.fields.as_ref().map(Fields::new);
        Ok(Self {
            status_codes: cfg.status_codes.iter().map(|r| (r.from, r.to)).collect(),
            retry_attempts: cfg.retry_attempts,
            min_duration: std::time::Duration::from_millis(cfg.min_duration_ms),
            tx,
            dropped,
            wants_headers: format == Format::Json
                && fields.as_ref().is_some_and(|f| {
                    f.headers_default != HeaderMode::Drop
                        || f.headers.values().any(|m| *m != HeaderMode::Drop)
                }),
            fields,
            format,
        })
    }

    /// Traefik's filters: no filter keeps everything, else any matching filter keeps the record.
    fn keep(&self, status: u16, retries: u32, took: std::time::Duration) -> bool {
        let any_filter =
            !self.status_codes.is_empty() || self.retry_attempts || !self.min_duration.is_zero();
        !any_filter
            || self
                .status_codes
                .iter()
                .any(|(a, b)| (*a..=*b).contains(&status))
            || (self.retry_attempts && retries > 0)
            || (!self.min_duration.is_zero() && took > self.min_duration)
    }

    fn send(&self, line: String) {
        if self.tx.try_send(line).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn format(
        &self,
        f: &RequestFacts,
        s: &Served,
        status: u16,
        bytes: u64,
        count: u64,
        took: std::time::Duration,
    ) -> String {
        let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        match self.format {
            Format::Common | Format::GenericClf => {
                let mut line = format!(
                    "{} - {} [{}] \"{} {} {}\" {} {} \"{}\" \"{}\"",
                    f.peer.ip(),
                    dash(&s.user),
                    clf_time(f.start_wall),
                    f.method,
                    f.path,
                    f.protocol,
                    status,
                    bytes,
                    clf_escape(&dash(&f.referer)),
                    clf_escape(&dash(&f.user_agent)),
                );
                if self.format == Format::Common {
                    line.push_str(&format!(
                        " {count} \"{}\" \"{}\" {}ms",
                        s.router_name().unwrap_or_else(|| "-".into()),
                        dash(&s.server),
                        took.as_millis()
                    ));
                }
                line
            }
            Format::Json => {
                let server_addr = s
                    .server
                    .as_deref()
                    .and_then(|u| u.split_once("://"))
                    .map(|(_, rest)| rest.split('/').next().unwrap_or(rest).to_owned());
                let (host, port) = f
                    .host
                    .as_deref()
                    .map(|h| match h.rsplit_once(':') {
                        Some((a, p)) if p.bytes().all(|b| b.is_ascii_digit()) => {
                            (a.to_owned(), p.to_owned())
                        }
                        _ => (h.to_owned(), "-".to_owned()),
                    })
                    .unwrap_or_else(|| ("-".into(), "-".into()));
                let start = rfc3339(f.start_wall);
                let mut record = serde_json::json!({
                    "ClientAddr": f.peer.to_string(),
                    "ClientHost": f.peer.ip().to_string(),
                    "ClientPort": f.peer.port().to_string(),
                    "ClientUsername": dash(&s.user),
                    "DownstreamContentSize": bytes,
                    "DownstreamStatus": status,
                    "Duration": u64::try_from(took.as_nanos()).unwrap_or(u64::MAX),
                    "RequestAddr": f.host.clone().unwrap_or_default(),
                    "RequestHost": host,
                    "RequestPort": port,
                    "RequestMethod": f.method,
                    "RequestPath": f.path,
                    "RequestProtocol": f.protocol,
                    "RequestScheme": f.scheme,
                    "RequestCount": count,
                    "RetryAttempts": s.retries,
                    "RouterName": s.router_name(),
                    "ServiceName": s.service.as_deref().map(|r| file_name(r).0.to_string()),
                    "ServiceURL": s.server,
                    "ServiceAddr": server_addr,
                    "StartUTC": start,
                    "entryPointName": &*f.entrypoint.0,
                    "level": "info",
                    "msg": "",
                    "time": start,
                });
                if let (Some(fields), Some(map)) = (&self.fields, record.as_object_mut()) {
                    fields.apply(map, &f.headers);
                }
                record.to_string()
            }
        }
    }
}

fn write_loop(rx: std::sync::mpsc::Receiver<String>, out: Box<dyn Write + Send>) {
    let mut out = std::io::BufWriter::new(out);
    while let Ok(line) = rx.recv() {
        let _ = writeln!(out, "{line}");
        // Batch whatever else is queued, then flush once: records reach the file promptly
        // without one write per request under load.
        while let Ok(more) = rx.try_recv() {
            let _ = writeln!(out, "{more}");
        }
        let _ = out.flush();
    }
}

fn clf_escape(s: &str) -> String {
    s.replace('"', "\\\"")
}

/// Days since the epoch → (year, month, day) (Howard Hinnant's civil-from-days).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn split_time(t: std::time::Duration) -> (i64, u32, u32, u64, u64, u64) {
    let secs = t.as_secs();
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (y, m, d) = civil(days);
    let rem = secs % 86_400;
    (y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
}

/// `01/Dec/2026:07:30:19 +0000`, as CLF writes it.
fn clf_time(t: std::time::Duration) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let (y, m, d, hh, mm, ss) = split_time(t);
    let month = MONTHS
        .get(usize::try_from(m).unwrap_or(1).saturating_sub(1))
        .copied()
        .unwrap_or("Jan");
    format!("{d:02}/{month}/{y:04}:{hh:02}:{mm:02}:{ss:02} +0000")
}

/// `2026-12-01T07:30:19.123456789Z`.
fn rfc3339(t: std::time::Duration) -> String {
    let (y, m, d, hh, mm, ss) = split_time(t);
    format!(
        "{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}.{:09}Z",
        t.subsec_nanos()
    )
}

/// A time to the second, `2026-11-30T05:00:00Z`.
pub(crate) fn rfc3339_secs(since_epoch: std::time::Duration) -> String {
    let (y, m, d, hh, mm, ss) = split_time(since_epoch);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

/// The current time to the second, `2026-11-30T05:00:00Z` (`/api/version`'s start time).
pub(crate) fn rfc3339_now() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let (y, m, d, hh, mm, ss) = split_time(now);
    format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use super::*;

    fn log(format: &str, codes: Vec<(u16, u16)>, retry: bool, min_ms: u64) -> AccessLog {
        let (tx, _rx) = std::sync::mpsc::sync_channel(1);
        AccessLog {
            format: match format {
                "json" => Format::Json,
                "genericCLF" => Format::GenericClf,
                _ => Format::Common,
            },
            status_codes: codes,
            retry_attempts: retry,
            min_duration: std::time::Duration::from_millis(min_ms),
            tx,
            dropped: Arc::default(),
            fields: None,
            wants_headers: false,
        }
    }

    fn facts() -> RequestFacts {
        RequestFacts {
            entrypoint: Name::from("web"),
            peer: "127.0.0.5:41000".parse().unwrap(),
            method: "GET".into(),
            path: "/ui?x=1".into(),
            protocol: "HTTP/1.1",
            scheme: "http",
            host: Some("scadabridge.local:9000".into()),
            referer: None,
            user_agent: Some("curl/8 \"test\"".into()),
            websocket: false,
            headers: vec![
                ("user-agent".into(), "curl/8".into()),
                ("authorization".into(), "Basic YWRtaW46c2VjcmV0".into()),
                ("x-request-id".into(), "r-1".into()),
            ],
            header_values: Vec::new(),
            start: Instant::now(),
            start_wall: std::time::Duration::from_secs(1_796_110_219),
        }
    }

    fn served() -> Served {
        Served {
            router: Some("central".into()),
            parents: Vec::new(),
            service: Some("central".into()),
            server: Some("http://scadabridge-central-a:5000".into()),
            retries: 1,
            user: Some("admin".into()),
            held: false,
            quiet: Quiet::default(),
        }
    }

    #[test]
    fn a_router_s_switches_override_its_entry_point_s_one_by_one() {
        let ep = |access_logs, metrics| bridge_plan::Observability {
            access_logs,
            metrics,
        };
        let r = |access_logs, metrics| bridge_plan::RouterObservability {
            access_logs,
            metrics,
        };
        let q = |unlogged, unmetered| Quiet {
            unlogged,
            unmetered,
            internal: false,
        };
        for (ep, router, want) in [
            (ep(true, true), None, q(false, false)),
            (ep(false, true), None, q(true, false)),
            (ep(false, false), Some(r(Some(true), None)), q(false, true)),
            (ep(true, true), Some(r(None, Some(false))), q(false, true)),
            (
                ep(true, false),
                Some(r(Some(false), Some(true))),
                q(true, false),
            ),
        ] {
            assert_eq!(
                Quiet::of(&ep, router.as_ref(), false),
                want,
                "{ep:?} {router:?}"
            );
        }
        assert!(Quiet::of(&ep(true, true), None, true).internal);
    }

    #[test]
    fn child_routers_are_named_after_their_parents() {
        // As Traefik 3.7.15 writes RouterName.
        let mut s = served();
        s.parents = vec!["api".into(), "admin".into()];
        s.router = Some("audit".into());
        assert_eq!(
            s.router_name().as_deref(),
            Some("api@file -> admin@file -> audit@file")
        );
        s.router = None;
        assert_eq!(s.router_name().as_deref(), Some("api@file -> admin@file"));
        s.parents.clear();
        assert_eq!(s.router_name(), None);
    }

    #[test]
    fn common_format_is_traefiks_clf_line() {
        let line = log("common", vec![], false, 0).format(
            &facts(),
            &served(),
            200,
            42,
            7,
            std::time::Duration::from_millis(12),
        );
        assert_eq!(
            line,
            "127.0.0.5 - admin [01/Dec/2026:07:30:19 +0000] \"GET /ui?x=1 HTTP/1.1\" 200 42 \"-\" \"curl/8 \\\"test\\\"\" 7 \"central@file\" \"http://scadabridge-central-a:5000\" 12ms"
        );
        let generic = log("genericCLF", vec![], false, 0).format(
            &facts(),
            &served(),
            200,
            42,
            7,
            std::time::Duration::from_millis(12),
        );
        assert!(generic.ends_with("\"curl/8 \\\"test\\\"\""), "{generic}");
    }

    #[test]
    fn json_format_uses_traefiks_field_names() {
        let line = log("json", vec![], false, 0).format(
            &facts(),
            &served(),
            503,
            20,
            3,
            std::time::Duration::from_millis(5),
        );
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["DownstreamStatus"], 503);
        assert_eq!(v["RequestHost"], "scadabridge.local");
        assert_eq!(v["RequestPort"], "9000");
        assert_eq!(v["ClientHost"], "127.0.0.5");
        assert_eq!(v["RouterName"], "central@file");
        assert_eq!(v["ServiceAddr"], "scadabridge-central-a:5000");
        assert_eq!(v["Duration"], 5_000_000);
        assert_eq!(v["StartUTC"], "2026-12-01T07:30:19.000000000Z");
        assert_eq!(v["entryPointName"], "web");
    }

    #[test]
    fn fields_drop_fields_and_keep_drop_or_redact_headers() {
        let mut l = log("json", vec![], false, 0);
        l.fields = Some(Fields::new(&bridge_plan::AccessLogFields {
            default_mode: bridge_plan::FieldMode::Keep,
            names: [("ClientUsername".to_owned(), bridge_plan::FieldMode::Drop)].into(),
            headers_default_mode: bridge_plan::HeaderMode::Keep,
            header_names: [
                ("Authorization".to_owned(), bridge_plan::HeaderMode::Redact),
                ("X-Request-Id".to_owned(), bridge_plan::HeaderMode::Drop),
            ]
            .into(),
        }));
        let line = l.format(&facts(), &served(), 200, 2, 1, std::time::Duration::ZERO);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(v.get("ClientUsername").is_none(), "{line}");
        assert_eq!(v["RequestPath"], "/ui?x=1");
        assert_eq!(v["request_User-Agent"], "curl/8");
        assert_eq!(v["request_Authorization"], "REDACTED");
        assert!(v.get("request_X-Request-Id").is_none(), "{line}");

        // defaultMode drop keeps only what is named (and the line's own level/msg/time).
        l.fields = Some(Fields::new(&bridge_plan::AccessLogFields {
            default_mode: bridge_plan::FieldMode::Drop,
            names: [("DownstreamStatus".to_owned(), bridge_plan::FieldMode::Keep)].into(),
            headers_default_mode: bridge_plan::HeaderMode::Drop,
            header_names: Default::default(),
        }));
        let line = l.format(&facts(), &served(), 200, 2, 1, std::time::Duration::ZERO);
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(keys, ["DownstreamStatus", "level", "msg", "time"]);
    }

    #[test]
    fn header_names_are_logged_in_gos_canonical_form() {
        let canonical = bridge_plan::rule::canonical_header_key;
        assert_eq!(canonical("x-forwarded-for"), "X-Forwarded-For");
        assert_eq!(canonical("USER-AGENT"), "User-Agent");
        assert_eq!(canonical("te"), "Te");
    }

    #[test]
    fn filters_keep_a_record_when_any_matches() {
        let ms = std::time::Duration::from_millis;
        assert!(log("common", vec![], false, 0).keep(200, 0, ms(1)));
        let f = log("common", vec![(500, 599)], true, 100);
        assert!(f.keep(503, 0, ms(1)));
        assert!(f.keep(200, 1, ms(1)));
        assert!(f.keep(200, 0, ms(101)));
        assert!(!f.keep(200, 0, ms(100)));
        assert!(!f.keep(404, 0, ms(1)));
    }
}
