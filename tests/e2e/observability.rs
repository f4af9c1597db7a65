//! `/metrics` (checked with promtool) and the JSON access log.

use std::io::Write;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bridge_tests::backends::backend;

use crate::harness::{get, start_full, wait_for};

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

/// Requests of each kind through a runtime whose entry points and routers switch the access
/// log and the metrics off and on: `(entry point, path)` of every access-log record and the
/// request counters, in the order sent.
fn recorded(add_internals: bool) -> (Vec<(String, String)>, String) {
    let app = backend("app").start();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("access.log");
    let internals = if add_internals {
        "  addInternals: true\n"
    } else {
        ""
    };
    std::fs::write(
        dir.path().join("traefik.yml"),
        format!(
            "entryPoints:\n  web:\n    address: \":80\"\n    http:\n      redirections:\n        entryPoint:\n          to: \":8443\"\n\
             \x20 web2:\n    address: \":81\"\n  web3:\n    address: \":82\"\n    observability:\n      accessLogs: false\n      metrics: false\n\
             api: {{}}\nping:\n  entryPoint: web2\n\
             metrics:\n{internals}  prometheus:\n    entryPoint: web2\n    addRoutersLabels: true\n\
             accessLog:\n{internals}  filePath: {}\n  format: json\n\
             providers:\n  file:\n    filename: dynamic.yml\n",
            log_path.display()
        ),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("dynamic.yml"),
        format!(
            "http:\n  routers:\n\
             \x20   app:\n      rule: PathPrefix(`/app`)\n      service: s\n      entryPoints: [web2]\n\
             \x20   quiet:\n      rule: PathPrefix(`/quiet`)\n      service: s\n      entryPoints: [web2]\n      observability:\n        accessLogs: false\n        metrics: false\n\
             \x20   loud:\n      rule: PathPrefix(`/loud`)\n      service: s\n      entryPoints: [web3]\n      observability:\n        accessLogs: true\n        metrics: true\n\
             \x20   other:\n      rule: PathPrefix(`/other`)\n      service: s\n      entryPoints: [web3]\n\
             \x20   api:\n      rule: PathPrefix(`/api`)\n      service: api@internal\n      entryPoints: [web2]\n\
             \x20 services:\n    s:\n      loadBalancer:\n        servers:\n          - url: http://{}\n",
            app.addr
        ),
    )
    .unwrap();
    let plan = bridge_tests::build_plan(dir.path(), "dev", "plan.json", &[]);
    let (child, addrs) = bridge_tests::process::spawn_serving(
        bridge_tests::process::bridge_runtime(&plan).args([
            "--bind",
            "web=127.0.0.1:0",
            "--bind",
            "web2=127.0.0.1:0",
            "--bind",
            "web3=127.0.0.1:0",
        ]),
        &["web", "web2", "web3"],
    );
    let _rt = bridge_tests::process::KillOnDrop(child);
    let (web, web2, web3) = (addrs[0], addrs[1], addrs[2]);
    for (addr, path, status) in [
        (web, "/x", 301),
        (web2, "/app", 200),
        (web2, "/quiet", 200),
        (web2, "/ping", 200),
        (web2, "/api/version", 200),
        (web2, "/nowhere", 404),
        (web3, "/loud", 200),
        (web3, "/other", 200),
        (web3, "/nowhere", 404),
    ] {
        assert_eq!(get(addr, path).0, status, "{path}");
    }
    let (status, metrics) = get(web2, "/metrics");
    assert_eq!(status, 200);
    let counters: String = metrics
        .lines()
        .filter(|l| {
            l.starts_with("traefik_entrypoint_requests_total")
                || l.starts_with("traefik_router_requests_total")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    // The records of the last request (and, with addInternals, of the scrape) are written once
    // their answers ended; wait until the file stops growing.
    let started = Instant::now();
    let mut last = String::new();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        if (text == last && !text.is_empty()) || started.elapsed() > Duration::from_secs(5) {
            break;
        }
        last = text;
    }
    let records = last
        .lines()
        .map(|l| {
            let r: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                r["entryPointName"].as_str().unwrap_or_default().to_owned(),
                r["RequestPath"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    (records, counters)
}

/// As Traefik 3.7.15 records the same requests (checked with its binary): internal services
/// (the redirect, ping, the API, `/metrics`) only with `addInternals`; a router's
/// `observability` over its entry point's; requests no router takes as their entry point says.
#[test]
fn observability_switches_and_add_internals_decide_what_is_recorded_as_in_traefik() {
    let pairs = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    };
    let (records, counters) = recorded(false);
    assert_eq!(
        records,
        pairs(&[("web2", "/app"), ("web2", "/nowhere"), ("web3", "/loud")])
    );
    let count = |c: &str, needle: &str| {
        c.lines()
            .filter(|l| l.contains(needle))
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        count(&counters, "traefik_entrypoint_requests_total{code=\"200\""),
        ["1", "1"],
        "{counters}"
    );
    assert_eq!(
        count(&counters, "traefik_entrypoint_requests_total{code=\"404\""),
        ["1"],
        "{counters}"
    );
    assert!(counters.contains("entrypoint=\"web2\"} 1"), "{counters}");
    for quiet in ["quiet@file", "other@file", "api@file", "entrypoint=\"web\""] {
        assert!(!counters.contains(quiet), "{quiet} in\n{counters}");
    }
    for loud in ["router=\"app@file\"", "router=\"loud@file\""] {
        assert!(counters.contains(loud), "{loud} missing in\n{counters}");
    }

    let (records, counters) = recorded(true);
    assert_eq!(
        records,
        pairs(&[
            ("web", "/x"),
            ("web2", "/app"),
            ("web2", "/ping"),
            ("web2", "/api/version"),
            ("web2", "/nowhere"),
            ("web3", "/loud"),
            ("web2", "/metrics"),
        ])
    );
    assert!(
        counters.contains("traefik_entrypoint_requests_total{code=\"301\""),
        "{counters}"
    );
}
