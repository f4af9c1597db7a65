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
