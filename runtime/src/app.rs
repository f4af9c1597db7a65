//! Running a plan as a server: health checks first, then one listener per entry point, SIGHUP
//! reload (when the plan came from a file) and a graceful stop on SIGTERM / Ctrl-C. Shared by the
//! `bridge-runtime` binary and `bridgectl run`.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use bridge_plan::Plan;

use crate::health::HealthChecker;
use crate::server::{Runtime, listen_addr, serve_entrypoint};

/// Serves `plan` until SIGTERM or Ctrl-C. `binds` override entry point addresses, `resolve` pins
/// backend host names; with `reload_from`, SIGHUP loads that plan file again.
pub async fn serve(
    plan: Plan,
    binds: HashMap<String, SocketAddr>,
    resolve: HashMap<String, IpAddr>,
    reload_from: Option<PathBuf>,
) -> Result<(), Box<dyn std::error::Error>> {
    crate::tls::install_provider();
    let plan = Arc::new(plan);
    let runtime = Arc::new(Runtime::new(plan.clone(), resolve.clone())?);
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut checker = start_checks(&runtime, &resolve);
    // No request reaches a server before it answered a probe; wait for the first round (bounded).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), checker.0.wait_ready()).await;
    let current = Arc::new(arc_swap::ArcSwap::new(runtime));
    let mut tasks = tokio::task::JoinSet::new();
    for (name, ep) in &plan.entrypoints {
        let addr = listen_addr(name, &ep.address, &binds)?;
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| crate::server::ServeError::Bind {
                name: name.clone(),
                addr,
                source,
            })?;
        eprintln!(
            "bridge-runtime: entry point {name} listening on {}",
            listener.local_addr()?
        );
        tasks.spawn(serve_entrypoint(
            current.clone(),
            Arc::from(name.as_str()),
            listener,
            stop_rx.clone(),
        ));
    }
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut hup = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = term.recv() => break,
            _ = tokio::signal::ctrl_c() => break,
            Some(()) = hup.recv() => {
                let Some(path) = reload_from.as_deref() else {
                    eprintln!("bridge-runtime: SIGHUP ignored: the plan was not loaded from a file");
                    continue;
                };
                match reload(path, &current, &resolve).await {
                    Ok(next_checker) => {
                        let old = std::mem::replace(&mut checker, next_checker);
                        let _ = old.1.send(true);
                        old.0.join().await;
                    }
                    Err(e) => eprintln!("bridge-runtime: reload rejected, still serving the previous plan: {e}"),
                }
            }
        }
    }
    eprintln!("bridge-runtime: shutting down, draining in-flight requests");
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    let _ = checker.1.send(true);
    checker.0.join().await;
    Ok(())
}

/// Starts health checks for a runtime; the sender stops them.
fn start_checks(
    runtime: &Runtime,
    resolve: &HashMap<String, IpAddr>,
) -> (HealthChecker, tokio::sync::watch::Sender<bool>) {
    let (tx, mut rx) = tokio::sync::watch::channel(false);
    let checker = HealthChecker::spawn(
        runtime.upstreams(),
        Arc::new(runtime.prober(resolve.clone())),
        async move {
            let _ = rx.changed().await;
        },
    );
    (checker, tx)
}

/// SIGHUP: load the plan file again and swap it in atomically, keeping the health state of
/// unchanged servers. An invalid plan, or one that changes entry points (which needs new
/// listeners), is rejected and the old plan keeps serving.
async fn reload(
    path: &std::path::Path,
    current: &arc_swap::ArcSwap<Runtime>,
    resolve: &HashMap<String, IpAddr>,
) -> Result<(HealthChecker, tokio::sync::watch::Sender<bool>), Box<dyn std::error::Error>> {
    let plan = crate::plan::load_plan_file(path)?;
    let old = current.load_full();
    let addresses = |p: &bridge_plan::Plan| {
        p.entrypoints
            .iter()
            .map(|(n, e)| (n.clone(), e.address.clone()))
            .collect::<Vec<_>>()
    };
    if addresses(&plan) != addresses(old.plan()) {
        return Err("the new plan changes entry points or their addresses; restart bridge-runtime to apply it".into());
    }
    let hash = plan.hash.clone();
    let next = Arc::new(Runtime::new(Arc::new(plan), resolve.clone())?);
    let carried = next.carry_health_from(&old);
    let checks = start_checks(&next, resolve);
    // Servers new to this plan are probed before they get traffic.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(30), checks.0.wait_ready()).await;
    current.store(next);
    eprintln!("bridge-runtime: reloaded plan {hash} ({carried} server states kept)");
    Ok(checks)
}
