//! The pair's plan check: `/ping` names the plan it serves (`Bridge-Plan-Hash`), and a runtime
//! started with `--peer` compares its plan with the peer's (`/api/bridge/peer`, the log, metrics).

use std::time::{Duration, Instant};

use bridge_tests::backends::backend;
use bridge_tests::process::{KillOnDrop, bridge_runtime};

use crate::harness::{get, get_raw, start, start_full};

/// A runtime serving `plan` on free ports with `--peer peer`; returns it and its API address.
fn with_peer(plan: &std::path::Path, peer: &str) -> (KillOnDrop, std::net::SocketAddr) {
    let (child, addrs) = bridge_tests::spawn_serving(
        bridge_runtime(plan)
            .args(["--bind", "web=127.0.0.1:0", "--bind", "traefik=127.0.0.1:0"])
            .args(["--resolve", "scadabridge-central-a=127.0.0.1"])
            .args(["--resolve", "scadabridge-central-b=127.0.0.1"])
            .args(["--peer", peer]),
        &["web", "traefik"],
    );
    (KillOnDrop(child), addrs[1])
}

/// `/api/bridge/peer` once the peer was asked (bounded).
fn peer_state(api: std::net::SocketAddr) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let (status, body) = get(api, "/api/bridge/peer");
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        if v["state"] != "unknown" || start.elapsed() > Duration::from_secs(10) {
            return v;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn the_peer_check_shows_whether_the_pair_serves_one_plan() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let (d1, d2) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let one = start(&a, &b, d1.path());
    let hash = {
        let (_, body) = get(one.api, "/api/version");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["planHash"].as_str().unwrap().to_owned()
    };
    let ping = get_raw(one.api, "/ping");
    assert!(
        ping.to_ascii_lowercase()
            .contains(&format!("bridge-plan-hash: {hash}\r\n")),
        "{ping}"
    );
    // Without --peer there is nothing to compare.
    assert_eq!(
        get(one.api, "/api/bridge/peer").1,
        r#"{"configured":false}"#
    );
    let peer_url = format!("http://{}/ping", one.api);

    // The same plan file on the second appliance.
    let (_same, api) = with_peer(&d1.path().join("plan.json"), &peer_url);
    let v = peer_state(api);
    assert_eq!(v["state"], "same", "{v}");
    assert_eq!(v["peerPlanHash"], hash.as_str());
    assert_eq!(v["url"], peer_url.as_str());

    // Another plan (a missed rollout): shown as different, with both hashes.
    let _other_build = start_full(
        &a,
        &b,
        d2.path(),
        |s| s + "\nmetrics:\n  prometheus: {}\n",
        |d| d,
    );
    let (_different, api) = with_peer(&d2.path().join("plan.json"), &peer_url);
    let v = peer_state(api);
    assert_eq!(v["state"], "different", "{v}");
    assert_eq!(v["peerPlanHash"], hash.as_str());
    assert_ne!(v["planHash"], hash.as_str());
    let (_, metrics) = get(api, "/metrics");
    assert!(
        metrics.contains("bridge_peer_plan{state=\"different\"} 1"),
        "{metrics}"
    );

    // A peer that does not answer.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}/ping", closed.local_addr().unwrap());
    drop(closed);
    let (_alone, api) = with_peer(&d1.path().join("plan.json"), &dead);
    let v = peer_state(api);
    assert_eq!(v["state"], "unreachable", "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("cannot connect"),
        "{v}"
    );
}

#[test]
fn a_peer_url_that_is_not_http_is_refused_at_start() {
    let out = bridge_runtime(std::path::Path::new("plan.json"))
        .args(["--peer", "https://10.0.0.2:8080/ping"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("http:// /ping URL"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
