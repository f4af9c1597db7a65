//! Upgraded connections follow failover: a WebSocket to the active node is closed (after the
//! grace) when that node is demoted, so the client reconnects and lands on the new active node;
//! a crash ends it at once; a server ending its side closes the client's; `closeTunnelsOnDown:
//! false` keeps Traefik's behaviour; SIGTERM does not wait for tunnels beyond graceTimeOut.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::backend;
use bridge_tests::process::{signal, wait_exit};

use crate::harness::{start, start_full, start_with, websocket_echo};

/// An open WebSocket through the proxy (the echo checked).
fn tunnel(web: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    websocket_echo(&mut s, "scadabridge.local");
    s
}

/// Waits until the proxy closes `s` (EOF or reset); how long it took. Panics after `limit`.
fn closed_within(s: &mut TcpStream, limit: Duration) -> Duration {
    let t0 = Instant::now();
    s.set_read_timeout(Some(limit)).unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Ok(n) => panic!("unexpected {n} bytes on the tunnel"),
        Err(e) => panic!("the tunnel was not closed within {limit:?}: {e}"),
    }
    t0.elapsed()
}

fn still_echoes(s: &mut TcpStream) {
    s.write_all(b"still here").unwrap();
    let mut back = [0u8; 10];
    s.read_exact(&mut back).unwrap();
    assert_eq!(&back, b"still here");
}

#[test]
fn a_demoted_node_loses_its_websockets_and_the_reconnect_reaches_the_new_active_node() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    let mut s = tunnel(rt.web);
    // Failover as ScadaBridge does it: the standby turns active, the active one is demoted
    // (still running, /health/active 503).
    let t0 = Instant::now();
    b.active.store(true, Ordering::SeqCst);
    a.active.store(false, Ordering::SeqCst);
    closed_within(&mut s, Duration::from_secs(5));
    let took = t0.elapsed();
    // Detection (b is re-probed every 250 ms, and its change re-probes a) + the 500 ms grace.
    assert!(took < Duration::from_millis(2500), "closed after {took:?}");
    assert!(
        took >= Duration::from_millis(500),
        "closed before the grace: {took:?}"
    );
    let mut again = tunnel(rt.web);
    still_echoes(&mut again);
    assert!(
        b.seen().iter().any(|r| r.starts_with("GET /_blazor")),
        "the new upgrade reached b: {:?}",
        b.seen()
    );
}

#[test]
fn a_crashed_node_ends_its_tunnels_at_once() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    let mut s = tunnel(rt.web);
    a.dead.store(true, Ordering::SeqCst);
    // The server's side closes: the client's follows without waiting for health checks.
    let took = closed_within(&mut s, Duration::from_secs(3));
    assert!(took < Duration::from_millis(800), "closed after {took:?}");
}

#[test]
fn with_close_tunnels_on_down_false_a_demoted_node_keeps_its_tunnels() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        format!("{d}\nbridge:\n  healthCheck:\n    closeTunnelsOnDown: false\n")
    });
    let mut s = tunnel(rt.web);
    b.active.store(true, Ordering::SeqCst);
    a.active.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(3));
    still_echoes(&mut s);
}

#[test]
fn sigterm_closes_open_tunnels_after_the_grace_time_instead_of_waiting_for_them() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let mut rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            s.replace(
                "    address: \":80\"\n",
                "    address: \":80\"\n    transport:\n      lifeCycle:\n        graceTimeOut: 1s\n",
            )
        },
        |d| d,
    );
    let mut s = tunnel(rt.web);
    let t0 = Instant::now();
    signal(rt.child.id(), "-TERM");
    let status = wait_exit(&mut rt.child, Duration::from_secs(5), "exit after SIGTERM");
    assert!(status.success(), "{status:?}");
    let took = t0.elapsed();
    assert!(took < Duration::from_secs(3), "exited after {took:?}");
    closed_within(&mut s, Duration::from_secs(1));
}
