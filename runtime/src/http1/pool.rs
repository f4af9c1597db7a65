//! The keep-alive pool of HTTP/1.1 connections to one `http://` server.
//!
//! hyper-util's pooled client costs every request a pool checkout future, a keyed map lookup
//! behind a lock and oneshot channels; on the proxy's hot path that was a large share of the
//! per-request CPU. This pool keeps idle connections in LIFO lists (the most recently used
//! connection is the warmest) and hands a connection back when the response body has been read
//! to its end, so a connection serves one exchange at a time.
//!
//! - Requests without a body (see [`crate::http1::client::eligible`]) are exchanged by the proxy's own codec
//!   ([`crate::http1::client`]) on raw TCP connections, in the request's task; all others through hyper's
//!   `conn::http1`, whose idle `SendRequest` handles are kept in a second list.
//! - A connection found closed, or one whose request hyper reports as never sent (the server
//!   closed it while idle), is dropped and the request goes out on another one: like hyper-util's
//!   retry of canceled requests, without ever sending a request twice. On a raw connection, a
//!   reused one that gives no response byte at all is replaced the same way (its requests are
//!   idempotent: Go's transport retries them alike).
//! - At most `max_idle` connections are kept (Go's `MaxIdleConnsPerHost`); the oldest goes first.
//!   Idle ones older than `idle_timeout` are closed when the pool is next used or swept.
//! - Upgraded connections (WebSocket) leave the pool for good.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

use crate::http1::client::{self as h1, H1Error, Step};

use crate::body::BoxError;

/// Why a request could not be exchanged with the server.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PoolError {
    /// No TCP connection could be made.
    #[error("connect error: {0}")]
    Connect(#[source] std::io::Error),
    /// Connecting took longer than the transport's `dialTimeout`.
    #[error("connect timed out (dialTimeout)")]
    ConnectTimeout,
    /// The HTTP/1.1 handshake or exchange failed (reset, closed before a response, bad response).
    #[error(transparent)]
    Http(#[from] hyper::Error),
    /// The exchange by the proxy's own codec failed.
    #[error(transparent)]
    H1(#[from] H1Error),
}

impl PoolError {
    /// True when the server was never reached (nothing was sent).
    pub(crate) fn is_connect(&self) -> bool {
        matches!(self, Self::Connect(_) | Self::ConnectTimeout)
    }

    /// True when the failure was a timeout.
    pub(crate) fn is_timeout(&self) -> bool {
        match self {
            Self::ConnectTimeout => true,
            Self::Connect(e) => e.kind() == std::io::ErrorKind::TimedOut,
            Self::Http(e) => e.is_timeout(),
            Self::H1(e) => e.is_timeout(),
        }
    }
}

struct Idle<B> {
    tx: SendRequest<B>,
    since: Instant,
}

/// A raw connection between exchanges of [`crate::http1::client`]; `buf` is empty when it is idle.
struct Raw {
    io: TcpStream,
    buf: BytesMut,
    /// The request head being written, and where the response head's fields lie: kept with
    /// the connection so neither is allocated per request.
    out: Vec<u8>,
    fields: Vec<h1::Field>,
}

struct RawIdle {
    conn: Raw,
    since: Instant,
}

/// The idle connections of both kinds, oldest first.
struct Lists<B> {
    hyper: VecDeque<Idle<B>>,
    raw: VecDeque<RawIdle>,
}

impl<B> Lists<B> {
    fn len(&self) -> usize {
        self.hyper.len() + self.raw.len()
    }
}

/// Idle connections to one server, and how to open new ones.
pub(crate) struct H1Pool<B> {
    /// `host:port` to connect to (an IP literal after `--resolve`, else resolved when dialling).
    dial: String,
    dial_timeout: Option<Duration>,
    max_idle: usize,
    idle_timeout: Option<Duration>,
    idle: Mutex<Lists<B>>,
    /// Set once the task closing expired idle connections runs (started with the first one).
    sweeping: std::sync::atomic::AtomicBool,
}

impl<B> std::fmt::Debug for H1Pool<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H1Pool")
            .field("dial", &self.dial)
            .field("idle", &self.lock().len())
            .finish_non_exhaustive()
    }
}

/// True when an idle raw connection can no longer be used: the server closed it, reset it or
/// sent bytes nobody asked for.
fn raw_is_closed(c: &Raw) -> bool {
    let mut probe = [0u8; 1];
    !matches!(c.io.try_read(&mut probe), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
}

impl<B> H1Pool<B> {
    /// A pool dialling `dial` (`host:port`); `max_idle` 0 keeps no idle connection.
    pub(crate) fn new(
        dial: String,
        dial_timeout: Option<Duration>,
        max_idle: usize,
        idle_timeout: Option<Duration>,
    ) -> Arc<Self> {
        Arc::new(Self {
            dial,
            dial_timeout,
            max_idle,
            idle_timeout,
            idle: Mutex::new(Lists {
                hyper: VecDeque::new(),
                raw: VecDeque::new(),
            }),
            sweeping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Lists<B>> {
        // The lists stay consistent even if a holder panicked: every operation is one push/pop.
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Number of idle connections (after dropping closed and expired ones).
    #[cfg(test)]
    pub(crate) fn idle_count(&self) -> usize {
        let mut idle = self.lock();
        self.prune(&mut idle, Instant::now());
        idle.len()
    }

    /// Closes idle connections that expired or that the server closed.
    fn sweep(&self) {
        let mut idle = self.lock();
        self.prune(&mut idle, Instant::now());
    }

    fn prune(&self, idle: &mut Lists<B>, now: Instant) {
        self.expire(idle, now);
        idle.hyper.retain(|c| !c.tx.is_closed());
        idle.raw.retain(|c| !raw_is_closed(&c.conn));
    }

    /// Drops the connections idle for `idle_timeout` (the oldest are at the front).
    fn expire(&self, idle: &mut Lists<B>, now: Instant) {
        if let Some(t) = self.idle_timeout {
            while idle
                .hyper
                .front()
                .is_some_and(|c| now.duration_since(c.since) >= t)
            {
                idle.hyper.pop_front();
            }
            while idle
                .raw
                .front()
                .is_some_and(|c| now.duration_since(c.since) >= t)
            {
                idle.raw.pop_front();
            }
        }
    }

    /// The most recently used idle hyper connection that can take a request now.
    fn checkout(&self) -> Option<SendRequest<B>> {
        let mut idle = self.lock();
        let now = Instant::now();
        self.expire(&mut idle, now);
        // Newest first; a connection still finishing its previous exchange stays in the list.
        let mut i = idle.hyper.len();
        while i > 0 {
            i -= 1;
            if idle.hyper[i].tx.is_closed() {
                idle.hyper.remove(i);
            } else if idle.hyper[i].tx.is_ready() {
                return idle.hyper.remove(i).map(|c| c.tx);
            }
        }
        None
    }

    /// The most recently used idle raw connection on which the server sent nothing while it
    /// was idle: bytes there would be read as the next response (stray bytes of an earlier
    /// one, or a response meant for nobody), and an EOF means the server closed it. Asking
    /// costs nothing when tokio's readiness says there is nothing to read (the common case):
    /// it answers without a system call. A close that reaches the socket after this check is
    /// still caught: it yields no response byte and the request goes out on another
    /// connection (see [`H1Pool::send_bodiless`]).
    fn checkout_raw(&self) -> Option<Raw> {
        let mut idle = self.lock();
        self.expire(&mut idle, Instant::now());
        while let Some(c) = idle.raw.pop_back() {
            if !raw_is_closed(&c.conn) {
                return Some(c.conn);
            }
            crate::proxy::strict::Discard::IdleActivity.count();
        }
        None
    }

    /// Makes room for one more idle connection.
    fn make_room(&self, idle: &mut Lists<B>) {
        if idle.len() >= self.max_idle {
            let hyper_older = match (idle.hyper.front(), idle.raw.front()) {
                (Some(h), Some(r)) => h.since <= r.since,
                (h, _) => h.is_some(),
            };
            if hyper_older {
                idle.hyper.pop_front();
            } else {
                idle.raw.pop_front();
            }
        }
    }

    fn give_back(&self, tx: SendRequest<B>) {
        if self.max_idle == 0 || tx.is_closed() {
            return;
        }
        let mut idle = self.lock();
        self.make_room(&mut idle);
        idle.hyper.push_back(Idle {
            tx,
            since: Instant::now(),
        });
    }

    fn give_back_raw(&self, conn: Raw) {
        if !conn.buf.is_empty() {
            // Bytes past the end of the response its framing delimits: they would be read as
            // the next response, so the connection goes (RFC 9112 §9.3, §6.3).
            crate::proxy::strict::Discard::ExtraBytes.count();
            return;
        }
        if self.max_idle == 0 {
            return;
        }
        let mut idle = self.lock();
        self.make_room(&mut idle);
        idle.raw.push_back(RawIdle {
            conn,
            since: Instant::now(),
        });
    }

    async fn dial(&self) -> Result<TcpStream, PoolError> {
        let tcp = async {
            let s = TcpStream::connect(self.dial.as_str())
                .await
                .map_err(PoolError::Connect)?;
            let _ = s.set_nodelay(true);
            Ok::<_, PoolError>(s)
        };
        match self.dial_timeout {
            Some(d) => tokio::time::timeout(d, tcp)
                .await
                .map_err(|_| PoolError::ConnectTimeout)?,
            None => tcp.await,
        }
    }
}

impl<B> H1Pool<B>
where
    B: Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    /// Without traffic nobody checks the idle list out; this task closes expired connections
    /// then (it ends with the pool, which a plan reload replaces).
    fn start_sweeping(self: &Arc<Self>) {
        let Some(timeout) = self.idle_timeout else {
            return;
        };
        if self.max_idle == 0
            || self
                .sweeping
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let pool = Arc::downgrade(self);
        let every = (timeout / 2).max(Duration::from_secs(1));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                match pool.upgrade() {
                    Some(p) => p.sweep(),
                    None => return,
                }
            }
        });
    }

    async fn connect(&self) -> Result<SendRequest<B>, PoolError> {
        let tcp = self.dial().await?;
        let (tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            // Ends when the server closes, the exchange fails or every handle is dropped.
            let _ = conn.with_upgrades().await;
        });
        Ok(tx)
    }

    /// Sends `req` (origin-form URI, `Host` set) on an idle connection or a new one. The
    /// connection returns to the pool when the response body has been read to its end.
    pub(crate) async fn send(
        self: &Arc<Self>,
        mut req: Request<B>,
        interims: Option<&crate::interim::Relay>,
    ) -> Result<Response<UpstreamBody<B>>, PoolError> {
        if h1::eligible(req.method(), req.headers(), req.body().is_end_stream()) {
            let target = req.uri().path_and_query().map_or("/", |pq| pq.as_str());
            return self
                .send_bodiless(
                    h1::Bodiless {
                        method: req.method(),
                        target,
                        host: None,
                        headers: req.headers(),
                        extra: None,
                    },
                    interims,
                )
                .await;
        }
        loop {
            let (mut tx, reused) = match self.checkout() {
                Some(tx) => (tx, true),
                None => {
                    self.start_sweeping();
                    // Boxed: dialling is rare, and its state would enlarge every exchange.
                    (Box::pin(self.connect()).await?, false)
                }
            };
            if let Err(e) = tx.ready().await {
                if reused {
                    continue;
                }
                return Err(e.into());
            }
            let sink = crate::interim::Sink::attach(&mut req, interims);
            match tx.try_send_request(req).await {
                Ok(_) if sink.flooded() => {
                    return Err(H1Error::Invalid("more than 16 interim responses").into());
                }
                Ok(mut resp) => {
                    let upgrading = resp.status() == http::StatusCode::SWITCHING_PROTOCOLS;
                    // hyper frames such a response by its transfer coding and would reuse the
                    // connection; RFC 9112 §6.3 says the framing is in doubt: not reused, and
                    // the length is not passed on.
                    let ambiguous =
                        crate::http1::client::ambiguous_framing(resp.version(), resp.headers_mut());
                    let back = (!upgrading && !ambiguous).then(|| Return {
                        tx,
                        pool: Arc::downgrade(self),
                    });
                    return Ok(resp.map(|inner| UpstreamBody::new(inner, back)));
                }
                Err(mut e) => match e.take_message() {
                    // Never written: the idle connection was closed under us; use another.
                    Some(r) if reused => req = r,
                    _ => return Err(e.into_error().into()),
                },
            }
        }
    }

    /// The exchange of a request without a body by [`crate::http1::client`], in this task. The caller
    /// vouches that the request is [`h1::eligible`].
    /// Interim responses go to `interims` as they arrive.
    pub(crate) async fn send_bodiless(
        self: &Arc<Self>,
        req: h1::Bodiless<'_>,
        interims: Option<&crate::interim::Relay>,
    ) -> Result<Response<UpstreamBody<B>>, PoolError> {
        let head_request = req.method == http::Method::HEAD;
        loop {
            let (mut conn, reused) = match self.checkout_raw() {
                Some(c) => (c, true),
                None => {
                    self.start_sweeping();
                    let io = Box::pin(self.dial()).await?;
                    let buf = BytesMut::with_capacity(h1::READ_RESERVE);
                    (
                        Raw {
                            io,
                            buf,
                            out: Vec::with_capacity(1024),
                            fields: Vec::with_capacity(16),
                        },
                        false,
                    )
                }
            };
            conn.out.clear();
            h1::encode_request(&mut conn.out, &req);
            match exchange(&mut conn, head_request, interims).await {
                Ok(head) => return Ok(self.response(conn, head)),
                // A keep-alive connection the server closed while it was idle: use another.
                Err(e) if reused && e.nothing_received() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// The response of a raw exchange. A body already complete in the read buffer (the common
    /// case: small responses arrive with their head) frees the connection at once.
    fn response(self: &Arc<Self>, mut conn: Raw, head: h1::Head) -> Response<UpstreamBody<B>> {
        let mut dec = h1::Decoder::new(head.framing);
        // Most bodies are one piece (a length-delimited body, a single chunk): it is kept apart
        // so that case allocates no list.
        let mut first: Option<Bytes> = None;
        let mut more = VecDeque::new();
        let complete = loop {
            match dec.decode(&mut conn.buf) {
                Ok(Step::Data(d)) if first.is_none() => first = Some(d),
                Ok(Step::Data(d)) => more.push_back(d),
                Ok(Step::End) => break true,
                // An error shows again when the body is read (the connection goes then).
                Ok(Step::More) | Err(_) => break false,
            }
        };
        let body = if complete {
            if head.keep_alive {
                self.give_back_raw(conn);
            }
            let data = if more.is_empty() {
                first
            } else {
                let pieces = first.into_iter().chain(more);
                let mut all = BytesMut::new();
                for d in pieces {
                    all.extend_from_slice(&d);
                }
                Some(all.freeze())
            };
            Inner::Full(data)
        } else {
            if let Some(f) = first {
                more.push_front(f);
            }
            Inner::Raw(RawBody {
                conn: Some(conn),
                dec,
                ready: more,
                keep_alive: head.keep_alive,
                pool: Arc::downgrade(self),
            })
        };
        let mut resp = Response::new(UpstreamBody { inner: body });
        *resp.status_mut() = head.status;
        *resp.version_mut() = head.version;
        *resp.headers_mut() = head.headers;
        resp
    }
}

/// Writes the request head (`conn.out`) and reads the response head; interim 1xx responses
/// before it go to `interims` as they arrive (at most [`h1::MAX_INTERIM`]).
async fn exchange(
    conn: &mut Raw,
    head_request: bool,
    interims: Option<&crate::interim::Relay>,
) -> Result<h1::Head, H1Error> {
    conn.io.write_all(&conn.out).await.map_err(H1Error::Early)?;
    let mut received = false;
    let mut interim = 0;
    loop {
        if !conn.buf.is_empty() {
            received = true;
            if let Some(head) = h1::parse_head(&mut conn.buf, &mut conn.fields, head_request)? {
                if head.status == http::StatusCode::SWITCHING_PROTOCOLS {
                    return Err(H1Error::Invalid(
                        "101 Switching Protocols without an upgrade",
                    ));
                }
                if head.status.is_informational() {
                    if interim == h1::MAX_INTERIM {
                        return Err(H1Error::Invalid("more than 16 interim responses"));
                    }
                    interim += 1;
                    if let Some(relay) = interims {
                        relay.send(h1::Interim {
                            status: head.status,
                            headers: head.headers,
                        });
                    }
                    continue;
                }
                return Ok(head);
            }
        }
        conn.buf.reserve(h1::READ_RESERVE);
        match conn.io.read_buf(&mut conn.buf).await {
            Ok(0) if received => return Err(H1Error::Truncated),
            Ok(0) => return Err(H1Error::ClosedEarly),
            Ok(_) => {}
            Err(e) if received => return Err(H1Error::Io(e)),
            Err(e) => return Err(H1Error::Early(e)),
        }
    }
}

/// The body of a raw exchange still being read from its connection.
struct RawBody<B> {
    /// `None` once the body has ended (the connection went back to the pool or was closed).
    conn: Option<Raw>,
    dec: h1::Decoder,
    /// Decoded before the response was returned.
    ready: VecDeque<Bytes>,
    keep_alive: bool,
    pool: Weak<H1Pool<B>>,
}

impl<B> RawBody<B> {
    fn finish(&mut self) {
        if let Some(conn) = self.conn.take()
            && self.keep_alive
            && let Some(pool) = self.pool.upgrade()
        {
            pool.give_back_raw(conn);
        }
    }

    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(d) = self.ready.pop_front() {
            if self.ready.is_empty() && self.dec.is_done() {
                self.finish();
            }
            return Poll::Ready(Some(Ok(Frame::data(d))));
        }
        loop {
            let Some(conn) = self.conn.as_mut() else {
                return Poll::Ready(None);
            };
            let step = match self.dec.decode(&mut conn.buf) {
                Ok(Step::More) => {
                    conn.buf.reserve(h1::READ_RESERVE);
                    match ready!(tokio_util::io::poll_read_buf(
                        Pin::new(&mut conn.io),
                        cx,
                        &mut conn.buf
                    )) {
                        Ok(0) => self.dec.eof(),
                        Ok(_) => continue,
                        Err(e) => Err(H1Error::Io(e)),
                    }
                }
                other => other,
            };
            return match step {
                Ok(Step::Data(d)) => {
                    if self.dec.is_done() {
                        self.finish();
                    }
                    Poll::Ready(Some(Ok(Frame::data(d))))
                }
                Ok(Step::End) => {
                    self.finish();
                    Poll::Ready(None)
                }
                Ok(Step::More) => continue,
                Err(e) => {
                    // The rest of the connection's bytes cannot be trusted: close it.
                    self.conn = None;
                    Poll::Ready(Some(Err(Box::new(e))))
                }
            };
        }
    }
}

struct Return<B> {
    tx: SendRequest<B>,
    pool: Weak<H1Pool<B>>,
}

enum Inner<B> {
    /// From hyper's client; with a pooled connection, the handle to give back at the end.
    Hyper {
        body: Incoming,
        back: Option<Return<B>>,
    },
    /// From the own codec, read completely with the head (`None`: empty).
    Full(Option<Bytes>),
    /// From the own codec, still streaming.
    Raw(RawBody<B>),
    /// From an HTTP/2 server (the own client, [`crate::http2::client`]).
    H2(crate::http2::client::ResponseBody),
}

/// A response body from a server; with a pooled connection, hands the connection back to its
/// pool once the body has been read to its end (never while it is still streaming).
pub(crate) struct UpstreamBody<B> {
    inner: Inner<B>,
}

impl<B> std::fmt::Debug for UpstreamBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = match &self.inner {
            Inner::Hyper { back, .. } if back.is_some() => "pooled",
            Inner::Hyper { .. } => "unpooled",
            Inner::Full(_) => "complete",
            Inner::Raw(_) => "streaming",
            Inner::H2(_) => "http2",
        };
        f.debug_struct("UpstreamBody")
            .field("kind", &kind)
            .finish_non_exhaustive()
    }
}

impl<B> UpstreamBody<B> {
    fn new(inner: Incoming, back: Option<Return<B>>) -> Self {
        let mut body = Self {
            inner: Inner::Hyper { body: inner, back },
        };
        if body.is_end_stream() {
            body.release();
        }
        body
    }

    /// True when the response came from the own codec, which leaves the hop-by-hop fields out
    /// of the map (see [`h1::Head::headers`]): nothing is left to strip.
    pub(crate) fn hop_by_hop_removed(&self) -> bool {
        matches!(self.inner, Inner::Full(_) | Inner::Raw(_))
    }

    /// A body not tied to a pool (hyper-util's client, which pools by itself).
    pub(crate) fn unpooled(inner: Incoming) -> Self {
        Self {
            inner: Inner::Hyper {
                body: inner,
                back: None,
            },
        }
    }

    /// A body from an HTTP/2 server.
    pub(crate) fn h2(inner: crate::http2::client::ResponseBody) -> Self {
        Self {
            inner: Inner::H2(inner),
        }
    }

    fn release(&mut self) {
        if let Inner::Hyper { back, .. } = &mut self.inner
            && let Some(Return { tx, pool }) = back.take()
            && let Some(pool) = pool.upgrade()
        {
            pool.give_back(tx);
        }
    }
}

impl<B> Body for UpstreamBody<B> {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match &mut this.inner {
            Inner::Hyper { body, back } => {
                let polled = Pin::new(&mut *body).poll_frame(cx);
                match &polled {
                    Poll::Ready(None) => this.release(),
                    Poll::Ready(Some(Ok(_))) if body.is_end_stream() => this.release(),
                    // A failed body leaves the connection unusable: drop it.
                    Poll::Ready(Some(Err(_))) => *back = None,
                    _ => {}
                }
                polled.map_err(Into::into)
            }
            Inner::Full(data) => Poll::Ready(data.take().map(|d| Ok(Frame::data(d)))),
            Inner::Raw(raw) => raw.poll_frame(cx),
            Inner::H2(body) => Pin::new(body).poll_frame(cx).map_err(Into::into),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.inner {
            Inner::Hyper { body, .. } => body.is_end_stream(),
            Inner::Full(data) => data.is_none(),
            Inner::Raw(raw) => raw.ready.is_empty() && raw.dec.is_done(),
            Inner::H2(body) => body.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.inner {
            Inner::Hyper { body, .. } => body.size_hint(),
            Inner::Full(data) => SizeHint::with_exact(data.as_ref().map_or(0, |d| d.len() as u64)),
            Inner::Raw(raw) => match raw.dec.remaining() {
                Some(n) => {
                    SizeHint::with_exact(n + raw.ready.iter().map(|d| d.len() as u64).sum::<u64>())
                }
                None => SizeHint::default(),
            },
            Inner::H2(body) => body.size_hint(),
        }
    }
}

impl<B> Drop for UpstreamBody<B> {
    fn drop(&mut self) {
        // A body dropped before its end (client gone) takes its connection with it: the rest of
        // the response would otherwise be read as the next response. hyper answers a response
        // whose body is empty without polling it, hence the end-of-stream check here too.
        if let Inner::Hyper { body, .. } = &self.inner
            && body.is_end_stream()
        {
            self.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use http_body_util::{BodyExt, Empty};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    type Req = Empty<Bytes>;

    /// How the test server answers each request on a connection.
    #[derive(Clone, Copy)]
    enum Answer {
        /// `ok`, keep-alive.
        KeepAlive,
        /// `ok`, then the server closes the connection without saying so.
        CloseAfterOne,
        /// Announces 10 bytes, sends 5 and stalls.
        Stall,
        /// 1 MiB of `x`, keep-alive: more than one read.
        Big,
        /// `hello, world` in chunks, the last ones written after a pause, keep-alive.
        Chunked,
        /// Bytes that are not HTTP.
        Garbage,
        /// `ok` with a second, unasked-for response right behind it in the same write.
        Extra,
        /// `ok`, then 30 ms later an unasked-for response on the idle connection.
        LateStray,
        /// A 1xx flood: 17 interim responses, then `ok`.
        Interims(usize),
    }

    /// A server on 127.0.0.1:0 counting the connections it accepted.
    async fn server(answer: Answer) -> (String, Arc<AtomicUsize>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 1024];
                    loop {
                        let Ok(n) = s.read(&mut chunk).await else {
                            return;
                        };
                        if n == 0 {
                            return;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                            let is_head = buf.starts_with(b"HEAD ");
                            buf.drain(..end + 4);
                            let reply: Vec<u8> = match answer {
                                Answer::Stall => {
                                    b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n12345".to_vec()
                                }
                                Answer::Big => {
                                    let mut r =
                                        b"HTTP/1.1 200 OK\r\ncontent-length: 1048576\r\n\r\n"
                                            .to_vec();
                                    r.resize(r.len() + (1 << 20), b'x');
                                    r
                                }
                                Answer::Chunked => {
                                    let first = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n";
                                    if s.write_all(first).await.is_err() {
                                        return;
                                    }
                                    tokio::time::sleep(Duration::from_millis(20)).await;
                                    b"7\r\n, world\r\n0\r\n\r\n".to_vec()
                                }
                                Answer::Garbage => b"SSH-2.0-nope\r\n\r\n".to_vec(),
                                Answer::Extra => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nokHTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\npoison".to_vec(),
                                Answer::Interims(n) => {
                                    let mut r = b"HTTP/1.1 103 Early Hints\r\nlink: </a.css>\r\n\r\n".repeat(n);
                                    r.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                                    r
                                }
                                _ if is_head => {
                                    b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n".to_vec()
                                }
                                _ => b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok".to_vec(),
                            };
                            if s.write_all(&reply).await.is_err() {
                                return;
                            }
                            match answer {
                                Answer::CloseAfterOne => return,
                                Answer::Stall => {
                                    std::future::pending::<()>().await;
                                }
                                Answer::LateStray => {
                                    tokio::time::sleep(Duration::from_millis(30)).await;
                                    let _ = s
                                        .write_all(
                                            b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\npoison",
                                        )
                                        .await;
                                }
                                Answer::KeepAlive
                                | Answer::Big
                                | Answer::Chunked
                                | Answer::Garbage
                                | Answer::Extra
                                | Answer::Interims(_) => {}
                            }
                        }
                    }
                });
            }
        });
        (addr, accepted)
    }

    fn get() -> Request<Req> {
        Request::builder()
            .uri("/x")
            .header(http::header::HOST, "test")
            .body(Empty::new())
            .unwrap()
    }

    async fn read_to_end(resp: Response<UpstreamBody<Req>>) -> Bytes {
        resp.into_body().collect().await.unwrap().to_bytes()
    }

    #[tokio::test]
    async fn sequential_requests_reuse_one_connection() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..3 {
            let resp = pool.send(get(), None).await.unwrap();
            assert_eq!(read_to_end(resp).await, "ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle_count(), 1);
    }

    #[tokio::test]
    async fn a_large_body_streams_through_and_its_connection_is_reused() {
        let (addr, accepted) = server(Answer::Big).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..2 {
            let body = read_to_end(pool.send(get(), None).await.unwrap()).await;
            assert_eq!(body.len(), 1 << 20);
            assert!(body.iter().all(|&b| b == b'x'));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_chunked_body_streams_across_reads_and_its_connection_is_reused() {
        let (addr, accepted) = server(Answer::Chunked).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..2 {
            let resp = pool.send(get(), None).await.unwrap();
            assert!(!resp.body().is_end_stream(), "the rest is still on its way");
            assert_eq!(read_to_end(resp).await, "hello, world");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle_count(), 1);
    }

    #[tokio::test]
    async fn a_head_response_has_no_body_and_frees_its_connection() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let mut head = get();
        *head.method_mut() = http::Method::HEAD;
        let resp = pool.send(head, None).await.unwrap();
        assert_eq!(resp.headers()[http::header::CONTENT_LENGTH], "2");
        assert!(resp.body().is_end_stream());
        drop(resp);
        // The announced two bytes were never read as a body: the next exchange is intact.
        assert_eq!(
            read_to_end(pool.send(get(), None).await.unwrap()).await,
            "ok"
        );
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn requests_with_other_methods_go_through_hyper_and_are_pooled_too() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..2 {
            let mut post = get();
            *post.method_mut() = http::Method::DELETE;
            assert_eq!(
                read_to_end(pool.send(post, None).await.unwrap()).await,
                "ok"
            );
        }
        assert_eq!(
            read_to_end(pool.send(get(), None).await.unwrap()).await,
            "ok"
        );
        // One hyper connection (reused) and one raw connection.
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.idle_count(), 2);
    }

    #[tokio::test]
    async fn a_response_that_is_not_http_is_an_error_and_not_retried() {
        let (addr, accepted) = server(Answer::Garbage).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let err = pool.send(get(), None).await.unwrap_err();
        assert!(matches!(err, PoolError::H1(H1Error::Invalid(_))), "{err}");
        assert!(!err.is_connect());
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
        assert_eq!(pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_replaced_without_an_error() {
        let (addr, accepted) = server(Answer::CloseAfterOne).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..5 {
            let resp = pool.send(get(), None).await.unwrap();
            assert_eq!(read_to_end(resp).await, "ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_takes_its_connection_along() {
        let (addr, _) = server(Answer::Stall).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let resp = pool.send(get(), None).await.unwrap();
        drop(resp);
        assert_eq!(pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn at_most_max_idle_connections_are_kept() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 2, None);
        // Three exchanges at once need three connections; two of them stay.
        let (a, b, c) = tokio::join!(
            pool.send(get(), None),
            pool.send(get(), None),
            pool.send(get(), None)
        );
        for r in [a, b, c] {
            assert_eq!(read_to_end(r.unwrap()).await, "ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 3);
        assert_eq!(pool.idle_count(), 2);
    }

    #[tokio::test]
    async fn idle_connections_expire_after_the_idle_timeout() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, Some(Duration::from_secs(90)));
        read_to_end(pool.send(get(), None).await.unwrap()).await;
        tokio::time::pause();
        tokio::time::advance(Duration::from_secs(89)).await;
        assert_eq!(pool.idle_count(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(pool.idle_count(), 0);
        tokio::time::resume();
        read_to_end(pool.send(get(), None).await.unwrap()).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn without_traffic_expired_connections_are_closed_by_the_sweeper() {
        let (addr, _) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, Some(Duration::from_secs(90)));
        read_to_end(pool.send(get(), None).await.unwrap()).await;
        tokio::time::sleep(Duration::from_secs(91)).await;
        // Only the sweeper can have touched the list.
        assert_eq!(pool.lock().len(), 0);
    }

    #[tokio::test]
    async fn zero_max_idle_keeps_no_connection() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 0, None);
        for _ in 0..2 {
            read_to_end(pool.send(get(), None).await.unwrap()).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn bytes_beyond_the_response_are_never_read_as_the_next_response() {
        for answer in [Answer::Extra, Answer::LateStray] {
            let (addr, accepted) = server(answer).await;
            let pool = H1Pool::<Req>::new(addr, None, 10, None);
            for round in 1..=3 {
                assert_eq!(
                    read_to_end(pool.send(get(), None).await.unwrap()).await,
                    "ok"
                );
                // The late stray bytes arrive while the connection idles in the pool.
                tokio::time::sleep(Duration::from_millis(80)).await;
                assert_eq!(accepted.load(Ordering::SeqCst), round);
            }
            assert_eq!(pool.idle_count(), 0);
        }
    }

    #[tokio::test]
    async fn interim_responses_are_relayed_as_they_come_and_a_flood_is_refused() {
        let (addr, _) = server(Answer::Interims(2)).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let inbox = crate::interim::Inbox::new();
        let resp = pool.send(get(), Some(&inbox.relay())).await.unwrap();
        let first = inbox.try_next().unwrap();
        assert_eq!(first.status, 103);
        assert_eq!(first.headers["link"], "</a.css>");
        assert_eq!(inbox.try_next().unwrap().status, 103);
        assert!(inbox.try_next().is_none());
        assert_eq!(read_to_end(resp).await, "ok");
        let (addr, _) = server(Answer::Interims(h1::MAX_INTERIM + 1)).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let err = pool.send(get(), Some(&inbox.relay())).await.unwrap_err();
        assert!(matches!(err, PoolError::H1(H1Error::Invalid(_))), "{err}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let err = pool.send(get(), None).await.unwrap_err();
        assert!(err.is_connect(), "{err}");
        assert!(!err.is_timeout(), "{err}");
    }
}
