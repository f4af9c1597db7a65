//! Running a plan as a server: health checks first, then one listener per entry point, SIGHUP
//! reload (when the plan came from a file) and a graceful stop on SIGTERM / Ctrl-C. Shared by the
//! `bridge-runtime` binary and `bridgectl run`. Listeners passed by socket activation are used by
//! entry point name; the service manager is told READY/RELOADING/STOPPING ([`crate::notify`]).

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use bridge_plan::Plan;

use crate::listener::{listen_addr, serve_entrypoint};
use crate::runtime::Runtime;
use crate::upstream::ServerState;
use crate::upstream::health::HealthChecker;

/// How a plan is served, besides the plan itself.
#[derive(Debug, Default)]
pub struct ServeOptions {
    /// Listen addresses that override the plan's, by entry point (`--bind`).
    pub binds: HashMap<String, SocketAddr>,
    /// Backend host names pinned to addresses (`--resolve`).
    pub resolve: HashMap<String, IpAddr>,
    /// The plan file SIGHUP loads again; `None`: SIGHUP is ignored (the plan was built in memory).
    pub reload_from: Option<PathBuf>,
    /// Listeners the caller bound already, by entry point (an embedder binding port 0 learns the
    /// address before serving); they win over `binds` and the plan's addresses.
    pub listeners: HashMap<String, std::net::TcpListener>,
    /// The other appliance of a pair: its `/ping` URL (`--peer`), asked for the plan it serves.
    pub peer: Option<String>,
}

/// `--bind` and `--resolve`, shared by `bridge-runtime` and `bridgectl run`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ServeArgs {
    /// Listen address of an entry point, like a container port mapping (repeatable): web=127.0.0.1:9000.
    #[arg(long = "bind", value_name = "ENTRYPOINT=ADDR", value_parser = parse_bind)]
    pub binds: Vec<(String, SocketAddr)>,
    /// Pin a backend host name to an IP address, like curl's --resolve (repeatable): node-a=10.0.0.5.
    #[arg(long = "resolve", value_name = "HOST=IP", value_parser = parse_resolve)]
    pub resolves: Vec<(String, IpAddr)>,
    /// The other appliance of a pair: its /ping URL (http://). Asked every 5 s which plan it
    /// serves; a difference shows in /api/bridge/peer, the dashboard, the metrics and the log.
    #[arg(long, value_name = "URL", value_parser = parse_peer)]
    pub peer: Option<String>,
}

impl ServeArgs {
    /// The options these arguments ask for.
    pub fn options(&self, reload_from: Option<PathBuf>) -> ServeOptions {
        ServeOptions {
            binds: self.binds.iter().cloned().collect(),
            resolve: self.resolves.iter().cloned().collect(),
            reload_from,
            listeners: HashMap::new(),
            peer: self.peer.clone(),
        }
    }
}

fn parse_peer(s: &str) -> Result<String, String> {
    match url::Url::parse(s) {
        Ok(u) if u.scheme() == "http" && u.host().is_some() => Ok(s.to_owned()),
        Ok(_) => {
            Err("expected the peer's http:// /ping URL, e.g. http://10.0.0.2:8080/ping".to_owned())
        }
        Err(e) => Err(format!("`{s}`: {e}")),
    }
}

fn parse_bind(s: &str) -> Result<(String, SocketAddr), String> {
    let (ep, addr) = s.split_once('=').ok_or("expected ENTRYPOINT=ADDR")?;
    Ok((
        ep.to_owned(),
        addr.parse().map_err(|e| format!("`{addr}`: {e}"))?,
    ))
}

fn parse_resolve(s: &str) -> Result<(String, IpAddr), String> {
    let (host, ip) = s.split_once('=').ok_or("expected HOST=IP")?;
    Ok((
        host.to_owned(),
        ip.parse().map_err(|e| format!("`{ip}`: {e}"))?,
    ))
}

/// Serves `plan` until SIGTERM or Ctrl-C (see [`serve_with`]).
pub async fn serve(plan: Plan, options: ServeOptions) -> Result<(), Box<dyn std::error::Error>> {
    serve_with(plan, options, std::future::pending()).await
}

/// Serves `plan` until SIGTERM, Ctrl-C or `shutdown` resolves, then drains: health checks first,
/// then one listener per entry point; SIGHUP reloads `options.reload_from`. For embedding (the
/// demo) as for the binaries.
pub async fn serve_with(
    plan: Plan,
    options: ServeOptions,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Box<dyn std::error::Error>> {
    let ServeOptions {
        binds,
        resolve,
        reload_from,
        mut listeners,
        peer,
    } = options;
    let mut shutdown = std::pin::pin!(shutdown);
    crate::observe::logging::init(&plan.log);
    crate::tls::install_provider();
    let plan = Arc::new(plan);
    let mut first = Runtime::new(plan.clone(), resolve.clone())?;
    first.peer = peer.map(|url| Arc::new(crate::peer::Peer::new(url)));
    let runtime = first.shared();
    crate::notify::check_activated(plan.entrypoints.keys().map(String::as_str))?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut checker = start_checks(&runtime);
    // No request reaches a server before it answered a probe; wait for the first round (bounded).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), checker.0.wait_ready()).await;
    let current = Arc::new(arc_swap::ArcSwap::new(runtime));
    if let Some(peer) = current.load().peer.clone() {
        // HTTP-01 requests for the peer's orders are relayed to it; TLS-ALPN-01 cannot be (the
        // CA's handshake reaches only the address holder), so a pair needs HTTP-01.
        for (name, r) in &plan.certificate_resolvers {
            if r.http_challenge.is_none() && r.tls_challenge.is_some() {
                tracing::warn!(
                    "certificate resolver {name}: TLS-ALPN-01 only; with --peer the appliance \
                     not holding the virtual address cannot complete its orders (use httpChallenge)"
                );
            }
        }
        let now = current.clone();
        tokio::spawn(peer.watch(move || now.load().plan.hash.clone(), stop_rx.clone()));
    }
    match crate::listener::raise_nofile() {
        Some(n) => tracing::info!(
            "file descriptor limit {n}, listen backlog {}",
            crate::listener::effective_backlog()
        ),
        None => tracing::info!(
            "file descriptor limit unlimited, listen backlog {}",
            crate::listener::effective_backlog()
        ),
    }
    let mut tasks = tokio::task::JoinSet::new();
    for (name, ep) in &plan.entrypoints {
        let given = listeners
            .remove(name)
            .or_else(|| crate::notify::activated_listener(name));
        let listener = if let Some(activated) = given {
            activated.set_nonblocking(true)?;
            tokio::net::TcpListener::from_std(activated)?
        } else {
            let addr = listen_addr(name, &ep.address, &binds)?;
            crate::listener::bind(addr).map_err(|source| crate::runtime::ServeError::Bind {
                name: name.clone(),
                addr,
                source,
            })?
        };
        let local = listener.local_addr()?;
        tracing::info!("entry point {name} listening on {local}");
        if ep.http3.is_some() {
            let udp =
                crate::http3::bind(local).map_err(|source| crate::runtime::ServeError::Bind {
                    name: name.clone(),
                    addr: local,
                    source,
                })?;
            tracing::info!("entry point {name} serving HTTP/3 on {local} (UDP)");
            tasks.spawn(crate::http3::serve_entrypoint(
                current.clone(),
                Arc::from(name.as_str()),
                udp,
                stop_rx.clone(),
            ));
        }
        tasks.spawn(serve_entrypoint(
            current.clone(),
            Arc::from(name.as_str()),
            listener,
            stop_rx.clone(),
        ));
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    crate::notify::ready(&plan.hash);
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            () = &mut shutdown => break,
            Some(()) = hup.recv() => {
                let Some(path) = reload_from.as_deref() else {
                    tracing::warn!("SIGHUP ignored: the plan was not loaded from a file");
                    continue;
                };
                crate::notify::reloading();
                match reload(path, &current, &resolve).await {
                    Ok(next_checker) => {
                        let old = std::mem::replace(&mut checker, next_checker);
                        let _ = old.1.send(true);
                        old.0.join().await;
                        crate::notify::reloaded(&current.load().plan().hash, None);
                        if let Some(m) = current.load().metrics() {
                            m.reload(true);
                        }
                    }
                    Err(e) => {
                        tracing::error!("reload rejected, still serving the previous plan: {e}");
                        crate::notify::reloaded(&current.load().plan().hash, Some(&e.to_string()));
                        if let Some(m) = current.load().metrics() {
                            m.reload(false);
                        }
                    }
                }
            }
        }
    }
    tracing::info!("shutting down, draining in-flight requests");
    crate::notify::stopping();
    current
        .load()
        .terminating
        .store(true, std::sync::atomic::Ordering::Release);
    let _ = stop_tx.send(true);
    // Tunnels are not waited for beyond the entry points' graceTimeOut (Traefik waits for ever).
    let grace = plan
        .entrypoints
        .values()
        .map(|e| e.timeouts.grace_ms)
        .max()
        .unwrap_or(0);
    let tunnels = current.load().tunnels.clone();
    let drain = async { while tasks.join_next().await.is_some() {} };
    tokio::join!(
        drain,
        tunnels.shutdown(std::time::Duration::from_millis(grace))
    );
    let _ = checker.1.send(true);
    checker.0.join().await;
    Ok(())
}

/// Starts health checks for a runtime; the sender stops them.
fn start_checks(runtime: &Runtime) -> (HealthChecker, tokio::sync::watch::Sender<bool>) {
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    // Every server state change of this runtime's upstreams is logged and, with metrics,
    // counted (the failover counters).
    let metrics = runtime.metrics().cloned();
    let tunnels = runtime.tunnels.clone();
    let mut events = runtime.upstreams().subscribe();
    let mut stop = tx.subscribe();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                ev = events.recv() => match ev {
                    Ok(c) => {
                        tracing::info!(
                            "service {}: server {} {} → {} ({})",
                            c.service, c.url, c.from.as_str(), c.to.as_str(), c.reason
                        );
                        if let Some(m) = &metrics {
                            m.state_change(&c.service, &c.url, c.to.as_str());
                        }
                        match c.to {
                            ServerState::Down => tunnels.server_changed(&c.service, &c.url, true),
                            ServerState::Up => tunnels.server_changed(&c.service, &c.url, false),
                            ServerState::Unknown => {}
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!("{n} server state changes were not logged (too many at once)");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                },
                _ = stop.changed() => break,
            }
        }
    });
    let checker = HealthChecker::spawn(
        runtime.upstreams(),
        Arc::new(runtime.prober()),
        async move {
            let _ = rx.changed().await;
        },
    );
    (checker, tx)
}

/// SIGHUP: load the plan file again and swap it in atomically, keeping the health state of
/// unchanged servers. An invalid plan, or one that changes entry points or the connection
/// settings their listeners read when they start (which needs new listeners), is rejected and
/// the old plan keeps serving.
async fn reload(
    path: &std::path::Path,
    current: &arc_swap::ArcSwap<Runtime>,
    resolve: &HashMap<String, IpAddr>,
) -> Result<(HealthChecker, tokio::sync::watch::Sender<bool>), Box<dyn std::error::Error>> {
    let plan = crate::load::load_plan_file(path)?;
    let old = current.load_full();
    // What a listener reads once when it starts (its socket, and the connection settings its
    // accept loop hands every connection): a change needs a restart, never a silent no-op.
    let listeners = |p: &Plan| {
        p.entrypoints
            .iter()
            .map(|(n, e)| {
                let t = &e.timeouts;
                (
                    n.clone(),
                    e.address.clone(),
                    [
                        t.read_ms,
                        t.idle_ms,
                        t.header_read_ms,
                        t.request_accept_grace_ms,
                        e.max_header_bytes,
                    ],
                    e.connections.clone(),
                    // The UDP socket of HTTP/3 (its advertised port may change: Alt-Svc is
                    // the plan's).
                    e.http3.is_some(),
                )
            })
            .collect::<Vec<_>>()
    };
    if listeners(&plan) != listeners(old.plan()) {
        return Err("the new plan changes entry points, their addresses or their connection settings (readTimeout, idleTimeout, the header read bound, requestAcceptGraceTimeout, maxHeaderBytes, keep-alive and HTTP/2 limits, http3 on or off); restart bridge-runtime to apply it".into());
    }
    let hash = plan.hash.clone();
    let next = Runtime::reload(&old, Arc::new(plan), resolve)?.shared();
    let carried = next.carry_health_from(&old);
    let checks = start_checks(&next);
    // Servers new to this plan are probed before they get traffic.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), checks.0.wait_ready()).await;
    current.store(next.clone());
    // Tunnels to servers the new plan dropped close after their grace; the others stay.
    next.tunnels
        .keep_only(|service, url| next.upstreams().server_ref(service, url).is_some());
    tracing::info!("reloaded plan {hash} ({carried} server states kept)");
    Ok(checks)
}
