//! One configurable HTTP backend for the end-to-end tests, on 127.0.0.1 with a free port.
//!
//! ```text
//! let a = backend("a").start();                       // `a /ui xff=127.0.0.1`, /health/active 200
//! let b = backend("b").active(false).start();         // /health/active 503 until b.active is set
//! let copy = backend("copy").answer(answers::method_target_body).delay(Duration::from_secs(2)).start();
//! let tls = backend("tls").tls(&cert, &key).answer(answers::version_and_host).start();
//! ```
//!
//! Every backend answers `/health/active` itself: 200 `active` while [`Backend::active`] is set,
//! else 503 `standby`. Any other request goes to the answer function (by default
//! [`answers::target_and_xff`]), after the configured delay and, for a path ending in `/slow`, 1.5 s
//! more (a request still in flight). Each is recorded for [`Backend::seen`].
//!
//! By default the backend is a keep-alive HTTP/1.1 server of its own that reads bodies
//! (`Content-Length` or chunked; see [`BackendBuilder::answer_before_body`]), answers with `Content-Length` (also to HEAD, so the proxy's
//! handling of such answers is exercised) and tunnels a WebSocket upgrade as a byte echo. Setting
//! [`Backend::dead`] makes it a crashed node: the listening socket is closed (new connections are
//! refused) and every connection is dropped at its next request without an answer.
//! [`BackendBuilder::h2c`] and [`BackendBuilder::tls`] serve with hyper instead: HTTP/1.1 and
//! HTTP/2 (h2c with prior knowledge, or TLS with ALPN h2 and http/1.1).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A request as the backend received it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The name of the backend that received it.
    pub backend: &'static str,
    /// `GET`, `POST`, ...
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// `HTTP/1.1`, `HTTP/2.0`.
    pub version: String,
    /// `Host` (HTTP/1.1) or `:authority` (HTTP/2).
    pub host: String,
    /// The field lines as sent, each ending in CRLF (HTTP/1.1 server only; empty with hyper).
    pub head: String,
    /// The body, decoded from its framing.
    pub body: Vec<u8>,
}

impl Request {
    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// The first value of a field (case-insensitive name), from [`Request::head`].
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head.split("\r\n").find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    /// The body as text.
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// What the backend answers.
#[derive(Debug, Clone)]
pub struct Reply {
    /// The status code and reason phrase: `200 OK`.
    pub status: String,
    /// Extra field lines, each ending in CRLF (`Content-Length` is added).
    pub fields: String,
    /// The body.
    pub body: String,
}

impl Reply {
    /// `200 OK` with this body.
    pub fn ok(body: impl Into<String>) -> Reply {
        Reply {
            status: "200 OK".to_owned(),
            fields: String::new(),
            body: body.into(),
        }
    }
}

/// Answer functions for [`BackendBuilder::answer`].
pub mod answers {
    use super::{Reply, Request};

    /// `<backend> <target> xff=<X-Forwarded-For>` (the default).
    pub fn target_and_xff(r: &Request) -> Reply {
        Reply::ok(format!(
            "{} {} xff={}",
            r.backend,
            r.target,
            r.header("x-forwarded-for").unwrap_or_default()
        ))
    }

    /// `<backend> <version> host=<host> <path>`: which protocol and authority reached the server.
    pub fn version_and_host(r: &Request) -> Reply {
        Reply::ok(format!(
            "{} {} host={} {}",
            r.backend,
            r.version,
            r.host,
            r.path()
        ))
    }

    /// `<backend> <METHOD> <target> <body>`.
    pub fn method_target_body(r: &Request) -> Reply {
        Reply::ok(format!(
            "{} {} {} {}",
            r.backend,
            r.method,
            r.target,
            r.body_text()
        ))
    }

    /// The request head as received (request line and every field line as sent), then `--`, then
    /// the body; the answer carries hop-by-hop fields of its own (`Connection: keep-alive,
    /// X-Upstream-Only` and `X-Upstream-Only: 1`), which must not reach the client.
    pub fn head_echo(r: &Request) -> Reply {
        Reply {
            status: "200 OK".to_owned(),
            fields: "Connection: keep-alive, X-Upstream-Only\r\nX-Upstream-Only: 1\r\n".to_owned(),
            body: format!(
                "{} {} {}\r\n{}--\r\n{}",
                r.method,
                r.target,
                r.version,
                r.head,
                r.body_text()
            ),
        }
    }
}

type Answer = Arc<dyn Fn(&Request) -> Reply + Send + Sync>;

/// How a backend serves.
#[derive(Debug, Clone)]
enum Transport {
    /// The own keep-alive HTTP/1.1 loop.
    Http1,
    /// hyper, HTTP/1.1 and HTTP/2 with prior knowledge.
    H2c,
    /// hyper over TLS with this certificate chain and key (PEM files); ALPN h2 and http/1.1,
    /// or only http/1.1 (`true`).
    Tls(PathBuf, PathBuf, bool),
    /// [`Transport::Tls`] requiring a client certificate from the CA in the third file.
    MutualTls(PathBuf, PathBuf, PathBuf),
}

/// Configures a [`Backend`]; see the module documentation.
pub struct BackendBuilder {
    name: &'static str,
    active: bool,
    before_body: bool,
    delay: Duration,
    answer: Answer,
    transport: Transport,
    bind: SocketAddr,
}

impl std::fmt::Debug for BackendBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackendBuilder")
            .field("name", &self.name)
            .field("active", &self.active)
            .field("before_body", &self.before_body)
            .field("delay", &self.delay)
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

/// A backend named `name`, active, answering [`answers::target_and_xff`] over HTTP/1.1.
pub fn backend(name: &'static str) -> BackendBuilder {
    BackendBuilder {
        name,
        active: true,
        before_body: false,
        delay: Duration::ZERO,
        answer: Arc::new(answers::target_and_xff),
        transport: Transport::Http1,
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
    }
}

impl BackendBuilder {
    /// Whether `/health/active` answers 200 at the start (else 503).
    pub fn active(mut self, active: bool) -> Self {
        self.active = active;
        self
    }

    /// Answers as soon as the head is read, without reading the body (as a server that does not
    /// need it may); the body's bytes are then read as the start of the next request. HTTP/1.1
    /// server only.
    pub fn answer_before_body(mut self) -> Self {
        self.before_body = true;
        self
    }

    /// Waits this long before answering each request (health probes excepted).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Answers every request but `/health/active` with `answer`.
    pub fn answer(mut self, answer: impl Fn(&Request) -> Reply + Send + Sync + 'static) -> Self {
        self.answer = Arc::new(answer);
        self
    }

    /// Serves HTTP/1.1 and HTTP/2 with prior knowledge (h2c), with hyper.
    pub fn h2c(mut self) -> Self {
        self.transport = Transport::H2c;
        self
    }

    /// Serves HTTPS with this certificate chain and key (PEM files), ALPN h2 and http/1.1, with
    /// hyper.
    pub fn tls(mut self, cert: &Path, key: &Path) -> Self {
        self.transport = Transport::Tls(cert.to_path_buf(), key.to_path_buf(), false);
        self
    }

    /// [`BackendBuilder::tls`] choosing only `http/1.1` by ALPN, as a server without HTTP/2.
    pub fn tls_http1_only(mut self, cert: &Path, key: &Path) -> Self {
        self.transport = Transport::Tls(cert.to_path_buf(), key.to_path_buf(), true);
        self
    }

    /// [`BackendBuilder::tls`], and a handshake without a client certificate issued by the CA in
    /// `client_ca` (PEM) fails.
    pub fn mtls(mut self, cert: &Path, key: &Path, client_ca: &Path) -> Self {
        self.transport = Transport::MutualTls(
            cert.to_path_buf(),
            key.to_path_buf(),
            client_ca.to_path_buf(),
        );
        self
    }

    /// Binds 127.0.0.1:0 and starts serving on background threads.
    /// Listens on `addr` instead of 127.0.0.1 with a free port (a namespace's address).
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.bind = addr;
        self
    }

    pub fn start(self) -> Backend {
        let listener = TcpListener::bind(self.bind).unwrap();
        let addr = listener.local_addr().unwrap();
        listener.set_nonblocking(true).unwrap();
        let backend = Backend {
            addr,
            active: Arc::new(AtomicBool::new(self.active)),
            dead: Arc::new(AtomicBool::new(false)),
            seen: Arc::new(Mutex::new(Vec::new())),
        };
        let shared = Shared {
            name: self.name,
            before_body: self.before_body,
            delay: self.delay,
            answer: self.answer,
            active: backend.active.clone(),
            dead: backend.dead.clone(),
            seen: backend.seen.clone(),
        };
        match self.transport {
            Transport::Http1 => {
                std::thread::spawn(move || accept_http1(&listener, &Arc::new(shared)));
            }
            Transport::H2c => serve_hyper(listener, None, shared),
            Transport::Tls(cert, key, h1_only) => {
                let alpn: &[&[u8]] = if h1_only {
                    &[b"http/1.1"]
                } else {
                    &[b"h2", b"http/1.1"]
                };
                let config = crate::tls::server_config(&cert, &key, alpn);
                serve_hyper(listener, Some(config), shared);
            }
            Transport::MutualTls(cert, key, ca) => {
                let config =
                    crate::tls::mtls_server_config(&cert, &key, &ca, &[b"h2", b"http/1.1"]);
                serve_hyper(listener, Some(config), shared);
            }
        }
        backend
    }
}

/// A running backend; it serves until the test process ends.
#[derive(Debug)]
pub struct Backend {
    /// Where it listens.
    pub addr: SocketAddr,
    /// Whether `/health/active` answers 200.
    pub active: Arc<AtomicBool>,
    /// When set, the node has crashed: see the module documentation.
    pub dead: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Backend {
    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Every request it received except health probes (`/health/active`), in arrival order, as
    /// `<METHOD> <target> host=<host> <body>`.
    pub fn seen(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| {
                format!(
                    "{} {} host={} {}",
                    r.method,
                    r.target,
                    r.host,
                    r.body_text()
                )
            })
            .collect()
    }
}

/// What the serving threads of one backend share.
struct Shared {
    name: &'static str,
    before_body: bool,
    delay: Duration,
    answer: Answer,
    active: Arc<AtomicBool>,
    dead: Arc<AtomicBool>,
    seen: Arc<Mutex<Vec<Request>>>,
}

impl Shared {
    /// The answer to one request (blocking: run it where a blocking wait is fine).
    fn respond(&self, req: &Request) -> Reply {
        if req.path() == "/health/active" {
            return if self.active.load(Ordering::SeqCst) {
                Reply::ok("active")
            } else {
                Reply {
                    status: "503 Service Unavailable".to_owned(),
                    fields: String::new(),
                    body: "standby".to_owned(),
                }
            };
        }
        self.seen.lock().unwrap().push(req.clone());
        std::thread::sleep(self.delay);
        if req.path().ends_with("/slow") {
            std::thread::sleep(Duration::from_millis(1500));
        }
        (self.answer)(req)
    }
}

// ---- the own HTTP/1.1 server ----------------------------------------------------------------------

fn accept_http1(listener: &TcpListener, shared: &Arc<Shared>) {
    // Polls, so a crash (`dead`) closes the listening socket: new connections are then refused.
    while !shared.dead.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).unwrap();
                let shared = shared.clone();
                std::thread::spawn(move || serve_http1(stream, &shared));
            }
            Err(_) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
}

fn serve_http1(stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || shared.dead.load(Ordering::SeqCst) {
            return; // closed, or crashed: drop the connection without answering
        }
        let mut parts = line.split_whitespace();
        let (method, target, version) = (
            parts.next().unwrap_or("GET").to_owned(),
            parts.next().unwrap_or("/").to_owned(),
            parts.next().unwrap_or("HTTP/1.1").to_owned(),
        );
        let mut head = String::new();
        loop {
            let mut field = String::new();
            if reader.read_line(&mut field).unwrap_or(0) == 0 {
                return;
            }
            if field == "\r\n" {
                break;
            }
            head.push_str(&field);
        }
        let mut req = Request {
            backend: shared.name,
            method,
            target,
            version,
            host: String::new(),
            head,
            body: Vec::new(),
        };
        req.host = req.header("host").unwrap_or_default().to_owned();
        if req
            .header("upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"))
        {
            // Switch protocols, then echo every byte back (a raw tunnel, like a WebSocket echo).
            // Recorded like any request; a crash (`dead`) drops the tunnel within 100 ms, as the
            // kernel would close the sockets of a process that died.
            shared.seen.lock().unwrap().push(req.clone());
            let _ = stream.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            );
            let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
            let mut buf = [0u8; 4096];
            loop {
                if shared.dead.load(Ordering::SeqCst) {
                    return;
                }
                match reader.read(&mut buf) {
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) =>
                    {
                        continue;
                    }
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        if stream.write_all(&buf[..n]).is_err() {
                            return;
                        }
                    }
                }
            }
        }
        if !shared.before_body {
            let Some(body) = read_body(&mut reader, &req) else {
                return;
            };
            req.body = body;
        }
        let reply = shared.respond(&req);
        let resp = format!(
            "HTTP/1.1 {}\r\n{}Content-Length: {}\r\n\r\n{}",
            reply.status,
            reply.fields,
            reply.body.len(),
            reply.body
        );
        if stream.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

/// The body by `Transfer-Encoding: chunked` or `Content-Length`; `None` when the connection ends
/// first.
fn read_body(reader: &mut impl BufRead, req: &Request) -> Option<Vec<u8>> {
    if req
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"))
    {
        let mut body = Vec::new();
        loop {
            let mut size = String::new();
            if reader.read_line(&mut size).ok()? == 0 {
                return None;
            }
            let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
            if size == 0 {
                // trailer section up to the empty line
                loop {
                    let mut l = String::new();
                    if reader.read_line(&mut l).ok()? == 0 || l == "\r\n" {
                        return Some(body);
                    }
                }
            }
            let mut chunk = vec![0u8; size + 2];
            reader.read_exact(&mut chunk).ok()?;
            body.extend_from_slice(&chunk[..size]);
        }
    }
    let len: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    Some(body)
}

// ---- hyper: HTTP/1.1 and HTTP/2 --------------------------------------------------------------------

fn serve_hyper(listener: TcpListener, tls: Option<rustls::ServerConfig>, shared: Shared) {
    use http_body_util::{BodyExt, Full};
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let acceptor = tls.map(|cfg| tokio_rustls::TlsAcceptor::from(Arc::new(cfg)));
    let shared = Arc::new(shared);
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, shared) = (acceptor.clone(), shared.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        move |req: hyper::Request<hyper::body::Incoming>| {
                            let shared = shared.clone();
                            async move {
                                let (parts, body) = req.into_parts();
                                let body = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes().to_vec())
                                    .unwrap_or_default();
                                let host = parts
                                    .uri
                                    .authority()
                                    .map(|a| a.as_str().to_owned())
                                    .or_else(|| {
                                        parts
                                            .headers
                                            .get("host")
                                            .and_then(|h| h.to_str().ok())
                                            .map(str::to_owned)
                                    })
                                    .unwrap_or_default();
                                let req = Request {
                                    backend: shared.name,
                                    method: parts.method.to_string(),
                                    target: parts
                                        .uri
                                        .path_and_query()
                                        .map_or("/", |p| p.as_str())
                                        .to_owned(),
                                    version: format!("{:?}", parts.version),
                                    host,
                                    head: String::new(),
                                    body,
                                };
                                let reply =
                                    tokio::task::spawn_blocking(move || shared.respond(&req))
                                        .await
                                        .unwrap();
                                let code: u16 = reply
                                    .status
                                    .split_whitespace()
                                    .next()
                                    .and_then(|c| c.parse().ok())
                                    .unwrap_or(200);
                                let mut resp = hyper::Response::builder().status(code);
                                for (k, v) in
                                    reply.fields.split("\r\n").filter_map(|l| l.split_once(':'))
                                {
                                    resp = resp.header(k.trim(), v.trim());
                                }
                                let resp = resp
                                    .body(Full::new(bytes::Bytes::from(reply.body)))
                                    .unwrap();
                                Ok::<_, std::convert::Infallible>(resp)
                            }
                        },
                    );
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    match acceptor {
                        Some(a) => {
                            if let Ok(s) = a.accept(tcp).await {
                                let _ = builder.serve_connection(TokioIo::new(s), svc).await;
                            }
                        }
                        None => {
                            let _ = builder.serve_connection(TokioIo::new(tcp), svc).await;
                        }
                    }
                });
            }
        });
    });
}
