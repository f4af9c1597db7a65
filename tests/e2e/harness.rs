//! What the topics share: the bundled example built and served by `bridge-runtime` in front of two
//! backends (`a` active, `b` standby unless told otherwise), any configuration built and served, and
//! raw HTTP/1.1 clients.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bridge_tests::backends::Backend;
use bridge_tests::process::{KillOnDrop, bridge_runtime};
use bridge_tests::repo_root;

/// `GET PATH` with a forged `X-Forwarded-For: 6.6.6.6`; the whole raw answer.
pub(crate) fn get_raw(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// `GET PATH` (`Host: scadabridge.local`, `Connection: close`): (status, body).
pub(crate) fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

/// A running `bridge-runtime`; killed when dropped.
pub(crate) struct Runtime {
    pub(crate) child: KillOnDrop,
    /// The `web` entry point.
    pub(crate) web: SocketAddr,
    /// The `traefik` entry point (API, dashboard, metrics).
    pub(crate) api: SocketAddr,
}

/// The example (health checks every second) in front of `a` and `b`, built and served from `dir`.
pub(crate) fn start(a: &Backend, b: &Backend, dir: &std::path::Path) -> Runtime {
    start_with(a, b, dir, |d| d.replace("interval: 5s", "interval: 1s"))
}

/// [`start`] with `edit` applied to the example's dynamic file first. (The interval still becomes
/// 1 s: the replacement runs after `edit`.)
pub(crate) fn start_with(
    a: &Backend,
    b: &Backend,
    dir: &std::path::Path,
    edit: impl Fn(String) -> String,
) -> Runtime {
    start_full(a, b, dir, |s| s, edit)
}

/// [`start_with`] with `edit_static` applied to its static file too.
pub(crate) fn start_full(
    a: &Backend,
    b: &Backend,
    dir: &std::path::Path,
    edit_static: impl Fn(String) -> String,
    edit: impl Fn(String) -> String,
) -> Runtime {
    let seed = repo_root().join("examples/scadabridge");
    let static_text = edit_static(std::fs::read_to_string(seed.join("traefik.yml")).unwrap());
    std::fs::write(dir.join("traefik.yml"), static_text).unwrap();
    let dynamic = edit(std::fs::read_to_string(seed.join("dynamic.yml")).unwrap())
        .replace(
            "http://scadabridge-central-a:5000",
            &format!("http://scadabridge-central-a:{}", a.addr.port()),
        )
        .replace(
            "http://scadabridge-central-b:5000",
            &format!("http://scadabridge-central-b:{}", b.addr.port()),
        )
        .replace("interval: 5s", "interval: 1s");
    std::fs::write(dir.join("dynamic.yml"), dynamic).unwrap();
    let plan = bridge_tests::build_plan(dir, "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan)
            .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
            .args([
                "--resolve",
                "scadabridge-central-a=127.0.0.1",
                "--resolve",
                "scadabridge-central-b=127.0.0.1",
            ]),
        &["web", "traefik"],
    );
    Runtime {
        child: KillOnDrop(child),
        web: addrs[0],
        api: addrs[1],
    }
}

/// Polls until `want` answers (bounded), returning how long it took.
pub(crate) fn wait_for(rt: &Runtime, want: &str, limit: Duration) -> Duration {
    let started = Instant::now();
    while started.elapsed() < limit {
        let (_, body) = get(rt.web, "/ui");
        if body.starts_with(want) {
            return started.elapsed();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("{want} did not get traffic within {limit:?}");
}

/// A WebSocket upgrade through the proxy, then two messages echoed back through the tunnel.
pub(crate) fn websocket_echo(s: &mut (impl Read + Write), host: &str) {
    write!(
        s,
        "GET /_blazor HTTP/1.1\r\nHost: {host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    )
    .unwrap();
    s.flush().unwrap();
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        s.read_exact(&mut byte).unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    for msg in ["hello", "circuit 42"] {
        s.write_all(msg.as_bytes()).unwrap();
        s.flush().unwrap();
        let mut back = vec![0u8; msg.len()];
        s.read_exact(&mut back).unwrap();
        assert_eq!(String::from_utf8_lossy(&back), msg);
    }
}

/// One HTTP/1.1 request with extra header lines; returns the whole raw answer.
pub(crate) fn request_raw(addr: SocketAddr, method: &str, path: &str, headers: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\n{headers}\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// Builds `static_yml` + `dynamic_yml` (dev profile) in `d` and serves it (`web` and `traefik` on
/// free ports), with `extra` arguments.
pub(crate) fn build_and_serve(
    d: &std::path::Path,
    static_yml: &str,
    dynamic_yml: &str,
    extra: &[&str],
) -> Runtime {
    std::fs::write(d.join("traefik.yml"), static_yml).unwrap();
    std::fs::write(d.join("dynamic.yml"), dynamic_yml).unwrap();
    let plan = bridge_tests::build_plan(d, "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan)
            .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
            .args(extra),
        &["web", "traefik"],
    );
    Runtime {
        child: KillOnDrop(child),
        web: addrs[0],
        api: addrs[1],
    }
}
