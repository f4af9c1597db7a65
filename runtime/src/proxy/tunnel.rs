//! Upgraded connections (`101 Switching Protocols`: WebSocket, any `Upgrade`), tunnelled both
//! ways until one of these ends them:
//!
//! - **the server ends its side** (FIN or error): the client side is shut down and closed at
//!   once, so neither socket lingers half-closed (FIN-WAIT-2 / CLOSE-WAIT) while the client never
//!   writes again; when the *client* ends its side first, the server gets the FIN and
//!   [`FIN_LINGER`] to finish;
//! - **the server turns down, or a reload removes it** (with `close_tunnels_after_ms` in its
//!   health check, the default): after that grace — unless it is back up by then — both sides are
//!   closed, so the client reconnects and lands on a healthy server. Traefik keeps such tunnels
//!   open for ever (traefik #9455); HAProxy's `on-marked-down shutdown-sessions` is the model;
//! - **shutdown**: after the entry points' `graceTimeOut`, instead of waiting for the tunnels.
//!
//! [`Tunnels`] outlives reloads (the runtime hands it on); the server state reaches it from the
//! state-change events of the current upstreams (`app.rs`). Each tunnel holds a small shared
//! [`Ctl`] the registry writes the server's state into and wakes; the grace timer is made (boxed)
//! only while a grace runs, so an idle tunnel's task is its two sockets, the pump's few counters
//! and little more.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::upstream::AdminState;

/// How long a server may take to finish after the client closed its side of a tunnel.
pub(crate) const FIN_LINGER: Duration = Duration::from_secs(10);

/// What a tunnel's server is doing, as far as tunnels care: its health and the operator's
/// state together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Signal {
    /// Marked down by a probe or passive detection.
    pub(crate) down: bool,
    /// No longer in the plan (reload).
    pub(crate) gone: bool,
    /// What the operator decided.
    pub(crate) admin: AdminState,
}

impl Default for Signal {
    fn default() -> Self {
        Self {
            down: false,
            gone: false,
            admin: AdminState::Ready,
        }
    }
}

/// Why a tunnel was closed by the proxy (a label of [`CLOSED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    ServerDown,
    ServerRemoved,
    Drain,
    Maintenance,
    Shutdown,
}

impl Closed {
    fn as_str(self) -> &'static str {
        match self {
            Self::ServerDown => "server_down",
            Self::ServerRemoved => "server_removed",
            Self::Drain => "drain",
            Self::Maintenance => "maintenance",
            Self::Shutdown => "shutdown",
        }
    }
}

/// Wait before a drained server's tunnels close when its health check sets no grace.
pub(crate) const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// When a tunnel under `signal` closes, and why: `None` while it may stay. `health_grace`: the
/// server's `close_tunnels_after_ms` (`None`: health does not close its tunnels).
fn verdict(signal: Signal, health_grace: Option<Duration>) -> Option<(Duration, Closed)> {
    match signal.admin {
        AdminState::Maintenance => return Some((Duration::ZERO, Closed::Maintenance)),
        AdminState::Drain => return Some((health_grace.unwrap_or(DRAIN_GRACE), Closed::Drain)),
        AdminState::Ready => {}
    }
    let grace = health_grace?;
    if signal.gone {
        Some((grace, Closed::ServerRemoved))
    } else if signal.down {
        Some((grace, Closed::ServerDown))
    } else {
        None
    }
}

/// Labels of [`CLOSED`].
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
pub(crate) struct ClosedLabels {
    service: String,
    reason: &'static str,
}

/// Tunnels the proxy closed, by service and reason (process-wide; registered by
/// [`crate::observe::metrics`]).
pub(crate) static CLOSED: LazyLock<Family<ClosedLabels, Counter>> = LazyLock::new(Family::default);
/// Tunnels open now.
pub(crate) static OPEN: LazyLock<Gauge> = LazyLock::new(Gauge::default);

type Key = (Arc<str>, Arc<str>);

/// The bits of [`Ctl::state`]: the server's [`Signal`] and the shutdown.
const DOWN: u8 = 1;
const GONE: u8 = 2;
const DRAIN: u8 = 4;
const MAINTENANCE: u8 = 8;
const SHUTDOWN: u8 = 16;

impl Signal {
    fn bits(self) -> u8 {
        let admin = match self.admin {
            AdminState::Ready => 0,
            AdminState::Drain => DRAIN,
            AdminState::Maintenance => MAINTENANCE,
        };
        (u8::from(self.down) * DOWN) | (u8::from(self.gone) * GONE) | admin
    }

    fn from_bits(bits: u8) -> Self {
        let admin = if bits & MAINTENANCE != 0 {
            AdminState::Maintenance
        } else if bits & DRAIN != 0 {
            AdminState::Drain
        } else {
            AdminState::Ready
        };
        Self {
            down: bits & DOWN != 0,
            gone: bits & GONE != 0,
            admin,
        }
    }
}

/// What one tunnel shares with the registry: the state it is under, and its task's waker.
/// A few dozen bytes, where a watch receiver's `changed` future and a timer held inline cost
/// each tunnel a kilobyte (10,000 idle WebSockets are the case to size for).
#[derive(Debug, Default)]
struct Ctl {
    state: AtomicU8,
    waker: atomic_waker::AtomicWaker,
}

impl Ctl {
    fn set(&self, bits: u8) {
        self.state.store(bits, Ordering::Release);
        self.waker.wake();
    }
}

/// One server's state and the tunnels that go to it.
#[derive(Debug, Default)]
struct Server {
    signal: Signal,
    tunnels: Vec<Weak<Ctl>>,
}

impl Server {
    /// Tells every tunnel of the server its state.
    fn broadcast(&mut self, extra: u8) {
        let bits = self.signal.bits() | extra;
        self.tunnels.retain(|t| match t.upgrade() {
            Some(ctl) => {
                ctl.set(bits);
                true
            }
            None => false,
        });
    }
}

/// Every tunnel of the process, by the server it goes to.
#[derive(Debug, Default)]
pub(crate) struct Tunnels {
    servers: Mutex<HashMap<Key, Server>>,
    /// Set once shutdown began (tunnels opened afterwards start under it).
    shutting_down: AtomicBool,
    open: AtomicUsize,
    idle: tokio::sync::Notify,
}

impl Tunnels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Server>> {
        self.servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn extra(&self) -> u8 {
        if self.shutting_down.load(Ordering::Acquire) {
            SHUTDOWN
        } else {
            0
        }
    }

    /// A server's health changed: `down` after a probe or passive failure, up again otherwise.
    pub(crate) fn server_changed(&self, service: &str, url: &str, down: bool) {
        self.update(service, url, |s| s.down = down);
    }

    /// An operator set a server's state.
    pub(crate) fn admin_changed(&self, service: &str, url: &str, admin: AdminState) {
        self.update(service, url, |s| s.admin = admin);
    }

    fn update(&self, service: &str, url: &str, change: impl Fn(&mut Signal)) {
        let extra = self.extra();
        let mut map = self.lock();
        let key: Key = (Arc::from(service), Arc::from(url));
        if let Some(server) = map.get_mut(&key) {
            change(&mut server.signal);
            server.broadcast(extra);
        }
        // Servers whose tunnels all ended are forgotten (their state is only kept for tunnels).
        map.retain(|_, s| s.tunnels.iter().any(|t| t.strong_count() > 0));
    }

    /// After a reload: tunnels to servers the new plan no longer has are told they are gone.
    pub(crate) fn keep_only(&self, keep: impl Fn(&str, &str) -> bool) {
        let extra = self.extra();
        let mut map = self.lock();
        map.retain(|(service, url), server| {
            if keep(service, url) {
                return server.tunnels.iter().any(|t| t.strong_count() > 0);
            }
            server.signal.gone = true;
            server.broadcast(extra);
            false
        });
    }

    /// Closes every tunnel once its entry point's `graceTimeOut` has passed (those that end
    /// earlier by themselves are not waited for longer); returns when none is left, or after
    /// `longest` (the longest grace) and a second more.
    pub(crate) async fn shutdown(&self, longest: Duration) {
        self.begin_shutdown();
        let grace = longest;
        let deadline = tokio::time::Instant::now() + grace + Duration::from_secs(1);
        while self.open.load(Ordering::Acquire) > 0 {
            let idle = self.idle.notified();
            if self.open.load(Ordering::Acquire) == 0 {
                break;
            }
            if tokio::time::timeout_at(deadline, idle).await.is_err() {
                break;
            }
        }
    }

    /// Tells every tunnel that shutdown began.
    fn begin_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        for server in self.lock().values_mut() {
            server.broadcast(SHUTDOWN);
        }
    }

    /// Registers a tunnel to the server (`service`, `url`).
    fn register(&self, service: &Arc<str>, url: &Arc<str>) -> Arc<Ctl> {
        let ctl = Arc::new(Ctl::default());
        let mut map = self.lock();
        let server = map.entry((service.clone(), url.clone())).or_default();
        if server.tunnels.len() == server.tunnels.capacity() {
            // Before the list grows, the ended tunnels leave it: it stays as long as the
            // tunnels that are open.
            server.tunnels.retain(|t| t.strong_count() > 0);
        }
        server.tunnels.push(Arc::downgrade(&ctl));
        // Read under the lock: a shutdown that began meanwhile has either seen this tunnel or
        // set the flag before.
        ctl.state
            .store(server.signal.bits() | self.extra(), Ordering::Release);
        ctl
    }

    /// `pump` watched over: it runs until it ends by itself (`None`) or the proxy closes it
    /// (why), by the state of the server (`service`, `url`) and the shutdown.
    fn watch_over<P: Future<Output = ()> + Unpin>(
        &self,
        (service, url): (&Arc<str>, &Arc<str>),
        pump: P,
        health_grace: Option<Duration>,
        shutdown_grace: Duration,
    ) -> Watched<P> {
        Watched {
            pump,
            ctl: self.register(service, url),
            health_grace,
            shutdown_grace,
            seen: None,
            timer: None,
        }
    }

    /// Tunnels the two upgraded halves in a task of its own. `server` names the server (service,
    /// URL); `health_grace` is how long it may be down before its tunnels close (`None`: its
    /// health does not close them; drain and maintenance always do). `shutdown_grace` is the
    /// entry point's `graceTimeOut`.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        client: hyper::upgrade::OnUpgrade,
        upstream: hyper::upgrade::OnUpgrade,
        (service, url): (Arc<str>, Arc<str>),
        health_grace: Option<Duration>,
        shutdown_grace: Duration,
        // inFlightReq slots and p2c / leasttime counts: held while the tunnel is open, as
        // Traefik's handler holds them.
        slots: impl Send + 'static,
    ) {
        let this = self.clone();
        this.open.fetch_add(1, Ordering::AcqRel);
        OPEN.inc();
        tokio::spawn(async move {
            let _open = OpenGuard(this.clone());
            let _slots = slots;
            let (Ok(c), Ok(u)) = (client.await, upstream.await) else {
                return;
            };
            // Plain TCP on a side (the common case): the pump works on the socket itself,
            // without hyper's boxed connection and its adapters in every read and write (less
            // memory per idle tunnel, fewer instructions per message).
            let (c, u) = (bare_client(c), bare_server(u));
            let closed = this
                .watch_over((&service, &url), pump(c, u), health_grace, shutdown_grace)
                .await;
            if let Some(reason) = closed {
                tracing::info!(
                    service = &*service,
                    server = &*url,
                    "tunnel closed by the proxy: {}",
                    reason.as_str()
                );
                CLOSED
                    .get_or_create(&ClosedLabels {
                        service: service.to_string(),
                        reason: reason.as_str(),
                    })
                    .inc();
            }
        });
    }
}

/// One side of a tunnel: the plain socket under hyper's upgraded connection (with the bytes
/// hyper read past the exchange first), or the upgraded connection itself (TLS, other I/O).
enum Side {
    Tcp(crate::http1::server::Rewind<tokio::net::TcpStream>),
    Other(TokioIo<hyper::upgrade::Upgraded>),
}

/// The client's side: under hyper, the own loop's `Rewind` over the socket, whose bytes hyper
/// has read already.
fn bare_client(upgraded: hyper::upgrade::Upgraded) -> Side {
    type Client = TokioIo<crate::http1::server::Rewind<tokio::net::TcpStream>>;
    match upgraded.downcast::<Client>() {
        Ok(parts) => {
            let (pre, tcp) = parts.io.into_inner().into_parts();
            let pre = if pre.is_empty() {
                parts.read_buf
            } else {
                [pre, parts.read_buf].concat().into()
            };
            Side::Tcp(crate::http1::server::Rewind::new(pre, tcp))
        }
        Err(upgraded) => Side::Other(TokioIo::new(upgraded)),
    }
}

/// The server's side: the pool's plain socket under hyper's client connection.
fn bare_server(upgraded: hyper::upgrade::Upgraded) -> Side {
    match upgraded.downcast::<TokioIo<tokio::net::TcpStream>>() {
        Ok(parts) => Side::Tcp(crate::http1::server::Rewind::new(
            parts.read_buf,
            parts.io.into_inner(),
        )),
        Err(upgraded) => Side::Other(TokioIo::new(upgraded)),
    }
}

impl AsyncRead for Side {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(io) => std::pin::Pin::new(io).poll_read(cx, buf),
            Self::Other(io) => std::pin::Pin::new(io).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Side {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Tcp(io) => std::pin::Pin::new(io).poll_write(cx, buf),
            Self::Other(io) => std::pin::Pin::new(io).poll_write(cx, buf),
        }
    }

    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(io) => std::pin::Pin::new(io).poll_flush(cx),
            Self::Other(io) => std::pin::Pin::new(io).poll_flush(cx),
        }
    }

    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Tcp(io) => std::pin::Pin::new(io).poll_shutdown(cx),
            Self::Other(io) => std::pin::Pin::new(io).poll_shutdown(cx),
        }
    }
}

/// Counts a tunnel task as open until it ends.
struct OpenGuard(Arc<Tunnels>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        OPEN.dec();
        if self.0.open.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

/// A tunnel's pump under the proxy's eye: its server's state ([`Ctl`]) and the timer of the
/// grace that state gives it, boxed and made only while a grace runs.
struct Watched<P> {
    pump: P,
    ctl: Arc<Ctl>,
    /// The server's `close_tunnels_after_ms` (`None`: its health does not close tunnels).
    health_grace: Option<Duration>,
    /// The entry point's `graceTimeOut`.
    shutdown_grace: Duration,
    /// The state `timer` was set for (`None`: not looked at yet).
    seen: Option<u8>,
    timer: Option<(std::pin::Pin<Box<tokio::time::Sleep>>, Closed)>,
}

impl<P: Future<Output = ()> + Unpin> Future for Watched<P> {
    type Output = Option<Closed>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Closed>> {
        use std::task::Poll;
        let this = self.get_mut();
        if std::pin::Pin::new(&mut this.pump).poll(cx).is_ready() {
            return Poll::Ready(None);
        }
        // The waker first, then the state: a change after the load wakes the task again.
        this.ctl.waker.register(cx.waker());
        let bits = this.ctl.state.load(Ordering::Acquire);
        if this.seen != Some(bits) {
            this.seen = Some(bits);
            let next = if bits & SHUTDOWN != 0 {
                Some((this.shutdown_grace, Closed::Shutdown))
            } else {
                verdict(Signal::from_bits(bits), this.health_grace)
            };
            match next {
                // The same reason keeps its running grace (a repeated event does not restart it).
                Some((_, why)) if this.timer.as_ref().is_some_and(|(_, w)| *w == why) => {}
                Some((grace, why)) => {
                    this.timer = Some((Box::pin(tokio::time::sleep(grace)), why));
                }
                None => this.timer = None,
            }
        }
        match this.timer.as_mut() {
            Some((sleep, why)) => sleep.as_mut().poll(cx).map(|()| Some(*why)),
            None => Poll::Pending,
        }
    }
}

/// Copies both ways. The server ending its side ends the tunnel (the client is shut down and
/// closed with it); the client ending its side sends the server a FIN and gives it
/// [`FIN_LINGER`] to finish.
///
/// An idle tunnel holds no buffer: each read goes into a buffer on the stack of `poll` (never
/// part of the future), and only bytes a slow peer could not take yet are kept, on the heap,
/// until written — so 10,000 idle WebSockets cost their sockets and little else, where
/// `tokio::io::copy` keeps two 8 KiB buffers per tunnel for its whole life.
fn pump<C, S>(client: C, server: S) -> Pump<C, S>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    Pump {
        client,
        server,
        up: Half::default(),
        down: Half::default(),
        linger: None,
    }
}

/// One direction of a tunnel.
#[derive(Debug, Default)]
struct Half {
    /// Bytes read but not written yet (only while the writer is slow).
    pending: Vec<u8>,
    written: usize,
    /// Written since the last flush.
    unflushed: bool,
    /// The reader ended; the writer is being shut down.
    eof: bool,
}

/// Reads per poll and direction before yielding, so one busy direction cannot starve the other.
const READS_PER_POLL: usize = 16;
/// The stack buffer of one read.
const READ_CHUNK: usize = 16 * 1024;

impl Half {
    /// Moves bytes from `r` to `w` until `r` would block (`Pending`) or ended and `w` is shut
    /// down (`Ready(Ok)`); any error ends the direction.
    fn poll_copy<R, W>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        r: &mut R,
        w: &mut W,
    ) -> std::task::Poll<std::io::Result<()>>
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        use std::pin::Pin;
        use std::task::Poll;
        for _ in 0..READS_PER_POLL {
            while self.written < self.pending.len() {
                match Pin::new(&mut *w).poll_write(cx, &self.pending[self.written..]) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                    }
                    Poll::Ready(Ok(n)) => {
                        self.written += n;
                        self.unflushed = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                }
            }
            if !self.pending.is_empty() {
                // Caught up: the memory goes back.
                self.pending = Vec::new();
                self.written = 0;
            }
            if self.eof {
                if self.unflushed {
                    std::task::ready!(Pin::new(&mut *w).poll_flush(cx))?;
                    self.unflushed = false;
                }
                return Pin::new(&mut *w).poll_shutdown(cx);
            }
            let mut stack = [0u8; READ_CHUNK];
            let mut buf = tokio::io::ReadBuf::new(&mut stack);
            match Pin::new(&mut *r).poll_read(cx, &mut buf) {
                Poll::Pending => {
                    if self.unflushed {
                        std::task::ready!(Pin::new(&mut *w).poll_flush(cx))?;
                        self.unflushed = false;
                    }
                    return Poll::Pending;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {}
            }
            let n = buf.filled().len();
            if n == 0 {
                self.eof = true;
                continue;
            }
            let mut off = 0;
            while off < n {
                match Pin::new(&mut *w).poll_write(cx, &stack[off..n]) {
                    Poll::Ready(Ok(0)) => {
                        return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                    }
                    Poll::Ready(Ok(m)) => {
                        off += m;
                        self.unflushed = true;
                    }
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => {
                        self.pending = stack[off..n].to_vec();
                        return Poll::Pending;
                    }
                }
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Both directions of a tunnel and, once the client closed its side, the server's deadline.
struct Pump<C, S> {
    client: C,
    server: S,
    /// Client → server.
    up: Half,
    /// Server → client.
    down: Half,
    /// Set when `up` ended: how long `down` may still run.
    linger: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl<C, S> Future for Pump<C, S>
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        use std::task::Poll;
        let this = self.get_mut();
        // The server ended its side (or failed): the tunnel is over.
        if this
            .down
            .poll_copy(cx, &mut this.server, &mut this.client)
            .is_ready()
        {
            return Poll::Ready(());
        }
        if this.linger.is_none() {
            match this.up.poll_copy(cx, &mut this.client, &mut this.server) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(_)) => return Poll::Ready(()),
                Poll::Ready(Ok(())) => {
                    this.linger = Some(Box::pin(tokio::time::sleep(FIN_LINGER)));
                }
            }
        }
        match this.linger.as_mut() {
            Some(sleep) => sleep.as_mut().poll(cx),
            None => Poll::Pending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _, duplex};

    #[tokio::test]
    async fn a_server_fin_closes_the_client_side_at_once() {
        let (client_app, client_proxy) = duplex(1024);
        let (server_proxy, server_app) = duplex(1024);
        let task = tokio::spawn(pump(client_proxy, server_proxy));
        let (mut ca, mut sa) = (client_app, server_app);
        ca.write_all(b"ping").await.unwrap();
        let mut buf = [0u8; 4];
        sa.read_exact(&mut buf).await.unwrap();
        assert_eq!(&buf, b"ping");
        sa.write_all(b"pong").await.unwrap();
        sa.shutdown().await.unwrap();
        drop(sa);
        let mut got = Vec::new();
        // The client sees the data, then EOF — without ever writing or closing itself.
        tokio::time::timeout(Duration::from_secs(2), ca.read_to_end(&mut got))
            .await
            .expect("the client side is closed promptly")
            .unwrap();
        assert_eq!(got, b"pong");
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .expect("the tunnel ended")
            .unwrap();
    }

    #[tokio::test]
    async fn bytes_cross_intact_both_ways_through_slow_peers() {
        // 64-byte pipes: nearly every write is partial or would block, so the pending path runs.
        let (ca, client_proxy) = duplex(64);
        let (server_proxy, sa) = duplex(64);
        let task = tokio::spawn(pump(client_proxy, server_proxy));
        let up: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
        let down: Vec<u8> = (0..150_000u32).map(|i| (i % 241) as u8).collect();
        let (up2, down2) = (up.clone(), down.clone());
        let server = tokio::spawn(async move {
            let mut got = vec![0u8; up2.len()];
            let (mut r, mut w) = tokio::io::split(sa);
            // Written while reading; the server closes only once it has everything (its FIN
            // ends the tunnel).
            let writer = async { w.write_all(&down2).await.unwrap() };
            let reader = async { r.read_exact(&mut got).await.unwrap() };
            tokio::join!(writer, reader);
            w.shutdown().await.unwrap();
            got
        });
        let (mut r, mut w) = tokio::io::split(ca);
        let writer = async { w.write_all(&up).await.unwrap() };
        let mut got = Vec::new();
        let reader = async { r.read_to_end(&mut got).await.unwrap() };
        tokio::time::timeout(Duration::from_secs(10), async {
            tokio::join!(writer, reader)
        })
        .await
        .unwrap();
        assert_eq!(got, down, "server → client intact, then closed");
        assert_eq!(server.await.unwrap(), up, "client → server intact");
        tokio::time::timeout(Duration::from_secs(2), task)
            .await
            .unwrap()
            .unwrap();
    }

    #[tokio::test(start_paused = true)]
    async fn a_client_fin_gives_the_server_a_bounded_time_to_finish() {
        let (mut ca, client_proxy) = duplex(1024);
        let (server_proxy, mut sa) = duplex(1024);
        let task = tokio::spawn(pump(client_proxy, server_proxy));
        ca.shutdown().await.unwrap();
        let mut buf = Vec::new();
        sa.read_to_end(&mut buf).await.unwrap(); // the server got the FIN
        assert!(!task.is_finished());
        tokio::time::sleep(FIN_LINGER + Duration::from_millis(10)).await;
        tokio::task::yield_now().await;
        assert!(
            task.is_finished(),
            "a server that never closes is cut after the linger"
        );
    }

    /// A tunnel to server A of `central` that never ends by itself, watched over.
    fn watched(tunnels: &Tunnels, grace: Option<Duration>) -> Watched<std::future::Pending<()>> {
        let (s, u): (Arc<str>, Arc<str>) = (Arc::from("central"), Arc::from(A));
        tunnels.watch_over((&s, &u), std::future::pending(), grace, TEN)
    }

    const A: &str = "http://a:5000";
    const TEN: Duration = Duration::from_secs(10);

    #[tokio::test(start_paused = true)]
    async fn a_down_server_loses_its_tunnels_after_the_grace_unless_it_comes_back() {
        let tunnels = Tunnels::default();
        let grace = Some(Duration::from_millis(500));
        let run = |grace| tokio::spawn(watched(&tunnels, grace));
        // Down then back up within the grace: kept.
        let t = run(grace);
        tokio::task::yield_now().await;
        tunnels.server_changed("central", A, true);
        tokio::time::sleep(Duration::from_millis(300)).await;
        tunnels.server_changed("central", A, false);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!t.is_finished(), "back up within the grace: kept");
        // Down for good: closed once the grace is over, not before.
        tunnels.server_changed("central", A, true);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!t.is_finished());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::ServerDown));
        // Another server's state changes nothing; a reload removing the server closes.
        tunnels.server_changed("central", A, false);
        let t = run(grace);
        tokio::task::yield_now().await;
        tunnels.server_changed("central", "http://b:5000", true);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!t.is_finished());
        tunnels.keep_only(|_, url| url != A);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::ServerRemoved));
        // Without a health grace (opt-out), a down server keeps its tunnels; shutdown still ends
        // them, after the entry point's grace.
        let t = run(None);
        tokio::task::yield_now().await;
        tunnels.server_changed("central", A, true);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!t.is_finished());
        tunnels.begin_shutdown();
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(!t.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::Shutdown));
    }

    #[tokio::test(start_paused = true)]
    async fn drain_closes_after_the_grace_maintenance_at_once_ready_keeps() {
        let tunnels = Tunnels::default();
        let run = |grace| tokio::spawn(watched(&tunnels, grace));
        // Drain applies without a health check too, after the default grace; ready in time keeps.
        let t = run(None);
        tokio::task::yield_now().await;
        tunnels.admin_changed("central", A, AdminState::Drain);
        tokio::time::sleep(Duration::from_millis(200)).await;
        tunnels.admin_changed("central", A, AdminState::Ready);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!t.is_finished());
        tunnels.admin_changed("central", A, AdminState::Drain);
        tokio::time::sleep(DRAIN_GRACE + Duration::from_millis(10)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::Drain));
        // Maintenance during a drain's grace closes at once.
        let t = run(Some(Duration::from_secs(30)));
        tokio::task::yield_now().await;
        tunnels.admin_changed("central", A, AdminState::Drain);
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(
            !t.is_finished(),
            "the drain waits for the server's own 30 s grace"
        );
        tunnels.admin_changed("central", A, AdminState::Maintenance);
        tokio::time::sleep(Duration::from_millis(1)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::Maintenance));
    }

    #[tokio::test(start_paused = true)]
    async fn tunnels_opened_during_shutdown_get_the_grace_and_repeated_events_do_not_restart_one() {
        let tunnels = Tunnels::default();
        let grace = Some(Duration::from_secs(2));
        let t = tokio::spawn(watched(&tunnels, grace));
        tokio::task::yield_now().await;
        tunnels.server_changed("central", A, true);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // The same state again (a second probe failure): the grace runs on, it does not restart.
        tunnels.server_changed("central", A, true);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::ServerDown));
        tunnels.server_changed("central", A, false);
        tunnels.begin_shutdown();
        let late = tokio::spawn(watched(&tunnels, grace));
        tokio::time::sleep(TEN - Duration::from_millis(100)).await;
        assert!(!late.is_finished());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(late.await.unwrap(), Some(Closed::Shutdown));
    }

    #[test]
    fn a_signal_survives_its_bits() {
        for admin in [
            AdminState::Ready,
            AdminState::Drain,
            AdminState::Maintenance,
        ] {
            for (down, gone) in [(false, false), (true, false), (false, true), (true, true)] {
                let s = Signal { down, gone, admin };
                assert_eq!(Signal::from_bits(s.bits()), s);
                assert_eq!(Signal::from_bits(s.bits() | SHUTDOWN), s);
            }
        }
    }

    /// What an idle tunnel's task holds beside its sockets: 10,000 of them are the case to size
    /// for (issue 16: less memory per tunnel than HAProxy's 4.7 kB). The watcher holds its state
    /// and a boxed timer, not futures of channels and timers inline (1.4 kB before).
    #[test]
    fn a_watched_tunnel_stays_small() {
        let size = size_of::<Watched<Pump<Side, Side>>>();
        assert!(size <= 512, "{size} bytes");
    }
}
