//! `bridge-runtime PLAN`: serve a sealed bridgectl plan.
#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::process::ExitCode;

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
    bridge_runtime::app::serve(plan, binds, resolve, Some(args.plan)).await
}
