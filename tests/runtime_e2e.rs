//! bridge-runtime as deployed: a real process serving a real plan in front of two real backends on
//! 127.0.0.1 whose `/health/active` can be flipped — the ScadaBridge active/standby scenario.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::{Backend, answers, backend};
use bridge_tests::process::{KillOnDrop, bridge_runtime, bridgectl, signal, wait_exit};
use bridge_tests::prod::{DOMAIN, Prod, curl, write_test_cert};
use bridge_tests::repo_root;
use bridge_tests::tls::{TestCa, served_leaf, tls_connect, tls_get};

fn get_raw(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: scadabridge.local\r\nConnection: close\r\nX-Forwarded-For: 6.6.6.6\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
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
struct Runtime {
    child: KillOnDrop,
    web: SocketAddr,
    api: SocketAddr,
}

fn start(a: &Backend, b: &Backend, dir: &std::path::Path) -> Runtime {
    start_with(a, b, dir, |d| d.replace("interval: 5s", "interval: 1s"))
}

fn start_with(
    a: &Backend,
    b: &Backend,
    dir: &std::path::Path,
    edit: impl Fn(String) -> String,
) -> Runtime {
    start_full(a, b, dir, |s| s, edit)
}

fn start_full(
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
fn wait_for(rt: &Runtime, want: &str, limit: Duration) -> Duration {
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
fn unknown_routes_404_and_sigterm_exits_cleanly() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let mut rt = start(&a, &b, dir.path());
    assert_eq!(get(rt.web, "/anything").0, 200);
    signal(rt.child.id(), "-TERM");
    let code = wait_exit(
        &mut rt.child,
        Duration::from_secs(15),
        "runtime did not exit after SIGTERM",
    );
    assert!(code.success(), "{code:?}");
}

#[test]
fn a_tampered_plan_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.json");
    let out = bridgectl()
        .args(["build", "examples/scadabridge", "--profile", "dev", "--out"])
        .arg(&plan)
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = std::fs::read_to_string(&plan)
        .unwrap()
        .replace("scadabridge-central-b", "evil");
    std::fs::write(&plan, t).unwrap();
    let out = bridge_runtime(&plan).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hash"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn middlewares_rewrite_paths_and_set_security_headers() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [strip, secure]\n")
            .replace(
                "  services:\n",
                "  middlewares:\n    strip:\n      stripPrefix:\n        prefixes: [/central]\n    secure:\n      headers:\n        frameDeny: true\n        contentTypeNosniff: true\n        customResponseHeaders:\n          X-Served-By: bridge\n  services:\n",
            )
    });
    let raw = get_raw(rt.web, "/central/ui?x=1");
    let lower = raw.to_ascii_lowercase();
    assert!(
        raw.contains("a /ui?x=1"),
        "prefix stripped, query kept: {raw}"
    );
    assert!(
        raw.contains("xff=127.0.0.1"),
        "an untrusted client cannot forge X-Forwarded-For: {raw}"
    );
    assert!(lower.contains("x-frame-options: deny"), "{raw}");
    assert!(lower.contains("x-content-type-options: nosniff"), "{raw}");
    assert!(lower.contains("x-served-by: bridge"), "{raw}");
}

#[test]
fn sighup_swaps_in_a_new_plan_and_rejects_a_bad_one() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    assert!(get(rt.web, "/ui").1.starts_with("a /ui"));
    let plan = dir.path().join("plan.json");
    let hup = |rt: &Runtime| signal(rt.child.id(), "-HUP");
    // A tampered plan is rejected; the old one keeps serving.
    let good = std::fs::read_to_string(&plan).unwrap();
    std::fs::write(&plan, good.replace("/health/active", "/health/other")).unwrap();
    hup(&rt);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        get(rt.web, "/ui").1.starts_with("a /ui"),
        "still serving the old plan"
    );
    // A new valid plan: the router now only takes /app.
    let dynamic = std::fs::read_to_string(dir.path().join("dynamic.yml"))
        .unwrap()
        .replace("PathPrefix(`/`)", "PathPrefix(`/app`)");
    std::fs::write(dir.path().join("dynamic.yml"), dynamic).unwrap();
    let out = bridgectl()
        .args(["build"])
        .arg(dir.path())
        .args(["--profile", "dev", "--out"])
        .arg(&plan)
        .output()
        .unwrap();
    assert!(out.status.success());
    hup(&rt);
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(rt.web, "/ui").0 != 404 {
        assert!(Instant::now() < deadline, "the new plan was not applied");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Health state was kept: the active node answers at once, no 503 window.
    assert!(get(rt.web, "/app/x").1.starts_with("a /app/x"));
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
fn basic_auth_guards_a_router() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [auth]\n").replace(
            "  services:\n",
            "  middlewares:\n    auth:\n      basicAuth:\n        realm: scada\n        users:\n          - \"admin:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\"\n  services:\n",
        )
    });
    let raw = get_raw(rt.web, "/ui");
    assert!(raw.starts_with("HTTP/1.1 401"), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("www-authenticate: basic realm=\"scada\""),
        "{raw}"
    );
    let send = |auth: &str| {
        let mut s = TcpStream::connect(rt.web).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(s, "GET /ui HTTP/1.1\r\nHost: x\r\nAuthorization: Basic {auth}\r\nConnection: close\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    };
    // admin:test
    assert!(
        send("YWRtaW46dGVzdA==").contains("a /ui"),
        "right password passes"
    );
    // admin:wrong
    assert!(
        send("YWRtaW46d3Jvbmc=").starts_with("HTTP/1.1 401"),
        "wrong password is refused"
    );
}

#[test]
fn redirect_allow_list_and_regex_strip_middlewares() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let routers = "    redir:\n      rule: \"PathPrefix(`/secure`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [to-https]\n    blocked:\n      rule: \"PathPrefix(`/admin`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [lan-only]\n    versioned:\n      rule: \"PathPrefix(`/v1`)\"\n      service: central\n      entryPoints: [web]\n      middlewares: [strip-version]\n";
    let middlewares = "  middlewares:\n    to-https:\n      redirectScheme:\n        scheme: https\n        permanent: true\n    lan-only:\n      ipAllowList:\n        sourceRange: [10.0.0.0/8]\n    strip-version:\n      stripPrefixRegex:\n        regex: [\"/v[0-9]+\"]\n";
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replacen(
            "  services:\n",
            &format!("{routers}{middlewares}  services:\n"),
            1,
        )
    });
    let raw = get_raw(rt.web, "/secure/page?x=1");
    assert!(raw.starts_with("HTTP/1.1 301"), "{raw}");
    assert!(
        raw.to_ascii_lowercase()
            .contains("location: https://scadabridge.local/secure/page?x=1"),
        "{raw}"
    );
    assert_eq!(
        get(rt.web, "/admin").0,
        403,
        "127.0.0.1 is outside 10.0.0.0/8"
    );
    assert!(
        get(rt.web, "/v1/items").1.starts_with("a /items"),
        "version prefix stripped"
    );
}

#[test]
fn websocket_upgrades_are_tunnelled_both_ways() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    websocket_echo(&mut s, "scadabridge.local");
}

/// A WebSocket upgrade through the proxy, then two messages echoed back through the tunnel.
fn websocket_echo(s: &mut (impl Read + Write), host: &str) {
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
fn bridgectl_run_checks_builds_and_serves_in_one_process() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let seed = repo_root().join("examples/scadabridge");
    std::fs::copy(seed.join("traefik.yml"), dir.path().join("traefik.yml")).unwrap();
    let dynamic = std::fs::read_to_string(seed.join("dynamic.yml"))
        .unwrap()
        .replace(
            "scadabridge-central-a:5000",
            &format!("scadabridge-central-a:{}", a.addr.port()),
        )
        .replace(
            "scadabridge-central-b:5000",
            &format!("scadabridge-central-b:{}", b.addr.port()),
        );
    std::fs::write(dir.path().join("dynamic.yml"), dynamic).unwrap();
    let (child, addrs) = bridge_tests::spawn_serving(
        bridgectl()
            .arg("run")
            .arg(dir.path())
            .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
            .args([
                "--resolve",
                "scadabridge-central-a=127.0.0.1",
                "--resolve",
                "scadabridge-central-b=127.0.0.1",
            ]),
        &["web"],
    );
    let mut child = KillOnDrop(child);
    let web = addrs[0];
    assert!(get(web, "/ui").1.starts_with("a /ui"));
    signal(child.id(), "-TERM");
    let status = wait_exit(
        &mut child,
        Duration::from_secs(15),
        "bridgectl run did not exit after SIGTERM",
    );
    assert!(status.success(), "{status:?}");
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
fn header_limits_and_timeouts_protect_the_entry_point() {
    // The nodes answer without waiting for request bodies, so the body the client never finishes
    // is only the entry point's business.
    let (a, b) = (
        backend("a").answer_before_body().start(),
        backend("b").active(false).answer_before_body().start(),
    );
    let dir = tempfile::tempdir().unwrap();
    let rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            s.replace(
                "    address: \":80\"\n",
                "    address: \":80\"\n    transport:\n      respondingTimeouts:\n        readTimeout: 1s\n        idleTimeout: 3s\n",
            )
        },
        |d| d,
    );
    // A header section over the 1 MiB default: 431, as Go's server answers.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let big = "x".repeat(2 << 20);
    let _ = write!(
        s,
        "GET /ui HTTP/1.1\r\nHost: scadabridge.local\r\nX-Big: {big}\r\n\r\n"
    );
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.starts_with("HTTP/1.1 431"),
        "{}",
        out.lines().next().unwrap_or("")
    );

    // readTimeout: a body that never completes is cut off after about a second.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /ui HTTP/1.1\r\nHost: scadabridge.local\r\nContent-Length: 100\r\n\r\nonly-part"
    )
    .unwrap();
    let started = Instant::now();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "slow body ended after {took:?}: {}",
        String::from_utf8_lossy(&out)
    );

    // idleTimeout: a keep-alive connection with nothing to do is closed after about 3 s.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /ui HTTP/1.1\r\nHost: scadabridge.local\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(6),
        "idle connection closed after {took:?}"
    );
    // The entry point still serves.
    assert_eq!(get(rt.web, "/ui").0, 200);
}

#[test]
fn sigterm_drains_in_flight_requests_then_exits() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let mut rt = start(&a, &b, dir.path());
    let web = rt.web;
    let in_flight = std::thread::spawn(move || get(web, "/slow"));
    std::thread::sleep(Duration::from_millis(300));
    signal(rt.child.id(), "-TERM");
    // The request that was in flight completes normally.
    let (status, body) = in_flight.join().unwrap();
    assert_eq!(status, 200, "{body}");
    assert!(body.starts_with("a /slow"), "{body}");
    let code = wait_exit(
        &mut rt.child,
        Duration::from_secs(15),
        "no exit after the drain",
    );
    assert!(code.success(), "{code:?}");
    // Stopped: new connections are refused.
    assert!(TcpStream::connect(web).is_err());
}

// ---- HTTPS: the prod profile served end to end ------------------------------------------------

/// The prod build of the example with a test certificate (tests/prod.rs), served in front of `a`
/// and `b`.
fn start_prod(a: &Backend, b: &Backend) -> Prod {
    bridge_tests::prod::start_prod(a.addr.port(), b.addr.port())
}

fn s_client(addr: SocketAddr, args: &[&str]) -> String {
    let mut child = Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &addr.to_string(),
            "-servername",
            DOMAIN,
        ])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("openssl is installed");
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn prod_profile_serves_https_with_redirect_hsts_secured_dashboard_and_failover() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let p = start_prod(&a, &b);

    // HTTPS, HTTP/1.1 and HTTP/2 (ALPN), to the active node, with HSTS.
    let (status, head, body) = curl(&p, p.websecure, "/ui?x=1", &["--http1.1"]);
    assert_eq!(status, 200, "{head}{body}");
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(body.starts_with("a /ui?x=1"), "{body}");
    assert!(
        head.contains("strict-transport-security: max-age=31536000; includesubdomains"),
        "{head}"
    );
    let (status, head, body) = curl(&p, p.websecure, "/ui", &["--http2"]);
    assert_eq!(status, 200, "{head}");
    assert!(head.starts_with("http/2 200"), "{head}");
    assert!(body.starts_with("a /ui"), "{body}");

    // Plain HTTP on :80 is redirected permanently to HTTPS, path and query kept, without HSTS.
    let mut s = TcpStream::connect(p.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /ui/page?tab=2&x=%20 HTTP/1.1\r\nHost: {DOMAIN}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let lower = out.to_ascii_lowercase();
    assert!(out.starts_with("HTTP/1.1 301"), "{out}");
    assert!(
        lower.contains(&format!(
            "location: https://{DOMAIN}/ui/page?tab=2&x=%20\r\n"
        )),
        "{out}"
    );
    assert!(!lower.contains("strict-transport-security"), "{out}");

    // Protocol versions and ALPN.
    let old = s_client(p.websecure, &["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"]);
    assert!(
        old.contains("Cipher is (NONE)") && old.contains("alert"),
        "TLS 1.1 must be refused: {old}"
    );
    let v12 = s_client(p.websecure, &["-tls1_2"]);
    assert!(v12.contains("New, TLSv1.2, Cipher is ECDHE-"), "{v12}");
    let v13 = s_client(p.websecure, &["-tls1_3", "-alpn", "h2"]);
    assert!(v13.contains("New, TLSv1.3, Cipher is TLS_"), "{v13}");
    assert!(v13.contains("ALPN protocol: h2"), "{v13}");

    // Dashboard: over TLS, behind basicAuth; plain HTTP on its port never serves it.
    let (status, head, _) = curl(&p, p.api, "/dashboard/", &[]);
    assert_eq!(status, 401, "{head}");
    assert!(
        head.contains("www-authenticate: basic realm=\"bridgectl\""),
        "{head}"
    );
    let (status, _, _) = curl(&p, p.api, "/dashboard/", &["-u", "admin:wrong"]);
    assert_eq!(status, 401);
    let (status, _, body) = curl(&p, p.api, "/dashboard/", &["-u", "admin:s3cret"]);
    assert_eq!(status, 200);
    assert!(
        body.contains("<html") || body.contains("<!doctype"),
        "{body}"
    );
    let (status, _, body) = curl(&p, p.api, "/api/http/services", &["-u", "admin:s3cret"]);
    assert_eq!(status, 200);
    assert!(body.contains("serverStatus"), "{body}");
    let (status, _) = get(p.api, "/dashboard/");
    assert_ne!(
        status, 200,
        "the dashboard must not be served over plain HTTP"
    );
    let (status, _) = get(p.api, "/api/http/services");
    assert_ne!(status, 200, "the API must not be served over plain HTTP");

    // Failover over HTTPS.
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    let started = Instant::now();
    loop {
        let (_, _, body) = curl(&p, p.websecure, "/ui", &[]);
        if body.starts_with("b ") {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "b never got HTTPS traffic"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn mutual_tls_accepts_only_clients_with_a_certificate_from_the_ca() {
    let a = backend("a").start();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &[DOMAIN]);
    ca.issue(d, "client", &[]);
    std::fs::write(
        d.join("traefik.yml"),
        "entryPoints:\n  websecure:\n    address: \":443\"\n    http:\n      tls:\n        options: mtls\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    let p = |n: &str| d.join(n).to_string_lossy().into_owned();
    std::fs::write(
        d.join("dynamic.yml"),
        format!(
            "http:\n  routers:\n    central:\n      rule: \"PathPrefix(`/`)\"\n      service: central\n  services:\n    central:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\ntls:\n  certificates:\n    - certFile: {}\n      keyFile: {}\n  options:\n    mtls:\n      clientAuth:\n        caFiles: [{}]\n        clientAuthType: RequireAndVerifyClientCert\n",
            a.addr.port(),
            p("server.crt"),
            p("server.key"),
            p("ca.crt")
        ),
    )
    .unwrap();
    let plan = bridge_tests::build_plan(d, "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(&plan).args(["--bind", "websecure=127.0.0.1:0"]),
        &["websecure"],
    );
    let _rt = Runtime {
        child: KillOnDrop(child),
        web: addrs[0],
        api: addrs[0],
    };
    let curl = |extra: &[&str]| {
        Command::new("curl")
            .args(["-sS", "--max-time", "10", "--cacert", &p("ca.crt")])
            .arg("--resolve")
            .arg(format!("{DOMAIN}:{}:127.0.0.1", addrs[0].port()))
            .args(extra)
            .arg(format!("https://{DOMAIN}:{}/ui", addrs[0].port()))
            .output()
            .unwrap()
    };
    let with = curl(&["--cert", &p("client.crt"), "--key", &p("client.key")]);
    assert!(
        with.status.success(),
        "{}",
        String::from_utf8_lossy(&with.stderr)
    );
    assert!(String::from_utf8_lossy(&with.stdout).starts_with("a /ui"));
    let without = curl(&[]);
    assert!(
        !without.status.success(),
        "a client without a certificate was served"
    );
    // A certificate from another CA is refused too.
    let other = tempfile::tempdir().unwrap();
    let other_ca = TestCa::new(other.path());
    other_ca.issue(other.path(), "client", &[]);
    let od = |n: &str| other.path().join(n).to_string_lossy().into_owned();
    let foreign = curl(&["--cert", &od("client.crt"), "--key", &od("client.key")]);
    assert!(
        !foreign.status.success(),
        "a client of another CA was served"
    );
}

#[test]
fn sighup_rotates_the_certificate_without_dropping_established_connections() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let p = start_prod(&a, &b);
    let mut kept = tls_connect(p.websecure);
    let first = served_leaf(&kept);
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));

    // A new certificate at the same paths, then SIGHUP.
    write_test_cert(p.dir.path(), "bridge");
    let pid = p.child.id();
    signal(pid, "-HUP");
    let started = Instant::now();
    let rotated = loop {
        let leaf = served_leaf(&tls_connect(p.websecure));
        if leaf != first {
            break leaf;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the certificate was not rotated"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // The connection made before the reload still works.
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));
    // WebSocket over TLS (the central UI's SignalR circuit).
    websocket_echo(&mut tls_connect(p.websecure), DOMAIN);

    // A broken certificate is rejected on reload: the rotated one keeps being served.
    std::fs::write(p.dir.path().join("bridge.crt"), "not a certificate").unwrap();
    signal(pid, "-HUP");
    std::thread::sleep(Duration::from_millis(700));
    let mut fresh = tls_connect(p.websecure);
    assert_eq!(served_leaf(&fresh), rotated);
    assert!(tls_get(&mut fresh, "/ui").1.starts_with("a /ui"));
    assert!(tls_get(&mut kept, "/ui").1.starts_with("a /ui"));
}

/// One HTTP/1.1 request with extra header lines; returns the whole raw answer.
fn request_raw(addr: SocketAddr, method: &str, path: &str, headers: &str) -> String {
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

#[test]
fn cors_preflights_are_answered_by_the_proxy_and_responses_get_allow_origin() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start_with(&a, &b, dir.path(), |d| {
        d.replace("        - web\n", "        - web\n      middlewares: [cors]\n")
            .replace(
                "  services:\n",
                "  middlewares:\n    cors:\n      headers:\n        accessControlAllowMethods: [GET, PUT]\n        accessControlAllowHeaders: [X-Token]\n        accessControlAllowOriginList: [https://ui.example]\n        accessControlAllowOriginListRegex: ['^https://[a-z]+\\.ops\\.example$']\n        accessControlAllowCredentials: true\n        accessControlExposeHeaders: [X-Served-By]\n        accessControlMaxAge: 600\n        addVaryHeader: true\n  services:\n",
            )
    });
    wait_for(&rt, "a ", Duration::from_secs(10));
    // Preflight: answered by the proxy itself (the backend would have answered "a /ui ...").
    let raw = request_raw(
        rt.web,
        "OPTIONS",
        "/ui",
        "Origin: https://ui.example\r\nAccess-Control-Request-Method: PUT\r\n",
    );
    let lower = raw.to_ascii_lowercase();
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(raw.ends_with("\r\n\r\n"), "no body, not forwarded: {raw}");
    assert!(
        lower.contains("access-control-allow-origin: https://ui.example\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-methods: get,put\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-headers: x-token\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-allow-credentials: true\r\n"),
        "{raw}"
    );
    assert!(lower.contains("access-control-max-age: 600\r\n"), "{raw}");
    // A normal request from an origin matched by the regex: forwarded, origin echoed.
    let raw = request_raw(rt.web, "GET", "/ui", "Origin: https://plc.ops.example\r\n");
    let lower = raw.to_ascii_lowercase();
    assert!(raw.contains("a /ui"), "forwarded: {raw}");
    assert!(
        lower.contains("access-control-allow-origin: https://plc.ops.example\r\n"),
        "{raw}"
    );
    assert!(
        lower.contains("access-control-expose-headers: x-served-by\r\n"),
        "{raw}"
    );
    assert!(lower.contains("vary: origin\r\n"), "{raw}");
    // An origin that is not allowed gets no Allow-Origin; a plain OPTIONS is forwarded.
    let raw = request_raw(rt.web, "GET", "/ui", "Origin: https://evil.example\r\n");
    assert!(
        !raw.to_ascii_lowercase()
            .contains("access-control-allow-origin"),
        "{raw}"
    );
    let raw = request_raw(rt.web, "OPTIONS", "/ui", "Origin: https://ui.example\r\n");
    assert!(
        raw.contains("a /ui"),
        "not a preflight without the request method: {raw}"
    );
}

fn build_and_serve(
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

#[test]
fn https_and_h2c_servers_with_servers_transports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "backend", &["backend.test"]);
    let tls = backend("tls")
        .tls(&d.join("backend.crt"), &d.join("backend.key"))
        .answer(answers::version_and_host)
        .start();
    let h2c = backend("h2c")
        .h2c()
        .answer(answers::version_and_host)
        .start();
    let ca_file = d.join("ca.crt").to_string_lossy().into_owned();
    let (t, c) = (tls.port(), h2c.port());
    let route = |name: &str| {
        format!("    {name}:\n      rule: \"PathPrefix(`/{name}`)\"\n      service: {name}\n")
    };
    let routers: String = [
        "verified", "system", "insecure", "sni", "h1", "h2c", "timeout",
    ]
    .iter()
    .map(|n| route(n))
    .collect();
    let check = "        healthCheck:\n          path: /health\n          interval: 1s\n";
    let lb = |name: &str, transport: &str, check: &str, url: String| {
        format!(
            "    {name}:\n      loadBalancer:\n{transport}{check}        servers:\n          - url: \"{url}\"\n"
        )
    };
    let via = |t: &str| format!("        serversTransport: {t}\n");
    let services = [
        lb(
            "verified",
            &via("ca"),
            check,
            format!("https://backend.test:{t}"),
        ),
        lb("system", "", "", format!("https://backend.test:{t}")),
        lb(
            "insecure",
            &via("insecure@file"),
            "",
            format!("https://127.0.0.1:{t}"),
        ),
        lb("sni", &via("sni"), "", format!("https://127.0.0.1:{t}")),
        lb("h1", &via("h1"), "", format!("https://backend.test:{t}")),
        lb("h2c", "", check, format!("h2c://127.0.0.1:{c}")),
        lb("timeout", &via("slow"), "", format!("h2c://127.0.0.1:{c}")),
    ]
    .concat();
    let transports = [
        format!("    ca:\n      rootCAs: [{ca_file}]\n"),
        "    insecure:\n      insecureSkipVerify: true\n".to_owned(),
        format!("    sni:\n      serverName: backend.test\n      rootCAs: [{ca_file}]\n"),
        format!("    h1:\n      disableHTTP2: true\n      rootCAs: [{ca_file}]\n"),
        "    slow:\n      forwardingTimeouts:\n        responseHeaderTimeout: 300ms\n".to_owned(),
    ]
    .concat();
    let dynamic = format!(
        "http:\n  routers:\n{routers}  services:\n{services}  serversTransports:\n{transports}"
    );
    let rt = build_and_serve(
        d,
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &["--resolve", "backend.test=127.0.0.1"],
    );
    // Verified against rootCAs, HTTP/2 by ALPN, :authority = the client's Host; the health check
    // probed over TLS first (else no traffic before a probe answered).
    assert_eq!(
        get(rt.web, "/verified/x"),
        (
            200,
            "tls HTTP/2.0 host=scadabridge.local /verified/x".into()
        )
    );
    // The system trust store does not know the test CA: the handshake fails, 502.
    assert_eq!(get(rt.web, "/system").0, 502);
    assert_eq!(
        get(rt.web, "/insecure").1,
        "tls HTTP/2.0 host=scadabridge.local /insecure"
    );
    // serverName: SNI and the checked name differ from the URL's host (an IP address).
    assert_eq!(
        get(rt.web, "/sni").1,
        "tls HTTP/2.0 host=scadabridge.local /sni"
    );
    // disableHTTP2: ALPN offers only http/1.1.
    assert_eq!(
        get(rt.web, "/h1").1,
        "tls HTTP/1.1 host=scadabridge.local /h1"
    );
    // h2c: HTTP/2 with prior knowledge, health-checked the same way.
    assert_eq!(
        get(rt.web, "/h2c").1,
        "h2c HTTP/2.0 host=scadabridge.local /h2c"
    );
    // responseHeaderTimeout: a fast answer passes; a slow one is 504 after 300 ms, not 1.5 s.
    assert_eq!(
        get(rt.web, "/timeout").1,
        "h2c HTTP/2.0 host=scadabridge.local /timeout"
    );
    let started = Instant::now();
    assert_eq!(get(rt.web, "/timeout/slow").0, 504);
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
    // The API reports the servers probed over TLS and h2c as UP.
    let mut s = TcpStream::connect(rt.api).unwrap();
    write!(
        s,
        "GET /api/http/services HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.contains(&format!("\"https://backend.test:{t}\":\"UP\"")),
        "{out}"
    );
    assert!(
        out.contains(&format!("\"h2c://127.0.0.1:{c}\":\"UP\"")),
        "{out}"
    );
}

#[test]
fn mirroring_copies_a_share_of_requests_without_delaying_the_main_response() {
    let main = backend("main").answer(answers::method_target_body).start();
    let copy = backend("copy")
        .answer(answers::method_target_body)
        .delay(Duration::from_secs(2))
        .start();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    shadow:\n      rule: \"PathPrefix(`/`)\"\n      service: shadow\n  services:\n    shadow:\n      mirroring:\n        service: main\n        maxBodySize: 8\n        mirrors:\n          - name: copy\n            percent: 50\n          - name: gone\n            percent: 100\n    main:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    copy:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    gone:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        main.port(),
        copy.port(),
        closed.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    let post = |path: &str, body: &str| {
        let raw = request_raw(
            rt.web,
            "POST",
            path,
            &format!("Content-Length: {}\r\n\r\n{body}", body.len()),
        );
        raw.split("\r\n\r\n").nth(1).unwrap_or("").to_owned()
    };
    // 50 %: requests 1, 3, 5 are picked (Traefik's counters); the copy backend takes 2 s to
    // answer and the other mirror refuses connections, yet every main answer comes at once.
    let started = Instant::now();
    assert_eq!(post("/p1", "small"), "main POST /p1 small");
    assert_eq!(post("/p2", "small"), "main POST /p2 small");
    assert_eq!(
        post("/p3", "too large for it"),
        "main POST /p3 too large for it"
    );
    assert_eq!(get(rt.web, "/p4").1, "main GET /p4 ");
    assert_eq!(get(rt.web, "/p5").1, "main GET /p5 ");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the mirrors delayed the main responses: {:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while copy.seen().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // /p3's body is over maxBodySize: not mirrored at all (it still reached the main service).
    assert_eq!(
        copy.seen(),
        [
            "POST /p1 host=scadabridge.local small",
            "GET /p5 host=scadabridge.local "
        ]
    );
    assert_eq!(main.seen().len(), 5);
}

#[test]
fn metrics_pass_promtool_and_the_access_log_records_every_request() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("access.log");
    let log_for_config = log_path.to_string_lossy().into_owned();
    let rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            format!(
                "{s}\nmetrics:\n  prometheus:\n    addRoutersLabels: true\naccessLog:\n  filePath: {log_for_config}\n  format: json\n  fields:\n    names:\n      ClientUsername: drop\n    headers:\n      defaultMode: keep\n      names:\n        X-Forwarded-Proto: redact\n"
            )
        },
        |d| d,
    );
    for _ in 0..3 {
        assert_eq!(get(rt.web, "/ui").0, 200);
    }
    assert_eq!(get(rt.web, "/missing-router-is-fine").0, 200);
    // A failover shows in the failover counters and the server states.
    a.active.store(false, Ordering::SeqCst);
    b.active.store(true, Ordering::SeqCst);
    wait_for(&rt, "b ", Duration::from_secs(5));
    let (status, text) = get(rt.api, "/metrics");
    assert_eq!(status, 200);
    for want in [
        "traefik_entrypoint_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",entrypoint=\"web\"}",
        "traefik_router_requests_total{code=\"200\",method=\"GET\",protocol=\"http\",router=\"central@file\",service=\"central@file\"}",
        "traefik_service_request_duration_seconds_bucket{le=\"0.1\",code=\"200\",method=\"GET\",protocol=\"http\",service=\"central@file\"}",
        &format!(
            "traefik_service_server_up{{service=\"central@file\",url=\"http://scadabridge-central-b:{}\"}} 1",
            b.addr.port()
        ),
        &format!(
            "bridge_server_state_changes_total{{service=\"central@file\",url=\"http://scadabridge-central-a:{}\",state=\"DOWN\"}} 1",
            a.addr.port()
        ),
        "traefik_open_connections{entrypoint=\"traefik\",protocol=\"TCP\"} 1",
    ] {
        assert!(text.contains(want), "missing {want} in\n{text}");
    }
    // The exposition is valid for Prometheus' own checker.
    match Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "promtool check metrics failed:\n{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "promtool must be installed in CI (.ci/run): {e}"
            );
            eprintln!("SKIPPED promtool check: promtool not installed ({e})");
        }
    }
    // One JSON record per proxied request, with Traefik's field names (the metrics scrape itself
    // is not routed, so it is not logged — as with Traefik's internal routers).
    let started = Instant::now();
    let records: Vec<serde_json::Value> = loop {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let records: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if records.iter().any(|r| {
            r["ServiceURL"]
                .as_str()
                .is_some_and(|u| u.contains("central-b"))
        }) || started.elapsed() > Duration::from_secs(5)
        {
            break records;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let first = &records[0];
    assert_eq!(first["RequestMethod"], "GET");
    assert_eq!(first["RequestPath"], "/ui");
    assert_eq!(first["DownstreamStatus"], 200);
    assert_eq!(first["RouterName"], "central@file");
    assert_eq!(first["ServiceName"], "central@file");
    assert_eq!(first["entryPointName"], "web");
    assert_eq!(first["ClientHost"], "127.0.0.1");
    // `fields`: a dropped field, a redacted header, and no `Host` header entry (as Traefik).
    // Records show the request as the entry point's forwarding step left it, as Traefik's
    // access log (inside that step) does: the proxy's `X-Forwarded-Proto` is there (redacted),
    // `Connection` is gone.
    assert!(first.get("ClientUsername").is_none(), "{first}");
    assert_eq!(first["request_X-Forwarded-Proto"], "REDACTED", "{first}");
    assert!(first.get("request_Connection").is_none(), "{first}");
    assert!(first.get("request_Host").is_none(), "{first}");
    assert!(first["DownstreamContentSize"].as_u64().unwrap() > 0);
    assert!(
        records.iter().any(|r| r["ServiceURL"]
            .as_str()
            .is_some_and(|u| u.contains("central-b"))),
        "{records:?}"
    );
}

#[test]
fn the_upstream_gets_traefiks_request_head_with_and_without_a_body() {
    let echo = backend("echo").answer(answers::head_echo).start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    keep:\n      rule: \"PathPrefix(`/keep`)\"\n      service: keep\n    own:\n      rule: \"PathPrefix(`/own`)\"\n      service: own\n  services:\n    keep:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{port}\"\n    own:\n      loadBalancer:\n        passHostHeader: false\n        servers:\n          - url: \"http://127.0.0.1:{port}\"\n",
        port = echo.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    // Hop-by-hop fields (also those `Connection` names) and forged forwarding fields from an
    // untrusted client must not reach the server; everything else must, once.
    let sent = "Connection: X-Drop\r\nX-Drop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\nX-Real-Ip: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Kept: yes\r\n";
    for (method, path, body, host) in [
        ("GET", "/keep/a?x=1", "", "scadabridge.local".to_owned()),
        ("POST", "/keep/b", "hello", "scadabridge.local".to_owned()),
        ("HEAD", "/own/c", "", format!("127.0.0.1:{}", echo.port())),
        (
            "POST",
            "/own/d",
            "hello",
            format!("127.0.0.1:{}", echo.port()),
        ),
    ] {
        let length = if body.is_empty() {
            String::new()
        } else {
            format!("Content-Length: {}\r\n", body.len())
        };
        let raw = request_raw(rt.web, method, path, &format!("{sent}{length}\r\n{body}"));
        let (resp_head, resp_body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(resp_head.starts_with("HTTP/1.1 200"), "{raw}");
        // The server's own hop-by-hop fields do not reach the client either.
        let resp_lower = resp_head.to_ascii_lowercase();
        assert!(!resp_lower.contains("x-upstream-only"), "{resp_head}");
        if method == "HEAD" {
            assert_eq!(resp_body, "", "a HEAD answer has no body");
            // The head echo is in the body, which HEAD drops: ask again with GET for the fields.
            let raw = request_raw(rt.web, "GET", path, &format!("{sent}\r\n"));
            check_upstream_head(
                raw.split_once("\r\n\r\n").unwrap().1,
                "GET",
                path,
                "",
                &host,
            );
            continue;
        }
        check_upstream_head(resp_body, method, path, body, &host);
    }
}

/// Checks the head echoed by [`answers::head_echo`].
fn check_upstream_head(echoed: &str, method: &str, path: &str, body: &str, host: &str) {
    let (head, got_body) = echoed.split_once("--\r\n").unwrap();
    assert_eq!(got_body, body);
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    assert_eq!(lines.next().unwrap(), format!("{method} {path} HTTP/1.1"));
    let fields: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let values = |name: &str| -> Vec<&str> {
        fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(values("host"), [host], "{head}");
    assert_eq!(values("x-forwarded-for"), ["127.0.0.1"], "{head}");
    assert_eq!(values("x-real-ip"), ["127.0.0.1"], "{head}");
    assert_eq!(values("x-forwarded-proto"), ["http"], "{head}");
    assert_eq!(values("x-forwarded-host"), ["scadabridge.local"], "{head}");
    assert_eq!(values("x-forwarded-port"), ["80"], "{head}");
    assert_eq!(values("x-forwarded-server").len(), 1, "{head}");
    assert_eq!(values("x-kept"), ["yes"], "{head}");
    for gone in ["x-drop", "keep-alive", "te"] {
        assert!(values(gone).is_empty(), "{gone} reached the server: {head}");
    }
    // `Connection` is the proxy's own business with the server: never the client's value.
    assert!(
        values("connection")
            .iter()
            .all(|v| !v.to_ascii_lowercase().contains("x-drop")),
        "{head}"
    );
    if body.is_empty() {
        assert!(values("content-length").iter().all(|v| *v == "0"), "{head}");
    } else {
        assert_eq!(values("content-length"), [body.len().to_string()], "{head}");
    }
}

#[test]
fn mirroring_below_weighted_and_failover_services_copies_requests() {
    let main = backend("main").answer(answers::method_target_body).start();
    let copy = backend("copy").answer(answers::method_target_body).start();
    let dir = tempfile::tempdir().unwrap();
    // Routers reach the mirroring service `shadow` only through a weighted and a failover
    // service; `direct` goes to `main` without it.
    let dynamic = format!(
        "http:\n  routers:\n    w:\n      rule: \"PathPrefix(`/w`)\"\n      service: top\n    f:\n      rule: \"PathPrefix(`/f`)\"\n      service: safe\n    direct:\n      rule: \"PathPrefix(`/d`)\"\n      service: main\n  services:\n    top:\n      weighted:\n        services:\n          - name: shadow\n            weight: 1\n    safe:\n      failover:\n        service: shadow\n        fallback: main\n    shadow:\n      mirroring:\n        service: main\n        mirrors:\n          - name: copy\n            percent: 100\n    main:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    copy:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        main.port(),
        copy.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    assert_eq!(get(rt.web, "/w/1").1, "main GET /w/1 ");
    let raw = request_raw(rt.web, "POST", "/f/2", "Content-Length: 4\r\n\r\nbody");
    assert_eq!(raw.split("\r\n\r\n").nth(1), Some("main POST /f/2 body"));
    assert_eq!(get(rt.web, "/d/3").1, "main GET /d/3 ");
    let deadline = Instant::now() + Duration::from_secs(5);
    while copy.seen().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // Copies are sent from their own tasks: their order is not the requests' order.
    let mut copies = copy.seen();
    copies.sort();
    assert_eq!(
        copies,
        [
            "GET /w/1 host=scadabridge.local ",
            "POST /f/2 host=scadabridge.local body"
        ]
    );
    assert_eq!(main.seen().len(), 3);
}
