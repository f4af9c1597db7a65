//! Two simulated ScadaBridge central nodes, shared by `scadabridge-demo` and the appliance tests.
//!
//! Each node answers `/health/active` (200 only while it is the active node), `/health/ready`,
//! echoes every other request as JSON (`{"node":"central-a",...}`) and echoes WebSocket traffic.
//! A killed node drops connections without answering.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// One simulated central node.
#[derive(Debug)]
pub struct Node {
    /// `a` or `b`.
    pub name: &'static str,
    /// Whether `/health/active` answers 200.
    pub active: Arc<AtomicBool>,
    /// Whether the node answers at all.
    pub alive: Arc<AtomicBool>,
}

/// Starts node `name` on `addr` (port 0 picks one); returns it and the bound address.
pub fn simulate(
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

/// Writes the bundled example (`examples/scadabridge`, unchanged apart from the node ports) into
/// `dir`, pointing `scadabridge-central-a`/`-b` at the ports of the simulated nodes. The host names
/// stay, so they are resolved by `--resolve` or the container's `/etc/hosts`.
pub fn write_example(dir: &std::path::Path, a_port: u16, b_port: u16) -> std::io::Result<()> {
    let example = crate::repo_root().join("examples/scadabridge");
    std::fs::copy(example.join("traefik.yml"), dir.join("traefik.yml"))?;
    let dynamic = std::fs::read_to_string(example.join("dynamic.yml"))?
        .replace(
            "scadabridge-central-a:5000",
            &format!("scadabridge-central-a:{a_port}"),
        )
        .replace(
            "scadabridge-central-b:5000",
            &format!("scadabridge-central-b:{b_port}"),
        );
    std::fs::write(dir.join("dynamic.yml"), dynamic)
}
