//! Listening sockets, the process's file-descriptor budget, and the accept loop of each entry
//! point: a connection's first byte tells TLS from plain HTTP, plain keep-alive requests go to the
//! own HTTP/1.1 loop ([`crate::http1::server`]) and the rest of the connection to hyper; on
//! shutdown the listener closes and connections drain for the entry point's grace time.
//!
//! A burst of connections must find room in the accept queue: tokio binds with a fixed backlog,
//! so listeners are made here with the largest one the kernel allows (`net.core.somaxconn`
//! caps it), as HAProxy sizes its own. The descriptor limit is raised to the hard limit at start
//! (a proxy holds two descriptors per proxied connection). When descriptors run out anyway,
//! `accept` fails with `EMFILE`/`ENFILE` while the connection stays queued, so retrying at once
//! spins; [`exhausted`] tells the accept loop to pause instead.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::Request;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};

use crate::http1::server::RequestBody;
use crate::proxy::Peer;
use crate::runtime::{EntryId, Runtime};

/// Backlog asked for; the kernel silently lowers it to `net.core.somaxconn`.
const BACKLOG: i32 = 65_535;

/// The backlog the kernel grants a listener (`min(BACKLOG, somaxconn)`), for the startup log.
pub(crate) fn effective_backlog() -> u32 {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    somaxconn.map_or(BACKLOG.unsigned_abs(), |m| m.min(BACKLOG.unsigned_abs()))
}

/// A non-blocking listener on `addr` with `SO_REUSEADDR` (as tokio sets it) and the large backlog.
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    tokio::net::TcpListener::from_std(socket.into())
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the limit in force afterwards
/// (`None`: unlimited or unknown).
pub(crate) fn raise_nofile() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if setrlimit(Resource::Nofile, limit).is_err() {
            return getrlimit(Resource::Nofile).current;
        }
    }
    limit.current
}

/// True when `accept` failed for lack of descriptors or memory: the pending connection stays
/// queued, so the loop must wait for resources instead of retrying at once.
pub(crate) fn exhausted(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|code| {
        let errno = Errno::from_raw_os_error(code);
        errno == Errno::MFILE
            || errno == Errno::NFILE
            || errno == Errno::NOBUFS
            || errno == Errno::NOMEM
    })
}

/// How long the accept loop pauses after [`exhausted`]: long enough not to spin, short enough
/// that accepting resumes soon after descriptors free up.
pub(crate) const EXHAUSTED_PAUSE: Duration = Duration::from_millis(100);

/// Resolves an entry point's listen address: `--bind` override, else the plan's (`:80` → all interfaces).
pub(crate) fn listen_addr(
    name: &str,
    address: &str,
    binds: &HashMap<String, SocketAddr>,
) -> Result<SocketAddr, crate::runtime::ServeError> {
    if let Some(a) = binds.get(name) {
        return Ok(*a);
    }
    let hostport = address.split('/').next().unwrap_or(address);
    let full = if hostport.starts_with(':') {
        format!("0.0.0.0{hostport}")
    } else {
        hostport.to_owned()
    };
    full.parse()
        .map_err(|_| crate::runtime::ServeError::Address(name.to_owned(), address.to_owned()))
}

/// One accepted connection of an entry point, before its protocol is known.
struct Conn {
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: EntryId,
    peer: Peer,
    builder: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    /// Changes when the entry point shuts down (connections of the own HTTP/1.1 loop).
    stop: tokio::sync::watch::Receiver<()>,
    handshake_timeout: Duration,
    limits: crate::http1::server::Limits,
    /// HTTP/2: most concurrent streams, and the HPACK decoder table size.
    h2: (u32, u32),
    /// The entry point's name, for the open-connections gauge.
    name: Arc<str>,
}

/// Counts a connection in `traefik_open_connections` while it lives.
struct OpenConnection {
    metrics: Arc<crate::observe::metrics::Metrics>,
    ep: crate::observe::metrics::Name,
}

impl OpenConnection {
    fn new(metrics: Arc<crate::observe::metrics::Metrics>, ep: &str) -> Self {
        let ep = crate::observe::metrics::Name::from(ep);
        metrics.connection(&ep, 1);
        Self { metrics, ep }
    }
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.metrics.connection(&self.ep, -1);
    }
}

/// First byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// The first byte a connection will read, without reading it.
trait FirstByte {
    async fn first_byte(&mut self) -> std::io::Result<u8>;
}

impl FirstByte for tokio::net::TcpStream {
    async fn first_byte(&mut self) -> std::io::Result<u8> {
        let mut first = [0u8; 1];
        match self.peek(&mut first).await? {
            1 => Ok(first[0]),
            _ => Err(std::io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

impl FirstByte for crate::http1::server::Rewind<tokio::net::TcpStream> {
    async fn first_byte(&mut self) -> std::io::Result<u8> {
        match self.prefix().first() {
            Some(&b) => Ok(b),
            None => self.inner_mut().first_byte().await,
        }
    }
}

impl Conn {
    /// A connection that may start with a PROXY protocol header (`believed`: whether the client
    /// it names is believed), then [`Conn::sniffed`]. Spawned only on entry points with
    /// `proxyProtocol`, so the other connections' tasks do not carry this step.
    async fn run_proxied(
        mut self,
        mut stream: tokio::net::TcpStream,
        tls: Option<Arc<crate::tls::TlsChoice>>,
        believed: bool,
    ) {
        let Some(rest) = self.proxy_header(&mut stream, believed).await else {
            return;
        };
        if rest.is_empty() {
            Box::pin(self.sniffed(stream, tls)).await;
        } else {
            let io = crate::http1::server::Rewind::new(rest.freeze(), stream);
            Box::pin(self.sniffed(io, tls)).await;
        }
    }

    /// Reads the PROXY protocol header, if the connection starts with one, within the
    /// header-read bound; the client it names becomes the peer when `believed`. `None`: the
    /// connection is closed (a broken header, or none in time); else the bytes read after it.
    async fn proxy_header(
        &mut self,
        stream: &mut tokio::net::TcpStream,
        believed: bool,
    ) -> Option<bytes::BytesMut> {
        let read =
            tokio::time::timeout(self.handshake_timeout, crate::proxy_protocol::read(stream));
        match read.await {
            Ok(Ok((source, rest))) => {
                if let Some(source) = source.filter(|_| believed) {
                    self.peer = Peer::new(source);
                }
                Some(rest)
            }
            Ok(Err(e)) => {
                tracing::debug!("{}: connection closed: {e}", self.peer.addr);
                None
            }
            Err(_) => {
                tracing::debug!("{}: no PROXY protocol header in time", self.peer.addr);
                None
            }
        }
    }

    /// On an entry point with TLS, the first byte tells a TLS handshake from plain HTTP (as in
    /// Traefik); the handshake must finish within the header-read bound.
    async fn sniffed<I>(self, mut stream: I, tls: Option<Arc<crate::tls::TlsChoice>>)
    where
        I: FirstByte + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let _open = self
            .current
            .load()
            .metrics()
            .map(|m| OpenConnection::new(m.clone(), &self.name));
        let Some(cfg) = tls else {
            return self.serve(stream, false).await;
        };
        let deadline = tokio::time::Instant::now() + self.handshake_timeout;
        match tokio::time::timeout_at(deadline, stream.first_byte()).await {
            Ok(Ok(TLS_HANDSHAKE)) => {}
            Ok(Ok(_)) => return self.serve(stream, false).await,
            _ => return,
        }
        // Boxed, like the hyper part below: a task's future is as large as its largest state,
        // and the handshake's and hyper's states would otherwise be carried by every idle
        // plain connection (measured: 9.6 KiB per connection before, see `size_probe`).
        Box::pin(async move {
            let handshake = async {
                match cfg.single() {
                    Some(one) => tokio_rustls::TlsAcceptor::from(one.clone())
                        .accept(stream)
                        .await
                        .map(|s| (s, 0)),
                    // Several option sets: the one for the name the ClientHello asks for.
                    None => {
                        let start = tokio_rustls::LazyConfigAcceptor::new(
                            rustls::server::Acceptor::default(),
                            stream,
                        )
                        .await?;
                        let Some((at, chosen)) = cfg.for_name(start.client_hello().server_name())
                        else {
                            return Err(std::io::Error::other("no TLS configuration"));
                        };
                        start.into_stream(chosen.clone()).await.map(|s| (s, at))
                    }
                }
            };
            if let Ok(Ok((tls_stream, options))) =
                tokio::time::timeout_at(deadline, handshake).await
            {
                // A TLS-ALPN-01 validation ends with the handshake (RFC 8737 §3).
                if tls_stream.get_ref().1.alpn_protocol()
                    == Some(crate::acme::challenge::ACME_TLS_ALPN)
                {
                    return;
                }
                let mut conn = self;
                conn.peer.tls_options = options;
                conn.peer.client_certs = tls_stream
                    .get_ref()
                    .1
                    .peer_certificates()
                    .filter(|c| !c.is_empty())
                    .map(|c| c.iter().map(|d| d.clone().into_owned()).collect());
                conn.serve(tls_stream, true).await;
            }
        })
        .await;
    }

    async fn serve<I>(self, io: I, tls: bool)
    where
        I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Self {
            current,
            ep,
            peer,
            builder,
            watcher,
            mut stop,
            limits,
            h2,
            ..
        } = self;
        // Plain keep-alive requests are served by the own loop; the rest of the connection goes
        // to hyper at the first request the loop does not take (see `crate::http1::server`).
        let mut keep_alive =
            crate::http1::server::KeepAlive::new(limits.max_requests, limits.max_age);
        let answered = {
            let inbox = crate::interim::Inbox::new();
            let (current, ep, peer, relays) = (&current, &ep, &peer, &inbox);
            crate::http1::server::serve(
                io,
                limits,
                &mut stop,
                &inbox,
                &mut keep_alive,
                move |req| {
                    let mut peer = peer.clone();
                    peer.interims = Some(relays.relay());
                    current.load_full().handle(*ep, peer, tls, req)
                },
            )
            .await
        };
        let io = match answered {
            crate::http1::server::Outcome::Done => return,
            crate::http1::server::Outcome::HandOver(io) => io,
        };
        if crate::http2::server::is_preface(io.prefix()) {
            // HTTP/2 (prior knowledge, or ALPN `h2`): the own server, which can forward
            // interim responses; it shuts down with the own HTTP/1.1 loop's signal.
            let limits = crate::http2::server::Limits {
                handshake: limits.header_read,
                max_header_list: u32::try_from(limits.max_header).unwrap_or(u32::MAX),
                max_concurrent_streams: h2.0,
                header_table_size: h2.1,
                keep_alive,
            };
            drop(watcher);
            return Box::pin(crate::http2::server::serve(
                io,
                limits,
                stop,
                move |req, interims| {
                    let mut peer = peer.clone();
                    peer.interims = Some(interims);
                    current.load_full().handle(ep, peer, tls, req)
                },
            ))
            .await;
        }
        drop(stop);
        Box::pin(hand_over(
            io, current, ep, peer, tls, builder, watcher, keep_alive,
        ))
        .await;
    }
}

/// The rest of a connection the own loop handed over, served by hyper (HTTP/1.1 with bodies or
/// upgrades, HTTP/2, h2c).
#[allow(
    clippy::too_many_arguments,
    reason = "the parts of one connection, taken apart by Conn::serve once"
)]
async fn hand_over<I>(
    io: I,
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: EntryId,
    peer: Peer,
    tls: bool,
    builder: hyper_util::server::conn::auto::Builder<TokioExecutor>,
    watcher: hyper_util::server::graceful::Watcher,
    keep_alive: crate::http1::server::KeepAlive,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    {
        // The count goes on from the own loop's; hyper closes after an answer that says so.
        let keep_alive = std::sync::Mutex::new(keep_alive);
        let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
            // Each request sees the plan current when it arrived (SIGHUP swaps it atomically).
            let rt = current.load_full();
            let last = keep_alive.lock().is_ok_and(|mut k| k.last());
            // Boxed: hyper keeps the future in its dispatcher, and moving the unboxed state
            // machine (kilobytes) there on every request showed as memcpy in profiles.
            let fut = rt.handle(ep, peer.clone(), tls, req.map(RequestBody::Hyper));
            async move {
                let mut resp = fut.await;
                if last {
                    resp.headers_mut().insert(
                        http::header::CONNECTION,
                        http::HeaderValue::from_static("close"),
                    );
                }
                Ok::<_, Infallible>(resp)
            }
        });
        let conn = builder.serve_connection_with_upgrades(TokioIo::new(io), svc);
        if let Err(e) = watcher.watch(conn.into_owned()).await {
            crate::proxy::strict::count_connection_error(&*e);
        }
    }
}

/// Header-read bound when the plan sets neither a header-read nor an idle timeout: hyper needs
/// one to stop slowloris connections, so "no limit" is not offered.
const HEADER_READ_FALLBACK_MS: u64 = 60_000;

/// Accepts connections on `listener` for entry point `ep` until `shutdown` resolves, then drains
/// in-flight connections for up to `grace`.
pub(crate) async fn serve_entrypoint(
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: Arc<str>,
    listener: tokio::net::TcpListener,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let rt = current.load_full();
    let Some(id) = rt.entry_id(&ep) else {
        tracing::error!("entry point {ep} is not in the plan: not serving it");
        return;
    };
    // The entry point's settings, read once: they stay for the listener's life (a reload that
    // changes them restarts it).
    let entry = rt.plan().entrypoints.get(&*ep);
    let accept_grace = entry.map_or(Duration::ZERO, |e| {
        Duration::from_millis(e.timeouts.request_accept_grace_ms)
    });
    let read_body = entry
        .and_then(|e| (e.timeouts.read_ms > 0).then(|| Duration::from_millis(e.timeouts.read_ms)));
    let (grace, header_read, max_header) = entry.map_or(
        (Duration::from_secs(10), Duration::from_secs(10), 1 << 20),
        |e| {
            // hyper's one HTTP/1 timer runs from the end of a response (or the accept) to the end
            // of the next request's headers: it is both the slowloris bound and the keep-alive
            // idle timeout, so it gets the smaller of the two.
            let t = &e.timeouts;
            let bound = [t.header_read_ms, t.idle_ms]
                .into_iter()
                .filter(|&ms| ms > 0)
                .min()
                .unwrap_or(HEADER_READ_FALLBACK_MS);
            (
                Duration::from_millis(t.grace_ms),
                Duration::from_millis(bound),
                usize::try_from(e.max_header_bytes).unwrap_or(1 << 20),
            )
        },
    );
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(header_read)
        // Larger header sections are answered with 431 by hyper.
        .max_buf_size(max_header.max(8192));
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_header_list_size(u32::try_from(max_header).unwrap_or(u32::MAX));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Connections in the own HTTP/1.1 loop hold a receiver; all gone = all drained.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let conns = entry.map(|e| e.connections.clone());
    let limits = crate::http1::server::Limits {
        header_read,
        max_header: max_header.max(8192),
        read_body,
        max_requests: conns.as_ref().map_or(0, |c| c.max_requests),
        max_age: conns
            .as_ref()
            .filter(|c| c.max_time_ms > 0)
            .map(|c| Duration::from_millis(c.max_time_ms)),
    };
    let h2 = conns.as_ref().map_or((250, 4096), |c| {
        (
            c.h2_max_concurrent_streams,
            c.h2_max_decoder_header_table_size,
        )
    });
    // Set while accepting is paused for lack of descriptors: logged once per episode.
    let mut starved = false;
    // After SIGTERM, Traefik's `requestAcceptGraceTimeout`: new connections are still accepted
    // (and `/ping` already answers its terminating status) until then.
    let mut accept_until: Option<tokio::time::Instant> = None;
    let stopping = |at: &mut Option<tokio::time::Instant>| -> bool {
        if accept_grace.is_zero() {
            return true;
        }
        if at.is_none() {
            tracing::info!(
                "entry point {ep}: still accepting for {accept_grace:?} (requestAcceptGraceTimeout)"
            );
            *at = Some(tokio::time::Instant::now() + accept_grace);
        }
        false
    };
    loop {
        tokio::select! {
            () = async {
                match accept_until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            } => break,
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) if exhausted(&e) => {
                        if !starved {
                            tracing::warn!(
                                "entry point {ep}: cannot accept connections ({e}); pausing \
                                 accepts while serving the open ones"
                            );
                            starved = true;
                        }
                        tokio::select! {
                            () = tokio::time::sleep(EXHAUSTED_PAUSE) => {}
                            _ = shutdown.changed() => break,
                        }
                        continue;
                    }
                    Err(_) => continue,
                };
                if starved {
                    tracing::info!("entry point {ep}: accepting connections again");
                    starved = false;
                }
                let _ = stream.set_nodelay(true);
                // The TLS configuration current at accept time: a reload with a rotated
                // certificate applies to new connections, established ones keep theirs.
                let (tls, proxy_header) = {
                    let now = current.load();
                    (now.tls_config(id), now.proxy_header(id, peer.ip()))
                };
                let conn = Conn {
                    current: current.clone(),
                    ep: id,
                    name: ep.clone(),
                    peer: Peer::new(peer),
                    builder: builder.clone(),
                    watcher: graceful.watcher(),
                    stop: stop_rx.clone(),
                    handshake_timeout: header_read,
                    limits,
                    h2,
                };
                match proxy_header {
                    None => tokio::spawn(conn.sniffed(stream, tls)),
                    Some(believed) => tokio::spawn(conn.run_proxied(stream, tls, believed)),
                };
            }
            changed = shutdown.changed(), if accept_until.is_none() => {
                if changed.is_err() || stopping(&mut accept_until) {
                    break;
                }
            }
        }
    }
    drop(listener);
    drop(stop_rx);
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(grace, async {
        tokio::join!(graceful.shutdown(), stop_tx.closed());
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_is_recognised() {
        assert!(exhausted(&std::io::Error::from_raw_os_error(24))); // EMFILE
        assert!(exhausted(&std::io::Error::from_raw_os_error(23))); // ENFILE
        assert!(!exhausted(&std::io::Error::from_raw_os_error(103))); // ECONNABORTED
        assert!(!exhausted(&std::io::Error::other("x")));
    }

    #[tokio::test]
    async fn a_listener_accepts_and_the_limit_is_raised() {
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        let c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (s, peer) = l.accept().await.unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        drop(s);
        let limit = raise_nofile();
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert_eq!(limit, hard);
        assert!(effective_backlog() >= 128);
    }
}

#[cfg(test)]
mod size_probe {
    use std::sync::Arc;
    use std::time::Duration;

    /// Every open connection is one task holding this future: with the TLS handshake and
    /// hyper's connection state inline it was 9.6 KiB in a debug build, boxed away it is about
    /// 3.7 KiB (those paths pay one allocation when taken).
    #[test]
    fn an_idle_connection_task_carries_neither_the_handshake_nor_hyper_inline() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = l.local_addr().unwrap();
            let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let plan = Arc::new(bridge_plan::Plan::example());
            let runtime = crate::Runtime::new(plan, Default::default())
                .unwrap()
                .shared();
            let (_tx, rx) = tokio::sync::watch::channel(());
            let graceful = hyper_util::server::graceful::GracefulShutdown::new();
            let conn = super::Conn {
                current: Arc::new(arc_swap::ArcSwap::new(runtime)),
                ep: crate::runtime::EntryId(0),
                peer: crate::proxy::Peer::new(addr),
                builder: hyper_util::server::conn::auto::Builder::new(
                    hyper_util::rt::TokioExecutor::new(),
                ),
                watcher: graceful.watcher(),
                stop: rx,
                handshake_timeout: Duration::from_secs(1),
                h2: (250, 4096),
                limits: crate::http1::server::Limits {
                    header_read: Duration::from_secs(1),
                    max_header: 8192,
                    read_body: None,
                    max_requests: 0,
                    max_age: None,
                },
                name: Arc::from("web"),
            };
            let task = conn.sniffed(stream, None);
            let size = size_of_val(&task);
            assert!(size < 5 * 1024, "a connection's task is {size} bytes");
        });
    }
}
