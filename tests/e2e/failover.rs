//! The ScadaBridge active/standby scenario: only the node whose `/health/active` answers 200 gets
//! traffic, failover follows health, crashes and cold starts lose nothing, and a hold bridges the
//! gap while no node is healthy.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::backend;

use crate::harness::{get, start, start_full, start_with, wait_for};

#[test]
fn only_the_active_node_gets_traffic_and_failover_follows_health() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    // Probed before traffic: from the first request on, only the active node answers.
    for _ in 0..10 {
        let (status, body) = get(rt.web, "/ui");
        assert_eq!(status, 200);
        assert!(body.starts_with("a /ui xff=127.0.0.1"), "{body}");
    }
    // The Traefik-compatible API shows the live server states, and the dashboard is served.
    let (status, body) = get(rt.api, "/api/http/services");
    assert_eq!(status, 200);
    let services: serde_json::Value = serde_json::from_str(&body).unwrap();
    let central = services
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "central@file")
        .unwrap();
    let states = central["serverStatus"].as_object().unwrap();
    assert_eq!(
        states.values().filter(|v| *v == "UP").count(),
        1,
        "{central}"
    );
    assert_eq!(
        states.values().filter(|v| *v == "DOWN").count(),
        1,
        "{central}"
    );
    assert_eq!(get(rt.api, "/dashboard/").0, 200);
    assert_eq!(get(rt.api, "/ping"), (200, "OK".to_owned()));
    // Failover: a goes standby, b becomes active.
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    wait_for(&rt, "b ", Duration::from_secs(5));
    // Once a's next probe ran, only b answers.
    std::thread::sleep(Duration::from_millis(1500));
    for _ in 0..10 {
        assert!(get(rt.web, "/ui").1.starts_with("b "));
    }
    // Nobody active: Traefik's answer.
    b.active.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        get(rt.web, "/ui"),
        (503, "no available server\n".to_owned())
    );
}

#[test]
fn a_crashed_node_loses_no_get_when_another_is_healthy() {
    let (a, b) = (backend("a").start(), backend("b").start());
    let dir = tempfile::tempdir().unwrap();
    // The seed's 5 s interval: the crash is noticed on live traffic, long before the next probe.
    let rt = start_with(&a, &b, dir.path(), |d| d);
    // Both answer while both are active.
    let bodies: Vec<String> = (0..6).map(|_| get(rt.web, "/ui").1).collect();
    assert!(
        bodies.iter().any(|b| b.starts_with("a ")) && bodies.iter().any(|b| b.starts_with("b ")),
        "{bodies:?}"
    );
    // a crashes: connections close before any response byte. No GET may fail.
    a.dead.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(20)); // the listener is closed now
    for i in 0..30 {
        let (status, body) = get(rt.web, "/ui");
        assert_eq!(status, 200, "request {i} failed: {body}");
        assert!(body.starts_with("b "), "{body}");
    }
}

#[test]
fn cold_start_with_the_active_node_dead_loses_nothing() {
    // a is "dead" (closes every connection), b is the active node: from the first request on,
    // everything must reach b — no request may go to a node that has not answered a probe.
    let (a, b) = (backend("a").active(false).start(), backend("b").start());
    a.dead.store(true, Ordering::SeqCst);
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    for i in 0..20 {
        let (status, body) = get(rt.web, "/ui");
        assert_eq!(status, 200, "request {i}: {body}");
        assert!(body.starts_with("b "), "{body}");
    }
}

#[test]
fn crash_with_promotion_three_seconds_later_then_recovery() {
    // The seed's story: a crashes, the cluster needs ~3 s to promote b; meanwhile Traefik's answer
    // is 503 "no available server"; after the promotion b serves within a quarter second.
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| d); // the seed's 5 s interval
    assert!(get(rt.web, "/ui").1.starts_with("a "));
    a.dead.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(20));
    // The request that discovers the crash gets 502 (no healthy sibling to retry on); a is marked
    // down at once, so the following ones get Traefik's 503 instead of waiting on a dead node.
    assert_eq!(get(rt.web, "/ui").0, 502);
    assert_eq!(
        get(rt.web, "/ui"),
        (503, "no available server\n".to_owned())
    );
    std::thread::sleep(Duration::from_secs(3));
    b.active.store(true, Ordering::SeqCst);
    let took = wait_for(&rt, "b ", Duration::from_secs(2));
    // 250 ms re-probe of down servers; the bound leaves room for a loaded CI machine.
    assert!(
        took < Duration::from_millis(1500),
        "promotion noticed after {took:?}"
    );
}

#[test]
fn with_a_hold_a_crash_then_promotion_loses_no_request() {
    // `bridge.services.central.hold`: while no node is healthy, requests wait for one instead of
    // getting 503. a crashes, b is promoted 1 s later: every request is answered by a node.
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        format!("{d}\nbridge:\n  services:\n    central:\n      hold: 4s\n")
    });
    assert!(get(rt.web, "/ui").1.starts_with("a "));
    a.dead.store(true, Ordering::SeqCst);
    let promote = {
        let flag = b.active.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_secs(1));
            flag.store(true, Ordering::SeqCst);
        })
    };
    let started = Instant::now();
    // The request that finds a dead is held, then served by b once its probe answers 200.
    let (status, body) = get(rt.web, "/ui");
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("b "), "{body}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "held for {took:?}"
    );
    promote.join().unwrap();
    for _ in 0..5 {
        assert!(get(rt.web, "/ui").1.starts_with("b "));
    }
    // Nobody becomes active: 503 once the hold is over, not before.
    b.active.store(false, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(1500));
    let started = Instant::now();
    assert_eq!(
        get(rt.web, "/ui"),
        (503, "no available server\n".to_owned())
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(3900) && took < Duration::from_secs(6),
        "503 after {took:?}"
    );
}

#[test]
fn a_client_slower_than_read_timeout_does_not_take_the_server_down() {
    // a is the only active node: a client too slow to send its body is the client's failure;
    // counted against a, it would mark a down (503 for everyone until the next probe round).
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            s.replace(
                "    address: \":80\"\n",
                "    address: \":80\"\n    transport:\n      respondingTimeouts:\n        readTimeout: 1s\n",
            ) + "metrics:\n  prometheus: {}\n"
        },
        |d| d,
    );
    wait_for(&rt, "a ", Duration::from_secs(10));
    let mut slow = std::net::TcpStream::connect(rt.web).unwrap();
    slow.write_all(
        b"POST /ui HTTP/1.1\r\nHost: scadabridge.local\r\nContent-Length: 1000\r\n\r\nonly part of it",
    )
    .unwrap();
    // readTimeout passes while the body is incomplete; the proxy gives up on it.
    std::thread::sleep(Duration::from_millis(1600));
    let (status, body) = get(rt.web, "/ui");
    assert_eq!(status, 200, "{body}");
    let (_, metrics) = get(rt.api, "/metrics");
    let a_url = format!("scadabridge-central-a:{}", a.port());
    let downs: Vec<&str> = metrics
        .lines()
        .filter(|l| l.starts_with("bridge_server_state_changes_total"))
        .filter(|l| l.contains(&a_url) && l.contains("DOWN"))
        .collect();
    assert!(downs.is_empty(), "a was marked down: {downs:?}");
    drop(slow);
}
