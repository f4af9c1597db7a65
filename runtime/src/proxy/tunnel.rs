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
//! state-change events of the current upstreams (`app.rs`).

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::watch;

/// How long a server may take to finish after the client closed its side of a tunnel.
pub(crate) const FIN_LINGER: Duration = Duration::from_secs(10);

/// What a tunnel's server is doing, as far as tunnels care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Serving (or never known otherwise).
    Up,
    /// Marked down by a probe or passive detection.
    Down,
    /// No longer in the plan (reload).
    Gone,
}

/// Why a tunnel was closed by the proxy (a label of [`CLOSED`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Closed {
    ServerDown,
    ServerRemoved,
    Shutdown,
}

impl Closed {
    fn as_str(self) -> &'static str {
        match self {
            Self::ServerDown => "server_down",
            Self::ServerRemoved => "server_removed",
            Self::Shutdown => "shutdown",
        }
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

/// Every tunnel of the process, by the server it goes to.
#[derive(Debug)]
pub(crate) struct Tunnels {
    servers: Mutex<HashMap<Key, watch::Sender<Signal>>>,
    /// Set once shutdown began.
    shutdown: watch::Sender<bool>,
    open: AtomicUsize,
    idle: tokio::sync::Notify,
}

impl Default for Tunnels {
    fn default() -> Self {
        Self {
            servers: Mutex::new(HashMap::new()),
            shutdown: watch::channel(false).0,
            open: AtomicUsize::new(0),
            idle: tokio::sync::Notify::new(),
        }
    }
}

impl Tunnels {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, watch::Sender<Signal>>> {
        self.servers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A server's state changed: `down` after a probe or passive failure, up again otherwise.
    pub(crate) fn server_changed(&self, service: &str, url: &str, down: bool) {
        let mut map = self.lock();
        map.retain(|_, tx| tx.receiver_count() > 0);
        let key: Key = (Arc::from(service), Arc::from(url));
        if let Some(tx) = map.get(&key) {
            let _ = tx.send(if down { Signal::Down } else { Signal::Up });
        }
    }

    /// After a reload: tunnels to servers the new plan no longer has are told they are gone.
    pub(crate) fn keep_only(&self, keep: impl Fn(&str, &str) -> bool) {
        let mut map = self.lock();
        map.retain(|(service, url), tx| {
            if tx.receiver_count() == 0 {
                return false;
            }
            if keep(service, url) {
                return true;
            }
            let _ = tx.send(Signal::Gone);
            false
        });
    }

    /// Closes every tunnel once its entry point's `graceTimeOut` has passed (those that end
    /// earlier by themselves are not waited for longer); returns when none is left, or after
    /// `longest` (the longest grace) and a second more.
    pub(crate) async fn shutdown(&self, longest: Duration) {
        let _ = self.shutdown.send(true);
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

    fn watch(&self, service: &Arc<str>, url: &Arc<str>) -> watch::Receiver<Signal> {
        let mut map = self.lock();
        let key: Key = (service.clone(), url.clone());
        map.entry(key)
            .or_insert_with(|| watch::channel(Signal::Up).0)
            .subscribe()
    }

    /// Tunnels the two upgraded halves in a task of its own. `server` names the server (service,
    /// URL) and the grace after which its tunnels close once it is down; `None`: the tunnel
    /// ignores the server's state. `shutdown_grace` is the entry point's `graceTimeOut`.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        client: hyper::upgrade::OnUpgrade,
        upstream: hyper::upgrade::OnUpgrade,
        server: Option<(Arc<str>, Arc<str>, Duration)>,
        shutdown_grace: Duration,
    ) {
        let follow = server.map(|(service, url, grace)| {
            let rx = self.watch(&service, &url);
            (service, rx, grace)
        });
        let shutdown = self.shutdown.subscribe();
        let this = self.clone();
        this.open.fetch_add(1, Ordering::AcqRel);
        OPEN.inc();
        tokio::spawn(async move {
            let _open = OpenGuard(this.clone());
            let (Ok(c), Ok(u)) = (client.await, upstream.await) else {
                return;
            };
            let pump = pump(TokioIo::new(c), TokioIo::new(u));
            let service = follow.as_ref().map(|(s, _, _)| s.clone());
            if let Some(reason) = watch_over(pump, follow, shutdown, shutdown_grace).await {
                tracing::info!(
                    service = service.as_deref().unwrap_or(""),
                    "tunnel closed by the proxy: {}",
                    reason.as_str()
                );
                CLOSED
                    .get_or_create(&ClosedLabels {
                        service: service.as_deref().unwrap_or("").to_owned(),
                        reason: reason.as_str(),
                    })
                    .inc();
            }
        });
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

/// Runs `pump` until it ends by itself (`None`) or the proxy closes it (why).
async fn watch_over(
    pump: impl Future<Output = ()>,
    mut follow: Option<(Arc<str>, watch::Receiver<Signal>, Duration)>,
    mut shutdown: watch::Receiver<bool>,
    shutdown_grace: Duration,
) -> Option<Closed> {
    tokio::pin!(pump);
    loop {
        let bad = async {
            match follow.as_mut() {
                Some((_, rx, grace)) => {
                    let got = rx.wait_for(|s| *s != Signal::Up).await.map(|s| *s);
                    match got {
                        Ok(s) => (s, *grace),
                        Err(_) => std::future::pending().await,
                    }
                }
                None => std::future::pending().await,
            }
        };
        let stop = async {
            let got = shutdown.wait_for(|s| *s).await.is_ok();
            if !got {
                std::future::pending::<()>().await;
            }
        };
        tokio::select! {
            () = &mut pump => return None,
            () = stop => {
                return tokio::select! {
                    () = &mut pump => None,
                    () = tokio::time::sleep(shutdown_grace) => Some(Closed::Shutdown),
                };
            }
            (signal, grace) = bad => {
                let back_up = async {
                    match follow.as_mut() {
                        Some((_, rx, _)) if signal == Signal::Down => {
                            let gone = rx.wait_for(|s| *s == Signal::Up).await.is_err();
                            if gone {
                                std::future::pending::<()>().await;
                            }
                        }
                        _ => std::future::pending().await,
                    }
                };
                tokio::select! {
                    () = &mut pump => return None,
                    () = tokio::time::sleep(grace) => {
                        return Some(if signal == Signal::Gone { Closed::ServerRemoved } else { Closed::ServerDown });
                    }
                    () = back_up => {}
                }
            }
        }
    }
}

/// Copies both ways. The server ending its side ends the tunnel (the client is shut down and
/// closed with it); the client ending its side sends the server a FIN and gives it
/// [`FIN_LINGER`] to finish.
async fn pump<C, S>(client: C, server: S)
where
    C: AsyncRead + AsyncWrite + Unpin,
    S: AsyncRead + AsyncWrite + Unpin,
{
    let (mut cr, mut cw) = tokio::io::split(client);
    let (mut sr, mut sw) = tokio::io::split(server);
    let to_server = async {
        let _ = tokio::io::copy(&mut cr, &mut sw).await;
        let _ = sw.shutdown().await;
    };
    let to_client = async {
        let _ = tokio::io::copy(&mut sr, &mut cw).await;
        let _ = cw.shutdown().await;
    };
    tokio::pin!(to_server, to_client);
    tokio::select! {
        () = &mut to_client => {}
        () = &mut to_server => {
            let _ = tokio::time::timeout(FIN_LINGER, to_client).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt as _, duplex};

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

    fn follow(
        tunnels: &Tunnels,
        grace: Duration,
    ) -> Option<(Arc<str>, watch::Receiver<Signal>, Duration)> {
        let (s, u): (Arc<str>, Arc<str>) = (Arc::from("central"), Arc::from("http://a:5000"));
        Some((s.clone(), tunnels.watch(&s, &u), grace))
    }

    #[tokio::test(start_paused = true)]
    async fn a_down_server_loses_its_tunnels_after_the_grace_unless_it_comes_back() {
        let tunnels = Tunnels::default();
        let grace = Duration::from_millis(500);
        let open = std::future::pending::<()>;
        // Down then back up within the grace: kept.
        let f = follow(&tunnels, grace);
        let t = tokio::spawn(watch_over(
            open(),
            f,
            tunnels.shutdown.subscribe(),
            Duration::from_secs(10),
        ));
        tokio::task::yield_now().await;
        tunnels.server_changed("central", "http://a:5000", true);
        tokio::time::sleep(Duration::from_millis(300)).await;
        tunnels.server_changed("central", "http://a:5000", false);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!t.is_finished(), "back up within the grace: kept");
        // Down for good: closed once the grace is over, not before.
        tunnels.server_changed("central", "http://a:5000", true);
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(!t.is_finished());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::ServerDown));
        // Another server's state changes nothing; a reload removing the server closes.
        tunnels.server_changed("central", "http://a:5000", false);
        let f = follow(&tunnels, grace);
        let t = tokio::spawn(watch_over(
            open(),
            f,
            tunnels.shutdown.subscribe(),
            Duration::from_secs(10),
        ));
        tokio::task::yield_now().await;
        tunnels.server_changed("central", "http://b:5000", true);
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!t.is_finished());
        tunnels.keep_only(|_, url| url != "http://a:5000");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::ServerRemoved));
        // Without following (opt-out), a down server keeps its tunnels; shutdown still ends them.
        let t = tokio::spawn(watch_over(
            open(),
            None,
            tunnels.shutdown.subscribe(),
            Duration::from_secs(10),
        ));
        tunnels.server_changed("central", "http://a:5000", true);
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!t.is_finished());
        let _ = tunnels.shutdown.send(true);
        tokio::time::sleep(Duration::from_secs(9)).await;
        assert!(!t.is_finished());
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert_eq!(t.await.unwrap(), Some(Closed::Shutdown));
    }
}
