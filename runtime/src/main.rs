//! `bridge-runtime PLAN`: serve a sealed bridgectl plan.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use bridge_runtime::health::HealthChecker;
use bridge_runtime::server::{HttpProber, Runtime, listen_addr, serve_entrypoint};
use clap::Parser;

/// Serve a routing plan written by `bridgectl build`.
///
/// The plan's hash and version are verified before anything is served. Servers with a health check
/// are probed before they get traffic.
#[derive(Debug, Parser)]
#[command(name = "bridge-runtime", version)]
struct Args {
    /// The plan file.
    plan: PathBuf,
    /// Listen address of an entry point, like a container port mapping (repeatable): web=127.0.0.1:9000.
    #[arg(long = "bind", value_name = "ENTRYPOINT=ADDR", value_parser = parse_bind)]
    binds: Vec<(String, SocketAddr)>,
    /// Pin a backend host name to an IP address, like curl's --resolve (repeatable): node-a=10.0.0.5.
    #[arg(long = "resolve", value_name = "HOST=IP", value_parser = parse_resolve)]
    resolves: Vec<(String, IpAddr)>,
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

fn main() -> ExitCode {
    let args = Args::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bridge-runtime: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bridge-runtime: error: {e}");
            ExitCode::from(2)
        }
    }
}

async fn run(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let plan = bridge_runtime::plan::load_plan_file(&args.plan)?;
    eprintln!(
        "bridge-runtime: plan {} (profile {}) verified",
        plan.hash, plan.profile
    );
    let binds: HashMap<String, SocketAddr> = args.binds.into_iter().collect();
    for (ep, addr) in &binds {
        eprintln!("bridge-runtime: --bind {ep}={addr}");
    }
    let resolve: HashMap<String, IpAddr> = args.resolves.into_iter().collect();
    for (host, ip) in &resolve {
        eprintln!("bridge-runtime: --resolve {host}={ip}");
    }
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
            .map_err(|source| bridge_runtime::server::ServeError::Bind {
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
            _ = hup.recv() => {
                match reload(&args.plan, &current, &resolve).await {
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
        Arc::new(HttpProber::new(resolve.clone())),
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
    let plan = bridge_runtime::plan::load_plan_file(path)?;
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
