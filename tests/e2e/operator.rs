//! Drain, maintenance and ready, set by an operator through the API (`bridge-runtime server`):
//! a drained server gets no new requests and its WebSocket closes after the grace, maintenance
//! closes it at once, the state survives a reload, a 503 for want of servers says when to retry,
//! and in prod the call needs the dashboard's credentials.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::backend;
use bridge_tests::process::signal;

use crate::harness::{get, start_full, websocket_echo};

fn server_cmd(api: &str, state: &str, url: &str, extra: &[&str]) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("bridge-runtime"))
        .args([
            "server",
            state,
            "--api",
            api,
            "--service",
            "central",
            "--url",
            url,
        ])
        .args(extra)
        .output()
        .unwrap()
}

fn raw(addr: SocketAddr, req: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn tunnel(web: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    websocket_echo(&mut s, "scadabridge.local");
    s
}

fn closed_after(s: &mut TcpStream) -> Duration {
    let t0 = Instant::now();
    let mut buf = [0u8; 16];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the tunnel was not closed: {other:?}"),
    }
    t0.elapsed()
}

#[test]
fn drain_maintenance_and_ready_through_the_cli_survive_a_reload() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| format!("{s}\nmetrics:\n  prometheus: {{}}\n"),
        |d| d,
    );
    let api = format!("http://{}", rt.api);
    let a_url = format!("http://scadabridge-central-a:{}", a.port());

    // Drain a: its WebSocket closes after the grace, new requests find no server (b is the
    // standby): 503 with Retry-After.
    let mut ws = tunnel(rt.web);
    let out = server_cmd(&api, "drain", &a_url, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let entry: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(entry["state"], "drain");
    let took = closed_after(&mut ws);
    assert!(took < Duration::from_secs(2), "closed after {took:?}");
    let answer = raw(
        rt.web,
        "GET /ui HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nretry-after: 1\r\n"),
        "{answer}"
    );

    // The standby takes over; the drained node stays out, also across a reload.
    b.active.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(2));
    signal(rt.child.id(), "-HUP");
    std::thread::sleep(Duration::from_secs(2));
    for _ in 0..4 {
        let (status, body) = get(rt.web, "/ui");
        assert_eq!(status, 200);
        assert!(body.starts_with("b "), "{body}");
    }
    let (_, list) = get(rt.api, "/api/bridge/servers");
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let a_entry = list
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["url"] == a_url.as_str())
        .unwrap();
    assert_eq!(a_entry["state"], "drain", "{list}");
    let (_, metrics) = get(rt.api, "/metrics");
    assert!(
        metrics.contains("bridge_server_operator_state{"),
        "{metrics}"
    );

    // Ready again: a is back in rotation beside b.
    let out = server_cmd(&api, "ready", &a_url, &[]);
    assert!(out.status.success());
    let mut bodies = Vec::new();
    for _ in 0..4 {
        bodies.push(get(rt.web, "/ui").1);
    }
    assert!(bodies.iter().any(|b| b.starts_with("a ")), "{bodies:?}");

    // Maintenance: the tunnel to a closes at once.
    let mut ws = loop {
        let mut s = tunnel(rt.web);
        std::thread::sleep(Duration::from_millis(100));
        if a.seen()
            .iter()
            .filter(|r| r.starts_with("GET /_blazor"))
            .count()
            >= 2
        {
            break s;
        }
        s.flush().unwrap();
    };
    let out = server_cmd(&api, "maintenance", &a_url, &[]);
    assert!(out.status.success());
    let took = closed_after(&mut ws);
    assert!(took < Duration::from_millis(300), "closed after {took:?}");

    // Unknown servers and states are refused.
    let out = server_cmd(&api, "drain", "http://nowhere:1", &[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("404"));
}

#[test]
fn in_prod_the_call_needs_the_dashboard_credentials_and_tls() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let p = bridge_tests::prod::start_prod(a.port(), b.port());
    let api = format!("https://127.0.0.1:{}", p.api.port());
    let a_url = format!("http://scadabridge-central-a:{}", a.port());
    let out = server_cmd(&api, "drain", &a_url, &["--insecure"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("401"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = server_cmd(
        &api,
        "drain",
        &a_url,
        &["--insecure", "--user", "admin:s3cret"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Plain HTTP on the dashboard's entry point reaches no router.
    let plain = raw(
        p.api,
        "POST /api/bridge/servers HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    assert!(plain.starts_with("HTTP/1.1 404"), "{plain}");
}
