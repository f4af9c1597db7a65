//! The proxy's HTTP/2 client: `h2c://` servers, and `https://` servers that negotiate `h2`, on
//! the h2 crate.
//!
//! hyper's HTTP/2 client drops a server's interim (1xx) responses, and RFC 9110 §15.2 says a
//! proxy MUST forward them (103 Early Hints from a gRPC-era or HTTP/2-only backend is the case
//! that matters); h2's `ResponseFuture::poll_informational` sees them, so this client relays each
//! to the request's [`Relay`] as it arrives, bounded at [`MAX_INTERIM`] as on HTTP/1.1.
//!
//! - One connection per server carries every request (HTTP/2 multiplexing), with hyper's window
//!   and frame settings; a request waits for a stream when the server's
//!   `SETTINGS_MAX_CONCURRENT_STREAMS` are all busy. Concurrent first requests share one dial.
//! - A connection the server closed or sent GOAWAY on is replaced; a request that found it so
//!   before anything was sent goes out on the new one, never twice.
//! - `readIdleTimeout`/`pingTimeout` (Go's HTTP/2 health check): when nothing was read from the
//!   server for `readIdleTimeout`, with or without requests in flight, a PING goes out; no
//!   answer within `pingTimeout` closes the connection. Every byte read counts, as Go counts
//!   every frame.
//! - `idleConnTimeout` closes a connection that carried no request for that long.
//! - An `https://` server that answers ALPN with `http/1.1` (or nothing) is remembered: its
//!   requests go to the HTTP/1.1 client from then on ([`H2Error::NotH2`]).
//! - A request body is sent by a task of its own (gRPC streams both ways at once); when it fails,
//!   the exchange fails with that error ([`H2Error::Body`]), which says nothing about the server.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http::{Request, Response, StatusCode};
use hyper::body::{Body, Frame, SizeHint};
use rustls::ClientConfig;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::stream::{H2Body, pipe, strip_connection_fields};
use crate::body::BoxError;
use crate::http1::client::MAX_INTERIM;
use crate::interim::Relay;

/// hyper's client defaults, kept: windows larger than the protocol's 64 KiB, which would hold
/// back a fast server on a distant link.
const CONN_WINDOW: u32 = 5 * 1024 * 1024;
const STREAM_WINDOW: u32 = 2 * 1024 * 1024;
const MAX_FRAME: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 1024 * 1024;
const MAX_HEADER_LIST: u32 = 16 * 1024;
/// Streams opened before the server's SETTINGS say how many it takes.
const INITIAL_MAX_SEND_STREAMS: usize = 100;
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Why an exchange with an HTTP/2 server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum H2Error {
    /// No TCP connection or TLS session could be made.
    #[error("connect error: {0}")]
    Connect(#[source] std::io::Error),
    /// Connecting took longer than the transport's `dialTimeout`.
    #[error("connect timed out (dialTimeout)")]
    ConnectTimeout,
    /// The `https://` server chose HTTP/1.1 by ALPN: the request goes to the HTTP/1.1 client.
    #[error("the server does not speak HTTP/2")]
    NotH2,
    /// An `Upgrade` request, which HTTP/2 cannot carry (RFC 9113 §8.6).
    #[error("an Upgrade request cannot be sent to an HTTP/2 server")]
    Upgrade,
    /// The connection or the stream failed (reset, GOAWAY, a protocol error, closed).
    #[error("HTTP/2: {0}")]
    Http2(#[from] h2::Error),
    /// The server sent a 101, which HTTP/2 forbids, or more than [`MAX_INTERIM`] 1xx answers.
    #[error("invalid response: {0}")]
    Invalid(&'static str),
    /// The request body failed (the client's side): the exchange was reset.
    #[error("request body: {0}")]
    Body(#[source] BoxError),
}

impl H2Error {
    /// True when the server was never reached (nothing was sent).
    pub(crate) fn is_connect(&self) -> bool {
        matches!(self, Self::Connect(_) | Self::ConnectTimeout)
    }

    /// True when the failure was a timeout.
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            Self::ConnectTimeout => true,
            Self::Connect(e) => e.kind() == std::io::ErrorKind::TimedOut,
            _ => false,
        }
    }
}

/// Where and how to connect.
pub(crate) struct Dial {
    /// `host:port` (an IP literal after `--resolve`, else resolved when dialling).
    pub addr: String,
    /// `https://`: the TLS configuration (ALPN `h2`, `http/1.1`) and the name to verify.
    pub tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// Bounds TCP connect plus TLS handshake.
    pub timeout: Option<Duration>,
}

/// A connection's timers, from the servers transport.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timers {
    /// `readIdleTimeout`: a PING after this long without a byte from the server.
    pub read_idle: Option<Duration>,
    /// `pingTimeout`: how long the PING's answer may take.
    pub ping_timeout: Duration,
    /// `idleConnTimeout`: a connection without requests for this long is closed.
    pub idle: Option<Duration>,
}

/// What a connection's task and its users share.
#[derive(Debug)]
struct State {
    /// The instant the times below count from.
    base: Instant,
    /// Milliseconds after `base` of the last read from the server.
    last_read: AtomicU64,
    /// Milliseconds after `base` at which the last request ended.
    last_used: AtomicU64,
    /// Requests using the connection (sent or about to be, bodies not yet read to the end).
    in_use: AtomicUsize,
    /// Set when the connection can take no more requests.
    closed: AtomicBool,
}

impl State {
    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn at(&self, ms: u64) -> Instant {
        self.base + Duration::from_millis(ms)
    }
}

/// A request's hold on its connection: the connection is not idle while one exists.
#[derive(Debug)]
struct InUse(Arc<State>);

impl Drop for InUse {
    fn drop(&mut self) {
        self.0.last_used.store(self.0.now(), Ordering::Relaxed);
        self.0.in_use.fetch_sub(1, Ordering::AcqRel);
    }
}

#[derive(Clone)]
struct Conn {
    tx: SendRequest<Bytes>,
    state: Arc<State>,
}

/// The HTTP/2 connection to one server.
pub(crate) struct H2Pool {
    dial: Dial,
    timers: Timers,
    current: Mutex<Option<Conn>>,
    /// Held while dialling, so that concurrent first requests share one connection.
    connecting: tokio::sync::Mutex<()>,
    /// Set when the `https://` server chose HTTP/1.1 by ALPN.
    h1_only: AtomicBool,
}

impl std::fmt::Debug for H2Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2Pool")
            .field("dial", &self.dial.addr)
            .field("h1_only", &self.h1_only)
            .finish_non_exhaustive()
    }
}

impl H2Pool {
    /// A client for the server at `dial`.
    pub(crate) fn new(dial: Dial, timers: Timers) -> Self {
        Self {
            dial,
            timers,
            current: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            h1_only: AtomicBool::new(false),
        }
    }

    /// True once the `https://` server chose HTTP/1.1 by ALPN: its requests go elsewhere.
    pub(crate) fn h1_only(&self) -> bool {
        self.h1_only.load(Ordering::Relaxed)
    }

    /// The open connection, taken for one request.
    fn take_current(&self) -> Option<(Conn, InUse)> {
        let current = self.current.lock().ok()?;
        let conn = current.as_ref()?;
        if conn.state.closed.load(Ordering::Acquire) {
            return None;
        }
        conn.state.in_use.fetch_add(1, Ordering::AcqRel);
        Some((conn.clone(), InUse(conn.state.clone())))
    }

    /// Forgets `state`'s connection (if it is still the current one) and marks it closed.
    fn retire(&self, state: &Arc<State>) {
        state.closed.store(true, Ordering::Release);
        if let Ok(mut current) = self.current.lock()
            && current
                .as_ref()
                .is_some_and(|c| Arc::ptr_eq(&c.state, state))
        {
            *current = None;
        }
    }

    /// The open connection or a new one, taken for one request; true when it was open before.
    async fn checkout(self: &Arc<Self>) -> Result<(Conn, InUse, bool), H2Error> {
        if let Some((c, u)) = self.take_current() {
            return Ok((c, u, true));
        }
        let _dialling = self.connecting.lock().await;
        if let Some((c, u)) = self.take_current() {
            return Ok((c, u, true));
        }
        let conn = Box::pin(self.connect()).await?;
        conn.state.in_use.fetch_add(1, Ordering::AcqRel);
        let in_use = InUse(conn.state.clone());
        if let Ok(mut current) = self.current.lock() {
            *current = Some(conn.clone());
        }
        Ok((conn, in_use, false))
    }

    /// Dials the server, does the HTTP/2 handshake and starts the connection's task.
    async fn connect(self: &Arc<Self>) -> Result<Conn, H2Error> {
        let dial = async {
            let tcp = TcpStream::connect(self.dial.addr.as_str())
                .await
                .map_err(H2Error::Connect)?;
            let _ = tcp.set_nodelay(true);
            let Some((config, name)) = &self.dial.tls else {
                return self.handshake(tcp).await;
            };
            let tls = tokio_rustls::TlsConnector::from(config.clone())
                .connect(name.clone(), tcp)
                .await
                .map_err(H2Error::Connect)?;
            if tls.get_ref().1.alpn_protocol() != Some(b"h2") {
                self.h1_only.store(true, Ordering::Relaxed);
                return Err(H2Error::NotH2);
            }
            self.handshake(tls).await
        };
        match self.dial.timeout {
            Some(d) => tokio::time::timeout(d, dial)
                .await
                .map_err(|_| H2Error::ConnectTimeout)?,
            None => dial.await,
        }
    }

    async fn handshake<T>(self: &Arc<Self>, io: T) -> Result<Conn, H2Error>
    where
        T: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let base = Instant::now();
        let state = Arc::new(State {
            base,
            last_read: AtomicU64::new(0),
            last_used: AtomicU64::new(0),
            in_use: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
        });
        let io = Recorded {
            io,
            state: state.clone(),
        };
        let (tx, conn) = h2::client::Builder::new()
            .initial_max_send_streams(INITIAL_MAX_SEND_STREAMS)
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONN_WINDOW)
            .max_frame_size(MAX_FRAME)
            .max_header_list_size(MAX_HEADER_LIST)
            .max_send_buffer_size(MAX_SEND_BUFFER)
            .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
            .enable_push(false)
            .handshake::<_, Bytes>(io)
            .await?;
        tokio::spawn(drive(
            conn,
            state.clone(),
            Arc::downgrade(self),
            self.timers,
        ));
        Ok(Conn { tx, state })
    }

    /// A connection ready to open a stream, taken for one request. [`H2Error::NotH2`] when the
    /// `https://` server chose HTTP/1.1: the caller still has its request to send elsewhere.
    pub(crate) async fn lease(self: &Arc<Self>) -> Result<Lease, H2Error> {
        loop {
            let (conn, in_use, reused) = self.checkout().await?;
            match conn.tx.ready().await {
                Ok(tx) => return Ok(Lease { tx, in_use }),
                Err(e) => {
                    // GOAWAY or closed before anything of a request was sent: another
                    // connection takes it.
                    self.retire(&conn.state);
                    if !reused {
                        return Err(e.into());
                    }
                }
            }
        }
    }
}

/// A connection ready for one request's stream.
pub(crate) struct Lease {
    tx: SendRequest<Bytes>,
    in_use: InUse,
}

impl Lease {
    /// Sends `req` (absolute URI: its authority becomes `:authority`) and returns the response
    /// head; interim responses go to `interims` as they arrive.
    pub(crate) async fn send<B>(
        self,
        req: Request<B>,
        interims: Option<&Relay>,
    ) -> Result<Response<ResponseBody>, H2Error>
    where
        B: Body + Send + Unpin + 'static,
        B::Error: Into<BoxError>,
    {
        let Self { mut tx, in_use } = self;
        let (mut parts, body) = req.into_parts();
        parts.version = http::Version::HTTP_2;
        parts.headers.remove(http::header::HOST);
        strip_connection_fields(&mut parts.headers, true);
        let end = body.is_end_stream();
        let (mut answer, stream) = tx.send_request(Request::from_parts(parts, ()), end)?;
        let body_failed = (!end).then(|| {
            let (report, failed) = tokio::sync::oneshot::channel();
            tokio::spawn(pipe(body, stream, move |e| {
                let _ = report.send(e);
            }));
            failed
        });
        let mut seen = 0;
        let head = std::future::poll_fn(|cx| {
            loop {
                match answer.poll_informational(cx) {
                    Poll::Ready(Some(Ok(interim))) => {
                        seen += 1;
                        if let Err(e) = relay(interim, interims, seen) {
                            return Poll::Ready(Err(e));
                        }
                    }
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e.into())),
                    Poll::Ready(None) | Poll::Pending => break,
                }
            }
            Pin::new(&mut answer).poll(cx).map_err(H2Error::from)
        });
        let resp = match head.await {
            Ok(resp) => resp,
            Err(e) => {
                // The stream was reset because the client's body failed: that is the cause.
                if let Some(mut failed) = body_failed
                    && let Ok(cause) = failed.try_recv()
                {
                    return Err(H2Error::Body(cause));
                }
                return Err(e);
            }
        };
        let (parts, recv) = resp.into_parts();
        let body = H2Body::new(recv, &parts.headers, true);
        Ok(Response::from_parts(
            parts,
            ResponseBody {
                body,
                _in_use: in_use,
            },
        ))
    }
}

/// Passes one interim response on; `seen` counts them, the limit is [`MAX_INTERIM`].
fn relay(interim: Response<()>, interims: Option<&Relay>, seen: usize) -> Result<(), H2Error> {
    if interim.status() == StatusCode::SWITCHING_PROTOCOLS {
        return Err(H2Error::Invalid("101 Switching Protocols over HTTP/2"));
    }
    if seen > MAX_INTERIM {
        return Err(H2Error::Invalid("more than 16 interim responses"));
    }
    if let Some(relay) = interims {
        let (parts, ()) = interim.into_parts();
        relay.send_parsed(parts.status, parts.headers);
    }
    Ok(())
}

/// A response body from an HTTP/2 server; the connection counts as in use until it is read to
/// its end or dropped.
#[derive(Debug)]
pub(crate) struct ResponseBody {
    body: H2Body,
    _in_use: InUse,
}

impl Body for ResponseBody {
    type Data = Bytes;
    type Error = h2::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, h2::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Runs one connection: the h2 connection itself, the keep-alive PINGs and the idle timeout.
async fn drive<T>(
    mut conn: h2::client::Connection<Recorded<T>, Bytes>,
    state: Arc<State>,
    pool: std::sync::Weak<H2Pool>,
    timers: Timers,
) where
    T: AsyncRead + AsyncWrite + Unpin,
{
    let mut pings = timers.read_idle.and_then(|_| conn.ping_pong());
    // When the unanswered PING was sent.
    let mut ping_sent: Option<Instant> = None;
    loop {
        let now = Instant::now();
        // When to send a PING, or give up on the one sent.
        let ping_at = match (timers.read_idle, ping_sent, pings.is_some()) {
            (_, Some(sent), _) => Some(sent + timers.ping_timeout),
            (Some(idle), None, true) => {
                Some(state.at(state.last_read.load(Ordering::Relaxed)) + idle)
            }
            _ => None,
        };
        // While requests are in flight, look again a full idle period later.
        let idle_at = timers.idle.map(|idle| {
            if state.in_use.load(Ordering::Acquire) == 0 {
                state.at(state.last_used.load(Ordering::Relaxed)) + idle
            } else {
                now + idle
            }
        });
        tokio::select! {
            ended = &mut conn => {
                if let Err(e) = ended {
                    tracing::debug!("HTTP/2 connection to a server ended: {e}");
                }
                break;
            }
            () = sleep_until(ping_at) => {
                let now = Instant::now();
                match (ping_sent, pings.as_mut(), timers.read_idle) {
                    (Some(_), _, _) => {
                        tracing::debug!(
                            "HTTP/2 server did not answer a PING within pingTimeout: connection closed"
                        );
                        break;
                    }
                    (None, Some(pp), Some(idle))
                        if now >= state.at(state.last_read.load(Ordering::Relaxed)) + idle =>
                    {
                        if pp.send_ping(h2::Ping::opaque()).is_err() {
                            break;
                        }
                        ping_sent = Some(now);
                    }
                    _ => {}
                }
            }
            pong = poll_pong(pings.as_mut()), if ping_sent.is_some() => {
                if pong.is_err() {
                    break;
                }
                ping_sent = None;
            }
            () = sleep_until(idle_at) => {
                // The pool is gone with its plan: nobody can use the connection any more.
                let Some(pool) = pool.upgrade() else { break };
                if let Some(idle) = timers.idle {
                    // Under the pool's lock: no request can take the connection meanwhile.
                    let Ok(mut current) = pool.current.lock() else { break };
                    let last = state.at(state.last_used.load(Ordering::Relaxed));
                    if state.in_use.load(Ordering::Acquire) == 0 && Instant::now() >= last + idle {
                        state.closed.store(true, Ordering::Release);
                        if current.as_ref().is_some_and(|c| Arc::ptr_eq(&c.state, &state)) {
                            *current = None;
                        }
                        tracing::debug!("HTTP/2 connection to a server idle for idleConnTimeout: closed");
                        break;
                    }
                }
            }
        }
    }
    state.closed.store(true, Ordering::Release);
    if let Some(pool) = pool.upgrade() {
        pool.retire(&state);
    }
}

/// Sleeps until `at`; never wakes without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The answer to the PING in flight.
async fn poll_pong(pings: Option<&mut h2::PingPong>) -> Result<(), h2::Error> {
    match pings {
        Some(pp) => std::future::poll_fn(|cx| pp.poll_pong(cx))
            .await
            .map(|_| ()),
        None => std::future::pending().await,
    }
}

/// A connection's I/O, noting when the server last sent something.
struct Recorded<T> {
    io: T,
    state: Arc<State>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Recorded<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.state
                .last_read
                .store(self.state.now(), Ordering::Relaxed);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Recorded<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use std::collections::VecDeque;

    use http_body_util::{BodyExt, Empty};

    use super::*;

    /// How the test server answers.
    #[derive(Clone, Copy)]
    enum Answer {
        /// `n` interim 103s, then 200 with the request body's length as its body.
        Interims(usize),
        /// 200, then GOAWAY: the connection takes no further streams.
        OkThenGoAway,
    }

    /// An HTTP/2 server on 127.0.0.1; counts the connections it accepted and the ones that
    /// ended.
    async fn server(answer: Answer) -> (SocketAddr, Arc<AtomicUsize>, Arc<AtomicUsize>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (opened, closed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let counts = (opened.clone(), closed.clone());
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counts.0.fetch_add(1, Ordering::SeqCst);
                let closed = counts.1.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(tcp).await else {
                        return;
                    };
                    while let Some(Ok((req, mut respond))) = conn.accept().await {
                        if matches!(answer, Answer::OkThenGoAway) {
                            conn.graceful_shutdown();
                        }
                        tokio::spawn(async move {
                            if let Answer::Interims(n) = answer {
                                for _ in 0..n {
                                    let mut hint = Response::new(());
                                    *hint.status_mut() = StatusCode::EARLY_HINTS;
                                    hint.headers_mut()
                                        .insert("link", "</a.css>".parse().unwrap());
                                    let _ = respond.send_informational(hint);
                                }
                            }
                            let mut body = req.into_body();
                            let mut n = 0;
                            while let Some(Ok(d)) = body.data().await {
                                n += d.len();
                                let _ = body.flow_control().release_capacity(d.len());
                            }
                            let text = Bytes::from(format!("{n}"));
                            if let Ok(mut tx) = respond.send_response(Response::new(()), false) {
                                let _ = tx.send_data(text, true);
                            }
                        });
                    }
                    closed.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        (addr, opened, closed)
    }

    /// A request body of these frames, in order.
    struct Chunks(VecDeque<Result<Frame<Bytes>, std::io::Error>>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = std::io::Error;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
            Poll::Ready(self.0.pop_front())
        }
    }

    fn pool(addr: SocketAddr, idle: Option<Duration>) -> Arc<H2Pool> {
        Arc::new(H2Pool::new(
            Dial {
                addr: addr.to_string(),
                tls: None,
                timeout: Some(Duration::from_secs(5)),
            },
            Timers {
                read_idle: None,
                ping_timeout: Duration::from_secs(15),
                idle,
            },
        ))
    }

    fn get() -> Request<Empty<Bytes>> {
        Request::builder()
            .uri("http://backend/x")
            .body(Empty::new())
            .unwrap()
    }

    async fn text(resp: Response<ResponseBody>) -> String {
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8_lossy(&body).into_owned()
    }

    #[tokio::test]
    async fn requests_share_one_connection_and_interim_responses_are_relayed() {
        let (addr, opened, _) = server(Answer::Interims(2)).await;
        let pool = pool(addr, None);
        let inbox = crate::interim::Inbox::new();
        let relay = inbox.relay();
        for _ in 0..3 {
            let lease = pool.lease().await.unwrap();
            let resp = lease.send(get(), Some(&relay)).await.unwrap();
            assert_eq!(resp.status(), StatusCode::OK);
            assert_eq!(text(resp).await, "0");
        }
        let both = futures_join(pool.clone(), pool.clone()).await;
        assert_eq!(both, ("0".to_owned(), "0".to_owned()));
        assert_eq!(opened.load(Ordering::SeqCst), 1);
        let first = inbox.try_next().unwrap();
        assert_eq!(first.status, StatusCode::EARLY_HINTS);
        assert_eq!(first.headers["link"], "</a.css>");
    }

    async fn futures_join(a: Arc<H2Pool>, b: Arc<H2Pool>) -> (String, String) {
        let one =
            async move { text(a.lease().await.unwrap().send(get(), None).await.unwrap()).await };
        let two =
            async move { text(b.lease().await.unwrap().send(get(), None).await.unwrap()).await };
        tokio::join!(one, two)
    }

    #[tokio::test]
    async fn a_body_streams_to_the_server() {
        let (addr, _, _) = server(Answer::Interims(0)).await;
        let pool = pool(addr, None);
        let body = Chunks(
            (0..64)
                .map(|_| Ok(Frame::data(Bytes::from(vec![b'x'; 16 * 1024]))))
                .collect(),
        );
        let req = Request::builder()
            .method("POST")
            .uri("http://backend/up")
            .body(body)
            .unwrap();
        let resp = pool.lease().await.unwrap().send(req, None).await.unwrap();
        assert_eq!(text(resp).await, (64 * 16 * 1024).to_string());
    }

    #[tokio::test]
    async fn more_than_sixteen_interim_responses_fail_the_exchange() {
        let (addr, _, _) = server(Answer::Interims(MAX_INTERIM + 1)).await;
        let flooded = pool(addr, None);
        let err = flooded
            .lease()
            .await
            .unwrap()
            .send(get(), None)
            .await
            .unwrap_err();
        assert!(matches!(err, H2Error::Invalid(_)), "{err}");
        // Sixteen pass.
        let (addr, _, _) = server(Answer::Interims(MAX_INTERIM)).await;
        let sixteen = pool(addr, None);
        assert!(
            sixteen
                .lease()
                .await
                .unwrap()
                .send(get(), None)
                .await
                .is_ok()
        );
    }

    #[tokio::test]
    async fn a_failing_request_body_is_the_clients_failure() {
        let (addr, _, _) = server(Answer::Interims(0)).await;
        let pool = pool(addr, None);
        let body = Chunks(VecDeque::from([
            Ok(Frame::data(Bytes::from_static(b"part"))),
            Err(std::io::Error::other("client went away")),
        ]));
        let req = Request::builder()
            .method("POST")
            .uri("http://backend/up")
            .body(body)
            .unwrap();
        let err = pool
            .lease()
            .await
            .unwrap()
            .send(req, None)
            .await
            .unwrap_err();
        assert!(matches!(err, H2Error::Body(_)), "{err}");
    }

    #[tokio::test]
    async fn after_goaway_the_next_request_opens_a_new_connection() {
        let (addr, opened, _) = server(Answer::OkThenGoAway).await;
        let pool = pool(addr, None);
        for _ in 0..3 {
            let resp = pool.lease().await.unwrap().send(get(), None).await.unwrap();
            assert_eq!(text(resp).await, "0");
            // Let the GOAWAY arrive.
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(opened.load(Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_connection_is_closed_after_idle_conn_timeout() {
        let (addr, opened, closed) = server(Answer::Interims(0)).await;
        let pool = pool(addr, Some(Duration::from_secs(90)));
        let resp = pool.lease().await.unwrap().send(get(), None).await.unwrap();
        // Not idle while its body is unread.
        tokio::time::sleep(Duration::from_secs(100)).await;
        assert_eq!(closed.load(Ordering::SeqCst), 0);
        assert_eq!(text(resp).await, "0");
        tokio::time::sleep(Duration::from_secs(80)).await;
        assert_eq!(
            closed.load(Ordering::SeqCst),
            0,
            "closed before idleConnTimeout"
        );
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(
            closed.load(Ordering::SeqCst),
            1,
            "still open after idleConnTimeout"
        );
        let resp = pool.lease().await.unwrap().send(get(), None).await.unwrap();
        assert_eq!(text(resp).await, "0");
        assert_eq!(opened.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let err = pool(addr, None).lease().await.err().unwrap();
        assert!(err.is_connect(), "{err}");
    }
}
