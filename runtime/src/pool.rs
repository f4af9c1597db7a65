//! The keep-alive pool of HTTP/1.1 connections to one `http://` server.
//!
//! hyper-util's pooled client costs every request a pool checkout future, a keyed map lookup
//! behind a lock and oneshot channels; on the proxy's hot path that was a large share of the
//! per-request CPU. This pool keeps idle `SendRequest` handles of hyper's `conn::http1` in a
//! LIFO list (the most recently used connection is the warmest) and hands a connection back when
//! the response body has been read to its end, so a connection serves one exchange at a time.
//!
//! - A connection found closed, or one whose request hyper reports as never sent (the server
//!   closed it while idle), is dropped and the request goes out on another one: like hyper-util's
//!   retry of canceled requests, without ever sending a request twice.
//! - At most `max_idle` connections are kept (Go's `MaxIdleConnsPerHost`); the oldest goes first.
//!   Idle ones older than `idle_timeout` are closed when the pool is next used or swept.
//! - Upgraded connections (WebSocket) leave the pool for good.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::time::Instant;

/// Why a request could not be exchanged with the server.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// No TCP connection could be made.
    #[error("connect error: {0}")]
    Connect(#[source] std::io::Error),
    /// Connecting took longer than the transport's `dialTimeout`.
    #[error("connect timed out (dialTimeout)")]
    ConnectTimeout,
    /// The HTTP/1.1 handshake or exchange failed (reset, closed before a response, bad response).
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

impl PoolError {
    /// True when the server was never reached (nothing was sent).
    pub fn is_connect(&self) -> bool {
        matches!(self, PoolError::Connect(_) | PoolError::ConnectTimeout)
    }

    /// True when the failure was a timeout.
    pub fn is_timeout(&self) -> bool {
        match self {
            PoolError::ConnectTimeout => true,
            PoolError::Connect(e) => e.kind() == std::io::ErrorKind::TimedOut,
            PoolError::Http(e) => e.is_timeout(),
        }
    }
}

struct Idle<B> {
    tx: SendRequest<B>,
    since: Instant,
}

/// Idle connections to one server, and how to open new ones.
pub struct H1Pool<B> {
    /// `host:port` to connect to (an IP literal after `--resolve`, else resolved when dialling).
    dial: String,
    dial_timeout: Option<Duration>,
    max_idle: usize,
    idle_timeout: Option<Duration>,
    idle: Mutex<VecDeque<Idle<B>>>,
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

impl<B> H1Pool<B> {
    /// A pool dialling `dial` (`host:port`); `max_idle` 0 keeps no idle connection.
    pub fn new(
        dial: String,
        dial_timeout: Option<Duration>,
        max_idle: usize,
        idle_timeout: Option<Duration>,
    ) -> Arc<Self> {
        Arc::new(H1Pool {
            dial,
            dial_timeout,
            max_idle,
            idle_timeout,
            idle: Mutex::new(VecDeque::new()),
            sweeping: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<Idle<B>>> {
        // The list stays consistent even if a holder panicked: every operation is one push/pop.
        self.idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Number of idle connections (after dropping closed and expired ones).
    pub fn idle_count(&self) -> usize {
        let mut idle = self.lock();
        self.prune(&mut idle, Instant::now());
        idle.len()
    }

    /// Closes idle connections that expired or that the server closed.
    fn sweep(&self) {
        let mut idle = self.lock();
        self.prune(&mut idle, Instant::now());
    }

    fn prune(&self, idle: &mut VecDeque<Idle<B>>, now: Instant) {
        self.expire(idle, now);
        idle.retain(|c| !c.tx.is_closed());
    }

    /// Drops the connections idle for `idle_timeout` (the oldest are at the front).
    fn expire(&self, idle: &mut VecDeque<Idle<B>>, now: Instant) {
        if let Some(t) = self.idle_timeout {
            while idle
                .front()
                .is_some_and(|c| now.duration_since(c.since) >= t)
            {
                idle.pop_front();
            }
        }
    }

    /// The most recently used idle connection that can take a request now.
    fn checkout(&self) -> Option<SendRequest<B>> {
        let mut idle = self.lock();
        let now = Instant::now();
        self.expire(&mut idle, now);
        // Newest first; a connection still finishing its previous exchange stays in the list.
        let mut i = idle.len();
        while i > 0 {
            i -= 1;
            if idle[i].tx.is_closed() {
                idle.remove(i);
            } else if idle[i].tx.is_ready() {
                return idle.remove(i).map(|c| c.tx);
            }
        }
        None
    }

    fn give_back(&self, tx: SendRequest<B>) {
        if self.max_idle == 0 || tx.is_closed() {
            return;
        }
        let mut idle = self.lock();
        if idle.len() >= self.max_idle {
            idle.pop_front();
        }
        idle.push_back(Idle {
            tx,
            since: Instant::now(),
        });
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
        let tcp = async {
            let s = tokio::net::TcpStream::connect(self.dial.as_str())
                .await
                .map_err(PoolError::Connect)?;
            let _ = s.set_nodelay(true);
            Ok::<_, PoolError>(s)
        };
        let tcp = match self.dial_timeout {
            Some(d) => tokio::time::timeout(d, tcp)
                .await
                .map_err(|_| PoolError::ConnectTimeout)??,
            None => tcp.await?,
        };
        let (tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp)).await?;
        tokio::spawn(async move {
            // Ends when the server closes, the exchange fails or every handle is dropped.
            let _ = conn.with_upgrades().await;
        });
        Ok(tx)
    }

    /// Sends `req` (origin-form URI, `Host` set) on an idle connection or a new one. The
    /// connection returns to the pool when the response body has been read to its end.
    pub async fn send(
        self: &Arc<Self>,
        mut req: Request<B>,
    ) -> Result<Response<UpstreamBody<B>>, PoolError> {
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
            match tx.try_send_request(req).await {
                Ok(resp) => {
                    let upgrading = resp.status() == http::StatusCode::SWITCHING_PROTOCOLS;
                    let back = (!upgrading).then(|| Return {
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
}

struct Return<B> {
    tx: SendRequest<B>,
    pool: Weak<H1Pool<B>>,
}

/// A response body from a server; with a pooled connection, hands the connection back to its
/// pool once the body has been read to its end (never while it is still streaming).
pub struct UpstreamBody<B> {
    inner: Incoming,
    back: Option<Return<B>>,
}

impl<B> std::fmt::Debug for UpstreamBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamBody")
            .field("pooled", &self.back.is_some())
            .finish_non_exhaustive()
    }
}

impl<B> UpstreamBody<B> {
    fn new(inner: Incoming, back: Option<Return<B>>) -> Self {
        let mut body = UpstreamBody { inner, back };
        if body.inner.is_end_stream() {
            body.release();
        }
        body
    }

    /// A body not tied to a pool (hyper-util's client, which pools by itself).
    pub fn unpooled(inner: Incoming) -> Self {
        UpstreamBody { inner, back: None }
    }

    fn release(&mut self) {
        if let Some(Return { tx, pool }) = self.back.take()
            && let Some(pool) = pool.upgrade()
        {
            pool.give_back(tx);
        }
    }
}

impl<B> Body for UpstreamBody<B> {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(None) => this.release(),
            Poll::Ready(Some(Ok(_))) if this.inner.is_end_stream() => this.release(),
            // A failed body leaves the connection unusable: drop it.
            Poll::Ready(Some(Err(_))) => this.back = None,
            _ => {}
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

impl<B> Drop for UpstreamBody<B> {
    fn drop(&mut self) {
        // A body dropped before its end (client gone) takes its connection with it: the rest of
        // the response would otherwise be read as the next response. hyper answers a response
        // whose body is empty without polling it, hence the end-of-stream check here too.
        if self.inner.is_end_stream() {
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
                                Answer::KeepAlive | Answer::Big => {}
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
            let resp = pool.send(get()).await.unwrap();
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
            let body = read_to_end(pool.send(get()).await.unwrap()).await;
            assert_eq!(body.len(), 1 << 20);
            assert!(body.iter().all(|&b| b == b'x'));
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_while_idle_is_replaced_without_an_error() {
        let (addr, accepted) = server(Answer::CloseAfterOne).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        for _ in 0..5 {
            let resp = pool.send(get()).await.unwrap();
            assert_eq!(read_to_end(resp).await, "ok");
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 5);
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_takes_its_connection_along() {
        let (addr, _) = server(Answer::Stall).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let resp = pool.send(get()).await.unwrap();
        drop(resp);
        assert_eq!(pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn at_most_max_idle_connections_are_kept() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 2, None);
        // Three exchanges at once need three connections; two of them stay.
        let (a, b, c) = tokio::join!(pool.send(get()), pool.send(get()), pool.send(get()));
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
        read_to_end(pool.send(get()).await.unwrap()).await;
        tokio::time::pause();
        tokio::time::advance(Duration::from_secs(89)).await;
        assert_eq!(pool.idle_count(), 1);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(pool.idle_count(), 0);
        tokio::time::resume();
        read_to_end(pool.send(get()).await.unwrap()).await;
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn without_traffic_expired_connections_are_closed_by_the_sweeper() {
        let (addr, _) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 10, Some(Duration::from_secs(90)));
        read_to_end(pool.send(get()).await.unwrap()).await;
        tokio::time::sleep(Duration::from_secs(91)).await;
        // Only the sweeper can have touched the list.
        assert_eq!(pool.lock().len(), 0);
    }

    #[tokio::test]
    async fn zero_max_idle_keeps_no_connection() {
        let (addr, accepted) = server(Answer::KeepAlive).await;
        let pool = H1Pool::<Req>::new(addr, None, 0, None);
        for _ in 0..2 {
            read_to_end(pool.send(get()).await.unwrap()).await;
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
        assert_eq!(pool.idle_count(), 0);
    }

    #[tokio::test]
    async fn a_refused_connection_is_a_connect_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap().to_string();
        drop(l);
        let pool = H1Pool::<Req>::new(addr, None, 10, None);
        let err = pool.send(get()).await.unwrap_err();
        assert!(err.is_connect(), "{err}");
        assert!(!err.is_timeout(), "{err}");
    }
}
