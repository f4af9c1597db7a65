//! `scadabridge-demo`: the seed's topology on one machine, to watch failover happen.
//!
//! Two simulated ScadaBridge central nodes on loopback aliases (127.0.0.2 and 127.0.0.3, port 5000)
//! answer `/health/active` (200 only on the active node — the oldest Up member), `/health/ready`,
//! echo every other request as JSON and echo WebSocket traffic. The bundled example is checked and
//! built with the dev profile, and bridge-runtime serves it in-process (web on 127.0.0.1:9000, the
//! dashboard on 127.0.0.1:8180, like the seed's port mapping). Type commands to change the cluster:
//! `failover`, `demote a`, `promote b`, `kill a`, `start a`, `status`, `quit`.

#![forbid(unsafe_code)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bridge_runtime::server::{HttpProber, Runtime, serve_entrypoint};

/// One simulated central node.
struct Node {
    name: &'static str,
    active: Arc<AtomicBool>,
    alive: Arc<AtomicBool>,
}

fn simulate(
    name: &'static str,
    addr: SocketAddr,
    active: bool,
) -> std::io::Result<(Node, SocketAddr)> {
    let listener = TcpListener::bind(addr)?;
    let bound = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let node = Node {
        name,
        active: Arc::new(AtomicBool::new(active)),
        alive: Arc::new(AtomicBool::new(true)),
    };
    let (act, alive) = (node.active.clone(), node.alive.clone());
    std::thread::spawn(move || {
        loop {
            match listener.accept() {
                Ok((stream, _)) if alive.load(Ordering::SeqCst) => {
                    let (act, alive) = (act.clone(), alive.clone());
                    let _ = stream.set_nonblocking(false);
                    std::thread::spawn(move || serve(stream, name, &act, &alive));
                }
                Ok(_) => {} // a killed node drops connections
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    Ok((node, bound))
}

fn serve(stream: TcpStream, name: &str, active: &AtomicBool, alive: &AtomicBool) {
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(read_half);
    let mut stream = stream;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || !alive.load(Ordering::SeqCst) {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or("GET").to_owned(),
            parts.next().unwrap_or("/").to_owned(),
        );
        let mut headers = Vec::new();
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            if h == "\r\n" {
                break;
            }
            if let Some((k, v)) = h.trim_end().split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
            }
        }
        if headers
            .iter()
            .any(|(k, v)| k == "upgrade" && v.eq_ignore_ascii_case("websocket"))
        {
            let _ = stream.write_all(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n");
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || stream.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
            return;
        }
        let (status, body) = match path.as_str() {
            "/health/active" if active.load(Ordering::SeqCst) => ("200 OK", "Healthy".to_owned()),
            "/health/active" => ("503 Service Unavailable", "Unhealthy".to_owned()),
            "/health/ready" => ("200 OK", "Healthy".to_owned()),
            _ => {
                let xff = headers
                    .iter()
                    .find(|(k, _)| k == "x-forwarded-for")
                    .map_or("", |(_, v)| v.as_str());
                (
                    "200 OK",
                    format!(
                        "{{\"node\":\"central-{name}\",\"method\":\"{method}\",\"path\":{:?},\"x_forwarded_for\":{:?}}}\n",
                        path, xff
                    ),
                )
            }
        };
        let resp = format!(
            "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        if stream.write_all(resp.as_bytes()).is_err() {
            return;
        }
    }
}

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
    let example = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../examples/scadabridge");
    let dir = tempfile::tempdir()?;
    std::fs::copy(example.join("traefik.yml"), dir.path().join("traefik.yml"))?;
    let dynamic = std::fs::read_to_string(example.join("dynamic.yml"))?
        .replace(
            "scadabridge-central-a:5000",
            &format!("scadabridge-central-a:{}", a_addr.port()),
        )
        .replace(
            "scadabridge-central-b:5000",
            &format!("scadabridge-central-b:{}", b_addr.port()),
        );
    std::fs::write(dir.path().join("dynamic.yml"), dynamic)?;
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
        let runtime = Arc::new(Runtime::new(Arc::new(plan), resolve.clone())?);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut health_stop = stop_rx.clone();
        let checker = bridge_runtime::health::HealthChecker::spawn(runtime.upstreams(), Arc::new(HttpProber::new(resolve)), async move {
            let _ = health_stop.changed().await;
        });
        let _ = tokio::time::timeout(Duration::from_secs(10), checker.wait_ready()).await;
        let mut changes = runtime.upstreams().subscribe();
        let current = Arc::new(arc_swap::ArcSwap::new(runtime));
        let web_l = tokio::net::TcpListener::bind(web).await?;
        let dash_l = tokio::net::TcpListener::bind(dash).await?;
        println!("ScadaBridge via bridge-runtime:  http://{}/", web_l.local_addr()?);
        println!("dashboard:                       http://{}/dashboard/", dash_l.local_addr()?);
        println!("commands: failover | demote a|b | promote a|b | kill a|b | start a|b | status | quit");
        let mut tasks = tokio::task::JoinSet::new();
        tasks.spawn(serve_entrypoint(current.clone(), Arc::from("web"), web_l, stop_rx.clone()));
        tasks.spawn(serve_entrypoint(current.clone(), Arc::from("traefik"), dash_l, stop_rx.clone()));
        tokio::spawn(async move {
            while let Ok(c) = changes.recv().await {
                println!("  health: {} {:?} → {:?} ({})", c.url, c.from, c.to, c.reason);
            }
        });
        let nodes = [a, b];
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(8);
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines().map_while(Result::ok) {
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        let node = |n: &str| nodes.iter().find(|x| x.name == n.trim_start_matches("central-"));
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                line = rx.recv() => {
                    let Some(line) = line else { break };
                    let words: Vec<&str> = line.split_whitespace().collect();
                    match words.as_slice() {
                        ["quit" | "exit"] => break,
                        ["status"] => {
                            for n in &nodes {
                                println!("  central-{}: {}, {}", n.name,
                                    if n.alive.load(Ordering::SeqCst) { "running" } else { "killed" },
                                    if n.active.load(Ordering::SeqCst) { "active (/health/active 200)" } else { "standby (503)" });
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
                        _ => println!("  commands: failover | demote a|b | promote a|b | kill a|b | start a|b | status | quit"),
                    }
                }
            }
        }
        let _ = stop_tx.send(true);
        while tasks.join_next().await.is_some() {}
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}
