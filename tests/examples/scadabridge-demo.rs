//! `scadabridge-demo`: the seed's topology on one machine, to watch failover happen.
//! `cargo run -p bridge-tests --example scadabridge-demo` (an example of the test crate, which holds
//! the simulated nodes; `tests/demo_smoke.rs` runs it).
//!
//! Two simulated ScadaBridge central nodes on loopback aliases (127.0.0.2 and 127.0.0.3, port 5000)
//! answer `/health/active` (200 only on the active node — the oldest Up member), `/health/ready`,
//! echo every other request as JSON and echo WebSocket traffic. The bundled example is checked and
//! built with the dev profile, and bridge-runtime serves it in-process (web on 127.0.0.1:9000, the
//! dashboard on 127.0.0.1:8180, like the seed's port mapping). Type commands to change the cluster:
//! `failover`, `demote a`, `promote b`, `kill a`, `start a`, `status`, `quit`.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::BufRead;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;

use bridge_tests::sim::{Node, simulate};

fn arg(args: &[String], flag: &str, default: &str) -> String {
    args.windows(2)
        .find(|w| w[0] == flag)
        .map_or_else(|| default.to_owned(), |w| w[1].clone())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "scadabridge-demo [--web ADDR] [--dashboard ADDR] [--node-a ADDR] [--node-b ADDR]\n\nDefaults: web 127.0.0.1:9000, dashboard 127.0.0.1:8180, nodes 127.0.0.2:5000 and 127.0.0.3:5000.\nCommands on stdin: failover | demote a|b | promote a|b | kill a|b | start a|b | status | quit"
        );
        return Ok(());
    }
    let web: SocketAddr = arg(&args, "--web", "127.0.0.1:9000").parse()?;
    let dash: SocketAddr = arg(&args, "--dashboard", "127.0.0.1:8180").parse()?;
    let (a, a_addr) = simulate("a", arg(&args, "--node-a", "127.0.0.2:5000").parse()?, true)?;
    let (b, b_addr) = simulate(
        "b",
        arg(&args, "--node-b", "127.0.0.3:5000").parse()?,
        false,
    )?;
    println!("simulated nodes: central-a on {a_addr} (active), central-b on {b_addr} (standby)");

    // The bundled example, unchanged, with the node host names pinned like `--resolve` and the
    // ports of the simulated nodes.
    let dir = tempfile::tempdir()?;
    bridge_tests::sim::write_example(dir.path(), a_addr.port(), b_addr.port())?;
    let report = bridgectl::check::check(&bridgectl::check::CheckOptions {
        dir: dir.path().to_path_buf(),
        profile: Some(bridgectl::profile::ProfileSelector::parse("dev")),
        ..Default::default()
    })?;
    if !report.ok() {
        return Err(format!("the example does not check: {:?}", report.diagnostics).into());
    }
    let plan = bridgectl::resolve::build_plan(&report, "dev").map_err(|d| format!("{d:?}"))?;
    println!(
        "plan {} built from examples/scadabridge (dev profile)",
        plan.hash
    );

    let resolve: HashMap<String, IpAddr> = [
        ("scadabridge-central-a".to_owned(), a_addr.ip()),
        ("scadabridge-central-b".to_owned(), b_addr.ip()),
    ]
    .into();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        // Bound here, so the addresses (port 0 included) are known before serving.
        let web_l = std::net::TcpListener::bind(web)?;
        let dash_l = std::net::TcpListener::bind(dash)?;
        println!(
            "ScadaBridge via bridge-runtime:  http://{}/",
            web_l.local_addr()?
        );
        println!(
            "dashboard:                       http://{}/dashboard/",
            dash_l.local_addr()?
        );
        let options = bridge_runtime::ServeOptions {
            resolve,
            listeners: [("web".to_owned(), web_l), ("traefik".to_owned(), dash_l)].into(),
            ..Default::default()
        };
        println!(
            "commands: failover | demote a|b | promote a|b | kill a|b | start a|b | status | quit"
        );
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let commands = tokio::spawn(commands([a, b], stop_tx));
        // Served exactly as `bridge-runtime` serves a plan (health checks first, then the
        // listeners; health transitions are logged on stderr) until `quit`, Ctrl-C or SIGTERM.
        let served = bridge_runtime::serve_with(plan, options, async {
            let _ = stop_rx.await;
        })
        .await;
        commands.abort();
        served
    })
}

/// Reads the cluster commands from stdin until `quit` (or end of input), then stops serving.
async fn commands(nodes: [Node; 2], stop: tokio::sync::oneshot::Sender<()>) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(8);
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.blocking_send(line).is_err() {
                break;
            }
        }
    });
    let node = |n: &str| {
        nodes
            .iter()
            .find(|x| x.name == n.trim_start_matches("central-"))
    };
    while let Some(line) = rx.recv().await {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["quit" | "exit"] => break,
            ["status"] => {
                for n in &nodes {
                    let running = if n.alive.load(Ordering::SeqCst) {
                        "running"
                    } else {
                        "killed"
                    };
                    let role = if n.active.load(Ordering::SeqCst) {
                        "active (/health/active 200)"
                    } else {
                        "standby (503)"
                    };
                    println!("  central-{}: {running}, {role}", n.name);
                }
            }
            ["failover"] => {
                for n in &nodes {
                    n.active.fetch_xor(true, Ordering::SeqCst);
                }
                println!("  cluster failover: the active and standby nodes swapped");
            }
            ["demote", n] | ["promote", n] | ["kill", n] | ["start", n] => match node(n) {
                Some(x) => {
                    match words[0] {
                        "demote" => x.active.store(false, Ordering::SeqCst),
                        "promote" => x.active.store(true, Ordering::SeqCst),
                        "kill" => x.alive.store(false, Ordering::SeqCst),
                        _ => x.alive.store(true, Ordering::SeqCst),
                    }
                    println!("  central-{}: {}", x.name, words[0]);
                }
                None => println!("  unknown node `{n}` (a or b)"),
            },
            [] => {}
            _ => println!(
                "  commands: failover | demote a|b | promote a|b | kill a|b | start a|b | status | quit"
            ),
        }
    }
    let _ = stop.send(());
}
