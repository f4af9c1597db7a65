//! The process: SIGTERM (with a drain), SIGHUP reloads, refused plans, unknown routes and
//! `bridgectl run`.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use bridge_tests::backends::backend;
use bridge_tests::process::{KillOnDrop, bridge_runtime, bridgectl, signal, wait_exit};
use bridge_tests::repo_root;

use crate::harness::{Runtime, get, start};

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
fn sighup_swaps_in_a_new_plan_and_rejects_a_bad_one() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    assert!(get(rt.web, "/ui").1.starts_with("a /ui"));
    let plan = dir.path().join("plan.json");
    let hup = |rt: &Runtime| signal(rt.child.id(), "-HUP");
    // Builds the edited files into the served plan file and tells the runtime.
    let rebuild_and_hup = |rt: &Runtime| {
        let out = bridgectl()
            .args(["build"])
            .arg(dir.path())
            .args(["--profile", "dev", "--out"])
            .arg(&plan)
            .output()
            .unwrap();
        assert!(out.status.success());
        hup(rt);
    };
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
    rebuild_and_hup(&rt);
    let deadline = Instant::now() + Duration::from_secs(10);
    while get(rt.web, "/ui").0 != 404 {
        assert!(Instant::now() < deadline, "the new plan was not applied");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Health state was kept: the active node answers at once, no 503 window.
    assert!(get(rt.web, "/app/x").1.starts_with("a /app/x"));
    // A plan that changes what the listener read when it started (here idleTimeout) needs a
    // restart: refused as a whole, the routing change with it, never half applied.
    let dynamic = std::fs::read_to_string(dir.path().join("dynamic.yml"))
        .unwrap()
        .replace("PathPrefix(`/app`)", "PathPrefix(`/`)");
    std::fs::write(dir.path().join("dynamic.yml"), dynamic).unwrap();
    let static_text = std::fs::read_to_string(dir.path().join("traefik.yml"))
        .unwrap()
        .replace(
            "    address: \":80\"\n",
            "    address: \":80\"\n    transport:\n      respondingTimeouts:\n        idleTimeout: 7s\n",
        );
    std::fs::write(dir.path().join("traefik.yml"), static_text).unwrap();
    rebuild_and_hup(&rt);
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(
        get(rt.web, "/ui").0,
        404,
        "a listener change was half applied"
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

/// Traefik's graceful shutdown for a checker in front (keepalived, a load balancer): after SIGTERM
/// `/ping` answers `terminatingStatusCode` at once while both entry points keep accepting new
/// connections for `requestAcceptGraceTimeout`; then they stop and the process exits.
#[test]
fn sigterm_keeps_accepting_for_request_accept_grace_while_ping_answers_503() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let life = "    transport:\n      lifeCycle:\n        requestAcceptGraceTimeout: 2s\n        graceTimeOut: 1s\n";
    let mut rt = crate::harness::start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            s.replace(
                "  web:\n    address: \":80\"\n",
                &format!(
                    "  web:\n    address: \":80\"\n{life}  traefik:\n    address: \":8080\"\n{life}"
                ),
            )
        },
        |d| d,
    );
    assert_eq!(get(rt.api, "/ping"), (200, "OK".to_owned()));
    let t0 = Instant::now();
    signal(rt.child.id(), "-TERM");
    std::thread::sleep(Duration::from_millis(200));
    let (status, body) = get(rt.api, "/ping");
    assert_eq!((status, body.as_str()), (503, "Service Unavailable"));
    let (status, body) = get(rt.web, "/ui");
    assert_eq!(status, 200, "new connections are still served: {body}");
    std::thread::sleep(Duration::from_millis(1500));
    let (status, _) = get(rt.web, "/ui");
    assert_eq!(status, 200, "still within the 2 s");
    let exit = wait_exit(
        &mut rt.child,
        Duration::from_secs(6),
        "exit after the accept grace and the drain",
    );
    assert!(exit.success(), "{exit:?}");
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_secs(2),
        "stopped accepting before requestAcceptGraceTimeout: {took:?}"
    );
    assert!(
        TcpStream::connect(rt.web).is_err(),
        "nothing listens any more"
    );
}
